"""Direct networks: ``mesh`` and ``torus`` (1-D to 3-D) with dimension-order routing.

Node ``i`` has coordinates ``(x, y, z)`` with ``i = x + X * (y + Y * z)`` (dimension 0
varies fastest). Every node owns an injection link ``node{i}`` (up: node→router, down:
router→node) so messages leaving or entering the same node share it. Router links join
neighbours along each dimension: link ``d{d}+@{i}`` goes from router ``i`` to its ``+1``
neighbour in dimension ``d`` (direction 0) and back (direction 1).

Routing corrects dimension 0 first, then 1, then 2. The torus goes the shorter way round;
when both ways are equally long (distance exactly k/2) it goes in the + direction.
A torus dimension of size 2 has a single link between its two routers (the wrap link
would be a parallel duplicate), so it behaves like a mesh dimension.
"""
from __future__ import annotations

import math

import numpy as np

from ccmod.netsys.base import Param
from ccmod.netsys.topologies import BuiltNetwork
from ccmod.netsys.registry import NETWORKS


def parse_dims(text: str) -> tuple[int, ...]:
    """``"4x4"`` → ``(4, 4)``; raises ValueError on anything but 1–3 positive integers."""
    parts = str(text).lower().replace("*", "x").split("x")
    dims = tuple(int(p) for p in parts)
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise ValueError(text)
    return dims


def square_dims(n: int) -> tuple[int, int]:
    """Smallest near-square 2-D shape ``(a, b)`` with ``a * b >= n`` (``a >= b``)."""
    n = max(int(n), 1)
    a = math.isqrt(n - 1) + 1 if n > 1 else 1  # ceil(sqrt(n))
    b = -(-n // a)
    return a, b


class _Grid(BuiltNetwork):
    """Shared implementation of ``mesh`` and ``torus``."""

    wrap = False
    params = {
        "dims": Param(str, None, "routers per dimension, e.g. 4x4 or 4x4x4 (default: the "
                      "smallest near-square 2-D grid holding the nodes the run needs)"),
        "bandwidth": Param(float, 1.25e9, "bytes/s per link and direction (10 Gb/s)"),
        "latency": Param(float, 1e-6, "seconds per link"),
    }

    def build(self) -> None:
        v = self.values
        if v["dims"] is None:
            if self.nodes_needed is None:
                self.fail(f"network '{self.name}' needs dims=AxB when no run sizes it")
            dims = square_dims(self.nodes_needed)
        else:
            try:
                dims = parse_dims(v["dims"])
            except ValueError:
                self.fail(f"parameter 'dims={v['dims']}' of network '{self.name}' is not "
                          "1 to 3 positive integers joined by 'x'", hint="e.g. dims=4x4x4")
        v["dims"] = "x".join(map(str, dims))
        self.dims = dims
        n = int(np.prod(dims))
        self.check_fits(n, f"dims={v['dims']}", "dims")
        self.nnodes = n
        self.strides = tuple(int(np.prod(dims[:d])) for d in range(len(dims)))
        names = [f"node{i}" for i in range(n)]
        # plus[d][i] = link from router i to its +1 neighbour in dimension d, or -1
        self.plus = np.full((len(dims), n), -1, dtype=np.int64)
        for d, k in enumerate(dims):
            for i in range(n):
                c = (i // self.strides[d]) % k
                if c < k - 1 or (self.wrap and k > 2):
                    self.plus[d, i] = len(names)
                    names.append(f"d{d}+@{i}")
        self.link_names = names
        # vertices: nodes 0..n-1, then router i = vertex n + i
        self.vertex_names = [f"node{i}" for i in range(n)] + [f"router{i}" for i in range(n)]
        ends = [(i, n + i) for i in range(n)]
        for d, k in enumerate(dims):
            for i in range(n):
                if self.plus[d, i] >= 0:
                    c = (i // self.strides[d]) % k
                    j = i + (((c + 1) % k) - c) * self.strides[d]
                    ends.append((n + i, n + j))
        self.link_ends = np.asarray(ends, dtype=np.int64)
        self.capacity_Bps, self.latency_s = self.uniform_links(
            len(names), v["bandwidth"], v["latency"])

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        src, dst = int(src), int(dst)
        out = [(src, 0)]
        cur = src
        for d, k in enumerate(self.dims):
            stride = self.strides[d]
            c, t = (cur // stride) % k, (dst // stride) % k
            if c == t:
                continue
            if self.wrap and k > 2:
                fwd = (t - c) % k
                steps, sign = (fwd, 1) if 2 * fwd <= k else (k - fwd, -1)
            else:
                steps, sign = abs(t - c), (1 if t > c else -1)
            for _ in range(steps):
                if sign > 0:
                    nxt_c = (c + 1) % k
                    out.append((int(self.plus[d, cur]), 0))
                else:
                    nxt_c = (c - 1) % k
                    prev = cur + (nxt_c - c) * stride
                    out.append((int(self.plus[d, prev]), 1))
                cur += (nxt_c - c) * stride
                c = nxt_c
        out.append((dst, 1))
        return out


@NETWORKS.register()
class Mesh(_Grid):
    """1-D to 3-D mesh (no wrap-around), dimension-order routing."""

    routes_from_values = True
    name = "mesh"
    description = "1-D to 3-D mesh, dimension-order routing, injection link per node"
    wrap = False


@NETWORKS.register()
class Torus(_Grid):
    """1-D to 3-D torus, dimension-order routing the shorter way round (+ on ties)."""

    routes_from_values = True
    name = "torus"
    description = "1-D to 3-D torus, dimension-order shortest-way routing (+ on ties)"
    wrap = True
