"""What a whole-program run stops holding to bound its peak memory (issue 10), and that
results and error messages do not change for it."""
from pathlib import Path

import numpy as np
import pytest

from ccmod.api import load_workload, run, run_view
from ccmod.errors import DeadlockError

TRACES = Path(__file__).resolve().parent.parent / "traces"
STAR = "star:bandwidth=1e8,latency=1e-6"


@pytest.mark.parametrize("name, waits", [("pingpong.ti", False),
                                         ("ring16.ti", True)])
def test_run_view_drops_matching_columns_and_leaves_the_caller_s(name, waits):
    w = load_workload(TRACES / name)
    cols = {c: getattr(w, c) for c in ("peer", "tag", "nbytes", "req")}
    v = run_view(w)
    assert v.peer is None and v.tag is None and v.nbytes is None
    # waits are mapped to requests when an engine is made: req stays for them only
    assert (v.req is w.req) if waits else (v.req is None)
    assert v.op is w.op and v.duration_s is w.duration_s and v.nrecords == w.nrecords
    # error messages name the same file and line from the narrower columns
    assert v.line.dtype == np.int32 and v.line.base is None
    assert all(v.where(i) == w.where(i) for i in range(w.nrecords))
    assert all(getattr(w, c) is a for c, a in cols.items())     # the caller's is intact


@pytest.mark.parametrize("name", ["pingpong.ti", "ring16.ti"])
def test_run_from_a_file_equals_run_of_the_workload(name):
    # from a path the run holds only its view; from a Workload object nothing is dropped
    a = run(TRACES / name, STAR, record=False)
    b = run(load_workload(TRACES / name), STAR, record=False)
    assert a.makespan_s == b.makespan_s
    for c in ("t_start_s", "t_end_s", "src", "dst", "tag", "nbytes"):
        x, y = a.column("messages", c), b.column("messages", c)
        assert x.dtype == y.dtype and np.array_equal(x, y)


def test_deadlock_of_a_file_still_names_its_line(tmp_path):
    p = tmp_path / "dl.ti"
    p.write_text("0 recv 1 10\n1 recv 0 10\n0 send 1 10\n1 send 0 10\n")
    with pytest.raises(DeadlockError) as ei:
        run(p, STAR, record=False)
    assert f"{p}:1" in str(ei.value) and f"{p}:2" in str(ei.value)


def test_program_is_read_narrow_and_refuses_ids_that_do_not_fit():
    from ccmod.kernel.state import whole_program
    one = np.zeros(1, np.int64)
    P = whole_program(1, [0, 2], np.array([1, 2]), np.zeros(2), np.array([0, 2**31 - 1]),
                      one, one, one, one, one)
    assert P.op.dtype == np.int8 and P.rec_msg.dtype == np.int32
    assert P.rec_msg[1] == 2**31 - 1
    with pytest.raises(OverflowError, match="message id") as exc:
        whole_program(1, [0, 1], np.array([1]), np.zeros(1), np.array([2**31]),
                      one, one, one, one, one)
    # an input error the command line reports in one line with exit code 2, saying to stream
    from ccmod.errors import CcmodInputError
    assert isinstance(exc.value, CcmodInputError) and exc.value.exit_code == 2
    assert "--stream" in str(exc.value) and "\n" not in str(exc.value)
    # the run's own arrays are taken as they are (no copy per record)
    w = load_workload(TRACES / "pingpong.ti")
    from ccmod.compile import compile_messages
    from ccmod.api import load_network
    m = compile_messages(w, load_network(STAR, 2), np.arange(2), "ccmod", 0.0, 1e9)
    assert m.rec_msg.dtype == np.int32
    P = whole_program(2, w.rank_ptr, w.op, w.duration_s, m.rec_msg, one, one, one, one, one)
    assert P.op is w.op and P.rec_msg is m.rec_msg


def test_engine_shares_widened_message_inputs_and_tables_keep_their_dtypes():
    # src, dst, kind and route_res are held once, as the arena's copies (int32 fields),
    # during a run; the result's tables narrow them back to compile_messages' dtypes
    from ccmod.api import load_network
    from ccmod.compile import compile_messages
    from ccmod.engine import Engine, message_column
    w = load_workload(TRACES / "ring16.ti")
    net = load_network(STAR, w.nranks)
    m = compile_messages(w, net, np.arange(w.nranks), "ccmod", 0.0, 1e9)
    before = {c: getattr(m, c).copy() for c in ("src", "dst", "kind", "route_res",
                                                 "route_ptr")}
    eng = Engine(w, m, net.nresources, net.resource_capacity_Bps(),
                 np.zeros(net.nresources), record=False)
    for c, a in before.items():
        v = getattr(m, c)
        assert v.dtype == np.int32 and not v.flags.writeable and np.shares_memory(v, eng.I)
        n = message_column(m, c)
        assert n.dtype == a.dtype and np.array_equal(n, a)
    r = run(TRACES / "ring16.ti", STAR, record=False)
    assert r.column("messages", "src").dtype == before["src"].dtype
    assert r.routes.res.dtype == before["route_res"].dtype
    # route_ptr: int32 from compile_messages (as the kernel holds it), int64 in the result
    assert before["route_ptr"].dtype == np.int32 and r.routes.ptr.dtype == np.int64


