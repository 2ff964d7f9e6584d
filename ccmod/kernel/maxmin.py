"""Max-min fair sharing (SimGrid CM02-like flow model), re-solved incrementally.

Bytes flow at max-min fair rates: progressive filling over resource capacities (times the
free fraction left by background load) with an optional per-flow cap. When flows start or
end, or a resource's background changes, only the flows *connected* to the changed
resources through shared resources are re-solved (SimGrid's "selective update" of its LMM
solver): a breadth-first walk from the dirty resources collects that component, whose
allocation does not depend on any other flow. Flows of the component with the same route
and the same rate cap always get the same rate, so progressive filling runs on those
*classes*, each weighted by its size: its rounds cost the classes (few: pairs of nodes),
not the flows, and give every flow the rate it would get alone. Each flow keeps its remaining bytes at its
last rate change and its finish time in an indexed heap, so a horizon costs the size of
the component touched, not the number of active flows. The state is slices of the
kernel's two buffers (``S`` holds offsets into ``I`` and ``F``, see
:mod:`ccmod.kernel.state`).
"""
from __future__ import annotations

import numpy as np

from ccmod.kernel.compiled import mm_state, leaf
from ccmod.kernel.state import MmState
from ccmod.kernel.heaps import (kheap_push, kheap_remove, kheap_update, resource_segments,
                                sort_keyed)

INF = np.inf
N_DIRTY, N_ACTIVE, F_LEN = range(3)



def mm_new(A, nresources, capacity_Bps, background, route_ptr, route_res, seg_cap=None,
           routes=None, pair_cap=None):
    """Lay out the state in arena ``A`` (see :func:`ccmod.kernel.ccmod_rule.cc_new`)."""
    R = int(nresources)
    M = len(route_ptr) - 1
    E = len(route_res)
    seg, P = resource_segments(R, route_res, seg_cap)
    cap_full = np.asarray(capacity_Bps, np.float64)
    cap = cap_full * (1.0 - np.asarray(background, np.float64))
    emsg = np.zeros(E, np.int64)     # message of each route entry
    rep = np.repeat(np.arange(M, dtype=np.int64), np.diff(route_ptr))
    emsg[:len(rep)] = rep
    T = 1 << max(1, 2 * M - 1).bit_length()     # class hash table, at most half full
    if routes is None:
        from ccmod.kernel.state import own_routes
        routes = own_routes(A, route_ptr, route_res)
    return A.struct(
        MmState, cap_full=("f", R, cap_full), cap=("f", R, cap), count=("i", R, 0),
        peak=("i", R, 0), area=("f", R, 0.0), busy=("f", R, 0.0), t_chg=("f", R, 0.0),
        seg=("i", R + 1, seg), r_len=("i", R, 0), r_item=("i", max(P, 1), 0),
        e_pos=("i", E, -1), active=("i", M, 0), rem=("f", M, 0.0), rate=("f", M, 0.0),
        t_upd=("f", M, 0.0), fcap=("f", M, INF), bott=("i", M, -1), tfin=("f", M, INF),
        f_item=("i", M, 0), f_pos=("i", M, -1), d_flag=("i", R, 0), d_list=("i", R, 0),
        r_seen=("i", R, 0), rl=("i", R, 0), f_seen=("i", M, 0), fl=("i", M, 0),
        cap_left=("f", R, 0.0), users=("i", R, 0), done=("i", M, 0),
        si=("i", 4, 0), sf=("f", 2, 0.0), route_ptr=routes[0], route_res=routes[1],
        emsg=("i", E, emsg), rhash=("i", M, 0), hmask=("v", T - 1), ht=("i", T, 0),
        f_cls=("i", M, 0), c_rep=("i", M, 0), c_w=("i", M, 0), c_rate=("f", M, 0.0),
        c_fz=("i", M, 0), c_bott=("i", M, -1), c_slot=("i", M, 0),
        route_end=routes[2], okey=routes[3])


def _dirty(S, r, t):
    """Mark resource r for re-solving at t; ``S`` holds views (:meth:`Arena.views`), for
    Python callers (tests forcing a full re-solve). Compiled code uses :func:`_mark_dirty`."""
    if S.si[N_DIRTY] == 0:
        S.sf[0] = t
    if not S.d_flag[r]:
        S.d_flag[r] = 1
        S.d_list[S.si[N_DIRTY]] = r
        S.si[N_DIRTY] += 1


@leaf
def _mark_dirty(S, I, F, r, t):
    if I[S.si + N_DIRTY] == 0:
        F[S.sf] = t
    if not I[S.d_flag + r]:
        I[S.d_flag + r] = 1
        I[S.d_list + I[S.si + N_DIRTY]] = r
        I[S.si + N_DIRTY] += 1


