"""The kernel's per-flow and per-timer state is recycled: a run touches as many flow slots
and message timer slots as flows and timers are active at once, not one per message."""
import numpy as np
import pytest

from ccmod.api import load_network
from ccmod.compile import compile_messages
from ccmod.engine import Engine
from ccmod.kernel import state as ks
from ccmod.kernel.mm_classes import N_SHW
from ccmod.workloads.base import WorkloadBuilder


def ping_pong(k):
    """k messages one after the other between ranks 0 and 1 (blocking)."""
    b = WorkloadBuilder(2)
    for i in range(k):
        s, d = (0, 1) if i % 2 == 0 else (1, 0)
        b.send(s, d, 1000 + i, i)
        b.recv(d, s, 1000 + i, i)
    return b.build()


@pytest.mark.parametrize("sharing", ["ccmod:latency=unshared", "maxmin"])
def test_slots_are_as_many_as_active_at_once(sharing):
    w = ping_pong(40)
    node = np.arange(2, dtype=np.int64)
    net = load_network("star:bandwidth=1e8,latency=1e-6", 2)
    msgs = compile_messages(w, net, node, sharing.split(":")[0], 0.0, 1e10)
    eng = Engine(w, msgs, net.nresources, net.capacity_Bps.reshape(-1), net.background_flat(),
                 sharing=sharing, send_mode="rendezvous", node_of_rank=node)
    eng.run()
    assert np.all(np.isfinite(eng.G.t_end))          # every message went through
    T = eng._arena.views(ks.Timers, eng.I, eng.F)
    # one message at a time, its latency-phase timer: one slot of the pool past the ranks'
    assert T.nf[1] - (2 * w.nranks + 2) == 1    # (the queue's 2 sentinels)
    if sharing == "maxmin":
        assert eng.MS.si[N_SHW] == 1                 # one flow slot, reused 40 times
