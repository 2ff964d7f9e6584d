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
messages than routes cross it, so all pools are allocated once (:func:`cc_new`), as slices
of the kernel's two buffers (``S`` holds offsets into ``I`` and ``F``, see
:mod:`ccmod.kernel.state`).
"""
from __future__ import annotations

import numpy as np

from ccmod.kernel.compiled import cc_state, leaf
from ccmod.kernel.state import CcState
from ccmod.kernel.heaps import (iheap_push, iheap_remove, iheap_update, resource_segments,
                                sort_ids)

INF = np.inf
# integer scalars (si) and float scalars (sf) of the state
N_NEW, N_DEC, N_INC, N_TCH, N_ACTIVE, N_CAND, N_DONE = range(7)



def cc_new(A, nresources, background, route_ptr, route_res, seg_cap=None, routes=None):
    """Lay out, in arena ``A`` (:class:`ccmod.kernel.state.Arena`), the state for messages
    with the given routes (CSR over resource ids); returns the offsets.

    ``seg_cap[l]`` bounds how many messages may be active on ``l`` at once (default: how
    many routes cross it). ``routes``: the ``(route_ptr, route_res)`` fields laid out
    already (``A.where(...)``), shared instead of copied.
    """
    R = int(nresources)
    M = len(route_ptr) - 1
    E = len(route_res)
    seg, P = resource_segments(R, route_res, seg_cap)
    emsg = np.zeros(E, np.int64)     # message of each route entry
    rep = np.repeat(np.arange(M, dtype=np.int64), np.diff(route_ptr))
    emsg[:len(rep)] = rep
    P = max(P, 1)
    if routes is None:
        routes = (("i", M + 1, np.asarray(route_ptr, np.int64)),
                  ("i", E, np.asarray(route_res, np.int64)))
    return A.struct(
        CcState, free=("f", R, 1.0 - np.asarray(background, np.float64)), count=("i", R, 0),
        share=("f", R, INF), v_at=("f", R, 0.0), t_at=("f", R, 0.0), peak=("i", R, 0),
        area=("f", R, 0.0), busy=("f", R, 0.0), t_chg=("f", R, 0.0), seg=("i", R + 1, seg),
        g_len=("i", R, 0), g_item=("i", P, 0), g_pos=("i", M, -1), vfin=("f", M, 0.0),
        a_len=("i", R, 0), a_item=("i", P, 0), a_pos=("i", M, -1), a_res=("i", M, -1),
        altval=("f", M, INF), o_len=("i", R, 0), o_item=("i", P, 0), o_pos=("i", E, -1),
        bott=("i", M, -1), ev_len=("i", 1, 0), ev_item=("i", R, 0), ev_pos=("i", R, -1),
        ev_t=("f", R, INF), new_m=("i", M, 0), new_w=("f", M, 0.0), dec_f=("i", R, 0),
        dec_l=("i", R, 0), inc_f=("i", R, 0), inc_l=("i", R, 0), tch_f=("i", R, 0),
        tch_l=("i", R, 0), cand_f=("i", M, 0), cand_l=("i", M, 0), done=("i", M, 0),
        si=("i", 8, 0), sf=("f", 2, 0.0), route_ptr=routes[0], route_res=routes[1],
        emsg=("i", E, emsg))


@leaf
def _vclock(S, F, r, t):
    s = F[S.share + r]
    if s == INF:
        return F[S.v_at + r]
    return F[S.v_at + r] + s * (t - F[S.t_at + r])


@leaf
def cc_vclock(I, F, r, t):
    """Virtual clock (quiet-seconds served per message) of group r at time t."""
    S = cc_state(I)
    return _vclock(S, F, r, t)


@leaf
def _mark(I, flag, lst, si, k, r):
    if not I[flag + r]:
        I[flag + r] = 1
        I[lst + I[si + k]] = r
        I[si + k] += 1


@leaf
def cc_set_count(I, F, r, t, delta):
    """Change the contention of resource r at time t (integrating its statistics)."""
    S = cc_state(I)
    F[S.v_at + r] = _vclock(S, F, r, t)
    F[S.t_at + r] = t
    c0 = I[S.count + r]
    if c0:
        dt = t - F[S.t_chg + r]
        F[S.area + r] += c0 * dt
        F[S.busy + r] += dt
    F[S.t_chg + r] = t
    c = c0 + delta
    I[S.count + r] = c
    # BA never exceeds 1 (no faster than quiet): only binds when free > 1, i.e. under
    # ccmod:capacity=ratio where free is a capacity / quiet-bandwidth ratio
    F[S.share + r] = min(F[S.free + r] / c, 1.0) if c > 0 else INF
    if c > I[S.peak + r]:
        I[S.peak + r] = c
    if c == 0:
        F[S.v_at + r] = 0.0      # empty group: restart its clock (keeps precision)
    return c


@leaf
def _best(S, I, F, m, exclude):
    """(min share, resource) over m's route, optionally excluding one resource."""
    best = INF
    br = -1
    for e in range(I[S.route_ptr + m], I[S.route_ptr + m + 1]):
        r = I[S.route_res + e]
        if r != exclude:
            s = F[S.share + r]
            if s < best or (s == best and r < br):
                best = s
                br = r
    return best, br


