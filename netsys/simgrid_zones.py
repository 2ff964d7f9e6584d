"""Zones of a SimGrid platform and SimGrid's route resolution across them.

SimGrid (``src/kernel/routing/NetZoneImpl.cpp``, ``get_global_route``) routes a message
between two netpoints (hosts or routers) of a zone tree as follows: when both lie in the
same zone, that zone's *local* route is used; otherwise, in their lowest common ancestor
zone, the local route between the two child zones that contain them (a ``zoneRoute`` /
``ASroute``) gives the links and two gateways, and the route is completed recursively
from the source to ``gw_src`` and from ``gw_dst`` to the destination.

Local routes per ``routing=``:

* ``Full``: the declared ``<route>``/``<zoneRoute>``; a symmetrical one (the default) is
  also the way back, links reversed, UP and DOWN swapped, gateways swapped.
* ``Floyd`` / ``Dijkstra`` / ``DijkstraCache``: declared routes are edges; the route is
  the path with the fewest edges (ties: declaration order), its edges' links in order;
  when consecutive edges are zone routes whose gateways differ (``gw_dst`` of one,
  ``gw_src`` of the next) the route between the two gateways is inserted (FloydZone).
* ``Cluster`` (``<host_link id up down>``, ``<backbone>``) and ``<cluster>`` (a star,
  SimGrid's StarZone): host i -> j is i's up links, then j's down links, each link once;
  the up links of a host are its private link (UP), then the backbone; a router (the
  cluster's gateway, ``router_id`` or ``prefix + id + "_router" + suffix``) has none.
* ``None``: no local routes (a zone of one host reached through zone routes).

Hops are ``(link_id, direction)`` with direction 0 = UP / shared, 1 = DOWN.
"""
from __future__ import annotations

from collections import deque

ROUTED = ("Full", "Floyd", "Dijkstra", "DijkstraCache")
UNSUPPORTED = ("Vivaldi", "RuleBased", "ClusterTorus", "ClusterFatTree", "ClusterDragonfly",
               "Wifi")


class Zone:
    """One ``<zone>``/``<AS>``/``<cluster>`` of the tree."""

    def __init__(self, name, routing, parent):
        self.name, self.routing, self.parent = name, routing, parent
        self.routes = {}     # Full: (src, dst) -> (hops, gw_src, gw_dst)
        self.edges = []      # Floyd/Dijkstra: (src, dst, hops, gw_src, gw_dst)
        self.up, self.down = {}, {}   # Cluster/star: netpoint -> hops

    def depth_path(self):
        """Zones from this one up to the root."""
        out, z = [], self
        while z is not None:
            out.append(z)
            z = z.parent
        return out


