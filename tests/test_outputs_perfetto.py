"""Perfetto trace-event JSON of the perfetto sink, on real engine runs; the validator."""
from __future__ import annotations

import json

import pytest

from ccmod.outputs.perfetto import validate_file, validate_trace
from outputs_runs import stencil_result, tiny_result


def _write(tmp_path, spec="perfetto", run=tiny_result):
    run(sinks=[spec], out_dir=tmp_path)
    return json.loads((tmp_path / "trace.json").read_text())


def test_tiny_trace_structure(tmp_path):
    obj = _write(tmp_path)
    assert validate_trace(obj) == []
    ev = obj["traceEvents"]
    xs = [e for e in ev if e["ph"] == "X"]
    # 8 recorded states + 1 idle (rank 1 after 4.5 µs; tests/outputs_runs.py)
    assert len(xs) == 9
    assert sorted({e["pid"] for e in xs}) == [1, 2, 3]          # a process per rank
    assert {e["name"] for e in xs} == {"compute", "send", "recv", "wait", "idle"}
    starts = [e for e in ev if e["ph"] == "s"]
    ends = [e for e in ev if e["ph"] == "f"]
    assert len(starts) == len(ends) == 4
    assert all(e.get("bp") == "e" for e in ends)
    # the 3000 B message (rank 0 → rank 2, 4.5..7.5 µs): arrow from pid 1 to pid 3
    big = next(e for e in starts if e["args"]["nbytes"] == 3000)
    end = next(e for e in ends if e["id"] == big["id"])
    assert (big["pid"], end["pid"]) == (1, 3)
    assert 4.5 <= big["ts"] <= 4.501 and 7.499 <= end["ts"] <= 7.5
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert {"rank 0 (node 0)", "network"} <= names
    counters = [e for e in ev if e["ph"] == "C"]
    assert any(e["name"] == "node1/down contention" and e["args"]["active"] == 2
               for e in counters)
    util = {e["name"]: e["args"]["utilisation"] for e in counters
            if "utilisation" in e["args"] and e["ts"] == 0}
    assert util["node1/down utilisation"] == pytest.approx(1.0)
    assert util["node2/up utilisation"] == pytest.approx(0.5)
    assert obj["metadata"]["flows_sampled"] is False


def test_trace_is_reproducible_and_valid_on_larger_runs(tmp_path):
    a = _write(tmp_path / "a", run=stencil_result)
    _write(tmp_path / "b", run=stencil_result)
    assert (tmp_path / "a" / "trace.json").read_bytes() == \
        (tmp_path / "b" / "trace.json").read_bytes()
    assert validate_trace(a) == []
    assert validate_file(tmp_path / "b" / "trace.json") == []


def test_flow_sampling(tmp_path):
    obj = _write(tmp_path, "perfetto:max_flows=7,counters=0", run=stencil_result)
    assert validate_trace(obj) == []
    assert len([e for e in obj["traceEvents"] if e["ph"] == "s"]) == 7
    assert obj["metadata"]["flows_sampled"] is True
    assert not [e for e in obj["traceEvents"] if e["ph"] == "C"]


# ----------------------------------------------------------------------------- validator
def _x(ts, dur, pid=1, tid=1, name="a"):
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid}


def test_validator_accepts_nested_spans_and_bound_flows():
    ev = [_x(0, 10), _x(2, 3), _x(10, 5), _x(0, 4, pid=2),
          {"ph": "B", "name": "b", "ts": 11, "pid": 1, "tid": 1},
          {"ph": "E", "ts": 12, "pid": 1, "tid": 1},
          {"ph": "s", "cat": "m", "name": "x", "id": 1, "ts": 1, "pid": 1, "tid": 1},
          {"ph": "f", "bp": "e", "cat": "m", "name": "x", "id": 1, "ts": 3, "pid": 2, "tid": 1},
          {"ph": "C", "name": "c", "ts": 0, "pid": 3, "tid": 1, "args": {"v": 1}},
          {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}}]
    assert validate_trace({"traceEvents": ev}) == []
    assert validate_trace(ev) == []                       # the bare-list form
    assert validate_trace(json.dumps(ev)) == []


@pytest.mark.parametrize("events, problem", [
    ([_x(0, 10), _x(5, 10)], "without nesting"),
    ([_x(-1, 2)], "negative ts"),
    ([_x(0, -2)], "invalid dur"),
    ([{"ph": "X", "name": "a", "dur": 1, "pid": 1, "tid": 1}], "no numeric ts"),
    ([{"ph": "B", "ts": 0, "pid": 1, "tid": 1}], "never closed"),
    ([{"ph": "E", "ts": 0, "pid": 1, "tid": 1}], "closes no open B"),
    ([_x(0, 5), {"ph": "s", "cat": "m", "name": "x", "id": 9, "ts": 1, "pid": 1, "tid": 1}],
     "has no end"),
    ([_x(0, 5), {"ph": "f", "bp": "e", "cat": "m", "name": "x", "id": 9, "ts": 1, "pid": 1,
                 "tid": 1}], "has 0 starts"),
    ([_x(0, 5), {"ph": "s", "cat": "m", "name": "x", "id": 2, "ts": 4, "pid": 1, "tid": 1},
      {"ph": "f", "bp": "e", "cat": "m", "name": "x", "id": 2, "ts": 2, "pid": 1, "tid": 1}],
     "ends before it starts"),
    ([_x(0, 5), {"ph": "s", "cat": "m", "name": "x", "id": 3, "ts": 7, "pid": 1, "tid": 1},
      {"ph": "f", "bp": "e", "cat": "m", "name": "x", "id": 3, "ts": 8, "pid": 1, "tid": 1}],
     "not inside a slice"),
    ([{"ph": "C", "name": "c", "ts": 0, "pid": 1, "tid": 1, "args": {"v": "x"}}],
     "numeric args"),
    ([{"ph": "?", "ts": 0}], "unknown ph"),
    (["not an event"], "not an object"),
])
def test_validator_rejects_broken_traces(events, problem):
    found = validate_trace({"traceEvents": events})
    assert any(problem in p for p in found), found


def test_validator_rejects_bad_top_level_and_json():
    assert "not valid JSON" in validate_trace("{nope")[0]
    assert "traceEvents" in validate_trace({"events": []})[0]
    assert "neither" in validate_trace(3)[0]


def test_validator_catches_corrupted_sink_output(tmp_path):
    obj = _write(tmp_path)
    ev = obj["traceEvents"]
    # drop the end of one flow and stretch one state over its neighbour
    k = next(i for i, e in enumerate(ev) if e["ph"] == "f")
    del ev[k]
    x = next(e for e in ev if e["ph"] == "X" and e["pid"] == 1)
    x["dur"] = x["dur"] + 1.5
    found = validate_trace(obj)
    assert any("has no end" in p for p in found)
    assert any("without nesting" in p for p in found)
