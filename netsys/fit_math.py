"""Numerics of :class:`netsys.fit.PiecewiseLinearFit`: per-size sufficient statistics,
closed-form constrained segment fits, breakpoint search and the monotone joint fit.

Units inside: sizes scaled by the largest size ``X`` and times by the median time ``T`` so
every quantity is O(1); each segment is solved in its own size scale (its largest size),
because a 0..64 B segment and a 1..4 MiB one differ by 10^5 in slope.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ccmod.errors import CcmodInputError

#: smallest slope, relative to (largest time)/(largest size): keeps bandwidth_Bps finite
#: for flat segments while the inverse (bytes from time) stays accurate to ~0.01 byte
SLOPE_FLOOR = 1e-7
#: BIC floor on the mean squared relative error (measurement resolution)
RSS_FLOOR = 1e-10


def check_params(max_segments=4, packet_size=None, per_hop_latency_s=0.0,
                 min_sizes_per_segment=2, huber_c=1.345) -> None:
    """Check a fit's parameters (:class:`netsys.fit.PiecewiseLinearFit`'s), naming the option.

    Here, not in ``netsys.fit``: ``ccmod fit`` checks its options before it reads the inputs
    and imports scikit-learn (~1-2 s), so a bad one fails at once.
    """
    if not (isinstance(max_segments, (int, np.integer)) and max_segments >= 1):
        raise CcmodInputError(f"max_segments must be an integer >= 1, got {max_segments!r}",
                              source="--max-segments")
    if not (isinstance(min_sizes_per_segment, (int, np.integer)) and min_sizes_per_segment >= 2):
        raise CcmodInputError("min_sizes_per_segment must be >= 2")
    if packet_size is not None and not (float(packet_size) >= 0):
        raise CcmodInputError(f"packet size must be >= 0, got {packet_size}",
                              source="--packet-size")
    if not (np.isfinite(per_hop_latency_s) and per_hop_latency_s >= 0):
        raise CcmodInputError("per-hop latency must be >= 0 seconds", source="--per-hop-latency")
    if not (huber_c > 0):
        raise CcmodInputError("huber_c must be > 0")


class SizeStats:
    """Samples grouped by distinct size, with the relative-error weights.

    Sample ``j`` of size ``s`` gets weight ``sw_j * h_j / (n_s * ref_s**2)`` where ``ref_s``
    is the reference time of the size (its median, or the prediction when larger: see
    :meth:`netsys.fit.PiecewiseLinearFit.fit`), ``n_s`` its sample count and ``h_j`` the
    robust (Huber) weight; the fit then works on per-size weighted means ``ybar``.
    """

    def __init__(self, x, y, sw):
        self.u, self.inv, self.counts = np.unique(x, return_inverse=True, return_counts=True)
        self.inv = self.inv.ravel()
        self.nsizes = int(self.u.size)
        order = np.lexsort((y, self.inv))
        self._sorted = y[order]
        self._starts = np.concatenate(([0], np.cumsum(self.counts)[:-1]))
        tref = self._quantile(0.5)
        self.T = float(np.median(tref))
        self.Tmax = float(np.max(tref))
        self.X = float(self.u[-1]) if self.u[-1] > 0 else 1.0
        self.us = self.u / self.X
        self.xs = x / self.X
        self.ys = y / self.T
        self.tref_scaled = tref / self.T
        self.sw = sw
        self.reweight(np.ones_like(y), self.tref_scaled)

    def reweight(self, h, ref):
        """Per-size weight ``W`` and weighted mean ``ybar``.

        ``h``: robust weight per sample; ``ref``: per-size reference time (units of T)
        that the residuals are divided by.
        """
        self.ref = ref
        self.ref_per_sample = ref[self.inv]
        w = self.sw * h / (self.counts[self.inv] * np.square(self.ref_per_sample))
        W = np.bincount(self.inv, w, minlength=self.nsizes)
        Wy = np.bincount(self.inv, w * self.ys, minlength=self.nsizes)
        if np.any(W <= 0):
            raise CcmodInputError("every measured size needs a positive sample weight")
        self.W = W
        self.ybar = Wy / W
        x, y = self.us, self.ybar
        cols = np.stack([W, W * x, W * y, W * x * x, W * x * y, W * y * y])
        self.prefix = np.concatenate((np.zeros((6, 1)), np.cumsum(cols, axis=1)), axis=1)

    def sums(self, i0, i1):
        """Sufficient statistics (Sw, Sx, Sy, Sxx, Sxy, Syy) of sizes ``i0 .. i1-1``."""
        return self.prefix[:, i1] - self.prefix[:, i0]

    def _quantile(self, q):
        pos = self._starts + q * (self.counts - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.ceil(pos).astype(np.int64)
        f = pos - lo
        return self._sorted[lo] * (1 - f) + self._sorted[hi] * f

    def spread(self) -> dict:
        """Per-size spread of the samples (seconds): n, min, p10, median, p90, max, std."""
        mean = np.bincount(self.inv, self.ys * self.T, minlength=self.nsizes) / self.counts
        d = self.ys * self.T - mean[self.inv]
        var = np.bincount(self.inv, d * d, minlength=self.nsizes) / np.maximum(self.counts - 1, 1)
        return {"n": self.counts, "min_s": self._quantile(0.0), "p10_s": self._quantile(0.1),
                "median_s": self._quantile(0.5), "p90_s": self._quantile(0.9),
                "max_s": self._quantile(1.0), "mean_s": mean,
                "std_s": np.where(self.counts > 1, np.sqrt(var), 0.0)}


def segment_solve(Sw, Sx, Sy, Sxx, Sxy, Syy, L=1.0):
    """Weighted least-squares line ``y = a + b x`` with ``a >= 0, b >= 0`` (vectorised).

    ``L`` rescales x inside (x/L) for conditioning; returned ``b`` is in the caller's x
    units. The constrained optimum of a 2-D convex quadratic on the quadrant is the
    unconstrained one if feasible, else the better of the two edge optima.

    Returns
    -------
    a, b, sse : ndarray
    """
    Sx, Sxx, Sxy = Sx / L, Sxx / (L * L), Sxy / L
    with np.errstate(divide="ignore", invalid="ignore"):
        det = Sw * Sxx - Sx * Sx
        bu = (Sw * Sxy - Sx * Sy) / det
        au = (Sy - bu * Sx) / Sw
        ok = (det > 1e-12 * Sw * Sxx) & (au >= 0) & (bu >= 0)
        a2 = Sy / Sw                       # b = 0 edge
        b3 = np.where(Sxx > 0, Sxy / Sxx, 0.0)   # a = 0 edge

    def sse(a, b):
        return Syy - 2 * a * Sy - 2 * b * Sxy + a * a * Sw + 2 * a * b * Sx + b * b * Sxx

    with np.errstate(invalid="ignore", over="ignore"):
        s_u, s2, s3 = sse(au, bu), sse(a2, 0.0), sse(0.0, b3)
    use2 = s2 <= s3
    a = np.where(ok, au, np.where(use2, a2, 0.0))
    b = np.where(ok, bu, np.where(use2, 0.0, b3))
    s = np.where(ok, s_u, np.where(use2, s2, s3))
    return a, b / L, np.maximum(s, 0.0)


@dataclass
class Segmentation:
    """Segments as index ranges over the distinct sizes, plus their ``min_bytes``."""

    starts: np.ndarray            # index of the first size of each segment (starts[0] = 0)
    nsizes: int
    min_bytes: np.ndarray         # float, min_bytes[0] = 0
    bic: float = float("nan")
    bic_by_k: dict = field(default_factory=dict)

    def ranges(self):
        ends = np.append(self.starts[1:], self.nsizes)
        return list(zip(self.starts.tolist(), ends.tolist()))

    @property
    def index_of_size(self):
        idx = np.zeros(self.nsizes, np.int64)
        for k, (i0, i1) in enumerate(self.ranges()):
            idx[i0:i1] = k
        return idx


def _bic(rss, total_w, nsizes, k):
    return nsizes * np.log(max(rss / total_w, RSS_FLOOR)) + (3 * k - 1) * np.log(nsizes)


def fixed_segments(stats: SizeStats, mins, min_sizes: int) -> Segmentation:
    """Segments starting at the given sizes (bytes); each needs ``min_sizes`` sizes."""
    mins = np.asarray(sorted(set(float(m) for m in mins)), float)
    if mins[0] != 0:
        mins = np.concatenate(([0.0], mins))
    starts = np.searchsorted(stats.u, mins, side="left")
    starts[0] = 0
    ends = np.append(starts[1:], stats.nsizes)
    for k, (i0, i1) in enumerate(zip(starts, ends)):
        hi = "inf" if k + 1 == mins.size else f"{int(mins[k + 1])}"
        if i1 - i0 < min_sizes:
            raise CcmodInputError(
                f"segment {k} [{int(mins[k])}, {hi}) B holds {i1 - i0} measured size(s) but a "
                f"line needs {min_sizes}: fewer points than parameters",
                source="--breakpoints", hint="use fewer breakpoints (or another --packet-size) "
                                             "or measure more sizes")
    rss = 0.0
    for i0, i1 in zip(starts, ends):
        L = stats.us[i1 - 1] or 1.0
        rss += float(segment_solve(*stats.sums(i0, i1), L=L)[2])
    bic = float(_bic(rss, stats.W.sum(), stats.nsizes, mins.size))
    return Segmentation(starts.astype(np.int64), stats.nsizes, mins, bic, {int(mins.size): bic})


#: the DP runs over at most this many log-spaced candidate breakpoints; each chosen
#: breakpoint is then refined over every measured size (exact for up to this many sizes)
MAX_CANDIDATES = 120


def _seg_cost(stats: SizeStats, i0, i1):
    """Constrained SSE of one line on sizes ``i0 .. i1-1`` (broadcasts over arrays)."""
    i0, i1 = np.broadcast_arrays(np.asarray(i0), np.asarray(i1))
    S = stats.prefix[:, i1] - stats.prefix[:, i0]
    L = stats.us[np.maximum(i1 - 1, 0)]
    return segment_solve(*S, L=np.where(L > 0, L, 1.0))[2]


def _candidates(stats: SizeStats, nmax: int) -> np.ndarray:
    U = stats.nsizes
    if U <= nmax:
        return np.arange(U)
    lo = stats.u[1] if stats.u[0] == 0 else stats.u[0]
    idx = np.searchsorted(stats.u, np.geomspace(max(lo, 1.0), stats.u[-1], nmax))
    return np.unique(np.concatenate(([0], np.clip(idx, 0, U - 1))))


def _refine(stats: SizeStats, starts: list[int], min_sizes: int) -> float:
    """Coordinate descent: move each breakpoint to its best position among all sizes."""
    U = stats.nsizes
    K = len(starts)
    for _ in range(2):
        for k in range(1, K):
            end = starts[k + 1] if k + 1 < K else U
            cand = np.arange(starts[k - 1] + min_sizes, end - min_sizes + 1)
            if cand.size == 0:
                continue
            cost = _seg_cost(stats, starts[k - 1], cand) + _seg_cost(stats, cand, end)
            starts[k] = int(cand[np.argmin(cost)])
    ends = starts[1:] + [U]
    return float(np.sum(_seg_cost(stats, np.array(starts), np.array(ends))))


def choose_segments(stats: SizeStats, max_segments: int, min_sizes: int) -> Segmentation:
    """Breakpoints between measured sizes by dynamic programming; segments by BIC.

    ``C[i, j]`` is the constrained weighted SSE of one line on candidate blocks ``i..j``;
    ``D_k[j] = min_i D_{k-1}[i-1] + C[i, j]`` (O(K M^2), M <= MAX_CANDIDATES log-spaced
    candidates), then every breakpoint is refined over all measured sizes. The number of
    segments minimises BIC = U ln(RSS / sum W) + (3K - 1) ln U over U distinct sizes.
    """
    U = stats.nsizes
    # BIC needs data left over: 3K - 1 parameters (2 per line + breakpoints) <= U - 2
    kmax = max(1, min(int(max_segments), U // min_sizes, (U - 1) // 3))
    cand = _candidates(stats, MAX_CANDIDATES)
    E = np.append(cand, U)
    M = cand.size
    i0 = E[:-1][:, None]
    i1 = E[1:][None, :]
    valid = (i1 - i0 >= min_sizes) & (np.arange(M)[None, :] >= np.arange(M)[:, None])
    C = np.where(valid, _seg_cost(stats, i0, i1), np.inf)
    total_w = float(stats.W.sum())
    layers, args = [C[0].copy()], []
    for _k in range(2, kmax + 1):
        c = layers[-1][:-1, None] + C[1:, :]
        arg = np.argmin(c, axis=0)
        layers.append(c[arg, np.arange(M)])
        args.append(arg + 1)
    best = None
    bics = {}
    for k in range(1, kmax + 1):
        if not np.isfinite(layers[k - 1][-1]):
            break
        blocks, jj = [0], M - 1
        for kk in range(k, 1, -1):
            b = int(args[kk - 2][jj])
            blocks.append(b)
            jj = b - 1
        starts = sorted(int(cand[b]) for b in blocks)
        rss = _refine(stats, starts, min_sizes)
        bic = float(_bic(rss, total_w, U, k))
        bics[k] = bic
        if best is None or bic < best[0] - 1e-9:
            best = (bic, starts)
    bic, starts = best
    starts = np.array(starts, np.int64)
    # a segment starts 1 byte after the largest measured size of the previous one (like
    # the article's "up to the packet size"): each line then only covers sizes up to its
    # own last measurement, which keeps the monotone constraint from biting on the
    # extrapolated gap between two measured sizes
    mins = np.floor(stats.u[np.maximum(starts - 1, 0)]) + 1.0
    mins[0] = 0.0
    return Segmentation(starts, U, mins, bic, bics)


@dataclass
class Coef:
    """Fitted intercepts ``a`` (units of T) and slopes ``b`` (units of T per X)."""

    a: np.ndarray
    b: np.ndarray
    min_scaled: np.ndarray

    def predict_scaled(self, xs):
        k = np.clip(np.searchsorted(self.min_scaled, xs, side="right") - 1, 0, self.a.size - 1)
        return self.a[k] + self.b[k] * xs

    def to_physical(self, stats: SizeStats):
        """(latency_s, bandwidth_Bps), slope floored and monotone at breakpoints exactly in
        the arithmetic ``PiecewiseLinearCost.quiet_s`` uses (``lat + n / bw``)."""
        lat = np.maximum(self.a, 0.0) * stats.T
        slope = np.maximum(self.b * stats.T / stats.X, SLOPE_FLOOR * stats.Tmax / stats.X)
        bw = 1.0 / slope
        mins = self.min_scaled * stats.X
        for k in range(1, lat.size):
            left = lat[k - 1] + mins[k] / bw[k - 1]
            right = lat[k] + mins[k] / bw[k]
            if right < left:
                lat[k] += left - right
                while lat[k] + mins[k] / bw[k] < left:
                    lat[k] = np.nextafter(lat[k], np.inf)
        return lat, bw


def joint_monotone_fit(stats: SizeStats, seg: Segmentation) -> Coef:
    """Least squares over all segments with ``a, b >= 0`` and no drop at any breakpoint.

    Segments are first solved independently (closed form); only if that drops at a
    breakpoint is the coupled quadratic program solved (SLSQP, each segment in its own
    size scale).
    """
    rng = seg.ranges()
    K = len(rng)
    sums = [stats.sums(i0, i1) for i0, i1 in rng]
    Ls = np.array([stats.us[i1 - 1] if stats.us[i1 - 1] > 0 else 1.0 for _, i1 in rng])
    mins = seg.min_bytes / stats.X
    a = np.empty(K)
    beta = np.empty(K)
    for k, s in enumerate(sums):
        ak, bk, _ = segment_solve(*s, L=Ls[k])
        a[k], beta[k] = float(ak), float(bk) * Ls[k]
    gap = _gaps(a, beta, Ls, mins)
    if K > 1 and np.any(gap < -1e-12 * np.maximum(1.0, np.abs(a[1:]))):
        a, beta = _qp(sums, Ls, mins, a, beta)
    return Coef(a, beta / Ls, mins)


def _gaps(a, beta, Ls, mins):
    k = np.arange(1, a.size)
    return a[k] + beta[k] * mins[k] / Ls[k] - a[k - 1] - beta[k - 1] * mins[k] / Ls[k - 1]


def _qp(sums, Ls, mins, a0, b0):
    from scipy.optimize import minimize

    K = len(sums)
    H = np.zeros((2 * K, 2 * K))
    g = np.zeros(2 * K)
    for k, (Sw, Sx, Sy, Sxx, Sxy, _) in enumerate(sums):
        L = Ls[k]
        H[2 * k:2 * k + 2, 2 * k:2 * k + 2] = [[Sw, Sx / L], [Sx / L, Sxx / (L * L)]]
        g[2 * k:2 * k + 2] = [Sy, Sxy / L]
    norm = max(float(np.trace(H)), 1e-300)
    H /= norm
    g /= norm
    G = np.zeros((K - 1, 2 * K))
    for k in range(1, K):
        G[k - 1, 2 * k] = 1.0
        G[k - 1, 2 * k + 1] = mins[k] / Ls[k]
        G[k - 1, 2 * k - 2] = -1.0
        G[k - 1, 2 * k - 1] = -mins[k] / Ls[k - 1]
    z0 = np.empty(2 * K)
    z0[0::2], z0[1::2] = a0, b0
    res = minimize(lambda z: 0.5 * z @ H @ z - g @ z, z0, jac=lambda z: H @ z - g,
                   method="SLSQP", bounds=[(0.0, None)] * (2 * K),
                   constraints=[{"type": "ineq", "fun": lambda z: G @ z, "jac": lambda z: G}],
                   options={"ftol": 1e-15, "maxiter": 500})
    z = res.x if np.all(np.isfinite(res.x)) else z0
    z = np.maximum(z, 0.0)
    return z[0::2].copy(), z[1::2].copy()


def loo_predictions(stats: SizeStats, seg: Segmentation, coef: Coef) -> np.ndarray:
    """Leave-one-size-out predictions (units of T), breakpoints kept.

    Each size is predicted by its segment refitted without it (closed form with
    ``a, b >= 0``); sizes of a segment of only 2 sizes get NaN (one point left: no line).
    """
    U = stats.nsizes
    out = np.empty(U)
    own = np.stack([stats.W, stats.W * stats.us, stats.W * stats.ybar,
                    stats.W * stats.us ** 2, stats.W * stats.us * stats.ybar,
                    stats.W * stats.ybar ** 2])
    for k, (i0, i1) in enumerate(seg.ranges()):
        s = stats.sums(i0, i1)[:, None] - own[:, i0:i1]
        L = stats.us[i1 - 1] or 1.0
        a, b, _ = segment_solve(*s, L=L)
        if i1 - i0 <= 2:
            # one size left: a line is not identified, so the size is not cross-validated
            out[i0:i1] = np.nan
            continue
        out[i0:i1] = a + b * stats.us[i0:i1]
    return out
