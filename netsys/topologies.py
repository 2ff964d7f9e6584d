"""Built-in switched networks: ``star``, ``bus``, ``fattree2`` and the article's ``myrinet16``.

Every class declares its parameters (:class:`netsys.base.Param`) with a documented default,
so a plain name (``--network star``) works on any trace: a ``None`` default is *derived*
from the number of nodes the run needs, which :func:`netsys.networks.make_network` passes
in as ``nodes_needed``.

Link directions follow :mod:`netsys.base`: direction 0 ("up") goes from a node towards the
switches (or leaf → spine), direction 1 ("down") the other way.
"""
from __future__ import annotations

import math

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.guard import check_network_size
from ccmod.netsys.base import Network, Param
from ccmod.netsys.cost import CostModel, PhysicalCost, PiecewiseLinearCost
from ccmod.netsys.registry import NETWORKS

SRC = "--network"

#: node links are built as Python lists; far beyond any traced run, stop before memory runs out
MAX_NODES = 1 << 20

#: integer parameters that count things and must be >= 1
_COUNT_PARAMS = ("nodes", "leaves", "hosts_per_leaf", "spines")

#: (class, parameter values) of the networks whose construction passed the route check in
#: this process (see :meth:`BuiltNetwork.routes_key`); cleared when full
_ROUTES_CHECKED: set = set()
_ROUTES_CHECKED_MAX = 1024
_PLAIN = (int, float, str, bool, type(None))


