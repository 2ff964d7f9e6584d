"""``ccmod fit TRACE``: calibrate the quiet cost from a timestamped trace's own messages.

Reads the trace with its reader (``workloads``), takes each matched message's measured
time (``workloads.msgtimes``) and fits the lower envelope of time against size
(``netsys.fit_envelope``). Front-end glue only: the two rooms do not know each other.
See docs/fitting.md ("Calibrating from a trace").
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError

#: readers that give per-message call times (they go through workloads.assembler)
TIMED_FORMATS = ("otf2", "paraver", "dumpi", "dumpi-ascii", "liballprof")
#: ``--message-time`` choices (see workloads.msgtimes)
MESSAGE_TIMES = ("waiting", "later")
#: warn when more than this fraction of the waiting-receiver messages took <= 0 s
SKEW_WARN_FRACTION = 0.05


def timed_trace_format(path) -> str | None:
    """Name of the timestamped trace reader whose sniffer recognises ``path``, else None."""
    from ccmod.workloads.registry import READERS
    for name in TIMED_FORMATS:
        if name not in READERS:
            continue
        f = READERS.get(name).factory
        r = f() if isinstance(f, type) else f
        try:
            if r.sniff(Path(os.fspath(path))):
                return name
        except Exception:   # a sniffer must never break detection
            continue
    return None


def untimed_trace_format(path) -> str | None:
    """Name of a trace reader without timestamps that recognises ``path`` (its sniffer)."""
    from ccmod.workloads.registry import READERS
    for entry in READERS.entries():
        if entry.name in TIMED_FORMATS:
            continue
        r = entry.factory() if isinstance(entry.factory, type) else entry.factory
        try:
            if getattr(r, "sniff", None) is not None and r.sniff(Path(os.fspath(path))):
                return entry.name
        except Exception:
            continue
    return None


def no_timestamps_error(path, fmt: str) -> CcmodInputError:
    return CcmodInputError(
        f"a '{fmt}' trace gives no measured message times: ccmod fit needs a timestamped "
        "trace (OTF2, Paraver, DUMPI, liballprof) or ping-pong benchmark output",
        source=str(path),
        hint="fit the network from a ping-pong (osu_latency, IMB PingPong) of the same "
             "machine, or trace the run with Score-P/Extrae/DUMPI")


def check_message_time(message_time: str) -> None:
    """``--message-time`` is one of :data:`MESSAGE_TIMES`."""
    if message_time not in MESSAGE_TIMES:
        raise CcmodInputError(f"unknown message time '{message_time}'", source="--message-time",
                              hint="valid: " + ", ".join(MESSAGE_TIMES))


def message_samples(paths, fmt: str = "auto", *, message_time: str = "waiting",
                    waiting_fraction: float = 0.5):
    """Per-message measured times of one or more traces, pooled.

    Returns ``(nbytes, time_s, same_node, counts, formats)``: ``same_node`` marks the
    messages between ranks the trace places on one node (its recorded placement; all False
    without one); ``counts`` adds up the message counts of
    :meth:`workloads.msgtimes.MessageTimes.quiet_samples`.
    """
    from ccmod.workloads import detect_format, read_workload
    check_message_time(message_time)
    xs, ts, same, fmts = [], [], [], []
    counts: dict = {}
    for p in paths:
        f = fmt if fmt not in ("auto", "trace") else (timed_trace_format(p) or detect_format(p))
        if f not in TIMED_FORMATS:
            raise no_timestamps_error(p, f)
        w = read_workload(p, f)
        mt = getattr(w, "message_times", None)
        if mt is None:
            raise no_timestamps_error(p, f)
        if message_time == "waiting":
            x, t, c, used = mt.quiet_samples(waiting_fraction=waiting_fraction, index=True)
        else:
            x, t, c, used = mt.later_start_samples(index=True)
        node = (w.meta.get("placement") or {}).get("node_of_rank")
        if node is not None and len(node) == w.nranks:
            node = np.asarray(node)
            same.append(node[mt.src[used]] == node[mt.dst[used]])
        else:
            same.append(np.zeros(x.size, bool))
        xs.append(x)
        ts.append(t)
        fmts.append(f)
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + int(v)
    return np.concatenate(xs), np.concatenate(ts), np.concatenate(same), counts, fmts


def fit_traces(paths, fmt: str = "auto", *, message_time: str = "waiting",
               waiting_fraction: float = 0.5, quantile: float = 0.1, min_messages: int = 2,
               bins_per_decade: int = 20, **fit_kw):
    """Fit the quiet-network cost to the lower envelope of the traces' message times.

    Parameters
    ----------
    paths : sequence of path-like
        Timestamped traces (OTF2, Paraver, DUMPI, liballprof); several are pooled.
    fmt : str
        Trace reader name, or ``"auto"``/``"trace"`` to sniff each trace.
    message_time : {"waiting", "later"}
        ``waiting``: messages whose receiver waited, timed from the send call's start to
        the end of the receiver's completing call; ``later``: every message, timed from
        the later of the send's and the completing call's start (a lower bound).
    waiting_fraction : float
        See :meth:`workloads.msgtimes.MessageTimes.quiet_samples`.
    quantile, min_messages, bins_per_decade
        See :func:`netsys.fit_envelope.lower_envelope`.
    **fit_kw
        ``breakpoints``, ``packet_size``, ``max_segments``, ``robust``, ``ref_hops``,
        ``per_hop_latency_s``.

    Returns
    -------
    netsys.fit_report.FitReport
        ``envelope`` holds the bins, the message counts and the support of each segment.
    """
    from ccmod.netsys.fit_envelope import fit_envelope
    paths = [str(p) for p in paths]
    if not paths:
        raise CcmodInputError("no trace given", hint="ccmod fit traces.otf2 -o model.json")
    x, t, same, counts, fmts = message_samples(paths, fmt, message_time=message_time,
                                               waiting_fraction=waiting_fraction)
    named = ", ".join(paths)
    if counts.get("used", 0) == 0:
        late = counts.get("receiver_late", 0)
        why = (f"{late} of {counts.get('messages', 0)} messages reached a receiver that was "
               "not waiting for them" if late else
               f"the trace holds {counts.get('messages', 0)} usable point-to-point message(s)")
        raise CcmodInputError(
            f"no message with a measured transfer time: {why}", source=named,
            hint=("--message-time later times them by the receive call's duration (a lower "
                  "bound)" if late else "fit ping-pong output of the machine instead"))
    if message_time == "waiting":
        how = ("per message: end of the receiver's completing call (MPI_Recv / MPI_Wait*) - "
               "start of the send call, for messages whose receiver was already waiting "
               f"(entered that call before the send, or blocked there >= {waiting_fraction:g} "
               "of that time)")
    else:
        how = ("per message: end of the receiver's completing call - the later of the send "
               "call's start and that call's start (a lower bound where MPI progresses in "
               "the background)")
    label = f"{'+'.join(sorted(set(fmts)))} trace, lower envelope"
    src = paths[0] if len(paths) == 1 else ", ".join(Path(p).name for p in paths)
    env_kw = dict(quantile=quantile, min_messages=min_messages,
                  bins_per_decade=bins_per_decade)
    n_intra = int(np.sum(same))
    counts["intra_node"] = n_intra
    only_intra = n_intra == x.size
    # with the trace's placement, a replay costs messages inside a node with the model's
    # 'intra' part (one line): fit those messages apart; on one node only, they are also
    # the only data for the network cost
    keep = np.ones(x.size, bool) if only_intra else ~same
    rep = fit_envelope(x[keep], t[keep], source=src, label=label, notes=[how], counts=counts,
                       **env_kw, **fit_kw)
    intra = None
    if n_intra:
        try:
            sub = fit_envelope(x[same], t[same], source=src, label=label, **env_kw,
                               **{**fit_kw, "breakpoints": "none", "packet_size": None})
            intra = {"latency_s": float(sub.model.seg_latency_s[0]),
                     "bandwidth_Bps": float(sub.model.seg_bandwidth_Bps[0])}
            rep.notes.append(f"{n_intra} messages inside a node (the trace's placement) fitted "
                             f"as one line for 'intra': latency {intra['latency_s']:.4g} s, "
                             f"bandwidth {intra['bandwidth_Bps']:.4g} B/s")
        except CcmodInputError as exc:
            rep.notes.append(f"{n_intra} messages inside a node (the trace's placement): no "
                             f"intra-node cost fitted ({exc.what})")
    if only_intra:
        rep.notes.append("all messages stayed inside one node: the network cost above is an "
                         "intra-node cost too (replay with --map to put ranks apart)")
    if intra is not None:
        from ccmod.netsys.fit_multi import combine
        rep.model = combine(rep.model, None, intra)
    bad = counts.get("nonpositive", 0)
    if bad > SKEW_WARN_FRACTION * max(counts.get("used", 0) + bad, 1):
        rep.warnings.append(f"{bad} message(s) arrived before they were sent by the trace's "
                            "clocks: the ranks' clocks disagree, so one direction of every "
                            "pair is measured too fast and the other too slow")
    return rep


__all__ = ["TIMED_FORMATS", "MESSAGE_TIMES", "timed_trace_format", "fit_traces",
           "message_samples"]
