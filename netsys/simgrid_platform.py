"""``simgrid``: a network read from a SimGrid platform XML file (``file=platform.xml``).

What is read (SimGrid platform DTD 4.x):

* ``<host id=...>``: the nodes, in declaration order (node i runs rank i with the default
  mapping); ``<router>``: forwarding vertices.
* ``<link id= bandwidth= latency= [sharing_policy=]>``: units as SimGrid writes them
  (``125MBps``, ``10Gbps``, ``1.5GiBps``; ``50us``, ``1.2ms``; a bare number is B/s or s).
  ``SPLITDUPLEX`` links have two directions (``link_ctn direction="UP|DOWN"``), ``SHARED``
  (the default) links one capacity for both directions; ``FATPIPE`` links are modelled as
  shared (ccmod has no per-flow fat pipes; a note says so).
* ``<route src dst [symmetrical=YES|NO]>`` with ``<link_ctn id [direction]>``: with
  ``routing="Full"`` these are the routes; with ``Floyd``/``Dijkstra``/``DijkstraCache``
  they are edges and routes are the paths with the fewest edges (ties: declaration order).
  A symmetrical route is used backwards with UP and DOWN swapped.
* ``<cluster id prefix radical suffix bw lat [sharing_policy] [bb_bw bb_lat
  [bb_sharing_policy]]>``: hosts ``prefix+i+suffix``; host i has a private link (two
  directions unless ``sharing_policy=SHARED``) and the route i -> j is ``l_i UP ;
  backbone ; l_j DOWN`` (no backbone: ``l_i UP ; l_j DOWN``), as SimGrid's cluster zone.

Zones nest: the hosts and links of every zone are read; routes between zones
(``zoneRoute``/``ASroute`` with gateways) are not, so a platform whose hosts talk across
zones is refused with a hint. ccmod's links carry all the messages that cross them
(contention), which is SimGrid's SHARED / SPLITDUPLEX behaviour.
"""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections import deque
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.guard import check_network_size, excerpt
from ccmod.netsys.base import Param
from ccmod.netsys.registry import NETWORKS
from ccmod.netsys.topologies import MAX_NODES, BuiltNetwork

_BW = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2.0 ** 10,
       "Mi": 2.0 ** 20, "Gi": 2.0 ** 30, "Ti": 2.0 ** 40}
_LAT = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60.0,
        "h": 3600.0, "d": 86400.0, "w": 604800.0}
_NUM = r"([0-9.]+(?:[eE][-+]?[0-9]+)?)"


def parse_bandwidth(text: str) -> float:
    """SimGrid bandwidth (``125MBps``, ``10Gbps``, ``1e9``) in bytes/s; NaN if malformed."""
    m = re.fullmatch(_NUM + r"\s*(Ki|Mi|Gi|Ti|k|K|M|G|T)?(Bps|bps)?", str(text).strip())
    if m is None:
        return math.nan
    v = float(m.group(1)) * _BW[m.group(2) or ""]
    return v / 8.0 if m.group(3) == "bps" else v


def parse_latency(text: str) -> float:
    """SimGrid latency (``50us``, ``1.2ms``, ``0``) in seconds; NaN if malformed."""
    m = re.fullmatch(_NUM + r"\s*(ms|us|ns|ps|s|m|h|d|w)?", str(text).strip())
    return math.nan if m is None else float(m.group(1)) * _LAT[m.group(2) or ""]


def _radical(text: str) -> list[int]:
    out = []
    for part in str(text).split(","):
        a, _, b = part.strip().partition("-")
        lo, hi = int(a), int(b or a)
        # a radical declares hosts: bound it before building the list (issue 14)
        if hi - lo + 1 + len(out) > MAX_NODES:
            raise ValueError(f"radical declares more than {MAX_NODES} hosts")
        out.extend(range(lo, hi + 1))
    return out


