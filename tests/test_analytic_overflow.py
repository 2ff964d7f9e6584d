"""Queue-overflow analytics (ccmod.analytic.overflow) against the J-Machine thesis, ch. 3.

Seed: ../shared/seeds/jmachine-message-driven-dynamics.txt; the section / equation / figure of
every published number is quoted next to the assertion.
"""
from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccmod.analytic import overflow as ov
from ccmod.errors import CcmodInputError


def t_recurrence(n, k, q):
    """t(n, k, q) by the thesis's recurrence (3.27), tabulated row by row."""
    # rows n = 0..n, columns k = 0..k
    prev = [1] + [0] * k                    # n = 0: only k = 0
    for _ in range(1, n + 1):
        row = [0] * (k + 1)
        for kk in range(k + 1):
            if kk == 0:
                row[kk] = 1
                continue
            val = prev[kk] + row[kk - 1]
            if kk - q - 1 >= 0:
                val -= prev[kk - q - 1]
            row[kk] = val
        prev = row
    return prev[k]


def all_states(N, K):
    """Every placement of K identical customers on N servers (brute force)."""
    for combo in itertools.combinations_with_replacement(range(N), K):
        yield np.bincount(np.array(combo, dtype=int), minlength=N) if K else np.zeros(N, int)


# --------------------------------------------------------------------------- counting
def test_state_counts_published_values():
    # Eq. 3.26: t(5, 3, 1) / s(5, 3) = 10 / 35 ~ 0.29
    assert ov.states(5, 3) == 35
    assert ov.nonoverflow_states(5, 3, 1) == 10
    assert ov.p_no_overflow(5, 3, 1) == pytest.approx(0.29, abs=0.005)
    # Eq. 3.2: s(512, 1024) ~ 2.9 x 10^422
    s = ov.states(512, 1024)
    assert len(str(s)) == 423 and round(int(str(s)[:3]) / 100, 1) == 2.9
    # Table 3.2 (q = 1 is Pascal's triangle): rows n = 4 and 5
    assert [ov.nonoverflow_states(4, k, 1) for k in range(6)] == [1, 4, 6, 4, 1, 0]
    assert [ov.nonoverflow_states(5, k, 1) for k in range(7)] == [1, 5, 10, 10, 5, 1, 0]
    # Table 3.1 / recurrence 3.21: s(n, k) = s(n-1, k) + s(n, k-1), s(0, k>0) = 0
    assert ov.states(0, 0) == 1 and ov.states(0, 3) == 0
    for n in range(1, 7):
        for k in range(1, 7):
            assert ov.states(n, k) == ov.states(n - 1, k) + ov.states(n, k - 1)


@pytest.mark.parametrize("n, k, q", [(1, 3, 2), (3, 4, 1), (4, 6, 2), (5, 7, 3), (6, 9, 2),
                                     (3, 0, 0), (3, 2, 0), (2, 5, 5)])
def test_t_matches_recurrence_and_enumeration(n, k, q):
    want = sum(1 for st_ in all_states(n, k) if st_.max(initial=0) <= q)
    assert ov.nonoverflow_states(n, k, q) == want
    assert t_recurrence(n, k, q) == want


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 30), k=st.integers(0, 60), q=st.integers(0, 12))
def test_t_matches_recurrence_property(n, k, q):
    assert ov.nonoverflow_states(n, k, q) == t_recurrence(n, k, q)


def test_large_machine_is_fast_and_exact():
    # the issue's size: N = 512, K = 13 * 512 (Fig. 3-1's right end); exact integers
    t0 = time.perf_counter()
    t = ov.nonoverflow_states(512, 13 * 512, 64)
    for Q in (16, 32, 64, 128):
        ov.overflow_rate(512, 13 * 512, Q)
        ov.overflow_rate(512, 13 * 512, Q, first_term_only=True)
    assert time.perf_counter() - t0 < 10.0
    assert isinstance(t, int) and 0 < t < ov.states(512, 13 * 512)


# --------------------------------------------------------------------------- balanced
def test_figure_3_1_breakpoints():
    # Sec. 3.3.3: for N = 512, P(A_nov) "starts to break away from 1 at m = 6 when Q = 64
    # and m = 12 when Q = 128"; Sec. 3.4.5: "the balanced case starts transitioning from
    # being completely non-overflowed with 6 customers per server and becomes mostly
    # overflowed with 13 customers per processor" (Q = 64).
    N = 512
    assert ov.p_no_overflow(N, 4 * N, 64) > 0.999
    assert 0.9 < ov.p_no_overflow(N, 6 * N, 64) < 0.99
    assert ov.p_no_overflow(N, 13 * N, 64) < 0.05
    assert ov.p_no_overflow(N, 10 * N, 128) > 0.99
    assert 0.9 < ov.p_no_overflow(N, 12 * N, 128) < 0.99


