"""Incremental send/recv matching for the windowed feed (streaming, issue 10).

MPI's non-overtaking rule without wildcards: the k-th send on channel (src, dst, tag)
matches the k-th receive on it. :mod:`ccmod.compile` matches the whole trace at once; here
records are matched as each rank's window is loaded, with state carried across windows:

* a send's message id is known from its position alone: ``send_base[rank]`` + the number
  of sends before it in its rank (the numbering of :func:`ccmod.compile.match_messages`:
  sends in record order), an active-message request's ``M0 + 2 * (am_base[rank] + k)``;
* every channel keeps a FIFO of the ids of sends seen but not yet received (a linked list
  over one pool of nodes);
* a receive takes the head of its channel's FIFO; when it is empty the sender's records
  are *scanned ahead* (only their sends are queued, nothing else is kept) until a send on
  the channel shows up, or the sender's trace ends: an unmatched receive.

What is kept is what is in flight: sends scanned or loaded whose receive is not loaded
yet. :class:`Matcher` holds the state; :func:`_match` is compiled and resumable (it returns
to let Python grow the pool, then goes on).
"""
from __future__ import annotations

import numpy as np
from numba import njit

import ccmod.kernel.compiled  # noqa: F401  (numba's BLAS check without scipy.linalg)
from ccmod.codes import OP_AMREQUEST, OP_IRECV, OP_ISEND, OP_RECV, OP_SEND
from ccmod.kernel.ohash import find, rehash, resized, table_size

#: _match return codes besides 0 (done) and -(g + 1) (an error at record g)
GROW, NEED = 1, 2
#: rank pairs up to which channels are found in a dense table (:func:`_channel`)
DENSE_PAIRS = 1 << 22
E_PEER, E_UNMATCHED, E_TRUNC, E_NEGSIZE = 1, 2, 3, 4


@njit(cache=True, _nrt=False)
def _push(head, tail, nxt, qid, qrec, qnb, free, c, mid, g, nb):
    """Queue send ``mid`` (record g, ``nb`` bytes) on channel c; False when the pool is
    full."""
    x = free[0]
    if x < 0:
        return False
    free[0] = nxt[x]
    nxt[x] = -1
    qid[x] = mid
    qrec[x] = g
    qnb[x] = nb
    if tail[c] >= 0:
        nxt[tail[c]] = x
    else:
        head[c] = x
    tail[c] = x
    return True


@njit(cache=True, _nrt=False)
def _home(key, mask):
    """Home bucket of a rank pair's key (its high and low halves spread)."""
    h = (key >> 32) * 1000003 + (key & 0xFFFFFFFF)
    return (h ^ (h >> 17)) & mask


@njit(cache=True, _nrt=False)
def _channel(hkey, hval, pfirst, ctag, cnext, nch, s, d, tag, n):
    """Channel id of (s, d, tag), numbered as first seen; an id past the channel arrays
    is not registered (the caller returns GROW, then asks again).

    ``pfirst, ctag, cnext, nch``: a rank pair's channels (one per tag seen) form a list
    through ``cnext``; its first one is found, with ``nch[1]`` set (n^2 small enough), in
    a dense per-pair table, else in ``hkey``/``hval``, an open-addressing hash keyed by
    the pair ``s * n + d`` (below 2^62 for any rank count the kernel takes, so never the
    empty mark -1; twice the channel arrays' size: at most half full).
    The matcher's functions take no typed container and manage no reference counts
    (``_nrt=False``): numba's per-call reference counting of ~20 array arguments was
    ~3/4 of the matcher's time.
    """
    p = s * n + d
    i = 0
    if nch[1]:
        c = pfirst[p]
    else:
        i = find(hkey, p, _home)
        c = hval[i] if hkey[i] >= 0 else -1
    first = c
    while c >= 0:
        if ctag[c] == tag:
            return c
        c = cnext[c]
    c = nch[0]
    if c < ctag.shape[0]:
        nch[0] = c + 1
        ctag[c] = tag
        cnext[c] = first
        if nch[1]:
            pfirst[p] = c
        else:
            hkey[i] = p
            hval[i] = c
    return c


@njit(cache=True, _nrt=False)
def _rehash(okey, oval, hkey, hval):
    """Insert the old channel table's entries into the new (larger, empty) one."""
    rehash(okey, oval, hkey, hval, _home)


