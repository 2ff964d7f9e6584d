"""Max-min fair sharing (SimGrid CM02-like flow model), re-solved incrementally.

Bytes flow at max-min fair rates: progressive filling over resource capacities (times the
free fraction left by background load) with an optional per-flow cap. Flows with the same
route and the same rate cap always get the same rate, so the state is kept per *class* of
such flows (:mod:`ccmod.kernel.mm_classes`): its size (the weight), its per-flow rate and a
virtual clock, the bytes each of its flows received so far. A flow joins its class with a
finish point (its bytes plus the clock at its start) in the class's heap, so a rate change
touches the class, not its flows; the next completion of each class is one entry of an
indexed heap over classes (the sharing part of the event horizon).

When flows start or end, or a resource's background changes, only the classes
*connected* to the changed resources through shared resources are re-solved (SimGrid's
"selective update" of its LMM solver): a breadth-first walk from the dirty resources over
the per-resource lists of classes collects that component, whose allocation does not
depend on any other class; progressive filling then runs over its classes, each weighted
by its size. A start or end so costs O(hops + log) plus the component's classes, not the
number of active flows. Before that walk, a dirty resource whose component is a *star*
(every class on one resource D, their other hops private, none held below D's fair share)
is served by D's bottleneck group (:mod:`ccmod.kernel.mm_groups`): one rate, one clock,
one heap entry for all its classes, so an incast of K senders costs O(hops + log K) per
start or end, not O(K). And when every dirty resource carries one class alone on its
route (each hop private: most re-solves of random pairs), each such class is rated
directly (:func:`_solve_lone`), with progressive filling's arithmetic and order, no walk.
The state is slices of the kernel's two buffers (``S`` holds
offsets into ``I`` and ``F``, see :mod:`ccmod.kernel.state`).
"""
from __future__ import annotations

import numpy as np

from ccmod.kernel.compiled import mm_state, leaf
from ccmod.kernel.rawbuf import as_i32
from ccmod.kernel.state import MmState, check_ids
from ccmod.kernel.heaps import (iheap_push, iheap_remove, iheap_update, resource_segments,
                                sort_keyed)
from ccmod.kernel.mm_classes import (F_LEN, N_ACTIVE, N_DIRTY, N_FREE, class_advance,
                                     class_drop, class_finish, class_join, flow_free,
                                     flow_pop, flow_slot)
from ccmod.kernel.mm_groups import (group_dissolve, group_rekey, mm_fast, shape_free,
                                    shape_join, shape_leave)

INF = np.inf


def class_bound(nresources, route_ptr, route_res, flow_cap):
    """How many classes the messages can form, their distinct (route, rate cap) pairs, and
    how many of those cross each resource: ``(classes, per_resource)``.

    Each pair is one integer (the cap's index, then every hop's resource + 1, in base
    ``nresources + 1``; a shorter route ends with zero digits), exact while it fits in 62
    bits; otherwise, or without caps, the number of messages (always enough) and ``None``
    (then a resource's list holds up to every route crossing it). The distinct pairs are
    marked in a table over every key when that is small (no sort), and their hops read
    back from the keys' digits.
    """
    M = len(route_ptr) - 1
    if flow_cap is None or M <= 1 or len(route_res) == 0:
        return max(M, 1), None
    rp = np.asarray(route_ptr, np.int64)
    lens = np.diff(rp)
    hops = int(lens.max())
    cap = np.asarray(flow_cap, np.float64)[:M]
    if np.all(cap == cap[0]):
        ncaps, key = 1, None
    else:
        caps, key = np.unique(cap, return_inverse=True)
        ncaps, key = len(caps), key.astype(np.int64).reshape(M)
    R = int(nresources)
    base = R + 1
    if hops * np.log2(base) + np.log2(ncaps) >= 62:
        return M, None
    if rp[0] == 0 and int(lens.min()) == hops:
        # every route has the same hops (a star, a torus): its rows, no gathers
        rows = np.asarray(route_res[:M * hops]).reshape(M, hops)
        hop = lambda k: rows[:, k].astype(np.int64) + 1          # noqa: E731
    else:
        rr = np.asarray(route_res, np.int64)
        hop = lambda k: np.where(k < lens, rr[np.minimum(rp[:-1] + k, len(rr) - 1)] + 1,  # noqa: E731
                                 0)
    for k in range(hops):
        key = hop(k) if key is None else key * base + hop(k)
    span = ncaps * base ** hops
    if span <= max(4 * M, 1 << 16):
        seen = np.zeros(span, np.bool_)
        seen[key] = True
        uk = np.flatnonzero(seen)
    else:
        key.sort()            # (np.unique hashes integers: several times slower here)
        uk = key[np.concatenate(([True], key[1:] != key[:-1]))]
    nc = len(uk)
    digits = []
    for k in range(hops):
        v = uk % base
        uk = uk // base
        digits.append(v[v > 0] - 1)
    return nc, np.bincount(np.concatenate(digits), minlength=R)[:R]