@leaf
def _alt_out(S, I, F, m):
    h = I[S.a_res + m]
    if h >= 0:
        iheap_remove(I, F, S.a_item, S.a_pos, S.altval, I[S.seg + h], S.a_len, h, m)
        I[S.a_res + m] = -1


@leaf
def _push_alt(I, F, m, b):
    S = cc_state(I)
    alt, _ = _best(S, I, F, m, b)
    _alt_out(S, I, F, m)
    F[S.altval + m] = alt
    if alt < INF:
        iheap_push(I, F, S.a_item, S.a_pos, S.altval, I[S.seg + b], S.a_len, b, m)
        I[S.a_res + m] = b


@leaf
def _others_add(S, I, e):
    r = I[S.route_res + e]
    if I[S.o_pos + e] < 0:
        n = I[S.o_len + r]
        I[S.o_item + I[S.seg + r] + n] = e
        I[S.o_pos + e] = n
        I[S.o_len + r] = n + 1


@leaf
def _others_del(S, I, e):
    i = I[S.o_pos + e]
    if i >= 0:
        r = I[S.route_res + e]
        n = I[S.o_len + r] - 1
        o = S.o_item + I[S.seg + r]
        last = I[o + n]
        I[o + i] = last
        I[S.o_pos + last] = i
        I[S.o_len + r] = n
        I[S.o_pos + e] = -1


@leaf
def _join(I, F, m, r, t, remaining):
    """Put m into group r with ``remaining`` quiet-seconds of work."""
    S = cc_state(I)
    I[S.bott + m] = r
    F[S.vfin + m] = _vclock(S, F, r, t) + remaining
    iheap_push(I, F, S.g_item, S.g_pos, S.vfin, I[S.seg + r], S.g_len, r, m)
    for e in range(I[S.route_ptr + m], I[S.route_ptr + m + 1]):
        if I[S.route_res + e] == r:
            _others_del(S, I, e)
        else:
            _others_add(S, I, e)
    _push_alt(I, F, m, r)
    _mark(I, S.tch_f, S.tch_l, S.si, N_TCH, r)


@leaf
def _move(I, F, m, r_new, t):
    S = cc_state(I)
    old = I[S.bott + m]
    rem = F[S.vfin + m] - _vclock(S, F, old, t)
    iheap_remove(I, F, S.g_item, S.g_pos, S.vfin, I[S.seg + old], S.g_len, old, m)
    for e in range(I[S.route_ptr + m], I[S.route_ptr + m + 1]):
        if I[S.route_res + e] == old:
            _others_add(S, I, e)
    _mark(I, S.tch_f, S.tch_l, S.si, N_TCH, old)
    _join(I, F, m, r_new, t, rem if rem > 0.0 else 0.0)


