"""Max-min bottleneck groups (ccmod.kernel.mm_groups) against brute force and a full
re-solve: many classes crossing one shared resource, some held back by private hops or
caps, some routes joining a second shared resource (no star), background steps."""
import numpy as np
from hypothesis import given, settings, strategies as st
from conftest import examples

from ccmod.kernel import MaxMinSharing
from ccmod.kernel.mm_classes import F_LEN
from test_kernel import brute_maxmin
from test_kernel_jit import drive as drive_full

INF = float("inf")
NS = 12                      # senders' private hops 0..11, shared D = 12, second X = 13
D, X = NS, NS + 1
CAP = np.array([1.0] * 9 + [0.3, 0.5, 1.0] + [3.0, 2.0])



def arrivals_of(seed, nmax=30):
    """Random arrivals (t, work, route, cap), mostly onto D from distinct senders (so
    that groups form), some onto X or across both (no star), a few capped."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(int(rng.integers(10, nmax + 1))):
        i = int(rng.integers(0, NS))
        kind = rng.random()
        r = [i, D] if kind < 0.75 else ([i, X] if kind < 0.88 else [i, D, X])
        cap = 0.3 if rng.random() < 0.1 else INF
        out.append((float(rng.uniform(0, 1)), float(rng.uniform(0.5, 3)), r, cap))
    return out


def drive(kernel, arrivals, steps=()):
    """Arrivals as tests/test_kernel.py's drive, plus background ``steps`` (t, r, load)."""
    ev = sorted([(a[0], 0, i) for i, a in enumerate(arrivals)]
                + [(s[0], 1, j) for j, s in enumerate(steps)])
    ends, k = {}, 0
    while k < len(ev) or kernel.active_count():
        ta = ev[k][0] if k < len(ev) else INF
        tk = kernel.next_time()
        if ta <= tk:
            _, kind, i = ev[k]
            if kind == 0:
                t, work, r, cap = arrivals[i]
                kernel.start(i, t, work, r, cap)
            else:
                kernel.set_load(steps[i][1], steps[i][0], steps[i][2])
            k += 1
        else:
            for m in kernel.pop_due(tk):
                ends[m] = tk
    return np.array([ends[i] for i in range(len(arrivals))])


def kernel():
    return MaxMinSharing(NS + 2, CAP.copy(), np.zeros(NS + 2), max_messages=64)


def test_incast_is_one_group_with_one_heap_entry():
    # sender 9 is held below D's fair share (3 / 8) by its own hop: not a group
    k = kernel()
    for i in list(range(7)) + [9]:
        k.start(i, 0.0, 1.0, [i, D])
    k.next_time()
    assert k.S.g_on[D] == 0
    fast = [i for i in range(NS) if CAP[i] >= 1.0]
    k = kernel()
    for i in fast:
        k.start(i, 0.0, 1.0, [i, D])
    k.next_time()
    assert k.S.g_on[D] == 1 and k.S.g_len[D] == len(fast)
    assert k.S.si[F_LEN] == 1               # only the group's first member is queued
    arrivals = [(0.05 * i, 1.0 + 0.1 * i, [i, D], INF) for i in fast]
    got = drive(kernel(), arrivals)
    assert np.allclose(got, brute_maxmin(arrivals, CAP), rtol=1e-12, atol=0)


@settings(max_examples=examples(80), deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_groups_equal_brute_force_and_full_resolve(seed):
    arrivals = arrivals_of(seed)
    got = drive(kernel(), arrivals)
    assert np.allclose(got, brute_maxmin(arrivals, CAP), rtol=1e-7, atol=1e-9)
    inc, full = kernel(), kernel()
    inc._t = full._t = 0.0
    a = drive_full(inc, arrivals, False)
    b = drive_full(full, arrivals, True)
    assert np.allclose(a, b, rtol=1e-12, atol=1e-12)
    assert np.allclose(a, got, rtol=1e-12, atol=1e-12)
    Z = NS + 2                # no star anywhere: the per-class solver alone
    ref = MaxMinSharing(NS + 3, np.append(CAP, 1e9), np.zeros(NS + 3), max_messages=64)
    want = drive(ref, [(t, w, r + [Z], c) for t, w, r, c in arrivals])
    assert np.allclose(got, want, rtol=1e-11, atol=1e-12)


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(0, 2 ** 32 - 1),
       st.lists(st.tuples(st.floats(0, 3, allow_nan=False), st.sampled_from([0, 9, D, X]),
                          st.sampled_from([0.0, 0.5, 0.9])), max_size=4))
def test_groups_under_background_steps(seed, steps):
    # a step on D changes the group's rate; on a private hop (0, 9) a member's limit.
    # Reference: every route also crosses Z, a resource too wide to limit anyone, so no
    # component is a star and every change is re-solved by the per-class solver
    arrivals = arrivals_of(seed, 24)
    got = drive(kernel(), arrivals, steps)
    Z = NS + 2
    ref = MaxMinSharing(NS + 3, np.append(CAP, 1e9), np.zeros(NS + 3), max_messages=64)
    want = drive(ref, [(t, w, r + [Z], c) for t, w, r, c in arrivals], steps)
    assert np.allclose(got, want, rtol=1e-11, atol=1e-12)
