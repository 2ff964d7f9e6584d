"""Windowed program feed: the kernel sees a window of each rank's records at a time.

Streaming (issue 10): instead of every rank's whole record arrays, the kernel's
:class:`~ccmod.kernel.state.Program` holds, per rank, a window of at most ``W`` records
(region ``[r * (W + 1), r * (W + 1) + W]``; the extra slot ends the rank's wait lists).
``rank_end[r]`` is where the loaded records end, ``more[r]`` says the trace goes on. When
rank r would read past its window the loop pauses (starved, see
:mod:`ccmod.kernel.loop`); :meth:`WindowFeed.refill` loads its next records into the same
region (the old ones were all consumed) and the loop resumes where it stopped: the result
is bit for bit the result of the whole program.

Waits are resolved as the records are loaded (:func:`_fill`): each rank keeps its
outstanding requests (request id -> message, side) across windows, so a wait may complete
a request posted windows earlier (flat arrays for all ranks, :mod:`ccmod.kernel.requests`). A ``waitall``'s list index is its own window position;
its entries live in the rank's part of a shared pool (grown when a window needs more).

Message ids come from the incremental matcher (:mod:`ccmod.kernel.matcher`, the same ids
as the static matching of :mod:`ccmod.compile`) or from the static matching; the engine
turns them into *slots* as each window is loaded (``start(assign)``,
:mod:`ccmod.kernel.slots`): the kernel's per-message arrays (inputs, times, waiters, the
sharing rules' state, routes at a fixed stride ending at ``route_end``) hold the messages
in flight, each slot recycled once both its sides posted, every wait on it passed and it
ended; ``okey[m]``, the message id, breaks every tie between messages, so results stay bit
for bit. Per-resource heap segments grow with the live slots crossing the resource.
Retired slots' outputs go to a message sink (``Engine(message_sink=...)``).

The source side is small on purpose: :class:`WindowFeed` reads a rank's next ``n`` records
as arrays (``op``, ``duration_s``, ``req`` for the waits; the matcher also ``peer``,
``tag``, ``nbytes``) from ``[next[r], next[r] + n)`` of the workload's columns; a source
that produces per-rank record batches (Parquet) only has to give those columns.

Nothing here is sized by the trace: under ``ccmod run X.parquet --stream`` the records
come per rank from Parquet row groups (:mod:`ccmod.workloads.parquet_stream`), each batch
of newly matched messages gets its routes and costs when its window is loaded
(:mod:`ccmod.stream_inputs`) and retired slots' rows are written as they go
(:mod:`ccmod.streaming`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

import ccmod.kernel.compiled  # noqa: F401  (numba's BLAS check without scipy.linalg)
from ccmod.codes import OP_IRECV, OP_ISEND, OP_WAIT, OP_WAITALL
from ccmod.kernel.requests import Outstanding, post, req_key, take, take_all

#: records of first windows read ahead at start, a group of ranks at a time (their
#: columns are held until assigned: ~70 bytes a record)
START_RECORDS = 1 << 20


@njit(cache=True, _nrt=False)
def _fill(src_op, src_dur, src_req, ids, g0, g1, pc0, op, dur, rec_msg, wait_msg,
          wait_side, wa_ptr, wa_msg, wa_side, k, r, n, hkey, hval, ent, rk, st):
    """Copy records ``[g0, g1)`` of rank r (of n) to window positions from ``pc0``,
    resolving waits with the ranks' outstanding requests (``hkey`` ... ``st``, the
    arrays of :class:`ccmod.kernel.requests.Outstanding`, room made for these records'
    requests); wait-list entries from pool index ``k``.

    Returns the pool index after the last entry, or ``-(g + 1)`` for the first record g
    that waits on a request that is not outstanding.
    """
    for i in range(g1 - g0):
        g = g0 + i
        pc = pc0 + i
        o = src_op[g]
        op[pc] = o
        dur[pc] = src_dur[g]
        rec_msg[pc] = ids[i]
        wait_msg[pc] = -1
        wait_side[pc] = 0
        wa_ptr[pc] = k
        # track_request's effects (ccmod/kernel/waits.py), on flat arrays
        if o == OP_ISEND:
            post(hkey, hval, ent, rk, st, r, req_key(src_req[g], r, n), 2 * ids[i])
        elif o == OP_IRECV:
            post(hkey, hval, ent, rk, st, r, req_key(src_req[g], r, n), 2 * ids[i] + 1)
        elif o == OP_WAIT:
            v = take(hkey, hval, ent, rk, st, r, req_key(src_req[g], r, n))
            if v < 0:
                return -(g + 1)
            wait_msg[pc] = v >> 1
            wait_side[pc] = v & 1
        elif o == OP_WAITALL:
            wait_msg[pc] = pc        # a waitall's list is its own window position
            k = take_all(hkey, hval, ent, rk, st, r, wa_msg, wa_side, k)
    wa_ptr[pc0 + g1 - g0] = k
    return k


class ArraySource:
    """A Workload's records as a record source (the interface of
    :class:`ccmod.workloads.parquet_stream.ParquetRecordSource`): ``read(r, g0, g1)``
    gives views of int64 / float64 copies of the columns."""

    COLS = ("op", "peer", "tag", "nbytes", "duration_s", "req")

    def __init__(self, w):
        self.w = w
        self.nranks = int(w.nranks)
        self.rank_ptr = np.asarray(w.rank_ptr, np.int64)
        self.nrecords = int(self.rank_ptr[-1]) if len(self.rank_ptr) else 0
        self.cols = {c: np.asarray(getattr(w, c), np.float64 if c == "duration_s"
                                   else np.int64) for c in self.COLS}

    def read(self, r, g0, g1, reader="load"):
        return {c: v[g0:g1] for c, v in self.cols.items()}

    def op_counts(self, ops):
        rank = np.repeat(np.arange(self.nranks), np.diff(self.rank_ptr))
        sel = np.isin(self.cols["op"], np.asarray(list(ops), np.int64))
        return np.bincount(rank[sel], minlength=self.nranks).astype(np.int64)

    def record(self, g, name):
        return getattr(self.w, name)[g]

    def where(self, g):
        return self.w.where(g)

    def rank_of(self, g):
        return self.w.rank_of(g)


def as_source(x):
    """A record source: ``x`` itself, or an :class:`ArraySource` over a Workload."""
    return x if hasattr(x, "read") else ArraySource(x)


class WindowFeed:
    """Feed a record source's records to the kernel in per-rank windows of ``window``
    records.

    Parameters
    ----------
    source : record source or workloads.base.Workload
        ``read(r, g0, g1, "load")`` gives rank r's records ``[g0, g1)`` (``op``,
        ``duration_s``, ``req``, ``peer``, ``tag``, ``nbytes``); ``nranks``, ``rank_ptr``.
    rec_msg : int64[n records], optional
        Message id of each send/recv record (-1 otherwise), from the static matching;
        None: matched as the windows are loaded (:mod:`ccmod.kernel.matcher`).
    window : int
        Records per rank in the kernel at once (>= 1).
    matcher : Matcher, optional
        The incremental matcher to use (None: one over ``source``).
    """

    def __init__(self, source, rec_msg, window: int, start: bool = True, matcher=None):
        src = self.source = as_source(source)
        n = int(src.nranks)
        self.n = n
        W = int(window)
        if W < 1:
            raise ValueError("window must be >= 1 record")
        self.W, self.stride = W, W + 1
        self.rec_msg = None if rec_msg is None else np.asarray(rec_msg, np.int64)
        self.matcher = matcher
        if rec_msg is None and matcher is None:
            from ccmod.kernel.matcher import Matcher
            self.matcher = Matcher(src)
        self.rank_ptr_src = np.asarray(src.rank_ptr, np.int64)
        size = max(n, 1) * self.stride
        self.rank_ptr = np.arange(n + 1, dtype=np.int64) * self.stride
        # the kernel's Program dtypes (kernel/compiled.PROGRAM_DTYPES): op codes and
        # message slots fit (slots are the messages in flight, far below 2^31)
        self.op = np.zeros(size, np.int8)
        self.dur = np.zeros(size)
        self.msg = np.full(size, -1, np.int32)
        self.wait_msg = np.full(size, -1, np.int64)
        self.wait_side = np.zeros(size, np.int64)
        self.wa_ptr = np.zeros(size + 1, np.int64)
        self.rank_end = self.rank_ptr[:-1].copy() if n else np.zeros(1, np.int64)
        self.more = np.zeros(max(n, 1), np.int64)
        self.next = self.rank_ptr_src[:-1].copy()   # next record of each rank to load
        self.base = self.next.copy()                 # record at the start of its window
        self.out = Outstanding(n)
        self.wa_cap = 16                             # pool entries per rank
        self.wa_msg = np.zeros(max(n, 1) * self.wa_cap, np.int64)
        self.wa_side = np.zeros(max(n, 1) * self.wa_cap, np.int64)
        self.loads = 0
        self.assign = None
        self.program = self._program()
        if start:
            self.start()

    def start(self, assign=None, reserve=None) -> None:
        """Load every rank's first window. ``assign(r, g0, g1, ids, cols)``, if given,
        turns the message ids of rank r's records ``[g0, g1)`` (columns ``cols``, with
        ``msg_nbytes`` each message's size) into the kernel's message indices (slots,
        :mod:`ccmod.kernel.slots`); without it the ids are the indices.

        ``reserve(batches)``, if given, is told the ``(op, ids)`` of the first windows of
        a group of ranks (up to :data:`START_RECORDS` records) before they are assigned:
        the slots can then grow once per group rather than double many times as the
        ranks are loaded one by one (each growth lays the whole state out again).
        """
        self.assign = assign
        r = 0
        while r < self.n:
            group, held = [], 0
            while r < self.n and (not group or held < START_RECORDS):
                group.append(self._read(r))
                held += group[-1][2] - group[-1][1]
                r += 1
            if reserve is not None:
                reserve([(np.asarray(c["op"], np.int64), ids) for _, _, _, c, ids in group])
            for item in group:
                self._place(*item)
        self.program = self._program()

    def _program(self):
        from ccmod.kernel.state import Program
        return Program(self.n, self.rank_ptr, self.op, self.dur, self.msg,
                       self.wait_msg, self.wait_side, self.wa_ptr, self.wa_msg, self.wa_side,
                       self.rank_end, self.more)

    def _grow_pool(self, need: int) -> None:
        """Give every rank at least ``need`` wait-list entries (entries keep their place
        within their rank's part; the rank's wa_ptr region moves with it)."""
        n = self.n
        old = self.wa_cap
        new = max(need, 2 * old)
        msg = np.zeros(n * new, np.int64)
        side = np.zeros(n * new, np.int64)
        for r in range(n):
            msg[r * new:r * new + old] = self.wa_msg[r * old:(r + 1) * old]
            side[r * new:r * new + old] = self.wa_side[r * old:(r + 1) * old]
            lo = r * self.stride
            self.wa_ptr[lo:lo + self.stride] += r * (new - old)
        self.wa_msg, self.wa_side, self.wa_cap = msg, side, new

    def _load(self, r: int) -> None:
        self._place(*self._read(r))

    def _read(self, r: int):
        """Rank r's next window: ``(r, g0, g1, cols, ids)``, message ids from the matcher
        (or the static matching), not yet slots."""
        g0 = int(self.next[r])
        g1 = min(g0 + self.W, int(self.rank_ptr_src[r + 1]))
        cols = self.source.read(r, g0, g1, "load")
        if self.matcher is not None:
            ids = self.matcher.ids(r, g0, g1, cols)
            cols = dict(cols, msg_nbytes=self.matcher.nbytes)
        else:
            ids = self.rec_msg[g0:g1]
        return r, g0, g1, cols, ids

    def _place(self, r: int, g0: int, g1: int, cols, ids) -> None:
        """Put rank r's window (:meth:`_read`) in its region, waits resolved."""
        from ccmod.errors import CcmodInputError
        op = np.asarray(cols["op"], np.int64)
        req = np.asarray(cols["req"], np.int64)
        posts = (op == OP_ISEND) | (op == OP_IRECV)
        nreq = int(np.count_nonzero(posts))
        need = self.out.count(r) + nreq
        if need > self.wa_cap:
            self._grow_pool(need)
        if nreq or self.out.count(r):
            touch = posts | (op == OP_WAIT)
            bad = self.out.check(np.where(touch, req, 0))
            if bad >= 0:
                f, ln = self.source.where(g0 + bad)
                raise CcmodInputError(f"request id {int(req[bad])} of rank {r} is too large "
                                      f"for a streamed run (at most +-{self.out.limit})",
                                      source=f, line=ln, hint="renumber the requests, or "
                                      "drop --stream / --window")
            self.out.reserve(nreq)
        pc0 = r * self.stride
        if self.assign is not None:
            ids = self.assign(r, g0, g1, ids, cols)
        k = _fill(op, np.asarray(cols["duration_s"], np.float64), req, ids, 0, g1 - g0, pc0,
                  self.op, self.dur, self.msg, self.wait_msg, self.wait_side, self.wa_ptr,
                  self.wa_msg, self.wa_side, r * self.wa_cap, r, self.out.n,
                  *self.out.tables())
        if k < 0:
            bad = g0 + (-k - 1)
            f, ln = self.source.where(bad)
            raise CcmodInputError(f"rank {r} waits on request "
                                  f"{int(self.source.record(bad, 'req'))} that is "
                                  f"not outstanding", source=f, line=ln,
                                  hint="each wait needs an earlier isend/irecv")
        self.base[r] = g0
        self.next[r] = g1
        self.rank_end[r] = pc0 + (g1 - g0)
        self.more[r] = int(g1 < self.rank_ptr_src[r + 1])
        self.loads += 1

    def refill(self, r: int, R) -> None:
        """Load rank r's next window (it consumed the last one); ``R`` the rank-state views
        (its program counter restarts at the window's start), or a callable giving them
        after the load (the state may be laid out again when slots run out)."""
        self._load(r)
        if callable(R):
            R = R()
        R.pc[r] = r * self.stride
        R.paid_pc[r] = -1        # positions are reused: no send of the new window is paid
        self.program = self._program()   # the pool may have been reallocated

    def record_of(self, r: int, pc: int) -> int:
        """The trace record at window position ``pc`` of rank r."""
        return int(self.base[r] + (pc - r * self.stride))


def resumer(args):
    """What resumes the loop (:func:`ccmod.kernel.loop.run_loop`) with ``args`` = ``(C, P,
    L, I, F)``: the compiled entry of its specialisation for these argument types.

    A windowed run resumes the loop once per window refill. Called through numba's
    dispatcher, every call types the named-tuple arguments again (``C``, ``P``, ``L``: tens
    of microseconds, as much as a small refill itself); the entry point skips that typing.
    Every resume passes arguments of the same types (the program, state buffers and logs
    are rebuilt or grown with the same dtypes, never retyped). Without the JIT
    (``NUMBA_DISABLE_JIT=1``) it is the plain function.
    """
    from ccmod.kernel.loop import run_entry, run_loop
    overloads = getattr(run_entry, "overloads", None)
    if not overloads:
        return run_loop
    cres = overloads.get(tuple(run_entry.typeof_pyval(a) for a in args))
    if cres is None:
        return run_loop
    return cres.entry_point
