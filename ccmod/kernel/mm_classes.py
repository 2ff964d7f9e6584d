"""Max-min flow classes: flows with the same route and rate cap, one virtual clock each.

All flows of a class progress at the same rate, so a class keeps, instead of each flow's
remaining bytes, the bytes every flow of it received so far (``c_v`` at time ``c_t``, its
virtual clock) and its flows in a heap keyed by their *finish point* in that clock (the
flow's bytes plus ``c_v`` when it joined; :func:`class_join`). A rate change then only
advances the clock (:func:`class_advance`), and the class's next completion is its first
flow's finish point (:func:`class_finish`). The heap is a skew heap over two link arrays
per flow (no per-class storage to size in advance); its order, ties included, is
:func:`flow_before`. A flow's own fields (its class, finish point, heap links, message and
order key) live in a *flow slot* taken when it starts and given back when it ends
(:func:`flow_slot`): the slots touched are as many as the flows active at once, in cache,
not one place per message.

Classes are found by a hash of the route (open addressing with backward-shift deletion,
so the table never fills up with dead entries), take an id from a free list, and are
listed on each resource of their route (code ``(c << hb) | k`` for hop k, its place in
the list at ``c_pos[code]``), which is what the re-solve of :mod:`ccmod.kernel.maxmin`
walks. A class dies when its last flow leaves (:func:`class_drop`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ccmod.kernel.compiled import leaf, mm_state
from ccmod.kernel.heaps import iheap_remove, order_key
from ccmod.kernel.rawbuf import as_i32

INF = np.inf
# integer scalars (si) of the state: dirty resources, active flows, classes in the heap of
# next completions, free class ids, free flow slots, flow slots ever used
N_DIRTY, N_ACTIVE, F_LEN, N_FREE, N_SFREE, N_SHW = range(6)


@njit(cache=True, inline="always")
def flow_before(S, I, F, a, b):
    """Flow a finishes before flow b of the same class (both flow slots): the lower
    finish point, equal points by message id (the one place that tie is broken;
    ``f_okey``: the message's ``okey``, its id, see :mod:`ccmod.kernel.slots`)."""
    va = F[S.vfin + a]
    vb = F[S.vfin + b]
    return va < vb or (va == vb and I[S.f_okey + a] < I[S.f_okey + b])


@leaf
def _merge(I, F, a, b):
    """Merge two skew heaps of flows (roots a and b, -1 empty); returns the root."""
    S = mm_state(I)
    if a < 0:
        return b
    if b < 0:
        return a
    if flow_before(S, I, F, b, a):
        a, b = b, a
    root = a
    p = a
    x = I[S.h_right + a]               # top-down: p's new left is merge(its right, b),
    I[S.h_right + a] = I[S.h_left + a]  # its old left becomes its right
    while True:
        if x < 0:
            I[S.h_left + p] = b
            break
        if b < 0:
            I[S.h_left + p] = x
            break
        if flow_before(S, I, F, b, x):
            x, b = b, x
        I[S.h_left + p] = x
        p = x
        nx = I[S.h_right + x]
        I[S.h_right + x] = I[S.h_left + x]
        x = nx
    return root


@leaf
def flow_pop(I, F, c):
    """Take class c's first flow out of its heap."""
    S = mm_state(I)
    f = I[S.c_root + c]
    I[S.c_root + c] = _merge(I, F, I[S.h_left + f], I[S.h_right + f])
    I[S.h_left + f] = -1
    I[S.h_right + f] = -1


@leaf
def group_advance(I, F, g, t):
    """Move the clock of resource g's bottleneck group to t at its current rate."""
    S = mm_state(I)
    dt = t - F[S.g_t + g]
    if dt > 0.0:
        F[S.g_v + g] += F[S.g_rate + g] * dt
        F[S.g_t + g] = t


@leaf
def class_advance(I, F, c, t):
    """Move class c's clock to t at its current rate (constant since ``c_t``); a class
    in a bottleneck group (:mod:`ccmod.kernel.mm_groups`) moves with its group's clock."""
    S = mm_state(I)
    g = I[S.c_grp + c]
    if g >= 0:
        group_advance(I, F, g, t)
        return
    dt = t - F[S.c_t + c]
    if dt > 0.0:
        rt = F[S.c_rate + c]
        if rt > 0.0 and rt < INF:     # infinite: its flows all finished at c_t
            F[S.c_v + c] += rt * dt
        F[S.c_t + c] = t


@leaf
def class_finish(I, F, c, v):
    """When class c's clock reaches finish point v at the current rate (in a group: when
    the group's clock reaches v plus the class's offset ``c_off``)."""
    S = mm_state(I)
    g = I[S.c_grp + c]
    if g >= 0:
        rm = (v + F[S.c_off + c]) - F[S.g_v + g]
        if rm <= 0.0:
            return F[S.g_t + g]
        return F[S.g_t + g] + rm / F[S.g_rate + g]
    rm = v - F[S.c_v + c]
    rt = F[S.c_rate + c]
    if rm <= 0.0 or rt == INF:
        return F[S.c_t + c]
    if rt > 0.0:
        return F[S.c_t + c] + rm / rt
    return INF


@leaf
def _same_route(I, rp, re, rr, g, f):
    """Whether flows g and f cross the same resources in the same order."""
    eg, ef = as_i32(I)[rp + g], as_i32(I)[rp + f]
    n = as_i32(I)[re + f] - ef
    if as_i32(I)[re + g] - eg != n:
        return False
    for k in range(n):
        if as_i32(I)[rr + eg + k] != as_i32(I)[rr + ef + k]:
            return False
    return True


@leaf
def flow_slot(I, m):
    """A flow slot for message m (the last one given back first)."""
    S = mm_state(I)
    k = I[S.si + N_SFREE]
    if k > 0:
        s = I[S.f_free + k - 1]
        I[S.si + N_SFREE] = k - 1
    else:
        s = I[S.si + N_SHW]
        I[S.si + N_SHW] = s + 1
    I[S.f_msg + s] = m
    I[S.f_okey + s] = order_key(I, S.okey, m)
    return s


@leaf
def flow_free(I, s):
    """Flow slot s is free again."""
    S = mm_state(I)
    k = I[S.si + N_SFREE]
    I[S.f_free + k] = s
    I[S.si + N_SFREE] = k + 1


@leaf
def class_join(I, F, m, fs, t, work, fcap):
    """Flow m (route set, ``work`` bytes, rate cap ``fcap``; flow slot fs) joins its class
    at t."""
    S = mm_state(I)
    rp, re, rr = S.route_ptr, S.route_end, S.route_res
    h = 0
    for e in range(as_i32(I)[rp + m], as_i32(I)[re + m]):
        h = (h * 31 + as_i32(I)[rr + e] + 1) & 0xFFFFFFFFFFFF     # route hash (no int64 overflow)
    s = h & S.hmask
    c = -1
    while True:
        c1 = I[S.ht + s]
        if c1 == 0:
            break
        g = c1 - 1
        if (I[S.c_hash + g] == h and F[S.c_fcap + g] == fcap
                and _same_route(I, rp, re, rr, I[S.c_rep + g], m)):
            c = g
            break
        s = (s + 1) & S.hmask
    if c >= 0:
        class_advance(I, F, c, t)
    else:
        n = I[S.si + N_FREE] - 1
        I[S.si + N_FREE] = n
        c = I[S.c_free + n]
        I[S.ht + s] = c + 1
        I[S.c_slot + c] = s
        I[S.c_hash + c] = h
        I[S.c_rep + c] = m
        I[S.c_w + c] = 0
        F[S.c_rate + c] = 0.0
        F[S.c_v + c] = 0.0
        F[S.c_t + c] = t
        F[S.c_fcap + c] = fcap
        I[S.c_root + c] = -1
        I[S.c_bott + c] = -1
        F[S.c_tfin + c] = INF
        I[S.c_grp + c] = -1
        I[S.c_gpos + c] = -1
        I[S.c_sh + c] = 0
        k = 0
        for e in range(as_i32(I)[rp + m], as_i32(I)[re + m]):
            r = as_i32(I)[rr + e]
            n = I[S.r_len + r]
            code = (c << S.hb) | k
            I[S.r_item + I[S.seg + r] + n] = code
            I[S.c_pos + code] = n
            I[S.r_len + r] = n + 1
            k += 1
    I[S.c_w + c] += 1
    I[S.f_cls + fs] = c
    g = I[S.c_grp + c]
    if g >= 0:            # the class's clock is its group's less its offset
        F[S.vfin + fs] = (F[S.g_v + g] - F[S.c_off + c]) + work
    else:
        F[S.vfin + fs] = F[S.c_v + c] + work
    I[S.h_left + fs] = -1
    I[S.h_right + fs] = -1
    I[S.c_root + c] = _merge(I, F, I[S.c_root + c], fs)


@leaf
def class_drop(I, F, c, m):
    """Class c lost its last flow (m, whose route it had): off the resources' lists, the
    hash table and the heap of completions; its id back to the free list."""
    S = mm_state(I)
    rp, re, rr = S.route_ptr, S.route_end, S.route_res
    k = 0
    for e in range(as_i32(I)[rp + m], as_i32(I)[re + m]):
        r = as_i32(I)[rr + e]
        i = I[S.c_pos + ((c << S.hb) | k)]
        n = I[S.r_len + r] - 1
        o = S.r_item + I[S.seg + r]
        last = I[o + n]
        I[o + i] = last
        I[S.c_pos + last] = i
        I[S.r_len + r] = n
        k += 1
    # backward-shift deletion: later entries of the probe run move into the hole unless
    # their home slot lies cyclically in (hole, their slot]
    hm = S.hmask
    i = I[S.c_slot + c]
    j = i
    while True:
        j = (j + 1) & hm
        c1 = I[S.ht + j]
        if c1 == 0:
            break
        home = I[S.c_hash + c1 - 1] & hm
        if i <= j:
            stay = i < home <= j
        else:
            stay = home > i or home <= j
        if not stay:
            I[S.ht + i] = c1
            I[S.c_slot + c1 - 1] = i
            i = j
    I[S.ht + i] = 0
    if I[S.c_hpos + c] >= 0:
        iheap_remove(I, F, S.c_item, S.c_hpos, S.c_tfin, 0, S.si, F_LEN, c)
    F[S.c_tfin + c] = INF
    I[S.c_root + c] = -1
    I[S.c_rep + c] = -1
    n = I[S.si + N_FREE]
    I[S.c_free + n] = c
    I[S.si + N_FREE] = n + 1
