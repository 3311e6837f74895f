"""numba kernels of the direct-assignment variational HDP (Bryant & Sudderth 2012).

Symbols (as in the paper; docs/models/online_hdp.md has the full derivation):

    beta*      (K+1)   point estimate of the global topic weights; entry K is the
                       mass of all topics beyond the truncation ("remainder")
    alpha            document-level concentration: pi_j ~ Dir(alpha beta*)
    eta              symmetric Dirichlet prior on a topic's word distribution phi_k
    lambda_k   (W)   q(phi_k) = Dir(lambda_k)
    theta_j    (K+1) q(pi_j) = Dir(theta_j); column K is the remainder, which holds
                     no tokens (nested truncation: q(z) is truncated at K topics)
    varphi_jw  (K)   q(z_jn = k) for the tokens of word w in document j

Local update (paper, section 2):
    varphi_jwk ∝ exp{E[log phi_kw] + E[log pi_jk]}
    theta_jk   = alpha beta*_k + sum_w n_jw varphi_jwk        (theta_jK = alpha beta*_K)

Per-document part of the evidence lower bound (eq. 2 and supplement), for any
(varphi, theta), with n_jk = sum_w n_jw varphi_jwk and E[log pi_jk] =
psi(theta_jk) - psi(sum_k theta_jk):

    l_j = lgamma(alpha) - lgamma(sum_k theta_jk)
          + sum_{k<=K} [lgamma(theta_jk) - lgamma(alpha beta*_k)
                        + (alpha beta*_k - theta_jk + n_jk) E[log pi_jk]]
          + sum_w n_jw sum_k varphi_jwk (E[log phi_kw] - log varphi_jwk)

(E[log p(pi_j | alpha beta*)] - E[log q(pi_j)] + E[log p(z_j | pi_j)] +
E[log p(w_j | z_j, phi)] - E[log q(z_j)]; the (x - 1) E[log pi] terms of the two
Dirichlet densities cancel.)

Per-topic part: E[log p(phi_k | eta)] - E[log q(phi_k | lambda_k)] =
    lgamma(W eta) - W lgamma(eta) - lgamma(sum_w lambda_kw)
    + sum_w [lgamma(lambda_kw) + (eta - lambda_kw) E[log phi_kw]]

Documents are given as minibatch-local CSR arrays: ``ptr`` (S+1), ``wid`` (nnz,
an index into the minibatch's distinct words U), ``cnt`` (nnz, float64 counts).
Word-indexed arrays are (U, K), word-major, so the loop over topics is contiguous.
"""

import math

import numba
import numpy as np

from ...kernels.rng import gamma
from ...kernels.special import digamma


# E[log phi_kw] = psi(lambda_kw) - psi(sum_v lambda_kv), for the words ``words`` (section 2; used by L1).
@numba.njit(cache=True, nogil=True)
def expected_log_topics(lam, words, elog_wk):
    """elog_wk[u, k] = E_q[log phi_{k, words[u]}] under q(phi_k) = Dir(lam[k])."""
    expected_log_topics_range(lam, words, elog_wk, 0, lam.shape[0])


# expected_log_topics for topics k0..k1-1 (the moves' threads take ranges of topics: the same bits).
@numba.njit(cache=True, nogil=True)
def expected_log_topics_range(lam, words, elog_wk, k0, k1):
    U = words.shape[0]
    for k in range(k0, k1):
        ps = digamma(_row_sum(lam, k))
        for u in range(U):
            elog_wk[u, k] = digamma(lam[k, words[u]]) - ps


