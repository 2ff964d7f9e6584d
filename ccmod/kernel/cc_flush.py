"""The article's sharing rule at the end of an instant: the flush (joins, checks, moves,
re-schedules).

The changes of one instant (starts, ends, background steps: :mod:`ccmod.kernel.ccmod_rule`)
only mark what they touch: resources whose share dropped (``dec``) or rose (``inc``),
groups to re-schedule (``tch``), messages to join (``new``). :func:`cc_flush` settles them
once per event horizon: a changed share re-keys its resource's pairs and marks the groups
to check, each check walks its group's heap of pairs down to the keys that may bind before
it (:mod:`ccmod.kernel.cc_pairs`), the candidates move to their new best group in order key
order, the new messages join theirs, and the touched groups' next completions are
re-scheduled in the completion heap (the sharing part of the event horizon). See
:mod:`ccmod.kernel.ccmod_rule` for the rule and why a check finds exactly the members that
must move.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ccmod.kernel.compiled import cc_state, leaf
from ccmod.kernel.rawbuf import as_i32
from ccmod.kernel.state import (CF_DMIN, CF_SHARE, CI_CHK, CI_COUNT, CI_DEC, CI_INC, CI_LONE,
                                CI_PH_LEN, CI_RP_HEAD, CI_TCH, CRF, CRI)
from ccmod.kernel.cc_groups import _vclock, g_add, g_del, g_empty, g_first
from ccmod.kernel.cc_pairs import (N_CAND, N_CHK, N_DEC, N_INC, N_NEW, N_TCH, _mark,
                                   _others_del, defer, deferred_candidates, entries_take,
                                   pair_entry, pair_member)
from ccmod.kernel.heaps import (heap_update, iheap_push, iheap_remove, iheap_update, sort_ids,
                                sort_keyed)

INF = np.inf


@leaf
def _best(S, I, F, m, note):
    """The resource of least share over m's route (ties to the lower id), and whether m
    is alone on it (every resource's count 1), in one pass: (resource, alone). (A move
    needs both: :func:`_join_entries` then does not walk the route a second time.)
    ``note`` (a constant at each call: numba compiles a copy per value, the test folds
    away): m, just started, is noted alone on each resource (``lone``) on the way, as
    :func:`_join_alone` needs (most starts of light traffic: no second walk); when it is
    not alone, :func:`_join_entries` clears them again before anything reads them (every
    ``lone`` on a new message's route was -1)."""
    best = INF
    br = -1
    alone = True
    for e in range(as_i32(I)[S.route_ptr + m], as_i32(I)[S.route_end + m]):
        r = as_i32(I)[S.route_res + e]
        s = F[S.rf + r * CRF + CF_SHARE]
        # without branches (a min and a conditional move): which hop binds is as good
        # as random, and the branches of ``s < best or (s == best and r < br)``
        # mispredicted ~0.4 times per record on light16
        if (s < best) | ((s == best) & (r < br)):
            br = r
        best = min(s, best)
        q = S.ri + r * CRI
        alone &= I[q + CI_COUNT] == 1
        if note:
            I[q + CI_LONE] = m
    return br, alone


@leaf
def _join_alone(I, F, m, r, t, remaining):
    """Put a message just started and alone on its whole route (most messages of light
    traffic) into group r with ``remaining`` quiet-seconds of work. It needs neither pairs
    nor a check: group r is empty (its only message is m), m is noted on its resources
    (``lone``, by :func:`_best`'s walk) and the group re-scheduled at once with m as its
    first member, as :func:`_touch` would (nothing else can join that group at this
    instant: no other message crosses it, and the moves came first). Called at the
    flush; the start itself, when every hop was idle, joins with :func:`join_alone_s`
    (:func:`ccmod.kernel.ccmod_rule._start_alone`)."""
    join_alone_s(cc_state(I), I, F, m, r, t, remaining)


@njit(cache=True, _nrt=False, inline="always")
def join_alone_s(S, I, F, m, r, t, remaining):
    """:func:`_join_alone` with the rule's offsets ``S`` given, inlined into its caller
    (the start's out-of-line join: one call, not two)."""
    J = as_i32(I)
    J[S.bott + m] = r
    vc = _vclock(F, S.rf + r * CRF, t)
    vfin = vc + remaining
    F[S.vfin + m] = vfin
    g_add(S, I, F, r, m)
    _schedule(S, I, F, r, t, vfin - vc)


@leaf
def _pair_key(S, I, F, r, check):
    """share[r] changed: re-key r's pairs in their groups' heaps; with ``check``, mark
    those groups to check (a lower share on r may now bind before them). Only a group
    that r now binds before: after every flush no pair binds before its group (each
    member is at its best), so a check finds candidates only through pairs that do; a
    pair whose resource's share dropped and still does not bind before b adds none, and
    whatever else could (b's own rise, another resource's drop) marks b itself. Shares
    are final at the flush (moves change no count)."""
    s = F[S.rf + r * CRF + CF_SHARE]
    p = I[S.ri + r * CRI + CI_RP_HEAD]
    while p >= 0:
        b = I[S.pb + p]
        F[S.pkey + p] = s
        qb = S.ri + b * CRI
        heap_update(I, F, S.ph_item, S.ph_pos, S.pkey, S.pb, I[S.ph_seg + b], qb + CI_PH_LEN,
                    0, p)
        if check and _beats(F, S.rf, r, b):
            _mark(I, qb + CI_CHK, S.chk_l, S.si, N_CHK, b)
        p = I[S.rnext + p]


@leaf
def _join(I, F, m, r, t, remaining, alone, fresh, held):
    """Put m into group r with ``remaining`` quiet-seconds of work; ``alone``: m is alone
    on its whole route (count 1 everywhere); ``fresh``: m has just started (and is not
    alone: :func:`_join_alone`); ``held``: its entries are paired or deferred (a move:
    they leave those first), not so when fresh or a pending candidate
    (:func:`ccmod.kernel.ccmod_rule._pairs_of_lone`)."""
    J = as_i32(I)
    S = cc_state(I)
    J[S.bott + m] = r
    F[S.vfin + m] = _vclock(F, S.rf + r * CRF, t) + remaining
    g_add(S, I, F, r, m)
    _join_entries(I, F, m, r, alone, fresh, held)
    _mark(I, S.ri + r * CRI + CI_TCH, S.tch_l, S.si, N_TCH, r)


@leaf
def _join_entries(I, F, m, r, alone, fresh, held):
    """m's route entries join group r (see :func:`_join`): pairs at the resources m shares,
    deferrals where it is alone, or ``lone`` everywhere when it is alone on its whole
    route (``alone``, found by the caller's walk: :func:`_best`)."""
    J = as_i32(I)
    S = cc_state(I)
    if not alone and J[S.e_base + m] < 0:
        entries_take(S, I, m)       # m pairs or defers: it needs entry slots
    d = J[S.e_base + m] - as_i32(I)[S.route_ptr + m]      # route entry -> entry slot
    for e in range(as_i32(I)[S.route_ptr + m], as_i32(I)[S.route_end + m]):
        r2 = J[S.route_res + e]
        q2 = S.ri + r2 * CRI
        if held:
            _others_del(S, I, F, r2, e + d)
        if alone:
            I[q2 + CI_LONE] = m
            continue
        if fresh:
            I[q2 + CI_LONE] = -1      # (_best's walk noted m alone on its way)
        if r2 != r:
            if I[q2 + CI_COUNT] == 1:
                defer(S, I, F, r2, e + d, r, m)
            else:
                pair_entry(I, F, r2, e + d, r, m)


@leaf
def _move(I, F, m, r_new, t, alone, held):
    """Move m from its group to group ``r_new`` (``alone``, ``held``: :func:`_join`)."""
    J = as_i32(I)
    S = cc_state(I)
    old = J[S.bott + m]
    rem = F[S.vfin + m] - _vclock(F, S.rf + old * CRF, t)
    g_del(S, I, F, old, m)
    if g_empty(S, I, old):
        # emptied (most moves: m was alone in its group): out of the completion heap now,
        # as _touch would; marked, the flush's touches met empty and busy groups in no
        # predictable mix (~0.1 branch mispredictions per record on light16). A member
        # joining it later at this instant marks it. (The heap's order is total, ties by
        # id: when an entry leaves changes no result.)
        if I[S.ev_pos + old] >= 0:
            iheap_remove(I, F, S.ev_item, S.ev_pos, S.ev_t, 0, S.ev_len, 0, old)
    else:
        _mark(I, S.ri + old * CRI + CI_TCH, S.tch_l, S.si, N_TCH, old)
    _join(I, F, m, r_new, t, rem if rem > 0.0 else 0.0, alone, False, held)


@leaf
def _beats(F, rf, r, b):
    """Does resource r bind before group b (lower share, ties to the lower id)? ``rf``:
    the resources' records in ``F``."""
    s = F[rf + r * CRF + CF_SHARE]
    sb = F[rf + b * CRF + CF_SHARE]
    return s < sb or (s == sb and r < b)


@leaf
def _check(I, F, b, nc):
    """Add to the candidates every member of group b crossing a resource that now binds
    before b: walk b's heap of pairs (keyed by that resource's share) down to the keys
    above share[b]; returns the new number of candidates. When share[b] reached the lower
    bound of its deferred entries' keys, their members are candidates too (paired at the
    moves if they stay: :func:`ccmod.kernel.cc_pairs.deferred_candidates`)."""
    J = as_i32(I)
    S = cc_state(I)
    ub = S.rf + b * CRF
    sb = F[ub + CF_SHARE]
    if F[ub + CF_DMIN] <= sb:
        nc = deferred_candidates(S, I, F, b, nc)
    n = I[S.ri + b * CRI + CI_PH_LEN]
    if n == 0:
        return nc
    o = S.ph_item + I[S.ph_seg + b]
    top = 0
    I[S.stk] = 0
    top = 1
    while top > 0:
        top -= 1
        i = I[S.stk + top]
        p = I[o + i]
        if F[S.pkey + p] > sb:
            continue
        if _beats(F, S.rf, I[S.pr + p], b):
            e = I[S.phead + p]
            while e >= 0:
                m2 = J[S.emsg + e]
                if not J[S.cand_f + m2]:
                    J[S.cand_f + m2] = 1
                    I[S.cand_l + nc] = m2
                    nc += 1
                e = J[S.e_next + e]
        for c in range(2 * i + 1, 2 * i + 3):
            if c < n:
                I[S.stk + top] = c
                top += 1
    return nc


@leaf
def _schedule(S, I, F, r, t, dv):
    """Group r's next completion, at t, is ``dv`` quiet-seconds of its first member away."""
    F[S.ev_t + r] = t + (dv / F[S.rf + r * CRF + CF_SHARE] if dv > 0.0 else 0.0)
    if I[S.ev_pos + r] >= 0:
        iheap_update(I, F, S.ev_item, S.ev_pos, S.ev_t, 0, S.ev_len, 0, r)
    else:
        iheap_push(I, F, S.ev_item, S.ev_pos, S.ev_t, 0, S.ev_len, 0, r)


@leaf
def _touch(I, F, r, t):
    """Re-schedule the next completion of group r (its rate or head changed)."""
    S = cc_state(I)
    u = S.rf + r * CRF
    if g_empty(S, I, r) or F[u + CF_SHARE] == INF:
        if I[S.ev_pos + r] >= 0:
            iheap_remove(I, F, S.ev_item, S.ev_pos, S.ev_t, 0, S.ev_len, 0, r)
        return
    head = g_first(S, I, F, r)
    _schedule(S, I, F, r, t, F[S.vfin + head] - _vclock(F, u, t))


@leaf
def cc_pending(I, si):
    """Has this instant left anything for :func:`cc_flush` (``si``: the rule's scalars)?
    Asked before calling it: with nothing pending (most instants' first change) the call
    and its prologue are not paid. (A pending candidate, ``N_CAND``, comes with a start
    or a touched group: not asked for.)"""
    return (I[si + N_NEW] != 0 or I[si + N_DEC] != 0 or I[si + N_INC] != 0
            or I[si + N_TCH] != 0)


@leaf
def cc_flush(I, F):
    """Re-evaluate bottlenecks of the messages the changes of this instant may affect."""
    si = cc_state(I).si
    if I[si + N_DEC] != 0 or I[si + N_INC] != 0 or I[si + N_CAND] != 0:
        _flush(I, F)
        return
    # starts only (no share dropped nor rose on a resource that had messages: no group
    # to check, no candidate), the usual instant. (Each step a function of its own, with
    # its own offsets: compiled as one, the ~40 offsets of all steps were loaded from the
    # header at every call, most of which have nothing to do.)
    if I[si + N_NEW] != 0:
        _flush_new(I, F)
    if I[si + N_TCH] != 0:
        _flush_touches(I, F)


@leaf
def _flush_new(I, F):
    """Join the messages started at this instant, each to its best group."""
    S = cc_state(I)
    t = F[S.sf]
    for i in range(I[S.si + N_NEW]):
        m = I[S.new_m + i]
        b, alone = _best(S, I, F, m, True)
        if alone:
            _join_alone(I, F, m, b, t, F[S.new_w + i])
        else:
            _join(I, F, m, b, t, F[S.new_w + i], False, True, False)
    I[S.si + N_NEW] = 0


@leaf
def _flush_touches(I, F):
    """Re-schedule the groups touched at this instant, in resource order."""
    S = cc_state(I)
    t = F[S.sf]
    nt = I[S.si + N_TCH]
    sort_ids(I, S.tch_l, nt)
    I[S.si + N_TCH] = 0
    for i in range(nt):
        r = I[S.tch_l + i]
        I[S.ri + r * CRI + CI_TCH] = 0
        _touch(I, F, r, t)


@leaf
def _flush(I, F):
    """Checks and moves first (a share dropped or rose), then the starts, then the
    re-schedules."""
    nc = _flush_checks(I, F)
    if nc > 0:
        _flush_moves(I, F, nc, F[cc_state(I).sf])
    # (an end's flush, half of light traffic's, has no start to join: the call and the
    # prologue of _flush_new not paid)
    si = cc_state(I).si
    if I[si + N_NEW] != 0:
        _flush_new(I, F)
    _flush_touches(I, F)


@leaf
def _flush_checks(I, F):
    """A changed share on r re-keys r's pairs; a lower one may attract members of the
    pairs' groups, a higher share[b] may let members of b leave: check those groups.
    Returns how many candidates to move (in ``cand_l``)."""
    S = cc_state(I)
    si = S.si
    for i in range(I[si + N_DEC]):
        r = I[S.dec_l + i]
        I[S.ri + r * CRI + CI_DEC] = 0
        _pair_key(S, I, F, r, True)
    I[si + N_DEC] = 0
    for i in range(I[si + N_INC]):
        r = I[S.inc_l + i]
        q = S.ri + r * CRI
        I[q + CI_INC] = 0
        _pair_key(S, I, F, r, False)
        _mark(I, q + CI_CHK, S.chk_l, S.si, N_CHK, r)
    I[si + N_INC] = 0
    nc = I[si + N_CAND]             # the pending candidates (ccmod_rule._pairs_of_lone)
    I[si + N_CAND] = 0
    for i in range(I[si + N_CHK]):
        b = I[S.chk_l + i]
        I[S.ri + b * CRI + CI_CHK] = 0
        nc = _check(I, F, b, nc)
    I[si + N_CHK] = 0
    return nc


@leaf
def _flush_moves(I, F, nc, t):
    """Move the ``nc`` candidates (in order key order) whose best resource changed; a
    pending one (``cand_f`` 2) that stays pairs and defers its entries in its group, one
    with deferred entries (3: :func:`ccmod.kernel.cc_pairs.deferred_candidates`) pairs
    them."""
    J = as_i32(I)
    S = cc_state(I)
    sort_keyed(I, S.cand_l, nc, S.okey)
    for i in range(nc):
        m2 = I[S.cand_l + i]
        f = J[S.cand_f + m2]
        J[S.cand_f + m2] = 0
        # (every candidate is active: a message leaves its pairs and deferrals at its
        # end, cc_end, before any later check)
        b, alone = _best(S, I, F, m2, False)
        if b != J[S.bott + m2]:
            _move(I, F, m2, b, t, alone, f != 2)
        elif f == 2:
            _join_entries(I, F, m2, b, alone, False, False)
        elif f == 3:
            pair_member(S, I, F, b, m2)
