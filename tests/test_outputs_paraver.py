"""Paraver .prv/.pcf/.row written by the paraver sink are consistent (issue 5)."""
from __future__ import annotations

import re

import pytest

from ccmod.outputs.paraver import PRV_STATES, read_prv_summary
from ccmod.outputs.sinks import make_sinks
from ccmod.outputs.synthetic import synthetic_run, tiny_run


@pytest.fixture
def tiny_prv(tmp_path):
    run = tiny_run()
    run.feed(make_sinks("paraver", tmp_path), chunk=2)
    return tmp_path, run


def test_files_and_header(tiny_prv):
    d, _ = tiny_prv
    assert {"trace.prv", "trace.pcf", "trace.row"} <= {p.name for p in d.iterdir()}
    s = read_prv_summary(d / "trace.prv")
    # 3 nodes with one CPU each, one application of 3 tasks on nodes 1..3, 1 communicator
    assert re.fullmatch(r"#Paraver \(\d\d/\d\d/\d{4} at \d\d:\d\d\):8000_ns:3\(1,1,1\):1:"
                        r"3\(1:1,1:2,1:3\),1", s["header"])
    assert s["ftime_ns"] == 8000          # the 8 µs makespan
    assert s["other"] == 0


def test_record_counts_and_times(tiny_prv):
    d, run = tiny_prv
    s = read_prv_summary(d / "trace.prv")
    assert len(s["comms"]) == 4
    # 10 recorded states + 2 idle (rank 1 [5, 8] µs, rank 2 [3, 5] µs)
    assert len(s["states"]) == 12
    idle = sorted((st[2], st[4], st[5]) for st in s["states"] if st[6] == 0)
    assert idle == [(2, 5000, 8000), (3, 3000, 5000)]
    last = max([st[5] for st in s["states"]] + [c[11] for c in s["comms"]])
    assert s["ftime_ns"] >= last
    for c in s["comms"]:
        lsend, psend, lrecv, precv = c[4], c[5], c[10], c[11]
        assert 0 <= lsend <= psend <= precv and lrecv <= precv
    # message 2: rank 1 → rank 0, 500 bytes, tag 7, sent at 4 µs, received at 5 µs
    m2 = next(c for c in s["comms"] if c[12] == 500)
    assert (m2[2], m2[8], m2[4], m2[5], m2[11], m2[13]) == (2, 1, 4000, 4000, 5000, 7)
    for st in s["states"]:
        assert st[4] < st[5]
    # records sorted by their first time
    lines = [ln for ln in (d / "trace.prv").read_text().splitlines()[2:]]
    firsts = [int(ln.split(":")[5]) for ln in lines]
    assert firsts == sorted(firsts)


def test_pcf_declares_used_states_and_row_layout(tiny_prv):
    d, _ = tiny_prv
    used = {st[6] for st in read_prv_summary(d / "trace.prv")["states"]}
    pcf = (d / "trace.pcf").read_text()
    block = pcf.split("STATES\n", 1)[1].split("\n\n", 1)[0]
    declared = {int(ln.split()[0]) for ln in block.splitlines() if ln.strip()}
    assert used <= declared == {v for v, _, _ in PRV_STATES.values()}
    assert "UNITS               NANOSEC" in pcf
    row = (d / "trace.row").read_text()
    assert "LEVEL CPU SIZE 3" in row and "LEVEL NODE SIZE 3" in row
    assert "LEVEL THREAD SIZE 3" in row


def test_shared_nodes_layout(tmp_path):
    """Two ranks per node: 2 nodes with 2 CPUs each, tasks mapped 1,1,2,2."""
    run = synthetic_run(4, 3, seed=2)
    run.ctx.node_of_rank = [0, 0, 1, 1]
    run.feed(make_sinks("paraver:prefix=x", tmp_path))
    s = read_prv_summary(tmp_path / "x.prv")
    assert ":2(2,2):1:4(1:1,1:1,1:2,1:2),1" in s["header"]
    assert len(s["comms"]) == 12
    cpus = {(st[0], st[2]) for st in s["states"]}
    assert cpus == {(1, 1), (2, 2), (3, 3), (4, 4)}      # cpu k hosts task k


def test_reproducible(tmp_path):
    run = synthetic_run(5, 4, seed=9)
    run.feed(make_sinks("paraver", tmp_path / "a"), chunk=5)
    run.feed(make_sinks("paraver", tmp_path / "b"))
    assert (tmp_path / "a" / "trace.prv").read_bytes() == (tmp_path / "b" / "trace.prv").read_bytes()
