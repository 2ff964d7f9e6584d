"""Reader benchmark: records/s of reading a generated TI trace (and its Parquet copy).

Usage::

    python bench/bench_readers.py                # 1M records, 64 ranks (bench_engine's random64)
    python bench/bench_readers.py --scale 0.1 --repeat 5 --json

Reads the same TI file with the fast reader (workloads/ti_fast.py: one compiled pass per
block, workloads/ti_scan.py, or numpy's tokeniser under NUMBA_DISABLE_JIT=1; the default for
files of 64 KiB and more) and with the line parser alone (the fast path switched off),
checks that both give identical records, and prints records/s, seconds (median of
``--repeat`` fresh processes) and the peak RSS each read added. The Parquet row reads the
``ccmod convert`` copy of the trace. ``light16`` adds one compute record per message
record (floats to parse).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _child(path: str, way: str) -> None:
    import numpy as np
    sys.path.insert(0, str(ROOT))
    from bench.bench_engine import peak_rss_bytes
    from ccmod.workloads import read_workload, ti_fast
    if way == "line":
        ti_fast.FAST_MIN_BYTES = 1 << 62
    base = peak_rss_bytes()
    t0 = time.perf_counter()
    w = read_workload(path)
    dt = time.perf_counter() - t0
    peak = peak_rss_bytes()
    h = hashlib.sha256()
    for k in ("rank_ptr", "op", "peer", "tag", "nbytes", "duration_s", "req", "line"):
        h.update(np.ascontiguousarray(getattr(w, k)).tobytes())
    digest = h.hexdigest()
    print(json.dumps({"records": w.nrecords, "read_s": dt, "peak_added_MB": (peak - base) / 2**20,
                      "digest": digest}))


def measure(path: str, way: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, __file__, "--child", path, way], capture_output=True,
                       text=True, env=env, timeout=3600)
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="1.0 = 1M records")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return _child(*a.child)
    sys.path.insert(0, str(ROOT))
    from bench.bench_engine import random_pairs
    from ccmod.workloads.info import convert
    from ccmod.workloads.ti_write import write_ti
    workdir = Path(a.workdir or tempfile.mkdtemp(prefix="ccmod-bench-readers-"))
    workdir.mkdir(parents=True, exist_ok=True)
    N = int(1_000_000 * a.scale)
    rows = []
    for name, w in (("random64", lambda: random_pairs(64, N, 1)),
                    ("light16", lambda: random_pairs(16, N, 2, compute_mean_s=1e-4))):
        ti = workdir / f"{name}_{N}.ti"
        if not ti.exists():
            write_ti(w(), ti)
        pq = workdir / f"{name}_{N}.parquet"
        if not pq.exists():
            convert(str(ti), str(pq))
        runs = {way: [measure(str(ti), way) for _ in range(a.repeat)] for way in ("fast", "line")}
        if runs["fast"][0]["digest"] != runs["line"][0]["digest"]:
            raise SystemExit(f"{name}: the vectorised and line readers disagree")
        runs["parquet"] = [measure(str(pq), "fast") for _ in range(a.repeat)]
        for way, rs in runs.items():
            s = statistics.median(r["read_s"] for r in rs)
            rows.append({"case": name, "reader": {"fast": "ti (fast path)", "line": "ti (line parser)",
                                                  "parquet": "parquet"}[way],
                         "records": rs[0]["records"], "read_s": s,
                         "records_per_s": rs[0]["records"] / s,
                         "peak_added_MB": statistics.median(r["peak_added_MB"] for r in rs)})
            print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in rows[-1].items()), file=sys.stderr, flush=True)
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print("| case | reader | records | read s | records/s | peak MB added |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['reader']} | {r['records']:,} | {r['read_s']:.2f} | "
              f"{r['records_per_s']:,.0f} | {r['peak_added_MB']:.0f} |")


if __name__ == "__main__":
    main()
