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

import numba
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


def sample_concentrations_by_group(b, a, group, T, N, rng):
    """One update of each group's concentration b[g] (burst nodes: g = the topic, b = b_psi),
    the groups in order; the nodes are given by their group, tables T and customers N.

    The density depends on the nodes only through how many have each T and each N, so it is
    evaluated on those histograms, in numba (``grouped_concentration_logpdf``): a topic's few
    dozen distinct counts instead of its hundreds of nodes, most of whose terms cancel
    (a node with one customer and one table adds log b - log b), and no scipy call per node."""
    keep = np.asarray(N) > 0
    group, T, N = (np.asarray(x, dtype=np.int64)[keep] for x in (group, T, N))
    G = len(b)
    t_ptr, t_val, t_freq = _histograms(group, T, G)
    n_ptr, n_val, n_freq = _histograms(group, N, G)
    for g in range(G):
        ts, ns = slice(t_ptr[g], t_ptr[g + 1]), slice(n_ptr[g], n_ptr[g + 1])
        tv, tf, nv, nf = t_val[ts], t_freq[ts], n_val[ns], n_freq[ns]
        b[g] = slice_sample(
            lambda x: grouped_concentration_logpdf(x, a, tv, tf, nv, nf),  # noqa: B023 (used at once)
            b[g],
            CONCENTRATION_MIN,
            CONCENTRATION_MAX,
            rng,
            log_scale=True,
        )
    return b


@numba.njit(cache=True, nogil=True)
def _histograms(group, values, G):
    """For each group g, the distinct values of its nodes in increasing order and how many
    nodes have each, as (ptr (G + 1), values, frequencies): group g's are [ptr[g], ptr[g + 1]).
    Two counting sorts (by value, then stably by group; the values are counts, so small):
    time and memory linear in the nodes, the largest value and G."""
    P = len(values)
    at = np.zeros((values.max() + 2) if P else 1, dtype=np.int64)
    for i in range(P):
        at[values[i] + 1] += 1
    for v in range(1, len(at)):
        at[v] += at[v - 1]
    by_value = np.empty(P, dtype=np.int64)
    for i in range(P):
        by_value[at[values[i]]] = i
        at[values[i]] += 1
    fill = np.zeros(G + 1, dtype=np.int64)
    for i in range(P):
        fill[group[i] + 1] += 1
    for g in range(G):
        fill[g + 1] += fill[g]
    start = fill.copy()
    sorted_values = np.empty(P, dtype=np.int64)
    for i in by_value:
        sorted_values[fill[group[i]]] = values[i]
        fill[group[i]] += 1
    ptr = np.zeros(G + 1, dtype=np.int64)
    val, freq = np.empty(P, dtype=np.float64), np.empty(P, dtype=np.float64)
    m = 0
    for g in range(G):
        for i in range(start[g], start[g + 1]):
            if i > start[g] and sorted_values[i] == sorted_values[i - 1]:
                freq[m - 1] += 1.0
            else:
                val[m], freq[m] = sorted_values[i], 1.0
                m += 1
        ptr[g + 1] = m
    return ptr, val[:m], freq[:m]


@numba.njit(cache=True, nogil=True)
def positive_value_histogram(a, dense=4096):
    """The distinct positive values of the integer array a in increasing order and how many times
    each occurs, as float64 arrays (np.unique(a[a > 0], return_counts=True), without sorting the
    W x K counts): values below ``dense`` counted in a table, the few larger ones sorted."""
    table = np.zeros(dense, dtype=np.int64)
    large = 0
    for x in a:
        if 0 < x < dense:
            table[x] += 1
        elif x >= dense:
            large += 1
    rest = np.empty(large, dtype=np.int64)
    j = 0
    for x in a:
        if x >= dense:
            rest[j] = x
            j += 1
    rest.sort()
    values = np.empty(dense + large, dtype=np.float64)
    freq = np.empty(dense + large, dtype=np.float64)
    m = 0
    for v in range(1, dense):
        if table[v]:
            values[m], freq[m] = v, table[v]
            m += 1
    for i in range(large):
        if i > 0 and rest[i] == rest[i - 1]:
            freq[m - 1] += 1.0
        else:
            values[m], freq[m] = rest[i], 1.0
            m += 1
    return values[:m], freq[:m]


@numba.njit(cache=True, nogil=True)
def _grouped_log_pochhammer(b, a, val, freq, lo, hi):
    """sum_i freq[i] log (b|a)_{val[i]} over i in [lo, hi) (sum_log_pochhammer on a
    histogram); log (b|a)_1 = log b exactly. kernels.special.log_pochhammer's formula, not a
    call to it: lgamma(b/a) is computed once here, not once per distinct value."""
    lb, out = math.log(b), 0.0
    if a == 0.0:
        for i in range(lo, hi):
            out += freq[i] * val[i] * lb
        return out
    ba, la = b / a, math.log(a)
    lg_ba = math.lgamma(ba)
    for i in range(lo, hi):
        t = val[i]
        out += freq[i] * (lb if t == 1.0 else t * la + math.lgamma(ba + t) - lg_ba)
    return out


@numba.njit(cache=True, nogil=True)
def grouped_concentration_logpdf(b, a, t_val, t_freq, n_val, n_freq):
    """``concentration_logpdf`` from histograms: f nodes with T tables (t_val, t_freq) and
    f' nodes with N customers (n_val, n_freq); log (b)_1 = log b exactly."""
    lb = math.log(b)
    out = (PRIOR_SHAPE - 1.0) * lb - b / PRIOR_SCALE  # log_concentration_prior
    out += _grouped_log_pochhammer(b, a, t_val, t_freq, 0, len(t_val))
    lg_b = math.lgamma(b)
    for i in range(len(n_val)):
        n = n_val[i]
        out -= n_freq[i] * (lb if n == 1.0 else math.lgamma(b + n) - lg_b)
    return out


@numba.njit(cache=True, nogil=True)
def grouped_log_pochhammer(b, a, ptr, val, freq):
    """sum over groups g of the nodes' log (b[g]|a)_T, the T of group g's nodes as a histogram
    [ptr[g], ptr[g + 1]) of (val, freq) (``_histograms``)."""
    out = 0.0
    for g in range(len(b)):
        out += _grouped_log_pochhammer(b[g], a, val, freq, ptr[g], ptr[g + 1])
    return out


def sample_discount_by_group(a, b, group, T, pairs, rng):
    """``sample_discount`` for nodes whose concentration is their group's, b[group] (burst
    nodes: b_psi of their topic), on the histograms of T by group (as
    ``sample_concentrations_by_group``)."""
    group, T = np.asarray(group, dtype=np.int64), np.asarray(T, dtype=np.int64)
    ptr, val, freq = _histograms(group, T, len(b))
    b = np.ascontiguousarray(b, dtype=np.float64)
    pn, pt, pw = pairs
    return slice_sample(
        lambda x: grouped_log_pochhammer(b, x, ptr, val, freq) + sum_log_stirling(x, pn, pt, pw),
        a,
        DISCOUNT_MIN,
        DISCOUNT_MAX,
        rng,
        width=0.1,
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
    values, freq = positive_value_histogram(np.ascontiguousarray(n_kw).reshape(-1))
    W = n_kw.shape[0]
    n_k = np.asarray(n_k, dtype=np.float64)
    return slice_sample(
        lambda x: dirichlet_logpdf(x, values, freq, n_k, W), beta, BETA_MIN, BETA_MAX, rng, log_scale=True
    )
