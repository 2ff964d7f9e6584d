"""Message-queue overflow analytics of a closed network of exponential servers.

Chapter 3 of the J-Machine thesis (``../shared/seeds/jmachine-message-driven-dynamics.txt``):
``N`` processors (servers) and ``K`` messages/tasks (customers) that hop between them; a
hardware queue holds at most ``Q`` messages and an *overflow* is the arrival of a message at a
processor whose queue already holds ``Q`` (eqs. 3.12-3.14).

* Balanced workload (all relative loads equal): every state is equally likely, so
  probabilities are ratios of state counts (3.17).  :func:`states` is s(N, K) (3.1) and
  :func:`nonoverflow_states` is t(N, K, Q) (3.18, recurrence 3.27), both exact Python integers;
  :func:`p_no_overflow` is (3.19) and :func:`overflow_rate` is (3.50) / (3.51).
* Leighton's independent-stones estimate (3.31-3.37): :func:`leighton_p_no_overflow`,
  :func:`leighton_q_required`, :func:`leighton_m_required`.
* Imbalanced workload, one (or a few) bottleneck server(s) ``B`` times slower:
  :func:`imbalance_threshold` (3.65), :func:`bottleneck_residency` (Buzen, 3.87),
  :func:`bottleneck_mean_queue` (Table 3.5 / Fig. 3-5), :func:`bottleneck_overflow_rate` (3.91).
* Open (Jackson) networks, each server an M/M/1 queue: :func:`open_residency` (3.94),
  :func:`open_p_no_overflow` (3.96), :func:`open_overflow_rate` (3.97).

All rates are normalised to one server's service rate mu (events per 1/mu).
"""
from __future__ import annotations

import math

import numpy as np

from ccmod.analytic import _validate as v
from ccmod.errors import CcmodInputError

__all__ = ["states", "nonoverflow_states", "p_no_overflow", "overflow_rate",
           "leighton_p_no_overflow", "leighton_q_required", "leighton_m_required",
           "imbalance_threshold", "bottleneck_residency", "bottleneck_mean_queue",
           "bottleneck_overflow_rate", "open_residency", "open_p_no_overflow",
           "open_overflow_rate"]


# --------------------------------------------------------------------------- state counting
#: sizes above which the exact big-integer counts and the O(K) sums take too long
MAX_N = 8192
MAX_K = 10_000_000

def states(N: int, K: int) -> int:
    """s(N, K): arrangements of ``K`` identical customers on ``N`` servers (eq. 3.1).

    s(N, K) = C(N + K - 1, K); s(0, 0) = 1 and s(0, K > 0) = 0 (recurrence 3.21).
    """
    N = v.integer("N", N, maximum=MAX_N)
    K = v.integer("K", K, maximum=MAX_K)
    if N == 0:
        return 1 if K == 0 else 0
    return math.comb(N + K - 1, K)


def nonoverflow_states(N: int, K: int, Q: int) -> int:
    """t(N, K, Q): arrangements with no server holding more than ``Q`` customers (eq. 3.18).

    The thesis computes it with the two-parameter recurrence (3.27) in O(N^2 K) big-integer
    additions.  We use the equivalent inclusion-exclusion closed form (the coefficient of
    z^K in ((1 - z^(Q+1)) / (1 - z))^N, the generating function 3.28 at fixed n)::

        t(N, K, Q) = sum_j (-1)^j C(N, j) C(K - j (Q + 1) + N - 1, N - 1),

    j = 0 .. min(N, K // (Q + 1)): at most ``K/(Q+1) + 1`` exact binomials, so
    t(512, 13*512, 64) takes milliseconds.  The tests check it against (3.27) and against
    brute-force enumeration.
    """
    N = v.integer("N", N, maximum=MAX_N)
    K = v.integer("K", K, maximum=MAX_K)
    Q = v.integer("Q", Q, minimum=-1)
    return _t(N, K, Q)


