"""Multi-benchmark fits: stream bandwidth, gap, overheads, intra-node, degenerate segments."""
import json

import numpy as np
import pytest

from ccmod.api import run
from ccmod.compile import compile_messages
from ccmod.errors import CcmodInputError
from ccmod.netsys.cost import PiecewiseLinearCost
from ccmod.netsys.fit import PiecewiseLinearFit
from ccmod.netsys.fit_multi import combine, intra_summary, stream_summary
from ccmod.netsys.fit_report import merge_degenerate
from ccmod.netsys.networks import make_network
from ccmod.workloads.base import WorkloadBuilder

SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576,
         4194304]


def osu(path, title, rows, pairs=None):
    lines = [f"# OSU MPI {title} Test v5.6.2"]
    if pairs:
        lines.append(f"# [ pairs: {pairs} ] [ window size: 64 ]")
    lines.append("# Size      MB/s" if "Latency" not in title else "# Size          Latency (us)")
    lines += [f"{n:<10d}{v:.4f}" for n, v in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_stream_and_intra_summaries_closed_form(tmp_path):
    B, g = 1e10, 1e-7       # plateau 10 GB/s; 1e7 messages/s at small sizes
    bw = [(n, min(n / g, B) / 1e6) for n in SIZES]
    f = osu(tmp_path / "bw.out", "Bandwidth", bw)
    st = stream_summary([f])
    assert st["stream_bandwidth_Bps"] == pytest.approx(B)
    assert st["gap_s"] == 0.0                  # one pair: limited by its own overheads
    assert st["o_send_s"] == pytest.approx(g)
    # 8 pairs on one node reach 4x the message rate: the node's NIC gap is g / 4
    mr = osu(tmp_path / "mr.out", "Multiple Bandwidth / Message Rate",
             [(n, min(4 * n / g, B) / 1e6) for n in SIZES], pairs=8)
    st = stream_summary([f, mr])
    assert st["gap_s"] == pytest.approx(g / 4) and st["o_send_s"] == pytest.approx(g)
    assert st["max_bytes"] == SIZES[-1]
    lat = osu(tmp_path / "lat.out", "Latency", [(n, 0.3 + n / 5e9 * 1e6) for n in SIZES])
    it = intra_summary([lat])
    assert it["latency_s"] == pytest.approx(0.3e-6, rel=1e-2)   # median of sizes <= 64 B
    assert it["bandwidth_Bps"] == pytest.approx(5e9, rel=1e-3)


def test_combine_keeps_pingpong_quiet_time_and_splits_latency():
    pp = PiecewiseLinearCost([0], [2e-6], [5e9])
    st = {"stream_bandwidth_Bps": 1e10, "gap_s": 1e-7, "o_send_s": 5e-7, "max_bytes": 1 << 22}
    m = combine(pp, st, {"latency_s": 3e-7, "bandwidth_Bps": 8e9}, (0, 1 << 20))
    n = np.array([1e3, 1e6])
    assert m.quiet_s(n) == pytest.approx(pp.quiet_s(n))          # ping-pong unchanged
    assert m.bandwidth_Bps(n) == pytest.approx([1e10, 1e10])      # bytes flow at the stream rate
    assert m.latency_s(n) == pytest.approx(pp.quiet_s(n) - n / 1e10)
    # beyond the ping-pong's range: one more segment at the streaming bandwidth
    t_hi = float(pp.quiet_s(1 << 20))
    assert float(m.quiet_s(1 << 22)) == pytest.approx(t_hi + ((1 << 22) - (1 << 20)) / 1e10, rel=1e-6)
    assert m.fitted_max_bytes == 1 << 22
    assert m.gap_s == 1e-7 and m.intra_latency_s == 3e-7 and m.intra_bandwidth_Bps == 8e9
    o_s, o_r = m.overheads_s(np.array([8, 8]), np.array([False, True]))
    # one pair's per-message stream time is o_send + o_recv (half each)
    assert o_s.tolist() == [2.5e-7, 0.0] and o_r.tolist() == [2.5e-7, 0.0]
    back = PiecewiseLinearCost.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.quiet_s(n) == pytest.approx(m.quiet_s(n)) and back.gap_s == m.gap_s


def test_compile_arrays_and_overheads_never_counted_twice():
    m = PiecewiseLinearCost.from_dict({
        "format": "ccmod-cost-model", "segments": [{"min_bytes": 0, "latency_s": 2e-6,
                                                    "bandwidth_Bps": 1e9}],
        "gap_s": 1e-7, "overheads": [{"min_bytes": 0, "o_send_s": 5e-7, "o_recv_s": 4e-7}]})
    b = WorkloadBuilder(2)
    b.send(0, 1, 1000); b.recv(1, 0, 1000)
    w = b.build()
    net = make_network("star", 2, cost=m)
    node = np.arange(2)
    plain = compile_messages(w, net, node, "ccmod", 5e-7, 5e9)
    assert plain.o_send_s.tolist() == [0.0] and plain.quiet_s[0] == pytest.approx(3e-6)
    charged = compile_messages(w, net, node, "ccmod", 5e-7, 5e9, charge_overheads=True)
    assert charged.o_send_s[0] == pytest.approx(5e-7) and charged.o_recv_s[0] == pytest.approx(4e-7)
    assert charged.quiet_s[0] + charged.o_send_s[0] + charged.o_recv_s[0] == pytest.approx(3e-6)
    assert charged.gap_s.tolist() == [1e-7, 1e-7]


def test_run_notes_sizes_beyond_the_fitted_range():
    m = combine(PiecewiseLinearCost([0], [2e-6], [1e9]), None, None, (0, 1 << 20))
    b = WorkloadBuilder(2)
    b.send(0, 1, 4 << 20); b.recv(1, 0, 4 << 20)
    r = run(b.build(), "star", cost=m)
    assert any("beyond the cost model's fitted range" in n for n in r.options["notes"])


def test_degenerate_segment_is_merged():
    # a line with a 4-size plateau glitch in the middle: auto breakpoints isolate it
    rng = np.random.default_rng(1)
    sizes = np.unique(np.round(np.geomspace(1, 1e6, 200)).astype(int))
    t = 2e-5 + sizes / 1e9
    glitch = (sizes >= 1300) & (sizes < 1400)
    t[glitch] = 2e-5 + 1400 / 1e9 + 3e-5
    y = t * (1 + 0.002 * rng.standard_normal(t.size))
    est = PiecewiseLinearFit(max_segments=4).fit(sizes, y)
    new, notes = merge_degenerate(est, sizes.astype(float), y)
    if notes:
        assert new.latency_s_.size < est.latency_s_.size
        assert all("merged degenerate segment" in s for s in notes)
    assert all(new.bandwidth_Bps_ < 1e13)


def test_bad_loggp_fields():
    base = {"format": "ccmod-cost-model", "segments": [{"min_bytes": 0, "latency_s": 1e-6,
                                                        "bandwidth_Bps": 1e9}]}
    for extra in ({"gap_s": -1}, {"overheads": "x"}, {"intra": 3},
                  {"overheads": [{"min_bytes": 5}]}, {"fitted_range": "x"}):
        with pytest.raises(CcmodInputError):
            PiecewiseLinearCost.from_dict({**base, **extra})


def imb_biband(path, tables):
    """IMB 2019 Biband output: ``tables[procs] = total bytes/s`` at every size."""
    lines = ["#    Intel(R) MPI Benchmarks 2019 Update 6, MPI-1 part"]
    for procs, total in tables.items():
        lines += ["# Benchmarking Biband", f"# #processes = {procs}",
                  "       #bytes #repetitions   Mbytes/sec      Msg/sec"]
        lines += [f"{n:>13d}{1000:>13d}{total / 1e6:>13.2f}{total / n:>13.0f}"
                  for n in SIZES]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_aggregate_intra_bandwidth_is_the_best_table(tmp_path):
    from ccmod.netsys.fit_multi import aggregate_summary
    f = imb_biband(tmp_path / "bi.out", {2: 8e9, 4: 15e9, 8: 20e9, 16: 12e9})
    assert aggregate_summary([f], [2, 4, 8])["aggregate_bandwidth_Bps"] == pytest.approx(
        20e9, rel=1e-4)
    assert aggregate_summary([f], [2, 4])["aggregate_bandwidth_Bps"] == pytest.approx(
        15e9, rel=1e-4)
    lat = osu(tmp_path / "lat.out", "Latency", [(n, 1.0) for n in SIZES])
    with pytest.raises(CcmodInputError):
        aggregate_summary([lat])


def test_fit_cli_writes_the_aggregate(tmp_path, capsys):
    from ccmod.cli import main

    def cli(argv):
        try:
            main(argv)
        except SystemExit as exc:
            return exc.code
        return 0
    f = imb_biband(tmp_path / "bi.out", {2: 8e9, 4: 15e9})
    lat = osu(tmp_path / "lat.out", "Latency", [(n, 1.0 + n / 1e10 * 1e6) for n in SIZES])
    out = tmp_path / "m.json"
    assert cli(["fit", str(lat), "-o", str(out), "--intra-aggregate", str(f),
                "--intra-aggregate-processes", "2,4"]) == 0
    d = json.loads(out.read_text())
    assert d["intra"]["aggregate_bandwidth_Bps"] == pytest.approx(15e9, rel=1e-4)
    assert cli(["fit", str(lat), "--intra-aggregate", str(f),
                "--intra-aggregate-processes", "two"]) == 2
    assert "--intra-aggregate-processes" in capsys.readouterr().err


def imb_uniband(path, procs, per_msg_s, plateau_Bps):
    """IMB 2019 Uniband output, one table: ``procs`` processes, times per message."""
    lines = ["#    Intel(R) MPI Benchmarks 2019 Update 6, MPI-1 part",
             "# Benchmarking Uniband", f"# #processes = {procs}",
             "       #bytes #repetitions   Mbytes/sec      Msg/sec"]
    for n in SIZES:
        rate = min(1.0 / per_msg_s, plateau_Bps / n)
        lines.append(f"{n:>13d}{1000:>13d}{rate * n / 1e6:>13.2f}{rate:>13.0f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_one_pair_rate_and_node_rate_from_several_stream_benchmarks(tmp_path):
    # osu_bw: one pair, 800 ns per small message, 10 GB/s; IMB one pair: 200 ns, 10 GB/s;
    # osu_mbw_mr 8 pairs: the node reaches 12 GB/s and 50 ns per message
    t_osu, t_imb, B1, B2 = 8e-7, 2e-7, 1e10, 1.2e10
    f = osu(tmp_path / "bw.out", "Bandwidth", [(n, min(n / t_osu, B1) / 1e6) for n in SIZES])
    i = imb_uniband(tmp_path / "uni.out", 2, t_imb, B1)
    mr = osu(tmp_path / "mr.out", "Multiple Bandwidth / Message Rate",
             [(n, min(n / 5e-8, B2) / 1e6) for n in SIZES], pairs=8)
    st = stream_summary([f, i, mr])
    assert st["stream_bandwidth_Bps"] == pytest.approx(B1, rel=1e-4)   # one pair's plateau
    assert st["nic_bandwidth_Bps"] == pytest.approx(B2, rel=1e-4)      # the node's
    assert st["gap_s"] == pytest.approx(5e-8, rel=1e-3)
    # disagreeing one-pair benchmarks: geometric mean (equal ratio error on each), noted
    assert st["o_send_s"] == pytest.approx((t_osu * t_imb) ** 0.5, rel=1e-3)
    assert len(st["notes"]) == 1 and "geometric mean" in st["notes"][0]
    assert stream_summary([f])["notes"] == []
    m = combine(PiecewiseLinearCost([0], [2e-6], [5e9]), st, None, (0, 1 << 22))
    assert m.stream_bandwidth_Bps == pytest.approx(B1, rel=1e-4)
    assert m.nic_bandwidth_Bps == pytest.approx(B2, rel=1e-4)
    back = PiecewiseLinearCost.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.nic_bandwidth_Bps == m.nic_bandwidth_Bps


@pytest.mark.parametrize("sharing", ["maxmin", "ccmod:latency=unshared,capacity=ratio"])
def test_one_pair_streams_at_its_rate_and_pairs_share_the_fitted_nic(sharing):
    # one pair's bytes flow at B1 = 10 GB/s; the node's NIC (the model's nic_bandwidth_Bps,
    # the network's default nic_bandwidth) carries B2 = 12 GB/s: k pairs take k*n/B2 when
    # k*B1 > B2, one pair n/B1 (lat 0: closed forms)
    B1, B2, n = 1e10, 1.2e10, 8_000_000
    m = PiecewiseLinearCost.from_dict({
        "format": "ccmod-cost-model", "segments": [{"min_bytes": 0, "latency_s": 0.0,
                                                    "bandwidth_Bps": B1}],
        "stream_bandwidth_Bps": B1, "nic_bandwidth_Bps": B2})
    for k in (1, 2, 4):
        b = WorkloadBuilder(2 * k)
        for r in range(k):
            b.send(r, r + k, n)
            b.recv(r + k, r, n)
        res = run(b.build(), "star:bandwidth=1.25e10,latency=0,duplex=full", sharing=sharing,
                  cost=m, mapping=f"block:{k}")
        assert res.makespan_s == pytest.approx(max(n / B1, k * n / B2), rel=1e-6)
    # an explicit nic_bandwidth= still wins over the model's
    net = make_network("star:duplex=full,nic_bandwidth=5e9", 2, cost=m)
    assert net.node_resources.nic_cap.tolist() == [5e9] * 4


@pytest.mark.parametrize("sharing", ["maxmin", "ccmod:latency=unshared,capacity=ratio"])
def test_a_window_of_one_pair_streams_at_one_pairs_rate(sharing):
    # W concurrent messages of one rank cross that rank's injection resource (one pair's
    # rate B1): the window takes W*n/B1, not W*n/B2; two pairs together reach the NIC's B2
    B1, B2, n, W = 1e10, 1.2e10, 1_000_000, 8
    m = PiecewiseLinearCost.from_dict({
        "format": "ccmod-cost-model", "segments": [{"min_bytes": 0, "latency_s": 0.0,
                                                    "bandwidth_Bps": B1}],
        "stream_bandwidth_Bps": B1, "nic_bandwidth_Bps": B2})
    for k, expect in ((1, W * n / B1), (2, 2 * W * n / B2)):
        b = WorkloadBuilder(2 * k)
        for r in range(k):
            for _ in range(W):
                b.isend(r, r + k, n, 0)
                b.irecv(r + k, r, 0, nbytes=n)
            b.waitall(r)
            b.waitall(r + k)
        res = run(b.build(), "star:bandwidth=1.25e10,latency=0,duplex=full", sharing=sharing,
                  cost=m, mapping=f"block:{k}")
        assert res.makespan_s == pytest.approx(expect, rel=1e-6)
    # without a NIC model there is no per-rank resource (the links alone, as before)
    net = make_network("star:bandwidth=1.25e10", 2, cost=m)
    assert net.node_resources is None
    net = make_network("star:duplex=full", 2, cost=m)
    net.set_ranks(4)
    assert net.resource_name(net.nresources - 1) == "rank3/inject"
    assert net.resource_capacity_Bps()[-4:].tolist() == [B1] * 4
