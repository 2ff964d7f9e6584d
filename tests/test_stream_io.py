"""Streaming input/output (issue 10): the Parquet record source, ``ccmod run --stream`` and
the streamed run directory, against the in-memory reader and run."""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import conftest
from conftest import run_cli
from ccmod.api import load_workload, run
from ccmod.engine import Engine
from ccmod.streaming import run_streamed
from ccmod.workloads.generators import generate
from ccmod.workloads.parquet_stream import ParquetRecordSource
from ccmod.workloads.tabular import write_parquet

ROOT = Path(__file__).resolve().parent.parent
TRACES = [ROOT / "traces" / n for n in ("pingpong.ti", "stencil16.ti", "alltoall8.ti",
                                          "simgrid-actions_with_isend.txt")]
TRACES += [ROOT / "tests" / "data" / "goal" / "binary_tree_32.goal"]
NET = "star:bandwidth=1e8,latency=1e-6"


def _workloads():
    for p in TRACES:
        yield p.name, load_workload(p)
    yield "halo2d", generate("halo2d:px=3,py=2,iterations=3", seed=3)
    yield "reqreply", generate("reqreply:nranks=6,requests=5", seed=3)


WORKLOADS = list(_workloads())


def test_writer_row_groups_hold_one_rank_each(tmp_path):
    w = load_workload(TRACES[1])
    p = write_parquet(w, tmp_path / "s.parquet", row_group_size=7)
    md = pq.ParquetFile(p).metadata
    sizes = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
    ranks = [md.row_group(i).column(0).statistics for i in range(md.num_row_groups)]
    assert max(sizes) == 7 and sum(sizes) == w.nrecords
    assert all(s.min == s.max for s in ranks)
    # every rank's records start a new group
    starts = np.cumsum([0] + sizes)
    assert set(w.rank_ptr[:-1][np.diff(w.rank_ptr) > 0]) <= set(starts)


@pytest.mark.parametrize("name,w", WORKLOADS, ids=[n for n, _ in WORKLOADS])
def test_source_reads_each_ranks_records_as_the_reader(tmp_path, name, w):
    p = write_parquet(w, tmp_path / "w.parquet", row_group_size=5)
    src = ParquetRecordSource(p, compute_scale=2.0)
    assert src.nranks == w.nranks and np.array_equal(src.rank_ptr, w.rank_ptr)
    rng = np.random.default_rng(0)
    for r in range(w.nranks):
        for reader in ("load", "scan"):
            g = int(w.rank_ptr[r])
            while g < w.rank_ptr[r + 1]:
                g1 = min(int(w.rank_ptr[r + 1]), g + int(rng.integers(1, 9)))
                got = src.read(r, g, g1, reader)
                for c, v in got.items():
                    want = np.asarray(getattr(w, c))[g:g1] * (2.0 if c == "duration_s" else 1)
                    assert np.array_equal(v, want), (name, r, c)
                g = g1
    sends = np.isin(w.op, [1, 3])
    rank = np.repeat(np.arange(w.nranks), np.diff(w.rank_ptr))
    assert np.array_equal(src.op_counts([1, 3]), np.bincount(rank[sends], minlength=w.nranks))
    if w.nrecords:
        g = w.nrecords - 1
        assert src.where(g)[1] == w.where(g)[1]


def _tables(d):
    return {n: pd.read_parquet(d / f"{n}.parquet")
            for n in ("messages", "rank_states", "ranks", "links", "resources")}


def _as_declared(d):
    """Every table of run directory ``d`` has the columns, types and dictionary encoding
    its declaration (ccmod.outputs.tables) says: a column written but not declared fails."""
    import pyarrow as pa
    from ccmod.outputs.tables import TABLES

    def kind(t):
        return "category" if pa.types.is_dictionary(t) else \
            "string" if pa.types.is_large_string(t) or pa.types.is_string(t) else str(t)
    files = sorted(d.glob("*.parquet"))
    assert {f.stem for f in files} <= set(TABLES)
    for f in files:
        pf = pq.ParquetFile(f)
        got = [(n, kind(t)) for n, t in zip(pf.schema_arrow.names, pf.schema_arrow.types)]
        assert got == [(c, t) for c, t, _ in TABLES[f.stem]], f.name
        md = pf.metadata.row_group(0)
        dict_encoded = {md.column(i).path_in_schema for i in range(md.num_columns)
                        if "RLE_DICTIONARY" in md.column(i).encodings}
        assert dict_encoded == {c for c, _, few in TABLES[f.stem] if few}, f.name


