"""What a timestamped trace measured: the traced window and the time spent in MPI.

Readers of timestamped formats (OTF2, Paraver, DUMPI, liballprof, pipit CSV) feed a
:class:`TracedTime` with every top-level MPI call of every rank (and, when known, the
whole trace's first and last timestamps); :meth:`TracedTime.summary` goes into
``workload.meta["measured"]`` so a run can show measured next to predicted.

The replay covers the window from the first MPI call's start to the last MPI call's end
(compute is only the measured time *between* MPI calls): what lies before the first and
after the last MPI call of the trace is left out of every prediction.
"""
from __future__ import annotations


class TracedTime:
    """Per-rank first call start, last call end and total time inside MPI calls (s)."""

    def __init__(self, nranks: int):
        self.n = int(nranks)
        self.first = [None] * self.n
        self.last = [None] * self.n
        self.mpi_s = [0.0] * self.n
        self.calls = [0] * self.n
        self._open = [None] * self.n
        self._covered = [None] * self.n   # end of the last counted call (nested calls once)
        self.t0_s = None
        self.t1_s = None

    def enter(self, rank: int, t_s: float) -> None:
        self._open[rank] = t_s
        if self.first[rank] is None:
            self.first[rank] = t_s

    def leave(self, rank: int, t_s: float) -> None:
        t_in = self._open[rank]
        if t_in is not None:
            self.call(rank, t_in, t_s)
            self._open[rank] = None

    def call(self, rank: int, t0_s: float, t1_s: float) -> None:
        """One MPI call of ``rank`` from ``t0_s`` to ``t1_s`` (overlaps counted once)."""
        if self.first[rank] is None or t0_s < self.first[rank]:
            self.first[rank] = t0_s
        cov = self._covered[rank]
        lo = t0_s if cov is None else max(t0_s, cov)
        if t1_s > lo:
            self.mpi_s[rank] += t1_s - lo
        if cov is None or t1_s > cov:
            self._covered[rank] = t1_s
        if self.last[rank] is None or t1_s > self.last[rank]:
            self.last[rank] = t1_s
        self.calls[rank] += 1

    def bounds(self, t0_s: float, t1_s: float) -> None:
        """The whole trace's first and last timestamps (any record), when known."""
        self.t0_s, self.t1_s = float(t0_s), float(t1_s)

    def summary(self) -> dict | None:
        """JSON-ready dict for ``meta["measured"]`` (None when no MPI call was seen)."""
        ranks = [r for r in range(self.n) if self.first[r] is not None]
        if not ranks:
            return None
        start = min(self.first[r] for r in ranks)
        end = max(self.last[r] for r in ranks)
        out = {
            "window_s": float(end - start),
            "window_start_s": float(start),
            "rank_finish_s": [float(self.last[r] - start) if self.last[r] is not None
                              else 0.0 for r in range(self.n)],
            "mpi_s": [float(x) for x in self.mpi_s],
            "mpi_calls": [int(x) for x in self.calls],
        }
        if self.t0_s is not None and self.t1_s is not None and self.t1_s >= self.t0_s:
            out["trace_span_s"] = float(self.t1_s - self.t0_s)
            out["before_first_call_s"] = float(max(start - self.t0_s, 0.0))
            out["after_last_call_s"] = float(max(self.t1_s - end, 0.0))
        return out