class ZoneTree:
    """Netpoints (hosts, routers, zones) with their englobing zone; global routes.

    ``reverse(hops)`` turns a route around (the platform knows which links are shared);
    ``fail(what, hint)`` raises the platform's one-line error.
    """

    def __init__(self, reverse, fail):
        self.zone_of = {}        # host/router name -> englobing Zone
        self.zones = {}          # zone name -> Zone
        self.reverse, self.fail = reverse, fail
        self._cache = {}

    # -- building ------------------------------------------------------------------------
    def add_zone(self, name, routing, parent):
        if name in self.zones or name in self.zone_of:
            self.fail(f"'{name}' declared twice")
        z = self.zones[name] = Zone(name, routing, parent)
        return z

    def add_point(self, name, zone):
        self.zone_of[name] = zone

    def add_route(self, zone, src, dst, hops, gw_src=None, gw_dst=None, symmetrical=True):
        """A ``<route>``/``<zoneRoute>`` of ``zone`` (``src``/``dst`` are names)."""
        for g in (gw_src, gw_dst):
            if g is not None and g not in self.zone_of:
                self.fail(f"zone route {src} -> {dst} names gateway '{g}', which is not a "
                          "host or router of the platform")
        if src == dst:
            return       # loopback: ccmod's intra-node path
        back = (self.reverse(hops), gw_dst, gw_src)
        if zone.routing == "Full":
            zone.routes[(src, dst)] = (hops, gw_src, gw_dst)
            if symmetrical:
                zone.routes.setdefault((dst, src), back)
        elif zone.routing in ROUTED:
            zone.edges.append((src, dst, hops, gw_src, gw_dst))
            if symmetrical:
                zone.edges.append((dst, src) + back)
        else:
            self.fail(f"a <route> in zone '{zone.name}' with routing=\"{zone.routing}\"",
                      hint="routes belong to Full, Floyd or Dijkstra zones")

    # -- resolution ----------------------------------------------------------------------
    def _zone_of(self, name):
        """The zone a netpoint lies in (a zone's own netpoint lies in its parent)."""
        if name in self.zone_of:
            return self.zone_of[name]
        return self.zones[name].parent

    def global_route(self, src, dst, depth=0):
        """Hops from netpoint ``src`` to ``dst`` (names), resolved as SimGrid does."""
        key = (src, dst)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if depth > 64:
            self.fail(f"routes between {src} and {dst} recurse without end",
                      hint="check the gateways of the zone routes")
        zs, zd = self._zone_of(src), self._zone_of(dst)
        if zs is zd:
            hops, _, _ = self._local(zs, src, dst, depth)
            self._cache[key] = hops
            return hops
        ps, pd = zs.depth_path(), zd.depth_path()
        common = None
        while len(ps) > 1 and len(pd) > 1 and ps[-1] is pd[-1]:
            common = ps.pop()
            pd.pop()
        sa, da = ps[-1], pd[-1]
        if sa is da:
            # one lies directly in a zone that contains the other's: route in that zone
            # from the one to the child zone holding the other
            common = sa
            a = src if len(ps) == 1 else ps[-2].name
            b = dst if len(pd) == 1 else pd[-2].name
        elif common is None:
            self.fail(f"{src} and {dst} share no zone")
        else:
            a, b = sa.name, da.name
        hops, gw_s, gw_d = self._local(common, a, b, depth)
        out = []
        if a != src:
            if gw_s is None:
                self.fail(f"zone route {a} -> {b} has no gw_src")
            if gw_s != src:
                out += self.global_route(src, gw_s, depth + 1)
        out += hops
        if b != dst:
            if gw_d is None:
                self.fail(f"zone route {a} -> {b} has no gw_dst")
            if gw_d != dst:
                out += self.global_route(gw_d, dst, depth + 1)
        self._cache[key] = out
        return out

    def _local(self, zone, src, dst, depth):
        """(hops, gw_src, gw_dst) of ``zone``'s own route from ``src`` to ``dst``."""
        if zone.routing == "Full":
            r = zone.routes.get((src, dst))
            if r is None:
                self._no_route(zone, src, dst)
            return list(r[0]), r[1], r[2]
        if zone.routing in ROUTED:
            return self._shortest(zone, src, dst, depth)
        if zone.routing == "Cluster":
            if src not in zone.up and src not in zone.down or \
                    dst not in zone.up and dst not in zone.down:
                self._no_route(zone, src, dst)
            out, seen = [], set()
            for h in zone.up.get(src, []) + zone.down.get(dst, []):
                if h not in seen:        # the backbone once (StarZone de-duplicates)
                    seen.add(h)
                    out.append(h)
            return out, None, None
        self._no_route(zone, src, dst)

    def _shortest(self, zone, src, dst, depth):
        adj = {}
        for e in zone.edges:
            adj.setdefault(e[0], []).append(e)
        prev = {src: None}
        q = deque([src])
        while q:
            u = q.popleft()
            if u == dst:
                break
            for e in adj.get(u, ()):
                if e[1] not in prev:
                    prev[e[1]] = e
                    q.append(e[1])
        if dst not in prev:
            self._no_route(zone, src, dst)
        path, v = [], dst
        while prev[v] is not None:
            path.append(prev[v])
            v = prev[v][0]
        path.reverse()
        out, prev_gw = [], None
        for e in path:
            if prev_gw is not None and e[3] is not None and prev_gw != e[3]:
                out += self.global_route(prev_gw, e[3], depth + 1)
            out += e[2]
            prev_gw = e[4]
        return out, path[0][3], path[-1][4]

    def _no_route(self, zone, src, dst):
        self.fail(f"no route from {src} to {dst} in zone '{zone.name}' "
                  f"(routing=\"{zone.routing}\")",
                  hint="add a <route> / <zoneRoute> for them, or use --map")
