"""LoPC's processor model for the engine: active-message handlers interrupt compute.

An ``OP_AMREQUEST`` record sends a request to a peer; when it arrives, the peer's processor
runs a handler of ``handler_s`` seconds at once if it is free (queued FIFO behind handlers
already running), *interrupting* any compute in progress (the compute ends ``handler_s``
later), then sends the reply; the reply's handler runs on the requester, which resumes
after it. This is the protocol-processor-less machine LoPC (../shared/seeds/lopc-frank-1997.txt)
models; point-to-point records never use it, so ordinary traces are unaffected.
"""
from __future__ import annotations

from ccmod.codes import STATE_WAIT

INF = float("inf")
#: timer-heap event kinds of the engine (kept here so handlers can schedule compute ends)
EV_COMPUTE, EV_MSG_END, EV_LAT_END, EV_HANDLER_END, EV_RESUME = range(5)


class HandlerMixin:
    """Adds active messages to :class:`ccmod.engine.Engine` (state kept per rank)."""

    def _init_handlers(self, nranks: int) -> None:
        self.hfree = [0.0] * nranks          # processor busy with handlers until
        self.handler_s = [0.0] * nranks      # total handler time run on each rank
        self.am_waiter: dict[int, int] = {}  # request message id -> waiting rank
        self.h_inside = [0.0] * nranks       # handler time inside the current state interval

    def _am_request(self, r: int, m: int, t: float) -> None:
        """Rank r issues the request m (blocking until its reply's handler ran)."""
        self.t_post_send[m] = self.t_post_recv[m] = t
        self._start(m, t)
        self.am_waiter[m] = r
        self.pending[r] += 1
        self._block(r, STATE_WAIT, t)

    def _am_arrived(self, m: int, t: float) -> None:
        """Message m (a request or a reply) reached its destination: run its handler."""
        d = int(self.m.dst[m])
        h = float(self.m.handler_s[m])
        start = max(t, self.hfree[d])
        end = start + h
        self.hfree[d] = end
        self.handler_s[d] += h
        if self.block_state[d] == -2 and self.comp_end[d] > t:
            # preemptive handler: the compute in progress finishes h later
            self.comp_end[d] += h
            self.comp_ver[d] += 1
            self._push(self.comp_end[d], EV_COMPUTE, (d, self.comp_ver[d]))
            self.h_inside[d] += h
        elif self.block_state[d] >= 0:
            # a blocked rank resumes only after its handlers (see _busy_until)
            self.h_inside[d] += h
        self._push(end, EV_HANDLER_END, m)

    def _handler_end(self, m: int, t: float) -> None:
        if self.m.kind[m] == 1:       # request handled: the server replies now
            reply = m + 1
            self.t_post_send[reply] = self.t_post_recv[reply] = t
            self._start(reply, t)
        else:                         # reply handled: the requester goes on
            r = self.am_waiter.pop(m - 1)
            self.pending[r] -= 1
            if self.pending[r] == 0:
                self.ready.append(r)

    def _busy_until(self, r: int, t: float) -> bool:
        """Delay a rank that would resume while its processor runs handlers."""
        if self.hfree[r] > t:
            self._push(self.hfree[r], EV_RESUME, r)
            return True
        return False
