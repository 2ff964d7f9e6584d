"""Cremonesi-Gennaro SPMD models (ccmod.analytic.spmd) against hand derivations.

Seed: ../shared/seeds/spmd-models-cremonesi-gennaro.txt.  The paper's result tables (3, 4)
are not in the seed text, so the models are checked against closed forms derived here and
against the independent MVA implementation.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from ccmod.analytic import mva, spmd
from ccmod.analytic.spmd_fit import fit_speedup
from ccmod.errors import CcmodInputError


def test_synchronisation_cost_h():
    # exponential (eq. 6): E[max of c i.i.d. exponentials] / mean = harmonic number H_c
    assert spmd.h_exponential(1) == 1.0
    assert spmd.h_exponential(2) == pytest.approx(1.5)
    assert spmd.h_exponential(4) == pytest.approx(1 + 1 / 2 + 1 / 3 + 1 / 4)
    # uniform on [0, 2 mean] (Sec. 3.5): E[max of c] = 2 mean c/(c + 1)
    assert spmd.h_uniform(1) == 1.0
    assert spmd.h_uniform(2) == pytest.approx(4 / 3)
    assert spmd.h(3, "uniform") == pytest.approx(1.5)
    assert spmd.h(3, lambda c: 2.0) == 2.0


def test_communication_scale_g():
    assert spmd.g(1, 2) == 0.0                         # "By definition, g(1) = 0"
    assert spmd.g(4, 2) == pytest.approx(0.5)          # 2-D windows: 1/sqrt(p)
    assert spmd.g(8, 3) == pytest.approx(8 ** (-2 / 3))
    assert spmd.g(16, math.inf) == pytest.approx(1 / 16)   # QCRD (Sec. 5.2): g(p) = 1/p
    # BTIO (Sec. 5.1.1): messages ~ p^(1/2), size ~ p^(-2/3) -> g(p) = p^(-1/6), r = 6/5
    assert spmd.g(64, 6 / 5) == pytest.approx(64 ** 0.5 * 64 ** (-2 / 3))
    assert spmd.g(9, lambda p: p ** (-1 / 6)) == pytest.approx(9 ** (-1 / 6))


def test_submodels():
    prm = spmd.SPMDParams(S_cpu_par=8.0, S_cpu_ser=0.5, S_com_0=0.1, S_com_R=2.0, w=0.25,
                          S_io_0=0.2, S_io_R=3.0, c=2)
    p = 4
    assert spmd.cpu_time(p, prm) == pytest.approx(1.5 * (8.0 / 4 + 0.5))             # (5)
    assert spmd.com_time(p, prm) == pytest.approx(0.1 + 0.5 * 2.0)                   # (8)
    assert spmd.com_queue(p, prm) == pytest.approx(0.25 * 0.5 * 2.0)                 # (9)
    assert spmd.com_delay(p, prm) == pytest.approx(0.1 + 0.75 * 0.5 * 2.0)           # (10)
    assert spmd.com_queue(p, prm) + spmd.com_delay(p, prm) == pytest.approx(spmd.com_time(p, prm))
    assert spmd.io_time(p, 3, prm, "SIO") == pytest.approx(0.2 + 3.0 / 3)            # (11)
    assert spmd.io_time(p, 3, prm, "BUS-AIO") == pytest.approx(0.2 + (3.0 / 3) / 2)  # (12)
    assert spmd.io_time(p, 3, prm, "CLU-AIO") == pytest.approx(0.2 + 3.0 / 2)        # (13)
    assert prm.T1 == pytest.approx(8.5 + 3.2)                                         # (1)


@pytest.mark.parametrize("i, z, x", [(1, 2.0, 0.5), (5, 2.0, 0.5), (40, 0.3, 1.7),
                                     (300, 5.0, 0.01), (7, 0.0, 1.0)])
def test_r1_is_the_mva_residence(i, z, x):
    want = mva.solve([x], i, think_time=z).residence_time[0]
    assert spmd.r1(i, z, x) == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("i, z, x, y", [(1, 2.0, 0.5, 0.3), (6, 2.0, 0.5, 0.3),
                                        (60, 1.0, 0.2, 0.05), (10, 0.0, 1.0, 2.0)])
def test_r2_is_the_mva_residence(i, z, x, y):
    r = mva.solve([x, y], i, think_time=z)
    assert spmd.r2(i, z, x, y) == pytest.approx(r.residence_time[0], rel=1e-10)
    assert spmd.r2(i, z, y, x) == pytest.approx(r.residence_time[1], rel=1e-10)


def test_r1_by_hand_two_customers():
    # i = 2: sums over (e1, e2) in {(1, 0), (0, 1)}: R1 = x (2x + z)/(x + z)
    x, z = 0.7, 1.9
    assert spmd.r1(2, z, x) == pytest.approx(x * (2 * x + z) / (x + z))


def test_sio_by_hand():
    # w = 0 (fully connected): S_queue = 0 so R1 = 0 and eq. 16 is n_io z H_{p/c}
    prm = spmd.SPMDParams(S_cpu_par=12.0, S_cpu_ser=1.0, S_com_0=0.3, S_com_R=2.0, w=0.0,
                          S_io_0=0.5, S_io_R=6.0, n_io=3.0)
    p, d = 4, 2
    z = (12.0 / 4 + 1.0) + 0.3 + 2.0 * 0.5
    T = 3.0 * z * (1 + 1 / 2 + 1 / 3 + 1 / 4) + 0.5 + 6.0 / 2
    ct = spmd.cycle_times(p, d, prm, "SIO")
    assert ct["T"] == pytest.approx(T)
    assert spmd.sio_speedup(p, d, prm) == pytest.approx((3.0 * 13.0 + 6.5) / T)
    # with contention: eq. 16 with R1 from the closed form (17)
    prm2 = prm.replace(w=0.6)
    z2 = (12.0 / 4 + 1.0) + 0.3 + 0.4 * 2.0 * 0.5
    xq = 0.6 * 2.0 * 0.5
    T2 = 3.0 * sum((z2 + spmd.r1(i, z2, xq)) / i for i in range(1, 5)) + 3.5
    assert spmd.cycle_times(p, d, prm2, "SIO")["T"] == pytest.approx(T2, rel=1e-12)


def test_bus_aio_against_mva_and_amdahl():
    prm = spmd.SPMDParams(S_cpu_par=1.0, S_cpu_ser=0.02, S_com_0=0.001, S_com_R=0.3, w=0.4,
                          S_io_0=0.01, S_io_R=0.5, n_io=2.0, r=math.inf)
    p, d = 16, 4
    z = spmd.cpu_time(p, prm) + spmd.com_delay(p, prm)
    tio = 0.01 + (0.5 / 4) / 16
    r = mva.solve([spmd.com_queue(p, prm) * 2.0, tio], 16, think_time=z * 2.0)   # (20)-(21)
    ct = spmd.cycle_times(p, d, prm, "BUS-AIO")
    assert ct["T"] == pytest.approx(r.cycle_time, rel=1e-12)
    assert ct["T_io"] == pytest.approx(r.residence_time[1], rel=1e-12)
    # no communication and no I/O: Amdahl's law
    amd = spmd.SPMDParams(S_cpu_par=0.9, S_cpu_ser=0.1)
    for p in (1, 2, 8, 64):
        assert spmd.bus_aio_speedup(p, 1, amd) == pytest.approx(1.0 / (0.9 / p + 0.1))


def test_every_model_is_one_on_one_processor_and_disk():
    prm = spmd.SPMDParams(S_cpu_par=1.0, S_cpu_ser=0.1, S_com_0=0.05, S_com_R=0.2, w=0.5,
                          S_io_0=0.1, S_io_R=0.4, n_io=5.0)
    for model in spmd.MODELS:
        assert spmd.speedup(1, 1, prm, model) == pytest.approx(1.0)


def test_clu_aio():
    prm = spmd.SPMDParams(S_cpu_par=1.0, S_cpu_ser=0.01, S_com_0=0.002, S_com_R=0.1, w=0.3,
                          S_io_0=0.01, S_io_R=0.4)
    # one cluster is the BUS-AIO model with one disk (same T_io, same queues)
    for p in (2, 8, 32):
        assert spmd.clu_aio_speedup(p, 1, prm) == pytest.approx(spmd.bus_aio_speedup(p, 1, prm),
                                                                rel=1e-10)
    # the symmetric Bard-Schweitzer shortcut equals the general multi-class Schweitzer MVA
    p, d = 24, 3
    fast = spmd.cycle_times(p, d, prm, "CLU-AIO", clu_method="schweitzer")
    n, k = prm.n_io, p // d
    D = np.zeros((d, d + 1))
    D[np.arange(d), np.arange(d)] = spmd.io_time(p, d, prm, "CLU-AIO")
    D[:, d] = spmd.com_queue(p, prm) * n
    z = (spmd.cpu_time(p, prm) + spmd.com_delay(p, prm)) * n
    sw = mva.solve(D, (k,) * d, think_time=z, method="schweitzer")
    assert fast["T"] == pytest.approx(sw.cycle_time[0], rel=1e-9)
    exact = spmd.cycle_times(p, d, prm, "CLU-AIO", clu_method="exact")
    assert fast["T"] == pytest.approx(exact["T"], rel=0.1)   # AMVA error ~5% here
    # private disks beat one shared I/O node when I/O dominates
    io = prm.replace(S_io_R=5.0)
    assert spmd.clu_aio_speedup(16, 4, io) > spmd.bus_aio_speedup(16, 1, io)


def test_average_error_metric():
    # (1/N_P) sqrt(sum rel^2): two points with relative errors 0.03 and 0.04 -> 0.05 / 2
    assert spmd.average_error([1.03, 2.08], [1.0, 2.0]) == pytest.approx(0.025)


# BUS-AIO (~1.2 s) with the slow tests only: the default run's time budget
@pytest.mark.parametrize("model", ["SIO", pytest.param("BUS-AIO", marks=pytest.mark.slow)])
def test_fit_recovers_synthetic_surface(model):
    # a QCRD-like setup (Sec. 5.2: c = 1, g(p) = 1/p); speedups generated by the model
    true = spmd.SPMDParams(S_cpu_par=0.8, S_cpu_ser=0.01, S_com_0=0.002, S_com_R=0.05,
                           w=0.3, S_io_0=0.01, S_io_R=0.18, r=math.inf)
    pts = [(p, d) for p in (1, 2, 4, 8, 16, 32, 64) for d in (1, 2, 4)]
    s = [spmd.speedup(p, d, true, model) for p, d in pts]
    fit = fit_speedup([p for p, _ in pts], [d for _, d in pts], s, model=model,
                      base=spmd.SPMDParams(S_cpu_par=1.0, r=math.inf))
    assert fit.error < 1e-6
    assert fit.params.T1 == pytest.approx(1.0)          # paper's normalisation to T1
    # the serial I/O and disk-parallel I/O are identifiable from the d dependence
    assert fit.params.S_io_R / fit.params.T1 == pytest.approx(0.18 / true.T1, rel=1e-3)
    # predictions at an unobserved point agree
    assert spmd.speedup(128, 2, fit.params, model) == pytest.approx(
        spmd.speedup(128, 2, true, model), rel=1e-4)


def test_fit_with_noise_reports_the_paper_metric():
    true = spmd.SPMDParams(S_cpu_par=0.9, S_cpu_ser=0.02, S_com_R=0.1, w=0.5, S_io_R=0.1,
                           r=2.0)
    pts = [(p, d) for p in (1, 2, 4, 8, 16, 32) for d in (1, 2)]
    rng = np.random.default_rng(3)
    s = np.array([spmd.speedup(p, d, true, "BUS-AIO") for p, d in pts])
    s_obs = s * (1 + 0.01 * rng.standard_normal(s.size))
    fit = fit_speedup([p for p, _ in pts], [d for _, d in pts], s_obs,
                      free=("S_cpu_par", "S_cpu_ser", "S_com_R", "w", "S_io_R"),
                      base=true.replace(S_com_0=0.0, S_io_0=0.0))
    assert fit.error == pytest.approx(spmd.average_error(fit.predicted, s_obs))
    assert fit.error <= spmd.average_error(s, s_obs) * 1.0001   # least squares beats truth


@pytest.mark.parametrize("call, match", [
    (lambda: spmd.SPMDParams(S_cpu_par=-1.0), "S_cpu_par must be >= 0"),
    (lambda: spmd.SPMDParams(S_cpu_par=1.0, w=1.5), "w must be <= 1"),
    (lambda: spmd.SPMDParams(S_cpu_par=0.0), "T1 is zero"),
    (lambda: spmd.speedup(6, 1, spmd.SPMDParams(S_cpu_par=1.0, c=4), "SIO"), "multiple"),
    (lambda: spmd.speedup(8, 3, spmd.SPMDParams(S_cpu_par=1.0), "CLU-AIO"), "multiple of d"),
    (lambda: spmd.speedup(8, 1, spmd.SPMDParams(S_cpu_par=1.0), "RAID"), "unknown SPMD model"),
    (lambda: spmd.speedup(0, 1, spmd.SPMDParams(S_cpu_par=1.0)), "p must be >= 1"),
    (lambda: spmd.h(2, "pareto"), "unknown burst distribution"),
    (lambda: fit_speedup([1, 2], [1, 1], [1.0, 1.5]), "observations"),
    (lambda: fit_speedup([1, 2], [1, 1], [1.0, -1.5], free=("w",)), "s_obs"),
    (lambda: fit_speedup([1, 2], [1, 1], [1.0, 1.5], free=("T1",)), "cannot fit"),
])
def test_bad_parameters(call, match):
    with pytest.raises(CcmodInputError, match=match):
        call()
