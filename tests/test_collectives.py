"""Engine-free tests of the collective decompositions (workloads.collectives).

The helpers at the top (channel matching, request bookkeeping and a rendezvous replay)
are also imported by tests/test_generators.py.
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from conftest import examples

from ccmod.errors import CcmodInputError
from ccmod.workloads import collectives as C
from ccmod.workloads.base import (OP_BARRIER, OP_COMPUTE, OP_IRECV, OP_ISEND, OP_RECV, OP_SEND,
                            OP_WAIT, OP_WAITALL, WorkloadBuilder)


def rank_ops(w, r):
    a, b = int(w.rank_ptr[r]), int(w.rank_ptr[r + 1])
    return [(int(w.op[i]), int(w.peer[i]), int(w.tag[i]), int(w.nbytes[i]), int(w.req[i]))
            for i in range(a, b)]


def channels(w):
    """Return {(src,dst,tag): [send sizes]}, {(src,dst,tag): [recv sizes]} in program order."""
    sends, recvs = defaultdict(list), defaultdict(list)
    for r in range(w.nranks):
        for op, peer, tag, nb, _ in rank_ops(w, r):
            if op in (OP_SEND, OP_ISEND):
                sends[(r, peer, tag)].append(nb)
            elif op in (OP_RECV, OP_IRECV):
                recvs[(peer, r, tag)].append(nb)
    return sends, recvs


def channel_check(w, allow_unknown_recv=False):
    sends, recvs = channels(w)
    assert set(sends) == set(recvs), (set(sends) ^ set(recvs))
    for ch in sends:
        s, rv = sends[ch], recvs[ch]
        assert len(s) == len(rv), (ch, s, rv)
        for a, b in zip(s, rv):
            assert a == b or (allow_unknown_recv and b == -1), (ch, s, rv)
    return sends


def request_check(w):
    """Every isend/irecv request is waited exactly once, after its creation; ids unique."""
    for r in range(w.nranks):
        open_, seen = set(), set()
        for op, _, _, _, req in rank_ops(w, r):
            if op in (OP_ISEND, OP_IRECV):
                assert req not in seen and req != -1, (r, req)
                seen.add(req)
                open_.add(req)
            elif op == OP_WAIT:
                assert req in open_, (r, req)
                open_.remove(req)
            elif op == OP_WAITALL:
                open_.clear()
        assert not open_, (r, open_)


def simulate(w):
    """Replay with rendezvous semantics; return True if every rank finishes."""
    p = w.nranks
    ops = [rank_ops(w, r) for r in range(p)]
    pc = [0] * p
    posted = [None] * p            # channel index of the current blocking op if posted
    n_send, n_recv = defaultdict(int), defaultdict(int)
    reqs = [dict() for _ in range(p)]  # req -> (is_send, ch, idx)
    barrier_count = [0] * p

    def matched(is_send, ch, idx):
        return (n_recv[ch] if is_send else n_send[ch]) > idx

    def post(r, op, peer, tag):
        is_send = op in (OP_SEND, OP_ISEND)
        ch = (r, peer, tag) if is_send else (peer, r, tag)
        cnt = n_send if is_send else n_recv
        idx = cnt[ch]
        cnt[ch] += 1
        return is_send, ch, idx

    progress = True
    while progress:
        progress = False
        for r in range(p):
            while pc[r] < len(ops[r]):
                op, peer, tag, _, req = ops[r][pc[r]]
                if op == OP_COMPUTE:
                    pass
                elif op in (OP_SEND, OP_RECV):
                    if posted[r] is None:
                        posted[r] = post(r, op, peer, tag)
                    if not matched(*posted[r]):
                        break
                    posted[r] = None
                elif op in (OP_ISEND, OP_IRECV):
                    reqs[r][req] = post(r, op, peer, tag)
                elif op == OP_WAIT:
                    if not matched(*reqs[r][req]):
                        break
                elif op == OP_WAITALL:
                    if not all(matched(*v) for v in reqs[r].values()):
                        break
                elif op == OP_BARRIER:
                    if posted[r] is None:
                        barrier_count[r] += 1
                        posted[r] = ("barrier",)
                    if min(barrier_count) < barrier_count[r]:
                        break
                    posted[r] = None
                pc[r] += 1
                progress = True
    return all(pc[r] == len(ops[r]) for r in range(p))


def bytes_sent_per_rank(w):
    out = np.zeros(w.nranks, dtype=np.int64)
    for r in range(w.nranks):
        for op, _, _, nb, _ in rank_ops(w, r):
            if op in (OP_SEND, OP_ISEND):
                out[r] += nb
    return out


def messages(w):
    return int(np.isin(w.op, (OP_SEND, OP_ISEND)).sum())


# ---------------------------------------------------------------------------------------
# the tests

PS = [1, 2, 3, 4, 5, 7, 8, 16]
N = 1680 * 8  # divisible by every P above, so closed forms are exact


def _kwargs(kind, r, p, seq, n=N, root=None):
    """Arguments of rank r for one call, as a trace would give them (v-counts per rank)."""
    kw = {"nbytes": n, "root": (p // 2 if seq % 2 else 0) if root is None else root}
    counts = [n // 8 + 3 * i for i in range(p)]
    if kind in ("allgatherv", "reduce_scatter", "gatherv"):
        kw["recv_counts"] = counts
    if kind == "gatherv":
        kw["nbytes"] = counts[r]
    if kind == "scatterv":
        kw["send_counts"] = counts
    if kind == "alltoallv":
        kw["send_counts"] = [(r * 7 + d) % 13 for d in range(p)]
        kw["recv_counts"] = [(s * 7 + r) % 13 for s in range(p)]
    return kw


def build(kind, p, alg, nseq=1, **over):
    b = WorkloadBuilder(p)
    for r in range(p):
        for seq in range(nseq):
            kw = _kwargs(kind, r, p, seq)
            kw.update(over)
            C.expand(b, r, p, kind, seq, algorithm=alg, **kw)
    return b.build()


CASES = [(k, a) for k, algs in C.ALGORITHMS.items() for a in algs]


@pytest.mark.parametrize("kind,alg", CASES)
@pytest.mark.parametrize("p", PS)
def test_matching_requests_and_executable(kind, alg, p):
    w = build(kind, p, alg, nseq=2)
    channel_check(w)
    request_check(w)
    assert not (w.op == OP_WAITALL).any()
    assert simulate(w), f"{kind}/{alg} deadlocks at P={p}"
    # every message carries the tag of its call: COLL_TAG_BASE - seq
    msg = np.isin(w.op, (OP_SEND, OP_ISEND, OP_RECV, OP_IRECV))
    assert set(np.unique(w.tag[msg]).tolist()) <= {C.COLL_TAG_BASE, C.COLL_TAG_BASE - 1}
    if p == 1:
        assert w.nrecords == 0


@pytest.mark.parametrize("p", PS)
def test_closed_forms(p):
    lg = math.ceil(math.log2(p)) if p > 1 else 0
    pof2 = 1 << (p.bit_length() - 1)
    rem = p - pof2

    w = build("barrier", p, "dissemination")
    assert messages(w) == lg * p and bytes_sent_per_rank(w).sum() == 0

    w = build("bcast", p, "binomial")
    assert messages(w) == p - 1 and bytes_sent_per_rank(w).sum() == (p - 1) * N

    w = build("reduce", p, "binomial")
    assert messages(w) == p - 1 and bytes_sent_per_rank(w).sum() == (p - 1) * N

    w = build("allreduce", p, "ring")
    assert (bytes_sent_per_rank(w) == 2 * (p - 1) * N // p).all()

    w = build("allreduce", p, "recursive_doubling")
    # fold: rem sends in and rem sends out; pof2 ranks exchange log2(pof2) times
    assert bytes_sent_per_rank(w).sum() == N * (2 * rem + pof2 * int(math.log2(pof2)))

    w = build("allreduce", p, "rabenseifner")
    if p == pof2:  # halving + doubling: 2(P-1)/P * n per rank, like the ring
        assert (bytes_sent_per_rank(w) == 2 * (p - 1) * N // p).all()
    assert bytes_sent_per_rank(w).sum() == 2 * rem * N + pof2 * 2 * (pof2 - 1) * N // pof2

    for alg in ("ring", "bruck") + (("recursive_doubling",) if p == pof2 else ()):
        w = build("allgather", p, alg)
        assert (bytes_sent_per_rank(w) == (p - 1) * N).all(), alg

    for alg in ("pairwise", "linear"):
        w = build("alltoall", p, alg)
        assert (bytes_sent_per_rank(w) == (p - 1) * N).all()
        assert messages(w) == p * (p - 1)

    counts = np.array([N // 8 + 3 * i for i in range(p)])
    for alg in ("ring", "pairwise"):
        w = build("reduce_scatter", p, alg)
        assert (bytes_sent_per_rank(w) == counts.sum() - counts).all()

    for kind in ("gather", "scatter"):
        for alg in ("binomial", "linear"):
            w = build(kind, p, alg)
            root_bytes = recv_bytes(w, 0) if kind == "gather" else bytes_sent_per_rank(w)[0]
            assert root_bytes == (p - 1) * N


def recv_bytes(w, r):
    return sum(nb for op, _, _, nb, _ in rank_ops(w, r) if op in (OP_RECV, OP_IRECV))


@pytest.mark.parametrize("p", [3, 7, 16])
@pytest.mark.parametrize("alg", ["binomial", "scatter_allgather"])
def test_bcast_data_dependency(p, alg):
    root = 1
    w = build("bcast", p, alg, root=root)
    for r in range(p):
        ops = rank_ops(w, r)
        if r == root:
            assert ops[0][0] in (OP_SEND, OP_ISEND)
            continue
        v = (r - root) % p
        parent = ((v & (v - 1)) + root) % p  # clear the lowest set bit
        assert ops[0][0] == OP_RECV and ops[0][1] == parent


def test_scatter_allgather_volumes():
    """van de Geijn bcast: a rank gets its subtree's chunks, then P-1 chunks on the ring."""
    p, n = 8, 1 << 20
    chunk = n // p
    w = build("bcast", p, "scatter_allgather", nbytes=n)
    for r in range(1, p):
        subtree = min(r & -r, p - r)  # relative rank r spans its lowest set bit
        assert recv_bytes(w, r) == (subtree + p - 1) * chunk
    assert bytes_sent_per_rank(w)[0] == 2 * (p - 1) * chunk  # scatter tree + P-1 ring steps


