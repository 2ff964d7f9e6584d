"""The article's sharing rule over flat arrays: contention, bandwidth availability, groups.

Each active message has a routing array (its resources). The contention array ``count[l]``
(CCMOD's CA) counts active messages on resource ``l``; the bandwidth availability of a
message is ``BA = min over its route of free[l] / count[l]`` (``free = 1 - background``)
and it progresses at ``BA`` quiet-seconds per second. A share never exceeds 1: that only
matters when the engine gives a resource ``free > 1`` (``ccmod:capacity=ratio``: free is the
resource's capacity over the quiet bandwidth of its messages).

All messages whose minimum is attained on the same resource ``l`` (its bottleneck *group*)
progress at the same rate ``share[l]``; the group keeps one virtual clock (``v_at``,
``t_at``) and an indexed heap of finish marks ``vfin`` in virtual time, so a start or end
costs O(hops + log A) instead of touching every active message. Bottleneck changes are
found lazily, once per event horizon (:func:`cc_flush`):

* when ``share[l]`` drops, only messages that cross ``l`` but are bottlenecked elsewhere
  (the ``others`` set of ``l``) can move to ``l``;
* when ``share[l]`` rises, a member leaves only if its best other resource (``altval``,
  kept in a per-group heap, possibly stale-low which is safe) is now below ``share[l]``.

The next completion of every group is one entry of an indexed heap over resources (the
sharing part of the event horizon). Sizes are static: a resource's groups never hold more
messages than routes cross it, so all pools are allocated once (:func:`cc_new`).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ccmod.kernel.heaps import iheap_push, iheap_remove, iheap_update, resource_segments

INF = np.inf
# integer scalars (si) and float scalars (sf) of the state
N_NEW, N_DEC, N_INC, N_TCH, N_ACTIVE, N_CAND, N_DONE = range(7)

CcState = namedtuple("CcState", (
    "free count share v_at t_at peak area busy t_chg "
    "seg g_len g_item g_pos vfin a_len a_item a_pos a_res altval o_len o_item o_pos bott "
    "ev_len ev_item ev_pos ev_t new_m new_w dec_f dec_l inc_f inc_l tch_f tch_l "
    "cand_f cand_l done si sf route_ptr route_res emsg"))


def cc_new(nresources, background, route_ptr, route_res, seg_cap=None):
    """Allocate the state for messages with the given routes (CSR over resource ids).

    ``seg_cap[l]`` bounds how many messages may be active on ``l`` at once (default: how
    many routes cross it).
    """
    R = int(nresources)
    M = len(route_ptr) - 1
    E = len(route_res)
    seg, P = resource_segments(R, route_res, seg_cap)
    emsg = np.zeros(E, np.int64)     # message of each route entry
    rep = np.repeat(np.arange(M, dtype=np.int64), np.diff(route_ptr))
    emsg[:len(rep)] = rep
    i8 = lambda n, v=0: np.full(n, v, np.int64)  # noqa: E731
    f8 = lambda n, v=0.0: np.full(n, v, np.float64)  # noqa: E731
    b1 = lambda n: np.zeros(n, np.bool_)  # noqa: E731
    return CcState(
        1.0 - np.asarray(background, np.float64), i8(R), f8(R, INF), f8(R), f8(R), i8(R),
        f8(R), f8(R), f8(R),
        seg, i8(R), i8(max(P, 1)), i8(M, -1), f8(M), i8(R), i8(max(P, 1)), i8(M, -1),
        i8(M, -1), f8(M, INF), i8(R), i8(max(P, 1)), i8(E, -1), i8(M, -1),
        i8(1), i8(R), i8(R, -1), f8(R, INF), i8(M), f8(M), b1(R), i8(R), b1(R), i8(R), b1(R),
        i8(R), b1(M), i8(M), i8(M), i8(8), f8(2),
        np.asarray(route_ptr, np.int64), np.asarray(route_res, np.int64), emsg)


@njit(cache=True)
def _vclock(share, v_at, t_at, r, t):
    # the few arrays it reads, not the state tuple: a call increfs every array it is given
    s = share[r]
    if s == INF:
        return v_at[r]
    return v_at[r] + s * (t - t_at[r])


@njit(cache=True)
def cc_vclock(S, r, t):
    """Virtual clock (quiet-seconds served per message) of group r at time t."""
    return _vclock(S.share, S.v_at, S.t_at, r, t)


@njit(cache=True)
def _mark(flag, lst, si, k, r):
    if not flag[r]:
        flag[r] = True
        lst[si[k]] = r
        si[k] += 1


@njit(cache=True)
def cc_set_count(S, r, t, delta):
    """Change the contention of resource r at time t (integrating its statistics)."""
    return _set_count(S.free, S.count, S.share, S.v_at, S.t_at, S.peak, S.area, S.busy,
                      S.t_chg, r, t, delta)


@njit(cache=True)
def _set_count(free, count, share, v_at, t_at, peak, area, busy, t_chg, r, t, delta):
    v_at[r] = _vclock(share, v_at, t_at, r, t)
    t_at[r] = t
    c0 = count[r]
    if c0:
        dt = t - t_chg[r]
        area[r] += c0 * dt
        busy[r] += dt
    t_chg[r] = t
    c = c0 + delta
    count[r] = c
    # BA never exceeds 1 (no faster than quiet): only binds when free > 1, i.e. under
    # ccmod:capacity=ratio where free is a capacity / quiet-bandwidth ratio
    share[r] = min(free[r] / c, 1.0) if c > 0 else INF
    if c > peak[r]:
        peak[r] = c
    if c == 0:
        v_at[r] = 0.0      # empty group: restart its clock (keeps precision)
    return c


@njit(cache=True)
def _best(route_ptr, route_res, share, m, exclude):
    """(min share, resource) over m's route, optionally excluding one resource."""
    best = INF
    br = -1
    for e in range(route_ptr[m], route_ptr[m + 1]):
        r = route_res[e]
        if r != exclude:
            s = share[r]
            if s < best or (s == best and r < br):
                best = s
                br = r
    return best, br


