"""The plain document-completion scorer: theta folded in on a test document's observed
tokens with phi fixed (collapsed Gibbs or the VB fixed point; see evaluate/completion.py for
the definitions), then the held-out tokens scored by sum_k theta_k phi_kw."""

import numba
import numpy as np

from ..kernels.rng import seed_row, uniform
from ..kernels.special import digamma
from .blocks import over_blocks

METHODS = ("gibbs", "vb")


@numba.njit(cache=True, nogil=True)
def _draw_topic(w, ndk, alpha, phi_wk, cum, state, row):
    """A topic for a token of word w from (n_dk + alpha_k) phi_{k, w} (n_dk without the token)."""
    total = 0.0
    for k in range(alpha.shape[0]):
        total += (ndk[k] + alpha[k]) * phi_wk[w, k]
        cum[k] = total
    return _draw(cum, total, state, row)


@numba.njit(cache=True, nogil=True)
def _gibbs_theta(phi_wk, alpha, words, burn_in, samples, state, row, theta, counts):
    """Fold in one document by collapsed Gibbs; writes the averaged theta into ``theta`` and,
    when ``counts`` has K entries, the topic counts n_dk of the last sweep into it.

    p(z_i = k | z_-i, w, phi, alpha) ∝ (n_dk^-i + alpha_k) phi_{k, w_i}
    theta estimate per sample sweep: (n_dk + alpha_k) / (n_d + alpha_sum)
    """
    K = alpha.shape[0]
    n = words.shape[0]
    alpha_sum = 0.0
    for k in range(K):
        alpha_sum += alpha[k]
    if n == 0:
        for k in range(K):
            theta[k] = alpha[k] / alpha_sum
        return
    ndk = np.zeros(K, dtype=np.int64)
    z = np.empty(n, dtype=np.int64)
    cum = np.empty(K, dtype=np.float64)
    # sequential initialisation: each token sampled given the ones before it
    for i in range(n):
        k = _draw_topic(words[i], ndk, alpha, phi_wk, cum, state, row)
        z[i] = k
        ndk[k] += 1
    for k in range(K):
        theta[k] = 0.0
    norm = 1.0 / (n + alpha_sum)
    for sweep in range(burn_in + samples):
        for i in range(n):
            ndk[z[i]] -= 1
            k = _draw_topic(words[i], ndk, alpha, phi_wk, cum, state, row)
            z[i] = k
            ndk[k] += 1
        if sweep >= burn_in:
            for k in range(K):
                theta[k] += (ndk[k] + alpha[k]) * norm
    for k in range(K):
        theta[k] /= samples
    if counts.shape[0] == K:
        for k in range(K):
            counts[k] = ndk[k]


@numba.njit(cache=True, nogil=True)
def _draw(cum, total, state, row):
    """Index k with probability (cum[k] - cum[k-1]) / total (linear search)."""
    K = cum.shape[0]
    u = uniform(state, row) * total
    for k in range(K):
        if u < cum[k]:
            return k
    # u == total after rounding, or trailing zero-probability topics: last positive one
    for k in range(K - 1, -1, -1):
        if k == 0 or cum[k] > cum[k - 1]:
            return k
    return K - 1


@numba.njit(cache=True, nogil=True)
def _vb_theta(phi_wk, alpha, words, tol, max_iter, theta):
    """Variational E-step of LDA with phi fixed (Blei et al. 2003, eqs. 6-7); theta = E_q[theta].

    r_ik ∝ phi_{k, w_i} exp(digamma(gamma_k));  gamma_k = alpha_k + sum_i r_ik
    (exp(-digamma(sum gamma)) is common to all k and cancels in r.)
    Stops when max_k |gamma_k - gamma_k'| < tol * (n_d + alpha_sum), or after max_iter steps.
    Returns the number of iterations done.
    """
    K = alpha.shape[0]
    n = words.shape[0]
    alpha_sum = 0.0
    for k in range(K):
        alpha_sum += alpha[k]
    gamma = np.empty(K, dtype=np.float64)
    for k in range(K):
        gamma[k] = alpha[k] + n / K
    if n == 0:
        for k in range(K):
            theta[k] = alpha[k] / alpha_sum
        return 0
    e = np.empty(K, dtype=np.float64)
    new = np.empty(K, dtype=np.float64)
    it = 0
    while it < max_iter:
        it += 1
        for k in range(K):
            e[k] = np.exp(digamma(gamma[k]))
            new[k] = 0.0
        for i in range(n):
            w = words[i]
            s = 0.0
            for k in range(K):
                s += e[k] * phi_wk[w, k]
            if s > 0.0:
                inv = 1.0 / s
                for k in range(K):
                    new[k] += e[k] * phi_wk[w, k] * inv
        change = 0.0
        for k in range(K):
            g = alpha[k] + new[k]
            d = abs(g - gamma[k])
            if d > change:
                change = d
            gamma[k] = g
        if change < tol * (n + alpha_sum):
            break
    total = 0.0
    for k in range(K):
        total += gamma[k]
    for k in range(K):
        theta[k] = gamma[k] / total
    return it


