"""Document completion for models with the burstiness front end (DESIGN.md, "Evaluation
definitions"; the model: topictool/models/hca/burst.py).

The split into observed and held-out tokens is exactly the plain evaluation's
(topictool.corpus.holdout with the same spec and seed, out-of-vocabulary tokens dropped the
same way), so the two measures are comparable token for token. What differs is the word
probability: in test document d, topic k emits words through its document cache

    psi_dk ~ PYP(a_psi, b_psi_k, phi_k)          (burst_discount, burst_concentration[k])

built from the document's observed tokens. Fold-in, with phi fixed and theta collapsed
under the snapshot's Dirichlet alpha, samples every observed token's topic z and burst
table indicator r jointly from

    p(z = k, r | rest) ∝ (n_dk + alpha_k) x [paper eq. 6 with p_k(w) = phi_kw]
    (eq. 7, r = 1, when the document has no other token of w under topic k)

(blocked when the token is the only table of its word and topic, as in training). After
``burn_in`` sweeps, each of ``samples`` sweeps scores every held-out token w with

    p(w | observed) = sum_k theta_k (n_wk - a_psi s_wk + (b_psi_k + a_psi S_dk) phi_kw) / (b_psi_k + N_dk)
    theta_k = (n_dk + alpha_k) / (n_d + sum alpha)                      (paper eq. 5 at psi_dk)

and the per-token probabilities are averaged over the samples; perplexity =
exp(- sum log p / held-out tokens). With b_psi -> infinity this is the plain measure.

Determinism: document d uses its own random stream seeded from (seed, d) with
topictool.kernels.rng.seed_row, the documents run in blocks on real threads
(evaluate/blocks.py), each writing only its own rows, and results are summed in document order:
identical for any number of threads.
"""

import numba
import numpy as np

from ..errors import InputError
from ..kernels.rng import seed_row, uniform
from ..kernels.stirling import StirlingTable
from ..models.hca.burst import burst_weights
from .blocks import over_blocks
from .plain import split_arrays


# Fold in one document (Gibbs over (z, r) of its observed tokens, eq. 6/7 with phi fixed) and
# return sum over held-out tokens of log of the sample-averaged eq. 5 probability. theta and
# counts, when they have K entries, receive the sample-averaged theta (eq. 5's) and the topic
# counts of the last sweep (for `infer`).
@numba.njit(cache=True, nogil=True)
def _burst_document(phi_wk, alpha, b_psi, a_psi, R, obs, held, burn_in, samples, state, row, theta_out, counts):
    K = alpha.shape[0]
    n = obs.shape[0]
    m = held.shape[0]
    want = theta_out.shape[0] == K
    if m == 0 and not want:
        return 0.0
    alpha_sum = 0.0
    for k in range(K):
        alpha_sum += alpha[k]
    # local word numbering for the document's words
    allw = np.concatenate((obs, held))
    uniq = np.unique(allw)
    lo = np.searchsorted(uniq, obs)
    lh = np.searchsorted(uniq, held)
    U = uniq.shape[0]
    nw = np.zeros((U, K), dtype=np.int64)
    sw = np.zeros((U, K), dtype=np.int64)
    ndk = np.zeros(K, dtype=np.int64)
    S_k = np.zeros(K, dtype=np.int64)
    z = np.zeros(n, dtype=np.int64)
    r = np.zeros(n, dtype=np.int64)
    cum = np.empty(K)
    psum = np.zeros(m)

    for sweep in range(-1, burn_in + samples):
        for i in range(n):
            w = obs[i]
            lw = lo[i]
            if sweep >= 0:
                k = z[i]
                rr = r[i]
                if rr == 1 and nw[lw, k] > 1 and sw[lw, k] == 1:
                    continue  # blocked: the only table of this word and topic
                ndk[k] -= 1
                nw[lw, k] -= 1
                sw[lw, k] -= rr
                S_k[k] -= rr
            total = 0.0
            for k in range(K):
                one, zero = burst_weights(R, a_psi, b_psi[k], nw[lw, k], sw[lw, k], S_k[k], ndk[k])
                total += (ndk[k] + alpha[k]) * (one * phi_wk[w, k] + zero)
                cum[k] = total
            x = uniform(state, row) * total
            k = 0
            while k < K - 1 and cum[k] <= x:
                k += 1
            while k > 0 and cum[k] == cum[k - 1]:
                k -= 1
            rr = 1
            if sw[lw, k] > 0:
                one, zero = burst_weights(R, a_psi, b_psi[k], nw[lw, k], sw[lw, k], S_k[k], ndk[k])
                p1 = one * phi_wk[w, k]
                rr = 1 if uniform(state, row) * (p1 + zero) < p1 else 0
            z[i] = k
            r[i] = rr
            ndk[k] += 1
            nw[lw, k] += 1
            sw[lw, k] += rr
            S_k[k] += rr
        if sweep >= burn_in:
            norm = 1.0 / (n + alpha_sum)
            if want:
                for k in range(K):
                    theta_out[k] += (ndk[k] + alpha[k]) * norm / samples
            for j in range(m):
                w = held[j]
                lw = lh[j]
                p = 0.0
                for k in range(K):
                    theta = (ndk[k] + alpha[k]) * norm
                    cache = (nw[lw, k] - a_psi * sw[lw, k] + (b_psi[k] + a_psi * S_k[k]) * phi_wk[w, k]) / (
                        b_psi[k] + ndk[k]
                    )
                    p += theta * cache
                psum[j] += p
    if counts.shape[0] == K:
        for k in range(K):
            counts[k] = ndk[k]
    ll = 0.0
    for j in range(m):
        ll += np.log(psum[j] / samples)
    return ll


