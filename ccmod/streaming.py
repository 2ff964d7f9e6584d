"""``ccmod run --stream``: a Parquet trace run in per-rank windows, outputs streamed.

The trace is read through :class:`ccmod.workloads.parquet_stream.ParquetRecordSource`
(the streaming layout ``ccmod convert`` writes; anything else is refused in one line
saying what to do), the kernel runs on windows of ``window`` records per rank
(:mod:`ccmod.kernel.window`: bit for bit the whole program's results) and, with ``--out``,
the rank-state recordings are drained into the run directory at every kernel pause
(:class:`ccmod.outputs.parquet_stream.StreamedRunWriter`), the contention log is dropped
(no ``link_load`` table under streaming) and the messages table is appended in batches.
The summary (``--json``) counts messages and bytes from the batches written.

What is still sized by the trace (issue 10): the kernel's per-message arrays and the
message costs and routes (:func:`ccmod.compile.compile_messages`), and the records
themselves, which the windowed feed and its matcher still index as whole columns.
"""
from __future__ import annotations

import numpy as np

from ccmod.errors import CcmodInputError

#: records per rank in the kernel at once when ``--window`` is not given
DEFAULT_WINDOW = 4096
#: message rows per batch appended to messages.parquet
MESSAGE_BATCH = 1 << 16


def check_stream_options(*, report=None, debug=False, sinks=(), background="0") -> None:
    """Refuse, in one line each, what a streamed run cannot do."""
    if report is not None:
        raise CcmodInputError("--report needs the whole run in memory", source="--stream",
                              hint="drop --stream, or write the tables with --out DIR and "
                                   "run `ccmod report` on a smaller trace")
    if debug:
        raise CcmodInputError("--debug (the full signal trace) is not streamed",
                              source="--stream", hint="drop --stream or --debug")
    other = [s for s in sinks if s.split(":")[0] != "parquet"]
    if other:
        raise CcmodInputError(f"sink '{other[0]}' needs the whole run in memory",
                              source="--stream", hint="--stream writes the parquet tables "
                                                     "(--out DIR) only")
    from ccmod.netsys.background import make_background
    if not make_background(background).constant:
        raise CcmodInputError("a time-varying --background reruns the engine: not streamed",
                              source="--stream", hint="give a constant background fraction")


class _Drain:
    """The engine's ``on_pause``: states to the writer, contention changes dropped."""

    def __init__(self, writer):
        self.writer = writer

    def __call__(self, eng) -> None:
        from ccmod.kernel.record import state_arrays
        L = eng.L
        if self.writer is not None and len(L.states):
            self.writer.states(*state_arrays(L.states))
        L.states.clear()
        L.load.clear()
        # what was recorded went to the writer: the collector builds no interval tables
        # (nor the link utilisation over every message that link_load would need)
        eng.record = False


def run_streamed(trace, network="star", options=None, *, out_dir=None,
                 window: int | None = None, progress=None, bounds: bool = False,
                 **option_values):
    """Run a ccmod Parquet trace in streaming mode (see the module doc).

    Parameters
    ----------
    trace : path
        A ccmod Parquet trace in the streaming layout.
    network, options, progress, bounds, **option_values
        As :func:`ccmod.api.run`.
    out_dir : path, optional
        Run directory written as the run goes (the parquet sink's tables, no link_load).
    window : int, optional
        Records per rank in the kernel at once (default :data:`DEFAULT_WINDOW`).

    Returns
    -------
    ccmod.result.RunResult
        ``rank_states`` and ``link_load`` are None (streamed to ``out_dir``, or dropped);
        ``options["stream"]`` says how the run was fed.
    """
    from ccmod.api import run
    from ccmod.options import RunOptions
    from ccmod.workloads.parquet_stream import open_stream_source
    opts = RunOptions.make(options, **option_values)
    W = DEFAULT_WINDOW if window is None else int(window)
    if W < 1:
        raise CcmodInputError(f"--window must be at least 1 record, not {W}", source="--window")
    check_stream_options(background=opts.background)
    src = open_stream_source(trace, opts.fmt, opts.compute_scale)
    w = source_workload(src, trace, opts)
    writer = None
    if out_dir is not None:
        from ccmod.outputs.parquet_stream import StreamedRunWriter
        writer = StreamedRunWriter(out_dir, w.nranks)
    try:
        result = run(w, network, opts, record=writer is not None, window_records=W,
                     progress=progress, bounds=bounds, on_pause=_Drain(writer))
        if writer is not None:
            _write_messages(result, writer)
            writer.finish(result)
            result.streamed = {"messages": writer.n_messages, "bytes": writer.bytes}
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    result.options["stream"] = {"window_records": W, "row_groups": int(
        src.pf.metadata.num_row_groups)}
    return result


def source_workload(src, trace, opts):
    """The Workload the windowed feed reads (today: the whole trace, read by the Parquet
    reader; the feed reading ``src`` rank by rank is the next step, see the module doc)."""
    from ccmod.api import load_workload
    return load_workload(trace, **opts.load_kwargs())


def _write_messages(result, writer) -> None:
    m = result.__dict__.get("messages")
    cols = m.columns if isinstance(getattr(m, "columns", None), dict) else \
        {c: m[c].to_numpy() for c in m.columns}
    n = result.table_len("messages")
    for a in range(0, n, MESSAGE_BATCH):
        writer.messages({k: np.asarray(v)[a:a + MESSAGE_BATCH] for k, v in cols.items()})

