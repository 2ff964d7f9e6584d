"""Parquet / CSV workload files: lossless round trips, pipit CSV mapping, bad input."""
from __future__ import annotations

import ast
import csv
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from conftest import examples

from ccmod.errors import CcmodInputError
from ccmod.workloads import detect_format, read_workload
from ccmod.workloads.base import OP_COMPUTE, OP_RECV, OP_SEND, Workload, WorkloadBuilder
from ccmod.workloads.tabular import COLUMNS, write_csv, write_parquet

FIELDS = ("rank_ptr", "op", "peer", "tag", "nbytes", "duration_s", "req", "line", "file_id")


def _identical(a: Workload, b: Workload, meta=True):
    assert a.nranks == b.nranks
    for k in FIELDS:
        x, y = getattr(a, k), getattr(b, k)
        assert x.dtype == y.dtype, k
        np.testing.assert_array_equal(x, y, err_msg=k)
    assert a.files == b.files
    if meta:  # the reader records the file's format; the original one is kept
        skip = ("format", "source_format")
        assert {k: v for k, v in a.meta.items() if k not in skip} == \
            {k: v for k, v in b.meta.items() if k not in skip}
        assert b.meta.get("source_format") == a.meta.get("format")


@st.composite
def workloads(draw):
    nranks = draw(st.integers(1, 5))
    counts = draw(st.lists(st.integers(0, 6), min_size=nranks, max_size=nranks))
    n = sum(counts)
    ints = lambda lo, hi: st.lists(st.integers(lo, hi), min_size=n, max_size=n)  # noqa: E731
    ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return Workload(
        nranks=nranks, rank_ptr=ptr,
        op=np.array(draw(ints(0, 7)), np.int8),
        peer=np.array(draw(ints(-1, nranks - 1)), np.int32),
        tag=np.array(draw(ints(-(1 << 31), (1 << 31) - 1)), np.int32),
        nbytes=np.array(draw(ints(-1, 1 << 62)), np.int64),
        duration_s=np.array(draw(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=n,
                                          max_size=n)), np.float64),
        req=np.array(draw(ints(-(1 << 40), 1 << 40)), np.int64),
        line=np.array(draw(ints(0, 1 << 40)), np.int64),
        file_id=np.array(draw(ints(0, 3)), np.int32),
        files=draw(st.lists(st.text(max_size=8), max_size=3)),
        meta={"format": "ti", "notes": draw(st.lists(st.text(max_size=10), max_size=2)),
              "compute_rate": 1e9})


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(w=workloads())
def test_parquet_and_csv_round_trips_are_lossless(tmp_path, w):
    p = write_parquet(w, tmp_path / "w.parquet")
    _identical(w, read_workload(p))
    _identical(w, read_workload(p, batch_rows=3))       # several row-group batches
    c = write_csv(w, tmp_path / "w.csv")
    _identical(w, read_workload(c))


def test_round_trip_of_real_ti_trace(tmp_path, real_dir):
    w = read_workload(real_dir / "simgrid/ti_traces_32_1")
    _identical(w, read_workload(write_parquet(w, tmp_path / "a.parquet")), meta=False)
    _identical(w, read_workload(write_csv(w, tmp_path / "a.csv")), meta=False)
    assert read_workload(tmp_path / "a.parquet").meta["action_counts"] == w.meta["action_counts"]
    assert detect_format(tmp_path / "a.parquet") == "parquet"
    assert detect_format(tmp_path / "a.csv") == "csv"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]   # atomic writes


def test_parquet_layout_columns_and_metadata(tmp_path, traces_dir):
    import pyarrow.parquet as pq
    w = read_workload(traces_dir / "ring16.ti")
    p = write_parquet(w, tmp_path / "r.parquet")
    schema = pq.read_schema(p)
    assert schema.names == [c for c, _ in COLUMNS]
    md = {k.decode(): v.decode() for k, v in schema.metadata.items()}
    assert md["ccmod.format_version"] == "1" and md["ccmod.nranks"] == "16"
    assert json.loads(md["ccmod.files"]) == w.files
    assert json.loads(md["ccmod.meta"])["format"] == "ti"


def test_ranks_without_records_survive(tmp_path):
    w = Workload(nranks=3, rank_ptr=np.array([0, 1, 1, 1]), op=np.array([OP_COMPUTE], np.int8),
                 peer=np.array([-1], np.int32), tag=np.zeros(1, np.int32),
                 nbytes=np.zeros(1, np.int64), duration_s=np.array([0.5]),
                 req=np.array([-1]), line=np.array([1]), file_id=np.zeros(1, np.int32))
    assert read_workload(write_parquet(w, tmp_path / "x.parquet")).nranks == 3
    assert read_workload(write_csv(w, tmp_path / "x.csv")).nranks == 3