def test_default_algorithms_follow_thresholds():
    d = C.default_algorithm
    assert d("bcast", 16, 1024) == "binomial"
    assert d("bcast", 4, 1 << 20) == "binomial"
    assert d("bcast", 16, 1 << 20) == "scatter_allgather"
    assert d("allreduce", 16, 2048) == "recursive_doubling"
    assert d("allreduce", 16, 4096) == "rabenseifner"
    assert d("allgather", 16, 1024) == "recursive_doubling"
    assert d("allgather", 12, 1024) == "bruck"
    assert d("allgather", 12, 1 << 20) == "ring"
    assert d("alltoall", 16, 64) == "bruck"
    assert d("alltoall", 4, 64) == "linear"
    assert d("alltoall", 16, 1 << 20) == "pairwise"
    assert d("barrier", 5) == "dissemination"
    for kind in C.KINDS:  # every default is an implemented algorithm
        for p in PS:
            for n in (0, 100, 5000, 1 << 20):
                assert d(kind, p, n) in C.ALGORITHMS[kind]


def test_request_ids_private_and_req_base():
    b = WorkloadBuilder(4)
    for r in range(4):
        C.expand(b, r, 4, "alltoall", 0, nbytes=8, algorithm="linear")
        C.expand(b, r, 4, "alltoall", 1, nbytes=8, algorithm="linear", req_base=1000)
    w = b.build()
    request_check(w)
    reqs = w.req[np.isin(w.op, (OP_ISEND, OP_IRECV))]
    private = reqs[reqs < 0]
    assert (private <= -C.REQ_STRIDE).all() and (private > -2 * C.REQ_STRIDE).all()
    assert set(reqs[reqs >= 0].tolist()) == set(range(1000, 1006))


