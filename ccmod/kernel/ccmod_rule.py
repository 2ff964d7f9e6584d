"""The article's sharing rule over flat arrays: contention, bandwidth availability, groups.

Each active message has a routing array (its resources). The contention array ``count[l]``
(CCMOD's CA) counts active messages on resource ``l``; the bandwidth availability of a
message is ``BA = min over its route of free[l] / count[l]`` (``free = 1 - background``)
and it progresses at ``BA`` quiet-seconds per second. A share never exceeds 1: that only
matters when the engine gives a resource ``free > 1`` (``ccmod:capacity=ratio``: free is the
resource's capacity over the quiet bandwidth of its messages).

All messages whose minimum is attained on the same resource ``l`` (its bottleneck *group*)
progress at the same rate ``share[l]``; the group keeps one virtual clock (``v_at``,
``t_at``) and its members ordered by finish mark ``vfin`` in virtual time (a sorted run
plus a heap, :mod:`ccmod.kernel.cc_groups`), so a start or end costs O(hops + log A), O(hops)
when members join in finish order, instead of touching every active message. Bottleneck
changes are found lazily, once per event horizon (:func:`ccmod.kernel.cc_flush.cc_flush`),
through *pairs* ``(r, b)``: the route entries at resource ``r`` of the members of group
``b`` (``b != r``), one pair per distinct ``(r, b)``, held in ``r``'s list and in ``b``'s
heap keyed by ``share[r]`` (equal keys in no particular order: the heap is only ever walked
down to a key, never popped, and what the walk finds is sorted; its "tie" is ``pb``, the
same ``b`` for all, so a pair joining or leaving among equal keys, as the senders of an
incast do, sifts nowhere). A member of ``b`` must move exactly when some pair of ``b`` has
``r`` binding before ``b`` (lower share, ties to the lower id), so after the shares of an instant changed:

* a changed ``share[r]`` re-keys ``r``'s pairs (a drop marks their groups to check);
* a rise of ``share[b]`` marks ``b`` to check;
* checking ``b`` walks its heap only down to keys ``<= share[b]``; only the members of
  pairs that bind before ``b`` become candidates, and all of them move.

So an event costs O(hops x pairs-per-resource x log) plus the moves, independent of how
many messages share a pair (identical routes: one pair, however many messages).

A route entry alone on its resource (the sender's uplink of an incast) is *deferred*
instead of paired until it could matter (:mod:`ccmod.kernel.cc_pairs`).

The next completion of every group is one entry of an indexed heap over resources (the
sharing part of the event horizon). Sizes are static: a resource's groups never hold more
messages than routes cross it, so all pools are allocated once (:func:`cc_new`), as slices
of the kernel's two buffers (``S`` holds offsets into ``I`` and ``F``, see
:mod:`ccmod.kernel.state`).
"""
from __future__ import annotations

import numpy as np

from ccmod.kernel.compiled import cc_state, leaf, leaf_apart
from ccmod.kernel.rawbuf import as_i32
from ccmod.kernel.state import (CC_RES_F, CC_RES_I, CF_AREA, CF_BUSY, CF_DMIN, CF_FREE,
                                CF_SHARE, CF_T_AT, CF_T_CHG, CF_V_AT, CI_COUNT, CI_DEC, CI_DFR,
                                CI_G_LEN, CI_INC, CI_L_HEAD, CI_L_TAIL, CI_LONE, CI_NDEF,
                                CI_PEAK, CI_PH_LEN, CI_RP_HEAD, CI_TCH, CRF, CRI, CcRes, CcState,
                                check_ids, records)
from ccmod.kernel.cc_flush import _best, cc_flush, cc_pending, join_alone_s
from ccmod.kernel.cc_groups import _vclock, g_del, g_empty, g_first, g_take_sorted
from ccmod.kernel.cc_pairs import (N_ACTIVE, N_CAND, N_DEC, N_DONE, N_ETOP, N_FRESH, N_INC,
                                   N_NEW, N_PF, N_SI, N_TCH, _mark, _others_del, entries_give,
                                   pair_deferred)
from ccmod.kernel.heaps import heap_pop, resource_segments

INF = np.inf
# the indices (N_*) of the state's integer scalars ``si``: ccmod.kernel.cc_pairs


