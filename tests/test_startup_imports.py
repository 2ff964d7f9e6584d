"""Start-up stays light: ``ccmod run`` of a small trace imports neither pandas nor bokeh.

Structural, not timed: a fresh interpreter runs the command and lists the heavy modules in
``sys.modules`` afterwards. pandas (~0.5 s to import) is only for tables a user asks for
(``RunResult.ranks`` etc. are built on first access), bokeh only for ``--report``;
scipy.linalg (~0.25 s) is what numba's BLAS check would import (see
:mod:`ccmod.kernel.compiled`), though numba must still find the BLAS.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "pyarrow", "bokeh", "matplotlib", "scipy.linalg")

_PROBE = """
import atexit, gc, json, sys
import numba.core.caching as nc
compiled = []                 # numba saves every function it compiles to its cache
_save = nc.Cache.save_overload
nc.Cache.save_overload = lambda self, sig, data: (compiled.append(1), _save(self, sig, data))


def report():
    from numba.core.base import builtin_registry
    from numba.core.registry import cpu_target
    print(json.dumps({"heavy": [m for m in %r if m in sys.modules],
                      "frozen": gc.get_freeze_count() > 0, "compiled": len(compiled),
                      "collecting": gc.isenabled(),
                      "refreshed": builtin_registry in cpu_target.target_context._registries,
                      "arraymath": "numba.np.arraymath" in sys.modules}), file=sys.stderr)


# registered first, so it runs last: after the command's own exit handlers. It says which
# heavy modules the process imported (by then, everything the command did is done),
# whether the heap was frozen for the exit, and whether numba compiled anything or loaded
# its registries
atexit.register(report)
from ccmod.cli import main
as_command = sys.argv[1] == "command"
sys.argv = ["ccmod", *sys.argv[2:]]
if as_command:
    main()                  # as the `ccmod` command and `python -m ccmod` call it
else:
    main(sys.argv[1:])
""" % (HEAVY,)


def _probe(*argv, as_command=False, numba_state=None):
    """Run ``ccmod ARGV`` in a fresh interpreter: (exit code, heavy modules imported, heap
    frozen at exit, stdout); ``numba_state`` (a dict) gets what numba did."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", _PROBE, "command" if as_command else "call",
                        *argv], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=600)
    got = json.loads(p.stderr.strip().splitlines()[-1])
    if numba_state is not None:
        numba_state.update((k, got[k]) for k in ("compiled", "refreshed", "arraymath",
                                                 "collecting"))
    return p.returncode, got["heavy"], got["frozen"], p.stdout


# One fresh interpreter per way of calling the command, each checking both what it imports
# and how it exits: the command's way (`ccmod run ... --json`, as the console script calls
# main()) and the API's (main(argv), human summary).
@pytest.mark.parametrize("as_command,extra", [(True, ["--json"]), (False, [])],
                         ids=["command-json", "main-argv"])
def test_run_imports_no_table_or_plot_library(as_command, extra):
    nb = {}
    code, heavy, frozen, out = _probe("run", "traces/stencil16.ti", "--network", "myrinet16",
                                      *extra, as_command=as_command, numba_state=nb)
    assert code == 0, out
    assert heavy == []
    if not nb["compiled"]:
        # kernels loaded from the cache: numba's registries (a refresh imports some forty
        # numba modules, ~0.1 s) are not loaded, and neither is its BLAS check's module
        assert not nb["refreshed"] and not nb["arraymath"], nb
    assert "makespan" in out          # the run really happened
    # the `ccmod` command ends its process: it freezes the heap at exit instead of letting
    # the interpreter walk it; main(argv) called from Python (tests, notebooks) does not
    assert frozen is as_command
    # the command's start-up pauses the collector and its run resumes it
    assert nb["collecting"], nb


@pytest.mark.parametrize("args,env,want", [
    (["run"], {}, "1"), (["report"], {}, "1"), (["fit"], {}, None),
    (["run"], {"OPENBLAS_NUM_THREADS": "2"}, "2"), (["run"], {"OMP_NUM_THREADS": "2"}, None)])
def test_command_without_blas_starts_one_blas_thread(args, env, want):
    # a command that makes no BLAS call starts OpenBLAS with one thread (its pool's start
    # is CPU in every process) unless the user chose; numpy is not imported yet there
    code = ("import os, sys; from ccmod.cli import _one_blas_thread; assert 'numpy' not in "
            "sys.modules; _one_blas_thread(%r); print(os.environ.get('OPENBLAS_NUM_THREADS'))"
            % (args,))
    base = {k: v for k, v in os.environ.items()
            if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env=dict(base, PYTHONPATH=str(ROOT), **env), timeout=600)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(want)


@pytest.mark.parametrize("env,want", [({}, "false"), ({"CCMOD_DEBUG": "1"}, None),
                                      ({"BOKEH_VALIDATE_DOC": "true"}, "true")])
