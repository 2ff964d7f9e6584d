"""Decompose MPI collectives into point-to-point ops, one rank at a time.

A trace reader calls :func:`expand` for every collective record of a rank. Each rank expands
independently and deterministically: given the same ``(kind, nranks, seq, sizes, root,
algorithm)`` on every rank, the sends generated on one rank match the receives generated on
its peers one-to-one per ``(src, dst, tag)`` channel, with equal sizes.

Meaning of ``nbytes`` (MPI count x datatype size) per kind
----------------------------------------------------------
===============  ===========================================================================
kind             ``nbytes`` / counts
===============  ===========================================================================
barrier          ignored (0-byte messages)
bcast            size of the broadcast buffer
reduce           size of the vector each rank contributes (= size of the result)
allreduce        size of the vector each rank contributes (= size of the result)
gather           bytes each rank contributes (root ends with ``nranks * nbytes``)
gatherv          this rank's contribution; the root needs ``recv_counts`` (bytes per rank)
scatter          bytes each rank receives (root sends ``nranks * nbytes`` in total)
scatterv         root needs ``send_counts`` (bytes per rank); others receive ``nbytes``
allgather        bytes each rank contributes
allgatherv       ``recv_counts`` = contribution of every rank (default: ``nbytes`` each)
alltoall         bytes sent to each destination (one block)
alltoallv        ``send_counts[d]`` bytes to rank d, ``recv_counts[s]`` from rank s
reduce_scatter   ``recv_counts`` = result block of every rank (default: ``nbytes`` each)
===============  ===========================================================================

Tags and requests
-----------------
Collective messages use ``tag = COLL_TAG_BASE - seq`` where ``seq`` counts the collective
calls of the rank (every rank calls collectives in the same order), so they never match
point-to-point messages (tags >= 0) or another collective. Request ids are ``req_base + i``
when ``req_base`` is given, else the private range ``-(seq+1) * REQ_STRIDE - i``; every
request created is closed with its own OP_WAIT (never OP_WAITALL, which would also wait for
the application's outstanding requests).

Default algorithms follow MPICH's choices; see :func:`default_algorithm` and
docs/workloads-generators.md.
"""
from __future__ import annotations

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.workloads import coll_algos as A
from ccmod.workloads import mpi_presets as P
from ccmod.workloads.base import WorkloadBuilder

#: tag of collective number ``seq`` is ``COLL_TAG_BASE - seq`` (p2p tags are >= 0)
COLL_TAG_BASE = -(1 << 20)
#: private request-id stride per collective call (ids ``-(seq+1)*REQ_STRIDE - i``)
REQ_STRIDE = 1 << 32

# MPICH-like switch points (bytes)
BCAST_SHORT_BYTES = 12288          # bcast: binomial below this (or P < 8)
ALLREDUCE_SHORT_BYTES = 2048       # allreduce: recursive doubling at or below this
ALLGATHER_LONG_BYTES = 524288      # allgather: total size from which ring is used
ALLGATHER_SHORT_BYTES = 81920      # allgather: Bruck below this for non-power-of-two P
ALLTOALL_SHORT_BYTES = 256         # alltoall: Bruck at or below this block size (P >= 8)
ALLTOALL_MEDIUM_BYTES = 32768      # alltoall: linear isend/irecv at or below; pairwise above

