"""SimGrid TI reader: syntaxes, layouts, real traces, errors, fuzzing."""
from __future__ import annotations

import collections
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from conftest import examples

from ccmod.errors import CcmodInputError
from ccmod.workloads import detect_format, read_workload
from ccmod.workloads.base import (OP_BARRIER, OP_COMPUTE, OP_IRECV, OP_ISEND, OP_RECV, OP_SEND,
                            OP_WAIT, OP_WAITALL, RECV_OPS, SEND_OPS)

ARRAYS = ("rank_ptr", "op", "peer", "tag", "nbytes", "duration_s", "req")


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def _read(tmp_path, text, name="t.ti", **kw):
    return read_workload(_write(tmp_path, name, text), **kw)


def _same(a, b):
    assert a.nranks == b.nranks
    for k in ARRAYS:
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)


def _matched(w):
    """Every send has one recv on its (src, dst, tag) channel with the same size."""
    rank = np.repeat(np.arange(w.nranks), np.diff(w.rank_ptr))
    chans = collections.defaultdict(lambda: ([], []))
    for i in np.flatnonzero(np.isin(w.op, SEND_OPS)):
        chans[(rank[i], w.peer[i], w.tag[i])][0].append(int(w.nbytes[i]))
    for i in np.flatnonzero(np.isin(w.op, RECV_OPS)):
        chans[(w.peer[i], rank[i], w.tag[i])][1].append(int(w.nbytes[i]))
    for s, r in chans.values():
        assert len(s) == len(r)
        assert all(b < 0 or a == b for a, b in zip(s, r))
    return sum(sum(s) for s, _ in chans.values())


# ------------------------------------------------------------------ point-to-point
def test_current_syntax_p2p(tmp_path):
    w = _read(tmp_path, "0 init\n1 init\n"
              "0 send 1 7 1000\n1 recv 0 7 1000\n"
              "0 isend 1 3 1e3\n0 irecv 1 4 10\n1 irecv 0 3 1000\n1 isend 0 4 10\n"
              "0 wait 0 1 3\n0 wait 1 0 4\n1 wait 0 1 3\n1 wait 1 0 4\n"
              "0 compute 2e9\n1 sleep 0.5\n0 finalize\n1 finalize\n")
    assert w.nranks == 2
    r0 = slice(w.rank_ptr[0], w.rank_ptr[1])
    assert list(w.op[r0]) == [OP_SEND, OP_ISEND, OP_IRECV, OP_WAIT, OP_WAIT, OP_COMPUTE]
    assert list(w.peer[r0][:3]) == [1, 1, 1]
    assert list(w.tag[r0][:3]) == [7, 3, 4]
    assert list(w.nbytes[r0][:3]) == [1000, 1000, 10]
    assert list(w.req[r0]) == [-1, 0, 1, 0, 1, -1]
    assert w.duration_s[r0][-1] == pytest.approx(2.0)          # 2e9 flops at 1e9 flop/s
    r1 = slice(w.rank_ptr[1], w.rank_ptr[2])
    assert list(w.op[r1]) == [OP_RECV, OP_IRECV, OP_ISEND, OP_WAIT, OP_WAIT, OP_COMPUTE]
    assert w.duration_s[r1][-1] == pytest.approx(0.5)          # sleep is seconds
    assert list(w.line[r0]) == [3, 5, 6, 9, 10, 13]
    assert _matched(w) == 2010


def test_old_syntax_and_lifo_wait(tmp_path):
    # old SimGrid: no tags, Isend/Irecv, 'wait' completes the latest irecv, waitAll
    w = _read(tmp_path, "0 send 1 100\n1 recv 0 100\n1 recv 0\n0 send 1 5\n"
              "1 Irecv 0 8\n1 Irecv 0 9\n1 wait\n1 wait\n0 Isend 1 8\n0 Isend 1 9\n"
              "0 waitAll\n")
    r1 = slice(w.rank_ptr[1], w.rank_ptr[2])
    assert list(w.op[r1]) == [OP_RECV, OP_RECV, OP_IRECV, OP_IRECV, OP_WAIT, OP_WAIT]
    assert list(w.nbytes[r1][:4]) == [100, -1, 8, 9]            # recv without size: unknown
    assert list(w.req[r1]) == [-1, -1, 0, 1, 1, 0]              # LIFO
    assert set(w.tag) == {0}
    assert w.op[w.rank_ptr[1] - 1] == OP_WAITALL
    assert w.meta["action_counts"]["Isend"] == 2


