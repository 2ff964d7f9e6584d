"""Kernel-only throughput: records per second of ``Engine.run`` (warm JIT), median of runs.

Usage::

    python bench/profile_kernel.py [--records 100000] [--repeat 3] [--only window,incast]

Cases: ``compute`` (64 ranks, compute records only), ``random64`` (random pairs of
blocking send/recv on a star) under ``ccmod`` and ``maxmin``, ``incast512`` (512 messages
sharing one node's downlink) and ``light16`` (myrinet16, compute between messages), as in
bench/bench_engine.py; ``windowN`` (osu_mbw_mr-like: N/64 pairs across 2 nodes, each sender
posts a window of 64 isends then waits, so N messages cross one NIC at once; N = 64, 512,
3584) under ``ccmod`` and ``maxmin``: cost per record should stay flat in N; likewise
``incastK`` (K = 1, 16, 128, 512, 1024 senders onto one node) under both rules. Wall and CPU
(``time.process_time``) seconds are both reported: the machine may be shared.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def compute_only(P, nrec):
    from ccmod.workloads.base import WorkloadBuilder
    b = WorkloadBuilder(P)
    for k in range(nrec // P):
        for r in range(P):
            b.compute(r, 1e-6 * (1 + (k + r) % 7))
    return b.build()


#: NIC-limited star with a shared-duplex NIC (as bench/validate_contention.py fits for csd3)
WINDOW_NET = ("star:bandwidth=1.25e10,latency=0,duplex=1.995,nic_bandwidth=1.23e10,"
              "intra=shared")


def window_cost():
    """A csd3-like cost model: its NIC message gap (12.5 ns) starts the window's messages
    one by one, each start an event horizon of its own (what made the article's rule
    re-examine every active message per start before the pairs of issue 10)."""
    from ccmod.netsys.cost import PiecewiseLinearCost
    return PiecewiseLinearCost([0], [1.6e-6], [1.23e10], extra={"gap_s": 1.25e-8})


def windows(P, nrec):
    """osu_mbw_mr-like streams: P pairs across 2 nodes (block placement), ~nrec records."""
    from validate_data import WINDOW, w_stream
    iters = max(1, nrec // (P * 2 * (WINDOW + 2)))
    return w_stream(2 * P, [(i, i + P) for i in range(P)], 65536, iters=iters)


def main() -> None:
    from bench_engine import STAR, incast, random_pairs
    import ccmod.engine as eng_mod
    from ccmod.api import run
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="comma list of case names (prefixes) to run")
    a = ap.parse_args()
    rp = random_pairs(64, a.records, 1)
    inc = incast(512, a.records)
    light = random_pairs(16, a.records, 2, compute_mean_s=1e-4)
    cases = [("compute", compute_only(64, a.records), "ccmod", STAR, None),
             ("random64", rp, "ccmod", STAR, None), ("random64", rp, "maxmin", STAR, None),
             ("incast512", inc, "ccmod", STAR, list(range(512)) + [512] * 512),
             ("light16", light, "ccmod", "myrinet16", None)]
    # incast sweep: K senders onto one node's downlink; cost per record should stay flat
    for K in (1, 16, 128, 512, 1024):
        wk = inc if K == 512 else incast(K, a.records)
        for sh in ("ccmod", "maxmin"):
            if (K, sh) != (512, "ccmod"):
                cases.append((f"incast{K}", wk, sh, STAR, list(range(K)) + [K] * K))
    for P in (1, 8, 56):
        wk = windows(P, a.records)
        for sh in ("ccmod", "maxmin"):
            cases.append((f"window{64 * P}", wk, sh, WINDOW_NET, (f"block:{P}", window_cost())))
    times = []
    orig = eng_mod.Engine.run

    def timed(self):
        w0, c0 = time.perf_counter(), time.process_time()
        out = orig(self)
        times.append((time.perf_counter() - w0, time.process_time() - c0))
        return out

    eng_mod.Engine.run = timed
    only = [c for c in a.only.split(",") if c]
    for name, w, sharing, net, mapping in cases:
        if only and not any(name.startswith(c) for c in only):
            continue
        kw = {}
        if isinstance(mapping, tuple):          # (mapping spec, cost model)
            kw["mapping"], kw["cost"] = mapping
        elif mapping is not None:               # a map file, as bench_engine writes it
            mp = Path(tempfile.mkdtemp(prefix="ccmod-prof-")) / f"{name}.map"
            mp.write_text("".join(f"{r} {nd}\n" for r, nd in enumerate(mapping)))
            kw["mapping"] = str(mp)
        run(w, net, sharing=sharing, record=False, **kw)     # warm the JIT
        times.clear()
        for _ in range(a.repeat):
            run(w, net, sharing=sharing, record=False, **kw)
        wall = statistics.median(t[0] for t in times)
        cpu = statistics.median(t[1] for t in times)
        n = w.nrecords
        print(f"{name:10s} {sharing:7s} {n:8d} rec  wall {n / wall:10.0f} rec/s  "
              f"cpu {n / cpu:10.0f} rec/s  ({cpu / n * 1e6:.2f} us cpu/rec)", flush=True)


if __name__ == "__main__":
    main()
