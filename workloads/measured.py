"""What a timestamped trace measured: the traced window and the time spent in MPI.

Readers of timestamped formats (OTF2, Paraver, DUMPI, liballprof, pipit CSV) feed a
:class:`TracedTime` with every top-level MPI call of every rank (and, when known, the
whole trace's first and last timestamps); :meth:`TracedTime.summary` goes into
``workload.meta["measured"]`` so a run can show measured next to predicted.

The replay covers the window from the first MPI call's start to the last MPI call's end
(compute is only the measured time *between* MPI calls): what lies before the first and
after the last MPI call of the trace is left out of every prediction.

``MPI_Init`` (``MPI_Init_thread``) and ``MPI_Finalize`` are not replayed either: a rank's
replay starts at the end of its ``MPI_Init`` and stops at the start of its
``MPI_Finalize``. Their time is kept apart (``setup_s``) and out of ``mpi_s``, and
``replayed_window_s`` spans the latest ``MPI_Init`` end (every rank is running) to the
latest ``MPI_Finalize`` start: what a prediction's makespan is comparable with.
``init_skew_s`` is how far apart the ranks left ``MPI_Init``: a rank that left early waits
for the late ones in its first communication, which the replay (all ranks start
together) does not predict. (In sst-macro's OTF2 test trace ``MPI_Init`` is 1.1 s of the
1.25 s window and the ranks left it 59 ms apart.)
"""
from __future__ import annotations

_SETUP = {"init": "init", "init_thread": "init", "finalize": "finalize"}


def setup_kind(name) -> str | None:
    """``"init"``/``"finalize"`` for MPI_Init[_thread]/MPI_Finalize (any case, with or
    without the ``MPI_`` prefix), else None."""
    if not name:
        return None
    n = str(name).lower()
    return _SETUP.get(n[4:] if n.startswith("mpi_") else n)


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
        self.setup_s = [0.0] * self.n     # MPI_Init / MPI_Finalize (not replayed)
        self.init_end = [None] * self.n
        self.fin_start = [None] * self.n
        self.t0_s = None
        self.t1_s = None

    def enter(self, rank: int, t_s: float, name: str | None = None) -> None:
        self._open[rank] = (t_s, name)
        if self.first[rank] is None:
            self.first[rank] = t_s

    def leave(self, rank: int, t_s: float) -> None:
        opened = self._open[rank]
        if opened is not None:
            self.call(rank, opened[0], t_s, opened[1])
            self._open[rank] = None

    def call(self, rank: int, t0_s: float, t1_s: float, name: str | None = None) -> None:
        """One MPI call of ``rank`` from ``t0_s`` to ``t1_s`` (overlaps counted once);
        ``name`` tells MPI_Init/MPI_Finalize apart (they are not replayed)."""
        if self.first[rank] is None or t0_s < self.first[rank]:
            self.first[rank] = t0_s
        cov = self._covered[rank]
        lo = t0_s if cov is None else max(t0_s, cov)
        kind = setup_kind(name)
        if kind == "init":
            self.init_end[rank] = max(t1_s, self.init_end[rank] or t1_s)
        elif kind == "finalize" and self.fin_start[rank] is None:
            self.fin_start[rank] = t0_s
        if t1_s > lo:
            if kind is None:
                self.mpi_s[rank] += t1_s - lo
            else:
                self.setup_s[rank] += t1_s - lo
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
        if any(self.init_end[r] is not None or self.fin_start[r] is not None for r in ranks):
            starts = [self.init_end[r] if self.init_end[r] is not None else self.first[r]
                      for r in ranks]
            b = max(self.fin_start[r] if self.fin_start[r] is not None else self.last[r]
                    for r in ranks)
            out["setup_s"] = [float(x) for x in self.setup_s]
            # from the moment every rank has left MPI_Init: the replay starts all together
            out["replayed_window_s"] = float(max(b - max(starts), 0.0))
            out["init_skew_s"] = float(max(starts) - min(starts))
        if self.t0_s is not None and self.t1_s is not None and self.t1_s >= self.t0_s:
            out["trace_span_s"] = float(self.t1_s - self.t0_s)
            out["before_first_call_s"] = float(max(start - self.t0_s, 0.0))
            out["after_last_call_s"] = float(max(self.t1_s - end, 0.0))
        return out
