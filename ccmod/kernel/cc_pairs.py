"""Pairs of the article's sharing rule: which members of a group cross which resource.

A *pair* ``(r, b)`` holds the route entries at resource ``r`` of the members of bottleneck
group ``b`` (``b != r``): a list of entries (``phead``, ``e_next``/``e_prev``), a link in
``r``'s list of pairs (``rp_head``, ``rnext``/``rprev``) and a place in ``b``'s heap keyed
by ``share[r]`` (``pkey``, ``ph_item``/``ph_pos``); see :mod:`ccmod.kernel.ccmod_rule` for
what the checks do with them.

A route entry alone on its resource (the sender's uplink of an incast, most entries of
light traffic) is *deferred* when its pair could not matter yet: its key ``share[r]``
cannot change while it stays alone, and b's share never exceeds its ceiling
``min(free[b], 1)``, so an entry keyed above that ceiling (or at it with r after b) cannot
bind before b, and one keyed at it with r before b only once b is down to it (its last
member, in the usual case: ``dmin[b]`` holds the lowest such key). The deferred entry is
noted on its resource alone (``dfr``, ``dgrp``, ``dmsg``; ``ndef[b]`` counts them): a
change on r (a second message joining it, a background step) pairs it first, and a check
of b whose share reached ``dmin[b]`` or whose free rose makes all of b's members with a
deferred entry candidates (:func:`deferred_candidates`). Every check thus finds at least
the candidates that pairing at once would have found (which it sorts by order key; a
candidate whose best group is unchanged stays): results are the same bit for bit, while
an incast's sender costs a few per-resource words instead of a pair, two heap operations
and three per-entry words.

A route entry's links (``e_pair``, ``e_next``, ``e_prev``, ``emsg``) live in an *entry
slot*, not at its place in ``route_res``: a message takes a block of as many slots as its
route has entries when it first needs one (``e_base[m]``, its first; -1 until then: a
message alone on its whole route pairs nothing and never takes one) and gives it back when
it ends (:func:`entries_take`, :func:`entries_give`; a free list per block length, the free
block's link in its first ``e_next``), so the slots touched are those of the messages in
flight at once, not 16 bytes per route entry of the trace. Slots are told apart only by
equality (pair lists, ``dfr``), so which block a message gets changes no result.
``e_pair`` holds the pair + 1 (0: none), so a block never used needs no set-up.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ccmod.kernel.compiled import cc_state, leaf
from ccmod.kernel.heaps import heap_push, heap_remove
from ccmod.kernel.rawbuf import as_i32
from ccmod.kernel.state import (CF_DMIN, CF_FREE, CF_SHARE, CI_DFR, CI_DGRP, CI_DMSG, CI_G_LEN,
                                CI_L_HEAD, CI_NDEF, CI_PH_LEN, CI_RP_HEAD, CRF, CRI)

INF = np.inf
# integer scalars (si) of the rule's state; N_PF: free pairs, N_CHK: groups to check for
# members that may leave, N_FRESH: the free stack's implicit bottom (below it, position i
# holds pair i: see _pair_take)
# N_ETOP: the first entry slot no block has taken yet
N_NEW, N_DEC, N_INC, N_TCH, N_ACTIVE, N_CAND, N_DONE, N_PF, N_CHK, N_FRESH, N_ETOP = range(11)
N_SI = 11


@leaf
def entries_take(S, I, m):
    """Message m needs entry slots (it pairs or defers an entry): give it a block of as many entry slots as its route has entries
    (``e_base[m]``), one given back by an earlier message of that length if any, else the
    next never used. Blocks of a length are only made when every one made is in use: the
    slots in use never exceed the route entries of the trace (``len(e_pair)``). With
    ``N_ETOP`` < 0 (streamed: message slots recycled, route entries with them; the bound
    above holds for messages each started once) a message's block is its own entries."""
    J = as_i32(I)
    if I[S.si + N_ETOP] < 0:
        J[S.e_base + m] = as_i32(I)[S.route_ptr + m]
        return
    h = as_i32(I)[S.route_end + m] - as_i32(I)[S.route_ptr + m]
    if h <= 0:
        return
    b = J[S.eb_head + h]
    if b >= 0:
        J[S.eb_head + h] = J[S.e_next + b]
    else:
        b = I[S.si + N_ETOP]
        I[S.si + N_ETOP] = b + h
    J[S.e_base + m] = b


@leaf
def entries_give(S, I, m):
    """Message m ended (every entry unpaired, ``e_pair`` 0): its block, if it took one,
    goes back to the free list of its length."""
    J = as_i32(I)
    b = J[S.e_base + m]
    h = as_i32(I)[S.route_end + m] - as_i32(I)[S.route_ptr + m]
    if b >= 0 and h > 0 and I[S.si + N_ETOP] >= 0:
        J[S.e_next + b] = J[S.eb_head + h]
        J[S.eb_head + h] = b


