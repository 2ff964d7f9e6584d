"""A/B of the engine between two versions of ccmod, on one of bench_engine's workloads.

Usage::

    python bench/ab_engine.py --base main~3                  # a git revision ...
    python bench/ab_engine.py --base /path/to/other/tree     # ... or a source tree
    python bench/ab_engine.py --base REV --case incast512 --sharing ccmod --runs 8

This machine's noise (2 shared cores: the same run moves by +-30 % within minutes) hides
most single changes from one-off timings. Here the two versions run alternately, each
run in a fresh process (``bench_engine.py --child``: the engine's wall time, the compiled
loop alone in a second run, peak memory per record), so drifts in the machine's speed hit
both alike; the medians and their ratio are printed, with each side's spread. A revision is
checked out in a temporary git worktree (removed afterwards) and both trees are warmed up
first, so numba's first-run compile is not counted. Workloads are bench_engine's,
generated once under ``--workdir`` (reuse it across calls to save the generation).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]      # bench_engine, and ccmod for the workloads

import bench_engine as be  # noqa: E402 - the workloads and the child mode


def child(tree: str, case: dict, network: str, sharing: str) -> dict:
    """One fresh process of ``tree``'s ccmod on ``case`` (bench_engine's child mode)."""
    env = dict(os.environ, PYTHONPATH=tree)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    p = subprocess.run([sys.executable, str(HERE / "bench_engine.py"), "--child", "--trace",
                        case["trace"], "--map", case["map"], "--network", network,
                        "--sharing", sharing], capture_output=True, text=True, env=env)
    if p.returncode:
        raise SystemExit(f"ab_engine: {tree}: {p.stderr.strip().splitlines()[-1:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def summary(runs: list[dict]) -> dict:
    """Medians (and the engine wall's spread) of one side's runs."""
    wall = [r["wall_s"] for r in runs]
    return {"engine_wall_s": statistics.median(wall), "engine_min_s": min(wall),
            "engine_max_s": max(wall),
            "loop_s": statistics.median(r["kernel_s"] for r in runs),
            # the loop's CPU time: on a loaded machine its wall time is mostly waiting
            "loop_cpu_s": statistics.median(r.get("kernel_cpu_s", 0.0) for r in runs),
            "loop_cpu_min_s": min(r.get("kernel_cpu_s", 0.0) for r in runs),
            "loop_cpu_max_s": max(r.get("kernel_cpu_s", 0.0) for r in runs),
            "B_per_record": statistics.median(r["mem_B_per_record"] for r in runs)}


def ab(base: str, other: str, case: dict, network: str, sharing: str, runs: int):
    """Alternate ``runs`` fresh processes of each tree; (base's, other's) summaries."""
    trees = (base, other)
    for tree in trees:                   # numba's first-run compile, not counted
        child(tree, case, network, sharing)
    out = ([], [])
    for i in range(runs):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            out[side].append(child(trees[side], case, network, sharing))
    return summary(out[0]), summary(out[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="a git revision or a source tree")
    ap.add_argument("--other", default=str(ROOT), help="the tree to compare (this one)")
    ap.add_argument("--case", default="random64")
    ap.add_argument("--sharing", default="ccmod")
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--scale", type=float, default=1.0, help="1.0 = 1M records")
    ap.add_argument("--workdir", default=None)
    a = ap.parse_args()
    workdir = a.workdir or tempfile.mkdtemp(prefix="ccmod-ab-")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    case, network = be.make_case(a.case, workdir, int(1_000_000 * a.scale))
    worktree = None
    base = a.base
    if not Path(base).is_dir():
        worktree = tempfile.mkdtemp(prefix="ccmod-ab-base-")
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", worktree,
                        base], check=True)
        base = worktree
    try:
        b, o = ab(base, a.other, case, network, a.sharing, a.runs)
    finally:
        if worktree:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", worktree])
    print(f"{a.case} --sharing {a.sharing}, {case['records']:,} records, {a.runs} runs each, "
          f"alternating fresh processes, medians")
    print("| side | engine wall s (min-max) | loop s | loop CPU s (min-max) | B/record |\n"
          "|---|---|---|---|---|")
    for name, s in (("base " + a.base, b), ("other " + a.other, o)):
        print(f"| {name} | {s['engine_wall_s']:.3f} ({s['engine_min_s']:.3f}-"
              f"{s['engine_max_s']:.3f}) | {s['loop_s']:.3f} | {s['loop_cpu_s']:.3f} "
              f"({s['loop_cpu_min_s']:.3f}-{s['loop_cpu_max_s']:.3f}) | {s['B_per_record']:.1f} |")
    print(f"other / base: engine wall {o['engine_wall_s'] / b['engine_wall_s']:.3f}, "
          f"loop {o['loop_s'] / b['loop_s']:.3f}, loop CPU "
          f"{o['loop_cpu_s'] / max(b['loop_cpu_s'], 1e-12):.3f}")


if __name__ == "__main__":
    main()
