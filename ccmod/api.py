"""The Python API: ``ccmod.run(trace, network=...)`` and friends.

Everything the CLI does is available here and returns data (:class:`RunResult`).
"""
from __future__ import annotations

import copy
import os
import time
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.options import (DEFAULT_EAGER_LIMIT_BYTES, INTRA_BANDWIDTH_BPS, INTRA_LATENCY_S,
                           RunOptions)

__all__ = ["run", "load_workload", "load_network", "RunOptions"]


def load_workload(trace, fmt: str = "auto", compute_rate: float = 1e9, compute_scale: float = 1.0,
                  collectives=None):
    """Read a trace file (any registered format) or pass a Workload through.

    :func:`workloads.read_workload` validates the rates and parses ``collectives`` strings.
    """
    from ccmod.workloads.base import Workload
    if isinstance(trace, Workload):
        return trace
    from ccmod.kernel.state import release_free_heap
    from ccmod.workloads import read_workload
    w = read_workload(trace, fmt, compute_rate=compute_rate, compute_scale=compute_scale,
                      collectives=collectives)
    # the reader's temporaries (the file's text, the parse's blocks) were freed into the C
    # heap, which keeps them resident under everything the run allocates next
    release_free_heap(64 * w.nrecords)
    return w


def run_view(w, matching: bool = False):
    """A shallow copy of Workload ``w`` without the columns that only the matching reads.

    ``peer``, ``tag`` and ``nbytes`` have their per-message copies in the Messages once
    :func:`ccmod.compile.compile_messages` is done (``matching``: the view keeps them, for
    a ``compile_messages(..., release=True)`` that drops them once it has gathered
    them), and ``req`` is read again only to map
    waits to requests: a whole-program run that writes no outputs (the outputs' sinks may
    read the records) holds them no longer, and holds ``file_id`` and ``line`` narrower.
    That is 32 bytes per record of a run's peak memory when ``w`` was read from a file
    (the copy is then the columns' last holder); a caller's Workload keeps its columns.
    """
    from ccmod.codes import OP_WAIT, OP_WAITALL
    v = copy.copy(w)
    if not matching:
        v.peer = v.tag = v.nbytes = None
    op = np.asarray(w.op)
    if not np.any((op == OP_WAIT) | (op == OP_WAITALL)):
        v.req = None         # resolve_waits reads req only when a record waits
    # the source positions only name a record in an error message (Workload.where): a
    # single file's ids as one broadcast value, lines as int32 when they fit (8 bytes per
    # record less; the values, and so the messages, are the same)
    fid = np.asarray(w.file_id)
    if fid.ndim == 1 and fid.size > 1 and (fid == fid[0]).all():
        v.file_id = np.broadcast_to(fid[:1].copy(), fid.shape)   # not a view of fid
    line = np.asarray(w.line)
    if line.ndim == 1 and line.size and line.dtype.itemsize > 4 and \
            np.iinfo(np.int32).min <= line.min() and line.max() <= np.iinfo(np.int32).max:
        v.line = line.astype(np.int32)
    if line.ndim == 1 and line.size >= 1 << 16:
        ranked = RankLines.of(w.rank_ptr, line)
        if ranked is not None:
            v.line = ranked
    # no record lasts (a trace without compute): durations that are all +0.0, bit for bit,
    # become a fresh array of zeros whose pages are never written, so never resident
    # (reading them maps the system's zero page): 8 bytes per record of the run's peak
    dur = np.asarray(w.duration_s)
    if dur.ndim == 1 and dur.size >= 1 << 16 and dur.dtype == np.float64 and \
            dur.flags.c_contiguous and not dur.view(np.int64).any():
        from ccmod.compile import untouched_zeros
        v.duration_s = untouched_zeros(dur.size)
    return v


