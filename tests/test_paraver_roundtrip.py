"""ccmod's Paraver output reads back to the same prediction (issue 12).

A run's ``paraver`` sink writes MPI call events, communication records and Running states
of the replayed workload; ``ccmod run OUT/trace.prv`` must predict the same makespan.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from ccmod.api import run
from ccmod.workloads import read_workload
from ccmod.workloads.base import OP_COMPUTE
from ccmod.workloads.generators import generate

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def _round_trip(trace, tmp_path, **opts):
    r1 = run(trace, sinks=["paraver"], out_dir=tmp_path, **opts)
    prv = tmp_path / "trace.prv"
    r2 = run(prv, **opts)
    return r1, r2, prv


def _same_messages(r1, r2):
    a = r1.messages.sort_values(["src", "dst", "tag", "t_post_send_s"], kind="mergesort")
    b = r2.messages.sort_values(["src", "dst", "tag", "t_post_send_s"], kind="mergesort")
    assert len(a) == len(b)
    for col in ("src", "dst", "tag", "nbytes"):
        assert a[col].tolist() == b[col].tolist()
    assert np.array_equal(a["t_end_s"].to_numpy(), b["t_end_s"].to_numpy())


@pytest.mark.parametrize("spec", [
    "halo2d:px=3,py=2,iterations=3,dist=exponential",      # irecv/isend/waitall, compute
    "uniform:nranks=6,iterations=8,fanout=2",               # random peers and sizes
    "snakes:nranks=8,snakes=2,hops=5",                      # barriers (pure synchronisation)
    "alltoall:nranks=5,iterations=2,nbytes=100000",         # decomposed collectives
])
def test_generated_workloads_read_back_exactly(spec, tmp_path):
    w = generate(spec, seed=3)
    r1, r2, _ = _round_trip(w, tmp_path)
    assert r2.makespan_s == r1.makespan_s
    _same_messages(r1, r2)
    assert list(r2.rank_finish_s) == list(r1.rank_finish_s)


@pytest.mark.parametrize("trace", [
    "smpi-npb/MG.S.4",                          # real SMPI trace: isend/irecv/wait, self messages
    "real/paraver-kernel/qsort_beo3.prv",       # real Paraver trace (MPICH-1 era)
    "dimemas/handwritten_4tasks.dim",           # zero-length Recv/Irecv on one tick
])
def test_real_fixtures_read_back_exactly(trace, tmp_path):
    r1, r2, prv = _round_trip(DATA / trace, tmp_path)
    assert r2.makespan_s == r1.makespan_s
    _same_messages(r1, r2)
    text = prv.read_text()
    assert ":50000001:" in text and re.search(r"^3:", text, re.M)


@pytest.mark.parametrize("opts", [
    {"network": "torus:dims=2x2", "sharing": "maxmin"},
    {"send_mode": "detached"},
    {"eager_limit_bytes": 0, "mapping": "block:2"},
])
def test_other_run_options(opts, tmp_path):
    r1, r2, _ = _round_trip(DATA / "smpi-npb" / "FT.S.4", tmp_path, **opts)
    assert r2.makespan_s == r1.makespan_s


def test_a_map_that_permutes_and_skips_nodes_reads_back_onto_the_same_nodes(tmp_path):
    m = tmp_path / "map.txt"
    m.write_text("3\n0\n5\n0\n")          # ranks on nodes 3, 0, 5, 0 (1, 2, 4 unused)
    out = tmp_path / "run"
    r1 = run(DATA / "smpi-npb" / "FT.S.4", network="torus:dims=3x3", mapping=str(m),
             sinks=["paraver"], out_dir=out)
    r2 = run(out / "trace.prv", network="torus:dims=3x3")      # --map trace (default)
    assert r2.ranks["node"].tolist() == r1.ranks["node"].tolist() == [3, 0, 5, 0]
    assert r2.makespan_s == r1.makespan_s


def test_compute_survives_exactly_and_without_ccmod_events_to_the_ns(tmp_path):
    w = generate("halo2d:px=2,py=2,iterations=4,dist=exponential", seed=1)
    r1, r2, prv = _round_trip(w, tmp_path)
    w2 = read_workload(prv)
    total = lambda x: float(x.duration_s[x.op == OP_COMPUTE].sum())  # noqa: E731
    assert total(w2) == pytest.approx(total(w), rel=1e-15)
    # a Paraver tool that drops ccmod's private event types (9200000x) still gets the
    # calls, messages and Running states: compute is then rounded to the trace's ns
    stripped = tmp_path / "plain"
    stripped.mkdir()
    for ext in ("prv", "pcf", "row"):
        txt = (tmp_path / f"trace.{ext}").read_text()
        (stripped / f"trace.{ext}").write_text(re.sub(r":9200000[1-4]:\d+", "", txt))
    r3 = run(stripped / "trace.prv")
    ncomp = int((w.op == OP_COMPUTE).sum())
    assert abs(r3.makespan_s - r1.makespan_s) <= ncomp * 1e-9
    _same_messages(r1, r3) if r3.makespan_s == r1.makespan_s else None
    assert len(r3.messages) == len(r1.messages)


def test_without_the_workload_the_sink_writes_no_calls(tmp_path):
    from ccmod.outputs.base import RunContext
    from ccmod.outputs.paraver import ParaverSink, read_prv_summary
    r = run(DATA / "tiny3.ti", record=True)
    ParaverSink(tmp_path).write(r, RunContext())
    s = read_prv_summary(tmp_path / "trace.prv")
    assert len(s["comms"]) == 4 and ":5000000" not in (tmp_path / "trace.prv").read_text()
    assert os.path.getsize(tmp_path / "trace.pcf") > 0
