"""LoPC (ccmod.analytic.lopc) against the thesis's closed forms, bounds and rules of thumb.

Seed: ../shared/seeds/lopc-frank-1997.txt (equation numbers quoted in each test).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccmod.analytic import lopc
from ccmod.errors import CcmodInputError


def F_511(R, W, So, Sl):
    """The thesis's closed-form right-hand side (5.11) of R = F[R] for Co2 = 0."""
    d = R * R - R * So - So * So
    return (R * W / (R - So) + 2 * Sl + 2 * So + 5 * So ** 2 / (2 * (R - So))
            + 2 * So ** 3 / d + 3 * So ** 4 / ((R - So) * d))


GRID = [(W, So, Sl) for W in (0.0, 10.0, 100.0, 1000.0, 1e4)
        for So in (50.0, 200.0) for Sl in (0.0, 10.0, 100.0)]


@pytest.mark.parametrize("W, So, Sl", GRID)
def test_all_to_all_solves_eq_5_11_and_bounds_5_12(W, So, Sl):
    r = lopc.all_to_all(W, So, Sl, P=32, Co2=0.0)
    # the fixed point of the thesis's own reduction (5.11)
    assert F_511(r.R, W, So, Sl) == pytest.approx(r.R, rel=1e-11)
    lo, hi = lopc.bounds(W, So, Sl)
    assert lo == W + 2 * Sl + 2 * So and hi == W + 2 * Sl + 3.46 * So
    assert lo < r.R < hi                                    # (5.12)
    assert 0.0 < r.contention <= 1.46 * So
    assert r.contention == pytest.approx(r.R - lo)
    assert r.C == r.contention


@pytest.mark.parametrize("W", [0.0, 10.0, 100.0, 1000.0, 1e4, 1e6])
@pytest.mark.parametrize("So", [50.0, 200.0, 1000.0])
def test_rule_of_thumb_one_extra_handler(W, So):
    # Sec. 5.3: "To a first approximation the cost of contention is equal to the cost of an
    # extra handler" -- argued for a short network trip (Sl << So); between 1 and 1.46 So
    for Sl in (0.0, So / 10):
        r = lopc.all_to_all(W, So, Sl, P=32, Co2=0.0)
        assert 1.0 <= r.contention / So <= 1.46


def test_rule_of_thumb_limits():
    # W large: a request handler nearly always interrupts the thread -> C -> So (Sec. 5.3)
    r = lopc.all_to_all(1e7, 100.0, 10.0, P=64, Co2=0.0)
    assert r.contention / 100.0 == pytest.approx(1.0, abs=0.01)
    # W = 0, Sl = 0: the worst case, still below the 3.46 So bound on R
    r0 = lopc.all_to_all(0.0, 100.0, 0.0, P=64, Co2=0.0)
    assert 3.4 * 100 < r0.R < 3.46 * 100


def test_all_to_all_little_and_utilisation_laws():
    W, So, Sl, P = 500.0, 120.0, 30.0, 16
    r = lopc.all_to_all(W, So, Sl, P, Co2=1.0)
    assert r.R == pytest.approx(r.Rw + 2 * Sl + r.Rq + r.Ry, rel=1e-12)      # (4.1)
    assert r.X == pytest.approx(P / r.R)                                     # (5.1)
    VX = r.X / P                                                             # (5.2)
    assert r.Uq == pytest.approx(VX * So) and r.Uy == pytest.approx(VX * So)  # (5.4)
    assert r.Qq == pytest.approx(VX * r.Rq) and r.Qy == pytest.approx(VX * r.Ry)  # (5.3)
    assert r.Rq == pytest.approx(So * (1 + r.Qq + r.Qy), rel=1e-12)           # (5.5)/(5.9)
    assert r.Ry == pytest.approx(So * (1 + r.Qq), rel=1e-12)                  # (5.6)/(5.10)
    assert r.Rw == pytest.approx((W + So * r.Qq) / (1 - r.Uq), rel=1e-12)     # (5.7)
    assert r.runtime(1000) == pytest.approx(1000 * r.R)


def test_residual_life_terms_5_9_5_10():
    W, So, Sl = 300.0, 100.0, 20.0
    for Co2 in (0.0, 0.5, 2.0):
        r = lopc.all_to_all(W, So, Sl, 8, Co2=Co2)
        k = (Co2 - 1) / 2
        assert r.Rq == pytest.approx(So * (1 + r.Qq + r.Qy + k * (r.Uq + r.Uy)), rel=1e-12)
        assert r.Ry == pytest.approx(So * (1 + r.Qq + k * r.Uq), rel=1e-12)
    # more variable handlers queue longer (Fig. 5-1)
    Rs = [lopc.all_to_all(W, So, Sl, 8, Co2=c).R for c in (0.0, 1.0, 2.0)]
    assert Rs[0] < Rs[1] < Rs[2]