ALGORITHMS: dict[str, dict[str, str]] = {
    "barrier": {
        "dissemination": "ceil(log2 P) rounds, rank r sends 0 bytes to r+2^k, recvs from r-2^k",
        "native": "one OP_BARRIER (pure synchronisation, no messages)",
    },
    "bcast": {
        "binomial": "binomial tree from the root (MPICH short messages)",
        "scatter_allgather": "binomial scatter of P chunks then ring allgather (van de Geijn)",
        "linear": "root sends the buffer to every other rank",
    },
    "reduce": {
        "binomial": "binomial tree towards the root",
        "linear": "every rank sends its vector to the root",
    },
    "allreduce": {
        "recursive_doubling": "log2 P full-vector exchanges (extra ranks folded in/out)",
        "ring": "ring reduce-scatter + ring allgather, 2(P-1)/P * n sent per rank",
        "rabenseifner": "recursive-halving reduce-scatter + recursive-doubling allgather",
    },
    "gather": {
        "binomial": "binomial tree, subtrees forward their aggregated blocks",
        "linear": "every rank sends its block to the root",
    },
    "gatherv": {
        "linear": "every rank sends its block to the root (MPICH)",
        "binomial": "binomial tree (needs recv_counts on every rank)",
    },
    "scatter": {
        "binomial": "binomial tree, parents forward their subtree's blocks",
        "linear": "root sends each rank its block",
    },
    "scatterv": {
        "linear": "root sends each rank its block (MPICH)",
        "binomial": "binomial tree (needs send_counts on every rank)",
    },
    "allgather": {
        "recursive_doubling": "log2 P exchanges of doubling windows (extra ranks folded)",
        "bruck": "ceil(log2 P) steps, rank r sends to r-2^k",
        "ring": "P-1 steps, one block to the right neighbour per step",
        "neighbor_exchange": "P/2 steps (even P), 1 then 2 blocks with alternating "
                             "neighbours (Open MPI)",
    },
    "reduce_scatter": {
        "pairwise": "P-1 steps, at step i send block of r+i to r+i",
        "ring": "P-1 steps around the ring, partial sums of one block per step",
    },
    "alltoall": {
        "pairwise": "P-1 exchange steps (XOR partners for power-of-two P)",
        "pairwise_shift": "P-1 exchange steps, send to r+i, recv from r-i (Open MPI)",
        "linear": "post every irecv and isend, then wait for each",
        "bruck": "ceil(log2 P) steps of aggregated blocks (short messages)",
    },
    "alltoallv": {
        "linear": "post every irecv and isend, then wait for each (MPICH)",
        "pairwise": "P-1 exchange steps (XOR partners for power-of-two P)",
        "pairwise_shift": "P-1 exchange steps, send to r+i, recv from r-i (Open MPI)",
    },
}
ALGORITHMS["allgatherv"] = dict(ALGORITHMS["allgather"])
ALGORITHMS["allgatherv"]["bruck"] = "ceil(log2 P) steps, rank r sends to r-2^k (variable blocks)"

KINDS: tuple[str, ...] = tuple(ALGORITHMS)
_ALIASES = {"reducescatter": "reduce_scatter", "reduce_scatter_block": "reduce_scatter",
            "broadcast": "bcast", "all_reduce": "allreduce", "all_gather": "allgather",
            "all_gatherv": "allgatherv", "all_to_all": "alltoall", "all_to_allv": "alltoallv"}


def normalize_kind(kind: str) -> str:
    """Return the canonical kind name (lower case, aliases such as ``reducescatter`` resolved)."""
    k = str(kind).strip().lower().replace("-", "_")
    if k.startswith("mpi_"):
        k = k[4:]
    return _ALIASES.get(k, k)


def _pof2(p: int) -> int:
    """Largest power of two <= p."""
    return 1 << (p.bit_length() - 1)


def default_algorithm(kind: str, nranks: int, nbytes: int = 0, total_bytes: int | None = None) -> str:
    """Return the algorithm an MPICH-like library would pick.

    Parameters
    ----------
    kind : str
    nranks : int
    nbytes : int
        Per-kind meaning (see module docstring).
    total_bytes : int, optional
        Total gathered size for allgather(v) (default ``nranks * nbytes``).
    """
    kind = normalize_kind(kind)
    pow2 = nranks == _pof2(max(nranks, 1))
    if kind == "barrier":
        return "dissemination"
    if kind == "bcast":
        return "binomial" if nbytes < BCAST_SHORT_BYTES or nranks < 8 else "scatter_allgather"
    if kind == "allreduce":
        if nbytes <= ALLREDUCE_SHORT_BYTES or nbytes < _pof2(max(nranks, 1)):
            return "recursive_doubling"
        return "rabenseifner"
    if kind in ("allgather", "allgatherv"):
        total = nranks * nbytes if total_bytes is None else total_bytes
        if total < ALLGATHER_LONG_BYTES and pow2:
            return "recursive_doubling"
        if total < ALLGATHER_SHORT_BYTES:
            return "bruck"
        return "ring"
    if kind == "alltoall":
        if nbytes <= ALLTOALL_SHORT_BYTES and nranks >= 8:
            return "bruck"
        return "linear" if nbytes <= ALLTOALL_MEDIUM_BYTES else "pairwise"
    if kind in ("gatherv", "scatterv", "alltoallv"):
        return "linear"
    if kind == "reduce_scatter":
        return "pairwise"
    if kind in ("reduce", "gather", "scatter"):
        return "binomial"
    raise CcmodInputError(f"unknown collective '{kind}'", hint="valid: " + ", ".join(KINDS))


