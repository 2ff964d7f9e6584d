"""Max-min fair sharing (SimGrid CM02-like flow model), re-solved incrementally.

Bytes flow at max-min fair rates: progressive filling over resource capacities (times the
free fraction left by background load) with an optional per-flow cap. When flows start or
end, or a resource's background changes, only the flows *connected* to the changed
resources through shared resources are re-solved (SimGrid's "selective update" of its LMM
solver): a breadth-first walk from the dirty resources collects that component, whose
allocation does not depend on any other flow. Each flow keeps its remaining bytes at its
last rate change and its finish time in an indexed heap, so a horizon costs the size of
the component touched, not the number of active flows.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ccmod.kernel.heaps import iheap_push, iheap_remove, iheap_update, resource_segments

INF = np.inf
N_DIRTY, N_ACTIVE, F_LEN = range(3)

MmState = namedtuple("MmState", (
    "cap_full cap count peak area busy t_chg seg r_len r_item e_pos "
    "active rem rate t_upd fcap bott tfin f_item f_pos d_flag d_list r_seen rl f_seen fl "
    "cap_left users frozen done si sf route_ptr route_res emsg"))


def mm_new(nresources, capacity_Bps, background, route_ptr, route_res, seg_cap=None):
    """Allocate the state (static sizes, see :func:`ccmod.kernel.ccmod_rule.cc_new`)."""
    R = int(nresources)
    M = len(route_ptr) - 1
    E = len(route_res)
    seg, P = resource_segments(R, route_res, seg_cap)
    cap_full = np.asarray(capacity_Bps, np.float64).copy()
    cap = cap_full * (1.0 - np.asarray(background, np.float64))
    emsg = np.zeros(E, np.int64)     # message of each route entry
    rep = np.repeat(np.arange(M, dtype=np.int64), np.diff(route_ptr))
    emsg[:len(rep)] = rep
    i8 = lambda n, v=0: np.full(n, v, np.int64)  # noqa: E731
    f8 = lambda n, v=0.0: np.full(n, v, np.float64)  # noqa: E731
    b1 = lambda n: np.zeros(n, np.bool_)  # noqa: E731
    return MmState(
        cap_full, cap, i8(R), i8(R), f8(R), f8(R), f8(R), seg, i8(R), i8(max(P, 1)),
        i8(E, -1), b1(M), f8(M), f8(M), f8(M), f8(M, INF), i8(M, -1), f8(M, INF), i8(M),
        i8(M, -1), b1(R), i8(R), b1(R), i8(R), b1(M), i8(M), f8(R), i8(R), b1(M), i8(M),
        i8(4), f8(2), np.asarray(route_ptr, np.int64), np.asarray(route_res, np.int64), emsg)


@njit(cache=True)
def _dirty(S, r, t):
    _mark_dirty(S.si, S.sf, S.d_flag, S.d_list, r, t)


@njit(cache=True)
def _mark_dirty(si, sf, d_flag, d_list, r, t):
    # the few arrays it uses, not the state tuple: a call increfs every array it is given
    if si[N_DIRTY] == 0:
        sf[0] = t
    if not d_flag[r]:
        d_flag[r] = True
        d_list[si[N_DIRTY]] = r
        si[N_DIRTY] += 1


@njit(cache=True)
def mm_count(S, r, t, delta):
    """Change the number of flows on resource r at t (integrating its statistics)."""
    return _count(S.count, S.t_chg, S.area, S.busy, S.peak, r, t, delta)


@njit(cache=True)
def _count(count, t_chg, area, busy, peak, r, t, delta):
    c0 = count[r]
    if c0:
        dt = t - t_chg[r]
        area[r] += c0 * dt
        busy[r] += dt
    t_chg[r] = t
    c = c0 + delta
    count[r] = c
    if c > peak[r]:
        peak[r] = c
    return c


@njit(cache=True)
def mm_start(S, m, t, work, fcap):
    """Flow m starts at t with ``work`` bytes (rate cap ``fcap``, inf = none)."""
    for e in range(S.route_ptr[m], S.route_ptr[m + 1]):
        r = S.route_res[e]
        n = S.r_len[r]
        S.r_item[S.seg[r] + n] = e
        S.e_pos[e] = n
        S.r_len[r] = n + 1
        _count(S.count, S.t_chg, S.area, S.busy, S.peak, r, t, 1)
        _mark_dirty(S.si, S.sf, S.d_flag, S.d_list, r, t)
    S.active[m] = True
    S.rem[m] = work
    S.rate[m] = 0.0
    S.t_upd[m] = t
    S.fcap[m] = fcap
    S.si[N_ACTIVE] += 1


@njit(cache=True)
def mm_end(S, m, t):
    """Flow m leaves (after :func:`mm_pop_due`)."""
    for e in range(S.route_ptr[m], S.route_ptr[m + 1]):
        r = S.route_res[e]
        i = S.e_pos[e]
        n = S.r_len[r] - 1
        last = S.r_item[S.seg[r] + n]
        S.r_item[S.seg[r] + i] = last
        S.e_pos[last] = i
        S.r_len[r] = n
        S.e_pos[e] = -1
        _count(S.count, S.t_chg, S.area, S.busy, S.peak, r, t, -1)
        _mark_dirty(S.si, S.sf, S.d_flag, S.d_list, r, t)
    S.active[m] = False
    S.si[N_ACTIVE] -= 1


@njit(cache=True)
def mm_set_free(S, r, t, free):
    """Background step: resource r keeps ``free`` of its capacity from t on."""
    mm_solve(S)          # rates so far hold until t
    S.cap[r] = S.cap_full[r] * free
    _dirty(S, r, t)


@njit(cache=True)
def mm_solve(S):
    """Re-solve the flows connected to the dirty resources (progressive filling)."""
    nd = S.si[N_DIRTY]
    if nd == 0:
        return
    t = S.sf[0]
    S.si[N_DIRTY] = 0
    nr = 0
    nf = 0
    for i in range(nd):
        r = S.d_list[i]
        S.d_flag[r] = False
        if not S.r_seen[r]:
            S.r_seen[r] = True
            S.rl[nr] = r
            nr += 1
    k = 0
    while k < nr:                      # breadth-first: the connected component
        r = S.rl[k]
        k += 1
        o = S.seg[r]
        for j in range(S.r_len[r]):
            f = S.emsg[S.r_item[o + j]]
            if not S.f_seen[f]:
                S.f_seen[f] = True
                S.fl[nf] = f
                nf += 1
                for e in range(S.route_ptr[f], S.route_ptr[f + 1]):
                    r2 = S.route_res[e]
                    if not S.r_seen[r2]:
                        S.r_seen[r2] = True
                        S.rl[nr] = r2
                        nr += 1
    for i in range(nr):
        r = S.rl[i]
        S.r_seen[r] = False
        S.cap_left[r] = S.cap[r]
        S.users[r] = S.r_len[r]
    left = nf
    for i in range(nf):
        f = S.fl[i]
        S.f_seen[f] = False
        if t > S.t_upd[f]:             # bytes moved at the old rate
            x = S.rem[f] - S.rate[f] * (t - S.t_upd[f])
            S.rem[f] = x if x > 0.0 else 0.0
        S.t_upd[f] = t
        S.rate[f] = 0.0
        S.bott[f] = -1
        S.frozen[f] = False
    while left > 0:
        level = INF
        for i in range(nr):
            r = S.rl[i]
            if S.users[r] > 0:
                lv = S.cap_left[r] / S.users[r]
                if lv < level:
                    level = lv
        for i in range(nf):
            f = S.fl[i]
            if not S.frozen[f]:
                hd = S.fcap[f] - S.rate[f]
                if hd < level:
                    level = hd
        if level == INF:
            for i in range(nf):
                f = S.fl[i]
                if not S.frozen[f]:
                    S.rate[f] = INF
            break
        if level < 0.0:
            level = 0.0
        for i in range(nf):
            f = S.fl[i]
            if not S.frozen[f]:
                S.rate[f] += level
                for e in range(S.route_ptr[f], S.route_ptr[f + 1]):
                    S.cap_left[S.route_res[e]] -= level
        progressed = False
        for i in range(nf):
            f = S.fl[i]
            if S.frozen[f]:
                continue
            sat = -1
            for e in range(S.route_ptr[f], S.route_ptr[f + 1]):
                r = S.route_res[e]
                if S.cap_left[r] <= 1e-12 * S.cap[r]:
                    sat = r
                    break
            fc = S.fcap[f]
            if sat >= 0 or (fc < INF and fc - S.rate[f] <= 1e-12 * max(fc, 1.0)):
                S.frozen[f] = True
                progressed = True
                S.bott[f] = sat
                left -= 1
                for e in range(S.route_ptr[f], S.route_ptr[f + 1]):
                    S.users[S.route_res[e]] -= 1
        if not progressed:
            break
    for i in range(nf):
        f = S.fl[i]
        rm = S.rem[f]
        rt = S.rate[f]
        if rm <= 0.0 or rt == INF:
            S.tfin[f] = t
        elif rt > 0.0:
            S.tfin[f] = t + rm / rt
        else:
            S.tfin[f] = INF
        if S.f_pos[f] >= 0:
            iheap_update(S.f_item, S.f_pos, S.tfin, 0, S.si, F_LEN, f)
        else:
            iheap_push(S.f_item, S.f_pos, S.tfin, 0, S.si, F_LEN, f)


@njit(cache=True)
def mm_next_time(S):
    mm_solve(S)
    if S.si[F_LEN] == 0:
        return INF
    return S.tfin[S.f_item[0]]


@njit(cache=True)
def mm_pop_due(S, t, bott_out):
    """Flows due at t (within rounding) go to ``S.done`` sorted by id; returns how many.
    The caller then calls :func:`mm_end` for each."""
    mm_solve(S)
    nd = 0
    if S.si[F_LEN] == 0:
        return 0
    first = S.tfin[S.f_item[0]] - t
    tol = max(first, 1e-15, 1e-12 * t)
    while S.si[F_LEN] > 0 and S.tfin[S.f_item[0]] - t <= tol:
        f = S.f_item[0]
        iheap_remove(S.f_item, S.f_pos, S.tfin, 0, S.si, F_LEN, f)
        S.done[nd] = f
        nd += 1
    S.done[:nd] = np.sort(S.done[:nd])
    for i in range(nd):
        f = S.done[i]
        bott_out[f] = S.bott[f]
        S.tfin[f] = INF
    return nd
