"""`ccmod fit TRACE`: the quiet cost from a timestamped trace's own messages (lower envelope).

Real traces shipped in tests/data/real (OTF2 ping-pong, Paraver quicksort, DUMPI ring,
liballprof SPhot) and a synthetic liballprof trace with a known quiet cost plus random
waits, late receivers and contention, which the lower envelope must see through.
"""
import json

import numpy as np
import pytest

from conftest import run_cli
from ccmod.errors import CcmodInputError
from ccmod.fit_trace import fit_traces, timed_trace_format
from ccmod.netsys.cost import PiecewiseLinearCost
from ccmod.netsys.fit import PiecewiseLinearFit
from ccmod.netsys.fit_envelope import lower_envelope
from ccmod.workloads import read_workload
from ccmod.workloads.msgtimes import MessageTimes

PINGPONG = "pipit/ping-pong-otf2"
#: synthetic quiet cost: 4 us + n / 2 GB/s
LAT_S, BW_BPS = 4e-6, 2e9
SIZES = [8, 64, 512, 4096, 32768, 262144, 1048576]


def synthetic_trace(folder, n_msgs=600, seed=7, costs=None):
    """liballprof trace, 4 ranks, pairs 0->1 and 2->3: T(n) plus random disturbance.

    Every message: the sender enters MPI_Send at ts; the receiver enters MPI_Recv at tr,
    before or after the send; the data arrives at ts + T(n) + wait (wait = 0 for 25 % of
    the messages, else exponential with mean T(n) + 20 us: contention, rendezvous); the
    receive returns at max(arrival, tr + 0.3 us) + 0.1 us. ``costs`` maps a pair to its
    own (latency_s, bandwidth_Bps) (default: LAT_S, BW_BPS for both).
    """
    costs = costs or {}
    rng = np.random.default_rng(seed)
    lines = {r: ["# htor's PMPI Tracer 0.9 Output File", "# synthetic (ccmod tests)"]
             for r in range(4)}
    for src, dst in ((0, 1), (2, 3)):
        t = 100.0
        for _ in range(n_msgs // 2):
            n = int(rng.choice(SIZES))
            lat, bw = costs.get((src, dst), (LAT_S, BW_BPS))
            quiet_us = (lat + n / bw) * 1e6
            ts = t + rng.uniform(0, 5)
            tr = t + rng.uniform(0, 5) + (rng.exponential(30) if rng.random() < 0.3 else 0)
            wait = 0.0 if rng.random() < 0.25 else rng.exponential(quiet_us + 20)
            end = max(ts + quiet_us + wait, tr + 0.3) + 0.1
            send_end = ts + 0.5 if n <= 65536 else end
            lines[src].append(f"MPI_Send:{ts:.4f}:1:{n}:1,1,1:{dst}:5:91,{src},4:{send_end:.4f}")
            lines[dst].append(f"MPI_Recv:{tr:.4f}:1:{n}:1,1,1:{src}:5:91,{dst},4:2:{end:.4f}")
            t = max(end, send_end) + rng.uniform(1, 50)
    for r, ls in lines.items():
        (folder / f"syn-rank-{r}.dat").write_text("\n".join(ls) + "\n")
    return folder / "syn-rank-0.dat"


def quiet(n):
    return LAT_S + np.asarray(n, float) / BW_BPS


def test_synthetic_trace_recovers_quiet_cost(tmp_path):
    f = synthetic_trace(tmp_path)
    assert timed_trace_format(f) == "liballprof"
    rep = fit_traces([f], breakpoints="none")
    m = rep.model
    assert m.seg_latency_s[0] == pytest.approx(LAT_S, rel=0.15)
    assert m.seg_bandwidth_Bps[0] == pytest.approx(BW_BPS, rel=0.05)
    assert m.quiet_s(np.array(SIZES, float)) == pytest.approx(quiet(SIZES), rel=0.15)
    env = rep.envelope
    assert env.counts["used"] + env.counts["receiver_late"] == env.counts["messages"] == 600
    assert env.counts["receiver_late"] > 0
    # the fitted one line is supported by every used message and all 7 sizes
    seg = rep.segments()
    assert seg[0]["n_messages"] == env.counts["used"] and seg[0]["n_message_sizes"] == 7
    # the median of the same messages is far above the quiet cost: the envelope matters
    med = fit_traces([f], breakpoints="none", quantile=0.5).model
    assert med.seg_latency_s[0] > 3 * LAT_S


def test_synthetic_intra_node_pair_fitted_apart(tmp_path, monkeypatch):
    """Ranks 0 and 1 share a node (placement as a trace records it), 2 and 3 do not: the
    network cost comes from the 2 -> 3 messages, 'intra' from the 0 -> 1 ones."""
    import ccmod.fit_trace as ft
    intra_cost = (1e-6, 8e9)
    f = synthetic_trace(tmp_path, costs={(0, 1): intra_cost})
    from ccmod import workloads
    real_read = workloads.read_workload

    def read_placed(path, fmt="auto", **kw):
        w = real_read(path, fmt, **kw)
        w.meta["placement"] = {"node_of_rank": [0, 0, 1, 2], "node_names": ["a", "b", "c"],
                               "source": "test"}
        return w

    monkeypatch.setattr(workloads, "read_workload", read_placed)
    rep = ft.fit_traces([f], breakpoints="none")
    m = rep.model
    assert m.seg_latency_s[0] == pytest.approx(LAT_S, rel=0.15)
    assert m.seg_bandwidth_Bps[0] == pytest.approx(BW_BPS, rel=0.05)
    assert m.intra_latency_s == pytest.approx(intra_cost[0], rel=0.3)
    assert m.intra_bandwidth_Bps == pytest.approx(intra_cost[1], rel=0.05)
    c = rep.envelope.counts
    assert 0 < c["intra_node"] < c["used"]
    # the network segments are supported by the inter-node messages only
    assert rep.segments()[0]["n_messages"] == c["used"] - c["intra_node"]


def test_synthetic_trace_later_start_is_lower_bound(tmp_path):
    f = synthetic_trace(tmp_path, n_msgs=200, seed=3)
    w = read_workload(f)
    x, d, c = w.message_times.quiet_samples()
    xl, dl, cl = w.message_times.later_start_samples()
    assert cl["used"] == c["messages"] == 200 and c["used"] < 200
    # every message's later-start time is at most its send-to-receive-end time
    mt = w.message_times
    full = mt.recv_end_s - mt.send_start_s
    assert np.all(dl <= full + 1e-12)
    # the waiting-receiver times are never below the quiet cost (clocks agree here)
    assert np.all(d >= quiet(x) - 1e-9)


def test_message_time_classification():
    nan = float("nan")
    rows = [(0, 1, 8, 10.0, 9.0, 9.0, 12.0),      # receiver waiting before the send
            (0, 1, 8, 10.0, 9.0, 10.5, 14.0),     # entered late but blocked 3.5 of 4 s
            (0, 1, 8, 10.0, 9.0, 13.0, 13.2),     # came after the arrival: late
            (0, 1, 8, 10.0, 9.0, nan, nan),       # completion not traced
            (1, 1, 8, 10.0, 9.0, 9.0, 12.0),      # to itself
            (1, 0, 8, 10.0, 9.0, 9.0, 9.5)]       # ends before it was sent: clocks
    x, t, c = MessageTimes.from_rows(rows).quiet_samples()
    assert t.tolist() == [2.0, 4.0]
    assert c == {"messages": 6, "self_messages": 1, "no_completion": 1, "receiver_late": 1,
                 "nonpositive": 1, "used": 2}
    _, t1, _ = MessageTimes.from_rows(rows).quiet_samples(waiting_fraction=1.0)
    assert t1.tolist() == [2.0]


def test_lower_envelope_bins_and_quantile():
    x = [1000] * 10 + [1050] * 10 + [4096] * 3
    t = list(np.arange(1, 11) * 1e-6) + list(np.arange(11, 21) * 1e-6) + [5e-6, 1e-3, 2e-3]
    env = lower_envelope(x, t, quantile=0.1, min_messages=4)
    # 1000 and 1050 B share a bin (x1.12 wide); the 0.1 quantile of 20 times is the 2nd
    assert env.n_messages.tolist() == [20, 3] and env.n_sizes.tolist() == [2, 1]
    assert env.quantile_s[0] == pytest.approx(2e-6)
    assert env.quantile_s[1] == pytest.approx(5e-6)     # k = ceil(0.1 * 3) = 1: the fastest
    assert env.kept.tolist() == [True, False]
    with pytest.raises(CcmodInputError):
        lower_envelope(x, t, quantile=1.5)


def test_pingpong_otf2_envelope_matches_its_round_trips(real_dir):
    """The pipit ping-pong (2 ranks, one node): the lower envelope of its 16 one-way
    messages against the classic ping-pong estimate, half of each round trip."""
    d = real_dir / PINGPONG
    assert timed_trace_format(d) == "otf2"
    mt = read_workload(d).message_times
    x, t, c = mt.quiet_samples()
    assert c["used"] == c["messages"] == 16
    # each size: 0 -> 1 then 1 -> 0; the round trip seen by rank 0, halved (no clock issue)
    half_rtt = {}
    for n in np.unique(mt.nbytes):
        i = np.flatnonzero((mt.nbytes == n) & (mt.src == 0))[0]
        j = np.flatnonzero((mt.nbytes == n) & (mt.src == 1))[0]
        half_rtt[int(n)] = (mt.recv_end_s[j] - mt.send_start_s[i]) / 2
    assert len(half_rtt) == 8
    pp = PiecewiseLinearFit(breakpoints="none").fit(list(half_rtt), list(half_rtt.values()))
    env = fit_traces([d], breakpoints="none").model
    # the same machine seen two ways: bandwidth within 10 %, the envelope not above the
    # round trips (it keeps the faster direction of each size)
    assert env.seg_bandwidth_Bps[0] == pytest.approx(pp.bandwidth_Bps_[0], rel=0.10)
    sizes = np.array(sorted(half_rtt), float)
    assert np.all(env.quiet_s(sizes) <= np.array([half_rtt[int(s)] for s in sizes]) * 1.1)


def test_cli_fit_trace_writes_model_for_run(real_dir, tmp_path):
    d = real_dir / PINGPONG
    out = tmp_path / "pp.json"
    r = run_cli("fit", d, "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    js = json.loads(r.stdout)
    env = js["envelope"]
    assert env["messages"]["used"] == 16
    assert sum(s["n_messages"] for s in env["segment_support"]) == 16
    assert all("n_messages" in s and "n_message_sizes" in s for s in js["segments"])
    assert js["inputs"][0]["format"].startswith("otf2 trace")
    m = PiecewiseLinearCost.load(out)
    assert m.to_dict()["segments"] == js["model"]["segments"]
    png = tmp_path / "pp.png"
    text = run_cli("fit", d, "--plot", png)
    assert text.returncode == 0 and "lower envelope" in text.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "messages: 16 of 16 used" in text.stdout
    # both ranks ran on one node (the trace's placement): the messages also give 'intra',
    # so the replay with that placement uses the fitted cost, not the default one
    intra = json.loads(out.read_text())["intra"]
    assert intra["latency_s"] > 0 and intra["bandwidth_Bps"] > 0
    assert any("inside a node" in n for n in js["notes"])
    run = run_cli("run", d, "--cost", out, "--json")
    base = run_cli("run", d, "--json")
    assert run.returncode == 0 and base.returncode == 0, run.stderr + base.stderr
    assert json.loads(run.stdout)["makespan_s"] != json.loads(base.stdout)["makespan_s"]


def test_cli_fit_paraver_quicksort(real_dir):
    """2004 quicksort (4 tasks, 33 messages, 1 us clock): fitted, and flagged when poor."""
    r = run_cli("fit", real_dir / "paraver-kernel/qsort_beo3.prv", "--json")
    assert r.returncode == 0, r.stderr
    js = json.loads(r.stdout)
    assert js["inputs"][0]["format"].startswith("paraver")
    kept = [b for b in js["envelope"]["bins"] if b["kept"]]
    assert len(kept) >= 2
    assert all(b["quantile_s"] <= b["median_s"] for b in kept)
    assert js["poor_fit"] == (js["metrics"]["median_rel_err"] > 0.10)
    m = PiecewiseLinearCost.from_dict(js["model"])
    assert np.all(np.diff(m.quiet_s(np.array([1, 1024, 1 << 20], float))) > 0)


def test_bad_traces_one_line_exit_2(real_dir, tmp_path):
    # DUMPI ring: every usable message has the same size
    r = run_cli("fit", real_dir / "sst-dumpi/testtrace.meta")
    assert r.returncode == 2 and "at least 2 sizes" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    # a time-independent trace has no timestamps
    ti = tmp_path / "t.ti"
    ti.write_text("0 send 1 100\n1 recv 0 100\n")
    r = run_cli("fit", ti)
    assert r.returncode == 2 and "no measured message times" in r.stderr, r.stderr
    r = run_cli("fit", ti, "--format", "trace")
    assert r.returncode == 2 and "no measured message times" in r.stderr, r.stderr
    # SPhot (liballprof): 3 messages of 8 B and 3 of 128 B, the larger ones faster
    r = run_cli("fit", real_dir / "loggopsim/sphot-liballprof")
    assert r.returncode == 2 and "does not grow" in r.stderr and "8 B:" in r.stderr
    # a pipit CSV export (read by the 'csv' reader) carries no matched message times
    pipit = tmp_path / "pp.csv"
    pipit.write_text("Timestamp (ns),Event Type,Name,Thread,Process,Attributes\n"
                     "0.0,Enter,MPI_Init,0,0,{}\n10.0,Leave,MPI_Init,0,0,\n")
    r = run_cli("fit", pipit)
    assert r.returncode == 2 and "'csv' trace gives no measured message times" in r.stderr, \
        r.stderr
    # too few messages per size for --min-messages
    r = run_cli("fit", real_dir / "loggopsim/sphot-liballprof", "--min-messages", "50")
    assert r.returncode == 2 and "--min-messages" in r.stderr
    # traces and benchmark output are not pooled
    osu = tmp_path / "osu.txt"
    osu.write_text("# OSU MPI Latency Test v5.6.3\n# Size  Latency (us)\n1 1.0\n2 1.1\n")
    r = run_cli("fit", real_dir / PINGPONG, osu)
    assert r.returncode == 2 and "separate runs" in r.stderr
    r = run_cli("fit", real_dir / PINGPONG, "--message-time", "sometimes")
    assert r.returncode == 2 and "valid: waiting, later" in r.stderr


def test_real_dumpi_without_waiting_receivers(real_dir):
    """Blue Gene/P DUMPI: every receiver came after its message (588 of 588), so the
    default refuses with a hint; --message-time later uses the receive calls."""
    meta = real_dir / "sst-macro/dumpi_testbgp/testbgp.meta"
    r = run_cli("fit", meta)
    assert r.returncode == 2 and "588 of 588" in r.stderr and "--message-time later" in r.stderr
    r = run_cli("fit", meta, "--message-time", "later")
    assert r.returncode == 2 and "at least 2 sizes" in r.stderr    # one size: 712 B


@pytest.mark.slow      # ~0.7 s here on SST-macro's ../shared OTF2 trace: CI runs it
def test_real_otf2_sst_macro(real_dir):
    """10 ranks on 10 Ethernet nodes, 4 B .. 128 KiB: the fit is monotone and every
    segment is supported by messages; self messages are not network messages."""
    rep = fit_traces([real_dir / "sst-macro/otf2_test_traces/traces.otf2"])
    c = rep.envelope.counts
    assert c["self_messages"] > 0 and c["used"] > 100
    sup = rep.segments()
    assert sum(s["n_messages"] for s in sup) == c["used"]
    assert all(s["n_messages"] > 0 and s["n_message_sizes"] > 0 for s in sup)
    q = rep.model.quiet_s(np.array([4, 1024, 131072], float))
    assert np.all(np.diff(q) > 0)


def test_compare_with_pingpong_fit_of_same_run(real_dir, tmp_path):
    """`--compare`: the envelope next to a ping-pong fit of the same machine. The classic
    ping-pong estimate (half of each round trip, as osu_latency reports it) is written as a
    benchmark CSV from the same trace and fitted by `ccmod fit`; the trace's envelope must
    agree with it to within 20 % and not lie above it (it keeps the faster direction)."""
    d = real_dir / PINGPONG
    mt = read_workload(d).message_times
    rows = ["bytes,latency_us"]
    for n in np.unique(mt.nbytes):
        i = np.flatnonzero((mt.nbytes == n) & (mt.src == 0))[0]
        j = np.flatnonzero((mt.nbytes == n) & (mt.src == 1))[0]
        rows.append(f"{n},{(mt.recv_end_s[j] - mt.send_start_s[i]) / 2 * 1e6:.4f}")
    csv = tmp_path / "pingpong.csv"
    csv.write_text("\n".join(rows) + "\n")
    pp = tmp_path / "pingpong.json"
    assert run_cli("fit", csv, "-o", pp).returncode == 0
    r = run_cli("fit", d, "--compare", pp, "--json")
    assert r.returncode == 0, r.stderr
    c = json.loads(r.stdout)["envelope"]["compare"]
    assert len(c["nbytes"]) == 8
    assert 0.8 <= c["fitted_over_other"]["median"] <= 1.0
    assert 0.8 <= c["envelope_over_other"]["median"] <= 1.0
    text = run_cli("fit", d, "--compare", pp)
    assert "compared with" in text.stdout
    bad = run_cli("fit", csv, "--compare", pp)
    assert bad.returncode == 2 and "--compare" in bad.stderr
