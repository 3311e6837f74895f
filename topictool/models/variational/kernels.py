"""numba building blocks shared by the variational family.

Everything here is a plain ``@njit`` function over arrays (no globals, no
Python objects). Scalars are passed as float64 / int64 / bool only, so each
kernel compiles once.

Lazily decayed counts ("scaled counts")
---------------------------------------
The stochastic updates of a global count table have the form

    n  <-  (1 - rho) n  +  rho * target,        target non-zero in a few rows only

(SCVB0's N^Phi, PCSVB0's n_kw, SVI's lambda - eta). Decaying every entry is
O(K W) per update. Instead the table is stored as ``n = scale * A``: the decay
is ``scale *= (1 - rho)`` (O(1)) and only the target's rows are written,
``A[w] += rho * target[w] / scale``. When ``scale`` falls below
``RESCALE_BELOW`` the scale is folded back into A (O(K W), rare: the product of
(1 - rho) over many updates). See ``decay_scaled``.
"""

import numba
import numpy as np

from ...kernels.jit import no_nrt
from ...kernels.rng import uniform

# Fold the scale factor back into the stored table when it drops below this;
# A then grows to at most 1/RESCALE_BELOW times the true counts (far from overflow).
RESCALE_BELOW = 1e-100


# exp(Psi(x)) for x > 0: Psi(x) = Psi(x + 6) - sum_{i<6} 1/(x + i), then the asymptotic series
# exp(Psi(y + 1/2)) = y + 1/(24 y) - 37/(5760 y^3) + 10313/(2903040 y^5) + ...  at y = x + 5.5
# (relative error < 5e-9 for every x > 0). The six reciprocals are summed as two rational
# terms and there is no branch; one exp instead of digamma's log and the caller's exp. (Fine up
# to x ~ 1e100, far beyond any count.) No fastmath: its reassociation and FMA contraction made
# the result depend on the CPU target (and so on which compiled copy ran).
@numba.njit(cache=True, nogil=True)
def exp_digamma(x):
    x1 = x + 1.0
    x2 = x + 2.0
    x3 = x + 3.0
    x4 = x + 4.0
    x5 = x + 5.0
    a = x * x1
    b = x3 * x4
    shift = (x1 * x2 + x * x2 + a) / (a * x2) + (x4 * x5 + x3 * x5 + b) / (b * x5)
    y = x + 5.5
    iy = 1.0 / y
    iy2 = iy * iy
    e = y + iy * (1.0 / 24.0 - iy2 * (37.0 / 5760.0 - iy2 * (10313.0 / 2903040.0)))
    return e * np.exp(-shift)


# rho_t = s / (tau + t)^kappa  (Robbins-Monro step size; Foulds et al. 2013 sec. 4,
# Hoffman et al. 2013 eq. 26 with s = 1), capped at 1.
@numba.njit(cache=True, nogil=True)
def step_size(s, tau, kappa, t):
    r = s / (tau + t) ** kappa
    if r > 1.0:
        return 1.0
    return r


# Product over m consecutive steps: prod_{i<m} (1 - rho_{t+i}). Applying the update
# n <- (1 - rho) n + rho x m times with the same x gives c n + (1 - c) x with this c.
@numba.njit(cache=True, nogil=True)
def keep_fraction(s, tau, kappa, t, m):
    c = 1.0
    for i in range(m):
        c *= 1.0 - step_size(s, tau, kappa, t + i)
    return c


# 1 - rho_t for t = 0..n-1: the factors keep_fraction multiplies, made once (a power each) for a
# step counter that restarts at every document, so that a token's step is a load, not a power.
@numba.njit(cache=True, nogil=True)
def keep_table(s, tau, kappa, n):
    out = np.empty(n, dtype=np.float64)
    for t in range(n):
        out[t] = 1.0 - step_size(s, tau, kappa, t)
    return out


# keep_fraction(s, tau, kappa, t, m) from keep_table(s, tau, kappa, >= t + m): the same product, to
# the bit.
@numba.njit(cache=True, nogil=True, inline="always")
def keep_fraction_table(table, t, m):
    c = 1.0
    for i in range(m):
        c *= table[t + i]
    return c


