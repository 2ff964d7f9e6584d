"""Long fuzz campaign of the ``ccmod`` command line (issue 14).

Round-robin over every family of ``tests/fuzzkit.py`` (mutated real samples of each reader,
option values, network specs, generators, files the user names that are not inputs) with
random mutations, in this process (``ccmod.cli.main``) under an address-space cap, until a
CPU budget is spent. Prints, per family: inputs, exit-0 runs, clean one-line errors, internal
errors and other defects (several stderr lines, a file not named, control characters,
content of an unrelated file, a temp file left behind, a timeout, out of memory), and one
reproducer (family + ops) per defect kind.

Usage::

    PYTHONPATH=. python bench/fuzz_campaign.py --cpu-s 600 --seed 1 [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import fuzzkit  # noqa: E402


def classify(v: str, err: str) -> str:
    if v in ("ok", "clean"):
        if "out of memory" in err or "not enough memory" in err:
            return "out of memory"
        return v
    if v.startswith("internal error"):
        return "internal error"
    return v.split(":", 1)[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu-s", type=float, default=600.0, help="CPU-time budget (s)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout-s", type=float, default=60.0, help="per input (wall)")
    ap.add_argument("--mem-mb", type=int, default=4096, help="address-space cap (MiB)")
    ap.add_argument("--families", default="", help="comma-separated subset")
    ap.add_argument("--json", default=None, help="write the counts here")
    a = ap.parse_args(argv)
    if a.mem_mb:
        cap = a.mem_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    fams = fuzzkit.families()
    names = [n for n in (a.families.split(",") if a.families else fams) if n]
    # warm up (imports, numba compilation) so that the first inputs do not hit the timeout
    for sharing in ("ccmod", "maxmin"):
        fuzzkit.run_cli(["run", fuzzkit.TRACES / "pingpong.ti", "--sharing", sharing],
                        timeout_s=0)
    rng = random.Random(a.seed)
    counts: dict[str, Counter] = defaultdict(Counter)
    examples: dict[tuple, dict] = {}
    cpu0, wall0 = time.process_time(), time.time()
    root = Path(tempfile.mkdtemp(prefix="ccmod-fuzz-"))
    i = 0
    try:
        while time.process_time() - cpu0 < a.cpu_s:
            name = names[i % len(names)]
            i += 1
            ops = [(rng.randrange(64), rng.randrange(10 ** 6), rng.randrange(10 ** 6))
                   for _ in range(rng.randint(1, 3))]
            tmp = root / f"{i}"
            try:
                v, args, err = fuzzkit.fuzz_one(fams[name], ops, tmp, a.timeout_s)
            except Exception as exc:  # the harness itself failed on this input
                v, args, err = f"harness error: {type(exc).__name__}: {exc}", [], ""
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            kind = classify(v, err)
            counts[name]["inputs"] += 1
            counts[name][kind] += 1
            if kind not in ("ok", "clean") and (name, kind) not in examples:
                examples[(name, kind)] = {"family": name, "ops": ops, "verdict": v[:400],
                                          "argv": [str(x)[:120] for x in args]}
                print(f"DEFECT {name}: {v[:300]}  ops={ops}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    kinds = sorted({k for c in counts.values() for k in c} - {"inputs", "ok", "clean"})
    cols = ["family", "inputs", "exit 0", "clean errors", "internal errors"] + \
        [k for k in kinds if k != "internal error"]
    print("\n| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    total = Counter()
    for name in names:
        c = counts[name]
        total.update(c)
        row = [name, c["inputs"], c["ok"], c["clean"], c["internal error"]] + \
            [c[k] for k in kinds if k != "internal error"]
        print("| " + " | ".join(str(x) for x in row) + " |")
    row = ["**total**", total["inputs"], total["ok"], total["clean"], total["internal error"]] + \
        [total[k] for k in kinds if k != "internal error"]
    print("| " + " | ".join(str(x) for x in row) + " |")
    cpu = time.process_time() - cpu0
    print(f"\n{total['inputs']} inputs in {cpu:.0f} s CPU ({time.time() - wall0:.0f} s wall), "
          f"seed {a.seed}; defects: {sum(total[k] for k in kinds)}")
    if a.json:
        Path(a.json).write_text(json.dumps({
            "seed": a.seed, "cpu_s": cpu, "counts": {k: dict(v) for k, v in counts.items()},
            "examples": list(examples.values())}, indent=1))
    return 0 if not kinds else 1


if __name__ == "__main__":
    sys.exit(main())
