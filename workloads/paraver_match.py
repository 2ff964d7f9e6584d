"""Which MPI call of a Paraver trace each message end belongs to (``workloads.paraver``).

A communication record (``3:``) names both ends of a message with their times; the reader
gives the send to the call containing the logical send time, the receive to the call
containing the logical receive time, and an Irecv's completion to the Wait/Test call
containing the physical receive time. Two refinements keep zero-length calls apart:

* ccmod's own ``.prv`` output (``outputs/paraver_calls.py``) names, on each call's event
  record, the communication records the call posts (type ``CCMOD_POSTS``) and completes
  (``CCMOD_COMPLETES``), so its traces read back exactly, isend waits included;
* otherwise, calls that share a tick are told apart by the kind of end (see :func:`_find`).
"""
from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from collections import defaultdict

from ccmod.workloads.assembler import COLLECTIVE_KINDS

#: ccmod-private event types written by the paraver sink (values: 1-based indices of
#: communication records in file order; ``CCMOD_NATIVE_BARRIER`` 1 = OP_BARRIER;
#: ``CCMOD_COMPUTE`` one compute record before the call as the bits of an IEEE-754 double,
#: so it reads back exactly instead of rounded to the trace's nanoseconds)
CCMOD_POSTS, CCMOD_COMPLETES, CCMOD_NATIVE_BARRIER = 92000001, 92000002, 92000003
CCMOD_COMPUTE = 92000004


def exact_bits(seconds: float) -> int:
    """``seconds`` as the unsigned 64-bit value of its IEEE-754 bits (an event value)."""
    return struct.unpack("<Q", struct.pack("<d", float(seconds)))[0]


def exact_seconds(value: int) -> float:
    """Inverse of :func:`exact_bits`; garbage (NaN, negative, out of range) reads as 0."""
    try:
        v = struct.unpack("<d", struct.pack("<Q", int(value)))[0]
    except struct.error:
        return 0.0
    return v if v >= 0 and v < float("inf") else 0.0
_GSEND, _GRECV, _GCOMM = 50100001, 50100002, 50100004
_ISEND = {"isend", "ibsend", "issend", "irsend"}
_IRECV = {"irecv"}
_SENDRECV = {"sendrecv", "sendrecv_replace"}
_WAIT_ALL = {"waitall", "waitsome", "testall", "testsome"}
_WAIT_ONE = {"wait", "waitany"}


def _messages_inside_collectives(calls) -> int:
    """Number of message ends whose time lies strictly within a collective call of their
    rank (an end on the call's first or last tick belongs to a neighbouring call)."""
    n = 0
    for cl in calls:
        times = sorted(it[0] for c in cl for it in c.items)
        if not times:
            continue
        for c in cl:
            if COLLECTIVE_KINDS.get(c.kind()) is not None and c.t1 - c.t0 > 1:
                n += max(bisect_left(times, c.t1) - bisect_right(times, c.t0), 0)
    return n


def _find(calls_r, starts_r, t, prefer_p2p=True, side=None, precv=None):
    """Innermost call containing time ``t`` (calls of different event types may nest).

    Calls that share the tick (zero-length calls at the clock's resolution, as in ccmod's
    own output) are told apart by ``side``: a send/receive post ('s'/'r') goes to the
    first call starting at that tick, a physical receive ('w') to the first call ending at
    it, in trace order, of the matching kind that holds no such end yet (Waitall-like calls
    take any number).
    """
    i = bisect_right(starts_r, t) - 1
    best = None
    for j in range(i, max(i - 8, -1), -1):
        c = calls_r[j]
        if c.t0 <= t <= c.t1:
            if not prefer_p2p or COLLECTIVE_KINDS.get(c.kind()) is None:
                best = c
                break
            best = best or c
    if best is None or side is None:
        return best
    if side == "w":
        # a physical receive ends the wait that saw it: calls ending at t, in trace order
        cands = [calls_r[j] for j in range(max(i - 64, 0), i + 1)
                 if calls_r[j].t0 <= t == calls_r[j].t1]
    else:
        # a post starts its call: calls starting at the same tick, in trace order
        lo, hi = bisect_left(starts_r, best.t0), bisect_right(starts_r, best.t0)
        cands = [calls_r[j] for j in range(lo, hi) if calls_r[j].t1 >= t]
    if len(cands) > 1 or (cands and cands[0] is not best):
        for c in cands:
            if _accepts(c, side, precv):
                return c
    return best


