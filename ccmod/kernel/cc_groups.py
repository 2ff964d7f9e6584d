"""The members of a bottleneck group, in finish order: a sorted run plus a heap.

All members of a group progress at the same rate (its virtual clock), so their finish
order is that of their finish marks ``vfin`` (ties to the lower order key ``okey``), fixed
when they join. A member joining with the latest mark (the usual case: equal work joining
later, as the messages of an incast that drifted apart do) or the earliest one goes to
either end of a doubly linked *run* kept in that order, in O(1); only the others go to the
group's indexed heap (:mod:`ccmod.kernel.heaps`). The group's first member is the earlier
of the run's head and the heap's top, so taking members out in order costs O(1) each
instead of a sift through a heap of up to every sharer: the cost per record stays flat
however many messages share the bottleneck. The order is the same total order either way
(mark, then order key), so which structure holds a member changes no result.

A run member's ``g_pos`` is ``-3 - prev`` (``-2``: the head), a heap member's its heap
position (``>= 0``), and ``-1`` means in no group (an int64 field: as int32, the heaps'
int32 positions cost light16 ~20 loop instructions per record, LLVM inlining less around
them); ``g_next`` (int32) links the run forward and
``l_head``/``l_tail`` are each group's ends (-1 when the run is empty).
"""
from __future__ import annotations

import numpy as np

from ccmod.kernel.compiled import leaf
from ccmod.kernel.heaps import heap_push, heap_remove, order_key
from ccmod.kernel.rawbuf import as_i32
from ccmod.kernel.state import (CF_SHARE, CF_T_AT, CF_V_AT, CI_G_LEN, CI_L_HEAD, CI_L_TAIL,
                                CRI)

INF = np.inf


@leaf
def _vclock(F, u, t):
    """The virtual clock at t of the group whose resource's record in ``F`` is at ``u``
    (quiet-seconds served per member; stands still while the group is idle, its share
    infinite)."""
    s = F[u + CF_SHARE]
    if s == INF:
        return F[u + CF_V_AT]
    return F[u + CF_V_AT] + s * (t - F[u + CF_T_AT])


@leaf
def _before(S, I, F, a, b):
    """Does member a finish before member b (lower mark, ties to the lower order key)?"""
    va = F[S.vfin + a]
    vb = F[S.vfin + b]
    if va != vb:
        return va < vb
    return order_key(I, S.okey, a) < order_key(I, S.okey, b)


@leaf
def g_first(S, I, F, r):
    """Group r's first member in finish order, or -1 when the group is empty."""
    q = S.ri + r * CRI
    a = I[q + CI_L_HEAD]
    if I[q + CI_G_LEN] == 0:
        return a
    b = I[S.g_item + I[S.seg + r]]
    if a < 0 or _before(S, I, F, b, a):
        return b
    return a


@leaf
def g_empty(S, I, r):
    """Has group r no member?"""
    q = S.ri + r * CRI
    return I[q + CI_G_LEN] == 0 and I[q + CI_L_HEAD] < 0


@leaf
def g_add(S, I, F, r, m):
    """Put m (its mark ``vfin[m]`` set) into group r: at an end of the run when it
    finishes after the run's last member or before its first, else into the heap."""
    J = as_i32(I)
    q = S.ri + r * CRI
    t = I[q + CI_L_TAIL]
    if t < 0:
        I[q + CI_L_HEAD] = m
        I[q + CI_L_TAIL] = m
        J[S.g_next + m] = -1
        I[S.g_pos + m] = -2
    elif _before(S, I, F, t, m):
        J[S.g_next + t] = m
        J[S.g_next + m] = -1
        I[S.g_pos + m] = -3 - t
        I[q + CI_L_TAIL] = m
    else:
        h = I[q + CI_L_HEAD]
        if _before(S, I, F, m, h):
            J[S.g_next + m] = h
            I[S.g_pos + h] = -3 - m
            I[S.g_pos + m] = -2
            I[q + CI_L_HEAD] = m
        else:
            heap_push(I, F, S.g_item, S.g_pos, S.vfin, S.okey, I[S.seg + r], q + CI_G_LEN, 0,
                        m)


@leaf
def g_del(S, I, F, r, m):
    """Take member m out of group r (from wherever it is)."""
    J = as_i32(I)
    q = S.ri + r * CRI
    p = I[S.g_pos + m]
    if p >= 0:
        heap_remove(I, F, S.g_item, S.g_pos, S.vfin, S.okey, I[S.seg + r], q + CI_G_LEN, 0,
                      m)
        return
    prev = -3 - p
    nx = J[S.g_next + m]
    if prev >= 0:
        J[S.g_next + prev] = nx
    else:
        I[q + CI_L_HEAD] = nx
    if nx >= 0:
        I[S.g_pos + nx] = p            # nx's predecessor is now m's
    else:
        I[q + CI_L_TAIL] = prev
    I[S.g_pos + m] = -1


@leaf
def g_take_sorted(S, I, F, r, vmax, out):
    """When group r's run is empty and its heap is a sorted array whose last mark is at
    most ``vmax`` (members that joined together in order and finish together), take them
    all in that order into ``I[out:]`` without a sift each; returns how many (0: not so)."""
    q = S.ri + r * CRI
    n = I[q + CI_G_LEN]
    o = S.g_item + I[S.seg + r]
    if n <= 8 or I[q + CI_L_HEAD] >= 0 or F[S.vfin + I[o + n - 1]] > vmax:
        return 0
    for i in range(1, n):
        if not _before(S, I, F, I[o + i - 1], I[o + i]):
            return 0
    for i in range(n):
        m2 = I[o + i]
        I[S.g_pos + m2] = -1
        I[out + i] = m2
    I[q + CI_G_LEN] = 0
    return n
