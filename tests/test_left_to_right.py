"""The left-to-right estimator (evaluate/left_to_right.py) against exact values on a corpus
small enough to enumerate every topic assignment, its determinism, and the command line."""

import itertools
import json
import math

import numpy as np
import pytest
from scipy.special import gammaln

from topictool.errors import InputError
from topictool.evaluate.left_to_right import left_to_right, whole_documents
from topictool.snapshot import Snapshot

from .conftest import make_corpus, run

# ---------------------------------------------------------------------------
# exact values by enumeration


def exact_log_p(phi, alpha, words):
    """log p(w | phi, alpha) = log sum_z p(z | alpha) prod_n phi_{z_n, w_n}, with p(z | alpha) the
    Dirichlet-multinomial probability of the sequence z, over all K^N assignments."""
    K, N, A = len(alpha), len(words), alpha.sum()
    total = 0.0
    for z in itertools.product(range(K), repeat=N):
        nk = np.bincount(z, minlength=K)
        log_prior = gammaln(A) - gammaln(A + N) + np.sum(gammaln(alpha + nk) - gammaln(alpha))
        total += math.exp(log_prior) * np.prod(phi[list(z), words])
    return math.log(total)


def estimator_limit(phi, alpha, words, resample):
    """What the estimator converges to as R -> infinity: sum_n log E[p(w_n | z_<n)], the
    expectation under the law of one particle's z_<n, which is propagated exactly over all
    K^(n-1) assignments (sampling z_n; with ``resample`` first one Gibbs step per earlier token)."""
    K, A = len(alpha), alpha.sum()
    law = {(): 1.0}

    def weights(z, skip, w):
        nk = np.bincount([k for i, k in enumerate(z) if i != skip], minlength=K)
        return phi[:, w] * (nk + alpha)

    ll = 0.0
    for n, w in enumerate(words):
        for j in range(n if resample else 0):
            new = {}
            for z, p in law.items():
                q = weights(z, j, words[j])
                for k in range(K):
                    z2 = z[:j] + (k,) + z[j + 1 :]
                    new[z2] = new.get(z2, 0.0) + p * q[k] / q.sum()
            law = new
        p_n, new = 0.0, {}
        for z, p in law.items():
            q = weights(z, -1, w)
            p_n += p * q.sum() / (n + A)
            for k in range(K):
                new[z + (k,)] = new.get(z + (k,), 0.0) + p * q[k] / q.sum()
        law = new
        ll += math.log(p_n)
    return ll


@pytest.fixture(scope="module")
def tiny():
    """K=3 topics over W=6 words, 3 documents of 5 tokens: 3^5 assignments each."""
    rng = np.random.default_rng(0)
    K, W = 3, 6
    phi = rng.dirichlet(np.full(W, 0.5), K)
    alpha = np.array([0.3, 0.5, 0.2])
    docs = [{0: 2, 3: 1, 5: 2}, {1: 3, 2: 1}, {4: 2, 0: 1, 2: 2}]
    corpus = make_corpus(docs, [f"w{i}" for i in range(W)])
    split, _ = whole_documents(corpus, None)  # the order the estimator scores tokens in
    ptr, words = split.heldout_ptr, split.heldout_words
    docs_words = [words[ptr[d] : ptr[d + 1]] for d in range(corpus.D)]
    exact = sum(exact_log_p(phi, alpha, w) for w in docs_words)
    limits = {rs: sum(estimator_limit(phi, alpha, w, rs) for w in docs_words) for rs in (False, True)}
    return corpus, phi, alpha, exact, limits


def test_enumeration_helpers_agree_where_the_estimator_is_exact():
    """For 1 and 2 tokens the particles' z_<n follows the posterior exactly, so the limit is exact."""
    rng = np.random.default_rng(1)
    phi, alpha = rng.dirichlet(np.ones(4), 3), np.array([0.2, 0.7, 1.1])
    for words in ([2], [0, 3], [1, 1]):
        e = exact_log_p(phi, alpha, np.array(words))
        for rs in (False, True):
            assert estimator_limit(phi, alpha, np.array(words), rs) == pytest.approx(e, abs=1e-12)


