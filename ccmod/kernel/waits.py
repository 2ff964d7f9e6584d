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
def _resolve(rank_ptr, op, req, rec_msg, wait_msg, wait_side, wa_ptr, wa_msg, wa_side):
    nwa = 0
    nent = 0
    for r in range(rank_ptr.shape[0] - 1):
        out = Dict.empty(key_type=types.int64, value_type=types.int64)
        for pc in range(rank_ptr[r], rank_ptr[r + 1]):
            o = op[pc]
            if o == OP_ISEND:
                out[req[pc]] = 2 * rec_msg[pc]
            elif o == OP_IRECV:
                out[req[pc]] = 2 * rec_msg[pc] + 1
            elif o == OP_WAIT:
                q = req[pc]
                if q not in out:
                    return pc             # a wait on a request that is not outstanding
                v = out.pop(q)
                wait_msg[pc] = v >> 1
                wait_side[pc] = v & 1
            elif o == OP_WAITALL:
                wait_msg[pc] = nwa
                for v in out.values():
                    wa_msg[nent] = v >> 1
                    wa_side[nent] = v & 1
                    nent += 1
                nwa += 1
                wa_ptr[nwa] = nent
                out.clear()
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
