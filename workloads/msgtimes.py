"""Measured times of each matched point-to-point message of a timestamped trace.

The readers of timestamped formats (OTF2, Paraver, DUMPI, liballprof) go through
:class:`workloads.assembler.TraceAssembler`, which knows for every send and receive the
MPI call that posted it and the call that completed it (the blocking call itself, or the
``MPI_Wait*``/``MPI_Test*`` that completed the request). Once sends and receives are
matched (FIFO per channel, as MPI does), :class:`MessageTimes` keeps, per message, the
start of the send call, the start and end of the call that completed the receive, and the
size. ``ccmod fit TRACE`` uses them to fit the quiet-network cost from the trace itself.

Which messages measure the quiet transfer time
----------------------------------------------
A message cannot be complete at the receiver before its send call started plus the
quiet transfer time ``T(n)``, so the measured time ``D = recv_end - send_start >= T(n)``
for every message (when the ranks' clocks agree). ``D`` is close to ``T(n)`` when the
receiver was already blocked in the call that completed the message when the message
arrived: that call then returns as soon as the message is there, as in a ping-pong. The
arrival is not in the trace, so a message counts as *waiting-receiver* when the receiver
entered its completing call before the send started, or was blocked in it for at least
``waiting_fraction`` (default half) of ``D``: a receiver that came after the message had
arrived is blocked only for the copy out of the buffer while ``D`` grows with its lateness,
so such messages (which measure the receiver's lateness, not the network) are left out.
The remaining samples still include contention, rendezvous waits and, for a wait on
several requests, the other requests; a low quantile per size (the lower envelope) takes
those out (``netsys.fit_envelope``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class MessageTimes:
    """Per matched point-to-point message: ranks, size and the measured call times (s).

    Attributes
    ----------
    src, dst : int32[m]
        World ranks of the sender and the receiver.
    nbytes : int64[m]
        Message size (the send's).
    send_start_s : float64[m]
        Start of the MPI call that posted the send (MPI_Send, MPI_Isend, MPI_Sendrecv).
    recv_post_s : float64[m]
        Start of the MPI call that posted the receive.
    recv_wait_start_s, recv_end_s : float64[m]
        Start and end of the call that completed the receive (NaN when the trace holds no
        completion, e.g. a request never waited for).
    """

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    send_start_s: np.ndarray
    recv_post_s: np.ndarray
    recv_wait_start_s: np.ndarray
    recv_end_s: np.ndarray

    def __len__(self) -> int:
        return int(self.nbytes.size)

    @classmethod
    def from_rows(cls, rows) -> "MessageTimes":
        """Build from ``(src, dst, nbytes, send_start, recv_post, wait_start, recv_end)``."""
        a = np.asarray(rows, dtype=float).reshape(-1, 7)
        return cls(src=a[:, 0].astype(np.int32), dst=a[:, 1].astype(np.int32),
                   nbytes=a[:, 2].astype(np.int64), send_start_s=a[:, 3],
                   recv_post_s=a[:, 4], recv_wait_start_s=a[:, 5], recv_end_s=a[:, 6])

    @classmethod
    def concat(cls, parts) -> "MessageTimes":
        parts = list(parts)
        return cls(*(np.concatenate([getattr(p, k) for p in parts])
                     for k in ("src", "dst", "nbytes", "send_start_s", "recv_post_s",
                               "recv_wait_start_s", "recv_end_s")))

    def later_start_samples(self, *, self_messages: bool = False, index: bool = False):
        """Every completed message, timed from the later of the send call's start and the
        start of the receiver's completing call to the end of that call.

        For a receiver that came after the send this is the duration of its completing
        call: the transfer time where the MPI library moves data only inside MPI calls
        (no asynchronous progress, e.g. Blue Gene/P), but only the copy out of the buffer
        where the message had already arrived; so it approximates ``T(n)`` from below.
        Returns ``(nbytes, time_s, counts)`` like :meth:`quiet_samples`.
        """
        is_self = self.src == self.dst
        keep = np.ones(len(self), bool) if self_messages else ~is_self
        done = keep & np.isfinite(self.recv_end_s) & np.isfinite(self.recv_wait_start_s)
        dt = self.recv_end_s - np.maximum(self.send_start_s, self.recv_wait_start_s)
        with np.errstate(invalid="ignore"):
            pos = done & (dt > 0)
        counts = {"messages": len(self),
                  "self_messages": 0 if self_messages else int(np.sum(is_self)),
                  "no_completion": int(np.sum(keep & ~done)),
                  "nonpositive": int(np.sum(done & ~pos)), "used": int(np.sum(pos))}
        out = self.nbytes[pos].copy(), dt[pos].copy(), counts
        return (*out, np.flatnonzero(pos)) if index else out

    def quiet_samples(self, *, waiting_fraction: float = 0.5, self_messages: bool = False,
                      index: bool = False):
        """Waiting-receiver samples of the quiet transfer time (see the module docstring).

        Parameters
        ----------
        waiting_fraction : float
            A receiver that entered its completing call after the send started still
            counts as waiting when it was blocked there for at least this fraction of the
            measured time (1 = only receivers already waiting when the send started).
        self_messages : bool
            Keep messages a rank sends to itself (a memory copy, not the network).

        Returns
        -------
        nbytes : int64[k]
        transfer_s : float64[k]
            ``recv_end - send_start`` of the waiting-receiver messages.
        counts : dict
            How many messages were considered and why the others were left out:
            ``messages``, ``self_messages``, ``no_completion`` (the receive's completion
            is not in the trace), ``receiver_late`` (its receiver entered the completing
            call after the send started and was blocked for less than ``waiting_fraction``
            of the measured time), ``nonpositive`` (time <= 0: clocks of the two ranks
            disagree), ``used``.
        indices : int64[k]
            Only with ``index=True``: which messages the samples are.
        """
        m = len(self)
        end, wstart, sstart = self.recv_end_s, self.recv_wait_start_s, self.send_start_s
        is_self = self.src == self.dst
        keep = np.ones(m, bool) if self_messages else ~is_self
        done = keep & np.isfinite(end) & np.isfinite(wstart)
        dt = end - sstart
        with np.errstate(invalid="ignore"):
            waiting = done & ((wstart <= sstart) | (end - wstart >= waiting_fraction * dt))
        pos = waiting & (dt > 0)
        counts = {"messages": m,
                  "self_messages": 0 if self_messages else int(np.sum(is_self)),
                  "no_completion": int(np.sum(keep & ~done)),
                  "receiver_late": int(np.sum(done & ~waiting)),
                  "nonpositive": int(np.sum(waiting & ~pos)),
                  "used": int(np.sum(pos))}
        out = self.nbytes[pos].copy(), dt[pos].copy(), counts
        return (*out, np.flatnonzero(pos)) if index else out


__all__ = ["MessageTimes"]
