"""The CCMOD evaluation engine: ranks walk their records; messages share the network.

Small on purpose (SimPy-sized): the network sharing lives in :mod:`ccmod.kernel`, the
static matching and routing in :mod:`ccmod.compile`, result assembly in
:mod:`ccmod.collect`. The loop jumps from event horizon to event horizon: the next compute
end, latency end, intra-node delivery (a timer heap) or message end (the kernel).

Send modes
----------
rendezvous  transfer starts when both sides are posted; a blocking send/recv (or the wait
            on an isend/irecv) is released when the transfer ends (CCMOD's SCOM).
eager       transfer starts when the send is posted; the sender is released on delivery.
detached    transfer starts when the send is posted; the sender continues at once.

With ``eager_limit_bytes`` > 0, rendezvous applies only to messages larger than the limit
and smaller ones go eager, as MPI libraries do (e.g. 64 KiB).
"""
from __future__ import annotations

import heapq
from array import array
from collections import deque

import numpy as np

from ccmod.errors import CcmodInputError, DeadlockError
from ccmod.handlers import (EV_COMPUTE as _EV_COMPUTE, EV_HANDLER_END, EV_LAT_END as _EV_LAT_END,
                            EV_MSG_END as _EV_MSG_END, EV_RESUME, HandlerMixin)
from ccmod.kernel import CcmodSharing, MaxMinSharing
from ccmod.codes import STATE_BARRIER, STATE_COMPUTE, STATE_RECV, STATE_SEND, STATE_WAIT
from ccmod.workloads.base import (OP_AMREQUEST, OP_BARRIER, OP_COMPUTE, OP_IRECV, OP_ISEND, OP_RECV,
                            OP_SEND, OP_WAIT, OP_WAITALL)

SEND_MODES = ("rendezvous", "eager", "detached")
SHARINGS = ("ccmod", "maxmin")
INF = float("inf")


