"""MPI call events for the ``paraver`` sink: the replayed workload as Extrae would trace it.

ccmod's own Paraver reader (``workloads/paraver.py``) rebuilds a workload from MPI call
events (Extrae's types 50000001..50000003), communication records and Running states. To
make a ccmod ``.prv`` read back to the same prediction, the sink writes, for every record
of the workload the run replayed, the MPI call that record stands for, at the times the
engine gave it:

=================  =========================  ============================================
workload record    MPI call (type, value)     call interval
=================  =========================  ============================================
send / isend       MPI_Send / MPI_Isend (1,3)  from the end of the previous call to the
                                               return (isend: the post time)
recv / irecv       MPI_Recv / MPI_Irecv (2,4)  to the message's end (irecv: the post time)
wait / waitall     MPI_Wait / MPI_Waitall      to the end of the latest message it waits for
                   (5, 6)
barrier            MPI_Barrier (type 2, 8)     to the arrival of the last rank
(start, end)       MPI_Init / MPI_Finalize     zero length at 0 and at the rank's finish
                   (type 3, 31 / 32)
=================  =========================  ============================================

Compute records are the engine's compute intervals (state Running), which lie between the
calls. Communication records then carry logical send = the send's post time (inside its
call), logical receive = the receive's post time (inside its call) and physical receive =
when the receiving rank saw the message complete (inside the Recv, or the Wait/Waitall that
completed the Irecv, as Extrae records it).

The times come from the result: each send/receive record is paired with its message by
MPI's matching rule (the n-th send on channel (src, dst, tag) is the n-th message on it,
in ``msg_id`` order), blocking ends from the message end times (a send returns at the
message end unless ``--send-mode detached``), barriers from every rank's arrival.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from ccmod.codes import (OP_AMREQUEST, OP_BARRIER, OP_COMPUTE, OP_IRECV, OP_ISEND, OP_RECV,
                         OP_SEND, OP_WAIT, OP_WAITALL, STATE_COMPUTE)

P2P, COLL, OTHER = 50000001, 50000002, 50000003
#: workload op -> (event type, Extrae value, name)
CALLS = {OP_SEND: (P2P, 1, "MPI_Send"), OP_RECV: (P2P, 2, "MPI_Recv"),
         OP_ISEND: (P2P, 3, "MPI_Isend"), OP_IRECV: (P2P, 4, "MPI_Irecv"),
         OP_WAIT: (P2P, 5, "MPI_Wait"), OP_WAITALL: (P2P, 6, "MPI_Waitall"),
         OP_BARRIER: (COLL, 8, "MPI_Barrier")}
INIT, FINALIZE = (OTHER, 31, "MPI_Init"), (OTHER, 32, "MPI_Finalize")
EVENT_TYPES = {P2P: "MPI Point-to-point", COLL: "MPI Collective Comm", OTHER: "MPI Other"}


def pcf_events() -> list[str]:
    """The ``.pcf`` EVENT_TYPE blocks naming the call values the sink writes."""
    out = []
    for typ, label in EVENT_TYPES.items():
        vals = sorted({(v, n) for t, v, n in list(CALLS.values()) + [INIT, FINALIZE]
                       if t == typ})
        out += ["EVENT_TYPE", f"0    {typ}    {label}", "VALUES", "0   End"]
        out += [f"{v}   {n}" for v, n in vals] + ["", ""]
    from ccmod.workloads.paraver_match import (CCMOD_COMPLETES, CCMOD_COMPUTE,
                                               CCMOD_NATIVE_BARRIER, CCMOD_POSTS)
    out += ["EVENT_TYPE",
            f"0    {CCMOD_POSTS}    ccmod: communication record this call posts "
            "(1-based, file order)",
            f"0    {CCMOD_COMPLETES}    ccmod: communication record this call completes",
            f"0    {CCMOD_NATIVE_BARRIER}    ccmod: barrier replayed as a pure "
            "synchronisation",
            f"0    {CCMOD_COMPUTE}    ccmod: a compute record before this call (seconds, "
            "IEEE-754 double bits)",
            "", ""]
    return out


def call_timeline(result, workload):
    """Calls and message times of ``workload`` as replayed in ``result``.

    Returns
    -------
    (events, lsend, lrecv, precv) or None when the workload cannot be written as MPI calls
    (active messages) or does not match the result. ``events`` is a list of
    ``(rank, t_s, seq, type, value, posts, completes, native, compute_s)``: the message rows
    the call posts and completes (on its enter event; the writer names their communication
    records with ccmod's private types), whether it is a pure-synchronisation barrier and
    the exact durations of the compute records since the previous call; the three
    arrays are per message row (seconds).
    """
    w = workload
    if w is None or w.nranks != result.nranks or (w.op == OP_AMREQUEST).any():
        return None
    m = result.messages
    src, dst = m["src"].to_numpy(np.int64), m["dst"].to_numpy(np.int64)
    tag = m["tag"].to_numpy(np.int64) if "tag" in m.columns else np.zeros(len(m), np.int64)
    t_ps = m["t_post_send_s"].to_numpy(float)
    t_pr = m["t_post_recv_s"].to_numpy(float)
    t_end = m["t_end_s"].to_numpy(float)
    order = np.argsort(m["msg_id"].to_numpy(), kind="stable")
    chan = defaultdict(list)
    for i in order.tolist():
        chan[(int(src[i]), int(dst[i]), int(tag[i]))].append(i)
    sent = defaultdict(int)
    got = defaultdict(int)
    detached = str(result.send_mode) == "detached"
    comp = _compute_intervals(result)
    precv = t_end.copy()
    events = []
    walkers = [_walk(r, w, comp.get(r, []), chan, sent, got, t_end, t_ps, t_pr, precv,
                     detached, events, float(result.rank_finish_s[r]))
               for r in range(w.nranks)]
    try:
        _run_barriers(walkers)
    except (IndexError, KeyError, ValueError):
        return None                 # the result is not this workload's run
    return events, t_ps, t_pr, precv


def _compute_intervals(result):
    s = result.rank_states
    if s is None or len(s) == 0:
        return {}
    from ccmod.outputs.intervals import state_codes
    code = state_codes(s["state"])
    out = defaultdict(list)
    sel = np.flatnonzero(code == STATE_COMPUTE)
    rk = s["rank"].to_numpy()[sel]
    a, b = s["t_start_s"].to_numpy()[sel], s["t_end_s"].to_numpy()[sel]
    for i in np.lexsort((a, rk)).tolist():
        out[int(rk[i])].append((float(a[i]), float(b[i])))
    return out


def _run_barriers(walkers):
    """Drive the per-rank walks; each yields its arrival at a barrier and gets the release
    (the latest arrival: the engine releases every rank when the last one arrives)."""
    arrivals = [_step(g, None) for g in walkers]
    while any(a is not None for a in arrivals):
        if any(a is None for a in arrivals):
            raise ValueError("a rank ended before a barrier the others wait at")
        release = max(arrivals)
        arrivals = [_step(g, release) for g in walkers]


def _step(g, value):
    try:
        return g.send(value)
    except StopIteration:
        return None


def _walk(r, w, comp, chan, sent, got, t_end, t_ps, t_pr, precv, detached, events,
          finish):
    """Generator: the calls of rank ``r``; yields at each barrier (see _run_barriers)."""
    lo, hi = int(w.rank_ptr[r]), int(w.rank_ptr[r + 1])
    op, peer, tg, dur, req = w.op, w.peer, w.tag, w.duration_s, w.req
    seq = [0]

    gap = []                                # compute records since the last call (seconds)

    def call(spec, t0, t1, posts=(), done=(), native=False):
        events.append((r, t0, seq[0], spec[0], spec[1], posts, done, native, tuple(gap)))
        events.append((r, t1, seq[0] + 1, spec[0], 0, (), (), False, ()))
        seq[0] += 2
        gap.clear()

    call(INIT, 0.0, 0.0)
    t = 0.0
    k = 0                                   # next compute interval
    reqs = {}                               # request id -> (message row, is_recv)
    for i in range(lo, hi):
        o = int(op[i])
        posts, done = (), ()
        if o == OP_COMPUTE:
            if dur[i] > 0:
                gap.append(float(dur[i]))
                if k < len(comp):
                    t = max(t, comp[k][1])
                    k += 1
                else:
                    t += float(dur[i])
            continue
        if o in (OP_SEND, OP_ISEND):
            key = (r, int(peer[i]), int(tg[i]))
            mi = chan[key][sent[key]]
            sent[key] += 1
            end = t_ps[mi] if (o == OP_ISEND or detached) else max(t_ps[mi], t_end[mi])
            posts = (mi,)
            if o == OP_ISEND:
                reqs[int(req[i])] = (mi, False)
        elif o in (OP_RECV, OP_IRECV):
            key = (int(peer[i]), r, int(tg[i]))
            mi = chan[key][got[key]]
            got[key] += 1
            end = t_pr[mi] if o == OP_IRECV else max(t_pr[mi], t_end[mi])
            posts = (mi,)
            if o == OP_IRECV:
                reqs[int(req[i])] = (mi, True)
            else:
                precv[mi] = end
        elif o in (OP_WAIT, OP_WAITALL):
            waited = [reqs.pop(int(req[i]))] if o == OP_WAIT else list(reqs.values())
            if o == OP_WAITALL:
                reqs.clear()
            end = t
            for mi, is_recv in waited:
                if is_recv or not detached:
                    end = max(end, t_end[mi])
                if is_recv:
                    precv[mi] = max(t, t_end[mi])
            done = tuple(mi for mi, _ in waited)
        elif o == OP_BARRIER:
            end = yield t
        else:
            continue
        call(CALLS[o], t, end, posts, done, o == OP_BARRIER)
        t = max(t, end)
    call(FINALIZE, max(t, finish), max(t, finish))
