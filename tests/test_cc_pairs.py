"""Deferred pairs of the CCMOD rule (kernel/cc_pairs.py) against the rule by definition,
with background steps (the changes that must pair a deferred entry first)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ccmod.kernel import CcmodSharing
from ccmod.kernel.ccmod_rule import N_PF

INF = float("inf")


def drive_steps(kernel, arrivals, steps):
    """Feed arrivals ``(t, work, route)`` and load steps ``(t, resource, load)`` (a step
    first at equal times); return each message's end time."""
    order = sorted(range(len(arrivals)), key=lambda i: (arrivals[i][0], i))
    steps = sorted(steps)
    ends, k, j = {}, 0, 0
    while k < len(order) or kernel.active_count():
        ta = arrivals[order[k]][0] if k < len(order) else INF
        ts = steps[j][0] if j < len(steps) else INF
        tk = kernel.next_time()
        if ts <= ta and ts <= tk:
            kernel.set_load(steps[j][1], ts, steps[j][2])
            j += 1
        elif ta <= tk:
            t, work, route = arrivals[order[k]]
            kernel.start(order[k], t, work, route)
            k += 1
        else:
            for m in kernel.pop_due(tk):
                ends[m] = tk
    return [ends[i] for i in range(len(arrivals))]


def brute_steps(arrivals, nres, steps, bg=None):
    """Every horizon (finish, arrival, load step): BA = min over the route of free / CA."""
    free = np.ones(nres) if bg is None else 1.0 - np.asarray(bg, float)
    steps = sorted(steps)
    pending = sorted(range(len(arrivals)), key=lambda i: (arrivals[i][0], i))
    rem, ends, t, j = {}, {}, 0.0, 0
    while pending or rem:
        while j < len(steps) and steps[j][0] <= t:
            free[steps[j][1]] = 1.0 - steps[j][2]
            j += 1
        ca = np.zeros(nres)
        for m in rem:
            for r in arrivals[m][2]:
                ca[r] += 1
        rate = {m: min(min(free[r] / ca[r] for r in arrivals[m][2]), 1.0) for m in rem}
        t_new = min([t + rem[m] / rate[m] for m in rem if rate[m] > 0]
                    + [arrivals[pending[0]][0] if pending else INF]
                    + [steps[j][0] if j < len(steps) else INF])
        for m in list(rem):
            rem[m] -= rate[m] * (t_new - t)
            if rem[m] <= 1e-12 * max(1.0, t_new):
                ends[m] = t_new
                del rem[m]
        t = t_new
        while pending and arrivals[pending[0]][0] <= t:
            i = pending.pop(0)
            rem[i] = arrivals[i][1]
    return [ends[i] for i in range(len(arrivals))]


routes = st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True)
arrival = st.tuples(st.floats(0, 4, allow_nan=False), st.floats(0.05, 2), routes)
step = st.tuples(st.floats(0, 4, allow_nan=False), st.integers(0, 5),
                 st.sampled_from([0.0, 0.25, 0.5, 0.75]))


loads = st.lists(st.sampled_from([0.0, 0.3, 0.5]), min_size=6, max_size=6)


def _check_steps(arrs, steps, bg):
    got = drive_steps(CcmodSharing(6, np.array(bg)), arrs, steps)
    want = brute_steps(arrs, 6, steps, bg)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-9)


@settings(max_examples=10, deadline=None)
@given(st.lists(arrival, min_size=1, max_size=10), st.lists(step, max_size=6), loads)
def test_deferred_pairs_with_load_steps_equal_brute_force(arrs, steps, bg):
    _check_steps(arrs, steps, bg)


@pytest.mark.slow   # ~2.5 s: the same property, more examples (CI runs it)
@settings(max_examples=200, deadline=None)
@given(st.lists(arrival, min_size=1, max_size=10), st.lists(step, max_size=6), loads)
def test_deferred_pairs_with_load_steps_equal_brute_force_many(arrs, steps, bg):
    _check_steps(arrs, steps, bg)