def test_three_argument_send_disambiguation(tmp_path):
    w = _read(tmp_path, "0 send 1 5 100\n1 recv 0 5 100\n")     # current: tag 5
    assert list(w.tag) == [5, 5] and list(w.nbytes) == [100, 100]
    w = _read(tmp_path, "0 send 1 1e2 2\n1 recv 0 1e2 2\n")     # tag not integer: old+dtype
    assert list(w.tag) == [0, 0] and list(w.nbytes) == [100, 100]   # dtype 2 = char
    w = _read(tmp_path, "0 send 1 100 1\n1 recv 0 100 1\n", syntax="untagged")
    assert list(w.nbytes) == [400, 400]                          # dtype 1 = int
    w = _read(tmp_path, "0 Isend 1 100 1\n0 send 1 100 1\n1 recv 0 100 1\n1 recv 0 100 1\n"
              "0 waitAll\n")                                    # old names: file is untagged
    assert list(w.nbytes[w.op == OP_SEND]) == [400]


def test_init_argument_sets_double_elements(tmp_path):
    w = _read(tmp_path, "0 init 1\n1 init 1\n0 send 1 0 10\n1 recv 0 0 10\n"
              "0 send 1 0 10 2\n1 recv 0 0 10 2\n")
    assert list(w.nbytes) == [80, 10, 80, 10]
    w = _read(tmp_path, "0 init 1\n1 init 1\n0 send 1 0 10\n1 recv 0 0 10\n", elem_bytes=4)
    assert list(w.nbytes) == [40, 40]


def test_wait_matching_fifo_test_and_ignored_wait(tmp_path):
    w = _read(tmp_path, "0 isend 1 0 1\n0 isend 1 0 2\n0 test 0 1 0\n0 wait 0 1 0\n"
              "0 wait 0 1 0\n0 wait 0 1 0\n"
              "1 irecv 0 0 1\n1 irecv 0 0 2\n1 waitall\n")
    r0 = slice(w.rank_ptr[0], w.rank_ptr[1])
    assert list(w.req[r0]) == [0, 1, 0, 1]          # FIFO on one key; 3rd wait ignored
    assert w.meta["ignored_waits"] == 1
    assert w.meta["action_counts"]["test"] == 1


def test_outstanding_requests_get_implicit_waitall(tmp_path):
    w = _read(tmp_path, "0 isend 1 0 8\n1 recv 0 0 8\n")
    assert w.op[-1 + w.rank_ptr[1]] == OP_WAITALL
    assert w.meta["implicit_waitall"] == 1


def test_compute_rate_and_scale(tmp_path):
    w = _read(tmp_path, "0 compute 3e6\n0 sleep 2\n", compute_rate=1e6, compute_scale=0.5)
    assert list(w.duration_s) == pytest.approx([1.5, 1.0])


def test_comments_blank_lines_ignored_actions(tmp_path):
    w = _read(tmp_path, "# header\n\n0 init 1   # trailing\n0 comm_size 1\n0 comm_split\n"
              "0 comm_dup\n0 compute 1\n0 finalize\n")
    assert w.nrecords == 1
    assert w.meta["action_counts"] == {"comm_dup": 1, "comm_size": 1, "comm_split": 1,
                                       "compute": 1, "finalize": 1, "init": 1}


