"""Static wait-to-request mapping (done once at compile time, like send/recv matching).

A rank's requests are program-ordered, so which isend/irecv a wait completes is known
without running: ``wait_msg[pc]`` is the message of an ``OP_WAIT`` record (``wait_side``
0 = send side, 1 = receive side) and, for an ``OP_WAITALL``, the index of its list in the
CSR ``wa_ptr`` / ``wa_msg`` / ``wa_side`` (every request outstanding at that point).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types

import ccmod.kernel.compiled  # noqa: F401  (numba's BLAS check without scipy.linalg)
from ccmod.codes import OP_IRECV, OP_ISEND, OP_WAIT, OP_WAITALL

assert (OP_ISEND, OP_IRECV, OP_WAIT, OP_WAITALL) == (3, 4, 5, 6)  # one range: see sel


@njit(cache=True)
def track_request(out, o, q, m, pc, list_id, wait_msg, wait_side, wa_msg, wa_side, k):
    """One record's effect on its rank's outstanding requests ``out`` (request -> 2 m + side).

    An isend/irecv of message ``m`` with request ``q`` becomes outstanding; a wait takes its
    request out and names its message and side at ``pc``; a waitall gets list ``list_id``
    and takes every outstanding request into the wait-list pool from index ``k``.
    Returns the pool index after this record, or -1 when a wait names a request that is
    not outstanding.
    """
    if o == OP_ISEND:
        out[q] = 2 * m
    elif o == OP_IRECV:
        out[q] = 2 * m + 1
    elif o == OP_WAIT:
        if q not in out:
            return -1
        v = out.pop(q)
        wait_msg[pc] = v >> 1
        wait_side[pc] = v & 1
    elif o == OP_WAITALL:
        wait_msg[pc] = list_id
        for v in out.values():
            wa_msg[k] = v >> 1
            wa_side[k] = v & 1
            k += 1
        out.clear()
    return k


@njit(cache=True)
def _resolve(sel_ptr, sel, op, req, msg, wait_msg, wait_side, wa_ptr, wa_msg, wa_side):
    # sel: the records that touch requests (isend, irecv, wait, waitall), in order, and
    # their op, req and message; sel_ptr: CSR of sel by rank. Other records change
    # nothing: not visited.
    nwa = 0
    nent = 0
    for r in range(sel_ptr.shape[0] - 1):
        out = Dict.empty(key_type=types.int64, value_type=types.int64)
        for j in range(sel_ptr[r], sel_ptr[r + 1]):
            pc = sel[j]
            nent = track_request(out, op[j], req[j], msg[j], pc, nwa, wait_msg, wait_side,
                                 wa_msg, wa_side, nent)
            if nent < 0:
                return pc             # a wait on a request that is not outstanding
            if op[j] == OP_WAITALL:
                nwa += 1
                wa_ptr[nwa] = nent
    return -1


def resolve_waits(rank_ptr, op, req, rec_msg):
    """Return (bad_pc, wait_msg, wait_side, wa_ptr, wa_msg, wa_side); bad_pc is -1 when
    every wait names an outstanding request, else the first record that does not.

    ``wait_msg`` / ``wait_side`` are per record (read at wait records only); a trace
    without any wait gets one-element arrays (nothing reads them: 16 bytes per record
    neither written nor held).
    """
    op = np.asarray(op)
    nwait = int(np.count_nonzero(op == OP_WAIT))
    nwa = int(np.count_nonzero(op == OP_WAITALL))
    if nwait + nwa == 0:
        # isend/irecv that no record waits on need no mapping
        return -1, np.full(1, -1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64), \
            np.zeros(1, np.int64), np.zeros(1, np.int64)
    n = len(op)
    # the request records only: ops ISEND..WAITALL are consecutive codes
    sel = np.flatnonzero((op >= OP_ISEND) & (op <= OP_WAITALL))
    sel_ptr = np.searchsorted(sel, np.asarray(rank_ptr, np.int64))
    wait_msg = np.full(n, -1, np.int64)
    wait_side = np.zeros(n, np.int64)
    nreq = int(np.count_nonzero((op == OP_ISEND) | (op == OP_IRECV)))
    wa_ptr = np.zeros(nwa + 1, np.int64)
    wa_msg = np.zeros(max(nreq, 1), np.int64)
    wa_side = np.zeros(max(nreq, 1), np.int64)
    i64 = lambda a: np.asarray(a)[sel].astype(np.int64)  # noqa: E731 - one compiled signature
    # _resolve's typed dict, imported only for a trace with waits (numba.typed costs
    # ~0.01 s of start-up); a module global, where numba's compile and plain Python look
    global Dict
    from numba.typed import Dict
    bad = _resolve(sel_ptr.astype(np.int64), sel.astype(np.int64), i64(op), i64(req),
                   i64(rec_msg), wait_msg, wait_side, wa_ptr, wa_msg, wa_side)
    return int(bad), wait_msg, wait_side, wa_ptr, wa_msg, wa_side