# stencil16, alltoall8 and the GOAL tree (0.5-1 s each here) with the slow tests only: the
# default run's time budget; the other workloads write the same tables (the GOAL tree
# streams in the default run in test_stream.py and test_stream_slots.py)
@pytest.mark.parametrize("name,w", [
    pytest.param(n, w, marks=pytest.mark.slow)
    if n in ("stencil16.ti", "alltoall8.ti", "binary_tree_32.goal")
    else pytest.param(n, w) for n, w in WORKLOADS], ids=[n for n, _ in WORKLOADS])
def test_streamed_run_writes_the_in_memory_tables(tmp_path, name, w):
    p = write_parquet(w, tmp_path / "w.parquet", row_group_size=4)
    for sharing, window in (("ccmod", 1), ("maxmin", 3)):
        mem = run(p, NET, sharing=sharing, sinks=["parquet"], out_dir=tmp_path / "mem")
        st = run_streamed(p, NET, sharing=sharing, window=window, out_dir=tmp_path / "st")
        assert st.makespan_s.hex() == mem.makespan_s.hex()
        a, b = _tables(tmp_path / "mem"), _tables(tmp_path / "st")
        # streamed messages come in the order they finish: each row is the in-memory one
        b["messages"] = b["messages"].sort_values("msg_id", kind="stable").reset_index(
            drop=True)
        # link_load is not streamed, so neither is the utilisation peak taken from it
        a["links"] = a["links"].drop(columns="utilisation_peak")
        b["links"] = b["links"].drop(columns="utilisation_peak")
        for k in a:
            pd.testing.assert_frame_equal(a[k], b[k], check_exact=True, obj=f"{name} {k}")
        assert not (tmp_path / "st" / "link_load.parquet").exists()
        _as_declared(tmp_path / "mem")
        _as_declared(tmp_path / "st")
        ja = json.loads((tmp_path / "mem" / "run.json").read_text())
        jb = json.loads((tmp_path / "st" / "run.json").read_text())
        for k in ("wall_s", "records_per_s", "rows", "options"):
            ja.pop(k), jb.pop(k)
        assert ja == jb
        assert st.summary()["messages"] == mem.summary()["messages"]
        assert not list((tmp_path / "st").glob(".*"))     # no temporary left


def test_cli_stream_json_equals_in_memory(tmp_path):
    p = write_parquet(load_workload(TRACES[1]), tmp_path / "s.parquet")
    a = run_cli("run", p, "--json")
    b = run_cli("run", p, "--stream", "--window", "2", "--json")
    assert a.returncode == 0 and b.returncode == 0, b.stderr
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    for j in (ja, jb):
        j.pop("wall_s"), j.pop("records_per_s")
    assert ja == jb


def test_streamed_bounds_equal_in_memory(tmp_path, monkeypatch):
    """--bounds under --stream: the best/avg/worst reruns give the in-memory run's
    makespans, bit for bit, and the trace is surveyed once (the reruns read the same
    source again, not a second survey per bound)."""
    w = _exchange_with_waits(12)
    p = write_parquet(w, tmp_path / "b.parquet", row_group_size=8)
    surveys = []
    real = ParquetRecordSource._group

    def count(self, i, cols, j=None):
        if tuple(cols) == ("op", "peer", "duration_s"):
            surveys.append(i)
        return real(self, i, cols, j)
    monkeypatch.setattr(ParquetRecordSource, "_group", count)
    runs = []
    real_run = Engine.run
    monkeypatch.setattr(Engine, "run", lambda self: runs.append(1) or real_run(self))
    for sharing in ("ccmod", "maxmin"):
        kw = dict(sharing=sharing, background=0.25, bounds=True)
        mem = run(p, NET, **kw)
        surveys.clear()
        runs.clear()
        st = run_streamed(p, NET, window=3, **kw)
        # one pass per distinct level: the main run (avg = worst = 0.25) and best (0)
        assert len(runs) == 2
        assert st.makespan_s.hex() == mem.makespan_s.hex()
        assert st.bounds == mem.bounds, sharing
        assert st.bounds["best"] < st.bounds["worst"]
        assert sorted(surveys) == sorted(set(surveys)) and surveys[0] == 0
    a = run_cli("run", p, "--background", "0.25", "--bounds", "--json")
    b = run_cli("run", p, "--stream", "--window", "5", "--background", "0.25", "--bounds",
                "--json")
    assert a.returncode == 0 and b.returncode == 0, b.stderr
    assert json.loads(a.stdout)["bounds"] == json.loads(b.stdout)["bounds"]


