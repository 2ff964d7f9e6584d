"""Collective algorithm presets per MPI library (``--mpi openmpi|mpich|intelmpi``).

Each preset chooses an algorithm by collective kind, communicator size ``P`` and message
size the way that library's *default* decision rule does (no tuning file):

``mpich``
    MPICH 3.x CVAR defaults (``MPIR_CVAR_BCAST_SHORT_MSG_SIZE`` = 12288,
    ``..._ALLREDUCE_SHORT_MSG_SIZE`` = 2048, ``..._ALLGATHER_LONG_MSG_SIZE`` = 524288,
    ``..._ALLGATHER_SHORT_MSG_SIZE`` = 81920, ``..._ALLTOALL_SHORT_MSG_SIZE`` = 256,
    ``..._ALLTOALL_MEDIUM_MSG_SIZE`` = 32768): :func:`collectives.default_algorithm`.
``openmpi``
    Open MPI's ``coll/tuned`` fixed decision functions (the rules of the 1.x-4.0 series,
    before the 4.1 per-size tables):
    allreduce recursive doubling below 10000 bytes, else ring (commutative ops, count > P);
    alltoall Bruck below 200-byte blocks when P > 12, linear below 3000 bytes, else
    pairwise (``ompi_coll_base_alltoall_intra_pairwise``: step i sends to r+i and receives
    from r-i for every P, not MPICH's XOR partners: ``pairwise_shift``); allgather
    recursive doubling (power-of-two P) or Bruck below 50000 total bytes, else neighbour
    exchange for even P (P/2 steps of two blocks) and ring for odd P; allgatherv Bruck
    below 50000 total bytes, else the same as allgather; alltoallv pairwise (shift); bcast binomial below 2048 bytes, else a pipelined /
    split-binary tree (modelled as scatter + allgather); barrier recursive doubling
    (power-of-two P) or Bruck (modelled as dissemination, the same message pattern);
    reduce binomial.
``intelmpi``
    Intel MPI's defaults are tuned per platform (``I_MPI_ADJUST_*`` tables, not published);
    it derives from MPICH, so the MPICH rules are used, except alltoall, where Intel MPI's
    documented default for medium blocks is the isend/irecv exchange up to 256 KiB
    (``I_MPI_ADJUST_ALLTOALL`` algorithm 2) and pairwise above.

Reduction work: ``reduce_s_per_byte`` charges ``s/byte x bytes combined by this rank``
as compute after the communication (recursive doubling combines ``n`` bytes per step;
ring / Rabenseifner ``n (P-1)/P`` in total; a binomial reduce ``n`` per child).
"""
from __future__ import annotations

import math

from ccmod.errors import CcmodInputError

MPI_LIBRARIES = ("mpich", "openmpi", "intelmpi")

#: Open MPI coll/tuned fixed-decision switch points (bytes)
OMPI_ALLREDUCE_INTERMEDIATE = 10000
OMPI_ALLTOALL_SMALL = 200
OMPI_ALLTOALL_INTERMEDIATE = 3000
OMPI_ALLGATHER_SMALL_TOTAL = 50000
OMPI_BCAST_SMALL = 2048
#: Intel MPI: isend/irecv alltoall up to this block size
IMPI_ALLTOALL_MEDIUM = 262144


def check_library(name: str, source: str = "--mpi") -> str:
    lib = str(name).strip().lower().replace("-", "").replace("_", "")
    lib = {"ompi": "openmpi", "impi": "intelmpi", "intel": "intelmpi"}.get(lib, lib)
    if lib not in MPI_LIBRARIES:
        raise CcmodInputError(f"unknown MPI library '{name}'", source=source,
                              hint="valid: " + ", ".join(MPI_LIBRARIES))
    return lib


def _pow2(p: int) -> bool:
    return p >= 1 and p & (p - 1) == 0


def preset_algorithm(lib: str, kind: str, nranks: int, nbytes: int,
                     total_bytes: int | None = None) -> str:
    """The algorithm library ``lib`` picks for one collective call (see module doc)."""
    from ccmod.workloads.collectives import default_algorithm
    p, n = int(nranks), int(nbytes)
    if lib == "openmpi":
        if kind == "allreduce":
            return "recursive_doubling" if n < OMPI_ALLREDUCE_INTERMEDIATE or n <= p else "ring"
        if kind == "alltoall":
            if n < OMPI_ALLTOALL_SMALL and p > 12:
                return "bruck"
            return "linear" if n < OMPI_ALLTOALL_INTERMEDIATE else "pairwise_shift"
        if kind in ("allgather", "allgatherv"):
            total = p * n if total_bytes is None else int(total_bytes)
            if total < OMPI_ALLGATHER_SMALL_TOTAL:
                return "recursive_doubling" if _pow2(p) and kind == "allgather" else "bruck"
            return "ring" if p % 2 else "neighbor_exchange"
        if kind == "bcast":
            return "binomial" if n < OMPI_BCAST_SMALL or p < 4 else "scatter_allgather"
        if kind == "alltoallv":
            return "pairwise_shift"
        if kind == "reduce_scatter":
            return "ring" if n * p >= 65536 else "pairwise"
    if lib == "intelmpi" and kind == "alltoall":
        if n <= 256 and p >= 8:
            return "bruck"
        return "linear" if n <= IMPI_ALLTOALL_MEDIUM else "pairwise"
    return default_algorithm(kind, p, n, total_bytes)


def reduction_bytes(kind: str, alg: str, rank: int, nranks: int, nbytes: int, root: int = 0) -> float:
    """Bytes this rank combines in one reduction collective (0 for data movement only)."""
    p, n = int(nranks), float(nbytes)
    if p < 2:
        return 0.0
    if kind == "allreduce":
        if alg == "recursive_doubling":
            return n * math.ceil(math.log2(p))
        return n * (p - 1) / p
    if kind == "reduce_scatter":
        return n * (p - 1)
    if kind == "reduce":
        rel = (rank - root) % p
        children = 0
        m = 1
        while m < p:            # binomial: a child at rel + m for every m below rel's lowest bit
            if rel & m:
                break
            if rel + m < p:
                children += 1
            m <<= 1
        return n * children if alg == "binomial" else (n * (p - 1) if rel == 0 else 0.0)
    return 0.0


def encode(alg: str | None, lib: str | None, reduce_s_per_byte: float) -> str:
    """Carry an override plus a preset through a reader's ``{kind: algorithm}`` dict."""
    return f"{alg or 'auto'}|{lib or 'mpich'}|{float(reduce_s_per_byte)!r}"


def decode(value: str | None) -> tuple[str | None, str, float]:
    """(algorithm or None, library, reduce_s_per_byte) of a value built by :func:`encode`."""
    if value is None or "|" not in str(value):
        return (None if value in (None, "", "auto") else str(value).lower()), "mpich", 0.0
    alg, lib, rate = str(value).split("|")
    return (None if alg == "auto" else alg), lib, float(rate)
