"""Self-checks every built network runs on construction, and the link table of a network.

A network that knows its link endpoints (``vertex_names`` and ``link_ends``: vertex ids
``(a, b)`` per link, direction 0 = a → b; vertex ids ``0..nnodes-1`` are the nodes) gets
its routes checked hop by hop: each hop must leave the vertex the previous one reached,
the first must leave the source node and the last reach the destination. Every network
gets its resource ids and capacities checked. Large networks are checked on a
deterministic sample of pairs (every node to and from node 0, plus strided pairs), so
construction stays fast; :func:`check_routes` with ``pairs=`` checks any set.

Errors are one line (:class:`ccmod.errors.CcmodInputError`) naming the network, the pair
and what is wrong, e.g. an unreachable node or a route through a link that does not exist.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ccmod.errors import CcmodInputError

#: most (src, dst) pairs checked when a network is built
MAX_CHECKED_PAIRS = 4096
#: most hops followed when a network is built (long 1-D meshes have routes of n hops:
#: the sample stops there so construction stays proportional to the network's size)
MAX_CHECKED_HOPS = 400_000


def sample_pairs(nnodes: int, limit: int = MAX_CHECKED_PAIRS) -> np.ndarray:
    """Deterministic (src, dst) pairs: all of them for small networks, else a sample."""
    n = int(nnodes)
    if n < 2:
        return np.zeros((0, 2), dtype=np.int64)
    if n * (n - 1) <= limit:
        s, d = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        keep = s != d
        return np.stack([s[keep], d[keep]], 1).astype(np.int64)
    # few distinct sources (a topology file searches once per source), many destinations
    dst = np.unique(np.linspace(0, n - 1, min(n, limit // 4)).astype(np.int64))
    src = np.unique(np.linspace(0, n - 1, 32).astype(np.int64))
    out = [np.stack([np.zeros_like(dst), dst], 1), np.stack([src, np.zeros_like(src)], 1)]
    for s in src[1:]:
        d = dst[:: max(1, len(dst) // 32)]
        out.append(np.stack([np.full_like(d, s), d], 1))
    pairs = np.concatenate(out)
    return pairs[pairs[:, 0] != pairs[:, 1]][:limit]


def check_network(net, pairs=None) -> None:
    """Check arrays and routes of ``net``; raise a one-line CcmodInputError on a defect."""
    name = getattr(net, "name", "network")
    nl = len(net.link_names)
    cap = np.asarray(net.capacity_Bps, float)
    if cap.shape != (nl, 2) or np.asarray(net.latency_s).shape != (nl, 2):
        raise CcmodInputError(f"network '{name}' has {nl} links but capacity/latency arrays "
                              f"of shape {cap.shape}", source="--network")
    if not np.all(np.isfinite(cap)) or np.any(cap <= 0):
        raise CcmodInputError(f"network '{name}' has a link with a capacity that is not a "
                              "positive number", source="--network")
    lat = np.asarray(net.latency_s, float)
    if not np.all(np.isfinite(lat)) or np.any(lat < 0):
        raise CcmodInputError(f"network '{name}' has a link with a negative latency",
                              source="--network")
    if pairs is None:
        check_routes(net, sample_pairs(net.nnodes), max_hops=MAX_CHECKED_HOPS)
    else:
        check_routes(net, pairs)


def check_routes(net, pairs, max_hops: int | None = None) -> None:
    """Follow each route of ``pairs`` hop by hop (see the module docstring).

    ``max_hops`` stops the check (without error) once that many hops have been followed;
    the first pairs of the sample (every node to and from node 0) come first.
    """
    followed = 0
    name = getattr(net, "name", "network")
    nl = len(net.link_names)
    ends = getattr(net, "link_ends", None)
    chain = ends is not None and not getattr(net, "shared_medium", False)
    if chain:
        ends = np.asarray(ends, dtype=np.int64).reshape(-1, 2)
        if len(ends) != nl:
            raise CcmodInputError(f"network '{name}' gives endpoints for {len(ends)} of its "
                                  f"{nl} links", source="--network")
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    rows_bad = False
    if chain and len(pairs) and getattr(net, "node_resources", None) is None:
        from ccmod.netsys.base import has_route_rows
        if has_route_rows(net):
            bad = _first_bad_row(net, pairs, ends, nl)
            if bad is None:
                return                 # every pair's route checked at once
            pairs = pairs[bad:bad + 1]   # the hop by hop check below says what is wrong
            rows_bad = True
    for s, d in pairs:
        s, d = int(s), int(d)
        if max_hops is not None and followed >= max_hops:
            break
        hops = net.route(s, d)
        followed += len(hops)
        if not hops:
            raise CcmodInputError(f"network '{name}': node {d} cannot be reached from node {s}",
                                  source="--network")
        at = s
        for link, direction in hops:
            if not (0 <= int(link) < nl) or int(direction) not in (0, 1):
                raise CcmodInputError(f"network '{name}': the route {s}->{d} goes through "
                                      f"link {link} direction {direction}, which does not "
                                      f"exist ({nl} links, directions 0 and 1)",
                                      source="--network")
            if chain:
                a, b = ends[int(link)]
                frm, to = (a, b) if int(direction) == 0 else (b, a)
                if frm != at:
                    raise CcmodInputError(
                        f"network '{name}': the route {s}->{d} uses link "
                        f"{net.link_names[int(link)]} from {_vname(net, frm)} but the message is "
                        f"at {_vname(net, at)} (no such link there)", source="--network")
                at = to
        if chain and at != d:
            raise CcmodInputError(f"network '{name}': the route {s}->{d} ends at "
                                  f"{_vname(net, at)}, not at node {d}", source="--network")
        if rows_bad:                   # route() is right where route_rows() is not
            raise CcmodInputError(f"network '{name}': route_rows and route disagree on "
                                  f"{s}->{d}", source="--network")


def _first_bad_row(net, pairs, ends, nl):
    """The index of the first pair whose route (from ``net.route_rows``, every pair at
    once) fails a check of :func:`check_routes`, or None when all pass."""
    s, d = pairs[:, 0], pairs[:, 1]
    rows = np.asarray(net.route_rows(s, d), np.int64).reshape(len(pairs), -1)
    if rows.shape[1] == 0:
        return 0
    link, direction = rows >> 1, rows & 1
    ok = (link >= 0) & (link < nl)
    a, b = ends[np.where(ok, link, 0), 0], ends[np.where(ok, link, 0), 1]
    frm, to = np.where(direction == 0, a, b), np.where(direction == 0, b, a)
    good = ok.all(1) & (frm[:, 0] == s) & (to[:, -1] == d) & \
        (frm[:, 1:] == to[:, :-1]).all(1)
    bad = np.flatnonzero(~good)
    return int(bad[0]) if bad.size else None


def _vname(net, v: int) -> str:
    names = getattr(net, "vertex_names", None)
    return str(names[v]) if names is not None and 0 <= v < len(names) else f"vertex {v}"


if TYPE_CHECKING:   # pandas only for the link table (not on a run's start-up path)
    import pandas as pd


def link_table(net) -> pd.DataFrame:
    """One row per (link, direction): ``resource``, ``link``, ``name``, ``direction``,
    ``from``, ``to``, ``bandwidth_Bps``, ``latency_s``.

    ``from``/``to`` are vertex names when the network knows its endpoints, else empty.
    """
    import pandas as pd
    nl = len(net.link_names)
    ends = getattr(net, "link_ends", None)
    rows = []
    for link in range(nl):
        if ends is not None and len(ends) == nl:
            a, b = (_vname(net, int(x)) for x in ends[link])
        else:
            a = b = ""
        for d in (0, 1):
            rows.append({"resource": 2 * link + d, "link": link, "name": net.link_names[link],
                         "direction": "up" if d == 0 else "down",
                         "from": a if d == 0 else b, "to": b if d == 0 else a,
                         "bandwidth_Bps": float(net.capacity_Bps[link, d]),
                         "latency_s": float(net.latency_s[link, d])})
    return pd.DataFrame(rows, columns=["resource", "link", "name", "direction", "from", "to",
                                       "bandwidth_Bps", "latency_s"])
