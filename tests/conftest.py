import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"
REAL = Path(os.environ.get("CCMOD_REAL_TRACES", ROOT.parent / "shared" / "traces" / "real"))


@pytest.fixture
def real_dir():
    """The shared real-trace folder; tests using it skip cleanly in a user's clone."""
    if not REAL.is_dir():
        pytest.skip("../shared/traces/real not present (only in the developers' checkout)")
    return REAL


@pytest.fixture
def traces_dir():
    return TRACES


# Genuinely slow tests (long campaigns, large real traces, browsers) are marked `slow`: the
# default `pytest` run skips them so a developer's loop stays fast; CI runs them with
# CCMOD_RUN_SLOW=1 (or `pytest --runslow`).
def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run tests marked slow (CI sets CCMOD_RUN_SLOW=1)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow") or os.environ.get("CCMOD_RUN_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow or CCMOD_RUN_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
