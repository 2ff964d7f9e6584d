"""NIC (duplex) and intra-node copy resources: closed forms on both sharing rules."""
import numpy as np
import pytest

from ccmod.api import run
from ccmod.errors import CcmodInputError
from ccmod.netsys.networks import make_network
from ccmod.workloads.base import WorkloadBuilder

BW, N = 1e9, 4_000_000
STAR = f"star:bandwidth={BW:g},latency=0"


def one_way():
    b = WorkloadBuilder(2)
    b.send(0, 1, N)
    b.recv(1, 0, N)
    return b.build()


def exchange(pairs):
    """Every (a, b) in ``pairs`` exchanges N bytes both ways at once (a Sendrecv)."""
    P = 1 + max(max(p) for p in pairs)
    b = WorkloadBuilder(P)
    for a, c in pairs:
        for me, other in ((a, c), (c, a)):
            b.irecv(me, other, 0, nbytes=N)
            b.isend(me, other, N, 1)
            b.waitall(me)
    return b.build()


@pytest.mark.parametrize("sharing", ["ccmod", "maxmin"])
def test_half_duplex_pingpong_pair_is_twice_one_way(sharing):
    t1 = run(one_way(), STAR + ",duplex=half", sharing=sharing).makespan_s
    assert t1 == pytest.approx(N / BW, rel=1e-9)     # a lone message is not slowed
    t2 = run(exchange([(0, 1)]), STAR + ",duplex=half", sharing=sharing).makespan_s
    assert t2 == pytest.approx(2 * t1, rel=1e-9)
    # full duplex (and no NIC at all) leaves both directions independent
    for spec in (STAR, STAR + ",duplex=full"):
        assert run(exchange([(0, 1)]), spec, sharing=sharing).makespan_s == pytest.approx(t1)


@pytest.mark.parametrize("factor", [1.0, 1.4, 1.5, 2.0])
def test_duplex_factor_gives_two_way_bandwidth_factor_times_one_way(factor):
    # under max-min both directions split factor*BW: each gets factor/2*BW (when < BW)
    t = run(exchange([(0, 1)]), STAR + f",duplex={factor:g}", sharing="maxmin").makespan_s
    assert 2 * N / t == pytest.approx(min(factor, 2.0) * BW, rel=1e-9)


def test_crossed_pairs_share_the_nic_like_a_same_partner_exchange():
    # node 0 sends to 1 while receiving from 2 (ring of 3): under half duplex its NIC
    # carries two messages, so everyone takes 2x one way
    b = WorkloadBuilder(3)
    for r in range(3):
        b.irecv(r, (r - 1) % 3, 0, nbytes=N)
        b.isend(r, (r + 1) % 3, N, 1)
        b.waitall(r)
    t = run(b.build(), STAR + ",duplex=half", sharing="maxmin").makespan_s
    assert t == pytest.approx(2 * N / BW, rel=1e-9)


def test_nic_shared_by_ranks_of_one_node():
    # two ranks on node 0 send to two ranks on node 1: the NIC (and the node link) are
    # shared, k = 2 -> 2x; the NIC resource appears in the link table
    b = WorkloadBuilder(4)
    b.send(0, 2, N); b.send(1, 3, N); b.recv(2, 0, N); b.recv(3, 1, N)
    r = run(b.build(), STAR + ",duplex=full,nic_bandwidth=5e8", mapping="block:2",
            sharing="maxmin")
    assert r.makespan_s == pytest.approx(2 * N / 5e8, rel=1e-9)
    assert {"nic0/inject", "nic1/eject"} <= set(r.links.name)


@pytest.mark.parametrize("sharing", ["ccmod", "maxmin"])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_intra_copy_resource_shared_by_k_pairs_is_k_times_slower(sharing, k):
    b = WorkloadBuilder(2 * k)
    for p in range(k):
        b.send(2 * p, 2 * p + 1, N)
        b.recv(2 * p + 1, 2 * p, N)
    w = b.build()
    ib = 2e9
    shared = run(w, STAR + ",intra=shared", mapping=f"block:{2 * k}", sharing=sharing,
                 intra_latency_s=0.0, intra_bandwidth_Bps=ib)
    assert shared.makespan_s == pytest.approx(k * N / ib, rel=1e-9)
    free = run(w, STAR, mapping=f"block:{2 * k}", sharing=sharing,
               intra_latency_s=0.0, intra_bandwidth_Bps=ib)
    assert free.makespan_s == pytest.approx(N / ib, rel=1e-9)   # today's: nothing shared


