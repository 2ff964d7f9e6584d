"""Tests of the network plugins (netsys): routes, parameters, mapping, quiet costs.

Expected routes are derived by hand from the definitions in docs/networks.md, and the
myrinet16 routes from an independent transcription of the article's Listing One.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from conftest import examples

from ccmod.errors import CcmodInputError
from ccmod.netsys.cost import PhysicalCost, PiecewiseLinearCost
from ccmod.netsys.mapping import nodes_needed, rank_to_node, resolve_map
from ccmod.netsys.networks import list_networks, make_network, network_params
from ccmod.netsys.registry import NETWORKS


# ---------------------------------------------------------------- registry / defaults
REQUIRED = ("star", "bus", "fattree2", "myrinet16")


def test_builtins_registered_and_listed():
    df = list_networks()
    for name in REQUIRED + ("torus", "mesh", "topology"):
        assert name in NETWORKS
        assert name in set(df["name"])
    assert list(df.columns) == ["name", "description", "params"]
    assert all(df["description"].str.len() > 0)


@pytest.mark.parametrize("name", ["star", "bus", "fattree2", "myrinet16", "torus", "mesh"])
def test_plain_name_works_and_params_documented(name):
    net = make_network(name, 5)
    assert net.nnodes >= 5
    assert net.capacity_Bps.shape == (net.nlinks, 2)
    assert net.latency_s.shape == (net.nlinks, 2)
    for k, p in type(net).params.items():
        assert p.doc, k
    assert len(network_params(name)) == len(type(net).params)


# ---------------------------------------------------------------- star / bus
def test_star_route_and_compiled_table():
    net = make_network("star:bandwidth=1e9,latency=2e-6", 4)
    assert net.nnodes == 4 and net.nlinks == 4
    assert net.route(1, 3) == [(1, 0), (3, 1)]
    rt = net.compile_routes(np.array([[1, 3], [2, 2], [3, 1]]))
    # resources are link*2+direction: (1,0)->2, (3,1)->7
    assert rt.resources.tolist() == [2, 7, 6, 3]
    assert rt.hops.tolist() == [2, 0, 2]
    assert rt.latency_s[0] == pytest.approx(4e-6)
    assert rt.bandwidth_Bps[0] == 1e9
    assert rt.lookup([3], [1]).tolist() == [2]


def test_bus_single_shared_resource():
    net = make_network("bus", 3)
    assert net.nlinks == 1
    assert net.route(0, 2) == [(0, 0)] and net.route(2, 0) == [(0, 0)]
    assert net.capacity_Bps[0, 0] == 1.25e7 and net.latency_s[0, 0] == 5e-5


# ---------------------------------------------------------------- fattree2
def test_fattree2_derived_size_and_spine_defaults():
    net = make_network("fattree2", 9)
    # ceil(9 / 4) = 3 leaves of 4 hosts, 2 spines: 12 host links + 6 cables
    assert net.values["leaves"] == 3 and net.nnodes == 12 and net.nlinks == 18
    assert net.values["spine_bandwidth"] == net.values["bandwidth"]
    assert net.route(0, 3) == [(0, 0), (3, 1)]  # same leaf


@pytest.mark.parametrize("rule, expect_1_6, expect_3_4", [
    # hosts_per_leaf=4, spines=3, leaves=2: cable(leaf, spine) = 8 + 3*leaf + spine.
    # 1->6: dmodk (6%4)%3=2, smodk (1%4)%3=1, sum 7%3=1; 3->4: dmodk 0, smodk 0, sum 1
    ("dmodk", [(1, 0), (10, 0), (13, 1), (6, 1)], [(3, 0), (8, 0), (11, 1), (4, 1)]),
    ("smodk", [(1, 0), (9, 0), (12, 1), (6, 1)], [(3, 0), (8, 0), (11, 1), (4, 1)]),
    ("sum", [(1, 0), (9, 0), (12, 1), (6, 1)], [(3, 0), (9, 0), (12, 1), (4, 1)]),
])
def test_fattree2_spine_rules(rule, expect_1_6, expect_3_4):
    net = make_network(f"fattree2:leaves=2,hosts_per_leaf=4,spines=3,route={rule}", 8)
    assert net.route(1, 6) == expect_1_6
    assert net.route(3, 4) == expect_3_4


def test_fattree2_spine_links_use_spine_params():
    net = make_network("fattree2:spine_bandwidth=5e8,spine_latency=3e-6", 8)
    rt = net.compile_routes(np.array([[0, 5]]))
    assert rt.bandwidth_Bps[0] == 5e8
    assert rt.latency_s[0] == pytest.approx(2 * 1e-6 + 2 * 3e-6)


def test_fattree2_too_small_names_leaves():
    with pytest.raises(CcmodInputError, match="leaves"):
        make_network("fattree2:leaves=2,hosts_per_leaf=4", 9)


# ---------------------------------------------------------------- myrinet16
def listing_one_routing(psrc, pdst, s1tos2):
    """Direct transcription of the article's Listing One ``Routing`` (RA of 32 x 2)."""
    nproc, lperg, switch_links, level_links = 16, 4, 32, 16
    vr = np.zeros((switch_links, 2), dtype=int)
    src_gr, trg_gr = psrc // lperg, pdst // lperg
    vr[psrc][0] = 1
    if src_gr != trg_gr:
        selsw = s1tos2[psrc]
        vr[src_gr * lperg + selsw + level_links - 1][0] = 1
        vr[selsw + trg_gr * lperg + level_links - 1][1] = 1
    vr[pdst][1] = 1
    assert nproc == 16
    return vr