@numba.njit(cache=True, nogil=True)
def _fold_in_and_score(
    phi_wk,
    alpha,
    docs,
    lo,
    hi,
    method,
    burn_in,
    samples,
    tol,
    max_iter,
    seed,
    state,
    theta_out,
    counts_out,
    loglik,
    iters,
):
    """Per document d of lo <= d < hi (one thread's block, evaluate/blocks.py): fold in theta on
    the observed tokens, then loglik[d] = sum over held-out tokens of log sum_k theta_k phi_{k, w}.

    method 0 = Gibbs, 1 = VB. state is (D, 4): document d uses row d, seeded
    from (seed, d), so results do not depend on the blocks or the thread count. theta_out is
    (D, K) to keep every document's theta, or (0, K) to keep none; counts_out likewise
    for the Gibbs fold-in's topic counts of its last sweep. docs: the split's arrays
    (observed_ptr, observed_words, heldout_ptr, heldout_words).
    """
    obs_ptr, obs_words, held_ptr, held_words = docs
    D = obs_ptr.shape[0] - 1
    K = alpha.shape[0]
    keep = theta_out.shape[0] == D
    no_counts = np.zeros(0, dtype=np.int64)
    for d in range(lo, hi):
        theta = np.empty(K, dtype=np.float64)
        words = obs_words[obs_ptr[d] : obs_ptr[d + 1]]
        if method == 0:
            seed_row(state, d, seed, d)
            counts = counts_out[d] if counts_out.shape[0] == D else no_counts
            _gibbs_theta(phi_wk, alpha, words, burn_in, samples, state, d, theta, counts)
            iters[d] = burn_in + samples
        else:
            iters[d] = _vb_theta(phi_wk, alpha, words, tol, max_iter, theta)
        ll = 0.0
        for j in range(held_ptr[d], held_ptr[d + 1]):
            w = held_words[j]
            p = 0.0
            for k in range(K):
                p += theta[k] * phi_wk[w, k]
            ll += np.log(p)
        loglik[d] = ll
        if keep:
            for k in range(K):
                theta_out[d, k] = theta[k]


def split_arrays(split):
    """A HoldoutSplit as the tuple the kernels take."""
    return (split.observed_ptr, split.observed_words, split.heldout_ptr, split.heldout_words)


def plain_scores(
    phi, alpha, split, method, burn_in, samples, tol, max_iter, seed, keep_theta, keep_counts=False, threads=1
):
    """(loglik per document, fold-in iterations per document, theta or an empty (0, K) array,
    and with ``keep_counts`` the Gibbs fold-in's last topic counts (D, K), else None); the
    documents in ``threads`` blocks on as many threads (evaluate/blocks.py)."""
    D, K = split.D, phi.shape[0]
    phi_wk = np.ascontiguousarray(phi.T)
    theta_out = np.zeros((D if keep_theta else 0, K), dtype=np.float64)
    counts_out = np.zeros((D if keep_counts else 0, K), dtype=np.int64)
    loglik = np.zeros(D, dtype=np.float64)
    iters = np.zeros(D, dtype=np.int64)
    state = np.zeros((D, 4), dtype=np.uint64)
    docs = split_arrays(split)
    args = (
        np.int64(METHODS.index(method)),
        np.int64(burn_in),
        np.int64(samples),
        np.float64(tol),
        np.int64(max_iter),
        np.int64(seed & 0x7FFFFFFFFFFFFFFF),
        state,
        theta_out,
        counts_out,
        loglik,
        iters,
    )

    def block(lo, hi):  # documents [lo, hi) write only their own rows of every output
        _fold_in_and_score(phi_wk, alpha, docs, np.int64(lo), np.int64(hi), *args)

    over_blocks(threads, (split.observed_ptr, split.heldout_ptr), block)
    return loglik, iters, theta_out, (counts_out if keep_counts else None)
