"""lida-gibbs: LIDA / FTM / STM / LDA by collapsed Gibbs (topictool/models/lida/).

Correctness is checked three ways: the activation conditionals against brute-force ratios
of the joint marginals, the whole chain against exact enumeration of the posterior on tiny
corpora (variant lda over z; variant lida over z, θ̄ and φ̄ together), and recovery of a
synthetic truth drawn from the LIDA generative process.
"""

import io
import itertools
import json

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.special import betaln, gammaln
from scipy.stats import chisquare

from topictool.corpus import load_corpus
from topictool.errors import InputError
from topictool.models.lida import kernels as kern
from topictool.models.lida.model import LidaGibbs

from .conftest import make_corpus, run


def model(corpus, seed=1, **opts):
    return LidaGibbs(corpus, LidaGibbs.resolve_options(opts), seed)


# ---------------------------------------------------------------------------------------
# brute force: the joint marginals (1)-(4) of topictool/models/lida/kernels.py


def log_p_theta_bar(theta_bar, a, b):
    """(1) log P(Θ̄), π integrated out; theta_bar (D, K)."""
    D = theta_bar.shape[0]
    m = theta_bar.sum(axis=0)
    return float(np.sum(betaln(a + m, b + D - m) - betaln(a, b)))


def log_p_z(theta_bar, n_dk, alpha):
    """(2) log P(z | Θ̄), θ integrated out; -inf if a token sits on an inactive topic."""
    total = 0.0
    for d in range(theta_bar.shape[0]):
        on = theta_bar[d].astype(bool)
        n_d = n_dk[d].sum()
        if np.any(n_dk[d][~on] > 0):
            return -np.inf
        if on.sum() == 0:
            if n_d:
                return -np.inf
            continue
        A = alpha * on.sum()
        total += gammaln(A) - gammaln(A + n_d) + np.sum(gammaln(alpha + n_dk[d][on]) - gammaln(alpha))
    return total


def log_p_phi_bar(phi_bar, c, e):
    """(3) log P(Φ̄), κ integrated out; phi_bar (W, K)."""
    K = phi_bar.shape[1]
    m = phi_bar.sum(axis=1)
    return float(np.sum(betaln(c + m, e + K - m) - betaln(c, e)))


def log_p_w(phi_bar, n_vk, beta):
    """(4) log P(w | z, Φ̄), φ integrated out."""
    return log_p_z(phi_bar.T, n_vk.T, beta)


def counts_of(corpus, z, K):
    token_ptr, words = corpus.tokens()
    d = np.repeat(np.arange(corpus.D), np.diff(token_ptr))
    n_dk = np.zeros((corpus.D, K), dtype=np.int64)
    n_vk = np.zeros((corpus.W, K), dtype=np.int64)
    np.add.at(n_dk, (d, z), 1)
    np.add.at(n_vk, (words, z), 1)
    return n_dk, n_vk


def flip_probability(log_joint, x, idx):
    """P(x[idx] = 1 | rest) from the joint by brute force."""
    on, off = x.copy(), x.copy()
    on[idx], off[idx] = 1, 0
    l1, l0 = log_joint(on), log_joint(off)
    return 1.0 / (1.0 + np.exp(l0 - l1))


# ---------------------------------------------------------------------------------------
# 3. the implemented conditionals (6), (7) equal the brute-force ratios