def test_article_rule_unchanged_by_default():
    b = WorkloadBuilder(2)
    b.send(0, 1, N); b.recv(1, 0, N)
    net = make_network(STAR, 2)
    assert net.nresources == 2 * net.nlinks and net.node_resources is None
    assert run(b.build(), STAR).makespan_s == pytest.approx(N / BW)


@pytest.mark.parametrize("bad", ["duplex=third", "duplex=0", "duplex=-1", "intra=maybe",
                                 "nic_bandwidth=0"])
def test_bad_common_parameters_fail_with_one_line(bad):
    with pytest.raises(CcmodInputError) as e:
        make_network("star:" + bad, 2)
    assert bad.split("=")[0] in str(e.value)


def test_common_parameters_on_every_topology():
    for spec in ("fattree2:hosts_per_leaf=2", "torus", "mesh", "myrinet16", "bus"):
        net = make_network(spec + ":duplex=half" if ":" not in spec else spec + ",duplex=half", 4)
        t = net.compile_routes(np.array([[0, 1]]))
        assert t.resources[0] >= 2 * net.nlinks and t.resources[-1] >= 2 * net.nlinks


def crossed_ring():
    """A -> C, C -> B, B -> D, D -> A (the calibration's sendrecv_diff, ranks = nodes)."""
    send_to = {0: 2, 2: 1, 1: 3, 3: 0}
    recv_from = {d: s for s, d in send_to.items()}
    b = WorkloadBuilder(4)
    for me in range(4):
        b.irecv(me, recv_from[me], 0, nbytes=N)
        b.isend(me, send_to[me], N, 1)
        b.waitall(me)
    return b.build()


@pytest.mark.parametrize("sharing", ["maxmin", "ccmod:latency=unshared,capacity=ratio"])
@pytest.mark.parametrize("factor", [1.0, 1.43, 2.0])
def test_half_duplex_connection_same_partner_twice_crossed_by_the_nic_factor(sharing, factor):
    # one resource per node pair at one direction's rate: the same-partner exchange
    # alternates on it (2x one-way); crossed pairs use two connections and only the node's
    # shared NIC (factor X) limits them: 2/X x one-way
    spec = STAR + f",duplex={factor:g},connection=half"
    t1 = run(one_way(), spec, sharing=sharing).makespan_s
    assert t1 == pytest.approx(N / BW, rel=1e-9)
    assert run(exchange([(0, 1)]), spec, sharing=sharing).makespan_s == pytest.approx(
        2 * t1, rel=1e-9)
    assert run(crossed_ring(), spec, sharing=sharing).makespan_s == pytest.approx(
        max(1.0, 2.0 / factor) * t1, rel=1e-9)
    # a connection of factor 2 carries both directions at full rate
    spec2 = STAR + ",connection=2"
    assert run(exchange([(0, 1)]), spec2, sharing=sharing).makespan_s == pytest.approx(t1)


def test_connection_resources_are_per_node_pair():
    net = make_network(STAR + ",connection=half", 4)
    nr = net.node_resources
    ids = {(a, b): nr.connection_resource(a, b) for a in range(4) for b in range(4) if a != b}
    assert ids[(0, 1)] == ids[(1, 0)] and len(set(ids.values())) == 6
    assert sorted(net.resource_name(i) for i in set(ids.values())) == [
        "conn0-1", "conn0-2", "conn0-3", "conn1-2", "conn1-3", "conn2-3"]
    assert net.resource_capacity_Bps()[-6:].tolist() == [BW] * 6
    for bad in ("connection=full", "connection=-1", "connection=x"):
        with pytest.raises(CcmodInputError, match="connection"):
            make_network(STAR + "," + bad, 4)
    with pytest.raises(CcmodInputError, match="at most"):
        make_network("star:connection=half", 3000)