def _one_line(res, *needles):
    assert res.returncode == 2, res.stderr + res.stdout
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_inputs_that_cannot_be_streamed_fail_in_one_line(tmp_path):
    import pyarrow as pa
    ti = TRACES[1]
    _one_line(run_cli("run", ti, "--stream"), "cannot stream", "ccmod convert")
    # the older layout: one row group over every rank
    w = load_workload(ti)
    good = write_parquet(w, tmp_path / "g.parquet")
    old = tmp_path / "old.parquet"
    t = pq.read_table(good)
    pq.write_table(t.replace_schema_metadata(t.schema.metadata), old, row_group_size=1 << 20)
    assert run_cli("run", old, "--json").returncode == 0      # still read in memory
    _one_line(run_cli("run", old, "--stream"), "row group 0 holds ranks", "ccmod convert")
    # and `ccmod convert` rewrites it for streaming
    assert run_cli("convert", old, tmp_path / "new.parquet").returncode == 0
    assert run_cli("run", tmp_path / "new.parquet", "--stream").returncode == 0
    _one_line(run_cli("run", good, "--stream", "--report", tmp_path / "r"), "--report")
    _one_line(run_cli("run", good, "--stream", "--debug", "--out", tmp_path / "o"), "--debug")
    _one_line(run_cli("run", good, "--window", "4"), "--window needs --stream")
    _one_line(run_cli("run", good, "--stream", "--window", "0"), "at least 1")
    # capacity=ratio was refused here: it streams now, with the in-memory run's results
    a = run_cli("run", good, "--sharing", "ccmod:capacity=ratio", "--json")
    b = run_cli("run", good, "--stream", "--window", "3", "--sharing", "ccmod:capacity=ratio",
                "--json")
    assert a.returncode == 0 and b.returncode == 0, b.stderr
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    for j in (ja, jb):
        j.pop("wall_s"), j.pop("records_per_s")
    assert ja == jb
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), bad)
    _one_line(run_cli("run", bad, "--stream"), "not a ccmod workload")


def _exchange_with_waits(iterations=30, nranks=4):
    """isend/irecv + wait/waitall and blocking ring messages (requests outlive windows)."""
    from ccmod.workloads.base import WorkloadBuilder
    from test_stream_slots import blocking_ring
    b = WorkloadBuilder(nranks)
    for it in range(iterations):
        for r in range(nranks):
            b.compute(r, 1e-6 * (1 + (r + it) % 3))
            b.isend(r, (r + 1) % nranks, 20_000 + 100 * it, 0, tag=1)
            b.irecv(r, (r - 1) % nranks, 1, tag=1)
            if it % 2:
                b.wait(r, 1)
                b.wait(r, 0)
            else:
                b.waitall(r)
        blocking_ring(b, nranks)
    return b.build()


NEW_PATHS = [("FT.S.4 (collectives)", ROOT / "tests" / "data" / "smpi-npb" / "FT.S.4"),
             ("waits", None)]


