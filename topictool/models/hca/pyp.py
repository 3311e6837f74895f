"""Pitman-Yor nodes with table counts: posterior factors, the seat of one customer, estimates.

Notation (Buntine & Mishra 2014, sect. 2-3; Chen, Du & Buntine 2011). A node is a
Pitman-Yor process PYP(a, b, parent) whose restaurant holds, for every outcome k
(a topic at a document node, a word at a topic node), n_k customers at t_k tables;
N = sum n_k, T = sum t_k. Each table sends one customer to the parent node. With the
seating collapsed and only the table counts kept, the node contributes the posterior factor

    (b|a)_T  Gamma(b) / Gamma(b + N)  prod_k  S^{n_k}_{t_k,a}                          (eq. 3')

with (b|a)_T = prod_{i<T} (b + i a) (Pochhammer with increment a) and S the generalised
Stirling numbers (topictool/kernels/stirling.py): S^n_{t,a} sums prod_tables (1 - a)_{size-1}
over the ways n labelled customers sit at t tables. (The paper's eq. 3 divides each term by
C(n, t): it keeps table indicators, which of the n customers opened the tables, in the state.
Summed over the C(n, t) choices it is eq. 3'.)

One customer's seat, the seating summed out (``alone``, ``join_weight``). Given the counts,
a seating has probability prod_tables (1 - a)_{size-1} / S^n_t. The samplers move a customer in
two exact Gibbs steps on (counts, seating), keeping only the counts:

    leave:  it sat alone, so its table and the table's customer at the parent go too, with
            P(alone | n, t) = S^{n-1}_{t-1,a} / S^n_{t,a}   (0 when t = 1 < n, 1 when t = n);
            otherwise the table stays
    enter:  joins one of the t_k tables of k      weight (n_k - a t_k) / (b + N)
            opens a new table of k               weight (b + a T) / (b + N) * p_parent(k)

(the CRP's own rule: joining table j weighs size_j - a, summed over k's tables). So a customer
can always leave. The table-indicator sampler of Chen, Du & Buntine (hca's) instead stores
which customers opened tables (one drawn with probability t/n), and a customer that opened
the only table of its outcome while others still sit there (t = 1 < n) cannot leave: the
token is "blocked" and keeps its topic. On state_union (K = 100, docs/models/hca.md) that is
1 % of NP-LDA's document-side updates and 10 % of its word side. The bursty front end keeps
per-token indicators r, as hca does (burst.py and ``indicator_weights`` below).

Roots. Both hierarchies end in a truncated GEM(a0, b0) over K topics (alpha) or over the
W words (beta, NP-LDA): every atom is one "table", so the root keeps customer counts
T_k only and its predictive probability is the Pitman-Yor urn

    p_root(k) = (T_k - a0) / (T + b0)                    T_k > 0
    p_root(new) = (b0 + a0 K+) / (T + b0)                the first unused atom (K+ in use)

(hca's convention: the new-atom mass goes to the first empty topic, or is spread evenly
over the W - K+ unseen words). The root's own factor is (b0|a0)_{K+} / (b0)_T prod (1-a0)_{T_k-1}
(times (W - K+)! / W! for the random labels of the words). Truncation: when all K topics
(or all W words) are in use no new atom can be drawn and the urn keeps its denominator
T + b0, i.e. the GEM is conditioned on having at most K atoms in use. That is the exact
target of these factors. hca instead renormalises to (T_k - a0) / (T - K a0) when every atom
is in use, which no joint distribution matches; and because every vocabulary word of a
training corpus is always in use at the beta root, hca's NP-LDA is always in that regime.

Estimates (paper eq. 5, the CRP posterior mean of a PYP given its counts):

    E[p_k | counts] = (n_k - a t_k + (b + a T) p_parent(k)) / (b + N)
"""

import math

import numba
import numpy as np

from ...kernels.special import log_pochhammer, log_rising
from ...kernels.stirling import log_stirling_from_table, ratio_new_table, ratio_same_tables


@numba.njit(cache=True, nogil=True)
def log_binomial(n, t):
    return math.lgamma(n + 1.0) - math.lgamma(t + 1.0) - math.lgamma(n - t + 1.0)


# A node with stored indicators (the burst nodes, burst.py: r says which customers opened the
# tables), paper eq. 4 without (b + aT)/(b + N) p_parent: A = S^{n+1}_{t+1}/S^n_t (t+1)/(n+1)
# (the new customer opens a table), B = S^{n+1}_t/S^n_t (n-t+1)/(n+1) (joins one); (A, B) = (1, 0)
# for an empty outcome.
@numba.njit(cache=True, nogil=True, inline="always")
def indicator_weights(R, a, n, t):
    if t == 0:
        return 1.0, 0.0
    A = ratio_new_table(R, a, n, t) * (t + 1.0) / (n + 1.0)
    B = ratio_same_tables(R, a, n, t) * (n - t + 1.0) / (n + 1.0)
    return A, B


# "enter" above: the weight of joining one of the t tables of n customers (times 1/(b + N)).
@numba.njit(cache=True, nogil=True, inline="always")
def join_weight(a, n, t):
    return n - a * t


