"""Static wait-to-request mapping (done once at compile time, like send/recv matching).

A rank's requests are program-ordered, so which isend/irecv a wait completes is known
without running: ``wait_msg[pc]`` is the message of an ``OP_WAIT`` record (``wait_side``
0 = send side, 1 = receive side) and, for an ``OP_WAITALL``, the index of its list in the
CSR ``wa_ptr`` / ``wa_msg`` / ``wa_side`` (every request outstanding at that point).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict

import ccmod.kernel.compiled  # noqa: F401  (numba's BLAS check without scipy.linalg)
from ccmod.codes import OP_IRECV, OP_ISEND, OP_WAIT, OP_WAITALL


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
def _resolve(rank_ptr, op, req, rec_msg, wait_msg, wait_side, wa_ptr, wa_msg, wa_side):
    nwa = 0
    nent = 0
    for r in range(rank_ptr.shape[0] - 1):
        out = Dict.empty(key_type=types.int64, value_type=types.int64)
        for pc in range(rank_ptr[r], rank_ptr[r + 1]):
            nent = track_request(out, op[pc], req[pc], rec_msg[pc], pc, nwa, wait_msg,
                                 wait_side, wa_msg, wa_side, nent)
            if nent < 0:
                return pc             # a wait on a request that is not outstanding
            if op[pc] == OP_WAITALL:
                nwa += 1
                wa_ptr[nwa] = nent
    return -1


def resolve_waits(rank_ptr, op, req, rec_msg):
    """Return (bad_pc, wait_msg, wait_side, wa_ptr, wa_msg, wa_side); bad_pc is -1 when
    every wait names an outstanding request, else the first record that does not."""
    n = len(op)
    wait_msg = np.full(n, -1, np.int64)
    wait_side = np.zeros(n, np.int64)
    nwa = int(np.count_nonzero(op == OP_WAITALL))
    nreq = int(np.count_nonzero((op == OP_ISEND) | (op == OP_IRECV)))
    wa_ptr = np.zeros(nwa + 1, np.int64)
    wa_msg = np.zeros(max(nreq, 1), np.int64)
    wa_side = np.zeros(max(nreq, 1), np.int64)
    bad = _resolve(np.asarray(rank_ptr, np.int64), np.asarray(op, np.int64),
                   np.asarray(req, np.int64), np.asarray(rec_msg, np.int64), wait_msg,
                   wait_side, wa_ptr, wa_msg, wa_side)
    return int(bad), wait_msg, wait_side, wa_ptr, wa_msg, wa_side
