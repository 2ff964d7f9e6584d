"""Where a cold compile of the kernel goes: numba's compile time per function.

Usage::

    python bench/compile_profile.py [--sharing ccmod,maxmin] [--loop quiet,recorded]
        [--opt 3] [--top 25] [--json OUT] [--trace traces/stencil16.ti] [--network myrinet16]

Each combination runs in a fresh process with an empty ``NUMBA_CACHE_DIR`` (a temporary
folder, removed after), as the first run after an install does: ``--loop quiet`` is
``ccmod run TRACE`` writing nothing (the quiet loop), ``recorded`` what ``--out`` or
``--report`` runs (the recorded loop), ``recorded+quiet`` both in one process, in that
order; ``recorded|quiet`` the same in two processes sharing the cache (a new user's
Quickstart, then a first ``--json`` run: the second compile loads from the cache the
first one's callees that do not depend on the loop's logs). ``--opt`` sets ``NUMBA_OPT``
in the child (numba's LLVM optimisation level, 0-3; default: numba's, 3).

Measured, per combination: the wall and CPU seconds of the whole run call (reading and
set-up included; they are ~0.3 s warm), and per compiled function, from numba's
``numba:compile`` events (``numba.core.event``): how often it was compiled (one per
argument types), its inclusive time (its callees compiled from within its typing
included), its *self* time (inclusive minus the callees' compiles) and, inside the self
time, what LLVM took (hooks on numba's ``CPUCodeLibrary``): the function passes on the
new IR (``fpass``), linking the callees' libraries in (``link``), the module passes over
the whole linked module (``mpass``: each caller optimises again all the code below it)
and machine-code generation (``mcgen``), with the module's size after optimisation
(LLVM instructions, ``insns``); all CPU seconds. The rest of the self time is numba's front end (bytecode
analysis, type inference, lowering to LLVM IR, cache writes).

Prints one table per combination, the top ``--top`` functions by self time and the sums;
``--json`` saves everything.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# -- the child: one cold run under the listeners ----------------------------------------------
def _child(args) -> None:
    import numba.core.event as ev
    from numba.core import codegen as cg

    rows = []          # one per numba:compile event
    stack = []         # compiles in progress (callees compile inside their caller's typing)
    llvm = {}          # id(library) -> {phase: seconds}

    def now():
        return time.perf_counter(), time.process_time()

    class Compiles(ev.Listener):
        def on_start(self, event):
            d = event.data or {}
            disp = d.get("dispatcher")
            name = getattr(getattr(disp, "py_func", None), "__qualname__", str(disp))
            mod = getattr(getattr(disp, "py_func", None), "__module__", "?")
            sig = ",".join(str(a) for a in (d.get("args") or ()))
            stack.append({"name": f"{mod.rsplit('.', 1)[-1]}.{name}", "args": sig,
                          "t0": now(), "child_wall": 0.0, "child_cpu": 0.0,
                          "fpass": 0.0, "link": 0.0, "mpass": 0.0, "mcgen": 0.0,
                          "insns": 0})

        def on_end(self, event):
            r = stack.pop()
            w1, c1 = now()
            r["wall"] = w1 - r["t0"][0]
            r["cpu"] = c1 - r["t0"][1]
            del r["t0"]
            r["self_wall"] = r["wall"] - r.pop("child_wall")
            r["self_cpu"] = r["cpu"] - r.pop("child_cpu")
            if stack:
                stack[-1]["child_wall"] += r["wall"]
                stack[-1]["child_cpu"] += r["cpu"]
            rows.append(r)

    def charge(phase, seconds):
        if stack:
            stack[-1][phase] += seconds

    def timed(cls, meth, phase):
        orig = getattr(cls, meth)

        def wrapper(self, *a, **k):
            t = time.process_time()
            try:
                return orig(self, *a, **k)
            finally:
                charge(phase, time.process_time() - t)
        setattr(cls, meth, wrapper)

    timed(cg.CPUCodeLibrary, "_optimize_functions", "fpass")
    timed(cg.CPUCodeLibrary, "_optimize_final_module", "mpass")
    timed(cg.JITCodeLibrary, "_finalize_specific", "mcgen")
    orig_finalize = cg.CPUCodeLibrary.finalize

    def finalize(self):
        # linking = finalize minus its module passes and machine code (measured inside)
        before = dict(stack[-1]) if stack else None
        t = time.process_time()
        out = orig_finalize(self)
        if stack and before is not None:
            inner = sum(stack[-1][k] - before[k] for k in ("mpass", "mcgen"))
            stack[-1]["link"] += time.process_time() - t - inner
            if args.sizes:
                stack[-1]["insns"] += sum(
                    1 for f in self._final_module.functions if not f.is_declaration
                    for b in f.blocks for _ in b.instructions)
        return out
    cg.CPUCodeLibrary.finalize = finalize

    listener = Compiles()
    ev.register("numba:compile", listener)

    sys.path.insert(0, str(ROOT))
    from ccmod.api import run
    phases = []
    for loop in args.loop.split("+"):
        n0 = len(rows)
        w0, c0 = time.perf_counter(), time.process_time()
        from ccmod.kernel import compiling  # noqa: F401  (gc paused as in ccmod run)
        run(str(ROOT / args.trace), args.network, sharing=args.sharing,
            record=(loop == "recorded"))
        phases.append({"loop": loop, "wall": time.perf_counter() - w0,
                       "cpu": time.process_time() - c0, "compiles": len(rows) - n0})
    print(json.dumps({"phases": phases, "rows": rows}))


# -- the parent: fresh processes, tables ------------------------------------------------------
def _table(label, out, top):
    rows = out["rows"]
    for p in out["phases"]:
        print(f"{label} [{p['loop']}]: run {p['wall']:.1f} s wall / {p['cpu']:.1f} s CPU, "
              f"{p['compiles']} compiles")
    agg = {}
    for r in rows:
        a = agg.setdefault(r["name"], {"n": 0, "self_cpu": 0.0, "cpu": 0.0, "fpass": 0.0,
                                       "link": 0.0, "mpass": 0.0, "mcgen": 0.0, "insns": 0})
        a["n"] += 1
        for k in ("self_cpu", "cpu", "fpass", "link", "mpass", "mcgen", "insns"):
            a[k] += r[k]
    tot = {k: sum(a[k] for a in agg.values()) for k in
           ("self_cpu", "fpass", "link", "mpass", "mcgen")}
    print(f"  {'function':<34} {'n':>3} {'self s':>7} {'incl s':>7} {'fpass':>6} "
          f"{'link':>6} {'mpass':>6} {'mcgen':>6} {'insns':>7}")
    for name, a in sorted(agg.items(), key=lambda kv: -kv[1]["self_cpu"])[:top]:
        print(f"  {name[:34]:<34} {a['n']:>3} {a['self_cpu']:>7.2f} {a['cpu']:>7.2f} "
              f"{a['fpass']:>6.2f} {a['link']:>6.2f} {a['mpass']:>6.2f} {a['mcgen']:>6.2f} "
              f"{a['insns']:>7}")
    front = tot["self_cpu"] - tot["fpass"] - tot["link"] - tot["mpass"] - tot["mcgen"]
    print(f"  all {len(rows)} compiles of {len(agg)} functions: {tot['self_cpu']:.1f} s "
          f"(numba front end {front:.1f}, LLVM function passes {tot['fpass']:.1f}, "
          f"link {tot['link']:.1f}, module passes {tot['mpass']:.1f}, "
          f"machine code {tot['mcgen']:.1f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sharing", default="ccmod,maxmin")
    ap.add_argument("--loop", default="quiet,recorded",
                    help="comma list of quiet, recorded, recorded+quiet (one process), "
                         "recorded|quiet (two processes, one cache)")
    ap.add_argument("--opt", default=None, help="NUMBA_OPT for the child (0-3)")
    ap.add_argument("--trace", default="traces/stencil16.ti")
    ap.add_argument("--network", default="myrinet16")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--sizes", action="store_true",
                    help="count LLVM instructions per module (slower)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args)
        return
    results = {}
    for sharing in args.sharing.split(","):
        for combo in args.loop.split(","):
            cache = tempfile.mkdtemp(prefix="ccmod-numba-cold-")
            env = dict(os.environ, NUMBA_CACHE_DIR=cache,
                       PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
            if args.opt is not None:
                env["NUMBA_OPT"] = str(args.opt)
            for loop in combo.split("|"):      # one process each, sharing the cache
                cmd = [sys.executable, __file__, "--child", "--sharing", sharing, "--loop",
                       loop, "--trace", args.trace, "--network", args.network]
                if args.sizes:
                    cmd.append("--sizes")
                w0 = time.perf_counter()
                t0 = os.times()
                p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
                t1 = os.times()
                if p.returncode != 0:
                    shutil.rmtree(cache, ignore_errors=True)
                    sys.exit(f"{sharing}/{loop} failed:\n{p.stderr[-3000:]}")
                out = json.loads(p.stdout.strip().splitlines()[-1])
                out["process_wall"] = time.perf_counter() - w0
                out["process_cpu"] = (t1.children_user + t1.children_system
                                      - t0.children_user - t0.children_system)
                label = (f"{sharing}/{loop}" + (" (after " + combo.split("|")[0] + ")"
                                                if loop != combo.split("|")[0] else "")
                         + (f" NUMBA_OPT={args.opt}" if args.opt else ""))
                print(f"{label}: process {out['process_wall']:.1f} s wall / "
                      f"{out['process_cpu']:.1f} s CPU")
                _table(label, out, args.top)
                results[label] = out
            shutil.rmtree(cache, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
