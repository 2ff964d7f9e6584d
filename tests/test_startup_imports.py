"""Start-up stays light: ``ccmod run`` of a small trace imports neither pandas nor bokeh.

Structural, not timed: a fresh interpreter runs the command and lists the heavy modules in
``sys.modules`` afterwards. pandas (~0.5 s to import) is only for tables a user asks for
(``RunResult.ranks`` etc. are built on first access), bokeh only for ``--report``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "pyarrow", "bokeh", "matplotlib")

_PROBE = """
import json, sys
from ccmod.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"code": code, "heavy": [m for m in %r if m in sys.modules]}), file=sys.stderr)
""" % (HEAVY,)


def _heavy_after(*argv):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=600)
    got = json.loads(p.stderr.strip().splitlines()[-1])
    assert got["code"] in (0, None), p.stderr[-2000:]
    return got["heavy"], p.stdout


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_run_imports_no_table_or_plot_library(extra):
    heavy, out = _heavy_after("run", "traces/stencil16.ti", "--network", "myrinet16", *extra)
    assert heavy == []
    assert "makespan" in out          # the run really happened


def test_help_imports_nothing_heavy():
    heavy, out = _heavy_after("--help")
    assert heavy == [] and "run" in out


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
