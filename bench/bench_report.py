"""Benchmark: the report budgets of issue 13 (medians; not a test, nothing asserted).

Two measurements:

* ``quickstart``: the README's run command, ``ccmod run traces/stencil16.ti --network
  myrinet16 --report DIR``, as a fresh process end to end (imports included), after one
  warm-up run (numba cache and OS file cache warm). Budget: 3 s.
* ``report``: a real engine run of about 1M messages (``halo2d`` generator, 16 x 16
  ranks, torus), written with the parquet sink; then ``ccmod report DIR`` timed as a fresh
  process (loading the RunResult from Parquet, building the interactive report).
  Budgets: 10 s and a report file under 20 MB.

Usage::

    python bench/bench_report.py [--repeat 3] [--iterations 1000] [--skip-large] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _timed(cmd, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, env=_env(), cwd=ROOT, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return times


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=1000,
                    help="halo2d iterations (16x16 ranks, 4 messages per rank each)")
    ap.add_argument("--skip-large", action="store_true", help="only the quickstart timing")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    py = sys.executable
    res: dict = {}
    tmp = Path(tempfile.mkdtemp(prefix="ccmod-bench-report-"))
    try:
        q = [py, "-m", "ccmod", "run", "traces/stencil16.ti", "--network", "myrinet16",
             "--report", str(tmp / "quick")]
        _timed(q, 1)                                          # warm-up
        times = _timed(q, a.repeat)
        res["quickstart_median_s"] = statistics.median(times)
        res["quickstart_runs_s"] = times
        if not a.skip_large:
            sys.path.insert(0, str(ROOT))
            from ccmod import api
            from ccmod.workloads.generators import generate
            t = time.perf_counter()
            w = generate(f"halo2d:px=16,py=16,iterations={a.iterations}", seed=0)
            r = api.run(w, network="torus:dims=16x16", sinks=["parquet"],
                        out_dir=tmp / "large")
            res["large_run_s"] = time.perf_counter() - t
            res["messages"] = r.messages_count
            res["rank_states"] = int(len(r.rank_states))
            res["link_load_intervals"] = int(len(r.link_load))
            rep = [py, "-m", "ccmod", "report", str(tmp / "large")]
            times = _timed(rep, a.repeat)
            res["report_median_s"] = statistics.median(times)
            res["report_runs_s"] = times
            res["report_bytes"] = (tmp / "large" / "report.html").stat().st_size
            from ccmod.outputs.report import build_report
            t = time.perf_counter()
            build_report(r, tmp / "large" / "inmem.html")
            res["report_in_memory_s"] = time.perf_counter() - t
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            if isinstance(v, list):
                v = ", ".join(f"{x:.2f}" for x in v)
            print(f"{k:>22}: {v:.3f}" if isinstance(v, float) else f"{k:>22}: {v}")
    return res


if __name__ == "__main__":
    main()