def test_barrier_native_and_decomposed(tmp_path):
    text = "".join(f"{r} barrier\n" for r in range(4))
    w = _read(tmp_path, text)
    assert list(w.op) == [OP_BARRIER] * 4
    w = _read(tmp_path, text, collectives={"barrier": "dissemination"})
    assert OP_BARRIER not in w.op
    assert _matched(w) == 0 and np.isin(w.op, SEND_OPS).sum() == 4 * 2   # log2(4) rounds


# ------------------------------------------------------------------ collectives
COLL = {
    "bcast 100": (3, 100 * 2),                        # linear: root sends to 2 ranks
    "reduce 100 5e8": (3, 100 * 2),
    "allreduce 100 5e8": None,
    "alltoall 10 10": (3, 10 * 6),
    "alltoallv 30 10 10 10 30 10 10 10": (3, 10 * 6),
    "gather 7 7 0": (3, 7 * 2),
    "allgather 7 7": None,
    "gatherv 7 7 7 7 0": (3, 7 * 2),
    "allgatherv 7 7 7 7": None,
    "scatter 7 7 0": (3, 7 * 2),
    "scatterv 7 7 7 7 0": (3, 7 * 2),
    "reducescatter 4 4 4 1e6": None,
}


@pytest.mark.parametrize("line", sorted(COLL))
def test_collective_actions(tmp_path, line):
    name = line.split()[0]
    kind = {"reducescatter": "reduce_scatter"}.get(name, name)
    alg = {"allreduce": None, "allgather": None, "allgatherv": None,
           "reduce_scatter": None}.get(kind, "linear")
    coll = {kind: alg} if alg else None
    w = _read(tmp_path, "".join(f"{r} {line}\n" for r in range(3)), collectives=coll)
    total = _matched(w)
    if COLL[line]:
        assert total == COLL[line][1]
    # reductions run their comp flops after the data (SimGrid): one compute per rank
    comp = float(line.split()[-1]) if name in ("reduce", "allreduce", "reducescatter") else 0
    assert np.count_nonzero(w.op == OP_COMPUTE) == (3 if comp else 0)
    assert w.duration_s.sum() == pytest.approx(3 * comp / 1e9)


def test_camelcase_aliases_equal_current_names(tmp_path):
    old = ("allReduce 10 1e3", "allToAll 10 10", "allToAllV 30 10 10 10 30 10 10 10",
           "allGatherV 5 5 5 5", "reduceScatter 4 4 4 10", "gatherV 5 5 5 5 0",
           "scatterV 5 5 5 5 0")
    for o in old:
        new = o.split()[0].lower() + " " + o.split(None, 1)[1]
        a = _read(tmp_path, "".join(f"{r} {o}\n" for r in range(3)))
        b = _read(tmp_path, "".join(f"{r} {new}\n" for r in range(3)))
        _same(a, b)


def test_bcast_root_and_dtype(tmp_path):
    w = _read(tmp_path, "".join(f"{r} bcast 10 2 3\n" for r in range(3)),
              collectives={"bcast": "linear"})
    sends = np.flatnonzero(np.isin(w.op, SEND_OPS))
    assert set(np.repeat(np.arange(3), np.diff(w.rank_ptr))[sends]) == {2}   # root 2
    assert set(w.nbytes[sends]) == {20}                                       # short = 2 B


# ------------------------------------------------------------------ layouts
def _split_per_rank(tmp_path, text, rel=True):
    per = collections.defaultdict(list)
    for line in text.splitlines():
        if line.split():
            per[int(line.split()[0])].append(line)
    d = tmp_path / "ranks"
    d.mkdir()
    names = []
    for r in sorted(per):
        (d / f"rank{r}.txt").write_text("\n".join(per[r]))  # no final newline, like SMPI
        names.append(f"ranks/rank{r}.txt")
    desc = tmp_path / "desc.txt"
    desc.write_text("\n".join(names) + "\n")
    return desc, d


def test_one_file_description_and_folder_layouts_agree(tmp_path, real_dir):
    text = (real_dir / "simgrid/handwritten-replay-examples/actions_with_isend.txt").read_text()
    one = _read(tmp_path, text)
    desc, folder = _split_per_rank(tmp_path, text)
    _same(one, read_workload(desc))
    _same(one, read_workload(folder))
    assert read_workload(desc).meta["layout"] == "description"
    assert detect_format(desc) == detect_format(folder) == "ti"


