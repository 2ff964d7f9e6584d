"""Engine benchmark: ccmod's compiled kernel side by side with SimGrid's C++ replay.

Usage::

    python bench/bench_engine.py                 # the issue's workloads (1M records)
    python bench/bench_engine.py --scale 0.1     # quicker (100k records)
    python bench/bench_engine.py --json

Workloads (generated, seeded; written once as TI text under ``--workdir``):

random64   64 ranks on a star, random pairs per round (blocking send/recv, rendezvous);
           run under ``--sharing ccmod`` and ``maxmin``; SimGrid replays the same TI file
           (bench/simgrid_replay.cpp: one actor per rank, blocking mailbox put/get,
           network/model:CM02, network/crosstraffic:0, split-duplex star links)
incastK    2K ranks: K senders on their own nodes, K receivers all on one node (K messages
           share that node's downlink), K = 1 ... 1024: cost per record vs sharers (and ranks)
sharersK   incast1024's trace (2048 ranks, 1024 senders on their own nodes, a 2048-node star)
           with the receivers K to a node: only the sharers per downlink vary with K;
           ``sharersKrR`` the same with R ranks (incast{R/2}'s trace, an R-node star), e.g.
           sharers1r32 is incast16 with each receiver on its own node (bench/flat_engine.py)
light16    the article's myrinet16, random pairs with exponential compute between messages
nojit      random64 at 2k records with NUMBA_DISABLE_JIT=1 (the same code, interpreted)

Every measurement runs in a fresh subprocess (its own peak RSS); ccmod and SimGrid runs
alternate, ``--repeat`` times, and medians are reported. ``engine rec/s`` is records over
the engine's own wall time (compile + evaluate, no reading); SimGrid's is records over
``Engine::run()``; ``kernel rec/s`` is records over the compiled loop's time alone
(``Engine.run`` of a second run in the same process: no matching, routing, state set-up,
numba start-up or cache load); ``whole s`` is the whole process (``ccmod run trace.ti
--json`` vs the SimGrid binary: start-up, reading, simulating). Memory: peak RSS above the interpreter
with ccmod imported, per record (not recording outputs; numba's own start-up, ~40 MB when
its first compiled function is loaded, is included). Children run with their bytecode
written and read (``PYTHONDONTWRITEBYTECODE`` dropped, as ``bench/bench_startup.py`` does):
an installed package has its ``.pyc`` files, and without them every whole-process run
recompiled ccmod's sources (~0.5 s).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BW, LAT = 1e8, 1e-6
STAR = f"star:bandwidth={BW:g},latency={LAT:g}"
SG_CFG = ["--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
          "--log=root.thres:critical"]


# -- workloads ----------------------------------------------------------------------
def random_pairs(P, nrec, seed, compute_mean_s=0.0):
    """Rounds of a random perfect matching, random direction: one record per rank per
    round (plus one compute record per rank when ``compute_mean_s`` > 0)."""
    import numpy as np
    from ccmod.workloads.base import WorkloadBuilder
    rng = np.random.default_rng(seed)
    per_round = P * (2 if compute_mean_s > 0 else 1)
    rounds = max(1, nrec // per_round)
    b = WorkloadBuilder(P)
    sizes = (2 ** rng.uniform(10, 18, size=(rounds, P // 2))).astype(np.int64)
    for k in range(rounds):
        perm = rng.permutation(P)
        flip = rng.random(P // 2) < 0.5
        for i in range(P // 2):
            a, c = int(perm[2 * i]), int(perm[2 * i + 1])
            if flip[i]:
                a, c = c, a
            n = int(sizes[k, i])
            b.send(a, c, n)
            b.recv(c, a, n)
        if compute_mean_s > 0:
            for r in range(P):
                b.compute(r, float(rng.exponential(compute_mean_s)))
    return b.build()


def incast(K, nrec):
    """K senders -> K receivers; receivers share one node (K-fold contention)."""
    from ccmod.workloads.base import WorkloadBuilder
    rounds = max(1, nrec // (2 * K))
    b = WorkloadBuilder(2 * K)
    for _ in range(rounds):
        for i in range(K):
            b.send(i, K + i, 65536)
            b.recv(K + i, i, 65536)
    return b.build()


def sharers_mapping(K: int, R: int) -> list[int]:
    """Node of each rank of incast(R // 2)'s trace for ``sharersKrR``: sender ``i`` on node
    ``i``, its receiver (rank ``R // 2 + i``) on node ``R // 2 + i // K``, so each receiving
    node's downlink carries K of every round's messages."""
    S = R // 2
    if R < 2 or R % 2 or K < 1 or S % K:
        raise SystemExit(f"sharers{K}r{R}: R must be even and K divide R / 2 = {S}")
    return list(range(S)) + [S + j // K for j in range(S)]


def write_case(workdir, name, w, node_of_rank, trace_name=None, nodes=None):
    """Write ``w`` as ``trace_name``'s TI file (``name``'s by default; kept when it exists,
    so cases that differ only in their mapping share one trace), ``name``'s mapping, hosts
    and SimGrid platform (``nodes`` hosts, default the mapping's)."""
    from ccmod.workloads.ti_write import write_ti
    d = Path(workdir)
    trace = d / f"{trace_name or name}.ti"
    if not trace.exists():
        write_ti(w, trace)
    mp = d / f"{name}.map"
    mp.write_text("".join(f"{r} {n}\n" for r, n in enumerate(node_of_rank)))
    hosts = d / f"{name}.hosts"
    hosts.write_text("".join(f"h{n}\n" for n in node_of_rank))
    nn = nodes or max(node_of_rank) + 1
    plat = d / f"{name}.xml"
    plat.write_text(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\">\n"
        f"  <cluster id=\"star\" prefix=\"h\" suffix=\"\" radical=\"0-{nn - 1}\" speed=\"1Gf\" "
        f"bw=\"{BW:g}Bps\" lat=\"{LAT:g}s\" sharing_policy=\"SPLITDUPLEX\"/>\n</platform>\n")
    return {"trace": str(trace), "map": str(mp), "hosts": str(hosts), "platform": str(plat),
            "records": int(w.nrecords)}


# -- one measurement per subprocess ----------------------------------------------------
def peak_rss_bytes() -> int:
    """This process's peak RSS: Linux's VmHWM, which (unlike ``ru_maxrss``) does not
    inherit the parent's peak across ``exec`` (the parent generated the workloads);
    ``ru_maxrss`` elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _child(args) -> None:
    from ccmod.api import run
    import ccmod.kernel.loop  # noqa: F401 - imported before the baseline
    import pandas  # noqa: F401
    import ccmod.engine as eng_mod
    base = peak_rss_bytes()
    kernel, kernel_cpu = [], []
    orig = eng_mod.Engine.run

    def timed(self):                   # the compiled loop alone (Engine.run)
        k0, c0 = time.perf_counter(), time.process_time()
        out = orig(self)
        kernel.append(time.perf_counter() - k0)
        kernel_cpu.append(time.process_time() - c0)
        return out

    eng_mod.Engine.run = timed
    t0 = time.perf_counter()
    r = run(args.trace, args.network, sharing=args.sharing, mapping=args.map, record=False)
    t_all = time.perf_counter() - t0
    peak = peak_rss_bytes()
    # the loop alone, warm: again in this process (the first call loaded it from numba's
    # cache, which engine_wall_s counts)
    kernel.clear()
    kernel_cpu.clear()
    run(args.trace, args.network, sharing=args.sharing, mapping=args.map, record=False)
    print(json.dumps({"records": r.records, "wall_s": r.wall_s, "read_s": t_all - r.wall_s,
                      "kernel_s": sum(kernel), "kernel_cpu_s": sum(kernel_cpu),
                      "makespan_s": r.makespan_s, "events": r.events,
                      "mem_B_per_record": max(peak - base, 0) / max(r.records, 1),
                      "peak_MB": peak / 2**20}))


def _child_env(**extra):
    e = dict(os.environ, PYTHONPATH=str(ROOT), **extra)
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    return e


def run_ccmod(case, sharing, network, env=None):
    cmd = [sys.executable, __file__, "--child", "--trace", case["trace"], "--map", case["map"],
           "--network", network, "--sharing", sharing]
    e = _child_env(**(env or {}))
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=3600)
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_ccmod_whole(case, sharing, network):
    cmd = [sys.executable, "-m", "ccmod", "run", case["trace"], "--network", network,
           "--sharing", sharing, "--map", case["map"], "--json"]
    e = _child_env()
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=3600)
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    return time.perf_counter() - t0


def run_simgrid(binary, case):
    cmd = ["/usr/bin/time", "-f", "%M", binary, case["platform"], case["trace"], case["hosts"],
           *SG_CFG]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    whole = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    tok = p.stdout.split()
    out = dict(zip(tok[::2], tok[1::2]))
    return {"events": int(out["events"]), "makespan_s": float(out["makespan"]),
            "run_s": float(out["run_s"]), "whole_s": whole,
            "peak_MB": int(p.stderr.strip().splitlines()[-1]) / 1024}


def make_case(name: str, workdir, n: int):
    """Workload ``name`` (random64, incastK, light16; see the module's docstring) of ``n``
    records, written under ``workdir`` (once), and the network it runs on."""
    if name == "random64":
        return write_case(workdir, f"random64_{n}", random_pairs(64, n, 1),
                          list(range(64))), STAR
    if name.startswith("incast") and name[len("incast"):].isdigit():
        k = int(name[len("incast"):])
        return write_case(workdir, f"{name}_{n}", incast(k, n), list(range(k)) + [k] * k), STAR
    m = re.fullmatch(r"sharers(\d+)(?:r(\d+))?", name)
    if m:
        k, ranks = int(m[1]), int(m[2] or 2048)
        place = sharers_mapping(k, ranks)
        s = ranks // 2
        return (write_case(workdir, f"{name}_{n}", incast(s, n), place,
                           trace_name=f"incast{s}_{n}", nodes=ranks),
                f"{STAR},nodes={ranks}")
    if name == "light16":
        return write_case(workdir, f"light16_{n}", random_pairs(16, n, 2, compute_mean_s=1e-4),
                          list(range(16))), "myrinet16"
    raise SystemExit(f"unknown case {name!r}: random64, incastK (K = 1, 16, 128, 512, "
                     f"1024, ...), sharersK or sharersKrR (K divides R / 2), light16")


def build_simgrid(workdir):
    """Compile bench/simgrid_replay.cpp; None when SimGrid or g++ is absent."""
    if not shutil.which("g++") or not shutil.which("pkg-config"):
        return None
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "simgrid"], capture_output=True,
                           text=True)
    if flags.returncode:
        return None
    out = Path(workdir) / "simgrid_replay"
    src = ROOT / "bench" / "simgrid_replay.cpp"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        p = subprocess.run(["g++", "-O2", "-std=c++17", str(src), "-o", str(out),
                            *flags.stdout.split()], capture_output=True, text=True)
        if p.returncode:
            print("SimGrid replay does not build:", p.stderr[-500:], file=sys.stderr)
            return None
    return str(out)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="1.0 = 1M records per case")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--trace"); ap.add_argument("--map"); ap.add_argument("--network")
    ap.add_argument("--sharing")
    a = ap.parse_args()
    if a.child:
        return _child(a)
    sys.path.insert(0, str(ROOT))
    workdir = a.workdir or tempfile.mkdtemp(prefix="ccmod-bench-")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    N = int(1_000_000 * a.scale)
    sg = build_simgrid(workdir)
    rows = []

    def case_row(name, case, sharing, network, with_sg):
        cc, sgr, whole = [], [], []
        for _ in range(a.repeat):             # alternate: noise hits both alike
            cc.append(run_ccmod(case, sharing, network))
            if with_sg and sg:
                sgr.append(run_simgrid(sg, case))
        if with_sg:
            whole = [run_ccmod_whole(case, sharing, network) for _ in range(a.repeat)]
        row = {"case": name, "sharing": sharing, "records": case["records"],
               "engine_rec_per_s": med([c["records"] / c["wall_s"] for c in cc]),
               "engine_wall_s": med([c["wall_s"] for c in cc]),
               "kernel_rec_per_s": med([c["records"] / c["kernel_s"] for c in cc]),
               "read_s": med([c["read_s"] for c in cc]),
               "mem_B_per_record": med([c["mem_B_per_record"] for c in cc]),
               "peak_MB": med([c["peak_MB"] for c in cc]),
               "makespan_s": cc[0]["makespan_s"]}
        if whole:
            row["whole_s"] = med(whole)
        if sgr:
            row["simgrid_ev_per_s"] = med([s["events"] / s["run_s"] for s in sgr])
            row["simgrid_whole_s"] = med([s["whole_s"] for s in sgr])
            row["simgrid_peak_MB"] = med([s["peak_MB"] for s in sgr])
            row["simgrid_makespan_s"] = sgr[0]["makespan_s"]
            row["ratio"] = row["engine_rec_per_s"] / row["simgrid_ev_per_s"]
        rows.append(row)
        print(_fmt(row), file=sys.stderr, flush=True)

    c, net = make_case("random64", workdir, N)
    for sharing in ("ccmod", "maxmin"):
        case_row("random64", c, sharing, net, True)
    for K in (1, 16, 128, 512, 1024):
        c, net = make_case(f"incast{K}", workdir, N)
        case_row(f"incast{K}", c, "ccmod", net, K == 512)
    c, net = make_case("light16", workdir, N)
    case_row("light16", c, "ccmod", net, False)
    small = write_case(workdir, "random64_2000", random_pairs(64, 2000, 3), list(range(64)))
    r = run_ccmod(small, "ccmod", STAR, env={"NUMBA_DISABLE_JIT": "1"})
    rows.append({"case": "nojit-random64", "sharing": "ccmod", "records": r["records"],
                 "engine_rec_per_s": r["records"] / r["wall_s"], "engine_wall_s": r["wall_s"],
                 "kernel_rec_per_s": r["records"] / r["kernel_s"],
                 "read_s": r["read_s"], "mem_B_per_record": r["mem_B_per_record"],
                 "peak_MB": r["peak_MB"], "makespan_s": r["makespan_s"]})
    if a.json:
        print(json.dumps(rows, indent=1))
    else:
        print(table(rows))


def _fmt(r):
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items())


def _cell(x, fmt: str) -> str:
    """A table cell: blank where the case has no such measure (no SimGrid run, say)."""
    return "" if x is None or x != x else format(x, fmt)


def table(rows):
    head = ("| case | sharing | records | engine rec/s | kernel rec/s | SimGrid ev/s | ratio | "
            "engine s | whole s (ccmod / SimGrid) | B/record | peak MB (ccmod / SimGrid) |")
    out = [head, "|" + "---|" * 11]
    for r in rows:
        sg = r.get("simgrid_ev_per_s")
        whole = _cell(r.get("whole_s"), ".2f")
        sg_whole = _cell(r.get("simgrid_whole_s"), ".2f")
        sg_peak = _cell(r.get("simgrid_peak_MB"), ".0f")
        out.append(
            f"| {r['case']} | {r['sharing']} | {r['records']:,} | {r['engine_rec_per_s']:,.0f} | "
            f"{_cell(r.get('kernel_rec_per_s'), ',.0f')} | "
            f"{_cell(sg, ',.0f')} | "
            f"{'' if sg is None else format(r['ratio'], '.2f') + 'x'} | "
            f"{r['engine_wall_s']:.2f} | "
            f"{whole + ' / ' + sg_whole if sg_whole else whole} | "
            f"{r['mem_B_per_record']:.0f} | "
            f"{_cell(r['peak_MB'], '.0f') + (' / ' + sg_peak if sg_peak else '')} |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
