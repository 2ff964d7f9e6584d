"""The kernel's compile helpers: allocation-free sort, the state arena and its head."""
import os
from pathlib import Path

import numpy as np

from ccmod.kernel.state import H_BASE, Arena, MsgSt, Scalars


def test_sort_ids_matches_numpy_short_and_long():
    from ccmod.kernel.heaps import sort_ids
    rng = np.random.default_rng(7)
    for n in [0, 1, 2, 5, 31, 32, 33, 64, 257]:       # insertion below 33, heapsort above
        ids = rng.permutation(10 * n + 1)[:n].astype(np.int64)
        buf = np.full(n + 6, -5, np.int64)
        buf[3:3 + n] = ids
        sort_ids(buf, 3, n)
        assert list(buf[3:3 + n]) == sorted(ids.tolist())
        assert (buf[:3] == -5).all() and (buf[3 + n:] == -5).all()   # nothing else touched


def test_arena_views_and_head_agree():
    from ccmod.kernel.compiled import msg_st, scalars
    A = Arena()
    G = A.struct(MsgSt, t_post_send=("f", 3, np.inf), t_post_recv=("f", 3, 1.5),
                 t_start=("f", 3, 0.0), t_end=("f", 3, 0.0), send_waiter=("i", 3, -1),
                 recv_waiter=("i", 3, np.arange(3)), am_waiter=("i", 3, 0), bott=("i", 3, 0),
                 nic_next=("f", 2, 0.0), refs=("i", 1, 0), ret=("i", 1, 0))
    K = A.struct(Scalars, ks=("i", 8, 0), kf=("f", 2, 0.0))
    I, F = A.alloc()
    v = A.views(MsgSt, I, F)
    assert list(v.recv_waiter) == [0, 1, 2] and (v.t_post_recv == 1.5).all()
    v.t_end[1] = 4.0                                     # views write into the buffers
    assert F[G.t_end + 1] == 4.0
    # the compiled functions read the offsets from the head of I
    assert tuple(I[H_BASE[MsgSt]:H_BASE[MsgSt] + len(MsgSt._fields)]) == tuple(G)
    assert msg_st(I) == G and scalars(I) == K


def test_int32_fields_share_the_int_buffer_and_refuse_what_does_not_fit():
    """A "j" field is int32 elements of I (offset in int32 units), read and written through
    as_i32; its initial values must fit."""
    import pytest
    from ccmod.kernel.rawbuf import as_i32
    A = Arena()
    G = A.struct(MsgSt, t_post_send=("f", 3, np.inf), t_post_recv=("f", 3, 1.5),
                 t_start=("f", 3, 0.0), t_end=("f", 3, 0.0), send_waiter=("j", 3, -1),
                 recv_waiter=("j", 3, np.arange(3)), am_waiter=("j", 3, 0), bott=("i", 3, 7),
                 nic_next=("f", 2, 0.0), refs=("i", 1, 0), ret=("i", 1, 0))
    I, F = A.alloc()
    v = A.views(MsgSt, I, F)
    assert v.recv_waiter.dtype == np.int32 and list(v.recv_waiter) == [0, 1, 2]
    assert list(v.send_waiter) == [-1, -1, -1] and list(v.bott) == [7, 7, 7]
    J = as_i32(I)
    J[G.send_waiter + 1] = 5                             # no other field moves
    assert J[G.recv_waiter + 2] == 2 and list(v.send_waiter) == [-1, 5, -1]
    assert list(v.recv_waiter) == [0, 1, 2] and list(v.bott) == [7, 7, 7]
    B = Arena()
    B.struct(MsgSt, t_post_send=("f", 1, 0.0), t_post_recv=("f", 1, 0.0),
             t_start=("f", 1, 0.0), t_end=("f", 1, 0.0), send_waiter=("j", 1, 2**31),
             recv_waiter=("j", 1, 0), am_waiter=("j", 1, 0), bott=("i", 1, 0),
             nic_next=("f", 1, 0.0), refs=("i", 1, 0), ret=("i", 1, 0))
    with pytest.raises(OverflowError, match="int32"):
        B.alloc()


def test_one_compiled_loop_serves_recorded_and_quiet_runs():
    """A run that records and one that does not share the compiled loop and its entry
    (logs as addresses, 0 when nothing is recorded): a first run compiles once for both."""
    from ccmod.api import run
    from ccmod.kernel import _cached_signatures, cache_is_cold
    from ccmod.kernel.loop import _loop_entry, run_entry
    from ccmod.kernel.state import config
    trace = str(Path(__file__).resolve().parent.parent / "traces" / "pingpong.ti")
    rec = run(trace, "star", record=True)
    quiet = run(trace, "star", record=False)
    assert rec.makespan_s == quiet.makespan_s and len(rec.rank_states) > 0
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return
    def cc(sigs):       # the ccmod rule's signatures, compiled here or in numba's cache
        return {str(s) for s in sigs if s[0].instance_class.__name__ == "CcConfig"}
    loops = cc(_loop_entry.signatures) | cc(_cached_signatures("_loop_entry"))
    assert len(loops) == 1                            # one loop for both runs
    entries = cc(run_entry.signatures) | cc(_cached_signatures("run_entry"))
    assert len(entries) == 1                          # and one entry
    C = config(0, *([0] * 7))
    assert not cache_is_cold(C, L=None) and not cache_is_cold(C, L=rec)   # both cached