@pytest.mark.slow      # ~0.7 s here on the 32-rank ../shared trace: CI runs it
def test_real_32_rank_trace_concatenated_equals_description(tmp_path, real_dir):
    d = real_dir / "simgrid/ti_traces_32_1"
    desc = read_workload(d / "smpi_replay.txt")   # paths relative to the parent folder
    one = tmp_path / "all.ti"
    one.write_text("".join((d / f"ti_trace{r}.txt").read_text() + "\n" for r in range(32)))
    _same(desc, read_workload(one))
    _same(desc, read_workload(d))


def _file_counts(files):
    """Independent count of the action names (awk '{print $2}' | sort | uniq -c)."""
    c = collections.Counter()
    flops = 0.0
    for f in files:
        for line in f.read_text().splitlines():
            t = line.split()
            if len(t) < 2:
                continue
            c[t[1]] += 1
            if t[1] == "compute":
                flops += float(t[2])
            elif t[1] in ("allreduce", "allReduce", "reduce"):
                flops += float(t[3])
                c["_comp"] += float(t[3]) > 0
            elif t[1] in ("reducescatter", "reduceScatter"):
                flops += float(t[2 + 32])
                c["_comp"] += float(t[2 + 32]) > 0
    return c, flops


@pytest.mark.parametrize("folder", ["ti_traces_32_1",
                                    pytest.param("ti_traces_32_1_full_2014",
                                                 marks=pytest.mark.slow)])
def test_real_traces_counts_match_files(real_dir, folder):
    d = real_dir / "simgrid" / folder
    files = sorted(d.glob("ti_trace*.txt"))
    counts, flops = _file_counts(files)
    w = read_workload(d)
    assert w.nranks == len(files) == 32
    got = w.meta["action_counts"]
    assert got == {k: v for k, v in counts.items() if not k.startswith("_")}
    assert np.count_nonzero(w.op == OP_BARRIER) == counts["barrier"]
    assert np.count_nonzero(w.op == OP_COMPUTE) == counts["compute"] + counts["_comp"]
    assert w.duration_s.sum() == pytest.approx(flops / 1e9, rel=1e-9)
    _matched(w)


@pytest.mark.slow      # ~0.8 s here on the 32-rank ../shared trace: CI runs it
def test_real_replay_multiple_description(real_dir):
    d = real_dir / "simgrid/ti_traces_32_1"
    w = read_workload(d / "description_file")
    one = read_workload(d / "smpi_replay.txt", collectives={"barrier": "dissemination"})
    assert w.nranks == 64
    assert w.nrecords == 2 * one.nrecords + 32               # + the delay computes
    assert w.duration_s.sum() == pytest.approx(2 * one.duration_s.sum() + 32 * 125.0)
    _matched(w)


def test_handwritten_pair_via_description(tmp_path, real_dir, monkeypatch):
    # the listed files lie outside the description's folder: allowed explicitly (issue 14)
    monkeypatch.setenv("CCMOD_ALLOW_OUTSIDE_PATHS", "1")
    src = real_dir / "simgrid/handwritten-replay-examples"
    desc = tmp_path / "d.txt"
    desc.write_text(f"{src / 'actions0.txt'}\n{src / 'actions1.txt'}\n")
    w = read_workload(desc)
    assert w.nranks == 2
    assert _matched(w) == 3_000_000   # 0->1 twice, 1->0 once


