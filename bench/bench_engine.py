"""Engine benchmark: records/s and peak memory on synthetic workloads.

Usage::

    python bench/bench_engine.py                # default sizes
    python bench/bench_engine.py --scale 0.1    # quicker
    python bench/bench_engine.py --json

Each case runs in a fresh subprocess so its peak RSS (ru_maxrss) is its own; every case is
repeated ``--repeat`` times and the median wall time is reported (machines are noisy).
Workloads (built with :class:`workloads.base.WorkloadBuilder`, seeded, no file I/O):

light     halo exchange on a ring (each link carries one message at a time) + compute
alltoall  every rank isend/irecv to every other, repeated; star network
incast    all ranks send to rank 0 at once, repeated (hundreds of messages on one link)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def build(case: str, scale: float):
    import numpy as np
    from ccmod.workloads.base import WorkloadBuilder
    rng = np.random.default_rng(1)
    if case == "light":
        P, iters = 64, max(1, int(2000 * scale))
        b = WorkloadBuilder(P)
        for it in range(iters):
            for r in range(P):
                b.irecv(r, (r - 1) % P, 0, 8192); b.isend(r, (r + 1) % P, 8192, 1)
                b.waitall(r); b.compute(r, float(rng.exponential(1e-5)))
        return b.build(), "star"
    if case == "alltoall":
        P, iters = 32, max(1, int(40 * scale))
        b = WorkloadBuilder(P)
        for it in range(iters):
            for r in range(P):
                req = 0
                for k in range(1, P):
                    b.irecv(r, (r - k) % P, req, 4096); req += 1
                for k in range(1, P):
                    b.isend(r, (r + k) % P, 4096, req); req += 1
                b.waitall(r)
        return b.build(), "star"
    if case == "incast":
        P, iters = 512, max(1, int(40 * scale))
        b = WorkloadBuilder(P)
        for it in range(iters):
            for r in range(1, P):
                b.send(r, 0, 65536)
                b.irecv(0, r, r, 65536)
            b.waitall(0)
        return b.build(), "star"
    raise SystemExit(f"unknown case {case}")


def one(case: str, scale: float, sharing: str) -> dict:
    import resource
    from ccmod.api import run
    t0 = time.perf_counter()
    w, net = build(case, scale)
    t_build = time.perf_counter() - t0
    r = run(w, net, sharing=sharing, send_mode="rendezvous", record=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"case": case, "sharing": sharing, "records": r.records, "messages": r.messages_count,
            "events": r.events, "wall_s": r.wall_s, "records_per_s": r.records_per_s,
            "build_s": t_build, "peak_rss_MB": rss / 2**20, "makespan_s": r.makespan_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default="light,alltoall,incast")
    ap.add_argument("--sharing", default="ccmod")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(one(a.child[0], float(a.child[1]), a.child[2])))
        return
    rows = []
    for case in a.cases.split(","):
        runs = []
        for _ in range(a.repeat):
            out = subprocess.run([sys.executable, __file__, "--child", case, str(a.scale), a.sharing],
                                 capture_output=True, text=True, env=os.environ)
            if out.returncode:
                sys.exit(out.stderr)
            runs.append(json.loads(out.stdout))
        med = statistics.median(r["wall_s"] for r in runs)
        row = dict(runs[0])
        row["wall_s"] = med
        row["records_per_s"] = row["records"] / med
        row["peak_rss_MB"] = max(r["peak_rss_MB"] for r in runs)
        rows.append(row)
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'case':10} {'sharing':8} {'records':>10} {'messages':>9} {'events':>9} "
          f"{'median s':>9} {'records/s':>11} {'peak MB':>8}")
    for r in rows:
        print(f"{r['case']:10} {r['sharing']:8} {r['records']:>10,} {r['messages']:>9,} "
              f"{r['events']:>9,} {r['wall_s']:>9.3f} {r['records_per_s']:>11,.0f} "
              f"{r['peak_rss_MB']:>8.0f}")


if __name__ == "__main__":
    main()