@pytest.mark.parametrize("seed", [1, 7])
def test_myrinet16_matches_listing_one(seed):
    net = make_network(f"myrinet16:seed={seed}", 16)
    # RoutingInit: S1toS2[i] = floor(u * LperG) + 1 with u uniform in [0, 1)
    u = np.random.default_rng(seed).random(16)
    s1tos2 = [int(np.floor(x * 4)) + 1 for x in u]
    assert net.s1tos2.tolist() == s1tos2
    assert all(1 <= s <= 4 for s in s1tos2)
    for s in range(16):
        for d in range(16):
            if s == d:
                continue
            ra = np.zeros((32, 2), dtype=int)
            for link, direction in net.route(s, d):
                ra[link, direction] += 1
            np.testing.assert_array_equal(ra, listing_one_routing(s, d, s1tos2))


def test_myrinet16_seed_reproducible_and_facts():
    a, b = make_network("myrinet16", 16), make_network("myrinet16:seed=1", 16)
    assert a.s1tos2.tolist() == b.s1tos2.tolist()
    assert make_network("myrinet16:seed=2", 16).s1tos2.tolist() != a.s1tos2.tolist()
    assert a.nlinks == 32 and a.packet_size == 2020 and a.header_bytes == 20
    assert a.capacity_Bps[0, 0] == 1.6e8          # 1.28 Gb/s
    rt = a.compile_routes(np.array([[0, 1], [0, 15]]))
    assert rt.hops.tolist() == [2, 4]
    assert rt.latency_s == pytest.approx([2e-7, 4e-7])  # 100 ns per link


def test_myrinet16_quiet_cost_article_value():
    net = make_network("myrinet16", 16)
    cost = net.cost
    assert isinstance(cost, PiecewiseLinearCost)
    # the article: Tquiet(1 KB) = 48.9 us (same-group route: 2 resources = ref_hops)
    assert float(cost.quiet_s(1024, hops=2)) == pytest.approx(48.9e-6, rel=1e-12)
    # continuous at the packet size, steeper below it
    below, at = cost.quiet_s(2020 - 1e-9, hops=2), cost.quiet_s(2020, hops=2)
    assert float(at) == pytest.approx(float(below), rel=1e-9)
    # two more resources on a cross-group route add 2 * 100 ns
    assert float(cost.quiet_s(1024, hops=4)) == pytest.approx(48.9e-6 + 2e-7, rel=1e-12)
    assert isinstance(make_network("myrinet16:quiet=physical", 16).cost, PhysicalCost)


def test_myrinet16_too_many_nodes():
    with pytest.raises(CcmodInputError, match="16"):
        make_network("myrinet16", 17)
    with pytest.raises(CcmodInputError, match="nodes"):
        make_network("myrinet16:nodes=8", 4)


# ---------------------------------------------------------------- torus / mesh
def test_torus_hand_routes():
    net = make_network("torus:dims=4x4", 16)
    names = lambda s, d: [net.resource_name(2 * l + k) for l, k in net.route(s, d)]  # noqa: E731
    assert names(0, 3) == ["node0/up", "d0+@3/down", "node3/down"]       # wrap backwards
    assert names(0, 2) == ["node0/up", "d0+@0/up", "d0+@1/up", "node2/down"]  # tie: +
    assert names(0, 15) == ["node0/up", "d0+@3/down", "d1+@15/down", "node15/down"]
    assert names(5, 6) == ["node5/up", "d0+@5/up", "node6/down"]


