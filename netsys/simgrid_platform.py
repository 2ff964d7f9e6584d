"""``simgrid``: a network read from a SimGrid platform XML file (``file=platform.xml``).

What is read (SimGrid platform DTD 4.x):

* ``<host id=...>``: the nodes, in declaration order (node i runs rank i with the default
  mapping); ``<router>``: forwarding vertices.
* ``<link id= bandwidth= latency= [sharing_policy=]>``: units as SimGrid writes them
  (``125MBps``, ``10Gbps``, ``1.5GiBps``; ``50us``, ``1.2ms``; a bare number is B/s or s).
  ``SPLITDUPLEX`` (old name ``FULLDUPLEX``) links have two directions (``link_ctn
  direction="UP|DOWN"``, or the names ``ID_UP``/``ID_DOWN``), ``SHARED`` (the default)
  links one capacity for both directions, ``FATPIPE`` links no sharing (below).
* ``<route src dst [symmetrical=YES|NO]>`` with ``<link_ctn id [direction]>``: with
  ``routing="Full"`` these are the routes; with ``Floyd``/``Dijkstra``/``DijkstraCache``
  they are edges and routes are the paths with the fewest edges (ties: declaration order).
  A symmetrical route is used backwards with UP and DOWN swapped.
* ``<cluster id prefix radical suffix bw lat [sharing_policy] [bb_bw bb_lat
  [bb_sharing_policy]] [limiter_link] [router_id]>``: hosts ``prefix+i+suffix``; host i
  has a private link (two directions unless ``sharing_policy=SHARED``) and the route
  i -> j is ``[limiter_i] ; l_i UP ; backbone ; l_j DOWN ; [limiter_j]`` (no backbone:
  without it), as SimGrid's star zone; its router (``router_id``, by default
  ``prefix+id+"_router"+suffix``) is the cluster's gateway, reached over ``l_i ; backbone``.

Zones nest (``<zone>``/``<AS>``, ``<cluster>``); routes between zones
(``zoneRoute``/``ASroute`` with ``gw_src``/``gw_dst``) are resolved as SimGrid does
(:mod:`ccmod.netsys.simgrid_zones`), as are ``routing="Cluster"`` zones with
``<host_link>`` and ``<backbone>``. ccmod's links carry all the messages that cross them
(contention), which is SimGrid's SHARED / SPLITDUPLEX behaviour; a ``FATPIPE`` link
gives every flow its full bandwidth, so it counts in each message's latency and
bottleneck bandwidth but is not a contended resource (it does not appear in
:meth:`SimgridPlatform.route` nor in the link table's traffic). Refused with one line:
bypass routes, ``<peer>``/Vivaldi, ``<cabinet>``, cluster topologies (torus, fat tree,
dragonfly) and Wi-Fi zones.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.guard import check_network_size, excerpt
from ccmod.netsys.base import Param
from ccmod.netsys.registry import NETWORKS
from ccmod.netsys.simgrid_zones import ROUTED, ZoneTree
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
    """A SimGrid platform XML file (``file=PATH``): hosts, links, zones, routes, clusters."""

    name = "simgrid"
    description = ("SimGrid platform XML (file=PATH): hosts, links, Full/Floyd/Dijkstra/"
                   "Cluster zones, zone routes, <cluster>")
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
        if self.nodes_needed is not None and int(self.nnodes) < self.nodes_needed:
            raise CcmodInputError(f"the platform has {int(self.nnodes)} hosts but the run "
                                  f"needs {self.nodes_needed}",
                                  source=str(self.values.get("file")),
                                  hint="add hosts or place several ranks per host with --map")
        check_network_size(self.name, int(self.nnodes), self.nodes_needed,
                           f"file {excerpt(Path(str(self.values.get('file'))).name)}", "file",
                           str(self.values.get("file")))

    def _build(self) -> None:
        path = self.values["file"]
        if not path:
            self.fail("network 'simgrid' needs file=PATH",
                      hint="e.g. --network simgrid:file=platform.xml")
        self.path = str(path)
        # imported here: every run registers this network, few read a platform file
        # (xml.etree costs ~0.01 s of each run's start-up)
        import xml.etree.ElementTree as ET
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
        self.vertex = {}
        self.link_id, self.link_names, self._cap, self._lat = {}, [], [], []
        self.shared: list[bool] = []
        self.fatpipe: list[bool] = []
        self.tree = ZoneTree(self._reverse, self._err)
        hosts = []
        for el in root.iter():
            if el.tag == "host":
                hosts.append(el.get("id"))
            elif el.tag == "cluster":
                hosts.extend(f"{el.get('prefix', '')}{i}{el.get('suffix', '')}"
                             for i in _radical(el.get("radical", "0")))
        if not hosts:
            self._err("the platform declares no <host> or <cluster>")
        if len(hosts) > MAX_NODES:
            self._err(f"too many hosts ({len(hosts)}; at most {MAX_NODES})")
        for h in hosts:
            self._vertex(h)
        self.host_names = hosts
        self._pending = []          # routes, once every link and zone is known
        self._host_links = []       # (zone, host, up hop, down hop) of Cluster zones
        self._walk(root, self.tree.add_zone("(platform)", "Full", None))
        for zone, el in self._pending:
            self._route(zone, el)
        for zone, host, up, down in self._host_links:
            zone.up[host], zone.down[host] = [up], [down]
        for zone in self.tree.zones.values():
            bb = getattr(zone, "backbone", None)
            if zone.routing == "Cluster" and bb is not None:
                for v in zone.up:
                    zone.up[v] = zone.up[v] + [(bb, 0)]
                    zone.down[v] = [(bb, 0)] + zone.down[v]
        self.nnodes = len(hosts)
        self.capacity_Bps = np.repeat(np.asarray(self._cap, float)[:, None], 2, axis=1)
        self.latency_s = np.repeat(np.asarray(self._lat, float)[:, None], 2, axis=1)
        self.link_ends = None     # SimGrid links name no endpoints (routes list them)
        self.vertex_names = list(self.vertex)
        nfat = sum(self.fatpipe)
        if nfat:
            self.notes = [f"{nfat} FATPIPE link(s): each message gets their full bandwidth "
                          "(latency and bandwidth count, no contention)"]

    # -- platform walk ------------------------------------------------------------------
    def _walk(self, el, zone) -> None:
        for child in el:
            tag = child.tag
            if tag in ("zone", "AS"):
                routing = child.get("routing") or "Full"
                if routing not in ROUTED + ("Cluster", "None"):
                    self._err(f"zone '{child.get('id')}' has routing=\"{routing}\", which "
                              "ccmod does not read",
                              hint="supported: Full, Floyd, Dijkstra, DijkstraCache, "
                                   "Cluster, None")
                self._walk(child, self.tree.add_zone(child.get("id"), routing, zone))
            elif tag == "cluster":
                self._cluster(child, zone)
            elif tag in ("host", "router"):
                if tag == "router":
                    self._vertex(child.get("id"))
                self.tree.add_point(child.get("id"), zone)
                if zone.routing == "Cluster":   # reached over the backbone alone, until
                    zone.up[child.get("id")] = []       # a <host_link> says more
                    zone.down[child.get("id")] = []
            elif tag == "link":
                self._link(child.get("id"), child.get("bandwidth"), child.get("latency"),
                           child.get("sharing_policy"))
            elif tag == "backbone":
                zone.backbone = self._link(child.get("id"), child.get("bandwidth"),
                                           child.get("latency"), "SHARED")
            elif tag == "host_link":
                self._host_links.append((zone, child.get("id"),
                                         self._ctn(child.get("up"), "UP", "host_link"),
                                         self._ctn(child.get("down"), "DOWN", "host_link")))
            elif tag in ("route", "zoneRoute", "ASroute"):
                self._pending.append((zone, child))
            elif tag in ("bypassRoute", "bypassZoneRoute", "bypassASroute", "peer",
                         "cabinet"):
                self._err(f"<{tag}> is not supported",
                          hint="write the routes explicitly (<route>, <zoneRoute>)")

    def _vertex(self, name) -> None:
        if name in self.vertex:
            self._err(f"'{name}' declared twice")
        self.vertex[name] = len(self.vertex)

    def _link(self, name, bw, la, policy) -> int:
        b, l_ = parse_bandwidth(bw), parse_latency(la or "0")
        if not (b > 0 and math.isfinite(b)) or not (l_ >= 0 and math.isfinite(l_)):
            self._err(f"link '{name}': bad bandwidth '{bw}' or latency '{la}'",
                      hint="SimGrid units: 125MBps, 10Gbps; 50us, 1ms")
        if name in self.link_id:
            self._err(f"link '{name}' declared twice")
        policy = (policy or "SHARED").upper()
        if policy not in ("SHARED", "SPLITDUPLEX", "FULLDUPLEX", "FATPIPE", "WIFI"):
            self._err(f"link '{name}': unknown sharing_policy '{policy}'",
                      hint="SHARED, SPLITDUPLEX or FATPIPE")
        if policy == "WIFI":
            self._err(f"link '{name}': WIFI links are not supported")
        self.link_id[name] = len(self.link_names)
        self.link_names.append(name)
        self._cap.append(b)
        self._lat.append(l_)
        self.shared.append(policy not in ("SPLITDUPLEX", "FULLDUPLEX"))
        self.fatpipe.append(policy == "FATPIPE")
        return self.link_id[name]

    def _ctn(self, name, direction, where) -> tuple[int, int]:
        """The hop of a link reference (``ID`` with a direction, or ``ID_UP``/``ID_DOWN``)."""
        lid = self.link_id.get(name)
        if lid is None:
            base, _, side = str(name).rpartition("_")
            lid = self.link_id.get(base) if side in ("UP", "DOWN") else None
            if lid is None:
                self._err(f"{where} uses unknown link '{name}'")
            direction = side
        return self._hop(lid, (direction or "UP").upper() != "DOWN")

    def _err(self, what, hint=None):
        raise CcmodInputError(what, source=self.path, hint=hint)

    def _hop(self, lid: int, up: bool) -> tuple[int, int]:
        return (lid, 0 if (up or self.shared[lid]) else 1)

    def _reverse(self, hops):
        return [(lid, d if self.shared[lid] else 1 - d) for lid, d in reversed(hops)]

    def _cluster(self, el, parent) -> None:
        cid = el.get("id", "cluster")
        topo = (el.get("topology") or "FLAT").upper()
        if topo != "FLAT":
            self._err(f"cluster '{cid}' has topology=\"{topo}\", which ccmod does not read",
                      hint="use ccmod's own fattree2/torus/dragonfly networks instead")
        zone = self.tree.add_zone(cid, "Cluster", parent)
        ids = _radical(el.get("radical", "0"))
        prefix, suffix = el.get("prefix", ""), el.get("suffix", "")
        bb = None
        if el.get("bb_bw"):
            bb = self._link(f"{cid}_backbone", el.get("bb_bw"), el.get("bb_lat"),
                            el.get("bb_sharing_policy", "SHARED"))
        for i in ids:
            host = f"{prefix}{i}{suffix}"
            self.tree.add_point(host, zone)
            lid = self._link(f"{cid}_link_{i}", el.get("bw"), el.get("lat"),
                             el.get("sharing_policy", "SPLITDUPLEX"))
            up = [self._hop(lid, True)]
            if el.get("limiter_link"):
                lim = self._link(f"{cid}_link_{i}_limiter", el.get("limiter_link"), "0",
                                 "SHARED")
                up = [(lim, 0)] + up
            if bb is not None:
                up.append((bb, 0))
            zone.up[host], zone.down[host] = up, self._reverse(up)
        router = el.get("router_id") or f"{prefix}{cid}_router{suffix}"
        self._vertex(router)
        self.tree.add_point(router, zone)
        zone.up[router], zone.down[router] = [], []

    def _route(self, zone, rt) -> None:
        src, dst = rt.get("src"), rt.get("dst")
        for v in (src, dst):
            if v not in self.tree.zone_of and v not in self.tree.zones:
                self._err(f"route names '{v}', which is not a host, router or zone of the "
                          "platform")
        hops = [self._ctn(c.get("id"), c.get("direction"), f"route {src} -> {dst}")
                for c in rt.findall("link_ctn")]
        sym = (rt.get("symmetrical") or "YES").upper() != "NO"
        self.tree.add_route(zone, src, dst, hops, rt.get("gw_src"), rt.get("gw_dst"), sym)

    # -- routes ---------------------------------------------------------------------------
    def simgrid_route(self, src: int, dst: int) -> list[tuple[int, int]]:
        """Every hop SimGrid would use from host ``src`` to ``dst`` (FATPIPE links too)."""
        return self.tree.global_route(self.host_names[int(src)], self.host_names[int(dst)])

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        """The contended hops from host ``src`` to ``dst``: FATPIPE links are left out
        (they count in :meth:`compile_routes`' latency, bandwidth and per-flow cap).

        While the network checks itself on construction, a pair without a route is not an
        error (SimGrid only needs the routes a run uses; a run fails on a missing one)."""
        if getattr(self, "_checking", False):
            try:
                return self.simgrid_route(src, dst) or [(0, 0)]
            except CcmodInputError:
                return [(0, 0)]
        return [h for h in self.simgrid_route(src, dst) if not self.fatpipe[h[0]]]

    def __init__(self, nodes_needed=None, **values):
        self._checking = True
        try:
            super().__init__(nodes_needed, **values)
        finally:
            self._checking = False

    def compile_routes(self, pairs):
        """Routes as every network's, plus the latency and bandwidth of FATPIPE hops."""
        table = super().compile_routes(pairs)
        if not any(self.fatpipe):
            return table
        cap = np.full(len(table.pairs), np.inf)
        for k, (s, d) in enumerate(np.asarray(table.pairs)):
            if s == d:
                continue
            for lid, _ in self.simgrid_route(s, d):
                if self.fatpipe[lid]:
                    table.latency_s[k] += self._lat[lid]
                    cap[k] = min(cap[k], self._cap[lid])
            table.bandwidth_Bps[k] = min(table.bandwidth_Bps[k], cap[k])
        table.flow_cap_Bps = cap
        return table
