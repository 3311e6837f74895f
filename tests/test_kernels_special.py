"""Special functions and the Dirichlet hyperparameter optimiser."""

import numpy as np
import pytest
from scipy import special

from topictool.kernels.dirichlet_opt import (
    doc_topic_histograms,
    learn_parameters,
    learn_symmetric_concentration,
)
from topictool.kernels.special import digamma, digamma_diff, log_rising


def test_digamma_matches_scipy():
    xs = np.concatenate(
        [
            np.geomspace(1e-8, 1e6, 400),
            np.linspace(0.01, 12.0, 600),
            -np.linspace(0.013, 7.9, 200),  # negative non-integers (reflection)
        ]
    )
    got = np.array([digamma(x) for x in xs])
    want = special.digamma(xs)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_digamma_special_values():
    assert digamma(0.0) == -np.inf
    assert np.isnan(digamma(-2.0))
    assert np.isnan(digamma(np.nan))
    assert digamma(np.inf) == np.inf
    assert digamma(1.0) == pytest.approx(-np.euler_gamma, rel=1e-15)


@pytest.mark.parametrize("x", [1e-3, 0.1, 1.0, 7.5, 300.0])
@pytest.mark.parametrize("n", [0, 1, 5, 21, 1000])
def test_log_rising_and_digamma_diff(x, n):
    assert log_rising(x, n) == pytest.approx(special.gammaln(x + n) - special.gammaln(x), rel=1e-10, abs=1e-10)
    assert digamma_diff(x, n) == pytest.approx(special.digamma(x + n) - special.digamma(x), rel=1e-10, abs=1e-10)


def dirichlet_multinomial_tokens(alpha, D, rng):
    """Token arrays (token_ptr, z) of D groups with counts ~ DirMult(alpha, length)."""
    lengths = rng.integers(30, 200, size=D)
    z = []
    for L in lengths:
        counts = rng.multinomial(L, rng.dirichlet(alpha))
        z.append(np.repeat(np.arange(len(alpha)), counts))
    token_ptr = np.zeros(D + 1, np.int64)
    np.cumsum(lengths, out=token_ptr[1:])
    return token_ptr, np.concatenate(z).astype(np.int16)


def test_histograms_count_documents():
    rng = np.random.default_rng(0)
    token_ptr, z = dirichlet_multinomial_tokens(np.array([0.5, 1.0, 2.0]), 50, rng)
    hist, lens = doc_topic_histograms(token_ptr, z, 3)
    n_dk = np.array([np.bincount(z[a:b], minlength=3) for a, b in zip(token_ptr[:-1], token_ptr[1:])])
    for k in range(3):
        expect = np.bincount(n_dk[:, k], minlength=hist.shape[1])
        expect[0] = 0
        assert np.array_equal(hist[k, 1:], expect[1:])
    assert np.array_equal(lens, np.bincount(np.diff(token_ptr), minlength=len(lens)))


def test_learn_parameters_recovers_asymmetric_alpha():
    rng = np.random.default_rng(1)
    alpha_true = np.array([0.05, 0.2, 0.5, 1.0, 3.0])
    token_ptr, z = dirichlet_multinomial_tokens(alpha_true, 3000, rng)
    hist, lens = doc_topic_histograms(token_ptr, z, len(alpha_true))
    alpha = np.ones(len(alpha_true))
    # Plain Minka (no hyperprior), run to convergence.
    total = learn_parameters(alpha, hist, lens, 0.0, np.inf, 500)
    assert total == pytest.approx(alpha.sum())
    assert np.allclose(alpha, alpha_true, rtol=0.1), alpha
    # Mallet's hyperprior (1.001, 1.0) barely moves the estimate with this much data.
    alpha2 = np.ones(len(alpha_true))
    learn_parameters(alpha2, hist, lens, 1.001, 1.0, 500)
    assert np.allclose(alpha2, alpha, rtol=0.05)


def test_learn_symmetric_concentration_recovers_beta():
    rng = np.random.default_rng(2)
    W, groups, beta_true = 400, 60, 0.05
    count_hist = np.zeros(1, np.int64)
    sizes = []
    for _ in range(groups):
        n = int(rng.integers(2000, 6000))
        counts = rng.multinomial(n, rng.dirichlet(np.full(W, beta_true)))
        h = np.bincount(counts)
        if len(h) > len(count_hist):
            count_hist = np.pad(count_hist, (0, len(h) - len(count_hist)))
        count_hist[: len(h)] += h
        sizes.append(n)
    count_hist[0] = 0
    length_hist = np.bincount(sizes).astype(np.int64)
    total = learn_symmetric_concentration(count_hist, length_hist, W, 1.0 * W, 1000, 1e-12)
    assert total / W == pytest.approx(beta_true, rel=0.1)


def test_sum8_is_its_fixed_tree_whatever_the_array_lies():
    """kernels/sums.py: eight running sums (k mod 8) combined pairwise, the remainder into the
    first; the same bits for a copy of the array at another address (a fastmath sum was not), and
    within rounding of the exact sum, for lengths with and without a remainder."""
    import math

    import numba

    from topictool.kernels.sums import sum8

    @numba.njit
    def call(x):
        return sum8(x, x.shape[0])

    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 8, 13, 50, 100, 203):
        x = rng.random(n) * 10.0 ** rng.integers(-3, 4, n)
        s = [0.0] * 8
        for k in range(n - n % 8):
            s[k % 8] += x[k]
        for k in range(n - n % 8, n):
            s[0] += x[k]
        tree = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
        assert call(x) == tree
        for offset in range(1, 4):  # the same values at other alignments
            buf = np.empty(n + offset)
            buf[offset:] = x
            assert call(buf[offset:]) == tree
        assert math.isclose(call(x), math.fsum(x), rel_tol=1e-14, abs_tol=1e-300)