def test_the_weighted_estimator_converges_to_the_exact_likelihood(tiny):
    """--weighted: each particle weighted by its own likelihood is unbiased for p(w), so its log
    converges to the exact value, where the position-by-position averages keep their bias."""
    corpus, phi, alpha, exact, limits = tiny
    errors = {}
    for R in (20, 200_000):
        est = [
            left_to_right((phi, alpha), corpus, particles=R, weighted=True, seed=s)["log_likelihood"] for s in (1, 2, 3)
        ]
        errors[R] = max(abs(e - exact) for e in est)
    # measured: 0.18 nats at R = 20, 0.0045 at R = 200,000 (of -25.04; about 1/sqrt(R)), where
    # the position-by-position averages stay 0.12-0.20 nats away however many particles
    assert errors[200_000] < 0.01 and errors[200_000] < errors[20] / 5
    assert abs(limits[False] - exact) > 10 * errors[200_000]
    with pytest.raises(InputError):
        left_to_right((phi, alpha), corpus, particles=3, weighted=True, resample=True)


def test_single_token_documents_are_exact_with_one_particle():
    rng = np.random.default_rng(2)
    phi, alpha = rng.dirichlet(np.ones(5), 3), np.array([0.2, 0.7, 1.1])
    corpus = make_corpus([{w: 1} for w in range(5)], [f"w{i}" for i in range(5)])
    r = left_to_right((phi, alpha), corpus, particles=1)
    exact = sum(math.log(phi[:, w] @ alpha / alpha.sum()) for w in range(5))
    assert r["log_likelihood"] == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("resample", [False, True])
def test_converges_to_the_exact_likelihood(tiny, resample):
    corpus, phi, alpha, exact, limits = tiny
    limit = limits[resample]
    # the method's own bias (what R -> infinity gives) is small here, but not zero: after
    # 3 tokens a particle's z_<n is not distributed as the posterior (measured: -0.201 nats of
    # -25.04 without resampling, -0.120 with one Gibbs step per earlier token)
    assert abs(limit - exact) < 0.01 * abs(exact)
    errors = {}
    for R in (20, 2000):
        est = np.array(
            [
                left_to_right((phi, alpha), corpus, particles=R, resample=resample, seed=s)["log_likelihood"]
                for s in range(1, 9)
            ]
        )
        errors[R] = est - limit
        if R == 2000:
            assert np.all(np.abs(est - exact) < 0.02 * abs(exact))  # within 2% at R = 2000
            assert abs(est.mean() - limit) < 0.05  # eight runs centred on the limit
    rms = {R: float(np.sqrt(np.mean(e**2))) for R, e in errors.items()}
    assert rms[2000] < 0.3 * rms[20]  # the Monte Carlo error shrinks with R (about 1/sqrt(R))


@pytest.mark.parametrize("K", [1, 4])
def test_uniform_topics_score_exactly_minus_log_W_per_token(K):
    W = 7
    corpus = make_corpus([{0: 3, 4: 2}, {1: 1, 2: 5, 6: 2}], [f"w{i}" for i in range(W)])
    r = left_to_right((np.full((K, W), 1.0 / W), 0.5), corpus, particles=3, resample=True)
    assert r["log_likelihood_per_token"] == pytest.approx(-math.log(W), rel=1e-12)
    assert r["perplexity"] == pytest.approx(W, rel=1e-12)
    assert r["tokens"] == r["heldout_tokens"] == 13 and r["documents"] == 2 and r["observed_tokens"] == 0


# ---------------------------------------------------------------------------
# determinism


@pytest.fixture(scope="module")
def generated():
    rng = np.random.default_rng(4)
    K, W, D = 6, 80, 41
    phi = rng.dirichlet(np.full(W, 0.1), K)
    docs = []
    for _ in range(D):
        theta = rng.dirichlet(np.full(K, 0.2))
        ws = rng.choice(W, size=int(rng.integers(5, 60)), p=theta @ phi)
        docs.append({int(w): int(c) for w, c in zip(*np.unique(ws, return_counts=True))})
    vocab = [f"w{i}" for i in range(W)]
    return make_corpus(docs, vocab), phi, np.full(K, 0.2), vocab


@pytest.mark.parametrize("resample", [False, True])
def test_same_result_for_any_thread_count_and_seeded(generated, resample):
    corpus, phi, alpha, _ = generated
    kw = dict(particles=4, resample=resample, return_documents=True)
    one = left_to_right((phi, alpha), corpus, seed=7, threads=1, **kw)
    two = left_to_right((phi, alpha), corpus, seed=7, threads=2, **kw)
    again = left_to_right((phi, alpha), corpus, seed=7, threads=1, **kw)
    other = left_to_right((phi, alpha), corpus, seed=8, threads=2, **kw)
    assert np.array_equal(one["document_log_likelihoods"], two["document_log_likelihoods"])
    assert one["log_likelihood"] == two["log_likelihood"] == again["log_likelihood"]
    assert other["log_likelihood"] != one["log_likelihood"]
    assert np.count_nonzero(other["document_log_likelihoods"] != one["document_log_likelihoods"]) > 30
    assert one["threads"] == 1 and two["threads"] == 2 and one["seed"] == 7


