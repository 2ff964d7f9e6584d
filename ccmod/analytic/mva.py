"""Mean value analysis of closed product-form queueing networks.

:func:`solve` handles single-class (1-D ``demands``) and multi-class (classes x stations)
networks with a think-time (delay) station per class:

* ``method="exact"``: the Reiser-Lavenberg recursion over populations (Reiser & Lavenberg
  1980; reviewed in ch. 5 of ``../shared/seeds/jmachine-message-driven-dynamics.txt``):
  R_ck(n) = D_ck (1 + Q_k(n - e_c)), X_c(n) = n_c / (Z_c + sum_k R_ck(n)),
  Q_k(n) = sum_c X_c(n) R_ck(n).  The multi-class recursion visits every population vector
  below ``population``, level by level (vectorised over each level).
* ``method="schweitzer"``: Bard-Schweitzer approximate MVA, the arrival-instant queue is
  Q_k - Q_ck / N_c (a customer does not see itself).
* ``method="bard"``: Bard's plain approximation used by the LoPC thesis (seed
  ``lopc-frank-1997.txt``, ch. 4): the arrival-instant queue is the whole steady-state queue
  Q_k, which over-estimates queueing and under-estimates throughput, more so for small N.

``servers`` gives the number of identical servers at each station; a station with m > 1
servers uses Seidmann's approximation: a queueing station of demand D/m in tandem with a
delay of D (m - 1)/m (exact for m = 1, and for any m when a customer never waits).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ccmod.analytic import _validate as v
from ccmod.errors import CcmodInputError

__all__ = ["MVAResult", "solve", "METHODS"]

METHODS = ("exact", "schweitzer", "bard")

#: population vectors above which the exact multi-class recursion refuses to run
MAX_EXACT_STATES = 2_000_000
#: total population above which solve() refuses (runtime grows with the population)
MAX_POPULATION = 1_000_000


@dataclass
class MVAResult:
    """Solution of a closed queueing network (see :func:`solve`).

    Attributes
    ----------
    throughput : float or ndarray (classes,)
        X_c, cycles (visits to the think station) per unit time; a float for 1-D demands.
    cycle_time : float or ndarray (classes,)
        N_c / X_c = Z_c + sum_k R_ck (think time included).
    residence_time : ndarray (stations,) or (classes, stations)
        R_ck, time a class-c customer spends at station k per cycle (queueing + service).
    queue_length : ndarray, same shape
        Q_ck = X_c R_ck (Little), mean class-c customers at station k (in service or waiting).
    utilization : ndarray, same shape
        X_c D_ck / m_k, busy fraction of each of the m_k servers due to class c.
    method : str
    population : tuple of int
    think_time : ndarray (classes,)
    servers : ndarray (stations,)
    iterations : int
        Fixed-point iterations (approximate methods) or population levels (exact).
    """

    throughput: float | np.ndarray
    cycle_time: float | np.ndarray
    residence_time: np.ndarray
    queue_length: np.ndarray
    utilization: np.ndarray
    method: str
    population: tuple
    think_time: np.ndarray
    servers: np.ndarray
    iterations: int = 0
    multiclass: bool = field(default=False, repr=False)

    @property
    def response_time(self):
        """Time per cycle outside the think station: sum_k R_ck."""
        return np.sum(self.residence_time, axis=-1) if self.multiclass \
            else float(np.sum(self.residence_time))

    @property
    def total_queue_length(self) -> np.ndarray:
        """Mean customers of all classes at each station, shape (stations,)."""
        q = np.asarray(self.queue_length)
        return q.sum(axis=0) if q.ndim == 2 else q

    def to_dict(self) -> dict:
        """A JSON-ready dict (what ``ccmod mva --json`` prints)."""
        def conv(x):
            return x.tolist() if isinstance(x, np.ndarray) else x
        return {"method": self.method, "population": list(self.population),
                "think_time": conv(self.think_time), "servers": conv(self.servers),
                "throughput": conv(self.throughput), "cycle_time": conv(self.cycle_time),
                "response_time": conv(self.response_time),
                "residence_time": conv(self.residence_time),
                "queue_length": conv(self.queue_length),
                "utilization": conv(self.utilization), "iterations": int(self.iterations)}


# --------------------------------------------------------------------------- input checks
def _inputs(demands, population, think_time, servers, method):
    if method not in METHODS:
        raise CcmodInputError(f"unknown MVA method {method!r}", hint="valid: " + ", ".join(METHODS))
    D = v.real_array("demands", demands, ndim=(1, 2))
    multiclass = D.ndim == 2
    D2 = D if multiclass else D[None, :]
    C, K = D2.shape
    if C == 0 or K == 0:
        raise CcmodInputError(f"demands must have at least one class and one station, "
                              f"got shape {D.shape}")
    if np.ndim(population) == 0:
        N = (v.integer("population", population),)
    else:
        N = tuple(v.integer(f"population[{i}]", p) for i, p in enumerate(population))
    if len(N) != C:
        raise CcmodInputError(f"population has {len(N)} entries but demands have {C} "
                              f"class(es)", hint="give one population per row of demands")
    if sum(N) > MAX_POPULATION:
        # the exact recursion steps through every population level; the approximations
        # iterate at fixed cost but keep population-sized intermediate arrays
        raise CcmodInputError(f"population {sum(N)} is too large (at most {MAX_POPULATION:,})",
                              hint="MVA results converge to the asymptotic bounds long before")
    if np.ndim(think_time) == 0:
        Z = np.full(C, v.real("think_time", think_time))
    else:
        Z = v.real_array("think_time", think_time)
        if Z.shape != (C,):
            raise CcmodInputError(f"think_time has {Z.size} entries but demands have {C} "
                                  f"class(es)")
    if servers is None:
        m = np.ones(K)
    else:
        m = np.atleast_1d(np.asarray(servers, dtype=object))
        if m.ndim != 1 or len(m) != K:
            raise CcmodInputError(f"servers has {m.size} entries but demands have {K} "
                                  f"station(s)")
        m = np.array([v.integer(f"servers[{i}]", s, minimum=1) for i, s in enumerate(m)],
                     dtype=float)
    for c in range(C):
        if N[c] > 0 and Z[c] + D2[c].sum() == 0:
            raise CcmodInputError(f"class {c} has zero demand and zero think time",
                                  hint="its throughput would be unbounded")
    return D2, N, Z, m, multiclass


# --------------------------------------------------------------------------- solvers
def _exact_single(Dq, Dd, N, Z):
    """Reiser-Lavenberg recursion for one class; Dq/Dd queueing/delay parts (K,)."""
    Qq = np.zeros_like(Dq)
    R = Dq + Dd
    X = 0.0
    for n in range(1, N + 1):
        R = Dq * (1.0 + Qq) + Dd
        X = n / (Z + R.sum())
        Qq = X * Dq * (1.0 + Qq)
    return np.array([X]), R[None, :], N


def _exact_multi(Dq, Dd, N, Z):
    """Exact multi-class MVA over all population vectors, one population level at a time."""
    C, K = Dq.shape
    dims = np.array(N) + 1
    n_states = int(np.prod(dims.astype(object)))
    if n_states > MAX_EXACT_STATES:
        raise CcmodInputError(f"exact multi-class MVA needs {n_states} population vectors "
                              f"(limit {MAX_EXACT_STATES})", hint="use method='schweitzer'")
    # mixed-radix index: state index = sum_c n_c * stride_c
    strides = np.ones(C, dtype=np.int64)
    for c in range(C - 2, -1, -1):
        strides[c] = strides[c + 1] * dims[c + 1]
    vecs = np.stack(np.unravel_index(np.arange(n_states), tuple(dims)), axis=1)
    level = vecs.sum(axis=1)
    Qq = np.zeros((n_states, K))           # queueing-part queue at each population vector
    total = sum(N)
    X = np.zeros(C)
    R = Dq + Dd
    for t in range(1, total + 1):
        idx = np.nonzero(level == t)[0]
        nv = vecs[idx]                                             # (S, C)
        has = nv > 0
        pred = idx[:, None] - strides[None, :]                     # (S, C)
        pred = np.where(has, pred, 0)
        Rs = Dq[None] * (1.0 + Qq[pred]) + Dd[None]                 # (S, C, K)
        Xs = np.where(has, nv / (Z[None] + Rs.sum(axis=2)), 0.0)    # (S, C)
        Qq[idx] = np.einsum("sc,sck->sk", Xs, Dq[None] * (1.0 + Qq[pred]))
        if t == total:
            X, R = Xs[0], Rs[0]
    return X, R, total


def _approx(Dq, Dd, N, Z, method, tol=1e-12, max_iter=200_000):
    """Bard-Schweitzer / Bard fixed point, successive substitution with damping on trouble."""
    C, K = Dq.shape
    Nf = np.array(N, dtype=float)
    active = Nf > 0
    # initial guess: each class spread over its stations in proportion to the demands
    share = Dq + Dd
    tot = share.sum(axis=1, keepdims=True) + Z[:, None]
    Qc = np.where(tot > 0, Nf[:, None] * share / np.where(tot > 0, tot, 1.0), 0.0)
    Qc = Qc * Dq / np.where(share > 0, share, 1.0)   # queueing part only
    theta = 1.0
    prev_err = np.inf
    inv_n = np.where(active, 1.0 / np.where(active, Nf, 1.0), 0.0)
    it = 0
    X = np.zeros(C)
    R = Dq + Dd
    for it in range(1, max_iter + 1):
        Qk = Qc.sum(axis=0)
        if method == "schweitzer":
            A = Qk[None, :] - Qc * inv_n[:, None]
        else:
            A = np.broadcast_to(Qk, Qc.shape)
        R = Dq * (1.0 + A) + Dd
        X = np.where(active, Nf / (Z + R.sum(axis=1)), 0.0)
        Qnew = X[:, None] * Dq * (1.0 + A)
        err = float(np.max(np.abs(Qnew - Qc)))
        if err <= tol * max(1.0, float(Nf.max())):
            Qc = Qnew
            break
        if err > prev_err and theta > 1e-3:
            theta *= 0.5        # oscillation: damp the substitution
        prev_err = err
        Qc = Qc + theta * (Qnew - Qc)
    else:
        raise CcmodInputError(f"{method} MVA did not converge in {max_iter} iterations")
    return X, R, it


def solve(demands, population, think_time=0.0, servers=None, method="exact") -> MVAResult:
    """Solve a closed queueing network by mean value analysis.

    Parameters
    ----------
    demands : array_like, (stations,) or (classes, stations)
        Service demand D_ck = visits x service time of class c at station k (time units).
    population : int or sequence of int
        Customers per class (an int for 1-D demands).
    think_time : float or sequence of float, optional
        Delay-station time Z_c per cycle of each class (default 0).
    servers : sequence of int, optional
        Servers m_k at each station (default 1 each); m_k > 1 uses Seidmann's approximation.
    method : {"exact", "schweitzer", "bard"}

    Returns
    -------
    MVAResult
        ``throughput`` and ``cycle_time`` are floats for 1-D demands, shape (classes,)
        otherwise; ``residence_time``, ``queue_length``, ``utilization`` have the shape of
        ``demands`` (the think-time delay is not a column).

    Raises
    ------
    CcmodInputError
        Negative or non-finite demands/think times, populations that do not match the
        classes, bad server counts, unknown method, or an exact multi-class state space
        larger than :data:`MAX_EXACT_STATES`.
    """
    D, N, Z, m, multiclass = _inputs(demands, population, think_time, servers, method)
    Dq = D / m[None, :]
    Dd = D - Dq
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # checked below
        if method == "exact":
            if len(N) == 1:
                X, R, it = _exact_single(Dq[0], Dd[0], N[0], float(Z[0]))
            else:
                X, R, it = _exact_multi(Dq, Dd, N, Z)
        else:
            X, R, it = _approx(Dq, Dd, N, Z, method)
    X = np.asarray(X, dtype=float)
    R = np.asarray(R, dtype=float)
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(R))):
        raise CcmodInputError("demands and think times are too small: the throughput "
                              "overflows", hint="express times in a larger unit")
    Nf = np.array(N, dtype=float)
    cycle = np.where(X > 0, Nf / np.where(X > 0, X, 1.0), Z + R.sum(axis=1))
    Q = X[:, None] * R
    U = X[:, None] * D / m[None, :]
    if multiclass:
        return MVAResult(X, cycle, R, Q, U, method, N, Z, m, it, multiclass=True)
    return MVAResult(float(X[0]), float(cycle[0]), R[0], Q[0], U[0], method, N, Z, m, it)
