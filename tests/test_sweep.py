"""ccmod.sweep / `ccmod sweep`: grid order, equality with single runs, failing points,
process-pool and dask parallelism, CLI outputs and one-line errors."""
import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import ccmod.sweep as sw
from ccmod.api import run
from ccmod.cli_sweep import register
from ccmod.errors import CcmodInputError
from ccmod.sweep import RESULT_COLUMNS, best_index, grid_points, records, sweep

NETS = ["star", "fattree2:spines=2", "myrinet16"]
GRID = {"sharing": ["ccmod", "maxmin"], "background": [0.0, 0.3]}

# two ranks that both send first: a deadlock under rendezvous, fine with eager sends
HEAD_TO_HEAD = "0 send 1 100\n1 send 0 100\n0 recv 1 100\n1 recv 0 100\n"


def no_wall(df):
    return df.drop(columns="wall_s").reset_index(drop=True)


def expected_row(result):
    """The result columns computed directly from a RunResult (independently of sweep)."""
    ranks, msgs = result.ranks, result.messages
    links = result.links.sort_values(["peak_active", "bytes", "resource"],
                                     ascending=[False, False, True])
    return {"makespan_s": result.makespan_s, "messages": len(msgs),
            "bytes": int(msgs["nbytes"].sum()), "busiest_link": links.iloc[0]["name"],
            "peak_contention": int(links.iloc[0]["peak_active"]),
            "mean_slowdown": float(np.mean(msgs["slowdown"])),
            "comm_s": float(ranks["send_s"].sum() + ranks["recv_s"].sum()),
            "wait_s": float(ranks["wait_s"].sum() + ranks["barrier_s"].sum()),
            "nodes": result.network["nodes"]}


# -- grid expansion -----------------------------------------------------------------------

def test_grid_order_is_nested_loops_network_first():
    pts = grid_points(GRID, networks=NETS)
    want = [{"network": n, "sharing": s, "background": b}
            for n in NETS for s in GRID["sharing"] for b in GRID["background"]]
    assert pts == want
    # a network axis inside the grid keeps its place; a scalar is a one-value axis
    pts = grid_points({"sharing": ["ccmod", "maxmin"], "network": ["star", "bus"],
                       "send_mode": "eager"})
    assert [(p["sharing"], p["network"]) for p in pts] == [
        ("ccmod", "star"), ("ccmod", "bus"), ("maxmin", "star"), ("maxmin", "bus")]
    assert all(p["send_mode"] == "eager" for p in pts)
    assert grid_points() == [{"network": "star"}]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4))
def test_grid_size_and_mixed_radix_order(sizes):
    names = ["sharing", "send_mode", "background", "cost"][:len(sizes)]
    grid = {n: [f"{n}{i}" for i in range(k)] for n, k in zip(names, sizes)}
    pts = grid_points(grid, networks=["a", "b"])
    assert len(pts) == 2 * math.prod(sizes)
    radices = [2] + sizes
    for idx, p in enumerate(pts):
        digits, rest = [], idx
        for r in reversed(radices):  # last axis varies fastest
            digits.append(rest % r)
            rest //= r
        digits.reverse()
        assert p["network"] == "ab"[digits[0]]
        for n, d in zip(names, digits[1:]):
            assert p[n] == f"{n}{d}"


@pytest.mark.parametrize("grid,kw,needle", [
    ({"nosuch": [1]}, {}, "nosuch"),
    ({"sharing": []}, {}, "no values"),
    ({"network": ["star"]}, {"networks": ["bus"]}, "networks once"),
    ({"sinks": [["parquet"]]}, {}, "sinks"),
])
def test_grid_errors(grid, kw, needle):
    with pytest.raises(CcmodInputError, match=needle):
        grid_points(grid, **kw)


# -- results --------------------------------------------------------------------------------