@leaf
def _touch(I, F, r, t):
    """Re-schedule the next completion of group r (its rate or head changed)."""
    S = cc_state(I)
    if I[S.g_len + r] == 0 or F[S.share + r] == INF:
        if I[S.ev_pos + r] >= 0:
            iheap_remove(I, F, S.ev_item, S.ev_pos, S.ev_t, 0, S.ev_len, 0, r)
        return
    head = I[S.g_item + I[S.seg + r]]
    dv = F[S.vfin + head] - _vclock(S, F, r, t)
    F[S.ev_t + r] = t + (dv / F[S.share + r] if dv > 0.0 else 0.0)
    if I[S.ev_pos + r] >= 0:
        iheap_update(I, F, S.ev_item, S.ev_pos, S.ev_t, 0, S.ev_len, 0, r)
    else:
        iheap_push(I, F, S.ev_item, S.ev_pos, S.ev_t, 0, S.ev_len, 0, r)


@leaf
def cc_flush(I, F):
    """Re-evaluate bottlenecks of the messages the changes of this instant may affect."""
    S = cc_state(I)
    si = S.si
    if I[si + N_NEW] == 0 and I[si + N_DEC] == 0 and I[si + N_INC] == 0:
        if I[si + N_TCH] == 0:
            return
    t = F[S.sf]
    share = S.share
    nc = 0
    for i in range(I[si + N_DEC]):
        # a lower share on r can only attract messages crossing r bottlenecked elsewhere
        r = I[S.dec_l + i]
        I[S.dec_f + r] = 0
        s = F[share + r]
        o = S.o_item + I[S.seg + r]
        for j in range(I[S.o_len + r]):
            m2 = I[S.emsg + I[o + j]]
            b = I[S.bott + m2]
            sb = F[share + b]
            if (s < sb or (s == sb and r < b)) or s < F[S.altval + m2]:
                if not I[S.cand_f + m2]:
                    I[S.cand_f + m2] = 1
                    I[S.cand_l + nc] = m2
                    nc += 1
    I[si + N_DEC] = 0
    for i in range(I[si + N_INC]):
        # a higher share on r: members whose alternative is now better may leave
        r = I[S.inc_l + i]
        I[S.inc_f + r] = 0
        s = F[share + r]
        o = I[S.seg + r]
        while I[S.a_len + r] > 0 and F[S.altval + I[S.a_item + o]] < s:
            m2 = I[S.a_item + o]
            iheap_remove(I, F, S.a_item, S.a_pos, S.altval, o, S.a_len, r, m2)
            I[S.a_res + m2] = -1
            if not I[S.cand_f + m2]:
                I[S.cand_f + m2] = 1
                I[S.cand_l + nc] = m2
                nc += 1
    I[si + N_INC] = 0
    sort_ids(I, S.cand_l, nc)
    for i in range(nc):
        m2 = I[S.cand_l + i]
        I[S.cand_f + m2] = 0
        _, b = _best(S, I, F, m2, -1)
        if b != I[S.bott + m2]:
            _move(I, F, m2, b, t)
        else:
            _push_alt(I, F, m2, b)
    for i in range(I[si + N_NEW]):
        m = I[S.new_m + i]
        _, b = _best(S, I, F, m, -1)
        _join(I, F, m, b, t, F[S.new_w + i])
    I[si + N_NEW] = 0
    nt = I[si + N_TCH]
    sort_ids(I, S.tch_l, nt)
    I[si + N_TCH] = 0
    for i in range(nt):
        r = I[S.tch_l + i]
        I[S.tch_f + r] = 0
        _touch(I, F, r, t)


@leaf
def cc_at(I, F, t):
    """Changes at a new instant: settle those of the previous one first."""
    S = cc_state(I)
    if t != F[S.sf]:
        cc_flush(I, F)
        F[S.sf] = t


