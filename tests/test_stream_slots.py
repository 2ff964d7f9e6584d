"""Streaming with recycled message slots (:mod:`ccmod.kernel.slots`): the per-message
arrays hold what is in flight, not the trace, and results stay bit for bit those of the
whole program (every growth path taken, both sharing rules, every send mode)."""
import numpy as np
import pytest

from ccmod.api import load_network, run
from ccmod.compile import compile_messages
from ccmod.engine import Engine
from ccmod.kernel import slots as kslots
from ccmod.workloads.base import WorkloadBuilder
from ccmod.workloads.generators import generate

from test_stream import assert_identical, workload_params

NET = "star:bandwidth=1e8,latency=1e-6"


def engine(w, window, sharing="ccmod", send_mode="rendezvous", sink=None, net=NET):
    node = np.arange(w.nranks, dtype=np.int64)
    nt = load_network(net, w.nranks)
    msgs = compile_messages(w, nt, node, sharing, 0.0, 1e10)
    eng = Engine(w, msgs, nt.nresources, nt.capacity_Bps.reshape(-1), nt.background_flat(),
                 sharing=sharing, send_mode=send_mode, node_of_rank=node,
                 window_records=window, message_sink=sink)
    return eng, msgs, eng.run()


def blocking_ring(b, nranks, nbytes=100, tag=2):
    """One blocking send to the right neighbour per rank, even ranks sending first (no
    deadlock under rendezvous)."""
    for r in range(nranks):
        right, left = (r + 1) % nranks, (r - 1) % nranks
        if r % 2 == 0:
            b.send(r, right, nbytes, tag=tag)
            b.recv(r, left, tag=tag)
        else:
            b.recv(r, left, tag=tag)
            b.send(r, right, nbytes, tag=tag)


def long_exchange(iterations, nranks=4, nbytes=20_000):
    """Neighbour exchange (isend/irecv/waitall) and blocking ring sends, many times: a few
    messages in flight at any time, thousands over the trace."""
    b = WorkloadBuilder(nranks)
    for it in range(iterations):
        for r in range(nranks):
            b.compute(r, 1e-6 * (1 + (r + it) % 3))
            right, left = (r + 1) % nranks, (r - 1) % nranks
            b.isend(r, right, nbytes, 0, tag=1)
            b.irecv(r, left, 1, tag=1, nbytes=nbytes)
            b.waitall(r)
        blocking_ring(b, nranks)
    return b.build()


# One combination by default (the default run's time budget); CI runs all three.
@pytest.mark.parametrize("sharing,mode", [
    ("ccmod", "rendezvous"),
    pytest.param("maxmin", "eager", marks=pytest.mark.slow),
    pytest.param("ccmod:latency=unshared", "detached", marks=pytest.mark.slow)])
def test_slots_stay_bounded_by_what_is_in_flight(sharing, mode):
    # 200 rounds: 1600 messages, 25x the initial slots
    w = long_exchange(200)
    eng, msgs, makespan = engine(w, 4, sharing, mode)
    M = len(msgs.nbytes)
    assert M == 200 * 4 * 2
    # each rank's window of 4 records names at most 4 messages; a slot is freed when its
    # message is over: the live slots never exceed the windows (and the slot arrays never
    # grew past their first size, independent of the 1600 messages)
    assert eng.slots.peak <= 4 * 4 * 2
    assert eng.slots.S == kslots.INITIAL_SLOTS
    assert len(eng.G.t_end) == kslots.INITIAL_SLOTS
    whole = run(w, NET, sharing=sharing, send_mode=mode, record=True)
    part = run(w, NET, sharing=sharing, send_mode=mode, record=True, window_records=4)
    assert_identical(whole, part, (sharing, mode))
    assert makespan == engine(w, None, sharing, mode)[2]


def test_the_sink_gets_every_message_once_with_its_times():
    w = generate("uniform:nranks=6,iterations=30,fanout=2,nbytes=5000", seed=4)
    rows = []
    sink = lambda *cols: rows.append([np.array(c) for c in cols])  # noqa: E731
    eng, msgs, _ = engine(w, 3, "maxmin", "rendezvous", sink=sink)
    ids = np.concatenate([r[0] for r in rows])
    assert np.array_equal(np.sort(ids), np.arange(len(msgs.nbytes)))
    # more than one batch: slots were retired (and reused) while the run went on
    assert len(rows) > 3
    whole = engine(w, None, "maxmin", "rendezvous")[0]
    order = np.argsort(ids)
    for k, c in (("t_post_send", 1), ("t_post_recv", 2), ("t_start", 3), ("t_end", 4),
                 ("bott", 5)):
        assert np.array_equal(np.concatenate([r[c] for r in rows])[order],
                              getattr(whole, k)), k


