"""Parameter checks shared by the analytic models.

Every check raises :class:`ccmod.errors.CcmodInputError` with a one-line message naming the
parameter, so a bad value never surfaces as a numpy warning or a traceback.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ccmod.errors import CcmodInputError


def real(name: str, value, *, minimum: float | None = 0.0, strict: bool = False,
         maximum: float | None = None, strict_max: bool = False) -> float:
    """A finite real number within bounds (default: ``>= 0``)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise CcmodInputError(f"{name} must be a number, got {value!r}") from None
    v = float(value)
    if not math.isfinite(v):
        raise CcmodInputError(f"{name} must be finite, got {v!r}")
    if minimum is not None and (v < minimum or (strict and v == minimum)):
        rel = ">" if strict else ">="
        raise CcmodInputError(f"{name} must be {rel} {minimum:g}, got {v:g}")
    if maximum is not None and (v > maximum or (strict_max and v == maximum)):
        rel = "<" if strict_max else "<="
        raise CcmodInputError(f"{name} must be {rel} {maximum:g}, got {v:g}")
    return v


def integer(name: str, value, *, minimum: int | None = 0, maximum: int | None = None) -> int:
    """An integer (an integral float such as ``4.0`` is accepted) in [minimum, maximum]."""
    if isinstance(value, bool):
        raise CcmodInputError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, (numbers.Integral, np.integer)):
        v = int(value)
    else:
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise CcmodInputError(f"{name} must be an integer, got {value!r}") from None
        if not math.isfinite(f) or f != int(f):
            raise CcmodInputError(f"{name} must be an integer, got {value!r}")
        v = int(f)
    if minimum is not None and v < minimum:
        raise CcmodInputError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise CcmodInputError(f"{name} must be <= {maximum:,} (exact arithmetic grows with it), "
                              f"got {v:,}")
    return v


def real_array(name: str, value, *, ndim: tuple[int, ...] = (1,), minimum: float | None = 0.0,
               strict: bool = False) -> np.ndarray:
    """A finite float array with one of the allowed dimensionalities and a lower bound."""
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise CcmodInputError(f"{name} must be numbers, got {value!r}") from None
    if arr.ndim not in ndim:
        allowed = " or ".join(f"{d}-D" for d in ndim)
        raise CcmodInputError(f"{name} must be {allowed}, got shape {arr.shape}")
    if arr.size == 0:
        raise CcmodInputError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise CcmodInputError(f"{name} must be finite")
    if minimum is not None:
        bad = arr <= minimum if strict else arr < minimum
        if np.any(bad):
            rel = ">" if strict else ">="
            raise CcmodInputError(f"{name} must be {rel} {minimum:g}, got {arr[bad].flat[0]:g}")
    return arr