# The local step (model._local_step) computes expected_log_topics in two parts, so that no
# thread redoes another's work: psi(sum_w lambda_kw) for a range of topics, then E[log phi] (and
# e_step's prologue, exp_shifted) for a range of the minibatch's words. lambda is read as
# lambda_kw = (hist_kw + eta) + mbstats[u, k] where w = words[u] (split_merge.combine's
# arithmetic; ``words`` ascending, as Minibatch keeps them), so that hdp-online-sm's re-fitting
# rounds need not write the K x W array to read its row sums and U columns; a plain lambda is
# hist = lambda, eta = 0 and no rows of mbstats (x + 0.0 is x). The values are those of
# expected_log_topics on split_merge.combine's result, bit for bit.
@numba.njit(cache=True, nogil=True)
def topic_digamma_sums(eta, hist, words, mbstats, ps, k0, k1):
    """ps[k] = psi(sum_w lambda_kw) for k in k0..k1-1, the sum in index order (as _row_sum)."""
    W = hist.shape[1]
    U = words.shape[0] if mbstats.shape[0] > 0 else 0
    for k in range(k0, k1):
        s = 0.0
        u = 0
        for w in range(W):
            v = hist[k, w] + eta
            if u < U and words[u] == w:
                v += mbstats[u, k]
                u += 1
            s += v
        ps[k] = digamma(s)


@numba.njit(cache=True, nogil=True)
def expected_log_words(eta, hist, words, mbstats, ps, elog_wk, u0, u1):
    """elog_wk[u, k] = psi(lambda_{k, words[u]}) - ps[k] for u in u0..u1-1."""
    K = hist.shape[0]
    with_mb = mbstats.shape[0] > 0
    for k in range(K):
        p = ps[k]
        for u in range(u0, u1):
            v = hist[k, words[u]] + eta
            if with_mb:
                v += mbstats[u, k]
            elog_wk[u, k] = digamma(v) - p


# The reconciliation of the threads' sufficient statistics: out += parts[0] + parts[1] + ... in
# that order for the rows u0..u1-1 (a fixed order, so the sum depends on the thread count only).
@numba.njit(cache=True, nogil=True)
def add_parts(out, parts, u0, u1):
    P = parts.shape[0]
    K = out.shape[1]
    for u in range(u0, u1):
        for t in range(P):
            for k in range(K):
                out[u, k] += parts[t, u, k]


# The entries of a minibatch grouped by word (a counting sort of wid, stable: each word's
# entries in document order), as (word_ptr (U+1), entries (nnz)).
@numba.njit(cache=True, nogil=True)
def entries_by_word(wid, U):
    word_ptr = np.zeros(U + 1, dtype=np.int64)
    for t in range(wid.shape[0]):
        word_ptr[wid[t] + 1] += 1
    for u in range(U):
        word_ptr[u + 1] += word_ptr[u]
    fill = word_ptr[:-1].copy()
    entries = np.empty(wid.shape[0], dtype=np.int64)
    for t in range(wid.shape[0]):
        entries[fill[wid[t]]] = t
        fill[wid[t]] += 1
    return word_ptr, entries


# out[u, k] = sum over the entries t of word u, in document order, of cnt[t] rows[t, k], for
# words u0..u1-1 (from 0: the additions e_step_docs makes to sstats, so the same bits).
@numba.njit(cache=True, nogil=True)
def word_sums_of_rows(word_ptr, entries, cnt, rows, out, u0, u1):
    K = rows.shape[1]
    for u in range(u0, u1):
        for k in range(K):
            out[u, k] = 0.0
        for i in range(word_ptr[u], word_ptr[u + 1]):
            t = entries[i]
            c = cnt[t]
            for k in range(K):
                out[u, k] += c * rows[t, k]


# E[log phi_w] of a split proposal's two topics on the minibatch words u0..u1-1: lambda_w = eta
# + hist_a[w] (k' keeps the topic's history) + mb_a[u] (its minibatch part) for k', eta + mb_b[u]
# for k'' (no history), normalised by the given totals.
@numba.njit(cache=True, nogil=True)
def split_expected_logs(eta, words, hist_a, mb_a, total_a, mb_b, total_b, elog_a, elog_b, u0, u1):
    psi_a = digamma(total_a)
    psi_b = digamma(total_b)
    for u in range(u0, u1):
        elog_a[u] = digamma(eta + hist_a[words[u]] + mb_a[u]) - psi_a
        elog_b[u] = digamma(eta + mb_b[u]) - psi_b