def test_pipit_csv_matches_the_file(real_dir):
    path = real_dir / "pipit/ping-pong-csv.csv"
    w = read_workload(path)
    assert w.meta["csv_kind"] == "pipit" and w.nranks == 2
    rows = list(csv.DictReader(open(path)))
    sends = [ast.literal_eval(r["Attributes"]) for r in rows if r["Name"] == "MpiSend"]
    recvs = [ast.literal_eval(r["Attributes"]) for r in rows if r["Name"] == "MpiRecv"]
    assert sorted(w.nbytes[w.op == OP_SEND]) == sorted(a["msg_length"] for a in sends)
    assert sorted(w.nbytes[w.op == OP_RECV]) == sorted(a["msg_length"] for a in recvs)
    assert sorted(w.tag[w.op == OP_SEND]) == sorted(a["msg_tag"] for a in sends)
    # compute = gaps between consecutive MPI calls of each process (independent walk)
    gaps = 0.0
    for proc in ("0", "1"):
        ev = sorted(((float(r["Timestamp (ns)"]), i, r) for i, r in enumerate(rows)
                     if r["Process"] == proc), key=lambda x: (x[0], x[1]))
        last = None
        for t, _, r in ev:
            if r["Name"].startswith("MPI_"):
                if r["Event Type"] == "Enter" and last is not None:
                    gaps += (t - last) * 1e-9
                elif r["Event Type"] == "Leave":
                    last = t
    assert w.duration_s.sum() == pytest.approx(gaps, rel=1e-12)


PIPIT_HEAD = "Timestamp (ns),Event Type,Name,Thread,Process,Attributes\n"


def test_pipit_nonblocking_and_errors(tmp_path):
    p = tmp_path / "nb.csv"
    p.write_text(PIPIT_HEAD +
                 "1,Enter,MPI_Irecv,0,0,\n2,Instant,MpiIrecvRequest,0,0,\"{'request_id': 7}\"\n"
                 "3,Leave,MPI_Irecv,0,0,\n"
                 "1,Enter,MPI_Isend,0,1,\n2,Instant,MpiIsend,0,1,\"{'receiver': 0, 'msg_tag': 4,"
                 " 'msg_length': 100, 'request_id': 9}\"\n3,Leave,MPI_Isend,0,1,\n"
                 "10,Enter,MPI_Wait,0,0,\n11,Instant,MpiIrecv,0,0,\"{'sender': 1, 'msg_tag': 4, "
                 "'msg_length': 100, 'request_id': 7}\"\n12,Leave,MPI_Wait,0,0,\n"
                 "10,Enter,MPI_Wait,0,1,\n11,Instant,MpiIsendComplete,0,1,\"{'request_id': 9}\"\n"
                 "12,Leave,MPI_Wait,0,1,\n")
    w = read_workload(p)
    f = w.to_frame()
    assert list(f.op) == ["irecv", "compute", "wait", "isend", "compute", "wait"]
    assert list(f.peer[:1]) == [1] and list(f.nbytes[:1]) == [100] and list(f.tag[:1]) == [4]
    assert f.duration_s.sum() == pytest.approx(2 * 7e-9)
    bad = tmp_path / "coll.csv"
    bad.write_text(PIPIT_HEAD + "1,Enter,MPI_Allreduce,0,0,\n2,Leave,MPI_Allreduce,0,0,\n")
    with pytest.raises(CcmodInputError, match=r"coll.csv:2: collective MPI_Allreduce"):
        read_workload(bad)
    bad.write_text(PIPIT_HEAD + "x,Enter,MPI_Send,0,0,\n")
    with pytest.raises(CcmodInputError, match=r"coll.csv:2: bad timestamp"):
        read_workload(bad)


