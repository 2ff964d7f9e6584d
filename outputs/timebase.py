"""Simulated seconds as integer nanoseconds (what Perfetto and Paraver files hold)."""
from __future__ import annotations

import numpy as np

from ccmod.errors import CcmodInputError

#: the largest time (s) whose nanoseconds fit an int64 (about 292 years)
MAX_NS_SECONDS = 9.2e9


def check_ns_range(t, what: str = "simulated time") -> None:
    """Fail with one line when times cannot be written as int64 nanoseconds."""
    a = np.asarray(t, np.float64)
    if a.size and not (np.all(np.isfinite(a)) and np.abs(a).max() < MAX_NS_SECONDS):
        raise CcmodInputError(f"{what} reaches {np.nanmax(np.abs(a)):.3g} s: too long for "
                              "nanosecond timestamps (limit 9.2e9 s)", source="--sink",
                              hint="check the network parameters (latency, bandwidth) and the "
                                   "compute rate")


def seconds_to_ns(t) -> np.ndarray:
    """Seconds → integer nanoseconds (monotone rounding, so order is preserved)."""
    check_ns_range(t)
    return np.rint(np.asarray(t, np.float64) * 1e9).astype(np.int64)
