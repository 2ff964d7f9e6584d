"""Rank → node placement (``--map``).

``None`` / ``identity``  rank r runs on node r
``block:K``              K consecutive ranks per node: node = rank // K
``cyclic:K``             ranks dealt round-robin over K nodes: node = rank % K
FILE                     one node index per line in rank order, or ``rank node`` pairs;
                         ``#`` starts a comment, blank lines are ignored
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.guard import UNUSED_NODES_FACTOR, UNUSED_NODES_FLOOR, excerpt

SRC = "--map"


def rank_to_node(spec: str | os.PathLike | None, nranks: int) -> np.ndarray:
    """Node index of every rank.

    Parameters
    ----------
    spec : str, path or None
        ``None``/``"identity"``, ``"block:K"``, ``"cyclic:K"`` or a map file path.
    nranks : int
        Number of ranks in the workload.

    Returns
    -------
    numpy.ndarray of int32, shape (nranks,)
        Use :func:`nodes_needed` for the number of nodes the run needs.

    Raises
    ------
    CcmodInputError
        Bad K, unreadable file, or a bad line (reported as ``file:line``).
    """
    nranks = int(nranks)
    ranks = np.arange(nranks, dtype=np.int64)
    # "trace" (the placement recorded in a trace) is resolved by ccmod.api.run; here,
    # without a trace, it is the identity
    if spec is None or str(spec).strip() in ("", "identity", "trace"):
        return ranks.astype(np.int32)
    text = str(spec).strip()
    kind, sep, arg = text.partition(":")
    if sep and kind in ("block", "cyclic") and not _is_file(text):
        k = _positive_int(arg, text)
        out = ranks // k if kind == "block" else ranks % k
        return out.astype(np.int32)
    if kind in ("block", "cyclic") and not sep and not _is_file(text):
        raise CcmodInputError(f"'{text}' needs a count", source=SRC,
                              hint=f"use {kind}:K, e.g. {kind}:4")
    m = _read_map_file(Path(text), nranks)
    # node indices far beyond the rank count would size the network (and its per-link
    # state) for nodes no rank is on: refuse them here, naming the map file
    limit = max(UNUSED_NODES_FLOOR, UNUSED_NODES_FACTOR * nranks)
    if nodes_needed(m) > limit:
        raise CcmodInputError(f"node {int(m.max())} is far beyond what {nranks} ranks use: "
                              f"the network would be built for {nodes_needed(m):,} nodes "
                              f"(at most {limit:,} for this run)", source=text,
                              hint="number the nodes 0..N-1")
    return m


def _is_file(text: str) -> bool:
    """Whether ``text`` names an existing file (a name too long for the OS is not one)."""
    try:
        return Path(text).exists()
    except (OSError, ValueError):
        return False


def nodes_needed(mapping: np.ndarray) -> int:
    """Number of nodes a placement uses: max node index + 1 (0 for no ranks)."""
    mapping = np.asarray(mapping)
    return int(mapping.max()) + 1 if mapping.size else 0


def resolve_map(spec: str | os.PathLike | None, nranks: int) -> tuple[np.ndarray, int]:
    """``(rank_to_node(spec, nranks), nodes needed)`` in one call."""
    m = rank_to_node(spec, nranks)
    return m, nodes_needed(m)


def _positive_int(arg: str, text: str) -> int:
    try:
        v = float(arg)
        if not v.is_integer() or v < 1 or v >= 2 ** 31:
            raise ValueError
    except ValueError:
        raise CcmodInputError(f"'{excerpt(text)}': K must be a positive integer below 2^31", source=SRC,
                              hint="e.g. block:4 (4 ranks per node) or cyclic:8 (8 nodes)") from None
    return int(v)


def _node_index(tok: str, path: str, lineno: int, what: str) -> int:
    try:
        v = int(tok)
    except ValueError:
        raise CcmodInputError(f"{what} '{excerpt(tok)}' is not an integer", source=path, line=lineno,
                              hint="lines are 'NODE' (in rank order) or 'RANK NODE'") from None
    if v < 0:
        raise CcmodInputError(f"{what} {v} is negative", source=path, line=lineno)
    if v >= np.iinfo(np.int32).max:
        raise CcmodInputError(f"{what} {v} is too large", source=path, line=lineno,
                              hint=f"at most {np.iinfo(np.int32).max - 1}")
    return v


def _read_map_file(path: Path, nranks: int) -> np.ndarray:
    src = str(path)
    try:
        if path.is_dir():
            raise CcmodInputError("is a folder, not a map file", source=src,
                                  hint="--map takes block:K, cyclic:K or a file")
        with open(path, "rb") as f:
            # a map file has one short line per rank: a file far larger is not one
            limit = 256 * (nranks + 64)
            data = f.read(limit + 1)
        if len(data) > limit or b"\x00" in data:
            raise CcmodInputError("not a map file (binary or far larger than one line per "
                                  f"rank for {nranks} ranks)", source=src,
                                  hint="lines are 'NODE' (in rank order) or 'RANK NODE'")
        lines = data.decode("utf-8").splitlines()
    except FileNotFoundError:
        raise CcmodInputError("map file not found (given by --map)", source=src,
                              hint="--map takes block:K, cyclic:K or a file") from None
    except UnicodeDecodeError:
        raise CcmodInputError("not a map file (not UTF-8 text)", source=src) from None
    except OSError as exc:
        raise CcmodInputError(f"cannot read map file: {exc.strerror or type(exc).__name__}",
                              source=src) from None
    out = np.full(nranks, -1, dtype=np.int64)
    form = None  # 1 = node per line in rank order, 2 = "rank node" pairs
    seen = 0
    last_line = 0
    for lineno, raw in enumerate(lines, start=1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        last_line = lineno
        if seen == 0 and not all(t.lstrip("+-").isdigit() for t in fields[:2]):
            # the first line already fails: this is not a map file, so quote none of it
            raise CcmodInputError("not a map file (the first line is not 'NODE' or "
                                  "'RANK NODE')", source=src, line=lineno,
                                  hint="--map takes block:K, cyclic:K or a map file")
        if len(fields) > 2:
            raise CcmodInputError(f"expected 'NODE' or 'RANK NODE', got {len(fields)} fields",
                                  source=src, line=lineno)
        if form is None:
            form = len(fields)
        elif len(fields) != form:
            raise CcmodInputError("mixes 'NODE' lines and 'RANK NODE' lines", source=src,
                                  line=lineno, hint="use one form for the whole file")
        if form == 1:
            rank, node = seen, _node_index(fields[0], src, lineno, "node")
        else:
            rank = _node_index(fields[0], src, lineno, "rank")
            node = _node_index(fields[1], src, lineno, "node")
        if rank >= nranks:
            raise CcmodInputError(f"rank {rank} but the workload has {nranks} ranks", source=src,
                                  line=lineno)
        if out[rank] >= 0:
            raise CcmodInputError(f"rank {rank} is placed twice", source=src, line=lineno)
        out[rank] = node
        seen += 1
    missing = np.flatnonzero(out < 0)
    if missing.size:
        raise CcmodInputError(f"no node for rank {missing[0]} ({missing.size} of {nranks} ranks "
                              "unplaced)", source=src, line=last_line or None,
                              hint="give one node per rank")
    if out.size and out.max() >= np.iinfo(np.int32).max:
        raise CcmodInputError("node index too large", source=src)
    return out.astype(np.int32)