def parse_collective_option(text: str | None, source: str = "--collective") -> dict[str, str]:
    """Parse ``"allreduce=ring,bcast=binomial"`` into ``{kind: algorithm}``.

    ``auto`` as algorithm removes the override (default choice). Errors name the valid kinds
    or the valid algorithms of the kind. Two extra keys apply to every kind:
    ``mpi=openmpi|mpich|intelmpi`` (the library's default decision rules,
    :mod:`workloads.mpi_presets`) and ``reduce_s_per_byte=X`` (reduction compute).
    """
    out: dict[str, str] = {}
    lib, rate = None, 0.0
    if text is None or not str(text).strip():
        return out
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        kind, eq, alg = item.partition("=")
        if not eq:
            raise CcmodInputError(f"'{item}' is not KIND=ALGORITHM", source=source,
                                  hint="e.g. allreduce=ring,bcast=binomial")
        k = normalize_kind(kind)
        if k == "mpi":
            lib = P.check_library(alg, source)
            continue
        if k == "reduce_s_per_byte":
            try:
                rate = float(alg)
            except ValueError:
                rate = -1.0
            if not (0.0 <= rate < 1.0):
                raise CcmodInputError(f"reduce_s_per_byte={alg.strip()} must be seconds per byte "
                                      ">= 0", source=source, hint="e.g. reduce_s_per_byte=2.5e-10")
            continue
        if k not in ALGORITHMS:
            raise CcmodInputError(f"unknown collective '{kind.strip()}'", source=source,
                                  hint="valid: " + ", ".join(KINDS) + " (and mpi=, reduce_s_per_byte=)")
        a = alg.strip().lower()
        if a == "auto":
            out.pop(k, None)
            continue
        if a not in ALGORITHMS[k]:
            raise CcmodInputError(f"unknown {k} algorithm '{alg.strip()}'", source=source,
                                  hint="valid: auto, " + ", ".join(ALGORITHMS[k]))
        out[k] = a
    if lib is not None or rate:
        out = {k: P.encode(out.get(k), lib, rate) for k in KINDS}
    return out


def _counts(name, counts, p, default) -> np.ndarray:
    if counts is None:
        return np.full(p, int(default), dtype=np.int64)
    c = np.asarray(counts, dtype=np.int64).reshape(-1)
    if c.shape[0] != p:
        raise CcmodInputError(f"{name} has {c.shape[0]} entries for {p} ranks",
                              hint="give one byte count per rank")
    if (c < 0).any():
        raise CcmodInputError(f"{name} has a negative byte count")
    return c


