"""Indexed binary heaps over flat arrays (numba), the kernel's priority queues.

The arrays are slices of the kernel's two buffers (:mod:`ccmod.kernel.state`): ``item``,
``pos``, ``lens`` (and the timers' ``seq``) are offsets into the int64 buffer ``I``,
``key`` (the timers' ``t``) an offset into the float64 buffer ``F``.

Every queue holds integer items (message ids, resource ids, timer slots) whose keys live in
a separate array, so an item's key can change in place (``heap_update``) and an item can
leave from anywhere (``heap_remove``): no stale entries, no Python object per event.
Several heaps can share one ``item`` pool, each owning a segment ``[off, off + cap)`` (the
per-resource bottleneck groups of the CCMOD rule); ``pos[x]`` is x's index inside its
segment (-1 when x is in no heap). Ties are broken by an order key (``I[tie + x]``: a
message's id, a timer's sequence number) or, with ``tie < 0``, by the item id, so orders
are deterministic: one implementation for every queue (the ``iheap_*`` names tie by id).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ccmod.kernel.compiled import leaf

INF = float("inf")
I64_MAX = np.iinfo(np.int64).max



@njit(cache=True, inline="always")
def _lt(I, F, key, tie, a, b):
    """Is item a before item b: lower key, equal keys ordered by ``I[tie + x]`` (the order
    keys of messages, the timers' sequence numbers) or, with ``tie < 0``, by the ids."""
    ka = F[key + a]
    kb = F[key + b]
    if ka != kb:
        return ka < kb
    if tie < 0:
        return a < b
    return I[tie + a] < I[tie + b]


@njit(cache=True, inline="always")
def _before(I, F, key, tie, a, b):
    """:func:`_lt` as an integer (0 or 1), computed without branching on the keys: ``ka <=
    kb and (ka < kb or the tie)``, one float comparison read as two flags (false when a
    key is NaN, as :func:`_lt` is)."""
    ka = F[key + a]
    kb = F[key + b]
    if tie < 0:        # constant at each call site
        ta = a
        tb = b
    else:
        ta = I[tie + a]
        tb = I[tie + b]
    return int(ka <= kb) & (int(ka < kb) | int(ta < tb))


@leaf
def heap_up(I, F, item, pos, key, tie, off, i):
    """Sift item ``i`` of a heap up; its positions are ``I[pos + x]``."""
    item += off
    x = I[item + i]
    while i > 0:
        p = (i - 1) >> 1
        y = I[item + p]
        if _lt(I, F, key, tie, x, y):
            I[item + i] = y
            I[pos + y] = i
            i = p
        else:
            break
    I[item + i] = x
    I[pos + x] = i


@leaf
def heap_down(I, F, item, pos, key, tie, off, n, i):
    """Sift item ``i`` of a heap of ``n`` down (positions as :func:`heap_up`)."""
    _sift_down(I, F, item + off, pos, key, tie, n, i, False)


@njit(cache=True, inline="always")
def _sift_down(I, F, item, pos, key, tie, n, i, popped):
    """:func:`heap_down` (``item`` already offset to the heap's segment). With ``popped``
    (a constant at each call site: :func:`heap_pop`'s sift, whose item came from place
    ``n``, which still holds it) the earlier child is chosen without a branch and without
    a bounds test: a second child at place n is the item itself, chosen only when it is
    before the first child, and then the sift stops (an item is not before itself), as
    it should. The other heaps' sifts (a group's members, the pairs, max-min's) choose
    predictably, and there the branch-free choice cost up to 10 instructions per record
    more (callgrind, random64)."""
    x = I[item + i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if popped:
            c += _before(I, F, key, tie, I[item + c + 1], I[item + c])
        elif c + 1 < n and _lt(I, F, key, tie, I[item + c + 1], I[item + c]):
            c += 1
        y = I[item + c]
        if _lt(I, F, key, tie, y, x):
            I[item + i] = y
            I[pos + y] = i
            i = c
        else:
            break
    I[item + i] = x
    I[pos + x] = i


@leaf
def heap_push(I, F, item, pos, key, tie, off, lens, h, x):
    """Insert x (key already set in ``key[x]``) into heap h."""
    n = I[lens + h]
    I[item + off + n] = x
    I[pos + x] = n
    I[lens + h] = n + 1
    heap_up(I, F, item, pos, key, tie, off, n)


@leaf
def heap_remove(I, F, item, pos, key, tie, off, lens, h, x):
    """Take x out of heap h (x must be in it)."""
    i = I[pos + x]
    n = I[lens + h] - 1
    I[lens + h] = n
    I[pos + x] = -1
    if i != n:
        y = I[item + off + n]
        I[item + off + i] = y
        I[pos + y] = i
        # y in x's place: nothing moves when y and x are equal in the heap's order (the
        # pairs of an incast, all keyed by the same share and group): no sift calls
        if tie >= 0 and F[key + y] == F[key + x] and I[tie + y] == I[tie + x]:
            return
        heap_down(I, F, item, pos, key, tie, off, n, i)
        heap_up(I, F, item, pos, key, tie, off, I[pos + y])


@leaf
def heap_pop(I, F, item, pos, key, tie, off, lens, h):
    """Remove and return heap h's first item (the heap is not empty): the last item takes
    its place and sifts down, as :func:`heap_remove` does at the root, without what a
    removal from the middle needs (a sift up, the equal-item test): the queue of the
    event horizon (the rule's completions) takes its earliest item at every horizon of
    its own, and the child the sift follows is chosen without a branch."""
    x = I[item + off]
    n = I[lens + h] - 1
    I[lens + h] = n
    I[pos + x] = -1
    if n > 0:
        y = I[item + off + n]
        I[item + off] = y
        I[pos + y] = 0
        # the child it follows chosen without a branch: the completion heap's items are
        # often due at one instant (many one-message groups finishing together, ordered
        # by id), so which child is earlier is as good as random, and a branch on it
        # mispredicted (1.67 per record on bench_engine's sharers1). Place n keeps y.
        _sift_down(I, F, item + off, pos, key, tie, n, 0, True)
    return x


@leaf
def heap_update(I, F, item, pos, key, tie, off, lens, h, x):
    """Restore the heap after ``key[x]`` changed (x in heap h)."""
    heap_down(I, F, item, pos, key, tie, off, I[lens + h], I[pos + x])
    heap_up(I, F, item, pos, key, tie, off, I[pos + x])


# -- equal keys ordered by the ids (resources, pairs, classes) -------------------------------
@leaf
def iheap_push(I, F, item, pos, key, off, lens, h, x):
    """:func:`heap_push`, ties by id."""
    heap_push(I, F, item, pos, key, -1, off, lens, h, x)


@leaf
def iheap_remove(I, F, item, pos, key, off, lens, h, x):
    """:func:`heap_remove`, ties by id."""
    heap_remove(I, F, item, pos, key, -1, off, lens, h, x)


@leaf
def iheap_update(I, F, item, pos, key, off, lens, h, x):
    """:func:`heap_update`, ties by id."""
    heap_update(I, F, item, pos, key, -1, off, lens, h, x)


# -- the timer queue: key (t, seq), one live timer per slot ---------------------------------
# 1-based, between sentinels (the timer queue holds 1-4 timers on light traffic, so its
# length tests were as unpredictable as its comparisons): ``item[0]`` is a slot whose time
# is -inf, so a timer climbing up stops at the root without a test of its index; every
# place past the last timer, up to twice its index and one, holds a slot whose time is +inf
# (the children a sift down compares then never win, no bounds test), so the earliest time
# is ``t[item[1]]``, +inf when the queue is empty. The sentinels are the two slots after
# the ranks' (:func:`ccmod.kernel.state.timers`, set by :func:`timer_init`).
@njit(cache=True, inline="always")
def _timer_lt(I, F, tt, ts, a, b):
    """Is slot a's timer before b's, as an integer (0 or 1) computed without branches: the
    child a sift down follows is as good as random, a branch on it mispredicted."""
    ka_lt = F[tt + a]
    kb_lt = F[tt + b]
    return int(ka_lt < kb_lt) | (int(ka_lt == kb_lt) & int(I[ts + a] < I[ts + b]))


@njit(cache=True, inline="always")
def _timer_down(I, F, item, pos, tt, ts, i_dn):
    """Sift the timer at place ``i_dn`` down (places past the last hold the +inf
    sentinel)."""
    x_dn = I[item + i_dn]
    while True:
        c_dn = 2 * i_dn
        c_dn += _timer_lt(I, F, tt, ts, I[item + c_dn + 1], I[item + c_dn])
        y_dn = I[item + c_dn]
        if _lt(I, F, tt, ts, y_dn, x_dn):
            I[item + i_dn] = y_dn
            I[pos + y_dn] = i_dn
            i_dn = c_dn
        else:
            break
    I[item + i_dn] = x_dn
    I[pos + x_dn] = i_dn


@leaf
def _timer_up(I, F, item, pos, tt, i_up, x_up, t_up):
    """Place slot ``x_up`` (time ``t_up``, the newest sequence number) at place ``i_up``
    or above it: it climbs past strictly later timers only (place 0's sentinel, at -inf,
    stops it at the root). Returns its place."""
    while True:
        p_up = i_up >> 1
        y_up = I[item + p_up]
        if not t_up < F[tt + y_up]:
            break
        I[item + i_up] = y_up
        I[pos + y_up] = i_up
        i_up = p_up
    I[item + i_up] = x_up
    I[pos + x_up] = i_up
    return i_up


@leaf
def timer_init(I, F, item, tt, ts, hi, lo):
    """Set the sentinels of an empty timer queue: slot ``lo`` at place 0 (time -inf), slot
    ``hi`` at place 1 (time +inf, the last sequence number)."""
    F[tt + hi] = INF
    I[ts + hi] = I64_MAX
    F[tt + lo] = -INF
    I[item] = lo
    I[item + 1] = hi


@njit(cache=True, inline="always")
def timer_set(I, F, item, pos, tt, ts, lens, x, t, seq):
    """Arm (or re-arm) timer slot x at time t; ``seq`` orders equal times (FIFO).

    Inlined where a timer is armed (:func:`ccmod.kernel.messages.arm_timer`): a call cost
    ~20 of its ~55 instructions. ``seq`` is the newest sequence number (the loop's
    counter), so a fresh timer climbs past strictly later timers only: :func:`heap_up`'s
    order (time, then sequence) without the sequence loads."""
    F[tt + x] = t
    I[ts + x] = seq
    # armed means at its position in the heap: a slot never armed reads position 0 (its
    # fields are left zero at set-up, so the pages of slots never used are never
    # touched; place 0 holds the sentinel), a slot taken out reads -1
    i = I[pos + x]
    n = I[lens]
    if i <= 0 or i > n or I[item + i] != x:
        I[lens] = n + 1
        # the +inf sentinel (past the last timer until now) to the new last's children
        I[item + 2 * n + 2] = I[item + n + 1]
        I[item + 2 * n + 3] = I[item + n + 1]
        # (a leaf, not numba's inlining: inlined here, itself inlined into arm_timer, the
        # climb stored the sentinel for the climbing slot, even with distinct names)
        _timer_up(I, F, item, pos, tt, n + 1, x, t)
    else:
        timer_rearm(I, F, item, pos, tt, ts, x, i)


@leaf
def timer_rearm(I, F, item, pos, tt, ts, x, i):
    """Restore the timer queue after armed slot x (at place i) took a new time and the
    newest sequence number."""
    if _timer_up(I, F, item, pos, tt, i, x, F[tt + x]) == i:
        _timer_down(I, F, item, pos, tt, ts, i)


@njit(cache=True, inline="always")
def timer_pop(I, F, item, pos, tt, ts, lens):
    """Remove and return the earliest slot (the caller checked the queue is not empty).

    Floyd's bottom-up removal: the hole left at the root walks down along the earlier
    child to the last level, without comparing with the timer that fills it, and the last
    timer (usually among the latest) then climbs up from there, mostly not at all: one
    comparison a level, not two, and none below a queue of two (where a plain sift down
    ran a step to find it stays). The +inf sentinel takes the last's place first (the
    root's, when the queue empties)."""
    x = I[item + 1]
    n = I[lens]
    n_left = n - 1
    I[lens] = n_left
    I[pos + x] = -1
    I[item + 1] = I[item + n]
    I[item + n] = I[item + n + 1]
    x_last = I[item + 1]        # the old last, or the sentinel when x was the only timer
    i_h = 1
    if n_left > 1:
        # (a queue of 0 or 1 left: the last stays at the root, no compare with place 0's
        # sentinel, ~60 % of light traffic's pops)
        c_h = 2
        while c_h <= n_left:
            c_h += _timer_lt(I, F, tt, ts, I[item + c_h + 1], I[item + c_h])
            y_h = I[item + c_h]
            I[item + i_h] = y_h
            I[pos + y_h] = i_h
            i_h = c_h
            c_h = 2 * c_h
        # the last timer climbs from the hole past later timers, by time and sequence (it
        # is not the newest: _timer_up's order does not hold); place 0's -inf sentinel
        # stops it
        y_h = I[item + (i_h >> 1)]
        while _lt(I, F, tt, ts, x_last, y_h):
            I[item + i_h] = y_h
            I[pos + y_h] = i_h
            i_h >>= 1
            y_h = I[item + (i_h >> 1)]
    I[item + i_h] = x_last
    I[pos + x_last] = i_h
    return x


# -- sorting lists of ids in place -----------------------------------------------------------
# Under streaming a message's index is a recycled slot (:mod:`ccmod.kernel.slots`): ties
# between messages follow ``I[tie + x]`` (the message id) instead, so the order of equal
# keys, and with it every result, is that of the whole program (where ``tie`` holds the ids).
@njit(cache=True, inline="always")
def order_key(I, tie, x):
    """Message x's order key: ``I[tie + x]``, or x itself with ``tie < 0`` (a whole-program
    run not in slot order holds no order keys: its ids are its slots, 8 bytes per message)."""
    return x if tie < 0 else I[tie + x]


@leaf
def sort_keyed(I, a, n, tie):
    """Sort the ids ``I[a:a + n]`` by their order keys ``I[tie + m]`` (distinct; with
    ``tie < 0`` the ids themselves), without allocating: insertion for short lists,
    heapsort beyond."""
    if n <= 32:
        for i in range(a + 1, a + n):
            x = I[i]
            kx = order_key(I, tie, x)
            j = i - 1
            while j >= a and order_key(I, tie, I[j]) > kx:
                I[j + 1] = I[j]
                j -= 1
            I[j + 1] = x
        return
    for k in range(n // 2 - 1, -1, -1):
        _sift_max(I, a, k, n, tie)
    for end in range(n - 1, 0, -1):
        x = I[a]
        I[a] = I[a + end]
        I[a + end] = x
        _sift_max(I, a, 0, end, tie)


@leaf
def sort_ids(I, a, n):
    """Sort ``I[a:a + n]`` (distinct ids) in place (:func:`sort_keyed` by the ids)."""
    sort_keyed(I, a, n, -1)


@leaf
def _sift_max(I, a, i, n, tie):
    x = I[a + i]
    kx = order_key(I, tie, x)
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and order_key(I, tie, I[a + c + 1]) > order_key(I, tie, I[a + c]):
            c += 1
        if order_key(I, tie, I[a + c]) > kx:
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
