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
