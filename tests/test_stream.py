"""Streaming: the kernel fed a window of each rank's records at a time gives bit for bit
the results of the whole program (every test trace, tiny windows, every sharing rule)."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ccmod.api import run
from ccmod.errors import CcmodInputError, DeadlockError
from ccmod.workloads.base import WorkloadBuilder
from ccmod.workloads.generators import generate

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"

TRACES = [ROOT / "traces" / n for n in ("pingpong.ti", "ring16.ti", "alltoall8.ti",
                                          "stencil16.ti", "simgrid-actions_with_isend.txt")]
TRACES += [DATA / "tiny3.ti", DATA / "smpi-npb" / "FT.S.4", DATA / "goal" / "binary_tree_32.goal",
           DATA / "liballprof" / "mini-rank-0.dat"]
GENERATED = ["reqreply:nranks=6,requests=5", "halo2d:px=3,py=2,iterations=3",
             "wavefront:px=3,py=3,kblocks=3,iterations=2",
             "client_server:servers=2,clients=5,requests=4",
             "uniform:nranks=5,iterations=12,fanout=2,nbytes=70000"]


def _tables(r):
    out = {"makespan": r.makespan_s.hex(), "events": r.events, "records": r.records}
    for name in ("messages", "ranks", "links", "rank_states", "link_load"):
        df = getattr(r, name)
        out[name] = None if df is None else df.reset_index(drop=True)
    return out


def assert_identical(a, b, what):
    ta, tb = _tables(a), _tables(b)
    for k, va in ta.items():
        vb = tb[k]
        if isinstance(va, pd.DataFrame):
            # bit for bit: equal values and equal NaN/inf positions, column by column
            assert list(va.columns) == list(vb.columns), (what, k)
            for c in va.columns:
                x, y = va[c].to_numpy(), vb[c].to_numpy()
                if x.dtype.kind == "f":
                    assert np.array_equal(x.view(np.int64), y.view(np.int64)), (what, k, c)
                else:
                    assert np.array_equal(x.astype(object), y.astype(object)), (what, k, c)
        else:
            assert va == vb, (what, k)


def _workloads():
    for p in TRACES:
        if p.exists():
            yield p.name, p
    for spec in GENERATED:
        yield spec.split(":")[0], generate(spec, seed=3)


#: the costliest of these workloads (0.2-0.45 s each per test on the development machine):
#: the whole-run comparisons run them with the slow tests only, the default run's time
#: budget being ~90 s; the other workloads cover the same kinds of operations there
HEAVY = {"stencil16.ti", "alltoall8.ti", "wavefront"}


def workload_params():
    """_workloads() as pytest parameters, the HEAVY ones marked slow."""
    return [pytest.param(name, trace, marks=pytest.mark.slow) if name in HEAVY
            else pytest.param(name, trace) for name, trace in _workloads()]


@pytest.mark.parametrize("name,trace", workload_params(), ids=lambda x: str(x)[:30])
def test_windowed_runs_equal_the_whole_program(name, trace):
    cases = [("ccmod", "rendezvous", 1), ("maxmin", "eager", 2),
             ("ccmod:latency=unshared", "detached", 3), ("ccmod", "rendezvous", 7)]
    net = "star:bandwidth=1e8,latency=1e-6"
    for sharing, mode, window in cases:
        kw = dict(sharing=sharing, send_mode=mode, record=True)
        whole = run(trace, net, **kw)
        part = run(trace, net, window_records=window, **kw)
        assert_identical(whole, part, (name, sharing, mode, window))


def test_windowed_with_background_steps_overheads_and_gap():
    from ccmod.netsys.cost import PiecewiseLinearCost
    cost = PiecewiseLinearCost.from_dict({
        "format": "ccmod-cost-model",
        "segments": [{"min_bytes": 0, "latency_s": 2e-6, "bandwidth_Bps": 1e9}],
        "gap_s": 3e-7, "overheads": [{"min_bytes": 0, "o_send_s": 2e-7, "o_recv_s": 3e-7}]})
    w = generate("uniform:nranks=6,iterations=20,fanout=2,nbytes=5000", seed=1)
    for sharing in ("ccmod", "maxmin"):
        kw = dict(sharing=sharing, cost=cost, record=True,
                  background="exp:mean_pps=7000,max_pps=25000,interval=1e-4,seed=1")
        assert_identical(run(w, "star", **kw), run(w, "star", window_records=2, **kw),
                         sharing)


def test_a_wait_may_complete_a_request_posted_windows_earlier():
    b = WorkloadBuilder(2)
    for i in range(6):
        b.isend(0, 1, 100 * (i + 1), i, tag=i)
        b.compute(0, 1e-6)
    for i in reversed(range(6)):
        b.irecv(1, 0, i, tag=i)
    for i in range(3):
        b.wait(0, i)
    b.waitall(0)
    b.waitall(1)
    w = b.build()
    assert_identical(run(w, "star", record=True), run(w, "star", record=True,
                                                      window_records=1), "waits")


def test_windowed_errors_are_one_clear_line():
    b = WorkloadBuilder(2)
    b.compute(0, 1e-6)
    b.compute(0, 1e-6)
    b.wait(0, 5)
    b.compute(1, 1e-6)
    with pytest.raises(CcmodInputError, match="waits on request 5"):
        run(b.build(), "star", window_records=1)
    b = WorkloadBuilder(2)
    b.recv(0, 1)
    b.send(0, 1, 8)
    b.recv(1, 0)
    b.send(1, 0, 8)
    with pytest.raises(DeadlockError) as e:
        run(b.build(), "star", window_records=1)
    assert "rank 0 blocked in recv" in str(e.value)


@pytest.mark.parametrize("dense", [True, False], ids=["pair-table", "hashed"])
@pytest.mark.parametrize("name,trace", list(_workloads()), ids=lambda x: str(x)[:30])
def test_incremental_matching_gives_the_static_ids(name, trace, dense, monkeypatch):
    """Windows of 3 records, ranks loaded last-first (receives before their sends), a pool
    of 2 queue nodes and 2 channels to start with (every growth path taken); channels found
    through the dense pair table and through the hash."""
    from ccmod.api import load_workload
    from ccmod.compile import match_messages
    from ccmod.kernel import matcher as km
    from ccmod.kernel.matcher import Matcher
    if not dense:
        monkeypatch.setattr(km, "DENSE_PAIRS", 0)
    w = load_workload(trace)
    send_rec, recv_rec = match_messages(w)
    m = Matcher(w, pool=2, channels=2)
    got = np.full(w.nrecords, -1, np.int64)
    rp = np.asarray(w.rank_ptr)
    pos = rp[:-1].copy()
    while (pos < rp[1:]).any():
        for r in reversed(range(w.nranks)):
            g1 = min(pos[r] + 3, rp[r + 1])
            if g1 > pos[r]:
                got[pos[r]:g1] = m.ids(r, int(pos[r]), int(g1))
                pos[r] = g1
    m.finish()
    M0 = len(send_rec)
    assert np.array_equal(got[send_rec], np.arange(M0))
    assert np.array_equal(got[recv_rec], np.arange(M0))
    am = np.flatnonzero(np.asarray(w.op) == 8)
    assert np.array_equal(got[am], M0 + 2 * np.arange(len(am)))


def test_incremental_matching_with_more_ranks_than_a_packed_channel_key_holds():
    """Past 46,341 ranks a rank pair times 2^32 overflows 64 bits: the hashed channels
    are keyed by the pair alone, its tags chained (a key that went negative read as an
    empty bucket, and every send stayed unmatched)."""
    from ccmod.compile import match_messages
    from ccmod.kernel.matcher import Matcher
    n = 50_000
    b = WorkloadBuilder(n)
    for s, d, tag in ((n - 1, n - 2, 5), (n - 1, n - 2, 9), (n - 2, n - 1, 5), (1, n - 1, 0)):
        b.send(s, d, 8, tag=tag)
    for s, d, tag in ((n - 1, n - 2, 9), (n - 1, n - 2, 5), (n - 2, n - 1, 5), (1, n - 1, 0)):
        b.recv(d, s, tag=tag)
    w = b.build()
    send_rec, recv_rec = match_messages(w)
    m = Matcher(w, channels=2, scan=1)
    assert not m.nch[1]                      # the hash, not the dense pair table
    rp = np.asarray(w.rank_ptr)
    got = np.full(w.nrecords, -1, np.int64)
    for r in reversed(range(n)):
        if rp[r + 1] > rp[r]:
            got[rp[r]:rp[r + 1]] = m.ids(r, int(rp[r]), int(rp[r + 1]))
    m.finish()
    assert np.array_equal(got[send_rec], np.arange(len(send_rec)))
    assert np.array_equal(got[recv_rec], np.arange(len(send_rec)))


def test_streamed_matching_errors_are_one_clear_line():
    b = WorkloadBuilder(2)
    b.send(0, 1, 8, tag=1)
    b.recv(1, 0, tag=2)
    w = b.build()
    from ccmod.kernel.matcher import Matcher
    with pytest.raises(CcmodInputError, match="unmatched recv: rank 1 receives from rank 0 "
                                              r"\(tag 2\)"):
        Matcher(w).ids(1, 1, 2)
    b = WorkloadBuilder(2)
    b.send(0, 1, 8)
    b.send(0, 1, 8)
    b.recv(1, 0)
    m = Matcher(b.build())
    m.ids(0, 0, 1)
    with pytest.raises(CcmodInputError, match="unmatched send: rank 0 sends to rank 1"):
        m.finish()
    b = WorkloadBuilder(2)
    b.send(0, 1, 80)
    b.recv(1, 0, nbytes=8)
    with pytest.raises(CcmodInputError, match="message truncated"):
        Matcher(b.build()).ids(1, 1, 2)


def test_windowed_signal_log_and_idle_ranks_are_identical(tmp_path):
    """The debug sink's signal log (every horizon, start, end) and a rank without records."""
    w = generate("halo2d:px=3,py=2,iterations=3", seed=1)
    logs = []
    for i, win in enumerate((None, 1, 2)):
        r = run(w, "star", sinks=["debug"], out_dir=tmp_path / str(i), window_records=win)
        logs.append((r.signals.t_s.to_numpy().tobytes(), list(r.signals.signal),
                     list(r.signals.args)))
    assert logs[0] == logs[1] == logs[2]
    b = WorkloadBuilder(3)     # rank 1: no records at all
    b.send(0, 2, 8)
    b.recv(2, 0)
    b.compute(2, 1e-6)
    w = b.build()
    assert w.rank_ptr[1] == w.rank_ptr[2]
    assert_identical(run(w, "star", record=True), run(w, "star", record=True,
                                                      window_records=1), "idle")


from hypothesis import given, settings, strategies as st  # noqa: E402
from conftest import examples

from test_engine_properties import NETS, programs  # noqa: E402


@settings(max_examples=examples(30), deadline=None)
@given(programs(), st.sampled_from(NETS), st.sampled_from(["ccmod", "maxmin"]),
       st.sampled_from(["rendezvous", "eager", "detached"]), st.integers(1, 4))
def test_random_programs_windowed_equal_whole(w, net, sharing, mode, window):
    kw = dict(sharing=sharing, send_mode=mode, record=True, mapping=None)
    assert_identical(run(w, net, **kw), run(w, net, window_records=window, **kw),
                     (net, sharing, mode, window))
