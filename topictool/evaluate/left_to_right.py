"""The left-to-right estimator of the held-out likelihood of whole test documents.

Wallach, Murray, Salakhutdinov & Mimno (ICML 2009), "Evaluation methods for topic models",
Algorithm 3; the estimator Mallet's ``evaluate-topics`` (MarginalProbEstimator) uses. With the
topics phi (K x W) and the prior alpha (K) fixed, the probability of a document w_1..w_N is
written as a chain of predictive probabilities

    p(w | phi, alpha) = prod_n p(w_n | w_<n, phi, alpha)

and each factor is estimated with R particles, each a topic assignment z_<n of the tokens
before position n:

    p_n = (1/R) sum_r sum_k phi_{k, w_n} (n_k^(r) + alpha_k) / (n - 1 + sum(alpha))
    log p(w) ~= sum_n log p_n

where n_k^(r) counts the tokens before n that particle r gives topic k. After p_n is
accumulated, each particle samples z_n from p(z_n = k | w_n, z_<n) ∝ phi_{k, w_n}
(n_k^(r) + alpha_k) and moves on to n + 1.

Resampling (``resample=True``, --resample): before scoring position n, each particle first
resamples the topics of tokens 1..n-1, one collapsed Gibbs step each given the others (line 6
of Wallach et al.'s Algorithm 3, and Mallet's ``--use-resampling true``). That keeps each
particle's z_<n close to the posterior p(z_<n | w_<n), which is what makes the average of
the predictive probabilities consistent; it costs O(N^2) topic draws per document and particle
instead of O(N). Without it (the default, as Mallet's default) each particle is a sequential
sample that never revisits earlier tokens, whose z_<n follows a proposal rather than the
posterior: the estimate is cheaper and its bias is small in practice, but it does not vanish
as R grows (tests/test_left_to_right.py measures it against the exact value on a small
corpus).

Weighting (``weighted=True``, --weighted): each particle is a sequential importance sample
whose proposal is exactly the sampling above, so its weight is the product of the predictive
probabilities it met, prod_n sum_k phi_{k, w_n} (n_k^(r) + alpha_k) / (n - 1 + sum(alpha)), and

    p(w) ~= (1/R) sum_r prod_n [that factor of particle r]

is an unbiased estimate of p(w | phi, alpha) whose log converges to the exact value as R grows
(Buntine 2009, "Estimating likelihoods for topic models", on the bias of the position-by-
position average). Its cost is the default's; on long documents a few particles carry the
weight, so it needs more particles for the same noise.

Token order: a prepared corpus keeps bags of words, not the original token order, so each
document's tokens are scored in a seeded random order (the hold-out order of
corpus/holdout.py, a function of the seed and the document index only). p(w | phi, alpha)
does not depend on the order; the estimate's noise does.

Threads and determinism: the documents are cut into ``threads`` blocks of about equal tokens,
each scored by a nogil kernel on its own thread (evaluate/blocks.py); document d draws from its
own random stream, seeded from (seed, d) inside the kernel, and the per-document
log-likelihoods are summed in document order afterwards, so the result is the same for any
number of threads.
"""

import time

import numba
import numpy as np

from ..corpus.holdout import HoldoutSplit, random_order
from ..errors import InputError
from ..kernels.rng import seed_row
from ..snapshot import Snapshot
from .blocks import over_blocks
from .completion import _check_model, _model_arrays, over_model_vocabulary, summarise
from .plain import _draw, _draw_topic

METHOD = "left-to-right"
#: the seed of the token order within documents (corpus/holdout.py's random_order); fixed, so
#: that --seed drives the particles alone and every seed estimates the same quantity
ORDER_SEED = 0

# ----------------------------------------------------------------------------
# kernels


@numba.njit(cache=True, nogil=True)
def _document_loglik(phi_wk, alpha, alpha_sum, words, particles, resample, weighted, state, row):
    """log p(words | phi, alpha) of one document by the left-to-right estimator (module docstring).

    Particles run one after another (they are independent); prob[n] accumulates the
    predictive probability of position n over particles, and the log of its average is
    summed at the end; ``weighted``: logw[r] sums particle r's log predictive probabilities,
    and the result is the log of their mean probability.
    """
    K = alpha.shape[0]
    n_tokens = words.shape[0]
    prob = np.zeros(n_tokens, dtype=np.float64)
    logw = np.zeros(particles, dtype=np.float64)
    z = np.empty(n_tokens, dtype=np.int64)
    ndk = np.zeros(K, dtype=np.int64)
    cum = np.empty(K, dtype=np.float64)
    for r in range(particles):
        for k in range(K):
            ndk[k] = 0
        for n in range(n_tokens):
            if resample:
                for j in range(n):
                    ndk[z[j]] -= 1
                    k = _draw_topic(words[j], ndk, alpha, phi_wk, cum, state, row)
                    z[j] = k
                    ndk[k] += 1
            w = words[n]
            total = 0.0
            for k in range(K):
                total += (ndk[k] + alpha[k]) * phi_wk[w, k]
                cum[k] = total
            if weighted:
                logw[r] += np.log(total / (n + alpha_sum))
            else:
                prob[n] += total / (n + alpha_sum)
            k = _draw(cum, total, state, row)
            z[n] = k
            ndk[k] += 1
    ll = 0.0
    if weighted:  # log of the mean of exp(logw), shifted by the largest for range
        top = logw.max()
        mean = 0.0
        for r in range(particles):
            mean += np.exp(logw[r] - top)
        return top + np.log(mean / particles)
    for n in range(n_tokens):
        ll += np.log(prob[n] / particles)
    return ll