class Engine(HandlerMixin):
    """Evaluate one workload on one network.

    Parameters
    ----------
    workload : workloads.base.Workload
    msgs : ccmod.compile.Messages
    nresources : int
    capacity_Bps, background : ndarray
        Per-resource capacity and constant background fraction.
    sharing : {"ccmod", "maxmin"}
    send_mode : {"rendezvous", "eager", "detached"}
    eager_limit_bytes : int
        Under rendezvous, messages of at most this size are sent eagerly (0 = none).
    record : bool
        Keep rank-state intervals and contention changes (for outputs).
    signals : bool
        Produce the full signal trace (debug sink).
    progress : callable, optional
        ``progress(records_done)`` called now and then.
    bg_t_s, bg_resource, bg_load : ndarray, optional
        Time-varying background load steps (sorted by time): from ``bg_t_s[i]`` on,
        resource ``bg_resource[i]`` carries ``bg_load[i]``. Each step is an event horizon.
    """

    def __init__(self, workload, msgs, nresources, capacity_Bps, background, *,
                 sharing="ccmod", send_mode="rendezvous", eager_limit_bytes=0, record=True,
                 signals=False, progress=None, bg_t_s=None, bg_resource=None, bg_load=None):
        self.w = workload
        # time-varying background load: steps sorted by time, each one an event horizon
        self._bg_t = [] if bg_t_s is None else np.asarray(bg_t_s, float).tolist()
        self._bg_r = [] if bg_resource is None else np.asarray(bg_resource, np.int64).tolist()
        self._bg_l = [] if bg_load is None else np.asarray(bg_load, float).tolist()
        self.m = msgs
        self.sharing = sharing
        self.send_mode = send_mode
        self.record = record
        self.progress = progress
        if sharing == "ccmod":
            self.kernel = CcmodSharing(nresources, background, record_load=record)
        else:
            self.kernel = MaxMinSharing(nresources, capacity_Bps, background, record_load=record)
        M = len(msgs.nbytes)
        self.t_post_send = [INF] * M
        self.t_post_recv = [INF] * M
        self.t_start = [INF] * M
        self.t_end = [INF] * M
        self.send_waiter = [-1] * M
        self.recv_waiter = [-1] * M
        self.bott = np.full(M, -1, np.int64)
        n = workload.nranks
        self.pc = workload.rank_ptr[:-1].tolist()
        self.end = workload.rank_ptr[1:].tolist()
        self.pending = [0] * n
        self.block_state = [-1] * n
        self.t_block = [0.0] * n
        self.finish_s = [INF] * n
        self.comp_end = [INF] * n
        self.comp_start = [0.0] * n
        self.comp_ver = [0] * n
        self._init_handlers(n)
        self.state_s = np.zeros((n, 5))
        self.outstanding: list[dict] = [dict() for _ in range(n)]
        self.barrier_waiting: list[int] = []
        self.heap: list = []
        self.seq = 0
        self.ready: deque = deque()
        self.records_done = 0
        self.events = 0
        self.st = (array("i"), array("b"), array("d"), array("d"))
        self.signals = [] if signals else None
        # hot-loop views as Python lists (faster scalar access than numpy)
        self._op = workload.op.tolist()
        self._dur = workload.duration_s.tolist()
        self._req = workload.req.tolist()
        self._rec_msg = msgs.rec_msg.tolist()
        self._quiet = msgs.quiet_s.tolist()
        self._intra = msgs.intra.tolist()
        self._rptr = msgs.route_ptr.tolist()
        self._kind = msgs.kind.tolist()
        # messages whose transfer starts as soon as the send is posted
        if send_mode == "rendezvous":
            self._eager = ((msgs.nbytes <= eager_limit_bytes) & (eager_limit_bytes > 0)).tolist()
        else:
            self._eager = [True] * len(msgs.nbytes)

    # -- bookkeeping --------------------------------------------------------------------
    def _sig(self, t, name, *args):
        if self.signals is not None:
            self.signals.append((t, name, " ".join(str(a) for a in args)))

    def _push(self, t, kind, x):
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, x))

    def _interval(self, r, state, t0, t1):
        # handler time run inside the interval is counted in handler_s, not in the state
        self.state_s[r, state] += t1 - t0 - self.h_inside[r]
        self.h_inside[r] = 0.0
        if self.record and t1 > t0:
            a, b, c, d = self.st
            a.append(r); b.append(state); c.append(t0); d.append(t1)

    def _block(self, r, state, t):
        self.block_state[r] = state
        self.t_block[r] = t
        if self.signals is not None:
            self._sig(t, "UPPR_PROC", r, "block", state)

    # -- messages -----------------------------------------------------------------------
    def _send_side_done(self, m):
        return self.send_mode == "detached" or self.t_end[m] < INF

    def _post_send(self, m, t):
        self.t_post_send[m] = t
        if self.signals is not None:  # building the arguments costs: only for the debug sink
            self._sig(t, "NEWSCOM", m, int(self.m.src[m]), int(self.m.dst[m]),
                      int(self.m.nbytes[m]))
        if self._eager[m] or self.t_post_recv[m] < INF:
            self._start(m, t)

    def _post_recv(self, m, t):
        self.t_post_recv[m] = t
        if not self._eager[m] and self.t_post_send[m] < INF:
            self._start(m, t)

    def _start(self, m, t):
        self.t_start[m] = t
        q = self._quiet[m]
        if self.signals is not None:
            self._sig(t, "COMMCOST", m, q)
        if self._intra[m] or q <= 0.0 or self._rptr[m] == self._rptr[m + 1]:
            self._push(t + q, _EV_MSG_END, m)
        elif self.sharing == "ccmod":
            res = self.m.route_res[self._rptr[m]:self._rptr[m + 1]]
            if self.signals is not None:
                self._sig(t, "MSGSTART", m, "route", *(int(x) for x in res))
            self.kernel.start(m, t, q, res)
        else:
            self._push(t + float(self.m.latency_s[m]), _EV_LAT_END, m)

    def _flow_start(self, m, t):
        res = self.m.route_res[self._rptr[m]:self._rptr[m + 1]]
        if self.signals is not None:
            self._sig(t, "MSGSTART", m, "route", *(int(x) for x in res))
        self.kernel.start(m, t, float(self.m.nbytes[m]), res, float(self.m.flow_cap_Bps[m]))

    def _done(self, m, t):
        self.t_end[m] = t
        if self.signals is not None:
            self._sig(t, "MSGEND", m)
        if self._kind[m]:
            self._am_arrived(m, t)
            return
        for r in (self.send_waiter[m], self.recv_waiter[m] if self.t_post_recv[m] < INF else -1):
            if r >= 0:
                self.pending[r] -= 1
                if self.pending[r] == 0:
                    self.ready.append(r)

    # -- ranks --------------------------------------------------------------------------
    def _wait_on(self, r, m, side):
        """Make rank r wait for one side of message m; return True if it must block."""
        if side == 0:
            if self._send_side_done(m):
                return False
            self.send_waiter[m] = r
        else:
            if self.t_end[m] < INF:
                return False
            self.recv_waiter[m] = r
        self.pending[r] += 1
        return True

    def _advance(self, r, t):
        op, pc, end = self._op, self.pc[r], self.end[r]
        start_pc = pc
        while pc < end:
            o = op[pc]
            if o == OP_COMPUTE:
                d = self._dur[pc]
                pc += 1
                if d > 0.0:
                    self.comp_start[r] = t
                    self.comp_end[r] = t + d
                    self._push(t + d, _EV_COMPUTE, (r, self.comp_ver[r]))
                    self.block_state[r] = -2
                    break
            elif o == OP_SEND or o == OP_ISEND:
                m = self._rec_msg[pc]
                self._post_send(m, t)
                if o == OP_ISEND:
                    self.outstanding[r][self._req[pc]] = (m, 0, pc)
                    pc += 1
                else:
                    pc += 1
                    if self._wait_on(r, m, 0):
                        self._block(r, STATE_SEND, t)
                        break
            elif o == OP_RECV or o == OP_IRECV:
                m = self._rec_msg[pc]
                self._post_recv(m, t)
                if o == OP_IRECV:
                    self.outstanding[r][self._req[pc]] = (m, 1, pc)
                    pc += 1
                else:
                    pc += 1
                    if self._wait_on(r, m, 1):
                        self._block(r, STATE_RECV, t)
                        break
            elif o == OP_WAIT:
                entry = self.outstanding[r].pop(self._req[pc], None)
                if entry is None:
                    f, ln = self.w.where(pc)
                    raise CcmodInputError(f"rank {r} waits on request {self._req[pc]} that is "
                                          f"not outstanding", source=f, line=ln,
                                          hint="each wait needs an earlier isend/irecv")
                pc += 1
                if self._wait_on(r, entry[0], entry[1]):
                    self._block(r, STATE_WAIT, t)
                    break
            elif o == OP_WAITALL:
                pc += 1
                outs = self.outstanding[r]
                for m, side, _ in outs.values():
                    self._wait_on(r, m, side)
                outs.clear()
                if self.pending[r] > 0:
                    self._block(r, STATE_WAIT, t)
                    break
            elif o == OP_AMREQUEST:
                pc += 1
                self._am_request(r, self._rec_msg[pc - 1], t)
                break
            elif o == OP_BARRIER:
                pc += 1
                self.barrier_waiting.append(r)
                if len(self.barrier_waiting) == self.w.nranks:
                    for r2 in self.barrier_waiting:
                        if r2 != r:
                            self.ready.append(r2)
                    self.barrier_waiting = []
                else:
                    self.pending[r] = 1
                    self._block(r, STATE_BARRIER, t)
                    break
            else:
                f, ln = self.w.where(pc)
                raise CcmodInputError(f"unknown op code {o}", source=f, line=ln)
        self.records_done += pc - start_pc
        self.pc[r] = pc
        if pc >= end and self.block_state[r] != -2 and self.pending[r] == 0:
            self.finish_s[r] = t
            self.block_state[r] = -3
            self._sig(t, "UPPR_END", r)

    def _resume(self, r, t):
        if self._busy_until(r, t):
            return
        s = self.block_state[r]
        if s >= 0:
            self._interval(r, s, self.t_block[r], t)
        self.pending[r] = 0
        self.block_state[r] = -1
        self._advance(r, t)

    # -- main loop ----------------------------------------------------------------------
    def run(self) -> float:
        """Evaluate; return the time the last rank finished."""
        self._sig(0.0, "GO_INIT", self.w.nranks, len(self.m.nbytes))
        for r in range(self.w.nranks):
            self._sig(0.0, "NEWPROC", r)
            self._advance(r, 0.0)
        self._drain(0.0)
        t = 0.0
        k = self.kernel
        heap = self.heap
        bt, bi, nb = self._bg_t, 0, len(self._bg_t)
        while True:
            tk = k.next_time()
            th = heap[0][0] if heap else INF
            if tk == INF and th == INF:
                break
            if bi < nb and bt[bi] <= tk and bt[bi] <= th:
                # background steps change bandwidth availability: rates change from here on
                t = bt[bi]
                while bi < nb and bt[bi] == t:
                    k.set_load(self._bg_r[bi], t, self._bg_l[bi])
                    bi += 1
                self.events += 1
                continue
            t_new = tk if tk <= th else th
            if self.signals is not None:
                self._sig(t_new, "EVENTHORIZON", t_new - t)
            t = t_new
            self.events += 1
            if tk <= th:
                for m in k.pop_due(t):
                    self.bott[m] = k.bott_out.pop(m, -1)
                    self._done(m, t)
            else:
                _, _, kind, x = heapq.heappop(heap)
                if kind == _EV_COMPUTE:
                    r, ver = x
                    if ver == self.comp_ver[r]:   # else: extended by a handler
                        self._interval(r, STATE_COMPUTE, self.comp_start[r], t)
                        self.block_state[r] = -1
                        if not self._busy_until(r, t):   # a handler that arrived just now
                            self._advance(r, t)
                elif kind == _EV_MSG_END:
                    self._done(x, t)
                elif kind == _EV_LAT_END:
                    self._flow_start(x, t)
                elif kind == EV_HANDLER_END:
                    self._handler_end(x, t)
                elif kind == EV_RESUME:
                    self._resume(x, t)
            self._drain(t)
            if self.progress is not None and self.events % 8192 == 0:
                self.progress(self.records_done)
        unfinished = [r for r in range(self.w.nranks) if self.finish_s[r] == INF]
        if unfinished:
            raise DeadlockError(t, [self._blocked_desc(r) for r in unfinished])
        self._sig(t, "GO_END", max(self.finish_s, default=0.0))
        return max(self.finish_s, default=0.0)

    def _drain(self, t):
        ready = self.ready
        while ready:
            self._resume(ready.popleft(), t)

    def _blocked_desc(self, r) -> str:
        """Say what rank r waits for, with the record's file:line."""
        s = self.block_state[r]
        pc = self.pc[r] - 1
        f, ln = self.w.where(max(pc, 0))
        where = f" at {f}:{ln}" if f and ln else ""
        if s == STATE_BARRIER:
            return f"rank {r} in barrier{where}"
        waits = []
        M = self.m
        for m in range(len(M.nbytes)):
            if self.send_waiter[m] == r and not self._send_side_done(m):
                waits.append(f"send to {int(M.dst[m])} (tag {int(M.tag[m])}, {int(M.nbytes[m])} B)")
            if self.recv_waiter[m] == r and self.t_end[m] == INF:
                waits.append(f"recv from {int(M.src[m])} (tag {int(M.tag[m])})")
            if len(waits) >= 3:
                break
        what = {STATE_SEND: "send", STATE_RECV: "recv", STATE_WAIT: "wait"}.get(s, "state")
        return f"rank {r} blocked in {what}{where} waiting for " + (", ".join(waits) or "?")
