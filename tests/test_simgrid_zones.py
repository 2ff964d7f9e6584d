"""SimGrid platforms with zones, zone routes, Cluster zones and FATPIPE links (issue 12)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ccmod.api import run
from ccmod.errors import CcmodInputError
from ccmod.netsys.networks import make_network

DATA = Path(__file__).parent / "data" / "simgrid"


def _net(path, n=2):
    return make_network(f"simgrid:file={path}", n)


def _names(net, hops):
    return [(net.link_names[lid], d) for lid, d in hops]


def _table(net, s, d):
    t = net.compile_routes(np.array([[s, d]]))
    return t.latency_s[0], t.bandwidth_Bps[0]


def _platform(tmp_path, body):
    p = tmp_path / "p.xml"
    p.write_text("<?xml version='1.0'?>\n<platform version=\"4.1\">\n" + body + "</platform>\n")
    return p


def test_small_platform_full_routes_per_pair():
    net = _net(DATA / "small_platform.xml", 5)
    assert net.host_names == ["Tremblay", "Jupiter", "Fafard", "Ginette", "Bourassa"]
    hops = net.route(0, 2)                       # Tremblay -> Fafard
    assert [n for n, _ in _names(net, hops)] == ["4", "3", "2", "0", "1", "8"]
    lat, bw = _table(net, 0, 2)
    assert lat == pytest.approx((479.78 + 514.433 + 136.931 + 59.904 + 514.433 + 270.544) * 1e-6)
    assert bw == pytest.approx(8.158e6)          # link 8 is the bottleneck
    # symmetrical by default: the way back uses the same shared links in reverse
    assert [n for n, _ in _names(net, net.route(2, 0))] == ["8", "1", "0", "2", "3", "4"]
    assert _table(net, 2, 0) == pytest.approx((lat, bw))
    # the loopback routes (FATPIPE) are intra-host: ccmod's intra-node path
    assert net.route(1, 0) == [(net.link_id["9"], 0)]
    assert net.simgrid_route(0, 1) == net.route(0, 1)


def test_two_clusters_route_through_gateways_and_zone_route():
    net = _net(DATA / "two_clusters.xml", 20)
    assert net.nnodes == 20
    assert _names(net, net.route(0, 15)) == [
        ("my_cluster_1_link_0", 0), ("my_cluster_1_backbone", 0), ("backbone", 0),
        ("my_cluster_2_backbone", 0), ("my_cluster_2_link_15", 1)]
    lat, bw = _table(net, 0, 15)
    assert lat == pytest.approx(50e-6 + 500e-6 + 500e-6 + 500e-6 + 50e-6)
    assert bw == pytest.approx(125e6)
    assert _names(net, net.route(15, 0)) == [
        ("my_cluster_2_link_15", 0), ("my_cluster_2_backbone", 0), ("backbone", 0),
        ("my_cluster_1_backbone", 0), ("my_cluster_1_link_0", 1)]
    # inside one cluster the zone route is not used
    assert _names(net, net.route(0, 3)) == [
        ("my_cluster_1_link_0", 0), ("my_cluster_1_backbone", 0), ("my_cluster_1_link_3", 1)]


ROUTING_CLUSTER = """<zone id="AS0" routing="Full">
  <zone id="c1" routing="Cluster">
    <router id="router1"/>
    <host id="host1" speed="1Gf"/>
    <link id="l1_UP" bandwidth="125MBps" latency="100us"/>
    <link id="l1_DOWN" bandwidth="125MBps" latency="100us"/>
    <host_link id="host1" up="l1_UP" down="l1_DOWN"/>
    <host id="host2" speed="1Gf"/>
    <link id="l2" bandwidth="100MBps" latency="100us" sharing_policy="FULLDUPLEX"/>
    <host_link id="host2" up="l2_UP" down="l2_DOWN"/>
    <backbone id="bb1" bandwidth="2.25GBps" latency="500us"/>
  </zone>
  <zone id="far" routing="Floyd">
    <host id="host3" speed="1Gf"/><router id="r3"/><router id="r4"/>
    <link id="a" bandwidth="1GBps" latency="1ms"/><link id="b" bandwidth="50MBps" latency="2ms"/>
    <route src="r4" dst="r3"><link_ctn id="a"/></route>
    <route src="r3" dst="host3"><link_ctn id="b"/></route>
  </zone>
  <link id="wan" bandwidth="10MBps" latency="10ms"/>
  <zoneRoute src="c1" dst="far" gw_src="router1" gw_dst="r4"><link_ctn id="wan"/></zoneRoute>