@leaf
def mm_count(I, F, r, t, delta):
    """Change the number of flows on resource r at t (integrating its statistics)."""
    S = mm_state(I)
    c0 = I[S.count + r]
    if c0:
        dt = t - F[S.t_chg + r]
        F[S.area + r] += c0 * dt
        F[S.busy + r] += dt
    F[S.t_chg + r] = t
    c = c0 + delta
    I[S.count + r] = c
    if c > I[S.peak + r]:
        I[S.peak + r] = c
    return c


@leaf
def mm_start(I, F, m, t, work, fcap):
    """Flow m starts at t with ``work`` bytes (rate cap ``fcap``, inf = none)."""
    S = mm_state(I)
    h = 0
    for e in range(I[S.route_ptr + m], I[S.route_end + m]):
        r = I[S.route_res + e]
        h = (h * 31 + r + 1) & 0xFFFFFFFFFFFF     # route hash (no int64 overflow)
        n = I[S.r_len + r]
        I[S.r_item + I[S.seg + r] + n] = e
        I[S.e_pos + e] = n
        I[S.r_len + r] = n + 1
        mm_count(I, F, r, t, 1)
        _mark_dirty(S, I, F, r, t)
    I[S.rhash + m] = h
    I[S.active + m] = 1
    F[S.rem + m] = work
    F[S.rate + m] = 0.0
    F[S.t_upd + m] = t
    F[S.fcap + m] = fcap
    I[S.si + N_ACTIVE] += 1


@leaf
def mm_end(I, F, m, t):
    """Flow m leaves (after :func:`mm_pop_due`)."""
    S = mm_state(I)
    for e in range(I[S.route_ptr + m], I[S.route_end + m]):
        r = I[S.route_res + e]
        i = I[S.e_pos + e]
        n = I[S.r_len + r] - 1
        o = S.r_item + I[S.seg + r]
        last = I[o + n]
        I[o + i] = last
        I[S.e_pos + last] = i
        I[S.r_len + r] = n
        I[S.e_pos + e] = -1
        mm_count(I, F, r, t, -1)
        _mark_dirty(S, I, F, r, t)
    I[S.active + m] = 0
    I[S.si + N_ACTIVE] -= 1


@leaf
def mm_set_free(I, F, r, t, free):
    """Background step: resource r keeps ``free`` of its capacity from t on."""
    S = mm_state(I)
    mm_solve(I, F)          # rates so far hold until t
    F[S.cap + r] = F[S.cap_full + r] * free
    _mark_dirty(S, I, F, r, t)


@leaf
def _same_route(I, rp, re, rr, g, f):
    """Whether flows g and f cross the same resources in the same order."""
    eg, ef = I[rp + g], I[rp + f]
    n = I[re + f] - ef
    if I[re + g] - eg != n:
        return False
    for k in range(n):
        if I[rr + eg + k] != I[rr + ef + k]:
            return False
    return True


