"""The network contract: what a network plugin compiles to.

A network has ``nnodes`` endpoints and ``nlinks`` links; each link has two directions
(0 = "up"/forward, 1 = "down"/reverse). The engine only sees *resources*: the integer
``link * 2 + direction``. A route is the list of resources a message occupies (CCMOD's
routing array, stored sparsely). Routes are compiled once per (src, dst) node pair into a
CSR :class:`RouteTable`.

Subclasses set ``nnodes``, ``link_names``, ``capacity_Bps`` (shape (nlinks, 2)),
``latency_s`` (shape (nlinks, 2)) and implement :meth:`route`. A link shared by both
directions (a bus) routes every message on direction 0 of that link.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.registry import Param  # noqa: F401 (the network parameter, kept importable here)
from ccmod.netsys.cost import CostModel, PhysicalCost


@dataclass
class RouteTable:
    """Routes of the node pairs a workload uses, in CSR form.

    ``pair_index[(src, dst)]`` gives row ``k``; its resources are
    ``resources[indptr[k]:indptr[k+1]]``. ``latency_s[k]``/``bandwidth_Bps[k]`` are the
    summed latency and bottleneck capacity of the route; ``hops[k]`` its length.
    """

    pairs: np.ndarray          # int64[k, 2] (src_node, dst_node)
    indptr: np.ndarray         # int64[k+1]
    resources: np.ndarray      # int32[nnz]
    latency_s: np.ndarray      # float64[k]
    bandwidth_Bps: np.ndarray  # float64[k]
    hops: np.ndarray           # int32[k]

    def lookup(self, src, dst) -> np.ndarray:
        """Row indices of the given (src, dst) node arrays (all must be present)."""
        key = np.asarray(src, np.int64) * (1 << 32) + np.asarray(dst, np.int64)
        table = self.pairs[:, 0].astype(np.int64) * (1 << 32) + self.pairs[:, 1]
        order = np.argsort(table)
        pos = np.searchsorted(table[order], key)
        return order[np.clip(pos, 0, max(len(order) - 1, 0))]


class Network:
    """Base class of every network model (netsys plugin).

    Class attributes
    ----------------
    name : str              registry name
    description : str       one line shown by ``ccmod networks``
    params : dict[str, Param]  declared parameters with documented defaults
    """

    name = "network"
    description = ""
    params: dict[str, Param] = {}

    # filled by subclasses ---------------------------------------------------------------
    nnodes: int
    link_names: list[str]
    capacity_Bps: np.ndarray   # float64[nlinks, 2]
    latency_s: np.ndarray      # float64[nlinks, 2]
    packet_size: int | None = None
    header_bytes: int = 0

    def __init__(self, **values):
        self.values = values
        self.cost: CostModel = self.default_cost()
        self.background = None  # float64[nlinks, 2], set by set_background

    # plugin API -------------------------------------------------------------------------
    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        """(link, direction) pairs from node ``src`` to node ``dst`` (src != dst)."""
        raise NotImplementedError

    def default_cost(self) -> CostModel:
        """The quiet cost used when no ``--cost`` file is given."""
        return PhysicalCost()

    # derived ----------------------------------------------------------------------------
    @property
    def nlinks(self) -> int:
        return len(self.link_names)

    @property
    def nresources(self) -> int:
        return 2 * self.nlinks

    def resource_name(self, res: int) -> str:
        link, d = divmod(int(res), 2)
        return f"{self.link_names[link]}/{'up' if d == 0 else 'down'}"

    def set_cost(self, cost: CostModel) -> None:
        self.cost = cost

    def set_background(self, load) -> None:
        """Constant background load: a fraction in [0, 1) for all links or an (nlinks, 2) array."""
        arr = np.broadcast_to(np.asarray(load, dtype=float), (self.nlinks, 2)).copy()
        if np.any(~np.isfinite(arr)) or np.any(arr < 0) or np.any(arr >= 1):
            raise CcmodInputError("background load must be a fraction in [0, 1)",
                                  source="--background")
        self.background = arr

    def background_flat(self) -> np.ndarray:
        if self.background is None:
            return np.zeros(self.nresources)
        return self.background.reshape(-1)

    def compile_routes(self, pairs: np.ndarray) -> RouteTable:
        """Build the CSR route table for the distinct (src_node, dst_node) ``pairs``."""
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        cap = self.capacity_Bps.reshape(-1)
        lat = self.latency_s.reshape(-1)
        indptr = np.zeros(len(pairs) + 1, dtype=np.int64)
        res_list: list[int] = []
        lat_out = np.zeros(len(pairs))
        bw_out = np.full(len(pairs), np.inf)
        for k, (s, d) in enumerate(pairs):
            s, d = int(s), int(d)
            if not (0 <= s < self.nnodes and 0 <= d < self.nnodes):
                raise CcmodInputError(f"node {max(s, d)} is outside network '{self.name}' "
                                      f"with {self.nnodes} nodes", source="--network",
                                      hint="use a bigger network (nodes=...) or --map")
            if s != d:
                rs = [2 * link + direction for link, direction in self.route(s, d)]
                res_list.extend(rs)
                if rs:
                    lat_out[k] = lat[rs].sum()
                    bw_out[k] = cap[rs].min()
            indptr[k + 1] = len(res_list)
        return RouteTable(pairs=pairs, indptr=indptr,
                          resources=np.asarray(res_list, dtype=np.int32),
                          latency_s=lat_out, bandwidth_Bps=bw_out,
                          hops=np.diff(indptr).astype(np.int32))

    def describe(self) -> dict:
        """Parameters and derived facts, for summaries and JSON output."""
        return {"name": self.name, "nodes": self.nnodes, "links": self.nlinks,
                "params": dict(self.values), "cost": self.cost.describe()}