# ---------------------------------------------------------------------------
# checks


def test_checks(generated):
    corpus, phi, alpha, vocab = generated
    snap = Snapshot(phi=phi, alpha=alpha, topic_weight=np.full(len(alpha), 1 / len(alpha)), vocab=tuple(vocab), meta={})
    with pytest.raises(InputError, match="--particles"):
        left_to_right(snap, corpus, particles=0)
    with pytest.raises(InputError, match="--threads"):
        left_to_right(snap, corpus, threads=0)
    bursty = Snapshot(
        phi=phi,
        alpha=alpha,
        topic_weight=snap.topic_weight,
        vocab=snap.vocab,
        meta={},
        burst_concentration=np.ones(len(alpha)),
        burst_discount=0.3,
    )
    with pytest.raises(InputError, match="burstiness"):
        left_to_right(bursty, corpus)
    # a test word the model lacks: an error, or dropped and counted with allow_oov
    smaller = Snapshot(
        phi=phi[:, 1:] / phi[:, 1:].sum(axis=1, keepdims=True),
        alpha=alpha,
        topic_weight=snap.topic_weight,
        vocab=snap.vocab[1:],
        meta={},
    )
    n0 = int(corpus.counts[corpus.word_ids == 0].sum())
    assert n0 > 0
    with pytest.raises(InputError, match="allow-oov"):
        left_to_right(smaller, corpus)
    r = left_to_right(smaller, corpus, allow_oov=True)
    assert r["oov_tokens"] == n0 and r["tokens"] == corpus.N - n0
    with pytest.raises(InputError, match="no token"):
        left_to_right(snap, make_corpus([{}], vocab))


# ---------------------------------------------------------------------------
# command line


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("l2r")
    r = run("synth", "lda", "-o", d / "syn", "-K", 4, "-V", 100, "--documents", 120, "--length", 40, "--seed", 2)
    assert r.exit_code == 0, r.stderr
    r = run("train", d / "syn", "-m", "lda-gibbs", "-K", 4, "-n", 5, "-o", d / "run")
    assert r.exit_code == 0, r.stderr
    return d


def test_cli_left_to_right_json(trained):
    d = trained
    args = ["evaluate", d / "run", d / "syn", "--method", "left-to-right", "--particles", 5, "--json"]
    r = run(*args, "--threads", 2, "--seed", 3)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["method"] == "left-to-right" and out["particles"] == 5 and out["resample"] is False
    assert out["seed"] == 3 and out["documents"] > 0 and out["tokens"] > 0 and out["holdout"] is None
    assert out["log_likelihood_per_token"] == pytest.approx(out["log_likelihood"] / out["tokens"])
    assert out["perplexity"] == pytest.approx(math.exp(-out["log_likelihood_per_token"]))
    one = json.loads(run(*args, "--threads", 1, "--seed", 3).stdout)
    assert one["log_likelihood"] == out["log_likelihood"]
    r = run(*args, "--resample")
    assert r.exit_code == 0 and json.loads(r.stdout)["resample"] is True
    r = run("evaluate", d / "run", d / "syn", "--method", "left-to-right", "--particles", 2)
    assert r.exit_code == 0 and "without resampling" in r.stdout and "log-likelihood per token" in r.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--method", "left-to-right", "--particles", "0"],
        ["--method", "left-to-right", "--particles", "-3"],
        ["--method", "left-to-right", "--particles", "many"],
        ["--method", "left-to-right", "--holdout", "every:3"],
        ["--method", "left-to-right", "--samples", "5"],
        ["--particles", "5"],
        ["--method", "vb", "--resample"],
    ],
)
def test_cli_bad_values_one_line_exit_2_before_any_work(tmp_path, args):
    # MODEL and TEST do not exist: the option is refused before either is read
    r = run("evaluate", tmp_path / "missing.npz", tmp_path / "missing-corpus", *args)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing" not in lines[0]
    assert next(a for a in args if a in ("--particles", "--holdout", "--samples", "--resample")) in lines[0]
