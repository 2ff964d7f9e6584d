"""Benchmark: the report budgets of issue 13 (medians; not a test, nothing asserted).

Two measurements:

Each is timed as wall seconds and as CPU seconds (user + system): on a shared machine the
wall time depends on the other jobs, the CPU time much less. The 1-minute load average is
printed with them.

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
import resource
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


def _timed(cmd, repeat: int) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (user + system of the child) of each run.

    On a shared machine the wall time depends on the other jobs; the CPU time much less
    (it is what the command would take alone, as long as it runs on one core).
    """
    walls, cpus = [], []
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, check=True, env=_env(), cwd=ROOT, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    return walls, cpus


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
        walls, cpus = _timed(q, a.repeat)
        res["quickstart_median_s"] = statistics.median(walls)
        res["quickstart_cpu_median_s"] = statistics.median(cpus)
        res["quickstart_runs_s"] = walls
        res["load_average_1min"] = os.getloadavg()[0]
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
            walls, cpus = _timed(rep, a.repeat)
            res["report_median_s"] = statistics.median(walls)
            res["report_cpu_median_s"] = statistics.median(cpus)
            res["report_runs_s"] = walls
            res["report_bytes"] = (tmp / "large" / "report.html").stat().st_size
            from ccmod.outputs.report import build_report
            t, c = time.perf_counter(), time.process_time()
            build_report(r, tmp / "large" / "inmem.html")
            res["report_in_memory_s"] = time.perf_counter() - t
            res["report_in_memory_cpu_s"] = time.process_time() - c
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
