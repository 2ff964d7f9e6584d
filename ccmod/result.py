"""What a run returns: :class:`RunResult`, the one thing every output reads.

The engine's arrays become a RunResult once (:func:`ccmod.collect.collect`); every sink
(``Sink.write(result, ctx)``), the HTML report, ``--json`` and the Python API read it;
``ccmod report DIR`` loads the same RunResult back from the Parquet tables
(:func:`ccmod.outputs.parquet.load_result`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:   # pandas is imported only when a table is asked for (start-up time)
    import pandas as pd

#: packet size used for packets/s when the network does not define one (Ethernet MTU)
DEFAULT_PACKET_SIZE = 1500
#: the RunResult attributes that are tables (DataFrames)
TABLES = ("ranks", "messages", "links", "rank_states", "link_load", "resources", "signals")


class Derived:
    """A column computed from others when it is first read: ``fn(*args)``.

    ``fn`` is a module-level function (results stay picklable); ``args`` are arrays the
    table holds anyway (its other columns), so a column no one reads takes no memory
    (the messages table's ids, slowdowns and bottleneck names: ~16 bytes per record of a
    run's peak that writes no outputs, at one message per two records). An argument may
    be a Derived too: each is computed once, kept, and shared by the columns using it
    (a column the run left in slot order, put in id order in place)."""

    __slots__ = ("fn", "args", "value")

    def __init__(self, fn, *args):
        self.fn = fn
        self.args = args
        self.value = None

    def __call__(self):
        if self.fn is not None:
            self.value = self.fn(*(a() if isinstance(a, Derived) else a for a in self.args))
            self.fn = self.args = None      # (what it was computed from, let go)
        return self.value


class LazyFrame:
    """A result table held as numpy columns until its DataFrame is first asked for.

    ``ccmod run`` (summary, ``--json``) reads a few columns only: without this every run
    imported pandas (~0.5 s of start-up). ``make(columns)``, a module-level function
    (results stay picklable), builds the DataFrame; by default ``pd.DataFrame(columns)``.
    A column may be :class:`Derived`: computed (and kept) when first read.
    """

    __slots__ = ("columns", "make")

    def __init__(self, columns: dict, make=None):
        self.columns = columns
        self.make = make

    def __len__(self) -> int:
        for v in self.columns.values():
            if not isinstance(v, Derived):
                return len(v)
        return len(self.get(next(iter(self.columns)))) if self.columns else 0

    def get(self, name: str):
        """Column ``name`` (a :class:`Derived` one computed now, and kept)."""
        v = self.columns[name]
        if isinstance(v, Derived):
            v = self.columns[name] = v()
        return v

    def frame(self):
        for name in list(self.columns):
            self.get(name)
        if self.make is not None:
            return self.make(self.columns)
        import pandas as pd
        return pd.DataFrame(self.columns)


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
    #: a streamed run (ccmod.streaming): ``{"messages": n, "bytes": b}`` of the tables
    #: written, which the summary counts instead of the messages table
    streamed: dict | None = None

    def column(self, table: str, name: str) -> np.ndarray:
        """Column ``name`` of table ``table`` as an array, without building a DataFrame."""
        t = self.__dict__.get(table)
        if isinstance(t, LazyFrame):
            return np.asarray(t.get(name))
        return t[name].to_numpy()

    def table_len(self, table: str) -> int:
        """Rows of table ``table`` (0 when absent), without building a DataFrame."""
        t = self.__dict__.get(table)
        return 0 if t is None else len(t)

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
        if self.table_len("resources"):
            return float(np.nanmax(self.column("resources", "background")))
        return 0.0

    @property
    def trace_name(self) -> str:
        """The trace's file name (or ``<workload>`` for an in-memory workload)."""
        t = str(self.options.get("trace") or "<workload>")
        return t if t.startswith("<") else t.replace("\\", "/").rsplit("/", 1)[-1]

    @property
    def messages_count(self) -> int:
        if self.streamed is not None:
            return int(self.streamed["messages"])
        return self.table_len("messages")

    @property
    def records_per_s(self) -> float:
        return self.records / self.wall_s if self.wall_s > 0 else float("inf")

    def busiest_link(self) -> dict | None:
        """The resource with the highest peak contention (ties: most bytes)."""
        if not self.table_len("links"):
            return None
        t = self.__dict__["links"]
        cols = t.columns if isinstance(t, LazyFrame) else {c: t[c].to_numpy() for c in t.columns}
        # highest peak, then most bytes, then lowest resource id (first such row)
        i = int(np.lexsort((cols["resource"], -np.asarray(cols["bytes"]),
                            -np.asarray(cols["peak_active"])))[0])
        return {k: (v[i].item() if isinstance(v[i], np.generic) else v[i])
                for k, v in cols.items()}

    def summary(self) -> dict:
        """A JSON-ready summary (what ``ccmod run --json`` prints)."""
        busiest = self.busiest_link()

        def rk(name):
            return self.column("ranks", name)

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
            "bytes": (int(self.streamed["bytes"]) if self.streamed is not None else
                      int(self.column("messages", "nbytes").sum()) if self.messages_count
                      else 0),
            "busiest_link": None if busiest is None else {
                "name": str(busiest["name"]), "peak_active": int(busiest["peak_active"]),
                "mean_active": float(busiest["mean_active"]), "bytes": int(busiest["bytes"])},
            **({"bounds": self.bounds} if self.bounds is not None else {}),
            "ranks": {
                "compute_s": [float(x) for x in rk("compute_s")],
                "comm_s": [float(x) for x in (rk("send_s") + rk("recv_s"))],
                "wait_s": [float(x) for x in (rk("wait_s") + rk("barrier_s"))],
            },
        }
        if self.measured:
            out["measured"] = self.measured
        return out


def _table_property(name: str) -> property:
    def get(self):
        t = self.__dict__.get(name)
        if isinstance(t, LazyFrame):
            t = self.__dict__[name] = t.frame()
        return t

    def set_(self, value):
        self.__dict__[name] = value

    return property(get, set_, doc=f"The {name} table (a DataFrame; see the class doc).")


for _name in TABLES:
    setattr(RunResult, _name, _table_property(_name))
