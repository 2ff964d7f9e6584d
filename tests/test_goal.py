"""LogGOPSim GOAL text schedules (issue 12)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ccmod.api import run
from ccmod.errors import CcmodInputError
from ccmod.workloads import detect_format, read_workload
from ccmod.workloads.base import OP_COMPUTE, OP_IRECV, OP_ISEND, OP_WAIT, OP_WAITALL

DATA = Path(__file__).parent / "data" / "goal"


def _goal(tmp_path, text, name="t.goal"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_binary_tree_fixture_is_detected_and_runs():
    p = DATA / "binary_tree_32.goal"
    assert detect_format(p) == "goal"
    w = read_workload(p)
    assert w.nranks == 32
    assert int((w.op == OP_ISEND).sum()) == 31 and int((w.op == OP_IRECV).sum()) == 31
    r = run(w, "star")
    assert len(r.messages) == 31 and set(r.messages["nbytes"]) == {1}
    # a binary tree over 32 ranks: the deepest rank receives after 5 hops in sequence
    lat = r.messages["quiet_s"].iloc[0]
    assert r.makespan_s >= 5 * lat * (1 - 1e-9)


def test_requires_becomes_a_wait_and_declaration_order_breaks_ties(tmp_path):
    text = ("num_ranks 2\nrank 0 {\nl1: calc 1000\nl2: send 8b to 1 tag 3\n"
            "l2 requires l1\n}\nrank 1 {\na: send 4b to 0\nb: recv 8b from 0 tag 3\n"
            "a requires b\n}\n")
    p = _goal(tmp_path, text)
    w = read_workload(p)
    r1 = w.op[w.rank_ptr[1]:w.rank_ptr[2]].tolist()
    # rank 1: b (irecv) first, wait on it (a requires b), then a (isend), final waitall
    assert r1 == [OP_IRECV, OP_WAIT, OP_ISEND, OP_WAITALL]
    r0 = w.op[w.rank_ptr[0]:w.rank_ptr[1]].tolist()
    assert r0 == [OP_COMPUTE, OP_ISEND, OP_WAITALL]
    assert w.duration_s[w.rank_ptr[0]] == pytest.approx(1e-6)   # 1000 ns
    assert w.tag[w.op == OP_ISEND].tolist() == [3, 0]


def test_calc_unit_option(tmp_path):
    p = _goal(tmp_path, "num_ranks 1\nrank 0 {\nl1: calc 5\n}\n")
    w = read_workload(p, calc_unit_s=1e-6)
    assert np.allclose(w.duration_s, [5e-6])


@pytest.mark.parametrize("text,needle", [
    ("num_ranks 2\nrank 0 {\nl1: send 1b to 1\nl1 requires l1\n}\n", "cycle"),
    ("num_ranks 2\nrank 0 {\nl1: send 1b to 5\n}\n", "outside"),
    ("num_ranks 1\nrank 0 {\nl1: jump 3\n}\n", "cannot read"),
    ("num_ranks 1\nrank 0 {\nl1: calc 3\n", "not closed"),
    ("num_ranks 1\nrank 0 {\nl2 requires l9\n}\n", "unknown label"),
])
def test_bad_goal_is_one_line_error(tmp_path, text, needle):
    with pytest.raises(CcmodInputError, match=needle):
        read_workload(_goal(tmp_path, text))


# -- dependency semantics (LogGOPSim: an op starts once its requires/irequires allow) --

MB = 1 << 20


def _makespan(tmp_path, text, net="star"):
    r = run(read_workload(_goal(tmp_path, text)), net)
    return r.makespan_s, r.messages


def test_independent_calc_and_send_overlap(tmp_path):
    # the calc is declared first but does not block the send: the send is posted first
    head = f"num_ranks 2\nrank 1 {{\nr: recv {MB}b from 0\n}}\nrank 0 {{\n"
    span, msgs = _makespan(tmp_path, head + f"c: calc 1000\ns: send {MB}b to 1\n}}\n")
    t_msg = msgs["quiet_s"].iloc[0]
    assert t_msg > 1e-6
    assert span == pytest.approx(max(t_msg, 1e-6), rel=1e-6)
    # with "s requires c" they serialise: calc, then the message
    span2, _ = _makespan(tmp_path, head + f"c: calc 1000\ns: send {MB}b to 1\n"
                         "s requires c\n}\n")
    assert span2 == pytest.approx(1e-6 + t_msg, rel=1e-6)


def test_two_independent_messages_overlap_and_a_requires_chain_serialises(tmp_path):
    # rank 0 sends to 1 and receives from 2: different links, no contention on a star
    text = ("num_ranks 3\nrank 0 {{\na: send {n}b to 1\nb: recv {n}b from 2\n{dep}}}\n"
            "rank 1 {{\nx: recv {n}b from 0\n}}\nrank 2 {{\ny: send {n}b to 0\n}}\n")
    span, msgs = _makespan(tmp_path, text.format(n=MB, dep=""))
    t_msg = msgs["quiet_s"].max()
    assert span == pytest.approx(t_msg, rel=1e-6)
    span2, _ = _makespan(tmp_path, text.format(n=MB, dep="b requires a\n"))
    assert span2 == pytest.approx(2 * t_msg, rel=1e-6)
    w = read_workload(_goal(tmp_path, text.format(n=MB, dep="b requires a\n")))
    assert w.op[w.rank_ptr[0]:w.rank_ptr[1]].tolist() == [OP_ISEND, OP_WAIT, OP_IRECV,
                                                          OP_WAITALL]


def test_irequires_orders_without_waiting(tmp_path):
    text = (f"num_ranks 2\nrank 0 {{\na: send {MB}b to 1\nb: calc 1000\nb irequires a\n}}\n"
            f"rank 1 {{\nx: recv {MB}b from 0\n}}\n")
    w = read_workload(_goal(tmp_path, text))
    assert w.op[w.rank_ptr[0]:w.rank_ptr[1]].tolist() == [OP_ISEND, OP_COMPUTE, OP_WAITALL]
    span, msgs = _makespan(tmp_path, text)
    assert span == pytest.approx(max(1e-6, msgs["quiet_s"].iloc[0]), rel=1e-6)


def test_calcs_on_different_cpus_run_concurrently(tmp_path):
    base = "num_ranks 1\nrank 0 {{\na: calc 1000{c0}\nb: calc 3000{c1}\n}}\n"
    w2 = read_workload(_goal(tmp_path, base.format(c0=" cpu 0", c1=" cpu 1")))
    assert w2.duration_s.tolist() == pytest.approx([3e-6])
    assert any("different CPUs" in n for n in w2.meta["notes"])
    w1 = read_workload(_goal(tmp_path, base.format(c0="", c1="")))
    assert w1.duration_s.tolist() == pytest.approx([1e-6, 3e-6])


def test_txt2bin_grammar_unlabelled_ops_comments_and_modifiers(tmp_path):
    text = ("/* a schedule\n over two lines */\nnum_ranks 2\nrank 0 {\n"
            "send 8b to 1 tag 4 cpu 0 nic 1   // unlabelled, as txt2bin allows\n"
            "l2: calc 7 cpu 1\n}\nrank 1 {\nrecv 8b from 0 tag 4 nic 0\n}\n")
    w = read_workload(_goal(tmp_path, text))
    assert w.tag[w.op == OP_ISEND].tolist() == [4]
    assert w.meta["goal_nics"] == 2 and w.meta["goal_cpus"] == 2
    assert int(w.line[w.op == OP_ISEND][0]) == 5


@pytest.mark.parametrize("line,needle", [
    ("l1: recv 8b from -1", "wildcard receive"),
    ("l1: recv 8b from 1 tag -1", "wildcard tag"),
    ("l1: send 8b to 1 tag", "no value"),
    ("l1: send 8 to 1", "bad send"),
])
def test_unsupported_goal_lines_are_one_line_errors(tmp_path, line, needle):
    with pytest.raises(CcmodInputError, match=needle):
        read_workload(_goal(tmp_path, f"num_ranks 2\nrank 0 {{\n{line}\n}}\n"))