@leaf
def cc_start(I, F, m, t, work):
    """Message m begins with ``work`` quiet-seconds on its route at time t."""
    S = cc_state(I)
    if t != F[S.sf]:
        cc_at(I, F, t)
    for e in range(I[S.route_ptr + m], I[S.route_ptr + m + 1]):
        r = I[S.route_res + e]
        cc_set_count(I, F, r, t, 1)
        _mark(I, S.dec_f, S.dec_l, S.si, N_DEC, r)
        _mark(I, S.tch_f, S.tch_l, S.si, N_TCH, r)
    k = I[S.si + N_NEW]
    I[S.new_m + k] = m
    F[S.new_w + k] = work
    I[S.si + N_NEW] = k + 1
    I[S.si + N_ACTIVE] += 1


@leaf
def cc_set_free(I, F, r, t, free):
    """Background step: resource r keeps the fraction ``free`` for messages from t on."""
    S = cc_state(I)
    cc_at(I, F, t)
    F[S.v_at + r] = _vclock(S, F, r, t)
    F[S.t_at + r] = t
    old = F[S.share + r]
    F[S.free + r] = free
    c = I[S.count + r]
    F[S.share + r] = min(free / c, 1.0) if c > 0 else INF
    if F[S.share + r] < old:
        _mark(I, S.dec_f, S.dec_l, S.si, N_DEC, r)
    elif F[S.share + r] > old:
        _mark(I, S.inc_f, S.inc_l, S.si, N_INC, r)
    _mark(I, S.tch_f, S.tch_l, S.si, N_TCH, r)


@leaf
def cc_next_time(I, F):
    S = cc_state(I)
    cc_flush(I, F)
    if I[S.ev_len] == 0:
        return INF
    return F[S.ev_t + I[S.ev_item]]


@leaf
def cc_pop_due(I, F, t, bott_out):
    """Take every message due at time t out of its group; their ids go to ``S.done``
    (in a deterministic order), their bottleneck to ``I[bott_out + m]``. Returns how
    many; the caller then calls :func:`cc_end` for each and :func:`cc_flush`."""
    S = cc_state(I)
    cc_flush(I, F)
    F[S.sf] = t
    nd = 0
    while I[S.ev_len] > 0 and F[S.ev_t + I[S.ev_item]] <= t:
        r = I[S.ev_item]
        iheap_remove(I, F, S.ev_item, S.ev_pos, S.ev_t, 0, S.ev_len, 0, r)
        o = I[S.seg + r]
        vt = _vclock(S, F, r, t)
        # rounding of the virtual clock only: relative to its magnitude, so a long busy
        # period does not merge completions that are really apart
        tol = 16 * 2.2e-16 * abs(vt)
        first = True
        while I[S.g_len + r] > 0:
            m2 = I[S.g_item + o]
            if first or F[S.vfin + m2] <= vt + tol:
                iheap_remove(I, F, S.g_item, S.g_pos, S.vfin, o, S.g_len, r, m2)
                I[S.done + nd] = m2
                nd += 1
                first = False
            else:
                break
        _mark(I, S.tch_f, S.tch_l, S.si, N_TCH, r)
    for i in range(nd):
        m = I[S.done + i]
        I[bott_out + m] = I[S.bott + m]
        I[S.bott + m] = -1
        _alt_out(S, I, F, m)
        F[S.altval + m] = INF
    I[S.si + N_DONE] = nd
    return nd


@leaf
def cc_end(I, F, m, t):
    """Release the route of a finished message (after :func:`cc_pop_due`)."""
    S = cc_state(I)
    for e in range(I[S.route_ptr + m], I[S.route_ptr + m + 1]):
        r = I[S.route_res + e]
        _others_del(S, I, e)
        cc_set_count(I, F, r, t, -1)
        _mark(I, S.inc_f, S.inc_l, S.si, N_INC, r)
        _mark(I, S.tch_f, S.tch_l, S.si, N_TCH, r)
    I[S.si + N_ACTIVE] -= 1
