"""Collective calls whose members disagree on the count (erroneous or corrupt traces)."""
from __future__ import annotations

import numpy as np

from ccmod.codes import OP_IRECV, OP_ISEND, OP_RECV, OP_SEND
from ccmod.workloads.assembler import TraceAssembler


def _allreduce(sizes, kind="allreduce", root=0):
    asm = TraceAssembler(len(sizes), "test")
    members = list(range(len(sizes)))
    for r, n in enumerate(sizes):
        asm.mpi_enter(r, 0.0)
        asm.collective(r, kind, "world", members, r, nbytes=n, root=root, is_root=r == root)
        asm.mpi_leave(r, 1e-6)
    return asm.build()


def _sizes(w, ops):
    sel = np.isin(w.op, ops)
    return sorted(set(w.nbytes[sel].tolist()))


def test_members_that_disagree_use_the_most_common_count():
    w = _allreduce([4, 0, 4, 4])
    assert _sizes(w, [OP_SEND, OP_ISEND]) == [4]
    assert _sizes(w, [OP_RECV, OP_IRECV]) == [4]
    assert w.meta["collective_size_mismatch"] == 1
    assert any("different counts" in n for n in w.meta["notes"])


def test_rooted_collectives_use_the_roots_count():
    # most members say 0, the root says 8: the broadcast carries the root's 8 bytes
    w = _allreduce([8, 0, 0, 0], kind="bcast", root=0)
    assert _sizes(w, [OP_SEND, OP_ISEND, OP_RECV, OP_IRECV]) == [8]
    assert w.meta["collective_size_mismatch"] == 1


def test_agreeing_members_are_left_alone():
    w = _allreduce([16, 16, 16, 16])
    assert _sizes(w, [OP_SEND, OP_ISEND]) == [16]
    assert "collective_size_mismatch" not in w.meta
