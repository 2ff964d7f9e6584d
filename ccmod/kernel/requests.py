"""Every rank's outstanding requests in flat arrays (the windowed feed, streaming).

A windowed run resolves waits as each window is loaded (:mod:`ccmod.kernel.window`): a
rank's requests posted (isend/irecv) and not yet waited on are carried across windows.
They are what :func:`ccmod.kernel.waits.track_request` keeps in a typed dict per rank,
kept here for all ranks at once in plain arrays (a typed list of typed dicts cost numba's
dict calls and reference counts at every request record: ~0.18 s per 1M records of a
halo exchange, as much as half the loop):

* an *entry* per outstanding request, in a pool (``ent[e] = key, value, next, prev``),
  each rank's entries linked in the order they were posted (``rk[r] = head, tail,
  count``): a ``waitall`` lists them in that order, as the dict's iteration does, and a
  request posted again under an outstanding id keeps its place, as a dict's key does;
* an open-addressing table (:mod:`ccmod.kernel.ohash`) of key (rank, request id) -> entry.

The key of request q of rank r is ``zigzag(q) * nranks + r`` (injective while it stays
below 2^63: request ids within +-2^62 / nranks, checked by :meth:`Outstanding.check`).
Values are ``2 * message + side`` (side 0 send, 1 receive), as ``track_request``'s.
"""
from __future__ import annotations

import numpy as np
from numba import njit

import ccmod.kernel.compiled  # noqa: F401  (numba's BLAS check without scipy.linalg)
from ccmod.kernel.ohash import find, mix36, rehash, remove, resized, table_size

#: ``ent`` columns
E_KEY, E_VAL, E_NEXT, E_PREV = 0, 1, 2, 3
#: ``rk`` columns
R_HEAD, R_TAIL, R_COUNT = 0, 1, 2
#: ``st``: first free entry, entries in use
S_FREE, S_LIVE = 0, 1


@njit(cache=True, _nrt=False)
def _home(key, mask):
    # keys of one rank step by nranks, one request id's keys are consecutive: fold the
    # high bits in before spreading the low 36
    return mix36(key ^ (key >> 36)) & mask


@njit(cache=True, _nrt=False)
def _rehash(okey, oval, hkey, hval):
    rehash(okey, oval, hkey, hval, _home)


@njit(cache=True, _nrt=False)
def req_key(q, r, n):
    """The table key of request id ``q`` of rank ``r`` (``n`` ranks)."""
    z = 2 * q if q >= 0 else -2 * q - 1
    return z * n + r


@njit(cache=True, _nrt=False)
def post(hkey, hval, ent, rk, st, r, key, v):
    """Request ``key`` of rank r is outstanding with value v (a free entry must exist)."""
    i = find(hkey, key, _home)
    if hkey[i] >= 0:                 # posted again while outstanding: keeps its place
        ent[hval[i], E_VAL] = v
        return
    e = st[S_FREE]
    st[S_FREE] = ent[e, E_NEXT]
    st[S_LIVE] += 1
    hkey[i] = key
    hval[i] = e
    ent[e, E_KEY] = key
    ent[e, E_VAL] = v
    ent[e, E_NEXT] = -1
    t = rk[r, R_TAIL]
    ent[e, E_PREV] = t
    if t >= 0:
        ent[t, E_NEXT] = e
    else:
        rk[r, R_HEAD] = e
    rk[r, R_TAIL] = e
    rk[r, R_COUNT] += 1


@njit(cache=True, _nrt=False)
def _free(ent, st, e):
    ent[e, E_KEY] = -1
    ent[e, E_NEXT] = st[S_FREE]
    st[S_FREE] = e
    st[S_LIVE] -= 1


@njit(cache=True, _nrt=False)
def take(hkey, hval, ent, rk, st, r, key):
    """Take request ``key`` of rank r out; its value, or -1 when it is not outstanding."""
    i = find(hkey, key, _home)
    if hkey[i] < 0:
        return -1
    e = hval[i]
    remove(hkey, hval, i, _home)
    v = ent[e, E_VAL]
    p, x = ent[e, E_PREV], ent[e, E_NEXT]
    if p >= 0:
        ent[p, E_NEXT] = x
    else:
        rk[r, R_HEAD] = x
    if x >= 0:
        ent[x, E_PREV] = p
    else:
        rk[r, R_TAIL] = p
    rk[r, R_COUNT] -= 1
    _free(ent, st, e)
    return v


@njit(cache=True, _nrt=False)
def take_all(hkey, hval, ent, rk, st, r, wa_msg, wa_side, k):
    """Take every outstanding request of rank r into the wait-list pool from index k, in
    the order they were posted; returns the index after the last."""
    e = rk[r, R_HEAD]
    while e >= 0:
        x = ent[e, E_NEXT]
        v = ent[e, E_VAL]
        wa_msg[k] = v >> 1
        wa_side[k] = v & 1
        k += 1
        remove(hkey, hval, find(hkey, ent[e, E_KEY], _home), _home)
        _free(ent, st, e)
        e = x
    rk[r, R_HEAD] = -1
    rk[r, R_TAIL] = -1
    rk[r, R_COUNT] = 0
    return k


class Outstanding:
    """The outstanding requests of ``nranks`` ranks (see the module doc).

    ``tables()`` gives the arrays the compiled functions take: ``(hkey, hval, ent, rk,
    st)``; :meth:`reserve` makes room for a window's requests before it is loaded.
    """

    def __init__(self, nranks: int, entries: int = 64):
        self.n = max(int(nranks), 1)
        #: request ids must lie strictly within +-limit (keys below 2^63)
        self.limit = (1 << 62) // self.n - 1
        self.rk = np.full((self.n, 3), -1, np.int64)
        self.rk[:, R_COUNT] = 0
        self.st = np.array([-1, 0], np.int64)
        self.ent = np.zeros((0, 4), np.int64)
        self.hkey = np.full(0, -1, np.int64)
        self.hval = np.zeros(0, np.int64)
        self._grow(entries)

    def count(self, r: int) -> int:
        """Requests of rank r outstanding."""
        return int(self.rk[r, R_COUNT])

    def tables(self):
        return self.hkey, self.hval, self.ent, self.rk, self.st

    def check(self, req) -> int:
        """Index of the first request id of ``req`` a key cannot hold, or -1."""
        req = np.asarray(req, np.int64)
        bad = np.flatnonzero((req <= -self.limit) | (req >= self.limit))
        return int(bad[0]) if len(bad) else -1

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more outstanding requests."""
        need = int(self.st[S_LIVE]) + int(extra)
        if need > len(self.ent):
            self._grow(max(need, 2 * len(self.ent)))

    def _grow(self, cap: int) -> None:
        old = len(self.ent)
        ent = np.zeros((cap, 4), np.int64)
        ent[:old] = self.ent
        ent[old:, E_KEY] = -1
        # the new entries in front of the free list
        ent[old:cap - 1, E_NEXT] = np.arange(old + 1, cap)
        ent[cap - 1, E_NEXT] = self.st[S_FREE]
        self.st[S_FREE] = old
        self.ent = ent
        self.hkey, self.hval = resized(self.hkey, self.hval, table_size(cap), _rehash)
