"""Output sinks on real engine runs: Parquet tables, debug trace, sink specs, helpers."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from conftest import examples

from ccmod.errors import CcmodInputError
from ccmod.linkrate import RateProfile, route_intervals
from ccmod.outputs.base import SIGNALS, RunContext, Sink
from ccmod.outputs.intervals import fill_idle, idle_gaps, sanitize_states
from ccmod.outputs.parquet import load_result
from ccmod.outputs.raster import interval_coverage
from ccmod.outputs.registry import SINKS
from ccmod.outputs.sinks import list_sinks, make_sinks, split_spec, write_all
from outputs_runs import US, tiny_result


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    result = tiny_result(sinks=["parquet", "debug"], out_dir=d)
    return d, result


# ----------------------------------------------------------------------------- parquet
def test_parquet_tables_columns_and_counts(tiny_dir):
    d, result = tiny_dir
    names = {p.name for p in d.iterdir()}
    assert {"messages.parquet", "rank_states.parquet", "link_load.parquet", "ranks.parquet",
            "links.parquet", "resources.parquet", "run.json", "debug.txt"} <= names
    # temporaries renamed or removed
    assert not [n for n in names if n.startswith(".") or n.endswith((".tmp", ".ccmod-tmp"))]
    m = pd.read_parquet(d / "messages.parquet")
    assert list(m.columns) == ["msg_id", "src", "dst", "tag", "nbytes", "t_post_s",
                               "t_post_send_s", "t_post_recv_s", "t_start_s", "t_end_s",
                               "quiet_s", "slowdown", "bottleneck", "bottleneck_name", "hops"]
    assert len(m) == 4
    # the 3000 B message 0 → 2 ends bottlenecked on node0/up (first of its route)
    big = m[m["nbytes"] == 3000].iloc[0]
    assert big["bottleneck_name"] in ("node0/up", "node2/down")
    s = pd.read_parquet(d / "rank_states.parquet")
    assert list(s.columns) == ["rank", "state", "t_start_s", "t_end_s"]
    # 8 recorded states + idle: rank 1 after its send ends [4.5, 7.5] µs
    assert len(s) == 9
    idle = s[s["state"] == "idle"]
    assert idle["rank"].tolist() == [1]
    assert np.allclose(idle["t_start_s"], [4.5 * US]) and np.allclose(idle["t_end_s"],
                                                                       [7.5 * US])
    ld = pd.read_parquet(d / "link_load.parquet")
    assert list(ld.columns) == ["resource", "name", "t_start_s", "t_end_s", "active",
                                "utilisation", "background"]
    assert len(ld) == 7
    assert len(pd.read_parquet(d / "ranks.parquet")) == 3
    links = pd.read_parquet(d / "links.parquet")
    assert {"capacity_Bps", "utilisation_mean", "utilisation_peak"} <= set(links.columns)
    summary = json.loads((d / "run.json").read_text())
    assert summary["messages"] == 4 and summary["nranks"] == 3
    assert summary["rows"] == {"messages": 4, "rank_states": 9, "link_load": 7,
                               "rank_states_recorded": True}
    assert summary["options"]["trace"].endswith("tiny3.ti")


def test_utilisation_hand_derived(tiny_dir):
    """node1/down (3) carries both 1000 B messages over [0, 2] µs at 0.5 GB/s each on a
    1 GB/s link: contention 2, utilisation 1.0; node2/up (4) carries one: 0.5; node2/down
    (5) carries the 3000 B message in 3 µs: 1.0."""
    d, result = tiny_dir
    ld = pd.read_parquet(d / "link_load.parquet").sort_values(["resource", "t_start_s"])
    r3 = ld[ld["resource"] == 3]
    assert r3["active"].tolist() == [2] and np.allclose(r3["utilisation"], [1.0])
    assert r3["name"].tolist() == ["node1/down"]
    assert np.allclose(ld[ld["resource"] == 4]["utilisation"], [0.5])
    assert np.allclose(ld[ld["resource"] == 5]["utilisation"], [1.0])
    links = pd.read_parquet(d / "links.parquet").set_index("resource")
    # node0/up carried 1000 B + 3000 B in a 7.5 µs run at 1 GB/s
    assert links.loc[0, "utilisation_mean"] == pytest.approx(4000 / (1e9 * 7.5e-6))
    assert links.loc[4, "utilisation_peak"] == pytest.approx(0.5)
    # the in-memory result holds the same numbers (one data path)
    mem = result.link_load.sort_values(["resource", "t_start_s"])
    assert np.allclose(mem["utilisation"].to_numpy(), ld["utilisation"].to_numpy())


def test_rate_profile_from_compiled_routes():
    """Routes come from the run (compiled once); mean rate on node1/down over [0, 4] µs:
    2000 B in 4 µs = 0.5 GB/s."""
    r = tiny_result()
    m = r.messages
    _, res, a, b, rate = route_intervals(r.routes.ptr, r.routes.res, m["nbytes"],
                                         m["t_start_s"], m["t_end_s"])
    assert sorted(res.tolist()) == [0, 0, 1, 2, 3, 3, 4, 5]
    prof = RateProfile(res, a, b, rate)
    assert prof.mean_rate([3], [0.0], [4 * US])[0] == pytest.approx(5e8)
    assert prof.mean_rate([3], [1.5 * US], [1.5 * US])[0] == pytest.approx(1e9)
    assert prof.mean_rate([5], [0.0], [4 * US])[0] == 0.0      # before the 3000 B message


def test_load_result_round_trip(tiny_dir):
    """``ccmod report DIR`` reads back the RunResult the sinks were given."""
    d, result = tiny_dir
    back = load_result(d)
    assert back.makespan_s == result.makespan_s and back.nranks == 3
    pd.testing.assert_frame_equal(back.messages.astype({"bottleneck_name": str}),
                                  result.messages.astype({"bottleneck_name": str}),
                                  check_dtype=False)
    pd.testing.assert_frame_equal(back.rank_states.reset_index(drop=True),
                                  result.rank_states.reset_index(drop=True), check_dtype=False,
                                  check_categorical=False)
    pd.testing.assert_frame_equal(back.link_load[result.link_load.columns],
                                  result.link_load, check_dtype=False)
    assert back.summary()["busiest_link"] == result.summary()["busiest_link"]


def test_same_run_gives_identical_files(tmp_path):
    for sub in ("a", "b"):
        tiny_result(sinks=["parquet", "perfetto", "paraver"], out_dir=tmp_path / sub)
    for f in ("messages.parquet", "rank_states.parquet", "link_load.parquet", "trace.json",
              "trace.prv"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_report_without_states_or_load(tmp_path):
    """A run recorded without states/link load still writes every table it has."""
    r = tiny_result(record=False)
    assert r.rank_states is None and r.link_load is None
    write_all(make_sinks("parquet", tmp_path), r, RunContext(out_dir=tmp_path))
    assert len(pd.read_parquet(tmp_path / "messages.parquet")) == 4
    assert not (tmp_path / "rank_states.parquet").exists()
    assert load_result(tmp_path).rank_states is None


def test_no_out_dir_is_an_input_error():
    (sink,) = make_sinks("parquet")
    with pytest.raises(CcmodInputError, match="output directory"):
        sink.write(tiny_result(), RunContext())


def test_one_method_plugin(tmp_path):
    """A third-party sink only implements write(result, ctx)."""
    class Count(Sink):
        name = "count"

        def write(self, result, ctx=None):
            (self.directory(ctx) / "n.txt").write_text(str(result.messages_count))
    tiny_result(sinks=[Count()], out_dir=tmp_path)
    assert (tmp_path / "n.txt").read_text() == "4"


# ----------------------------------------------------------------------------- debug
def test_debug_one_line_per_signal(tiny_dir):
    d, result = tiny_dir
    lines = (d / "debug.txt").read_text().splitlines()
    assert lines[0].startswith("#")
    body = lines[1:]
    assert len(body) == len(result.signals) > 0
    assert body[0].split()[1] == "GO_INIT"
    assert body[-1].split()[1] == "GO_END"
    assert {ln.split()[1] for ln in body} <= set(SIGNALS)


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
    with pytest.raises(CcmodInputError, match="compression"):
        make_sinks("parquet:compression=zip", tmp_path)
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


@settings(max_examples=examples(60), deadline=None)
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


@settings(max_examples=examples(60), deadline=None)
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


@settings(max_examples=examples(60), deadline=None)
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


@settings(max_examples=examples(60), deadline=None)
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