class BuiltNetwork(Network):
    """A :class:`Network` whose arrays are built from declared parameters.

    Subclasses implement :meth:`build`, which sets ``nnodes``, ``link_names``,
    ``capacity_Bps`` and ``latency_s`` from ``self.values`` (derived defaults are written
    back into ``self.values`` so ``describe()`` shows what was actually used).

    Parameters
    ----------
    nodes_needed : int, optional
        Number of nodes the run needs (max mapped node + 1). Derived defaults (``None``)
        are sized from it; an explicit size smaller than it is an error.
    **values
        Parameter values; missing ones take the declared defaults.
    """

    def __init__(self, nodes_needed: int | None = None, **values):
        unknown = sorted(set(values) - set(self.params))
        if unknown:
            raise CcmodInputError(f"unknown parameter '{unknown[0]}' for network '{self.name}'",
                                  source=SRC, hint="valid: " + ", ".join(sorted(self.params)))
        full = {k: p.default for k, p in self.params.items()}
        full.update(values)
        self.nodes_needed = None if nodes_needed is None else int(nodes_needed)
        self.values = full
        self._check_values()
        self.build()
        self._check_arrays()
        # unreachable nodes, routes through missing links, bad capacities: fail now, in one line
        key = self.routes_key()
        if key is None or key not in _ROUTES_CHECKED:
            from ccmod.netsys.validate import check_network
            check_network(self)
            if key is not None:
                if len(_ROUTES_CHECKED) >= _ROUTES_CHECKED_MAX:
                    _ROUTES_CHECKED.clear()
                _ROUTES_CHECKED.add(key)
        # Network.__init__ calls default_cost(), which may depend on the built arrays
        super().__init__(**self.values)

    #: set True on a class (not inherited) whose arrays and routes are a function of its
    #: parameter values alone (no file read): the route check then runs once per process
    #: for each set of values
    routes_from_values = False

    def routes_key(self):
        """What decides this network's arrays and routes, when that is its class and
        parameter values (``routes_from_values`` on the class itself, plain values): the
        route check (:func:`ccmod.netsys.validate.check_network`, ~1 ms for myrinet16,
        ~40 ms for a 64-node fat tree, at every run) has then passed for an identical
        network already built in this process. None otherwise (checked at every build)."""
        cls = type(self)
        if not cls.__dict__.get("routes_from_values", False):
            return None
        items = sorted(self.values.items())
        if not all(isinstance(v, _PLAIN) or (isinstance(v, tuple) and
                                             all(isinstance(x, _PLAIN) for x in v))
                   for _, v in items):
            return None
        return cls, repr(items)

    # helpers for subclasses -------------------------------------------------------------
    def build(self) -> None:
        raise NotImplementedError

    def fail(self, what: str, hint: str | None = None):
        raise CcmodInputError(what, source=SRC, hint=hint)

    def size_nodes(self, key: str = "nodes") -> int:
        """Resolve a node-count parameter: explicit value, else the run's needs."""
        n = self.values.get(key)
        need = self.nodes_needed
        if n is None:
            if need is None:
                self.fail(f"network '{self.name}' needs {key}=N when no run sizes it")
            n = max(int(need), 1)
            self.values[key] = n
        elif n > MAX_NODES:
            self.fail(f"parameter '{key}={n}' of network '{self.name}' is too large",
                      hint=f"at most {MAX_NODES}")
        elif need is not None and n < need:
            self.fail(f"network '{self.name}' has {key}={n} but the run needs {need} nodes",
                      hint=f"raise {key}= or omit it to size the network from the run")
        check_network_size(self.name, int(n), need, f"{key}={n}", key, SRC)
        return int(n)

    def check_fits(self, nnodes: int, names: str, param: str) -> None:
        """Fail naming ``param`` when an explicit size holds fewer nodes than the run needs."""
        if nnodes > MAX_NODES:
            self.fail(f"network '{self.name}' would have {nnodes} nodes ({names})",
                      hint=f"at most {MAX_NODES}")
        if self.nodes_needed is not None and nnodes < self.nodes_needed:
            self.fail(f"network '{self.name}' has {nnodes} nodes ({names}) but the run needs "
                      f"{self.nodes_needed}",
                      hint=f"raise {param}= or omit it to size the network from the run")
        check_network_size(self.name, int(nnodes), self.nodes_needed, names, param, SRC)

    def _check_values(self) -> None:
        for key, v in self.values.items():
            if v is None or isinstance(v, str):
                continue   # lists (e.g. fattree's level_bandwidth) are checked by their network
            if "bandwidth" in key and not (math.isfinite(v) and 1.0 <= v <= 1e18):
                self.fail(f"parameter '{key}={v}' of network '{self.name}' must be between "
                          "1 and 1e18 (bytes/s)")
            if "latency" in key and not (math.isfinite(v) and 0 <= v <= 1e4):
                self.fail(f"parameter '{key}={v}' of network '{self.name}' must be between "
                          "0 and 1e4 (seconds)")
            if key in _COUNT_PARAMS and v < 1:
                self.fail(f"parameter '{key}={v}' of network '{self.name}' must be >= 1")
            if key in _COUNT_PARAMS and v > MAX_NODES:
                self.fail(f"parameter '{key}={v}' of network '{self.name}' is too large",
                          hint=f"at most {MAX_NODES}")
            if key == "seed" and v < 0:
                self.fail(f"parameter 'seed={v}' of network '{self.name}' must be >= 0")

    def _check_arrays(self) -> None:
        nl = len(self.link_names)
        self.capacity_Bps = np.asarray(self.capacity_Bps, dtype=np.float64).reshape(nl, 2)
        self.latency_s = np.asarray(self.latency_s, dtype=np.float64).reshape(nl, 2)

    def uniform_links(self, nlinks: int, bandwidth_Bps: float, latency_s: float):
        """Capacity and latency arrays with the same value on every link and direction."""
        return np.full((nlinks, 2), float(bandwidth_Bps)), np.full((nlinks, 2), float(latency_s))