def test_protocol_processor_and_degenerate_cases():
    r = lopc.all_to_all(400.0, 100.0, 10.0, 8, protocol_processor=True)
    assert r.Rw == 400.0
    assert r.R < lopc.all_to_all(400.0, 100.0, 10.0, 8).R
    z = lopc.all_to_all(400.0, 0.0, 10.0, 8)
    assert z.R == 420.0 and z.contention == 0.0
    # P only scales throughput: the per-node arrival rate is 1/R whatever P (5.1-5.3)
    assert lopc.all_to_all(100.0, 50.0, 5.0, 2).R == pytest.approx(
        lopc.all_to_all(100.0, 50.0, 5.0, 1000).R)


@pytest.mark.parametrize("P, Co2", [(2, 1.0), (8, 0.0), (32, 1.0)])
def test_general_uniform_matches_all_to_all(P, Co2):
    V = (np.ones((P, P)) - np.eye(P)) / (P - 1)
    g = lopc.general(np.full(P, 700.0), V, 150.0, 25.0, Co2=Co2)
    a = lopc.all_to_all(700.0, 150.0, 25.0, P, Co2=Co2)
    assert g.R == pytest.approx(np.full(P, a.R), rel=1e-10)
    assert g.Rq == pytest.approx(np.full(P, a.Rq), rel=1e-9)
    assert g.Qy == pytest.approx(np.full(P, a.Qy), rel=1e-9)


def test_general_heterogeneous_satisfies_appendix_a():
    rng = np.random.default_rng(7)
    P = 6
    W = rng.uniform(0.0, 2000.0, P)
    V = rng.uniform(0.0, 1.0, (P, P))
    np.fill_diagonal(V, 0.0)
    V[0] *= 2.0 / V[0].sum()          # a multi-hop thread: two handler visits per request
    V[1:] /= V[1:].sum(axis=1, keepdims=True)
    So, Sl, Co2 = 120.0, 40.0, 0.5
    g = lopc.general(W, V, So, Sl, Co2=Co2)
    k = (Co2 - 1) / 2
    X = 1 / g.R                                               # (A.1)
    lam = V.T @ X                                             # (A.2)
    assert g.Uq == pytest.approx(So * lam)                    # (A.3)
    assert g.Uy == pytest.approx(So * X)                      # (A.4)
    assert g.Qq == pytest.approx(lam * g.Rq)                  # (A.5)
    assert g.Qy == pytest.approx(X * g.Ry)                    # (A.6)
    assert g.Rq == pytest.approx(So * (1 + g.Qq + g.Qy + k * (g.Uq + g.Uy)), rel=1e-9)  # (A.7)
    assert g.Ry == pytest.approx(So * (1 + g.Qq + k * g.Uq), rel=1e-9)                  # (A.8)
    assert g.Rw == pytest.approx((So * g.Qq + W) / (1 - g.Uq), rel=1e-9)                # (A.9)
    assert g.R == pytest.approx(g.Rw + V @ (Sl + g.Rq) + Sl + g.Ry, rel=1e-9)           # (A.10)
    assert np.all(g.contention > 0)
    pp = lopc.general(W, V, So, Sl, Co2=Co2, protocol_processor=True)
    assert pp.Rw == pytest.approx(W)


def test_optimal_servers_closed_form_by_hand():
    # Co2 = 1: Rs = So (1 + sqrt(4)/2) = 2 So (6.6).  W = 1000, So = 100, Sl = 50:
    # R = W + 2 Sl + Rs + So = 1000 + 100 + 200 + 100 = 1400 (6.7); Ps = P Rs/(R + Rs)
    # = 32 * 200 / 1600 = 4 (6.3); eq. 6.8: 32 * 2 * 100 / (1000 + 100 + 5 * 100) = 4.
    assert lopc.optimal_servers(32, 1000.0, 100.0, 50.0, 1.0) == pytest.approx(4.0, rel=1e-14)
    # Co2 = 0: Rs = So (1 + 1/sqrt 2), Ps = P Rs / (W + 2 Sl + So + 2 Rs)
    So = 131.0
    Rs = So * (1 + 1 / math.sqrt(2))
    want = 32 * Rs / (1000.0 + 2 * 10.0 + So + 2 * Rs)
    assert lopc.optimal_servers(32, 1000.0, So, 10.0, 0.0) == pytest.approx(want, rel=1e-14)


