"""Compute rates in SimGrid's notation (``20kf``, ``1Gf``, ``1e9``) and their display.

SimGrid writes host speeds as a number with a flop unit: ``f`` or ``flops`` with a decimal
prefix (``k`` = 1e3, ``M`` = 1e6, ``G`` = 1e9, ...), e.g. SMPI's ``smpi/host-speed``
default ``20000f`` (= ``20kf``). ccmod's ``--compute-rate`` accepts the same spellings
and plain numbers (flop/s).
"""
from __future__ import annotations

import math
import re

from ccmod.errors import CcmodInputError

#: SMPI's default ``smpi/host-speed`` (flop/s): the rate at which its TI tracer turned
#: measured CPU time into the flops of ``compute`` records (see docs/readers.md)
SMPI_DEFAULT_HOST_SPEED = 20000.0

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
           "E": 1e18, "Z": 1e21, "Y": 1e24}
_RATE_RE = re.compile(r"^\s*([0-9.eE+-]+)\s*([kKMGTPEZY]?)(f|flops?|flop/s)?\s*$")


def parse_compute_rate(value, source: str = "--compute-rate") -> float:
    """Parse a compute rate (flop/s): a number, or SimGrid's ``20kf`` / ``1Gf`` / ``1e9f``.

    Raises
    ------
    CcmodInputError
        Not a number with an optional flop unit, or not finite and > 0.
    """
    if isinstance(value, bool):
        raise CcmodInputError(f"compute rate must be a positive number, got {value!r}",
                              source=source)
    if isinstance(value, (int, float)):
        rate = float(value)
    else:
        m = _RATE_RE.match(str(value))
        rate = math.nan
        if m and (m.group(3) or not m.group(2)):
            try:
                rate = float(m.group(1)) * _PREFIX[m.group(2)]
            except ValueError:
                pass
        if math.isnan(rate):
            raise CcmodInputError(f"bad compute rate '{value}'", source=source,
                                  hint="flop/s as a number (1e9) or in SimGrid's notation: "
                                       "20kf, 1Gf, 2.5Mf")
    if not (math.isfinite(rate) and rate > 0):
        raise CcmodInputError(f"compute rate must be a positive number, got {value!r}",
                              source=source)
    return rate


def format_rate(rate: float) -> str:
    """``20000.0`` -> ``'20 kf/s'``, ``1e9`` -> ``'1 Gf/s'`` (SimGrid-like, 4 digits)."""
    for p in ("Y", "Z", "E", "P", "T", "G", "M", "k"):
        if rate >= _PREFIX[p]:
            return f"{rate / _PREFIX[p]:.4g} {p}f/s"
    return f"{rate:.4g} f/s"
