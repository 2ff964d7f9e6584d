"""``ccmod:capacity=ratio`` and the intra-node aggregate copy bandwidth: closed forms."""
import numpy as np
import pytest

from ccmod.api import run
from ccmod.engine import capacity_ratio
from ccmod.errors import CcmodInputError
from ccmod.netsys.cost import PiecewiseLinearCost
from ccmod.netsys.networks import make_network
from ccmod.workloads.base import WorkloadBuilder

N = 1_000_000
LAT, BW = 1e-5, 1e9
COST = PiecewiseLinearCost([0], [LAT], [BW])
RATIO = "ccmod:latency=unshared,capacity=ratio"


def exchange():
    """Ranks 0 and 1 send each other N bytes at once (a Sendrecv)."""
    b = WorkloadBuilder(2)
    for me, other in ((0, 1), (1, 0)):
        b.irecv(me, other, 0, nbytes=N)
        b.isend(me, other, N, 1)
        b.waitall(me)
    return b.build()


def star(extra=""):
    return f"star:bandwidth={BW:g},latency=0" + extra


@pytest.mark.parametrize("factor", [1.0, 1.5, 2.0, 3.0])
def test_ratio_shares_a_duplex_nic_by_its_capacity(factor):
    # both directions on one NIC of factor * BW: BA = min(1, factor * BW / (2 * BW))
    t = run(exchange(), star(f",duplex={factor:g}"), sharing=RATIO, cost=COST).makespan_s
    ba = min(1.0, factor / 2.0)
    assert t == pytest.approx(LAT + N / BW / ba, rel=1e-9)
    # max-min gives the same on a single bottleneck
    t_mm = run(exchange(), star(f",duplex={factor:g}"), sharing="maxmin", cost=COST).makespan_s
    assert t == pytest.approx(t_mm, rel=1e-9)
    # the article's rule ignores the capacity: two messages on one NIC take 2x
    t_art = run(exchange(), star(f",duplex={factor:g}"), sharing="ccmod:latency=unshared",
                cost=COST).makespan_s
    assert t_art == pytest.approx(LAT + 2 * N / BW, rel=1e-9)


def test_ratio_never_faster_than_quiet():
    # a lone message on links and a NIC 4x faster than its quiet bandwidth: BA capped at 1
    b = WorkloadBuilder(2)
    b.send(0, 1, N)
    b.recv(1, 0, N)
    net = f"star:bandwidth={4 * BW:g},latency=0,duplex=half"
    for sh in ("ccmod:capacity=ratio", RATIO):
        assert run(b.build(), net, sharing=sh, cost=COST).makespan_s == pytest.approx(
            LAT + N / BW, rel=1e-9)


def test_ratio_equals_the_article_when_capacities_match_the_quiet_bandwidth():
    # the article's Figure 2 numbers: 48.9 us alone, two on one link 97.8 us each
    cost = PiecewiseLinearCost([0], [48.9e-6 - 1024 / BW], [BW])
    b = WorkloadBuilder(4)
    b.send(0, 2, 1024); b.recv(2, 0, 1024)
    b.send(1, 3, 1024); b.recv(3, 1, 1024)
    spec = f"star:bandwidth={BW:g},latency=0,duplex=full"
    for sh in ("ccmod", "ccmod:capacity=ratio"):
        r = run(b.build(), spec, sharing=sh, cost=cost, mapping="block:2")
        assert r.makespan_s == pytest.approx(97.8e-6, rel=1e-9)


def test_ratio_with_background_keeps_the_free_fraction():
    # NIC 2x the quiet bandwidth, 50 % background on the links: the links (BW) bind
    t = run(exchange(), star(",duplex=full"), sharing=RATIO, cost=COST,
            background=0.5).makespan_s
    assert t == pytest.approx(LAT + N / (0.5 * BW), rel=1e-9)


def test_capacity_ratio_reference_is_the_fastest_message():
    # two messages share resource 1: quiet bandwidths 1e9 and 2e9 -> ratio 4e9 / 2e9
    rp = np.array([0, 2, 3])
    rr = np.array([0, 1, 1])
    cap = np.array([1e9, 4e9, 1e12])
    out = capacity_ratio(3, cap, rp, rr, np.array([1e9, 2e9]))
    assert out.tolist() == pytest.approx([1.0, 2.0, 1.0])   # unused resource: 1