@pytest.mark.parametrize("trace", ["stencil16.ti", "ring16.ti"])
def test_rows_equal_individual_runs(traces_dir, trace):
    path = traces_dir / trace
    df = sweep(path, GRID, networks=NETS)
    assert list(df.columns) == ["network", "sharing", "background", *RESULT_COLUMNS]
    assert len(df) == len(NETS) * 4
    for row, (net, sharing, bg) in zip(df.itertuples(),
                                       itertools.product(NETS, GRID["sharing"],
                                                         GRID["background"])):
        assert (row.network, row.sharing, row.background) == (net, sharing, bg)
        want = expected_row(run(path, net, sharing=sharing, background=bg))
        assert pd.isna(row.error)
        for k, v in want.items():
            got = getattr(row, k)
            if isinstance(v, float):
                assert got == pytest.approx(v, rel=1e-12, abs=0), k
            else:
                assert got == v, k
        assert row.wall_s > 0
    assert df.attrs["trace"] == str(path)


def test_identical_on_repeat_and_best(traces_dir):
    a = sweep(traces_dir / "ring16.ti", GRID, networks=NETS)
    b = sweep(traces_dir / "ring16.ti", GRID, networks=NETS)
    pd.testing.assert_frame_equal(no_wall(a), no_wall(b))
    i = best_index(a)
    assert a.loc[i, "makespan_s"] == a["makespan_s"].min()
    assert a["makespan_s"].to_numpy().argmin() == i  # first of ties in grid order


def test_network_too_small_is_reported_and_others_run():
    from ccmod.workloads.generators import generate
    w = generate("ring:nranks=20,iterations=2")
    df = sweep(w, {"sharing": ["ccmod", "maxmin"]}, networks=["star", "myrinet16"])
    ok, bad = df.iloc[:2], df.iloc[2:]
    assert ok["error"].isna().all() and (ok["nodes"] == 20).all()
    for r in bad.itertuples():
        assert "myrinet16" in r.error and "20" in r.error and "\n" not in r.error
        assert math.isnan(r.makespan_s) and pd.isna(r.messages) and pd.isna(r.busiest_link)
    assert df.loc[0, "makespan_s"] == run(w, "star").makespan_s
    assert best_index(df) in (0, 1)
    js = records(df)
    assert js[2]["makespan_s"] is None and js[2]["messages"] is None
    json.dumps(js)  # JSON-ready


def test_deadlocking_point_is_reported(tmp_path):
    p = tmp_path / "h2h.ti"
    p.write_text(HEAD_TO_HEAD)
    # eager_limit_bytes=0: pure rendezvous (the default 64 KiB limit would not deadlock)
    df = sweep(p, {"send_mode": ["rendezvous", "eager"]}, eager_limit_bytes=0)
    assert "deadlock" in df.loc[0, "error"]
    assert pd.isna(df.loc[1, "error"])
    assert df.loc[1, "makespan_s"] == run(p, "star", send_mode="eager").makespan_s


def test_other_exceptions_propagate(monkeypatch, traces_dir):
    import ccmod.api

    def boom(*a, **k):
        raise RuntimeError("engine bug")
    monkeypatch.setattr(ccmod.api, "run", boom)
    with pytest.raises(RuntimeError, match="engine bug"):
        sweep(traces_dir / "ring16.ti")


def test_cost_compute_scale_and_fixed_options(tmp_path, traces_dir):
    from ccmod.netsys.cost import PiecewiseLinearCost
    model = tmp_path / "model.json"
    PiecewiseLinearCost([0, 2020], [2e-5, 4e-5], [5e7, 1e8]).save(model)
    path = traces_dir / "ring16.ti"
    df = sweep(path, {"cost": ["none", str(model)], "compute_scale": [1.0, 0.5]},
               networks=["star"], send_mode="eager")
    assert list(df["cost"]) == ["none", "none", str(model), str(model)]
    assert df.attrs["fixed"] == {"send_mode": "eager"}
    for r in df.itertuples():
        cost = None if r.cost == "none" else r.cost
        want = run(path, "star", cost=cost, compute_scale=r.compute_scale, send_mode="eager")
        assert r.makespan_s == want.makespan_s
    assert df.loc[1, "makespan_s"] < df.loc[0, "makespan_s"]  # half the compute