# ------------------------------------------------------------------ errors
BAD = [
    ("0 sned 1 0 5\n", 1, "unknown action 'sned'", "did you mean 'send'"),
    ("0 compute 1\n0 compute x\n", 2, "bad number 'x'", "usage"),
    ("0 compute -5\n", 1, "bad number '-5'", None),
    ("0 compute nan\n", 1, "bad number 'nan'", None),
    ("0 send 1\n1 recv 0\n", 1, "missing argument for 'send'", "usage"),
    ("0 wait 0 1 0\n", 1, "unmatched wait", None),
    ("0 wait\n", 1, "no outstanding irecv", None),
    ("0 compute 1\n2 compute 1\n", 2, "without gaps", None),
    ("0 send 5 0 1\n", 1, "peer rank 5 outside", None),
    ("x compute 1\n", 1, "bad rank 'x'", None),
    ("0\n", 1, "missing action", None),
    ("0 finalize1 init 1\n", 1, "unknown action 'finalize1'", "two lines joined"),
    ("0 send 1 0 5 99\n1 recv 0 0 5\n", 1, "unknown datatype id '99'", None),
    ("0 bcast 1 7\n1 bcast 1 7\n", 1, "root 7 outside", None),
    ("0 alltoallv 3 1 1\n1 alltoallv 3 1 1\n", 1, "missing argument for 'alltoallv'", None),
    ("# only a comment\n", None, "no action lines", None),
]


@pytest.mark.parametrize("text,line,what,hint", BAD)
def test_bad_input_names_file_and_line(tmp_path, text, line, what, hint):
    p = _write(tmp_path, "bad.ti", text)
    with pytest.raises(CcmodInputError) as ei:
        read_workload(p, fmt="ti")
    msg = str(ei.value)
    assert what in msg
    assert "\n" not in msg
    if line is not None:
        assert msg.startswith(f"{p}:{line}: ")
    if hint:
        assert hint in msg


def test_rank_outside_description(tmp_path):
    _write(tmp_path, "r0.txt", "0 compute 1\n")
    _write(tmp_path, "r1.txt", "3 compute 1\n")
    desc = _write(tmp_path, "d.txt", "r0.txt\nr1.txt\n")
    with pytest.raises(CcmodInputError, match=r"r1.txt:1: rank 3 outside 0..1"):
        read_workload(desc)
    desc = _write(tmp_path, "d2.txt", "r0.txt\nmissing.txt\n")
    with pytest.raises(CcmodInputError, match=r"d2.txt:2: listed trace file 'missing.txt'"):
        read_workload(desc)


def test_missing_binary_and_empty_folder(tmp_path):
    with pytest.raises(CcmodInputError, match="no such file"):
        read_workload(tmp_path / "nope.ti")
    b = tmp_path / "bin.ti"
    b.write_bytes(b"\x00\x01\x02garbage")
    with pytest.raises(CcmodInputError, match="not a text file"):
        read_workload(b, fmt="ti")
    # named .ti, so auto-detection hands it to the TI reader, which says what is wrong
    with pytest.raises(CcmodInputError, match="not a text file"):
        read_workload(b)
    junk = tmp_path / "junk.bin2"
    junk.write_bytes(b"\x00\x01\x02garbage")
    with pytest.raises(CcmodInputError, match="cannot recognise"):
        read_workload(junk)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CcmodInputError, match="cannot recognise.*valid formats: .*ti"):
        read_workload(tmp_path / "empty")
    with pytest.raises(CcmodInputError, match="unknown trace format 'nope'"):
        read_workload(b, fmt="nope")
    with pytest.raises(CcmodInputError, match="unknown option"):
        read_workload(_write(tmp_path, "ok.ti", "0 compute 1\n"), fmt="ti", bogus=1)


_TOKENS = st.sampled_from(["0", "1", "2", "-1", "1e3", "x", "nan", "inf", "3.5", "99999999999",
                           "send", "recv", "isend", "irecv", "wait", "waitall", "compute",
                           "bcast", "alltoallv", "reduce", "test", "init", "#", "Isend",
                           "allReduce", "gatherv", "scatterv", "barrier", "sleep", "\t"])


@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_TOKENS, min_size=0, max_size=7).map(" ".join), max_size=12))
def test_garbage_lines_only_raise_input_errors(tmp_path, lines):
    p = tmp_path / "fuzz.ti"
    p.write_text("\n".join(lines))
    try:
        w = read_workload(p, fmt="ti")
    except CcmodInputError as exc:
        assert "\n" not in str(exc)
        return
    assert w.nranks >= 1
    assert (w.peer < w.nranks).all()


