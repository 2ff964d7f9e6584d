"""Cost per record across bench_engine's cases, measured side by side (issue 10's "flat from
1 to 1024 sharers").

Usage::

    python bench/flat_engine.py                                   # incast1 ... incast1024
    python bench/flat_engine.py --cases incast1,incast16,light16 --runs 9 --workdir /tmp/w

Why not bench_engine's table: there each case's runs come one after another, and the speed
of this machine (a 2-vCPU virtual machine) moves in phases of seconds to minutes. Measured in
stop 31 at load ~9 (incast1, one process, the same workload and the same kernel buffers
every run): runs fell into a fast mode (~75-95 ms of user CPU in the loop) and a slow one
(~120-150 ms) in phases of several runs (correlation of consecutive runs 0.4-0.6), with a
pure-Python loop and an L1-resident numpy probe run just before each 11-17 % slower in the
slow runs too; fresh processes varied no more than one long-lived process over the same
minutes, and addresses and huge-page backing were the same in fast and slow runs. A case
that happens to run in a slow phase looks up to ~2x slower than its neighbour. Here the
cases run round-robin, each run a fresh process (bench_engine's ``--child``: the compiled
loop alone, warm), the first case rotating, so the phases hit every case alike; per case
the loop's CPU time is summarised (median, min, max) with the cost per record and its ratio
to the first case's. Compare minima as well as medians: the fast mode's runs are the
machine's own speed.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]      # bench_engine, ab_engine, and ccmod

import ab_engine  # noqa: E402 - one fresh process per run
import bench_engine as be  # noqa: E402 - the workloads

CASES = "incast1,incast16,incast128,incast512,incast1024"


def measure(cases: list[str], workdir: str, records: int, sharing: str, runs: int,
            tree: str = str(ROOT)) -> dict:
    """``runs`` rounds of one fresh process per case, the first case rotating; per case
    the children's results (bench_engine's ``--child`` JSON)."""
    made = {name: be.make_case(name, workdir, records) for name in cases}
    first = cases[0]
    ab_engine.child(tree, made[first][0], made[first][1], sharing)   # a cold cache compiles
    out = {name: [] for name in cases}
    for i in range(runs):
        k = i % len(cases)
        for name in cases[k:] + cases[:k]:
            case, network = made[name]
            out[name].append(ab_engine.child(tree, case, network, sharing))
    return out


def table(out: dict) -> str:
    """Markdown: per case the loop's CPU time and nanoseconds per record (median, min,
    max) and both against the first case."""
    rows = ["| case | records | loop CPU s median (min-max) | ns/record median (min) | "
            "vs first: median (min) |", "|---|---|---|---|---|"]
    ref = None
    for name, runs in out.items():
        cpu = [r["kernel_cpu_s"] for r in runs]
        n = runs[0]["records"]
        med, lo, hi = statistics.median(cpu), min(cpu), max(cpu)
        per_rec = (1e9 * med / n, 1e9 * lo / n)
        ref = ref or per_rec
        rows.append(f"| {name} | {n:,} | {med:.3f} ({lo:.3f}-{hi:.3f}) | {per_rec[0]:.0f} "
                    f"({per_rec[1]:.0f}) | {per_rec[0] / ref[0]:.2f}x "
                    f"({per_rec[1] / ref[1]:.2f}x) |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=CASES, help="bench_engine's case names, comma-separated")
    ap.add_argument("--sharing", default="ccmod")
    ap.add_argument("--runs", type=int, default=7, help="fresh processes per case")
    ap.add_argument("--scale", type=float, default=1.0, help="1.0 = 1M records")
    ap.add_argument("--workdir", default=None)
    a = ap.parse_args()
    workdir = a.workdir or tempfile.mkdtemp(prefix="ccmod-flat-")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    cases = [c for c in a.cases.split(",") if c]
    out = measure(cases, workdir, int(1_000_000 * a.scale), a.sharing, a.runs)
    print(f"--sharing {a.sharing}, {a.runs} fresh processes per case, round-robin "
          f"(the first case rotating); the compiled loop's CPU time, warm")
    print(table(out))


if __name__ == "__main__":
    main()