def _t(N: int, K: int, Q: int) -> int:
    """Unchecked t(N, K, Q) (K < 0 or Q < 0 allowed: they count zero arrangements)."""
    if K < 0:
        return 0
    if N == 0:
        return 1 if K == 0 else 0
    if Q < 0:
        return 0
    if K > N * Q:
        return 0
    if Q >= K:
        return math.comb(N + K - 1, K)
    q1 = Q + 1
    total = 0
    for j in range(min(N, K // q1) + 1):
        term = math.comb(N, j) * math.comb(K - j * q1 + N - 1, N - 1)
        total += -term if j & 1 else term
    return total


def p_no_overflow(N: int, K: int, Q: int) -> float:
    """P(A_nov) for a balanced workload: t(N, K, Q) / s(N, K) (eq. 3.19).

    The fraction of time no queue holds more than ``Q`` messages.  The big-integer ratio is
    converted to float with Python's correctly rounded int/int division.
    """
    N = v.integer("N", N, minimum=1, maximum=MAX_N)
    K = v.integer("K", K, maximum=MAX_K)
    Q = v.integer("Q", Q)
    return _t(N, K, Q) / math.comb(N + K - 1, K)


def overflow_rate(N: int, K: int, Q: int, first_term_only: bool = False) -> float:
    """Normalised overflow rate lambda_overflow / mu of a balanced, uniform workload.

    Eq. (3.50)::

        lambda/mu = (N - 1) / (N s(N, K)) * sum_{i=1}^{K//Q} i C(N, i) t(N - i, K - Q i, Q - 1)

    (states on the border of A_nov, weighted by their number of full queues, times the
    N - 1 other servers that may send to a full one at rate mu/N; the (k_j > 0) factor of
    3.47 is dropped, so this is an upper bound on 3.47).  By symmetry the weighted count
    equals N t(N - 1, K - Q, Q) (server 1 full, the others at most Q), which is what we
    evaluate; the tests check it against the literal sum.

    ``first_term_only=True`` keeps only the i = 1 term (eq. 3.51):
    (N - 1) t(N - 1, K - Q, Q - 1) / s(N, K).
    """
    N = v.integer("N", N, minimum=1, maximum=MAX_N)
    K = v.integer("K", K, maximum=MAX_K)
    Q = v.integer("Q", Q)
    s = math.comb(N + K - 1, K)
    if first_term_only:
        border = _t(N - 1, K - Q, Q - 1)
    else:
        border = _t(N - 1, K - Q, Q)
    return ((N - 1) * border) / s


# --------------------------------------------------------------------------- Leighton
def _eps(eps) -> float:
    return v.real("eps", eps, minimum=0.0, strict=True, maximum=1.0, strict_max=True)


def leighton_p_no_overflow(N: int, m: float, Q: int) -> float:
    """Leighton's estimate (1 - (m/(m+1))^(Q+1))^N of P(A_nov) (eq. 3.32), m = K/N."""
    N = v.integer("N", N, minimum=1)
    m = v.real("m", m)
    Q = v.integer("Q", Q)
    a = m / (m + 1.0)
    return float(math.exp(N * math.log1p(-a ** (Q + 1)))) if a > 0 else 1.0


def leighton_q_required(N: int, m: float, eps: float) -> int:
    """Smallest queue size ``Q`` with Leighton's estimate P(A_nov) >= 1 - eps (3.33-3.36).

    From e^(-N (m/(m+1))^(Q+1)) >= 1 - eps::

        Q + 1 >= (ln N - ln ln(1/(1 - eps))) / ln((m + 1)/m)

    The thesis prints the bound without the +1 and quotes integers; both readings give its
    numbers: N = 32768, m = 5: Q = 59 for eps = 0.5 and Q = 107 for eps = 1e-4 (Sec. 3.3.4).
    """
    N = v.integer("N", N, minimum=1)
    m = v.real("m", m, strict=True)
    e = _eps(eps)
    bound = (math.log(N) - math.log(-math.log1p(-e))) / math.log((m + 1.0) / m)
    q = max(0, math.ceil(bound - 1.0 - 1e-12))
    return int(q)


def leighton_m_required(N: int, Q: int, eps: float) -> float:
    """Largest load m = K/N with Leighton's estimate P(A_nov) >= 1 - eps (eq. 3.37).

    m < 1 / ((N / ln(1/(1 - eps)))^(1/(Q+1)) - 1).  The thesis: N = 512, Q = 64, eps = 0.5
    gives m = 9.3, the centre of the break in Figure 3-1.
    """
    N = v.integer("N", N, minimum=1)
    Q = v.integer("Q", Q)
    e = _eps(eps)
    ratio = N / -math.log1p(-e)
    if ratio <= 1.0:
        return math.inf
    return 1.0 / math.expm1(math.log(ratio) / (Q + 1))


# --------------------------------------------------------------------------- imbalance
def imbalance_threshold(N: int, K: int) -> float:
    """Largest tolerable bottleneck slowness B = (N + K)/K (eq. 3.65).

    Equivalently the bottleneck queue grows sharply once K/N > 1/(B - 1) (3.66-3.68).
    """
    N = v.integer("N", N, minimum=1, maximum=MAX_N)
    K = v.integer("K", K, minimum=1, maximum=MAX_K)
    return (N + K) / K


def _log_binom(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    lg = np.vectorize(math.lgamma, otypes=[float])
    return lg(n + 1.0) - lg(k + 1.0) - lg(n - k + 1.0)


def _log_s(n: int, k: np.ndarray) -> np.ndarray:
    """log s(n, k) for an array of k >= 0 (-inf where s = 0)."""
    k = np.asarray(k, dtype=float)
    if n == 0:
        return np.where(k == 0, 0.0, -np.inf)
    return _log_binom(n + k - 1.0, k)


def _logsumexp(a: np.ndarray) -> float:
    m = float(np.max(a))
    if not math.isfinite(m):
        return m
    return m + math.log(float(np.sum(np.exp(a - m))))


def _log_G(N: int, Ks, B: float, b: int) -> np.ndarray:
    """log of the Gordon-Newell normalisation constant (3.7) for ``b`` servers with relative
    load B and N - b with load 1, for each population in ``Ks`` (3.69 for b = 1).

    G(K) = sum_j B^j s(b, j) s(N - b, K - j); summed in log space because B^K and the
    binomials overflow doubles for the J-Machine sizes (K = 13*512).
    """
    Ks = np.atleast_1d(np.asarray(Ks, dtype=int))
    kmax = int(Ks.max())
    j = np.arange(kmax + 1, dtype=float)
    lb = j * math.log(B) + _log_s(b, j)
    lr = _log_s(N - b, j)
    out = np.empty(len(Ks))
    for idx, K in enumerate(Ks):
        out[idx] = _logsumexp(lb[:K + 1] + lr[K::-1])
    return out


def _imbalanced_args(N, K, B, bottlenecks):
    N = v.integer("N", N, minimum=1, maximum=MAX_N)
    K = v.integer("K", K, maximum=MAX_K)
    B = v.real("B", B, strict=True)
    b = v.integer("bottlenecks", bottlenecks, minimum=1)
    if b > N:
        raise CcmodInputError(f"bottlenecks ({b}) must not exceed N ({N})")
    return N, K, B, b


def bottleneck_residency(N: int, K: int, Q: int, B: float, bottlenecks: int = 1) -> float:
    """P(k_1 >= Q) on a bottleneck server with relative load B (Buzen, eq. 3.87).

    P(k_1 >= Q) = B^Q G(K - Q) / G(K); the other N - ``bottlenecks`` servers have load 1 and
    ``bottlenecks`` servers (server 1 among them) have load B (Sec. 3.4.4, Fig. 3-6).
    Service rates equal and uniform routing give B = mu / mu_1 (server 1 B times slower).
    """
    N, K, B, b = _imbalanced_args(N, K, B, bottlenecks)
    Q = v.integer("Q", Q)
    if Q > K:
        return 0.0
    lg = _log_G(N, [K, K - Q], B, b)
    return float(min(1.0, math.exp(Q * math.log(B) + lg[1] - lg[0])))


def bottleneck_mean_queue(N: int, K: int, B: float, bottlenecks: int = 1) -> float:
    """E[k_1], the mean queue on a bottleneck server (Table 3.5, Fig. 3-5).

    E[k_1] = sum_{n=1}^{K} P(k_1 >= n) = sum_n B^n G(K - n) / G(K) (Buzen).  The thesis:
    N = 512, K = 2048, B = 1.1 gives about 7; N = 512, K = 2560, B = 1.25 gives about 512.
    """
    N, K, B, b = _imbalanced_args(N, K, B, bottlenecks)
    if K == 0:
        return 0.0
    if b == 1:
        # marginal P(k_1 = j) = B^j s(N - 1, K - j) / G(K): one O(K) pass
        j = np.arange(K + 1, dtype=float)
        lw = j * math.log(B) + _log_s(N - 1, K - j)
        w = np.exp(lw - lw.max())
        return float(np.dot(j, w) / w.sum())
    lg = _log_G(N, np.arange(K + 1), B, b)
    n = np.arange(1, K + 1)
    terms = n * math.log(B) + lg[K - n] - lg[K]
    return float(np.sum(np.exp(terms)))


def bottleneck_overflow_rate(N: int, K: int, Q: int, B: float, bottlenecks: int = 1) -> float:
    """Normalised overflow rate of the bottleneck server, lambda/mu ~ P(k_1 = Q) (eq. 3.91).

    P(k_1 = Q) = P(k_1 >= Q) - P(k_1 >= Q + 1) from Buzen's formula (3.87).
    """
    return (bottleneck_residency(N, K, Q, B, bottlenecks)
            - bottleneck_residency(N, K, v.integer("Q", Q) + 1, B, bottlenecks))


# --------------------------------------------------------------------------- open networks
def _rho(rho) -> np.ndarray:
    r = np.asarray(rho, dtype=float)
    if not np.all(np.isfinite(r)) or np.any(r < 0):
        raise CcmodInputError(f"rho must be finite and >= 0, got {rho!r}")
    if np.any(r >= 1):
        raise CcmodInputError(f"utilisation rho must be < 1 in an open network, got {rho!r}",
                              hint="the queue grows without bound (stability 3.93)")
    return r


def _out(x: np.ndarray):
    return float(x) if np.ndim(x) == 0 else x


def open_residency(rho, Q: int):
    """P(k_i > Q) = rho_i^(Q+1) of an M/M/1 server (eq. 3.94), per server.

    ``rho`` (scalar or array) = lambda_i / mu_i (3.95), each < 1.
    """
    r = _rho(rho)
    Q = v.integer("Q", Q)
    return _out(r ** (Q + 1))


def open_p_no_overflow(rho, Q: int) -> float:
    """P(A_nov) = prod_i (1 - rho_i^(Q+1)) over independent M/M/1 servers (eq. 3.96)."""
    r = _rho(rho)
    Q = v.integer("Q", Q)
    return float(np.prod(1.0 - np.atleast_1d(r) ** (Q + 1)))


def open_overflow_rate(lam, rho, Q: int):
    """Overflow rate lambda_i (1 - rho_i) rho_i^Q of each server (eq. 3.97).

    Arrivals that find exactly ``Q`` waiting (PASTA).  ``lam`` and ``rho`` broadcast; sum the
    result for the network's total rate (the per-server overflows are independent Poisson
    processes).  Units are those of ``lam``.
    """
    r = _rho(rho)
    lam_a = np.asarray(lam, dtype=float)
    if not np.all(np.isfinite(lam_a)) or np.any(lam_a < 0):
        raise CcmodInputError(f"lam must be finite and >= 0, got {lam!r}")
    Q = v.integer("Q", Q)
    try:
        out = lam_a * (1.0 - r) * r ** Q
    except ValueError:
        raise CcmodInputError(f"lam and rho shapes differ: {lam_a.shape} vs {r.shape}") from None
    return _out(out)