# Random soft assignments: q_i ~ normalised Uniform(0,1)^K per unit (token or
# distinct word of a document), accumulated with the unit's count into the
# expected counts n_dk, n_wk, n_k. q_store (units, K) keeps them (PCVB0) or has 0 rows;
# E_sum (K), unless empty, gets sum_d E[1(n_dk >= 1)] = sum_d 1 - prod_i (1 - q_ik).
@numba.njit(cache=True, nogil=True)
def soft_init(unit_ptr, unit_words, unit_counts, rng, row, n_dk, n_wk, n_k, q_store, E_sum):
    D = unit_ptr.shape[0] - 1
    K = n_k.shape[0]
    keep = q_store.shape[0] == unit_words.shape[0]
    want_E = E_sum.shape[0] == K
    q = np.empty(K, dtype=np.float64)
    prod = np.ones(K, dtype=np.float64)
    for d in range(D):
        for k in range(K):
            prod[k] = 1.0
        for i in range(unit_ptr[d], unit_ptr[d + 1]):
            total = 0.0
            for k in range(K):
                q[k] = uniform(rng, row) + 1e-3
                total += q[k]
            w = unit_words[i]
            m = unit_counts[i]
            for k in range(K):
                x = q[k] / total
                if keep:
                    q_store[i, k] = x
                    x = np.float64(q_store[i, k])  # counts = sums of the stored (rounded) values
                n_dk[d, k] += m * x
                n_wk[w, k] += m * x
                n_k[k] += m * x
                if want_E:
                    prod[k] *= (1.0 - x) ** m
        if want_E and unit_ptr[d + 1] > unit_ptr[d]:
            for k in range(K):
                E_sum[k] += 1.0 - prod[k]


# Sequential initialisation (as a collapsed Gibbs sampler's first sweep): every copy of every
# unit, document by document, draws one topic from
#     p(z = k) ∝ (n_dk + alpha_pi_k) (n_wk + beta) / (n_k + W beta)
# given the draws before it, and the counts are those of the draws. q_store (units, K), unless
# empty, gets each unit's topic histogram / count; E_sum (K) gets sum_d 1(n_dk >= 1).
# Unlike uniform random soft assignments, this starts the HDP models with a few distinct
# topics instead of T interchangeable ones (which CVB0 never separates again).
@numba.njit(cache=True, nogil=True)
def sequential_init(unit_ptr, unit_words, unit_counts, alpha_pi, beta, rng, row, n_dk, n_wk, n_k, q_store, E_sum):
    D = unit_ptr.shape[0] - 1
    W, K = n_wk.shape
    Wbeta = W * beta
    keep = q_store.shape[0] == unit_words.shape[0]
    cum = np.empty(K, dtype=np.float64)
    for d in range(D):
        for i in range(unit_ptr[d], unit_ptr[d + 1]):
            w = unit_words[i]
            m = unit_counts[i]
            if keep:
                for k in range(K):
                    q_store[i, k] = 0.0
            for _r in range(m):
                total = 0.0
                for k in range(K):
                    total += (n_dk[d, k] + alpha_pi[k]) * (n_wk[w, k] + beta) / (n_k[k] + Wbeta)
                    cum[k] = total
                u = uniform(rng, row) * total
                z = K - 1
                for k in range(K):
                    if u < cum[k]:
                        z = k
                        break
                n_dk[d, z] += 1.0
                n_wk[w, z] += 1.0
                n_k[z] += 1.0
                if keep:
                    q_store[i, z] += 1.0 / m
        for k in range(K):
            if n_dk[d, k] > 0.0:
                E_sum[k] += 1.0


# n_dk, n_wk, n_k = the sums of the stored q (units, K) weighted by the units' counts.
@numba.njit(cache=True, nogil=True)
def counts_from_q(unit_ptr, unit_words, unit_counts, q, n_dk, n_wk, n_k):
    D = unit_ptr.shape[0] - 1
    K = n_k.shape[0]
    n_dk[:] = 0.0
    n_wk[:] = 0.0
    n_k[:] = 0.0
    for d in range(D):
        for i in range(unit_ptr[d], unit_ptr[d + 1]):
            w = unit_words[i]
            m = unit_counts[i]
            for k in range(K):
                x = m * np.float64(q[i, k])
                n_dk[d, k] += x
                n_wk[w, k] += x
                n_k[k] += x


# n <- (1 - rho) n for a scaled table n = scale * (A, B): returns the new scale,
# folding it into A and B (O(size)) only when it underflows past RESCALE_BELOW.
@no_nrt
def decay_scaled(A, B, scale, rho):
    return decay_scaled_rows(A, B, scale, rho, 0, A.shape[0], True)


# decay_scaled on rows [w0, w1) of A only (and B when with_totals): threads that compute the same new
# scale from the same (scale, rho) each fold their own range of words, with no barrier between the
# decay and their merge of that range. Returns the new scale.
@numba.njit(cache=True, nogil=True, inline="always")
def decay_scaled_rows(A, B, scale, rho, w0, w1, with_totals):
    new = scale * (1.0 - rho)
    if new >= RESCALE_BELOW:
        return new
    f = max(new, 0.0)  # rho == 1: forget everything
    for w in range(w0, w1):
        for k in range(A.shape[1]):
            A[w, k] *= f
    if with_totals:
        for k in range(B.shape[0]):
            B[k] *= f
    return 1.0


