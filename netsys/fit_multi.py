"""One cost model from several benchmarks at once (``ccmod fit PINGPONG --stream F --intra F``).

A ping-pong measures the *quiet* time of one message; it does not say how fast bytes flow
when messages stream back to back (alaska Intel MPI: ping-pong 7.0 GB/s, osu_bw 12.4 GB/s),
how many messages per second a node can inject, or what a message inside a node costs.
Each benchmark identifies one part (LogGP-like, as SimGrid SMPI's ``smpi/os``, ``smpi/or``,
``smpi/ois`` and bandwidth factors do):

ping-pong (osu_latency, IMB PingPong, SimGrid calibration)
    the piecewise-linear quiet time ``T(n)`` (segments, degenerate ones merged).
streams (osu_bw, osu_mbw_mr, IMB Uniband)
    ``stream_bandwidth_Bps``: one pair's plateau of the streaming bandwidth (the rate a
    message's bytes flow at; the rest of ``T(n)`` becomes the latency phase);
    ``nic_bandwidth_Bps``: the highest plateau of any stream, when several pairs together
    stream faster than one (alaska Intel MPI: one pair 10.2 GB/s, 2+ pairs 12.4 GB/s): the
    node's NIC rate, which networks with a NIC model (``duplex=``) take as their default
    ``nic_bandwidth``;
    ``gap_s``: the NIC gap, the smallest per-message time of any multi-pair stream of small
    messages (all senders on one node: the node's highest message rate; 0 = no limit when
    only one-pair streams are given, as one pair is limited by its own overheads); ``o_send_s`` +
    ``o_recv_s``: the per-message time of a single pair's small-message stream, half each
    (the sender's and the receiver's CPU cost).
    Streams beyond the ping-pong's largest size extend the model by a segment at the
    streaming bandwidth (instead of extrapolating the ping-pong's last slope).
intra-node (ping-pong or streams between two ranks of one node)
    ``intra``: latency (small-message ping-pong time, else a one-pair stream's small-message
    time per message) and bandwidth (stream plateau, else the ping-pong's large-size slope).
intra-node, several pairs at once (IMB Uniband / Biband ``-npmin`` tables whose pairs all sit
in one node, osu_mbw_mr inside one node)
    ``intra.aggregate_bandwidth_Bps``: how many bytes per second the node's cores copy
    together (the node's copy resource; one pair still copies at ``intra.bandwidth_Bps``):
    per size >= 2 MiB (buffers beyond the caches) the largest total over the tables, then
    the median over sizes.

The result is one JSON model file (``--cost``); ``fitted_range`` records the sizes it was
fitted on, and a run warns about larger messages.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.netsys.cost import PiecewiseLinearCost
from ccmod.netsys.pingpong import ReadOptions, read_measurements, read_text

#: sizes up to this many bytes count as "small" for message-rate (gap) estimates
SMALL_BYTES = 64
#: sizes from this many bytes on give the streaming-bandwidth plateau
PLATEAU_BYTES = 262144
#: sizes from this many bytes on give the aggregate intra-node copy bandwidth: buffers that
#: no longer fit in the cores' caches (below it, IMB's reused buffers copy at cache speed:
#: alaska Open MPI 140-210 GB/s at 256 KiB-1 MiB, 47 GB/s at 4 MiB)
AGGREGATE_BYTES = 2 * 1024 * 1024


def _pairs_of(path) -> int:
    """Concurrent pairs of a stream benchmark file (osu_mbw_mr header, IMB #processes/2)."""
    text = read_text(path)
    m = re.search(r"pairs:\s*(\d+)", text)
    if m:
        return int(m.group(1))
    m = re.findall(r"#processes\s*=\s*(\d+)", text)
    if m:
        return max(1, max(int(v) for v in m) // 2)
    return 1


def _geomean(values) -> float:
    return float(np.exp(np.mean(np.log(values))))


def stream_summary(paths, fmt: str = "auto", options: ReadOptions | None = None) -> dict:
    """Streaming rates of a node and of one pair, from several stream benchmarks at once.

    Returns a dict with ``stream_bandwidth_Bps`` (one pair's plateau: the rate one message
    stream's bytes flow at), ``nic_bandwidth_Bps`` (the highest plateau of any stream: what
    the node's NIC carries when several pairs stream), ``gap_s`` (smallest per-message time
    of a multi-pair small-message stream), ``o_send_s`` (one pair's small-message time),
    ``max_bytes`` and ``notes``. When several one-pair benchmarks are given (osu_bw,
    osu_mbw_mr with one pair, IMB Uniband with two processes), one pair's values are their
    geometric mean, so the model errs by the same ratio on each; a note names inputs that
    disagree by more than 1.5x (alaska Intel MPI: OSU 0.74 us, IMB 0.29 us per message).
    """
    opts = options or ReadOptions()
    plateau, tmin, single, pair_plateau, top = [], [], [], [], 0
    for p in paths:
        m = read_measurements(p, fmt, opts)
        if m.kind != "throughput":
            raise CcmodInputError(f"{m.format} is not a streaming benchmark", source=str(p),
                                  hint="--stream takes osu_bw / osu_mbw_mr / IMB Uniband output")
        n, t = m.nbytes.astype(float), m.one_way_s
        one = _pairs_of(p) == 1
        big = n >= PLATEAU_BYTES
        if big.any():
            plateau.append(float(np.median(n[big] / t[big])))
            if one:
                pair_plateau.append((str(p), plateau[-1]))
        small = (n > 0) & (n <= SMALL_BYTES)
        if small.any():
            if one:
                # one pair is limited by its CPU overheads, not by the node's NIC: its
                # time is o_send + o_recv; the gap needs several pairs on one node
                single.append((str(p), float(np.median(t[small]))))
            else:
                tmin.append(float(np.min(t[small])))
        top = max(top, int(n.max()))
    if not plateau:
        raise CcmodInputError(f"no stream size >= {PLATEAU_BYTES} bytes to measure the streaming "
                              "bandwidth", source=", ".join(map(str, paths)))
    notes = []
    for what, vals, unit, scale in (("one pair's small-message time", single, "us", 1e6),
                                    ("one pair's stream plateau", pair_plateau, "GB/s", 1e-9)):
        v = [x for _, x in vals]
        if len(v) > 1 and max(v) > 1.5 * min(v):
            notes.append(f"the stream inputs disagree on {what} ("
                         + ", ".join(f"{Path(f).name}: {x * scale:.3g} {unit}" for f, x in vals)
                         + f"): the model takes their geometric mean {_geomean(v) * scale:.3g} "
                         f"{unit}")
    nic = float(np.max(plateau))
    return {"stream_bandwidth_Bps": _geomean([x for _, x in pair_plateau]) if pair_plateau
            else nic, "nic_bandwidth_Bps": nic,
            "gap_s": float(min(tmin)) if tmin else 0.0,
            "o_send_s": _geomean([x for _, x in single]) if single else 0.0,
            "max_bytes": top, "notes": notes}


def intra_summary(paths, fmt: str = "auto", options: ReadOptions | None = None) -> dict:
    """Latency (ping-pong) and bandwidth (stream plateau or ping-pong slope) inside a node."""
    opts = options or ReadOptions()
    lat, bw, stream_lat = [], [], []
    for p in paths:
        m = read_measurements(p, fmt, opts)
        n, t = m.nbytes.astype(float), m.one_way_s
        if m.kind == "latency":
            small = n <= SMALL_BYTES
            if small.any():
                lat.append(float(np.median(t[small])))
            big = n >= PLATEAU_BYTES
            if big.sum() >= 2 and np.unique(n[big]).size >= 2:
                slope = np.polyfit(n[big], t[big], 1)[0]
                if slope > 0:
                    bw.append(1.0 / slope)
        else:
            big = n >= PLATEAU_BYTES
            if big.any():
                bw.append(float(np.median(n[big] / t[big])))
            small = (n > 0) & (n <= SMALL_BYTES)
            if small.any():
                # a one-pair stream's per-message time: what a message costs when messages
                # follow each other through the copy resource (its quiet time under sharing)
                stream_lat.append(float(np.median(t[small])))
    out = {}
    if lat or stream_lat:
        out["latency_s"] = float(np.median(lat if lat else stream_lat))
    if stream_lat:
        # back-to-back messages of one pair: the per-message time is the sender's CPU
        # (each rank's own: k pairs send k times as many small messages per second)
        out["o_send_s"] = min(float(np.median(stream_lat)), out["latency_s"])
    if bw:
        out["bandwidth_Bps"] = float(np.max(bw))
    if not out:
        raise CcmodInputError("intra-node input gives neither a latency nor a bandwidth",
                              source=", ".join(map(str, paths)))
    return out


def aggregate_summary(paths, processes=None, fmt: str = "auto",
                      options: ReadOptions | None = None) -> dict:
    """Aggregate intra-node copy bandwidth from multi-pair runs inside one node.

    ``processes``: the IMB ``#processes`` tables to read (those whose pairs are all on one
    node); None reads each file's default table. A Biband table counts both directions.
    """
    import dataclasses
    opts = options or ReadOptions()
    best: dict[int, float] = {}
    for p in paths:
        for procs in (processes or [None]):
            m = read_measurements(p, fmt, dataclasses.replace(opts, processes=procs))
            if m.kind != "throughput":
                raise CcmodInputError(f"{m.format} is not a multi-pair streaming benchmark",
                                      source=str(p), hint="give IMB Uniband / Biband or "
                                                          "osu_mbw_mr run inside one node")
            both = 2.0 if "biband" in m.format.lower() else 1.0
            for n, t in zip(m.nbytes, m.one_way_s):
                if n >= AGGREGATE_BYTES and t > 0:
                    best[int(n)] = max(best.get(int(n), 0.0), both * float(n) / float(t))
    if not best:
        raise CcmodInputError(f"no size >= {AGGREGATE_BYTES} bytes to measure the aggregate "
                              "intra-node bandwidth (smaller buffers copy at cache speed)",
                              source=", ".join(map(str, paths)))
    return {"aggregate_bandwidth_Bps": float(np.median(list(best.values())))}


def combine(model: PiecewiseLinearCost, stream: dict | None = None, intra: dict | None = None,
            fitted_range=None, charge_overheads: bool = True) -> PiecewiseLinearCost:
    """The ping-pong model extended with the stream / intra-node parts (a new model)."""
    d = model.to_dict()
    segs = d["segments"]
    if fitted_range is not None:
        d["fitted_range"] = [int(fitted_range[0]), int(fitted_range[1])]
    if stream:
        bs = stream["stream_bandwidth_Bps"]
        d["stream_bandwidth_Bps"] = bs
        d["gap_s"] = stream["gap_s"]
        nic = stream.get("nic_bandwidth_Bps")
        if nic is not None and nic > bs:
            # several pairs together stream faster than one: the node's NIC rate
            d["nic_bandwidth_Bps"] = float(nic)
        hi = d.get("fitted_range", [0, None])[1]
        if hi is not None and stream["max_bytes"] > hi:
            # beyond the ping-pong: continue T(hi) at the streaming bandwidth
            t_hi = float(model.quiet_s(hi))
            segs.append({"min_bytes": int(hi) + 1, "latency_s": max(t_hi - hi / bs, 0.0),
                         "bandwidth_Bps": bs})
            d["fitted_range"][1] = int(stream["max_bytes"])
        if charge_overheads and stream["o_send_s"] > 0:
            # one pair's small-message time t is o_send + o_recv: in a window the sender
            # pays o_send before each injection and the receiver o_recv once its wait
            # completes, so a stream reproduces t (half each; together <= the latency)
            o = min(0.5 * stream["o_send_s"], 0.5 * min(s["latency_s"] for s in segs))
            d["overheads"] = [{"min_bytes": 0, "o_send_s": o, "o_send_s_per_byte": 0.0,
                               "o_recv_s": o, "o_recv_s_per_byte": 0.0}]
    if intra:
        d["intra"] = {k: float(v) for k, v in intra.items()}
    return PiecewiseLinearCost.from_dict(d, source=model.source)


def _stream_note(st: dict) -> str:
    return (f"streams: one pair's bandwidth plateau {st['stream_bandwidth_Bps'] / 1e9:.4g} GB/s, "
            f"node (NIC) plateau {st['nic_bandwidth_Bps'] / 1e9:.4g} GB/s, NIC gap "
            f"{st['gap_s'] * 1e9:.4g} ns/message, one pair's small-message time "
            f"{st['o_send_s'] * 1e9:.4g} ns (o_send + o_recv)")


def fit_model(pingpong, stream=(), intra=(), *, fmt: str = "auto",
              options: ReadOptions | None = None, **fit_kw):
    """Fit ping-pong, streaming and intra-node benchmarks into one model.

    Returns
    -------
    FitReport
        Its ``model`` carries ``stream_bandwidth_Bps``, ``gap_s``, ``overheads``, ``intra``
        and ``fitted_range`` when the inputs give them; ``notes`` say what came from where.
    """
    from ccmod.netsys.fit_report import fit_files
    rep = fit_files(pingpong, fmt, options, **fit_kw)
    sizes = np.concatenate([m.nbytes for m in rep.measurements]) if rep.measurements else None
    rng = (int(sizes.min()), int(sizes.max())) if sizes is not None and sizes.size else None
    st = stream_summary(stream, fmt, options) if stream else None
    it = intra_summary(intra, fmt, options) if intra else None
    rep.model = combine(rep.model, st, it, rng)
    if st:
        rep.notes.append(_stream_note(st))
        rep.notes.extend(st["notes"])
    if it:
        rep.notes.append("intra-node: " + ", ".join(f"{k} {v:.4g}" for k, v in it.items()))
    return rep


def extend_report(report, stream=(), intra=(), intra_processes: int | None = None,
                  intra_aggregate=(), aggregate_processes=None):
    """Add streams / intra-node inputs and the fitted range to a ping-pong FitReport (in place)."""
    import dataclasses
    st = stream_summary(list(stream), "auto", ReadOptions()) if stream else None
    it = intra_summary(list(intra), "auto",
                       dataclasses.replace(ReadOptions(), processes=intra_processes)) if intra else None
    if intra_aggregate:
        it = dict(it or {})
        it.update(aggregate_summary(list(intra_aggregate), aggregate_processes))
    sizes = np.concatenate([m.nbytes for m in report.measurements]) if report.measurements else None
    rng = (int(sizes.min()), int(sizes.max())) if sizes is not None and sizes.size else None
    if st is None and it is None and rng is None:
        return report
    report.model = combine(report.model, st, it, rng)
    if st:
        report.notes.append(_stream_note(st))
        report.notes.extend(st["notes"])
    if it:
        report.notes.append("intra-node: " + ", ".join(f"{k} {v:.4g}" for k, v in it.items()))
    return report