def test_bad_tabular_files(tmp_path):
    c = tmp_path / "bad.csv"
    c.write_text("# ccmod workload csv v1\n# {\"nranks\": 1}\n"
                 "rank,op,peer,tag,nbytes,duration_s,req,line,file_id\n"
                 "0,compute,-1,0,0,0.5,-1,1,0\n0,compute,-1,0,zz,0.5,-1,1,0\n")
    with pytest.raises(CcmodInputError, match=r"bad.csv:5: bad value 'zz' in column 'nbytes'"):
        read_workload(c)
    c.write_text("# ccmod workload csv v1\n# {}\nrank,op,peer,tag,nbytes,duration_s,req,line,"
                 "file_id\n1,compute,-1,0,0,0.5,-1,1,0\n0,sned,-1,0,0,0.5,-1,1,0\n")
    with pytest.raises(CcmodInputError, match="unknown op name"):
        read_workload(c)
    c.write_text("# ccmod workload csv v1\n# {}\nrank,op,peer,tag,nbytes,duration_s,req,line,"
                 "file_id\n1,compute,-1,0,0,0.5,-1,1,0\n0,compute,-1,0,0,0.5,-1,1,0\n")
    with pytest.raises(CcmodInputError, match="not sorted by rank"):
        read_workload(c)
    c.write_text("a,b\n1,2\n")
    with pytest.raises(CcmodInputError, match="cannot recognise"):
        read_workload(c)
    q = tmp_path / "bad.parquet"
    q.write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.raises(CcmodInputError, match="bad.parquet: cannot read Parquet"):
        read_workload(q, fmt="parquet")
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"rank": [0], "op": [0]}), tmp_path / "other.parquet")
    with pytest.raises(CcmodInputError, match="missing column"):
        read_workload(tmp_path / "other.parquet", fmt="parquet")


def test_parquet_is_read_in_batches_whatever_the_row_groups(tmp_path, monkeypatch):
    # one 1000-row row group, read 64 rows at a time: same workload as one batch, and the
    # reader never asks pyarrow for more rows at once than batch_rows
    import pyarrow.parquet as pq
    b = WorkloadBuilder(3)
    for i in range(500):
        b.send(i % 3, (i + 1) % 3, 8 * i, tag=i % 5)
        b.recv((i + 1) % 3, i % 3, 8 * i, tag=i % 5)
    w = b.build()
    p = write_parquet(w, tmp_path / "w.parquet", row_group_size=1000)
    seen = []
    real = pq.ParquetFile.iter_batches

    def spy(self, *a, **k):
        for batch in real(self, *a, **k):
            seen.append(batch.num_rows)
            yield batch
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    got = read_workload(p, batch_rows=64)
    assert max(seen) == 64 and sum(seen) == 1000
    _identical(w, got, meta=False)
    seen.clear()
    _identical(w, read_workload(p, compute_scale=2.0), meta=False)  # no compute records
    assert max(seen) <= 1 << 16


def test_parquet_of_other_column_types_and_offsets_reads_the_same(tmp_path):
    # a file written by another tool: wider/unsigned/float32 columns and batches that are
    # slices of larger arrays (non-zero offsets) read exactly as their values
    import pyarrow as pa
    import pyarrow.parquet as pq
    b = WorkloadBuilder(2)
    for i in range(300):
        b.send(0, 1, 8 * i + 1, tag=i % 7)
        b.recv(1, 0, 8 * i + 1, tag=i % 7)
        b.compute(0, 0.25 * i)
    w = b.build()
    p = write_parquet(w, tmp_path / "w.parquet")
    t = pq.read_table(p)
    types = {"rank": pa.int64(), "peer": pa.int64(), "tag": pa.int16(), "op": pa.uint8(),
             "nbytes": pa.uint64(), "duration_s": pa.float32(), "file_id": pa.uint16()}
    t2 = pa.table({f.name: (t.column(f.name).cast(types[f.name]) if f.name in types
                            else t.column(f.name)) for f in t.schema},
                  metadata=t.schema.metadata)
    sliced = pa.concat_tables([t2.slice(0, 101), t2.slice(101)])   # offsets inside chunks
    q = tmp_path / "other.parquet"
    pq.write_table(sliced, q, row_group_size=50)
    _identical(w, read_workload(q, batch_rows=37), meta=False)


def test_reading_parquet_does_not_import_pandas(tmp_path):
    # pyarrow's to_numpy imports pandas (~0.25 s of start-up); plain columns are read
    # without it
    import subprocess
    import sys
    b = WorkloadBuilder(2)
    b.send(0, 1, 8)
    b.recv(1, 0, 8)
    p = write_parquet(b.build(), tmp_path / "w.parquet")
    code = ("import sys; from ccmod.workloads import read_workload; "
            f"w = read_workload({str(p)!r}); assert w.nrecords == 2; "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_column_values_honour_the_arrays_offset():
    import pyarrow as pa
    from ccmod.workloads.tabular import _values
    for typ in (pa.int8(), pa.int32(), pa.int64(), pa.uint16(), pa.float32(), pa.float64()):
        arr = pa.array(np.arange(40) * 3, type=typ)
        part = arr.slice(7, 20)
        got = _values(pa, part)
        np.testing.assert_array_equal(got, np.arange(7, 27) * 3)
        assert got.dtype == np.dtype(typ.to_pandas_dtype())
