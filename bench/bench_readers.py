"""Reader benchmark: how long reading a 1M-record trace takes, against the engine's time.

Usage::

    python bench/bench_readers.py                # 1M records: bench_engine's random64, light16
    python bench/bench_readers.py --scale 0.1 --repeat 5 --json

The traces are bench_engine's (``random64``: 64 ranks, random pairs, lines like ``0 send
23 0 2495``; ``light16``: 16 ranks, one ``compute`` with a 17-digit float per message
record). Each TI file is read with the fast reader (workloads/ti_scan.py: one compiled
pass per block; numpy's tokeniser, workloads/ti_fast.py, under NUMBA_DISABLE_JIT=1) and
with the line parser alone (the fast path switched off); both must give identical
records. The Parquet row reads the ``ccmod convert`` copy.

``read s`` is the median of ``--repeat`` fresh processes of one ``read_workload`` call,
timed as in a ``ccmod run``, with what the run pays once whichever compiled code comes
first taken out beforehand, as bench_engine's engine time has it taken out (the reader
comes first in a run): numba's import (``numba import s``) and its first-call set-up
(``numba first call s``: numba's Python-side typing of an array imports ``numpy.ma``,
and its extensions load). The read's own one-time costs (the reader registry, the cache
loads of its compiled functions, the imports of its modules) are inside the read; a run
pays ``read s + numba first call s`` for it. ``engine s`` is bench_engine's engine wall
time (compile + evaluate, no reading; median of ``--repeat`` runs) on the same trace and
network, and ``read / engine`` the ratio of the medians. Children run with their bytecode
cached, as an installed package is.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLS = ("rank_ptr", "op", "peer", "tag", "nbytes", "duration_s", "req", "line", "file_id")


def _child(path: str, way: str) -> None:
    t0 = time.perf_counter()
    import numba  # noqa: F401 - a ccmod run's start-up: imported before the read
    numba_import_s = time.perf_counter() - t0
    import numpy as np
    sys.path.insert(0, str(ROOT))
    from bench.bench_engine import peak_rss_bytes
    import ccmod.kernel.state  # noqa: F401 - imported before the read in a ccmod run
    from ccmod.workloads import read_workload, ti_fast
    if way == "line":
        ti_fast.FAST_MIN_BYTES = 1 << 62
    t0 = time.perf_counter()
    _first_call_setup()
    setup_s = time.perf_counter() - t0
    base = peak_rss_bytes()
    t0 = time.perf_counter()
    w = read_workload(path)
    dt = time.perf_counter() - t0
    peak = peak_rss_bytes()
    h = hashlib.sha256()
    for k in COLS:
        h.update(np.ascontiguousarray(getattr(w, k)).tobytes())
    print(json.dumps({"records": w.nrecords, "read_s": dt, "numba_import_s": numba_import_s,
                      "setup_s": setup_s,
                      "peak_added_MB": (peak - base) / 2**20, "digest": h.hexdigest()}))


def _first_call_setup() -> None:
    """What numba does once per process at the first call of any compiled function, and
    which the engine pays when the reader has not: numba's Python-side typing of an
    array imports ``numpy.ma`` (lazy in numpy 2), and its entry-point extensions load."""
    import numpy.ma  # noqa: F401
    from numba.core import entrypoints
    entrypoints.init_all()


def measure(path: str, way: str) -> dict:
    from bench.bench_engine import _child_env
    p = subprocess.run([sys.executable, __file__, "--child", path, way], capture_output=True,
                       text=True, env=_child_env(), timeout=3600)
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
    from bench.bench_engine import make_case, run_ccmod
    from ccmod.workloads.info import convert
    workdir = Path(a.workdir or tempfile.mkdtemp(prefix="ccmod-bench-readers-"))
    workdir.mkdir(parents=True, exist_ok=True)
    N = int(1_000_000 * a.scale)
    med = statistics.median
    rows = []
    for name in ("random64", "light16"):
        case, network = make_case(name, workdir, N)
        ti = case["trace"]
        pq = str(Path(ti).with_suffix(".parquet"))
        if not Path(pq).exists():
            convert(ti, pq)
        runs = {"fast": [], "line": [], "parquet": []}
        engine = []
        for _ in range(a.repeat):       # alternating: the machine's drift hits all alike
            runs["fast"].append(measure(ti, "fast"))
            runs["line"].append(measure(ti, "line"))
            runs["parquet"].append(measure(pq, "fast"))
            engine.append(run_ccmod(case, "ccmod", network)["wall_s"])
        digests = {r["digest"] for way in ("fast", "line") for r in runs[way]}
        if len(digests) != 1:
            raise SystemExit(f"{name}: the fast and line readers disagree")
        engine_s = med(engine)
        for way, rs in runs.items():
            s = med(r["read_s"] for r in rs)
            rows.append({"case": name, "reader": {"fast": "ti (fast path)",
                                                  "line": "ti (line parser)",
                                                  "parquet": "parquet"}[way],
                         "records": rs[0]["records"], "read_s": s,
                         "records_per_s": rs[0]["records"] / s,
                         "engine_s": engine_s, "read_over_engine": s / engine_s,
                         "numba_import_s": med(r["numba_import_s"] for r in rs),
                         "first_call_setup_s": med(r["setup_s"] for r in rs),
                         "peak_added_MB": med(r["peak_added_MB"] for r in rs)})
            print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in rows[-1].items()), file=sys.stderr, flush=True)
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print("| case | reader | records | read s | records/s | engine s | read / engine | "
          "numba first call s | numba import s | peak MB added |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['reader']} | {r['records']:,} | {r['read_s']:.3f} | "
              f"{r['records_per_s']:,.0f} | {r['engine_s']:.3f} | "
              f"{r['read_over_engine']:.2f} | {r['first_call_setup_s']:.3f} | "
              f"{r['numba_import_s']:.3f} | {r['peak_added_MB']:.0f} |")


if __name__ == "__main__":
    main()
