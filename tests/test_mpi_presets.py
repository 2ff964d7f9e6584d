"""Collective algorithm presets per MPI library and reduction compute per byte."""
import math

import pytest

from ccmod.errors import CcmodInputError
from ccmod.workloads import collectives as C
from ccmod.workloads.base import WorkloadBuilder
from ccmod.workloads.mpi_presets import preset_algorithm, reduction_bytes


@pytest.mark.parametrize("lib,kind,p,n,want", [
    ("openmpi", "alltoall", 16, 100, "bruck"),
    ("openmpi", "alltoall", 8, 100, "linear"),       # Bruck only when P > 12
    ("openmpi", "alltoall", 64, 4096, "pairwise_shift"),   # MPICH: linear to 32 KiB
    ("mpich", "alltoall", 64, 4096, "linear"),
    ("intelmpi", "alltoall", 64, 131072, "linear"),
    ("intelmpi", "alltoall", 64, 1 << 20, "pairwise"),
    ("openmpi", "allreduce", 64, 8192, "recursive_doubling"),   # MPICH: rabenseifner
    ("mpich", "allreduce", 64, 8192, "rabenseifner"),
    ("openmpi", "allreduce", 64, 1 << 20, "ring"),
    ("openmpi", "allgather", 64, 512, "recursive_doubling"),
    ("openmpi", "allgather", 48, 512, "bruck"),
    ("openmpi", "allgather", 64, 4096, "neighbor_exchange"),  # MPICH: still RD
    ("mpich", "allgather", 64, 4096, "recursive_doubling"),
    ("openmpi", "bcast", 64, 1024, "binomial"),
    ("openmpi", "bcast", 64, 4096, "scatter_allgather"),
])
def test_preset_decisions(lib, kind, p, n, want):
    assert preset_algorithm(lib, kind, p, n) == want


def _messages(collective, p, n, kind="alltoall"):
    algs = C.parse_collective_option(collective)
    b = WorkloadBuilder(p)
    for r in range(p):
        C.expand(b, r, p, kind, 0, nbytes=n, algorithm=algs.get(kind))
    return b.build()


def test_mpi_option_changes_the_generated_messages():
    # P=16, 100-byte blocks: Open MPI uses Bruck (log2 P aggregated steps), MPICH too
    # (<= 256 B); at 4 KiB Open MPI goes pairwise (one blocking exchange per step) while
    # MPICH posts every isend at once
    w_o = _messages("mpi=openmpi", 16, 4096)
    w_m = _messages("mpi=mpich", 16, 4096)
    from ccmod.workloads.base import OP_ISEND, OP_SEND
    assert (w_m.op == OP_ISEND).sum() == 16 * 15
    assert (w_o.op == OP_ISEND).sum() + (w_o.op == OP_SEND).sum() >= 16 * 15
    assert not (w_o.op == w_m.op).all() or len(w_o.op) != len(w_m.op)


def test_explicit_algorithm_wins_over_the_preset():
    algs = C.parse_collective_option("mpi=openmpi,alltoall=linear")
    assert algs["alltoall"].startswith("linear|openmpi")
    w = _messages("mpi=openmpi,alltoall=linear", 16, 4096)
    assert len(w.op) == len(_messages("mpi=mpich", 16, 4096).op)


def test_reduction_compute_per_byte():
    p, n, rate = 8, 1 << 16, 1e-9
    w = _messages(f"mpi=openmpi,reduce_s_per_byte={rate}", p, n, kind="allreduce")
    from ccmod.workloads.base import OP_COMPUTE
    comp = w.duration_s[w.op == OP_COMPUTE]
    # Open MPI at 64 KiB, P=8: ring, n (P-1)/P bytes combined per rank
    assert comp.size == p
    assert comp == pytest.approx([rate * n * (p - 1) / p] * p)
    assert reduction_bytes("allreduce", "recursive_doubling", 0, p, n) == n * math.log2(p)


@pytest.mark.parametrize("bad", ["mpi=lam", "reduce_s_per_byte=-1", "reduce_s_per_byte=x"])
def test_bad_preset_options(bad):
    with pytest.raises(CcmodInputError):
        C.parse_collective_option(bad)
