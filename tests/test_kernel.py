"""The incremental sharing kernels against brute-force references (recompute everything)."""
import numpy as np
from hypothesis import given, settings, strategies as st
from conftest import examples

from ccmod.kernel import CcmodSharing, MaxMinSharing

INF = float("inf")


def drive(kernel, arrivals):
    """Feed (t, work, route, cap) arrivals to a kernel; return end time per message."""
    order = sorted(range(len(arrivals)), key=lambda i: (arrivals[i][0], i))
    ends = {}
    k = 0
    while k < len(order) or kernel.active_count():
        ta = arrivals[order[k]][0] if k < len(order) else INF
        tk = kernel.next_time()
        if ta <= tk:
            i = order[k]
            t, work, route, cap = arrivals[i]
            kernel.start(i, t, work, route, cap)
            k += 1
        else:
            for m in kernel.pop_due(tk):
                ends[m] = tk
    return [ends[i] for i in range(len(arrivals))]


def brute_force(arrivals, rates_of, tol):
    """Event stepping by definition: at every horizon recompute the rate of every active
    message (``rates_of(active) -> {message: rate}``), advance to the next finish or
    arrival, and admit the arrivals due by then."""
    rem = {}
    ends = {}
    pending = sorted(range(len(arrivals)), key=lambda i: (arrivals[i][0], i))
    t = 0.0
    while pending or rem:
        rate = rates_of(rem)
        t_fin = min((t + rem[m] / rate[m] for m in rem), default=INF)
        t_arr = arrivals[pending[0]][0] if pending else INF
        t_new = min(t_fin, t_arr)
        for m in list(rem):
            rem[m] -= rate[m] * (t_new - t)
            if rem[m] <= tol * max(1.0, t_new):
                ends[m] = t_new
                del rem[m]
        t = t_new
        while pending and arrivals[pending[0]][0] <= t:
            i = pending.pop(0)
            rem[i] = arrivals[i][1]
    return [ends[i] for i in range(len(arrivals))]


def brute_ccmod(arrivals, nres, free):
    """CCMOD by definition: every horizon recompute CA and BA of every active message."""
    def bandwidth_availability(active):
        ca = np.zeros(nres)
        for m in active:
            for r in arrivals[m][2]:
                ca[r] += 1
        return {m: min(free[r] / ca[r] for r in arrivals[m][2]) for m in active}
    return brute_force(arrivals, bandwidth_availability, 1e-12)


def test_article_example_two_messages_share_one_link():
    # Figure 2: two 1 KB messages, Tquiet = 48.9 each, one shared link -> 97.8 each
    k = CcmodSharing(6, np.zeros(6))
    ends = drive(k, [(0.0, 48.9, [0, 5], INF), (0.0, 48.9, [2, 5], INF)])
    assert np.allclose(ends, [97.8, 97.8])


def test_background_load_slows_by_free_fraction():
    k = CcmodSharing(2, np.array([0.5, 0.0]))
    ends = drive(k, [(0.0, 1.0, [0, 1], INF)])
    assert np.isclose(ends[0], 2.0)


routes = st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True)
arrival = st.tuples(st.floats(0, 5, allow_nan=False), st.floats(0.01, 3), routes)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(arrival, min_size=1, max_size=12), st.lists(st.sampled_from([0.0, 0.25, 0.5]),
                                                           min_size=6, max_size=6))
def test_ccmod_incremental_equals_brute_force(arrs, bg):
    arrivals = [(t, w, r, INF) for t, w, r in arrs]
    free = [1 - b for b in bg]
    got = drive(CcmodSharing(6, np.array(bg)), arrivals)
    want = brute_ccmod(arrivals, 6, free)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-9)


def brute_maxmin(arrivals, cap):
    """Max-min fairness by definition: progressive filling at every horizon."""
    def progressive_filling(active):   # textbook form
        rate = {}
        capl = np.array(cap, float)
        live = set(active)
        while live:
            users = {}
            for m in live:
                for r in arrivals[m][2]:
                    users[r] = users.get(r, 0) + 1
            lvl, lr = min((capl[r] / n, r) for r, n in users.items())
            fcap = min((arrivals[m][3] - rate.get(m, 0.0), m) for m in live)
            inc = min(lvl, fcap[0])
            for m in live:
                rate[m] = rate.get(m, 0.0) + inc
                for r in arrivals[m][2]:
                    capl[r] -= inc
            if fcap[0] < lvl:
                live.discard(fcap[1])
            else:
                live = {m for m in live if lr not in arrivals[m][2]}
        return rate
    return brute_force(arrivals, progressive_filling, 1e-9)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(arrival, min_size=1, max_size=10))
def test_maxmin_equals_brute_force(arrs):
    cap = [1.0, 2.0, 1.0, 3.0, 1.0, 0.5]
    arrivals = [(t, w, r, INF) for t, w, r in arrs]
    got = drive(MaxMinSharing(6, np.array(cap), np.zeros(6)), arrivals)
    want = brute_maxmin(arrivals, cap)
    assert np.allclose(got, want, rtol=1e-7, atol=1e-9)


def test_incast_many_messages_one_link():
    # 300 equal messages into one down link: all end together at 300 x Tquiet
    n = 300
    k = CcmodSharing(n + 1, np.zeros(n + 1))
    ends = drive(k, [(0.0, 1.0, [i, n], INF) for i in range(n)])
    assert np.allclose(ends, n * 1.0)
    assert k.peak[n] == n


def test_ccmod_identical_routes_keep_one_pair_per_resource_and_group():
    # 300 messages on one route whose two resources tie (same share): all bottleneck at
    # resource 0, and their entries at resource 1 form ONE pair (1, 0), so a start or end
    # re-keys one pair instead of re-examining every message (issue 10)
    from ccmod.kernel.ccmod_rule import N_PF
    rng = np.random.default_rng(3)
    arrivals = [(float(t), float(w), [0, 1], INF)
                for t, w in zip(rng.uniform(0, 1, 300), rng.uniform(0.5, 2, 300))]
    k = CcmodSharing(2, np.zeros(2), max_messages=300)
    for m in range(300):
        k.start(m, 0.0, 1.0, [0, 1])
    k.next_time()
    assert set(k.S.bott[:300]) == {0}
    assert len(k.S.pfree) - k.S.si[N_PF] == 1
    got = drive(CcmodSharing(2, np.zeros(2), max_messages=300), arrivals)
    assert np.allclose(got, brute_ccmod(arrivals, 2, [1.0, 1.0]), rtol=1e-9, atol=1e-9)


few_routes = st.sampled_from([[0], [0, 3], [1, 3], [0, 3, 5]])
capped = st.tuples(st.floats(0, 2, allow_nan=False), st.floats(0.01, 3), few_routes,
                   st.sampled_from([0.3, 0.7, INF]))


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(capped, min_size=1, max_size=14))
def test_maxmin_flow_classes_equal_brute_force(arrs):
    # many flows share a route, some under the same cap: the solver fills (route, cap)
    # classes weighted by size, which must give every flow its own max-min rate
    cap = [1.0, 2.0, 1.0, 3.0, 1.0, 0.5]
    arrivals = [(t, w, list(r), c) for t, w, r, c in arrs]
    got = drive(MaxMinSharing(6, np.array(cap), np.zeros(6)), arrivals)
    want = brute_maxmin(arrivals, cap)
    assert np.allclose(got, want, rtol=1e-7, atol=1e-9)