def expand(builder: WorkloadBuilder, rank: int, nranks: int, kind: str, seq: int, *,
           nbytes: int = 0, recv_nbytes: int | None = None, send_counts=None, recv_counts=None,
           root: int = 0, algorithm: str | None = None, line: int = 0, file_id: int = 0,
           req_base: int | None = None, compute_s: float = 0.0) -> None:
    """Append rank ``rank``'s point-to-point ops for one collective call to ``builder``.

    Parameters
    ----------
    builder : WorkloadBuilder
    rank, nranks : int
        This rank and the communicator size (MPI_COMM_WORLD ranks).
    kind : str
        One of :data:`KINDS` (aliases like ``reducescatter`` accepted).
    seq : int
        Index (from 0) of this collective call on this rank; gives the tag
        ``COLL_TAG_BASE - seq``.
    nbytes : int
        Bytes, meaning per kind in the module docstring.
    recv_nbytes : int, optional
        Receive size where it can differ from ``nbytes`` (scatterv non-root; gatherv root
        without ``recv_counts`` uses it for every rank).
    send_counts, recv_counts : sequence of int, optional
        Per-rank byte counts for the ``v`` variants and reduce_scatter.
    root : int
    algorithm : str, optional
        Name from ``ALGORITHMS[kind]``; ``None``/``"auto"`` = :func:`default_algorithm`.
    line, file_id : int
        Source position stamped on every generated op.
    req_base : int, optional
        First request id (ids ``req_base, req_base+1, ...``); default: private negative range.
    compute_s : float
        Seconds of local work (e.g. the reduction) appended after the communication, as
        SimGrid's replay does.

    Raises
    ------
    CcmodInputError
        Unknown kind/algorithm, bad rank/root, negative sizes, counts of the wrong length.
    """
    k = normalize_kind(kind)
    if k not in ALGORITHMS:
        raise CcmodInputError(f"unknown collective '{kind}'", hint="valid: " + ", ".join(KINDS))
    p, r = int(nranks), int(rank)
    if p < 1 or not 0 <= r < p:
        raise CcmodInputError(f"{k}: rank {r} outside communicator of {p} ranks")
    if not 0 <= int(root) < p:
        raise CcmodInputError(f"{k}: root {root} outside communicator of {p} ranks")
    if nbytes is None or int(nbytes) < 0:
        raise CcmodInputError(f"{k}: negative or missing byte count {nbytes}")
    if int(seq) < 0:
        raise CcmodInputError(f"{k}: negative collective sequence number {seq}")
    n, root = int(nbytes), int(root)
    alg, lib, reduce_rate = P.decode(algorithm)
    if alg is not None and alg not in ALGORITHMS[k]:
        raise CcmodInputError(f"unknown {k} algorithm '{algorithm}'",
                              hint="valid: " + ", ".join(ALGORITHMS[k]))
    if req_base is None:
        req0, step = -(int(seq) + 1) * REQ_STRIDE, -1
    else:
        req0, step = int(req_base), 1
    e = A.Emit(builder, r, COLL_TAG_BASE - int(seq), req0, step, line, file_id)

    if k in ("allgatherv", "reduce_scatter"):
        blocks = _counts("recv_counts", recv_counts, p, n)
    elif k == "allgather":
        blocks = _counts("counts", None, p, n)
    else:
        blocks = None
    if alg is None:
        total = int(blocks.sum()) if blocks is not None else None
        alg = P.preset_algorithm(lib, k, p, n, total)
    if reduce_rate:
        compute_s = float(compute_s) + reduce_rate * P.reduction_bytes(k, alg, r, p, n, root)

    if p > 1:
        _dispatch(e, k, alg, r, p, root, n, recv_nbytes, send_counts, recv_counts, blocks)
    if compute_s:
        builder.compute(r, float(compute_s), line=line, file_id=file_id)