def cc_new(A, nresources, background, route_ptr, route_res, seg_cap=None, routes=None,
           pair_cap=None, max_hops=None, entry_blocks=True, bott=None):
    """Lay out, in arena ``A`` (:class:`ccmod.kernel.state.Arena`), the state for messages
    with the given routes (CSR over resource ids); returns the offsets.

    ``seg_cap[l]`` bounds how many messages may be active on ``l`` at once (default: how
    many routes cross it), ``pair_cap[l]`` how many pairs group ``l`` may have (default:
    from ``seg_cap``). ``routes``: the ``(route_ptr, route_res, route_end, okey)`` fields
    laid out already (``A.where(...)``), shared (default: laid out here, the ids as order
    keys). ``max_hops``: the longest route (default: the given one's); ``entry_blocks``
    False: a message's links at its own route entries (recycled slots, cc_pairs).
    ``bott``: the ``("=", ...)`` of the run's per-message bottleneck output (``MsgSt.bott``,
    laid out already): the rule keeps each message's group there (an active message's
    group, a finished one's last), and :func:`cc_pop_due` given that output copies
    nothing (default: a field of its own, copied to the output at each end)."""
    R = int(nresources)
    M = len(route_ptr) - 1
    E = len(route_res)
    check_ids(E, M, R)   # entry, pair, message and resource ids in int32 fields (as_i32)
    seg, P = resource_segments(R, route_res, seg_cap)
    # pairs (r, b) with b a group: at most one per route entry; a group's heap of pairs
    # holds at most one pair per other resource, and no more than its members' other hops
    NP = max(E, 1)
    if pair_cap is not None:
        pcap = np.asarray(pair_cap, np.int64)
    elif seg_cap is None:
        hops = int(np.max(np.diff(route_ptr))) if M > 0 else 1
        pcap = np.minimum(np.diff(seg) * max(hops - 1, 0), R)
    else:
        pcap = np.full(R, R, np.int64)
    pseg, PP = resource_segments(R, route_res, pcap)
    P = max(P, 1)
    H = int(max_hops if max_hops is not None else np.max(np.diff(route_ptr)) if M else 0)
    si0 = np.zeros(N_SI, np.int64)
    # a pair's fields, a heap position (g_pos, ph_pos), an entry slot's links (cc_pairs) are
    # written before they are read: left zero, the pages of pairs and slots never in use are
    # never touched (the pools are sized for every route entry at once). The free stack of
    # pairs starts as an implicit 0..NP-1.
    si0[N_PF] = si0[N_FRESH] = NP
    si0[N_ETOP] = 0 if entry_blocks else -1
    if routes is None:
        from ccmod.kernel.state import own_routes
        routes = own_routes(A, route_ptr, route_res)
    ri, rf, res = _resource_records(A, R, background)
    return A.struct(
        CcState, ri=("v", ri), rf=("v", rf), **res, seg=("i", R + 1, seg),
        g_item=("i", P, 0), g_pos=("i", M, 0), vfin=("f", M, 0.0),
        pr=("i", NP, 0), pb=("i", NP, 0), pcnt=("i", NP, 0), phead=("i", NP, 0),
        pkey=("f", NP, 0.0), ph_pos=("i", NP, 0), rnext=("i", NP, 0), rprev=("i", NP, 0),
        pfree=("i", NP, 0), ph_seg=("i", R + 1, pseg), ph_item=("i", max(PP, 1), 0),
        e_pair=("j", E, 0), e_next=("j", E, 0), e_prev=("j", E, 0),
        stk=("i", int(max(pcap.max() if R else 0, 0)) + 1, 0), chk_l=("i", R, 0),
        bott=("j", M, -1) if bott is None else bott, ev_len=("i", 1, 0), ev_item=("i", R, 0),
        ev_pos=("i", R, -1), ev_t=("f", R, INF), new_m=("i", M, 0), new_w=("f", M, 0.0),
        dec_l=("i", R, 0), inc_l=("i", R, 0), tch_l=("i", R, 0), cand_f=("j", M, 0),
        cand_l=("i", M, 0), done=("i", M, 0), si=("i", N_SI, si0), sf=("f", 2, 0.0),
        route_ptr=routes[0], route_res=routes[1], emsg=("j", E, 0), route_end=routes[2],
        okey=routes[3], g_next=("j", M, 0), e_base=("j", M, 0), eb_head=("j", H + 1, -1))