def test_mesh_no_wrap_and_default_dims():
    net = make_network("mesh:dims=4x4", 16)
    assert len(net.route(0, 3)) == 2 + 3
    assert len(net.route(0, 15)) == 2 + 6
    assert make_network("mesh", 10).values["dims"] == "4x3"  # smallest near-square grid


@settings(max_examples=examples(40), deadline=None)
@given(dims=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_grid_hop_counts(dims, data):
    n = int(np.prod(dims))
    s, d = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))
    spec = "x".join(map(str, dims))
    cs = np.unravel_index(s, dims[::-1])[::-1]
    cd = np.unravel_index(d, dims[::-1])[::-1]
    delta = [abs(int(a) - int(b)) for a, b in zip(cs, cd)]
    for name, dist in (("mesh", delta), ("torus", [min(x, k - x) for x, k in zip(delta, dims)])):
        net = make_network(f"{name}:dims={spec}", n)
        if s == d:
            continue
        route = net.route(s, d)
        assert len(route) == 2 + sum(dist)
        assert route[0] == (s, 0) and route[-1] == (d, 1)
        assert len({r for r in route}) == len(route)


# ---------------------------------------------------------------- topology file
TOPO = """# two switches, four nodes
nodes 4
switch s0 s1
link 0 s0
link 1 s0
link 2 s1
link 3 s1 bandwidth=1e8
link s0 s1 latency=2e-6 name=trunk
link s0 s1 name=trunk2   # parallel: BFS takes the first declared
"""


def test_topology_file_routes(tmp_path):
    p = tmp_path / "net.txt"
    p.write_text(TOPO)
    net = make_network(f"topology:file={p}", 4)
    assert net.nlinks == 6
    assert net.route(0, 1) == [(0, 0), (1, 1)]
    assert net.route(0, 3) == [(0, 0), (4, 0), (3, 1)]
    assert net.route(3, 0) == [(3, 0), (4, 1), (0, 1)]
    rt = net.compile_routes(np.array([[0, 3]]))
    assert rt.bandwidth_Bps[0] == 1e8 and rt.latency_s[0] == pytest.approx(4e-6)


def test_topology_endpoints_do_not_forward(tmp_path):
    p = tmp_path / "chain.txt"
    p.write_text("nodes 3\nswitch s\nlink 0 s\nlink 1 s\nlink 1 2\n")
    # node 2 hangs off node 1, which does not forward: the network now fails when it is
    # built (networks validate themselves), before any run
    with pytest.raises(CcmodInputError, match="cannot be reached"):
        make_network(f"topology:file={p}", 3)
    p.write_text("nodes 3\nswitch s\nlink 0 s\nlink 1 s\nlink 2 s\nlink 1 2\n")
    net = make_network(f"topology:file={p}", 3)
    assert net.route(0, 1) == [(0, 0), (1, 1)]
    assert net.route(0, 2) == [(0, 0), (2, 1)]


@pytest.mark.parametrize("text, line", [
    ("nodes 2\nlink 0 x\n", 2),
    ("nodes 2\nswitch s\nlink 0 s speed=3\n", 3),
    ("nodes 2\nswitch s\nlink 0 s bandwidth=0\n", 3),
    ("nodes 2\nfoo\n", 2),
    ("nodes 2\nswitch 1\n", 2),
])
def test_topology_file_errors(tmp_path, text, line):
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(CcmodInputError) as ei:
        make_network(f"topology:file={p}", 2)
    assert f"{p}:{line}:" in str(ei.value)


# ---------------------------------------------------------------- parameter errors
@pytest.mark.parametrize("spec, needed, pattern", [
    ("nosuchnet", 2, r"unknown network 'nosuchnet'.*valid: .*star"),
    ("star:bandwith=1e9", 2, r"unknown parameter 'bandwith'.*valid: bandwidth, latency, nodes"),
    ("star:bandwidth=0", 2, r"'bandwidth=.*must be between 1 and 1e18"),
    ("bus:bandwidth=1e-300", 2, r"'bandwidth=.*must be between 1 and 1e18"),
    ("fattree2:spines=2147483648", 2, r"spines=2147483648.*too large"),
    ("star:bandwidth=fast", 2, r"'bandwidth=fast'.*not a valid float"),
    ("star:latency=-1e-6", 2, r"'latency=.*must be between 0 and 1e4"),
    ("star:nodes=2.5", 2, r"'nodes=2.5'.*not a valid int"),
    ("star:nodes=4", 8, r"nodes=4 but the run needs 8"),
    ("fattree2:route=random", 4, r"must be one of dmodk, smodk, sum"),
    ("fattree2:spines=0", 4, r"'spines=0'.*>= 1"),
    ("torus:dims=4y4", 4, r"'dims=4y4'"),
    ("torus:dims=2x2", 5, r"dims=2x2.*needs 5"),
    ("topology", 2, r"needs file=PATH"),
    ("myrinet16:seed=-1", 2, r"'seed=-1'.*>= 0"),
    ("torus:dims=2000x2000", 2, r"would have 4000000 nodes"),
    ("star:nodes=1e9", 2, r"'nodes=1000000000'.*too large"),
    ("fattree2:leaves=1e6", 2, r"would have 4000000 nodes.*at most"),
])
def test_bad_specs_are_one_line_errors(spec, needed, pattern):
    with pytest.raises(CcmodInputError, match=pattern) as ei:
        make_network(spec, needed)
    assert "\n" not in str(ei.value)
    assert str(ei.value).startswith("--network: ")