def test_activation_conditionals_equal_joint_ratios():
    rng = np.random.default_rng(5)
    docs = [{int(w): int(c) for w, c in zip(rng.choice(7, 3, replace=False), rng.integers(1, 4, 3))} for _ in range(5)]
    corpus = make_corpus(docs, [f"w{i}" for i in range(7)])
    K = 4
    o = dict(
        K=K,
        alpha=0.7,
        beta=0.3,
        theta_bar_mass=2.5,
        theta_bar_concentration=1.7,
        phi_bar_mass=3.0,
        phi_bar_concentration=0.6,
    )
    m = model(corpus, seed=3, **o)
    for _ in range(7):
        m.step()
    m.check_invariants()
    a, b = o["theta_bar_mass"] * o["theta_bar_concentration"] / K, o["theta_bar_concentration"]
    c, e = o["phi_bar_mass"] * o["phi_bar_concentration"] / corpus.W, o["phi_bar_concentration"]
    n_dk, n_vk = counts_of(corpus, m.z.astype(np.int64), K)
    theta_bar, phi_bar = m.theta_on.astype(np.int64), m.phi_on.astype(np.int64)
    expect_theta, expect_phi = m.expected_theta_bar(), m.expected_phi_bar()
    checked = 0
    for d, k in itertools.product(range(corpus.D), range(K)):
        if n_dk[d, k]:
            assert expect_theta[d, k] == 1.0
            continue
        brute = flip_probability(
            lambda tb: log_p_theta_bar(tb, a, b) + log_p_z(tb, n_dk, o["alpha"]), theta_bar, (d, k)
        )
        others = theta_bar.copy()
        others[d, k] = 0
        mine = kern.activation_conditional(
            int(others[:, k].sum()), corpus.D - 1, a, b, int(others[d].sum()), o["alpha"], int(n_dk[d].sum())
        )
        assert mine == pytest.approx(brute, rel=1e-10), (d, k)
        assert expect_theta[d, k] == pytest.approx(brute, rel=1e-10), (d, k)
        checked += 1
    for v, k in itertools.product(range(corpus.W), range(K)):
        if n_vk[v, k]:
            assert expect_phi[v, k] == 1.0
            continue
        brute = flip_probability(lambda pb: log_p_phi_bar(pb, c, e) + log_p_w(pb, n_vk, o["beta"]), phi_bar, (v, k))
        others = phi_bar.copy()
        others[v, k] = 0
        mine = kern.activation_conditional(
            int(others[v].sum()), K - 1, c, e, int(others[:, k].sum()), o["beta"], int(n_vk[:, k].sum())
        )
        assert mine == pytest.approx(brute, rel=1e-10), (v, k)
        assert expect_phi[v, k] == pytest.approx(brute, rel=1e-10), (v, k)
        checked += 1
    assert checked > 20
    # the Dirichlet factor's large-n branch (lgamma) agrees with its product branch
    for A, n in ((1, 17), (5, 40), (30, 200)):
        x = 0.3 * A
        product = np.prod([(x + i) / (x + 0.3 + i) for i in range(n)])
        assert kern.dirichlet_ratio(0.3, A, n) == pytest.approx(product, rel=1e-11)


# ---------------------------------------------------------------------------------------
# 2. variant=lda samples LDA's posterior; variant=lida the joint posterior of (z, θ̄, φ̄)


def chain_histogram(m, n_samples, state_index, thin=2):
    counts = {}
    for _ in range(200):
        m.step()
    for _ in range(n_samples):
        for _ in range(thin):
            m.step()
        key = state_index(m)
        counts[key] = counts.get(key, 0) + 1
    return counts


def chi_square_p(counts, probs, n):
    """Chi-square p-value, cells with expected count < 5 pooled."""
    keys = list(probs)
    expected = np.array([probs[k] * n for k in keys])
    observed = np.array([counts.pop(k, 0) for k in keys], dtype=float)
    assert not counts, f"the chain visited states of zero probability: {list(counts)[:3]}"
    small = expected < 5
    exp_cells, obs_cells = expected[~small], observed[~small]
    if small.any():
        exp_cells = np.append(exp_cells, expected[small].sum())
        obs_cells = np.append(obs_cells, observed[small].sum())
    return chisquare(obs_cells, exp_cells).pvalue


def test_lda_variant_matches_exact_enumeration():
    corpus = make_corpus([{0: 1, 1: 1}, {0: 1, 2: 1}], ["a", "b", "c"])
    K, alpha, beta = 3, 0.5, 0.4
    probs = {}
    for z in itertools.product(range(K), repeat=corpus.N):
        n_dk, n_vk = counts_of(corpus, np.array(z), K)
        ones_d, ones_w = np.ones((corpus.D, K)), np.ones((corpus.W, K))
        probs[z] = np.exp(log_p_z(ones_d, n_dk, alpha) + log_p_w(ones_w, n_vk, beta))
    total = sum(probs.values())
    probs = {k: p / total for k, p in probs.items()}
    m = model(corpus, seed=11, K=K, variant="lda", alpha=alpha, beta=beta)
    n = 15000
    counts = chain_histogram(m, n, lambda m: tuple(int(x) for x in m.z))
    assert chi_square_p(counts, probs, n) > 1e-3


