"""Instructions (and branch mispredictions) per record of the compiled loop, by callgrind.

Usage::

    python bench/callgrind_kernel.py light16 [--records 100000] [--sharing ccmod]
    python bench/callgrind_kernel.py incast512 --branch-sim --top 25

Cases are bench/perf_kernel.py's (``random64``, ``light16``, ``incastK``, ``spreadK``,
``sharersK``, ``sharersKrR``, ``computeP``). Why callgrind: it counts instructions, not
seconds, so a count is the same whatever else this shared 2-core machine is doing, and two
versions of the kernel can be compared while helpers load both cores (timings cannot be).
What it misses: it models no hardware prefetch and only a simple branch predictor, so a
change that trades instructions for memory traffic still needs a timed A/B
(bench/ab_engine.py) on an idle machine.

How: the case runs once plainly (compiles or loads the JIT cache, with
``NUMBA_CPU_NAME=generic`` so that valgrind knows every instruction and the cache is the
same one each time), then once under ``valgrind --tool=callgrind``. Numba's code has no
symbols valgrind can see, so the child writes, after its run, the address range of every
function of ``run_entry``'s compiled object (as bench/perf_kernel.py does for perf); the
callgrind functions (named by address) inside those ranges are summed: the loop, without
the per-run set-up, which runs in other objects or in Python. Prints ``LOOP TOTAL``
instructions per record, then the functions of the loop by their share (with ``Bc`` /
``Bcm``, conditional branches and their mispredictions per record, under
``--branch-sim``).
"""
from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _child(a) -> None:
    """Run the case once; with ``--map``, write the loop's function ranges as JSON."""
    from ccmod.api import run
    from perf_kernel import _case, write_perf_map
    w, net, kw = _case(a.case, a.records, a.sharing)
    run(w, net, sharing=a.sharing, record=False, **kw)
    if a.map:
        import ccmod.kernel.loop as loop
        _, items, _ = write_perf_map([loop.run_entry], path=a.map + ".perfmap")
        os.unlink(a.map + ".perfmap")
        Path(a.map).write_text(json.dumps({"nrecords": int(w.nrecords), "functions": [
            [addr, size, name] for addr, (size, name) in sorted(items.items())]}))


def _parse(out_file: str, events_wanted):
    """``{function name: [costs]}``: each function's own costs (the ``fn=`` blocks) in a
    callgrind output written with ``--compress-strings=no --compress-pos=no`` (names and
    positions in full), the cost line after a ``calls=`` line (a call's inclusive cost)
    left out."""
    costs, idx, fn, after_call = {}, [], None, False
    for line in open(out_file):
        if line.startswith("events:"):
            events = line.split()[1:]
            idx = [events.index(e) if e in events else None for e in events_wanted]
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line.startswith("calls="):
            after_call = True
        elif line[:1].isdigit():
            if after_call:
                after_call = False
                continue
            vals = line.split()[1:]
            acc = costs.setdefault(fn, [0] * len(events_wanted))
            for j, i in enumerate(idx):
                if i is not None and i < len(vals):
                    acc[j] += int(vals[i])
    return costs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", help="random64 | light16 | incastK | spreadK | sharersK[rR] | computeP")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--sharing", default="ccmod")
    ap.add_argument("--branch-sim", action="store_true",
                    help="also count conditional branches and their mispredictions")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--map", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a)
        return
    env = dict(os.environ, NUMBA_CPU_NAME="generic")
    base = [sys.executable, __file__, a.case, "--records", str(a.records),
            "--sharing", a.sharing, "--child"]
    subprocess.run(base, env=env, check=True)                  # compile or warm the cache
    tmp = Path(tempfile.mkdtemp(prefix="ccmod-cg-"))
    out, mp = tmp / "callgrind.out", tmp / "map.json"
    vg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no",
          "--compress-strings=no", "--compress-pos=no"]
    if a.branch_sim:
        vg.append("--branch-sim=yes")
    r = subprocess.run(vg + base + ["--map", str(mp)], env=env, capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"callgrind_kernel: valgrind failed ({r.returncode}): {r.stderr[-2000:]}")
    info = json.loads(mp.read_text())
    funcs = info["functions"]
    nrec = info["nrecords"]
    wanted = ["Ir", "Bc", "Bcm"]
    costs = _parse(str(out), wanted)
    starts = [f[0] for f in funcs]
    per_fn = {}
    for name, c in costs.items():
        m = re.match(r"0x([0-9a-fA-F]+)", name or "")
        if not m:
            continue
        addr = int(m.group(1), 16)
        k = bisect.bisect_right(starts, addr) - 1
        if k < 0 or addr >= funcs[k][0] + max(funcs[k][1], 1):
            continue
        acc = per_fn.setdefault(funcs[k][2], [0, 0, 0])
        for j in range(3):
            acc[j] += c[j]
    tot = [sum(v[j] for v in per_fn.values()) for j in range(3)]
    print(f"{a.case} {a.sharing}: {nrec} records, NUMBA_CPU_NAME=generic")
    head = f"LOOP TOTAL {tot[0] / nrec:9.1f} instr/rec"
    if a.branch_sim:
        head += f"  Bc {tot[1] / nrec:7.2f}  Bcm {tot[2] / nrec:6.3f} per rec"
    print(head)
    for name, c in sorted(per_fn.items(), key=lambda kv: -kv[1][0])[:a.top]:
        row = f"{c[0] / nrec:9.1f}  "
        if a.branch_sim:
            row += f"{c[1] / nrec:7.2f} {c[2] / nrec:6.3f}  "
        print(row + name.split(".")[-1][:60])
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
