"""What a run returns: :class:`RunResult`, the one thing every output reads.

The engine's arrays become a RunResult once (:func:`ccmod.collect.collect`); every sink
(``Sink.write(result, ctx)``), the HTML report, ``--json`` and the Python API read it;
``ccmod report DIR`` loads the same RunResult back from the Parquet tables
(:func:`ccmod.outputs.parquet.load_result`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

#: packet size used for packets/s when the network does not define one (Ethernet MTU)
DEFAULT_PACKET_SIZE = 1500


@dataclass
class Routes:
    """Per-message routes as CSR over resource ids (compiled once, by the engine).

    Message ``i`` uses resources ``res[ptr[i]:ptr[i + 1]]`` (empty: intra-node).
    """

    ptr: np.ndarray
    res: np.ndarray

    def __len__(self) -> int:
        return max(len(self.ptr) - 1, 0)


@dataclass
class RunResult:
    """Result of one evaluation.

    Attributes
    ----------
    makespan_s : float
        Time at which the last rank finished.
    rank_finish_s : ndarray
        Finish time of each rank.
    ranks : DataFrame
        One row per rank: rank, node, finish_s, compute_s, send_s, recv_s, wait_s,
        barrier_s (time spent in each state; blocked states count as communication/wait),
        handler_s (active-message handler time run on the rank; it is not counted in the
        state columns, so all of them add up to at most finish_s; in ``rank_states`` a
        compute interval that a handler interrupted still shows as one compute interval).
    messages : DataFrame
        One row per message: msg_id, src, dst, tag, nbytes, t_post_s (first side posted),
        t_post_send_s, t_post_recv_s, t_start_s, t_end_s,
        quiet_s, slowdown (actual transfer time / quiet time), bottleneck (the resource
        that limited the message when it finished; -1 for intra-node messages),
        bottleneck_name, hops.
    links : DataFrame
        One row per used (link, direction) resource: resource, name, messages, bytes,
        peak_active (peak contention), mean_active (time-weighted over the makespan),
        busy_s (time with >= 1 message), background.
    rank_states : DataFrame or None
        Intervals (rank, state, t_start_s, t_end_s) when recorded.
    link_load : DataFrame or None
        Piecewise-constant contention intervals (resource, t_start_s, t_end_s, active,
        background, utilisation) when recorded. ``utilisation`` is the fraction of
        capacity used by the application (see :mod:`ccmod.linkrate`).
    resources : DataFrame or None
        The link table: one row per resource id of the network (resource, name,
        capacity_Bps, background), used or not.
    routes : Routes or None
        The compiled route of every message (row order of ``messages``).
    signals : DataFrame or None
        The evaluation signal trace (t_s, signal, args) when a sink asked for it.
    measured : dict or None
        Measured values of the traced run (e.g. its real makespan), when the trace
        carries them; the report shows them beside the prediction.
    meta : dict
        nranks, packet_size_bytes, packet_size_source ("network" or "default").
    records, messages_count : int
    wall_s : float
        Engine wall-clock time (compile + evaluate, not reading).
    network : dict
        ``Network.describe()``.
    sharing, send_mode : str
    options : dict
    """

    makespan_s: float
    rank_finish_s: np.ndarray
    ranks: pd.DataFrame
    messages: pd.DataFrame
    links: pd.DataFrame
    records: int
    wall_s: float
    network: dict
    sharing: str
    send_mode: str
    rank_states: pd.DataFrame | None = None
    link_load: pd.DataFrame | None = None
    options: dict = field(default_factory=dict)
    events: int = 0
    resources: pd.DataFrame | None = None
    routes: Routes | None = None
    signals: pd.DataFrame | None = None
    measured: dict | None = None
    meta: dict = field(default_factory=dict)
    #: ``--bounds``: best/avg/worst makespans under constant background levels (ccmod.bounds)
    bounds: dict | None = None
    #: measured next to predicted (timestamped traces; see ccmod.trace_notes), else None
    measured: dict | None = None

    @property
    def nranks(self) -> int:
        n = self.meta.get("nranks")
        return int(n) if n is not None else int(len(self.rank_finish_s))

    @property
    def packet_size(self) -> int:
        return int(self.meta.get("packet_size_bytes") or DEFAULT_PACKET_SIZE)

    @property
    def background_level(self) -> float:
        bg = self.options.get("background")
        if bg is not None:
            return float(bg)
        if self.resources is not None and len(self.resources):
            return float(self.resources["background"].max())
        return 0.0

    @property
    def trace_name(self) -> str:
        """The trace's file name (or ``<workload>`` for an in-memory workload)."""
        t = str(self.options.get("trace") or "<workload>")
        return t if t.startswith("<") else t.replace("\\", "/").rsplit("/", 1)[-1]

    @property
    def messages_count(self) -> int:
        return int(len(self.messages))

    @property
    def records_per_s(self) -> float:
        return self.records / self.wall_s if self.wall_s > 0 else float("inf")

    def busiest_link(self) -> dict | None:
        """The resource with the highest peak contention (ties: most bytes)."""
        if self.links is None or len(self.links) == 0:
            return None
        df = self.links.sort_values(["peak_active", "bytes", "resource"],
                                    ascending=[False, False, True], kind="mergesort")
        return df.iloc[0].to_dict()

    def summary(self) -> dict:
        """A JSON-ready summary (what ``ccmod run --json`` prints)."""
        busiest = self.busiest_link()
        out = {
            "makespan_s": float(self.makespan_s),
            "rank_finish_s": [float(x) for x in self.rank_finish_s],
            "messages": self.messages_count,
            "records": int(self.records),
            "events": int(self.events),
            "wall_s": float(self.wall_s),
            "records_per_s": float(self.records_per_s),
            "network": self.network,
            "sharing": self.sharing,
            "send_mode": self.send_mode,
            "eager_limit_bytes": int(self.options.get("eager_limit_bytes", 0) or 0),
            "notes": list(self.options.get("notes", [])),
            "compute": dict(self.options.get("compute", {"unit": "seconds"})),
            "nothing_to_predict": self.options.get("nothing_to_predict"),
            "measured": self.options.get("measured"),
            "bytes": int(self.messages["nbytes"].sum()) if len(self.messages) else 0,
            "busiest_link": None if busiest is None else {
                "name": str(busiest["name"]), "peak_active": int(busiest["peak_active"]),
                "mean_active": float(busiest["mean_active"]), "bytes": int(busiest["bytes"])},
            **({"bounds": self.bounds} if self.bounds is not None else {}),
            "ranks": {
                "compute_s": [float(x) for x in self.ranks["compute_s"]],
                "comm_s": [float(x) for x in (self.ranks["send_s"] + self.ranks["recv_s"])],
                "wait_s": [float(x) for x in (self.ranks["wait_s"] + self.ranks["barrier_s"])],
            },
        }
        if self.measured:
            out["measured"] = self.measured
        return out
