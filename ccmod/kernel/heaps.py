"""Indexed binary heaps over flat arrays (numba), the kernel's priority queues.

The arrays are slices of the kernel's two buffers (:mod:`ccmod.kernel.state`): ``item``,
``pos``, ``lens`` (and the timers' ``seq``) are offsets into the int64 buffer ``I``,
``key`` (the timers' ``t``) an offset into the float64 buffer ``F``.

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

from ccmod.kernel.compiled import leaf



@njit(cache=True, inline="always")
def _lt(F, key, a, b):
    ka = F[key + a]
    kb = F[key + b]
    return ka < kb or (ka == kb and a < b)


@leaf
def iheap_up(I, F, item, pos, key, off, i):
    item += off
    x = I[item + i]
    while i > 0:
        p = (i - 1) >> 1
        y = I[item + p]
        if _lt(F, key, x, y):
            I[item + i] = y
            I[pos + y] = i
            i = p
        else:
            break
    I[item + i] = x
    I[pos + x] = i


@leaf
def iheap_down(I, F, item, pos, key, off, n, i):
    item += off
    x = I[item + i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _lt(F, key, I[item + c + 1], I[item + c]):
            c += 1
        y = I[item + c]
        if _lt(F, key, y, x):
            I[item + i] = y
            I[pos + y] = i
            i = c
        else:
            break
    I[item + i] = x
    I[pos + x] = i


@leaf
def iheap_push(I, F, item, pos, key, off, lens, h, x):
    """Insert x (key already set in ``key[x]``) into heap h."""
    n = I[lens + h]
    I[item + off + n] = x
    I[pos + x] = n
    I[lens + h] = n + 1
    iheap_up(I, F, item, pos, key, off, n)


@leaf
def iheap_remove(I, F, item, pos, key, off, lens, h, x):
    """Take x out of heap h (x must be in it)."""
    i = I[pos + x]
    n = I[lens + h] - 1
    I[lens + h] = n
    I[pos + x] = -1
    if i != n:
        y = I[item + off + n]
        I[item + off + i] = y
        I[pos + y] = i
        iheap_down(I, F, item, pos, key, off, n, i)
        iheap_up(I, F, item, pos, key, off, I[pos + y])


@leaf
def iheap_update(I, F, item, pos, key, off, lens, h, x):
    """Restore the heap after ``key[x]`` changed (x in heap h)."""
    iheap_down(I, F, item, pos, key, off, I[lens + h], I[pos + x])
    iheap_up(I, F, item, pos, key, off, I[pos + x])


# -- the timer queue: key (t, seq), one live timer per slot ---------------------------------
@njit(cache=True, inline="always")
def _tlt(I, F, tt, ts, a, b):
    return F[tt + a] < F[tt + b] or (F[tt + a] == F[tt + b] and I[ts + a] < I[ts + b])


@leaf
def timer_sift(I, F, item, pos, tt, ts, n, i):
    x = I[item + i]
    while i > 0:                       # up
        p = (i - 1) >> 1
        y = I[item + p]
        if _tlt(I, F, tt, ts, x, y):
            I[item + i] = y
            I[pos + y] = i
            i = p
        else:
            break
    while True:                        # down
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _tlt(I, F, tt, ts, I[item + c + 1], I[item + c]):
            c += 1
        y = I[item + c]
        if _tlt(I, F, tt, ts, y, x):
            I[item + i] = y
            I[pos + y] = i
            i = c
        else:
            break
    I[item + i] = x
    I[pos + x] = i


@leaf
def timer_set(I, F, item, pos, tt, ts, lens, x, t, seq):
    """Arm (or re-arm) timer slot x at time t; ``seq`` orders equal times (FIFO)."""
    F[tt + x] = t
    I[ts + x] = seq
    if I[pos + x] < 0:
        n = I[lens]
        I[item + n] = x
        I[pos + x] = n
        I[lens] = n + 1
        timer_sift(I, F, item, pos, tt, ts, n + 1, n)
    else:
        timer_sift(I, F, item, pos, tt, ts, I[lens], I[pos + x])


@leaf
def timer_pop(I, F, item, pos, tt, ts, lens):
    """Remove and return the earliest slot (the caller checked the queue is not empty)."""
    x = I[item]
    n = I[lens] - 1
    I[lens] = n
    I[pos + x] = -1
    if n > 0:
        y = I[item + n]
        I[item] = y
        I[pos + y] = 0
        timer_sift(I, F, item, pos, tt, ts, n, 0)
    return x


@leaf
def sort_ids(I, a, n):
    """Sort ``I[a:a + n]`` (distinct ids) in place, without allocating: insertion for the
    short lists of the usual case, heapsort beyond."""
    if n <= 32:
        for i in range(a + 1, a + n):
            x = I[i]
            j = i - 1
            while j >= a and I[j] > x:
                I[j + 1] = I[j]
                j -= 1
            I[j + 1] = x
        return
    for k in range(n // 2 - 1, -1, -1):
        _sift_max(I, a, k, n)
    for end in range(n - 1, 0, -1):
        x = I[a]
        I[a] = I[a + end]
        I[a + end] = x
        _sift_max(I, a, 0, end)


@leaf
def _sift_max(I, a, i, n):
    x = I[a + i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and I[a + c + 1] > I[a + c]:
            c += 1
        if I[a + c] > x:
            I[a + i] = I[a + c]
            i = c
        else:
            break
    I[a + i] = x


# -- heaps of messages: equal keys ordered by the messages' order keys ----------------------
# Under streaming a message's index is a recycled slot (:mod:`ccmod.kernel.slots`): ties
# between messages follow ``I[tie + x]`` (the message id) instead, so the order of equal
# keys, and with it every result, is that of the whole program (where ``tie`` holds the ids).
@njit(cache=True, inline="always")
def _klt(I, F, key, tie, a, b):
    ka = F[key + a]
    kb = F[key + b]
    return ka < kb or (ka == kb and I[tie + a] < I[tie + b])


@leaf
def kheap_up(I, F, item, pos, key, tie, off, i):
    item += off
    x = I[item + i]
    while i > 0:
        p = (i - 1) >> 1
        y = I[item + p]
        if _klt(I, F, key, tie, x, y):
            I[item + i] = y
            I[pos + y] = i
            i = p
        else:
            break
    I[item + i] = x
    I[pos + x] = i


@leaf
def kheap_down(I, F, item, pos, key, tie, off, n, i):
    item += off
    x = I[item + i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _klt(I, F, key, tie, I[item + c + 1], I[item + c]):
            c += 1
        y = I[item + c]
        if _klt(I, F, key, tie, y, x):
            I[item + i] = y
            I[pos + y] = i
            i = c
        else:
            break
    I[item + i] = x
    I[pos + x] = i


@leaf
def kheap_push(I, F, item, pos, key, tie, off, lens, h, x):
    """:func:`iheap_push` with ties ordered by ``I[tie + x]``."""
    n = I[lens + h]
    I[item + off + n] = x
    I[pos + x] = n
    I[lens + h] = n + 1
    kheap_up(I, F, item, pos, key, tie, off, n)


@leaf
def kheap_remove(I, F, item, pos, key, tie, off, lens, h, x):
    """:func:`iheap_remove` with ties ordered by ``I[tie + x]``."""
    i = I[pos + x]
    n = I[lens + h] - 1
    I[lens + h] = n
    I[pos + x] = -1
    if i != n:
        y = I[item + off + n]
        I[item + off + i] = y
        I[pos + y] = i
        kheap_down(I, F, item, pos, key, tie, off, n, i)
        kheap_up(I, F, item, pos, key, tie, off, I[pos + y])


@leaf
def kheap_update(I, F, item, pos, key, tie, off, lens, h, x):
    """:func:`iheap_update` with ties ordered by ``I[tie + x]``."""
    kheap_down(I, F, item, pos, key, tie, off, I[lens + h], I[pos + x])
    kheap_up(I, F, item, pos, key, tie, off, I[pos + x])


@leaf
def sort_keyed(I, a, n, tie):
    """Sort the messages ``I[a:a + n]`` by their order keys ``I[tie + m]`` (distinct),
    without allocating: insertion for short lists, heapsort beyond."""
    if n <= 32:
        for i in range(a + 1, a + n):
            x = I[i]
            kx = I[tie + x]
            j = i - 1
            while j >= a and I[tie + I[j]] > kx:
                I[j + 1] = I[j]
                j -= 1
            I[j + 1] = x
        return
    for k in range(n // 2 - 1, -1, -1):
        _ksift_max(I, a, k, n, tie)
    for end in range(n - 1, 0, -1):
        x = I[a]
        I[a] = I[a + end]
        I[a + end] = x
        _ksift_max(I, a, 0, end, tie)


@leaf
def _ksift_max(I, a, i, n, tie):
    x = I[a + i]
    kx = I[tie + x]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and I[tie + I[a + c + 1]] > I[tie + I[a + c]]:
            c += 1
        if I[tie + I[a + c]] > kx:
            I[a + i] = I[a + c]
            i = c
        else:
            break
    I[a + i] = x


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
