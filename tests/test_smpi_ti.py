"""SMPI time-independent traces read as SMPI wrote them (issue 12).

Fixtures: tests/data/smpi-npb/ (real SMPI traces of NPB MG and FT class S, 4 ranks; see
tests/data/SOURCES.md). The rules and their SimGrid sources are in docs/readers.md.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ccmod.api import run
from ccmod.compile import match_messages
from ccmod.errors import CcmodInputError
from ccmod.workloads import read_workload
from ccmod.workloads.base import OP_COMPUTE, SEND_OPS
from ccmod.workloads.units import parse_compute_rate
from conftest import run_cli

DATA = Path(__file__).parent / "data" / "smpi-npb"
ROOT = Path(__file__).resolve().parent.parent


def _ti(tmp_path, text, name="t.ti"):
    p = tmp_path / name
    p.write_text(text)
    return p


# -- wait <src> <dst> <tag>: ranks or actor PIDs --------------------------------------------

def test_waits_with_actor_pids_are_detected_on_a_real_smpi_trace():
    w = read_workload(DATA / "MG.S.4")
    assert w.meta["wait_ids"] == "pid"
    assert any("actor PIDs = rank + 1" in n for n in w.meta["notes"])
    r = run(w, "star")
    assert r.makespan_s > 0 and len(r.messages) > 0


def test_waits_with_ranks_are_detected(tmp_path):
    # rank 0 waits for its isend to 1: only the rank reading has 0 as one end
    p = _ti(tmp_path, "0 isend 1 5 8\n0 wait 0 1 5\n1 recv 0 5 8\n")
    w = read_workload(p)
    assert w.meta["wait_ids"] == "rank"


def test_waits_with_pids_in_a_one_file_trace(tmp_path):
    p = _ti(tmp_path, "0 isend 1 5 8\n0 wait 1 2 5\n1 irecv 0 5 8\n1 wait 1 2 5\n")
    w = read_workload(p)
    assert w.meta["wait_ids"] == "pid"
    assert run(w, "star").messages["nbytes"].tolist() == [8]


def test_ambiguous_wait_is_resolved_by_the_outstanding_request(tmp_path):
    # rank 1 has only an irecv from 0 outstanding; 'wait 1 2 3' reads as ranks 1->2 (no such
    # request) or as PIDs 1->2 = ranks 0->1 (the irecv): the request decides
    p = _ti(tmp_path, "0 send 1 3 8\n1 irecv 0 3 8\n1 wait 1 2 3\n2 compute 1\n")
    w = read_workload(p)
    assert w.meta["wait_ids"] == "pid"


def test_forced_wait_ids_and_a_clear_error(tmp_path):
    p = _ti(tmp_path, "0 isend 1 5 8\n0 wait 1 2 5\n1 recv 0 5 8\n")
    with pytest.raises(CcmodInputError, match="unmatched wait.*ranks"):
        read_workload(p, wait_ids="rank")
    with pytest.raises(CcmodInputError, match="bad wait_ids"):
        read_workload(p, wait_ids="pids")


# -- sizes: receive count = capacity; non-replayable datatypes are in bytes ----------------

def test_receive_larger_than_its_send_is_legal_and_the_send_size_wins():
    w = read_workload(DATA / "MG.S.4")
    s, r = match_messages(w)
    assert (w.nbytes[r] > w.nbytes[s]).any()          # MG posts 2312-element receives
    res = run(w, "star")
    got = np.sort(res.messages["nbytes"].to_numpy())
    assert np.array_equal(got, np.sort(w.nbytes[s]))


def test_receive_smaller_than_its_send_is_mpi_truncation(tmp_path):
    p = _ti(tmp_path, "0 send 1 0 100\n1 recv 0 0 99\n")
    with pytest.raises(CcmodInputError, match="truncated"):
        run(p, "star")


def test_counts_of_non_replayable_datatypes_are_bytes(tmp_path):
    # SMPI writes count x size for datatypes it does not replay (26 = double complex)
    w = read_workload(DATA / "FT.S.4")
    sends = np.isin(w.op, SEND_OPS)
    assert w.nbytes[sends].max() == 262144            # the alltoall blocks, as written
    assert w.meta["counts_in_bytes"] > 0
    # replayable ids (0..6) are element counts: 10 doubles = 80 bytes
    p = _ti(tmp_path, "0 send 1 0 10 0\n1 recv 0 0 10 0\n0 send 1 1 10 26\n1 recv 0 1 10 26\n")
    w = read_workload(p)
    assert w.nbytes[np.isin(w.op, SEND_OPS)].tolist() == [80, 10]


# -- compute in flops at SMPI's host speed --------------------------------------------------

@pytest.mark.parametrize("text,rate", [("20kf", 2e4), ("1Gf", 1e9), ("1e9", 1e9),
                                        ("2.5Mf", 2.5e6), ("20000f", 2e4), ("3kflops", 3e3),
                                        (5.0, 5.0)])
def test_compute_rate_in_simgrid_notation(text, rate):
    assert parse_compute_rate(text) == rate


@pytest.mark.parametrize("text", ["fast", "20k", "-1f", "0", "1Qf", "nan"])
def test_bad_compute_rate(text):
    with pytest.raises(CcmodInputError):
        parse_compute_rate(text)


def test_rate_is_visible_and_small_compute_is_flagged():
    r = run(DATA / "FT.S.4", "star")
    notes = " ".join(r.summary()["notes"])
    assert "at 1 Gf/s" in notes and "implausibly small" in notes
    assert r.summary()["compute"]["rate_flops"] == 1e9
    slow = run(DATA / "FT.S.4", "star", compute_rate="20kf")
    assert "implausibly small" not in " ".join(slow.summary()["notes"])
    w = read_workload(DATA / "FT.S.4", compute_rate="20kf")
    comp = w.duration_s[w.op == OP_COMPUTE]
    assert comp.max() == pytest.approx(312.5 / 2e4)   # 'compute 312.5' at 20 kf/s


def test_cli_accepts_simgrid_rate_and_prints_it():
    # in process (conftest.run_cli: the same exit code and output as `python -m ccmod`,
    # without a fresh interpreter's imports; test_info keeps a real subprocess)
    res = run_cli("run", DATA / "FT.S.4", "--compute-rate", "20kf", "--json", cwd=ROOT)
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    assert d["compute"]["rate_flops"] == 2e4
    assert any("20 kf/s" in n for n in d["notes"])


# -- eager limit and nothing to predict -------------------------------------------------------

def test_default_eager_limit_is_64k_and_zero_keeps_rendezvous(tmp_path):
    p = _ti(tmp_path, "0 send 1 0 100\n0 recv 1 0 100\n1 send 0 0 100\n1 recv 0 0 100\n")
    assert run(p, "star").options["eager_limit_bytes"] == 65536
    from ccmod.errors import DeadlockError
    with pytest.raises(DeadlockError):
        run(p, "star", eager_limit_bytes=0)


def test_trace_without_communication_says_nothing_to_predict(tmp_path):
    p = _ti(tmp_path, "0 compute 1e6\n")
    r = run(p, "star")
    s = r.summary()
    assert "nothing to predict" in s["nothing_to_predict"]
    assert "1 compute" in s["nothing_to_predict"]
    res = run_cli("run", p)
    assert res.returncode == 0 and "nothing to predict" in res.stdout


# -- the seven real SMPI NPB traces (developers' folder) ---------------------------------------

@pytest.mark.parametrize("name", ["BT.S.4", "CG.S.4", "FT.S.4", "IS.S.4", "MG.S.4", "MG.S.16",
                                  "SP.S.4"])
def test_real_smpi_npb_traces_run_with_default_options(real_dir, name):
    path = real_dir / "smpi-npb" / name
    w = read_workload(path)
    assert w.meta["wait_ids"] in ("pid", "none")       # SimGrid ~3.21: PIDs where waits exist
    r = run(w, "star")
    assert r.makespan_s > 0 and len(r.messages) > 0
    # sizes as SMPI wrote them: no message is larger than its largest written count x 8
    assert int(r.messages["nbytes"].max()) <= 262144 * 4


def test_one_per_rank_file_is_read_with_its_siblings(tmp_path):
    # SimGrid's per-rank files (actions0.txt, actions1.txt) given one at a time
    (tmp_path / "actions0.txt").write_text("0 init\n0 send 1 0 1e6\n0 recv 1 1 1e6\n")
    (tmp_path / "actions1.txt").write_text("1 init\n1 recv 0 0 1e6\n1 send 0 1 1e6\n")
    for name in ("actions0.txt", "actions1.txt"):
        w = read_workload(tmp_path / name)
        assert w.nranks == 2 and any("sibling" in n for n in w.meta["notes"])
        assert len(run(w, "star").messages) == 2
    # a lone file whose rank does not match its number is read on its own (and fails)
    (tmp_path / "solo7.txt").write_text("1 compute 5\n")
    with pytest.raises(CcmodInputError, match="without gaps"):
        read_workload(tmp_path / "solo7.txt")


def test_waiting_for_another_ranks_compute_is_not_flagged(tmp_path):
    # SimGrid's replay example actions0/actions1 shape: rank 1 computes 1e9 flops (1 s at
    # 1 Gf/s) while rank 0, the last to finish, only waits for it. The busiest rank's own
    # 0 s of compute must not be called implausibly small.
    t = tmp_path / "actions.txt"
    t.write_text("0 init\n1 init\n0 send 1 0 1e6\n1 recv 0 0 1e6\n1 compute 1e9\n"
                 "1 send 0 1 1e6\n0 recv 1 1 1e6\n0 finalize\n1 finalize\n")
    notes = " ".join(run(t, "star").summary()["notes"])
    assert "1e+09 flops" in notes and "implausibly small" not in notes
