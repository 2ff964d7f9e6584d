"""Resumable grid sweeps (ccmod.sweep_grid): network-parameter axes, seeds, one code path
for local and dask executors, resume after an interrupt, and the sweep report."""
from __future__ import annotations

import pandas as pd
import pytest

from ccmod.errors import CcmodInputError
from ccmod.sweep_grid import merge_network_spec, parse_grid_items, plan, run_grid

from conftest import TRACES

PP = TRACES / "pingpong.ti"


def test_parse_grid_items_and_merge_spec():
    g = parse_grid_items(["network.bandwidth=1e9,1e10", "background=0;exp:seed=1,interval=1e-3",
                          "send-mode=eager", "eager-limit=0,65536"])
    assert g == {"network.bandwidth": [1e9, 1e10], "background": [0, "exp:seed=1,interval=1e-3"],
                 "send_mode": ["eager"], "eager_limit_bytes": [0, 65536]}
    assert merge_network_spec("fattree:k=4", {"bandwidth": 1e9, "k": 2}) == \
        "fattree:k=2,bandwidth=1000000000.0"
    for bad in (["nokey"], ["a=1", "a=2"]):
        with pytest.raises(CcmodInputError):
            parse_grid_items(bad)


def test_plan_seeds_only_for_stochastic_points_and_bad_network_param():
    axes, points = plan({"background": [0.0, "exp:interval=1e-3"]}, networks=["star"], seeds=3)
    assert [n for n, _ in axes] == ["network", "background", "seed"]
    assert [lab["seed"] for lab, _ in points] == [None, 1, 2, 3]
    assert [kw["background"].split("seed=")[1].split(",")[0] for _, kw in points[1:]] == \
        ["1", "2", "3"]
    with pytest.raises(CcmodInputError, match="unknown parameter 'bandwith'"):
        plan({"network.bandwith": [1e9]}, networks=["star"])


def test_network_parameter_axis_runs_what_it_says(tmp_path):
    from ccmod.api import run
    df = run_grid(PP, {"network.bandwidth": [1e8, 1e9]}, networks=["fattree:k=2"])
    assert list(df["network.bandwidth"]) == [1e8, 1e9]
    assert df["makespan_s"][0] == run(PP, "fattree:k=2,bandwidth=1e8").makespan_s
    assert df["makespan_s"][0] > df["makespan_s"][1]


class Stop(Exception):
    pass


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["dask"])
def test_hundred_point_dask_sweep_resumes_after_interrupt(tmp_path, executor):
    """>= 100 configurations through a dask LocalCluster; interrupted after 40 points, the
    re-run computes only the missing ones and the table equals an uninterrupted sweep."""
    pytest.importorskip("dask.distributed")
    grid = {"network.bandwidth": [1e8, 2e8, 5e8, 1e9, 2e9],
            "network.latency": [1e-7, 1e-6, 1e-5, 1e-4, 1e-3],
            "background": [0.0, 0.1, 0.2, 0.3], "sharing": ["ccmod"]}
    out = tmp_path / "results.parquet"
    seen = []

    def interrupt(done, total):
        seen.append(total)
        if done == 40:
            raise Stop
    with pytest.raises(Stop):
        run_grid(PP, grid, networks=["star"], output=out, executor=executor,
                 scheduler="local", progress=interrupt, flush_s=1e9)
    assert seen[0] == 100
    part = pd.read_parquet(out)
    assert len(part) >= 40
    again = run_grid(PP, grid, networks=["star"], output=out, executor=executor,
                     scheduler="local")
    assert again.attrs["resumed"] == len(part)
    assert again.attrs["computed"] == 100 - len(part)
    assert len(again) == 100 and again["error"].isna().all()
    # nothing recomputed: the rows from the interrupted run are the ones in the file
    merged = again.merge(part, on=["network", "network.bandwidth", "network.latency",
                                   "background", "sharing"], suffixes=("", "_old"))
    assert len(merged) == len(part)
    assert (merged["wall_s"] == merged["wall_s_old"]).all()
    full = run_grid(PP, grid, networks=["star"])
    pd.testing.assert_series_equal(again["makespan_s"], full["makespan_s"])
    # a third run has nothing left to do
    third = run_grid(PP, grid, networks=["star"], output=out)
    assert third.attrs["computed"] == 0 and third.attrs["resumed"] == 100


def test_local_resume_and_mismatched_file(tmp_path):
    grid = {"background": [0.0, 0.2, 0.4]}
    out = tmp_path / "r.csv"
    first = run_grid(PP, grid, networks=["star", "bus"], output=out)
    assert first.attrs["computed"] == 6
    second = run_grid(PP, grid, networks=["star", "bus"], output=out, jobs=2)
    assert second.attrs["computed"] == 0
    pd.testing.assert_series_equal(first["makespan_s"], second["makespan_s"])
    with pytest.raises(CcmodInputError, match="holds a sweep over"):
        run_grid(PP, {"sharing": ["ccmod"]}, networks=["star"], output=out)


def test_sweep_report_html(tmp_path):
    from ccmod.sweep_report import sweep_report
    out = tmp_path / "r.parquet"
    run_grid(PP, {"network.bandwidth": [1e8, 1e9], "background": [0.0, 0.3, "exp:interval=1e-3"]},
             networks=["star"], seeds=2, output=out)
    html = sweep_report(out, tmp_path / "report.html")
    text = html.read_text()
    assert "<svg" in text or "data:image/png" in text
    assert "network.bandwidth" in text and "Knee capacity" in text
    assert "<script src" not in text and "<link " not in text     # self-contained
