"""LoPC: contention for message-handling processors (Frank 1997, ``lopc-frank-1997.txt``).

P nodes each run one thread that computes for W, then makes a blocking request: the request
crosses a contention-free network (latency Sl), interrupts the destination, whose request
handler runs for So (queued FIFO behind other handlers), the reply crosses the network
(Sl) and a reply handler (So) unblocks the thread.  Handlers pre-empt computation.  The
model is approximate MVA with Bard's arrival approximation and the BKT priority
approximation; ``Co2`` is the squared coefficient of variation of the handler times (1 =
exponential, 0 = constant) entering through the residual-life terms (5.8)-(5.10).

* :func:`all_to_all` -- homogeneous all-to-all pattern: eqs. 4.1 and 5.1-5.10, solved
  exactly for the fixed point (a one-dimensional monotone root, see the function).
* :func:`bounds` -- (5.12): W + 2Sl + 2So < R* < W + 2Sl + 3.46 So (Co2 = 0).
* :func:`client_server` / :func:`optimal_servers` -- the work-pile model of ch. 6 (6.1-6.8).
* :func:`general` -- Appendix A: per-thread W_c and visit fractions V_ck (multi-hop allowed).

Times are in any consistent unit (the thesis uses processor cycles).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ccmod.analytic import _validate as v
from ccmod.errors import CcmodInputError

__all__ = ["AllToAll", "ClientServer", "General", "all_to_all", "bounds", "client_server",
           "optimal_servers", "best_servers", "general", "UPPER_BOUND_FACTOR"]

#: the constant of the upper bound (5.12), valid for Co2 = 0
UPPER_BOUND_FACTOR = 3.46

_GOLDEN = (1.0 + math.sqrt(5.0)) / 2.0


def _bisect_decreasing(fn, lo: float, hi: float, iters: int = 200) -> float:
    """Root of a strictly decreasing ``fn`` on (lo, hi) with fn(lo) > 0 > fn(hi)."""
    while fn(hi) > 0:
        hi = 2.0 * hi + 1.0
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if fn(mid) > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# --------------------------------------------------------------------------- all-to-all
@dataclass
class AllToAll:
    """LoPC prediction for homogeneous all-to-all request/reply (ch. 5).

    Attributes
    ----------
    R : float
        Mean compute/request cycle time (4.1); the run time is n R for n requests per node.
    Rw, Rq, Ry : float
        Compute-thread residence (5.7), request-handler (5.9) and reply-handler (5.10)
        response times.
    Qq, Qy : float
        Mean request / reply handlers at a node (5.3).
    Uq, Uy : float
        Processor utilisation by request / reply handlers (5.4).
    X : float
        System throughput P / R (5.1), requests per time unit.
    contention : float
        C = R - (W + 2 Sl + 2 So), the cost of contention per cycle (about one So).
    contention_free : float
        W + 2 Sl + 2 So, the LogP-style cycle without contention (lower bound of 5.12).
    """

    W: float
    So: float
    Sl: float
    P: int
    Co2: float
    protocol_processor: bool
    R: float
    Rw: float
    Rq: float
    Ry: float
    Qq: float
    Qy: float
    Uq: float
    Uy: float
    X: float
    contention: float
    contention_free: float

    @property
    def C(self) -> float:
        """The LoPC contention cost (alias of :attr:`contention`)."""
        return self.contention

    def runtime(self, n: float) -> float:
        """Total run time n R for ``n`` requests per node."""
        return float(n) * self.R

    def to_dict(self) -> dict:
        return asdict(self)


def _a2a_parts(R: float, W: float, So: float, Co2: float, pp: bool):
    """Components of the all-to-all model at cycle time R (None when R is infeasible).

    Per node the request and reply arrival rates are both 1/R (X = P/R, V = 1/P), so with
    u = So/R: Uq = Uy = u, Qq = u Rq/So, Qy = u Ry/So and (5.9), (5.10) become linear in
    Rq, Ry (k = (Co2 - 1)/2):
        Ry = So (1 + k u) + u Rq
        Rq (1 - u - u^2) = So (1 + u + 2 k u + k u^2)
    """
    u = So / R
    den = 1.0 - u - u * u
    if den <= 0.0 or u >= 1.0:
        return None
    k = 0.5 * (Co2 - 1.0)
    Rq = So * (1.0 + u + 2.0 * k * u + k * u * u) / den
    Ry = So * (1.0 + k * u) + u * Rq
    Qq = u * Rq / So if So > 0 else 0.0
    Rw = W if pp else (W + So * Qq) / (1.0 - u)        # BKT (5.7) or protocol processor
    return Rw, Rq, Ry, Qq, u


def all_to_all(W: float, So: float, Sl: float, P: int, Co2: float = 1.0,
               protocol_processor: bool = False) -> AllToAll:
    """LoPC model of homogeneous all-to-all request/reply communication (eqs. 4.1, 5.1-5.10).

    Parameters
    ----------
    W : float
        Mean computation between blocking requests (>= 0).
    So : float
        Mean handler occupancy, interrupt included (>= 0).
    Sl : float
        Network latency (>= 0); the network is contention free.
    P : int
        Processors (>= 2); every thread sends to the other P - 1 uniformly.
    Co2 : float
        Squared coefficient of variation of handler times (0 constant, 1 exponential).
    protocol_processor : bool
        Handlers run on a separate protocol processor: Rw = W (shared-memory variant).

    Notes
    -----
    The fixed point R = F(R) of 4.1 with 5.1-5.10 is a quartic (Sec. 5.3); its right-hand
    side is strictly decreasing in R on the feasible range R > So (1 + sqrt 5)/2, so the
    unique root is found by bisection to machine precision.  With Co2 = 0 the result solves
    the thesis's closed form (5.11) (checked by the tests).
    """
    W = v.real("W", W)
    So = v.real("So", So)
    Sl = v.real("Sl", Sl)
    P = v.integer("P", P, minimum=2)
    Co2 = v.real("Co2", Co2)
    pp = bool(protocol_processor)
    free = W + 2.0 * Sl + 2.0 * So
    if So == 0.0:
        R = W + 2.0 * Sl
        if R == 0.0:
            raise CcmodInputError("W, So and Sl are all zero: the cycle time is zero")
        return AllToAll(W, So, Sl, P, Co2, pp, R, W, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, P / R,
                        0.0, free)

    def g(R):
        parts = _a2a_parts(R, W, So, Co2, pp)
        if parts is None:
            return math.inf
        Rw, Rq, Ry, _, _ = parts
        return Rw + 2.0 * Sl + Rq + Ry - R

    lo = So * _GOLDEN * (1.0 + 1e-15)
    R = _bisect_decreasing(g, lo, max(free * 4.0, lo * 2.0))
    Rw, Rq, Ry, Qq, u = _a2a_parts(R, W, So, Co2, pp)
    Qy = u * Ry / So
    return AllToAll(W, So, Sl, P, Co2, pp, R, Rw, Rq, Ry, Qq, Qy, u, u, P / R, R - free, free)


def bounds(W: float, So: float, Sl: float) -> tuple[float, float]:
    """LoPC bounds (5.12) on the all-to-all cycle time for constant handlers (Co2 = 0).

    Returns ``(W + 2 Sl + 2 So, W + 2 Sl + 3.46 So)``: contention costs between zero and
    1.46 handler times; the rule of thumb is about one extra handler (Sec. 5.3).
    """
    W = v.real("W", W)
    So = v.real("So", So)
    Sl = v.real("Sl", Sl)
    base = W + 2.0 * Sl
    return base + 2.0 * So, base + UPPER_BOUND_FACTOR * So


# --------------------------------------------------------------------------- client-server
@dataclass
class ClientServer:
    """LoPC work-pile prediction (ch. 6) for ``Ps`` servers and ``Pc = P - Ps`` clients.

    Attributes
    ----------
    X : float
        Chunks processed per time unit (system throughput, 6.2).
    R : float
        Client compute/request cycle W + 2 Sl + Rs + So (6.7).
    Rs, Qs, Us : float
        Server response time (6.5 general form), queue length (6.1), utilisation (6.4).
    X_server_bound, X_client_bound : float
        Optimistic bounds Ps/So and Pc/(W + 2 Sl + 2 So) (end of ch. 6).
    """

    P: int
    Ps: float
    Pc: float
    W: float
    So: float
    Sl: float
    Co2: float
    X: float
    R: float
    Rs: float
    Qs: float
    Us: float
    X_server_bound: float
    X_client_bound: float

    def to_dict(self) -> dict:
        return asdict(self)


def _cs_args(P, W, So, Sl, Co2):
    return (v.integer("P", P, minimum=2), v.real("W", W), v.real("So", So, strict=True),
            v.real("Sl", Sl), v.real("Co2", Co2))


def client_server(P: int, Ps: float, W: float, So: float, Sl: float,
                  Co2: float = 1.0) -> ClientServer:
    """LoPC model of a work-pile with ``Ps`` servers and ``P - Ps`` clients (ch. 6).

    Clients compute W, request a chunk from a random server (Sl), the server handler runs
    (response Rs), the reply returns (Sl) and a reply handler (So) runs on the idle client
    (6.7).  Servers only run handlers: with x = X/Ps the per-server request rate,
    Qs = x Rs, Us = x So and Rs = So (1 + Qs + (Co2 - 1)/2 Us) (6.5), so
    Rs = So (1 + k x So)/(1 - x So), k = (Co2 - 1)/2; X = Pc/R (6.2).  ``Ps`` may be
    fractional (to evaluate the optimum 6.8).
    """
    P, W, So, Sl, Co2 = _cs_args(P, W, So, Sl, Co2)
    Ps = v.real("Ps", Ps, minimum=0.0, strict=True, maximum=P, strict_max=True)
    Pc = P - Ps
    k = 0.5 * (Co2 - 1.0)
    base = W + 2.0 * Sl + So

    def rs(R):
        xs = Pc / (Ps * R) * So
        if xs >= 1.0:
            return None
        return So * (1.0 + k * xs) / (1.0 - xs)

    def g(R):
        r = rs(R)
        return math.inf if r is None else base + r - R

    lo = Pc * So / Ps * (1.0 + 1e-15)
    R = _bisect_decreasing(g, max(lo, base), max(4.0 * (base + So), 2.0 * lo))
    Rs = rs(R)
    X = Pc / R
    Qs = X / Ps * Rs
    Us = X / Ps * So
    return ClientServer(P, Ps, Pc, W, So, Sl, Co2, X, R, Rs, Qs, Us, Ps / So,
                        Pc / (W + 2.0 * Sl + 2.0 * So))


def optimal_servers(P: int, W: float, So: float, Sl: float, Co2: float = 1.0) -> float:
    """Optimal (real-valued) number of servers of the work-pile (eq. 6.8).

    Ps = P (1 + sqrt(2 (Co2 + 1))/2) So / (W + 2 Sl + (3 + sqrt(2 (Co2 + 1))) So), from the
    optimum condition Qs = 1 (6.1), the server response Rs = So (1 + sqrt(2(Co2+1))/2) (6.6)
    and the cycle R = W + 2 Sl + Rs + So (6.7).  Round with :func:`best_servers`.
    """
    P, W, So, Sl, Co2 = _cs_args(P, W, So, Sl, Co2)
    r = math.sqrt(2.0 * (Co2 + 1.0))
    return P * (1.0 + r / 2.0) * So / (W + 2.0 * Sl + (3.0 + r) * So)


def best_servers(P: int, W: float, So: float, Sl: float, Co2: float = 1.0) -> int:
    """The integer Ps in 1..P-1 maximising :func:`client_server` throughput.

    Only the two integers around :func:`optimal_servers` are compared (the throughput is
    unimodal in Ps: it rises while servers are the bottleneck, then falls with fewer clients).
    """
    ps = optimal_servers(P, W, So, Sl, Co2)
    cands = {min(P - 1, max(1, math.floor(ps))), min(P - 1, max(1, math.ceil(ps)))}
    return max(sorted(cands), key=lambda n: client_server(P, n, W, So, Sl, Co2).X)


# --------------------------------------------------------------------------- general model
@dataclass
class General:
    """Appendix-A LoPC solution for P heterogeneous threads (arrays indexed by node/thread).

    Attributes
    ----------
    R : ndarray (P,)
        Cycle time of each thread (A.10).
    X : ndarray (P,)
        Throughput of each thread 1/R_c (A.1).
    Rw, Rq, Ry, Qq, Qy, Uq, Uy : ndarray (P,)
        Per node k: compute residence (A.9), request/reply handler response (A.7/A.8 with the
        residual-life terms of 5.9/5.10), queue lengths (A.5/A.6), utilisations (A.3/A.4).
    contention : ndarray (P,)
        R_c minus the contention-free cycle W_c + sum_k V_ck (Sl + So) + Sl + So.
    iterations : int
    """

    R: np.ndarray
    X: np.ndarray
    Rw: np.ndarray
    Rq: np.ndarray
    Ry: np.ndarray
    Qq: np.ndarray
    Qy: np.ndarray
    Uq: np.ndarray
    Uy: np.ndarray
    contention: np.ndarray
    contention_free: np.ndarray
    iterations: int

    def to_dict(self) -> dict:
        return {k: (x.tolist() if isinstance(x, np.ndarray) else x)
                for k, x in asdict(self).items()}


def _general_parts(R, W, V, So, Sl, k, pp, active):
    X = np.where(active, 1.0 / np.where(active, R, 1.0), 0.0)
    lam = V.T @ X                     # request arrivals per node (A.2 summed over threads)
    a = So * lam                      # Uq (A.3)
    b = So * X                        # Uy (A.4)
    # (A.7)/(A.8) with residual-life terms, Qq = lam Rq, Qy = X Ry (A.5/A.6):
    #   Ry = So (1 + k a) + a Rq
    #   Rq (1 - a - a b) = So (1 + k (a + b) + b (1 + k a))
    den = 1.0 - a - a * b
    if np.any(den <= 0.0) or np.any(a >= 1.0):
        return None
    Rq = So * (1.0 + k * (a + b) + b * (1.0 + k * a)) / den
    Ry = So * (1.0 + k * a) + a * Rq
    Qq = lam * Rq
    Qy = X * Ry
    Rw = W.copy() if pp else (So * Qq + W) / (1.0 - a)        # (A.9)
    Rnew = np.where(active, Rw + V @ (Sl + Rq) + Sl + Ry, 1.0)   # (A.10); 1.0: no thread
    return Rnew, Rw, Rq, Ry, Qq, Qy, a, b


def general(W, V, So: float, Sl: float, Co2: float = 1.0,
            protocol_processor: bool = False, tol: float = 1e-12,
            max_iter: int = 100_000) -> General:
    """The general LoPC model (Appendix A) for per-thread work and visit fractions.

    Parameters
    ----------
    W : array_like (P,)
        Work W_c of the thread on node c between blocking requests.
    V : array_like (P, P)
        V[c, k] = mean number of request handlers thread c's request runs on node k; rows
        may sum to more than 1 (multi-hop requests).  A thread that never communicates has
        a zero row: its node only serves requests (R = inf, X = 0 for that thread), as
        the servers of a work-pile.
    So, Sl, Co2, protocol_processor
        As in :func:`all_to_all`.

    Notes
    -----
    The cycle-time vector is the fixed point of R -> F(R) (A.1-A.10), F decreasing in R;
    we iterate R <- R + theta (F(R) - R), starting from a point where the utilisations are
    feasible and halving theta whenever the residual grows or F is infeasible.
    """
    W = v.real_array("W", W)
    P = W.size
    V = v.real_array("V", V, ndim=(2,))
    if V.shape != (P, P):
        raise CcmodInputError(f"V must be {P} x {P} to match W, got shape {V.shape}")
    So = v.real("So", So)
    Sl = v.real("Sl", Sl)
    Co2 = v.real("Co2", Co2)
    k = 0.5 * (Co2 - 1.0)
    pp = bool(protocol_processor)
    active = V.sum(axis=1) > 0
    if not np.any(active):
        raise CcmodInputError("no thread makes requests (every row of V is zero)")
    free = np.where(active, W + V @ np.full(P, Sl + So) + Sl + So, 1.0)
    if np.any(free <= 0.0):
        raise CcmodInputError("a thread has zero work, latency and handler time",
                              hint="its cycle time would be zero")
    # feasible start: large enough that every node's handler utilisation is below 1/2
    R = free.copy()
    for _ in range(200):
        parts = _general_parts(R, W, V, So, Sl, k, pp, active)
        if parts is not None and np.all(parts[6] < 0.5):
            break
        R = R * 2.0
    theta = 1.0
    prev = np.inf
    it = 0
    act = active
    for it in range(1, max_iter + 1):
        parts = _general_parts(R, W, V, So, Sl, k, pp, active)
        Rnew = parts[0]
        err = float(np.max(np.abs(Rnew[act] - R[act]) / R[act]))
        if err <= tol:
            R = Rnew
            break
        if err > prev:
            theta = max(theta * 0.5, 1e-4)
        prev = err
        cand = R + theta * (Rnew - R)
        while _general_parts(cand, W, V, So, Sl, k, pp, active) is None:
            theta *= 0.5
            cand = R + theta * (Rnew - R)
        R = cand
    else:
        raise CcmodInputError(f"general LoPC model did not converge in {max_iter} iterations")
    Rnew, Rw, Rq, Ry, Qq, Qy, a, b = _general_parts(R, W, V, So, Sl, k, pp, active)
    R = np.where(active, R, np.inf)
    return General(R, np.where(active, 1.0 / R, 0.0), Rw, Rq, Ry, Qq, Qy, a, b,
                   np.where(active, R - free, np.nan), np.where(active, free, np.inf), it)
