"""``topology``: a network read from a small text file, routed by BFS shortest paths.

File format (one statement per line, ``#`` starts a comment)::

    nodes 8                    # endpoints named 0..7 (node index = its number)
    node gpu0 gpu1             # ...or named endpoints, indexed in declaration order
    switch s0 s1               # switches (forward traffic, run no ranks)
    link 0 s0                  # full-duplex link; direction 0 ("up") is 0 -> s0
    link s0 s1 bandwidth=2.5e9 latency=5e-7 name=trunk

``bandwidth`` (bytes/s) and ``latency`` (s) default to the network parameters of the same
name. Routes are shortest paths in number of links, found by breadth-first search from the
source; ties are broken deterministically by link declaration order (the first link that
reaches a switch wins). Endpoints never forward traffic for others.
"""
from __future__ import annotations

from collections import deque
import math
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.guard import check_network_size, excerpt
from ccmod.netsys.base import Param
from ccmod.netsys.topologies import MAX_NODES, BuiltNetwork
from ccmod.netsys.registry import NETWORKS


#: the largest topology file read (a million-link file is ~40 MB)
_MAX_BYTES = 64 << 20


@NETWORKS.register()
class TopologyFile(BuiltNetwork):
    """A network described by a topology file (``file=PATH``), BFS shortest-path routing."""

    name = "topology"
    description = "network read from a topology file (file=PATH), BFS shortest-path routes"
    params = {
        "file": Param(str, None, "topology file (required; see docs/networks.md for the format)"),
        "bandwidth": Param(float, 1.25e9, "bytes/s of links that give no bandwidth= (10 Gb/s)"),
        "latency": Param(float, 1e-6, "seconds of links that give no latency="),
    }

    def build(self) -> None:
        path = self.values["file"]
        if not path:
            self.fail("network 'topology' needs file=PATH", hint="e.g. --network topology:file=net.txt")
        self.path = str(path)
        self._parse(Path(self.path))
        if self.nodes_needed is not None and self.nnodes < self.nodes_needed:
            raise CcmodInputError(f"topology declares {self.nnodes} nodes but the run needs "
                                  f"{self.nodes_needed}", source=self.path,
                                  hint="add nodes or use --map")
        self._trees: dict[int, np.ndarray] = {}

    # parsing ----------------------------------------------------------------------------
    def _err(self, what: str, line: int | None = None, hint: str | None = None):
        raise CcmodInputError(what, source=self.path, line=line, hint=hint)

    def _parse(self, p: Path) -> None:
        try:
            if p.is_dir():
                self._err("is a folder, not a topology file")
            with open(p, "rb") as f:
                # a topology file is small text: a huge or binary file is not one
                data = f.read(_MAX_BYTES + 1)
            if len(data) > _MAX_BYTES:
                self._err(f"not a topology file (larger than {_MAX_BYTES:,} bytes)")
            if b"\x00" in data:
                self._err("not a topology file (binary content)")
            lines = data.decode("utf-8").splitlines()
        except FileNotFoundError:
            self._err("topology file not found (given by --network topology:file=...)",
                      hint="give the path of an existing topology file")
        except UnicodeDecodeError:
            self._err("not a topology file (not UTF-8 text)")
        except OSError as exc:
            self._err(f"cannot read topology file: {exc.strerror or type(exc).__name__}")
        index: dict[str, int] = {}      # vertex name -> vertex id
        nnodes = 0
        is_node: list[bool] = []
        links: list[tuple[int, int]] = []
        names: list[str] = []
        cap: list[float] = []
        lat: list[float] = []
        for lineno, raw in enumerate(lines, start=1):
            f = raw.split("#", 1)[0].split()
            if not f:
                continue
            kw, args = f[0].lower(), f[1:]
            if not index and kw not in ("nodes", "node", "switch", "switches", "link"):
                # the first statement already fails: not a topology file, quote none of it
                self._err("not a topology file (the first statement is none of nodes, node, "
                          "switch, link)", lineno, hint="see docs/networks.md for the format")
            if kw in ("nodes", "node", "switch", "switches"):
                if kw == "nodes":
                    if len(args) != 1 or not args[0].isdigit() or int(args[0]) < 1:
                        self._err("'nodes' takes one positive integer", lineno)
                    if nnodes + int(args[0]) > MAX_NODES:
                        self._err(f"too many nodes (at most {MAX_NODES})", lineno)
                    args = [str(nnodes + i) for i in range(int(args[0]))]
                if not args:
                    self._err(f"'{kw}' needs at least one name", lineno)
                node = kw.startswith("node")
                if node and any(not n for n in is_node):
                    self._err("declare every node before the first switch", lineno,
                              hint="node indices follow declaration order")
                for a in args:
                    if a in index:
                        self._err(f"'{excerpt(a)}' is declared twice", lineno)
                    if "=" in a:
                        self._err(f"'{excerpt(a)}' is not a valid name", lineno)
                    index[a] = len(is_node)
                    is_node.append(node)
                    nnodes += node
            elif kw == "link":
                if len(args) < 2:
                    self._err("'link' needs two endpoints: link A B [bandwidth=..] [latency=..]",
                              lineno)
                a, b = args[0], args[1]
                for v in (a, b):
                    if v not in index:
                        self._err(f"'{excerpt(v)}' is not a declared node or switch", lineno)
                if a == b:
                    self._err(f"link from '{excerpt(a)}' to itself", lineno)
                opts = {"bandwidth": self.values["bandwidth"], "latency": self.values["latency"],
                        "name": f"{a}-{b}"}
                for item in args[2:]:
                    k, eq, val = item.partition("=")
                    if not eq or k not in opts:
                        self._err(f"unknown link option '{excerpt(item)}'", lineno,
                                  hint="valid: bandwidth=, latency=, name=")
                    if k == "name":
                        opts[k] = val
                        continue
                    try:
                        x = float(val)
                    except ValueError:
                        x = math.nan
                    if not math.isfinite(x) or (x <= 0 if k == "bandwidth" else x < 0):
                        self._err(f"link {k}='{excerpt(val)}' must be a number "
                                  f"{'> 0 (bytes/s)' if k == 'bandwidth' else '>= 0 (s)'}", lineno)
                    opts[k] = x
                links.append((index[a], index[b]))
                names.append(str(opts["name"]))
                cap.append(opts["bandwidth"])
                lat.append(opts["latency"])
            else:
                self._err(f"unknown statement '{excerpt(f[0])}'", lineno,
                          hint="valid: nodes, node, switch, link")
        if nnodes == 0:
            self._err("topology declares no nodes", hint="add e.g. 'nodes 4'")
        check_network_size(self.name, nnodes, self.nodes_needed, f"file {excerpt(p.name)}",
                           "nodes", self.path)
        self.nnodes = nnodes
        self.vertex_names = list(index)
        self.is_node = np.asarray(is_node, dtype=bool)
        self.link_ends = np.asarray(links, dtype=np.int64).reshape(-1, 2)
        self.link_names = names
        self.capacity_Bps = np.repeat(np.asarray(cap, float)[:, None], 2, axis=1)
        self.latency_s = np.repeat(np.asarray(lat, float)[:, None], 2, axis=1)
        # adjacency in link declaration order: the BFS tie-break rule
        self.adj: list[list[tuple[int, int, int]]] = [[] for _ in is_node]
        for link, (a, b) in enumerate(links):
            self.adj[a].append((b, link, 0))
            self.adj[b].append((a, link, 1))

    # routing ----------------------------------------------------------------------------
    def _tree(self, src: int) -> np.ndarray:
        """BFS parents from ``src``: row v = (previous vertex, link, direction) or -1."""
        tree = self._trees.get(src)
        if tree is not None:
            return tree
        tree = np.full((len(self.adj), 3), -1, dtype=np.int64)
        tree[src, 0] = src
        queue = deque([src])
        while queue:
            u = queue.popleft()
            if u != src and self.is_node[u]:
                continue  # endpoints do not forward
            for v, link, d in self.adj[u]:
                if tree[v, 0] < 0:
                    tree[v] = (u, link, d)
                    queue.append(v)
        self._trees[src] = tree
        return tree

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        src, dst = int(src), int(dst)
        tree = self._tree(src)
        if tree[dst, 0] < 0:
            self._err(f"node {self.vertex_names[dst]} cannot be reached from node "
                      f"{self.vertex_names[src]}", hint="add links")
        hops = []
        v = dst
        while v != src:
            u, link, d = tree[v]
            hops.append((int(link), int(d)))
            v = int(u)
        return hops[::-1]
