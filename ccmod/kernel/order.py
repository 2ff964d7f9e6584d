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
:func:`restore` puts the message inputs, the routes and the records' ids back in id order;
the outputs stay in slot order until a result column is read
(:func:`ccmod.collect.collect`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ccmod.codes import OP_WAIT
from ccmod.jit import numba_startup

numba_startup()     # before any compile or cache load (ccmod.jit)

#: fewer messages keep their ids as slots: their arrays stay in cache anyway, and loading
#: the compiled walk (a few ms) would cost more than it saves
ORDER_MIN_MESSAGES = 1 << 14
#: fewer ranks, too: fewer messages are in flight at once, their fields fit in the caches
#: in id order too, and the order's set-up and undoing cost about what the loop gains.
#: Measured at 1M records under ccmod (stop 30, in process, CPU medians of 7 alternating
#: runs, ordered / id order): Engine.run (loop and restore) incast64 (128 ranks) 0.162 /
#: 0.224 s, incast128 (256) 0.136 / 0.199, random128 0.225 / 0.297, random256 0.294 /
#: 0.399, but random64 0.288 / 0.279 and incast32 (64) 0.133 / 0.143 for ~0.03-0.06 s more
#: set-up (stop 25 had set 512 when every output was put back in id order after the run)
ORDER_MIN_RANKS = 128
#: under max-min sharing the loop gains nothing at 128-256 ranks (random128 0.278 / 0.287 s,
#: random256 0.459 / 0.467) and the set-up is lost: as before (stop 25)
ORDER_MIN_RANKS_MAXMIN = 512


def wanted(M, nranks, maxmin=False):
    """Whether a whole-program run of ``M`` messages over ``nranks`` ranks runs in slot
    order (:func:`plan`): see :data:`ORDER_MIN_RANKS`."""
    return M >= ORDER_MIN_MESSAGES and nranks >= (ORDER_MIN_RANKS_MAXMIN if maxmin
                                                  else ORDER_MIN_RANKS)


@njit(cache=True, _nrt=False)
def _order(mode, rank_ptr, by_len, rec_msg, kind, okey, first, op, wait_msg, wa_msg, nwa,
           I, Fi, J, fields, ptr, res, tmp, h):
    """The order's one compiled function (one cache load per process): :func:`plan`
    (``mode`` 0) and :func:`restore` (1; 2 keeps ``okey``); the other mode's arrays are
    placeholders."""
    if mode == 0:
        return _plan(rank_ptr, by_len, rec_msg, kind, okey, first, op, wait_msg, wa_msg, nwa)
    _restore(I, Fi, J, fields, okey, ptr, res, rec_msg, tmp, h, mode == 1)
    return 0


@njit(cache=True, _nrt=False, inline="always")
def _plan(rank_ptr, by_len, rec_msg, kind, okey, first, op, wait_msg, wa_msg, nwa):
    """Number the messages in slots (``okey[slot]`` their ids) and renumber ``rec_msg``
    (per record, a message id or -1) and the waits' messages to slots, in place; returns
    the slots taken, or -1 (nothing changed) when the records are not one send and one
    receive per message and one request per active-message pair. ``by_len``: the ranks,
    longest first; ``first``: zeros, one per message (the record where the walk first met
    it, + 1; then each id's slot)."""
    M = okey.shape[0]
    n0 = n1 = n2 = 0
    for m in range(M):
        k = kind[m]
        if k == 0:
            n0 += 1
        elif k == 1:
            n1 += 1
        elif k == 2:
            n2 += 1
        else:
            return -1
    nrec = 0
    for i in range(rec_msg.shape[0]):
        if rec_msg[i] >= 0:
            nrec += 1
    if n1 != n2 or nrec != 2 * n0 + n1:
        return -1
    nact = by_len.shape[0]
    s = 0
    p = 0
    while nact > 0:
        # ranks with no record at position p drop off the end (longest first)
        while nact > 0 and rank_ptr[by_len[nact - 1] + 1] - rank_ptr[by_len[nact - 1]] <= p:
            nact -= 1
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
    if s != M or (wait_msg.shape[0] != op.shape[0] and nwa == 0):
        return s                         # (no waits: resolve_waits' placeholders)
    for t in range(M):
        first[okey[t]] = t
    if wait_msg.shape[0] == op.shape[0]:
        for i in range(op.shape[0]):
            if op[i] == OP_WAIT and wait_msg[i] >= 0:
                wait_msg[i] = first[wait_msg[i]]
    for e in range(nwa):
        wa_msg[e] = first[wa_msg[e]]
    return s


_I64 = np.zeros(1, np.int64)
_I32 = np.zeros(1, np.int32)
_I8 = np.zeros(1, np.int8)


def plan(rank_ptr, rec_msg, kind, M, waits=None):
    """Slots for ``M`` messages in execution order: ``okey`` (int64, slot -> id), with
    ``rec_msg`` (int32, per record) renumbered to slots in place, and the waits
    (``(op, wait_msg, wa_ptr, wa_msg)`` of :func:`ccmod.kernel.waits.resolve_waits`, if
    given) too; None (nothing changed) when the records are not one send and one receive
    per message (and one request per active-message pair), as
    :func:`ccmod.compile.compile_messages` makes them."""
    rp = np.asarray(rank_ptr, np.int64)
    kind = np.zeros(M, np.int8) if kind is None or len(kind) != M else \
        np.asarray(kind, np.int8)
    if M == 0 or len(rp) < 2 or rec_msg.dtype != np.int32:
        return None
    op, wait_msg, wa_ptr, wa_msg = waits if waits is not None else (_I8, _I64, _I64, _I64)
    nwa = int(wa_ptr[-1]) if len(wa_ptr) else 0
    by_len = np.argsort(-np.diff(rp), kind="stable")
    okey = np.empty(M, np.int64)
    taken = _order(0, rp, by_len, rec_msg, kind, okey, np.zeros(M, np.int64),
                   op, wait_msg, wa_msg, nwa,      # written in place: as they are
                   _I64, _I64, _I32, _I64, _I32, _I32, _I64, 0)
    if taken < 0:
        return None
    if taken != M:
        raise AssertionError(f"{taken} slots for {M} messages")
    return okey


def renumber_back(rec_msg, okey):
    """``rec_msg`` from slots back to ids, in place (the waits are the caller's to drop)."""
    s = rec_msg >= 0
    rec_msg[s] = okey[rec_msg[s]]


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


def in_slot_order(fields, okey):
    """Put the per-message inputs of ``fields`` (the ``{name: (kind, length, array)}``
    specs of :class:`ccmod.kernel.state.MsgIn`, in place) in slot order ``okey``: the
    routes at once (:func:`gather_routes`), every other array to be gathered as the arena
    copies it in (:class:`Gathered`). Returns those ``{name: Gathered}``."""
    S = len(okey)
    ptr, res = gather_routes(fields["route_ptr"][2], fields["route_res"][2], okey)
    fields["route_ptr"] = ("j", S + 1, ptr)
    fields["route_res"] = ("j", len(res), res)
    out = {}
    for name, f in fields.items():
        if name not in ("route_ptr", "route_res", "okey") and f[0] in ("i", "f", "j") and \
                isinstance(f[2], np.ndarray) and f[2].shape == (S,):
            out[name] = Gathered(f[2], okey)
            fields[name] = (f[0], f[1], out[name])
    return out


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
    rp = np.asarray(route_ptr)
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


@njit(cache=True, _nrt=False, inline="always")
def _restore(I, Fi, J, fields, okey, ptr, res, rec_msg, tmp, h, reset):
    """:func:`restore` compiled: ``fields`` holds (buffer, offset) pairs, buffer 0 for
    ``I``, 1 for ``Fi`` (the float buffer's words, moved as they are), 2 for ``J`` (the
    int32 elements of ``I``); ``tmp`` has room for ``len(okey) + 1 + len(res)`` words;
    ``h`` > 0: every route has ``h`` hops (``ptr`` then stays as it is); ``reset``:
    ``okey`` becomes the identity, else it stays slot -> id."""
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
    E = res.shape[0]
    if h > 0:                        # rows of h entries: each slot's row to its id's
        for e in range(E):
            tmp[e] = res[e]
        for s in range(M):
            d = okey[s] * h
            for e in range(h):
                res[d + e] = tmp[s * h + e]
    else:
        # the routes: each id's hops, their offsets, then every route's entries to its place
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
    if reset:
        for s in range(M):
            okey[s] = s


def restore(I, F, fields, okey, route_ptr, route_res, rec_msg, keep_okey=False):
    """Back to id order, in place: the per-slot fields ``fields`` (``(kind, offset)``
    pairs, ``"i"`` of ``I``, ``"f"`` of ``F``, ``"j"`` the int32 elements of ``I``, each
    ``len(okey)`` long), the routes (CSR, views of ``I``), ``rec_msg`` (per record: slots
    -> ids) and ``okey`` (the identity then; with ``keep_okey`` it stays slot -> id, for
    the fields left in slot order, which :func:`ccmod.collect.collect` puts in id order
    when they are read). Its temporary is as large as the routes (the caller frees the
    kernel's scratch first)."""
    spec = np.array([{"i": 0, "f": 1, "j": 2}[k] for k, _ in fields], np.int64)
    offs = np.array([o for _, o in fields], np.int64)
    pairs = np.empty(2 * len(fields), np.int64)
    pairs[0::2], pairs[1::2] = spec, offs
    h = _uniform(route_ptr)
    tmp = np.empty(len(okey) + 1 + len(route_res), np.int64)
    _order(2 if keep_okey else 1, _I64, _I64, rec_msg, _I8, okey, _I64, _I8, _I64, _I64, 0,
           I, F.view(np.int64), I.view(np.int32), pairs, route_ptr, route_res, tmp,
           0 if h is None else h)

