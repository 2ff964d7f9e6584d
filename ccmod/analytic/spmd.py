"""Cremonesi-Gennaro queueing models of cyclic SPMD programs (``spmd-models-cremonesi-gennaro.txt``).

A program phase is a sequence of cycles; a cycle is ``n_io`` computation bursts (CPU, then
communication) followed by one I/O burst.  ``p`` processors in synchronisation groups of
``c`` (p/c jobs circulate), ``d`` disks.  Equation numbers follow the paper's order (its
text names (3), (9), (14)-(18), (20), (21) explicitly):

* (1)  T1 = S_cpu n_io + S_io, the one-processor, one-disk cycle;
* (3)  s(p, d) = T1 / (T_cpu + T_com + T_io);
* (5), (6) T_cpu = h(c) (S_par/p + S_ser), h(c) = H_c (exponential) or 2c/(c+1) (uniform);
* (7)  g(p) = p^(-(r-1)/r), g(1) = 0 (no communication on one processor);
* (8)-(10) T_com = S0 + g S_R; S_queue = w g S_R; S_delay = S0 + (1 - w) g S_R;
* (11)-(14) T_io = S0_io + S_R_io/d (SIO), + (S_R_io/d)/(p/c) (BUS-AIO), + S_R_io/(p/c)
  (CLU-AIO);
* (15) z = h(c)(S_par/p + S_ser) + S_delay; (16) SIO: T_cpu + T_com =
  n_io sum_{i=1}^{p/c} (z + R1(i, z, S_queue))/i; (17) R1;
* (20)-(22) BUS-AIO by exact MVA of a delay z n_io and two queues, R2;
* CLU-AIO: d classes of p/(c d) jobs, d private disks and the shared network queue,
  solved by multi-class MVA (:mod:`ccmod.analytic.mva`).

Fitting the parameters to observed speedups is in :mod:`ccmod.analytic.spmd_fit`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Callable, Union

import numpy as np

from ccmod.analytic import _validate as v
from ccmod.analytic import mva
from ccmod.errors import CcmodInputError

__all__ = ["SPMDParams", "MODELS", "h", "h_exponential", "h_uniform", "g", "cpu_time",
           "com_time", "com_queue", "com_delay", "io_time", "r1", "r2", "cycle_times",
           "speedup", "sio_speedup", "bus_aio_speedup", "clu_aio_speedup", "average_error",
           "fit_speedup"]

MODELS = ("SIO", "BUS-AIO", "CLU-AIO")

GSpec = Union[float, Callable[[float], float]]


# --------------------------------------------------------------------------- h(c), g(p)
def h_exponential(c: int) -> float:
    """Synchronisation cost for exponential bursts: E[max of c] / mean = H_c (eq. 6)."""
    c = v.integer("c", c, minimum=1)
    return float(sum(1.0 / i for i in range(1, c + 1)))


def h_uniform(c: int) -> float:
    """Synchronisation cost for uniform bursts on [0, 2 mean]: 2c/(c + 1) (Sec. 3.5)."""
    c = v.integer("c", c, minimum=1)
    return 2.0 * c / (c + 1.0)


def h(c: int, dist="exponential") -> float:
    """h(c) for ``dist`` in {"exponential", "uniform"} or a callable c -> h."""
    if callable(dist):
        return v.real("h(c)", dist(c), minimum=0.0)
    if dist == "exponential":
        return h_exponential(c)
    if dist == "uniform":
        return h_uniform(c)
    raise CcmodInputError(f"unknown burst distribution {dist!r}",
                          hint="valid: exponential, uniform, or a callable")


def g(p: int, r: GSpec = 2.0) -> float:
    """Communication scale function (eq. 7): g(p) = p^(-(r-1)/r) for p > 1, g(1) = 0.

    ``r`` is the dimension of the distributed data (2: image windows, g = 1/sqrt p;
    r = inf gives 1/p) or a callable p -> g(p) (BTIO's p^(-1/6) is r = 6/5).
    """
    p = v.integer("p", p, minimum=1)
    if p == 1:
        return 0.0
    if callable(r):
        return v.real("g(p)", r(p), minimum=0.0)
    if isinstance(r, (int, float)) and math.isinf(r) and r > 0:
        return 1.0 / p
    r = v.real("r", r, minimum=1.0)
    return p ** (-(r - 1.0) / r)


# --------------------------------------------------------------------------- parameters
@dataclass(frozen=True)
class SPMDParams:
    """Application and architecture parameters of the SPMD models (paper Table 1).

    Times in any unit (seconds in the paper).  ``S_com_0`` may be a callable p -> S0 (the
    start-up cost grows with the message count, e.g. BTIO's t0 x messages ~ p^(1/2)).
    """

    S_cpu_par: float               #: parallel CPU time of one burst on one processor
    S_cpu_ser: float = 0.0         #: serial CPU time of one burst
    S_com_0: float | Callable = 0.0  #: communication start-up time per burst
    S_com_R: float = 0.0           #: transfer time per unit of g(p) (1 / rate)
    w: float = 0.0                 #: contention level, 0 fully connected .. 1 bus
    S_io_0: float = 0.0            #: serial I/O time per I/O burst
    S_io_R: float = 0.0            #: parallel (disk-divisible) I/O time per I/O burst
    n_io: float = 1.0              #: computation bursts per I/O burst (1 / p_io)
    c: int = 1                     #: synchronisation level (processors per sync group)
    dist: object = "exponential"   #: burst distribution for h(c)
    r: GSpec = 2.0                 #: data dimension for g(p), or a callable g

    def __post_init__(self):
        for name in ("S_cpu_par", "S_cpu_ser", "S_com_R", "S_io_0", "S_io_R"):
            v.real(name, getattr(self, name))
        if not callable(self.S_com_0):
            v.real("S_com_0", self.S_com_0)
        v.real("w", self.w, maximum=1.0)
        v.real("n_io", self.n_io, strict=True)
        v.integer("c", self.c, minimum=1)
        if self.T1 <= 0:
            raise CcmodInputError("the one-processor cycle time T1 is zero",
                                  hint="give a positive CPU or I/O time")

    @property
    def T1(self) -> float:
        """Reference cycle time (eq. 1): n_io (S_par + S_ser) + S0_io + S_R_io."""
        return self.n_io * (self.S_cpu_par + self.S_cpu_ser) + self.S_io_0 + self.S_io_R

    def s_com_0(self, p: int) -> float:
        """Start-up time at p processors (0 on one processor: nothing to send)."""
        if p == 1:
            return 0.0
        if callable(self.S_com_0):
            return v.real("S_com_0(p)", self.S_com_0(p))
        return float(self.S_com_0)

    def replace(self, **kw) -> "SPMDParams":
        return replace(self, **kw)

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("S_com_0", "dist", "r"):
            if callable(d[k]):
                d[k] = repr(d[k])
        return d


def _groups(p: int, c: int) -> int:
    if p % c:
        raise CcmodInputError(f"p = {p} is not a multiple of the synchronisation level "
                              f"c = {c}")
    return p // c


# --------------------------------------------------------------------------- submodels
def cpu_time(p: int, prm: SPMDParams) -> float:
    """T_cpu = h(c)(S_par/p + S_ser) (eq. 5), one CPU burst of a sync group."""
    p = v.integer("p", p, minimum=1)
    return h(prm.c, prm.dist) * (prm.S_cpu_par / p + prm.S_cpu_ser)


def com_time(p: int, prm: SPMDParams) -> float:
    """Contention-free communication time S0 + g(p) S_R (eq. 8)."""
    return prm.s_com_0(p) + g(p, prm.r) * prm.S_com_R


def com_queue(p: int, prm: SPMDParams) -> float:
    """Queueing-station demand w g(p) S_R (eq. 9)."""
    return prm.w * g(p, prm.r) * prm.S_com_R


def com_delay(p: int, prm: SPMDParams) -> float:
    """Delay-station time S0 + (1 - w) g(p) S_R (eq. 10)."""
    return prm.s_com_0(p) + (1.0 - prm.w) * g(p, prm.r) * prm.S_com_R


def io_time(p: int, d: int, prm: SPMDParams, model: str = "SIO") -> float:
    """I/O service time of one I/O burst or chunk (eqs. 11-14)."""
    p = v.integer("p", p, minimum=1)
    d = v.integer("d", d, minimum=1)
    model = _model(model)
    if model == "SIO":
        return prm.S_io_0 + prm.S_io_R / d
    jobs = _groups(p, prm.c)
    if model == "BUS-AIO":
        return prm.S_io_0 + (prm.S_io_R / d) / jobs
    return prm.S_io_0 + prm.S_io_R / jobs


def _z(p: int, prm: SPMDParams) -> float:
    """Sum of the computation subnetwork's delays (eq. 15)."""
    return cpu_time(p, prm) + com_delay(p, prm)


def _model(model: str) -> str:
    m = str(model).upper().replace("_", "-")
    if m not in MODELS:
        raise CcmodInputError(f"unknown SPMD model {model!r}", hint="valid: " + ", ".join(MODELS))
    return m


# --------------------------------------------------------------------------- R1, R2
def _log_terms(e: np.ndarray, base: float) -> np.ndarray:
    """e * log(base) with 0^0 = 1 and 0^e = 0 for e > 0."""
    if base > 0:
        return e * math.log(base)
    return np.where(e == 0, 0.0, -np.inf)


def _lgamma1(e: np.ndarray) -> np.ndarray:
    return np.vectorize(math.lgamma, otypes=[float])(e + 1.0)


def r1(i: int, z: float, x: float) -> float:
    """R1(i, z, x) (eq. 17): residence at the queue of a closed network of ``i`` customers,
    a delay ``z`` and a queueing station of demand ``x``::

        R1 = x sum_{e1+e2=i-1} (e1+1) x^e1 z^e2 / e2!  /  sum_{e1+e2=i-1} x^e1 z^e2 / e2!

    Evaluated in log space (the powers overflow doubles for hundreds of jobs).
    """
    i = v.integer("i", i, minimum=1)
    z = v.real("z", z)
    x = v.real("x", x)
    if x == 0.0:
        return 0.0
    e1 = np.arange(i, dtype=float)
    e2 = (i - 1) - e1
    lw = _log_terms(e1, x) + _log_terms(e2, z) - _lgamma1(e2)
    w = np.exp(lw - lw.max())
    return float(x * np.dot(e1 + 1.0, w) / w.sum())


def r2(i: int, z: float, x: float, y: float) -> float:
    """R2(i, z, x, y) (eq. 22): residence at the ``x`` queue of a closed network of ``i``
    customers, a delay ``z`` and two queueing stations of demands ``x`` and ``y``::

        R2 = x sum_{e1+e2+e3=i-1} (e1+1) x^e1 y^e2 z^e3 / e3!  /  sum x^e1 y^e2 z^e3 / e3!

    (the paper prints the index set as L^3_{p/c-1}; it is the population minus one).
    """
    i = v.integer("i", i, minimum=1)
    z, x, y = v.real("z", z), v.real("x", x), v.real("y", y)
    if x == 0.0:
        return 0.0
    n = i - 1
    e1, e2 = np.meshgrid(np.arange(n + 1, dtype=float), np.arange(n + 1, dtype=float),
                         indexing="ij")
    e3 = n - e1 - e2
    ok = e3 >= 0
    e1, e2, e3 = e1[ok], e2[ok], e3[ok]
    lw = _log_terms(e1, x) + _log_terms(e2, y) + _log_terms(e3, z) - _lgamma1(e3)
    w = np.exp(lw - lw.max())
    return float(x * np.dot(e1 + 1.0, w) / w.sum())


# --------------------------------------------------------------------------- the models
#: CLU-AIO population vectors up to which ``clu_method="auto"`` solves the MVA exactly
CLU_EXACT_STATES = 20_000


def _mva_two_queues(n: int, z: float, x: float, y: float) -> tuple[float, float]:
    """Exact single-class MVA: delay z, queues x and y, population n -> (R_x, R_y)."""
    qx = qy = 0.0
    rx, ry = x, y
    for i in range(1, n + 1):
        rx = x * (1.0 + qx)
        ry = y * (1.0 + qy)
        tot = z + rx + ry
        xput = i / tot if tot > 0 else 0.0
        qx, qy = xput * rx, xput * ry
    return rx, ry


def _clu_schweitzer(d: int, k: int, z: float, x: float, y: float,
                    tol: float = 1e-13) -> tuple[float, float]:
    """Bard-Schweitzer MVA of CLU-AIO exploiting the class symmetry.

    d identical classes of k jobs; each class owns one disk (demand y) and all share the
    network queue (demand x); delay z.  Returns (R_disk, R_net) of one class.
    """
    if k == 0:
        return y, x
    f = (k - 1.0) / k
    tot = z + x + y
    qd, qn = k * y / tot, k * x / tot          # per-class queue lengths
    rd, rn = y, x
    for _ in range(100_000):
        rd = y * (1.0 + f * qd)                     # the disk holds only this class
        rn = x * (1.0 + (d - 1) * qn + f * qn)      # the network holds every class
        xput = k / (z + rd + rn)
        nd, nn = xput * rd, xput * rn
        if abs(nd - qd) + abs(nn - qn) < tol * k:
            break
        qd, qn = 0.5 * (qd + nd), 0.5 * (qn + nn)
    return rd, rn


def cycle_times(p: int, d: int, prm: SPMDParams, model: str = "SIO",
                clu_method: str = "auto") -> dict:
    """Cycle decomposition of a model at (p, d).

    Returns a dict with ``T_cpu_com`` (computation bursts incl. communication),
    ``T_io``, ``T`` (their sum, one cycle), ``T1`` and ``speedup`` = T1 / T (eq. 3).
    ``clu_method`` selects the CLU-AIO MVA: "exact", "schweitzer" or "auto" (exact while
    the population space is at most 200 000 vectors).
    """
    p = v.integer("p", p, minimum=1)
    d = v.integer("d", d, minimum=1)
    model = _model(model)
    jobs = _groups(p, prm.c)
    z = _z(p, prm)
    xq = com_queue(p, prm)
    n = prm.n_io
    tio = io_time(p, d, prm, model)
    if model == "SIO":
        # eq. 16.  R1(i, z, x) = x (1 + Q(i - 1)) is the exact single-class MVA recursion
        # (the paper's proof of 17), so one O(p/c) pass gives every R1(i); the tests check
        # it against the closed form :func:`r1`.
        q = 0.0
        acc = 0.0
        for i in range(1, jobs + 1):
            r_i = xq * (1.0 + q)
            q = i * r_i / (z + r_i) if z + r_i > 0 else 0.0
            acc += (z + r_i) / i
        t_comp = n * acc
        t_io = tio
    elif model == "BUS-AIO":
        zn, xn = z * n, xq * n
        # eqs. 20-21: R2(p/c, zn, xn, T_io) and R2(p/c, zn, T_io, xn) are the residence
        # times of the two queues of one exact MVA solution (checked against :func:`r2`)
        rx, ry = _mva_two_queues(jobs, zn, xn, tio)
        t_comp = zn + rx
        t_io = ry
    else:
        if jobs % d:
            raise CcmodInputError(f"CLU-AIO needs p/c = {jobs} to be a multiple of d = {d}")
        k = jobs // d
        # G matrix (paper eq. after 14): rows = d disks, network queue, delay; cols = classes
        D = np.zeros((d, d + 1))
        D[np.arange(d), np.arange(d)] = tio
        D[:, d] = xq * n
        method = clu_method
        if method == "auto":
            method = "exact" if (k + 1) ** d <= CLU_EXACT_STATES else "schweitzer"
        if method == "schweitzer":
            t_io, t_net = _clu_schweitzer(d, k, z * n, xq * n, tio)
            t_comp = z * n + t_net
        else:
            res = mva.solve(D, tuple([k] * d), think_time=z * n, method=method)
            t_io = float(res.residence_time[0, 0])
            t_comp = float(res.cycle_time[0]) - t_io
    T = t_comp + t_io
    return {"model": model, "p": p, "d": d, "T_cpu_com": t_comp, "T_io": t_io, "T": T,
            "T1": prm.T1, "speedup": prm.T1 / T}


def speedup(p: int, d: int, prm: SPMDParams, model: str = "SIO") -> float:
    """Speedup s(p, d) of ``model`` in {"SIO", "BUS-AIO", "CLU-AIO"} (eq. 3)."""
    return cycle_times(p, d, prm, model)["speedup"]


def sio_speedup(p: int, d: int, prm: SPMDParams) -> float:
    """SIO speedup (Sec. 4.1): synchronous I/O after the fork-join computation burst."""
    return speedup(p, d, prm, "SIO")


def bus_aio_speedup(p: int, d: int, prm: SPMDParams) -> float:
    """BUS-AIO speedup (Sec. 4.2): asynchronous I/O striped over d disks behind one node."""
    return speedup(p, d, prm, "BUS-AIO")


def clu_aio_speedup(p: int, d: int, prm: SPMDParams) -> float:
    """CLU-AIO speedup (Sec. 4.3): d clusters of p/(c d) jobs, each with its own disk."""
    return speedup(p, d, prm, "CLU-AIO")


def average_error(s_model, s_observed) -> float:
    """The paper's fit error (1/N_P) sqrt(sum ((s - s_obs)/s_obs)^2) (Sec. 5.2)."""
    s = np.asarray(s_model, dtype=float)
    o = np.asarray(s_observed, dtype=float)
    if s.shape != o.shape or o.size == 0:
        raise CcmodInputError(f"speedup arrays differ in shape: {s.shape} vs {o.shape}")
    return float(np.sqrt(np.sum(((s - o) / o) ** 2)) / o.size)


def fit_speedup(p, d, s_obs, model: str = "BUS-AIO", **kw):
    """Fit model parameters to observed speedups; see :func:`ccmod.analytic.spmd_fit.fit_speedup`."""
    from ccmod.analytic.spmd_fit import fit_speedup as _fit
    return _fit(p, d, s_obs, model=model, **kw)
