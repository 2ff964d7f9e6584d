"""A bottleneck group's members (ccmod/kernel/cc_groups.py: a sorted run plus a heap) come
out in (finish mark, order key) order whatever the order they joined and left in.

Run as plain Python (``py_func``), so the test compiles nothing and takes milliseconds.
"""
from collections import namedtuple

import numpy as np
import pytest

from ccmod.kernel import cc_groups, heaps
from ccmod.kernel.state import CI_G_LEN, CI_L_HEAD, CI_L_TAIL, CRI

G = namedtuple("G", "vfin okey g_pos g_next ri g_item seg")


@pytest.fixture
def py(monkeypatch):
    """The group and heap functions as plain Python (their callees looked up at call time)."""
    for mod, names in ((cc_groups, ("_before", "heap_push", "heap_remove", "g_first",
                                     "g_add", "g_del", "g_empty", "g_take_sorted")),
                       (heaps, ("_lt", "_before", "_sift_down", "heap_up", "heap_down"))):
        for name in names:
            f = getattr(mod, name)
            monkeypatch.setattr(mod, name, getattr(f, "py_func", f))
    return cc_groups


def _state(M, R):
    """Offsets of the fields in one int buffer ``I`` and one float buffer ``F`` (``g_next``
    an int32 field of ``I``, and each resource's ``l_head``, ``l_tail``,
    ``g_len`` in its record, as the kernel lays them out)."""
    sizes = dict(okey=M, g_pos=M, g_next=M, ri=R * CRI, g_item=R * M, seg=R + 1)
    off, o = {}, 0
    for k, n in sizes.items():
        off[k] = o
        o += n
    I = np.zeros(o, np.int64)
    off["g_next"] *= 2               # an int32 field: its offset counts int32 elements
    S = G(vfin=0, seg=off["seg"], **{k: v for k, v in off.items() if k != "seg"})
    I[S.ri + CI_L_HEAD:S.ri + R * CRI:CRI] = -1
    I[S.ri + CI_L_TAIL:S.ri + R * CRI:CRI] = -1
    I[S.g_pos:S.g_pos + M] = -1
    I[S.seg:S.seg + R + 1] = np.arange(R + 1) * M
    return S, I, np.zeros(M)


@pytest.mark.parametrize("seed", range(4))
def test_members_leave_in_finish_order(py, seed):
    rng = np.random.default_rng(seed)
    M, R = 40, 2
    S, I, F = _state(M, R)
    I[S.okey:S.okey + M] = rng.permutation(M)     # order keys are not the ids
    member = {}                                   # m -> group
    clock = [0.0, 0.0]
    for _ in range(400):
        op = rng.integers(4)
        free = [m for m in range(M) if m not in member]
        if op <= 1 and free:
            m = int(rng.choice(free))
            r = int(rng.integers(R))
            # mostly later marks (the run), some earlier, some ties, as joins give them
            clock[r] += float(rng.integers(0, 3))
            F[m] = clock[r] + (float(rng.integers(0, 4)) if op == 0 else -float(rng.integers(6)))
            py.g_add(S, I, F, r, m)
            member[m] = r
        elif op == 2 and member:
            m = int(rng.choice(list(member)))
            py.g_del(S, I, F, member.pop(m), m)
        else:
            r = int(rng.integers(R))
            want = sorted((F[m], I[S.okey + m], m) for m, g in member.items() if g == r)
            assert py.g_empty(S, I, r) == (not want)
            first = py.g_first(S, I, F, r)
            assert first == (want[0][2] if want else -1)
            if want and rng.integers(2):
                py.g_del(S, I, F, r, first)
                del member[first]
    for r in range(R):                            # drain: the whole order, member by member
        want = [m for _, _, m in sorted((F[m], I[S.okey + m], m)
                                        for m, g in member.items() if g == r)]
        got = []
        while not py.g_empty(S, I, r):
            m = py.g_first(S, I, F, r)
            py.g_del(S, I, F, r, m)
            got.append(m)
        assert got == want


def test_take_sorted_heap_whole(py):
    """Members between the run's ends go to the heap; pushed in order, the heap is a sorted
    array and, the run empty, the whole group is taken at once, in finish order."""
    M = 14
    S, I, F = _state(M, 1)
    I[S.okey:S.okey + M] = np.arange(M)
    F[0], F[1] = 0.0, 100.0                       # the run's ends
    py.g_add(S, I, F, 0, 0)
    py.g_add(S, I, F, 0, 1)
    F[2:] = np.arange(1, M - 1)
    for m in range(2, M):
        py.g_add(S, I, F, 0, m)
    assert I[S.ri + CI_G_LEN] == M - 2
    out = len(I)
    I = np.concatenate([I, np.zeros(M, np.int64)])
    assert py.g_take_sorted(S, I, F, 0, 1e9, out) == 0     # the run is not empty
    py.g_del(S, I, F, 0, 1)
    py.g_del(S, I, F, 0, 0)
    assert py.g_take_sorted(S, I, F, 0, M - 3.0, out) == 0  # the last is not due
    assert py.g_take_sorted(S, I, F, 0, M - 2.0, out) == M - 2
    assert list(I[out:out + M - 2]) == list(range(2, M))
    assert py.g_empty(S, I, 0) and all(I[S.g_pos + m] == -1 for m in range(M))
