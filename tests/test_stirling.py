"""Generalised Stirling numbers (topictool/kernels/stirling.py) against exact arithmetic."""

import math
from fractions import Fraction

import numpy as np
import pytest

from topictool.kernels import stirling

DISCOUNTS = [Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(9, 10)]


def exact_table(a, n_max):
    """S^n_{t,a} as Fractions by the defining recursion S^{n+1}_t = S^n_{t-1} + (n - t a) S^n_t."""
    S = [[Fraction(0)] * (n_max + 2) for _ in range(n_max + 1)]
    S[0][0] = Fraction(1)
    for n in range(n_max):
        for t in range(1, n + 2):
            S[n + 1][t] = S[n][t - 1] + (n - t * a) * S[n][t]
    return S


def flog(x):
    """log of a positive Fraction without overflowing floats."""
    return math.log(x.numerator) - math.log(x.denominator)


@pytest.mark.parametrize("a", DISCOUNTS)
def test_tables_match_exact_recursion(a):
    n_max = 30
    S = exact_table(a, n_max)
    af = float(a)
    L = stirling.log_stirling_table(af, n_max, n_max)
    table = stirling.StirlingTable(af, n_max, t_cap=n_max)
    for n in range(1, n_max + 1):
        for t in range(1, n + 1):
            want = flog(S[n][t])
            assert L[n, t] == pytest.approx(want, rel=1e-12, abs=1e-12)
            assert table.log(n, t) == pytest.approx(want, rel=1e-11, abs=1e-11)
        assert L[n, 0] == -np.inf and table.log(n, 0) == -np.inf
    # closed forms: S^n_1 = (1-a)_{n-1}, S^n_n = 1, S^n_{n-1} = (1-a) n (n-1) / 2
    for n in range(2, n_max + 1):
        assert S[n][n] == 1
        assert S[n][n - 1] == (1 - a) * n * (n - 1) / 2
        assert S[n][1] == math.prod([(i - a) for i in range(1, n)])


@pytest.mark.parametrize("a", DISCOUNTS)
def test_sampler_ratios_match_exact(a):
    n_max = 25
    S = exact_table(a, n_max + 1)
    af = float(a)
    table = stirling.StirlingTable(af, n_max + 1, t_cap=n_max + 1)
    for n in range(1, n_max + 1):
        for t in range(1, n + 1):
            u = float(S[n + 1][t] / S[n][t])
            v = float(S[n + 1][t + 1] / S[n][t])
            assert stirling.ratio_same_tables(table.R, af, n, t) == pytest.approx(u, rel=1e-12)
            assert stirling.ratio_new_table(table.R, af, n, t) == pytest.approx(v, rel=1e-12)


@pytest.mark.parametrize("a", [0.0, 0.5])
def test_sum_log_stirling_matches_table(a):
    rng = np.random.default_rng(3)
    n = rng.integers(1, 60, size=200)
    t = np.minimum(rng.integers(1, 20, size=200), n)
    w = rng.integers(1, 4, size=200).astype(float)
    L = stirling.log_stirling_table(a, 60, 60)
    want = float(np.sum(w * L[n, t]))
    pn, pt, pw = stirling.sorted_pairs(n, t, w)
    assert np.all(np.diff(pn) >= 0)
    got = stirling.sum_log_stirling(a, pn, pt, pw)
    assert got == pytest.approx(want, rel=1e-11)


@pytest.mark.parametrize("a", [0.0, 0.5, 0.98])
def test_large_tables_stay_finite(a):
    n_max, t_cap = 20_000, 200
    table = stirling.StirlingTable(a, n_max, t_cap=t_cap)
    R = table.R
    rows = np.arange(n_max + 1)[:, None]
    cols = np.arange(t_cap + 1)[None, :]
    inside = (cols >= 2) & (cols <= rows)
    assert np.all(np.isfinite(R[inside])) and np.all(R[inside] > 0)
    for t in (1, 2, 50, 200):
        v = table.log(n_max, t)
        assert np.isfinite(v)
    # S^n_1 = (1-a)_{n-1} exactly
    assert table.log(n_max, 1) == pytest.approx(math.lgamma(n_max - a) - math.lgamma(1 - a), rel=1e-14)
    # ratios at the far corner are finite and positive
    for t in (1, 100, 199):
        assert 0 < stirling.ratio_same_tables(R, a, n_max - 1, t) < np.inf
        assert 0 < stirling.ratio_new_table(R, a, n_max - 1, t) < np.inf
    # the rolling-row sum agrees with the table at n = 20,000
    pn, pt, pw = stirling.sorted_pairs([n_max, n_max, 15_000], [3, 150, 40])
    want = table.log(n_max, 3) + table.log(n_max, 150) + table.log(15_000, 40)
    assert stirling.sum_log_stirling(a, pn, pt, pw) == pytest.approx(want, rel=1e-12)
    # the log-space reference stays finite as well on the full rows
    L = stirling.log_stirling_table(a, n_max, 20)
    assert np.all(np.isfinite(L[1:, 1:][np.tril(np.ones((n_max, 20), bool))]))
    assert L[n_max, 7] == pytest.approx(table.log(n_max, 7), rel=1e-9)


def test_table_grows_and_rebuilds():
    table = stirling.StirlingTable(0.3, 50, t_cap=4)
    table.ensure(80, 10)
    assert table.n_max >= 80 and table.t_cap >= 10
    L = stirling.log_stirling_table(0.3, 80, 10)
    assert table.log(80, 10) == pytest.approx(L[80, 10], rel=1e-12)
    table.set_discount(0.6)
    L = stirling.log_stirling_table(0.6, 80, 10)
    assert table.log(77, 9) == pytest.approx(L[77, 9], rel=1e-12)