@njit(cache=True, _nrt=False)
def _scan_one(s, rank_end, n, hkey, hval, pfirst, ctag, cnext, nch, head, tail, nxt, qid, qrec, qnb, free, sc, sn, send_base,
              sop, speer, stag, snb, sbase, slen, B, err):
    """Queue the next record of rank s if it is a send (read from s's scan buffer).
    Returns 0, GROW (pool full, nothing done), NEED (s's buffer does not hold the record:
    ``err[1] = s``) or -1 (s has no more records)."""
    g = sc[s]
    if g >= rank_end[s]:
        return -1
    if g < sbase[s] or g >= sbase[s] + slen[s]:
        err[1] = s
        return NEED
    j = s * B + g - sbase[s]
    o = sop[j]
    if o == OP_SEND or o == OP_ISEND:
        d = speer[j]
        if d < 0 or d >= n:
            sc[s] = g + 1          # reported when the sender's window is loaded
            return 0
        c = _channel(hkey, hval, pfirst, ctag, cnext, nch, s, d, stag[j], n)
        if c >= head.shape[0]:
            return GROW
        if not _push(head, tail, nxt, qid, qrec, qnb, free, c, send_base[s] + sn[s],
                     g, snb[j]):
            return GROW
        sn[s] += 1
    sc[s] = g + 1
    return 0


@njit(cache=True, _nrt=False)
def _match(r, g0, g1, op, peer, tag, nbytes, rank_end, n, send_base, am_base, m0, hkey, hval,
           pfirst, ctag, cnext, nch, head, tail, nxt, qid, qrec, qnb, free, lc, lsn, lam, sc, sn, sop, speer, stag,
           snb, sbase, slen, B, out, out_nb, err):
    """Give message ids to rank r's records ``[lc[r], g1)`` in ``out[g - g0]`` (its
    records' columns ``op``... indexed ``g - g0`` too), and each message's size (the
    send's) in ``out_nb``.

    Returns 0 when done, GROW when the pool or the channel table must grow first, NEED
    when a sender's scan buffer must be loaded (rank ``err[1]``; call again: it goes on
    where it stopped), or -(g + 1) for an error at record g (its code in ``err[0]``).
    """
    while lc[r] < g1:
        g = lc[r]
        i = g - g0
        o = op[i]
        mid = -1
        nb = 0
        if o == OP_SEND or o == OP_ISEND:
            d = peer[i]
            if d < 0 or d >= n:
                err[0] = E_PEER
                return -(g + 1)
            if nbytes[i] < 0:
                err[0] = E_NEGSIZE
                return -(g + 1)
            if g >= sc[r]:         # not scanned ahead yet: queue it now
                c = _channel(hkey, hval, pfirst, ctag, cnext, nch, r, d, tag[i], n)
                if c >= head.shape[0]:
                    return GROW
                if not _push(head, tail, nxt, qid, qrec, qnb, free, c,
                             send_base[r] + lsn[r], g, nbytes[i]):
                    return GROW
                sn[r] = lsn[r] + 1
            mid = send_base[r] + lsn[r]
            nb = nbytes[i]
            lsn[r] += 1
        elif o == OP_RECV or o == OP_IRECV:
            s = peer[i]
            if s < 0 or s >= n:
                err[0] = E_PEER
                return -(g + 1)
            c = _channel(hkey, hval, pfirst, ctag, cnext, nch, s, r, tag[i], n)
            if c >= head.shape[0]:
                return GROW
            while head[c] < 0:     # the send is further on in the sender's trace
                k = _scan_one(s, rank_end, n, hkey, hval, pfirst, ctag, cnext, nch, head, tail, nxt, qid, qrec, qnb, free,
                              sc, sn, send_base, sop, speer, stag, snb, sbase, slen, B, err)
                if k == GROW or k == NEED:
                    return k
                if k < 0:
                    err[0] = E_UNMATCHED
                    return -(g + 1)
            x = head[c]
            mid = qid[x]
            nb = qnb[x]
            if nbytes[i] >= 0 and nbytes[i] < nb:
                err[0] = E_TRUNC
                return -(g + 1)
            head[c] = nxt[x]
            if head[c] < 0:
                tail[c] = -1
            nxt[x] = free[0]
            free[0] = x
        elif o == OP_AMREQUEST:
            mid = m0 + 2 * (am_base[r] + lam[r])
            nb = nbytes[i]
            lam[r] += 1
        out[i] = mid
        out_nb[i] = nb
        if sc[r] < g + 1:
            sc[r] = g + 1
        lc[r] = g + 1
    return 0