def test_network_objects_are_not_mutated_between_points(tmp_path, traces_dir):
    from ccmod.netsys.cost import PiecewiseLinearCost
    from ccmod.netsys.networks import make_network
    model = tmp_path / "model.json"
    PiecewiseLinearCost([0], [5e-5], [1e7]).save(model)
    net = make_network("star", 16)
    cost_before, bg_before = net.cost, net.background
    df = sweep(traces_dir / "ring16.ti", {"cost": [str(model), None], "background": [0.3, 0]},
               networks=[net])
    plain = sweep(traces_dir / "ring16.ti", {"cost": [str(model), None], "background": [0.3, 0]},
                  networks=["star"])
    assert list(df["network"]) == ["star"] * 4
    np.testing.assert_array_equal(df["makespan_s"], plain["makespan_s"])
    assert net.cost is cost_before and net.background is bg_before  # each point used a copy


@pytest.mark.parametrize("kw,needle", [
    ({"grid": {"sharing": ["ccmod", "fair"]}}, "--sharing: unknown sharing rule 'fair'"),
    ({"grid": {"send_mode": ["sync"]}}, "--send-mode"),
    ({"grid": {"background": [0, 1.0]}}, "--background"),
    ({"grid": {"eager_limit_bytes": [-1]}}, "--eager-limit"),
    ({"networks": ["star", "nonet"]}, "unknown network 'nonet'"),
    ({"networks": ["fattree2:spinez=2"]}, "unknown parameter 'spinez'"),
    ({"grid": {"cost": ["missing-model.json"]}}, "missing-model.json"),
    ({"grid": {"mapping": ["block:0"]}}, "--map"),
    ({"jobs": -1}, "jobs"),
])
def test_bad_values_fail_before_running(monkeypatch, traces_dir, kw, needle):
    def must_not_run(*a, **k):
        raise AssertionError("a point ran before validation finished")
    monkeypatch.setattr(sw, "evaluate_point", must_not_run)
    with pytest.raises(CcmodInputError) as exc:
        sweep(traces_dir / "ring16.ti", **kw)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_read_options_need_a_trace_file(traces_dir):
    from ccmod.api import load_workload
    w = load_workload(traces_dir / "ring16.ti")
    with pytest.raises(CcmodInputError, match="compute_scale"):
        sweep(w, {"compute_scale": [1, 2]})


# -- parallelism ------------------------------------------------------------------------------

@pytest.mark.slow
def test_process_pool_gives_the_same_table(tmp_path, traces_dir):
    p = tmp_path / "h2h.ti"
    p.write_text(HEAD_TO_HEAD)
    grid = {"send_mode": ["rendezvous", "eager"], "sharing": ["ccmod", "maxmin"]}
    one = sweep(p, grid, networks=["star", "bus"], eager_limit_bytes=0)
    two = sweep(p, grid, networks=["star", "bus"], jobs=2, eager_limit_bytes=0)
    pd.testing.assert_frame_equal(no_wall(one), no_wall(two))
    assert one["error"].notna().sum() == 4  # the rendezvous points deadlock
    one = sweep(traces_dir / "stencil16.ti", GRID, networks=NETS)
    two = sweep(traces_dir / "stencil16.ti", GRID, networks=NETS, jobs=2)
    pd.testing.assert_frame_equal(no_wall(one), no_wall(two))


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_table(traces_dir):
    pytest.importorskip("dask.distributed")
    path = traces_dir / "stencil16.ti"
    one = sweep(path, GRID, networks=NETS)
    done = []
    try:
        dist = sweep(path, GRID, networks=NETS, scheduler="local",
                     progress=lambda d, t: done.append((d, t)))
    except CcmodInputError as exc:  # the sandbox may forbid even an in-process cluster
        pytest.skip(f"dask LocalCluster cannot start here: {exc}")
    pd.testing.assert_frame_equal(no_wall(one), no_wall(dist))
    assert done[-1] == (len(one), len(one)) and len(done) == len(one)


