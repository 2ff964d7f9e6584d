"""Benchmark: HTML report of a 1M-message run directory (issue 5: "well under a minute").

Builds a seeded synthetic run (``outputs.synthetic``: a star network, every rank sends one
message per iteration), writes its run directory through the ``parquet`` sink exactly as
the engine would (batches of 100k rows), then times :func:`outputs.report.build_report`.
Optionally also times the perfetto and paraver sinks on the same run.

Usage::

    python bench/bench_report.py [--messages 1000000] [--ranks 256] [--out DIR]
                                 [--sinks] [--json]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ccmod.outputs.report import build_report  # noqa: E402
from ccmod.outputs.sinks import make_sinks  # noqa: E402
from ccmod.outputs.synthetic import synthetic_run  # noqa: E402


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None,
                    help="keep the run directory and report here (default: temp, removed)")
    ap.add_argument("--sinks", action="store_true",
                    help="also time the perfetto and paraver sinks")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)

    iterations = max(1, -(-a.messages // a.ranks))
    tmp = None
    out = a.out
    if out is None:
        tmp = tempfile.mkdtemp(prefix="ccmod-bench-report-")
        out = Path(tmp)
    out.mkdir(parents=True, exist_ok=True)
    res: dict = {"ranks": a.ranks, "iterations": iterations}
    try:
        t = time.perf_counter()
        run = synthetic_run(a.ranks, iterations, seed=a.seed)
        res["generate_s"] = time.perf_counter() - t
        res["messages"] = int(len(run.messages["src"]))
        res["rank_states"] = int(len(run.rank_states["rank"]))
        res["link_load_intervals"] = int(len(run.link_load["resource"]))

        t = time.perf_counter()
        run.feed(make_sinks("parquet", out))
        res["parquet_sink_s"] = time.perf_counter() - t

        t = time.perf_counter()
        report = build_report(out, out / "report.html")
        res["report_s"] = time.perf_counter() - t
        res["report_bytes"] = report.stat().st_size

        if a.sinks:
            for name in ("perfetto", "paraver"):
                d = out / name
                t = time.perf_counter()
                run.feed(make_sinks(name, d))
                res[f"{name}_sink_s"] = time.perf_counter() - t
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:>22}: {v:.3f}" if isinstance(v, float) else f"{k:>22}: {v}")
    return res


if __name__ == "__main__":
    main()
