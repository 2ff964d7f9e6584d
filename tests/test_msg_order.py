"""Messages in slot order (ccmod/kernel/order.py): the same results, bit for bit, as in
id order; the Messages and the records' ids are the caller's again after the run."""
from pathlib import Path

import numpy as np
import pytest

from ccmod.api import run
from ccmod.errors import DeadlockError
from ccmod.kernel import order as korder
from ccmod.workloads.base import WorkloadBuilder

TRACES = Path(__file__).resolve().parent.parent / "traces"
STAR = "star:bandwidth=1e8,latency=1e-6"


@pytest.fixture
def ordered(monkeypatch):
    """``ordered(flag)``: every whole-program run in slot order (True) or in id order."""
    def set_(flag):
        monkeypatch.setattr(korder, "ORDER_MIN_MESSAGES", 1 if flag else 1 << 62)
        monkeypatch.setattr(korder, "ORDER_MIN_RANKS", 1)
        monkeypatch.setattr(korder, "ORDER_MIN_RANKS_MAXMIN", 1)
    return set_


def _bits(r):
    out = {"makespan": r.makespan_s.hex(), "events": r.events}
    for name in ("messages", "ranks", "links", "rank_states", "link_load"):
        df = getattr(r, name)
        if df is not None:
            for c in df.columns:
                a = df[c].to_numpy()
                out[(name, c)] = repr(a.tolist()) if a.dtype.kind == "O" else a.tobytes()
    return out


def _mixed():
    """Waits on isend/irecv lists, active messages, a barrier and computes, shuffled."""
    rng = np.random.default_rng(3)
    b = WorkloadBuilder(6)
    for k in range(4):
        for a in range(0, 6, 2):
            c = (a + 1 + 2 * k) % 6
            b.isend(a, c, int(rng.integers(1, 200000)), req=0)
            b.irecv(c, a, req=0)
            b.compute(a, float(rng.exponential(1e-4)))
            b.wait(a, 0)
            b.waitall(c)
        b.amrequest(1 + 2 * (k % 3), 2 * (k % 3), 1000, handler_s=1e-4)
        for r in range(6):
            b.barrier(r)
    return b.build()


def _pairs():
    """Enough messages that the order keys span whole pages (the run drops every page of
    its scratch it can: the outputs' slot -> id must survive that)."""
    rng = np.random.default_rng(5)
    b = WorkloadBuilder(8)
    for _ in range(300):
        p = rng.permutation(8)
        for a, c in zip(p[0::2], p[1::2]):
            b.send(int(a), int(c), int(rng.integers(1, 100000)))
            b.recv(int(c), int(a))
    return b.build()


@pytest.mark.parametrize("case", [
    ("stencil16.ti", "ccmod", "rendezvous"), ("alltoall8.ti", "maxmin", "detached"),
    ("simgrid-actions_with_isend.txt", "ccmod:latency=unshared,capacity=ratio", "eager"),
    ("mixed", "ccmod", "rendezvous"), ("mixed", "maxmin", "eager"),
    ("pairs", "ccmod", "rendezvous")])
def test_slot_order_gives_identical_results(ordered, case):
    trace, sharing, mode = case
    w = {"mixed": _mixed, "pairs": _pairs}[trace]() if trace in ("mixed", "pairs") else \
        str(TRACES / trace)
    out = []
    for flag in (False, True):
        ordered(flag)
        out.append(_bits(run(w, STAR, sharing=sharing, send_mode=mode, record=True,
                             eager_limit_bytes=4096)))
    assert out[0].keys() == out[1].keys()
    for k in out[0]:
        assert out[0][k] == out[1][k], k


def test_plan_numbers_in_execution_order_and_back():
    # rank 0 receives m1 then sends m0; rank 1 sends m1, receives m0, then makes an
    # active-message request (m2, its reply m3)
    rank_ptr = np.array([0, 2, 5])
    rec_msg = np.array([1, 0, 1, 0, 2], np.int32)
    kind = np.array([0, 0, 1, 2], np.int8)
    rm = rec_msg.copy()
    okey = korder.plan(rank_ptr, rm, kind, 4)
    # both records of m1 come first (position 0), of m0 next; the reply follows its request
    assert okey.tolist() == [1, 0, 2, 3]
    assert okey[rm].tolist() == rec_msg.tolist()
    korder.renumber_back(rm, okey)
    assert rm.tolist() == rec_msg.tolist()
    # records that are not one send and one receive per message: left alone
    odd = np.array([1, -1, 1, 0, 2], np.int32)
    assert korder.plan(rank_ptr, odd, kind, 4) is None
    assert odd.tolist() == [1, -1, 1, 0, 2]


def test_messages_are_the_callers_again_after_the_run(ordered):
    from ccmod.compile import compile_messages
    from ccmod.engine import Engine
    from ccmod.netsys.networks import make_network
    ordered(True)
    b = WorkloadBuilder(4)
    for k in range(3):
        for a in range(4):
            b.send(a, (a + k + 1) % 4, 100 * (a + 1) + k)
        for a in range(4):
            b.recv(a, (a - k - 1) % 4)
    w = b.build()
    net = make_network(STAR, 4)
    net.set_ranks(4)
    msgs = compile_messages(w, net, np.arange(4), "ccmod", 0.0, 1e9, charge_overheads=True)
    before = {k: np.array(getattr(msgs, k)) for k in ("src", "dst", "nbytes", "quiet_s",
                                                       "route_ptr", "route_res", "rec_msg")}
    eng = Engine(w, msgs, net.nresources, net.resource_capacity_Bps(), np.zeros(
        net.nresources), record=False, send_mode="eager")
    assert eng.Mv.okey.tolist() != list(range(len(msgs.nbytes)))     # in slot order
    eng.run()
    for k, v in before.items():
        assert np.array_equal(getattr(msgs, k), v), k


def test_deadlock_is_described_the_same(ordered):
    b = WorkloadBuilder(3)
    for r in range(3):                   # a round that completes, then a cycle of receives
        b.send(r, (r + 1) % 3, 10 * (r + 1))
    for r in range(3):
        b.recv(r, (r - 1) % 3)
    for r in range(3):
        b.recv(r, (r - 1) % 3)
        b.send(r, (r + 1) % 3, 10)
    msg = []
    for flag in (False, True):
        ordered(flag)
        with pytest.raises(DeadlockError) as e:
            run(b.build(), STAR, eager_limit_bytes=100)
        msg.append(str(e.value))
    assert msg[0] == msg[1]


def test_wanted_by_rule():
    """Slot order from 128 ranks under ccmod, from 512 under max-min (kernel/order.py)."""
    M = korder.ORDER_MIN_MESSAGES
    assert korder.wanted(M, 128) and not korder.wanted(M, 127)
    assert not korder.wanted(M - 1, 4096)
    assert not korder.wanted(M, 256, maxmin=True) and korder.wanted(M, 512, maxmin=True)
