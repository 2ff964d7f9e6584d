"""Link utilisation derived from the messages and their compiled routes (core, numpy only).

The engine reports *contention* (the number of active messages) per piecewise-constant
interval of each resource. Utilisation needs bytes, so it is rebuilt here from the
messages with one documented approximation:

    each message's bytes are spread uniformly over its transfer interval
    ``[t_start_s, t_end_s]`` on every resource of its route,

i.e. the message contributes a rate ``nbytes / (t_end_s - t_start_s)`` to each resource
it crosses. The utilisation of a resource over an interval ``[a, b]`` is the time-average
of the summed rates divided by the resource capacity (``Network.capacity_Bps``).
Because a message's real rate varies (it shares links with others during part of its
transfer), the uniform spread can over-fill a short interval; the utilisation of an
interval is clipped to ``1 - background`` (what the background leaves to the application), so
per-interval values are exact only when the set of messages on the link is constant over
their transfers; byte totals (``links.parquet``) are exact. Background load is *not*
included (it is reported separately as a fraction); the total
occupancy of a link is ``utilisation + background``. Messages of zero duration and
intra-node messages (empty routes) contribute nothing.
"""
from __future__ import annotations

import numpy as np


def route_intervals(route_ptr, route_res, nbytes, t_start_s, t_end_s):
    """Expand messages to one row per (message, route resource), from the compiled routes.

    Parameters
    ----------
    route_ptr, route_res : int arrays
        The run's route CSR (``RunResult.routes``): message i uses
        ``route_res[route_ptr[i]:route_ptr[i + 1]]``. Routes are compiled once, by the
        engine; nothing here recompiles them.
    nbytes, t_start_s, t_end_s : arrays
        Message sizes and transfer intervals.

    Returns
    -------
    msg, resource, t0, t1, rate_Bps : arrays
        One row per (message, resource) of messages with a positive duration.
    """
    ptr = np.asarray(route_ptr, np.int64)
    res_all = np.asarray(route_res, np.int64)
    t0 = np.asarray(t_start_s, np.float64)
    t1 = np.asarray(t_end_s, np.float64)
    counts = np.diff(ptr)
    msg = np.repeat(np.arange(len(counts)), counts)
    res = res_all[: int(ptr[-1])] if len(ptr) else np.zeros(0, np.int64)
    keep = t1[msg] > t0[msg]
    msg, res = msg[keep], res[keep]
    a, b = t0[msg], t1[msg]
    rate = np.asarray(nbytes, np.float64)[msg] / (b - a)
    return msg, res, a, b, rate


class RateProfile:
    """Piecewise-constant summed rate per resource, with its prefix integral.

    Built from (resource, t0, t1, rate) rows; answers the mean rate of a resource over
    any interval in O(log n) per query, vectorised.
    """

    def __init__(self, res, t0, t1, rate):
        res = np.asarray(res, np.int64)
        n = len(res)
        r = np.concatenate([res, res])
        t = np.concatenate([np.asarray(t0, np.float64), np.asarray(t1, np.float64)])
        d = np.concatenate([np.asarray(rate, np.float64), -np.asarray(rate, np.float64)])
        order = np.lexsort((t, r))
        r, t, d = r[order], t[order], d[order]
        self.res, self.t = r, t
        if 2 * n == 0:
            self.rate_after = np.zeros(0)
            self.integral = np.zeros(0)
            self.keys = np.zeros(0, np.complex128)
            return
        seg_start = np.r_[True, r[1:] != r[:-1]]
        seg_id = np.cumsum(seg_start) - 1
        starts = np.nonzero(seg_start)[0]
        # segment-local cumulative sums: subtract the running total before the segment
        cs = np.cumsum(d)
        base = np.r_[0.0, cs][starts][seg_id]
        rate_after = cs - base
        rate_after[np.abs(rate_after) < 1e-9 * np.abs(d).max()] = 0.0
        rate_after = np.maximum(rate_after, 0.0)
        same_next = np.r_[r[1:] == r[:-1], False]
        dt = np.where(same_next, np.r_[t[1:], 0.0] - t, 0.0)
        contrib = rate_after * dt
        excl = np.r_[0.0, np.cumsum(contrib)[:-1]]   # exclusive prefix (no cancellation)
        base2 = excl[starts][seg_id]
        self.rate_after = rate_after
        self.integral = excl - base2  # ∫ rate from the segment's first event to t[j]
        self.keys = r.astype(np.float64) + 1j * t

    def _locate(self, res, t):
        res = np.asarray(res, np.int64)
        t = np.asarray(t, np.float64)
        if len(self.keys) == 0:
            return np.full(len(res), -1), res, t
        j = np.searchsorted(self.keys, res.astype(np.float64) + 1j * t, side="right") - 1
        valid = (j >= 0)
        jj = np.maximum(j, 0)
        valid &= self.res[jj] == res
        return np.where(valid, jj, -1), res, t

    def integral_to(self, res, t) -> np.ndarray:
        """∫₀ᵗ rate(res) dt (bytes that crossed ``res`` before ``t``)."""
        j, res, t = self._locate(res, t)
        ok = j >= 0
        out = np.zeros(len(t))
        jj = j[ok]
        out[ok] = self.integral[jj] + self.rate_after[jj] * (t[ok] - self.t[jj])
        return out

    def rate_at(self, res, t) -> np.ndarray:
        """Summed rate (B/s) on ``res`` just after time ``t``."""
        j, res, t = self._locate(res, t)
        out = np.zeros(len(t))
        ok = j >= 0
        out[ok] = self.rate_after[j[ok]]
        return out

    def mean_rate(self, res, t0, t1) -> np.ndarray:
        """Mean summed rate over ``[t0, t1]`` (the rate at ``t0`` for empty intervals)."""
        t0 = np.asarray(t0, np.float64)
        t1 = np.asarray(t1, np.float64)
        dur = t1 - t0
        out = self.rate_at(res, t0)
        pos = dur > 0
        if pos.any():
            r = np.asarray(res, np.int64)[pos]
            out[pos] = (self.integral_to(r, t1[pos]) - self.integral_to(r, t0[pos])) / dur[pos]
        return np.maximum(out, 0.0)


def link_utilisation(routes, messages, load_res, load_t0, load_t1, capacity_Bps,
                     background=None):
    """Utilisation (fraction of capacity, background excluded) of each contention interval.

    Each message's bytes are spread uniformly over its transfer on every resource of its
    route; the summed rate's mean over an interval, divided by the capacity, is clipped to
    what the background leaves (``1 - background``): the uniform spread can over-fill
    short intervals.
    """
    _, res, a, b, rate = route_intervals(routes.ptr, routes.res, messages["nbytes"],
                                         messages["t_start_s"], messages["t_end_s"])
    prof = RateProfile(res, a, b, rate)
    load_res = np.asarray(load_res, np.int64)
    cap = np.asarray(capacity_Bps, np.float64)[load_res]
    with np.errstate(divide="ignore", invalid="ignore"):
        util = prof.mean_rate(load_res, load_t0, load_t1) / cap
    room = 1.0 if background is None else np.clip(1.0 - np.asarray(background), 0.0, 1.0)
    return np.minimum(util, room)