def _resource_records(A, R, background):
    """Lay out the resources' records (:data:`ccmod.kernel.state.CC_RES_I`, ``CC_RES_F``)
    in arena ``A``: ``(ri, rf, fields)``, the records' offsets in ``I`` and ``F`` and the
    strided specs of their fields (Python's views of them)."""
    init = {"lone": -1, "dfr": -1, "l_head": -1, "l_tail": -1, "rp_head": -1,
            "share": INF, "free": 1.0 - np.asarray(background, np.float64), "dmin": INF}
    recs, fields = records(A, CcRes, R, (CC_RES_I, CRI), (CC_RES_F, CRF), init)
    return recs.irec, recs.frec, fields


@leaf
def cc_vclock(I, F, r, t):
    """Virtual clock (quiet-seconds served per message) of group r at time t."""
    return _vclock(F, cc_state(I).rf + r * CRF, t)


@leaf
def cc_set_count(I, F, r, t, delta):
    """Change the contention of resource r at time t (integrating its statistics)."""
    return _set_count(cc_state(I), I, F, r, t, delta)


@leaf
def _set_count(S, I, F, r, t, delta):
    """:func:`cc_set_count` with the caller's offsets: inlined in a start's or an end's
    loop over the route, reading its own after each hop's stores into ``I`` (which may be
    the header, for all LLVM knows) cost ~10 loads per hop."""
    q = S.ri + r * CRI
    u = S.rf + r * CRF
    c0 = I[q + CI_COUNT]
    c = c0 + delta
    if c == 0:
        _went_idle(I, F, q, u, t)
        return 0
    # a second change of r at one instant (the starts and ends of an incast) integrates
    # nothing: the clock and the statistics would add exact zeros (v_at + s * 0.0 is
    # v_at, the values being >= +0.0)
    if F[u + CF_T_AT] != t:
        if c0:
            # (idle, the share is infinite and the clock stands still; emptied, it
            # restarts: only a group that keeps members carries its clock on)
            F[u + CF_V_AT] = _vclock(F, u, t)
        F[u + CF_T_AT] = t
    if F[u + CF_T_CHG] != t:
        if c0:
            dt = t - F[u + CF_T_CHG]
            F[u + CF_AREA] += c0 * dt
            F[u + CF_BUSY] += dt
        F[u + CF_T_CHG] = t
    I[q + CI_COUNT] = c
    # BA never exceeds 1 (no faster than quiet): only binds when free > 1, i.e. under
    # ccmod:capacity=ratio where free is a capacity / quiet-bandwidth ratio (free / 1 is
    # free exactly: no division for a message alone on r)
    if c == 1:
        F[u + CF_SHARE] = min(F[u + CF_FREE], 1.0)
    else:
        F[u + CF_SHARE] = min(F[u + CF_FREE] / c, 1.0)
    if c > I[q + CI_PEAK]:
        I[q + CI_PEAK] = c
    return c


@leaf
def _went_idle(I, F, q, u, t):
    """The last message on a resource (its records at ``q`` in ``I`` and ``u`` in ``F``)
    left it at t (its count 1 -> 0): integrate its statistics (its count, 1, times the
    time since the last change) and empty its group (infinite share, the clock restarts:
    keeps precision). :func:`_set_count`'s end of a resource, also :func:`_end_alone`'s
    whole work per resource. The clock's time ``t_at`` is left as it is: an idle group's
    clock reads ``v_at`` alone (its share is infinite), and whatever makes the resource
    busy again sets ``t_at`` first (:func:`cc_start`, :func:`_set_count`,
    :func:`cc_set_free`)."""
    if F[u + CF_T_CHG] != t:
        dt = t - F[u + CF_T_CHG]
        F[u + CF_AREA] += dt
        F[u + CF_BUSY] += dt
        F[u + CF_T_CHG] = t
    I[q + CI_COUNT] = 0
    F[u + CF_SHARE] = INF
    F[u + CF_V_AT] = 0.0


@leaf
def _join_busy(I, F, r, t):
    """A start joins resource r, which has messages already: count it, and mark r's pairs
    to re-key (a lower share matters only to them: without any, every message on r has
    its bottleneck at r, or joins at the flush) and its group to re-schedule. Out of line,
    with its own offsets: a start's common hop (r idle) does not load these."""
    S = cc_state(I)
    _set_count(S, I, F, r, t, 1)
    q = S.ri + r * CRI
    if I[q + CI_RP_HEAD] >= 0:
        _mark(I, q + CI_DEC, S.dec_l, S.si, N_DEC, r)
    if not g_empty(S, I, r):
        # (an empty group, r no member's bottleneck, has no completion to re-schedule:
        # a member joining it later marks it then)
        _mark(I, q + CI_TCH, S.tch_l, S.si, N_TCH, r)


