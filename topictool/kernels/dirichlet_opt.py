"""Dirichlet hyperparameter optimisation from count histograms (Minka / Wallach).

Minka's fixed point for the Dirichlet-multinomial (Minka 2000, eq. 55) updates an
asymmetric concentration alpha (K) from per-group counts n_dk (D groups) as

    alpha_k <- alpha_k * sum_d [psi(n_dk + alpha_k) - psi(alpha_k)]
                       / sum_d [psi(n_d + alpha_0) - psi(alpha_0)],   alpha_0 = sum_k alpha_k.

Wallach (2008, "Structured topic models for language", ch. 2) observed that the
sums only depend on the histograms C_k(n) = #{d : n_dk = n} and C(n) = #{d : n_d = n},
and that psi(a + n) - psi(a) = sum_{i<n} 1/(a+i) can be accumulated while walking a
histogram, so each update costs O(max count) instead of O(D K) digamma calls.
Mallet (`cc.mallet.types.Dirichlet.learnParameters`, used by
`ParallelTopicModel.optimizeAlpha`) adds a Gamma(shape, scale) hyperprior in its own
way: ``shape`` is added to each numerator, ``1/scale`` subtracted from the shared
denominator; it calls the update once per optimisation with (1.001, 1.0).
`learn_symmetric_concentration` is `Dirichlet.learnSymmetricConcentration`, which
Mallet's `optimizeBeta` runs on the histogram of topic-word counts n_kw and the
histogram of topic sizes n_k.

Histogram layout (dense, as Mallet): ``topic_doc_hist[k, n]`` = number of documents
with n_dk = n (column 0 unused); ``doc_len_hist[n]`` = number of documents of length n.
"""

import numba
import numpy as np

from .special import digamma


# Minka's fixed point (eq. above) with Mallet's Gamma(shape, scale) terms, on Wallach histograms.
@numba.njit(cache=True, nogil=True)
def last_nonzero(hist):
    """The largest n >= 1 with hist[n] > 0 (0 when there is none): where a histogram walk stops."""
    for n in range(hist.shape[0] - 1, 0, -1):
        if hist[n] > 0:
            return n
    return 0


@numba.njit(cache=True, nogil=True)
def learn_parameters(alpha, topic_doc_hist, doc_len_hist, shape, scale, iterations):
    """Update ``alpha`` (float64 K) in place; return the new sum.

    topic_doc_hist  int64 (K, M): [k, n] = documents whose count for k is n
    doc_len_hist    int64 (L): [n] = documents of length n
    shape, scale    Mallet's hyperprior terms (1.001, 1.0); (0, inf) is plain Minka.
    """
    K = alpha.shape[0]
    # Largest non-zero column of each topic's histogram: the walk stops there.
    limit = np.zeros(K, np.int64)
    for k in range(K):
        limit[k] = last_nonzero(topic_doc_hist[k])
    max_len = last_nonzero(doc_len_hist)
    alpha_sum = 0.0
    for k in range(K):
        alpha_sum += alpha[k]
    inv_scale = 1.0 / scale
    for _ in range(iterations):
        # denominator: sum_n C(n) [psi(alpha_0 + n) - psi(alpha_0)]
        denominator = 0.0
        dig = 0.0
        for n in range(1, max_len + 1):
            dig += 1.0 / (alpha_sum + n - 1)
            denominator += doc_len_hist[n] * dig
        denominator -= inv_scale
        if not denominator > 0.0:
            break  # too little data for the hyperprior's term: leave alpha as it is
        alpha_sum = 0.0
        for k in range(K):
            old = alpha[k]
            numerator = 0.0
            dig = 0.0
            for n in range(1, limit[k] + 1):
                dig += 1.0 / (old + n - 1)
                numerator += topic_doc_hist[k, n] * dig
            alpha[k] = (old * numerator + shape) / denominator
            alpha_sum += alpha[k]
    return alpha_sum


# Minka's fixed point for a symmetric Dirichlet of total concentration c over `dims` outcomes:
# c <- (c/dims) sum_n C(n)[psi(c/dims + n) - psi(c/dims)] / sum_n L(n)[psi(c + n) - psi(c)].
@numba.njit(cache=True, nogil=True)
def learn_symmetric_concentration(count_hist, length_hist, dims, current, iterations, tolerance):
    """Return the new total concentration (e.g. beta * W).

    count_hist   int64: [n] = number of (group, outcome) cells with count n (e.g. n_kw = n)
    length_hist  int64: [n] = number of groups of total n (e.g. topics with n_k = n)
    dims         number of outcomes per group (W)
    Stops after ``iterations`` or when the relative change is below ``tolerance``.
    """
    largest = last_nonzero(count_hist)
    n_lengths = 0
    lengths = np.empty(length_hist.shape[0], np.int64)
    for n in range(1, length_hist.shape[0]):
        if length_hist[n] > 0:
            lengths[n_lengths] = n
            n_lengths += 1
    if largest == 0 or n_lengths == 0:
        return current
    for _ in range(iterations):
        param = current / dims
        numerator = 0.0
        dig = 0.0
        for n in range(1, largest + 1):
            dig += 1.0 / (param + n - 1)
            numerator += count_hist[n] * dig
        denominator = 0.0
        dig = 0.0
        previous = 0
        cached = digamma(current)
        for j in range(n_lengths):
            length = lengths[j]
            if length - previous > 20:
                dig = digamma(current + length) - cached
            else:
                for n in range(previous, length):
                    dig += 1.0 / (current + n)
            previous = length
            denominator += dig * length_hist[length]
        if not (denominator > 0.0 and numerator > 0.0):
            break
        new = param * numerator / denominator
        change = abs(new - current)
        current = new
        if change <= tolerance * current:
            break
    return current


# C_k(n) and C(n) of the module docstring, from the token assignments (one pass over z).
@numba.njit(cache=True, nogil=True)
def doc_topic_histograms(token_ptr, z, K):
    """(topic_doc_hist int64 (K, M+1), doc_len_hist int64 (Lmax+1)) from assignments.

    M is the largest n_dk seen, Lmax the longest document.
    """
    D = token_ptr.shape[0] - 1
    longest = 0
    for d in range(D):
        L = token_ptr[d + 1] - token_ptr[d]
        if L > longest:
            longest = L
    counts = np.zeros(K, np.int64)
    largest = 0
    for d in range(D):
        for i in range(token_ptr[d], token_ptr[d + 1]):
            counts[z[i]] += 1
        for i in range(token_ptr[d], token_ptr[d + 1]):
            c = counts[z[i]]
            if c > largest:
                largest = c
            counts[z[i]] = 0
    topic_doc_hist = np.zeros((K, largest + 1), np.int64)
    doc_len_hist = np.zeros(longest + 1, np.int64)
    for d in range(D):
        a = token_ptr[d]
        b = token_ptr[d + 1]
        doc_len_hist[b - a] += 1
        for i in range(a, b):
            counts[z[i]] += 1
        for i in range(a, b):
            k = z[i]
            if counts[k] > 0:
                topic_doc_hist[k, counts[k]] += 1
                counts[k] = 0
    return topic_doc_hist, doc_len_hist
