"""Cost per record across bench_engine's cases, measured side by side (issue 10's "flat from
1 to 1024 sharers").

Usage::

    python bench/flat_engine.py                                   # incast1 ... incast1024
    python bench/flat_engine.py --family incast,sharers --runs 5  # both families, side by side
    python bench/flat_engine.py --cases incast1,incast16,light16 --runs 9 --workdir /tmp/w

Families (``--family``; bench_engine's case names):

incast   incastK, K = 1, 16, 128, 512, 1024: K senders on their own nodes, K receivers on
         one node. It varies two things at once: the sharers of the receiving node's
         downlink (K) and the ranks (2K). incast1 is 2 ranks whose state stays in L1;
         incast1024 is 2048 ranks visited in turn, so its per-record cost includes the
         cache misses of a large working set, which any simulator of 2048 ranks pays
         whatever its sharing rule (stop 34: incast1 vs incast16 588 vs 613 instructions
         per record, but 0.17 vs ~1.0 D1 read misses).
sharers  sharersK, K = 1, 16, 128, 512, 1024: the sharers alone. Every case runs the same
         trace, incast1024's (2048 ranks; each round every rank ``i`` < 1024 sends 64 KiB to
         rank 1024 + ``i``, blocking, rendezvous), on the same network (a 2048-node star:
         bench_engine's bandwidth and latency, ``nodes=2048``), with sender ``i`` on node
         ``i``; only the mapping of the receivers differs: receiver ``j`` on node 1024 +
         ``j // K``, so each of 1024 / K receiving nodes has K of each round's messages on
         its downlink. Records, messages, bytes, ranks, records per rank, hops per message
         (a star's uplink and downlink), event horizons per round and the network's size are
         the same for every K; what changes is how many messages share a resource (and, its
         consequence, how many distinct downlinks and bottleneck groups are in use: 1024 of
         one message at K = 1, one of 1024 at K = 1024). sharers1024 is incast1024 on a
         larger star (its extra nodes idle).
ranks    R = 2, 32, 256, 1024, 2048 ranks, one sharer per downlink: incast1 (R = 2),
         sharers1rR (incast{R/2}'s trace with each receiver on its own node, an R-node
         star), sharers1 (R = 2048). As incast16 is sharers16r32 (on a star sized by the
         run), incast's 1 -> 16 step splits into ranks (incast1 -> sharers1r32) and sharers
         (sharers1r32 -> incast16).

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
to its family's first case (with ``--cases``, the first case's). Compare minima as well as medians: the fast mode's runs are the
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

FAMILIES = {
    "incast": "incast1,incast16,incast128,incast512,incast1024",
    "sharers": "sharers1,sharers16,sharers128,sharers512,sharers1024",
    "ranks": "incast1,sharers1r32,sharers1r256,sharers1r1024,sharers1",
}


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


def table(out: dict, groups: dict | None = None) -> str:
    """Markdown: per case the loop's CPU time and nanoseconds per record (median, min,
    max) and both against the first case of its group (``groups``: name -> case names;
    by default one group of every case)."""
    groups = groups or {"": list(out)}
    rows = ["| case | records | loop CPU s median (min-max) | ns/record median (min) | "
            "vs its family's first: median (min) |", "|---|---|---|---|---|"]
    for family, names in groups.items():
        ref = None
        for name in names:
            runs = out[name]
            cpu = [r["kernel_cpu_s"] for r in runs]
            n = runs[0]["records"]
            med, lo, hi = statistics.median(cpu), min(cpu), max(cpu)
            per_rec = (1e9 * med / n, 1e9 * lo / n)
            ref = ref or per_rec
            label = f"{family}: {name}" if family else name
            rows.append(f"| {label} | {n:,} | {med:.3f} ({lo:.3f}-{hi:.3f}) | "
                        f"{per_rec[0]:.0f} ({per_rec[1]:.0f}) | {per_rec[0] / ref[0]:.2f}x "
                        f"({per_rec[1] / ref[1]:.2f}x) |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="incast",
                    help=f"comma-separated, of {', '.join(FAMILIES)} (see the docstring)")
    ap.add_argument("--cases", default=None,
                    help="bench_engine's case names, comma-separated (instead of --family)")
    ap.add_argument("--sharing", default="ccmod")
    ap.add_argument("--runs", type=int, default=7, help="fresh processes per case")
    ap.add_argument("--scale", type=float, default=1.0, help="1.0 = 1M records")
    ap.add_argument("--workdir", default=None)
    a = ap.parse_args()
    if a.cases:
        groups = {"": [c for c in a.cases.split(",") if c]}
    else:
        bad = [f for f in a.family.split(",") if f not in FAMILIES]
        if bad:
            raise SystemExit(f"flat_engine: unknown family {bad[0]!r}: {', '.join(FAMILIES)}")
        fams = a.family.split(",")
        groups = {f: FAMILIES[f].split(",") for f in fams}
        if len(groups) == 1:
            groups = {"": groups[fams[0]]}
    workdir = a.workdir or tempfile.mkdtemp(prefix="ccmod-flat-")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    cases = list(dict.fromkeys(c for names in groups.values() for c in names))
    out = measure(cases, workdir, int(1_000_000 * a.scale), a.sharing, a.runs)
    print(f"--sharing {a.sharing}, {a.runs} fresh processes per case, round-robin "
          f"(the first case rotating); the compiled loop's CPU time, warm")
    print(table(out, groups))


if __name__ == "__main__":
    main()