@njit(cache=True)
def _alt_out(a_res, a_item, a_pos, altval, seg, a_len, m):
    h = a_res[m]
    if h >= 0:
        iheap_remove(a_item, a_pos, altval, seg[h], a_len, h, m)
        a_res[m] = -1


@njit(cache=True)
def _push_alt(route_ptr, route_res, share, a_res, a_item, a_pos, altval, seg, a_len, m, b):
    alt, _ = _best(route_ptr, route_res, share, m, b)
    _alt_out(a_res, a_item, a_pos, altval, seg, a_len, m)
    altval[m] = alt
    if alt < INF:
        iheap_push(a_item, a_pos, altval, seg[b], a_len, b, m)
        a_res[m] = b


@njit(cache=True)
def _others_add(route_res, o_pos, o_len, o_item, seg, e):
    r = route_res[e]
    if o_pos[e] < 0:
        n = o_len[r]
        o_item[seg[r] + n] = e
        o_pos[e] = n
        o_len[r] = n + 1


@njit(cache=True)
def _others_del(route_res, o_pos, o_len, o_item, seg, e):
    i = o_pos[e]
    if i >= 0:
        r = route_res[e]
        n = o_len[r] - 1
        last = o_item[seg[r] + n]
        o_item[seg[r] + i] = last
        o_pos[last] = i
        o_len[r] = n
        o_pos[e] = -1


@njit(cache=True)
def _join(S, m, r, t, remaining):
    """Put m into group r with ``remaining`` quiet-seconds of work."""
    S.bott[m] = r
    S.vfin[m] = _vclock(S.share, S.v_at, S.t_at, r, t) + remaining
    iheap_push(S.g_item, S.g_pos, S.vfin, S.seg[r], S.g_len, r, m)
    for e in range(S.route_ptr[m], S.route_ptr[m + 1]):
        if S.route_res[e] == r:
            _others_del(S.route_res, S.o_pos, S.o_len, S.o_item, S.seg, e)
        else:
            _others_add(S.route_res, S.o_pos, S.o_len, S.o_item, S.seg, e)
    _push_alt(S.route_ptr, S.route_res, S.share, S.a_res, S.a_item, S.a_pos, S.altval,
              S.seg, S.a_len, m, r)
    _mark(S.tch_f, S.tch_l, S.si, N_TCH, r)


