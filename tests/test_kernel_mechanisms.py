"""Closed forms for the kernel's contract mechanisms: NIC gap, unshared latency, per-message
overheads, background steps (all default to 0/off, which leaves results unchanged)."""
import numpy as np
import pytest

from ccmod.api import load_network
from ccmod.collect import collect
from ccmod.compile import compile_messages
from ccmod.engine import Engine
from ccmod.workloads.base import WorkloadBuilder

BW, LAT = 1e8, 1e-6
STAR = f"star:bandwidth={BW:g},latency={LAT:g}"


def evaluate(w, sharing="ccmod", send_mode="rendezvous", o_send=0.0, o_recv=0.0, gap=0.0,
             bg=None, network=STAR):
    """Run the engine directly with the mechanism arrays (what networks/costs will give)."""
    node = np.arange(w.nranks, dtype=np.int64)
    net = load_network(network, w.nranks)
    msgs = compile_messages(w, net, node, sharing, 0.0, 1e10)
    M = len(msgs.nbytes)
    msgs.o_send_s = np.full(M, o_send)
    msgs.o_recv_s = np.full(M, o_recv)
    kw = {}
    if bg is not None:
        kw = dict(bg_t_s=np.array([b[0] for b in bg]), bg_resource=np.array([b[1] for b in bg]),
                  bg_load=np.array([b[2] for b in bg]))
    eng = Engine(w, msgs, net.nresources, net.capacity_Bps.reshape(-1), net.background_flat(),
                 sharing=sharing, send_mode=send_mode, node_of_rank=node,
                 gap_s=np.full(w.nranks, gap), **kw)
    makespan = eng.run()
    return collect(eng, msgs, net, node, makespan, 0.0, {"sharing": sharing}), msgs


def stream(k, nbytes):
    b = WorkloadBuilder(2)
    for i in range(k):
        b.isend(0, 1, nbytes, i)
        b.irecv(1, 0, i, nbytes=nbytes)
    b.waitall(0)
    b.waitall(1)
    return b.build()


@pytest.mark.parametrize("sharing", ["ccmod", "maxmin"])
def test_nic_gap_caps_a_stream_at_one_message_per_gap(sharing):
    k, g = 50, 1e-4                  # the gap dominates the per-message time (~2 us)
    r, msgs = evaluate(stream(k, 8), sharing=sharing, gap=g)
    starts = np.sort(r.messages.t_start_s.to_numpy())
    assert np.allclose(np.diff(starts), g, rtol=1e-9)
    q = msgs.quiet_s[0]
    assert r.makespan_s == pytest.approx((k - 1) * g + q, rel=1e-9)
    assert (k - 1) / (starts[-1] - starts[0]) == pytest.approx(1 / g, rel=1e-9)


def test_gap_zero_changes_nothing():
    a, _ = evaluate(stream(20, 1000))
    b, _ = evaluate(stream(20, 1000), gap=0.0)
    assert np.array_equal(a.messages.t_end_s.to_numpy(), b.messages.t_end_s.to_numpy())


def test_unshared_latency_k_small_messages():
    # k messages on one link: the article's rule divides all of Tquiet (k x Tq); the
    # refinement pays the latency once (unshared) and shares only the bandwidth part
    k, n = 8, 100
    b = WorkloadBuilder(k + 1)
    for i in range(k):
        b.send(i, k, n, tag=i)
        b.irecv(k, i, i, nbytes=n, tag=i)
    b.waitall(k)
    w = b.build()
    art, msgs = evaluate(w, sharing="ccmod")
    ref, _ = evaluate(w, sharing="ccmod:latency=unshared")
    lat, tq = msgs.latency_s[0], msgs.quiet_s[0]
    assert art.makespan_s == pytest.approx(k * tq, rel=1e-9)
    assert ref.makespan_s == pytest.approx(lat + k * (tq - lat), rel=1e-9)
    assert ref.makespan_s < art.makespan_s


def test_overheads_charged_to_sender_and_receiver():
    os_, or_ = 3e-6, 5e-6
    b = WorkloadBuilder(2)
    b.send(0, 1, 10_000)
    b.recv(1, 0, 10_000)
    r, msgs = evaluate(b.build(), o_send=os_, o_recv=or_)
    q = msgs.quiet_s[0]
    rk = r.ranks.set_index("rank")
    assert r.messages.t_start_s.iloc[0] == pytest.approx(os_, rel=1e-12)
    assert rk.loc[0, "finish_s"] == pytest.approx(os_ + q, rel=1e-12)
    assert rk.loc[1, "finish_s"] == pytest.approx(os_ + q + or_, rel=1e-12)
    assert rk.loc[0, "overhead_s"] == pytest.approx(os_)
    assert rk.loc[1, "overhead_s"] == pytest.approx(or_)
    st = r.rank_states
    ov = st[st.state == "overhead"]
    assert len(ov) == 2 and ov.t_end_s.sub(ov.t_start_s).sum() == pytest.approx(os_ + or_)


def test_receive_overhead_after_waitall_of_k_irecvs():
    k, or_ = 4, 2e-6
    r, msgs = evaluate(stream(k, 1000), o_recv=or_, send_mode="detached")
    rk = r.ranks.set_index("rank")
    assert rk.loc[1, "overhead_s"] == pytest.approx(k * or_)
    assert rk.loc[1, "finish_s"] == pytest.approx(r.messages.t_end_s.max() + k * or_)


def one_message(nbytes=100_000):
    b = WorkloadBuilder(2)
    b.send(0, 1, nbytes)
    b.recv(1, 0, nbytes)
    return b.build()


def test_background_step_halfway_through_a_transfer_ccmod():
    r0, msgs = evaluate(one_message())
    q = msgs.quiet_s[0]
    res = msgs.route_res[msgs.route_ptr[0]]
    r, _ = evaluate(one_message(), bg=[(q / 2, res, 0.5)])
    # half the quiet work at full rate, the other half at free fraction 0.5
    assert r.makespan_s == pytest.approx(q / 2 + q, rel=1e-12)
    assert r0.makespan_s == pytest.approx(q, rel=1e-12)


def test_background_step_halfway_through_a_transfer_maxmin():
    nbytes = 100_000
    r0, msgs = evaluate(one_message(nbytes), sharing="maxmin")
    lat = msgs.latency_s[0]
    xfer = r0.makespan_s - lat
    assert xfer == pytest.approx(nbytes / BW, rel=1e-9)
    res = msgs.route_res[msgs.route_ptr[0]]
    r, _ = evaluate(one_message(nbytes), sharing="maxmin", bg=[(lat + xfer / 2, res, 0.75)])
    assert r.makespan_s == pytest.approx(lat + xfer / 2 + 2 * xfer, rel=1e-9)


def test_background_step_after_the_run_changes_nothing():
    r0, _ = evaluate(one_message())
    r, _ = evaluate(one_message(), bg=[(1.0, 0, 0.9)])
    assert r.makespan_s == r0.makespan_s
