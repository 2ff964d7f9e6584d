"""One installed package: lazy imports, and no clash with a user's own modules.

These run a fresh interpreter (``sys.modules`` of the test process is already full).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, cwd, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_import_is_lazy(tmp_path):
    code = ("import sys, ccmod, ccmod.netsys, ccmod.workloads, ccmod.outputs, json; "
            "print(json.dumps(sorted(m for m in sys.modules "
            "if m.startswith(('ccmod', 'numba', 'pandas', 'pyarrow', 'otf2')))))")
    res = _python(code, tmp_path)
    assert res.returncode == 0, res.stderr
    loaded = set(json.loads(res.stdout))
    assert {"ccmod", "ccmod.workloads", "ccmod.outputs"} <= loaded
    heavy = {"numba", "pandas", "pyarrow", "otf2", "ccmod.kernel", "ccmod.engine",
             "ccmod.workloads.otf2_reader", "ccmod.workloads.paraver", "ccmod.outputs.perfetto",
             "ccmod.outputs.parquet", "ccmod.netsys.topologies"}
    assert not (loaded & heavy), loaded & heavy


# a fresh interpreter that imports the engine and runs twice (~2 s of the default run):
# CI runs it
@pytest.mark.slow
def test_user_modules_named_like_the_rooms_do_not_shadow_ccmod(tmp_path):
    # a user's working directory with its own outputs.py, netsys.py and workloads/
    for name in ("outputs.py", "netsys.py"):
        (tmp_path / name).write_text("raise ImportError('the user module was imported')\n")
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "__init__.py").write_text("raise ImportError('user workloads')\n")
    trace = ROOT / "traces" / "pingpong.ti"
    # one fresh interpreter started in that directory, as `python -m ccmod` would be (the
    # working directory first on sys.path): the Python API, then the command line's entry
    # point (one interpreter instead of two: the default run's time budget)
    code = ("import ccmod; "
            f"r = ccmod.run({str(trace)!r}, 'star', sinks=['parquet'], out_dir='run'); "
            "import ccmod.outputs, ccmod.netsys, ccmod.workloads; "
            "print(r.makespan_s > 0, ccmod.outputs.__file__, ccmod.workloads.__file__); "
            "from ccmod.cli import main; "
            f"main(['run', {str(trace)!r}, '--json'])")
    res = _python(code, tmp_path)
    assert res.returncode == 0, res.stderr
    first, cli_json = res.stdout.split("\n", 1)
    ok, outputs_file, workloads_file = first.split()
    assert ok == "True" and (tmp_path / "run" / "messages.parquet").is_file()
    assert not outputs_file.startswith(str(tmp_path))
    assert not workloads_file.startswith(str(tmp_path))
    assert json.loads(cli_json)["makespan_s"] > 0


def test_every_subpackage_is_declared_for_installation():
    # pyproject lists the packages explicitly (package-dir maps the repository's folders
    # into ccmod.*); a new subpackage left out installs nothing and fails only when installed
    import tomllib
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = set()
    for pkg, folder in cfg["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join((pkg, *rel.parts)))
    assert found <= set(cfg["packages"]), sorted(found - set(cfg["packages"]))


def test_no_source_or_documentation_file_is_over_600_lines():
    # the developers' guide: "No file over 600 lines"; a long history page or module is
    # split by topic (docs/performance-history/ holds the stops' measurements)
    folders = ("ccmod", "netsys", "workloads", "outputs", "bench", "tests", "docs")
    files = [ROOT / "README.md"]
    for folder in folders:
        files += [f for f in (ROOT / folder).rglob("*")
                  if f.suffix in {".py", ".md", ".cpp", ".toml"}
                  and "__pycache__" not in f.parts and "data" not in f.parts]
    assert len(files) > 100
    long = {str(f.relative_to(ROOT)): n for f in files
            if (n := len(f.read_text(encoding="utf-8").splitlines())) > 600}
    assert not long, long