@leaf
def _pair_take(S, I):
    """A free pair, from the top of the free stack. The stack's bottom part is implicit
    (position i holds pair i until the stack shrinks below it): set-up writes none of it,
    and the ids are those of a stack filled with 0..NP-1."""
    n = I[S.si + N_PF] - 1
    I[S.si + N_PF] = n
    if n < I[S.si + N_FRESH]:
        I[S.si + N_FRESH] = n
        return n
    return I[S.pfree + n]


@leaf
def _others_add(S, I, F, r, e, b, m):
    """Route entry (slot) e of message m, on resource r, bottlenecked at b elsewhere,
    joins pair (r, b)."""
    J = as_i32(I)
    q = S.ri + r * CRI
    p = I[q + CI_RP_HEAD]
    while p >= 0 and I[S.pb + p] != b:
        p = I[S.rnext + p]
    if p < 0:
        # a new pair: take one from the free stack, link it to r, key it in b's heap
        p = _pair_take(S, I)
        I[S.pr + p] = r
        I[S.pb + p] = b
        I[S.pcnt + p] = 0
        I[S.phead + p] = -1
        h = I[q + CI_RP_HEAD]
        I[S.rnext + p] = h
        I[S.rprev + p] = -1
        if h >= 0:
            I[S.rprev + h] = p
        I[q + CI_RP_HEAD] = p
        F[S.pkey + p] = F[S.rf + r * CRF + CF_SHARE]
        heap_push(I, F, S.ph_item, S.ph_pos, S.pkey, S.pb, I[S.ph_seg + b],
                  S.ri + b * CRI + CI_PH_LEN, 0, p)
    h = I[S.phead + p]
    J[S.e_next + e] = h
    J[S.e_prev + e] = -1
    if h >= 0:
        J[S.e_prev + h] = e
    I[S.phead + p] = e
    I[S.pcnt + p] += 1
    J[S.e_pair + e] = p + 1
    J[S.emsg + e] = m


@leaf
def pair_entry(I, F, r, e, b, m):
    """:func:`_others_add` with its own offsets (out of line: a caller that pairs only
    now and then does not load the ~20 offsets of pairing at every call)."""
    _others_add(cc_state(I), I, F, r, e, b, m)


@leaf
def defer(S, I, F, r, e, b, m):
    """Route entry (slot) e of message m, alone on r, joins group b elsewhere: pair it,
    or defer it when r cannot bind before b while r stays as it is (its share above b's
    ceiling ``min(free[b], 1)``, or equal and r after b), or only once b is down to its
    ceiling (equal, r before b: counted in ``dmin[b]``)."""
    ub = S.rf + b * CRF
    s = F[S.rf + r * CRF + CF_SHARE]
    cap = min(F[ub + CF_FREE], 1.0)
    if s < cap:
        pair_entry(I, F, r, e, b, m)
        return
    q = S.ri + r * CRI
    I[q + CI_DFR] = e
    I[q + CI_DGRP] = b
    I[q + CI_DMSG] = m
    I[S.ri + b * CRI + CI_NDEF] += 1
    if s == cap and r < b and s < F[ub + CF_DMIN]:
        F[ub + CF_DMIN] = s


@leaf
def _undefer(S, I, F, r):
    """The deferred entry on r leaves its group's count."""
    q = S.ri + r * CRI
    b = I[q + CI_DGRP]
    I[q + CI_DFR] = -1
    qb = S.ri + b * CRI
    n = I[qb + CI_NDEF] - 1
    I[qb + CI_NDEF] = n
    if n == 0:
        F[S.rf + b * CRF + CF_DMIN] = INF       # none left: no bound


@leaf
def pair_deferred(S, I, F, r):
    """r is about to change: its deferred entry gets the pair it would have had (keyed by
    share[r], unchanged since the entry's join)."""
    q = S.ri + r * CRI
    e = I[q + CI_DFR]
    b = I[q + CI_DGRP]
    m = I[q + CI_DMSG]
    _undefer(S, I, F, r)
    _others_add(S, I, F, r, e, b, m)


