"""Fit a quiet-network cost model to ping-pong measurements (the article's regression).

:class:`PiecewiseLinearFit` is a scikit-learn regressor: ``fit(sizes, one_way_s)`` then
``predict(sizes)``. It fits ``T(n) = latency_s[k] + n / bandwidth_Bps[k]`` on segments
``k`` of the message size, split at the packet size (the article), at given breakpoints or
at breakpoints chosen automatically (dynamic programming over the measured sizes, number of
segments by BIC). The fit is monotone non-decreasing in the size and gives a
:class:`netsys.cost.PiecewiseLinearCost` for the engine (``to_cost_model``/``save``).

Why relative error: sizes span 0 B .. MiB and times 1 µs .. 1 ms; an ordinary least-squares
line would fit the large messages and ignore the latency. Every measured size therefore gets
the same weight in *relative* terms: sample ``j`` of size ``s`` has weight
``1 / (n_s * median_s**2)`` (``n_s`` samples of that size, ``median_s`` their median), so the
objective is the mean squared relative error over sizes, whatever the number of repetitions.
"""
from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from ccmod.errors import CcmodInputError
from ccmod.netsys.cost import PiecewiseLinearCost
from ccmod.netsys.fit_math import (SizeStats, check_params, choose_segments, fixed_segments,
                                   joint_monotone_fit, loo_predictions)

#: iteratively reweighted least squares rounds at most (usually 3-8 are needed)
MAX_IRLS = 15
#: IRLS stops when no reference time / robust weight changes by more than this
IRLS_TOL = 1e-4


