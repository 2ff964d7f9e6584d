"""``ccmod networks show SPEC``: a network's link table and a drawing of its topology.

:func:`show_network` builds the network (validating it) and returns its link table
(:func:`ccmod.netsys.validate.link_table`); :func:`draw_network` draws vertices and links
with matplotlib to PNG, SVG or PDF (chosen by the extension). Networks may provide
``layout()`` (vertex id → (x, y)); otherwise vertices are placed on a circle, nodes on an
outer ring and switches inside.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError

#: drawings of bigger networks would be an unreadable blot
MAX_DRAWN_LINKS = 20_000


def show_network(spec, nodes: int | None = None):
    """Build ``spec`` (sized for ``nodes`` when it has derived sizes; default 16).

    Returns
    -------
    (Network, pandas.DataFrame)
        The validated network and its link table, one row per (link, direction).
    """
    from ccmod.netsys.networks import make_network
    from ccmod.netsys.validate import link_table
    if nodes is not None:
        net = make_network(spec, int(nodes))
    else:
        try:      # explicit sizes as given; derived ones for 16 nodes
            net = make_network(spec, None)
        except CcmodInputError as exc:
            if "when no run sizes it" not in str(exc):
                raise
            net = make_network(spec, 16)
    return net, link_table(net)


def _positions(net) -> dict:
    lay = getattr(net, "layout", None)
    if callable(lay):
        return lay()
    names = getattr(net, "vertex_names", None)
    nv = len(names) if names is not None else net.nnodes
    dims = getattr(net, "dims", None)
    if dims is not None and getattr(net, "strides", None) is not None:
        # grids: routers at their coordinates, nodes beside them
        pos = {}
        n = net.nnodes
        for i in range(n):
            c = [(i // net.strides[d]) % k for d, k in enumerate(dims)] + [0, 0]
            # 3-D: the z planes side by side
            x, y = c[0] + (dims[0] + 1) * c[2], c[1]
            pos[n + i] = (float(x), float(y))
            pos[i] = (float(x) - 0.25, float(y) - 0.25)
        return pos
    pos = {}
    n = net.nnodes
    for v in range(nv):
        if v < n:
            a, r = 2 * math.pi * v / max(n, 1), 1.0
        else:
            k = nv - n
            a, r = 2 * math.pi * (v - n) / max(k, 1), 0.5 if k > 1 else 0.0
        pos[v] = (r * math.cos(a), r * math.sin(a))
    return pos


def draw_network(net, path, title: str | None = None) -> Path:
    """Draw the topology of ``net`` to ``path`` (.png, .svg or .pdf), atomically."""
    path = Path(path)
    ext = path.suffix.lower().lstrip(".")
    if ext not in ("png", "svg", "pdf"):
        raise CcmodInputError(f"cannot draw to '{path.name}'", source="--draw",
                              hint="use a .png, .svg or .pdf file name")
    ends = getattr(net, "link_ends", None)
    if ends is None:
        raise CcmodInputError(f"network '{net.name}' does not describe its link endpoints, so "
                              "it cannot be drawn", source="--draw")
    if len(ends) > MAX_DRAWN_LINKS:
        raise CcmodInputError(f"network '{net.name}' has {len(ends)} links, too many to draw",
                              source="--draw", hint=f"at most {MAX_DRAWN_LINKS}")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    pos = _positions(net)
    ends = np.asarray(ends, dtype=np.int64)
    xy = np.array([[pos[int(a)], pos[int(b)]] for a, b in ends], float).reshape(-1, 2, 2)
    cap = net.capacity_Bps[:, 0]
    width = 0.4 + 1.6 * (cap / cap.max()) if len(cap) else cap
    fig, ax = plt.subplots(figsize=(8, 6))
    ax.add_collection(LineCollection(xy, linewidths=width, colors="#8a8a8a", alpha=0.8))
    n = net.nnodes
    vids = np.array(sorted(pos), dtype=np.int64)
    pts = np.array([pos[int(v)] for v in vids], float)
    is_node = vids < n
    size = max(4.0, 60.0 / math.sqrt(max(len(vids), 1)) * 3)
    ax.scatter(pts[is_node, 0], pts[is_node, 1], s=size, c="#1f77b4", label="nodes", zorder=3)
    if (~is_node).any():
        ax.scatter(pts[~is_node, 0], pts[~is_node, 1], s=size * 1.6, c="#d62728", marker="s",
                   label="switches / routers", zorder=3)
    if len(vids) <= 80:
        names = getattr(net, "vertex_names", None)
        for v, (x, y) in zip(vids, pts):
            ax.annotate(str(names[v]) if names is not None else str(v), (x, y), fontsize=6,
                        xytext=(2, 2), textcoords="offset points")
    ax.set_title(title or f"{net.name}: {n} nodes, {net.nlinks} links "
                 "(line width ~ bandwidth)")
    ax.legend(loc="upper right", fontsize=8)
    ax.set_aspect("equal", adjustable="datalim")
    ax.autoscale()
    ax.axis("off")
    from ccmod.atomic import atomic_path
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, bbox_inches="tight", dpi=120)
    except OSError as exc:
        raise CcmodInputError(f"cannot write the drawing: {exc.strerror or exc}",
                              source=os.fspath(path)) from None
    finally:
        plt.close(fig)
    return path