@leaf
def mm_solve(I, F):
    """Re-solve the flows connected to the dirty resources (progressive filling)."""
    S = mm_state(I)
    nd = I[S.si + N_DIRTY]
    if nd == 0:
        return
    t = F[S.sf]
    I[S.si + N_DIRTY] = 0
    rp, re, rr = S.route_ptr, S.route_end, S.route_res
    nr = 0
    nf = 0
    for i in range(nd):
        r = I[S.d_list + i]
        I[S.d_flag + r] = 0
        if not I[S.r_seen + r]:
            I[S.r_seen + r] = 1
            I[S.rl + nr] = r
            nr += 1
    k = 0
    while k < nr:                      # breadth-first: the connected component
        r = I[S.rl + k]
        k += 1
        o = S.r_item + I[S.seg + r]
        for j in range(I[S.r_len + r]):
            f = I[S.emsg + I[o + j]]
            if not I[S.f_seen + f]:
                I[S.f_seen + f] = 1
                I[S.fl + nf] = f
                nf += 1
                for e in range(I[rp + f], I[re + f]):
                    r2 = I[rr + e]
                    if not I[S.r_seen + r2]:
                        I[S.r_seen + r2] = 1
                        I[S.rl + nr] = r2
                        nr += 1
    for i in range(nr):
        r = I[S.rl + i]
        I[S.r_seen + r] = 0
        F[S.cap_left + r] = F[S.cap + r]
        I[S.users + r] = I[S.r_len + r]
    nc = 0
    hm = 1
    while hm < 2 * nf and hm <= S.hmask:   # a table the size of the component: in cache
        hm *= 2
    hm = min(hm - 1, S.hmask)     # ht at most half full: probing ends
    for i in range(nf):
        f = I[S.fl + i]
        I[S.f_seen + f] = 0
        if t > F[S.t_upd + f]:             # bytes moved at the old rate
            x = F[S.rem + f] - F[S.rate + f] * (t - F[S.t_upd + f])
            F[S.rem + f] = x if x > 0.0 else 0.0
        F[S.t_upd + f] = t
        # f joins its class (same route, same cap: the same rate) of this solve
        F[S.c_rate + i] = 0.0            # class i (if any) starts unfrozen at rate 0
        I[S.c_fz + i] = 0
        I[S.c_bott + i] = -1
        if nf == 1:
            I[S.c_rep] = f
            I[S.c_w] = 1
            I[S.f_cls + f] = 0
            nc = 1
            break
        s = I[S.rhash + f] & hm
        while True:
            c1 = I[S.ht + s]
            if c1 == 0:
                I[S.ht + s] = nc + 1
                I[S.c_slot + nc] = s
                I[S.c_rep + nc] = f
                I[S.c_w + nc] = 1
                I[S.f_cls + f] = nc
                nc += 1
                break
            g = I[S.c_rep + c1 - 1]
            if (I[S.rhash + g] == I[S.rhash + f] and F[S.fcap + g] == F[S.fcap + f]
                    and _same_route(I, rp, re, rr, g, f)):
                I[S.c_w + c1 - 1] += 1
                I[S.f_cls + f] = c1 - 1
                break
            s = (s + 1) & hm
    # progressive filling over the classes, each weighted by its size
    left = nc
    while left > 0:
        level = INF
        for i in range(nr):
            r = I[S.rl + i]
            if I[S.users + r] > 0:
                lv = F[S.cap_left + r] / I[S.users + r]
                if lv < level:
                    level = lv
        for c in range(nc):
            if not I[S.c_fz + c]:
                hd = F[S.fcap + I[S.c_rep + c]] - F[S.c_rate + c]
                if hd < level:
                    level = hd
        if level == INF:
            for c in range(nc):
                if not I[S.c_fz + c]:
                    F[S.c_rate + c] = INF
            break
        if level < 0.0:
            level = 0.0
        for c in range(nc):
            if not I[S.c_fz + c]:
                F[S.c_rate + c] += level
                f = I[S.c_rep + c]
                lw = level * I[S.c_w + c]
                for e in range(I[rp + f], I[re + f]):
                    F[S.cap_left + I[rr + e]] -= lw
        progressed = False
        for c in range(nc):
            if I[S.c_fz + c]:
                continue
            f = I[S.c_rep + c]
            sat = -1
            for e in range(I[rp + f], I[re + f]):
                r = I[rr + e]
                if F[S.cap_left + r] <= 1e-12 * F[S.cap + r]:
                    sat = r
                    break
            fc = F[S.fcap + f]
            if sat >= 0 or (fc < INF and fc - F[S.c_rate + c] <= 1e-12 * max(fc, 1.0)):
                I[S.c_fz + c] = 1
                progressed = True
                I[S.c_bott + c] = sat
                left -= 1
                w = I[S.c_w + c]
                for e in range(I[rp + f], I[re + f]):
                    I[S.users + I[rr + e]] -= w
        if not progressed:
            break
    for c in range(nc if nf > 1 else 0):
        I[S.ht + I[S.c_slot + c]] = 0
    for i in range(nf):
        f = I[S.fl + i]
        c = I[S.f_cls + f]
        rt = F[S.c_rate + c]
        F[S.rate + f] = rt
        I[S.bott + f] = I[S.c_bott + c]
        rm = F[S.rem + f]
        if rm <= 0.0 or rt == INF:
            F[S.tfin + f] = t
        elif rt > 0.0:
            F[S.tfin + f] = t + rm / rt
        else:
            F[S.tfin + f] = INF
        if I[S.f_pos + f] >= 0:
            kheap_update(I, F, S.f_item, S.f_pos, S.tfin, S.okey, 0, S.si, F_LEN, f)
        else:
            kheap_push(I, F, S.f_item, S.f_pos, S.tfin, S.okey, 0, S.si, F_LEN, f)


@leaf
def mm_next_time(I, F):
    S = mm_state(I)
    mm_solve(I, F)
    if I[S.si + F_LEN] == 0:
        return INF
    return F[S.tfin + I[S.f_item]]


@leaf
def mm_pop_due(I, F, t, bott_out):
    """Flows due at t (within rounding) go to ``S.done`` sorted by id, their bottleneck
    to ``I[bott_out + f]``; returns how many. The caller then calls :func:`mm_end` for
    each."""
    S = mm_state(I)
    mm_solve(I, F)
    nd = 0
    if I[S.si + F_LEN] == 0:
        return 0
    first = F[S.tfin + I[S.f_item]] - t
    tol = max(first, 1e-15, 1e-12 * t)
    while I[S.si + F_LEN] > 0 and F[S.tfin + I[S.f_item]] - t <= tol:
        f = I[S.f_item]
        kheap_remove(I, F, S.f_item, S.f_pos, S.tfin, S.okey, 0, S.si, F_LEN, f)
        I[S.done + nd] = f
        nd += 1
    sort_keyed(I, S.done, nd, S.okey)
    for i in range(nd):
        f = I[S.done + i]
        I[bott_out + f] = I[S.bott + f]
        F[S.tfin + f] = INF
    return nd