def test_native_barrier_and_compute_and_positions():
    b = WorkloadBuilder(3)
    for r in range(3):
        C.expand(b, r, 3, "barrier", 0, algorithm="native", line=7, file_id=0)
        C.expand(b, r, 3, "MPI_Allreduce", 1, nbytes=8, compute_s=1e-6, line=8)
    w = b.build()
    assert (w.op == OP_BARRIER).sum() == 3
    assert (w.op == OP_COMPUTE).sum() == 3 and np.allclose(w.duration_s[w.op == OP_COMPUTE], 1e-6)
    assert set(w.line.tolist()) == {7, 8}
    assert simulate(w)


def test_alltoallv_unknown_recv_sizes():
    p = 5
    b = WorkloadBuilder(p)
    for r in range(p):
        C.expand(b, r, p, "alltoallv", 0, send_counts=[r + d for d in range(p)])
    w = b.build()
    channel_check(w, allow_unknown_recv=True)
    assert simulate(w)


def test_parse_collective_option():
    assert C.parse_collective_option("allreduce=ring, bcast=binomial") == {
        "allreduce": "ring", "bcast": "binomial"}
    assert C.parse_collective_option("reducescatter=ring,bcast=auto") == {"reduce_scatter": "ring"}
    assert C.parse_collective_option("") == {}
    with pytest.raises(CcmodInputError, match="valid: barrier") as ei:
        C.parse_collective_option("allreduse=ring")
    assert ei.value.source == "--collective"
    with pytest.raises(CcmodInputError, match="recursive_doubling"):
        C.parse_collective_option("allreduce=tree")
    with pytest.raises(CcmodInputError, match="KIND=ALGORITHM"):
        C.parse_collective_option("allreduce")