@pytest.mark.parametrize("Co2", [0.0, 1.0, 2.0])
def test_client_server_at_optimum_has_unit_server_queue(Co2):
    P, W, So, Sl = 32, 1000.0, 131.0, 10.0
    ps = lopc.optimal_servers(P, W, So, Sl, Co2)
    r = lopc.client_server(P, ps, W, So, Sl, Co2)
    assert r.Qs == pytest.approx(1.0, rel=1e-9)                              # (6.1)
    assert r.Rs == pytest.approx(So * (1 + math.sqrt(2 * (Co2 + 1)) / 2), rel=1e-9)  # (6.6)
    assert r.Us == pytest.approx(So / r.Rs, rel=1e-9)                        # (6.4)
    assert r.R == pytest.approx(W + 2 * Sl + r.Rs + So, rel=1e-12)           # (6.7)
    assert r.X == pytest.approx((P - ps) / r.R) and r.X == pytest.approx(ps / r.Rs)  # (6.1/6.2)


def test_best_servers_is_the_argmax_and_bounds_hold():
    for P, W, So, Sl, Co2 in [(32, 1000.0, 131.0, 10.0, 0.0), (64, 200.0, 50.0, 20.0, 1.0),
                              (16, 5000.0, 100.0, 0.0, 1.0)]:
        xs = {n: lopc.client_server(P, n, W, So, Sl, Co2).X for n in range(1, P)}
        assert lopc.best_servers(P, W, So, Sl, Co2) == max(xs, key=xs.get)
        for n, x in xs.items():
            r = lopc.client_server(P, n, W, So, Sl, Co2)
            assert x <= min(r.X_server_bound, r.X_client_bound) * (1 + 1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda: lopc.all_to_all(-1.0, 1.0, 1.0, 4), "W must be >= 0"),
    (lambda: lopc.all_to_all(1.0, -1.0, 1.0, 4), "So"),
    (lambda: lopc.all_to_all(1.0, 1.0, float("inf"), 4), "Sl must be finite"),
    (lambda: lopc.all_to_all(1.0, 1.0, 1.0, 1), "P must be >= 2"),
    (lambda: lopc.all_to_all(1.0, 1.0, 1.0, 4, Co2=-0.5), "Co2"),
    (lambda: lopc.all_to_all(0.0, 0.0, 0.0, 4), "zero"),
    (lambda: lopc.bounds(1.0, -2.0, 0.0), "So"),
    (lambda: lopc.client_server(8, 8, 1.0, 1.0, 1.0), "Ps must be < 8"),
    (lambda: lopc.client_server(8, 0, 1.0, 1.0, 1.0), "Ps must be > 0"),
    (lambda: lopc.client_server(8, 2, 1.0, 0.0, 1.0), "So must be > 0"),
    (lambda: lopc.optimal_servers(8, -1.0, 1.0, 1.0), "W"),
    (lambda: lopc.general([1.0, 2.0], np.ones((3, 3)), 1.0, 1.0), "V must be 2 x 2"),
    (lambda: lopc.general([1.0, -2.0], np.ones((2, 2)), 1.0, 1.0), "W must be >= 0"),
])
def test_bad_parameters(call, match):
    with pytest.raises(CcmodInputError, match=match):
        call()


@settings(max_examples=30, deadline=None)
@given(W=st.floats(0, 1e5), So=st.floats(1e-3, 1e3), Sl=st.floats(0, 1e4),
       P=st.integers(2, 512))
def test_bounds_property(W, So, Sl, P):
    r = lopc.all_to_all(W, So, Sl, P, Co2=0.0)
    lo, hi = lopc.bounds(W, So, Sl)
    assert lo * (1 - 1e-12) <= r.R <= hi * (1 + 1e-12)
    assert 0 <= r.Uq < 1 and r.Qq >= 0 and r.Qy >= 0


@pytest.mark.parametrize("Ps, Co2", [(1, 1.0), (5, 0.0), (12, 2.0)])
def test_general_with_pure_servers_equals_client_server(Ps, Co2):
    # Appendix A with zero V rows for the servers (they only run handlers) is the ch.-6
    # work-pile model: clients send to a uniformly random server
    P, W, So, Sl = 32, 1000.0, 131.0, 10.0
    V = np.zeros((P, P))
    V[Ps:, :Ps] = 1.0 / Ps
    g = lopc.general(np.full(P, W), V, So, Sl, Co2=Co2)
    cs = lopc.client_server(P, Ps, W, So, Sl, Co2)
    assert g.R[Ps:] == pytest.approx(np.full(P - Ps, cs.R), rel=1e-10)
    assert g.X.sum() == pytest.approx(cs.X, rel=1e-10)
    assert g.Qq[:Ps] == pytest.approx(np.full(Ps, cs.Qs), rel=1e-9)
    assert np.all(np.isinf(g.R[:Ps])) and np.all(g.X[:Ps] == 0)
