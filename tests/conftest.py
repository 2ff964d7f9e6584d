import contextlib
import gc
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"
REAL = Path(os.environ.get("CCMOD_REAL_TRACES", ROOT.parent / "shared" / "traces" / "real"))


#: small real traces shipped with the tests (same layout as ../shared/traces/real)
SHIPPED = ROOT / "tests" / "data" / "real"


class RealTraces:
    """The real-trace folder as tests see it: ``real_dir / "pipit/..."``.

    A path shipped in tests/data/real (small real traces, see tests/data/SOURCES.md) is
    taken from there, so every clone tests the OTF2, Paraver, DUMPI and liballprof
    readers on real files; any other path comes from the shared folder
    (``CCMOD_REAL_TRACES`` or ../shared/traces/real, the developers' checkout and CI) and
    the test skips where that folder is absent.
    """

    def __init__(self, shipped: Path, full: Path):
        self.shipped, self.full = shipped, full

    def _need_full(self, what):
        if not self.full.is_dir():
            pytest.skip(f"{what}: only in ../shared/traces/real (developers' checkout, CI)")

    def __truediv__(self, rel):
        p = self.shipped / rel
        if p.exists():
            return p
        self._need_full(rel)
        return self.full / rel

    def glob(self, pattern):
        self._need_full(pattern)
        return self.full.glob(pattern)


@pytest.fixture
def real_dir():
    """Real traces: the shipped small ones always, the large ones where present."""
    return RealTraces(SHIPPED, REAL)


@pytest.fixture
def traces_dir():
    return TRACES


# Genuinely slow tests (long campaigns, large real traces, browsers) are marked `slow`: the
# default `pytest` run skips them so a developer's loop stays fast; CI runs them with
# CCMOD_RUN_SLOW=1 (or `pytest --runslow`).
def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run tests marked slow (CI sets CCMOD_RUN_SLOW=1)")


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """Let pytest cache its assertion-rewritten test modules while it collects them, then
    freeze what collection imported.

    Where PYTHONDONTWRITEBYTECODE is set (as on the project's development machines), pytest
    re-parses and rewrites every test module's asserts on every run: about 5 s of CPU per
    run here, for ~150 modules. The cached files go to the gitignored ``__pycache__``
    folders, as with Python's default; the setting is restored once collection ends.
    """
    old = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        yield
    finally:
        sys.dont_write_bytecode = old
    # what collection imported (numpy, numba, pandas, hypothesis, the tests) lives for the
    # whole run: frozen, the collector's full passes stop walking it (~0.5 s of 28 s CPU
    # on a quarter of the suite); the garbage is collected first so none of it is kept
    gc.collect()
    gc.freeze()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """After a test module's last test (its module fixtures torn down), collect its garbage
    and freeze what is left, as after collection.

    What stays is what the module imported on first use (bokeh, matplotlib, pyarrow's
    datasets, scikit-learn, numba's loaded kernels) and caches kept for the whole run;
    unfrozen, every full collection walked it again: 24 full passes took 4.1 s of 98 s CPU
    of the default run. One collection per module walks only what the module made.
    """
    yield
    if nextitem is None or nextitem.module is not item.module:
        gc.collect()
        gc.freeze()


#: whether this run includes the slow tests (CI): set from the options in pytest_configure,
#: before any test module is imported
RUN_SLOW = os.environ.get("CCMOD_RUN_SLOW") == "1"


def pytest_configure(config):
    global RUN_SLOW
    RUN_SLOW = RUN_SLOW or bool(config.getoption("--runslow"))


def examples(n: int) -> int:
    """Hypothesis example budget for a property test: ``n`` where the slow tests run (CI
    draws every example, as before), a third of it (at least 10) in the default run.

    The default run keeps every property and every strategy, with fewer random draws (the
    developer guide's ~90 s budget for a single-process ``pytest``); CI explores as much as
    ever. Use as ``@settings(max_examples=examples(60))``.

    Parameters
    ----------
    n : int
        Number of examples CI draws.

    Returns
    -------
    int
        ``n`` with the slow tests, else ``max(min(n, 10), n // 3)``.
    """
    return n if RUN_SLOW else max(min(n, 10), n // 3)


def pytest_collection_modifyitems(config, items):
    if RUN_SLOW:
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow or CCMOD_RUN_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def run_cli(*args, cwd=None, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run ``ccmod ARGS`` in this process, as a user would run it, and return what a
    subprocess would: exit code, stdout and stderr as text.

    ``ccmod.cli.main`` is the console entry point: it prints errors as one line on stderr
    and exits with a code, so catching its SystemExit gives the same observable result as
    spawning ``python -m ccmod`` (without a fresh interpreter, imports and numba load per
    call). A few tests keep true subprocesses (test_packaging, test_info, test_fit_cli).
    """
    from ccmod.cli import main
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    old_stdin = sys.stdin
    code = 0
    try:
        os.chdir(cwd or ROOT)
        if stdin is not None:
            sys.stdin = io.StringIO(stdin)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if isinstance(exc.code, str):
                    err.write(exc.code + "\n")
    finally:
        os.chdir(old_cwd)
        sys.stdin = old_stdin
    return subprocess.CompletedProcess(["ccmod", *argv], code, out.getvalue(), err.getvalue())
