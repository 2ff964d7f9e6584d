"""SimGrid platform XML as a network (``--network simgrid:file=...``, issue 12)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ccmod.api import run
from ccmod.errors import CcmodInputError
from ccmod.netsys.networks import make_network
from ccmod.netsys.simgrid_platform import parse_bandwidth, parse_latency

DATA = Path(__file__).parent / "data"
CLUSTER = DATA / "simgrid" / "cluster_backbone.xml"


@pytest.mark.parametrize("text,bps", [("125MBps", 125e6), ("10Gbps", 10e9 / 8),
                                      ("1GiBps", 2.0 ** 30), ("1e9", 1e9), ("2.25GBps", 2.25e9)])
def test_bandwidth_units(text, bps):
    assert parse_bandwidth(text) == pytest.approx(bps)


@pytest.mark.parametrize("text,s", [("50us", 50e-6), ("1.2ms", 1.2e-3), ("0", 0.0),
                                    ("3s", 3.0), ("10ns", 1e-8)])
def test_latency_units(text, s):
    assert parse_latency(text) == pytest.approx(s)


def test_cluster_with_backbone_routes_up_backbone_down():
    net = make_network(f"simgrid:file={CLUSTER}", 4)
    assert net.nnodes == 100
    names = net.link_names
    hops = net.route(0, 2)
    assert [names[link] for link, _ in hops] == ["acme_link_0", "acme_backbone", "acme_link_2"]
    assert [d for _, d in hops] == [0, 0, 1]       # l0 UP, shared backbone, l2 DOWN
    table = net.compile_routes(np.array([[0, 2]]))
    assert table.latency_s[0] == pytest.approx(50e-6 + 500e-6 + 50e-6)
    assert table.bandwidth_Bps[0] == pytest.approx(125e6)


def _platform(tmp_path, body):
    p = tmp_path / "p.xml"
    p.write_text("<?xml version='1.0'?>\n<platform version=\"4.1\">\n" + body + "</platform>\n")
    return p


def test_full_routes_symmetrical_and_splitduplex(tmp_path):
    p = _platform(tmp_path, """<zone id="z" routing="Full">
  <host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
  <link id="l1" bandwidth="1GBps" latency="1us" sharing_policy="SPLITDUPLEX"/>
  <link id="l2" bandwidth="2GBps" latency="2us"/>
  <route src="a" dst="b"><link_ctn id="l1" direction="UP"/><link_ctn id="l2"/></route>
</zone>""")
    net = make_network(f"simgrid:file={p}", 2)
    assert net.route(0, 1) == [(0, 0), (1, 0)]
    assert net.route(1, 0) == [(1, 0), (0, 1)]      # reversed, UP <-> DOWN on l1 only
    tr = tmp_path / "pp.ti"
    tr.write_text("0 send 1 0 1000\n1 recv 0 0 1000\n")
    r = run(tr, net, eager_limit_bytes=0)
    # quiet time over l1 (1 GB/s, 1 us) and l2 (2 GB/s, 2 us): latency 3 us + 1000 B
    assert r.makespan_s >= 3e-6


def test_floyd_routes_are_shortest_paths_over_route_edges(tmp_path):
    p = _platform(tmp_path, """<zone id="z" routing="Floyd">
  <host id="a" speed="1Gf"/><host id="b" speed="1Gf"/><router id="r"/>
  <link id="la" bandwidth="1GBps" latency="1us"/><link id="lb" bandwidth="1GBps" latency="1us"/>
  <route src="a" dst="r"><link_ctn id="la"/></route>
  <route src="r" dst="b"><link_ctn id="lb"/></route>
</zone>""")
    net = make_network(f"simgrid:file={p}", 2)
    assert [net.link_names[l_] for l_, _ in net.route(0, 1)] == ["la", "lb"]
    assert [net.link_names[l_] for l_, _ in net.route(1, 0)] == ["lb", "la"]


@pytest.mark.parametrize("body,needle", [
    ('<zone id="z" routing="Full"><host id="a" speed="1f"/>'
     '<zoneRoute src="x" dst="y" gw_src="a" gw_dst="a"/></zone>', "not a host, router or zone"),
    ('<zone id="z" routing="Full"><host id="a" speed="1f"/>'
     '<bypassRoute src="a" dst="a"/></zone>', "not supported"),
    ('<zone id="z" routing="Vivaldi"><host id="a" speed="1f"/></zone>', "does not read"),
    ('<zone id="z" routing="Full"><cluster id="c" prefix="n" suffix="" radical="0-3" '
     'speed="1f" bw="1GBps" lat="1us" topology="TORUS" topo_parameters="2,2"/></zone>',
     "does not read"),
    ('<zone id="z" routing="Full"><host id="a" speed="1f"/>'
     '<link id="l" bandwidth="fast" latency="1us"/></zone>', "bad bandwidth"),
    ('<zone id="z" routing="Full"><host id="a" speed="1f"/>'
     '<route src="a" dst="q"><link_ctn id="l"/></route></zone>', "not a host"),
    ('<zone id="z" routing="Full"></zone>', "no <host>"),
])
def test_bad_platforms_are_one_line_errors(tmp_path, body, needle):
    with pytest.raises(CcmodInputError, match=needle):
        make_network(f"simgrid:file={_platform(tmp_path, body)}", 1)


def test_run_on_a_simgrid_platform():
    r = run(DATA / "smpi-npb" / "FT.S.4", f"simgrid:file={CLUSTER}")
    assert r.network["name"] == "simgrid" and r.makespan_s > 0
