"""Streaming benchmark: whole program, windowed feed and ``--stream``: records/s, peak memory.

``python bench/bench_stream.py --records 1e6 1e7 [--window 4096] [--modes whole,stream]``
writes a random-pairs trace (64 ranks, one blocking send or recv per rank per round,
sizes 1-256 KiB) in ccmod's streaming Parquet layout, rank by rank and one row group at a
time (:func:`random_pairs_parquet`: 1e8 records without holding them), then runs each size
in a fresh process per mode and prints records/s (records over the engine's wall time,
warm JIT), the whole process's seconds and its peak RSS (VmHWM). Modes: ``whole``
(``ccmod.run(trace, star, record=False)``), ``window`` (the same with
``window_records=W``), ``stream`` (:func:`ccmod.streaming.run_streamed`, tables streamed
to a run directory). Every mode must give the same makespan.
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


def _mix(x):
    """splitmix64 finaliser (uint64 arrays): a counter-based random stream."""
    import numpy as np
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def random_pairs_parquet(path: Path, P: int, nrec: int, seed: int = 1) -> int:
    """Write ``nrec`` records (rounded to whole rounds) of random pairs; return the count.

    Round k pairs rank r with ``r ^ s_k`` (``s_k`` random in 1..P-1, P a power of two);
    which side sends and the size (1-256 KiB) come from a hash of (seed, k, pair), so each
    rank's records are computed on their own: the file is written rank by rank, one row
    group at a time (the streaming layout), in memory bounded by a group, whatever nrec.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from ccmod.atomic import atomic_path
    from ccmod.codes import OP_RECV, OP_SEND
    from ccmod.workloads.tabular import COLUMNS, parquet_metadata, stream_group_rows
    if P < 2 or P & (P - 1):
        raise SystemExit("ranks must be a power of two")
    K = max(1, nrec // P)
    s_k = np.random.default_rng(seed).integers(1, P, size=K, dtype=np.int64)
    rows = stream_group_rows(P)
    schema = pa.schema([(c, pa.from_numpy_dtype(dt)) for c, dt in COLUMNS]).with_metadata(
        parquet_metadata(P, ["random_pairs"], {"format": "generated"}))
    with atomic_path(path) as tmp:
        with pq.ParquetWriter(tmp, schema, compression="zstd") as out:
            for r in range(P):
                for k0 in range(0, K, rows):
                    k = np.arange(k0, min(K, k0 + rows), dtype=np.int64)
                    peer = r ^ s_k[k]
                    lo = np.minimum(peer, r)
                    h = _mix((np.uint64(seed) << np.uint64(48)) ^ (k.astype(np.uint64) *
                                                                   np.uint64(P) + lo.astype(np.uint64)))
                    send = (r == lo) == ((h & np.uint64(1)) == 0)
                    u = (h >> np.uint64(11)).astype(np.float64) / 2.0 ** 53
                    m = len(k)
                    cols = {"rank": np.full(m, r, np.int32),
                            "op": np.where(send, OP_SEND, OP_RECV).astype(np.int8),
                            "peer": peer.astype(np.int32), "tag": np.zeros(m, np.int32),
                            "nbytes": (2 ** (10 + 8 * u)).astype(np.int64),
                            "duration_s": np.zeros(m), "req": np.full(m, -1, np.int64),
                            "line": k + 1, "file_id": np.zeros(m, np.int32)}
                    out.write_table(pa.table(cols, schema=schema), row_group_size=m)
    return P * K


def _peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _arrays_MB(obj) -> float:
    """Megabytes of the numpy arrays among ``obj``'s attributes."""
    import numpy as np
    d = obj if isinstance(obj, dict) else vars(obj)
    return sum(v.nbytes for v in d.values() if isinstance(v, np.ndarray)) / 2**20


def _parts(eng, result) -> dict:
    """What the run holds at its end, by owner (MB): where the peak comes from."""
    parts = {"kernel state (arena)": (eng.I.nbytes + eng.F.nbytes) / 2**20}
    if eng.stream is None:
        parts["records (Workload)"] = _arrays_MB(eng.w)
        parts["messages (compile)"] = _arrays_MB(eng.m)
    if eng.feed is not None:
        m = eng.feed.matcher
        parts["window feed"] = _arrays_MB(eng.feed) + (
            _arrays_MB(m) + sum(a.nbytes for a in m.scan_cols) / 2**20 if m else 0)
    m = result.__dict__.get("messages")
    parts["messages table"] = _arrays_MB(getattr(m, "columns", {}) or {})
    return {k: round(v, 1) for k, v in parts.items()}


def _child(trace: str, mode: str, window: int, out: str) -> None:
    from ccmod.api import run
    import ccmod.engine
    seen = {}
    real_run = ccmod.engine.Engine.run

    def keep(self):      # the main engine, for the memory breakdown
        seen.setdefault("eng", self)
        return real_run(self)
    ccmod.engine.Engine.run = keep
    t0 = time.perf_counter()
    if mode == "stream":
        from ccmod.streaming import run_streamed
        r = run_streamed(trace, STAR, window=window, out_dir=out)
    else:
        r = run(trace, STAR, record=False,
                window_records=window if mode == "window" else None)
    print(json.dumps({"records": r.records, "engine_s": r.wall_s,
                      "whole_s": time.perf_counter() - t0, "makespan_s": r.makespan_s.hex(),
                      "peak_MB": _peak_rss() / 2**20, "parts_MB": _parts(seen["eng"], r)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=float, nargs="+", default=[1e6])
    ap.add_argument("--window", type=int, default=4096)
    ap.add_argument("--modes", default="whole,stream", help="whole, window, stream")
    ap.add_argument("--workdir", default="/tmp/ccmod-bench-stream")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.child[0], a.child[1], int(a.child[2]), a.child[3])
        return
    d = Path(a.workdir)
    d.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    print("| records | mode | engine rec/s | whole s | peak MB | held at the end (MB) |\n"
          "|---|---|---|---|---|---|")
    for nrec in a.records:
        trace = d / f"random64_{int(nrec)}.parquet"
        if not trace.exists():
            t0 = time.perf_counter()
            random_pairs_parquet(trace, 64, int(nrec))
            print(f"(wrote {trace} in {time.perf_counter() - t0:.1f} s, "
                  f"{trace.stat().st_size / 2**20:.0f} MB)", flush=True)
        spans = set()
        for mode in a.modes.split(","):
            p = subprocess.run([sys.executable, __file__, "--child", str(trace), mode,
                                str(a.window), str(d / f"out_{int(nrec)}")],
                               capture_output=True, text=True, env=env)
            if p.returncode:
                raise SystemExit(p.stderr[-3000:])
            r = json.loads(p.stdout.strip().splitlines()[-1])
            spans.add(r["makespan_s"])
            label = mode if mode == "whole" else f"{mode} {a.window}"
            print(f"| {r['records']:,} | {label} | {r['records'] / r['engine_s']:,.0f} | "
                  f"{r['whole_s']:.1f} | {r['peak_MB']:.0f} | "
                  + ", ".join(f"{k} {v:.0f}" for k, v in r["parts_MB"].items()) + " |",
                  flush=True)
        if len(spans) != 1:
            raise SystemExit(f"makespans differ: {spans}")


if __name__ == "__main__":
    main()
