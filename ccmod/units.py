"""Units and number formatting shared by every text and HTML output.

Names carry units (``t_start_s``, ``nbytes``, ``bandwidth_Bps``); these helpers turn such
values into short human strings, and parse compute rates in SimGrid's notation (``20kf``,
``1Gf``, ``1e9``: a number with an optional flop unit and decimal prefix). Bytes use binary prefixes (KiB); bandwidths use decimal
prefixes (MB/s = 10^6 B/s, like OSU and vendors' data sheets).
"""
from __future__ import annotations

import math
import re

from ccmod.errors import CcmodInputError


def _missing(x) -> bool:
    if x is None:
        return True
    try:
        return not math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def fmt_s(x) -> str:
    """Seconds with an adapted unit (``1.23 ms``, ``4.5 µs``); ``–`` when missing."""
    if _missing(x):
        return "–"
    x = float(x)
    for div, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if abs(x) >= div or unit == "ns":
            return f"{x / div:.4g} {unit}"
    return f"{x:.4g} s"  # pragma: no cover


def fmt_time(t) -> str:
    """Seconds with an ASCII unit (ns, us, ms, s) for plain-text reports; ``-`` when missing."""
    if t is None or not math.isfinite(t):
        return "-"
    a = abs(t)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if a >= scale:
            return f"{t / scale:.4g} {unit}"
    return f"{t / 1e-9:.4g} ns"


def fmt_bytes(x) -> str:
    """Bytes with a binary prefix (``512 B``, ``1.5 KiB``); ``–`` when missing."""
    if _missing(x):
        return "–"
    x = float(x)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(x) < 1024 or unit == "TiB":
            return f"{x:.4g} {unit}" if unit != "B" else f"{int(x)} B"
        x /= 1024
    return f"{x:.4g} TiB"  # pragma: no cover


def fmt_bw(b: float) -> str:
    """Bytes/s in decimal units (MB/s = 10^6 B/s); "flat" above 1 PB/s (a fitted segment
    whose slope hit the floor: time does not grow with size there)."""
    if b >= 1e15:
        return "flat"
    for unit, scale in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if b >= scale:
            return f"{b / scale:.4g} {unit}"
    return f"{b:.4g} B/s"


def fmt_num(x, digits: int = 4) -> str:
    """Integers with thousands separators, others with ``digits`` significant digits."""
    if x is None:
        return "–"
    try:
        xf = float(x)
    except (TypeError, ValueError):
        return str(x)
    if not math.isfinite(xf):
        return "–"
    if xf.is_integer() and abs(xf) < 1e15:
        return f"{int(xf):,}"
    return f"{xf:.{digits}g}"


def fmt_pct(x) -> str:
    """A fraction as a percentage (``0.123`` → ``12.3 %``)."""
    if _missing(x):
        return "–"
    return f"{100 * float(x):.1f} %"


# ---------------------------------------------------------------- compute rates (flop/s)
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
