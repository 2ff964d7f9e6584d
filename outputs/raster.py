"""Vectorised binning of intervals onto a (row × time-column) grid for the report figures.

A run with millions of intervals is drawn as an image whose pixel columns each hold the
*time-weighted* share of every category, so the cost is O(intervals) and the picture does
not depend on how many intervals hide behind a pixel.
"""
from __future__ import annotations

import numpy as np


def interval_coverage(row, cat, t0, t1, nrows: int, ncats: int, ncols: int, t_end: float,
                      weight=None, mode: str = "sum") -> np.ndarray:
    """Time-weighted coverage of intervals per (row, category, column).

    Parameters
    ----------
    row, cat : int arrays
        Row (e.g. rank or rank group) and category (e.g. state) of each interval.
    t0, t1 : float arrays
        Interval bounds in seconds; clipped to ``[0, t_end]``.
    nrows, ncats, ncols : int
        Grid shape; the time axis ``[0, t_end]`` is cut into ``ncols`` equal columns.
    weight : float array, optional
        Value carried by each interval (e.g. contention); 1 by default.
    mode : {"sum", "max"}
        ``"max"``: the largest weight of the intervals touching each column (weights must
        be >= 0 and the intervals of one (row, category) must not overlap, as for the
        piecewise-constant link load) — short bursts stay visible in a long run.

    Returns
    -------
    ndarray float64 (nrows, ncats, ncols)
        Sum over intervals of ``weight × (covered fraction of the column)``; with weight 1
        and non-overlapping intervals per row it is the share of the column's time.
    """
    out_shape = (nrows, ncats, ncols)
    if t_end <= 0 or len(row) == 0 or ncols <= 0:
        return np.zeros(out_shape)
    row = np.asarray(row, np.int64)
    cat = np.asarray(cat, np.int64)
    scale = ncols / float(t_end)
    x0 = np.clip(np.asarray(t0, np.float64) * scale, 0, ncols)
    x1 = np.clip(np.asarray(t1, np.float64) * scale, 0, ncols)
    w = np.ones(len(row)) if weight is None else np.asarray(weight, np.float64)
    ok = (x1 > x0) & (row >= 0) & (row < nrows) & (cat >= 0) & (cat < ncats) & (w != 0)
    row, cat, x0, x1, w = row[ok], cat[ok], x0[ok], x1[ok], w[ok]
    c0 = np.minimum(np.floor(x0).astype(np.int64), ncols - 1)
    c1 = np.minimum(np.floor(x1).astype(np.int64), ncols - 1)
    base = (row * ncats + cat) * (ncols + 1)
    size = nrows * ncats * (ncols + 1)
    one = c0 == c1
    # partial columns: inside one column, or the first and last column of a long interval
    idx = np.concatenate([base[one] + c0[one], base[~one] + c0[~one], base[~one] + c1[~one]])
    val = np.concatenate([(x1 - x0)[one] * w[one], (c0[~one] + 1 - x0[~one]) * w[~one],
                          (x1[~one] - c1[~one]) * w[~one]])
    if mode == "max":
        # last column actually touched: an interval ending on a column edge stops before it
        c1 = np.maximum(np.where(x1 == np.floor(x1), np.ceil(x1) - 1, c1).astype(np.int64), c0)
        c1 = np.minimum(c1, ncols - 1)
        grid = np.zeros(size)
        np.maximum.at(grid, np.concatenate([base + c0, base + c1]), np.concatenate([w, w]))
        long_ = c1 > c0 + 1
        if long_.any():
            # a fully covered column holds exactly one interval: its weight is the value
            didx = np.concatenate([base[long_] + c0[long_] + 1, base[long_] + c1[long_]])
            dval = np.concatenate([w[long_], -w[long_]])
            full = np.cumsum(np.bincount(didx, weights=dval, minlength=size)
                             .reshape(nrows, ncats, ncols + 1), axis=2).reshape(-1)
            grid = np.maximum(grid, full)
        return grid.reshape(nrows, ncats, ncols + 1)[:, :, :ncols]
    partial = np.bincount(idx, weights=val, minlength=size)
    # full columns strictly between c0 and c1: a difference array, then a cumulative sum
    long_ = ~one & (c1 > c0 + 1)
    didx = np.concatenate([base[long_] + c0[long_] + 1, base[long_] + c1[long_]])
    dval = np.concatenate([w[long_], -w[long_]])
    diff = np.bincount(didx, weights=dval, minlength=size).reshape(nrows, ncats, ncols + 1)
    full = np.cumsum(diff, axis=2)
    cov = partial.reshape(nrows, ncats, ncols + 1) + full
    return cov[:, :, :ncols]


def group_rows(index, n: int, max_rows: int) -> tuple[np.ndarray, int, int]:
    """Map ``index`` (0..n-1) to at most ``max_rows`` groups of consecutive indices.

    Returns
    -------
    rows : int array, nrows : int, group_size : int
    """
    index = np.asarray(index, np.int64)
    if n <= max_rows:
        return index, max(n, 1), 1
    size = -(-n // max_rows)
    return index // size, -(-n // size), size


def even_sample(n: int, limit: int, key=None) -> np.ndarray:
    """At most ``limit`` indices of ``n`` rows, evenly spaced in ``key`` order (deterministic)."""
    order = np.arange(n) if key is None else np.argsort(np.asarray(key), kind="stable")
    if n <= limit:
        return order
    pick = np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))
    return order[pick]