def test_command_builds_reports_without_bokeh_validation(env, want):
    # Bokeh's document check only logs, and the command drops library logs: it is skipped
    # unless CCMOD_DEBUG shows the logs or the user chose
    code = ("import os; from ccmod.cli import _skip_report_validation; "
            "_skip_report_validation(); print(os.environ.get('BOKEH_VALIDATE_DOC'))")
    base = {k: v for k, v in os.environ.items() if k not in ("BOKEH_VALIDATE_DOC", "CCMOD_DEBUG")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env=dict(base, PYTHONPATH=str(ROOT), **env), timeout=600)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(want)


def test_tables_still_come_as_dataframes():
    # the API's tables are built on first access, as DataFrames, from the same columns
    from ccmod.api import run
    r = run(str(ROOT / "traces" / "stencil16.ti"), "myrinet16")
    s = r.summary()
    assert type(r.ranks).__name__ == "DataFrame" and len(r.ranks) == r.nranks == 16
    assert list(r.links.columns)[:3] == ["resource", "name", "messages"]
    assert s["bytes"] == int(r.messages["nbytes"].sum())
    df = r.links.sort_values(["peak_active", "bytes", "resource"],
                             ascending=[False, False, True], kind="mergesort")
    assert r.busiest_link() == df.iloc[0].to_dict()
    assert str(r.rank_states["state"].dtype) == "category"


_BLAS_PROBE = """
import importlib.util, json, sys
import ccmod.kernel.compiled
lazy = "numba.np.arraymath" not in sys.modules    # only needed when something compiles
from numba.core.registry import cpu_target
cpu_target.target_context.refresh()               # what numba's first compile does
import numba.np.arraymath as am
stand_in_left = "scipy.linalg.cython_blas" in sys.modules
from numba import njit
import numpy as np
dot = njit(lambda a, b: np.dot(a, b))
print(json.dumps({"have_blas": am._HAVE_BLAS, "stand_in_left": stand_in_left, "lazy": lazy,
                  "linalg": "scipy.linalg" in sys.modules,
                  "scipy": importlib.util.find_spec("scipy") is not None,
                  "dot": float(dot(np.arange(3.0), np.arange(3.0)))}))
"""


# a compile in a fresh interpreter (~2 s of the default run): CI runs it
@pytest.mark.slow
def test_numba_still_finds_the_blas_without_scipy_linalg():
    # the check answers as numba's own would; the stand-in is gone; a BLAS call compiled
    # afterwards imports the real module and works
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_DISABLE_JIT", None)
    p = subprocess.run([sys.executable, "-c", _BLAS_PROBE], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["have_blas"] == got["scipy"]
    assert got["lazy"] and not got["linalg"]
    assert not got["stand_in_left"]
    if got["scipy"]:
        assert got["dot"] == 5.0


_ERRORS_PROBE = """
import contextlib, io, json, sys
from ccmod.cli import main
HEAVY = %r
out = []
for argv in json.loads(sys.argv[1]):
    std, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(std), contextlib.redirect_stderr(err):
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code
    out.append({"argv": argv, "code": code, "out": std.getvalue(), "err": err.getvalue(),
                "heavy": [m for m in HEAVY if m in sys.modules]})
print(json.dumps(out))
""" % (HEAVY + ("sklearn", "scipy", "numba"),)


def test_help_and_bad_input_import_nothing_heavy(tmp_path):
    # --help, then a missing file or a bad option: its one line and exit code 2 before
    # scikit-learn, scipy, pandas, pyarrow or numba are imported (each ~0.3-2 s); in one
    # fresh interpreter, so a module imported by any of the commands is seen after all the
    # later ones too
    trace = str(ROOT / "traces" / "stencil16.ti")
    pingpong = str(ROOT / "tests" / "data" / "osu_latency.txt")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    cases = [["fit", "missing.csv"], ["fit", "--max-segments", "0", pingpong],
             ["fit", "--breakpoints", "x", pingpong],
             ["fit", pingpong, "--stream", str(tmp_path / "none.txt")],
             ["run", "missing.ti"], ["run", trace, "--network", "nosuch"],
             ["run", trace, "--network", "torus:nosuch=1"],
             ["run", trace, "--cost", str(tmp_path / "none.json")],
             ["run", trace, "--out", str(a_file / "sub")],
             ["info", "missing.ti"], ["report", str(tmp_path / "none")],
             ["sweep", "missing.ti"], ["sweep-report", "missing.parquet"],
             ["crosscheck", "missing.ti"], ["crosscheck", trace, "--network", "nosuch"]]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", _ERRORS_PROBE, json.dumps([["--help"], *cases])],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    helped, *got = json.loads(p.stdout.strip().splitlines()[-1])
    assert helped["code"] == 0 and helped["heavy"] == [] and "run" in helped["out"]
    assert [g["argv"] for g in got] == cases
    for g in got:
        assert g["code"] == 2, g
        lines = g["err"].strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ccmod: error: "), g
    assert got[-1]["heavy"] == [], got[-1]
    assert not (a_file / "sub").exists()