# --------------------------------------------------------------------------------------
@NETWORKS.register()
class Star(BuiltNetwork):
    """One non-blocking switch; node ``i`` owns link ``i`` (up: node→switch, down: switch→node).

    Route ``i → j`` is ``[(i, 0), (j, 1)]``: contention only appears when two messages
    leave the same node or enter the same node at the same time.
    """

    routes_from_values = True
    name = "star"
    description = "one non-blocking switch, one full-duplex link per node (10 Gb/s, 1 us)"
    params = {
        "nodes": Param(int, None, "number of nodes (default: the number the run needs)"),
        "bandwidth": Param(float, 1.25e9, "bytes/s per link and direction (10 Gb/s)"),
        "latency": Param(float, 1e-6, "seconds per link"),
    }

    def build(self) -> None:
        n = self.size_nodes()
        self.nnodes = n
        self.link_names = [f"node{i}" for i in range(n)]
        self.vertex_names = [f"node{i}" for i in range(n)] + ["switch"]
        self.link_ends = np.stack([np.arange(n), np.full(n, n)], 1)
        self.capacity_Bps, self.latency_s = self.uniform_links(
            n, self.values["bandwidth"], self.values["latency"])

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        return [(int(src), 0), (int(dst), 1)]

    def route_rows(self, src, dst) -> np.ndarray:
        """:meth:`route` of many pairs at once, as resource ids ``2 * link + direction``."""
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        return np.stack([2 * src, 2 * dst + 1], 1)


@NETWORKS.register()
class Bus(BuiltNetwork):
    """One shared half-duplex medium (classic Ethernet): every message uses link 0, dir 0."""

    routes_from_values = True
    name = "bus"
    description = "one shared link carrying every message (100 Mb/s Ethernet, 50 us)"
    params = {
        "nodes": Param(int, None, "number of nodes (default: the number the run needs)"),
        "bandwidth": Param(float, 1.25e7, "bytes/s of the shared medium (100 Mb/s)"),
        "latency": Param(float, 5e-5, "seconds per message on the medium"),
    }
    # Ethernet frames carry up to 1500 payload bytes; 38 bytes of framing per frame
    # (preamble 8 + header 14 + FCS 4 + inter-frame gap 12).
    packet_size = 1500
    header_bytes = 38
    shared_medium = True   # one resource for both directions: routes are not paths

    def build(self) -> None:
        self.nnodes = self.size_nodes()
        self.link_names = ["bus"]
        self.capacity_Bps, self.latency_s = self.uniform_links(
            1, self.values["bandwidth"], self.values["latency"])

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        # both directions share the medium, so every message occupies the same resource
        return [(0, 0)]