# out[j] = c[ptr[j + 1]] - c[ptr[j]], c[i] the running sum of cnt[t] col[t] over the entries
# t < i: in the order and with the roundings of np.cumsum(cnt * col), which the moves used
# before (so the same bits), without its three temporary arrays.
@numba.njit(cache=True, nogil=True)
def doc_sums_of_column(ptr, cnt, col, out):
    S = ptr.shape[0] - 1
    running = 0.0
    for t in range(ptr[0]):
        running += cnt[t] * col[t]
    before = running
    t = ptr[0]
    for j in range(S):
        while t < ptr[j + 1]:
            running += cnt[t] * col[t]
            t += 1
        out[j] = running - before
        before = running


# (G2) on the pseudo-counts, for topics k0..k1-1: out = prior + keep (lam - eta), then + coef sstats
# on the minibatch's words -- the same operations as model.step's numpy lines with
# split_merge.combine (hist = keep (lam - eta), mbstats = coef sstats), so the same bits.
@numba.njit(cache=True, nogil=True)
def online_lambda(lam, eta, keep, prior, words, coef, sstats, out, k0, k1):
    W = lam.shape[1]
    U = words.shape[0]
    for k in range(k0, k1):
        for w in range(W):
            out[k, w] = keep * (lam[k, w] - eta) + prior
        for u in range(U):
            out[k, words[u]] += coef * sstats[u, k]


# split_merge.combine for topics k0..k1-1: out = eta + hist, then + mbstats on the minibatch's words.
@numba.njit(cache=True, nogil=True)
def combine_rows(eta, hist, words, mbstats, out, k0, k1):
    W = hist.shape[1]
    U = words.shape[0]
    for k in range(k0, k1):
        for w in range(W):
            out[k, w] = hist[k, w] + eta
        for u in range(U):
            out[k, words[u]] += mbstats[u, k]


# A row sum of a 2-D array: the one loop of the kernels below that need sum_w lambda_kw or
# sum_k theta_jk, so that they all add in the same order and agree bit for bit.
@numba.njit(cache=True, nogil=True)
def _row_sum(a, r):
    """sum_i a[r, i], in index order."""
    s = 0.0
    for x in a[r]:
        s += x
    return s


# T_k = E[log p(phi_k | eta)] - E[log q(phi_k | lambda_k)]: the per-topic terms of the bound (eq. 2).
@numba.njit(cache=True, nogil=True)
def topic_terms(lam, eta, out, elog_sum):
    """out[k] = lgamma(W eta) - W lgamma(eta) - lgamma(sum lambda_k)
    + sum_w [lgamma(lambda_kw) + (eta - lambda_kw)(psi(lambda_kw) - psi(sum lambda_k))];
    elog_sum[k] = sum_w E[log phi_kw] (for the eta update)."""
    topic_terms_range(lam, eta, out, elog_sum, 0, lam.shape[0])


# topic_terms for topics k0..k1-1 only: each topic's terms are its own, so threads taking
# ranges of topics give the same bits as one thread.
@numba.njit(cache=True, nogil=True)
def topic_terms_range(lam, eta, out, elog_sum, k0, k1):
    W = lam.shape[1]
    const = math.lgamma(W * eta) - W * math.lgamma(eta)
    for k in range(k0, k1):
        s = _row_sum(lam, k)
        ps = digamma(s)
        t = const - math.lgamma(s)
        e = 0.0
        for w in range(W):
            x = lam[k, w]
            el = digamma(x) - ps
            t += math.lgamma(x) + (eta - x) * el
            e += el
        out[k] = t
        elog_sum[k] = e


# The Dirichlet part of l_j: E[log p(pi_j | alpha beta*)] - E[log q(pi_j)] + E[log p(z_j | pi_j)].
@numba.njit(cache=True, nogil=True)
def _doc_dirichlet_terms(alpha, alpha_beta, theta_row, n):
    """The Dirichlet part of l_j (all but the word sums) for one document."""
    K1 = alpha_beta.shape[0]
    tsum = 0.0
    for k in range(K1):
        tsum += theta_row[k]
    psum = digamma(tsum)
    v = math.lgamma(alpha) - math.lgamma(tsum)
    for k in range(K1):
        th = theta_row[k]
        nk = n[k] if k < K1 - 1 else 0.0
        v += math.lgamma(th) - math.lgamma(alpha_beta[k]) + (alpha_beta[k] - th + nk) * (digamma(th) - psum)
    return v


