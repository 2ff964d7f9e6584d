"""The windowed feed's outstanding requests in flat arrays (:mod:`ccmod.kernel.requests`)
against per-rank dicts, as :func:`ccmod.kernel.waits.track_request` keeps them."""
import numpy as np
import pytest

from ccmod.api import run
from ccmod.errors import CcmodInputError
from ccmod.kernel import requests as kr
from ccmod.workloads.base import WorkloadBuilder


def test_outstanding_requests_behave_as_per_rank_dicts():
    """Posts (some under an id still outstanding: the value changes, the place in the
    order does not), waits (some on ids never posted) and waitalls (in posting order) on
    5 ranks, with negative and colliding ids; the pool and table grow from 1 entry."""
    rng = np.random.default_rng(5)
    n = 5
    out = kr.Outstanding(n, entries=1)
    ref = [dict() for _ in range(n)]
    wa_msg, wa_side = np.zeros(4096, np.int64), np.zeros(4096, np.int64)
    for step in range(4000):
        r = int(rng.integers(0, n))
        q = int(rng.integers(-20, 20)) * 1024
        key = kr.req_key(q, r, n)
        x = rng.random()
        if x < 0.55:
            out.reserve(1)
            v = 2 * step + int(rng.integers(0, 2))
            kr.post(*out.tables(), r, key, v)
            ref[r][q] = v
        elif x < 0.95:
            got = kr.take(*out.tables(), r, key)
            assert got == ref[r].pop(q, -1), step
        else:
            k = kr.take_all(*out.tables(), r, wa_msg, wa_side, 0)
            want = list(ref[r].values())
            ref[r].clear()
            assert k == len(want)
            assert list(2 * wa_msg[:k] + wa_side[:k]) == want, step
        assert [out.count(i) for i in range(n)] == [len(d) for d in ref]
    assert sorted(out.hkey[out.hkey >= 0]) == sorted(
        kr.req_key(q, r, n) for r in range(n) for q in ref[r])


def test_a_request_id_too_large_for_a_key_is_one_clear_line():
    b = WorkloadBuilder(2)
    b.isend(0, 1, 8, req=1 << 62)
    b.wait(0, 1 << 62)
    b.recv(1, 0)
    w = b.build()
    assert run(w, "star", record=False).makespan_s > 0      # in memory: any id
    with pytest.raises(CcmodInputError, match=r"request id 4611686018427387904 of rank 0 is "
                                              "too large for a streamed run"):
        run(w, "star", record=False, window_records=2)
