"""Static wait-to-request mapping (done once at compile time, like send/recv matching).

A rank's requests are program-ordered, so which isend/irecv a wait completes is known
without running: ``wait_msg[pc]`` is the message of an ``OP_WAIT`` record (``wait_side``
0 = send side, 1 = receive side) and, for an ``OP_WAITALL``, the index of its list in the
CSR ``wa_ptr`` / ``wa_msg`` / ``wa_side`` (every request outstanding at that point).
"""
from __future__ import annotations

import numpy as np
from numba import njit

import ccmod.kernel.compiled  # noqa: F401  (numba's BLAS check without scipy.linalg)
from ccmod.codes import OP_IRECV, OP_ISEND, OP_WAIT, OP_WAITALL

assert (OP_ISEND, OP_IRECV, OP_WAIT, OP_WAITALL) == (3, 4, 5, 6)  # one range: see sel


@njit(cache=True)
def _resolve(sel_ptr, op, key, msg, pcs, wait_msg, wait_side, wa_ptr, wa_msg, wa_side, val,
             ent_key, where):
    # The request records (isend, irecv, wait, waitall) in order, CSR by rank (sel_ptr), with
    # their op, request key (dense: one per (rank, request id)), message and record. Each
    # rank's outstanding requests, as a dict of request -> 2 m + side would hold them:
    # entries in the order posted (a waitall lists them so, and takes them all), ``where``
    # the entry of each outstanding key (-1: none); a request posted again under an
    # outstanding id keeps its entry (its value changes), as a dict's key keeps its place.
    # The scratch arrays (val, ent_key, where all -1) come from the caller: a compiled
    # allocation would make loading this function from numba's cache import numba's array
    # implementations (numba.np.arrayobj, numpy.ma: ~0.05 s of every run's start-up).
    nent = 0              # entries made so far (all ranks)
    k = 0                 # wait-list pool used
    nwa = 0
    for r in range(sel_ptr.shape[0] - 1):
        first = nent      # the rank's entries: first..nent (a waitall moves first past them)
        for j in range(sel_ptr[r], sel_ptr[r + 1]):
            o = op[j]
            pc = pcs[j]
            if o == OP_ISEND or o == OP_IRECV:
                v = 2 * msg[j] + (1 if o == OP_IRECV else 0)
                e = where[key[j]]
                if e < 0:
                    where[key[j]] = nent
                    ent_key[nent] = key[j]
                    val[nent] = v
                    nent += 1
                else:
                    val[e] = v
            elif o == OP_WAIT:
                e = where[key[j]]
                if e < 0:
                    return pc             # a wait on a request that is not outstanding
                where[key[j]] = -1
                ent_key[e] = -1
                wait_msg[pc] = val[e] >> 1
                wait_side[pc] = val[e] & 1
            else:                         # OP_WAITALL
                wait_msg[pc] = nwa
                for e in range(first, nent):
                    if ent_key[e] >= 0:
                        wa_msg[k] = val[e] >> 1
                        wa_side[k] = val[e] & 1
                        k += 1
                        where[ent_key[e]] = -1
                first = nent
                nwa += 1
                wa_ptr[nwa] = k
    return -1


def _request_keys(rank_ptr, sel, req):
    """One dense key per (rank, request id) of the request records ``sel`` (their ids
    ``req``), and how many: ``rank * span + id`` when the ids are small non-negative ints
    (as readers and generators make them), else a sort's group numbers."""
    rank = np.searchsorted(np.asarray(rank_ptr, np.int64), sel, side="right") - 1
    nranks = max(len(rank_ptr) - 1, 1)
    if len(req) == 0:
        return np.zeros(0, np.int64), 0
    lo, hi = int(req.min()), int(req.max())
    if lo >= 0 and (hi + 1) * nranks <= len(req) + 4096:
        return rank * (hi + 1) + req, (hi + 1) * nranks
    order = np.lexsort((req, rank))
    new = np.ones(len(order), bool)
    new[1:] = (np.diff(rank[order]) != 0) | (np.diff(req[order]) != 0)
    key = np.empty(len(order), np.int64)
    key[order] = np.cumsum(new) - 1
    return key, int(key.max()) + 1 if len(key) else 0


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
    sel_op = op[sel].astype(np.int64)
    sel_req = np.asarray(req)[sel].astype(np.int64)
    # waitall records carry no request: their keys (unused) must not widen the span
    is_req = sel_op != OP_WAITALL
    key = np.zeros(len(sel), np.int64)
    keys, nkeys = _request_keys(rank_ptr, sel[is_req], sel_req[is_req])
    key[is_req] = keys
    nent = max(len(wa_msg), 1)      # entries at most: one per isend/irecv
    bad = _resolve(sel_ptr.astype(np.int64), sel_op, key,
                   np.asarray(rec_msg)[sel].astype(np.int64), sel.astype(np.int64), wait_msg,
                   wait_side, wa_ptr, wa_msg, wa_side, np.empty(nent, np.int64),
                   np.empty(nent, np.int64), np.full(max(nkeys, 1), -1, np.int64))
    return int(bad), wait_msg, wait_side, wa_ptr, wa_msg, wa_side