# The local step L1-L2: varphi_jwk ∝ exp{E[log phi_kw] + E[log pi_jk]}, theta_jk = alpha beta*_k + n_jk; and l_j.
@numba.njit(cache=True, nogil=True)
def e_step(
    ptr, wid, cnt, elog_wk, alpha, alpha_beta, theta, init_theta, max_iter, tol, sstats, phi_out, doc_elbo, doc_iters
):
    """Coordinate ascent on (varphi_j, theta_j) for every document of the minibatch.

    elog_wk (U, K) E[log phi]; alpha_beta (K+1) = alpha beta*; theta (S, K+1) in/out
    (started at alpha beta*_k + N_j / K when ``init_theta``, else from its contents).
    Each sweep computes varphi from theta and then theta from varphi; sweeps stop when
    the mean |change| of theta_jk is below ``tol`` or after ``max_iter``. A final sweep
    computes varphi from the last theta, accumulates sstats[u, k] += n_ju varphi_juk,
    writes varphi to phi_out (nnz, K) unless phi_out has no rows, and -- when
    max_iter > 0 -- sets theta = alpha beta* + n (so that theta is consistent with the
    varphi that is returned). With max_iter == 0 theta is left unchanged and doc_elbo
    is the bound at (varphi*(theta), theta): the "state" value used by hdp-batch.
    doc_elbo[j] = l_j of the returned (varphi, theta); doc_iters[j] = sweeps done.
    """
    S = ptr.shape[0] - 1
    U, K = elog_wk.shape
    # exp(E[log phi_kw] - max_k E[log phi_kw]) and the per-word shift, so nothing underflows
    shift = np.empty(U, dtype=np.float64)
    x = np.empty((U, K), dtype=np.float64)
    exp_shifted(elog_wk, shift, x, 0, U)
    e_step_docs(
        ptr, wid, cnt, x, shift, alpha, alpha_beta, theta, init_theta, max_iter, tol, sstats, phi_out, doc_elbo,
        doc_iters, 0, S,
    )  # fmt: skip


# e_step's prologue for words u0..u1-1: x[u, k] = exp(E[log phi_kw] - shift[u]), shift[u] = max_k E[log phi_kw].
@numba.njit(cache=True, nogil=True)
def exp_shifted(elog_wk, shift, x, u0, u1):
    K = elog_wk.shape[1]
    for u in range(u0, u1):
        m = elog_wk[u, 0]
        for k in range(1, K):
            if elog_wk[u, k] > m:
                m = elog_wk[u, k]
        shift[u] = m
        for k in range(K):
            x[u, k] = math.exp(elog_wk[u, k] - m)


