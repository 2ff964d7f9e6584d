"""``ccmod crosscheck``: analytic inputs derived from a trace + network, and agreement with
the engine where the analytic models are exact."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ccmod.analytic import crosscheck as cc
from ccmod.cli import main
from ccmod.errors import CcmodInputError
from ccmod.workloads.base import WorkloadBuilder


def incast(clients=8, sends=20, nbytes=1 << 20):
    """Every client sends ``sends`` blocking messages to rank 0, which receives them all."""
    b = WorkloadBuilder(clients + 1)
    for k in range(sends):
        for c in range(1, clients + 1):
            b.send(c, 0, nbytes, tag=1)
            b.recv(0, c, nbytes, tag=1)
    return b.build()


def test_pingpong_lopc_is_exact(traces_dir):
    # a blocking ping-pong is a request/reply loop with zero-time handlers and no work:
    # LoPC's cycle is then W + 2 Sl + 2 So = 2 Sl per round trip with nothing to contend
    # for, which is exactly what the engine's quiet network gives
    rep = cc.crosscheck(traces_dir / "pingpong.ti", "star")
    assert rep.lopc is not None
    assert rep.lopc["So_s"] == 0.0
    li = rep.profile.lopc_inputs
    assert li["requests"].tolist() == [10, 0]          # 10 pings, rank 1 only replies
    assert rep.lopc["makespan_s"] == pytest.approx(rep.engine_makespan_s, rel=1e-9)


def test_profile_counts_match_the_trace(traces_dir):
    from ccmod import api
    w = api.load_workload(traces_dir / "stencil16.ti")
    net = api.load_network("star", w.nranks)
    prof = cc.profile(w, net)
    rank = np.repeat(np.arange(w.nranks), np.diff(w.rank_ptr))
    sends = np.bincount(rank[np.isin(w.op, (1, 3))], minlength=w.nranks)
    comp = np.bincount(rank, weights=np.where(w.op == 0, w.duration_s, 0.0), minlength=w.nranks)
    assert prof.sends.tolist() == sends.tolist()
    assert prof.W_s == pytest.approx(comp / sends)
    assert prof.V.sum(axis=1) == pytest.approx(np.ones(w.nranks))
    assert prof.lopc_inputs is None                     # a halo exchange is not request/reply
    assert any("non-blocking" in n for n in prof.notes)


def test_incast_saturates_the_server_link_like_the_engine():
    # 8 clients keep rank 0's downlink busy: MVA with one PS station and 8 customers has
    # U = 1 and the makespan is total bytes / capacity, as in the engine
    w = incast()
    rep = cc.crosscheck(w, "star", send_mode="eager")
    down = rep.links[rep.links["name"] == "node0/down"].iloc[0]
    assert down["mva_util"] == pytest.approx(1.0, rel=1e-3)
    assert down["engine_util"] == pytest.approx(1.0, rel=0.02)
    total_bytes = 8 * 20 * (1 << 20)
    assert rep.mva["makespan_s"] == pytest.approx(total_bytes / 1.25e9, rel=0.01)
    assert rep.mva["makespan_s"] == pytest.approx(rep.engine_makespan_s, rel=0.02)


def test_violations_are_reported(traces_dir):
    rep = cc.crosscheck(traces_dir / "alltoall8.ti", "star")
    text = "\n".join(rep.lines())
    assert "barrier" in text and "assumptions the trace violates" in text
    assert "engine" in text and "MVA links" in text


def test_reqreply_lopc_close_to_engine():
    from ccmod.workloads import gen_queueing as gen
    # deterministic work and handlers, eager sends: the generator's static handler order is
    # then the one the dynamics would produce, and LoPC's processor model applies
    w = gen.reqreply(nranks=8, requests=30, work_s=1e-4, handler_s=1e-5,
                     work_dist="deterministic", handler_dist="deterministic", seed=1)
    rep = cc.crosscheck(w, "star", send_mode="eager")
    assert rep.lopc is not None
    assert rep.lopc["Co2"] == 0.0 and rep.lopc["So_s"] == pytest.approx(1e-5)
    li = rep.profile.lopc_inputs
    assert li["W_s"] == pytest.approx(np.full(8, 1e-4))
    assert rep.lopc["makespan_s"] == pytest.approx(rep.engine_makespan_s, rel=0.15)


def test_cli_json(traces_dir, capsys):
    main(["crosscheck", str(traces_dir / "pingpong.ti"), "--network", "star", "--json"])
    raw = capsys.readouterr().out
    assert "Infinity" not in raw and "NaN" not in raw          # strict JSON
    d = json.loads(raw)
    assert d["ranks"][1]["lopc_cycle_s"] is None             # rank 1 only serves
    assert set(d) >= {"engine", "mva", "lopc", "ranks", "links", "assumptions_violated"}
    assert d["lopc"]["makespan_diff_pct"] == pytest.approx(0.0, abs=1e-6)
    main(["crosscheck", str(traces_dir / "ring16.ti")])
    assert "makespan" in capsys.readouterr().out


def test_bad_inputs(traces_dir):
    with pytest.raises(CcmodInputError, match="link demand"):
        cc.crosscheck(traces_dir / "pingpong.ti", "star", link_demand="magic")
    b = WorkloadBuilder(2)
    b.compute(0, 1.0)
    b.compute(1, 1.0)
    with pytest.raises(CcmodInputError, match="no messages"):
        cc.crosscheck(b.build(), "star")
