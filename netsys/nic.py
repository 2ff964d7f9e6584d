"""Node-level resources every network can add: NIC injection/ejection and intra-node copy.

The network contract (:mod:`ccmod.netsys.base`) numbers link directions ``link*2+dir``;
the resources here are appended after them, so a kernel keeps seeing plain integer
resources with a capacity each.

NIC (``duplex=``, a parameter common to every network)
    ``none`` (default)
        No NIC resource: a node's sends and receives only meet on the links (as the
        article's model; on a star the node link's two directions are independent).
    ``full``
        One injection and one ejection resource per node (each ``nic_bandwidth``): a
        node's concurrent sends share the injection side, its receives the ejection side.
    ``half``
        One resource per node carries both its sends and its receives, so a node that
        sends and receives at once gets half the bandwidth each way (a Sendrecv with one
        partner takes 2x a one-way send, as measured on taurus 10 GbE).
    a float X (e.g. ``1.5``)
        One resource per node of X times ``nic_bandwidth`` shared by its sends and
        receives: two-way traffic gets X times the one-way bandwidth in total (alaska IB
        measures X = 1.4-1.7 with osu_bibw / osu_bw). ``duplex=2`` behaves like ``full``
        for a node that sends and receives at once, ``duplex=1`` like ``half``.
    A message from node ``s`` to node ``d`` adds the sending side of ``s`` and the receiving
    side of ``d`` to its route.

Per-rank injection (with any NIC model, from the cost model)
    When the cost model says one pair streams slower than the node's NIC
    (``stream_bandwidth_Bps`` < ``nic_bandwidth_Bps``, fitted from one-pair and multi-pair
    streams: alaska Intel MPI IB, one pair 10.2 GB/s, 2+ pairs 12.4 GB/s), every rank's
    network messages also cross one injection resource of that rank at one pair's rate:
    one rank streaming a window of messages gets one pair's rate, several ranks of a node
    share the NIC.

Connection (``connection=``, a parameter common to every network)
    ``none`` (default)
        No per-connection resource.
    ``half``, or a float X
        One resource per pair of nodes carries both directions of the traffic between
        them (X times ``nic_bandwidth``; ``half`` = 1): one connection (a TCP socket
        progressed by one thread, as Open MPI's TCP transport) alternates between its two
        directions. A Sendrecv with the same partner then takes 2x a one-way send while
        crossed pairs (each node sends to one node and receives from another) are only
        limited by the NIC model: taurus 10 GbE measures 2.0x and 1.4x, which no per-node
        resource can give both (every node has one send and one receive in both tests).
        Allowed up to 2048 nodes (one resource per node pair).

Intra-node copy (``intra=``)
    ``free`` (default)
        Messages between ranks of one node use no resource (a fixed latency + bandwidth).
    ``shared``
        Each node has one memory-copy resource; every message between two ranks of that
        node uses it, and also the receiving rank's own copy resource (the core that copies).
        The rank's resource has the one-pair intra-node bandwidth (the cost model's
        ``intra.bandwidth_Bps`` or ``--intra-bandwidth``); the node's has the aggregate copy
        bandwidth of all its cores together (``copy_bandwidth=``, else the cost model's
        ``intra.aggregate_bandwidth_Bps``, else the one-pair bandwidth). So k pairs get
        ``min(pair bandwidth, aggregate / k)`` each where capacities count (``maxmin``,
        ``ccmod:capacity=ratio``); under the article's rule (BA = 1 / count whatever the
        capacity) k pairs get 1/k each.
"""
from __future__ import annotations

import math

import numpy as np

from ccmod.errors import CcmodInputError

SRC = "--network"
#: most nodes ``connection=`` accepts (it adds nnodes * (nnodes - 1) / 2 resources)
MAX_CONNECTION_NODES = 2048

#: parameters every network accepts in addition to its own (name -> one-line doc)
COMMON_PARAMS = {
    "duplex": "NIC model: none (links only), full (inject + eject per node), half (one "
              "resource per node for sends and receives), or a factor X > 0 (one resource of "
              "X * nic_bandwidth shared by the node's sends and receives)",
    "nic_bandwidth": "NIC bandwidth of one direction in bytes/s (default: the cost model's "
                     "nic_bandwidth_Bps, fitted from multi-pair streams, else the capacity of "
                     "the node's first link)",
    "connection": "per node pair: none, or half / a factor X (one resource of X * "
                  "nic_bandwidth per pair of nodes carrying both directions between them)",
    "intra": "intra-node messages: free (no shared resource) or shared (one memory-copy "
             "resource per node, plus one per receiving rank at the one-pair bandwidth)",
    "copy_bandwidth": "aggregate intra-node copy bandwidth of a node in bytes/s (intra=shared; "
                      "default: the cost model's intra.aggregate_bandwidth_Bps, else the "
                      "one-pair intra-node bandwidth)",
}