@leaf
def _pair_before_change(I, F, r):
    """Resource r is about to change and holds an entry left unpaired (a message alone on
    its route, or a deferred entry): pair it. Out of line, with its own offsets, which the
    callers' common path (nothing unpaired on r) then does not load at every call."""
    S = cc_state(I)
    if I[S.ri + r * CRI + CI_LONE] >= 0:
        _pairs_of_lone(S, I, F, r)
    else:
        pair_deferred(S, I, F, r)


@leaf
def _pairs_of_lone(S, I, F, r):
    """Resource r is about to change (a message joins it, its background steps) while the
    message on it is alone on its whole route: that message is no longer alone, and its
    entries get the pairs and deferrals its join left out at the flush, where it is a
    *pending* candidate (``cand_f`` 2, :func:`ccmod.kernel.cc_flush._flush_moves`): most
    then move at once (r's share dropped below their group's), and pairing them here
    would only be undone by the move (a pair made and freed, a heap push and remove, each
    other entry deferred twice). A pending candidate's entries are neither paired nor
    deferred, so no change at this instant finds it through them: it is not alone on any
    resource (``lone`` cleared), no pair crosses its resources but others', and the flush
    treats it as any candidate (moved when its best group changed, in order key order)."""
    m = I[S.ri + r * CRI + CI_LONE]
    for e in range(as_i32(I)[S.route_ptr + m], as_i32(I)[S.route_end + m]):
        I[S.ri + as_i32(I)[S.route_res + e] * CRI + CI_LONE] = -1
    nc = I[S.si + N_CAND]
    as_i32(I)[S.cand_f + m] = 2
    I[S.cand_l + nc] = m
    I[S.si + N_CAND] = nc + 1


@leaf
def cc_at(I, F, t):
    """Changes at a new instant: settle those of the previous one first."""
    S = cc_state(I)
    if t != F[S.sf]:
        if cc_pending(I, S.si):
            cc_flush(I, F)
        F[S.sf] = t


@leaf
def cc_start(I, F, m, t, work):
    """Message m begins with ``work`` quiet-seconds on its route at time t. A message
    whose every hop was idle (most of light traffic) joins its group here
    (:func:`ccmod.kernel.cc_flush._join_alone`), not at the flush: nothing is left
    pending, and the flush, most instants' only one, is not called. Whatever changes one
    of its resources at this instant after it (another start there, a background step)
    finds it ``lone`` and makes it a pending candidate (:func:`_pairs_of_lone`), and the
    flush moves it or pairs its entries as it would have joined it (its group's clock has
    not moved since t, so its remaining work is exactly ``work``; ``work > 0``: the
    move's clamp at 0 changes nothing)."""
    S = cc_state(I)
    if t != F[S.sf]:
        cc_at(I, F, t)
    as_i32(I)[S.e_base + m] = -1          # no entry slots yet (cc_pairs)
    idle = True
    for e in range(as_i32(I)[S.route_ptr + m], as_i32(I)[S.route_end + m]):
        r = as_i32(I)[S.route_res + e]
        q = S.ri + r * CRI
        if I[q + CI_COUNT] == 0:
            # r was idle (most hops of light traffic): its clocks start at t, nothing to
            # integrate (as _set_count from 0), no pairs to re-key, its group nothing to
            # re-schedule (a message alone on its route costs no flush work beyond its
            # own join), no entry left unpaired (lone, deferred: an active message's)
            u = S.rf + r * CRF
            I[q + CI_COUNT] = 1
            F[u + CF_T_AT] = t
            F[u + CF_T_CHG] = t
            F[u + CF_SHARE] = min(F[u + CF_FREE], 1.0)
            if I[q + CI_PEAK] < 1:
                I[q + CI_PEAK] = 1
        else:
            idle = False
            if I[q + CI_LONE] >= 0 or I[q + CI_DFR] >= 0:
                _pair_before_change(I, F, r)
            _join_busy(I, F, r, t)
    I[S.si + N_ACTIVE] += 1
    if idle and work > 0.0:
        _start_alone(I, F, m, t, work)
        return
    k = I[S.si + N_NEW]
    I[S.new_m + k] = m
    F[S.new_w + k] = work
    I[S.si + N_NEW] = k + 1