def mm_new(A, nresources, capacity_Bps, background, route_ptr, route_res, seg_cap=None,
           routes=None, max_hops=None, flow_cap=None, pair_cap=None):
    """Lay out the state in arena ``A`` (see :func:`ccmod.kernel.ccmod_rule.cc_new`).

    ``max_hops`` bounds the length of routes not known yet (``route_ptr`` filled later, as
    :class:`ccmod.kernel.facade.MaxMinSharing` does); by default the longest given route.
    ``flow_cap`` (the messages' rate caps, routes given) sizes the class arrays by the
    classes the messages can form (:func:`class_bound`) instead of one per message.
    """
    R = int(nresources)
    M = len(route_ptr) - 1
    check_ids(len(route_res), M, R)     # routes (route_ptr, route_res) in int32 fields
    NC, per_res = class_bound(R, route_ptr, route_res, flow_cap)  # at most one per flow
    if seg_cap is None and per_res is not None:
        seg_cap = per_res           # a resource lists each of its classes once at most
    seg, P = resource_segments(R, route_res, seg_cap)
    cap_full = np.asarray(capacity_Bps, np.float64)
    cap = cap_full * (1.0 - np.asarray(background, np.float64))
    hops = int(np.max(np.diff(route_ptr))) if M > 0 else 1
    if max_hops is not None:
        hops = max(hops, int(max_hops))
    hb = max(hops - 1, 0).bit_length()          # a class's hop k at code (c << hb) | k
    T = 1 << max(1, 2 * NC - 1).bit_length()    # class hash table, at most half full
    si0 = np.zeros(6, np.int64)
    si0[N_FREE] = NC
    if routes is None:
        from ccmod.kernel.state import own_routes
        routes = own_routes(A, route_ptr, route_res)
    return A.struct(
        MmState, cap_full=("f", R, cap_full), cap=("f", R, cap), count=("i", R, 0),
        peak=("i", R, 0), area=("f", R, 0.0), busy=("f", R, 0.0), t_chg=("f", R, 0.0),
        seg=("i", R + 1, seg), r_len=("i", R, 0), r_item=("i", max(P, 1), 0),
        # flow slots (mm_classes.flow_slot), one per flow active at once at most: set
        # when taken (read only after), zeros that cost no pass over the buffer
        f_cls=("i", M, 0), vfin=("f", M, 0.0), h_left=("i", M, 0), h_right=("i", M, 0),
        f_msg=("i", M, 0), f_okey=("i", M, 0), f_free=("i", M, 0), done_s=("i", M, 0),
        d_flag=("i", R, 0), d_list=("i", R, 0), r_seen=("i", R, 0), rl=("i", R, 0),
        cap_left=("f", R, 0.0), users=("i", R, 0), done=("i", M, 0),
        si=("i", 6, si0), sf=("f", 2, 0.0), route_ptr=routes[0], route_res=routes[1],
        hb=("v", hb), hmask=("v", T - 1), ht=("i", T, 0),
        c_free=("i", NC, np.arange(NC - 1, -1, -1, dtype=np.int64)), c_rep=("i", NC, -1),
        c_w=("i", NC, 0), c_rate=("f", NC, 0.0), c_v=("f", NC, 0.0), c_t=("f", NC, 0.0),
        c_fcap=("f", NC, INF), c_hash=("i", NC, 0), c_slot=("i", NC, 0),
        c_root=("i", NC, -1), c_bott=("i", NC, -1), c_fz=("i", NC, 0), c_seen=("i", NC, 0),
        c_tfin=("f", NC, INF), c_item=("i", NC, 0), c_hpos=("i", NC, -1),
        cl=("i", NC, 0), c_pos=("i", NC << hb, 0), route_end=routes[2], okey=routes[3],
        nx=("i", R, 0), lb=("f", R, INF), g_on=("i", R, 0), g_v=("f", R, 0.0),
        g_t=("f", R, 0.0), g_rate=("f", R, 0.0), g_len=("i", R, 0), g_top=("i", R, -1),
        g_item=("i", max(P, 1), 0), g_mark=("i", R, 0), c_sh=("i", NC, 0),
        c_grp=("i", NC, -1), c_off=("f", NC, 0.0), c_gkey=("f", NC, INF),
        c_gpos=("i", NC, -1))


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
def _mark_dirty(I, F, r, t):
    S = mm_state(I)
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
    rp, re = as_i32(I)[S.route_ptr + m], as_i32(I)[S.route_end + m]
    for e in range(rp, re):
        mm_count(I, F, as_i32(I)[S.route_res + e], t, 1)
    s = flow_slot(I, m)
    class_join(I, F, m, s, t, work, fcap)
    c = I[S.f_cls + s]
    shape_join(I, F, c, t)
    I[S.si + N_ACTIVE] += 1
    if I[S.c_sh + c] == 0 and I[S.c_grp + c] < 0:
        # alone on every hop: its rate depends on its own hops only, rated now as the
        # lazy solve would (a later change at t on these hops marks them and re-rates it
        # from the counts alone, with the same result); no dirty marks, no walk
        _rate_lone(I, F, c, t)
        return
    for e in range(rp, re):
        _mark_dirty(I, F, as_i32(I)[S.route_res + e], t)