class Matcher:
    """Incremental matching of a record source's ranks (each rank's records in order).

    Parameters
    ----------
    source : record source or workloads.base.Workload
        ``nranks``, ``rank_ptr``, ``read(r, g0, g1, reader)``, ``op_counts(ops)``,
        ``record(g, name)``, ``where(g)``, ``rank_of(g)``
        (:class:`ccmod.kernel.window.ArraySource` over a Workload, or
        :class:`ccmod.workloads.parquet_stream.ParquetRecordSource`). A sender's records
        are scanned ahead ``scan`` records at a time through its ``"scan"`` reader.
    """

    def __init__(self, source, pool: int = 1024, channels: int = 256, scan: int = 4096,
                 counts=None):
        from ccmod.kernel.window import as_source
        src = self.src = as_source(source)
        n = int(src.nranks)
        self.n = n
        rp = np.asarray(src.rank_ptr, np.int64)
        self.rank_end = rp[1:].copy()
        # sends and active-message requests per rank: every message id is known from a
        # record's rank and position alone
        nsend, nam = counts if counts is not None else (
            src.op_counts((OP_SEND, OP_ISEND)), src.op_counts((OP_AMREQUEST,)))
        self.send_base = np.concatenate([[0], np.cumsum(nsend)[:-1]]).astype(np.int64)
        self.am_base = np.concatenate([[0], np.cumsum(nam)[:-1]]).astype(np.int64)
        self.m0 = int(np.sum(nsend))
        self.nmsg = self.m0 + 2 * int(np.sum(nam))
        # dense pair table up to 2^22 pairs (32 MB), else the hash (see _channel)
        dense = n * n <= DENSE_PAIRS
        self.nch = np.array([0, int(dense)], np.int64)
        self.pair_first = np.full(n * n if dense else 1, -1, np.int64)
        self.hkey, self.hval = np.full(0, -1, np.int64), np.zeros(0, np.int64)
        self._alloc_channels(channels)
        self.nxt = np.zeros(0, np.int64)
        self.qid = np.zeros(0, np.int64)
        self.qrec = np.zeros(0, np.int64)
        self.qnb = np.zeros(0, np.int64)
        self.free = np.full(1, -1, np.int64)
        self._grow_pool(pool)
        self.lc = rp[:-1].copy()
        self.sc = rp[:-1].copy()
        self.lsn = np.zeros(n, np.int64)
        self.sn = np.zeros(n, np.int64)
        self.lam = np.zeros(n, np.int64)
        self.err = np.zeros(2, np.int64)
        # per rank: a buffer of its next records for the look-ahead (global [sbase, +slen))
        self.B = B = max(int(scan), 1)
        self.scan_cols = tuple(np.zeros(max(n, 1) * B, np.int64) for _ in range(4))
        self.sbase = np.zeros(max(n, 1), np.int64)
        self.slen = np.zeros(max(n, 1), np.int64)
        self.nbytes = np.zeros(0, np.int64)

    def _alloc_channels(self, k):
        grown = []
        for name, fill in (("head", -1), ("tail", -1), ("ctag", 0), ("cnext", -1)):
            a = np.full(k, fill, np.int64)
            old = getattr(self, name, None)
            if old is not None:
                a[:len(old)] = old
            grown.append(a)
        self.head, self.tail, self.ctag, self.cnext = grown
        self.ct = (self.pair_first, self.ctag, self.cnext, self.nch)
        # the hash of rank pairs (past the dense table's size): twice k, a power of two
        self.hkey, self.hval = resized(self.hkey, self.hval,
                                       1 if self.nch[1] else table_size(k), _rehash)

    def _grow_pool(self, k):
        old = len(self.nxt)
        nxt = np.empty(k, np.int64)
        nxt[:old] = self.nxt
        # the new nodes go in front of the free list
        nxt[old:k - 1] = np.arange(old + 1, k)
        nxt[k - 1] = self.free[0]
        self.free[0] = old
        grown = []
        for a in (self.qid, self.qrec, self.qnb):
            b = np.zeros(k, np.int64)
            b[:old] = a
            grown.append(b)
        self.nxt = nxt
        self.qid, self.qrec, self.qnb = grown

    def _load_scan(self, s: int) -> None:
        g = int(self.sc[s])
        g1 = min(g + self.B, int(self.rank_end[s]))
        d = self.src.read(s, g, g1, "scan")
        lo = s * self.B
        for buf, c in zip(self.scan_cols, ("op", "peer", "tag", "nbytes")):
            buf[lo:lo + g1 - g] = d[c]
        self.sbase[s] = g
        self.slen[s] = g1 - g

    def ids(self, r: int, g0: int, g1: int, cols=None) -> np.ndarray:
        """Message ids of rank r's records ``[g0, g1)`` (the next ones: g0 = where the
        previous call stopped); -1 for records that are not messages. ``cols``: those
        records' ``op``, ``peer``, ``tag``, ``nbytes`` (read from the source when None).
        Each message's size (its send's) is left in ``self.nbytes``."""
        if cols is None:
            cols = self.src.read(r, g0, g1, "load")
        rec = tuple(np.asarray(cols[c], np.int64) for c in ("op", "peer", "tag", "nbytes"))
        out = np.full(g1 - g0, -1, np.int64)
        nb = np.zeros(g1 - g0, np.int64)
        while True:
            k = _match(r, g0, g1, *rec, self.rank_end, self.n, self.send_base,
                       self.am_base, self.m0, self.hkey, self.hval, *self.ct, self.head, self.tail, self.nxt,
                       self.qid, self.qrec, self.qnb, self.free, self.lc, self.lsn, self.lam,
                       self.sc, self.sn, *self.scan_cols, self.sbase, self.slen, self.B, out,
                       nb, self.err)
            if k == 0:
                self.nbytes = nb
                return out
            if k == GROW:
                if self.nch[0] >= len(self.head):
                    self._alloc_channels(2 * len(self.head))
                if self.free[0] < 0:
                    self._grow_pool(2 * len(self.nxt))
                continue
            if k == NEED:
                self._load_scan(int(self.err[1]))
                continue
            raise self._error(-k - 1, int(self.err[0]), r)

    def finish(self):
        """Match every record not loaded yet (after a run, or a deadlock): raises the
        unmatched receive or send a whole-trace matching would have found."""
        for r in range(self.n):
            while self.lc[r] < self.rank_end[r]:
                g0 = int(self.lc[r])
                self.ids(r, g0, min(g0 + self.B, int(self.rank_end[r])))
        g = self.unmatched_send()
        if g is not None:
            raise self.send_error(g)

    def unmatched_send(self):
        """The first send (record index) still waiting for its receive, or None."""
        live = np.flatnonzero(self.head[:int(self.nch[0])] >= 0)
        if not live.size:
            return None
        return int(min(self.qrec[self.head[c]] for c in live))

    def _error(self, g, code, r):
        from ccmod.compile import _err
        src = self.src
        peer, tag = int(src.record(g, "peer")), int(src.record(g, "tag"))
        if code == E_PEER:
            return _err(src, g, f"record names rank {peer}, but the trace has ranks "
                                f"0..{src.nranks - 1}", "fix the peer rank")
        if code == E_NEGSIZE:
            return _err(src, g, "send has a negative size")
        if code == E_TRUNC:
            return _err(src, g, f"message truncated: recv buffer of "
                                f"{int(src.record(g, 'nbytes'))} bytes is smaller than its send",
                        "MPI reports MPI_ERR_TRUNCATE: a receive must be at least as large "
                        "as its send (a larger receive is fine)")
        return _err(src, g, f"unmatched recv: rank {r} receives from rank {peer} (tag {tag}) "
                            f"but rank {peer} posts no matching send",
                    "every send needs a recv on the same (src, dst, tag) channel")

    def send_error(self, g):
        from ccmod.compile import _err
        src = self.src
        r, peer, tag = src.rank_of(g), int(src.record(g, "peer")), int(src.record(g, "tag"))
        return _err(src, g, f"unmatched send: rank {r} sends to rank {peer} (tag {tag}) but "
                            f"rank {peer} posts no matching recv",
                    "every send needs a recv on the same (src, dst, tag) channel")