class RankLines:
    """The source line of every record when each rank's records sit on consecutive lines
    of its file (a trace written rank after rank, one record per line, as the TI writers
    do): ``line[i] = i + offset[rank of i]``, one number per rank instead of one per
    record (4 bytes per record of a run's peak). Indexed like the ``line`` array it
    replaces in a run's own Workload view (:meth:`Workload.where` reads one element)."""

    __slots__ = ("rank_ptr", "offset", "size")

    def __init__(self, rank_ptr, offset, size):
        self.rank_ptr, self.offset, self.size = rank_ptr, offset, size

    @classmethod
    def of(cls, rank_ptr, line):
        """The RankLines of ``line`` (records in rank order, CSR ``rank_ptr``), or None
        when some rank's records are not on consecutive lines."""
        rp = np.asarray(rank_ptr, np.int64)
        n = len(line)
        if len(rp) < 2 or rp[0] != 0 or rp[-1] != n:
            return None
        starts = rp[:-1]
        full = rp[1:] > starts
        off = np.zeros(len(starts), np.int64)
        off[full] = np.asarray(line[starts[full]], np.int64) - starts[full]
        for a in range(0, n, 1 << 16):        # in slices: small temporaries
            b = min(n, a + (1 << 16))
            # the ranks that hold records a..b-1, and how many of those each holds
            r0, r1 = np.searchsorted(rp, [a, b - 1], side="right") - 1
            each = np.diff(np.clip(rp[r0:r1 + 2], a, b))
            if (np.asarray(line[a:b], np.int64) - np.arange(a, b) !=
                    np.repeat(off[r0:r1 + 1], each)).any():
                return None
        return cls(rp, off, n)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i):
        i = int(i)
        if not 0 <= i < self.size:
            raise IndexError(i)
        r = int(np.searchsorted(self.rank_ptr, i, side="right")) - 1
        return int(self.offset[r]) + i


def load_network(spec, nodes_needed: int, cost=None, background=None):
    """Build a network from a spec string, or check (and copy) a Network object.

    A Network object given by the caller is never changed: when ``cost`` or
    ``background`` apply, a copy gets them.
    """
    from ccmod.netsys.base import Network
    if isinstance(spec, Network):
        net = spec
        if cost is not None or background is not None:
            net = copy.copy(spec)   # arrays are shared; set_cost/set_background rebind
            if cost is not None:
                from ccmod.netsys.networks import load_cost
                net.set_cost(load_cost(cost))
            if background is not None:
                net.set_background(background)
        if net.nnodes < nodes_needed:
            raise CcmodInputError(f"network '{net.name}' has {net.nnodes} nodes but the run needs "
                                  f"{nodes_needed}", source="--network")
        return net
    from ccmod.netsys.networks import make_network
    return make_network(spec, nodes_needed, cost=cost, background=background)