@numba.njit(cache=True, nogil=True)
def _left_to_right(phi_wk, alpha, ptr, words, lo, hi, particles, resample, weighted, seed, state, loglik):
    """loglik[d] = the left-to-right estimate of log p(document d) for lo <= d < hi (one
    thread's block).

    state is (D, 4): document d uses row d, seeded from (seed, d), so results do not depend
    on the blocks or the thread count.
    """
    alpha_sum = 0.0
    for k in range(alpha.shape[0]):
        alpha_sum += alpha[k]
    for d in range(lo, hi):
        seed_row(state, d, seed, d)
        loglik[d] = _document_loglik(
            phi_wk, alpha, alpha_sum, words[ptr[d] : ptr[d + 1]], particles, resample, weighted, state, d
        )


# ----------------------------------------------------------------------------
# Python side


def whole_documents(test_corpus, model_vocab, allow_oov=False, W=None):
    """Every token of every test document, in a fixed pseudo-random order within each document, as a
    HoldoutSplit that observes nothing and holds out everything (so ``summarise`` applies).

    Returns (split, oov tokens); the split's word ids index the model's vocabulary. Test tokens
    whose word the model lacks are an InputError unless ``allow_oov`` (then they are dropped
    and counted), the same rule as document completion's.
    """
    from ..memory import check_memory

    check_memory(24 * int(test_corpus.N), f"ordering {int(test_corpus.N):,} test tokens")
    token_ptr, words = test_corpus.tokens()
    words = words[random_order(token_ptr, ORDER_SEED)].astype(np.int32, copy=False)
    D = len(token_ptr) - 1
    split = HoldoutSplit(np.zeros(D + 1, dtype=np.int64), np.zeros(0, dtype=np.int32), token_ptr, words)
    split, _, oov = over_model_vocabulary(split, test_corpus, model_vocab, allow_oov, W)
    if int(split.heldout_ptr[-1]) == 0:
        raise InputError(f"the test corpus ({test_corpus.D:,} documents) has no token to score")
    return split, oov


def check_particles(particles):
    particles = int(particles)
    if not 1 <= particles < 2**31:
        raise InputError(f"--particles {particles}: must be an integer >= 1")
    return particles


def left_to_right(
    model,
    test_corpus,
    particles=10,
    resample=False,
    weighted=False,
    seed=1,
    threads=1,
    alpha=None,
    allow_oov=False,
    return_documents=False,
):
    """Left-to-right estimate of log p(w | phi, alpha) of the whole documents of ``test_corpus``.

    model: a Snapshot, or phi (K x W) with ``alpha=`` (K, or a scalar for a symmetric prior),
    or a (phi, alpha) pair, as for ``document_completion``. ``resample`` resamples the topics of
    the earlier tokens before each position (Wallach et al.'s Algorithm 3 as published); the
    default does not (Mallet's default). ``weighted`` weights each particle by its own
    likelihood instead of averaging position by position: the consistent estimator (module
    docstring); it excludes ``resample``.

    Returns a dict: log_likelihood (the total), log_likelihood_per_token, perplexity
    (exp(-per token)), documents (with at least one token), documents_total, tokens, oov_tokens
    (dropped, with ``allow_oov``), method "left-to-right", particles, resample, seed, threads,
    seconds; ``heldout_tokens`` equals ``tokens`` (every token is scored) and
    ``observed_tokens`` is 0, so the keys of a document completion keep their meaning. With
    ``return_documents`` also ``document_log_likelihoods`` (D,).
    """
    if isinstance(model, Snapshot) and model.burst_concentration is not None:
        raise InputError(
            "--method left-to-right scores the plain LDA likelihood; a model with the burstiness "
            "front end is evaluated by document completion (--method gibbs)"
        )
    phi, alpha, model_vocab = _model_arrays(model, alpha)
    _check_model(phi, alpha)
    particles = check_particles(particles)
    if resample and weighted:
        raise InputError("--resample and --weighted are two different estimators: give one")
    threads = int(threads)
    if threads < 1:
        raise InputError(f"--threads {threads}: must be >= 1")
    started = time.perf_counter()
    split, oov = whole_documents(test_corpus, model_vocab, allow_oov, phi.shape[1])
    D = split.D
    loglik = np.zeros(D, dtype=np.float64)
    state = np.zeros((D, 4), dtype=np.uint64)
    head = (np.ascontiguousarray(phi.T), alpha, split.heldout_ptr, split.heldout_words)
    tail = (
        np.int64(particles),
        bool(resample),
        bool(weighted),
        np.int64(int(seed) & 0x7FFFFFFFFFFFFFFF),
        state,
        loglik,
    )

    def block(lo, hi):  # documents [lo, hi) write only their own rows of state and loglik
        _left_to_right(*head, np.int64(lo), np.int64(hi), *tail)

    over_blocks(threads, (split.heldout_ptr,), block)
    result = summarise(
        loglik,
        split,
        D,
        oov,
        oov,
        method=METHOD,
        particles=particles,
        resample=bool(resample),
        weighted=bool(weighted),
        holdout=None,
        seed=int(seed),
        threads=threads,
        seconds=time.perf_counter() - started,
    )
    result["tokens"] = result["heldout_tokens"]
    if return_documents:
        result["document_log_likelihoods"] = loglik
    return result