# "leave" above: P(a given customer of n at t tables sits alone) = S^{n-1}_{t-1,a} / S^n_{t,a},
# from R[n-1, t] = S^{n-1}_{t-1}/S^{n-1}_t and S^n_t = S^{n-1}_{t-1} + (n-1 - t a) S^{n-1}_t.
@numba.njit(cache=True, nogil=True, inline="always")
def alone(R, a, n, t):
    if t >= n:
        return 1.0
    r = R[n - 1, t]
    return r / ((n - 1 - t * a) + r)


# Root urn numerator of p_root(k) (see the module docstring); the denominator is root_norm.
@numba.njit(cache=True, nogil=True, inline="always")
def root_numerator(count, is_first_empty, a0, b0, used):
    if count > 0:
        return count - a0
    if is_first_empty:
        return b0 + a0 * used
    return 0.0


@numba.njit(cache=True, nogil=True, inline="always")
def root_norm(total, b0):
    """1 / (T + b0), the urn's denominator."""
    return 1.0 / (total + b0)


# p_root(w) for the word root of NP-LDA: the new-word mass is spread over the W - K+ unseen words.
@numba.njit(cache=True, nogil=True, inline="always")
def word_root_probability(count, total, used, W, a0, b0):
    if count > 0:
        return (count - a0) / (total + b0)
    return (b0 + a0 * used) / ((total + b0) * (W - used))


# Eq. 3' in logs for one node: counts n (K), tables t (K); R a ratio table for discount a
# covering max n and max t. Used for likelihoods and (in tests) against the seating.
@numba.njit(cache=True, nogil=True)
def node_log_factor(n, t, a, b, R):
    N = 0
    T = 0
    s = 0.0
    for k in range(n.shape[0]):
        N += n[k]
        T += t[k]
        if n[k] > 0:
            s += log_stirling_from_table(R, a, n[k], t[k])
    return s + log_pochhammer(b, a, T) - log_rising(b, N)


# The GEM root's factor: (b0|a0)_{K+} / (b0)_T prod_k (1 - a0)_{T_k - 1}.
@numba.njit(cache=True, nogil=True)
def root_log_factor(counts, a0, b0):
    used = 0
    T = 0
    s = 0.0
    lg1 = math.lgamma(1.0 - a0)
    for k in range(counts.shape[0]):
        c = counts[k]
        if c > 0:
            used += 1
            T += c
            if c > 1:
                s += math.lgamma(c - a0) - lg1
    return s + log_pochhammer(b0, a0, used) - log_rising(b0, T)


def root_estimate(counts, a0, b0):
    """E[p_root] from root counts (paper eq. 5 at the root): used atoms (T_k - a0)/(T + b0), the
    remaining mass (b0 + a0 K+)/(T + b0) spread evenly over the unused ones (renormalised
    over the used ones when none is left)."""
    counts = np.asarray(counts, dtype=np.float64)
    K = len(counts)
    used = counts > 0
    Kp = int(used.sum())
    T = counts.sum()
    p = np.zeros(K)
    if Kp == 0:
        return np.full(K, 1.0 / K)
    if Kp == K:
        p = (counts - a0) / (T - K * a0)
    else:
        p[used] = (counts[used] - a0) / (T + b0)
        p[~used] = (b0 + a0 * Kp) / (T + b0) / (K - Kp)
    return p / p.sum()


def pyp_estimate(n, t, a, b, parent):
    """Paper eq. 5 along the last axis: (n - a t + (b + a T) parent) / (b + N)."""
    n = np.asarray(n, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    T = t.sum(axis=-1, keepdims=True)
    N = n.sum(axis=-1, keepdims=True)
    return (n - a * t + (b + a * T) * parent) / (b + N)


# Eq. 5 for every topic node over the words at once, before the rows are normalised: phi (K x W)
# from the counts n_wk and tables t_wk (W x K, the sampler's layout) over the parent (W), or with no
# tables (t_wk with no rows) the Dirichlet mean's numerator and denominator (n + beta) / (N + W beta)
# (a and parent unused, b = beta). One pass and one K x W array, where numpy made about ten: with
# phi_average the estimate is made every sweep, and on ch (K = 100, W = 4,258) it cost as much as
# the sweep. Each element is computed in numpy's order, so it has pyp_estimate's bits (tested); the
# caller normalises the rows.
@numba.njit(cache=True, nogil=True)
def topic_word_estimate(n_wk, t_wk, a, b, parent):
    W, K = n_wk.shape
    tables = t_wk.shape[0] > 0
    N = np.zeros(K)
    T = np.zeros(K)
    for w in range(W):
        for k in range(K):
            N[k] += n_wk[w, k]
            if tables:
                T[k] += t_wk[w, k]
    phi = np.empty((K, W))
    for k in range(K):
        row = phi[k]
        if tables:
            c = b + a * T[k]
            d = b + N[k]
            for w in range(W):
                row[w] = (n_wk[w, k] - a * t_wk[w, k] + c * parent[w]) / d
        else:
            d = N[k] + W * b
            for w in range(W):
                row[w] = (n_wk[w, k] + b) / d
    return phi