# -- CLI --------------------------------------------------------------------------------------

def cli_app():
    app = typer.Typer()

    @app.callback()
    def _root():
        """test app"""
    register(app)
    return app


def test_cli_json_and_outputs(tmp_path, traces_dir):
    path = traces_dir / "ring16.ti"
    pq, csv = tmp_path / "sw.parquet", tmp_path / "sub" / "sw.csv"
    args = ["sweep", str(path), "--network", "star", "--network", "fattree2:spines=2",
            "--sharing", "ccmod,maxmin", "--background", "0,0.3", "--send-mode", "rendezvous",
            "--cost", "none"]
    runner = CliRunner()
    res = runner.invoke(cli_app(), args + ["--json", "-o", str(pq)])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    api = sweep(path, {"sharing": ["ccmod", "maxmin"], "send_mode": ["rendezvous"],
                       "background": [0.0, 0.3], "cost": ["none"]},
                networks=["star", "fattree2:spines=2"])
    assert [r["makespan_s"] for r in rows] == list(api["makespan_s"])
    assert [(r["network"], r["sharing"], r["background"]) for r in rows] == list(
        zip(api["network"], api["sharing"], api["background"]))
    back = pd.read_parquet(pq)
    pd.testing.assert_frame_equal(no_wall(back), no_wall(api), check_dtype=False)
    assert not list(tmp_path.glob(".*.tmp"))  # atomic: no temporary left behind

    res = runner.invoke(cli_app(), args + ["-o", str(csv), "--jobs", "2"])
    assert res.exit_code == 0, res.output
    assert "best makespan" in res.stdout and "fattree2:spines=2" in res.stdout
    back = pd.read_csv(csv)
    assert list(back.columns) == list(api.columns)
    np.testing.assert_array_equal(back["makespan_s"], api["makespan_s"])


def test_cli_reports_failing_points(traces_dir):
    res = CliRunner().invoke(cli_app(), ["sweep", str(traces_dir / "ring16.ti"),
                                         "-n", "star", "-n", "bus:nodes=4", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert rows[0]["error"] is None and "nodes" in rows[1]["error"]
    res = CliRunner().invoke(cli_app(), ["sweep", str(traces_dir / "ring16.ti"),
                                         "-n", "star", "-n", "bus:nodes=4"])
    assert res.exit_code == 0 and "1 point(s) failed" in res.stdout


@pytest.mark.parametrize("extra,needle", [
    (["--sharing", "ccmod,fair"], "--sharing"),
    (["--background", "0,x"], "--background"),
    (["--eager-limit", "1.5"], "--eager-limit"),
    (["--network", "nonet"], "unknown network"),
    (["-o", "table.txt"], ".parquet or .csv"),
    (["--cost", "none,missing.json"], "missing.json"),
])
def test_cli_bad_option_is_one_line_exit_2(monkeypatch, capsys, traces_dir, extra, needle):
    from ccmod.cli import main

    def must_not_run(*a, **k):
        raise AssertionError("a point ran before validation finished")
    monkeypatch.setattr(sw, "evaluate_point", must_not_run)
    with pytest.raises(SystemExit) as exc:
        main(["sweep", str(traces_dir / "ring16.ti"), *extra])
    assert exc.value.code == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and needle in err[0] and "Traceback" not in err[0], err


def test_missing_dask_is_one_line_with_the_install_hint(monkeypatch, traces_dir):
    import sys
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails as if absent
    with pytest.raises(CcmodInputError) as exc:
        sweep(traces_dir / "ring16.ti", scheduler="tcp://127.0.0.1:8786")
    assert "pip install 'ccmod[dist]'" in str(exc.value) and "\n" not in str(exc.value)
