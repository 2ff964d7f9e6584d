"""Streaming benchmark: the whole program vs the windowed feed, records/s and peak memory.

``python bench/bench_stream.py --records 1e6 1e7 [--window 4096]`` writes a random-pairs
trace (64 ranks, one blocking send or recv per rank per round, sizes 1-256 KiB, ccmod's
Parquet layout; vectorised, so 1e7 records take seconds), then runs each size in a fresh
process twice, ``ccmod.run(trace, star, record=False)`` and the same with
``window_records=W``, and prints records/s (records over the engine's wall time, warm JIT)
and the process's peak RSS (VmHWM). Both runs must give the same makespan.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAR = "star:bandwidth=1e8,latency=1e-6"


def random_pairs_parquet(path: Path, P: int, nrec: int, seed: int = 1) -> int:
    """Write ``nrec`` records (rounded to whole rounds) of random pairs; return the count."""
    import numpy as np
    from ccmod.codes import OP_RECV, OP_SEND
    from ccmod.workloads.base import Workload
    from ccmod.workloads.tabular import write_parquet
    rng = np.random.default_rng(seed)
    K = max(1, nrec // P)
    perm = np.argsort(rng.random((K, P)), axis=1)
    a, c = perm[:, 0::2], perm[:, 1::2]
    flip = rng.random(a.shape) < 0.5
    a, c = np.where(flip, c, a), np.where(flip, a, c)
    size = (2 ** rng.uniform(10, 18, size=a.shape)).astype(np.int64)
    k = np.broadcast_to(np.arange(K)[:, None], a.shape)
    op = np.empty((P, K), np.int8)
    peer = np.empty((P, K), np.int32)
    nbytes = np.empty((P, K), np.int64)
    op[a, k], peer[a, k], nbytes[a, k] = OP_SEND, c, size
    op[c, k], peer[c, k], nbytes[c, k] = OP_RECV, a, size
    n = P * K
    w = Workload(nranks=P, rank_ptr=np.arange(P + 1, dtype=np.int64) * K, op=op.ravel(),
                 peer=peer.ravel(), tag=np.zeros(n, np.int32), nbytes=nbytes.ravel(),
                 duration_s=np.zeros(n), req=np.full(n, -1, np.int64),
                 line=np.zeros(n, np.int64), file_id=np.zeros(n, np.int32),
                 files=["random_pairs"], meta={"format": "generated"})
    write_parquet(w, path)
    return n


def _peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(trace: str, window: int | None) -> None:
    from ccmod.api import run
    t0 = time.perf_counter()
    r = run(trace, STAR, record=False, window_records=window)
    print(json.dumps({"records": r.records, "engine_s": r.wall_s,
                      "whole_s": time.perf_counter() - t0, "makespan_s": r.makespan_s.hex(),
                      "peak_MB": _peak_rss() / 2**20}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=float, nargs="+", default=[1e6])
    ap.add_argument("--window", type=int, default=4096)
    ap.add_argument("--workdir", default="/tmp/ccmod-bench-stream")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.child[0], None if a.child[1] == "none" else int(a.child[1]))
        return
    d = Path(a.workdir)
    d.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    print("| records | mode | engine rec/s | whole s | peak MB |\n|---|---|---|---|---|")
    for nrec in a.records:
        trace = d / f"random64_{int(nrec)}.parquet"
        if not trace.exists():
            random_pairs_parquet(trace, 64, int(nrec))
        spans = set()
        for mode in ("none", str(a.window)):
            p = subprocess.run([sys.executable, __file__, "--child", str(trace), mode],
                               capture_output=True, text=True, env=env)
            if p.returncode:
                raise SystemExit(p.stderr[-3000:])
            r = json.loads(p.stdout.strip().splitlines()[-1])
            spans.add(r["makespan_s"])
            label = "whole" if mode == "none" else f"window {mode}"
            print(f"| {r['records']:,} | {label} | {r['records'] / r['engine_s']:,.0f} | "
                  f"{r['whole_s']:.1f} | {r['peak_MB']:.0f} |", flush=True)
        if len(spans) != 1:
            raise SystemExit(f"makespans differ: {spans}")


if __name__ == "__main__":
    main()