# L1-L2 for documents j0..j1-1 (e_step's loop; a thread's block of the minibatch): writes only
# their rows of theta, phi_out, doc_elbo, doc_iters and adds to sstats, which a thread owns
# (unless sstats has no rows: then varphi is kept, and summed by words afterwards).
@numba.njit(cache=True, nogil=True)
def e_step_docs(
    ptr, wid, cnt, x, shift, alpha, alpha_beta, theta, init_theta, max_iter, tol, sstats, phi_out, doc_elbo, doc_iters,
    j0, j1,
):  # fmt: skip
    K = x.shape[1]
    keep_phi = phi_out.shape[0] == wid.shape[0]
    add_stats = sstats.shape[0] > 0
    e = np.empty(K, dtype=np.float64)
    psi = np.empty(K, dtype=np.float64)
    acc = np.empty(K, dtype=np.float64)
    n = np.empty(K, dtype=np.float64)
    for j in range(j0, j1):
        lo = ptr[j]
        hi = ptr[j + 1]
        length = 0.0
        for t in range(lo, hi):
            length += cnt[t]
        if init_theta:
            for k in range(K):
                theta[j, k] = alpha_beta[k] + length / K
            theta[j, K] = alpha_beta[K]
        it = 0
        while it < max_iter:
            it += 1
            big = _exp_psi(theta, j, K, psi, e)
            for k in range(K):
                acc[k] = 0.0
            for t in range(lo, hi):
                u = wid[t]
                s = 0.0
                for k in range(K):
                    s += x[u, k] * e[k]
                r = cnt[t] / s
                for k in range(K):
                    acc[k] += x[u, k] * r
            change = 0.0
            for k in range(K):
                new = alpha_beta[k] + e[k] * acc[k]
                change += abs(new - theta[j, k])
                theta[j, k] = new
            if change / K < tol:
                break
        doc_iters[j] = it
        # final sweep: varphi from theta, sufficient statistics, the bound
        big = _exp_psi(theta, j, K, psi, e)
        for k in range(K):
            n[k] = 0.0
        words = 0.0
        for t in range(lo, hi):
            u = wid[t]
            s = 0.0
            for k in range(K):
                s += x[u, k] * e[k]
            c = cnt[t]
            r = c / s
            words += c * (shift[u] + big + math.log(s))
            for k in range(K):
                p = x[u, k] * e[k] / s
                n[k] += c * p
                if add_stats:
                    sstats[u, k] += c * p
                if keep_phi:
                    phi_out[t, k] = p
        for k in range(K):
            words -= n[k] * psi[k]
        if max_iter > 0:
            for k in range(K):
                theta[j, k] = alpha_beta[k] + n[k]
            theta[j, K] = alpha_beta[K]
        doc_elbo[j] = words + _doc_dirichlet_terms(alpha, alpha_beta, theta[j], n)


# exp(E[log pi_jk]) up to a per-document factor, for L1.
@numba.njit(cache=True, nogil=True)
def _exp_psi(theta, j, K, psi, e):
    """psi[k] = digamma(theta[j, k]); e[k] = exp(psi[k] - max psi); returns max psi."""
    big = -np.inf
    for k in range(K):
        psi[k] = digamma(theta[j, k])
        if psi[k] > big:
            big = psi[k]
    for k in range(K):
        e[k] = math.exp(psi[k] - big)
    return big


# Sum over the minibatch of the per-topic ("column") part of l_j, for the columns given (the moves S3, M1).
@numba.njit(cache=True, nogil=True)
def column_terms(ptr, wid, cnt, phi, theta, alpha_beta, elog_wk, psi_sum, out):
    """out[c] = sum_j [lgamma(theta_jc) - lgamma(ab_c) + (ab_c - theta_jc + n_jc)(psi(theta_jc) - psi_sum_j)]
                + sum_j sum_t n_t varphi_tc (E[log phi_c,w_t] - log varphi_tc)
    for the columns c of phi (nnz, C), theta (S, C), alpha_beta (C), elog_wk (U, C);
    psi_sum[j] = psi(sum_k theta_jk) over all K+1 columns of the full state.
    The bound of the minibatch is the sum of these over all topics plus, per document,
    lgamma(alpha) - lgamma(sum_k theta_jk) and the remainder column."""
    column_terms_range(ptr, wid, cnt, phi, theta, alpha_beta, elog_wk, psi_sum, out, 0, alpha_beta.shape[0])


# column_terms for columns c0..c1-1: each column sums over the documents in their order, so
# threads taking ranges of columns give the same bits as one thread.
@numba.njit(cache=True, nogil=True)
def column_terms_range(ptr, wid, cnt, phi, theta, alpha_beta, elog_wk, psi_sum, out, c0, c1):
    S = ptr.shape[0] - 1
    for c in range(c0, c1):
        out[c] = 0.0
    for j in range(S):
        for c in range(c0, c1):
            nc = 0.0
            wsum = 0.0
            for t in range(ptr[j], ptr[j + 1]):
                p = phi[t, c]
                if p > 0.0:
                    v = cnt[t] * p
                    nc += v
                    wsum += v * (elog_wk[wid[t], c] - math.log(p))
            th = theta[j, c]
            out[c] += (
                wsum
                + math.lgamma(th)
                - math.lgamma(alpha_beta[c])
                + (alpha_beta[c] - th + nc) * (digamma(th) - psi_sum[j])
            )


