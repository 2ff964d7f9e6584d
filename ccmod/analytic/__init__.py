"""Analytic cross-check models (issue 6): MVA, LoPC, SPMD speedup surfaces, queue overflow.

Submodules:

* :mod:`ccmod.analytic.mva` -- closed queueing networks (exact Reiser-Lavenberg MVA,
  Bard-Schweitzer and Bard approximate MVA, multi-server approximation).
* :mod:`ccmod.analytic.lopc` -- the LoPC contention model (Frank 1997).
* :mod:`ccmod.analytic.spmd` -- Cremonesi-Gennaro SPMD speedup models and their fitting.
* :mod:`ccmod.analytic.overflow` -- J-Machine message-queue overflow analytics.
* :mod:`ccmod.analytic.crosscheck` -- analytic vs engine on the same trace and network
  (imported on demand: it needs the engine).
"""
from __future__ import annotations

from ccmod.analytic import lopc, mva, overflow, spmd

__all__ = ["lopc", "mva", "overflow", "spmd"]
