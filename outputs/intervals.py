"""Rank-state intervals: sanitising (one state at a time per rank) and idle filling.

Everything works on numpy arrays (no per-record Python loops), so a 1M-message run stays
cheap.
"""
from __future__ import annotations

import numpy as np

from ccmod.outputs.base import ALL_STATE_NAMES, STATE_IDLE
from ccmod.outputs.timebase import check_ns_range


def state_codes(state) -> np.ndarray:
    """A state column as integer codes (a Categorical's codes, or names mapped)."""
    if hasattr(state, "cat"):
        codes = state.cat.codes.to_numpy().astype(np.int64)
        cats = list(state.cat.categories)
        if cats == list(ALL_STATE_NAMES[:len(cats)]):
            return codes
        lut = np.array([ALL_STATE_NAMES.index(c) for c in cats], np.int64)
        return lut[codes]
    state = np.asarray(state)
    if state.dtype.kind in "iu":
        return state.astype(np.int64)
    lut = {n: i for i, n in enumerate(ALL_STATE_NAMES)}
    return np.asarray([lut[str(s)] for s in state], np.int64)


def sanitize_states(rank, state, t0, t1):
    """Sort state intervals per rank and make them sequential (no overlap).

    An interval starting before the previous one of the same rank ended is clipped to
    start at that end; intervals left empty (also zero-length ones) are dropped. Viewers
    (Paraver, Perfetto) need one state at a time per rank, and the engine emits them
    sequential anyway: this only guards against rounding noise.

    Returns
    -------
    rank, state, t0, t1 : arrays sorted by (rank, t0)
    """
    rank = np.asarray(rank, np.int64)
    state = np.asarray(state, np.int64)
    t0 = np.asarray(t0, np.float64)
    t1 = np.asarray(t1, np.float64)
    if len(rank) == 0:
        return rank, state, t0, t1
    order = np.lexsort((t1, t0, rank))
    rank, state, t0, t1 = rank[order], state[order], t0[order], t1[order]
    # running maximum of the end time within each rank (shifted by one)
    prev_end = _segmented_running_max_prev(rank, t1)
    t0 = np.maximum(t0, prev_end)
    keep = t1 > t0
    return rank[keep], state[keep], t0[keep], t1[keep]


def _segmented_running_max_prev(group, values):
    """For ``group``-sorted rows: max of ``values`` over the earlier rows of the same group.

    Exact (returns elements of ``values``): the running maximum is taken on an integer
    key (group offset + value in ns) only to find *which* row holds it.
    """
    n = len(values)
    out = np.full(n, -np.inf)
    if n <= 1:
        return out
    starts = np.r_[True, group[1:] != group[:-1]]
    gid = np.cumsum(starts) - 1
    vmin = float(values.min())
    check_ns_range(values - vmin)
    v_ns = np.rint((values - vmin) * 1e9).astype(np.int64)
    span = int(v_ns.max()) + 1
    if int(gid[-1]) * span < 2 ** 62:
        key = gid * span + v_ns
        run = np.maximum.accumulate(key)
        pos = np.maximum.accumulate(np.where(key == run, np.arange(n), 0))
        out[1:] = values[pos[:-1]]
    else:  # pragma: no cover - astronomically long runs: per-group loop
        bounds = np.r_[np.nonzero(starts)[0], n]
        for a, b in zip(bounds[:-1], bounds[1:]):
            out[a + 1:b] = np.maximum.accumulate(values[a:b])[:-1]
    out[starts] = -np.inf
    return out


def idle_gaps(rank, t0, t1, nranks: int, t_end: float):
    """Gaps (``rank, t0, t1``) of every rank in ``[0, t_end]`` not covered by any state.

    ``rank``/``t0`` must be sorted by (rank, t0); overlapping intervals are fine (a gap
    starts at the running maximum of the end times). Ranks without any state get one gap
    covering the whole run.
    """
    rank = np.asarray(rank, np.int64)
    t0 = np.asarray(t0, np.float64)
    t1 = np.asarray(t1, np.float64)
    n = len(rank)
    parts_r, parts_a, parts_b = [], [], []
    seen = np.zeros(max(nranks, 0), bool)
    if n:
        prev_end = _segmented_running_max_prev(rank, t1)
        first = np.r_[True, rank[1:] != rank[:-1]]
        last = np.r_[rank[1:] != rank[:-1], True]
        # inner gaps: the interval starts after everything before it (same rank) ended
        inner = ~first & (t0 > prev_end)
        parts_r.append(rank[inner]); parts_a.append(prev_end[inner]); parts_b.append(t0[inner])
        lead = first & (t0 > 0)
        parts_r.append(rank[lead]); parts_a.append(np.zeros(int(lead.sum())))
        parts_b.append(t0[lead])
        # the end of a rank's activity: max end over its rows (= running max at its last row)
        rank_end = np.maximum(prev_end, t1)[last]
        tail = rank_end < t_end
        parts_r.append(rank[last][tail]); parts_a.append(rank_end[tail])
        parts_b.append(np.full(int(tail.sum()), float(t_end)))
        valid = rank[(rank >= 0) & (rank < nranks)]
        seen[valid] = True
    missing = np.nonzero(~seen)[0]
    if t_end > 0 and len(missing):
        parts_r.append(missing); parts_a.append(np.zeros(len(missing)))
        parts_b.append(np.full(len(missing), float(t_end)))
    if not parts_r:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    gr = np.concatenate(parts_r).astype(np.int64)
    ga = np.concatenate(parts_a).astype(np.float64)
    gb = np.concatenate(parts_b).astype(np.float64)
    keep = gb > ga
    gr, ga, gb = gr[keep], ga[keep], gb[keep]
    order = np.lexsort((ga, gr))
    return gr[order], ga[order], gb[order]


def fill_idle(rank, state, t0, t1, nranks: int, t_end: float):
    """Add ``STATE_IDLE`` intervals for every gap of every rank in ``[0, t_end]``.

    Returns
    -------
    rank, state, t0, t1 : arrays sorted by (rank, t0)
    """
    rank = np.asarray(rank, np.int64)
    gr, ga, gb = idle_gaps(rank, t0, t1, nranks, t_end)
    rank = np.concatenate([rank, gr])
    state = np.concatenate([np.asarray(state, np.int64), np.full(len(gr), STATE_IDLE)])
    t0 = np.concatenate([np.asarray(t0, np.float64), ga])
    t1 = np.concatenate([np.asarray(t1, np.float64), gb])
    order = np.lexsort((t0, rank))
    return rank[order], state[order], t0[order], t1[order]