def test_cost_and_background_arguments(tmp_path):
    model = PiecewiseLinearCost([0, 100], [1e-5, 2e-5], [1e8, 2e8], ref_hops=2,
                                per_hop_latency_s=1e-7, packet_size=100)
    path = tmp_path / "cost.json"
    model.save(path)
    net = make_network("star", 2, cost=str(path), background=0.25)
    assert float(net.cost.quiet_s(50, hops=2)) == pytest.approx(1e-5 + 50 / 1e8)
    assert net.background_flat().tolist() == [0.25] * 4
    assert isinstance(make_network("myrinet16", 2, cost="physical").cost, PhysicalCost)
    with pytest.raises(CcmodInputError, match="cost model"):
        make_network("star", 2, cost=str(tmp_path / "missing.json"))
    with pytest.raises(CcmodInputError, match="background"):
        make_network("star", 2, background=1.0)


def test_piecewise_cost_round_trip(tmp_path):
    model = make_network("myrinet16", 16).cost
    path = tmp_path / "m.json"
    model.save(path)
    back = PiecewiseLinearCost.load(path)
    # load() records the file it came from as the source; everything else round-trips
    assert back.source == str(path)
    strip = lambda d: {k: v for k, v in d.items() if k != "source"}  # noqa: E731
    assert strip(back.to_dict()) == strip(model.to_dict())
    assert json.loads(path.read_text())["format"] == "ccmod-cost-model"
    sizes = np.array([0, 1, 1024, 2019, 2020, 1 << 20])
    np.testing.assert_array_equal(back.quiet_s(sizes, hops=4), model.quiet_s(sizes, hops=4))


# ---------------------------------------------------------------- mapping
def test_mapping_specs():
    assert rank_to_node(None, 4).tolist() == [0, 1, 2, 3]
    assert rank_to_node(None, 4).dtype == np.int32
    assert rank_to_node("block:3", 7).tolist() == [0, 0, 0, 1, 1, 1, 2]
    assert rank_to_node("cyclic:3", 7).tolist() == [0, 1, 2, 0, 1, 2, 0]
    m, n = resolve_map("block:2", 5)
    assert n == 3 == nodes_needed(m)


def test_mapping_files(tmp_path):
    p = tmp_path / "m1.txt"
    p.write_text("# node per rank\n3\n\n0  # rank 1\n3\n")
    assert rank_to_node(str(p), 3).tolist() == [3, 0, 3]
    assert nodes_needed(rank_to_node(str(p), 3)) == 4
    q = tmp_path / "m2.txt"
    q.write_text("2 0\n0 1\n1 1\n")
    assert rank_to_node(q, 3).tolist() == [1, 1, 0]


@pytest.mark.parametrize("text, nranks, line, pattern", [
    ("0\n1 1\n", 2, 2, "mixes"),
    ("0 0\n0 1\n", 2, 2, "placed twice"),
    ("0\nx\n", 2, 2, "not an integer"),
    ("0\n-1\n", 2, 2, "negative"),
    ("0\n1\n2\n", 2, 3, "rank 2 but the workload has 2"),
    ("0 1 2\n", 1, 1, "fields"),
    ("0\n", 2, 1, "no node for rank 1"),
])
def test_mapping_file_errors(tmp_path, text, nranks, line, pattern):
    p = tmp_path / "bad.map"
    p.write_text(text)
    with pytest.raises(CcmodInputError, match=pattern) as ei:
        rank_to_node(str(p), nranks)
    assert str(ei.value).startswith(f"{p}:{line}:")


@pytest.mark.parametrize("spec", ["block:0", "cyclic:-2", "block:x", "cyclic", "nonexistent.map"])
def test_mapping_spec_errors(spec):
    with pytest.raises(CcmodInputError):
        rank_to_node(spec, 4)
