"""Sinks on hand-made runs: parquet tables, debug trace, make_sinks, helpers (issue 5)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccmod.errors import CcmodInputError
from ccmod.outputs.base import Sink
from ccmod.outputs.common import fill_idle, idle_gaps, sanitize_states
from ccmod.outputs.linkutil import RateProfile, message_resource_intervals
from ccmod.outputs.raster import interval_coverage
from ccmod.outputs.registry import SINKS
from ccmod.outputs.sinks import list_sinks, make_sinks, split_spec
from ccmod.outputs.synthetic import synthetic_run, tiny_run

US = 1e-6


@pytest.fixture
def tiny_dir(tmp_path):
    run = tiny_run()
    run.feed(make_sinks("parquet,debug", tmp_path), chunk=3)
    return tmp_path, run


# ----------------------------------------------------------------------------- parquet
def test_parquet_tables_columns_and_counts(tiny_dir):
    d, run = tiny_dir
    names = {p.name for p in d.iterdir()}
    assert {"messages.parquet", "rank_states.parquet", "link_load.parquet", "ranks.parquet",
            "links.parquet", "run.json", "debug.txt"} <= names
    assert not [n for n in names if n.endswith((".tmp", ".ccmod-tmp"))]  # temporaries renamed or removed
    m = pd.read_parquet(d / "messages.parquet")
    assert list(m.columns) == ["msg_id", "src", "dst", "tag", "nbytes", "t_post_s",
                               "t_start_s", "t_end_s", "quiet_s", "slowdown", "bottleneck",
                               "bottleneck_name", "hops"]
    assert len(m) == 4
    assert m["bottleneck_name"].tolist() == ["node0-sw/up", "node1-sw/down", "node1-sw/up",
                                             "node0-sw/up"]
    s = pd.read_parquet(d / "rank_states.parquet")
    assert list(s.columns) == ["rank", "state", "t_start_s", "t_end_s"]
    # 10 recorded states + idle: rank 1 after it finished [5, 8] µs, rank 2 gap [3, 5] µs
    assert len(s) == 12
    idle = s[s["state"] == "idle"].sort_values("rank")
    assert idle["rank"].tolist() == [1, 2]
    assert np.allclose(idle["t_start_s"], [5 * US, 3 * US])
    assert np.allclose(idle["t_end_s"], [8 * US, 5 * US])
    ld = pd.read_parquet(d / "link_load.parquet")
    assert list(ld.columns) == ["resource", "name", "t_start_s", "t_end_s", "active",
                                "utilisation", "background"]
    assert len(ld) == 9
    assert len(pd.read_parquet(d / "ranks.parquet")) == 3
    links = pd.read_parquet(d / "links.parquet")
    assert {"capacity_Bps", "utilisation_mean", "utilisation_peak"} <= set(links.columns)
    summary = json.loads((d / "run.json").read_text())
    assert summary["messages"] == 4 and summary["nranks"] == 3
    assert summary["rows"] == {"messages": 4, "rank_states": 12, "link_load": 9,
                               "rank_states_recorded": True}
    assert summary["packet_size_bytes"] == 2048  # the network defines it


def test_utilisation_hand_derived(tiny_dir):
    """Resource 3 (node1 down) carries msg 0 (1000 B over 2 µs) and msg 1 (1000 B over 2 µs):
    0.5 GB/s each on a 1 GB/s link → 50 %, 100 % while both overlap, 50 %."""
    d, _ = tiny_dir
    ld = pd.read_parquet(d / "link_load.parquet").sort_values(["resource", "t_start_s"])
    r3 = ld[ld["resource"] == 3]
    assert r3["active"].tolist() == [1, 2, 1]
    assert np.allclose(r3["utilisation"], [0.5, 1.0, 0.5])
    r5 = ld[ld["resource"] == 5]      # msg 3: 3000 B in 3 µs = full capacity
    assert np.allclose(r5["utilisation"], [1.0])
    links = pd.read_parquet(d / "links.parquet").set_index("resource")
    # resource 0 carried 4000 B (msgs 0 and 3) in an 8 µs run at 1 GB/s → 50 %
    assert links.loc[0, "utilisation_mean"] == pytest.approx(4000 / (1e9 * 8e-6))
    assert links.loc[3, "utilisation_peak"] == pytest.approx(1.0)


def test_rate_profile_mean_over_long_interval():
    """Mean rate over [0, 4] µs on resource 3: 1000 B + 1000 B in 4 µs = 0.5 GB/s."""
    run = tiny_run()
    m = run.messages
    _, res, a, b, rate = message_resource_intervals(m["src"], m["dst"], m["nbytes"],
                                                    m["t_start_s"], m["t_end_s"],
                                                    run.ctx.network, run.ctx.node_of_rank)
    assert sorted(res.tolist()) == [0, 0, 1, 2, 3, 3, 4, 5]
    prof = RateProfile(res, a, b, rate)
    assert prof.mean_rate([3], [0.0], [4 * US])[0] == pytest.approx(5e8)
    assert prof.mean_rate([3], [1.5 * US], [1.5 * US])[0] == pytest.approx(1e9)
    assert prof.mean_rate([5], [0.0], [4 * US])[0] == 0.0      # before msg 3


def test_chunking_does_not_change_tables(tmp_path):
    run = synthetic_run(5, 6, seed=3)
    a, b = tmp_path / "a", tmp_path / "b"
    run.feed(make_sinks("parquet", a), chunk=7)
    run.feed(make_sinks("parquet", b), chunk=10_000)
    for t in ("messages", "rank_states", "link_load", "links", "ranks"):
        pa, pb = pd.read_parquet(a / f"{t}.parquet"), pd.read_parquet(b / f"{t}.parquet")
        key = [c for c in ("rank", "resource", "msg_id", "t_start_s") if c in pa.columns]
        pd.testing.assert_frame_equal(pa.sort_values(key).reset_index(drop=True),
                                      pb.sort_values(key).reset_index(drop=True))


def test_result_only_fallback(tmp_path):
    """An engine that sends no batches still gets the tables from the RunResult."""
    run = tiny_run()
    res = run.result
    assert res.rank_states["state"].dtype == "category"   # as the engine keeps them
    sinks = make_sinks("parquet", tmp_path)
    for s in sinks:
        s.open(run.ctx)
        s.close(res)
    assert len(pd.read_parquet(tmp_path / "messages.parquet")) == 4
    assert len(pd.read_parquet(tmp_path / "rank_states.parquet")) == 12
    assert len(pd.read_parquet(tmp_path / "link_load.parquet")) == 9


def test_abort_leaves_no_file(tmp_path):
    run = tiny_run()
    (sink,) = make_sinks("parquet", tmp_path)
    sink.open(run.ctx)
    sink.on_messages(run.messages)
    sink.abort()
    assert list(tmp_path.iterdir()) == []


def test_missing_column_is_reported(tmp_path):
    run = tiny_run()
    (sink,) = make_sinks("parquet", tmp_path)
    sink.open(run.ctx)
    bad = dict(run.messages)
    del bad["t_end_s"]
    with pytest.raises(ValueError, match="t_end_s"):
        sink.on_messages(bad)
    sink.abort()


def test_no_out_dir_is_an_input_error():
    run = tiny_run()
    (sink,) = make_sinks("parquet")
    with pytest.raises(CcmodInputError, match="output directory"):
        sink.open(run.ctx)


# ----------------------------------------------------------------------------- debug
def test_debug_one_line_per_signal(tiny_dir):
    d, run = tiny_dir
    lines = (d / "debug.txt").read_text().splitlines()
    assert lines[0].startswith("#")
    body = lines[1:]
    assert len(body) == len(run.signals["t_s"]) == 5
    assert body[0] == "0.000000000 GO_INIT 3 4"
    assert body[2] == "0.000002000 EVENTHORIZON 2e-06"
    assert body[-1] == "0.000008000 GO_END"


# ----------------------------------------------------------------------------- make_sinks
def test_make_sinks_names_params_and_errors(tmp_path):
    sinks = make_sinks("parquet,perfetto:max_flows=10,counters=2,debug", tmp_path)
    assert [s.name for s in sinks] == ["parquet", "perfetto", "debug"]
    assert sinks[1].max_flows == 10 and sinks[1].counters == 2
    assert all(isinstance(s, Sink) for s in sinks)
    assert {"debug", "parquet", "perfetto", "paraver"} <= set(SINKS.names())
    with pytest.raises(CcmodInputError, match="valid: .*parquet"):
        make_sinks("parqet", tmp_path)
    with pytest.raises(CcmodInputError, match="unknown parameter 'x'.*valid"):
        make_sinks("perfetto:x=1", tmp_path)
    with pytest.raises(CcmodInputError, match="not a non-negative integer"):
        make_sinks("perfetto:max_flows=many", tmp_path)
    with pytest.raises(CcmodInputError, match="given twice"):
        make_sinks("debug,debug", tmp_path)
    with pytest.raises(CcmodInputError, match="before any sink"):
        make_sinks("max_flows=3", tmp_path)
    assert make_sinks(None) == [] and make_sinks("", tmp_path) == []
    obj = sinks[0]
    assert make_sinks([obj, "debug"], tmp_path)[0] is obj


def test_split_spec_grammar():
    assert split_spec("a, b:k=1,j=2 ,c") == [("a", {}), ("b", {"k": "1", "j": "2"}),
                                             ("c", {})]


def test_list_sinks_rows():
    rows = {r["name"]: r for r in list_sinks()}
    assert rows["perfetto"]["files"] == "trace.json"
    assert "max_flows=200000" in rows["perfetto"]["parameters"]


# ----------------------------------------------------------------------------- helpers
intervals = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4),
                               st.floats(0, 10), st.floats(0, 10)), max_size=25)


@settings(max_examples=60, deadline=None)
@given(intervals, st.floats(0, 12))
def test_fill_idle_covers_each_rank_exactly(rows, extra):
    rank = np.array([r[0] for r in rows], np.int64)
    state = np.array([r[1] for r in rows], np.int64)
    a = np.array([min(r[2], r[3]) for r in rows])
    b = np.array([max(r[2], r[3]) for r in rows])
    t_end = max([extra] + b.tolist())
    rk, stt, a2, b2 = sanitize_states(rank, state, a, b)
    rk, stt, a2, b2 = fill_idle(rk, stt, a2, b2, 4, t_end)
    for r in range(4):
        sel = rk == r
        ra, rb = a2[sel], b2[sel]
        assert np.all(rb > ra)
        assert np.all(ra[1:] >= rb[:-1] - 1e-12)          # sequential
        if t_end > 0:
            assert rb.sum() - ra.sum() == pytest.approx(t_end, abs=1e-9)  # covers [0, t_end]


@settings(max_examples=60, deadline=None)
@given(intervals, st.floats(0, 12))
def test_idle_gaps_match_brute_force(rows, extra):
    rank = np.array([r[0] for r in rows], np.int64)
    a = np.array([min(r[2], r[3]) for r in rows])
    b = np.array([max(r[2], r[3]) for r in rows])
    t_end = max([extra] + b.tolist())
    order = np.lexsort((a, rank))
    gr, ga, gb = idle_gaps(rank[order], a[order], b[order], 4, t_end)
    if t_end <= 0:
        assert len(gr) == 0
        return
    grid = np.linspace(0, t_end, 97)[1:-1]
    for r in range(4):
        cov = [(x, y) for rr, x, y in zip(rank, a, b) if rr == r]
        gaps = [(x, y) for rr, x, y in zip(gr, ga, gb) if rr == r]
        for t in grid:
            covered = any(x < t < y for x, y in cov)
            in_gap = any(x < t < y for x, y in gaps)
            on_edge = any(abs(t - v) < 1e-9 for x, y in cov + gaps for v in (x, y))
            if not on_edge:
                assert covered != in_gap


# times on a 1e-3 grid: the profile uses global prefix sums, exact to ~1e-15 of their
# magnitude, which is far below any real interval but not below 1e-16 s ones
grid_t = st.integers(0, 10_000).map(lambda k: k / 1000)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), grid_t, grid_t, st.floats(0.1, 5)),
                min_size=1, max_size=12), grid_t, grid_t)
def test_rate_profile_matches_brute_force(rows, q0, q1):
    res = np.array([r[0] for r in rows])
    a = np.array([min(r[1], r[2]) for r in rows])
    b = np.array([max(r[1], r[2]) for r in rows])
    rate = np.array([r[3] for r in rows])
    q0, q1 = min(q0, q1), max(q0, q1)
    prof = RateProfile(res, a, b, rate)
    for r in range(3):
        got = prof.mean_rate([r], [q0], [q1])[0]
        sel = res == r
        if q1 > q0:
            overlap = np.clip(np.minimum(b[sel], q1) - np.maximum(a[sel], q0), 0, None)
            want = (rate[sel] * overlap).sum() / (q1 - q0)
        else:
            want = rate[sel][(a[sel] <= q0) & (b[sel] > q0)].sum()
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1), st.floats(0, 10),
                          st.floats(0, 10)), max_size=15), st.integers(1, 13))
def test_interval_coverage_matches_brute_force(rows, ncols):
    row = np.array([r[0] for r in rows], np.int64)
    cat = np.array([r[1] for r in rows], np.int64)
    a = np.array([min(r[2], r[3]) for r in rows])
    b = np.array([max(r[2], r[3]) for r in rows])
    cov = interval_coverage(row, cat, a, b, 3, 2, ncols, 10.0)
    width = 10.0 / ncols
    want = np.zeros((3, 2, ncols))
    for r, c, x, y in zip(row, cat, a, b):
        for k in range(ncols):
            lo, hi = k * width, (k + 1) * width
            want[r, c, k] += max(0.0, min(y, hi) - max(x, lo)) / width
    assert np.allclose(cov, want, atol=1e-9)


def test_interval_coverage_max_mode():
    """Peak per column of piecewise-constant values (one row, one category)."""
    a = np.array([0.0, 0.5, 3.0])
    b = np.array([0.5, 3.0, 4.0])
    w = np.array([2.0, 5.0, 1.0])
    got = interval_coverage(np.zeros(3, int), np.zeros(3, int), a, b, 1, 1, 4, 4.0, weight=w,
                            mode="max")[0, 0]
    assert got.tolist() == [5.0, 5.0, 5.0, 1.0]