</zone>
"""


def test_cluster_zone_host_links_backbone_and_nested_floyd_zone(tmp_path):
    net = _net(_platform(tmp_path, ROUTING_CLUSTER), 3)
    # host1 -> host2 inside the Cluster zone: up link, backbone once, host2's DOWN direction
    assert _names(net, net.route(0, 1)) == [("l1_UP", 0), ("bb1", 0), ("l2", 1)]
    # host2 -> host3: Cluster zone to its router, the zone route, then Floyd r4 -> r3 -> host3
    assert _names(net, net.route(1, 2)) == [("l2", 0), ("bb1", 0), ("wan", 0), ("a", 0),
                                           ("b", 0)]
    lat, bw = _table(net, 1, 2)
    assert lat == pytest.approx(100e-6 + 500e-6 + 10e-3 + 1e-3 + 2e-3)
    assert bw == pytest.approx(10e6)
    # and back: the Floyd edges and the zone route are symmetrical
    assert _names(net, net.route(2, 0)) == [("b", 0), ("a", 0), ("wan", 0), ("bb1", 0),
                                           ("l1_DOWN", 0)]


def test_cluster_router_id_and_a_none_zone(tmp_path):
    # as SimGrid's cluster_and_one_host.xml: the lone host is its zone's gateway
    p = _platform(tmp_path, """<zone id="AS0" routing="Full">
  <cluster id="cl" prefix="c-" suffix=".me" radical="0-1" speed="1Gf" bw="125MBps"
           lat="50us" router_id="router1"/>
  <zone id="AS1" routing="None"><host id="host1" speed="1Gf"/></zone>
  <link id="link1" bandwidth="100kBps" latency="10ms"/>
  <zoneRoute src="cl" dst="AS1" gw_src="router1" gw_dst="host1"><link_ctn id="link1"/></zoneRoute>
</zone>""")
    net = _net(p, 3)
    assert net.host_names == ["c-0.me", "c-1.me", "host1"]
    assert _names(net, net.route(1, 2)) == [("cl_link_1", 0), ("link1", 0)]
    assert _names(net, net.route(2, 0)) == [("link1", 0), ("cl_link_0", 1)]


def test_asymmetric_routes_need_both_directions(tmp_path):
    body = """<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>
  <link id="ab" bandwidth="1GBps" latency="1us"/><link id="ba" bandwidth="2GBps" latency="3us"/>
  <route src="a" dst="b" symmetrical="NO"><link_ctn id="ab"/></route>{back}</zone>"""
    one_way = _net(_platform(tmp_path, body.format(back="")))
    assert _names(one_way, one_way.route(0, 1)) == [("ab", 0)]
    # SimGrid needs only the routes a run uses: the missing one fails when used, in one line
    with pytest.raises(CcmodInputError, match="no route from b to a"):
        one_way.route(1, 0)
    tr = tmp_path / "back.ti"
    tr.write_text("1 send 0 0 8\n0 recv 1 0 8\n")
    with pytest.raises(CcmodInputError, match="no route from b to a"):
        run(tr, one_way)
    net = _net(_platform(tmp_path, body.format(
        back='<route src="b" dst="a" symmetrical="NO"><link_ctn id="ba"/></route>')))
    assert _names(net, net.route(1, 0)) == [("ba", 0)]
    assert _table(net, 1, 0) == pytest.approx((3e-6, 2e9))


def _two_flows(tmp_path, policy):
    p = _platform(tmp_path, f"""<zone id="z" routing="Full">
  <host id="a" speed="1f"/><host id="b" speed="1f"/><host id="c" speed="1f"/><host id="d" speed="1f"/>
  <link id="f" bandwidth="100MBps" latency="10us" sharing_policy="{policy}"/>
  <link id="la" bandwidth="1GBps" latency="1us"/><link id="lb" bandwidth="1GBps" latency="1us"/>
  <link id="lc" bandwidth="1GBps" latency="1us"/><link id="ld" bandwidth="1GBps" latency="1us"/>
  <route src="a" dst="b"><link_ctn id="la"/><link_ctn id="f"/><link_ctn id="lb"/></route>
  <route src="c" dst="d"><link_ctn id="lc"/><link_ctn id="f"/><link_ctn id="ld"/></route>