def run(trace, network="star", options: RunOptions | None = None, *, sinks=(), out_dir=None,
        record: bool | None = None, progress=None, bounds: bool = False,
        window_records: int | None = None, on_pause=None, **option_values):
    """Predict the communication of a trace on a network.

    Parameters
    ----------
    trace : str, path or workloads.base.Workload
        A trace file (format detected, or ``fmt``) or an already built workload.
    network : str or netsys.base.Network
        ``NAME[:key=value,...]`` (see ``ccmod networks``), default ``"star"``. A Network
        object is not modified.
    options : RunOptions, optional
        How to run: sharing rule, send mode, eager limit (default
        ``DEFAULT_EAGER_LIMIT_BYTES`` = 64 KiB with rendezvous; 0 gives the article's
        synchronous SCOM), compute rate (flop/s, or SimGrid's ``20kf``) and scale, quiet
        cost, background load (a constant fraction in [0, 1) or a model spec such as
        ``"exp:mean_pps=7000,max_pps=25000,interval=1e-3,seed=1"`` or ``"file:loads.csv"``,
        see :mod:`ccmod.netsys.background`), mapping (default: the placement recorded in the trace, see
        ``--map trace``), format, collectives, intra-node cost.
    **option_values
        Any :class:`~ccmod.options.RunOptions` field by name (``sharing="maxmin"``,
        ``background=0.3``, ...), overriding ``options``.
    sinks : sequence of str or outputs.base.Sink
        Output sinks (e.g. ``["parquet", "perfetto"]``); each gets the finished
        RunResult (``Sink.write(result, ctx)``).
    out_dir : path, optional
        Directory for sinks that write files.
    record : bool, optional
        Keep rank-state and link-load intervals in the result (default: True when sinks
        or out_dir are given, or the workload is small).
    bounds : bool
        Also run the best / average / worst background cases (no load, the mean load, the
        95th-percentile load, each held constant; :mod:`ccmod.bounds`) and put their
        makespans in ``result.bounds``.
    window_records : int, optional
        Feed the kernel at most this many records per rank at a time (streaming,
        :mod:`ccmod.kernel.window`); results are identical to the whole-program run.
    on_pause : callable, optional
        ``on_pause(engine)`` at every kernel pause of the main run (see
        :class:`ccmod.engine.Engine`; the streamed run drains recordings there).

    Returns
    -------
    ccmod.result.RunResult
    """
    from ccmod.collect import collect
    from ccmod.compile import compile_messages
    from ccmod.engine import Engine
    opts = RunOptions.make(options, **option_values)
    sharing, send_mode, compute_rate = opts.sharing, opts.send_mode, opts.compute_rate
    w = load_workload(trace, **opts.load_kwargs())
    t0 = time.perf_counter()
    p = prepare_run(w, network, opts)
    bg, net, node_of_rank = p.bg, p.net, p.node_of_rank
    eager_limit_bytes = p.eager_limit_bytes
    intra_latency_s, intra_bandwidth_Bps = p.intra_latency_s, p.intra_bandwidth_Bps
    sink_objs = _make_sinks(sinks, out_dir)
    if record is None:
        record = bool(sink_objs) or out_dir is not None or w.nrecords <= 2_000_000
    info = run_info(trace, w, opts, p)
    # a whole-program run that writes no outputs holds its own view of the Workload from
    # here on (the caller's Workload, if one was given, keeps its columns): narrower
    # source positions and no requests before the matching, and the matching's columns
    # let go inside it, once gathered
    own = window_records is None and not sink_objs
    if own:
        w = run_view(w, matching=True)
    # the compiled kernel charges o_send / o_recv to the ranks: they leave the quiet time
    msgs = compile_messages(w, net, node_of_rank, sharing, intra_latency_s,
                            intra_bandwidth_Bps, charge_overheads=True, release=own)
    info["notes"] = run_notes(w, p, msgs.notes)
    # the matched records' indices: only compile_messages' own errors read them (16 bytes
    # per message less under the kernel's state)
    msgs.send_rec = msgs.recv_rec = None
    from ccmod.kernel.state import release_free_heap
    # the matching's and the costs' temporaries, before the set-up
    release_free_heap(64 * w.nrecords)
    cap = net.resource_capacity_Bps()
    signals = any(getattr(s, "wants_signals", False) for s in sink_objs)

    def make_engine(bg_flat, steps, main=True):
        kw = {} if steps is None else {"bg_t_s": steps.t_s, "bg_resource": steps.resource,
                                       "bg_load": steps.load}
        return Engine(w, msgs, net.nresources, cap, bg_flat, sharing=sharing,
                      send_mode=send_mode, eager_limit_bytes=int(eager_limit_bytes),
                      record=record if main else False, signals=signals if main else False,
                      progress=progress if main else None, node_of_rank=node_of_rank,
                      gap_s=msgs.gap_s, window_records=window_records,
                      on_pause=on_pause if main else None, **kw)

    from ccmod.bounds import bounds_makespans, level_key, run_engine
    if not bg.constant:
        info["background_model"] = bg.describe()
    eng, makespan = run_engine(make_engine, w, msgs, net, bg)
    if not bg.constant:
        # the links table's background column: each link direction's mean load
        net.set_background(bg.level(net, "mean")[:2 * net.nlinks].reshape(net.nlinks, 2))
    bounds_out = None
    if bounds:
        # a constant background's main run is at its avg and worst level already
        known = {level_key(bg.level(net, "mean")): float(makespan)} if bg.constant else None
        bounds_out = bounds_makespans(lambda lv, st: make_engine(lv, st, main=False), net, bg,
                                      known)
    wall = time.perf_counter() - t0
    if own:
        eng.release_scratch(messages=True)   # no one reads msgs' loop-only inputs now
    result = collect(eng, msgs, net, node_of_rank, makespan, wall, info)
    result.bounds = bounds_out
    _trace_notes(w, result, compute_rate)
    if sink_objs:
        from ccmod.outputs.base import RunContext
        from ccmod.outputs.sinks import write_all
        write_all(sink_objs, result, RunContext(
            out_dir=Path(out_dir) if out_dir is not None else None, options=result.options,
            network=net, workload=w))
    return result


