"""Helpers shared by the statistical workload generators (``workloads.gen_*``)."""
from __future__ import annotations

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.workloads.base import Workload, WorkloadBuilder

DISTRIBUTIONS = ("exponential", "deterministic", "uniform")


def need(cond: bool, gen: str, what: str, hint: str | None = None) -> None:
    """Raise a CcmodInputError naming the generator when ``cond`` is false."""
    if not cond:
        raise CcmodInputError(what, source=f"generator {gen}", hint=hint)


#: largest rank count a generator builds (as many as the largest network has nodes)
MAX_RANKS = 1 << 20


def check_ranks(gen: str, nranks: int, minimum: int = 1) -> None:
    need(int(nranks) >= minimum, gen, f"nranks={nranks} must be >= {minimum}")
    need(int(nranks) <= MAX_RANKS, gen, f"nranks={nranks} is too large (at most {MAX_RANKS})")


def check_nonneg(gen: str, **values) -> None:
    for k, v in values.items():
        need(np.isfinite(v) and v >= 0, gen, f"{k}={v} must be a finite number >= 0")


def draw(rng: np.random.Generator, dist: str, mean: float, size, gen: str,
         what: str = "dist") -> np.ndarray:
    """Draw durations with the given mean from ``dist``.

    ``exponential`` (CV^2 = 1), ``deterministic`` (CV^2 = 0) or ``uniform`` on [0, 2*mean]
    (CV^2 = 1/3). The rng is advanced even for deterministic draws so that changing the
    distribution of one quantity does not shift the random stream of the others.
    """
    u = rng.random(size)
    if dist == "exponential":
        return -mean * np.log1p(-u)
    if dist == "deterministic":
        return np.full(size, float(mean))
    if dist == "uniform":
        return 2.0 * mean * u
    raise CcmodInputError(f"unknown distribution {what}='{dist}'", source=f"generator {gen}",
                          hint="valid: " + ", ".join(DISTRIBUTIONS))


def pick_other(rng: np.random.Generator, src: np.ndarray, nranks: int,
               weights: np.ndarray | None = None) -> np.ndarray:
    """For each source rank pick a destination != source.

    Uniform over the other ranks, or proportional to ``weights`` (renormalised without
    the source) when given.
    """
    src = np.asarray(src, dtype=np.int64)
    if weights is None:
        d = rng.integers(0, nranks - 1, size=src.shape)
        return d + (d >= src)
    w = np.asarray(weights, dtype=float)
    cum = np.cumsum(w)
    below = np.where(src > 0, cum[np.maximum(src - 1, 0)], 0.0)  # weight of ranks < src
    x = rng.random(src.shape) * (cum[-1] - w[src])
    x = np.where(x < below, x, x + w[src])  # skip the source's own interval
    return np.minimum(np.searchsorted(cum, x, side="right"), nranks - 1).astype(np.int64)


class Reqs:
    """Per-rank request id counters (ids >= 0, unique within each rank)."""

    def __init__(self, nranks: int):
        self.next = [0] * nranks

    def __call__(self, rank: int) -> int:
        r = self.next[rank]
        self.next[rank] += 1
        return r


def finish(b: WorkloadBuilder, gen: str, params: dict, seed: int, **notes) -> Workload:
    """Build the workload with the generator's name, parameters and seed in ``meta``."""
    b.meta.update({"format": "generator", "generator": gen, "params": dict(params),
                   "seed": int(seed), **notes})
    if not b.files:
        b.file(f"generator:{gen}")
    return b.build()
