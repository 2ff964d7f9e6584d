"""Dimemas ``.dim`` traces (issue 12). The fixture is HANDWRITTEN after Dimemas' own
parser and writers (no public real .dim trace was found; see tests/data/SOURCES.md)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ccmod.api import run
from ccmod.errors import CcmodInputError
from ccmod.workloads import detect_format, read_workload
from ccmod.workloads.base import OP_COMPUTE, OP_IRECV, OP_ISEND, OP_RECV, OP_SEND, OP_WAIT

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "dimemas" / "handwritten_4tasks.dim"


def _records(path):
    """Counts straight from the file's records (thread 0), to compare with the workload."""
    sends, recvs, nbytes, burst = 0, 0, 0, {}
    for line in Path(path).read_text().splitlines()[1:]:
        f = line.split(":")
        if f[0] == "1":
            burst[int(f[1])] = burst.get(int(f[1]), 0.0) + float(f[3])
        elif f[0] == "2":
            sends += 1
            nbytes += int(f[-4])
        elif f[0] == "3" and f[-1] != "2":       # type 2 is the Wait of an Irecv
            recvs += 1
    return sends, recvs, nbytes, burst


def _rank_ops(w, r):
    sl = slice(int(w.rank_ptr[r]), int(w.rank_ptr[r + 1]))
    return w.op[sl], w.peer[sl], w.tag[sl], w.nbytes[sl], w.duration_s[sl]


def test_fixture_counts_match_the_records():
    assert detect_format(FIXTURE) == "dimemas"
    w = read_workload(FIXTURE)
    assert w.nranks == 4
    sends, recvs, nbytes, burst = _records(FIXTURE)
    p2p = w.tag >= 0                      # collectives' messages have negative tags
    assert int((np.isin(w.op, [OP_SEND, OP_ISEND]) & p2p).sum()) == sends == 4
    assert int((np.isin(w.op, [OP_RECV, OP_IRECV]) & p2p).sum()) == recvs == 4
    assert int(w.nbytes[np.isin(w.op, [OP_SEND, OP_ISEND]) & p2p].sum()) == nbytes == 72704
    for r, seconds in burst.items():     # bursts are seconds
        op, *_x, dur = _rank_ops(w, r)
        assert float(dur[op == OP_COMPUTE].sum()) == pytest.approx(seconds, rel=1e-12)
    assert w.meta["communicators"] == 2 and w.meta["synchronous_sends"] == 1


def test_irecv_wait_immediate_send_and_bcast_root_flag():
    w = read_workload(FIXTURE)
    op, peer, tag, nb, _d = _rank_ops(w, 0)
    # isend to 2 (immediate), irecv from 3, its Wait (type 2) after the burst
    i_isend = int(np.flatnonzero((op == OP_ISEND) & (tag == 9))[0])
    i_irecv = int(np.flatnonzero((op == OP_IRECV) & (tag == 10))[0])
    assert i_isend < i_irecv and op[i_irecv + 1] == OP_COMPUTE and op[i_irecv + 2] == OP_WAIT
    # the immediate send has no recorded completion: completed at the end of the rank
    assert op[-1] == OP_WAIT and any("immediate send" in n for n in w.meta["notes"])
    # bcast on communicator 2 = tasks {0, 2}; ROOT flag 1 on task 0's record
    m = (op == OP_SEND) & (tag < 0) & (peer == 2) & (nb == 1000)
    assert m.sum() == 1


def test_fixture_runs_with_default_options():
    r = run(FIXTURE)
    assert r.makespan_s > 0.002          # rank 2 computes 2 ms before its receive
    assert int((r.messages["tag"] >= 0).sum()) == 4


def test_root_given_as_a_task_id(tmp_path):
    # every member writes the same ROOT (task 1): read as the root's task id
    text = ("#DIMEMAS:x:0:3(1,1,1),1\nd:1:0:3:0:1:2\n"
            "10:0:0:1:0:1:0:0:64\n10:1:0:1:0:1:0:64:0\n10:2:0:1:0:1:0:0:64\n")
    p = tmp_path / "root.dim"
    p.write_text(text)
    w = read_workload(p)
    senders = {r for r in range(3) if np.isin(_rank_ops(w, r)[0], [OP_SEND, OP_ISEND]).any()}
    assert senders == {1}                # 3 members: a binomial tree from task 1 only


@pytest.mark.parametrize("line,needle", [
    ("1:0:0:abc", "CPU burst"),
    ("1:0:0:-1.0", "CPU burst"),
    ("2:0:0:9:0:8:1:0:0", "destination task"),
    ("2:0:0:1:8:1", "fields"),
    ("3:0:0:1:0:8:1:0:7", "receive type"),
    ("10:0:0:11:0:0", "global operation"),
    ("7:0:0:1", "unknown record type"),
    ("1:5:0:0.1", "task"),
    ("hello", "cannot read"),
    ("d:1:0:2:0", "declares 2 tasks"),
    ("2:0:0:1:0:99999999999999999999999:1:0:0", "out of range"),
])
def test_bad_lines_give_one_error_with_file_and_line(tmp_path, line, needle):
    p = tmp_path / "bad.dim"
    p.write_text("#DIMEMAS:x:0:2(1,1),0\n1:0:0:0.5\n" + line + "\n")
    with pytest.raises(CcmodInputError) as ei:
        read_workload(p)
    msg = str(ei.value)
    assert needle in msg and "bad.dim" in msg and ":3" in msg


def test_bad_header_and_cli_exit_code(tmp_path):
    p = tmp_path / "h.dim"
    p.write_text("#DIMEMAS:x:0:2(1),0\n")
    with pytest.raises(CcmodInputError, match="thread counts"):
        read_workload(p)
    q = tmp_path / "old.dim"
    q.write_text("SDDFA;;\n")
    proc = subprocess.run([sys.executable, "-m", "ccmod", "info", str(q), "--format",
                           "dimemas"], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "trf2dim" in err[0] and "Traceback" not in proc.stderr


def test_header_declaring_huge_task_count_is_refused(tmp_path):
    p = tmp_path / "big.dim"
    p.write_text("#DIMEMAS:x:0:900000000(" + "1," * 3 + "1),0\n")
    with pytest.raises(CcmodInputError, match="ranks|thread counts"):
        read_workload(p)