def prepare_run(w, network, opts):
    """What a run decides before compiling messages: eager limit, placement, the network
    with its intra-node costs, the background model (also for a streamed run, where
    ``w`` is a record source: ``nranks`` and ``meta`` are all it reads).

    Returns a namespace: ``bg``, ``eager_limit_bytes``, ``eager_given``, ``eager_note``,
    ``node_of_rank``, ``map_note``, ``net``, ``intra_latency_s``, ``intra_bandwidth_Bps``.
    """
    from types import SimpleNamespace

    from ccmod.netsys.background import make_background
    from ccmod.netsys.mapping import nodes_needed as count_nodes
    from ccmod.netsys.mapping import rank_to_node
    send_mode = opts.send_mode
    eager_given = opts.eager_limit_bytes is not None
    eager_limit_bytes = opts.eager_limit_bytes if eager_given else (
        DEFAULT_EAGER_LIMIT_BYTES if send_mode == "rendezvous" else 0)
    bg = make_background(opts.background)
    seen = int(w.meta.get("eager_bytes_observed", 0) or 0)
    eager_note = None
    if not eager_given and send_mode == "rendezvous" and seen > eager_limit_bytes:
        # the traced run buffered larger blocking sends: its MPI's eager limit was larger
        eager_note = (f"eager limit {seen} bytes: in the traced run blocking sends of up to "
                      f"{seen} bytes returned before their receive was posted (the MPI "
                      "buffered them); --eager-limit overrides")
        eager_limit_bytes = seen
    node_of_rank, map_note = _placement(w, opts.mapping, rank_to_node)
    nodes_needed = max(count_nodes(node_of_rank), 1)
    net = load_network(network, nodes_needed, cost=opts.cost,
                       background=bg.load if bg.constant else 0.0)
    # intra-node cost: the option, else the cost model's intra section, else the defaults
    intra_latency_s, intra_bandwidth_Bps = opts.intra_latency_s, opts.intra_bandwidth_Bps
    if intra_latency_s is None:
        intra_latency_s = net.cost.intra_latency_s
        intra_latency_s = INTRA_LATENCY_S if intra_latency_s is None else intra_latency_s
    if intra_bandwidth_Bps is None:
        intra_bandwidth_Bps = net.cost.intra_bandwidth_Bps
        intra_bandwidth_Bps = INTRA_BANDWIDTH_BPS if intra_bandwidth_Bps is None else intra_bandwidth_Bps
    if not (intra_latency_s >= 0 and intra_bandwidth_Bps > 0):
        raise CcmodInputError("intra-node latency must be >= 0 and bandwidth > 0",
                              source="--intra-latency/--intra-bandwidth")
    if not isinstance(network, str) and getattr(net, "node_resources", None) is not None:
        # set_intra_bandwidth changes the node resources in place: never the caller's
        net = copy.copy(net)
        net.node_resources = copy.deepcopy(net.node_resources)
    net.set_ranks(w.nranks)
    net.set_intra_bandwidth(intra_bandwidth_Bps,
                            getattr(net.cost, "intra_aggregate_bandwidth_Bps", None))
    return SimpleNamespace(bg=bg, send_mode=send_mode, eager_limit_bytes=eager_limit_bytes,
                           eager_given=eager_given,
                           eager_note=eager_note, node_of_rank=node_of_rank, map_note=map_note,
                           net=net, intra_latency_s=intra_latency_s,
                           intra_bandwidth_Bps=intra_bandwidth_Bps)


def run_info(trace, w, opts, p) -> dict:
    """The run's options as results report them (``result.options``)."""
    bg, net = p.bg, p.net
    return {"sharing": opts.sharing, "send_mode": opts.send_mode,
            "eager_limit_bytes": int(p.eager_limit_bytes), "compute_rate": opts.compute_rate,
            "compute_scale": opts.compute_scale,
            # a number for every consumer; a model's spec is in background_model
            "background": bg.load if bg.constant else _mean_level(bg, net),
            "mapping": opts.mapping, "cost": None if opts.cost is None else str(opts.cost),
            "trace": _trace_path(trace, w)}