def _dispatch(e, k, alg, r, p, root, n, recv_nbytes, send_counts, recv_counts, blocks):
    if k == "barrier":
        if alg == "native":
            e.b.barrier(r, **e.kw)
        else:
            A.dissemination(e, r, p)
    elif k == "bcast":
        if alg == "linear":
            A.linear_root(e, r, p, root, np.full(p, n, np.int64), to_root=False)
        elif alg == "binomial":
            A.binomial_down(e, r, p, root, lambda v, m: n)
        else:  # scatter_allgather: chunk j of the buffer belongs to relative rank j
            chunk = -(-n // p)
            sizes = np.clip(n - chunk * np.arange(p, dtype=np.int64), 0, chunk)
            cum = np.concatenate(([0], np.cumsum(sizes)))
            A.binomial_down(e, r, p, root, lambda v, m: int(cum[min(v + m, p)] - cum[v]))
            A.ring_allgather(e, r, p, sizes, rel0=root)
    elif k in ("reduce", "gather", "gatherv"):
        if k == "reduce":
            sub = lambda v, m: n  # noqa: E731 - a reduced vector keeps its size
            blocks = np.full(p, n, np.int64)
        elif k == "gather":
            blocks = np.full(p, n, np.int64)
            sub = A.rel_subtree(blocks, root, p)
        elif alg == "binomial":
            if recv_counts is None:
                raise CcmodInputError("gatherv: binomial algorithm needs recv_counts on every rank")
            blocks = _counts("recv_counts", recv_counts, p, 0)
            sub = A.rel_subtree(blocks, root, p)
        elif r == root:  # MPI: recvcounts are significant at the root only
            fill = n if recv_nbytes is None else int(recv_nbytes)
            blocks = _counts("recv_counts", recv_counts, p, fill)
        else:
            blocks = np.full(p, n, np.int64)
        if alg == "linear":
            A.linear_root(e, r, p, root, blocks, to_root=True)
        else:
            A.binomial_up(e, r, p, root, sub)
    elif k in ("scatter", "scatterv"):
        if k == "scatter":
            blocks = np.full(p, n, np.int64)
        elif alg == "binomial":
            if send_counts is None:
                raise CcmodInputError("scatterv: binomial algorithm needs send_counts on every rank")
            blocks = _counts("send_counts", send_counts, p, 0)
        elif r == root:  # MPI: sendcounts are significant at the root only
            if send_counts is None:
                raise CcmodInputError("scatterv: the root needs send_counts")
            blocks = _counts("send_counts", send_counts, p, 0)
        else:
            own = recv_nbytes if recv_nbytes is not None else (
                _counts("send_counts", send_counts, p, 0)[r] if send_counts is not None else n)
            blocks = np.full(p, int(own), np.int64)
        if alg == "linear":
            A.linear_root(e, r, p, root, blocks, to_root=False)
        else:
            A.binomial_down(e, r, p, root, A.rel_subtree(blocks, root, p))
    elif k == "allreduce":
        if alg == "ring":  # rank r owns segment r after the reduce-scatter
            seg = A.split(n, p)
            A.ring_reduce_scatter(e, r, p, seg)
            A.ring_allgather(e, r, p, seg)
        else:
            A.allreduce_rd(e, r, p, n, halving=alg == "rabenseifner")
    elif k in ("allgather", "allgatherv"):
        if alg == "neighbor_exchange" and p % 2:
            alg = "ring"              # Open MPI: neighbour exchange needs an even P
        {"recursive_doubling": A.rd_allgather, "bruck": A.bruck_allgather,
         "ring": A.ring_allgather, "neighbor_exchange": A.neighbor_exchange_allgather}[alg](
            e, r, p, blocks)
    elif k == "reduce_scatter":
        if alg == "ring":
            A.ring_reduce_scatter(e, r, p, blocks)
        else:
            A.pairwise(e, r, p, lambda d: blocks[d], lambda s: blocks[r])
    elif k == "alltoall":
        if alg == "bruck":
            kk = 1
            while kk < p:
                cnt = sum(1 for j in range(1, p) if j & kk)
                e.exchange((r + kk) % p, cnt * n, (r - kk) % p, cnt * n)
                kk <<= 1
        elif alg == "linear":
            A.linear_exchange(e, r, p, lambda d: n, lambda s: n)
        else:
            A.pairwise(e, r, p, lambda d: n, lambda s: n, shift=alg == "pairwise_shift")
    elif k == "alltoallv":
        sc = _counts("send_counts", send_counts, p, n)
        rc = _counts("recv_counts", recv_counts, p, -1) if recv_counts is not None else None
        recv_of = (lambda s: -1) if rc is None else (lambda s: rc[s])
        if alg == "linear":
            A.linear_exchange(e, r, p, lambda d: sc[d], recv_of)
        else:
            A.pairwise(e, r, p, lambda d: sc[d], recv_of, shift=alg == "pairwise_shift")
