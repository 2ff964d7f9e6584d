"""``fattree``: k-ary n-trees and extended generalized fat trees (XGFT) with D-mod-K routing.

A k-ary n-tree (Petrini and Vanneschi) has ``k**n`` hosts and ``n`` levels of ``k**(n-1)``
switches; it is the XGFT ``(n; k,...,k; 1,k,...,k)`` of Öhring et al.: level ``l`` nodes have
``m[l]`` children and level ``l-1`` nodes have ``w[l]`` parents (levels 1..h, level 0 =
hosts). A level-``l`` vertex carries the labels ``(a[l+1..h]; b[1..l])``: ``a`` says which
subtree it sits in, ``b`` which of the parallel parents was taken on the way up. Host ``i``
has ``a = digits of i`` (``a[1]`` varies fastest) and no ``b``.

Routing goes up to the nearest common ancestor level ``L`` (the lowest level whose subtree
holds both hosts) and down again; the down path is unique once the top switch is chosen.
The parent chosen at level ``l`` is ``(key // prod(w[1..l-1])) mod w[l]`` with ``key`` the
destination (``dmodk``, InfiniBand's usual rule) or the source (``smodk``), Zahavi's
formulation for XGFTs. With ``dmodk`` every message to one host takes the same top switch,
so a shift permutation is contention-free on a full k-ary n-tree (tested).

Links of level ``l`` join a level-``l-1`` vertex to one of its parents (direction 0 = up).
Per-level lists (``level_bandwidth``, ``level_latency``, ``taper``) are ``/``-separated,
level 1 (the host links) first.
"""
from __future__ import annotations

import numpy as np

from ccmod.netsys.base import Param
from ccmod.netsys.registry import NETWORKS
from ccmod.netsys.topologies import MAX_NODES, BuiltNetwork


def parse_list(text, kind=float, what="value") -> list:
    """``"4x4x4"`` or ``"1/0.5"`` → a list of ``kind`` (raises ValueError)."""
    parts = str(text).replace("x", "/").replace("X", "/").replace(":", "/").split("/")
    out = []
    for p in parts:
        v = float(p)
        if kind is int:
            if not v.is_integer():
                raise ValueError(p)
            v = int(v)
        out.append(v)
    if not out:
        raise ValueError(text)
    return out


