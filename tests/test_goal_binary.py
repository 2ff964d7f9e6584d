"""Binary GOAL schedules (LogGOPSim txt2bin layout) and the real GOAL examples (issue 12)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ccmod.api import run
from ccmod.errors import CcmodInputError
from ccmod.workloads import detect_format, read_workload
from ccmod.workloads.base import OP_COMPUTE, OP_ISEND, OP_WAIT
from ccmod.workloads.goal import parse_goal
from ccmod.workloads.goal_binary import _NODE, MAGIC, MAGIC_INVALID
from ccmod.workloads.goal_schedule import CALC, RECV, SEND
from conftest import REAL as REAL_ROOT

DATA = Path(__file__).parent / "data" / "goal"
# CCMOD_REAL_TRACES or ../shared/traces/real, as every real-data test finds it (conftest)
REAL = REAL_ROOT / "loggopsim" / "goal-examples"


def _encode(text_path, out_path, magic=MAGIC):
    """Write ``text_path`` in txt2bin's binary layout (docs: ccmod.workloads.goal_binary).

    Written independently of the reader from the layout LogGOPSim's Parser.hpp documents:
    per node the dependents that wait for its end, then those that wait for its start.
    ``test_encoder_writes_what_txt2bin_writes`` checks it byte for byte against txt2bin.
    """
    nranks, ranks = parse_goal(str(text_path))
    code = {SEND: 1, RECV: 2, CALC: 3}
    blobs = []
    for r in range(nranks):
        g = ranks[r]
        n = len(g.kinds)
        done = [[] for _ in range(n)]
        start = [[] for _ in range(n)]
        for a, start_only, b, _ in g.deps:
            (start if start_only else done)[b].append(a)
        ndeps = [sum(1 for a, _s, _b, _l in g.deps if a == i) for i in range(n)]
        roots = [i for i in range(n) if ndeps[i] == 0]
        nodes = np.zeros(n, _NODE)
        apdx, pos = [], 0
        for i in range(n):
            nodes[i] = (ndeps[i], code[g.kinds[i]], max(g.peer[i], 0), int(g.amount[i]),
                        g.tag[i], g.cpu[i], g.nic[i], len(done[i]), pos, len(start[i]),
                        pos + len(done[i]))
            apdx += done[i] + start[i]
            pos += len(done[i]) + len(start[i])
        blobs.append(np.array([n, len(roots)] + roots, "<u4").tobytes() + nodes.tobytes()
                     + np.array(apdx, "<u4").tobytes())
    head = 4 + 2 + 16 * nranks
    table, at = [], head
    for blob in blobs:
        table += [at, at + len(blob)]
        at += len(blob)
    out = (np.array([magic], "<u8").tobytes() + np.array([nranks], "<u4").tobytes()
           + bytes([max(max(g.cpu, default=0) for g in ranks.values()),
                    max(max(g.nic, default=0) for g in ranks.values())])
           + np.array(table, "<u8").tobytes() + b"".join(blobs))
    Path(out_path).write_bytes(out)
    return out_path


def _same(w1, w2):
    for col in ("rank_ptr", "op", "peer", "tag", "nbytes", "duration_s"):
        assert np.array_equal(getattr(w1, col), getattr(w2, col)), col


def test_binary_form_reads_like_its_text(tmp_path):
    text = tmp_path / "t.goal"
    text.write_text("num_ranks 2\nrank 0 {\na: calc 500 cpu 1\nb: send 70000b to 1 tag 2\n"
                    "c: recv 8b from 1\nd: calc 100\nc irequires b\nd requires c\n}\n"
                    "rank 1 {\nx: recv 70000b from 0 tag 2\ny: send 8b to 0\ny requires x\n}\n")
    binp = _encode(text, tmp_path / "t.bin")
    assert detect_format(binp) == "goal"
    wb = read_workload(binp)
    _same(read_workload(text), wb)
    assert wb.meta["goal_form"] == "binary"
    assert run(wb, "star").makespan_s > 0


@pytest.mark.parametrize("text,binary", [("binary_tree_32.goal", "binary_tree_32.bin"),
                                         ("test-nbp2p.g2", "test-nbp2p.bin")])
def test_txt2bin_output_reads_like_its_text(text, binary):
    wb = read_workload(DATA / binary)
    assert detect_format(DATA / binary) == "goal" and wb.meta["goal_form"] == "binary"
    _same(read_workload(DATA / text), wb)


@pytest.mark.parametrize("text,binary", [("binary_tree_32.goal", "binary_tree_32.bin"),
                                         ("test-nbp2p.g2", "test-nbp2p.bin")])
def test_encoder_writes_what_txt2bin_writes(tmp_path, text, binary):
    out = _encode(DATA / text, tmp_path / "enc.bin")
    assert out.read_bytes() == (DATA / binary).read_bytes()


def test_nbp2p_schedule_order():
    # rank 0: l1 calc; l2 send requires l1; l3 calc irequires l2; l4 calc requires l2, l3
    w = read_workload(DATA / "test-nbp2p.bin")
    r0 = w.op[w.rank_ptr[0]:w.rank_ptr[1]].tolist()
    assert r0 == [OP_COMPUTE, OP_ISEND, OP_COMPUTE, OP_WAIT, OP_COMPUTE]
    assert w.duration_s[w.rank_ptr[0]:w.rank_ptr[1]][[0, 2, 4]].tolist() == pytest.approx(
        [1e-9, 2e-9, 3e-9])


def test_fixture_round_trips_through_binary(tmp_path):
    p = DATA / "binary_tree_32.goal"
    _same(read_workload(p), read_workload(_encode(p, tmp_path / "tree.bin")))


def test_invalidated_and_damaged_binaries_are_one_line_errors(tmp_path):
    p = DATA / "binary_tree_32.goal"
    bad = _encode(p, tmp_path / "inv.bin", magic=MAGIC_INVALID)
    with pytest.raises(CcmodInputError, match="invalidated"):
        read_workload(bad)
    cut = tmp_path / "cut.bin"
    cut.write_bytes(_encode(p, tmp_path / "ok.bin").read_bytes()[:300])
    with pytest.raises(CcmodInputError, match="damaged"):
        read_workload(cut)


@pytest.mark.skipif(not REAL.is_dir(), reason="needs ../shared/traces/real (LogGOPSim examples)")
@pytest.mark.parametrize("name", ["binary_tree_32.goal", "ping_pong_big.g2",
                                  "test-doublering4.g2", "test-nbp2p.g2"])
def test_real_goal_examples_run_text_and_binary(tmp_path, name):
    p = REAL / name
    w = read_workload(p)
    r = run(w, "star")
    assert r.makespan_s > 0 and len(r.messages) == int((w.op == 3).sum())
    _same(w, read_workload(_encode(p, tmp_path / (name + ".bin"))))


@pytest.mark.skipif(not REAL.is_dir(), reason="needs ../shared/traces/real (LogGOPSim examples)")
def test_real_ping_pong_is_two_messages_in_sequence():
    # rank 1 answers only after receiving (l1 requires l0): two quiet times back to back
    r = run(read_workload(REAL / "ping_pong_big.g2"), "star")
    q = r.messages["quiet_s"]
    assert r.makespan_s == pytest.approx(q.sum(), rel=1e-6)