@leaf_apart
def _start_alone(I, F, m, t, work):
    """:func:`cc_start`'s message m, every hop of which was idle, joins its group. Kept out
    of line (:func:`ccmod.kernel.compiled.leaf_apart`), with its own offsets: inlined, the
    offsets of this walk and join were loaded at :func:`cc_start`'s entry and spilled, and
    a busy start (an incast's every one) paid ~9 instructions for them; an idle start pays
    ~3 more for the call. (A second walk, the flush's: the best hop found in the start's
    walk kept two more values live across its calls, ~50 instructions more per busy
    start.)"""
    S = cc_state(I)
    b, _ = _best(S, I, F, m, True)
    join_alone_s(S, I, F, m, b, t, work)


@leaf
def cc_set_free(I, F, r, t, free):
    """Background step: resource r keeps the fraction ``free`` for messages from t on."""
    S = cc_state(I)
    cc_at(I, F, t)
    q = S.ri + r * CRI
    u = S.rf + r * CRF
    if I[q + CI_LONE] >= 0 or I[q + CI_DFR] >= 0:
        _pair_before_change(I, F, r)
    F[u + CF_V_AT] = _vclock(F, u, t)
    F[u + CF_T_AT] = t
    old = F[u + CF_SHARE]
    if free > F[u + CF_FREE] and I[q + CI_NDEF] > 0:
        F[u + CF_DMIN] = 0.0          # its ceiling rose: pair its deferred entries at its check
    F[u + CF_FREE] = free
    c = I[q + CI_COUNT]
    F[u + CF_SHARE] = min(free / c, 1.0) if c > 0 else INF
    if F[u + CF_SHARE] < old:
        _mark(I, q + CI_DEC, S.dec_l, S.si, N_DEC, r)
    elif F[u + CF_SHARE] > old:
        _mark(I, q + CI_INC, S.inc_l, S.si, N_INC, r)
    _mark(I, q + CI_TCH, S.tch_l, S.si, N_TCH, r)


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
    (in a deterministic order), their bottleneck to ``as_i32(I)[bott_out + m]``. Returns how
    many; the caller then calls :func:`cc_end` for each and :func:`cc_flush`."""
    S = cc_state(I)
    if cc_pending(I, S.si):
        cc_flush(I, F)
    return cc_pop_due_s(S, I, F, t, bott_out)


@leaf
def cc_pop_due_s(S, I, F, t, bott_out):
    """:func:`cc_pop_due` with the rule's offsets ``S`` given (the loop reads them once a
    call: read here, the ~20 this uses were loaded and spilled at every completion).
    Nothing is pending (:func:`cc_pending`): the loop asks for the completions due at the
    time :func:`ccmod.kernel.rules.rule_next` gave it, after that flushed."""
    J = as_i32(I)
    F[S.sf] = t
    nd = 0
    while I[S.ev_len] > 0 and F[S.ev_t + I[S.ev_item]] <= t:
        r = heap_pop(I, F, S.ev_item, S.ev_pos, S.ev_t, -1, 0, S.ev_len, 0)
        q = S.ri + r * CRI
        h = I[q + CI_L_HEAD]
        if I[q + CI_G_LEN] == 0 and h >= 0 and J[S.g_next + h] < 0:
            # one member (a message alone on its route, most ends of light traffic): it
            # is the one due, taken as g_first and g_del below would, and the group is
            # empty (no clock to read, no re-schedule)
            I[S.g_pos + h] = -1
            I[q + CI_L_HEAD] = -1
            I[q + CI_L_TAIL] = -1
            I[S.done + nd] = h
            nd += 1
            continue
        vt = _vclock(F, S.rf + r * CRF, t)
        # rounding of the virtual clock only: relative to its magnitude, so a long busy
        # period does not merge completions that are really apart
        tol = 16 * 2.2e-16 * abs(vt)
        # the whole group due in one sorted heap (members that joined together in
        # order, finishing together): taken as it is, without a sift each
        nd += g_take_sorted(S, I, F, r, vt + tol, S.done + nd)
        first = True
        while True:
            m2 = g_first(S, I, F, r)
            if m2 < 0 or not (first or F[S.vfin + m2] <= vt + tol):
                break
            g_del(S, I, F, r, m2)
            I[S.done + nd] = m2
            nd += 1
            first = False
        if not g_empty(S, I, r):
            # members left: re-schedule; an emptied group is out of the heap already
            # (nothing to touch: a lone message's end then needs no flush at all)
            _mark(I, S.ri + r * CRI + CI_TCH, S.tch_l, S.si, N_TCH, r)
    if bott_out != S.bott:
        # (a group of its own: its last group is the output; the engine's rule keeps
        # its groups in the output itself, cc_new's bott)
        for i in range(nd):
            m = I[S.done + i]
            J[bott_out + m] = J[S.bott + m]
    I[S.si + N_DONE] = nd
    return nd


@leaf
def _may_leave(I, F, q, u):
    """After the share of a resource (its records at ``q`` in ``I``, ``u`` in ``F``)
    rose: may its check find anything at the flush? Not when it has no pairs to re-key,
    its group no pair (``ph_len``) and no deferred entry its share has reached (``dmin``):
    the check would walk nothing. (An incast's downlink, whose members' other entries are
    all deferred: each end then only re-schedules the group.) Whatever could add one
    before the flush marks the resource itself: a pair in its group from a change on its
    resource (re-keyed there with a drop, which marks it; or keyed above its ceiling), a
    lowered ``dmin`` only at joins (after the checks) or with a rise of its ``free``
    (which marks it); a later end at this instant asks again, with the higher share."""
    return (I[q + CI_RP_HEAD] >= 0 or I[q + CI_PH_LEN] > 0 or
            F[u + CF_DMIN] <= F[u + CF_SHARE])


@leaf
def cc_end(I, F, m, t):
    """Release the route of a finished message (after :func:`cc_pop_due`)."""
    S = cc_state(I)
    e0 = as_i32(I)[S.route_ptr + m]
    # (each path with its own offsets: loaded here, the shared end's ~25 were paid by
    # every end, most of which are lone in light traffic)
    if e0 < as_i32(I)[S.route_end + m] and \
            I[S.ri + as_i32(I)[S.route_res + e0] * CRI + CI_LONE] >= 0:
        _end_alone(I, F, m, t)
    else:
        _end_shared(I, F, m, t)


@leaf
def _end_shared(I, F, m, t):
    """:func:`cc_end` of a message that shared a resource on its route: leave its pairs
    and deferrals, count each resource down, mark what may change at the flush."""
    S = cc_state(I)
    d = as_i32(I)[S.e_base + m] - as_i32(I)[S.route_ptr + m]     # route entry -> entry slot
    for e in range(as_i32(I)[S.route_ptr + m], as_i32(I)[S.route_end + m]):
        r = as_i32(I)[S.route_res + e]
        _others_del(S, I, F, r, e + d)
        if _set_count(S, I, F, r, t, -1) > 0:
            q = S.ri + r * CRI
            if _may_leave(I, F, q, S.rf + r * CRF):
                _mark(I, q + CI_INC, S.inc_l, S.si, N_INC, r)
            if not g_empty(S, I, r):
                _mark(I, q + CI_TCH, S.tch_l, S.si, N_TCH, r)   # (empty: as _join_busy)
        # else r is idle now: no pairs, an empty group (cc_pop_due took m out of its own
        # group and marked it), nothing to check or re-schedule
    entries_give(S, I, m)
    I[S.si + N_ACTIVE] -= 1


@leaf
def _end_alone(I, F, m, t):
    """:func:`cc_end` of a message alone on its whole route (``lone`` on its resources:
    one is, all are), most ends of light traffic: with its own offsets, a few, not the
    ~25 of the general end's pairs, marks and checks. Each resource had m alone (count
    1): it goes idle (:func:`_went_idle`, as :func:`_set_count` from 1 to 0), with nothing
    to unpair, mark or check: m had no pair nor deferred entry."""
    S = cc_state(I)
    for e in range(as_i32(I)[S.route_ptr + m], as_i32(I)[S.route_end + m]):
        r = as_i32(I)[S.route_res + e]
        q = S.ri + r * CRI
        I[q + CI_LONE] = -1
        _went_idle(I, F, q, S.rf + r * CRF, t)
    entries_give(S, I, m)
    I[S.si + N_ACTIVE] -= 1
