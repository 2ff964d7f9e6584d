"""Binary GOAL schedules, as LogGOPSim's ``txt2bin`` writes them.

The layout is the one ``Graph::serialize_mmap`` writes and ``Parser``/``SerializedGraph``
read (``src/LogGOPSim/Parser.hpp`` of spcl/LogGOPSim): packed fields in the writing
machine's byte order (little-endian on every platform LogGOPSim builds on), no padding::

    uint64 magic                  4223 (2342: "invalidated by a --save-mem run")
    -- offsets below are relative to byte 8 (just after the magic) --
    uint32 num_ranks; uint8 max_cpu; uint8 max_nic
    uint64 start[r], end[r]       for r in 0..num_ranks-1 (the jump table)
    at start[r]:
      uint32 num_nodes; uint32 num_roots; uint32 root_offsets[num_roots]
      node[num_nodes], 39 bytes each:
        uint32 dependencies; uint8 type (1 send, 2 recv, 3 calc); uint32 peer;
        uint64 size; uint32 tag; uint8 cpu; uint8 nic;
        uint32 n_done_dependents; uint32 first_done_dependent;
        uint32 n_start_dependents; uint32 first_start_dependent
      uint32 appendix[...]        dependent node indices, indexed by the "first_*" fields

``B`` being in ``A``'s done list means ``B requires A``; in its start list ``B irequires A``.
Node indices are declaration order, which ccmod uses to break ties as for text.
"""
from __future__ import annotations

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.guard import check_declared_ranks
from ccmod.workloads.goal_schedule import CALC, RECV, SEND

MAGIC = 4223
MAGIC_INVALID = 2342
_NODE = np.dtype([("deps", "<u4"), ("type", "u1"), ("peer", "<u4"), ("size", "<u8"),
                  ("tag", "<u4"), ("cpu", "u1"), ("nic", "u1"), ("ndone", "<u4"),
                  ("done0", "<u4"), ("nstart", "<u4"), ("start0", "<u4")])
_ANY = 0xFFFFFFFF   # LogGOPSim's ANY_SOURCE / ANY_TAG (uint32 max)


def is_binary_goal(head: bytes) -> bool:
    """True when ``head`` starts with txt2bin's magic number (valid or invalidated)."""
    if len(head) < 8:
        return False
    return int.from_bytes(head[:8], "little") in (MAGIC, MAGIC_INVALID)


def parse_goal_binary(path: str, graph_cls):
    """Return (num_ranks, {rank: graph}) of a binary GOAL schedule.

    ``graph_cls`` is the text reader's per-rank graph class (``add``, ``deps``, ``labels``),
    so both forms replay through the same code. ``line`` of an operation is its node index.
    """
    data = np.fromfile(path, dtype=np.uint8)

    def bad(what, rank=None):
        where = f" (rank {rank})" if rank is not None else ""
        return CcmodInputError(f"binary GOAL schedule is damaged: {what}{where}", source=path,
                               hint="rewrite it with LogGOPSim's txt2bin, or give the text form")

    def u(fmt, off, count=1):
        end = off + np.dtype(fmt).itemsize * count
        if off < 0 or end > len(data):
            raise bad(f"field at byte {off} lies beyond the end ({len(data)} bytes)")
        return np.frombuffer(data[off:end].tobytes(), dtype=fmt, count=count)

    magic = int(u("<u8", 0)[0])
    if magic == MAGIC_INVALID:
        raise CcmodInputError("this binary GOAL schedule was invalidated by a LogGOPSim "
                              "--save-mem run (its dependency counters were consumed)",
                              source=path, hint="rewrite it with txt2bin")
    base = 8
    nranks = int(u("<u4", base)[0])
    check_declared_ranks(nranks, path, "the binary header declares")
    table = u("<u8", base + 6, 2 * nranks).reshape(nranks, 2)
    ranks = {}
    for r in range(nranks):
        start = base + int(table[r, 0])
        nnodes, nroots = (int(x) for x in u("<u4", start, 2))
        nodes_at = start + 8 + 4 * nroots
        if nodes_at + _NODE.itemsize * nnodes > len(data):
            raise bad(f"{nnodes} nodes do not fit in the file", r)
        nodes = np.frombuffer(data[nodes_at:nodes_at + _NODE.itemsize * nnodes].tobytes(),
                              dtype=_NODE)
        apdx_at = nodes_at + _NODE.itemsize * nnodes
        napdx = int(max((nodes["done0"] + nodes["ndone"]).max(initial=0),
                        (nodes["start0"] + nodes["nstart"]).max(initial=0)))
        apdx = u("<u4", apdx_at, napdx) if napdx else np.zeros(0, np.uint32)
        ranks[r] = _graph(graph_cls, nodes, apdx, nranks, r, bad)
    return nranks, ranks


def _graph(graph_cls, nodes, apdx, nranks, r, bad):
    """One rank's nodes and appendix as a ``graph_cls``; checks what the reader relies on."""
    g = graph_cls()
    kinds = {1: SEND, 2: RECV, 3: CALC}
    n = len(nodes)
    for i, nd in enumerate(nodes):
        kind = kinds.get(int(nd["type"]))
        if kind is None:
            raise bad(f"node {i} has unknown type {int(nd['type'])}", r)
        peer, tag = int(nd["peer"]), int(nd["tag"])
        if kind != CALC:
            if peer == _ANY or tag == _ANY:
                raise CcmodInputError(f"rank {r} node {i}: wildcard receive (ANY_SOURCE/"
                                      "ANY_TAG) is not supported", hint="ccmod matches "
                                      "messages per (source, tag)")
            if peer >= nranks:
                raise bad(f"node {i} names peer {peer} outside 0..{nranks - 1}", r)
        else:
            peer, tag = -1, 0
        g.add(kind, int(nd["size"]) if kind != CALC else float(nd["size"]), peer, tag,
              int(nd["cpu"]), int(nd["nic"]), i)
    indeg = np.zeros(n, np.int64)
    for i, nd in enumerate(nodes):
        for field, start_only in (("done", False), ("start", True)):
            first, count = int(nd[field + "0"]), int(nd["n" + field])
            for a in apdx[first:first + count]:
                if a >= n:
                    raise bad(f"node {i} lists dependent {int(a)} of {n} nodes", r)
                g.deps.append((int(a), start_only, i, i))
                indeg[a] += 1
    if not np.array_equal(indeg, nodes["deps"].astype(np.int64)):
        raise bad("dependency counts disagree with the dependent lists", r)
    return g
