"""Indexed binary heaps over flat arrays (numba), the kernel's priority queues.

Every queue holds integer items (message ids, resource ids, timer slots) whose keys live in
a separate array, so an item's key can change in place (``iheap_update``) and an item can
leave from anywhere (``iheap_remove``): no stale entries, no Python object per event.
Several heaps can share one ``item`` pool, each owning a segment ``[off, off + cap)`` (the
per-resource bottleneck groups of the CCMOD rule); ``pos[x]`` is x's index inside its
segment (-1 when x is in no heap). Ties are broken by the item id, so orders are
deterministic.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _lt(key, a, b):
    ka = key[a]
    kb = key[b]
    return ka < kb or (ka == kb and a < b)


@njit(cache=True)
def iheap_up(item, pos, key, off, i):
    x = item[off + i]
    while i > 0:
        p = (i - 1) >> 1
        y = item[off + p]
        if _lt(key, x, y):
            item[off + i] = y
            pos[y] = i
            i = p
        else:
            break
    item[off + i] = x
    pos[x] = i


@njit(cache=True)
def iheap_down(item, pos, key, off, n, i):
    x = item[off + i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _lt(key, item[off + c + 1], item[off + c]):
            c += 1
        y = item[off + c]
        if _lt(key, y, x):
            item[off + i] = y
            pos[y] = i
            i = c
        else:
            break
    item[off + i] = x
    pos[x] = i


@njit(cache=True)
def iheap_push(item, pos, key, off, lens, h, x):
    """Insert x (key already set in ``key[x]``) into heap h."""
    n = lens[h]
    item[off + n] = x
    pos[x] = n
    lens[h] = n + 1
    iheap_up(item, pos, key, off, n)


@njit(cache=True)
def iheap_remove(item, pos, key, off, lens, h, x):
    """Take x out of heap h (x must be in it)."""
    i = pos[x]
    n = lens[h] - 1
    lens[h] = n
    pos[x] = -1
    if i != n:
        y = item[off + n]
        item[off + i] = y
        pos[y] = i
        iheap_down(item, pos, key, off, n, i)
        iheap_up(item, pos, key, off, pos[y])


@njit(cache=True)
def iheap_update(item, pos, key, off, lens, h, x):
    """Restore the heap after ``key[x]`` changed (x in heap h)."""
    iheap_down(item, pos, key, off, lens[h], pos[x])
    iheap_up(item, pos, key, off, pos[x])


# -- the timer queue: key (t, seq), one live timer per slot ---------------------------------
@njit(cache=True, inline="always")
def _tlt(tt, ts, a, b):
    return tt[a] < tt[b] or (tt[a] == tt[b] and ts[a] < ts[b])


@njit(cache=True)
def timer_sift(item, pos, tt, ts, n, i):
    x = item[i]
    while i > 0:                       # up
        p = (i - 1) >> 1
        y = item[p]
        if _tlt(tt, ts, x, y):
            item[i] = y
            pos[y] = i
            i = p
        else:
            break
    while True:                        # down
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _tlt(tt, ts, item[c + 1], item[c]):
            c += 1
        y = item[c]
        if _tlt(tt, ts, y, x):
            item[i] = y
            pos[y] = i
            i = c
        else:
            break
    item[i] = x
    pos[x] = i


@njit(cache=True)
def timer_set(item, pos, tt, ts, lens, x, t, seq):
    """Arm (or re-arm) timer slot x at time t; ``seq`` orders equal times (FIFO)."""
    tt[x] = t
    ts[x] = seq
    if pos[x] < 0:
        n = lens[0]
        item[n] = x
        pos[x] = n
        lens[0] = n + 1
        timer_sift(item, pos, tt, ts, n + 1, n)
    else:
        timer_sift(item, pos, tt, ts, lens[0], pos[x])


@njit(cache=True)
def timer_pop(item, pos, tt, ts, lens):
    """Remove and return the earliest slot (the caller checked the queue is not empty)."""
    x = item[0]
    n = lens[0] - 1
    lens[0] = n
    pos[x] = -1
    if n > 0:
        y = item[n]
        item[0] = y
        pos[y] = 0
        timer_sift(item, pos, tt, ts, n, 0)
    return x


def resource_segments(nresources, route_res, seg_cap=None):
    """Per-resource slices of one flat array: ``(seg, total)``, resource ``r`` owning
    ``seg[r]:seg[r + 1]``; ``seg_cap[r]`` entries each (default: how many routes cross it).

    Both sharing rules lay their per-resource heaps out this way (plain Python, run once
    when the state is allocated).
    """
    R = int(nresources)
    if seg_cap is None:
        seg_cap = np.bincount(np.asarray(route_res, np.int64), minlength=R)[:R]
    seg = np.zeros(R + 1, np.int64)
    np.cumsum(seg_cap, out=seg[1:])
    return seg, int(seg[-1])
