"""``ccmod run --stream``: a Parquet trace run in per-rank windows, outputs streamed.

Nothing the size of the trace is held (issue 10). The trace is read through
:class:`ccmod.workloads.parquet_stream.ParquetRecordSource` (the streaming layout
``ccmod convert`` writes; anything else is refused in one line saying what to do): one
pass over ``op``/``peer``/``duration_s`` first (:meth:`~ParquetRecordSource.survey`: per
rank message counts, the node pairs that exchange messages), then the kernel runs on
windows of ``window`` records per rank (:mod:`ccmod.kernel.window`: bit for bit the whole
program's results), matched incrementally (:mod:`ccmod.kernel.matcher`); each batch of new
messages gets its routes and costs when its window is loaded
(:mod:`ccmod.stream_inputs`). With ``--out``, rank-state recordings are drained into the
run directory at every kernel pause and every message's row is appended once its slot is
retired (:class:`MessageRows`, :class:`ccmod.outputs.parquet_stream.StreamedRunWriter`);
the contention log is dropped (no ``link_load`` table under streaming).

Row order of ``messages.parquet``: the order messages finish (their slots are retired,
batch by batch), not ``msg_id`` order; each row is the in-memory run's row (a test
compares them sorted by ``msg_id``). What the summary needs is counted as rows go by.
What stays per rank or per resource: the survey's counts, the per-resource totals, the
kernel's rank state; per message in flight: slots, matcher queues.
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
        if self.writer is not None:        # (without one nothing is recorded)
            from ccmod.kernel.record import state_arrays
            from ccmod.kernel.state import new_logs
            st = state_arrays(eng.L.states)
            if len(st[0]):
                self.writer.states(*st)
            # new empty logs (the loop resumes with eng.L): emptying typed lists cost
            # ~45 ns a row, 0.12 s per 1M records recorded; new lists ~0.07 ms a pause
            eng.L = new_logs()
        # what was recorded went to the writer: the collector builds no interval tables
        # (nor the link utilisation over every message that link_load would need)
        eng.record = False


class MessageRows:
    """The message sink of a streamed run (:mod:`ccmod.kernel.slots`): retired slots'
    rows become the ``messages`` table's columns (as :func:`ccmod.collect.collect` makes
    them), appended to the writer in batches of :data:`MESSAGE_BATCH`; counts, bytes and
    the last end time are kept for the summary."""

    def __init__(self, writer, names):
        self.writer = writer
        self.names = names
        self.parts: list = []
        self.pending = 0
        self.n = 0
        self.bytes = 0
        self.t_end_max = -np.inf

    def rows(self, c: dict) -> None:
        k = len(c["msg_id"])
        if not k:
            return
        self.n += k
        self.bytes += int(np.asarray(c["nbytes"]).sum())
        self.t_end_max = max(self.t_end_max, float(np.max(c["t_end_s"])))
        if self.writer is None:
            return
        self.parts.append({n: np.array(v) for n, v in c.items()})
        self.pending += k
        if self.pending >= MESSAGE_BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.parts:
            return
        c = {n: np.concatenate([p[n] for p in self.parts]) for n in self.parts[0]}
        self.parts, self.pending = [], 0
        quiet = c["quiet_s"]
        t_start, t_end = c["t_start_s"], c["t_end_s"]
        slowdown = np.subtract(t_end, t_start)
        pos = quiet > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            np.divide(slowdown, quiet, out=slowdown, where=pos)
        slowdown[~pos] = 1.0
        bott = c["bottleneck"].astype(np.int64)
        self.writer.messages({
            "msg_id": c["msg_id"].astype(np.int64), "src": c["src"].astype(np.int32),
            "dst": c["dst"].astype(np.int32), "tag": c["tag"].astype(np.int32),
            "nbytes": c["nbytes"].astype(np.int64),
            "t_post_s": np.minimum(c["t_post_send_s"], c["t_post_recv_s"]),
            "t_post_send_s": c["t_post_send_s"], "t_post_recv_s": c["t_post_recv_s"],
            "t_start_s": t_start, "t_end_s": t_end,
            # the quiet time with the CPU overheads the kernel charged to the ranks
            "quiet_s": quiet + c["o_send_s"] + c["o_recv_s"], "slowdown": slowdown,
            "bottleneck": bott, "bottleneck_name": self.names[np.where(bott >= 0, bott, -1)],
            "hops": c["hops"].astype(np.int32)})


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
    import time

    from ccmod.api import prepare_run, run_info, run_notes
    from ccmod.collect import link_tables, ranks_table, resource_names
    from ccmod.engine import Engine
    from ccmod.options import RunOptions
    from ccmod.result import DEFAULT_PACKET_SIZE, RunResult
    from ccmod.stream_inputs import stream_inputs
    from ccmod.workloads.parquet_stream import open_stream_source
    opts = RunOptions.make(options, **option_values)
    W = DEFAULT_WINDOW if window is None else int(window)
    if W < 1:
        raise CcmodInputError(f"--window must be at least 1 record, not {W}", source="--window")
    check_stream_options(background=opts.background)
    src = open_stream_source(trace, opts.fmt, opts.compute_scale)
    t0 = time.perf_counter()
    p = prepare_run(src, network, opts)
    net, node_of_rank = p.net, p.node_of_rank
    info = run_info(trace, src, opts, p)
    cap = net.resource_capacity_Bps()
    gap = np.full(int(net.nnodes), float(getattr(net.cost, "gap_s", 0.0)))
    names = resource_names(net)
    writer = None
    if out_dir is not None:
        from ccmod.outputs.parquet_stream import StreamedRunWriter
        writer = StreamedRunWriter(out_dir, src.nranks)

    def make_engine(level, main=True):
        # the --bounds reruns read the same source again from the start: its survey is
        # kept (not a second pass per bound), its readers only cache decoded batches
        s_ = stream_inputs(src, p, opts, ratio_routes=ratio_routes[0])
        ratio_routes[0] = s_.ratio_routes        # capacity=ratio's pass: once
        return Engine(None, None, net.nresources, cap, level, sharing=opts.sharing,
                      send_mode=opts.send_mode, eager_limit_bytes=int(p.eager_limit_bytes),
                      record=main and writer is not None, signals=False,
                      progress=progress if main else None, node_of_rank=node_of_rank,
                      gap_s=gap, window_records=W, on_pause=_Drain(writer) if main else None,
                      message_sink=rows if main else _Count(), stream=s_)

    rows = MessageRows(writer, names)
    ratio_routes = [None]
    try:
        level = p.bg.level(net, "mean")
        eng = make_engine(level)
        makespan = eng.run()
        rows.flush()
        bounds_out = None
        if bounds:
            # A streamed background is constant (a time-varying one is refused): the
            # bounds' levels are 0 (best) and the constant (avg, worst: the main run's
            # level, its makespan reused), so at most one rerun, none without a background
            # (ccmod/bounds.py). That rerun is not merged into the main run's read of the
            # trace: engines in lock-step would hold two kernels' in-flight state at once,
            # and windows read for the faster until the slower consumed them (how far apart
            # they drift is not bounded by the window); reading and decoding is ~5% of a
            # pass's CPU (0.08-0.1 s per 1M records).
            from ccmod.bounds import bounds_makespans, level_key
            bounds_out = bounds_makespans(lambda lv, st: make_engine(lv, main=False), net,
                                          p.bg, {level_key(level): float(makespan)})
        wall = time.perf_counter() - t0
        ins = eng.stream.inputs
        info["notes"] = run_notes(src, p, ins.notes.notes())
        makespan = max(makespan, rows.t_end_max if rows.n else 0.0)
        resources, links, _, _, _ = link_tables(eng, net, names, eng.slots.res_messages,
                                                eng.slots.res_bytes, makespan)
        ps = getattr(net, "packet_size", None)
        result = RunResult(
            makespan_s=makespan, rank_finish_s=np.asarray(eng.finish_s, float),
            ranks=ranks_table(eng, src.nranks, node_of_rank), messages=None, links=links,
            records=src.nrecords, wall_s=wall, network=net.describe(), sharing=opts.sharing,
            send_mode=opts.send_mode, options=info, events=eng.events, resources=resources,
            measured=(src.meta or {}).get("measured"),
            meta={"nranks": int(src.nranks),
                  "packet_size_bytes": int(ps) if ps else DEFAULT_PACKET_SIZE,
                  "packet_size_source": "network" if ps else "default"})
        result.bounds = bounds_out
        result.streamed = {"messages": rows.n, "bytes": rows.bytes}
        from ccmod.api import _trace_notes
        _trace_notes(src, result, opts.compute_rate)
        if writer is not None:
            writer.finish(result)
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    result.options["stream"] = {"window_records": W, "row_groups": int(
        src.pf.metadata.num_row_groups)}
    return result


class _Count:
    """The message sink of the ``--bounds`` reruns: their rows are not written."""

    def rows(self, c: dict) -> None:
        pass
