"""MVA (ccmod.analytic.mva) against hand-derived networks and queueing-theory properties."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccmod.analytic import mva
from ccmod.errors import CcmodInputError


def product_form(D, N, Z=0.0):
    """Brute-force single-class closed network by enumerating the product-form states.

    P(n) ~ Z^n0 / n0! * prod_k D_k^n_k over n0 + sum n_k = N (Gordon-Newell with a delay
    station); returns throughput and mean queue lengths.  Independent of the MVA recursion.
    """
    K = len(D)
    G = 0.0
    Q = np.zeros(K)
    G_minus = 0.0
    for n in itertools.product(range(N + 1), repeat=K):
        s = sum(n)
        if s > N:
            continue
        n0 = N - s
        w = (Z ** n0 / math.factorial(n0)) * np.prod([D[k] ** n[k] for k in range(K)])
        G += w
        Q += w * np.array(n)
    # G(N-1) for the throughput X = G(N-1)/G(N)
    for n in itertools.product(range(N), repeat=K):
        s = sum(n)
        if s > N - 1:
            continue
        n0 = N - 1 - s
        G_minus += (Z ** n0 / math.factorial(n0)) * np.prod([D[k] ** n[k] for k in range(K)])
    return G_minus / G, Q / G


def test_two_station_by_hand():
    # D = (1, 2), N = 2, Z = 0.  n = 1: R = (1, 2), X = 1/3, Q = (1/3, 2/3).
    # n = 2: R = (1 * 4/3, 2 * 5/3) = (4/3, 10/3), X = 2 / (14/3) = 3/7, Q = (4/7, 10/7).
    r = mva.solve([1.0, 2.0], 2)
    assert r.throughput == pytest.approx(3 / 7, rel=1e-14)
    assert r.residence_time == pytest.approx([4 / 3, 10 / 3], rel=1e-14)
    assert r.queue_length == pytest.approx([4 / 7, 10 / 7], rel=1e-14)
    assert r.utilization == pytest.approx([3 / 7, 6 / 7], rel=1e-14)
    assert r.cycle_time == pytest.approx(14 / 3, rel=1e-14)
    assert isinstance(r.throughput, float)
    assert r.residence_time.shape == (2,)


def test_symmetric_network_queue_is_N_over_K():
    # K identical stations, no think time: by symmetry every queue holds N/K exactly
    for K, N in [(4, 10), (3, 7), (8, 1)]:
        r = mva.solve([0.25] * K, N)
        assert r.queue_length == pytest.approx([N / K] * K, rel=1e-13)
        # X = N / (K D (1 + (N-1)/K)) for the symmetric network
        assert r.throughput == pytest.approx(N / (0.25 * (K + N - 1)), rel=1e-13)


def test_exact_matches_product_form_enumeration():
    D = [0.3, 0.5, 0.2]
    for N, Z in [(4, 0.0), (5, 1.5)]:
        X, Q = product_form(D, N, Z)
        r = mva.solve(D, N, think_time=Z)
        assert r.throughput == pytest.approx(X, rel=1e-12)
        assert r.queue_length == pytest.approx(Q, rel=1e-12)


def test_multiclass_identical_classes_equal_single_class():
    D = [0.2, 0.5, 0.1]
    single = mva.solve(D, 7, think_time=1.0)
    multi = mva.solve([D, D], (3, 4), think_time=1.0)
    assert multi.throughput.shape == (2,)
    assert multi.residence_time.shape == (2, 3)
    assert multi.throughput.sum() == pytest.approx(single.throughput, rel=1e-12)
    # customers are indistinguishable: class throughput proportional to its population
    assert multi.throughput == pytest.approx(single.throughput * np.array([3, 4]) / 7, rel=1e-12)
    assert multi.total_queue_length == pytest.approx(single.queue_length, rel=1e-12)
    assert multi.residence_time[0] == pytest.approx(single.residence_time, rel=1e-12)


def test_multiclass_exact_against_product_form():
    # two classes, two stations, N = (1, 1).  BCMP product form (processor sharing):
    # P(n) ~ prod_k n_k! prod_c D_ck^n_ck / n_ck!, so two customers sharing a station weigh
    # 2 D0k D1k.  States (station of class 0, station of class 1):
    # G(1,1) = 2*1*3 + 1*1 + 2*3 + 2*2*1 = 17, G(0,1) = 3 + 1, G(1,0) = 1 + 2.
    D = np.array([[1.0, 2.0], [3.0, 1.0]])
    G = sum(D[0, k] * D[1, l] * (2 if k == l else 1) for k in range(2) for l in range(2))
    assert G == 17
    X0 = sum(D[1, l] for l in range(2)) / G      # G(0,1)/G(1,1)
    X1 = sum(D[0, k] for k in range(2)) / G
    r = mva.solve(D, (1, 1))
    assert r.throughput == pytest.approx([X0, X1], rel=1e-13)


def test_schweitzer_and_bard_close_to_exact():
    D = [0.1, 0.2, 0.05]
    ex = mva.solve(D, 20, think_time=1.0)
    sw = mva.solve(D, 20, think_time=1.0, method="schweitzer")
    bd = mva.solve(D, 20, think_time=1.0, method="bard")
    assert sw.throughput == pytest.approx(ex.throughput, rel=0.03)
    # Bard's approximation over-estimates queueing, so it under-estimates throughput
    assert bd.throughput < sw.throughput < ex.throughput + 1e-12
    assert bd.throughput == pytest.approx(ex.throughput, rel=0.1)
    mex = mva.solve([[0.1, 0.2], [0.3, 0.1]], (10, 10))
    msw = mva.solve([[0.1, 0.2], [0.3, 0.1]], (10, 10), method="schweitzer")
    assert msw.throughput == pytest.approx(mex.throughput, rel=0.03)


def test_bard_single_customer_single_station():
    # Bard: R = D (1 + Q) with Q = N = 1 when Z = 0 -> R = 2D (exact MVA gives D)
    assert mva.solve([2.0], 1, method="bard").cycle_time == pytest.approx(4.0, rel=1e-9)
    assert mva.solve([2.0], 1).cycle_time == pytest.approx(2.0)


def test_multiserver_limits():
    # one customer never waits: R = D for any server count
    assert mva.solve([1.0], 1, servers=[4]).cycle_time == pytest.approx(1.0)
    # saturation: X -> m / D
    r = mva.solve([1.0], 200, servers=[4])
    assert r.throughput == pytest.approx(4.0, rel=1e-6)
    assert r.utilization[0] == pytest.approx(1.0, rel=1e-6)


def test_zero_population():
    r = mva.solve([0.1, 0.2], 0)
    assert r.throughput == 0.0
    assert np.all(r.queue_length == 0)
    r = mva.solve([[0.1, 0.2], [0.2, 0.1]], (0, 3), method="schweitzer")
    assert r.throughput[0] == 0.0 and r.throughput[1] > 0


@pytest.mark.parametrize("kwargs, match", [
    (dict(demands=[0.1, -0.2], population=3), "demands must be >= 0"),
    (dict(demands=[0.1, float("nan")], population=3), "finite"),
    (dict(demands=[0.1], population=-1), "population"),
    (dict(demands=[0.1], population=2.5), "integer"),
    (dict(demands=[[0.1, 0.2], [0.1, 0.2]], population=3), "class"),
    (dict(demands=[0.1, 0.2], population=(1, 2)), "class"),
    (dict(demands=[0.1], population=2, think_time=-1.0), "think_time"),
    (dict(demands=[0.1, 0.2], population=2, servers=[1]), "servers"),
    (dict(demands=[0.1, 0.2], population=2, servers=[1, 0]), "servers"),
    (dict(demands=[0.1], population=2, method="linearizer"), "unknown MVA method"),
    (dict(demands=[0.0, 0.0], population=2), "unbounded"),
    (dict(demands=[[[0.1]]], population=2), "1-D or 2-D"),
    (dict(demands=[5e-324], population=1), "overflows"),
])
def test_bad_input(kwargs, match):
    with pytest.raises(CcmodInputError, match=match):
        mva.solve(**kwargs)


def test_exact_multiclass_state_limit():
    with pytest.raises(CcmodInputError, match="schweitzer"):
        mva.solve(np.ones((8, 2)), (10,) * 8)


demand_lists = st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 5.0)), min_size=1,
                        max_size=5).filter(lambda d: sum(d) > 0)


@settings(max_examples=40, deadline=None)
@given(D=demand_lists, N=st.integers(1, 30), Z=st.floats(0.0, 10.0),
       method=st.sampled_from(mva.METHODS))
def test_properties(D, N, Z, method):
    r = mva.solve(D, N, think_time=Z, method=method)
    # utilisation law U = X D <= 1 and Little's law per station
    assert np.all(r.utilization <= 1.0 + 1e-9)
    assert r.utilization == pytest.approx(r.throughput * np.array(D), rel=1e-12, abs=1e-15)
    assert r.queue_length == pytest.approx(r.throughput * r.residence_time, rel=1e-12, abs=1e-15)
    # Little over the whole network: N = X (Z + sum R)
    assert r.throughput * r.cycle_time == pytest.approx(N, rel=1e-9)
    # asymptotic bound X <= min(1/D_max, N/(Z + sum D))
    assert r.throughput <= min(1 / max(D) if max(D) > 0 else math.inf, N / (Z + sum(D))) * (1 + 1e-9)


@settings(max_examples=25, deadline=None)
@given(D=demand_lists, N=st.integers(1, 25), Z=st.floats(0.0, 5.0))
def test_throughput_nondecreasing_in_population(D, N, Z):
    x1 = mva.solve(D, N, think_time=Z).throughput
    x2 = mva.solve(D, N + 1, think_time=Z).throughput
    assert x2 >= x1 * (1 - 1e-12)
