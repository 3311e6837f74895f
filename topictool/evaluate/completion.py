"""Document-completion perplexity (DESIGN.md, "Evaluation definitions").

Each test document is split (corpus/holdout.py) into observed tokens and
held-out tokens. With the topics phi fixed, the document's topic proportions
theta are "folded in" on the observed tokens, and the held-out tokens are
scored:

    log p(held out | observed) ~= sum_{held-out tokens i} log sum_k theta_k phi_{k, w_i}
    perplexity = exp(- that sum / number of held-out tokens)

Fold-in methods:

gibbs  Collapsed over theta (as hca and Mallet's inferencer do): topic
       indicators z of the observed tokens are sampled with
           p(z_i = k | z_-i) ∝ (n_dk^-i + alpha_k) phi_{k, w_i}
       for ``burn_in`` sweeps; each of the next ``samples`` sweeps contributes
       the estimate theta_k = (n_dk + alpha_k) / (n_d + sum(alpha)), and theta
       is their average (a Rao-Blackwellised estimate of E[theta | observed]).
vb     The variational E-step of LDA (Blei, Ng & Jordan 2003, eqs. 6-7) with
       phi fixed: q(theta) = Dirichlet(gamma), iterated to a fixed point
           r_ik ∝ phi_{k, w_i} exp(digamma(gamma_k))
           gamma_k = alpha_k + sum_i r_ik
       and theta = gamma / sum(gamma).

Determinism: every document is folded in with its own random stream, seeded
from (seed, document index) inside the kernel, and per-document results are
written to arrays and summed afterwards in document order, so the result does
not depend on the number of threads.

Burstiness: a snapshot with ``burst_concentration`` needs the document-level
Pitman-Yor cache in both the fold-in and the held-out word probability
(DESIGN.md); ``document_completion`` hands such a snapshot to
``evaluate.burst``, which uses the same hold-out split.
"""

import time

import numba
import numpy as np
from numba import prange

from ..corpus.holdout import parse_holdout, split_corpus
from ..errors import InputError
from ..kernels.rng import seed_row, uniform
from ..kernels.special import digamma
from ..snapshot import Snapshot

METHODS = ("gibbs", "vb")


# ----------------------------------------------------------------------------
# kernels