# Training log-likelihood of point estimates: sum_d sum_w c_dw log sum_k theta_dk phi_kw,
# theta_dk = (a_dk + b_k) / sum_k (a_dk + b_k), phi_kw = phi_wk[w, k].
@numba.njit(cache=True, nogil=True)
def point_log_likelihood(doc_ptr, word_ids, counts, a_dk, b_k, phi_wk):
    D = doc_ptr.shape[0] - 1
    K = b_k.shape[0]
    theta = np.empty(K, dtype=np.float64)
    total = 0.0
    for d in range(D):
        if doc_ptr[d + 1] == doc_ptr[d]:
            continue
        s = 0.0
        for k in range(K):
            theta[k] = a_dk[d, k] + b_k[k]
            s += theta[k]
        for k in range(K):
            theta[k] /= s
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w = word_ids[i]
            p = 0.0
            for k in range(K):
                p += theta[k] * phi_wk[w, k]
            total += counts[i] * np.log(max(p, 1e-300))
    return total


# A word of the current minibatch: its first visit gets the next slot of ``touched``; returns the
# number of words touched so far. mark (W) is -1 for words not yet touched, else the word's slot:
# its row of the minibatch's statistics (acc), which thus fill rows 0, 1, ... in the order the words
# are met, a compact block instead of rows scattered over a W x K table (lda-scvb0 reads and writes
# them at every token of a minibatch's final pass, and two threads' blocks then meet in the merge).
@no_nrt
def touch(mark, touched, n_touched, w):
    if mark[w] < 0:
        mark[w] = n_touched
        touched[n_touched] = w
        n_touched += 1
    return n_touched


# After a minibatch: n <- (1 - rho) n + rho total/tokens acc for the scaled table n = scale * (A, B),
# acc (rows by slot, ``touch``) and acc_k (K) the minibatch's statistics (rows 0 .. n_touched - 1, of
# the words ``touched[:n_touched]``), which are cleared, as is ``mark``. Returns the new scale.
@no_nrt
def flush_minibatch(A, B, scale, rho, total, tokens, acc, acc_k, mark, touched, n_touched):
    scale = decay_scaled(A, B, scale, rho)
    if tokens > 0:
        f = rho * total / tokens / scale
        for j in range(n_touched):
            w = touched[j]
            for k in range(A.shape[1]):
                A[w, k] += f * acc[j, k]
                acc[j, k] = 0.0
            mark[w] = -1
        for k in range(B.shape[0]):
            B[k] += f * acc_k[k]
            acc_k[k] = 0.0
    return scale


# prod * (1 - q)^m, set to 0 once below 1e-300 (E = 1 - prod is then 1 to double precision): one
# factor of prod_i (1 - q_ik), the chance that topic k has no token of the document.
@numba.njit(cache=True, nogil=True)
def absent(prod, q, m):
    keep = 1.0 - q
    if m != 1:
        keep = keep**m
    prod *= keep
    if prod < 1e-300:
        return 0.0
    return prod


# --------------------------------------------------------------------------------------------
# Threads (--threads T): each thread t has its own accumulator acc[t] (rows by slot: word w's row is
# mark[t, w], see ``touch``), acc_k[t] (K), with its touched words in touched[t, :n_touched[t]].
# They are combined after the threads have run, always in thread order t = 0, 1, ..., T - 1, so the
# sums do not depend on which thread finished first.


# Words [w0, w1) of the threads' statistics into a table: table[w] += sum_t f[t] acc[t, mark[t, w]]
# (t = 0..T-1 in order) for every word some thread touched (mark[t, w] >= 0). Each thread merges its own range of
# words, so the threads write disjoint rows. With ``clear`` those rows of acc are cleared and their
# marks reset here (the callers reset the touched counts); without, each thread clears its own
# (``clear_touched``): a thread that zeroes another's rows takes their cache lines from the other's
# core, which then takes them back at its next token of that word.
@numba.njit(cache=True, nogil=True)
def merge_rows(table, acc, f, mark, w0, w1, clear=True):
    T, _, K = acc.shape
    row = np.empty(K, dtype=np.float64)
    for w in range(w0, w1):
        hit = False
        for t in range(T):
            if mark[t, w] >= 0:
                hit = True
        if not hit:
            continue
        for k in range(K):
            row[k] = 0.0
        for t in range(T):
            j = mark[t, w]
            if j >= 0:
                ft = f[t]
                for k in range(K):
                    row[k] += ft * acc[t, j, k]
                if clear:
                    for k in range(K):
                        acc[t, j, k] = 0.0
                    mark[t, w] = -1
        for k in range(K):
            table[w, k] += row[k]


# One thread's statistics after the merge (merge_rows with clear=False): its touched rows of acc
# zeroed and their marks reset.
@no_nrt
def clear_touched(acc, mark, touched, n_touched):
    K = acc.shape[1]
    for j in range(n_touched):
        for k in range(K):
            acc[j, k] = 0.0
        mark[touched[j]] = -1


# totals += sum_t f[t] acc_k[t] (t in order); acc_k cleared.
@numba.njit(cache=True, nogil=True)
def merge_totals(totals, acc_k, f):
    for k in range(totals.shape[0]):
        x = 0.0
        for t in range(acc_k.shape[0]):
            x += f[t] * acc_k[t, k]
            acc_k[t, k] = 0.0
        totals[k] += x