@leaf
def mm_end(I, F, s, t):
    """The flow of flow slot s leaves (after :func:`mm_pop_due`, which lists the slots of
    the flows due in ``done_s``)."""
    S = mm_state(I)
    m = I[S.f_msg + s]
    rp, re = as_i32(I)[S.route_ptr + m], as_i32(I)[S.route_end + m]
    for e in range(rp, re):
        mm_count(I, F, as_i32(I)[S.route_res + e], t, -1)
    c = I[S.f_cls + s]
    I[S.f_cls + s] = -1
    flow_free(I, s)
    w = I[S.c_w + c] - 1
    I[S.c_w + c] = w
    I[S.si + N_ACTIVE] -= 1
    if w == 0:
        shape_leave(I, F, c)
        class_drop(I, F, c, m)
    elif I[S.c_sh + c] == 0 and I[S.c_grp + c] < 0:
        _rate_lone(I, F, c, t)          # its flows alone on its hops (see mm_start)
        return
    for e in range(rp, re):
        r = as_i32(I)[S.route_res + e]
        if I[S.r_len + r] > 0:          # a resource left empty re-rates nothing
            _mark_dirty(I, F, r, t)


@leaf
def mm_set_free(I, F, r, t, free):
    """Background step: resource r keeps ``free`` of its capacity from t on."""
    S = mm_state(I)
    mm_solve(I, F)          # rates so far hold until t
    F[S.cap + r] = F[S.cap_full + r] * free
    shape_free(I, F, r)
    _mark_dirty(I, F, r, t)


@leaf
def _component(I, F, t):
    """Breadth-first from the dirty resources: the resources (``rl``) and classes (``cl``)
    connected to them, groups met dissolved at t; returns ``(resources, classes)``."""
    S = mm_state(I)
    rp, re, rr, hb = S.route_ptr, S.route_end, S.route_res, S.hb
    nd = I[S.si + N_DIRTY]
    I[S.si + N_DIRTY] = 0
    nr = 0
    nc = 0
    for i in range(nd):
        r = I[S.d_list + i]
        I[S.d_flag + r] = 0
        if not I[S.r_seen + r]:
            I[S.r_seen + r] = 1
            I[S.rl + nr] = r
            nr += 1
    k = 0
    while k < nr:
        r = I[S.rl + k]
        k += 1
        o = S.r_item + I[S.seg + r]
        for j in range(I[S.r_len + r]):
            c = I[o + j] >> hb
            if not I[S.c_seen + c]:
                if I[S.c_grp + c] >= 0:
                    group_dissolve(I, F, I[S.c_grp + c], t)
                I[S.c_seen + c] = 1
                I[S.cl + nc] = c
                nc += 1
                m = I[S.c_rep + c]
                for e in range(as_i32(I)[rp + m], as_i32(I)[re + m]):
                    r2 = as_i32(I)[rr + e]
                    if not I[S.r_seen + r2]:
                        I[S.r_seen + r2] = 1
                        I[S.rl + nr] = r2
                        nr += 1
    return nr, nc


