"""Measured next to predicted, and the placement recorded in traces (issue 12)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from ccmod.api import run
from ccmod.workloads import read_workload
from ccmod.workloads.measured import TracedTime
from ccmod.workloads.placement import paraver_task_nodes, placement_meta

ROOT = Path(__file__).resolve().parent.parent


def _prv(tmp_path, nodes_field="2(1,1)", tasks="2(1:1,1:2)", row=None):
    """A two-task Paraver trace: rank 0 MPI_Send 100..200 ns, rank 1 MPI_Recv 50..210 ns."""
    text = (f"#Paraver (01/01/2020 at 00:00):1000_ns:{nodes_field}:1:{tasks},0\n"
            "2:1:1:1:1:100:50000001:1\n"
            "2:2:1:2:1:50:50000001:2\n"
            "3:1:1:1:1:100:150:2:1:2:1:180:210:64:7\n"
            "2:1:1:1:1:200:50000001:0\n"
            "2:2:1:2:1:210:50000001:0\n")
    p = tmp_path / "t.prv"
    p.write_text(text)
    if row is not None:
        (tmp_path / "t.row").write_text(row)
    return p


def test_traced_time_counts_nested_calls_once():
    t = TracedTime(2)
    t.call(0, 1.0, 3.0)
    t.call(0, 2.0, 4.0)        # overlaps the first: only 3..4 is new
    t.enter(1, 0.5)
    t.leave(1, 1.5)
    t.bounds(0.0, 10.0)
    s = t.summary()
    assert s["mpi_s"] == [3.0, 1.0]
    assert s["window_s"] == 3.5 and s["before_first_call_s"] == 0.5
    assert s["after_last_call_s"] == 6.0 and s["trace_span_s"] == 10.0


def test_paraver_measured_window_and_mpi_time(tmp_path):
    w = read_workload(_prv(tmp_path))
    m = w.meta["measured"]
    assert m["window_s"] == pytest.approx(160e-9)
    assert m["trace_span_s"] == pytest.approx(1000e-9)
    assert m["before_first_call_s"] == pytest.approx(50e-9)
    assert m["after_last_call_s"] == pytest.approx(790e-9)
    assert m["mpi_s"] == pytest.approx([100e-9, 160e-9])


def test_run_reports_measured_next_to_predicted(tmp_path):
    p = _prv(tmp_path)
    r = run(p, "star")
    s = r.summary()["measured"]
    assert s is r.measured or s == r.measured
    assert s["window_s"] == pytest.approx(160e-9)
    assert s["predicted_makespan_s"] == r.makespan_s
    assert s["makespan_ratio"] == pytest.approx(r.makespan_s / 160e-9)
    assert "not replayed" in s["leaves_out"]
    # the command as a user runs it, in this process (conftest.run_cli)
    res = run_cli("run", p)
    assert res.returncode == 0, res.stderr
    assert "measured " in res.stdout and "predicted " in res.stdout
    assert "not predicted" in res.stdout
    res = run_cli("run", p, "--json")
    assert json.loads(res.stdout)["measured"]["window_s"] == pytest.approx(160e-9)


def test_ti_trace_has_no_measured_block(tmp_path):
    p = tmp_path / "t.ti"
    p.write_text("0 send 1 0 8\n1 recv 0 0 8\n")
    assert run(p, "star").summary()["measured"] is None


# -- placement -----------------------------------------------------------------------------

def test_paraver_task_nodes():
    assert paraver_task_nodes(["4(1:1,1:1,1:2,1:2),5"]) == [1, 1, 2, 2]
    assert paraver_task_nodes(["2(1:1,1:2)", "1(1:3)"]) == [1, 2, 3]
    assert paraver_task_nodes(["2(1:1,bad)"]) is None


def test_placement_numbering():
    assert placement_meta(["b", "a", "b"], "x")["node_of_rank"] == [0, 1, 0]
    assert placement_meta(["b", None], "x") is None


def test_recorded_placement_is_used_by_default_and_map_overrides(tmp_path):
    row = "LEVEL NODE SIZE 1\nhostA\n"
    p = _prv(tmp_path, nodes_field="1(2)", tasks="2(1:1,1:1)", row=row)
    w = read_workload(p)
    assert w.meta["placement"]["node_of_rank"] == [0, 0]
    assert w.meta["placement"]["node_names"] == ["hostA"]
    r = run(w, "star")
    assert r.messages["hops"].tolist() == [0]          # same node: no network link
    assert r.network["nodes"] == 1
    assert any("placement from the trace" in n for n in r.summary()["notes"])
    apart = run(w, "star", mapping="identity")
    assert apart.network["nodes"] == 2
    same = run(w, "star", mapping="trace")
    assert same.network["nodes"] == 1


# every placement-carrying real trace of ../shared (~1.8 s here): with the slow tests (CI
# runs them, with ../shared beside the clone); the generated cases above run by default
@pytest.mark.slow
def test_real_traces_record_their_placement(real_dir):
    w = read_workload(real_dir / "pypop-epoch-paraver" / "epoch_4proc.prv.gz")
    assert w.meta["placement"]["node_names"] == ["s04r2b68"]
    w = read_workload(real_dir / "sst-macro" / "otf2_test_traces" / "traces.otf2")
    assert w.meta["placement"]["node_names"][:2] == ["kn1.eth", "kn2.eth"]
    assert w.meta["placement"]["node_of_rank"] == list(range(10))
    w = read_workload(real_dir / "sst-dumpi" / "testtrace.meta")
    assert w.meta["placement"]["node_names"] == ["hadalst-mbp.ca.sandia.gov"]


def test_init_and_finalize_are_kept_apart_from_the_mpi_time():
    t = TracedTime(2)
    t.call(0, 0.0, 1.0, "MPI_Init")
    t.call(1, 0.2, 1.5, "init")           # DUMPI-style name, leaves Init 0.5 s later
    t.call(0, 2.0, 2.5, "MPI_Send")
    t.call(1, 2.0, 3.0, "MPI_Recv")
    t.call(0, 3.0, 4.0, "MPI_Finalize")
    t.call(1, 3.5, 4.0, "MPI_Finalize")
    s = t.summary()
    assert s["mpi_s"] == [0.5, 1.0]
    assert s["setup_s"] == [2.0, 1.8]
    assert s["window_s"] == 4.0
    assert s["replayed_window_s"] == pytest.approx(3.5 - 1.5)
    assert s["init_skew_s"] == pytest.approx(0.5)


def test_ratio_uses_the_replayed_window_and_says_what_mpi_time_includes(tmp_path):
    text = ("#Paraver (01/01/2020 at 00:00):1000_ns:1(2):1:2(1:1,1:1)\n"
            "2:1:1:1:1:0:50000003:31\n2:2:1:2:1:0:50000003:31\n"
            "2:1:1:1:1:100:50000003:0\n2:2:1:2:1:300:50000003:0\n"
            "2:1:1:1:1:400:50000001:1\n2:2:1:2:1:400:50000001:2\n"
            "3:1:1:1:1:400:400:2:1:2:1:450:450:8:0\n"
            "2:1:1:1:1:450:50000001:0\n2:2:1:2:1:460:50000001:0\n"
            "2:1:1:1:1:500:50000003:32\n2:2:1:2:1:500:50000003:32\n"
            "2:1:1:1:1:900:50000003:0\n2:2:1:2:1:900:50000003:0\n")
    p = tmp_path / "t.prv"
    p.write_text(text)
    (tmp_path / "t.pcf").write_text(
        "EVENT_TYPE\n9 50000001 MPI Point-to-point\nVALUES\n1 MPI_Send\n2 MPI_Recv\n0 End\n\n"
        "EVENT_TYPE\n9 50000003 MPI Other\nVALUES\n31 MPI_Init\n32 MPI_Finalize\n0 End\n")
    r = run(p, "star")
    m = r.summary()["measured"]
    assert m["replayed_window_s"] == pytest.approx(200e-9)     # last Init end 300 -> 500
    assert m["makespan_ratio"] == pytest.approx(r.makespan_s / 200e-9)
    assert m["mpi_s"] == pytest.approx([50e-9, 60e-9])
    assert "MPI_Init/MPI_Finalize excluded" in m["mpi_includes"]
    assert "left MPI_Init up to" in m["leaves_out"]
