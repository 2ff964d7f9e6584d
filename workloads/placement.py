"""Rank placement recorded in traces (the node each rank ran on).

Readers put it in ``workload.meta["placement"]`` = ``{"node_of_rank": [...],
"node_names": [...], "source": "..."}``; a run uses it by default (``--map trace``) so
ranks that shared a node in the traced run share one in the prediction (their messages
use the intra-node path). ``--map`` overrides it.

* Paraver: the header's application list gives every task as ``threads:node``
  (``4(1:1,1:1,1:1,1:1)`` = four tasks on node 1); the ``.row`` file's ``LEVEL NODE``
  section names the nodes.
* OTF2: each MPI rank's location group hangs under a system-tree node; ranks whose
  groups share the lowest ``node`` (else the parent) system-tree node share a node.
* DUMPI: each rank's header records its hostname.
"""
from __future__ import annotations

import os
import re


def placement_meta(node_keys, source: str) -> dict | None:
    """Number the distinct ``node_keys`` (one per rank, in rank order) from 0.

    Returns None when a key is missing (no placement recorded for some rank).
    """
    keys = list(node_keys)
    if not keys or any(k is None for k in keys):
        return None
    index: dict = {}
    nodes = [index.setdefault(k, len(index)) for k in keys]
    return {"node_of_rank": nodes, "node_names": [str(k) for k in index],
            "source": source}


def paraver_task_nodes(app_specs) -> list[int] | None:
    """1-based node of every task, from the header's application specs (``4(1:1,1:2,..)``)."""
    nodes = []
    for spec in app_specs:
        m = re.match(r"\s*\d+\s*\(([^()]*)\)", spec)     # '4(1:1,1:2),5': ',5' = comms
        if m is None:
            return None
        for item in m.group(1).split(","):
            parts = item.strip().split(":")
            if len(parts) != 2 or not parts[1].strip().isdigit():
                return None
            nodes.append(int(parts[1]))
    return nodes or None


def paraver_row_nodes(row_path: str) -> list[str] | None:
    """Node names of a ``.row`` file's ``LEVEL NODE SIZE k`` section."""
    if not os.path.isfile(row_path):
        return None
    try:
        with open(row_path, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f]
    except OSError:
        return None
    for i, ln in enumerate(lines):
        m = re.fullmatch(r"LEVEL\s+NODE\s+SIZE\s+(\d+)", ln)
        if m:
            k = int(m.group(1))
            names = lines[i + 1:i + 1 + k]
            return names if len(names) == k and all(names) else None
    return None


def paraver_placement(app_specs, base: str, numbered: bool = False) -> dict | None:
    """Placement of a Paraver trace's ranks (header node ids, ``base.row`` names).

    ``numbered``: the trace is ccmod's own output, whose ``.row`` names the nodes
    ``node<N>`` after the run's node numbers; those numbers are kept (so a ``--map`` that
    permutes nodes or leaves some unused reads back onto the same nodes).
    """
    nodes = paraver_task_nodes(app_specs)
    if nodes is None:
        return None
    names = paraver_row_nodes(base + ".row")
    ids = [re.fullmatch(r"node(\d{1,9})", n) for n in names or []]
    if numbered and ids and all(ids) and all(1 <= n <= len(ids) for n in nodes):
        node_of_rank = [int(ids[n - 1].group(1)) for n in nodes]
        return {"node_of_rank": node_of_rank,
                "node_names": [f"node{k}" for k in range(max(node_of_rank) + 1)],
                "source": f"ccmod's {os.path.basename(base)}.row (node numbers kept)"}
    if names and all(1 <= n <= len(names) for n in nodes):
        keys = [names[n - 1] for n in nodes]
        src = f"Paraver header and {os.path.basename(base)}.row"
    else:
        keys = [f"node{n}" for n in nodes]
        src = "Paraver header"
    return placement_meta(keys, src)


def otf2_node_name(group) -> str | None:
    """Name of the system-tree node a location group ran on (class ``node``, else its
    direct system-tree parent); None when the group has no system-tree parent."""
    parent = getattr(group, "system_tree_parent", None)
    q = parent
    while q is not None:
        if str(getattr(q, "class_name", "") or "").lower() == "node":
            return str(q.name)
        q = getattr(q, "parent", None)
    return None if parent is None else str(parent.name)


def otf2_placement(loc_rank: dict, nranks: int) -> dict | None:
    """Placement of an OTF2 trace's ranks from their location groups' system tree."""
    keys = [None] * nranks
    for loc, r in loc_rank.items():
        if 0 <= r < nranks and keys[r] is None:
            keys[r] = otf2_node_name(getattr(loc, "group", None))
    return placement_meta(keys, "OTF2 system tree")