_SENDS = {"send", "bsend", "ssend", "rsend"} | _ISEND | _SENDRECV
_RECVS = {"recv"} | _IRECV | _SENDRECV


def _accepts(c, side, precv=None) -> bool:
    """Whether call ``c`` can take one more message end of ``side`` ('s', 'r', 'w'); a
    blocking receive only takes a message received (``precv``) before it returns."""
    nm = c.kind()
    if side == "w" and nm in _WAIT_ALL:
        return True
    if side == "r" and precv is not None and precv > c.t1 and nm not in _IRECV:
        return False
    kinds = {"s": _SENDS, "r": _RECVS, "w": _WAIT_ONE}[side]
    return nm in kinds and not any(it[1] == side for it in c.items)


def _attach(calls, crecs, grecs, asm):
    """Attach message sides and 4: records to the MPI calls that contain their times."""
    starts = [[c.t0 for c in cl] for cl in calls]
    extra = defaultdict(list)
    waited = set()
    # ccmod's own output names the records each call posts (a self message is posted by
    # a send call and a receive call of one rank) and completes
    posts = [{(i, "s" if c.kind() in _SENDS else "r"): c for c in cl for i in c.posts}
             for cl in calls]
    dones = [{i: c for c in cl for i in c.done} for cl in calls]

    def call_at(r, t, label, side, precv=None, idx=None):
        c = posts[r].get((idx + 1, side)) if idx is not None and posts[r] else None
        c = c or _find(calls[r], starts[r], t, side=side, precv=precv)
        if c is None:
            c = _Call(t, label)
            extra[r].append(c)
            asm.count("messages_outside_mpi_calls")
        return c

    buffered = 0
    for idx, (rs, lsend, rr, lrecv, precv, size, tag, ln) in enumerate(crecs):
        sc = call_at(rs, lsend, "MPI_Send", "s", idx=idx)
        sc.items.append((lsend, "s", rr, size, tag, idx, ln))
        rc = call_at(rr, lrecv, "MPI_Recv", "r", precv, idx)
        # a blocking send that returned before its receive was posted: the MPI library
        # buffered it (eager protocol); the largest such size bounds its eager limit
        if sc.name in ("MPI_Send", "MPI_Bsend") and sc.t1 < rc.t0 and size > buffered:
            buffered = size
        rc.items.append((lrecv, "r", rs, size, tag, idx, ln))
        name = rc.name[4:].lower()
        if name in _IRECV:
            wc = dones[rr].get(idx + 1) or _find(calls[rr], starts[rr], precv, side="w")
            if wc is not None and wc is not rc:
                wc.items.append((precv, "w", rs, size, tag, idx, ln))
                waited.add(idx)
    for r, t, comm, snd, rcv, opid in grecs:
        c = _find(calls[r], starts[r], t)
        if c is not None and c.g is None:
            c.g = {_GSEND: snd, _GRECV: rcv, _GCOMM: comm, "op": opid}
    for r, cl in extra.items():
        calls[r].extend(cl)
        calls[r].sort(key=lambda c: c.t0)
    if any(extra.values()):
        asm.note("messages outside any MPI call event were attributed to blocking "
                 "send/recv at their logical time (messages_outside_mpi_calls)")
    if buffered:
        asm.meta["eager_bytes_observed"] = int(buffered)
    return waited


