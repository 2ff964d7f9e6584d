"""``dragonfly``: groups of all-to-all routers joined by global links (Kim et al., 2008).

``groups`` groups of ``routers`` routers; each router has ``hosts`` hosts and
``global_links`` global ports. Inside a group every pair of routers has one local link.
Global links join groups pairwise: the group pairs ``(i, j)``, ``i < j``, are dealt a link
each in turn (round after round while both groups have a free global port); a group's
ports are used in order, port ``q`` on router ``q // global_links``. With the balanced
``groups = routers * global_links + 1`` every pair of groups has exactly one global link
(the canonical maximum-size dragonfly); fewer groups give parallel links, chosen by
``dst mod count``. More groups than that leaves pairs unconnected, which is an error.

Vertex ids: hosts ``0..H-1`` (host ``i`` on router ``i // hosts``, router ``r`` in group
``r // routers``), then routers ``H + r``. Links: host links first (up = host → router),
then local links (up = lower router → higher), then global links (up = lower group →
higher).

Routing (``route``):

* ``minimal``: host → its router → (local hop to the router holding the global link) →
  global link → (local hop to the destination router) → host: at most 3 inter-router hops.
* ``valiant``: to a random intermediate group first (minimal to it, then minimal on), which
  spreads adversarial traffic at the price of up to 5 inter-router hops. The intermediate
  group of a (source, destination) pair is drawn from ``numpy.random.default_rng((seed,
  src, dst))``, so a seed gives the same routes in every run. Messages inside one group
  route minimally.
"""
from __future__ import annotations

import math

import numpy as np

from ccmod.netsys.base import Param
from ccmod.netsys.registry import NETWORKS
from ccmod.netsys.topologies import MAX_NODES, BuiltNetwork