</zone>""")
    tr = tmp_path / "two.ti"
    n = 1_000_000
    tr.write_text(f"0 send 1 0 {n}\n1 recv 0 0 {n}\n2 send 3 0 {n}\n3 recv 2 0 {n}\n")
    net = _net(p, 4)
    return net, run(tr, net, eager_limit_bytes=0), n


@pytest.mark.parametrize("sharing", ["ccmod", "maxmin"])
def test_fatpipe_gives_each_flow_the_full_bandwidth(tmp_path, sharing):
    net, _, n = _two_flows(tmp_path, "FATPIPE")
    # the fat pipe counts in latency and bottleneck bandwidth but is not a contended hop
    assert _names(net, net.route(0, 1)) == [("la", 0), ("lb", 0)]
    assert _names(net, net.simgrid_route(0, 1)) == [("la", 0), ("f", 0), ("lb", 0)]
    assert _table(net, 0, 1) == pytest.approx((12e-6, 100e6))
    tr = tmp_path / "two.ti"
    fat = run(tr, net, eager_limit_bytes=0, sharing=sharing)
    q = fat.messages["quiet_s"]
    assert q.iloc[0] == pytest.approx(12e-6 + n / 100e6, rel=1e-6)
    assert fat.makespan_s == pytest.approx(q.max(), rel=1e-6)       # no slowdown
    shared_net, _, _ = _two_flows(tmp_path, "SHARED")
    shared = run(tr, shared_net, eager_limit_bytes=0, sharing=sharing)
    assert shared.makespan_s > 1.5 * fat.makespan_s               # the shared link halves it


@pytest.mark.parametrize("sharing", ["ccmod", "maxmin"])
def test_route_of_fatpipe_links_only(tmp_path, sharing):
    # as SimGrid's small_platform_fatpipe.xml: each route is one FATPIPE link
    p = _platform(tmp_path, """<zone id="z" routing="Full">
  <host id="a" speed="1f"/><host id="b" speed="1f"/><host id="c" speed="1f"/>
  <link id="1" bandwidth="498MBps" latency="150us" sharing_policy="FATPIPE"/>
  <route src="a" dst="b"><link_ctn id="1"/></route>
  <route src="c" dst="b"><link_ctn id="1"/></route>
</zone>""")
    net = _net(p, 3)
    assert net.route(0, 1) == [] and _table(net, 0, 1) == pytest.approx((150e-6, 498e6))
    tr = tmp_path / "in.ti"
    n = 498_000
    tr.write_text(f"0 send 1 0 {n}\n2 send 1 1 {n}\n1 irecv 0 0 {n}\n1 irecv 2 1 {n}\n"
                  "1 waitall\n")
    r = run(tr, net, eager_limit_bytes=0, sharing=sharing)
    # both arrive after one quiet time: nothing is shared
    assert r.messages["quiet_s"].tolist() == pytest.approx([150e-6 + 1e-3] * 2, rel=1e-6)
    assert r.makespan_s == pytest.approx(150e-6 + 1e-3, rel=1e-6)
