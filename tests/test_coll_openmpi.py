"""Open MPI's own collective algorithms (neighbour exchange allgather, shift pairwise
alltoall): closed-form step counts, bytes per step, data dependencies, quiet-network time."""
import numpy as np
import pytest

from ccmod.api import run
from ccmod.netsys.cost import PiecewiseLinearCost
from ccmod.workloads import coll_algos as A
from ccmod.workloads import collectives as C
from ccmod.workloads.base import OP_IRECV, OP_ISEND, WorkloadBuilder
from ccmod.workloads.mpi_presets import preset_algorithm

from test_collectives import channel_check, request_check, simulate


def build(kind, p, n, alg):
    b = WorkloadBuilder(p)
    for r in range(p):
        C.expand(b, r, p, kind, 0, nbytes=n, algorithm=alg)
    return b.build()


def sends_of(w, r):
    a, b = int(w.rank_ptr[r]), int(w.rank_ptr[r + 1])
    return [(int(w.peer[i]), int(w.nbytes[i])) for i in range(a, b) if w.op[i] == OP_ISEND]


@pytest.mark.parametrize("p", [2, 4, 6, 8, 16, 64])
def test_neighbor_exchange_steps_and_bytes(p):
    n = 1000
    w = build("allgather", p, n, "neighbor_exchange")
    channel_check(w)
    request_check(w)
    assert simulate(w)
    for r in range(p):
        s = sends_of(w, r)
        assert len(s) == p // 2                       # P/2 steps, not P-1
        assert [nb for _, nb in s] == [n] + [2 * n] * (p // 2 - 1)
        assert sum(nb for _, nb in s) == (p - 1) * n
        left, right = (r - 1) % p, (r + 1) % p
        first = right if r % 2 == 0 else left       # even ranks start to the right
        assert s[0][0] == first
        assert all(dst == (first if i % 2 == 0 else ({left, right} - {first}).pop())
                   for i, (dst, _) in enumerate(s)) or p == 2


@pytest.mark.parametrize("p", [4, 6, 10, 16])
def test_neighbor_exchange_only_forwards_blocks_it_holds(p):
    """Replay the block indices: every pair sent was received before, all P blocks end."""
    have = [{r} for r in range(p)]
    plans = []
    for r in range(p):       # record the blocks of every exchange with a tagged block size
        blocks = np.array([1 << (2 * i) for i in range(p)], dtype=object)
        b = WorkloadBuilder(p)
        e = A.Emit(b, r, -1, -1, -1, 0, 0)
        log = []
        e.exchange = lambda dst, sn, src, rn, log=log: log.append((dst, sn, src, rn))
        A.neighbor_exchange_allgather(e, r, p, blocks)
        plans.append(log)
    decode = lambda v: {i for i in range(p) if v >> (2 * i) & 1}  # noqa: E731
    for step in range(p // 2):
        sent = {}
        for r in range(p):
            dst, sn, _, _ = plans[r][step]
            assert decode(sn) <= have[r]
            sent[(r, dst)] = decode(sn)
        for r in range(p):
            _, _, src, rn = plans[r][step]
            assert sent[(src, r)] == decode(rn)
            have[r] |= decode(rn)
    assert all(h == set(range(p)) for h in have)


@pytest.mark.parametrize("p", [4, 8, 16])
def test_pairwise_shift_partners(p):
    """Open MPI pairwise alltoall: step i sends to r+i, receives from r-i (also for 2^k)."""
    n = 64
    w = build("alltoall", p, n, "pairwise_shift")
    channel_check(w)
    assert simulate(w)
    for r in range(p):
        assert sends_of(w, r) == [((r + i) % p, n) for i in range(1, p)]
    xor = build("alltoall", p, n, "pairwise")
    assert sends_of(xor, 1) == [(1 ^ i, n) for i in range(1, p)]


def test_openmpi_preset_uses_its_own_algorithms():
    assert preset_algorithm("openmpi", "allgather", 64, 4096) == "neighbor_exchange"
    assert preset_algorithm("openmpi", "allgather", 63, 4096) == "ring"
    assert preset_algorithm("openmpi", "allgatherv", 64, 512) == "bruck"
    assert preset_algorithm("openmpi", "alltoall", 64, 4096) == "pairwise_shift"
    assert preset_algorithm("mpich", "alltoall", 64, 1 << 20) == "pairwise"
    # an odd communicator falls back to the ring when neighbour exchange is forced
    w = build("allgather", 5, 100, "neighbor_exchange")
    assert len(sends_of(w, 0)) == 4


def _flat(lat, bw):
    return PiecewiseLinearCost.from_dict({"format": "ccmod-cost-model", "segments": [
        {"min_bytes": 0, "latency_s": lat, "bandwidth_Bps": bw}]})


@pytest.mark.parametrize("sharing", ["maxmin", "ccmod:latency=unshared,capacity=ratio"])
def test_quiet_network_times(sharing):
    """One rank per node on a star far faster than the messages: no contention, so
    ring = (P-1) T(n), neighbour exchange = T(n) + (P/2 - 1) T(2n)."""
    p, n, lat, bw = 8, 1 << 16, 2e-6, 1e9
    cost = _flat(lat, bw)
    net = "star:bandwidth=1e15,latency=0"
    t = lambda nb: lat + nb / bw  # noqa: E731
    ring = run(build("allgather", p, n, "ring"), net, sharing=sharing, cost=cost)
    ne = run(build("allgather", p, n, "neighbor_exchange"), net, sharing=sharing, cost=cost)
    assert ring.makespan_s == pytest.approx((p - 1) * t(n), rel=1e-6)
    assert ne.makespan_s == pytest.approx(t(n) + (p // 2 - 1) * t(2 * n), rel=1e-6)
