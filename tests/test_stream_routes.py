"""Streaming with recycled message slots whose routes change length (:mod:`ccmod.kernel.slots`):
phases of intra-node messages (two route entries: the node's copy resources), of messages
to far ranks (up to six entries on a torus) and of random peers, hundreds of messages in
flight at once, so that a slot freed by a message of one route length is taken by one of
another. The article's rule keeps a streamed slot's per-entry links at the slot's own
route entries (``cc_new(entry_blocks=False)``): blocks made per route length would
outgrow the slots' entries here (forcing them on crashed the fat-tree case). Results are
the in-memory run's bit for bit."""
import numpy as np
import pandas as pd
import pytest

from ccmod.api import run
from ccmod.kernel import slots as kslots
from ccmod.streaming import run_streamed
from ccmod.workloads.base import WorkloadBuilder
from ccmod.workloads.tabular import write_parquet

from test_stream import assert_identical

#: 16 nodes each, two ranks per node (``mapping="block:2"``), intra-node copies shared
NETS = {"torus": "torus:dims=4x4,intra=shared",
        "fattree": "fattree2:hosts_per_leaf=2,spines=2,intra=shared",
        "dragonfly": "dragonfly:routers=4,hosts=2,global_links=1,intra=shared"}
RANKS, PPN = 32, 2


def phased(rounds=6, fanout=6, seed=1):
    """Rounds of ``fanout`` isends per rank, all received before the waitall (irecvs in
    a shuffled order): to the node mate (intra-node), to the far half of the ranks, then
    to random peers, in turn. Sizes and computes vary so that ends interleave."""
    rng = np.random.default_rng(seed)
    b = WorkloadBuilder(RANKS)
    for it in range(rounds):
        kind = it % 3
        pairs = []
        for r in range(RANKS):
            for j in range(fanout):
                if kind == 0:
                    p = r - r % PPN + (r + 1 + j % (PPN - 1)) % PPN
                elif kind == 1:
                    p = (r + RANKS // 2 + j) % RANKS
                else:
                    p = int(rng.integers(0, RANKS))
                pairs.append((r, (r + PPN) % RANKS if p == r else p, j))
        for r in range(RANKS):
            b.compute(r, 1e-7 * (1 + (r * 7 + it) % 5))
            inc = [(s, j) for s, d, j in pairs if d == r]
            rng.shuffle(inc)
            q = 0
            for s, j in inc:
                b.irecv(r, s, q, tag=j)
                q += 1
            for s, d, j in pairs:
                if s == r:
                    b.isend(r, d, 500 * (1 + (s + d + j) % 7), q, tag=j)
                    q += 1
            b.waitall(r)
    return b.build()


def _slot_route_lengths(monkeypatch):
    """Record, per slot filled by :meth:`Slots._fill`, the route lengths it was given."""
    seen = {}
    fill = kslots.Slots._fill

    def spy(self, ns, ni, given):
        for s, h in zip(np.asarray(ns).tolist(), np.asarray(given[2]).tolist()):
            seen.setdefault(s, set()).add(h)
        return fill(self, ns, ni, given)
    monkeypatch.setattr(kslots.Slots, "_fill", spy)
    return seen


# one rule per network by default (the default run's time budget); CI runs all six
@pytest.mark.parametrize("net,sharing", [
    ("torus", "ccmod"), ("fattree", "ccmod"), ("dragonfly", "maxmin"),
    pytest.param("torus", "maxmin", marks=pytest.mark.slow),
    pytest.param("fattree", "maxmin", marks=pytest.mark.slow),
    pytest.param("dragonfly", "ccmod", marks=pytest.mark.slow)])
def test_recycled_slots_with_changing_route_lengths_equal_in_memory(monkeypatch, net,
                                                                     sharing):
    w = phased()
    kw = dict(sharing=sharing, record=True, mapping=f"block:{PPN}")
    whole = run(w, NETS[net], **kw)
    hops = whole.messages.hops.to_numpy()
    assert hops.min() == 2 and hops.max() >= 4           # intra-node and multi-hop
    seen = _slot_route_lengths(monkeypatch)
    # 3 records per rank: slots retired one by one; 16: a whole round of each rank in
    # the kernel at once (up to 32 x 12 messages in flight)
    for window in (3, 16):
        seen.clear()
        part = run(w, NETS[net], window_records=window, **kw)
        assert_identical(whole, part, (net, sharing, window))
        # slots were recycled, and taken by messages of another route length
        assert len(seen) < len(hops)
        assert sum(len(h) > 1 for h in seen.values()) >= len(seen) // 2, window
    # slots are added only when every one is in use: hundreds were in flight at once
    assert len(seen) >= 200


def test_streamed_parquet_run_with_changing_route_lengths_writes_the_in_memory_tables(
        tmp_path):
    """The same through ``--stream`` (Parquet source, messages matched and routed per
    batch): the tables the in-memory run writes."""
    p = write_parquet(phased(rounds=4), tmp_path / "w.parquet", row_group_size=8)
    kw = dict(sharing="ccmod", mapping=f"block:{PPN}")
    mem = run(p, NETS["fattree"], sinks=["parquet"], out_dir=tmp_path / "mem", **kw)
    st = run_streamed(p, NETS["fattree"], window=16, out_dir=tmp_path / "st", **kw)
    assert st.makespan_s.hex() == mem.makespan_s.hex()
    for name in ("messages", "ranks", "links"):
        a = pd.read_parquet(tmp_path / "mem" / f"{name}.parquet")
        b = pd.read_parquet(tmp_path / "st" / f"{name}.parquet")
        if name == "messages":     # streamed rows come in the order messages finish
            b = b.sort_values("msg_id", kind="stable").reset_index(drop=True)
        if name == "links":        # link_load is not streamed, nor its peak
            a, b = (d.drop(columns="utilisation_peak") for d in (a, b))
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=name)
