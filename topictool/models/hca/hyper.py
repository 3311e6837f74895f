"""Hyper-parameter log densities of the hca models, for slice sampling (kernels/slice.py).

Each density is the part of the collapsed posterior (products of pyp.py's eq. 3 factors)
that depends on the parameter, evaluated on count statistics gathered once per update:

  concentration b of PYP nodes with T tables, N customers (document nodes: b_theta;
  topic nodes: b_phi; burst nodes of topic k: b_psi_k):
      sum_nodes [log (b|a)_T - log (b)_N] + log prior(b)
  discount a of the same nodes, pairs (n, t) of every cell:
      sum_nodes log (b|a)_T + sum_cells log S^n_{t,a}                (uniform prior)
  a GEM root (b_alpha, a_alpha; b_beta, a_beta) with counts T_k, K+ atoms in use, T total:
      b0:  log (b0|a0)_{K+} - log (b0)_T + log prior(b0)
      a0:  log (b0|a0)_{K+} + sum_k log (1 - a0)_{T_k - 1}
  a symmetric Dirichlet beta on the topics (hdp-gibbs), counts n_kw:
      sum_k [sum_w log Gamma(n_kw + beta) - W log Gamma(beta)] - [log Gamma(n_k + W beta) - log Gamma(W beta)]

hca's choices are kept: concentrations have a Gamma(shape 1.1, scale 1) prior and live in
[0.001, 10000]; discounts are uniform on [0.01, 0.98]; the per-word Dirichlet beta is
flat on [1e-4, 1] (hca samples the total W beta).
"""

import math

import numpy as np
from scipy.special import gammaln

from ...kernels.slice import slice_sample
from ...kernels.stirling import sum_log_stirling

CONCENTRATION_MIN, CONCENTRATION_MAX = 0.001, 10000.0
DISCOUNT_MIN, DISCOUNT_MAX = 0.01, 0.98
BETA_MIN, BETA_MAX = 1e-4, 1.0
PRIOR_SHAPE, PRIOR_SCALE = 1.1, 1.0


def log_concentration_prior(b):
    return (PRIOR_SHAPE - 1.0) * math.log(b) - b / PRIOR_SCALE


def sum_log_pochhammer(b, a, T):
    """sum over nodes of log (b|a)_T (kernels.special.log_pochhammer, vectorised over the
    nodes with scipy's gammaln); b a scalar or an array matching T."""
    T = np.asarray(T, dtype=np.float64)
    if a == 0.0:
        return float(np.sum(T * np.log(b)))
    ba = np.asarray(b, dtype=np.float64) / a
    return float(np.sum(T * math.log(a) + gammaln(ba + T) - gammaln(ba)))


def sum_log_rising(b, N):
    """sum over nodes of log Gamma(b + N) - log Gamma(b) (kernels.special.log_rising, vectorised)."""
    N = np.asarray(N, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.sum(gammaln(b + N) - gammaln(b)))


def concentration_logpdf(b, a, T, N):
    return log_concentration_prior(b) + sum_log_pochhammer(b, a, T) - sum_log_rising(b, N)


def discount_logpdf(a, b, T, pairs):
    pn, pt, pw = pairs
    return sum_log_pochhammer(b, a, T) + sum_log_stirling(a, pn, pt, pw)


def root_concentration_logpdf(b0, a0, used, total):
    return log_concentration_prior(b0) + sum_log_pochhammer(b0, a0, used) - sum_log_rising(b0, total)


def root_discount_logpdf(a0, b0, counts):
    c = counts[counts > 1].astype(np.float64)
    tables = int(np.count_nonzero(counts))
    return sum_log_pochhammer(b0, a0, tables) + float(np.sum(gammaln(c - a0) - gammaln(1.0 - a0)))


def dirichlet_logpdf(beta, count_values, count_freq, n_k, W):
    """count_values/count_freq: the distinct non-zero n_kw and how many cells have each."""
    s = float(np.sum(count_freq * (gammaln(count_values + beta) - gammaln(beta))))
    return s - float(np.sum(gammaln(n_k + W * beta) - gammaln(W * beta)))


# ----------------------------------------------------------------------------
# one slice-sampling update per parameter


def sample_concentration(b, a, T, N, rng):
    keep = np.asarray(N) > 0
    T, N = np.asarray(T)[keep], np.asarray(N)[keep]
    return slice_sample(
        lambda x: concentration_logpdf(x, a, T, N), b, CONCENTRATION_MIN, CONCENTRATION_MAX, rng, log_scale=True
    )


def sample_discount(a, b, T, pairs, rng):
    return slice_sample(lambda x: discount_logpdf(x, b, T, pairs), a, DISCOUNT_MIN, DISCOUNT_MAX, rng, width=0.1)


def sample_root_concentration(b0, a0, counts, rng):
    used = int(np.count_nonzero(counts))
    total = int(np.sum(counts))
    return slice_sample(
        lambda x: root_concentration_logpdf(x, a0, used, total),
        b0,
        CONCENTRATION_MIN,
        CONCENTRATION_MAX,
        rng,
        log_scale=True,
    )


def sample_root_discount(a0, b0, counts, rng):
    return slice_sample(lambda x: root_discount_logpdf(x, b0, counts), a0, DISCOUNT_MIN, DISCOUNT_MAX, rng, width=0.1)


def sample_dirichlet_beta(beta, n_kw, n_k, rng):
    nz = n_kw[n_kw > 0]
    values, freq = np.unique(nz, return_counts=True)
    values = values.astype(np.float64)
    freq = freq.astype(np.float64)
    W = n_kw.shape[0]
    n_k = np.asarray(n_k, dtype=np.float64)
    return slice_sample(
        lambda x: dirichlet_logpdf(x, values, freq, n_k, W), beta, BETA_MIN, BETA_MAX, rng, log_scale=True
    )