def test_lida_chain_matches_exact_enumeration_of_z_and_activations():
    corpus = make_corpus([{0: 1, 1: 1}, {1: 1}], ["a", "b"])
    K = 2
    o = dict(
        K=K,
        alpha=0.8,
        beta=0.6,
        theta_bar_mass=1.5,
        theta_bar_concentration=2.0,
        phi_bar_mass=1.2,
        phi_bar_concentration=0.7,
    )
    a, b = o["theta_bar_mass"] * o["theta_bar_concentration"] / K, o["theta_bar_concentration"]
    c, e = o["phi_bar_mass"] * o["phi_bar_concentration"] / corpus.W, o["phi_bar_concentration"]
    probs = {}
    for z in itertools.product(range(K), repeat=corpus.N):
        n_dk, n_vk = counts_of(corpus, np.array(z), K)
        for tb in itertools.product((0, 1), repeat=corpus.D * K):
            theta_bar = np.array(tb).reshape(corpus.D, K)
            lz = log_p_z(theta_bar, n_dk, o["alpha"])
            if lz == -np.inf:
                continue
            for pb in itertools.product((0, 1), repeat=corpus.W * K):
                phi_bar = np.array(pb).reshape(corpus.W, K)
                lw = log_p_w(phi_bar, n_vk, o["beta"])
                if lw == -np.inf:
                    continue
                probs[(z, tb, pb)] = np.exp(lz + lw + log_p_theta_bar(theta_bar, a, b) + log_p_phi_bar(phi_bar, c, e))
    total = sum(probs.values())
    probs = {k: p / total for k, p in probs.items()}
    m = model(corpus, seed=7, **o)
    n = 20000
    counts = chain_histogram(
        m,
        n,
        lambda m: (
            tuple(int(x) for x in m.z),
            tuple(int(x) for x in m.theta_on.ravel()),
            tuple(int(x) for x in m.phi_on.ravel()),
        ),
    )
    assert chi_square_p(counts, probs, n) > 1e-3


# ---------------------------------------------------------------------------------------
# 1. recovery of a synthetic LIDA truth


def test_synth_lida_recovers_topics_and_activation_densities(tmp_path):
    out = tmp_path / "s"
    params = dict(
        topics=10,
        vocab_size=300,
        documents=500,
        length=100,
        alpha=1.0,
        beta=0.5,
        eta=3.0,
        delta=10.0,
        gamma=30.0,
        lam=10.0,
    )
    r = run(
        "synth",
        "lida",
        "-o",
        out,
        "-K",
        10,
        "-V",
        300,
        "--documents",
        500,
        "--test-documents",
        50,
        "--length",
        100,
        "--alpha",
        1.0,
        "--beta",
        0.5,
        "--eta",
        3.0,
        "--delta",
        10.0,
        "--gamma",
        30.0,
        "--lambda",
        10.0,
        "--seed",
        3,
    )
    assert r.exit_code == 0, r.stderr
    truth = np.load(out / "truth.npz", allow_pickle=False)
    train = load_corpus(out)
    assert truth["theta_bar"].shape == (500, 10) and truth["phi_bar"].shape == (10, 300)
    assert 0.1 < truth["theta_bar_density"] < 0.5 and 0.03 < truth["phi_bar_density"] < 0.3
    assert np.all(truth["phi"][truth["phi_bar"] == 0] == 0) and np.all(truth["theta"][truth["theta_bar"] == 0] == 0)
    o = {k: params[k] for k in ("alpha", "beta", "eta", "delta", "gamma", "lam")}  # old names: aliases
    m = model(train, seed=2, K=10, **o)
    for _ in range(300):
        metrics = m.step()
    m.check_invariants()
    phi = m.snapshot().phi
    hellinger = np.sqrt(0.5 * ((np.sqrt(truth["phi"])[:, None, :] - np.sqrt(phi)[None, :, :]) ** 2).sum(-1))
    assert hellinger.min(axis=1).mean() < 0.25
    assert abs(metrics["theta_bar_density"] - truth["theta_bar_density"]) < 0.10
    assert abs(metrics["phi_bar_density"] - truth["phi_bar_density"]) < 0.10
    rows, cols = linear_sum_assignment(hellinger)
    assert hellinger[rows, cols].mean() < 0.35


# ---------------------------------------------------------------------------------------
# exact resume, invariants, snapshots, options


@pytest.fixture(scope="module")
def small_corpus():
    from topictool.models.lida.synth import lida

    train, _, _ = lida(topics=6, vocab_size=80, documents=60, test_documents=10, length=30, eta=2.0, gamma=20.0, seed=4)
    return train