def test_figure_3_2_overflow_rate():
    # Sec. 3.3.5 (Q = 64, N = 512): "when m < 2, the overflow rate is low, less than 10^-9";
    # the rate peaks "at ~ 0.04. This implies an overflow approximately once every 25
    # messages", then drops.
    N = 512
    assert ov.overflow_rate(N, 2 * N, 64) < 1e-9
    rates = {m: ov.overflow_rate(N, m * N, 64) for m in range(2, 17)}
    m_peak = max(rates, key=rates.get)
    assert 0.03 < rates[m_peak] < 0.05
    assert rates[16] < rates[m_peak] / 100


def test_rules_of_thumb_section_3_3_5_and_3_3_6():
    # Fig. 3-3: an acceptable rate of 1% needs storage ~10x the customers (K/(QN) = 0.1);
    # Sec. 3.3.6: a rate of 10^-6 allows "at most 5% of the queue capacity".  Read from
    # log-scale figures, so only the order of magnitude is checked (N = 512, Q = 64).
    N, Q = 512, 64
    assert 1e-3 < ov.overflow_rate(N, int(0.10 * Q * N), Q) < 3e-2
    assert 1e-7 < ov.overflow_rate(N, int(0.05 * Q * N), Q) < 1e-5


def test_overflow_rate_sum_3_50_and_first_term_3_51():
    for N, K, Q in [(5, 9, 2), (8, 20, 3), (16, 40, 4), (64, 300, 8)]:
        s = ov.states(N, K)
        lit = sum(i * math.comb(N, i) * ov.nonoverflow_states(N - i, K - Q * i, Q - 1)
                  for i in range(1, K // Q + 1) if i <= N)
        assert ov.overflow_rate(N, K, Q) == pytest.approx((N - 1) / (N * s) * lit, rel=1e-13)
        first = (N - 1) / (N * s) * N * ov.nonoverflow_states(N - 1, K - Q, Q - 1)
        assert ov.overflow_rate(N, K, Q, first_term_only=True) == pytest.approx(first, rel=1e-13)
        assert ov.overflow_rate(N, K, Q, first_term_only=True) <= ov.overflow_rate(N, K, Q)


def test_overflow_rate_bounds_exact_eq_3_47():
    # brute force of (3.47) with the (k_j > 0) factor: mu = 1, r_ji = 1/N, P(k) = 1/|A|
    for N, K, Q in [(3, 5, 2), (4, 6, 2), (4, 7, 3)]:
        states = list(all_states(N, K))
        lam = 0.0
        for k in states:
            if k.max() > Q:
                continue
            for i in range(N):
                if k[i] == Q:
                    lam += sum(1.0 / N for j in range(N) if j != i and k[j] > 0)
        lam /= len(states)
        assert lam <= ov.overflow_rate(N, K, Q) + 1e-15      # (3.48) drops (k_j > 0)
        assert lam > 0.5 * ov.overflow_rate(N, K, Q)


# --------------------------------------------------------------------------- Leighton
def test_leighton_published_numbers():
    # Sec. 3.3.4: 32,768 processors, m = 5: "Q_required for eps = 0.5 is 59. To achieve an
    # overflow residency of 10^-4 on this machine requires a queue size of 107 elements."
    assert ov.leighton_q_required(32768, 5, 0.5) == 59
    assert ov.leighton_q_required(32768, 5, 1e-4) == 107
    # "with N = 512, Q = 64, and eps = 0.5, the value m_required = 9.3"
    assert ov.leighton_m_required(512, 64, 0.5) == pytest.approx(9.3, abs=0.06)
    # the estimate at m_required is exactly 1 - eps (3.33 inverted)
    m = ov.leighton_m_required(512, 64, 0.5)
    assert math.exp(-512 * (m / (m + 1)) ** 65) == pytest.approx(0.5, rel=1e-12)


def test_leighton_consistent_with_figure_3_1():
    # "Predictions from this equation are consistent with Figure 3-1" (exact recurrence)
    for m in (2, 4, 6, 8, 10, 12):
        assert ov.leighton_p_no_overflow(512, m, 64) == pytest.approx(
            ov.p_no_overflow(512, m * 512, 64), abs=0.02)


# --------------------------------------------------------------------------- imbalance
def test_imbalance_threshold_3_65_to_3_68():
    # B < (N + K)/K; "for B = 1.1 at the predicted value ... K/N > 10" and Fig. 3-6:
    # "for B = 1.5 ... increases sharply at 2 customers per server"
    assert ov.imbalance_threshold(512, 10 * 512) == pytest.approx(1.1)
    assert ov.imbalance_threshold(512, 2 * 512) == pytest.approx(1.5)


def test_bottleneck_mean_queue_published_numbers():
    # Sec. 3.4.1: "with the imbalance of only B = 1.1, it is possible to operate with 2048
    # customers on the 512 server system, with the expected queue size on the bottleneck
    # server of only 7."
    assert 6.5 < ov.bottleneck_mean_queue(512, 2048, 1.1) < 7.5
    # Sec. 3.5.2: "N = 512, K = 2560, and B = 1.25, the observed mean queue size for the
    # bottleneck server is 512, which is consistent with the analytical predictions using
    # Buzen's algorithm"
    assert ov.bottleneck_mean_queue(512, 2560, 1.25) == pytest.approx(512, rel=0.02)
    # Table 3.5 (B = 2): "as the number of customers grows, E[k1] -> K - N"
    assert ov.bottleneck_mean_queue(512, 4096, 2.0) == pytest.approx(4096 - 512, rel=1e-3)


def test_bottleneck_residency_figure_3_6():
    # Fig. 3-6 (N = 512, Q = 64): B = 1.5 rises sharply at 2 customers per server; B = 1.1
    # transitions "at around the same spot as the balanced case"
    r = [ov.bottleneck_residency(512, int(m * 512), 64, 1.5) for m in (1.5, 2.0, 2.5)]
    assert r[0] < 1e-3 and 0.05 < r[1] < 0.6 and r[2] > 0.99
    assert ov.bottleneck_residency(512, 4 * 512, 64, 1.1) < 1e-3
    assert ov.bottleneck_residency(512, 12 * 512, 64, 1.1) > 0.9
    # footnote 14: a second bottleneck lowers server 1's residency only slightly
    one = ov.bottleneck_residency(512, 10 * 512, 64, 1.1)
    two = ov.bottleneck_residency(512, 10 * 512, 64, 1.1, bottlenecks=2)
    assert 0.7 * one < two < one


def test_buzen_against_enumeration():
    # P(k1 >= Q) = B^Q G(K - Q)/G(K): check against brute force over the product form
    for N, K, Q, B, b in [(3, 5, 2, 1.7, 1), (4, 6, 3, 0.6, 1), (4, 6, 2, 1.3, 2)]:
        w = np.array([B ** k[:b].sum() for k in all_states(N, K)])
        k1 = np.array([k[0] for k in all_states(N, K)])
        want = w[k1 >= Q].sum() / w.sum()
        assert ov.bottleneck_residency(N, K, Q, B, bottlenecks=b) == pytest.approx(want, rel=1e-10)
        assert ov.bottleneck_mean_queue(N, K, B, bottlenecks=b) == pytest.approx(
            (w * k1).sum() / w.sum(), rel=1e-10)
        assert ov.bottleneck_overflow_rate(N, K, Q, B, bottlenecks=b) == pytest.approx(
            w[k1 == Q].sum() / w.sum(), rel=1e-9)
    # balanced (B = 1): P(k1 >= Q) = s(N, K - Q)/s(N, K) by counting
    assert ov.bottleneck_residency(50, 200, 10, 1.0) == pytest.approx(
        ov.states(50, 190) / ov.states(50, 200), rel=1e-10)


# --------------------------------------------------------------------------- open networks
def test_open_network_formulas():
    assert ov.open_residency(0.5, 3) == pytest.approx(0.5 ** 4)                  # (3.94)
    assert ov.open_residency(np.array([0.5, 0.25]), 1) == pytest.approx([0.25, 0.0625])
    assert ov.open_p_no_overflow([0.5, 0.5], 3) == pytest.approx((1 - 1 / 16) ** 2)  # (3.96)
    assert ov.open_overflow_rate(2.0, 0.5, 3) == pytest.approx(2.0 * 0.5 * 0.125)  # (3.97)
    tot = np.sum(ov.open_overflow_rate([1.0, 2.0], [0.2, 0.4], 2))
    assert tot == pytest.approx(1.0 * 0.8 * 0.04 + 2.0 * 0.6 * 0.16)


@pytest.mark.parametrize("call, match", [
    (lambda: ov.open_residency(1.0, 3), "rho must be < 1"),
    (lambda: ov.open_residency(-0.1, 3), "rho"),
    (lambda: ov.open_overflow_rate(-1.0, 0.5, 3), "lam"),
    (lambda: ov.open_overflow_rate(1.0, 1.2, 3), "rho must be < 1"),
    (lambda: ov.open_overflow_rate([1.0, 2.0], [0.1, 0.2, 0.3], 3), "shapes"),
    (lambda: ov.states(-1, 3), "N must be >= 0"),
    (lambda: ov.p_no_overflow(0, 3, 1), "N must be >= 1"),
    (lambda: ov.p_no_overflow(4, 3.5, 1), "K must be an integer"),
    (lambda: ov.overflow_rate(4, 3, -1), "Q must be >= 0"),
    (lambda: ov.leighton_q_required(512, 5, 1.0), "eps"),
    (lambda: ov.leighton_q_required(512, 0, 0.5), "m must be > 0"),
    (lambda: ov.imbalance_threshold(512, 0), "K must be >= 1"),
    (lambda: ov.bottleneck_residency(8, 10, 2, 0.0), "B must be > 0"),
    (lambda: ov.bottleneck_residency(8, 10, 2, 1.5, bottlenecks=9), "bottlenecks"),
])
def test_bad_parameters(call, match):
    with pytest.raises(CcmodInputError, match=match):
        call()