# max-min here only with the slow tests (the default run's time budget; CI runs them):
# the other tests of this file stream under both rules.
@pytest.mark.parametrize("sharing", ["ccmod", pytest.param("maxmin", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name,trace", NEW_PATHS, ids=[n for n, _ in NEW_PATHS])
def test_streamed_source_paths_equal_in_memory(tmp_path, name, trace, sharing, monkeypatch):
    """Read from Parquet rank by rank, matched and costed per batch, rows streamed: the
    same tables as the in-memory run for window sizes from 1 record to more than a rank
    holds, under each sharing rule; with and without --out. Small windows' batches take
    their costs from the memo of earlier batches' (stream_inputs.BatchInputs._small)."""
    from ccmod.stream_inputs import BatchInputs
    memo_hits = []
    real_small = BatchInputs._small
    monkeypatch.setattr(BatchInputs, "_small", lambda self, *a: memo_hits.append(
        real_small(self, *a)) or memo_hits[-1])
    # 12 rounds (78 records per rank) outgrow every window but the last, as 30 did
    w = _exchange_with_waits(12) if trace is None else load_workload(trace)
    p = write_parquet(w, tmp_path / "w.parquet", row_group_size=5)
    mem = run(p, NET, sharing=sharing, sinks=["parquet"], out_dir=tmp_path / "mem")
    a = _tables(tmp_path / "mem")
    ja = mem.summary()
    for k in ("wall_s", "records_per_s"):
        ja.pop(k)
    # window 2 with the slow tests (CI): a rank's records outgrow windows 1 and 7 as they do 2
    for window in (1, 2, 7, 4096) if conftest.RUN_SLOW else (1, 7, 4096):
        out = tmp_path / f"st{window}"
        st = run_streamed(p, NET, sharing=sharing, window=window, out_dir=out)
        b = _tables(out)
        b["messages"] = b["messages"].sort_values("msg_id").reset_index(drop=True)
        for k in a:
            x, y = a[k], b[k]
            if k == "links":
                x, y = (d.drop(columns="utilisation_peak") for d in (x, y))
            pd.testing.assert_frame_equal(x, y, check_exact=True,
                                          obj=f"{name} {sharing} {window} {k}")
        # without --out: at every window with the slow tests (CI), at the extreme ones (a
        # record at a time, the whole rank at once) in the default run
        quiet = [run_streamed(p, NET, sharing=sharing, window=window)] \
            if conftest.RUN_SLOW or window in (1, 4096) else []
        for r in (st, *quiet):
            jb = r.summary()
            for k in ("wall_s", "records_per_s"):
                jb.pop(k)
            assert jb == ja, (name, sharing, window)
    assert any(h is not None for h in memo_hits)


def test_stream_keeps_no_per_record_or_per_message_arrays(tmp_path):
    """What a streamed run holds is sized by the windows, the ranks and the resources:
    the kernel's slots stay bounded while the trace grows 8x (200 rounds: 1600 messages
    against at most 128 slots)."""
    import ccmod.engine
    held = {}
    real = ccmod.engine.Engine.run

    def keep(self):
        held["eng"] = self
        return real(self)
    for iters in (25, 200):
        w = _exchange_with_waits(iters)
        p = write_parquet(w, tmp_path / f"w{iters}.parquet", row_group_size=64)
        ccmod.engine.Engine.run = keep
        try:
            r = run_streamed(p, NET, window=8)
        finally:
            ccmod.engine.Engine.run = real
        eng = held["eng"]
        assert eng.m is None and eng.stream is not None
        assert r.streamed["messages"] == 2 * 4 * iters
        assert eng.slots.S <= 128 and eng.slots.peak <= 4 * 8 * 2
        big = [k for k, v in vars(eng.feed.matcher).items()
               if isinstance(v, np.ndarray) and v.size > 4 * 4096 + 64]
        assert not big, big


def test_streamed_bad_input_is_one_line(tmp_path):
    from ccmod.workloads.base import WorkloadBuilder
    # an unmatched send found only at the end of the stream
    b = WorkloadBuilder(2)
    for i in range(20):
        b.send(0, 1, 8, tag=3)
        b.recv(1, 0, tag=3)
    b.send(0, 1, 8, tag=3)
    b.compute(1, 1e-6)
    p = write_parquet(b.build(), tmp_path / "u.parquet", row_group_size=4)
    _one_line(run_cli("run", p, "--stream", "--window", "2"), "unmatched send",
              "rank 0 sends to rank 1")
    # an unmatched receive, and a wait on a request never posted
    b = WorkloadBuilder(2)
    b.send(0, 1, 8, tag=1)
    b.recv(1, 0, tag=2)
    p = write_parquet(b.build(), tmp_path / "r.parquet")
    _one_line(run_cli("run", p, "--stream"), "unmatched recv")
    b = WorkloadBuilder(2)
    b.compute(0, 1e-6)
    b.wait(0, 7)
    p = write_parquet(b.build(), tmp_path / "w.parquet")
    _one_line(run_cli("run", p, "--stream", "--window", "1"), "waits on request 7")
    # a corrupt file: data pages overwritten (the footer still reads), then truncated
    good = write_parquet(load_workload(TRACES[1]), tmp_path / "g.parquet", row_group_size=16)
    raw = bytearray(good.read_bytes())
    bad = tmp_path / "corrupt.parquet"
    raw[100:len(raw) // 2] = b"\xff" * (len(raw) // 2 - 100)
    bad.write_bytes(bytes(raw))
    res = run_cli("run", bad, "--stream")
    _one_line(res)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good.read_bytes()[: len(raw) // 2])
    _one_line(run_cli("run", cut, "--stream"), "cannot stream")