class PiecewiseLinearFit(RegressorMixin, BaseEstimator):
    """Piecewise-linear, monotone one-way time model ``T(n)`` (scikit-learn regressor).

    Parameters
    ----------
    breakpoints : "auto", "none" or sequence of int
        ``"auto"``: number of segments chosen by BIC (1..``max_segments``), breakpoints
        at measured sizes by dynamic programming. ``"none"``: one line. A sequence: the
        first size (bytes) of each new segment.
    packet_size : int, optional
        The article's split: one line for ``n <= packet_size``, one above (overrides
        ``breakpoints="auto"``).
    max_segments : int
        Upper bound for ``"auto"``.
    robust : bool
        Huber loss on the relative residuals (IRLS) to damp outliers.
    huber_c : float
        Huber threshold in robust standard deviations (1.345 = 95 % Gaussian efficiency).
    ref_hops : int
        Route resources on the measured path (node -> switch -> node = 2).
    per_hop_latency_s : float
        Latency per route resource beyond ``ref_hops``; used as given unless ``fit`` gets
        measurements at two or more hop counts, then fitted.
    min_sizes_per_segment : int
        Distinct measured sizes each segment needs (>= 2: a line has 2 parameters).
    poor_fit_threshold : float
        Median relative error above which ``poor_fit_`` is set (0.10 = 10 %).

    Attributes
    ----------
    min_bytes_ : ndarray
        First size of each segment (``min_bytes_[0] == 0``).
    breakpoints_ : ndarray
        ``min_bytes_[1:]``: where a new segment starts.
    latency_s_, bandwidth_Bps_ : ndarray
        Intercept and 1/slope of each segment.
    per_hop_latency_s_ : float
    n_segments_, r2_, median_rel_err_, max_rel_err_, cv_median_rel_err_, cv_max_rel_err_,
    bic_, poor_fit_ : fit diagnostics (relative errors as fractions, per measured size;
        ``cv_*`` are leave-one-size-out with the breakpoints kept).
    sizes_, center_s_, predicted_s_ : ndarray
        Distinct sizes, their fitted central time (weighted mean) and the prediction.
    cost_ : PiecewiseLinearCost
        The model, ready for the engine.
    """

    def __init__(self, breakpoints="auto", packet_size=None, max_segments=4, robust=False,
                 huber_c=1.345, ref_hops=2, per_hop_latency_s=0.0, min_sizes_per_segment=2,
                 poor_fit_threshold=0.10):
        self.breakpoints = breakpoints
        self.packet_size = packet_size
        self.max_segments = max_segments
        self.robust = robust
        self.huber_c = huber_c
        self.ref_hops = ref_hops
        self.per_hop_latency_s = per_hop_latency_s
        self.min_sizes_per_segment = min_sizes_per_segment
        self.poor_fit_threshold = poor_fit_threshold

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y, sample_weight=None, hops=None):
        """Fit on message sizes ``X`` (bytes) and one-way times ``y`` (seconds).

        Parameters
        ----------
        X : array-like, shape (n,) or (n, 1)
            Message sizes in bytes (>= 0; repeated sizes are repetitions).
        y : array-like, shape (n,)
            One-way times in seconds (> 0).
        sample_weight : array-like, optional
            Extra weight per sample (multiplies the relative-error weight).
        hops : array-like of int, optional
            Route length of each sample; two or more distinct values fit
            ``per_hop_latency_s_``.

        Returns
        -------
        self
        """
        x = _as_sizes(X, whole=True)
        y = np.asarray(y, dtype=float).ravel()
        self._check_params()
        if y.size != x.size:
            raise CcmodInputError(f"{x.size} sizes but {y.size} times")
        if x.size == 0:
            raise CcmodInputError("no measurements to fit")
        if not np.all(np.isfinite(y)) or np.any(y <= 0):
            raise CcmodInputError("one-way times must be finite and > 0 seconds")
        sw = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, float).ravel()
        if sw.size != y.size or not np.all(np.isfinite(sw)) or np.any(sw < 0) or not np.any(sw > 0):
            raise CcmodInputError("sample_weight must be finite, >= 0, one per sample, not all 0")
        self.n_features_in_ = 1
        y = self._fit_hops(x, y, hops)
        stats = SizeStats(x, y, sw)
        if stats.nsizes < 2:
            raise CcmodInputError(
                f"only one message size ({int(stats.u[0])} B) measured: a latency + bandwidth "
                "line needs at least 2 sizes", hint="add measurements at other sizes (e.g. the "
                "benchmark's PingPong table of the same nodes)")
        # IRLS: the reference time of a size is max(measured median, prediction), so every
        # size contributes at most 1 to the squared relative error (a 10x-too-low outlier
        # cannot drag the whole fit); with robust=True Huber weights are updated as well.
        # That objective is not convex: for non-monotone data the IRLS is also started
        # from the upper and lower monotone envelopes of the medians and the best is kept.
        tref = stats.tref_scaled
        starts = [tref]
        for env in (np.maximum.accumulate(tref), np.minimum.accumulate(tref[::-1])[::-1]):
            if not any(np.array_equal(env, s0) for s0 in starts):
                starts.append(env)
        best = None
        for ref0 in starts:
            run = self._irls(stats, y, ref0)
            if best is None or run[0] < best[0] - 1e-12:
                best = run
        _, seg, coef, h, ref, self.n_iter_ = best
        stats.reweight(h, ref)
        self._store(stats, seg, coef)
        return self

    def _irls(self, stats, y, ref):
        """One IRLS run from reference times ``ref``.

        Returns (objective, seg, coef, h, ref, iterations). Without ``robust`` the iterate
        with the smallest objective is kept (the weights may cycle between two
        segmentations); with ``robust`` the last one.
        """
        h = np.ones_like(y)
        best = None
        for it in range(1, MAX_IRLS + 1):
            stats.reweight(h, ref)
            seg = self._segments(stats)
            coef = joint_monotone_fit(stats, seg)
            pred = coef.predict_scaled(stats.us)
            ref_new = np.maximum(stats.tref_scaled, pred)
            obj = self._objective(stats, pred)
            if best is None or obj < best[0] or self.robust:
                best = (obj, seg, coef, h, ref, it)
            h_new = h
            if self.robust:
                r = (stats.ys - coef.predict_scaled(stats.xs)) / ref_new[stats.inv]
                sigma = 1.4826 * float(np.median(np.abs(r)))
                if sigma > 0:
                    h_new = np.minimum(1.0, self.huber_c * sigma / np.maximum(np.abs(r), 1e-300))
            if np.max(np.abs(ref_new / ref - 1)) < IRLS_TOL and np.max(np.abs(h_new - h)) < IRLS_TOL:
                break
            ref, h = ref_new, h_new
        return best

    def _objective(self, stats, pred):
        """Bounded relative error per size: sum of r^2 (Huber loss of r with ``robust``)."""
        r = (stats.ybar - pred) / np.maximum(stats.tref_scaled, pred)
        if not self.robust:
            return float(np.sum(r * r))
        sigma = 1.4826 * float(np.median(np.abs(r)))
        if not sigma > 0:
            return float(np.sum(r * r))
        c = self.huber_c * sigma
        a = np.abs(r)
        return float(np.sum(np.where(a <= c, 0.5 * a * a, c * (a - 0.5 * c))))

    def _check_params(self):
        check_params(self.max_segments, self.packet_size, self.per_hop_latency_s,
                     self.min_sizes_per_segment, self.huber_c)

    def _fit_hops(self, x, y, hops):
        """Fixed-effects estimate of the per-hop latency, then refer times to ref_hops."""
        self.hop_counts_ = None
        self.per_hop_latency_s_ = float(self.per_hop_latency_s)
        self.per_hop_fitted_ = False
        if hops is None:
            return y
        hops = np.asarray(hops, dtype=float).ravel()
        if hops.size != y.size or not np.all(np.isfinite(hops)) or np.any(hops < 0):
            raise CcmodInputError("hops must be one count >= 0 per sample", source="--hops")
        distinct = np.unique(hops)
        self.hop_counts_ = distinct.astype(int).tolist()
        if distinct.size >= 2:
            # within each size, regress time on hops (sizes differ in mean time, so only
            # the within-size variation identifies the per-hop term); relative weights
            # make the small sizes, where latency dominates, count most
            u, inv = np.unique(x, return_inverse=True)
            w = 1.0 / np.square(y)
            sw = np.bincount(inv, w)
            hbar = np.bincount(inv, w * hops) / sw
            ybar = np.bincount(inv, w * y) / sw
            dh = hops - hbar[inv]
            den = float(np.sum(w * dh * dh))
            if den <= 0:
                raise CcmodInputError("no message size was measured at two hop counts, the "
                                      "per-hop latency cannot be fitted", source="--hops",
                                      hint="measure the same sizes on each route, or give "
                                           "--per-hop-latency")
            p = float(np.sum(w * dh * (y - ybar[inv])) / den)
            self.per_hop_fitted_ = True
            self.per_hop_latency_s_ = max(p, 0.0)
            self.per_hop_raw_s_ = p
        y = y - self.per_hop_latency_s_ * (hops - self.ref_hops)
        if np.any(y <= 0):
            raise CcmodInputError("removing the per-hop latency leaves times <= 0",
                                  source="--per-hop-latency", hint="it is too large")
        return y

    def _segments(self, stats):
        mode = self.breakpoints
        explicit = not (mode is None or (isinstance(mode, str) and mode in ("auto", "none")))
        if self.packet_size is not None:
            if explicit:
                raise CcmodInputError("give either --packet-size or explicit --breakpoints",
                                      source="--packet-size")
            return fixed_segments(stats, [0, int(self.packet_size) + 1], self.min_sizes_per_segment)
        if isinstance(mode, str) and mode == "auto":
            seg = choose_segments(stats, self.max_segments, self.min_sizes_per_segment)
            return seg
        if mode is None or (isinstance(mode, str) and mode == "none"):
            return fixed_segments(stats, [0], self.min_sizes_per_segment)
        if isinstance(mode, str):
            raise CcmodInputError(f"breakpoints must be 'auto', 'none' or sizes, got '{mode}'",
                                  source="--breakpoints")
        mins = sorted({0, *(int(b) for b in mode)})
        if any(b < 0 for b in mins):
            raise CcmodInputError("breakpoints must be >= 0 bytes", source="--breakpoints")
        return fixed_segments(stats, mins, self.min_sizes_per_segment)

    def _store(self, stats, seg, coef):
        lat, bw = coef.to_physical(stats)
        self.min_bytes_ = seg.min_bytes.astype(np.int64)
        self.breakpoints_ = self.min_bytes_[1:]
        self.latency_s_ = lat
        self.bandwidth_Bps_ = bw
        self.n_segments_ = int(lat.size)
        self.bic_ = float(seg.bic)
        self.bic_by_segments_ = dict(seg.bic_by_k)
        self.cost_ = self._make_cost()
        u = stats.u
        self.sizes_ = u
        self.counts_ = stats.counts
        self.center_s_ = stats.ybar * stats.T
        self.predicted_s_ = self.cost_.quiet_s(u)
        self.segment_of_size_ = seg.index_of_size
        self.segment_sizes_ = [(int(u[i0]), int(u[i1 - 1]), int(i1 - i0),
                                int(stats.counts[i0:i1].sum())) for i0, i1 in seg.ranges()]
        c = self.center_s_
        rel = (self.predicted_s_ - c) / c
        self.rel_err_ = rel
        self.median_rel_err_ = float(np.median(np.abs(rel)))
        self.max_rel_err_ = float(np.max(np.abs(rel)))
        ss = float(np.sum((c - c.mean()) ** 2))
        self.r2_ = float(1.0 - np.sum((c - self.predicted_s_) ** 2) / ss) if ss > 0 else math.nan
        loo = loo_predictions(stats, seg, coef) * stats.T
        self.loo_rel_err_ = (loo - c) / c
        cv = np.abs(self.loo_rel_err_[np.isfinite(self.loo_rel_err_)])
        self.cv_median_rel_err_ = float(np.median(cv)) if cv.size else math.nan
        self.cv_max_rel_err_ = float(np.max(cv)) if cv.size else math.nan
        self.poor_fit_ = bool(self.median_rel_err_ > self.poor_fit_threshold)
        self.spread_ = stats.spread()
        if not self.predicted_s_[-1] > self.predicted_s_[0] * (1 + 1e-6):
            raise CcmodInputError("the measured times do not grow with the message size: no "
                                  "bandwidth can be fitted", hint="check the size and time "
                                  "columns (--size-col/--time-col) and the input format")

    def _make_cost(self, source=None, extra=None):
        return PiecewiseLinearCost(self.min_bytes_, self.latency_s_, self.bandwidth_Bps_,
                                   ref_hops=self.ref_hops, per_hop_latency_s=self.per_hop_latency_s_,
                                   packet_size=None if self.packet_size is None
                                   else int(self.packet_size), source=source, extra=extra)

    # ------------------------------------------------------------------ using the fit
    def _fitted(self):
        if not hasattr(self, "cost_"):
            from sklearn.exceptions import NotFittedError
            raise NotFittedError("PiecewiseLinearFit is not fitted yet: call fit() or load()")

    def predict(self, X, hops=None):
        """One-way time in seconds of messages of ``X`` bytes (on ``hops`` resources)."""
        self._fitted()
        return self.cost_.quiet_s(_as_sizes(X), hops=hops)

    def predict_inverse(self, t_s, hops=None):
        """Largest message size (bytes, float) whose one-way time is <= ``t_s`` seconds.

        The exact inverse of the monotone model (0 below the smallest latency).
        """
        self._fitted()
        t = np.asarray(t_s, dtype=float)
        if hops is not None and self.per_hop_latency_s_:
            t = t - self.per_hop_latency_s_ * (np.asarray(hops, float) - self.ref_hops)
        lo = self.min_bytes_.astype(float)
        hi = np.append(lo[1:], np.inf)
        tt = t[..., None]
        start_t = self.latency_s_ + lo / self.bandwidth_Bps_
        n = np.minimum((tt - self.latency_s_) * self.bandwidth_Bps_, hi)
        n = np.where(start_t <= tt, n, 0.0)
        return np.maximum(n.max(axis=-1), 0.0)

    def bytes_moved(self, nbytes, quiet_total_s, quiet_elapsed_s):
        """CCMOD's T2Pack (bytes delivered after some quiet time), as the engine uses it."""
        self._fitted()
        return self.cost_.bytes_moved(nbytes, quiet_total_s, quiet_elapsed_s)

    def to_cost_model(self, source=None, extra=None) -> PiecewiseLinearCost:
        """The fitted model as a :class:`PiecewiseLinearCost` with a ``"fit"`` summary."""
        self._fitted()
        ext = {"fit": self.fit_summary()}
        ext.update(extra or {})
        return self._make_cost(source=source, extra=ext)

    def fit_summary(self) -> dict:
        """JSON-ready diagnostics: parameters, per-segment ranges, errors."""
        self._fitted()
        segs = []
        for k in range(self.latency_s_.size):
            d = {"min_bytes": int(self.min_bytes_[k]),
                 "max_bytes": None if k + 1 == self.min_bytes_.size else int(self.min_bytes_[k + 1]),
                 "latency_s": float(self.latency_s_[k]),
                 "bandwidth_Bps": float(self.bandwidth_Bps_[k])}
            if getattr(self, "segment_sizes_", None):
                lo, hi, nsz, nsamp = self.segment_sizes_[k]
                d.update(measured_min_bytes=lo, measured_max_bytes=hi, n_sizes=nsz,
                         n_samples=nsamp)
            segs.append(d)
        params = {k: (list(map(int, v)) if isinstance(v, (list, tuple, np.ndarray)) else v)
                  for k, v in self.get_params().items()}
        out = {"method": "piecewise-linear, weighted least squares on relative error"
                         + (", Huber IRLS" if self.robust else "") + ", monotone",
               "params": params, "n_segments": int(self.latency_s_.size), "segments": segs,
               "per_hop_latency_fitted": bool(getattr(self, "per_hop_fitted_", False)),
               "monotone": True}
        for key in ("r2", "median_rel_err", "max_rel_err", "cv_median_rel_err", "cv_max_rel_err",
                    "bic"):
            v = getattr(self, key + "_", None)
            if v is not None:
                out[key] = None if not math.isfinite(v) else float(v)
        if hasattr(self, "poor_fit_"):
            out["poor_fit"] = bool(self.poor_fit_)
        if getattr(self, "sizes_", None) is not None:
            out["n_sizes"] = int(self.sizes_.size)
            out["n_samples"] = int(np.sum(self.counts_))
        return out

    def save(self, path, source=None, extra=None) -> None:
        """Write the documented JSON cost-model file (see netsys/cost.py); no pickle."""
        self.to_cost_model(source=source, extra=extra).save(path)

    @classmethod
    def load(cls, path) -> "PiecewiseLinearFit":
        """Read a cost-model JSON file back into a fitted estimator (predictions identical)."""
        cost = PiecewiseLinearCost.load(path)
        fit = cost.extra.get("fit") if isinstance(cost.extra.get("fit"), dict) else {}
        params = fit.get("params") if isinstance(fit.get("params"), dict) else {}
        valid = cls().get_params()
        est = cls(**{k: v for k, v in params.items() if k in valid})
        est.ref_hops = cost.ref_hops
        est.min_bytes_ = cost.min_bytes.astype(np.int64)
        est.breakpoints_ = est.min_bytes_[1:]
        est.latency_s_ = cost.seg_latency_s.copy()
        est.bandwidth_Bps_ = cost.seg_bandwidth_Bps.copy()
        est.per_hop_latency_s_ = cost.per_hop_latency_s
        est.per_hop_fitted_ = bool(fit.get("per_hop_latency_fitted", False))
        est.n_segments_ = int(est.latency_s_.size)
        est.n_features_in_ = 1
        for key in ("r2", "median_rel_err", "max_rel_err", "cv_median_rel_err", "cv_max_rel_err",
                    "bic"):
            if isinstance(fit.get(key), (int, float)):
                setattr(est, key + "_", float(fit[key]))
        if "poor_fit" in fit:
            est.poor_fit_ = bool(fit["poor_fit"])
        est.cost_ = cost
        return est

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.one_d_array = True
        return tags


def _as_sizes(X, whole: bool = False) -> np.ndarray:
    x = np.asarray(X, dtype=float)
    if x.ndim == 2:
        if x.shape[1] != 1:
            raise CcmodInputError(f"X must hold one feature (message size), got {x.shape[1]}")
        x = x[:, 0]
    elif x.ndim > 2:
        raise CcmodInputError("X must be 1-D sizes or a (n, 1) column")
    x = x.ravel()
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise CcmodInputError("message sizes must be finite and >= 0 bytes")
    if whole and np.any(x != np.floor(x)):
        raise CcmodInputError("message sizes must be whole numbers of bytes")
    return x


__all__ = ["PiecewiseLinearFit"]
