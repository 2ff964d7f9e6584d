"""SHA-256 of the engine's outputs over a fixed list of cases: proof that a kernel change
is bit-identical.

Usage::

    python bench/kernel_hashes.py [--out hashes.json] [--compare other.json] [--only SUBSTR]

Runs every trace in traces/ under the sharing rules ``ccmod``, ``maxmin`` and
``ccmod:latency=unshared,capacity=ratio`` in every send mode (eager limit 0), then
background load (constant and time-varying), streaming windows (with message slots grown
from two), active messages, a NIC gap with per-message overheads, a torus and a fat tree,
the debug sink's signals, and bench/bench_engine.py's workloads at a small size. Each case
hashes its makespan, event and record counts and every table of the result (messages with
their times and bottlenecks, ranks, links, rank-state intervals, link loads (the
contention log)), and, run again with nothing recorded (the kernel's quiet loop), its
makespan and message times. Prints (and saves with ``--out``) ``{case: {part: sha256}}``;
``--compare`` lists the cases (and parts) that differ from another such file and exits 1
if any do. Set ``NUMBA_DISABLE_JIT=1`` to hash the plain-Python run. ``--slot-order`` runs
every case with its messages numbered in execution order (:mod:`ccmod.kernel.order`, which
the engine applies only to large traces by default): the hashes must be the same.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

NET = "star:bandwidth=1e8,latency=1e-6"
SHARINGS = ("ccmod", "maxmin", "ccmod:latency=unshared,capacity=ratio")
MODES = ("rendezvous", "eager", "detached")


def _h(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind == "O":
            h.update(repr(a.tolist()).encode())
        else:
            h.update(str(a.dtype).encode())
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _frame(df) -> str:
    if df is None:
        return "none"
    h = hashlib.sha256()
    for c in df.columns:
        h.update(str(c).encode())
        h.update(_h(df[c].to_numpy()).encode())
    return h.hexdigest()


def digest(result, quiet=None) -> dict:
    """The hashes of one run (and of its quiet twin when given)."""
    out = {"makespan": result.makespan_s.hex(), "events": str(result.events),
           "records": str(result.records)}
    for name in ("messages", "ranks", "links", "rank_states", "link_load"):
        out[name] = _frame(getattr(result, name))
    sig = getattr(result, "signals", None)
    if sig is not None:
        out["signals"] = _h(*(np.asarray(sig[k]) for k in sorted(sig)))
    if quiet is not None:
        out["quiet"] = _h(np.float64(quiet.makespan_s), np.int64(quiet.events),
                          quiet.messages["t_end_s"].to_numpy(),
                          quiet.messages["t_start_s"].to_numpy())
    return out


@contextlib.contextmanager
def small_slots():
    """Message slots and heap segments starting tiny: every growth path is taken."""
    from ccmod.kernel import slots as kslots
    old = kslots.INITIAL_SLOTS, kslots.INITIAL_SEGMENT
    kslots.INITIAL_SLOTS, kslots.INITIAL_SEGMENT = 2, 1
    try:
        yield
    finally:
        kslots.INITIAL_SLOTS, kslots.INITIAL_SEGMENT = old


def cases(tmp):
    """``(name, thunk)``: each thunk returns the hashes of one case."""
    from ccmod.api import run
    from ccmod.netsys.cost import PiecewiseLinearCost
    from ccmod.workloads.generators import generate

    def plain(trace, net=NET, quiet=True, **kw):
        def go():
            r = run(trace, net, record=True, **kw)
            q = run(trace, net, record=False, **kw) if quiet else None
            return digest(r, q)
        return go

    out = []
    traces = sorted(p for p in (ROOT / "traces").iterdir()
                    if p.suffix in (".ti", ".txt") and p.name != "README.md")
    for p in traces:
        net = "mesh:dims=8x8x8" if p.name.startswith("jmachine") else NET
        for sh in SHARINGS:
            for mode in MODES:
                if p.name.startswith("jmachine") and mode == "rendezvous":
                    continue      # its snakes are eager (see traces/README.md)
                out.append((f"{p.stem}/{sh}/{mode}",
                            plain(p, net, sharing=sh, send_mode=mode, eager_limit_bytes=0)))
    # the default eager limit (64 KiB: small messages eager, large ones rendezvous)
    for p in ("pingpong.ti", "stencil16.ti"):
        out.append((f"{p}/ccmod/eager-limit", plain(ROOT / "traces" / p, sharing="ccmod")))
    stencil = ROOT / "traces" / "stencil16.ti"
    for sh in SHARINGS[:2]:
        for bg in (0.3, "exp:mean_pps=7000,max_pps=25000,interval=1e-4,seed=1"):
            out.append((f"background/{sh}/{str(bg)[:4]}",
                        plain(stencil, "myrinet16", sharing=sh, background=bg)))
    gen = {s: generate(s, seed=3) for s in (
        "reqreply:nranks=6,requests=5", "client_server:servers=2,clients=5,requests=4",
        "halo2d:px=3,py=2,iterations=3", "wavefront:px=3,py=3,kblocks=3,iterations=2",
        "uniform:nranks=5,iterations=12,fanout=2,nbytes=70000")}
    for spec, w in gen.items():
        for sh in SHARINGS:
            out.append((f"gen/{spec.split(':')[0]}/{sh}", plain(w, sharing=sh)))
    # streaming windows, message slots grown from 2 (the engine's slots path)
    for spec in ("halo2d:px=3,py=2,iterations=3", "reqreply:nranks=6,requests=5",
                 "uniform:nranks=5,iterations=12,fanout=2,nbytes=70000"):
        for sh, mode, win in (("ccmod", "rendezvous", 1), ("maxmin", "eager", 2),
                              ("ccmod:latency=unshared", "detached", 3)):
            def go(w=gen[spec], sh=sh, mode=mode, win=win):
                with small_slots():
                    return plain(w, sharing=sh, send_mode=mode, window_records=win)()
            out.append((f"window/{spec.split(':')[0]}/{sh}/{mode}/{win}", go))
    for win in (1, 4):
        out.append((f"window/stencil16/{win}", plain(stencil, sharing="ccmod",
                                                     window_records=win)))
    # NIC gap and per-message CPU overheads (LogGP's g and o)
    cost = PiecewiseLinearCost.from_dict({
        "format": "ccmod-cost-model",
        "segments": [{"min_bytes": 0, "latency_s": 2e-6, "bandwidth_Bps": 1e9}],
        "gap_s": 3e-7, "overheads": [{"min_bytes": 0, "o_send_s": 2e-7, "o_recv_s": 3e-7}]})
    uni = gen["uniform:nranks=5,iterations=12,fanout=2,nbytes=70000"]
    for sh in SHARINGS:
        out.append((f"nic/{sh}", plain(uni, sharing=sh, cost=cost)))
        out.append((f"nic-window/{sh}", plain(uni, sharing=sh, cost=cost, window_records=2)))
    for net in ("torus:dims=4x4", "fattree:k=4", "fattree2:spines=2,hosts_per_leaf=2",
                "myrinet16"):
        for sh in SHARINGS:
            out.append((f"net/{net.split(':')[0]}/{sh}", plain(stencil, net, sharing=sh)))

    def debug(sh):
        def go():
            d = Path(tempfile.mkdtemp(dir=tmp))
            r = run(ROOT / "traces" / "ring16.ti", NET, sharing=sh, sinks=["debug"],
                    out_dir=d)
            dg = digest(r)
            dg["debug.txt"] = hashlib.sha256((d / "debug.txt").read_bytes()).hexdigest()
            return dg
        return go
    for sh in SHARINGS[:2]:
        out.append((f"signals/{sh}", debug(sh)))
    # bench/bench_engine.py's and bench/profile_kernel.py's workloads, small
    from bench_engine import STAR, incast, random_pairs
    rp = random_pairs(64, 6000, 1)
    inc = incast(512, 6144)
    light = random_pairs(16, 6000, 2, compute_mean_s=1e-4)
    mp = Path(tmp) / "incast512.map"
    mp.write_text("".join(f"{r} {nd}\n" for r, nd in enumerate(list(range(512)) + [512] * 512)))
    for sh in SHARINGS:
        out.append((f"bench/random64/{sh}", plain(rp, STAR, sharing=sh, eager_limit_bytes=0)))
    out.append(("bench/incast512/ccmod", plain(inc, STAR, sharing="ccmod", mapping=str(mp))))
    out.append(("bench/incast512/maxmin", plain(inc, STAR, sharing="maxmin", mapping=str(mp))))
    out.append(("bench/light16/ccmod", plain(light, "myrinet16", sharing="ccmod")))
    from profile_kernel import WINDOW_NET, window_cost, windows
    wk = windows(8, 6000)
    for sh in ("ccmod", "maxmin"):
        out.append((f"bench/window512/{sh}", plain(wk, WINDOW_NET, sharing=sh,
                                                   mapping="block:8", cost=window_cost())))
    return out


def compare(mine: dict, other: dict) -> list[str]:
    """Lines naming every case (and part) that differs or is missing on one side."""
    lines = []
    for case in sorted(set(mine) | set(other)):
        a, b = mine.get(case), other.get(case)
        if a is None or b is None:
            lines.append(f"{case}: only in {'this run' if b is None else 'the other file'}")
        elif a != b:
            parts = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            lines.append(f"{case}: differs in {', '.join(parts)}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the hashes (JSON) here")
    ap.add_argument("--compare", help="hashes JSON of another run to compare with")
    ap.add_argument("--only", default="", help="only cases whose name contains this")
    ap.add_argument("--slot-order", action="store_true",
                    help="number every whole-program run's messages in execution order "
                         "(ccmod/kernel/order.py; by default only large traces are): the "
                         "hashes must not change")
    a = ap.parse_args()
    if a.slot_order:
        from ccmod.kernel import order
        order.ORDER_MIN_MESSAGES = order.ORDER_MIN_RANKS = order.ORDER_MIN_RANKS_MAXMIN = 1
    import warnings
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    res = {}
    with tempfile.TemporaryDirectory(prefix="ccmod-hashes-") as tmp:
        for name, go in cases(tmp):
            if a.only and a.only not in name:
                continue
            try:
                res[name] = go()
            except Exception as e:  # noqa: BLE001 - a failing case is a result too
                res[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
    text = json.dumps(res, indent=1, sort_keys=True)
    if a.out:
        tmp_out = Path(a.out).with_suffix(".tmp")
        tmp_out.write_text(text + "\n")
        tmp_out.replace(a.out)
    else:
        print(text)
    errors = [k for k, v in res.items() if "error" in v]
    print(f"{len(res)} cases, {len(errors)} raised, {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)
    for k in errors:
        print(f"  {k}: {res[k]['error']}", file=sys.stderr)
    if a.compare:
        other = json.loads(Path(a.compare).read_text())
        if a.only:
            other = {k: v for k, v in other.items() if a.only in k}
        diff = compare(res, other)
        for line in diff:
            print(line)
        print(f"{len(diff)} case(s) differ from {a.compare}", file=sys.stderr)
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
