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
