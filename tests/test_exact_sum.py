"""``ExactSum`` (the compute total a streamed run's survey and an in-memory trace share):
correctly rounded, whatever the batches; checked against exact rational arithmetic."""
from fractions import Fraction

import numpy as np

from ccmod.workloads.units import ExactSum


def _exact(x) -> float:
    return float(sum((Fraction(float(v)) for v in x), Fraction(0)))


def test_exact_sum_is_the_correctly_rounded_total():
    rng = np.random.default_rng(7)
    cases = [np.array([]), np.array([0.0, -0.0]), np.array([1e308, 1e308, -1e308]),
             np.array([5e-324, 5e-324, 1e-310]), np.array([1.0, 1e-16, 1e-16]),
             np.array([2.0 ** 60, 1.0, -2.0 ** 60]), np.array([0.1] * 10)]
    for _ in range(6):
        cases.append(rng.standard_normal(100) * 10.0 ** rng.integers(-300, 300, 100))
        cases.append(rng.exponential(1e-3, 200))
    for x in cases:
        acc = ExactSum()
        for part in np.array_split(x, 3):
            acc.add(part)
        got, want = acc.value(), _exact(x)
        assert got == want, (got, want)