@NETWORKS.register()
class FatTree(BuiltNetwork):
    """k-ary n-tree / XGFT fat tree, D-mod-K or S-mod-K static routing, per-level links."""

    routes_from_values = True
    name = "fattree"
    description = "k-ary n-tree / XGFT fat tree, d-mod-k or s-mod-k routing, per-level taper"
    params = {
        "k": Param(int, 4, "arity of a k-ary n-tree: children and parents per switch"),
        "n": Param(int, None, "levels of switches (default: smallest n with k**n >= nodes "
                   "the run needs)"),
        "m": Param(str, None, "XGFT children per level, level 1 first, e.g. 4x4x2 "
                   "(default: k at every level); overrides k and n"),
        "w": Param(str, None, "XGFT parents per level, level 1 first, e.g. 1x4x2 "
                   "(default: 1 then k)"),
        "route": Param(str, "dmodk", "parent choice going up: dmodk (destination-based) or "
                       "smodk (source-based)", choices=("dmodk", "smodk")),
        "bandwidth": Param(float, 1.25e9, "bytes/s of every link (10 Gb/s)"),
        "latency": Param(float, 1e-6, "seconds per link"),
        "level_bandwidth": Param(str, None, "bytes/s per level, '/'-separated, level 1 (host "
                                 "links) first (default: bandwidth at every level)"),
        "level_latency": Param(str, None, "seconds per level, '/'-separated "
                               "(default: latency at every level)"),
        "taper": Param(str, None, "bandwidth multiplier per level, '/'-separated, e.g. "
                       "1/0.5/0.25 for an oversubscribed tree (default: 1 everywhere)"),
    }

    # -- construction ---------------------------------------------------------------------
    def _levels(self) -> tuple[list[int], list[int]]:
        v = self.values
        if v["k"] < 1:
            self.fail(f"parameter 'k={v['k']}' of network 'fattree' must be >= 1")
        if v["m"] is not None:
            try:
                m = parse_list(v["m"], int)
            except ValueError:
                self.fail(f"parameter 'm={v['m']}' of network 'fattree' is not integers "
                          "joined by 'x'", hint="e.g. m=4x4x2")
            if v["n"] is not None and v["n"] != len(m):
                self.fail(f"network 'fattree' has n={v['n']} but m={v['m']} has {len(m)} levels")
        else:
            k = int(v["k"])
            n = v["n"]
            if n is None:
                if self.nodes_needed is None:
                    self.fail("network 'fattree' needs n=N when no run sizes it")
                n, cap = 1, k
                while cap < self.nodes_needed and k > 1 and cap <= MAX_NODES:
                    n, cap = n + 1, cap * k
            m = [k] * int(n)
        h = len(m)
        if v["w"] is not None:
            try:
                w = parse_list(v["w"], int)
            except ValueError:
                self.fail(f"parameter 'w={v['w']}' of network 'fattree' is not integers "
                          "joined by 'x'", hint="e.g. w=1x4x4")
            if len(w) != h:
                self.fail(f"network 'fattree' has {h} levels but w={v['w']} has {len(w)}")
        else:
            w = [1] + [int(v["k"]) if v["m"] is None else m[i] for i in range(1, h)]
        if h < 1 or h > 16:
            self.fail(f"network 'fattree' needs 1 to 16 levels, got {h}")
        if any(x < 1 for x in m + w):
            self.fail("network 'fattree' arities must be >= 1", hint=f"m={m}, w={w}")
        v["n"] = h
        v["m"] = "x".join(map(str, m))
        v["w"] = "x".join(map(str, w))
        return m, w

    def _per_level(self, key: str, default: float, h: int, lo: float, hi: float) -> list:
        text = self.values[key]
        if text is None:
            return [float(default)] * h
        try:
            vals = parse_list(text, float)
        except ValueError:
            self.fail(f"parameter '{key}={text}' of network 'fattree' is not numbers "
                      "joined by '/'", hint="e.g. 1/0.5/0.5")
        if len(vals) == 1:
            vals = vals * h
        if len(vals) != h:
            self.fail(f"parameter '{key}={text}' of network 'fattree' has {len(vals)} values "
                      f"for {h} levels")
        if not all(np.isfinite(x) and lo <= x <= hi for x in vals):
            self.fail(f"parameter '{key}={text}' of network 'fattree' must lie in "
                      f"[{lo:g}, {hi:g}]")
        return vals

    def build(self) -> None:
        m, w = self._levels()
        h = len(m)
        hosts = int(np.prod(m, dtype=object))
        self.check_fits(hosts, f"{'x'.join(map(str, m))} children per level", "n")
        # vertices per level: N_l = prod(m[l+1..h]) * prod(w[1..l])
        nv = [int(np.prod(m[l:], dtype=object)) * int(np.prod(w[:l], dtype=object))
              for l in range(h + 1)]
        nlinks = sum(nv[l - 1] * w[l - 1] for l in range(1, h + 1))
        if sum(nv) > 4 * MAX_NODES or nlinks > 4 * MAX_NODES:
            self.fail(f"network 'fattree' would have {nlinks} links", hint="use fewer levels")
        bw = self._per_level("level_bandwidth", self.values["bandwidth"], h, 1.0, 1e18)
        lat = self._per_level("level_latency", self.values["latency"], h, 0.0, 1e4)
        taper = self._per_level("taper", 1.0, h, 1e-9, 1e9)
        self.m, self.w, self.h, self.nv = m, w, h, nv
        self.mprod = [int(np.prod(m[:l], dtype=object)) for l in range(h + 1)]   # prod m[1..l]
        self.wprod = [int(np.prod(w[:l], dtype=object)) for l in range(h + 1)]   # prod w[1..l]
        self.nnodes = hosts
        # vertex ids: level 0 (hosts) first, then each level in turn
        self.level_base = np.concatenate([[0], np.cumsum(nv)]).astype(np.int64)
        self.vertex_names = [f"host{i}" for i in range(hosts)] + [
            f"sw{l}.{j}" for l in range(1, h + 1) for j in range(nv[l])]
        # up[l-1][j, b] = link from vertex j of level l-1 to its parent b at level l
        self.up = []
        names, ends, cap, lt, lvl = [], [], [], [], []
        for l in range(1, h + 1):
            nchild, wl, ml = nv[l - 1], w[l - 1], m[l - 1]
            ids = np.arange(nchild * wl, dtype=np.int64).reshape(nchild, wl) + len(names)
            self.up.append(ids)
            for c in range(nchild):
                for b in range(wl):
                    p = self._parent(l, c, b)
                    lo, hi = int(self.level_base[l - 1] + c), int(self.level_base[l] + p)
                    ends.append((lo, hi))
                    names.append(f"{self.vertex_names[lo]}-{self.vertex_names[hi]}")
            cap.extend([bw[l - 1] * taper[l - 1]] * (nchild * wl))
            lt.extend([lat[l - 1]] * (nchild * wl))
            lvl.extend([l] * (nchild * wl))
        self.link_names = names
        self.link_ends = np.asarray(ends, dtype=np.int64).reshape(-1, 2)
        self.link_level = np.asarray(lvl, dtype=np.int64)
        self.capacity_Bps = np.repeat(np.asarray(cap, float)[:, None], 2, axis=1)
        self.latency_s = np.repeat(np.asarray(lt, float)[:, None], 2, axis=1)

    # -- routing --------------------------------------------------------------------------
    def _parent(self, l: int, j: int, b: int) -> int:
        """Index at level ``l`` of the parent ``b`` of vertex ``j`` of level ``l-1``."""
        width_a = self.nv[l - 1] // self.wprod[l - 1]
        a_lab, b_lab = j % width_a, j // width_a
        return (a_lab // self.m[l - 1]) + (self.nv[l] // self.wprod[l]) * (
            b_lab + self.wprod[l - 1] * b)

    def nca_level(self, src: int, dst: int) -> int:
        """Lowest level whose subtree holds both hosts (0 when ``src == dst``)."""
        for l in range(self.h + 1):
            if src // self.mprod[l] == dst // self.mprod[l]:
                return l
        return self.h  # pragma: no cover - level h holds every host

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        src, dst = int(src), int(dst)
        top = self.nca_level(src, dst)
        key = dst if self.values["route"] == "dmodk" else src
        out, down = [], []
        cur_s, cur_d = src, dst       # vertex index within its level, on each side
        for l in range(1, top + 1):
            b = (key // self.wprod[l - 1]) % self.w[l - 1]
            out.append((int(self.up[l - 1][cur_s, b]), 0))
            down.append((int(self.up[l - 1][cur_d, b]), 1))
            cur_s, cur_d = self._parent(l, cur_s, b), self._parent(l, cur_d, b)
        # both sides climbed with the same parent choices, so they meet at one top switch
        return out + down[::-1]

    def layout(self) -> dict[int, tuple[float, float]]:
        """Vertex positions for drawings: hosts at the bottom, one row per level."""
        pos = {}
        for l in range(self.h + 1):
            n = self.nv[l]
            for j in range(n):
                pos[int(self.level_base[l] + j)] = ((j + 0.5) / n, float(l))
        return pos