def intra_pairs(k, window=1, nbytes=4_000_000):
    b = WorkloadBuilder(2 * k)
    for p in range(k):
        for i in range(window):
            b.isend(2 * p, 2 * p + 1, nbytes, i)
            b.irecv(2 * p + 1, 2 * p, i, nbytes=nbytes)
        b.waitall(2 * p)
        b.waitall(2 * p + 1)
    return b.build()


@pytest.mark.parametrize("sharing", ["maxmin", "ccmod:capacity=ratio", RATIO])
@pytest.mark.parametrize("k", [1, 2, 3, 6])
@pytest.mark.parametrize("window", [1, 4])
def test_intra_pairs_get_min_of_pair_and_aggregate_share(sharing, k, window):
    # one pair copies at 2 GB/s, the node at 5 GB/s: k pairs take max(1, 2k/5) x one pair
    pair, agg, n = 2e9, 5e9, 4_000_000
    r = run(intra_pairs(k, window, n), star(f",intra=shared,copy_bandwidth={agg:g}"),
            mapping=f"block:{2 * k}", sharing=sharing, intra_latency_s=0.0,
            intra_bandwidth_Bps=pair)
    assert r.makespan_s == pytest.approx(window * n / pair * max(1.0, k * pair / agg), rel=1e-9)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_article_rule_intra_pairs_still_k_times(k):
    # BA = 1/count on the node's copy resource whatever its capacity (the article)
    pair, n = 2e9, 4_000_000
    r = run(intra_pairs(k, 1, n), star(",intra=shared,copy_bandwidth=5e9"),
            mapping=f"block:{2 * k}", sharing="ccmod", intra_latency_s=0.0,
            intra_bandwidth_Bps=pair)
    assert r.makespan_s == pytest.approx(k * n / pair, rel=1e-9)


def test_aggregate_from_the_cost_model_and_rank_resources_named():
    d = COST.to_dict()
    d["intra"] = {"latency_s": 0.0, "bandwidth_Bps": 2e9, "aggregate_bandwidth_Bps": 3e9}
    cost = PiecewiseLinearCost.from_dict(d)
    assert cost.intra_aggregate_bandwidth_Bps == 3e9
    r = run(intra_pairs(3), star(",intra=shared"), mapping="block:6", sharing="maxmin",
            cost=cost)
    assert r.makespan_s == pytest.approx(4_000_000 / 1e9, rel=1e-9)   # 3 pairs at 1 GB/s
    assert {"copy0/intra", "rank1/copy"} <= set(r.links.name)


def test_bad_aggregate_fails_with_one_line():
    with pytest.raises(CcmodInputError) as e:
        make_network("star:intra=shared,copy_bandwidth=0", 2)
    assert "copy_bandwidth" in str(e.value)
    d = COST.to_dict()
    d["intra"] = {"aggregate_bandwidth_Bps": -1}
    with pytest.raises(CcmodInputError) as e:
        PiecewiseLinearCost.from_dict(d)
    assert "aggregate_bandwidth_Bps" in str(e.value)


def test_bad_capacity_option_lists_choices():
    with pytest.raises(CcmodInputError) as e:
        run(exchange(), star(), sharing="ccmod:capacity=maybe", cost=COST)
    assert "ratio" in str(e.value)


def test_intra_small_messages_cost_the_sender_per_message_and_skip_the_nic_gap():
    # one pair's stream of W tiny messages: W x o_send on the sender (its per-message time);
    # k pairs in parallel cost the same (each rank's own CPU); the NIC gap does not apply
    o, W = 2e-7, 16
    d = COST.to_dict()
    d["gap_s"] = 1e-6
    d["intra"] = {"latency_s": o, "bandwidth_Bps": 1e10, "o_send_s": o}
    cost = PiecewiseLinearCost.from_dict(d)
    for k in (1, 4):
        for sh in ("maxmin", RATIO):
            r = run(intra_pairs(k, W, 1), star(",intra=shared"), mapping=f"block:{2 * k}",
                    sharing=sh, cost=cost)
            # (the last byte of the k pairs crosses the node copy resource together)
            assert r.makespan_s == pytest.approx(W * o + k / 1e10, rel=1e-6)


def test_rule_lists_keep_a_rules_own_options():
    from ccmod.sharing import split_rules
    assert split_rules("ccmod, ccmod:latency=unshared,capacity=ratio,maxmin") == [
        "ccmod", "ccmod:latency=unshared,capacity=ratio", "maxmin"]
    assert split_rules("") == []
