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
    #: per-pair rate cap of a hop that limits each flow but is not shared (SimGrid FATPIPE);
    #: None = no such hop on any route
    flow_cap_Bps: np.ndarray | None = None

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
        self.node_resources = None  # netsys.nic.NodeResources, set by configure_nodes

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
        extra = self.node_resources.nextra if self.node_resources is not None else 0
        return 2 * self.nlinks + extra

    def configure_nodes(self, duplex="none", nic_bandwidth=None, intra: str = "free",
                        copy_bandwidth=None, connection="none") -> None:
        """Append NIC, connection and intra-node copy resources (:mod:`ccmod.netsys.nic`)."""
        from ccmod.netsys.nic import NodeResources, first_hop_capacity
        if duplex == "none" and intra == "free" and connection == "none":
            self.node_resources = None
            return
        if nic_bandwidth is None and (duplex != "none" or connection != "none"):
            nic = [first_hop_capacity(self, n) for n in range(self.nnodes)]
        else:
            nic = 0.0 if nic_bandwidth is None else float(nic_bandwidth)
        self.node_resources = NodeResources(self.nnodes, 2 * self.nlinks, duplex, nic, intra,
                                            copy_bandwidth, connection)

    def set_intra_bandwidth(self, bandwidth_Bps: float, aggregate_Bps=None) -> None:
        """Capacity of the copy resources (no-op without ``intra=shared``)."""
        if self.node_resources is not None:
            self.node_resources.set_intra_bandwidth(bandwidth_Bps, aggregate_Bps)

    def set_ranks(self, nranks: int) -> None:
        """Add the per-rank copy resources (``intra=shared``) for a run of ``nranks``."""
        if self.node_resources is not None:
            self.node_resources.set_ranks(nranks)

    def resource_capacity_Bps(self) -> np.ndarray:
        """Capacity of every resource id 0..nresources-1 (links, then node resources)."""
        cap = self.capacity_Bps.reshape(-1)
        if self.node_resources is None:
            return cap
        return np.concatenate([cap, self.node_resources.capacity_Bps()])

    def resource_name(self, res: int) -> str:
        if res >= 2 * self.nlinks and self.node_resources is not None:
            return self.node_resources.resource_name(int(res) - 2 * self.nlinks)
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
        flat = self.background.reshape(-1)
        if self.nresources > flat.size:   # node resources carry no background load
            flat = np.concatenate([flat, np.zeros(self.nresources - flat.size)])
        return flat

    def compile_routes(self, pairs: np.ndarray) -> RouteTable:
        """Build the CSR route table for the distinct (src_node, dst_node) ``pairs``."""
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        cap = self.resource_capacity_Bps()
        lat = np.concatenate([self.latency_s.reshape(-1), np.zeros(cap.size - 2 * self.nlinks)])
        indptr = np.zeros(len(pairs) + 1, dtype=np.int64)
        if len(pairs) and self.node_resources is None and has_route_rows(self):
            resources = self._route_rows_table(pairs, indptr)
        else:
            resources = self._route_table(pairs, indptr)
        hops = np.diff(indptr)
        # per route: latency summed, capacity's minimum (one numpy pass, not one per pair)
        lat_out = np.zeros(len(pairs))
        bw_out = np.full(len(pairs), np.inf)
        some = hops > 0
        if some.any():
            lat_out[some] = np.add.reduceat(lat[resources], indptr[:-1][some])
            bw_out[some] = np.minimum.reduceat(cap[resources], indptr[:-1][some])
            # numpy sums 8 or more terms pairwise, reduceat in order: the same bits only
            # for shorter routes, so longer ones are summed as before
            for k in np.flatnonzero(hops >= 8).tolist():
                lat_out[k] = lat[resources[indptr[k]:indptr[k + 1]]].sum()
        return RouteTable(pairs=pairs, indptr=indptr, resources=resources,
                          latency_s=lat_out, bandwidth_Bps=bw_out, hops=hops.astype(np.int32))

    def _route_table(self, pairs, indptr):
        """Resources of each pair's route, pair by pair (:meth:`route`); fills ``indptr``."""
        nodes = self.node_resources
        res_list: list[int] = []
        for k, (s, d) in enumerate(pairs.tolist()):
            if not (0 <= s < self.nnodes and 0 <= d < self.nnodes):
                raise self._outside(s, d)
            rs = [2 * link + direction for link, direction in self.route(s, d)] if s != d else []
            if nodes is not None:
                rs = nodes.extend_route(s, d, rs)
            res_list.extend(rs)
            indptr[k + 1] = len(res_list)
        return np.asarray(res_list, dtype=np.int32)

    def _route_rows_table(self, pairs, indptr):
        """The same from :meth:`route_rows` (every pair at once); fills ``indptr``."""
        s, d = pairs[:, 0], pairs[:, 1]
        bad = np.flatnonzero((s < 0) | (s >= self.nnodes) | (d < 0) | (d >= self.nnodes))
        if bad.size:
            raise self._outside(int(s[bad[0]]), int(d[bad[0]]))
        rows = np.asarray(self.route_rows(s, d), np.int64)
        net = s != d                       # a node to itself: no route
        np.cumsum(np.where(net, rows.shape[1], 0), out=indptr[1:])
        return rows[net].reshape(-1).astype(np.int32)

    def _outside(self, s, d):
        return CcmodInputError(f"node {max(s, d)} is outside network '{self.name}' "
                               f"with {self.nnodes} nodes", source="--network",
                               hint="use a bigger network (nodes=...) or --map")

    def describe(self) -> dict:
        """Parameters and derived facts, for summaries and JSON output."""
        d = {"name": self.name, "nodes": self.nnodes, "links": self.nlinks,
             "params": dict(self.values), "cost": self.cost.describe()}
        if self.node_resources is not None:
            nr = self.node_resources
            d["node_resources"] = {"duplex": nr.duplex, "intra": nr.intra,
                                   "nic": nr.n_nic, "copy": nr.n_copy}
        return d


def has_route_rows(net) -> bool:
    """True when ``net`` answers :meth:`route` for many pairs at once (``route_rows``,
    integer resource ids ``2 * link + direction``, one row per pair, the same number of
    hops for every pair) and both are defined by the same class (a subclass that changes
    ``route`` alone is asked pair by pair)."""
    cls = type(net)
    rows = getattr(cls, "route_rows", None)
    if rows is None:
        return False
    owner = lambda name: next(c for c in cls.__mro__ if name in c.__dict__)  # noqa: E731
    return owner("route_rows") is owner("route")
