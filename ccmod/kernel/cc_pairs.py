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
change on r (a second message joining it, a background step) pairs it first, and so does
a check of b whose share reached ``dmin[b]`` or whose free rose (all of b's, through its
members). Every check thus sees the pairs that pairing at once would have made, keyed
alike, and finds the same candidates (which it sorts by order key): results are the same
bit for bit, while an incast's sender costs a few per-resource words instead of a pair,
two heap operations and three per-entry words.
"""
from __future__ import annotations

import numpy as np

from ccmod.kernel.compiled import cc_state, leaf
from ccmod.kernel.heaps import heap_push, heap_remove
from ccmod.kernel.rawbuf import as_i32

INF = np.inf
# integer scalars (si) of the rule's state; N_PF: free pairs, N_CHK: groups to check for
# members that may leave, N_FRESH: the free stack's implicit bottom (below it, position i
# holds pair i: see _pair_take)
N_NEW, N_DEC, N_INC, N_TCH, N_ACTIVE, N_CAND, N_DONE, N_PF, N_CHK, N_FRESH = range(10)


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
def _others_add(S, I, F, e, b, m):
    """Route entry e of message m (bottlenecked at b elsewhere) joins pair (res(e), b)."""
    J = as_i32(I)
    r = as_i32(I)[S.route_res + e]
    p = I[S.rp_head + r]
    while p >= 0 and I[S.pb + p] != b:
        p = I[S.rnext + p]
    if p < 0:
        # a new pair: take one from the free stack, link it to r, key it in b's heap
        p = _pair_take(S, I)
        I[S.pr + p] = r
        I[S.pb + p] = b
        I[S.pcnt + p] = 0
        I[S.phead + p] = -1
        h = I[S.rp_head + r]
        I[S.rnext + p] = h
        I[S.rprev + p] = -1
        if h >= 0:
            I[S.rprev + h] = p
        I[S.rp_head + r] = p
        F[S.pkey + p] = F[S.share + r]
        heap_push(I, F, S.ph_item, S.ph_pos, S.pkey, S.pb, I[S.ph_seg + b], S.ph_len, b, p)
    h = I[S.phead + p]
    J[S.e_next + e] = h
    J[S.e_prev + e] = -1
    if h >= 0:
        J[S.e_prev + h] = e
    I[S.phead + p] = e
    I[S.pcnt + p] += 1
    J[S.e_pair + e] = p
    J[S.emsg + e] = m


@leaf
def pair_entry(I, F, e, b, m):
    """:func:`_others_add` with its own offsets (out of line: a caller that pairs only
    now and then does not load the ~20 offsets of pairing at every call)."""
    _others_add(cc_state(I), I, F, e, b, m)


@leaf
def defer(S, I, F, e, b, m):
    """Route entry e of message m, alone on r = res(e), joins group b elsewhere: pair it,
    or defer it when r cannot bind before b while r stays as it is (its share above b's
    ceiling ``min(free[b], 1)``, or equal and r after b), or only once b is down to its
    ceiling (equal, r before b: counted in ``dmin[b]``)."""
    r = as_i32(I)[S.route_res + e]
    s = F[S.share + r]
    cap = min(F[S.free + b], 1.0)
    if s < cap:
        pair_entry(I, F, e, b, m)
        return
    I[S.dfr + r] = e
    I[S.dgrp + r] = b
    I[S.dmsg + r] = m
    I[S.ndef + b] += 1
    if s == cap and r < b and s < F[S.dmin + b]:
        F[S.dmin + b] = s


@leaf
def _undefer(S, I, F, r):
    """The deferred entry on r leaves its group's count."""
    b = I[S.dgrp + r]
    I[S.dfr + r] = -1
    n = I[S.ndef + b] - 1
    I[S.ndef + b] = n
    if n == 0:
        F[S.dmin + b] = INF       # none left: no bound


@leaf
def pair_deferred(S, I, F, r):
    """r is about to change: its deferred entry gets the pair it would have had (keyed by
    share[r], unchanged since the entry's join)."""
    e = I[S.dfr + r]
    b = I[S.dgrp + r]
    _undefer(S, I, F, r)
    _others_add(S, I, F, e, b, I[S.dmsg + r])


@leaf
def pair_group_deferred(S, I, F, b):
    """Pair every deferred entry of group b's members (share[b] reached their bound, or
    free[b] rose). Found through the members: O(|b| x hops), paid when b is down to its
    ceiling (one member at most, unless ``ccmod:capacity=ratio``) or after a background
    step raised free[b]."""
    J = as_i32(I)
    m = I[S.l_head + b]
    while m >= 0 and I[S.ndef + b] > 0:
        _pair_member(S, I, F, b, m)
        m = J[S.g_next + m]
    o = S.g_item + I[S.seg + b]
    for i in range(I[S.g_len + b]):
        if I[S.ndef + b] == 0:
            break
        _pair_member(S, I, F, b, I[o + i])


@leaf
def _pair_member(S, I, F, b, m):
    for e in range(I[S.route_ptr + m], I[S.route_end + m]):
        r = as_i32(I)[S.route_res + e]
        if I[S.dfr + r] == e:
            _undefer(S, I, F, r)
            _others_add(S, I, F, e, b, m)


@leaf
def _others_del(S, I, F, e):
    """Route entry e leaves its pair (or its deferral, if any)."""
    J = as_i32(I)
    p = J[S.e_pair + e]
    if p < 0:
        r = as_i32(I)[S.route_res + e]
        if I[S.dfr + r] == e:
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
    J[S.e_pair + e] = -1
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
            I[S.rp_head + r] = rn
        if rn >= 0:
            I[S.rprev + rn] = rv
        heap_remove(I, F, S.ph_item, S.ph_pos, S.pkey, S.pb, I[S.ph_seg + b], S.ph_len, b, p)
        n = I[S.si + N_PF]
        I[S.pfree + n] = p
        I[S.si + N_PF] = n + 1