def run_notes(w, p, cost_notes) -> list:
    """The run's notes: the cost model's (``cost_notes``), the trace's, the options'."""
    notes = list(cost_notes) + [str(n) for n in w.meta.get("run_notes", [])]
    if p.eager_note:
        notes.append(p.eager_note)
    if p.map_note:
        notes.append(p.map_note)
    if getattr(p.net.cost, "monotone", True) is False:
        notes.append("the cost model is not monotone in message size: a bigger "
                     "message can be cheaper at a segment start")
    if p.eager_given and p.eager_limit_bytes and p.send_mode != "rendezvous":
        notes.append(f"--eager-limit only matters with --send-mode rendezvous "
                     f"(every message is already sent {p.send_mode})")
    return notes


def _placement(w, mapping, rank_to_node):
    """Rank -> node: ``--map`` if given, else the trace's recorded placement (a note)."""
    placed = w.meta.get("placement")
    if mapping is None or str(mapping).strip() == "trace":
        if placed and len(placed.get("node_of_rank", ())) == w.nranks:
            nodes = np.asarray(placed["node_of_rank"], np.int64)
            k = int(nodes.max()) + 1
            names = placed.get("node_names") or []
            shown = ", ".join(names[:3]) + (" ..." if len(names) > 3 else "")
            return nodes, (f"placement from the trace ({placed.get('source', 'recorded')}): "
                           f"{w.nranks} rank(s) on {k} node(s) ({shown}); --map overrides")
        note = ("--map trace: the trace records no placement; one rank per node"
                if mapping is not None else None)
        return rank_to_node(None, w.nranks).astype(np.int64), note
    return rank_to_node(mapping, w.nranks).astype(np.int64), None


def _trace_notes(w, result, compute_rate) -> None:
    """Add what the summary must say about the trace (compute rate, nothing to predict)."""
    from ccmod.trace_notes import (compute_info, compute_notes, holds_no_communication,
                                   nothing_to_predict_note)
    notes = result.options.setdefault("notes", [])
    col = lambda name: result.column("ranks", name)  # noqa: E731 - no DataFrame needed
    i = int(np.argmax(col("finish_s"))) if result.table_len("ranks") else None
    comm = 0.0 if i is None else float(col("send_s")[i] + col("recv_s")[i]
                                       + col("wait_s")[i] + col("barrier_s")[i])
    # the largest compute of any rank: the last rank to finish may only have waited for
    # another rank's compute (a 0 s compute there is not "implausibly small")
    comp = 0.0 if i is None else float(np.max(col("compute_s")))
    notes.extend(compute_notes(w, compute_rate, comm, comp))
    result.options["compute"] = compute_info(w, compute_rate)
    if holds_no_communication(w):
        result.options["nothing_to_predict"] = nothing_to_predict_note(w, result.makespan_s)
    from ccmod.trace_notes import measured_vs_predicted
    measured = measured_vs_predicted(w, result)
    if measured is not None:
        result.options["measured"] = measured
        result.measured = measured          # for the HTML report


def _mean_level(bg, net) -> float:
    lv = bg.level(net, "mean")
    return float(lv.max()) if len(lv) else 0.0


def _make_sinks(sinks, out_dir):
    if not sinks:
        return []
    if isinstance(sinks, str):
        sinks = [s for s in sinks.split(",") if s.strip()]
    names = [s for s in sinks if isinstance(s, str)]
    objs = [s for s in sinks if not isinstance(s, str)]
    if names:
        from ccmod.outputs.sinks import make_sinks
        objs = make_sinks(",".join(names), out_dir) + objs
    return objs


def _trace_path(trace, w) -> str:
    """The trace file a run read (also when a Workload read from a file is passed in)."""
    if isinstance(trace, (str, os.PathLike)):
        return str(trace)
    files = getattr(w, "files", None) or []
    return str(files[0]) if files else "<workload>"