# S2, restricted local step of a split (section 3.1): only topics k', k'' are updated; the
# mass varphi_jwk of the split topic is shared between them, all other topics stay fixed.
@numba.njit(cache=True, nogil=True)
def split_local(ptr, wid, cnt, mass, elog_a, elog_b, ab_a, ab_b, theta_a, theta_b, phi_a, max_iter, tol):
    """For each document: q_t = sigmoid(E[log phi_a,w] + psi(theta_a) - E[log phi_b,w] - psi(theta_b)),
    varphi_a = mass q, varphi_b = mass (1 - q), theta_a = ab_a + sum n varphi_a (likewise b),
    iterated until the mean change of (theta_a, theta_b) is below tol or for max_iter sweeps;
    a last sweep writes phi_a from the final theta, and theta is then made consistent with it."""
    split_local_docs(
        ptr, wid, cnt, mass, elog_a, elog_b, ab_a, ab_b, theta_a, theta_b, phi_a, max_iter, tol, 0, ptr.shape[0] - 1
    )


# split_local for documents j0..j1-1 (each document's theta and varphi are its own: threads
# taking blocks of documents give the same bits as one thread).
@numba.njit(cache=True, nogil=True)
def split_local_docs(ptr, wid, cnt, mass, elog_a, elog_b, ab_a, ab_b, theta_a, theta_b, phi_a, max_iter, tol, j0, j1):
    for j in range(j0, j1):
        lo = ptr[j]
        hi = ptr[j + 1]
        for _it in range(max_iter):
            na, nb = _split_sweep(
                lo, hi, wid, cnt, mass, elog_a, elog_b, digamma(theta_a[j]), digamma(theta_b[j]), phi_a, False
            )
            change = abs(ab_a + na - theta_a[j]) + abs(ab_b + nb - theta_b[j])
            theta_a[j] = ab_a + na
            theta_b[j] = ab_b + nb
            if change < 2.0 * tol:
                break
        na, nb = _split_sweep(
            lo, hi, wid, cnt, mass, elog_a, elog_b, digamma(theta_a[j]), digamma(theta_b[j]), phi_a, True
        )
        theta_a[j] = ab_a + na
        theta_b[j] = ab_b + nb


# One sweep of S2 over a document: share each token's varphi_jwk between k' and k''.
@numba.njit(cache=True, nogil=True)
def _split_sweep(lo, hi, wid, cnt, mass, elog_a, elog_b, psi_a, psi_b, phi_a, write):
    na = 0.0
    nb = 0.0
    for t in range(lo, hi):
        m = mass[t]
        if m <= 0.0:
            if write:
                phi_a[t] = 0.0
            continue
        u = wid[t]
        d = (elog_b[u] + psi_b) - (elog_a[u] + psi_a)
        if d > 0.0:
            z = math.exp(-d)
            q = z / (1.0 + z)
        else:
            q = 1.0 / (1.0 + math.exp(d))
        pa = m * q
        if write:
            phi_a[t] = pa
        na += cnt[t] * pa
        nb += cnt[t] * (m - pa)
    return na, nb


# The document sums of the joint beta* objective (G3; model.beta_objective) for documents
# j0..j1-1: returns sum_j sum_k lgamma(ab_k + n_jk) and sets g[k] = sum_j psi(ab_k + n_jk).
# (One call for all documents; hdp-batch on T > 1 threads: a block each, added in thread order.)
@numba.njit(cache=True, nogil=True)
def beta_objective_docs(ab, n, j0, j1, g):
    K = ab.shape[0]
    f = 0.0
    for k in range(K):
        g[k] = 0.0
    for j in range(j0, j1):
        for k in range(K):
            x = ab[k] + n[j, k]
            f += math.lgamma(x)
            g[k] += digamma(x)
    return f