@leaf
def mm_solve(I, F):
    """Re-solve the classes connected to the dirty resources (progressive filling)."""
    S = mm_state(I)
    if I[S.si + N_DIRTY] == 0:
        return
    t = F[S.sf]
    if mm_fast(I, F, t) == 0:       # stars served by one rate: their groups
        _solve_lone(I, F, t)        # what is left (if anything): classes alone
        return
    rp, re, rr = S.route_ptr, S.route_end, S.route_res
    nr, nc = _component(I, F, t)
    for i in range(nr):
        r = I[S.rl + i]
        I[S.r_seen + r] = 0
        F[S.cap_left + r] = F[S.cap + r]
        I[S.users + r] = I[S.count + r]     # every flow on r is in a class of the component
    for i in range(nc):
        c = I[S.cl + i]
        I[S.c_seen + c] = 0
        class_advance(I, F, c, t)       # bytes moved at the old rate, then start over
        F[S.c_rate + c] = 0.0
        I[S.c_fz + c] = 0
        I[S.c_bott + c] = -1
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
        for i in range(nc):
            c = I[S.cl + i]
            if not I[S.c_fz + c]:
                hd = F[S.c_fcap + c] - F[S.c_rate + c]
                if hd < level:
                    level = hd
        if level == INF:
            for i in range(nc):
                c = I[S.cl + i]
                if not I[S.c_fz + c]:
                    F[S.c_rate + c] = INF
            break
        if level < 0.0:
            level = 0.0
        for i in range(nc):
            c = I[S.cl + i]
            if not I[S.c_fz + c]:
                F[S.c_rate + c] += level
                f = I[S.c_rep + c]
                lw = level * I[S.c_w + c]
                for e in range(as_i32(I)[rp + f], as_i32(I)[re + f]):
                    F[S.cap_left + as_i32(I)[rr + e]] -= lw
        progressed = False
        for i in range(nc):
            c = I[S.cl + i]
            if I[S.c_fz + c]:
                continue
            f = I[S.c_rep + c]
            sat = -1
            for e in range(as_i32(I)[rp + f], as_i32(I)[re + f]):
                r = as_i32(I)[rr + e]
                if F[S.cap_left + r] <= 1e-12 * F[S.cap + r]:
                    sat = r
                    break
            fc = F[S.c_fcap + c]
            if sat >= 0 or (fc < INF and fc - F[S.c_rate + c] <= 1e-12 * max(fc, 1.0)):
                I[S.c_fz + c] = 1
                progressed = True
                I[S.c_bott + c] = sat
                left -= 1
                w = I[S.c_w + c]
                for e in range(as_i32(I)[rp + f], as_i32(I)[re + f]):
                    I[S.users + as_i32(I)[rr + e]] -= w
        if not progressed:
            break
    for i in range(nc):
        _requeue(I, F, I[S.cl + i])


@leaf
def _solve_lone(I, F, t):
    """The dirty resources all carry one class alone on its route (every hop private):
    each such component is its class, rated as progressive filling would (one round: the
    least of its cap and its hops' capacity per flow; bottleneck, the first hop left
    saturated), in the order the walk of :func:`_component` would meet them, with the
    same arithmetic, so the results are the full solve's."""
    S = mm_state(I)
    nd = I[S.si + N_DIRTY]
    I[S.si + N_DIRTY] = 0
    for i in range(nd):
        r = I[S.d_list + i]
        I[S.d_flag + r] = 0
        c = I[S.r_item + I[S.seg + r]] >> S.hb
        if I[S.c_seen + c]:
            continue
        I[S.c_seen + c] = 1
        _rate_lone(I, F, c, t)
    for i in range(nd):
        I[S.c_seen + (I[S.r_item + I[S.seg + I[S.d_list + i]]] >> S.hb)] = 0