@pytest.mark.parametrize("name,trace", workload_params(), ids=lambda x: str(x)[:30])
def test_every_growth_path_keeps_results(monkeypatch, name, trace):
    """Two slots and one heap entry per resource to start with: slots double, segments
    and pair heaps grow, mid-run, and the results are still the whole program's."""
    monkeypatch.setattr(kslots, "INITIAL_SLOTS", 2)
    monkeypatch.setattr(kslots, "INITIAL_SEGMENT", 1)
    for sharing, mode, window in (("ccmod", "rendezvous", 2), ("maxmin", "detached", 1),
                                  ("ccmod", "eager", 5)):
        kw = dict(sharing=sharing, send_mode=mode, record=True)
        assert_identical(run(trace, NET, **kw), run(trace, NET, window_records=window, **kw),
                         (name, sharing, mode, window))


def test_contention_on_a_fat_tree_with_equal_finish_times_keeps_the_id_order(monkeypatch):
    """Many equal messages finishing at the same instant: ties between messages are broken
    by message id (the slot's order key), not by slot, in both rules."""
    monkeypatch.setattr(kslots, "INITIAL_SLOTS", 2)
    b = WorkloadBuilder(8)
    for it in range(6):
        for r in range(1, 8):
            b.isend(r, 0, 1000 * (1 + it % 2), it, tag=it)
        for r in reversed(range(1, 8)):
            b.irecv(0, r, 100 + r, tag=it, nbytes=2000)
        b.waitall(0)
        for r in range(1, 8):
            b.wait(r, it)
    w = b.build()
    for sharing in ("ccmod", "maxmin"):
        kw = dict(sharing=sharing, record=True)
        for win in (1, 3):
            assert_identical(run(w, NET, **kw), run(w, NET, window_records=win, **kw),
                             (sharing, win))


from hypothesis import given, settings, strategies as st  # noqa: E402
from conftest import examples

from test_engine_properties import NETS, programs  # noqa: E402


@settings(max_examples=examples(25), deadline=None)
@given(programs(), st.sampled_from(NETS), st.sampled_from(["ccmod", "maxmin"]),
       st.sampled_from(["rendezvous", "eager", "detached"]), st.integers(1, 3))
def test_random_programs_with_two_slots_to_start_equal_whole(w, net, sharing, mode, window):
    kw = dict(sharing=sharing, send_mode=mode, record=True, mapping=None)
    whole = run(w, net, **kw)
    old = kslots.INITIAL_SLOTS, kslots.INITIAL_SEGMENT
    kslots.INITIAL_SLOTS, kslots.INITIAL_SEGMENT = 2, 1
    try:
        part = run(w, net, window_records=window, **kw)
    finally:
        kslots.INITIAL_SLOTS, kslots.INITIAL_SEGMENT = old
    assert_identical(whole, part, (net, sharing, mode, window))


def test_the_id_table_keeps_every_live_id_through_collisions_and_removals():
    """The message id -> slot table (:func:`ccmod.kernel.slots._find` / ``_remove``, linear
    probing with backward-shift removal) against a dict: a small table kept half full,
    ids inserted and removed in random order (long probe runs that wrap around), then
    rehashed into a larger table."""
    rng = np.random.default_rng(3)
    hkey, hval = np.full(64, -1, np.int64), np.zeros(64, np.int64)
    ref = {}
    for step in range(3000):
        m = int(rng.integers(0, 200)) * 64 + int(rng.integers(0, 3))   # colliding homes
        b = kslots._find(hkey, m)
        if (hkey[b] >= 0) != (m in ref):
            raise AssertionError((step, m))
        if m in ref:
            assert hval[b] == ref.pop(m)
            kslots._remove(hkey, hval, b)
        elif len(ref) < 32:
            hkey[b], hval[b] = m, step
            ref[m] = step
    assert sorted(hkey[hkey >= 0]) == sorted(ref)
    big_k, big_v = np.full(256, -1, np.int64), np.zeros(256, np.int64)
    kslots._rehash(hkey, hval, big_k, big_v)
    for m, v in ref.items():
        b = kslots._find(big_k, m)
        assert big_k[b] == m and big_v[b] == v