@njit(cache=True)
def _move(S, m, r_new, t):
    old = S.bott[m]
    rem = S.vfin[m] - _vclock(S.share, S.v_at, S.t_at, old, t)
    iheap_remove(S.g_item, S.g_pos, S.vfin, S.seg[old], S.g_len, old, m)
    for e in range(S.route_ptr[m], S.route_ptr[m + 1]):
        if S.route_res[e] == old:
            _others_add(S.route_res, S.o_pos, S.o_len, S.o_item, S.seg, e)
    _mark(S.tch_f, S.tch_l, S.si, N_TCH, old)
    _join(S, m, r_new, t, rem if rem > 0.0 else 0.0)


@njit(cache=True)
def _touch(g_len, g_item, seg, vfin, share, v_at, t_at, ev_item, ev_pos, ev_t, ev_len, r, t):
    """Re-schedule the next completion of group r (its rate or head changed)."""
    if g_len[r] == 0 or share[r] == INF:
        if ev_pos[r] >= 0:
            iheap_remove(ev_item, ev_pos, ev_t, 0, ev_len, 0, r)
        return
    head = g_item[seg[r]]
    dv = vfin[head] - _vclock(share, v_at, t_at, r, t)
    ev_t[r] = t + (dv / share[r] if dv > 0.0 else 0.0)
    if ev_pos[r] >= 0:
        iheap_update(ev_item, ev_pos, ev_t, 0, ev_len, 0, r)
    else:
        iheap_push(ev_item, ev_pos, ev_t, 0, ev_len, 0, r)


@njit(cache=True)
def cc_flush(S):
    """Re-evaluate bottlenecks of the messages the changes of this instant may affect."""
    si = S.si
    if si[N_NEW] == 0 and si[N_DEC] == 0 and si[N_INC] == 0:
        if si[N_TCH] == 0:
            return
    t = S.sf[0]
    share = S.share
    bott = S.bott
    nc = 0
    for i in range(si[N_DEC]):
        # a lower share on r can only attract messages crossing r bottlenecked elsewhere
        r = S.dec_l[i]
        S.dec_f[r] = False
        s = share[r]
        o = S.seg[r]
        for j in range(S.o_len[r]):
            m2 = S.emsg[S.o_item[o + j]]
            b = bott[m2]
            if (s < share[b] or (s == share[b] and r < b)) or s < S.altval[m2]:
                if not S.cand_f[m2]:
                    S.cand_f[m2] = True
                    S.cand_l[nc] = m2
                    nc += 1
    si[N_DEC] = 0
    for i in range(si[N_INC]):
        # a higher share on r: members whose alternative is now better may leave
        r = S.inc_l[i]
        S.inc_f[r] = False
        s = share[r]
        o = S.seg[r]
        while S.a_len[r] > 0 and S.altval[S.a_item[o]] < s:
            m2 = S.a_item[o]
            iheap_remove(S.a_item, S.a_pos, S.altval, o, S.a_len, r, m2)
            S.a_res[m2] = -1
            if not S.cand_f[m2]:
                S.cand_f[m2] = True
                S.cand_l[nc] = m2
                nc += 1
    si[N_INC] = 0
    cand = np.sort(S.cand_l[:nc])
    for m2 in cand:
        S.cand_f[m2] = False
        _, b = _best(S.route_ptr, S.route_res, S.share, m2, -1)
        if b != bott[m2]:
            _move(S, m2, b, t)
        else:
            _push_alt(S.route_ptr, S.route_res, S.share, S.a_res, S.a_item, S.a_pos, S.altval,
                      S.seg, S.a_len, m2, b)
    for i in range(si[N_NEW]):
        m = S.new_m[i]
        _, b = _best(S.route_ptr, S.route_res, S.share, m, -1)
        _join(S, m, b, t, S.new_w[i])
    si[N_NEW] = 0
    nt = si[N_TCH]
    touched = np.sort(S.tch_l[:nt])
    si[N_TCH] = 0
    for r in touched:
        S.tch_f[r] = False
        _touch(S.g_len, S.g_item, S.seg, S.vfin, S.share, S.v_at, S.t_at, S.ev_item,
               S.ev_pos, S.ev_t, S.ev_len, r, t)


