"""Fitting the Cremonesi-Gennaro SPMD models to observed speedup surfaces (paper Sec. 5.2).

The paper estimates seven parameters of the BUS-AIO model of QCRD from 42 observed speedups
s(p, d) by least squares, with the time parameters normalised to the one-processor cycle
time T1.  :func:`fit_speedup` does the same for any of the three models with a small
Levenberg-Marquardt solver written with numpy only (scipy is not a dependency):

* residuals are relative errors (s(p, d) - s_obs)/s_obs, so the minimum is the paper's
  average-error metric (:func:`ccmod.analytic.spmd.average_error`);
* time parameters are fitted as logarithms (they stay positive) and ``w`` through a logistic
  map (it stays in (0, 1));
* the speedup is invariant to scaling every time by the same factor, so after each step the
  times are renormalised to T1 = 1 (the paper's normalisation; ``n_io`` is absorbed: keep it
  at 1 and read the fitted times as per-I/O-cycle totals S x n_io).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ccmod.analytic import _validate as v
from ccmod.analytic.spmd import SPMDParams, _model, average_error, speedup
from ccmod.errors import CcmodInputError

__all__ = ["SPMDFit", "fit_speedup", "FIT_PARAMETERS"]

#: the seven fitted parameters of the paper (Table 4)
FIT_PARAMETERS = ("S_cpu_par", "S_cpu_ser", "S_com_0", "S_com_R", "w", "S_io_0", "S_io_R")
_TIMES = ("S_cpu_par", "S_cpu_ser", "S_com_0", "S_com_R", "S_io_0", "S_io_R", "n_io")
_MAX_STEP = 0.25


@dataclass
class SPMDFit:
    """Result of :func:`fit_speedup`.

    Attributes
    ----------
    params : SPMDParams
        Fitted parameters, times normalised so that T1 = 1.
    model : str
    error : float
        The paper's average error (1/N_P) sqrt(sum rel_err^2).
    max_rel_error : float
    predicted : ndarray
        Model speedups at the observed (p, d).
    iterations : int
    converged : bool
    """

    params: SPMDParams
    model: str
    error: float
    max_rel_error: float
    predicted: np.ndarray
    iterations: int
    converged: bool

    def to_dict(self) -> dict:
        return {"model": self.model, "params": self.params.to_dict(), "error": self.error,
                "max_rel_error": self.max_rel_error, "predicted": self.predicted.tolist(),
                "iterations": self.iterations, "converged": self.converged}


def _normalise(prm: SPMDParams) -> SPMDParams:
    t1 = prm.T1
    kw = {k: getattr(prm, k) / t1 for k in _TIMES if k != "n_io"
          if not (k == "S_com_0" and callable(prm.S_com_0))}
    return prm.replace(**kw)


def _to_theta(prm: SPMDParams, free) -> np.ndarray:
    return np.array([float(getattr(prm, name)) for name in free])


def _from_theta(theta: np.ndarray, base: SPMDParams, free) -> SPMDParams:
    """Parameters from the (projected) vector: times >= 0, 0 <= w <= 1."""
    kw = {}
    for name, t in zip(free, theta):
        kw[name] = float(min(max(t, 0.0), 1.0)) if name == "w" else float(max(t, 0.0))
    return base.replace(**kw)


#: deterministic starting points (fractions of T1) tried when no start is given
DEFAULT_STARTS = (
    dict(S_cpu_par=0.8, S_cpu_ser=0.02, S_com_0=0.01, S_com_R=0.05, w=0.3, S_io_0=0.02,
         S_io_R=0.15),
    dict(S_cpu_par=0.5, S_cpu_ser=0.05, S_com_0=0.05, S_com_R=0.3, w=0.7, S_io_0=0.05,
         S_io_R=0.4),
    dict(S_cpu_par=0.3, S_cpu_ser=0.1, S_com_0=0.001, S_com_R=0.01, w=0.1, S_io_0=0.1,
         S_io_R=0.5),
)


def _lm(residuals, theta, free, max_iter, tol, project, is_w):
    """Projected Levenberg-Marquardt on ``residuals(theta) -> (r, pred)`` (r None: infeasible)."""
    r, pred = residuals(theta)
    cost = float(r @ r)
    lam = 1e-2
    it = 0
    n = len(free)
    fd = 1e-7
    for it in range(1, max_iter + 1):
        J = np.empty((len(r), n))
        for j in range(n):
            t2 = theta.copy()
            t2[j] += fd
            rj = residuals(t2)[0]
            J[:, j] = 0.0 if rj is None else (rj - r) / fd
        gvec = J.T @ r
        # active set: parameters on a bound whose descent direction leaves the box are held
        at_low = (theta <= 0.0) & (gvec > 0.0)
        at_high = is_w & (theta >= 1.0) & (gvec < 0.0)
        move = ~(at_low | at_high)
        if not np.any(move):
            return theta, r, pred, cost, it, True
        Jm = J[:, move]
        A = Jm.T @ Jm
        gm = gvec[move]
        nm = int(move.sum())
        improved = False
        rel = 0.0
        while lam < 1e14:
            step = np.zeros(n)
            step[move] = np.linalg.solve(A + lam * (np.diag(np.diag(A)) + 1e-12 * np.eye(nm)),
                                         -gm)
            big = float(np.max(np.abs(step)))
            if big > _MAX_STEP:               # trust region on the normalised times
                step *= _MAX_STEP / big
            cand = project(theta + step)
            r2, pred2 = residuals(cand)
            if r2 is not None:
                c2 = float(r2 @ r2)
                if c2 < cost:
                    improved = True
                    rel = (cost - c2) / max(cost, 1e-300)
                    theta, r, pred, cost = cand, r2, pred2, c2
                    lam = max(lam / 3.0, 1e-12)
                    break
            lam *= 4.0
        if not improved:
            return theta, r, pred, cost, it, True
        if rel < tol or cost < 1e-26:
            return theta, r, pred, cost, it, True
    return theta, r, pred, cost, it, False


def fit_speedup(p, d, s_obs, model: str = "BUS-AIO", base: SPMDParams | None = None,
                free=FIT_PARAMETERS, initial: dict | None = None, max_iter: int = 200,
                tol: float = 1e-10) -> SPMDFit:
    """Least-squares fit of SPMD model parameters to observed speedups s_obs(p, d).

    Parameters
    ----------
    p, d : array_like of int
        Processor and disk counts of each observation.
    s_obs : array_like of float
        Observed speedups (> 0).
    model : {"SIO", "BUS-AIO", "CLU-AIO"}
    base : SPMDParams, optional
        Fixed structure: ``c``, ``r`` (g), ``dist`` (h), ``n_io`` and the values of the
        parameters not in ``free`` (default c = 1, r = 2; set ``r=math.inf`` for the paper's
        QCRD g(p) = 1/p).
    free : sequence of str
        Parameters to fit (subset of :data:`FIT_PARAMETERS`); there must be at least as
        many observations.
    initial : dict, optional
        Starting values of the free parameters.  Without it the fit starts from each of
        :data:`DEFAULT_STARTS` and keeps the best.
    max_iter, tol
        Levenberg-Marquardt iteration limit and relative cost decrease to stop at.
    """
    model = _model(model)
    pa = np.atleast_1d(np.asarray(p))
    da = np.atleast_1d(np.asarray(d))
    so = v.real_array("s_obs", s_obs, minimum=0.0, strict=True)
    if not (pa.shape == da.shape == so.shape):
        raise CcmodInputError(f"p, d and s_obs must have the same length, got "
                              f"{pa.shape}, {da.shape}, {so.shape}")
    pts = [(v.integer("p", a, minimum=1), v.integer("d", b, minimum=1)) for a, b in zip(pa, da)]
    free = tuple(free)
    bad = [f for f in free if f not in FIT_PARAMETERS]
    if bad:
        raise CcmodInputError(f"cannot fit {bad[0]!r}", hint="fit some of: "
                              + ", ".join(FIT_PARAMETERS))
    if len(set(free)) != len(free) or not free:
        raise CcmodInputError("free must name distinct parameters to fit")
    if len(pts) < len(free):
        raise CcmodInputError(f"{len(pts)} observations for {len(free)} free parameters",
                              hint="need at least as many observations as parameters")
    if base is None:
        base = SPMDParams(**DEFAULT_STARTS[0])
    if callable(base.S_com_0) and "S_com_0" in free:
        raise CcmodInputError("S_com_0 is a callable: it cannot be fitted",
                              hint="drop it from free")
    for prm_pt in pts:  # structural errors (p not a multiple of c, ...) surface here once
        speedup(prm_pt[0], prm_pt[1], base, model)

    is_w = np.array([f == "w" for f in free])

    def project(theta):
        return np.where(is_w, np.clip(theta, 0.0, 1.0), np.maximum(theta, 0.0))

    def params_of(theta):
        try:
            return _normalise(_from_theta(theta, base, free))
        except CcmodInputError:        # every CPU and I/O time projected to zero
            return None

    def residuals(theta):
        prm = params_of(theta)
        if prm is None:
            return None, None
        pred = np.array([speedup(pp, dd, prm, model) for pp, dd in pts])
        return (pred - so) / so, pred

    starts = [initial] if initial else [{k: s0[k] for k in free} for s0 in DEFAULT_STARTS]
    best = None
    total_it = 0
    for s0 in starts:
        try:
            theta0 = _to_theta(_normalise(base.replace(**s0)), free)
        except TypeError as exc:
            raise CcmodInputError(f"bad initial values: {exc}") from None
        if residuals(theta0)[0] is None:
            continue
        out = _lm(residuals, theta0, free, max_iter, tol, project, is_w)
        total_it += out[4]
        if best is None or out[3] < best[3]:
            best = out
    if best is None:
        raise CcmodInputError("no feasible starting point (T1 = 0)")
    theta, r, pred, cost, _, converged = best
    prm = params_of(theta)
    return SPMDFit(prm, model, average_error(pred, so), float(np.max(np.abs(r))), pred,
                   total_it, converged)
