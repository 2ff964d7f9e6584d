"""What a run returns: :class:`RunResult` (the Python API's first-class data)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd


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
        background) when recorded.
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
    #: ``--bounds``: best/avg/worst makespans under constant background levels (ccmod.bounds)
    bounds: dict | None = None
    #: measured next to predicted (timestamped traces; see ccmod.trace_notes), else None
    measured: dict | None = None

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
        return {
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