def round_trip(arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


@pytest.mark.parametrize(
    "opts",
    [
        dict(variant="lida"),
        dict(variant="stm"),
        dict(variant="lida", nonparametric=True, initial_topics=3, theta_bar_mass=4.0),
    ],
)
def test_resume_is_bit_for_bit(small_corpus, opts):
    straight = model(small_corpus, seed=9, K=12, **opts)
    for _ in range(20):
        straight.step()
    half = model(small_corpus, seed=9, K=12, **opts)
    for _ in range(10):
        half.step()
    resumed = LidaGibbs.from_state(
        small_corpus, LidaGibbs.resolve_options(dict(K=12, **opts)), round_trip(half.state())
    )
    for _ in range(10):
        resumed.step()
    a, b = straight.state(), resumed.state()
    assert sorted(a) == sorted(b)
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    sa, sb = straight.snapshot(), resumed.snapshot()
    assert np.array_equal(sa.phi, sb.phi) and np.array_equal(sa.alpha, sb.alpha)
    resumed.check_invariants()


@pytest.mark.parametrize(
    "opts",
    [
        dict(variant="lda"),
        dict(variant="ftm"),
        dict(variant="stm"),
        dict(variant="lida"),
        dict(variant="ftm", nonparametric=True, initial_topics=2),
    ],
)
def test_every_variant_keeps_invariants_and_gives_valid_snapshots(small_corpus, opts):
    from topictool.evaluate.completion import document_completion

    m = model(small_corpus, seed=1, K=8, **opts)
    for _ in range(15):
        metrics = m.step()
        m.check_invariants()
    for key in ("theta_bar_density", "phi_bar_density"):
        assert 0.0 < metrics[key] <= 1.0
    if opts["variant"] in ("lda", "stm"):
        assert metrics["theta_bar_density"] == 1.0
    if opts["variant"] in ("lda", "ftm"):
        assert metrics["phi_bar_density"] == 1.0
    snap = m.snapshot().check()
    assert np.all(snap.phi > 0) and np.allclose(snap.phi.sum(axis=1), 1.0)
    assert np.all(snap.alpha > 0) and np.all(np.isfinite(snap.alpha))
    theta = m.expected_theta()
    assert np.allclose(theta.sum(axis=1), 1.0)
    ll = m.log_likelihood()
    assert np.isfinite(ll) and ll < 0
    res = document_completion(snap, small_corpus.subset(np.arange(10)), burn_in=2, samples=3)
    assert np.isfinite(res["perplexity"]) and res["perplexity"] > 1


def test_check_invariants_catches_a_token_on_an_inactive_pair(small_corpus):
    m = model(small_corpus, seed=1, K=8)
    for _ in range(3):
        m.step()
    m.check_invariants()
    d, k = 0, int(m.z[0])
    m.theta_on[d, k] = 0
    m.m_k[k] -= 1
    with pytest.raises(AssertionError, match="inactive"):
        m.check_invariants()
    with pytest.raises(InputError, match="inactive"):
        LidaGibbs.from_state(small_corpus, m.opts, m.state())


def test_nonparametric_grows_topics_from_a_few(small_corpus):
    m = model(small_corpus, seed=2, K=40, nonparametric=True, initial_topics=1, theta_bar_mass=5.0, alpha=0.5, beta=0.1)
    created = 0
    for _ in range(60):
        metrics = m.step()
        created += metrics["topics_created"]
    m.check_invariants()
    assert created > 0 and metrics["topics_in_use"] > 1
    snap = m.snapshot()
    assert snap.K == metrics["topics_in_use"] and np.allclose(snap.phi.sum(axis=1), 1.0)


def test_nonparametric_step_is_the_large_K_limit_of_the_finite_one():
    """(9) against (6) with K = 400 (a = ηδ/K small): the same mean number of topics in use,
    active topics per document and topics holding tokens (ftm, so that (7)'s K_obs plays no part)."""
    corpus = make_corpus([{0: 2, 1: 1}, {1: 1, 2: 2}, {3: 3}, {0: 1, 3: 1}], ["a", "b", "c", "d"])
    o = dict(variant="ftm", alpha=0.7, beta=0.5, theta_bar_mass=2.0, theta_bar_concentration=1.5)

    def averages(**opts):
        m = model(corpus, seed=2, **o, **opts)
        rows = []
        for i in range(12000):
            m.step()
            if i >= 500:
                rows.append(((m.m_k > 0).sum(), m.m_k.sum() / corpus.D, np.count_nonzero(m.n_k)))
        return np.mean(rows, axis=0)

    finite = averages(K=400)
    infinite = averages(K=60, nonparametric=True, initial_topics=2)
    assert 5.0 < finite[0] < 7.0
    assert np.all(np.abs(finite - infinite) < [0.3, 0.12, 0.15]), (finite, infinite)


@pytest.mark.parametrize(
    "opts, message",
    [
        (dict(variant="sparse"), "variant='sparse'"),
        (dict(alpha=0.0), "alpha=0.0"),
        (dict(phi_bar_concentration=-1.0), "phi_bar_concentration=-1.0"),
        (dict(lam=-1.0), "given as lam"),  # the old name, renamed
        (dict(eta=1.0, theta_bar_mass=2.0), "given twice"),
        (dict(K=0), "K=0"),
        (dict(variant="stm", nonparametric=True), "nonparametric"),
        (dict(nonparametric=True, initial_topics=200), "initial_topics=200"),
        (dict(lambda_=1.0), "unknown option"),
    ],
)
def test_bad_options_are_named(small_corpus, opts, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        model(small_corpus, **opts)


def test_registry_entry():
    from topictool.models import registry

    assert registry.get("lida-gibbs") is LidaGibbs


def test_train_resume_and_evaluate_through_the_cli(tmp_path, monkeypatch):
    """The training loop drives lida-gibbs like any model: exact resume, snapshot, evaluate."""

    corpus = tmp_path / "c"
    assert (
        run(
            "synth", "lida", "-o", corpus, "-K", 5, "-V", 60, "--documents", 40, "--test-documents", 8, "--length", 30
        ).exit_code
        == 0
    )
    common = (
        "-m",
        "lida-gibbs",
        "-K",
        6,
        "--seed",
        4,
        "--set",
        "variant=lida",
        "--set",
        "phi_bar_concentration=2",
        "--checkpoint-every",
        3,
        "--log-every",
        2,
    )
    r = run("train", corpus, *common, "-n", 8, "-o", tmp_path / "straight", "--debug-checks")
    assert r.exit_code == 0, r.stderr
    assert run("train", corpus, *common, "-n", 4, "-o", tmp_path / "half").exit_code == 0
    r = run("train", "--resume", tmp_path / "half", "-n", 4)
    assert r.exit_code == 0, r.stderr
    a, b = np.load(tmp_path / "straight" / "model.npz"), np.load(tmp_path / "half" / "model.npz")
    for key in ("phi", "alpha", "topic_weight"):
        assert np.array_equal(a[key], b[key]), key
    r = run("evaluate", tmp_path / "straight", corpus, "--burn-in", 2, "--samples", 2, "--json")
    assert r.exit_code == 0, r.stderr
    assert np.isfinite(json.loads(r.stdout)["perplexity"])
    r = run("train", corpus, "-m", "lida-gibbs", "--set", "variant=bogus", "-n", 1, "-o", tmp_path / "bad")
    assert r.exit_code == 2 and "variant='bogus'" in r.stderr


def test_state_keys_doc_topics_and_threads(small_corpus):
    """Checkpoint keys as before the base protocol (θ̄, φ̄ as packed bits); doc_topics has the
    snapshot's topics; a random stream per thread."""
    m = model(small_corpus, seed=3, K=12, nonparametric=True, initial_topics=3)
    for _ in range(4):
        m.step()
    s = m.state()
    assert sorted(s) == ["iteration", "phi_bar", "rng", "seed", "theta_bar", "version", "z"]
    assert s["theta_bar"].shape == (small_corpus.D, 2) and s["phi_bar"].shape == (small_corpus.W, 2)
    assert np.array_equal(np.unpackbits(s["theta_bar"], axis=1, count=12), m.theta_on)
    assert sorted(model(small_corpus, K=12, variant="ftm").state()) == [
        "iteration",
        "rng",
        "seed",
        "theta_bar",
        "version",
        "z",
    ]
    n_dk = m.doc_topics()
    assert n_dk.shape == (small_corpus.D, m.snapshot().K)
    assert int(n_dk.sum()) == m.N
    # threads are accepted, one random stream each (the scheme is tested in test_lida_threads.py)
    assert LidaGibbs(small_corpus, {"K": 4}, 1, threads=2).rng.shape == (2, 4)