@NETWORKS.register()
class FatTree2(BuiltNetwork):
    """Two-level leaf/spine fat tree with static (destination/source/sum-mod-k) routing.

    Host ``i`` sits on leaf ``i // hosts_per_leaf`` and owns link ``i``. Each leaf–spine
    cable is one link (up = leaf→spine, down = spine→leaf), numbered
    ``H + leaf * spines + spine`` where ``H = leaves * hosts_per_leaf``.
    """

    routes_from_values = True
    name = "fattree2"
    description = "two-level leaf/spine fat tree, static d-mod-k / s-mod-k / sum routing"
    params = {
        "leaves": Param(int, None, "leaf switches (default: ceil(nodes needed / hosts_per_leaf))"),
        "hosts_per_leaf": Param(int, 4, "hosts attached to each leaf switch"),
        "spines": Param(int, 2, "spine switches (each leaf has one cable to every spine)"),
        "bandwidth": Param(float, 1.25e9, "bytes/s of a host link (10 Gb/s)"),
        "latency": Param(float, 1e-6, "seconds per host link"),
        "spine_bandwidth": Param(float, None, "bytes/s of a leaf-spine cable (default: bandwidth)"),
        "spine_latency": Param(float, None, "seconds per leaf-spine cable (default: latency)"),
        "route": Param(str, "dmodk", "spine choice: dmodk = (dst mod hosts_per_leaf) mod spines, "
                       "smodk = (src mod hosts_per_leaf) mod spines, sum = (src+dst) mod spines",
                       choices=("dmodk", "smodk", "sum")),
    }

    def build(self) -> None:
        v = self.values
        hpl, spines = int(v["hosts_per_leaf"]), int(v["spines"])
        if v["leaves"] is None:
            if self.nodes_needed is None:
                self.fail("network 'fattree2' needs leaves=N when no run sizes it")
            v["leaves"] = max(1, -(-int(self.nodes_needed) // hpl))
        leaves = int(v["leaves"])
        self.check_fits(leaves * hpl, f"leaves={leaves} * hosts_per_leaf={hpl}", "leaves")
        if v["spine_bandwidth"] is None:
            v["spine_bandwidth"] = v["bandwidth"]
        if v["spine_latency"] is None:
            v["spine_latency"] = v["latency"]
        self.hosts_per_leaf, self.spines, self.leaves = hpl, spines, leaves
        h = leaves * hpl
        self.nnodes = h
        self.link_names = [f"host{i}" for i in range(h)] + [
            f"leaf{lf}-spine{s}" for lf in range(leaves) for s in range(spines)]
        self.vertex_names = ([f"host{i}" for i in range(h)] + [f"leaf{lf}" for lf in range(leaves)]
                             + [f"spine{s}" for s in range(spines)])
        self.link_ends = np.array([(i, h + i // hpl) for i in range(h)] + [
            (h + lf, h + leaves + s) for lf in range(leaves) for s in range(spines)],
            dtype=np.int64).reshape(-1, 2)
        cap = np.empty((h + leaves * spines, 2))
        lat = np.empty_like(cap)
        cap[:h], lat[:h] = v["bandwidth"], v["latency"]
        cap[h:], lat[h:] = v["spine_bandwidth"], v["spine_latency"]
        self.capacity_Bps, self.latency_s = cap, lat

    def spine_of(self, src: int, dst: int) -> int:
        """The spine a cross-leaf message ``src → dst`` goes through."""
        rule = self.values["route"]
        if rule == "dmodk":
            return (dst % self.hosts_per_leaf) % self.spines
        if rule == "smodk":
            return (src % self.hosts_per_leaf) % self.spines
        return (src + dst) % self.spines

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        src, dst = int(src), int(dst)
        ls, ld = src // self.hosts_per_leaf, dst // self.hosts_per_leaf
        if ls == ld:
            return [(src, 0), (dst, 1)]
        s = self.spine_of(src, dst)
        h = self.nnodes
        return [(src, 0), (h + ls * self.spines + s, 0), (h + ld * self.spines + s, 1), (dst, 1)]


# --------------------------------------------------------------------------------------
# The article's Myrinet (Listing One). Quiet-network cost coefficients, see docs/networks.md:
# segment 0 (one packet, < 2020 data bytes): 23.3 us software overhead + n / 40 MB/s, so
# Tquiet(1024 B) = 23.3 + 25.6 = 48.9 us, the article's value for a 1 KB message;
# segment 1 (>= 2020 B): n / 80 MB/s (half the 160 MB/s nominal, the asymptotic MPI
# throughput of that hardware generation), intercept chosen so the model is continuous.
MYRINET_PACKET = 2020
MYRINET_SEG0_BW = 4.0e7
MYRINET_SEG0_LAT = 48.9e-6 - 1024 / MYRINET_SEG0_BW      # = 23.3e-6 s
MYRINET_SEG1_BW = 8.0e7
MYRINET_SEG1_LAT = MYRINET_SEG0_LAT + MYRINET_PACKET * (1 / MYRINET_SEG0_BW - 1 / MYRINET_SEG1_BW)


def myrinet_article_cost() -> PiecewiseLinearCost:
    """The documented default quiet cost of ``myrinet16`` (Tquiet(1024 B) = 48.9 us).

    ``ref_hops = 2`` (a same-group node→switch→node path) and ``per_hop_latency_s =
    1e-7`` (the article's 100 ns per switch) for the two extra resources of a cross-group
    route.
    """
    return PiecewiseLinearCost([0, MYRINET_PACKET], [MYRINET_SEG0_LAT, MYRINET_SEG1_LAT],
                               [MYRINET_SEG0_BW, MYRINET_SEG1_BW], ref_hops=2,
                               per_hop_latency_s=1e-7, packet_size=MYRINET_PACKET,
                               source="myrinet16 built-in (docs/networks.md)")


def listing_one_s1tos2(seed: int, nproc: int = 16, lperg: int = 4) -> np.ndarray:
    """Listing One's ``RoutingInit``: ``S1toS2[i] = floor(u * LperG) + 1`` (1-based).

    ``u`` comes from ``numpy.random.default_rng(seed).random(nproc)`` instead of C's
    ``rand()``, so the map is reproducible from the seed.
    """
    u = np.random.default_rng(seed).random(nproc)
    return (np.floor(u * lperg).astype(np.int64) + 1)


@NETWORKS.register()
class Myrinet16(BuiltNetwork):
    """The article's 16-node, two-level Myrinet switch (Listing One routing).

    Links 0..15 connect nodes to their first-level switch group (4 nodes per group);
    links 16..31 connect first-level to second-level switches. A message between groups
    goes up through level link ``16 + SrcGr*4 + selsw`` and down through
    ``16 + TrgGr*4 + selsw``, ``selsw = S1toS2[src] - 1`` drawn once from the seed.
    """

    routes_from_values = True
    name = "myrinet16"
    description = "the article's 16-node 2-level Myrinet (1.28 Gb/s, Listing One routing)"
    NPROC, LPERG, LEVEL_LINKS = 16, 4, 16
    params = {
        "nodes": Param(int, 16, "fixed at 16 (the article's cluster)", choices=(16,)),
        "seed": Param(int, 1, "seed of the static first->second level switch map (S1toS2)"),
        "bandwidth": Param(float, 1.6e8, "bytes/s per link and direction (1.28 Gb/s)"),
        "latency": Param(float, 1e-7, "seconds per link (100 ns per switch)"),
        "quiet": Param(str, "article", "default quiet cost: 'article' (piecewise-linear, "
                       "48.9 us at 1 KB) or 'physical' (link latencies + n/bandwidth)",
                       choices=("article", "physical")),
    }
    packet_size = MYRINET_PACKET
    header_bytes = 20

    def build(self) -> None:
        if self.values["nodes"] != self.NPROC:
            self.fail(f"network 'myrinet16' has exactly 16 nodes (nodes={self.values['nodes']})")
        if self.nodes_needed is not None and self.nodes_needed > self.NPROC:
            self.fail(f"network 'myrinet16' has 16 nodes but the run needs {self.nodes_needed}",
                      hint="use star, fattree2 or torus, or --map several ranks per node")
        self.nnodes = self.NPROC
        self.s1tos2 = listing_one_s1tos2(int(self.values["seed"]), self.NPROC, self.LPERG)
        self.link_names = ([f"node{i}" for i in range(self.NPROC)]
                           + [f"level{g}.{k}" for g in range(self.NPROC // self.LPERG)
                              for k in range(self.LPERG)])
        # vertices: 16 nodes, 4 first-level switches (one per group), 4 second-level ones
        ngr = self.NPROC // self.LPERG
        self.vertex_names = ([f"node{i}" for i in range(self.NPROC)]
                             + [f"s1.{g}" for g in range(ngr)] + [f"s2.{k}" for k in range(self.LPERG)])
        self.link_ends = np.array(
            [(i, self.NPROC + i // self.LPERG) for i in range(self.NPROC)]
            + [(self.NPROC + g, self.NPROC + ngr + k) for g in range(ngr) for k in range(self.LPERG)],
            dtype=np.int64)
        self.capacity_Bps, self.latency_s = self.uniform_links(
            self.NPROC + self.LEVEL_LINKS, self.values["bandwidth"], self.values["latency"])

    def default_cost(self) -> CostModel:
        if self.values["quiet"] == "physical":
            return PhysicalCost()
        return myrinet_article_cost()

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        src, dst = int(src), int(dst)
        src_gr, trg_gr = src // self.LPERG, dst // self.LPERG
        out = [(src, 0)]
        if src_gr != trg_gr:
            selsw = int(self.s1tos2[src])  # 1-based, exactly as in Listing One
            out.append((src_gr * self.LPERG + selsw + self.LEVEL_LINKS - 1, 0))
            out.append((selsw + trg_gr * self.LPERG + self.LEVEL_LINKS - 1, 1))
        out.append((dst, 1))
        return out