@numba.njit(cache=True, nogil=True)
def _all_documents(
    phi_wk, alpha, b_psi, a_psi, R, docs, lo, hi, burn_in, samples, seed, state, loglik, theta_out, counts_out
):
    """Documents lo <= d < hi of docs (the split's arrays, see plain.split_arrays): one thread's
    block; document d uses only row d of state, loglik, theta_out and counts_out."""
    obs_ptr, obs_words, held_ptr, held_words = docs
    D = obs_ptr.shape[0] - 1
    none = np.zeros(0, dtype=np.float64)
    no_counts = np.zeros(0, dtype=np.int64)
    for d in range(lo, hi):
        seed_row(state, d, seed, d)
        theta = theta_out[d] if theta_out.shape[0] == D else none
        counts = counts_out[d] if counts_out.shape[0] == D else no_counts
        loglik[d] = _burst_document(
            phi_wk,
            alpha,
            b_psi,
            a_psi,
            R,
            obs_words[obs_ptr[d] : obs_ptr[d + 1]],
            held_words[held_ptr[d] : held_ptr[d + 1]],
            burn_in,
            samples,
            state,
            d,
            theta,
            counts,
        )


def burst_scores(snapshot, split, burn_in, samples, seed, keep=False, threads=1):
    """Per-document log-likelihood of the held-out tokens of ``split`` under a snapshot with
    burst_concentration and burst_discount (the front end: evaluate/completion.py); with
    ``keep``, also the fold-in's theta (D, K) and last topic counts (D, K). The documents run
    in ``threads`` blocks on as many threads (evaluate/blocks.py)."""
    phi = np.asarray(snapshot.phi, dtype=np.float64)
    alpha = np.asarray(snapshot.alpha, dtype=np.float64)
    b_psi = np.asarray(snapshot.burst_concentration, dtype=np.float64)
    a_psi = float(snapshot.burst_discount)
    K = phi.shape[0]
    if b_psi.shape != (K,) or not np.all(b_psi > 0) or not np.all(np.isfinite(b_psi)):
        raise InputError(f"burst_concentration must be {K} positive numbers")
    if not 0.0 <= a_psi < 1.0:
        raise InputError(f"burst_discount={a_psi!r} must lie in [0, 1)")
    D = split.D
    # the burst table needs n up to the largest count of one word among a document's observed tokens
    max_count = 1
    for d in range(D):
        words = split.observed_words[split.observed_ptr[d] : split.observed_ptr[d + 1]]
        if len(words):
            max_count = max(max_count, int(np.bincount(words).max()))
    table = StirlingTable(a_psi, max_count + 2, t_cap=max_count + 2)
    loglik = np.zeros(D)
    state = np.zeros((max(D, 1), 4), dtype=np.uint64)
    theta = np.zeros((D if keep else 0, K), dtype=np.float64)
    counts = np.zeros((D if keep else 0, K), dtype=np.int64)
    head = (np.ascontiguousarray(phi.T), alpha, b_psi, a_psi, table.R, split_arrays(split))
    tail = (np.int64(burn_in), np.int64(samples), np.int64(seed & 0x7FFFFFFFFFFFFFFF), state, loglik, theta, counts)

    def block(lo, hi):  # documents [lo, hi) write only their own rows
        _all_documents(*head, np.int64(lo), np.int64(hi), *tail)

    over_blocks(threads, (split.observed_ptr, split.heldout_ptr), block)
    return (loglik, theta, counts) if keep else loglik
