"""Quiet-network cost models (CCMOD's Tcom) and their inverse (CCMOD's T2Pack).

A cost model maps a message size and its route to the time the message takes on a quiet
network. The engine tracks each message's progress in *quiet seconds*; the inverse maps
quiet seconds elapsed back to bytes moved (for link-load accounting and outputs).

JSON model file (``--cost FILE``, written by ``ccmod fit``)::

    {
      "format": "ccmod-cost-model", "version": 1,
      "kind": "piecewise-linear",
      "segments": [                       # sorted by min_bytes, contiguous, first starts at 0
        {"min_bytes": 0,    "latency_s": 5.1e-6, "bandwidth_Bps": 9.0e7},
        {"min_bytes": 2021, "latency_s": 2.0e-5, "bandwidth_Bps": 1.2e8}
      ],
      "ref_hops": 2,                      # links on the measured path (node->switch->node)
      "per_hop_latency_s": 1e-7,          # added per link beyond ref_hops (or removed below)
      "packet_size": 2020,                # optional, informative
      "source": "osu_latency.out", "fit": {...}   # optional diagnostics
    }

Segment ``k`` applies to ``min_bytes[k] <= nbytes < min_bytes[k+1]`` (the last one is
unbounded): ``Tquiet(n) = latency_s[k] + n / bandwidth_Bps[k] + per_hop_latency_s *
(hops - ref_hops)``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError


class CostModel:
    """Base class: the quiet-network time of a message.

    Subclasses implement :meth:`quiet_s`. ``route_latency_s`` is the sum of the link
    latencies on the route, ``route_bandwidth_Bps`` the bottleneck capacity of the route,
    ``hops`` the number of (link, direction) resources it uses.
    """

    name = "cost"
    #: NIC gap: minimum time between two message injections of a node (s); 0 = no limit
    gap_s = 0.0
    #: largest message size the model was fitted on (None = unknown / not fitted)
    fitted_max_bytes = None
    #: intra-node (same node) latency and bandwidth, None = the run's defaults
    intra_latency_s = None
    intra_bandwidth_Bps = None
    #: aggregate copy bandwidth of a node's cores together (None = one pair's)
    intra_aggregate_bandwidth_Bps = None
    #: sender CPU time per intra-node message (back-to-back messages of one pair)
    intra_o_send_s = 0.0
    #: rate bytes flow at when messages stream (None = the segment bandwidths)
    stream_bandwidth_Bps = None
    #: a node's NIC rate when several pairs stream (None = unknown): the default
    #: ``nic_bandwidth`` of a network with a NIC model
    nic_bandwidth_Bps = None

    def overheads_s(self, nbytes, same_node=None):
        """(o_send, o_recv): CPU time charged to the sending / receiving rank per message.

        A model with scalar ``o_send_s`` / ``o_recv_s`` attributes (LogGP's o) gives them to
        every network message; intra-node messages get none (their cost is the intra model).
        """
        z = np.zeros(np.shape(nbytes))
        o_send = float(getattr(self, "o_send_s", 0.0) or 0.0)
        o_recv = float(getattr(self, "o_recv_s", 0.0) or 0.0)
        if o_send == 0 and o_recv == 0:
            return z, np.zeros(np.shape(nbytes))     # the values below, without the passes
        o_s, o_r = z + o_send, z + o_recv
        if same_node is not None:
            same = np.asarray(same_node, bool)
            o_s, o_r = np.where(same, 0.0, o_s), np.where(same, 0.0, o_r)
        return o_s, o_r

    def quiet_s(self, nbytes, route_latency_s, route_bandwidth_Bps, hops):
        """Quiet-network time in seconds (vectorised over numpy arrays)."""
        raise NotImplementedError

    def latency_s(self, nbytes, route_latency_s, route_bandwidth_Bps, hops):
        """The size-independent part of :meth:`quiet_s` (paid before bytes flow)."""
        return self.quiet_s(np.zeros_like(np.asarray(nbytes, dtype=float)), route_latency_s,
                            route_bandwidth_Bps, hops)

    def bytes_moved(self, nbytes, quiet_total_s, quiet_elapsed_s):
        """CCMOD's T2Pack: bytes delivered after ``quiet_elapsed_s`` of quiet-time progress.

        The latency part moves no bytes; afterwards bytes flow linearly, which is the exact
        inverse of a cost that is affine in the size within one segment.
        """
        nbytes = np.asarray(nbytes, dtype=float)
        total = np.asarray(quiet_total_s, dtype=float)
        el = np.asarray(quiet_elapsed_s, dtype=float)
        lat = np.minimum(self._lat_for_inverse(nbytes, total), total)
        span = np.maximum(total - lat, 1e-300)
        frac = np.clip((el - lat) / span, 0.0, 1.0)
        return nbytes * frac

    def _lat_for_inverse(self, nbytes, total):
        return np.zeros_like(total)

    def describe(self) -> str:
        return self.name


class PhysicalCost(CostModel):
    """``Tquiet = sum of route latencies + nbytes / bottleneck bandwidth`` (+ a fixed overhead).

    Parameters
    ----------
    overhead_s : float
        Software overhead added to every message (default 0).
    """

    name = "physical"

    def __init__(self, overhead_s: float = 0.0):
        self.overhead_s = float(overhead_s)

    def quiet_s(self, nbytes, route_latency_s, route_bandwidth_Bps, hops):
        nbytes = np.asarray(nbytes, dtype=float)
        return self.overhead_s + np.asarray(route_latency_s, float) + nbytes / np.asarray(
            route_bandwidth_Bps, float)

    def latency_s(self, nbytes, route_latency_s, route_bandwidth_Bps, hops):
        return self.overhead_s + np.asarray(route_latency_s, float) + 0.0 * np.asarray(nbytes, float)

    def describe(self) -> str:
        return "physical (sum of route latencies + nbytes / bottleneck bandwidth)"


class PiecewiseLinearCost(CostModel):
    """Piecewise-linear quiet cost in message size (the article's regression, Example 3a).

    Parameters
    ----------
    min_bytes : sequence of int
        Start of each segment; ``min_bytes[0]`` must be 0 and the list increasing.
    latency_s, bandwidth_Bps : sequence of float
        Intercept (s) and 1/slope (bytes/s) of each segment.
    ref_hops : int
        Number of route resources on the path the model was measured on.
    per_hop_latency_s : float
        Latency added per route resource beyond ``ref_hops``.
    """

    name = "piecewise-linear"

    def __init__(self, min_bytes, latency_s, bandwidth_Bps, ref_hops: int = 2,
                 per_hop_latency_s: float = 0.0, packet_size: int | None = None,
                 source: str | None = None, extra: dict | None = None):
        self.min_bytes = np.asarray(min_bytes, dtype=float)
        self.seg_latency_s = np.asarray(latency_s, dtype=float)
        self.seg_bandwidth_Bps = np.asarray(bandwidth_Bps, dtype=float)
        self.ref_hops = int(ref_hops)
        self.per_hop_latency_s = float(per_hop_latency_s)
        self.packet_size = packet_size
        self.source = source
        self.extra = extra or {}
        src = source or "cost model"
        n = self.min_bytes.size
        if n == 0 or self.seg_latency_s.size != n or self.seg_bandwidth_Bps.size != n:
            raise CcmodInputError("cost model needs one latency_s and bandwidth_Bps per segment",
                                  source=src)
        if self.min_bytes[0] != 0 or np.any(np.diff(self.min_bytes) <= 0):
            raise CcmodInputError("segment min_bytes must start at 0 and increase", source=src)
        if not np.all(np.isfinite(self.seg_latency_s)) or np.any(self.seg_latency_s < 0):
            raise CcmodInputError("segment latency_s must be finite and >= 0", source=src)
        if not np.all(np.isfinite(self.seg_bandwidth_Bps)) or np.any(self.seg_bandwidth_Bps <= 0):
            raise CcmodInputError("segment bandwidth_Bps must be finite and > 0", source=src)
        # a cost that drops at a segment start makes a bigger message cheaper (allowed, as
        # some measured protocols switch that way, but the run reports it)
        starts = self.min_bytes[1:]
        before = self.seg_latency_s[:-1] + (starts - 1) / self.seg_bandwidth_Bps[:-1]
        after = self.seg_latency_s[1:] + starts / self.seg_bandwidth_Bps[1:]
        self.monotone = bool(np.all(after >= before - 1e-15))
        self._load_loggp(self.extra, src)

    def _load_loggp(self, extra: dict, src: str) -> None:
        """Optional LogGP-like fields: ``overheads``, ``gap_s``, ``intra``, ``fitted_range``."""
        def num(v, what, lo=0.0):
            try:
                x = float(v)
            except (TypeError, ValueError):
                x = float("nan")
            if not (np.isfinite(x) and x >= lo):
                raise CcmodInputError(f"cost model field {what} must be a number >= {lo:g}",
                                      source=src)
            return x
        self.gap_s = num(extra.get("gap_s", 0.0), "gap_s")
        sb = extra.get("stream_bandwidth_Bps")
        self.stream_bandwidth_Bps = None if sb is None else num(sb, "stream_bandwidth_Bps", lo=1.0)
        nb = extra.get("nic_bandwidth_Bps")
        self.nic_bandwidth_Bps = None if nb is None else num(nb, "nic_bandwidth_Bps", lo=1.0)
        ov = extra.get("overheads")
        self.ov_min_bytes = np.zeros(1)
        self.ov = np.zeros((1, 4))   # o_send a + b*n, o_recv a + b*n per segment
        if ov is not None:
            if not isinstance(ov, list) or not ov:
                raise CcmodInputError("cost model 'overheads' must be a list of segments",
                                      source=src, hint="each {min_bytes, o_send_s, o_send_s_per_byte, "
                                                       "o_recv_s, o_recv_s_per_byte}")
            try:
                self.ov_min_bytes = np.array([num(o["min_bytes"], "overheads.min_bytes") for o in ov])
                self.ov = np.array([[num(o.get("o_send_s", 0), "o_send_s"),
                                     num(o.get("o_send_s_per_byte", 0), "o_send_s_per_byte"),
                                     num(o.get("o_recv_s", 0), "o_recv_s"),
                                     num(o.get("o_recv_s_per_byte", 0), "o_recv_s_per_byte")]
                                    for o in ov])
            except (KeyError, TypeError, AttributeError):
                raise CcmodInputError("bad 'overheads' segment in cost model", source=src,
                                      hint="each needs min_bytes") from None
            if self.ov_min_bytes[0] != 0 or np.any(np.diff(self.ov_min_bytes) <= 0):
                raise CcmodInputError("overheads min_bytes must start at 0 and increase", source=src)
        intra = extra.get("intra")
        if intra is not None:
            if not isinstance(intra, dict):
                raise CcmodInputError("cost model 'intra' must be {latency_s, bandwidth_Bps}",
                                      source=src)
            if "latency_s" in intra:
                self.intra_latency_s = num(intra["latency_s"], "intra.latency_s")
            if "bandwidth_Bps" in intra:
                self.intra_bandwidth_Bps = num(intra["bandwidth_Bps"], "intra.bandwidth_Bps",
                                               lo=1.0)
            if "o_send_s" in intra:
                self.intra_o_send_s = num(intra["o_send_s"], "intra.o_send_s")
            if "aggregate_bandwidth_Bps" in intra:
                self.intra_aggregate_bandwidth_Bps = num(
                    intra["aggregate_bandwidth_Bps"], "intra.aggregate_bandwidth_Bps", lo=1.0)
        rng = extra.get("fitted_range")
        if rng is not None:
            try:
                self.fitted_max_bytes = int(rng[1])
            except (TypeError, ValueError, IndexError):
                raise CcmodInputError("cost model 'fitted_range' must be [min_bytes, max_bytes]",
                                      source=src) from None

    def overheads_s(self, nbytes, same_node=None):
        shape = np.shape(nbytes)
        if not self.ov.any() and (same_node is None or not self.intra_o_send_s):
            # no overheads (most fitted models): the zeros below, without the passes and
            # their temporaries (~30 bytes per message at a run's set-up peak)
            return np.zeros(shape), np.zeros(shape)
        n = np.asarray(nbytes, float)
        k = np.clip(np.searchsorted(self.ov_min_bytes, n, side="right") - 1, 0,
                    self.ov_min_bytes.size - 1)
        ov = self.ov                # a column at a time: not every segment's row per message
        o_s = ov[k, 0] + ov[k, 1] * n
        o_r = ov[k, 2] + ov[k, 3] * n
        if same_node is not None:   # fitted on the network path: intra-node has its own
            same = np.asarray(same_node, bool)
            o_s = np.where(same, self.intra_o_send_s, o_s)
            o_r = np.where(same, 0.0, o_r)
        return o_s, o_r

    def _segment(self, nbytes):
        return np.clip(np.searchsorted(self.min_bytes, nbytes, side="right") - 1, 0,
                       self.min_bytes.size - 1)

    def quiet_s(self, nbytes, route_latency_s=0.0, route_bandwidth_Bps=1.0, hops=None):
        nbytes = np.asarray(nbytes, dtype=float)
        k = self._segment(nbytes)
        t = self.seg_latency_s[k] + nbytes / self.seg_bandwidth_Bps[k]
        if hops is not None and self.per_hop_latency_s:
            t = t + self.per_hop_latency_s * (np.asarray(hops, float) - self.ref_hops)
        return np.maximum(t, 0.0)

    def latency_s(self, nbytes, route_latency_s=0.0, route_bandwidth_Bps=1.0, hops=None):
        nbytes = np.asarray(nbytes, dtype=float)
        if self.stream_bandwidth_Bps is not None:
            # bytes flow at the streaming rate; the rest of the quiet time is latency
            q = self.quiet_s(nbytes, route_latency_s, route_bandwidth_Bps, hops)
            return np.maximum(q - nbytes / self.bandwidth_Bps(nbytes), 0.0)
        t = self.seg_latency_s[self._segment(nbytes)]
        if hops is not None and self.per_hop_latency_s:
            t = t + self.per_hop_latency_s * (np.asarray(hops, float) - self.ref_hops)
        return np.maximum(t, 0.0)

    def bandwidth_Bps(self, nbytes):
        """Rate the bytes of a message flow at (the streaming bandwidth when fitted)."""
        b = self.seg_bandwidth_Bps[self._segment(np.asarray(nbytes, float))]
        if self.stream_bandwidth_Bps is not None:
            b = np.maximum(b, self.stream_bandwidth_Bps)
        return b

    def _lat_for_inverse(self, nbytes, total):
        return np.maximum(total - nbytes / self.bandwidth_Bps(nbytes), 0.0)

    def to_dict(self) -> dict:
        d = {"format": "ccmod-cost-model", "version": 1, "kind": "piecewise-linear",
             "segments": [{"min_bytes": int(m), "latency_s": float(a), "bandwidth_Bps": float(b)}
                          for m, a, b in zip(self.min_bytes, self.seg_latency_s,
                                             self.seg_bandwidth_Bps)],
             "ref_hops": self.ref_hops, "per_hop_latency_s": self.per_hop_latency_s}
        if self.packet_size is not None:
            d["packet_size"] = int(self.packet_size)
        if self.source is not None:
            d["source"] = self.source
        d.update({k: v for k, v in self.extra.items() if k not in d})
        return d

    @classmethod
    def from_dict(cls, d: dict, source: str | None = None) -> "PiecewiseLinearCost":
        src = source or "cost model"
        if not isinstance(d, dict) or d.get("format") != "ccmod-cost-model":
            raise CcmodInputError("not a ccmod cost model (missing \"format\": \"ccmod-cost-model\")",
                                  source=src, hint="write one with `ccmod fit`")
        segs = d.get("segments")
        if not isinstance(segs, list) or not segs:
            raise CcmodInputError("cost model has no 'segments' list", source=src)
        try:
            mins = [float(s["min_bytes"]) for s in segs]
            lat = [float(s["latency_s"]) for s in segs]
            bw = [float(s["bandwidth_Bps"]) for s in segs]
            ref_hops = int(d.get("ref_hops", 2))
            per_hop = float(d.get("per_hop_latency_s", 0.0))
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            why = f"missing {exc}" if isinstance(exc, KeyError) else "not a finite number"
            raise CcmodInputError(f"bad segment field in cost model: {why}", source=src,
                                  hint="each segment needs min_bytes, latency_s, bandwidth_Bps")
        known = {"format", "version", "kind", "segments", "ref_hops", "per_hop_latency_s",
                 "packet_size", "source"}
        return cls(mins, lat, bw, ref_hops=ref_hops, per_hop_latency_s=per_hop,
                   packet_size=d.get("packet_size"), source=source or d.get("source"),
                   extra={k: v for k, v in d.items() if k not in known})

    def save(self, path) -> None:
        from ccmod.atomic import atomic_write_text
        atomic_write_text(path, json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n")

    @classmethod
    def load(cls, path) -> "PiecewiseLinearCost":
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as exc:
            raise CcmodInputError(f"cannot read cost model: {exc.strerror}",
                                  source=str(path)) from None
        except UnicodeDecodeError:
            raise CcmodInputError("not a ccmod cost model (binary file, not JSON text)",
                                  source=str(path), hint="write one with `ccmod fit`") from None
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CcmodInputError(f"cost model is not valid JSON: {exc.msg}", source=str(path),
                                  line=exc.lineno) from None
        except (ValueError, RecursionError):
            # e.g. a number of thousands of digits, or nesting thousands deep
            raise CcmodInputError("cost model holds a number or nesting too large to be one",
                                  source=str(path), hint="write one with `ccmod fit`") from None
        return cls.from_dict(d, source=str(path))

    def describe(self) -> str:
        parts = [f"[{int(m)}B..): {a * 1e6:.3g}us + n/{b / 1e6:.4g}MB/s"
                 for m, a, b in zip(self.min_bytes, self.seg_latency_s, self.seg_bandwidth_Bps)]
        return "piecewise-linear " + "; ".join(parts)