# psi'(x) for x > 0: the recurrence up to x >= 6, then the asymptotic series (relative error
# below 1e-10; only the Newton steps of alpha use it, as the direction of a guarded step).
# Not variational.sticks.trigamma on purpose: that one has one more term and another evaluation
# order, so sharing it would change the bits of alpha's Newton steps (model.newton_alpha_collapsed).
@numba.njit(cache=True, nogil=True)
def _trigamma(x):
    r = 0.0
    while x < 6.0:
        r += 1.0 / (x * x)
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    return (
        r
        + inv
        + 0.5 * inv2
        + inv * inv2 * (1.0 / 6.0 - inv2 * (1.0 / 30.0 - inv2 * (1.0 / 42.0 - inv2 * (1.0 / 30.0 - inv2 * 5.0 / 66.0))))
    )


# The document sums of alpha's objective jointly with theta (H1; model.newton_alpha_collapsed) for
# documents j0..j1-1, at alpha = a with b = beta*[:K]: order 0 returns
# sum_j [sum_k lgamma(a b_k + n_jk) - lgamma(a + N_j)], order 1 its derivative's sums
# sum_j [sum_k b_k psi(a b_k + n_jk) - psi(a + N_j)], order 2 the second's with psi'.
# (One call for all documents; hdp-batch on T > 1 threads: a block each, added in thread order.)
@numba.njit(cache=True, nogil=True)
def alpha_objective_docs(a, b, n, lengths, order, j0, j1):
    K = b.shape[0]
    total = 0.0
    for j in range(j0, j1):
        s = 0.0
        for k in range(K):
            x = a * b[k] + n[j, k]
            if order == 0:
                s += math.lgamma(x)
            elif order == 1:
                s += b[k] * digamma(x)
            else:
                s += b[k] * b[k] * _trigamma(x)
        y = a + lengths[j]
        if order == 0:
            s -= math.lgamma(y)
        elif order == 1:
            s -= digamma(y)
        else:
            s -= _trigamma(y)
        total += s
    return total


# sum_j E[log pi_jk], the data term of the supplement's beta* objective (G3, theta fixed).
@numba.njit(cache=True, nogil=True)
def expected_log_pi_sums(theta, out):
    """out[k] = sum_j E[log pi_jk] = sum_j [psi(theta_jk) - psi(sum_k theta_jk)], for the beta* objective."""
    S, K1 = theta.shape
    for k in range(K1):
        out[k] = 0.0
    for j in range(S):
        ps = digamma(_row_sum(theta, j))
        for k in range(K1):
            out[k] += digamma(theta[j, k]) - ps


# Initial q(phi): lambda_kw = eta + Gamma(shape, 1/shape) draws (Hoffman et al. 2010's initialisation).
@numba.njit(cache=True, nogil=True)
def random_topics(state, row, eta, shape, lam):
    K, W = lam.shape
    for k in range(K):
        for w in range(W):
            lam[k, w] = eta + gamma(state, row, shape) / shape


# log p(v* | gamma) for the sticks of beta* ~ GEM(gamma), v_k ~ Beta(1, gamma) (supplement):
# sum_k [log gamma + (gamma - 1) log(1 - v_k)] = K log gamma + (gamma - 1) log beta*_{K+1}.
@numba.njit(cache=True, nogil=True)
def log_stick_prior(beta, gamma_):
    K = beta.shape[0] - 1
    return K * math.log(gamma_) + (gamma_ - 1.0) * math.log(beta[K])


# The covariance across the minibatch of the columns of E[pi] (M1's merge candidates), as
# np.cov(x, rowvar=False) but in loops of fixed order (np.cov calls BLAS, whose kernels are
# chosen by CPU).
@numba.njit(cache=True, nogil=True)
def column_covariance(x, out):
    """out[a, b] = sum_j (x_ja - mean_a)(x_jb - mean_b) / (S - 1) for x (S, C), S >= 2."""
    S, C = x.shape
    mean = np.zeros(C)
    for j in range(S):
        for c in range(C):
            mean[c] += x[j, c]
    for c in range(C):
        mean[c] /= S
    for a in range(C):
        for b in range(a, C):
            s = 0.0
            for j in range(S):
                s += (x[j, a] - mean[a]) * (x[j, b] - mean[b])
            out[a, b] = s / (S - 1)
            out[b, a] = out[a, b]


