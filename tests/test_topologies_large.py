"""Route correctness of the large-machine topologies: fattree (k-ary n-tree / XGFT),
dragonfly, mesh/torus closed forms, and the self-validation every network runs when built.

Expected counts come from the definitions (docs/networks.md), not from the code: a line of
X routers under all-to-all loads its middle link with X^2/4 messages per direction and its
end link with X-1; a k-ary n-tree has k^n links per level and routes a half-shift
permutation without contention under D-mod-K; a dragonfly's minimal route crosses at most
3 router-to-router links (local, global, local).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from ccmod.errors import CcmodInputError
from ccmod.netsys.base import Param
from ccmod.netsys.networks import make_network
from ccmod.netsys.topologies import BuiltNetwork
from ccmod.netsys.validate import check_routes, link_table


def resource_counts(net, pairs):
    counts = np.zeros(net.nresources, dtype=np.int64)
    for s, d in pairs:
        for link, direction in net.route(s, d):
            counts[2 * link + direction] += 1
    return counts


def all_pairs(n):
    return [(s, d) for s in range(n) for d in range(n) if s != d]


# ------------------------------------------------------------------ mesh / torus
@pytest.mark.parametrize("x", [4, 6, 8, 10])
def test_line_all_to_all_middle_and_end_link(x):
    net = make_network(f"mesh:dims={x}", None)
    counts = resource_counts(net, all_pairs(x))
    link = {name: i for i, name in enumerate(net.link_names)}
    mid = link[f"d0+@{x // 2 - 1}"]      # joins routers x/2-1 and x/2
    end = link["d0+@0"]                  # joins routers 0 and 1
    for direction in (0, 1):
        assert counts[2 * mid + direction] == x * x // 4
        assert counts[2 * end + direction] == x - 1


def test_jmachine_mesh_ecube_routes():
    """8x8x8 mesh, e-cube: X first, then Y, then Z; hops = 2 + Manhattan distance."""
    net = make_network("mesh:dims=8x8x8", None)
    assert net.nnodes == 512
    # 512 injection links + 3 dimensions * 7 * 64 router links
    assert net.nlinks == 512 + 3 * 7 * 64
    rng = np.random.default_rng(0)
    for s, d in rng.integers(0, 512, size=(300, 2)):
        if s == d:
            continue
        hops = net.route(int(s), int(d))
        cs = np.array([s % 8, s // 8 % 8, s // 64])
        cd = np.array([d % 8, d // 8 % 8, d // 64])
        assert len(hops) == 2 + int(np.abs(cs - cd).sum())
        dims_seq = [int(net.link_names[lk][1]) for lk, _ in hops[1:-1]]
        assert dims_seq == sorted(dims_seq)          # X, then Y, then Z


def test_torus_route_lengths_shorter_way():
    net = make_network("torus:dims=6x5", None)
    for s, d in all_pairs(30):
        sx, sy, dx, dy = s % 6, s // 6, d % 6, d // 6
        dist = min((dx - sx) % 6, (sx - dx) % 6) + min((dy - sy) % 5, (sy - dy) % 5)
        assert len(net.route(s, d)) == 2 + dist


# ------------------------------------------------------------------ fat tree
@pytest.mark.parametrize("k, n", [(2, 3), (4, 2), (4, 3), (3, 3)])
def test_kary_ntree_link_counts(k, n):
    net = make_network(f"fattree:k={k},n={n}", None)
    assert net.nnodes == k ** n
    # k^n links between every pair of adjacent levels
    assert np.bincount(net.link_level).tolist()[1:] == [k ** n] * n
    assert net.nlinks == n * k ** n


@pytest.mark.parametrize("k, n", [(2, 4), (4, 2), (4, 3)])
def test_kary_ntree_route_lengths(k, n):
    net = make_network(f"fattree:k={k},n={n}", None)
    for s, d in itertools.islice(all_pairs(k ** n), 0, None, 7):
        level = next(lv for lv in range(n + 1) if s // k ** lv == d // k ** lv)
        assert len(net.route(s, d)) == 2 * level
        assert net.nca_level(s, d) == level


@pytest.mark.parametrize("k, n", [(2, 4), (4, 2), (4, 3)])
def test_kary_ntree_bisection_dmodk_shift_is_contention_free(k, n):
    """Half-shift permutation: every message crosses the bisection; D-mod-K gives each a
    distinct top-level link, using all k^n top links once in each direction."""
    net = make_network(f"fattree:k={k},n={n},route=dmodk", None)
    N = k ** n
    pairs = [(s, (s + N // 2) % N) for s in range(N)]
    counts = resource_counts(net, pairs)
    assert counts.max() == 1
    top = np.flatnonzero(net.link_level == n)
    assert counts[2 * top].sum() == N and counts[2 * top + 1].sum() == N
    # the bisection: top-level links cross it; N/2 messages each way use N/2 of them
    assert len(top) == N


def test_fattree_smodk_differs_and_spreads_sources():
    d = make_network("fattree:k=4,n=2,route=dmodk", None)
    s = make_network("fattree:k=4,n=2,route=smodk", None)
    # many sources to one destination: dmodk funnels them through one top switch
    pairs = [(src, 15) for src in range(12)]
    top = np.flatnonzero(d.link_level == 2)
    res = np.concatenate([2 * top, 2 * top + 1])
    assert resource_counts(d, pairs)[res].max() == 12
    assert resource_counts(s, pairs)[res].max() == 3


def test_xgft_taper_and_per_level():
    net = make_network("fattree:m=4x4,w=1x2,level_bandwidth=1e9/2e9,taper=1/0.25,"
                       "level_latency=1e-6/2e-6", None)
    assert net.nnodes == 16
    assert np.bincount(net.link_level).tolist()[1:] == [16, 8]
    lv2 = net.link_level == 2
    assert np.all(net.capacity_Bps[lv2] == 5e8) and np.all(net.capacity_Bps[~lv2] == 1e9)
    assert np.all(net.latency_s[lv2] == 2e-6)


def test_fattree_derived_size_and_bad_params():
    assert make_network("fattree", 20).nnodes == 64          # k=4: 4^3 >= 20
    assert make_network("fattree:k=2", 20).nnodes == 32
    for spec, what in [("fattree:taper=1/2/3/4", "values"), ("fattree:m=4x4,w=1", "levels"),
                       ("fattree:k=2,n=2", "needs"), ("fattree:level_bandwidth=abc", "numbers")]:
        with pytest.raises(CcmodInputError, match=what) as e:
            make_network(spec, 8)
        assert "\n" not in str(e.value)


# ------------------------------------------------------------------ dragonfly
def _inter_router(net, hops):
    return sum(1 for link, _ in hops if net.link_kind[link] != 0)


def test_dragonfly_balanced_one_global_link_per_group_pair():
    net = make_network("dragonfly:groups=9,routers=4,hosts=2,global_links=2", None)
    assert net.nnodes == 72
    assert len(net.glinks) == 9 * 8 // 2
    assert all(len(v) == 1 for v in net.glinks.values())
    assert (net.link_kind == 1).sum() == 9 * 4 * 3 // 2     # all-to-all inside each group


@pytest.mark.parametrize("spec", ["dragonfly:groups=9,routers=4,hosts=2,global_links=2",
                                  "dragonfly:groups=4,routers=3,hosts=2,global_links=2"])
def test_dragonfly_minimal_at_most_three_router_hops(spec):
    net = make_network(spec, None)
    worst = 0
    for s, d in all_pairs(net.nnodes):
        hops = net.route(s, d)
        r = _inter_router(net, hops)
        worst = max(worst, r)
        assert r <= 3
        same_router = s // net.p == d // net.p
        assert (r == 0) == same_router
    assert worst == 3
    check_routes(net, all_pairs(net.nnodes))        # every hop is a real, connected link


def test_dragonfly_valiant_seeded_and_longer():
    spec = "dragonfly:groups=9,routers=4,hosts=2,global_links=2,route=valiant"
    a, b = make_network(spec + ",seed=3", None), make_network(spec + ",seed=3", None)
    c = make_network(spec + ",seed=4", None)
    pairs = all_pairs(a.nnodes)[::5]
    ra = [a.route(s, d) for s, d in pairs]
    assert ra == [b.route(s, d) for s, d in pairs]
    assert ra != [c.route(s, d) for s, d in pairs]
    hops = [_inter_router(a, h) for h in ra]
    assert max(hops) <= 5 and max(hops) > 3
    check_routes(a, pairs)


def test_dragonfly_errors_one_line():
    with pytest.raises(CcmodInputError, match="no global link"):
        make_network("dragonfly:groups=20,routers=2,global_links=2", None)
    with pytest.raises(CcmodInputError, match="holds at most"):
        make_network("dragonfly:routers=2,hosts=1,global_links=1", 100)


# ------------------------------------------------------------------ self-validation
class _Broken(BuiltNetwork):
    name = "broken-test"
    description = "test"
    params = {"mode": Param(str, "gap", "what to break")}

    def build(self):
        self.nnodes = 3
        self.vertex_names = ["n0", "n1", "n2", "sw"]
        self.link_names = ["n0", "n1", "n2"]
        self.link_ends = np.array([(0, 3), (1, 3), (2, 3)])
        self.capacity_Bps, self.latency_s = self.uniform_links(3, 1e9, 1e-6)

    def route(self, src, dst):
        if self.values["mode"] == "missing":
            return [(src, 0), (7, 1)]
        if self.values["mode"] == "gap":
            return [(src, 0), ((dst + 1) % 3, 1)] if dst == 2 else [(src, 0), (dst, 1)]
        return []


@pytest.mark.parametrize("mode, what", [("missing", "does not exist"),
                                        ("gap", "ends at"), ("none", "cannot be reached")])
def test_broken_routes_fail_on_construction(mode, what):
    with pytest.raises(CcmodInputError, match=what) as e:
        _Broken(nodes_needed=3, mode=mode)
    assert "\n" not in str(e.value)


def test_route_check_once_per_builtin_network_and_values(monkeypatch):
    # a built-in network's routes follow from its class and values: the check (every run
    # builds its network) runs once per process for each; other values, a subclass (it may
    # route otherwise) and a plugin are checked at every build
    from ccmod.netsys import topologies, validate
    from ccmod.netsys.meshes import Torus
    calls = []
    monkeypatch.setattr(topologies, "_ROUTES_CHECKED", set())
    monkeypatch.setattr(validate, "check_network", lambda net: calls.append(type(net).__name__))

    class MyTorus(Torus):
        pass
    for _ in range(2):
        make_network("torus:dims=4x4", 16)
        make_network("torus:dims=2x8", 16)
        MyTorus(nodes_needed=16, dims="4x4")
        _Broken(nodes_needed=3, mode="missing")
    assert calls == ["Torus", "Torus", "MyTorus", "_Broken", "MyTorus", "_Broken"]


def test_link_table_columns():
    net = make_network("fattree:k=2,n=2", None)
    t = link_table(net)
    assert len(t) == 2 * net.nlinks
    assert list(t.columns) == ["resource", "link", "name", "direction", "from", "to",
                               "bandwidth_Bps", "latency_s"]
    row = t.iloc[0]
    assert (row["from"], row["to"], row["direction"]) == ("host0", "sw1.0", "up")
    assert t.iloc[1]["from"] == "sw1.0"


@pytest.mark.slow
def test_jmachine_example_trace_runs_on_the_ecube_mesh():
    import ccmod
    from conftest import TRACES
    r = ccmod.run(TRACES / "jmachine512-snakes.ti", "mesh:dims=8x8x8", send_mode="eager")
    assert r.network["nodes"] == 512 and len(r.messages) == 2048
    m = r.messages
    s, d = m["src"].to_numpy(), m["dst"].to_numpy()
    coords = lambda x: np.stack([x % 8, x // 8 % 8, x // 64], 1)  # noqa: E731
    manhattan = np.abs(coords(s) - coords(d)).sum(1)
    assert np.array_equal(m["hops"].to_numpy(), np.where(s == d, 0, 2 + manhattan))
    assert r.makespan_s > 0


@pytest.mark.parametrize("name", ["fattree", "dragonfly"])
def test_plain_names_run_and_are_listed(name):
    from ccmod.netsys.networks import list_networks, network_params
    net = make_network(name, 5)
    assert net.nnodes >= 5
    assert name in set(list_networks()["name"])
    params = network_params(name)
    assert len(params) == len(type(net).params) and params["doc"].str.len().min() > 0