@njit(cache=True)
def cc_at(S, t):
    """Changes at a new instant: settle those of the previous one first."""
    if t != S.sf[0]:
        cc_flush(S)
        S.sf[0] = t


@njit(cache=True)
def cc_start(S, m, t, work):
    """Message m begins with ``work`` quiet-seconds on its route at time t."""
    if t != S.sf[0]:
        cc_at(S, t)
    for e in range(S.route_ptr[m], S.route_ptr[m + 1]):
        r = S.route_res[e]
        _set_count(S.free, S.count, S.share, S.v_at, S.t_at, S.peak, S.area, S.busy,
                   S.t_chg, r, t, 1)
        _mark(S.dec_f, S.dec_l, S.si, N_DEC, r)
        _mark(S.tch_f, S.tch_l, S.si, N_TCH, r)
    S.new_m[S.si[N_NEW]] = m
    S.new_w[S.si[N_NEW]] = work
    S.si[N_NEW] += 1
    S.si[N_ACTIVE] += 1


@njit(cache=True)
def cc_set_free(S, r, t, free):
    """Background step: resource r keeps the fraction ``free`` for messages from t on."""
    cc_at(S, t)
    S.v_at[r] = _vclock(S.share, S.v_at, S.t_at, r, t)
    S.t_at[r] = t
    old = S.share[r]
    S.free[r] = free
    c = S.count[r]
    S.share[r] = min(free / c, 1.0) if c > 0 else INF
    if S.share[r] < old:
        _mark(S.dec_f, S.dec_l, S.si, N_DEC, r)
    elif S.share[r] > old:
        _mark(S.inc_f, S.inc_l, S.si, N_INC, r)
    _mark(S.tch_f, S.tch_l, S.si, N_TCH, r)


@njit(cache=True)
def cc_next_time(S):
    cc_flush(S)
    if S.ev_len[0] == 0:
        return INF
    return S.ev_t[S.ev_item[0]]


@njit(cache=True)
def cc_pop_due(S, t, bott_out):
    """Take every message due at time t out of its group; their ids go to ``S.done``
    (in a deterministic order), their bottleneck to ``bott_out``. Returns how many; the
    caller then calls :func:`cc_end` for each and :func:`cc_flush`."""
    cc_flush(S)
    S.sf[0] = t
    nd = 0
    while S.ev_len[0] > 0 and S.ev_t[S.ev_item[0]] <= t:
        r = S.ev_item[0]
        iheap_remove(S.ev_item, S.ev_pos, S.ev_t, 0, S.ev_len, 0, r)
        o = S.seg[r]
        vt = _vclock(S.share, S.v_at, S.t_at, r, t)
        # rounding of the virtual clock only: relative to its magnitude, so a long busy
        # period does not merge completions that are really apart
        tol = 16 * 2.2e-16 * abs(vt)
        first = True
        while S.g_len[r] > 0:
            m2 = S.g_item[o]
            if first or S.vfin[m2] <= vt + tol:
                iheap_remove(S.g_item, S.g_pos, S.vfin, o, S.g_len, r, m2)
                S.done[nd] = m2
                nd += 1
                first = False
            else:
                break
        _mark(S.tch_f, S.tch_l, S.si, N_TCH, r)
    for i in range(nd):
        m = S.done[i]
        bott_out[m] = S.bott[m]
        S.bott[m] = -1
        _alt_out(S.a_res, S.a_item, S.a_pos, S.altval, S.seg, S.a_len, m)
        S.altval[m] = INF
    S.si[N_DONE] = nd
    return nd


@njit(cache=True)
def cc_end(S, m, t):
    """Release the route of a finished message (after :func:`cc_pop_due`)."""
    for e in range(S.route_ptr[m], S.route_ptr[m + 1]):
        r = S.route_res[e]
        _others_del(S.route_res, S.o_pos, S.o_len, S.o_item, S.seg, e)
        _set_count(S.free, S.count, S.share, S.v_at, S.t_at, S.peak, S.area, S.busy,
                   S.t_chg, r, t, -1)
        _mark(S.inc_f, S.inc_l, S.si, N_INC, r)
        _mark(S.tch_f, S.tch_l, S.si, N_TCH, r)
    S.si[N_ACTIVE] -= 1
