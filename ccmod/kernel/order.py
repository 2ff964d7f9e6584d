"""Messages numbered in (approximate) execution order inside a whole-program run.

Why: a message's id follows its send record, rank by rank, so the messages in flight at
one moment (the k-th of every rank, roughly) lie far apart in id, and each sits on a cache
line (and page) of its own in every per-message array of the kernel's state: inputs,
times, waiters, the sharing rule's fields and per-entry links. Numbered by when they may
run, the messages in flight share lines and pages, and a line once loaded serves the next
messages too.

The internal number of a message is its *slot* (as under streaming, :mod:`ccmod.kernel.slots`):
``okey[slot]`` is its id, the key that breaks every tie between messages, so the results
are bit for bit those of the id order. The order is static: the ranks' records are walked
position by position (the first record of every rank, then the second...), and a message
takes the next slot when the walk reaches the later of its two records (both sides
posted: when a rendezvous may start). An active-message request takes two, its reply's
right after its own (the loop reads the reply at ``request + 1``). After the run
:func:`restore` puts every per-message array the results read back in id order.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ccmod.jit import numba_startup

numba_startup()     # before any compile or cache load (ccmod.jit)

#: fewer messages keep their ids as slots: their arrays stay in cache anyway, and loading
#: the compiled walk (a few ms) would cost more than it saves
ORDER_MIN_MESSAGES = 1 << 14
#: fewer ranks, too: the messages in flight then come from as few runs of ids, which the
#: hardware's prefetchers and the loop's own (loop._warm) follow. Measured at 1M records
#: (A/B medians, loaded machine), the whole run's CPU with the order against without:
#: light16 (16 ranks) +1 % (the loop's ~6 % less paid by the order and its undoing),
#: random64 -1 % (loop -6 %), incast16 -15 %, incast512 (1024 ranks) loop -44 %
ORDER_MIN_RANKS = 32


@njit(cache=True, _nrt=False)
def _walk(rank_ptr, by_len, rec_msg, kind, okey, first, back):
    """Number the messages in slots (``okey[slot]`` their ids) and renumber ``rec_msg``
    (per record, a message id or -1) to slots, in place; returns the slots taken.
    ``by_len``: the ranks, longest first; ``first``: zeros, one per message (the record
    where the walk first met it, + 1). With ``back``, only ``rec_msg`` from slots to ids
    (``okey`` read, nothing else)."""
    if back:
        for i in range(rec_msg.shape[0]):
            s = rec_msg[i]
            if s >= 0:
                rec_msg[i] = okey[s]
        return 0
    nact = by_len.shape[0]
    s = 0
    p = 0
    while True:
        # ranks with no record at position p drop off the end (longest first)
        while nact > 0 and rank_ptr[by_len[nact - 1] + 1] - rank_ptr[by_len[nact - 1]] <= p:
            nact -= 1
        if nact == 0:
            return s
        for j in range(nact):
            i = rank_ptr[by_len[j]] + p
            m = rec_msg[i]
            if m < 0:
                continue
            k = kind[m]
            if k == 0:
                f = first[m]
                if f == 0:               # a send or receive met first: wait for the other
                    first[m] = i + 1
                    continue
                rec_msg[f - 1] = s
            okey[s] = m
            rec_msg[i] = s
            s += 1
            if k == 1:                   # an active-message request, and its reply
                okey[s] = m + 1
                s += 1
        p += 1


def plan(rank_ptr, rec_msg, kind, M):
    """Slots for ``M`` messages in execution order: ``okey`` (int64, slot -> id), with
    ``rec_msg`` (int32, per record) renumbered to slots in place; None (nothing changed)
    when the records are not one send and one receive per message (and one request per
    active-message pair), as :func:`ccmod.compile.compile_messages` makes them."""
    rp = np.asarray(rank_ptr, np.int64)
    kind = np.zeros(M, np.int8) if kind is None or len(kind) != M else \
        np.asarray(kind, np.int8)
    if M == 0 or len(rp) < 2 or rec_msg.dtype != np.int32:
        return None
    nk = np.bincount(kind, minlength=3)
    if nk[1] != nk[2] or np.count_nonzero(rec_msg >= 0) != 2 * nk[0] + nk[1]:
        return None
    by_len = np.argsort(-np.diff(rp), kind="stable")
    okey = np.empty(M, np.int64)
    first = np.zeros(M, np.int64)
    taken = _walk(rp, by_len, rec_msg, kind, okey, first, False)
    if taken != M:
        raise AssertionError(f"{taken} slots for {M} messages")
    return okey


def renumber_back(rec_msg, okey):
    """``rec_msg`` from slots back to ids, in place."""
    z = np.zeros(1, np.int64)
    _walk(z, z, rec_msg, np.zeros(1, np.int8), okey, z, True)


def renumber_waits(op, wait_msg, wa_ptr, wa_msg, okey):
    """The waits' messages as slots (in place): ``wait_msg`` at wait records (at waitall
    records it is a list's number) and the lists' entries."""
    from ccmod.codes import OP_WAIT
    k = int(wa_ptr[-1]) if len(wa_ptr) else 0
    if len(wait_msg) != len(op) and not k:
        return                       # no waits (resolve_waits' placeholders)
    inv = np.empty(len(okey), np.int64)
    inv[okey] = np.arange(len(okey))
    w = np.flatnonzero(np.asarray(op) == OP_WAIT)
    if len(w) and len(wait_msg) == len(op):
        wait_msg[w] = inv[wait_msg[w]]
    if k:
        wa_msg[:k] = inv[wa_msg[:k]]


class Gathered:
    """An arena input taken in slot order (``a[okey]``), gathered straight into its
    place when the arena copies it in (:meth:`ccmod.kernel.state.Arena.alloc`); ``used``
    says whether it was (a constant input is filled: the order does not matter)."""

    __slots__ = ("a", "okey", "used")

    def __init__(self, a, okey):
        self.a, self.okey, self.used = a, okey, False

    def resolve(self, constant, out):
        """Write the values into ``out``; or return ``constant(a)`` when that is a
        scalar (for the arena to fill). ``a`` is let go either way."""
        a, okey = self.a, self.okey
        self.a = self.okey = None
        c = constant(a)
        if c is not a:
            return c
        self.used = True
        if a.dtype == out.dtype:
            np.take(a, okey, out=out)
        else:
            out[:] = a[okey]         # a narrower input: its own dtype's temporary
        return None


def _uniform(route_ptr):
    """The hops of every route if all have as many (a star, a torus), else None."""
    rp = route_ptr
    if len(rp) < 2 or rp[0] != 0 or rp[-1] % (len(rp) - 1):
        return None
    h = int(rp[-1]) // (len(rp) - 1)
    if h == 0:
        return None if rp.any() else 0
    return h if np.array_equal(rp, np.arange(0, h * len(rp), h)) else None


def gather_routes(route_ptr, route_res, okey):
    """The routes (CSR) in slot order: ``(route_ptr, route_res)`` (``route_ptr`` itself
    when every route has as many hops)."""
    rp = np.asarray(route_ptr, np.int64)
    h = _uniform(rp)
    if h is not None:          # rows of h entries (take: several times a fancy index)
        return rp, np.take(np.asarray(route_res).reshape(-1, h), okey, axis=0).reshape(-1) \
            if h else np.asarray(route_res)
    hops = np.diff(rp)[okey]
    ptr = np.zeros(len(okey) + 1, np.int64)
    np.cumsum(hops, out=ptr[1:])
    src = np.repeat(rp[:-1][okey] - ptr[:-1], hops)
    src += np.arange(ptr[-1], dtype=np.int64)
    return ptr, np.asarray(route_res)[src]


@njit(cache=True, _nrt=False)
def _restore(I, Fi, J, fields, okey, ptr, res, rec_msg, tmp):
    """:func:`restore` compiled: ``fields`` holds (buffer, offset) pairs, buffer 0 for
    ``I``, 1 for ``Fi`` (the float buffer's words, moved as they are), 2 for ``J`` (the
    int32 elements of ``I``); ``tmp`` has room for ``len(okey) + 1 + len(res)`` words."""
    M = okey.shape[0]
    for f in range(fields.shape[0] // 2):
        o = fields[2 * f + 1]
        if fields[2 * f] == 2:
            for s in range(M):
                tmp[s] = J[o + s]
            for s in range(M):
                J[o + okey[s]] = tmp[s]
            continue
        buf = I if fields[2 * f] == 0 else Fi
        for s in range(M):
            tmp[s] = buf[o + s]
        for s in range(M):
            buf[o + okey[s]] = tmp[s]
    # the routes: each id's hops, their offsets, then every route's entries to its place
    E = res.shape[0]
    tmp[0] = 0
    for s in range(M):
        tmp[okey[s] + 1] = ptr[s + 1] - ptr[s]
    for k in range(M):
        tmp[k + 1] += tmp[k]
    for e in range(E):
        tmp[M + 1 + e] = res[e]
    for s in range(M):
        d = tmp[okey[s]] - ptr[s]
        for e in range(ptr[s], ptr[s + 1]):
            res[d + e] = tmp[M + 1 + e]
    for k in range(M + 1):
        ptr[k] = tmp[k]
    for i in range(rec_msg.shape[0]):
        s = rec_msg[i]
        if s >= 0:
            rec_msg[i] = okey[s]
    for s in range(M):
        okey[s] = s


def restore(I, F, fields, okey, route_ptr, route_res, rec_msg):
    """Back to id order, in place: the per-slot fields ``fields`` (``(kind, offset)``
    pairs, ``"i"`` of ``I``, ``"f"`` of ``F``, ``"j"`` the int32 elements of ``I``, each
    ``len(okey)`` long), the routes (CSR, views of ``I``), ``rec_msg`` (per record: slots
    -> ids) and ``okey`` (the identity then). Its temporary is as large as the routes
    (the caller frees the kernel's scratch first)."""
    spec = np.array([{"i": 0, "f": 1, "j": 2}[k] for k, _ in fields], np.int64)
    offs = np.array([o for _, o in fields], np.int64)
    pairs = np.empty(2 * len(fields), np.int64)
    pairs[0::2], pairs[1::2] = spec, offs
    tmp = np.empty(len(okey) + 1 + len(route_res), np.int64)
    _restore(I, F.view(np.int64), I.view(np.int32), pairs, okey, route_ptr, route_res,
             rec_msg, tmp)