@NETWORKS.register()
class SimgridPlatform(BuiltNetwork):
    """A SimGrid platform XML file (``file=PATH``): hosts, links, routes, clusters."""

    name = "simgrid"
    description = "SimGrid platform XML (file=PATH): hosts, links, Full/Floyd routes, <cluster>"
    params = {
        "file": Param(str, None, "SimGrid platform XML file (required)"),
    }

    def build(self) -> None:
        try:
            self._build()
        except (ValueError, OverflowError, TypeError, KeyError, RecursionError) as exc:
            # a malformed attribute (bad integer, radical, unit): one line naming the file
            raise CcmodInputError(f"malformed platform XML: {excerpt(exc, 100)}",
                                  source=str(self.values.get("file")),
                                  hint="see SimGrid's platform format") from None
        check_network_size(self.name, int(self.nnodes), self.nodes_needed,
                           f"file {excerpt(Path(str(self.values.get('file'))).name)}", "file",
                           str(self.values.get("file")))

    def _build(self) -> None:
        path = self.values["file"]
        if not path:
            self.fail("network 'simgrid' needs file=PATH",
                      hint="e.g. --network simgrid:file=platform.xml")
        self.path = str(path)
        try:
            root = ET.parse(self.path).getroot()
        except FileNotFoundError:
            raise CcmodInputError("SimGrid platform file not found", source=self.path) from None
        except (ET.ParseError, OSError) as exc:
            raise CcmodInputError(f"not a readable platform XML: {excerpt(exc, 100)}",
                                  source=self.path) from None
        if root.tag != "platform":
            raise CcmodInputError(f"root element is <{root.tag}>, not <platform>",
                                  source=self.path)
        self.vertex, self.is_node = {}, []
        self.link_id, self.link_names, cap, lat = {}, [], [], []
        self.shared: list[bool] = []
        self.edges: list[tuple[int, int, list, bool]] = []   # src, dst, hops, symmetrical
        self.full_routes: dict[tuple[int, int], list] = {}
        self.fatpipes = 0

        def add_vertex(name, node):
            if name in self.vertex:
                self._err(f"'{name}' declared twice")
            self.vertex[name] = len(self.is_node)
            self.is_node.append(node)

        def add_link(name, bw, la, policy):
            b, l_ = parse_bandwidth(bw), parse_latency(la or "0")
            if not (b > 0 and math.isfinite(b)) or not (l_ >= 0 and math.isfinite(l_)):
                self._err(f"link '{name}': bad bandwidth '{bw}' or latency '{la}'",
                          hint="SimGrid units: 125MBps, 10Gbps; 50us, 1ms")
            policy = (policy or "SHARED").upper()
            self.fatpipes += policy == "FATPIPE"
            self.link_id[name] = len(self.link_names)
            self.link_names.append(name)
            cap.append(b)
            lat.append(l_)
            self.shared.append(policy != "SPLITDUPLEX")
            return self.link_id[name]

        hosts_first = []
        for el in root.iter():
            tag = el.tag
            if tag == "host":
                hosts_first.append(el.get("id"))
            elif tag == "cluster":
                ids = _radical(el.get("radical", "0"))
                hosts_first.extend(f"{el.get('prefix', '')}{i}{el.get('suffix', '')}"
                                   for i in ids)
        for h in hosts_first:
            add_vertex(h, True)
        if not hosts_first:
            self._err("the platform declares no <host> or <cluster>")
        if len(hosts_first) > MAX_NODES:
            self._err(f"too many hosts ({len(hosts_first)}; at most {MAX_NODES})")
        for el in root.iter():
            if el.tag == "router":
                add_vertex(el.get("id"), False)
            elif el.tag == "link":
                add_link(el.get("id"), el.get("bandwidth"), el.get("latency"),
                         el.get("sharing_policy"))
            elif el.tag in ("zoneRoute", "ASroute", "bypassZoneRoute", "bypassASroute"):
                self._err(f"<{el.tag}> (routes between zones) is not supported",
                          hint="flatten the platform into one zone with Full or Floyd "
                               "routing, or use <cluster>")
        for el in root.iter():
            if el.tag == "cluster":
                self._cluster(el, add_link)
        for zone in root.iter():
            if zone.tag not in ("zone", "AS"):
                continue
            full = (zone.get("routing") or "Full") == "Full"
            for rt in zone.findall("route"):
                self._route(rt, full)
        self.nnodes = len(hosts_first)
        self.capacity_Bps = np.repeat(np.asarray(cap, float)[:, None], 2, axis=1)
        self.latency_s = np.repeat(np.asarray(lat, float)[:, None], 2, axis=1)
        self.link_ends = None     # SimGrid links name no endpoints (routes list them)
        self.vertex_names = list(self.vertex)
        if self.fatpipes:
            self.notes = [f"{self.fatpipes} FATPIPE link(s) modelled as shared links"]
        self._trees: dict[int, np.ndarray] = {}

    def _err(self, what, hint=None):
        raise CcmodInputError(what, source=self.path, hint=hint)

    def _hop(self, lid: int, up: bool) -> tuple[int, int]:
        return (lid, 0 if (up or self.shared[lid]) else 1)

    def _cluster(self, el, add_link) -> None:
        ids = _radical(el.get("radical", "0"))
        prefix, suffix = el.get("prefix", ""), el.get("suffix", "")
        cid = el.get("id", "cluster")
        priv = [add_link(f"{cid}_link_{i}", el.get("bw"), el.get("lat"),
                         el.get("sharing_policy", "SPLITDUPLEX")) for i in ids]
        bb = None
        if el.get("bb_bw"):
            bb = add_link(f"{cid}_backbone", el.get("bb_bw"), el.get("bb_lat"),
                          el.get("bb_sharing_policy", "SHARED"))
        names = [f"{prefix}{i}{suffix}" for i in ids]
        for a, na in enumerate(names):
            for b, nb in enumerate(names):
                if a != b:
                    hops = [self._hop(priv[a], True)] + \
                        ([self._hop(bb, True)] if bb is not None else []) + \
                        [self._hop(priv[b], False)]
                    self.full_routes[(self.vertex[na], self.vertex[nb])] = hops

    def _route(self, rt, full: bool) -> None:
        src, dst = rt.get("src"), rt.get("dst")
        for v in (src, dst):
            if v not in self.vertex:
                self._err(f"route names '{v}', which is not a host or router of the platform")
        hops = []
        for ctn in rt.findall("link_ctn"):
            lid = self.link_id.get(ctn.get("id"))
            if lid is None:
                self._err(f"route {src} -> {dst} uses unknown link '{ctn.get('id')}'")
            hops.append(self._hop(lid, (ctn.get("direction") or "UP").upper() != "DOWN"))
        sym = (rt.get("symmetrical") or "YES").upper() != "NO"
        s, d = self.vertex[src], self.vertex[dst]
        if s == d:
            return       # loopback: ccmod's intra-node path
        if full:
            self.full_routes[(s, d)] = hops
            if sym:
                self.full_routes.setdefault((d, s), self._reverse(hops))
        else:
            self.edges.append((s, d, hops, sym))

    def _reverse(self, hops):
        return [(lid, d if self.shared[lid] else 1 - d) for lid, d in reversed(hops)]

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        src, dst = int(src), int(dst)
        hops = self.full_routes.get((src, dst))
        if hops is not None:
            return list(hops)
        path = self._bfs(src, dst)
        if path is None:
            self._err(f"no route from host {self.vertex_names[src]} to "
                      f"{self.vertex_names[dst]}", hint="add a <route> (or use --map)")
        return path

    def _bfs(self, src, dst):
        adj: dict[int, list] = {}
        for s, d, hops, sym in self.edges:
            adj.setdefault(s, []).append((d, hops))
            if sym:
                adj.setdefault(d, []).append((s, self._reverse(hops)))
        prev = {src: None}
        q = deque([src])
        while q:
            u = q.popleft()
            if u == dst:
                break
            for v, hops in adj.get(u, ()):
                if v not in prev:
                    prev[v] = (u, hops)
                    q.append(v)
        if dst not in prev:
            return None
        out, v = [], dst
        while prev[v] is not None:
            u, hops = prev[v]
            out = list(hops) + out
            v = u
        return out
