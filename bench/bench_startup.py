"""Start-up benchmark: warm ``ccmod run`` of the README's small sample, end to end.

Usage::

    python bench/bench_startup.py [--repeat 5] [--json]

Runs, each as a fresh process after one warm-up run (numba's cache, the OS file cache and
``.pyc`` files warm; ``PYTHONDONTWRITEBYTECODE`` is dropped for them, as an installed
package has its bytecode), and prints the median wall and CPU (user + system) seconds:

* ``run``: ``ccmod run traces/stencil16.ti --network myrinet16`` (human summary);
* ``run --json``: the same with ``--json``;
* ``run --report``: the README Quickstart command (``--report DIR``: tables + HTML);
* ``python -c pass``: the interpreter alone, for reference.

Then the modules that cost most to import in a ``--json`` run (``python -X importtime``,
self time summed per top-level package). On a shared machine read the CPU column: wall
time there depends on the other jobs. The 1-minute load average is printed.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ["traces/stencil16.ti", "--network", "myrinet16"]


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(cmd) -> tuple[float, float]:
    """(wall s, CPU s of the child) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_costs(top: int = 12) -> list[tuple[str, float]]:
    """(package, ms) of the costliest imports of a warm ``ccmod run ... --json``."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "ccmod", "run", *SAMPLE,
                        "--json"], cwd=ROOT, env=_env(), capture_output=True, text=True,
                       timeout=900)
    agg: collections.Counter = collections.Counter()
    for line in p.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        name = line.split("|")[2].strip()
        key = ".".join(name.split(".")[:2]) if name.startswith("ccmod.") else name.split(".")[0]
        agg[key] += int(line.split("|")[0].split(":")[1])
    return [(k, v / 1000) for k, v in agg.most_common(top)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = tempfile.mkdtemp(prefix="ccmod-bench-startup-")
    py = [sys.executable]
    cases = {
        "run": py + ["-m", "ccmod", "run", *SAMPLE],
        "run --json": py + ["-m", "ccmod", "run", *SAMPLE, "--json"],
        "run --report": py + ["-m", "ccmod", "run", *SAMPLE, "--report", out],
        "python -c pass": py + ["-c", "pass"],
    }
    rows = []
    for name, cmd in cases.items():
        timed(cmd)                                   # warm-up (caches, .pyc)
        runs = [timed(cmd) for _ in range(a.repeat)]
        rows.append({"case": name, "wall_s": statistics.median(w for w, _ in runs),
                     "cpu_s": statistics.median(c for _, c in runs),
                     "load1": os.getloadavg()[0]})
        print(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in rows[-1].items()), file=sys.stderr, flush=True)
    costs = import_costs()
    if a.json:
        print(json.dumps({"runs": rows, "imports_ms": costs}, indent=1))
        return
    print(f"| command (warm, median of {a.repeat}) | wall s | CPU s | load avg |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| `{r['case']}` | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['load1']:.1f} |")
    print("\nimport self time of `ccmod run ... --json`, by package (ms): "
          + ", ".join(f"{k} {v:.0f}" for k, v in costs))


if __name__ == "__main__":
    main()