@pytest.mark.parametrize("bad", [
    dict(kind="allreduse"), dict(algorithm="tree"), dict(root=9), dict(rank=4),
    dict(nbytes=-1), dict(kind="allgatherv", recv_counts=[1, 2])])
def test_expand_errors(bad):
    kw = dict(kind="allreduce", rank=0, nbytes=8, root=0)
    kw.update(bad)
    with pytest.raises(CcmodInputError):
        C.expand(WorkloadBuilder(4), kw.pop("rank"), 4, kw.pop("kind"), 0, **kw)


@settings(max_examples=examples(25), deadline=None)
@given(p=st.integers(1, 12), data=st.data())
def test_random_sequences_of_collectives_execute(p, data):
    """Any sequence of collectives (defaults or forced algorithms) matches and runs."""
    calls = data.draw(st.lists(st.tuples(
        st.sampled_from(C.KINDS), st.integers(0, 70000), st.integers(0, p - 1),
        st.integers(0, 3)), min_size=1, max_size=5))
    b = WorkloadBuilder(p)
    for r in range(p):
        for seq, (kind, n, root, ai) in enumerate(calls):
            algs = [None] + sorted(C.ALGORITHMS[kind])
            kw = _kwargs(kind, r, p, seq, n=n, root=root)
            C.expand(b, r, p, kind, seq, algorithm=algs[ai % len(algs)], **kw)
    w = b.build()
    channel_check(w)
    request_check(w)
    assert simulate(w)


def test_v_counts_significant_at_root_only():
    """gatherv/scatterv (linear): non-roots only need their own count, as in MPI."""
    p, root = 5, 2
    counts = [10, 20, 30, 40, 50]
    b = WorkloadBuilder(p)
    for r in range(p):
        rc = counts if r == root else [0] * p  # garbage on non-roots
        C.expand(b, r, p, "gatherv", 0, nbytes=counts[r], recv_counts=rc, root=root)
        sc = counts if r == root else None
        C.expand(b, r, p, "scatterv", 1, recv_nbytes=counts[r], send_counts=sc, root=root)
    w = b.build()
    channel_check(w)
    assert simulate(w)
    assert recv_bytes(w, root) == sum(counts) - counts[root]
    assert bytes_sent_per_rank(w)[root] == sum(counts) - counts[root]
    with pytest.raises(CcmodInputError, match="root needs send_counts"):
        C.expand(WorkloadBuilder(p), root, p, "scatterv", 0, root=root)