@leaf
def deferred_candidates(S, I, F, b, nc):
    """Group b's check found share[b] at the lower bound of its deferred entries' keys
    (or free[b] rose): every member of b with a deferred entry becomes a candidate
    (``cand_f`` 3, added to ``cand_l`` after the ``nc`` there; returns the new number).
    Pairing those entries now, as the check's walk would need, would mostly be undone at
    once: with b down to its ceiling, its member crosses resources that bind before it
    only by their lower ids, and moves there. Instead the flush's moves take each as a
    candidate (found with or without a pair: it moves when its best group changed) and
    pair the deferred entries of those that stay (:func:`pair_member`), keyed by the same
    shares. Found through the members: O(|b| x hops), paid when b is down to its ceiling
    (one member at most, unless ``ccmod:capacity=ratio``) or after a background step
    raised free[b]. ``dmin[b]`` is reset here: after the flush none of these is deferred
    (a member that moves leaves its deferrals, one that stays pairs them) and a deferral
    made by the flush's moves sets it anew."""
    J = as_i32(I)
    qb = S.ri + b * CRI
    left = I[qb + CI_NDEF]
    F[S.rf + b * CRF + CF_DMIN] = INF
    m = I[qb + CI_L_HEAD]
    while m >= 0 and left > 0:
        k = _n_deferred(S, I, m)
        if k > 0:
            left -= k
            nc = _candidate(S, I, m, nc)
        m = J[S.g_next + m]
    o = S.g_item + I[S.seg + b]
    for i in range(I[qb + CI_G_LEN]):
        if left == 0:
            break
        m = I[o + i]
        k = _n_deferred(S, I, m)
        if k > 0:
            left -= k
            nc = _candidate(S, I, m, nc)
    return nc


@leaf
def _candidate(S, I, m, nc):
    """Member m with deferred entries becomes a candidate (once): the new count."""
    J = as_i32(I)
    if J[S.cand_f + m] == 0:
        J[S.cand_f + m] = 3
        I[S.cand_l + nc] = m
        nc += 1
    return nc


@leaf
def _n_deferred(S, I, m):
    """How many of m's route entries are deferred."""
    J = as_i32(I)
    if J[S.e_base + m] < 0:
        return 0                      # no entry slots: nothing deferred
    e0 = as_i32(I)[S.route_ptr + m]
    d = J[S.e_base + m] - e0          # route entry -> entry slot
    k = 0
    for e in range(e0, as_i32(I)[S.route_end + m]):
        if I[S.ri + J[S.route_res + e] * CRI + CI_DFR] == e + d:
            k += 1
    return k


@leaf
def pair_member(S, I, F, b, m):
    """Pair the deferred entries of m, a member of group b (a candidate of
    :func:`deferred_candidates` that stays in b)."""
    J = as_i32(I)
    if J[S.e_base + m] < 0:
        return                        # no entry slots: nothing deferred
    e0 = as_i32(I)[S.route_ptr + m]
    d = J[S.e_base + m] - e0          # route entry -> entry slot
    for e in range(e0, as_i32(I)[S.route_end + m]):
        r = J[S.route_res + e]
        if I[S.ri + r * CRI + CI_DFR] == e + d:
            _undefer(S, I, F, r)
            _others_add(S, I, F, r, e + d, b, m)


@njit(cache=True, _nrt=False, inline="always")
def _others_del(S, I, F, r, e):
    """Route entry (slot) e, on resource r, leaves its pair (or its deferral, if any).
    Inlined into its callers (a move's and a shared end's hops, ~3 calls per message of
    light traffic, most finding no pair): as a call, LLVM inlined :func:`_unpair` (then
    called from one place) into it and kept it out of line, ~55 instructions per call."""
    J = as_i32(I)
    p = J[S.e_pair + e] - 1
    if p < 0:
        if I[S.ri + r * CRI + CI_DFR] == e:
            _undefer(S, I, F, r)
        return
    _unpair(I, F, e, p)


@leaf
def _unpair(I, F, e, p):
    """Route entry e leaves pair p (freed when it empties). Out of line, with its own
    offsets (as :func:`pair_entry`)."""
    J = as_i32(I)
    S = cc_state(I)
    nx = J[S.e_next + e]
    pv = J[S.e_prev + e]
    if pv >= 0:
        J[S.e_next + pv] = nx
    else:
        I[S.phead + p] = nx
    if nx >= 0:
        J[S.e_prev + nx] = pv
    J[S.e_pair + e] = 0
    c = I[S.pcnt + p] - 1
    I[S.pcnt + p] = c
    if c == 0:
        # the pair is empty: unlink it from its resource, its group's heap; free it
        r = I[S.pr + p]
        b = I[S.pb + p]
        rn = I[S.rnext + p]
        rv = I[S.rprev + p]
        if rv >= 0:
            I[S.rnext + rv] = rn
        else:
            I[S.ri + r * CRI + CI_RP_HEAD] = rn
        if rn >= 0:
            I[S.rprev + rn] = rv
        heap_remove(I, F, S.ph_item, S.ph_pos, S.pkey, S.pb, I[S.ph_seg + b],
                    S.ri + b * CRI + CI_PH_LEN, 0, p)
        n = I[S.si + N_PF]
        I[S.pfree + n] = p
        I[S.si + N_PF] = n + 1


@leaf
def _mark(I, flag, lst, si, k, r):
    """Note r once in the list at ``lst`` (``I[si + k]`` entries), its flag at ``flag``
    (in r's record: ``S.ri + r * CRI + CI_TCH``, ...)."""
    if not I[flag]:
        I[flag] = 1
        I[lst + I[si + k]] = r
        I[si + k] += 1