def test_parse_speed_is_reasonable(tmp_path):
    n = 64
    lines = []
    for _ in range(200):
        for r in range(n):
            lines.append(f"{r} compute 1e6\n{r} isend {(r + 1) % n} 0 8192\n"
                         f"{r} irecv {(r - 1) % n} 0 8192\n{r} wait {r} {(r + 1) % n} 0\n"
                         f"{r} wait {(r - 1) % n} {r} 0\n")
    w = _read(tmp_path, "".join(lines))
    assert w.nrecords == 200 * n * 5
    assert re.match(r"\d", str(w.nrecords))


def test_replay_multiple_errors_and_reader_options(tmp_path):
    _write(tmp_path, "t.ti", "0 compute 1e9\n1 compute 1e9\n")
    multi = _write(tmp_path, "multi.txt", "a t.ti 2 1e9\nb t.ti 2 0\n")
    w = read_workload(multi)
    assert w.nranks == 4 and w.duration_s.sum() == pytest.approx(4 * 1.0 + 2 * 1.0)
    _write(tmp_path, "m1.txt", "1 m2.txt 1 0\n")
    _write(tmp_path, "m2.txt", "1 m1.txt 1 0\n")
    with pytest.raises(CcmodInputError, match="m1.txt:1: nested replay_multiple"):
        read_workload(tmp_path / "m1.txt", fmt="ti")
    bad = _write(tmp_path, "bad.txt", "a t.ti 3 0\n")
    with pytest.raises(CcmodInputError, match="bad.txt:1: instance 'a' declares 3 ranks"):
        read_workload(bad, fmt="ti")
    with pytest.raises(CcmodInputError, match="bad syntax 'weird'"):
        read_workload(tmp_path / "t.ti", syntax="weird")
    with pytest.raises(CcmodInputError, match="elem_bytes"):
        read_workload(tmp_path / "t.ti", elem_bytes=0)
    with pytest.raises(CcmodInputError, match="compute rate"):
        read_workload(tmp_path / "t.ti", compute_rate=0)


def test_builder_joins_adjacent_chunk_views_without_copying():
    # the TI scan hands the builder consecutive slices of one set of columns: they are
    # joined as a view; anything else (lists, other arrays, gaps) is copied as before
    from ccmod.workloads.base import WorkloadBuilder, _join
    base = np.arange(100, dtype=np.int64)
    parts = [base[0:10], base[10:10], base[10:35], base[35:60]]
    got = _join(parts)
    assert np.shares_memory(got, base) and got.tolist() == list(range(60))
    other = np.arange(5, dtype=np.int64)
    for ps in ([base[0:10], base[11:20]], [base[0:10], other],
               [base[0:10], base[10:20].astype(np.int32)],
               [base[10:20], base[0:10]]):
        got = _join(ps)
        assert got.tolist() == np.concatenate(ps).tolist()
        assert not np.shares_memory(got, base)
    cols = {k: np.arange(40).astype(dt) for k, dt in (
        ("rank", np.int32), ("op", np.int8), ("peer", np.int32), ("tag", np.int32),
        ("nbytes", np.int64), ("duration_s", np.float64), ("req", np.int64),
        ("line", np.int64), ("file_id", np.int32))}
    cols["rank"][:] = 0
    cols["op"][:] = 0
    cols["line"] += 1
    b = WorkloadBuilder(1)
    for lo, hi in ((0, 15), (15, 40)):
        b.add_chunk(b.take_lists(), {k: a[lo:hi] for k, a in cols.items()})
    w = b.build()
    assert w.nrecords == 40 and w.duration_s.tolist() == list(map(float, range(40)))
    assert np.shares_memory(w.duration_s, cols["duration_s"])
    w.duration_s[0] = 7.0                   # a column of the Workload stays writeable
