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

Threads and determinism: ``threads`` real threads (topictool.threads.Workers, not numba's
pool, which is capped at the machine's cores) each fold in one block of documents of about
equal tokens with a nogil kernel (evaluate/blocks.py). Every document is folded in with its own
random stream, seeded from (seed, document index) inside the kernel, and per-document results
are written to their own rows and summed afterwards in document order, so the result does not
depend on the number of threads.

MPI ranks (``evaluate --engine mpi``; ``train --test`` under ``--engine mpi``): every rank
makes the same hold-out split of the whole test corpus, scores only its own run of documents
(documents dealt out by tokens; the others are left empty, so every document keeps its index and
with it its random stream), and the per-document log-likelihoods are gathered in document order
before they are summed: the figure equals the one-process figure exactly.

Burstiness: a snapshot with ``burst_concentration`` needs the document-level
Pitman-Yor cache in both the fold-in and the held-out word probability
(DESIGN.md); ``document_completion`` scores such a snapshot with ``evaluate.burst``
instead of ``evaluate.plain``, on the same hold-out split.
"""

import time

import numpy as np

from ..corpus.holdout import parse_holdout, split_corpus
from ..errors import InputError
from ..snapshot import Snapshot
from .burst import burst_scores
from .plain import METHODS, plain_scores

# ----------------------------------------------------------------------------
# kernels


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


def over_model_vocabulary(split, test_corpus, model_vocab, allow_oov=False, W=None):
    """A split of ``test_corpus`` re-expressed over the model's vocabulary: (split, observed and
    held-out tokens dropped). Test tokens whose word the model lacks are an InputError unless
    ``allow_oov`` (then they are dropped and counted)."""
    if model_vocab is None or tuple(test_corpus.vocab) == tuple(model_vocab):
        if W is not None and test_corpus.W > W:
            raise InputError(f"the test corpus has {test_corpus.W} words but the model only {W}")
        return split, 0, 0
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
    return split.map_words(mapping), oov_obs, oov_held


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
    split, oov_obs, oov_held = over_model_vocabulary(split, test_corpus, model_vocab, allow_oov, W)
    oov = oov_obs + oov_held
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
    engine=None,
):
    """Document-completion perplexity of ``model`` on ``test_corpus`` (a Corpus): the one
    front end of both scorers (evaluate/plain.py; evaluate/burst.py for a snapshot with
    the burstiness front end, on exactly the same held-out tokens).

    model: a Snapshot, or phi (K x W) with ``alpha=`` (K, or a scalar for a
    symmetric prior), or a (phi, alpha) pair. Without a snapshot the test
    corpus's word ids are taken to index phi's columns directly.

    Returns a dict: perplexity, log_likelihood_per_token, heldout_tokens,
    documents (test documents with at least one held-out token), plus
    log_likelihood (the total), documents_total, observed_tokens, oov_tokens
    (test tokens whose word the model lacks; dropped from both parts),
    oov_heldout_tokens, method, holdout, burn_in, samples, seed, threads,
    seconds, and with ``return_theta`` the (D, K) fold-in estimates. ``engine`` (mpi.MpiEngine):
    the documents are shared out among its ranks (module docstring), every rank gets the result.
    """
    bursty = isinstance(model, Snapshot) and model.burst_concentration is not None
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
    if bursty and method != "gibbs":
        raise InputError("a model with the burstiness front end is evaluated with --method gibbs")
    if bursty and return_theta:
        raise InputError("return_theta is not available for models with the burstiness front end")
    ranks = engine is not None and engine.size > 1
    if ranks and return_theta:
        raise InputError("return_theta is not available on MPI ranks")
    started = time.perf_counter()

    # a fold-in for theta alone (return_theta) may hold nothing out; a perplexity may not
    spec, split, oov, oov_held = heldout_split(
        test_corpus, model_vocab, holdout, seed, allow_oov, phi.shape[1], require_heldout=not return_theta
    )
    extra = dict(holdout=str(spec), burn_in=burn_in, samples=samples, seed=int(seed), threads=threads)
    mine, lo, hi = rank_split(split, engine) if ranks else (split, 0, split.D)
    if bursty:
        loglik = burst_scores(model, mine, burn_in, samples, seed, threads=threads)
        extra.update(method="gibbs-burst", burst_discount=float(model.burst_discount))
    else:
        loglik, iters, theta, _ = plain_scores(
            phi, alpha, mine, method, burn_in, samples, tol, max_iter, seed, return_theta, threads=threads
        )
        extra["method"] = method
    if ranks:  # every rank's documents, in document order
        loglik = engine.allgatherv(np.asarray(loglik)[lo:hi])[0]
        if not bursty:
            iters = engine.allgatherv(iters[lo:hi])[0]
        extra["ranks"] = engine.size
    result = summarise(loglik, split, split.D, oov, oov_held, **extra, seconds=time.perf_counter() - started)
    if method == "vb":
        result["vb_mean_iterations"] = float(iters.mean()) if split.D else 0.0
        result["burn_in"] = result["samples"] = None
    if return_theta:
        result["theta"] = theta
    return result


def rank_split(split, engine):
    """(this rank's split, lo, hi): the same D documents, those outside [lo, hi) emptied, so that
    document d keeps index d and with it its random stream; [lo, hi) cuts the documents into
    contiguous runs of ~equal tokens, one per rank."""
    from ..corpus.corpus import token_blocks
    from ..corpus.holdout import HoldoutSplit

    tokens = np.diff(split.observed_ptr) + np.diff(split.heldout_ptr)
    ptr = np.zeros(split.D + 1, dtype=np.int64)
    np.cumsum(tokens, out=ptr[1:])
    cuts = token_blocks(ptr, engine.size)
    lo, hi = int(cuts[engine.rank]), int(cuts[engine.rank + 1])

    def keep(p, words):
        start, end = p[lo], p[hi]
        q = np.zeros_like(p)
        q[lo + 1 : hi + 1] = p[lo + 1 : hi + 1] - start
        q[hi + 1 :] = end - start
        return q, words[start:end]

    obs_ptr, obs = keep(split.observed_ptr, split.observed_words)
    held_ptr, held = keep(split.heldout_ptr, split.heldout_words)
    return HoldoutSplit(obs_ptr, obs, held_ptr, held), lo, hi


def fold_in(snapshot, corpus, method=None, burn_in=10, samples=40, seed=1, threads=1, tol=1e-6, max_iter=1000):
    """The topic proportions of every document of ``corpus`` (over the snapshot's vocabulary),
    all tokens observed, folded in by the model's own method (``method`` None: the snapshot's
    eval_method; the burstiness front end for a bursty snapshot). Returns (theta (D, K), topic
    counts of the last Gibbs sweep (D, K) or None for VB, the method used). The documents run in
    ``threads`` blocks on as many threads; document d uses the random stream (seed, d): the
    same for any thread count."""
    from ..corpus.holdout import HoldoutSplit

    phi, alpha, _ = _model_arrays(snapshot, None)
    _check_model(phi, alpha)
    if corpus.W != phi.shape[1]:
        raise InputError(f"the documents are over {corpus.W} words, the model over {phi.shape[1]}")
    method = method or snapshot.meta.get("eval_method") or "gibbs"
    if method not in METHODS:
        raise InputError(f"--method {method!r}: expected one of {', '.join(METHODS)}")
    if int(burn_in) < 0 or int(samples) < 1 or int(threads) < 1:
        raise InputError("burn-in must be >= 0, samples and threads >= 1")
    bursty = snapshot.burst_concentration is not None
    token_ptr, words = corpus.tokens()
    split = HoldoutSplit(token_ptr, words, np.zeros(corpus.D + 1, dtype=np.int64), np.zeros(0, dtype=np.int32))
    threads = int(threads)
    if bursty:
        _, theta, counts = burst_scores(snapshot, split, int(burn_in), int(samples), seed, keep=True, threads=threads)
        return theta, counts, "gibbs-burst"
    _, _, theta, counts = plain_scores(
        phi, alpha, split, method, int(burn_in), int(samples), tol, max_iter, seed, True, method == "gibbs", threads
    )
    return theta, counts, method


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
