"""Paraver .prv/.pcf/.row written by the paraver sink, on real engine runs."""
from __future__ import annotations

import re

import pytest

from ccmod.outputs.paraver import PRV_STATES, read_prv_summary
from outputs_runs import stencil_result, tiny_result


@pytest.fixture(scope="module")
def tiny_prv(tmp_path_factory):
    d = tmp_path_factory.mktemp("prv")
    return d, tiny_result(sinks=["paraver"], out_dir=d)


def test_files_and_header(tiny_prv):
    d, _ = tiny_prv
    assert {"trace.prv", "trace.pcf", "trace.row"} <= {p.name for p in d.iterdir()}
    s = read_prv_summary(d / "trace.prv")
    # 3 nodes with one CPU each, one application of 3 tasks on nodes 1..3, 1 communicator
    assert re.fullmatch(r"#Paraver \(\d\d/\d\d/\d{4} at \d\d:\d\d\):7500_ns:3\(1,1,1\):1:"
                        r"3\(1:1,1:2,1:3\),1", s["header"])
    assert s["ftime_ns"] == 7500          # the 7.5 µs makespan (tests/outputs_runs.py)
    assert s["other"] == 0


def test_record_counts_and_times(tiny_prv):
    d, _ = tiny_prv
    s = read_prv_summary(d / "trace.prv")
    assert len(s["comms"]) == 4
    # 8 recorded states + 1 idle (rank 1, task 2, after 4.5 µs)
    assert len(s["states"]) == 9
    idle = sorted((st[2], st[4], st[5]) for st in s["states"] if st[6] == 0)
    assert idle == [(2, 4500, 7500)]
    last = max([st[5] for st in s["states"]] + [c[11] for c in s["comms"]])
    assert s["ftime_ns"] >= last
    for c in s["comms"]:
        lsend, psend, lrecv, precv = c[4], c[5], c[10], c[11]
        assert 0 <= lsend <= psend <= precv and lrecv <= precv
    # rank 1 → rank 0, 500 bytes, tag 7: sent at 4 µs (after 2 µs of compute), in at 4.5 µs
    m = next(c for c in s["comms"] if c[12] == 500)
    assert (m[2], m[8], m[4], m[5], m[11], m[13]) == (2, 1, 4000, 4000, 4500, 7)
    # rank 1 computed (Running = 1) from 2 to 4 µs
    assert (2, 1, 2, 1, 2000, 4000, 1) in s["states"]
    for st in s["states"]:
        assert st[4] < st[5]
    lines = [ln for ln in (d / "trace.prv").read_text().splitlines()[2:]]
    firsts = [int(ln.split(":")[5]) for ln in lines]
    assert firsts == sorted(firsts)       # records sorted by their first time


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
    """Two ranks per node (--map block:2): 8 nodes with 2 CPUs each, tasks 1,1,2,2,..."""
    r = stencil_result(network="star", mapping="block:2", sinks=["paraver:prefix=x"],
                       out_dir=tmp_path)
    s = read_prv_summary(tmp_path / "x.prv")
    assert ":8(2,2,2,2,2,2,2,2):1:16(1:1,1:1,1:2,1:2," in s["header"]
    assert len(s["comms"]) == r.messages_count
    cpus = {(st[0], st[2]) for st in s["states"]}
    assert cpus == {(k, k) for k in range(1, 17)}      # cpu k hosts task k


def test_reproducible(tmp_path):
    for sub in ("a", "b"):
        stencil_result(sinks=["paraver"], out_dir=tmp_path / sub)
    assert (tmp_path / "a" / "trace.prv").read_bytes() == \
        (tmp_path / "b" / "trace.prv").read_bytes()