@leaf
def _rate_lone(I, F, c, t):
    """Rate class c, alone on every hop of its route, at t: progressive filling's one
    round (the least of its cap and its hops' capacity per flow; bottleneck, the first
    hop left saturated), with the full solve's arithmetic and order, so the results are
    the full solve's; then its next completion into the heap."""
    S = mm_state(I)
    rp, re, rr = S.route_ptr, S.route_end, S.route_res
    class_advance(I, F, c, t)
    f = I[S.c_rep + c]
    level = INF
    for e in range(as_i32(I)[rp + f], as_i32(I)[re + f]):
        q = as_i32(I)[rr + e]
        lv = F[S.cap + q] / I[S.count + q]     # its flows are all q's
        if lv < level:
            level = lv
    fc = F[S.c_fcap + c]
    hd = fc - 0.0
    if hd < level:
        level = hd
    sat = -1
    if level == INF:
        rate = INF
    else:
        if level < 0.0:
            level = 0.0
        rate = 0.0 + level
        lw = level * I[S.c_w + c]
        for e in range(as_i32(I)[rp + f], as_i32(I)[re + f]):
            q = as_i32(I)[rr + e]
            cq = F[S.cap + q]
            if cq - lw <= 1e-12 * cq:
                sat = q
                break
    F[S.c_rate + c] = rate
    I[S.c_bott + c] = sat
    _requeue(I, F, c)


@leaf
def _requeue(I, F, c):
    """Class c's next completion (its first flow's) into the heap of classes (a group
    member: into its group's heap)."""
    S = mm_state(I)
    if I[S.c_grp + c] >= 0:
        group_rekey(I, F, c)
        return
    f = I[S.c_root + c]
    if f < 0:
        if I[S.c_hpos + c] >= 0:
            iheap_remove(I, F, S.c_item, S.c_hpos, S.c_tfin, 0, S.si, F_LEN, c)
        F[S.c_tfin + c] = INF
        return
    F[S.c_tfin + c] = class_finish(I, F, c, F[S.vfin + f])
    if I[S.c_hpos + c] >= 0:
        iheap_update(I, F, S.c_item, S.c_hpos, S.c_tfin, 0, S.si, F_LEN, c)
    else:
        iheap_push(I, F, S.c_item, S.c_hpos, S.c_tfin, 0, S.si, F_LEN, c)


@leaf
def mm_next_time(I, F):
    S = mm_state(I)
    mm_solve(I, F)
    if I[S.si + F_LEN] == 0:
        return INF
    return F[S.c_tfin + I[S.c_item]]


@leaf
def mm_pop_due(I, F, t, bott_out):
    """Flows due at t (within rounding) go to ``S.done`` (their messages) and
    ``S.done_s`` (their flow slots) sorted by message id, their bottleneck to
    ``as_i32(I)[bott_out + m]`` (an int32 field); returns how many. The caller then calls :func:`mm_end` for each
    slot."""
    S = mm_state(I)
    if I[S.si + N_DIRTY] != 0:
        mm_solve(I, F)
    nd = 0
    if I[S.si + F_LEN] == 0:
        return 0
    first = F[S.c_tfin + I[S.c_item]] - t
    tol = max(first, 1e-15, 1e-12 * t)
    while I[S.si + F_LEN] > 0 and F[S.c_tfin + I[S.c_item]] - t <= tol:
        c = I[S.c_item]
        while True:
            f = I[S.c_root + c]
            if f < 0 or class_finish(I, F, c, F[S.vfin + f]) - t > tol:
                break
            flow_pop(I, F, c)
            I[S.done_s + nd] = f
            nd += 1
            as_i32(I)[bott_out + I[S.f_msg + f]] = I[S.c_bott + c]
        f = I[S.c_root + c]
        if f >= 0:
            I[S.c_rep + c] = I[S.f_msg + f]     # a flow that stays gives its route
        _requeue(I, F, c)
    sort_keyed(I, S.done_s, nd, S.f_okey)
    for i in range(nd):
        I[S.done + i] = I[S.f_msg + I[S.done_s + i]]
    return nd