# The stick-breaking map of beta* (G3): beta*_k = v_k prod_{l<k} (1 - v_l), v = sigmoid(u). In numba
# (libm's exp/log) rather than numpy, whose exp and log take an AVX-512 code path on CPUs that
# have it and differ in the last bit from the path of other CPUs.
@numba.njit(cache=True, nogil=True)
def sticks_to_beta(u, beta, v):
    """beta (K+1) and v (K) from the stick logits u (K); beta[K] = prod_l (1 - v_l)."""
    K = u.shape[0]
    before = 0.0  # log prod_{l<k} (1 - v_l)
    for k in range(K):
        x = u[k]
        log_v = -_log1p_exp(-x)
        beta[k] = math.exp(log_v + before)
        v[k] = 1.0 / (1.0 + math.exp(-x))
        before -= _log1p_exp(x)
    beta[K] = math.exp(before)


@numba.njit(cache=True, nogil=True)
def _log1p_exp(x):
    """log(1 + exp(x)) without overflow."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


# The inverse of sticks_to_beta: u_k = logit(beta*_k / sum_{l>=k} beta*_l), clipped to [-bound, bound].
@numba.njit(cache=True, nogil=True)
def beta_to_sticks(beta, bound, u):
    K = u.shape[0]
    tail = 0.0
    tails = np.empty(K + 1)
    for k in range(K, -1, -1):
        tail += beta[k]
        tails[k] = tail
    for k in range(K):
        v = min(max(beta[k] / tails[k], 1e-300), 1.0)
        x = math.log(v) - math.log1p(-min(v, 1.0 - 1e-16))
        u[k] = min(max(x, -bound), bound)


# Per topic k in [lo, hi): the minibatch's token count of topic k, sum_j cnt_j phi_jk, each column
# summed in row order (as numpy's axis-0 sum): split_merge.MoveState._refresh's usage cache, by
# ranges of topics.
@numba.njit(cache=True, nogil=True)
def weighted_column_sums(cnt, phi, out, lo, hi):
    for k in range(lo, hi):
        out[k] = 0.0
    for j in range(phi.shape[0]):
        c = cnt[j]
        for k in range(lo, hi):
            out[k] += c * phi[j, k]


# sum_j cnt_j x_j in row order: one column of weighted_column_sums (the same additions, so the same
# bits), for a move's new columns (split_merge.MoveState's usage cache).
@numba.njit(cache=True, nogil=True)
def weighted_sum(cnt, x):
    s = 0.0
    for j in range(x.shape[0]):
        s += cnt[j] * x[j]
    return s


# The history part of the online update of lambda for topics k0..k1-1: out_kw = keep (lam_kw - eta)
# (the same two roundings as numpy's keep * (lam - eta)); split_merge's hist.
@numba.njit(cache=True, nogil=True)
def decayed_rows(lam, eta, keep, out, k0, k1):
    for k in range(k0, k1):
        for w in range(lam.shape[1]):
            out[k, w] = keep * (lam[k, w] - eta)


# Bhattacharyya coefficients sum_w sqrt(p_jw p_kw) of E[phi_j] (the rows of lam normalised) with
# E[phi_k], for j in [lo, hi): split_merge.MoveState.closest_topic, by ranges of topics.
@numba.njit(cache=True, nogil=True)
def bhattacharyya(lam, k, out, lo, hi):
    W = lam.shape[1]
    s_k = 0.0
    for w in range(W):
        s_k += lam[k, w]
    for j in range(lo, hi):
        s_j = 0.0
        b = 0.0
        for w in range(W):
            s_j += lam[j, w]
            b += np.sqrt(lam[j, w] * lam[k, w])
        out[j] = b / np.sqrt(s_j * s_k)