@NETWORKS.register()
class Dragonfly(BuiltNetwork):
    """Dragonfly with minimal or Valiant routing (see the module docstring)."""

    routes_from_values = True
    name = "dragonfly"
    description = "dragonfly: all-to-all groups, global links, minimal or Valiant routing"
    params = {
        "groups": Param(int, None, "groups (default: enough for the nodes the run needs, at "
                        "least 2)"),
        "routers": Param(int, 8, "routers per group (all-to-all local links)"),
        "hosts": Param(int, 4, "hosts per router"),
        "global_links": Param(int, 4, "global links per router"),
        "route": Param(str, "minimal", "minimal or valiant (random intermediate group)",
                       choices=("minimal", "valiant")),
        "seed": Param(int, 1, "seed of Valiant's intermediate groups"),
        "bandwidth": Param(float, 1.25e9, "bytes/s of a host link (10 Gb/s)"),
        "latency": Param(float, 1e-6, "seconds per host link"),
        "local_bandwidth": Param(float, None, "bytes/s of a local link (default: bandwidth)"),
        "local_latency": Param(float, None, "seconds per local link (default: latency)"),
        "global_bandwidth": Param(float, None, "bytes/s of a global link (default: bandwidth)"),
        "global_latency": Param(float, None, "seconds per global link (default: latency)"),
    }

    def build(self) -> None:
        v = self.values
        a, p, hg = int(v["routers"]), int(v["hosts"]), int(v["global_links"])
        for key, x in (("routers", a), ("hosts", p), ("global_links", hg)):
            if x < 1 or x > MAX_NODES:
                self.fail(f"parameter '{key}={x}' of network 'dragonfly' must be between 1 "
                          f"and {MAX_NODES}")
        per_group = a * p
        max_groups = a * hg + 1
        if v["groups"] is None:
            if self.nodes_needed is None:
                self.fail("network 'dragonfly' needs groups=N when no run sizes it")
            v["groups"] = max(2, -(-int(self.nodes_needed) // per_group))
            if v["groups"] > max_groups:
                self.fail(f"network 'dragonfly' with routers={a}, hosts={p}, "
                          f"global_links={hg} holds at most {max_groups * per_group} hosts but "
                          f"the run needs {self.nodes_needed}",
                          hint="raise routers=, hosts= or global_links=")
        g = int(v["groups"])
        if g < 1:
            self.fail(f"parameter 'groups={g}' of network 'dragonfly' must be >= 1")
        if g > max_groups:
            self.fail(f"network 'dragonfly' has groups={g} but routers*global_links+1 = "
                      f"{max_groups}: some pairs of groups would have no global link",
                      hint="lower groups= or raise global_links=")
        self.check_fits(g * per_group, f"groups={g} * routers={a} * hosts={p}", "groups")
        for key, base in (("local_bandwidth", "bandwidth"), ("local_latency", "latency"),
                          ("global_bandwidth", "bandwidth"), ("global_latency", "latency")):
            if v[key] is None:
                v[key] = v[base]
        self.g, self.a, self.p, self.hg = g, a, p, hg
        nh, nr = g * per_group, g * a
        if nh + nr > 4 * MAX_NODES or g * a * a > 8 * MAX_NODES:
            self.fail(f"network 'dragonfly' with {g} groups of {a} routers is too large")
        self.nnodes = nh
        self.vertex_names = [f"host{i}" for i in range(nh)] + [
            f"g{r // a}.r{r % a}" for r in range(nr)]
        names, ends, kind = [], [], []
        for i in range(nh):
            names.append(f"host{i}")
            ends.append((i, nh + i // p))
            kind.append(0)
        # local[r0][r1] = link id joining routers r0 < r1 of one group (global router ids)
        self.local: dict[tuple[int, int], int] = {}
        for grp in range(g):
            for x in range(a):
                for y in range(x + 1, a):
                    r0, r1 = grp * a + x, grp * a + y
                    self.local[(r0, r1)] = len(names)
                    names.append(f"g{grp}.r{x}-r{y}")
                    ends.append((nh + r0, nh + r1))
                    kind.append(1)
        # global links dealt to group pairs round by round while ports remain
        free = [a * hg] * g
        used = [0] * g
        self.glinks: dict[tuple[int, int], list[int]] = {}
        progress = True
        while progress:
            progress = False
            for i in range(g):
                for j in range(i + 1, g):
                    if free[i] and free[j]:
                        ri, rj = i * a + used[i] // hg, j * a + used[j] // hg
                        used[i] += 1
                        used[j] += 1
                        free[i] -= 1
                        free[j] -= 1
                        self.glinks.setdefault((i, j), []).append(len(names))
                        names.append(f"g{i}.r{ri % a}-g{j}.r{rj % a}")
                        ends.append((nh + ri, nh + rj))
                        kind.append(2)
                        progress = True
        self.link_names = names
        self.link_ends = np.asarray(ends, dtype=np.int64).reshape(-1, 2)
        self.link_kind = np.asarray(kind, dtype=np.int8)   # 0 host, 1 local, 2 global
        bw = np.array([v["bandwidth"], v["local_bandwidth"], v["global_bandwidth"]], float)
        lat = np.array([v["latency"], v["local_latency"], v["global_latency"]], float)
        self.capacity_Bps = np.repeat(bw[self.link_kind][:, None], 2, axis=1)
        self.latency_s = np.repeat(lat[self.link_kind][:, None], 2, axis=1)

    # -- routing --------------------------------------------------------------------------
    def _local_hop(self, r0: int, r1: int) -> list[tuple[int, int]]:
        if r0 == r1:
            return []
        if r0 < r1:
            return [(self.local[(r0, r1)], 0)]
        return [(self.local[(r1, r0)], 1)]

    def _router_path(self, r0: int, r1: int, pick: int) -> tuple[list, int]:
        """Minimal router-to-router hops from router ``r0`` to the group of ``r1``.

        Returns the hops and the router reached (in ``r1``'s group; the caller finishes with
        a local hop). ``pick`` chooses among parallel global links.
        """
        g0, g1 = r0 // self.a, r1 // self.a
        if g0 == g1:
            return [], r0
        lo, hi = min(g0, g1), max(g0, g1)
        links = self.glinks[(lo, hi)]
        link = links[pick % len(links)]
        a_end, b_end = (int(x) - self.nnodes for x in self.link_ends[link])
        if g0 == lo:      # up direction: lower group -> higher group
            near, far, d = a_end, b_end, 0
        else:
            near, far, d = b_end, a_end, 1
        return self._local_hop(r0, near) + [(link, d)], far

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        src, dst = int(src), int(dst)
        rs, rd = src // self.p, dst // self.p
        out = [(src, 0)]
        gs, gd = rs // self.a, rd // self.a
        cur = rs
        if self.values["route"] == "valiant" and gs != gd and self.g > 2:
            rng = np.random.default_rng((int(self.values["seed"]), src, dst))
            others = [x for x in range(self.g) if x not in (gs, gd)]
            gi = others[int(rng.integers(len(others)))]
            hops, cur = self._router_path(cur, gi * self.a, dst)
            out += hops
        hops, cur = self._router_path(cur, rd, dst)
        out += hops + self._local_hop(cur, rd)
        out.append((dst, 1))
        return out

    def layout(self) -> dict[int, tuple[float, float]]:
        """Groups on a circle, each group's routers on a small arc, hosts outside them."""
        pos = {}
        nh = self.nnodes
        for r in range(self.g * self.a):
            grp, x = divmod(r, self.a)
            ang = 2 * math.pi * (grp + (x + 0.5) / (self.a + 1)) / self.g
            pos[nh + r] = (math.cos(ang), math.sin(ang))
            for k in range(self.p):
                h = r * self.p + k
                da = 2 * math.pi / self.g / (self.a + 1) * ((k + 0.5) / self.p - 0.5)
                pos[h] = (1.25 * math.cos(ang + da), 1.25 * math.sin(ang + da))
        return pos
