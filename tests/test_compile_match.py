"""Static send/recv matching (ccmod/compile.py): the one-dimensional pairing against the
channel-by-channel one it shortcuts, on random workloads, balanced or not."""
from __future__ import annotations

import numpy as np
import pytest

from ccmod.compile import _pair_by_channel, _pair_or_explain, _rank_of_records, match_messages
from ccmod.errors import CcmodInputError
from ccmod.workloads.base import WorkloadBuilder


def _random_workload(seed: int, balanced: bool):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    # every 4th: ranks spread over 50,000 (pair keys too wide for one int64 with the tag)
    spread = 50_000 if seed % 4 == 1 else 1
    b = WorkloadBuilder(n * spread)
    for _ in range(int(rng.integers(0, 60))):
        s, d = int(rng.integers(n)) * spread, int(rng.integers(n)) * spread
        tag = int(rng.choice([0, 0, 1, -7, 2**31 - 1, -2**31]))
        size = int(rng.integers(0, 100))
        if rng.random() < 0.5:
            b.send(s, d, size, tag=tag)
        else:
            b.isend(s, d, size, req=int(rng.integers(1 << 20)), tag=tag)
        if balanced or rng.random() < 0.9:
            big = size + int(rng.integers(0, 3))   # a larger receive is legal
            b.recv(d, s, big, tag=tag)
        if rng.random() < 0.2:
            b.compute(int(rng.integers(n)) * spread, 1e-3)
    return b.build()


@pytest.mark.parametrize("seed", range(60))
def test_pairing_agrees_with_the_channel_by_channel_pairing(seed):
    w = _random_workload(seed, balanced=seed % 3 != 0)
    rank = _rank_of_records(w)
    s_idx = np.flatnonzero(np.isin(w.op, (1, 3)))
    r_idx = np.flatnonzero(np.isin(w.op, (2, 4)))
    fast = _pair_by_channel(w, rank, s_idx, r_idx)
    try:
        slow = _pair_or_explain(w, rank, s_idx, r_idx)
    except CcmodInputError as exc:
        assert fast is None                 # unbalanced: the slow pairing names the culprit
        with pytest.raises(CcmodInputError) as got:
            match_messages(w)
        assert str(got.value) == str(exc)
        return
    assert fast is not None
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    send_rec, recv_rec = match_messages(w)
    # the n-th send of a channel meets its n-th receive, in send-record order
    assert np.all(np.diff(send_rec) > 0)
    assert np.array_equal(w.peer[send_rec], rank[recv_rec])
    assert np.array_equal(w.peer[recv_rec], rank[send_rec])
    assert np.array_equal(w.tag[send_rec], w.tag[recv_rec])


@pytest.mark.parametrize("seed", range(24))
def test_counted_pairing_equals_the_sorted_one(seed, monkeypatch):
    """Tags in a narrow range: the dense channel table (ccmod/kernel/pairing.py) pairs them
    by counting; the sorts (the table turned off) give the same pairs, and both say None
    on the same unbalanced channels."""
    import ccmod.kernel.pairing as kp
    monkeypatch.setattr(kp, "DENSE_MIN_MESSAGES", 0)     # counted however few they are
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(1, 9))
    b = WorkloadBuilder(n)
    for _ in range(int(rng.integers(0, 200))):
        s, d = int(rng.integers(n)), int(rng.integers(n))
        tag = int(rng.integers(-3, 4))
        b.isend(s, d, 8, req=int(rng.integers(1 << 20)), tag=tag)
        if seed % 4 or rng.random() < 0.95:
            b.recv(d, s, 8, tag=tag)
    w = b.build()
    rank = _rank_of_records(w)
    s_idx = np.flatnonzero(np.isin(w.op, (1, 3)))
    r_idx = np.flatnonzero(np.isin(w.op, (2, 4)))
    counted = _pair_by_channel(w, rank, s_idx, r_idx)
    monkeypatch.setattr(kp, "pair_dense", lambda *a: None)
    sorted_ = _pair_by_channel(w, rank, s_idx, r_idx)
    assert (counted is None) == (sorted_ is None)
    if counted is not None:
        for a, b_ in zip(counted, sorted_):
            assert a.dtype == b_.dtype and np.array_equal(a, b_)
