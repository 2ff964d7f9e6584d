"""Compute rates in SimGrid's notation (``20kf``, ``1Gf``, ``1e9``) and their display.

SimGrid writes host speeds as a number with a flop unit: ``f`` or ``flops`` with a decimal
prefix (``k`` = 1e3, ``M`` = 1e6, ``G`` = 1e9, ...), e.g. SMPI's ``smpi/host-speed``
default ``20000f`` (= ``20kf``). ccmod's ``--compute-rate`` accepts the same spellings
and plain numbers (flop/s).
"""
from __future__ import annotations

import numpy as np

# the parser lives in the core (run options use it); kept importable from here
from ccmod.units import format_rate, parse_compute_rate  # noqa: F401

#: SMPI's default ``smpi/host-speed`` (flop/s): the rate at which its TI tracer turned
#: measured CPU time into the flops of ``compute`` records (see docs/readers.md)
SMPI_DEFAULT_HOST_SPEED = 20000.0


class ExactSum:
    """The correctly rounded sum of float64 values added in any number of batches (so a
    streamed run's survey and the in-memory trace give the same total, bit for bit).

    Each value is an integer mantissa times a power of two: mantissas are summed per
    exponent (two 26/27-bit halves, exact in float64 for up to 2^26 values a call), then
    as Python integers; :meth:`value` rounds the exact total once.
    """

    CHUNK = 1 << 22

    def __init__(self):
        self.parts: dict[int, int] = {}
        self.other = 0.0           # non-finite values (a sum that is inf or nan anyway)

    def add(self, x) -> None:
        x = np.asarray(x, np.float64).reshape(-1)
        for a in range(0, len(x), self.CHUNK):
            self._add(x[a:a + self.CHUNK])

    def _add(self, x) -> None:
        bad = ~np.isfinite(x)
        if bad.any():
            self.other += float(x[bad].sum())
            x = x[~bad]
        x = x[x != 0]
        if not len(x):
            return
        m, e = np.frexp(x)
        mi = (m * 2.0 ** 53).astype(np.int64)            # x = mi * 2^(e - 53), exactly
        exps, inv = np.unique(e, return_inverse=True)
        hi = np.bincount(inv, weights=(mi >> 26).astype(np.float64), minlength=len(exps))
        lo = np.bincount(inv, weights=(mi & ((1 << 26) - 1)).astype(np.float64),
                         minlength=len(exps))
        for k, ex in enumerate(exps.tolist()):
            v = (int(hi[k]) << 26) + int(lo[k])
            self.parts[ex - 53] = self.parts.get(ex - 53, 0) + v

    def value(self) -> float:
        if self.other != 0.0 or self.other != self.other:
            return self.other
        if not self.parts:
            return 0.0
        # the exact total is an integer times 2**low: Python's int -> float and int / int
        # are correctly rounded (as Fraction's float() is, without importing fractions and
        # decimal at every run's start-up)
        low = min(self.parts)
        total = sum(v << (e - low) for e, v in self.parts.items())
        return float(total << low) if low >= 0 else total / (1 << -low)