@numba.njit(cache=True, nogil=True)
def _gibbs_theta(phi_wk, alpha, words, burn_in, samples, state, row, theta):
    """Fold in one document by collapsed Gibbs; writes the averaged theta into ``theta``.

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
        w = words[i]
        total = 0.0
        for k in range(K):
            total += (ndk[k] + alpha[k]) * phi_wk[w, k]
            cum[k] = total
        k = _draw(cum, total, state, row)
        z[i] = k
        ndk[k] += 1
    for k in range(K):
        theta[k] = 0.0
    norm = 1.0 / (n + alpha_sum)
    for sweep in range(burn_in + samples):
        for i in range(n):
            w = words[i]
            ndk[z[i]] -= 1
            total = 0.0
            for k in range(K):
                total += (ndk[k] + alpha[k]) * phi_wk[w, k]
                cum[k] = total
            k = _draw(cum, total, state, row)
            z[i] = k
            ndk[k] += 1
        if sweep >= burn_in:
            for k in range(K):
                theta[k] += (ndk[k] + alpha[k]) * norm
    for k in range(K):
        theta[k] /= samples


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


@numba.njit(cache=True, nogil=True, parallel=True)
def _fold_in_and_score(
    phi_wk,
    alpha,
    obs_ptr,
    obs_words,
    held_ptr,
    held_words,
    method,
    burn_in,
    samples,
    tol,
    max_iter,
    seed,
    state,
    theta_out,
    loglik,
    iters,
):
    """Per document d (in parallel): fold in theta on the observed tokens, then
    loglik[d] = sum over held-out tokens of log sum_k theta_k phi_{k, w}.

    method 0 = Gibbs, 1 = VB. state is (D, 4): document d uses row d, seeded
    from (seed, d), so results do not depend on the thread count. theta_out is
    (D, K) to keep every document's theta, or (0, K) to keep none.
    """
    D = obs_ptr.shape[0] - 1
    K = alpha.shape[0]
    keep = theta_out.shape[0] == D
    for d in prange(D):
        theta = np.empty(K, dtype=np.float64)
        words = obs_words[obs_ptr[d] : obs_ptr[d + 1]]
        if method == 0:
            seed_row(state, d, seed, d)
            _gibbs_theta(phi_wk, alpha, words, burn_in, samples, state, d, theta)
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


# ----------------------------------------------------------------------------
# Python side


def _model_arrays(model, alpha):
    """(phi, alpha, vocab or None, snapshot or None) from a Snapshot or a (phi, alpha) pair."""
    if isinstance(model, Snapshot):
        return np.asarray(model.phi, dtype=np.float64), np.asarray(model.alpha, dtype=np.float64), tuple(model.vocab)
    if isinstance(model, tuple) and len(model) == 2 and alpha is None:
        model, alpha = model
    if alpha is None:
        raise InputError("document_completion needs a Snapshot or phi together with alpha")
    phi = np.asarray(model, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    if alpha.ndim == 0:
        alpha = np.full(phi.shape[0], float(alpha))
    return phi, alpha, None


def _check_model(phi, alpha):
    if phi.ndim != 2 or phi.shape[0] < 1:
        raise InputError(f"phi must be a K x W matrix, got shape {phi.shape}")
    if alpha.shape != (phi.shape[0],):
        raise InputError(f"alpha must have one entry per topic ({phi.shape[0]}), got shape {alpha.shape}")
    if not (np.all(np.isfinite(alpha)) and np.all(alpha >= 0) and alpha.sum() > 0):
        raise InputError("alpha must be finite, non-negative and not all zero")
    if not np.all(np.isfinite(phi)) or np.any(phi < 0):
        raise InputError("phi must be finite and non-negative")


def vocabulary_map(test_vocab, model_vocab):
    """int64 array: test word id -> model word id, or -1 where the model lacks the word."""
    index = {w: i for i, w in enumerate(model_vocab)}
    return np.fromiter((index.get(w, -1) for w in test_vocab), dtype=np.int64, count=len(test_vocab))


def heldout_split(test_corpus, model_vocab, holdout, seed, allow_oov=False, W=None, require_heldout=True):
    """The observed / held-out split of a test corpus over a model's vocabulary.

    Returns (spec, split, oov tokens, oov held-out tokens); the split's word ids
    index the model's vocabulary. Test tokens whose word the model lacks are an
    InputError unless ``allow_oov`` (then they are dropped and counted), and so is
    a hold-out that holds out no token at all (its perplexity would be 0/0).
    """
    from ..memory import check_memory

    spec = parse_holdout(holdout)
    check_memory(24 * int(test_corpus.N), f"splitting {int(test_corpus.N):,} test tokens")
    split = split_corpus(test_corpus, spec, seed)
    oov = oov_held = 0
    if model_vocab is not None and tuple(test_corpus.vocab) != tuple(model_vocab):
        mapping = vocabulary_map(test_corpus.vocab, model_vocab)
        split, oov_obs, oov_held = split.drop_words(mapping >= 0)
        oov = oov_obs + oov_held
        if oov and not allow_oov:
            total = max(int(test_corpus.N), 1)
            raise InputError(
                f"{oov:,} of {total:,} test tokens ({100.0 * oov / total:.1f}%) are words the model's "
                f"vocabulary lacks; prepare the test corpus with the model's vocabulary (prepare "
                f"--vocab) or pass --allow-oov to drop them"
            )
        split = split.map_words(mapping)
    elif W is not None and test_corpus.W > W:
        raise InputError(f"the test corpus has {test_corpus.W} words but the model only {W}")
    if require_heldout and int(split.heldout_ptr[-1]) == 0:
        raise InputError(
            f"--holdout {spec} holds out no token of the test corpus ({test_corpus.D:,} documents, "
            f"{int(test_corpus.N):,} tokens); choose a smaller every:N or a larger fraction:F"
        )
    return spec, split, oov, oov_held


def document_completion(
    model,
    test_corpus,
    holdout="every:5",
    burn_in=10,
    samples=40,
    method="gibbs",
    seed=1,
    threads=1,
    alpha=None,
    tol=1e-6,
    max_iter=1000,
    return_theta=False,
    allow_oov=False,
):
    """Document-completion perplexity of ``model`` on ``test_corpus`` (a Corpus).

    model: a Snapshot, or phi (K x W) with ``alpha=`` (K, or a scalar for a
    symmetric prior), or a (phi, alpha) pair. Without a snapshot the test
    corpus's word ids are taken to index phi's columns directly.

    Returns a dict: perplexity, log_likelihood_per_token, heldout_tokens,
    documents (test documents with at least one held-out token), plus
    log_likelihood (the total), documents_total, observed_tokens, oov_tokens
    (test tokens whose word the model lacks; dropped from both parts),
    oov_heldout_tokens, method, holdout, burn_in, samples, seed, threads,
    seconds, and with ``return_theta`` the (D, K) fold-in estimates.
    """
    if isinstance(model, Snapshot) and model.burst_concentration is not None:
        # the burstiness front end: the document-level Pitman-Yor cache enters the fold-in
        # and the held-out probabilities, on exactly the same held-out tokens
        if method != "gibbs":
            raise InputError("a model with the burstiness front end is evaluated with --method gibbs")
        if return_theta:
            raise InputError("return_theta is not available for models with the burstiness front end")
        from .burst import burst_document_completion

        return burst_document_completion(
            model,
            test_corpus,
            holdout=holdout,
            burn_in=burn_in,
            samples=samples,
            seed=seed,
            threads=threads,
            allow_oov=allow_oov,
        )
    phi, alpha, model_vocab = _model_arrays(model, alpha)
    _check_model(phi, alpha)
    parse_holdout(holdout)
    if method not in METHODS:
        raise InputError(f"--method {method!r}: expected one of {', '.join(METHODS)}")
    burn_in, samples, threads = int(burn_in), int(samples), int(threads)
    if burn_in < 0:
        raise InputError(f"--burn-in {burn_in}: must be >= 0")
    if samples < 1:
        raise InputError(f"--samples {samples}: must be >= 1")
    if threads < 1:
        raise InputError(f"--threads {threads}: must be >= 1")
    K, W = phi.shape
    started = time.perf_counter()

    # a fold-in for theta alone (return_theta) may hold nothing out; a perplexity may not
    spec, split, oov, oov_held = heldout_split(
        test_corpus, model_vocab, holdout, seed, allow_oov, W, require_heldout=not return_theta
    )
    D = split.D
    phi_wk = np.ascontiguousarray(phi.T)
    theta_out = np.zeros((D if return_theta else 0, K), dtype=np.float64)
    loglik = np.zeros(D, dtype=np.float64)
    iters = np.zeros(D, dtype=np.int64)
    state = np.zeros((D, 4), dtype=np.uint64)
    _run_parallel(
        threads,
        _fold_in_and_score,
        phi_wk,
        alpha,
        split.observed_ptr,
        split.observed_words,
        split.heldout_ptr,
        split.heldout_words,
        np.int64(METHODS.index(method)),
        np.int64(burn_in),
        np.int64(samples),
        np.float64(tol),
        np.int64(max_iter),
        np.int64(seed & 0x7FFFFFFFFFFFFFFF),
        state,
        theta_out,
        loglik,
        iters,
    )

    result = summarise(
        loglik,
        split,
        D,
        oov,
        oov_held,
        method=method,
        holdout=str(spec),
        burn_in=burn_in,
        samples=samples,
        seed=int(seed),
        threads=threads,
        seconds=time.perf_counter() - started,
    )
    if method == "vb":
        result["vb_mean_iterations"] = float(iters.mean()) if D else 0.0
        result["burn_in"] = result["samples"] = None
    if return_theta:
        result["theta"] = theta_out
    return result


def summarise(loglik, split, D, oov, oov_held, **extra):
    """The result dict of a document completion from per-document held-out log-likelihoods
    (summed in document order: independent of the thread count); ``extra`` keys are appended."""
    held_per_doc = np.diff(split.heldout_ptr)
    n_held = int(held_per_doc.sum())
    total = float(np.sum(loglik))
    if not np.isfinite(total):
        raise InputError("a held-out token has probability zero under the model (phi has zeros?)")
    per_token = total / n_held if n_held else float("nan")  # n_held = 0 only for a fold-in (return_theta)
    return {
        "perplexity": float(np.exp(-per_token)) if n_held else float("nan"),
        "log_likelihood_per_token": per_token,
        "heldout_tokens": n_held,
        "documents": int(np.count_nonzero(held_per_doc)),
        "log_likelihood": total,
        "documents_total": int(D),
        "observed_tokens": int(split.observed_ptr[-1]),
        "oov_tokens": int(oov),
        "oov_heldout_tokens": int(oov_held),
        **extra,
    }


def _run_parallel(threads, kernel, *args):
    """Call a parallel kernel with ``threads`` numba threads (capped at the pool size)."""
    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        return kernel(*args)
    finally:
        numba.set_num_threads(before)