def test_a_lifted_ceiling_pairs_the_entries_deferred_under_it():
    # two messages share downlink 2 (load 0.5: ceiling 0.5, share 0.25); their uplinks 0
    # and 1 (load 0.3: share 0.7, above the ceiling) are deferred. The downlink's load
    # goes at t=0.5: once message 0 ends, message 1's uplink (0.7) binds before the
    # downlink (1.0), which only its deferred entry, paired at the lift, can tell.
    bg = [0.3, 0.3, 0.5]
    arrivals = [(0.0, 0.5, [0, 2]), (0.0, 2.0, [1, 2])]
    steps = [(0.5, 2, 0.0)]
    got = drive_steps(CcmodSharing(3, np.array(bg)), arrivals, steps)
    want = brute_steps(arrivals, 3, steps, bg)
    assert np.allclose(got, want, rtol=1e-12)


def test_incast_senders_are_deferred_then_paired_when_it_matters():
    # 8 senders (uplinks 0..7) onto one downlink (8): each sender's uplink entry is alone
    # and cannot bind before the downlink, so it is deferred, not paired. A load step on
    # an uplink pairs that sender's entry first (its share changes); a step that frees
    # the downlink (load 0.5 -> 0) lifts its ceiling, so its check pairs every deferred
    # entry left; the last member's uplink ties the downlink and wins (lower id).
    n = 8
    arrivals = [(0.0, 1.0 + 0.1 * i, [i, n]) for i in range(n)]
    k = CcmodSharing(n + 1, np.r_[np.zeros(n), 0.5])
    for i, (t, w, r) in enumerate(arrivals):
        k.start(i, t, w, r)
    k.next_time()
    S = k.S
    assert S.ndef[n] == n and (S.dfr[:n] >= 0).all()
    assert len(S.pfree) - S.si[N_PF] == 0                  # no pair in use
    steps = [(0.5, 3, 0.5), (1.0, n, 0.0)]
    k.set_load(3, 0.5, 0.5)
    assert S.dfr[3] == -1 and S.ndef[n] == n - 1            # paired before it changed
    k2 = CcmodSharing(n + 1, np.r_[np.zeros(n), 0.5])
    got = drive_steps(k2, arrivals, [(0.0, n, 0.5)] + steps)
    want = brute_steps(arrivals, n + 1, [(0.0, n, 0.5)] + steps)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-9)


def test_a_message_alone_on_its_route_needs_no_pair_nor_flush_at_its_end():
    # message 0 alone on resources 0, 1 and 2 (the lone path of a fresh _join): noted on its
    # resources, no pair, its group scheduled at once; its end leaves nothing to flush.
    # Message 1 then arrives on resource 1 while message 2 runs alone on 3 and 4: message
    # 2's lone path must not disturb the shared one; the end times are the rule's.
    from ccmod.kernel.ccmod_rule import N_DEC, N_INC, N_TCH
    k = CcmodSharing(5, np.r_[0.5, 0.0, 0.25, 0.0, 0.0])
    k.start(0, 0.0, 1.0, [0, 1, 2])
    assert k.next_time() == 2.0                          # bottleneck 0: share 0.5
    S = k.S
    assert (S.lone[:3] == 0).all() and S.lone[3:].tolist() == [-1, -1]
    assert len(S.pfree) - S.si[N_PF] == 0
    assert [int(m) for m in k.pop_due(2.0)] == [0]
    assert (S.lone == -1).all() and S.si[N_TCH] == S.si[N_INC] == S.si[N_DEC] == 0
    assert S.count.sum() == 0 and k.next_time() == INF
    arrivals = [(0.0, 1.0, [0, 1, 2]), (0.5, 1.0, [1]), (0.25, 0.5, [3, 4])]
    got = drive_steps(CcmodSharing(5, np.r_[0.5, 0.0, 0.25, 0.0, 0.0]), arrivals, [])
    want = brute_steps(arrivals, 5, [], [0.5, 0.0, 0.25, 0.0, 0.0])
    assert np.allclose(got, want, rtol=1e-12)
