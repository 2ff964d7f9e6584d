"""The Python API: ``ccmod.run(trace, network=...)`` and friends.

Everything the CLI does is available here and returns data (:class:`RunResult`).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.engine import SEND_MODES, SHARINGS, Engine

#: intra-node (same node) message cost: a memcpy-like latency and bandwidth
INTRA_LATENCY_S = 5e-7
INTRA_BANDWIDTH_BPS = 5e9
#: default eager limit (bytes): MPI-like, SMPI's ``smpi/send-is-detached-thresh`` (65536);
#: 0 gives the article's synchronous SCOM for every message
DEFAULT_EAGER_LIMIT_BYTES = 65536


def load_workload(trace, fmt: str = "auto", compute_rate: float = 1e9, compute_scale: float = 1.0,
                  collectives=None):
    """Read a trace file (any registered format) or pass a Workload through.

    :func:`workloads.read_workload` validates the rates and parses ``collectives`` strings.
    """
    from ccmod.workloads.base import Workload
    if isinstance(trace, Workload):
        return trace
    from ccmod.workloads import read_workload
    return read_workload(trace, fmt, compute_rate=compute_rate, compute_scale=compute_scale,
                         collectives=collectives)


def load_network(spec, nodes_needed: int, cost=None, background=None):
    """Build a network from a spec string (or pass a Network through)."""
    from ccmod.netsys.base import Network
    if isinstance(spec, Network):
        net = spec
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


def run(trace, network="star", *, sharing: str = "ccmod", send_mode: str = "rendezvous",
        eager_limit_bytes: int | None = None, compute_rate: float = 1e9, compute_scale: float = 1.0, cost=None,
        background=0.0, mapping: str | None = None, fmt: str = "auto",
        collectives=None, intra_latency_s: float = INTRA_LATENCY_S,
        intra_bandwidth_Bps: float = INTRA_BANDWIDTH_BPS, sinks=(), out_dir=None,
        record: bool | None = None, progress=None, bounds: bool = False):
    """Predict the communication of a trace on a network.

    Parameters
    ----------
    trace : str, path or workloads.base.Workload
        A trace file (format detected, or ``fmt``) or an already built workload.
    network : str or netsys.base.Network
        ``NAME[:key=value,...]`` (see ``ccmod networks``), default ``"star"``.
    sharing : {"ccmod", "maxmin"}
        How active messages share links (article's bandwidth availability, or max-min fair).
    send_mode : {"rendezvous", "eager", "detached"}
    eager_limit_bytes : int, optional
        With rendezvous, messages of at most this many bytes go eagerly (0 = none: the
        article's synchronous SCOM). Default ``DEFAULT_EAGER_LIMIT_BYTES`` (64 KiB).
    compute_rate : float
        flop/s used to turn traced flops into seconds (formats that count flops).
    compute_scale : float
        Multiplies every compute duration (0.5 = a CPU twice as fast).
    cost : str, path or netsys.cost.CostModel, optional
        Quiet cost: a JSON model file from ``ccmod fit`` or ``"physical"``.
    background : float, str or netsys.background.Background
        Background load: a constant fraction in [0, 1) on every link direction, or a model
        spec: ``"exp:mean_pps=7000,max_pps=25000,interval=1e-3,seed=1"`` (the article's
        Listing Seven, resampled per link direction every interval) or ``"file:loads.csv"``
        (a measured per-link series). See :mod:`ccmod.netsys.background`.
    mapping : str, optional
        Rank → node map: ``block:K``, ``cyclic:K`` or a file (default one rank per node).
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

    Returns
    -------
    ccmod.result.RunResult
    """
    from ccmod.collect import collect
    from ccmod.compile import compile_messages
    from ccmod.netsys.mapping import nodes_needed as count_nodes
    from ccmod.netsys.mapping import rank_to_node

    if sharing not in SHARINGS:
        raise CcmodInputError(f"unknown sharing rule '{sharing}'", source="--sharing",
                              hint="valid: " + ", ".join(SHARINGS))
    if send_mode not in SEND_MODES:
        raise CcmodInputError(f"unknown send mode '{send_mode}'", source="--send-mode",
                              hint="valid: " + ", ".join(SEND_MODES))
    eager_given = eager_limit_bytes is not None
    if not eager_given:
        eager_limit_bytes = DEFAULT_EAGER_LIMIT_BYTES if send_mode == "rendezvous" else 0
    if not (eager_limit_bytes >= 0):
        raise CcmodInputError(f"eager limit must be >= 0 bytes, got {eager_limit_bytes}",
                              source="--eager-limit")
    if not (intra_latency_s >= 0 and intra_bandwidth_Bps > 0):
        raise CcmodInputError("intra-node latency must be >= 0 and bandwidth > 0",
                              source="--intra-latency/--intra-bandwidth")
    from ccmod.netsys.background import make_background
    bg = make_background(background)
    from ccmod.workloads.units import parse_compute_rate
    compute_rate = parse_compute_rate(compute_rate)
    w = load_workload(trace, fmt, compute_rate, compute_scale, collectives)
    seen = int(w.meta.get("eager_bytes_observed", 0) or 0)
    eager_note = None
    if not eager_given and send_mode == "rendezvous" and seen > eager_limit_bytes:
        # the traced run buffered larger blocking sends: its MPI's eager limit was larger
        eager_note = (f"eager limit {seen} bytes: in the traced run blocking sends of up to "
                      f"{seen} bytes returned before their receive was posted (the MPI "
                      "buffered them); --eager-limit overrides")
        eager_limit_bytes = seen
    t0 = time.perf_counter()
    node_of_rank = rank_to_node(mapping, w.nranks).astype(np.int64)
    nodes_needed = max(count_nodes(node_of_rank), 1)
    net = load_network(network, nodes_needed, cost=cost,
                       background=bg.load if bg.constant else 0.0)
    sink_objs = _make_sinks(sinks, out_dir)
    if record is None:
        record = bool(sink_objs) or out_dir is not None or w.nrecords <= 2_000_000
    options = {"sharing": sharing, "send_mode": send_mode,
               "eager_limit_bytes": int(eager_limit_bytes), "compute_rate": compute_rate,
               "compute_scale": compute_scale,
               # a number for every consumer; a model's spec is in background_model
               "background": bg.load if bg.constant else _mean_level(bg, net),
               "mapping": mapping, "cost": None if cost is None else str(cost),
               "trace": _trace_path(trace, w)}
    msgs = compile_messages(w, net, node_of_rank, sharing, intra_latency_s, intra_bandwidth_Bps)
    options["notes"] = list(msgs.notes) + [str(n) for n in w.meta.get("run_notes", [])]
    if eager_note:
        options["notes"].append(eager_note)
    if getattr(net.cost, "monotone", True) is False:
        options["notes"].append("the cost model is not monotone in message size: a bigger "
                                "message can be cheaper at a segment start")
    if eager_given and eager_limit_bytes and send_mode != "rendezvous":
        options["notes"].append(f"--eager-limit only matters with --send-mode rendezvous "
                                f"(every message is already sent {send_mode})")
    cap = net.capacity_Bps.reshape(-1)
    signals = any(getattr(s, "wants_signals", False) for s in sink_objs)

    def make_engine(bg_flat, steps, main=True):
        kw = {} if steps is None else {"bg_t_s": steps.t_s, "bg_resource": steps.resource,
                                       "bg_load": steps.load}
        return Engine(w, msgs, net.nresources, cap, bg_flat, sharing=sharing,
                      send_mode=send_mode, eager_limit_bytes=int(eager_limit_bytes),
                      record=record if main else False, signals=signals if main else False,
                      progress=progress if main else None, **kw)

    from ccmod.bounds import bounds_makespans, run_engine
    if not bg.constant:
        options["background_model"] = bg.describe()
    eng, makespan = run_engine(make_engine, w, msgs, net, bg)
    bounds_out = None
    if bounds:
        bounds_out = bounds_makespans(lambda lv, st: make_engine(lv, st, main=False), net, bg)
    wall = time.perf_counter() - t0
    result = collect(eng, msgs, net, node_of_rank, makespan, wall, options)
    result.bounds = bounds_out
    _trace_notes(w, result, compute_rate)
    if sink_objs:
        from ccmod.outputs.base import RunContext
        from ccmod.outputs.sinks import write_all
        write_all(sink_objs, result, RunContext(
            out_dir=Path(out_dir) if out_dir is not None else None, options=options,
            network=net, workload=w))
    return result


def _trace_notes(w, result, compute_rate) -> None:
    """Add what the summary must say about the trace (compute rate, nothing to predict)."""
    from ccmod.trace_notes import (compute_info, compute_notes, holds_no_communication,
                                   nothing_to_predict_note)
    notes = result.options.setdefault("notes", [])
    r = result.ranks
    busiest = r.loc[r["finish_s"].idxmax()] if len(r) else None
    comm = 0.0 if busiest is None else float(busiest["send_s"] + busiest["recv_s"]
                                             + busiest["wait_s"] + busiest["barrier_s"])
    comp = 0.0 if busiest is None else float(busiest["compute_s"])
    notes.extend(compute_notes(w, compute_rate, comm, comp))
    result.options["compute"] = compute_info(w, compute_rate)
    if holds_no_communication(w):
        result.options["nothing_to_predict"] = nothing_to_predict_note(w, result.makespan_s)


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
