import itertools
import json
import math

import numpy as np
import pytest
from scipy.special import digamma, gammaln

from topictool.errors import InputError
from topictool.evaluate.completion import document_completion
from topictool.snapshot import Snapshot

from .conftest import make_corpus, run


def lda_corpus(seed=0, K=5, W=60, D=60, length=80, alpha=0.3, beta=0.05):
    """An LDA corpus generated token by token from a known phi."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(W, beta), K)
    phi = (phi + 1e-6) / (phi + 1e-6).sum(axis=1, keepdims=True)  # no zeros for the shuffled control
    docs = []
    for _ in range(D):
        theta = rng.dirichlet(np.full(K, alpha))
        z = rng.choice(K, size=length, p=theta)
        bag = {}
        for k in z:
            w = int(rng.choice(W, p=phi[k]))
            bag[w] = bag.get(w, 0) + 1
        docs.append(bag)
    vocab = [f"w{i}" for i in range(W)]
    return make_corpus(docs, vocab), phi, np.full(K, alpha), vocab


@pytest.fixture(scope="module")
def generated():
    return lda_corpus()


def snapshot_of(phi, alpha, vocab, **kw):
    K = phi.shape[0]
    return Snapshot(phi=phi, alpha=alpha, topic_weight=np.full(K, 1.0 / K), vocab=tuple(vocab), meta={}, **kw)


@pytest.mark.parametrize("method", ["gibbs", "vb"])
def test_true_model_beats_shuffled_phi(generated, method):
    corpus, phi, alpha, vocab = generated
    rng = np.random.default_rng(5)
    shuffled = np.array([row[rng.permutation(len(row))] for row in phi])
    good = document_completion(snapshot_of(phi, alpha, vocab), corpus, method=method)
    bad = document_completion(snapshot_of(shuffled, alpha, vocab), corpus, method=method)
    assert good["heldout_tokens"] == bad["heldout_tokens"] == corpus.N // 80 * 16
    assert good["perplexity"] < 0.7 * bad["perplexity"]
    assert good["perplexity"] == pytest.approx(math.exp(-good["log_likelihood_per_token"]))
    assert good["documents"] == corpus.D


@pytest.mark.parametrize("method", ["gibbs", "vb"])
def test_uniform_phi_scores_exactly_V(generated, method):
    corpus, phi, alpha, _ = generated
    K, W = phi.shape
    r = document_completion((np.full((K, W), 1.0 / W), alpha), corpus, method=method, holdout="fraction:0.3")
    assert r["perplexity"] == pytest.approx(W, rel=1e-9)


def exact_posterior_mean(phi, alpha, words):
    """E[theta | observed words, phi, alpha] by enumerating every assignment z."""
    K = len(alpha)
    n = len(words)
    a0 = alpha.sum()
    total, acc = 0.0, np.zeros(K)
    for z in itertools.product(range(K), repeat=n):
        nk = np.bincount(z, minlength=K)
        # p(z, w) = prod_i phi[z_i, w_i] * DirMult(n_k | alpha)
        logp = sum(math.log(phi[k, w]) for k, w in zip(z, words))
        logp += gammaln(a0) - gammaln(a0 + n) + sum(gammaln(alpha[k] + nk[k]) - gammaln(alpha[k]) for k in range(K))
        p = math.exp(logp)
        total += p
        acc += p * (nk + alpha) / (n + a0)
    return acc / total


def test_gibbs_fold_in_converges_to_the_exact_posterior_mean():
    phi = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    alpha = np.array([0.5, 1.0])
    docs = [{0: 1, 1: 2, 2: 1}, {0: 3}, {2: 2, 1: 1}]
    corpus = make_corpus(docs, ["a", "b", "c"])
    # every:9 holds nothing out of these short documents: all tokens are observed
    r = document_completion(
        (phi, alpha), corpus, holdout="every:9", burn_in=20, samples=40000, return_theta=True, seed=3
    )
    for d, bag in enumerate(docs):
        words = [w for w, c in sorted(bag.items()) for _ in range(c)]
        exact = exact_posterior_mean(phi, alpha, words)
        assert np.allclose(r["theta"][d], exact, atol=6e-3), (d, r["theta"][d], exact)
    assert r["heldout_tokens"] == 0 and math.isnan(r["perplexity"])


def vb_reference(phi, alpha, words, iters=5000):
    """The LDA variational E-step (Blei et al. 2003, eqs. 6-7) in plain numpy/scipy."""
    gamma = alpha + len(words) / len(alpha)
    for _ in range(iters):
        r = phi[:, words].T * np.exp(digamma(gamma))  # n x K
        r /= r.sum(axis=1, keepdims=True)
        new = alpha + r.sum(axis=0)
        if np.max(np.abs(new - gamma)) < 1e-13:
            break
        gamma = new
    return gamma / gamma.sum()


def test_vb_fold_in_matches_the_variational_fixed_point():
    phi = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.3, 0.3, 0.4]])
    alpha = np.array([0.2, 0.5, 0.1])
    docs = [{0: 4, 1: 2, 2: 1}, {2: 5}]
    corpus = make_corpus(docs, ["a", "b", "c"])
    r = document_completion((phi, alpha), corpus, holdout="every:20", method="vb", tol=1e-12, return_theta=True)
    for d, bag in enumerate(docs):
        words = np.array([w for w, c in sorted(bag.items()) for _ in range(c)])
        assert np.allclose(r["theta"][d], vb_reference(phi, alpha, words), atol=1e-9)


def test_document_with_nothing_observed_uses_the_prior_mean():
    phi = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    alpha = np.array([0.5, 1.5])
    corpus = make_corpus([{2: 1}], ["a", "b", "c"])
    for method in ("gibbs", "vb"):
        r = document_completion((phi, alpha), corpus, holdout="fraction:0.9", method=method)
        assert r["heldout_tokens"] == 1 and r["observed_tokens"] == 0
        assert r["log_likelihood"] == pytest.approx(math.log(0.25 * 0.1 + 0.75 * 0.6), rel=1e-12)


def test_same_seed_identical_and_threads_do_not_matter(generated):
    corpus, phi, alpha, vocab = generated
    snap = snapshot_of(phi, alpha, vocab)
    a = document_completion(snap, corpus, seed=4, threads=1, return_theta=True)
    b = document_completion(snap, corpus, seed=4, threads=1, return_theta=True)
    c = document_completion(snap, corpus, seed=4, threads=2, return_theta=True)
    d = document_completion(snap, corpus, seed=5, threads=1)
    assert a["log_likelihood"] == b["log_likelihood"] == c["log_likelihood"]
    assert np.array_equal(a["theta"], c["theta"])
    assert d["log_likelihood"] != a["log_likelihood"]
    v1 = document_completion(snap, corpus, method="vb", threads=1)
    v2 = document_completion(snap, corpus, method="vb", threads=2)
    assert v1["log_likelihood"] == v2["log_likelihood"]


def test_vocabulary_alignment_by_word_and_oov_count():
    # every topic has the same word distribution p: the held-out probability of a token of
    # word v is p_v whatever theta is, so the perplexity shows whether words were mapped right
    vocab = ["a", "b", "c", "d"]
    p = np.array([0.1, 0.2, 0.3, 0.4])
    snap = snapshot_of(np.tile(p, (3, 1)), np.full(3, 0.5), vocab)
    test_vocab = ("x", "d", "b")  # x is unknown to the model; ids differ from the model's
    corpus = make_corpus([{0: 3, 2: 7}, {2: 5, 0: 1}, {2: 10}], test_vocab)
    with pytest.raises(InputError, match=r"4 of 26 test tokens \(15.4%\).*--allow-oov"):
        document_completion(snap, corpus, holdout="every:2")
    r = document_completion(snap, corpus, holdout="every:2", allow_oov=True)
    assert r["oov_tokens"] == 4
    assert r["observed_tokens"] + r["heldout_tokens"] + r["oov_tokens"] == corpus.N
    assert r["perplexity"] == pytest.approx(1 / 0.2, rel=1e-12)  # only "b" is scored


def test_burst_models_dispatch_and_bad_options(generated):
    corpus, phi, alpha, vocab = generated
    bursty = snapshot_of(phi, alpha, vocab, burst_concentration=np.ones(phi.shape[0]), burst_discount=0.5)
    with pytest.raises(InputError, match="burst"):
        document_completion(bursty, corpus, method="vb")
    plain = document_completion(snapshot_of(phi, alpha, vocab), corpus)
    cached = document_completion(bursty, corpus)  # the document-level cache is applied
    assert cached["heldout_tokens"] == plain["heldout_tokens"] and cached["perplexity"] != plain["perplexity"]
    snap = snapshot_of(phi, alpha, vocab)
    for kw in ({"method": "em"}, {"samples": 0}, {"burn_in": -1}, {"holdout": "every:0"}, {"threads": 0}):
        with pytest.raises(InputError):
            document_completion(snap, corpus, **kw)
    with pytest.raises(InputError):
        document_completion((phi, -alpha), corpus)


# ----------------------------------------------------------------------------
# command line


@pytest.fixture(scope="module")
def model_and_test(tmp_path_factory, generated):
    corpus, phi, alpha, vocab = generated
    d = tmp_path_factory.mktemp("eval")
    snapshot_of(phi, alpha, vocab).save(d / "model.npz")
    test = d / "corpus"
    test.mkdir()
    (test / "vocab.txt").write_text("".join(w + "\n" for w in vocab))
    np.savez(test / "test.npz", doc_ptr=corpus.doc_ptr, word_ids=corpus.word_ids, counts=corpus.counts)
    (test / "corpus.json").write_text(json.dumps({"format_version": 1, "D": corpus.D, "W": corpus.W, "N": corpus.N}))
    return d, test, corpus, phi, alpha, vocab


def test_cli_evaluate_json(model_and_test):
    d, test, corpus, phi, alpha, vocab = model_and_test
    r = run("evaluate", d / "model.npz", test, "--json", "--seed", "2")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert {"perplexity", "log_likelihood_per_token", "heldout_tokens", "documents"} <= set(out)
    direct = document_completion(snapshot_of(phi, alpha, vocab), corpus, seed=2)
    assert out["perplexity"] == direct["perplexity"]
    # a run directory (its model.npz) is a MODEL too
    r = run("evaluate", d, test, "--method", "vb")
    assert r.exit_code == 0 and "perplexity" in r.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--holdout", "every:0"],
        ["--holdout", "fraction:1.5"],
        ["--holdout", "half"],
        ["--method", "em"],
        ["--samples", "0"],
    ],
)
def test_cli_evaluate_bad_options_exit_2(model_and_test, args):
    d, test = model_and_test[:2]
    r = run("evaluate", d / "model.npz", test, *args)
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1 and args[0] in r.stderr


def test_cli_evaluate_bad_inputs_exit_2_one_line(model_and_test, tmp_path):
    d, test, corpus, phi, alpha, vocab = model_and_test
    r = run("evaluate", tmp_path / "missing.npz", test)
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and "missing.npz" in r.stderr
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    r = run("evaluate", tmp_path / "junk.npz", test)
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    snapshot_of(phi, alpha, vocab, burst_concentration=np.ones(len(alpha)), burst_discount=0.3).save(
        tmp_path / "bursty.npz"
    )
    r = run("evaluate", tmp_path / "bursty.npz", test, "--method", "vb")
    assert r.exit_code == 2 and "--method gibbs" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run("evaluate", tmp_path, test)  # a directory without model.npz
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