def split_common(raw: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Split ``key=value`` strings into (network's own, common NIC/intra ones)."""
    own = {k: v for k, v in raw.items() if k not in COMMON_PARAMS}
    common = {k: v for k, v in raw.items() if k in COMMON_PARAMS}
    return own, common


def parse_common(raw: dict[str, str]) -> dict[str, object]:
    """Typed values of the common parameters (``duplex`` is a str or a float factor)."""
    out: dict[str, object] = {"duplex": "none", "nic_bandwidth": None, "intra": "free",
                              "copy_bandwidth": None, "connection": "none"}
    for key, text in raw.items():
        text = str(text).strip()
        if key in ("duplex", "connection"):
            words = ("none", "full", "half") if key == "duplex" else ("none", "half")
            if text in words:
                out[key] = text
            else:
                try:
                    x = float(text)
                except ValueError:
                    x = float("nan")
                if not (math.isfinite(x) and 0 < x <= 1e3):
                    raise CcmodInputError(f"parameter '{key}={text}' must be "
                                          f"{', '.join(words)} or a factor > 0", source=SRC,
                                          hint=f"e.g. {key}=1.5: both directions together "
                                               "carry 1.5x one direction")
                out[key] = x
        elif key in ("nic_bandwidth", "copy_bandwidth"):
            try:
                x = float(text)
            except ValueError:
                x = float("nan")
            if not (math.isfinite(x) and 1.0 <= x <= 1e18):
                raise CcmodInputError(f"parameter '{key}={text}' must be between 1 and "
                                      "1e18 (bytes/s)", source=SRC)
            out[key] = x
        elif key == "intra":
            if text not in ("free", "shared"):
                raise CcmodInputError(f"parameter 'intra={text}' must be free or shared",
                                      source=SRC)
            out[key] = text
    return out


class NodeResources:
    """The node-level resources of one network (appended after its ``2 * nlinks``).

    Parameters
    ----------
    nnodes : int
    base : int
        First resource id (``2 * nlinks``).
    duplex : {"none", "full", "half"} or float
    nic_bandwidth_Bps : numpy.ndarray
        float64[nnodes] one-direction NIC bandwidth per node.
    intra : {"free", "shared"}
    """

    def __init__(self, nnodes: int, base: int, duplex, nic_bandwidth_Bps, intra: str = "free",
                 copy_bandwidth_Bps: float | None = None, connection="none"):
        self.nnodes = int(nnodes)
        self.copy_bandwidth_Bps = copy_bandwidth_Bps
        self.base = int(base)
        self.duplex = duplex
        self.intra = intra
        nic = np.broadcast_to(np.asarray(nic_bandwidth_Bps, float), (self.nnodes,)).copy()
        if duplex == "none":
            self.n_nic = 0
            self.nic_cap = np.zeros(0)
        elif duplex == "full":
            self.n_nic = 2 * self.nnodes             # node*2 + 0 inject, + 1 eject
            self.nic_cap = np.repeat(nic, 2)
        else:
            factor = 1.0 if duplex == "half" else float(duplex)
            self.n_nic = self.nnodes                 # one shared resource per node
            self.nic_cap = nic * factor
        self.connection = connection
        if connection == "none":
            self.n_conn = 0
            self.conn_cap = np.zeros(0)
        else:
            if self.nnodes > MAX_CONNECTION_NODES:
                raise CcmodInputError(f"connection={connection} needs one resource per node "
                                      f"pair: at most {MAX_CONNECTION_NODES} nodes, the network "
                                      f"has {self.nnodes}", source=SRC)
            factor = 1.0 if connection == "half" else float(connection)
            self.n_conn = self.nnodes * (self.nnodes - 1) // 2
            # pair (a < b): one direction's NIC rate of the lower node, times the factor
            a = np.repeat(np.arange(self.nnodes), np.arange(self.nnodes - 1, -1, -1))
            self.conn_cap = nic[a] * factor
        self.n_copy = self.nnodes if intra == "shared" else 0
        self.copy_cap = np.full(self.n_copy, np.inf)
        self.n_rank = 0                              # receiving-rank copy resources
        self.rank_cap = np.zeros(0)
        #: one pair's streaming rate when it is below the NIC's (None = no per-rank resource)
        self.inject_Bps = None
        self.n_inject = 0                            # sending-rank injection resources

    @property
    def nextra(self) -> int:
        return self.n_nic + self.n_conn + self.n_copy + self.n_rank + self.n_inject

    @property
    def _copy_base(self) -> int:
        return self.base + self.n_nic + self.n_conn

    def set_ranks(self, nranks: int) -> None:
        """One copy resource per rank (``intra=shared`` only): the receiver's core; one
        injection resource per rank when a pair streams slower than the NIC."""
        if self.n_copy:
            self.n_rank = int(nranks)
            fill = self.rank_cap[0] if self.rank_cap.size else np.inf
            self.rank_cap = np.full(self.n_rank, fill)
        if self.inject_Bps is not None and self.n_nic:
            self.n_inject = int(nranks)

    def set_intra_bandwidth(self, bandwidth_Bps: float,
                            aggregate_Bps: float | None = None) -> None:
        """Capacities of the copy resources: one pair's bandwidth per rank, the aggregate
        (``copy_bandwidth=``, else ``aggregate_Bps``, else one pair's) per node."""
        agg = self.copy_bandwidth_Bps or aggregate_Bps or bandwidth_Bps
        self.copy_cap[:] = float(agg)
        self.rank_cap = np.full(self.n_rank, float(bandwidth_Bps))

    def capacity_Bps(self) -> np.ndarray:
        return np.concatenate([self.nic_cap, self.conn_cap, self.copy_cap, self.rank_cap,
                               np.full(self.n_inject, float(self.inject_Bps or 0.0))])

    def rank_inject_resource(self, ranks) -> np.ndarray | None:
        """Resource ids of the given sending ranks' injection resources (None without)."""
        if self.n_inject == 0:
            return None
        return self._copy_base + self.n_copy + self.n_rank + np.asarray(ranks, np.int64)

    def rank_copy_resource(self, ranks) -> np.ndarray | None:
        """Resource ids of the given receiving ranks' copy resources (None without them)."""
        if self.n_rank == 0:
            return None
        return self._copy_base + self.n_copy + np.asarray(ranks, np.int64)

    def send_side(self, node: int) -> int | None:
        if self.n_nic == 0:
            return None
        return self.base + (2 * node if self.duplex == "full" else node)

    def recv_side(self, node: int) -> int | None:
        if self.n_nic == 0:
            return None
        return self.base + (2 * node + 1 if self.duplex == "full" else node)

    def copy_resource(self, node: int) -> int | None:
        if self.n_copy == 0:
            return None
        return self._copy_base + node

    def connection_resource(self, a: int, b: int) -> int | None:
        """The resource of the connection between nodes ``a`` and ``b`` (None without)."""
        if self.n_conn == 0:
            return None
        a, b = min(a, b), max(a, b)
        n = self.nnodes
        return self.base + self.n_nic + a * n - a * (a + 1) // 2 + (b - a - 1)

    def extend_route(self, src: int, dst: int, resources: list[int]) -> list[int]:
        """The route of a message from node ``src`` to ``dst`` with its node resources."""
        if src == dst:
            c = self.copy_resource(src)
            return [] if c is None else [c]
        s, d = self.send_side(src), self.recv_side(dst)
        c = self.connection_resource(src, dst)
        out = list(resources) if c is None else list(resources) + [c]
        if s is None:
            return out
        return [s] + out + [d]

    def resource_name(self, k: int) -> str:
        """Name of extra resource ``k`` (0-based after the link directions)."""
        if k < self.n_nic:
            if self.duplex == "full":
                node, side = divmod(k, 2)
                return f"nic{node}/{'inject' if side == 0 else 'eject'}"
            return f"nic{k}/shared"
        if k < self.n_nic + self.n_conn:
            j, a = k - self.n_nic, 0
            while j >= self.nnodes - 1 - a:
                j -= self.nnodes - 1 - a
                a += 1
            return f"conn{a}-{a + 1 + j}"
        k -= self.n_conn
        if k < self.n_nic + self.n_copy:
            return f"copy{k - self.n_nic}/intra"
        if k < self.n_nic + self.n_copy + self.n_rank:
            return f"rank{k - self.n_nic - self.n_copy}/copy"
        return f"rank{k - self.n_nic - self.n_copy - self.n_rank}/inject"


def first_hop_capacity(network, node: int) -> float:
    """Capacity of the first link a message leaving ``node`` uses (its NIC's link rate)."""
    cap = network.capacity_Bps.reshape(-1)
    for other in (node + 1, node - 1):
        if 0 <= other < network.nnodes:
            route = network.route(node, other)
            if route:
                link, direction = route[0]
                return float(cap[2 * link + direction])
    return float(cap.max()) if cap.size else 1e9