def test_ids_past_int32_are_refused_in_one_line(monkeypatch, tmp_path):
    # route offsets (route_ptr), a group's run links (g_next) and the ids are int32
    # fields of the kernel: a run that would overflow them is refused, checked directly
    # (no huge input) ...
    from ccmod.errors import CcmodInputError
    from ccmod.kernel import state
    state.check_ids(2**31 - 1, 2**31 - 2, 2**31 - 1)        # the largest that fit
    for args, what in (((2**31, 1, 1), "2147483648 route entries"),
                       ((1, 2**31 - 1, 1), "2147483647 messages"),
                       ((1, 1, 2**31), "2147483648 resources")):
        with pytest.raises(CcmodInputError, match=what) as exc:
            state.check_ids(*args)
        assert exc.value.exit_code == 2 and "--stream" in str(exc.value)
        assert "\n" not in str(exc.value)
    # ... and, with the limit lowered, on the command line under both rules: one line, exit 2
    from conftest import run_cli
    monkeypatch.setattr(state, "_I32_MAX", 10)
    for sharing in ("ccmod", "maxmin"):
        res = run_cli("run", TRACES / "ring16.ti", "--network", STAR, "--sharing", sharing,
                      "--json", "--out", tmp_path / sharing)
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr
        assert "one run holds at most 10" in lines[0] and "--stream" in lines[0]


def test_run_view_holds_all_zero_durations_in_untouched_pages():
    # a trace without compute: its durations (all +0.0) are replaced by zeros the run only
    # reads (an anonymous mapping: never resident); any other value keeps the column
    import dataclasses
    from ccmod.compile import untouched_zeros
    n = 1 << 16
    w = load_workload(TRACES / "pingpong.ti")
    big = dataclasses.replace(w, op=np.zeros(n, np.int8), duration_s=np.zeros(n),
                              line=np.arange(n), file_id=np.zeros(n, np.int32),
                              req=np.full(n, -1), peer=None, tag=None, nbytes=None)
    v = run_view(big)
    assert v.duration_s is not big.duration_s and v.duration_s.dtype == np.float64
    assert v.duration_s.shape == (n,) and not v.duration_s.view(np.int64).any()
    for x in (1e-9, -0.0):
        d = np.zeros(n)
        d[-1] = x
        assert run_view(dataclasses.replace(big, duration_s=d)).duration_s is d
    z = untouched_zeros(n, np.int32)
    assert z.dtype == np.int32 and z.shape == (n,) and not z.any() and z.flags.writeable


def test_rank_lines_name_the_same_lines_with_one_number_per_rank():
    # a trace written rank after rank (consecutive lines per rank): one offset per rank
    from ccmod.api import RankLines
    rank_ptr = np.array([0, 3, 3, 7])             # rank 1 has no records
    line = np.array([2, 3, 4, 9, 10, 11, 12])
    r = RankLines.of(rank_ptr, line)
    assert r is not None and len(r) == 7 and [r[i] for i in range(7)] == line.tolist()
    with pytest.raises(IndexError):
        r[7]
    line[5] = 20                                  # a gap inside rank 2: kept as an array
    assert RankLines.of(rank_ptr, line) is None
    # a run's own view of a large rank-grouped trace holds them so; where() is unchanged
    import dataclasses
    n = 1 << 16
    w = load_workload(TRACES / "pingpong.ti")
    big = dataclasses.replace(w, nranks=2, rank_ptr=np.array([0, n // 2, n]),
                              op=np.zeros(n, np.int8), duration_s=np.ones(n),
                              line=np.concatenate([np.arange(n // 2) + 2, np.arange(n // 2) + 5]),
                              file_id=np.zeros(n, np.int32), req=np.full(n, -1),
                              peer=None, tag=None, nbytes=None)
    v = run_view(big)
    assert isinstance(v.line, RankLines)
    assert all(v.where(i) == big.where(i) for i in (0, n // 2 - 1, n // 2, n - 1))
