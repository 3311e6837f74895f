"""The variational family: lda-svi, lda-scvb0, hdp-pcvb0, hdp-pcsvb0.

- update equations on one document of three tokens, recomputed here with plain
  numpy from the formulas of the issue / the papers (never by calling the models' code);
- exact resume (4 steps == 2 + state round trip + 2) and invariants of the lazily
  decayed count tables;
- recovery of planted topics (synth lda) and of the number of topics (synth hdp);
- the training loop end to end through the CLI.
"""

import json

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import digamma as psi
from scipy.special import polygamma

from topictool import store, synth
from topictool.errors import InputError
from topictool.kernels.rng import seed_row, uniform
from topictool.models import registry
from topictool.models.variational import kernels as kern
from topictool.models.variational import sticks
from topictool.models.variational.pcsvb0 import HdpPcsvb0
from topictool.models.variational.pcvb0 import HdpPcvb0
from topictool.models.variational.scvb0 import LdaScvb0
from topictool.models.variational.svi import LdaSvi

from .conftest import make_corpus, run

ENTRIES = ("lda-svi", "lda-scvb0", "hdp-pcvb0", "hdp-pcsvb0")

# One document of three tokens: word 0 once, word 2 twice (V = 4 words; word 1 and 3 unused).
VOCAB = ("a", "b", "c", "d")


def one_doc():
    return make_corpus([{0: 1, 2: 2}], VOCAB)


TOKENS = [0, 2, 2]


def build(cls, corpus, seed=1, **options):
    return cls(corpus, cls.resolve_options(options), seed)


def rho(s, tau, t, kappa=0.9):
    return min(s / (tau + t) ** kappa, 1.0)


def stick_weights(order, u, v):
    """pi_k = ubar_k prod_{l<k} (1 - ubar_l), ubar_k = u_k / (u_k + v_k), ubar_T = 1; positions in ``order``."""
    pi = np.zeros(len(u))
    rest = 1.0
    for p, k in enumerate(order):
        ub = 1.0 if p == len(order) - 1 else u[k] / (u[k] + v[k])
        pi[k] = ub * rest
        rest *= 1.0 - ub
    return pi


def gamma_fixed_point(order, u, v):
    """(T - 1) / sum_{k<T} [Psi(u_k + v_k) - Psi(v_k)]."""
    first = list(order[:-1])
    return (len(order) - 1) / np.sum(psi(u[first] + v[first]) - psi(v[first]))


# ----------------------------------------------------------------------------
# update equations on one document of three tokens


@pytest.mark.parametrize(
    "clumping,alpha_update,tables",
    [
        (False, "document", "bound"),
        (True, "document", "bound"),
        (False, "corpus", "bound"),
        (False, "document", "sample"),
        (True, "document", "sample"),
        (False, "corpus", "sample"),
    ],
)
def test_pcsvb0_one_document_word_by_word(clumping, alpha_update, tables):
    T, V, N, D, beta = 3, 4, 3, 1, 0.01
    m = build(
        HdpPcsvb0, one_doc(), K=T, reorder=False, clumping=clumping, init="random", alpha_update=alpha_update,
        tables=tables,
    )  # fmt: skip
    # tables = "sample": the document's counts drawn from each token's q, from the stream of (the pass's
    # key, document 0), as the first k whose running sum of q exceeds a uniform
    gen = np.zeros((1, 4), dtype=np.uint64)
    seed_row(gen, 0, m._pass_key(), np.uint64(0))
    drawn = np.zeros(T, dtype=np.int64)
    s = m.state()
    E_bar = float(s["E_bar"])
    n_dk = s["n_dk"][0].copy()
    n_kw = s["scale"] * s["nkw"].T.copy()  # (T, V)
    n_k = s["scale"] * s["nk"].copy()
    u, v, order = s["u"].copy(), s["v"].copy(), list(s["order"])
    alpha, gamma, t_c, t_h = float(s["alpha"]), float(s["gamma"]), int(s["t_c"]), int(s["t_h"])
    pi = stick_weights(order, u, v)
    np.testing.assert_allclose(pi, m.pi, rtol=1e-12)

    # q(z_di = k) ∝ (n_dk + alpha pi_k)(n_kw + beta)/(n_k + V beta); n_dk, n_kw updated after each token
    keep = np.ones(T)
    t_d = 0
    units = [(0, 1), (2, 2)] if clumping else [(w, 1) for w in TOKENS]
    for w, count in units:
        q = (n_dk + alpha * pi) * (n_kw[:, w] + beta) / (n_k + V * beta)
        q /= q.sum()
        for _ in range(count):  # clumping: the same q applied once per copy
            r_d = rho(1.0, 10.0, t_d)
            n_dk = (1 - r_d) * n_dk + r_d * N * q
            r_c = rho(10.0, 1000.0, t_c)
            n_kw = (1 - r_c) * n_kw
            n_kw[:, w] += r_c * N * q
            n_k = (1 - r_c) * n_k + r_c * N * q
            t_d += 1
            t_c += 1
        keep *= (1 - q) ** count
        for _ in range(count if tables == "sample" else 0):
            drawn[int(np.argmax(np.cumsum(q) > uniform(gen, 0)))] += 1
    E = 1 - keep
    api = alpha * pi
    # a document's tables: the paper's lower bound sum_k E_k, or (T1) the expected tables of a CRP with
    # concentration alpha pi_k given the drawn counts
    used = drawn > 0
    n_tables = E.sum() if tables == "bound" else np.sum(api[used] * (psi(api[used] + drawn[used]) - psi(api[used])))

    r_h = rho(5.0, 100.0, t_h)
    u_new = (1 - r_h) * u + r_h * (1 + D * E)
    v_new = np.empty(T)
    for p, k in enumerate(order):
        v_new[k] = (1 - r_h) * v[k] + r_h * (gamma + D * sum(E[j] for j in order[p + 1 :]))
    gamma_new = gamma_fixed_point(order, u_new, v_new)
    E_bar = (1 - r_h) * E_bar + r_h * n_tables  # (B7), kept in both modes
    if alpha_update == "document":  # (B6)
        alpha_new = (1 - r_h) * alpha + r_h * n_tables / (psi(N + alpha) - psi(alpha))
    else:  # (B8): alpha (Psi(N + alpha) - Psi(alpha)) = D E_bar for the one document
        alpha_new = brentq(lambda a: a * (psi(N + a) - psi(a)) - D * E_bar, 1e-6, 1e6, xtol=1e-14, rtol=1e-14)
    pi_new = stick_weights(order, u_new, v_new)

    metrics = m.step()
    s2 = m.state()
    np.testing.assert_allclose(s2["n_dk"][0], n_dk, rtol=1e-10)
    np.testing.assert_allclose(s2["scale"] * s2["nkw"].T, n_kw, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(s2["scale"] * s2["nk"], n_k, rtol=1e-10)
    np.testing.assert_allclose(s2["u"], u_new, rtol=1e-10)
    np.testing.assert_allclose(s2["v"], v_new, rtol=1e-10)
    np.testing.assert_allclose(m.pi, pi_new, rtol=1e-10)
    assert float(s2["gamma"]) == pytest.approx(gamma_new, rel=1e-10)
    assert float(s2["alpha"]) == pytest.approx(alpha_new, rel=1e-10)
    assert int(s2["t_c"]) == 3 and int(s2["t_h"]) == 1
    assert float(s2["E_bar"]) == pytest.approx(E_bar, rel=1e-12) == metrics["tables_per_document"]
    assert tables == "bound" or drawn.sum() == N
    assert metrics["documents_seen"] == 1
    np.testing.assert_allclose(m.snapshot().alpha, alpha_new * pi_new, rtol=1e-10)


def test_pcsvb0_one_document_minibatch():
    T, V, N, D, beta = 3, 4, 3, 1, 0.01
    # the paper's tables (sample's draws: test_pcsvb0_one_document_word_by_word)
    m = build(HdpPcsvb0, one_doc(), K=T, reorder=False, minibatch=1, init="random", tables="bound")
    s = m.state()
    n_dk = s["n_dk"][0].copy()
    n_kw = s["scale"] * s["nkw"].T.copy()
    n_k = s["scale"] * s["nk"].copy()
    u, v, order = s["u"].copy(), s["v"].copy(), list(s["order"])
    alpha, gamma = float(s["alpha"]), float(s["gamma"])
    pi = stick_weights(order, u, v)

    # n_kw, n_k fixed during the minibatch; n_dk updated token by token
    keep, stats, t_d = np.ones(T), np.zeros((T, V)), 0
    for w in TOKENS:
        q = (n_dk + alpha * pi) * (n_kw[:, w] + beta) / (n_k + V * beta)
        q /= q.sum()
        r_d = rho(1.0, 10.0, t_d)
        n_dk = (1 - r_d) * n_dk + r_d * N * q
        stats[:, w] += q
        keep *= 1 - q
        t_d += 1
    E = 1 - keep
    r_c = rho(10.0, 1000.0, 0)
    n_kw = (1 - r_c) * n_kw + r_c * (N / 3) * stats  # N / |M|, |M| = 3 tokens
    n_k = (1 - r_c) * n_k + r_c * (N / 3) * stats.sum(axis=1)
    r_h = rho(5.0, 100.0, 0)
    u_new = (1 - r_h) * u + r_h * (1 + D * E)
    v_new = np.array(
        [
            (1 - r_h) * v[k] + r_h * (gamma + D * sum(E[j] for j in order[p + 1 :]))
            for p, k in sorted(enumerate(order), key=lambda pk: pk[1])
        ]
    )
    alpha_new = (1 - r_h) * alpha + r_h * E.sum() / (psi(N + alpha) - psi(alpha))

    m.step()
    s2 = m.state()
    np.testing.assert_allclose(s2["n_dk"][0], n_dk, rtol=1e-10)
    np.testing.assert_allclose(s2["scale"] * s2["nkw"].T, n_kw, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(s2["scale"] * s2["nk"], n_k, rtol=1e-10)
    np.testing.assert_allclose(s2["u"], u_new, rtol=1e-10)
    np.testing.assert_allclose(s2["v"], v_new, rtol=1e-10)
    assert float(s2["gamma"]) == pytest.approx(gamma_fixed_point(order, u_new, v_new), rel=1e-10)
    assert float(s2["alpha"]) == pytest.approx(alpha_new, rel=1e-10)


def test_pcvb0_one_iteration():
    T, V, N, D, beta = 3, 4, 3, 1, 0.01
    m = build(HdpPcvb0, one_doc(), K=T, init="random")
    s = m.state()
    q = s["q"].astype(np.float64)  # (tokens, T), stored single precision
    n_dk, n_kw, n_k = s["n_dk"][0].copy(), s["n_wk"].T.copy(), s["n_k"].copy()
    alpha, gamma, order = float(s["alpha"]), float(s["gamma"]), list(s["order"])
    pi = stick_weights(order, s["u"], s["v"])
    np.testing.assert_allclose(n_k, q.sum(axis=0), rtol=1e-12)

    # q(z_di = k) ∝ (n_dk^-di + alpha pi_k)(n_kw^-di + beta)/(n_k^-di + V beta), in token order
    for i, w in enumerate(TOKENS):
        old = q[i].copy()
        new = (n_dk - old + alpha * pi) * (n_kw[:, w] - old + beta) / (n_k - old + V * beta)
        new = (new / new.sum()).astype(np.float32).astype(np.float64)
        n_dk += new - old
        n_kw[:, w] += new - old
        n_k += new - old
        q[i] = new
    E = 1 - np.prod(1 - q, axis=0)
    new_order = sorted(order, key=lambda k: -n_k[k])  # sticks re-ordered by size (stable)
    u_new = 1 + D * E

    def v_of(g):
        v = np.empty(T)
        for p, k in enumerate(new_order):
            v[k] = g + D * sum(E[j] for j in new_order[p + 1 :])
        return v

    # gamma = (T-1) / sum_{k<T} [Psi(u_k + v_k) - Psi(v_k)] with v depending on gamma: solved by iteration;
    # alpha = sum E / sum_d [Psi(n_d + alpha) - Psi(alpha)] likewise
    gamma_new, alpha_new = gamma, alpha
    for _ in range(500):
        gamma_new = gamma_fixed_point(new_order, u_new, v_of(gamma_new))
        alpha_new = E.sum() / (psi(N + alpha_new) - psi(alpha_new))
    v_new = v_of(gamma_new)
    assert gamma_new == pytest.approx(gamma_fixed_point(new_order, u_new, v_new), rel=1e-9)

    metrics = m.step()
    s2 = m.state()
    assert list(s2["order"]) == new_order
    np.testing.assert_allclose(s2["q"], q, rtol=1e-6)
    np.testing.assert_allclose(s2["n_dk"][0], n_dk, rtol=1e-6)
    np.testing.assert_allclose(s2["n_wk"].T, n_kw, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(s2["n_k"], n_k, rtol=1e-6)
    np.testing.assert_allclose(s2["u"], u_new, rtol=1e-6)
    np.testing.assert_allclose(s2["v"], v_new, rtol=1e-6)
    np.testing.assert_allclose(s2["pi"], stick_weights(new_order, u_new, v_new), rtol=1e-6)
    assert float(s2["gamma"]) == pytest.approx(gamma_new, rel=1e-6)
    assert float(s2["alpha"]) == pytest.approx(alpha_new, rel=1e-6)
    assert metrics["documents_seen"] == 1
    m.check_invariants()


@pytest.mark.parametrize("burn_in", [0, 1])
def test_scvb0_one_minibatch(burn_in):
    K, V, C, alpha, beta = 3, 4, 3, 0.1, 0.01
    m = build(LdaScvb0, one_doc(), K=K, minibatch=1, burn_in=burn_in)
    s = m.state()
    n_theta = s["n_theta"][0].copy()
    n_phi = s["scale"] * s["phi_wk"].T.copy()  # (K, V)
    n_z = s["scale"] * s["n_z"].copy()
    np.testing.assert_allclose(n_z, n_phi.sum(axis=1), rtol=1e-12)

    # gamma_ijk ∝ (N^Phi_wk + beta)(N^Theta_jk + alpha)/(N^Z_k + W beta); N^Phi, N^Z fixed in the minibatch
    hat = np.zeros((K, V))
    t = 0
    for p in range(burn_in + 1):
        for w in TOKENS:
            g = (n_phi[:, w] + beta) * (n_theta + alpha) / (n_z + V * beta)
            g /= g.sum()
            r = rho(1.0, 10.0, t)
            n_theta = (1 - r) * n_theta + r * C * g
            t += 1
            if p == burn_in:
                hat[:, w] += C / 3 * g  # C / |M|, |M| = 3 tokens
    r = rho(10.0, 1000.0, 0)
    n_phi = (1 - r) * n_phi + r * hat
    n_z = (1 - r) * n_z + r * hat.sum(axis=1)

    m.step()
    s2 = m.state()
    np.testing.assert_allclose(s2["n_theta"][0], n_theta, rtol=1e-10)
    np.testing.assert_allclose(s2["scale"] * s2["phi_wk"].T, n_phi, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(s2["scale"] * s2["n_z"], n_z, rtol=1e-10)


def test_svi_one_minibatch():
    K, V, D, alpha, beta, tau, kappa = 3, 4, 1, 0.1, 0.01, 2.0, 0.7
    counts = np.array([1.0, 0.0, 2.0, 0.0])
    words = [0, 2]
    m = build(LdaSvi, one_doc(), K=K, minibatch=1, local_iterations=2, local_tol=1e-12, cold_passes=0)
    s = m.state()
    lam = beta + s["scale"] * s["lam_wk"].T  # (K, V)
    g = s["gamma_dk"][0].copy()

    # phi_dwk ∝ exp{Psi(gamma_dk) - Psi(sum gamma_d) + Psi(lambda_kw) - Psi(sum_w lambda_kw)}
    # gamma_dk = alpha + sum_w n_dw phi_dwk; two local iterations
    eb = np.exp(psi(lam) - psi(lam.sum(axis=1, keepdims=True)))[:, words]
    n = counts[words]
    for _ in range(2):
        et = np.exp(psi(g) - psi(g.sum()))
        phi = et[:, None] * eb
        phi /= phi.sum(axis=0, keepdims=True)
        g = alpha + (phi * n).sum(axis=1)
    et = np.exp(psi(g) - psi(g.sum()))
    phi = et[:, None] * eb
    phi /= phi.sum(axis=0, keepdims=True)
    lam_hat = np.full((K, V), beta)
    lam_hat[:, words] += D / 1 * phi * n
    r = (tau + 0) ** -kappa
    lam_new = (1 - r) * lam + r * lam_hat

    metrics = m.step()
    s2 = m.state()
    np.testing.assert_allclose(s2["gamma_dk"][0], g, rtol=1e-5)
    np.testing.assert_allclose(beta + s2["scale"] * s2["lam_wk"].T, lam_new, rtol=1e-5)
    assert metrics["documents_seen"] == 1 and metrics["minibatches"] == 1
    phi_snap = m.snapshot().phi
    np.testing.assert_allclose(phi_snap, lam_new / lam_new.sum(axis=1, keepdims=True), rtol=1e-5)


# ----------------------------------------------------------------------------
# exact resume, invariants, options


@pytest.fixture(scope="module")
def small_lda():
    train, test, truth = synth.lda(topics=5, vocab_size=120, documents=150, test_documents=20, length=40, seed=4)
    return train


VARIANTS = [
    (LdaSvi, dict(K=5, minibatch=16, cold_passes=2)),
    (LdaScvb0, dict(K=5, minibatch=16)),
    (LdaScvb0, dict(K=5, minibatch=16, clumping=True, burn_in=0)),
    (HdpPcvb0, dict(K=8)),
    (HdpPcvb0, dict(K=8, clumping=True, init="random")),
    (HdpPcsvb0, dict(K=8)),
    (HdpPcsvb0, dict(K=8, clumping=True, burn_in=1)),
    (HdpPcsvb0, dict(K=8, minibatch=10, s_c=500.0)),  # rho^c near 1: the scale folds back often
    (HdpPcsvb0, dict(K=8, alpha_update="corpus")),
]


@pytest.mark.parametrize("cls,opts", VARIANTS, ids=lambda x: x.name if isinstance(x, type) else "")
def test_exact_resume(small_lda, cls, opts):
    whole = build(cls, small_lda, seed=7, **opts)
    rows = [whole.step() for _ in range(4)]
    half = build(cls, small_lda, seed=7, **opts)
    half.step()
    half.step()
    arrays = half.state()
    for a in arrays.values():
        assert np.asarray(a).dtype != object
    resumed = cls.from_state(small_lda, cls.resolve_options(opts), {k: v.copy() for k, v in arrays.items()})
    resumed.step()
    last = resumed.step()
    a, b = whole.state(), resumed.state()
    assert sorted(a) == sorted(b)
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    assert np.array_equal(whole.snapshot().phi, resumed.snapshot().phi)
    assert last == rows[-1]
    assert [r["documents_seen"] for r in rows] == [small_lda.D * i for i in range(1, 5)]
    json.dumps(rows)
    whole.check_invariants()
    snap = whole.snapshot()
    snap.check()
    assert np.isfinite(whole.log_likelihood())
    assert cls.eval_method == "vb"


@pytest.mark.parametrize("cls,opts", VARIANTS[::2], ids=lambda x: x.name if isinstance(x, type) else "")
def test_checkpoints_of_state_version_1_still_resume(small_lda, cls, opts):
    """Version 1 counted passes as "epoch" beside documents_seen; such a checkpoint resumes
    to the same model as today's state."""
    model = build(cls, small_lda, seed=3, **opts)
    model.step()
    now = model.state()
    old = {k: v.copy() for k, v in now.items() if k != "iteration"}
    old.update(version=np.int64(1), epoch=now["iteration"], documents_seen=np.int64(small_lda.D))
    a = cls.from_state(small_lda, cls.resolve_options(opts), now)
    b = cls.from_state(small_lda, cls.resolve_options(opts), old)
    a.step(), b.step()
    for k, v in a.state().items():
        assert np.array_equal(v, b.state()[k]), k


def test_pcsvb0_runs_begun_before_option_tables_resume_with_the_bound(small_lda):
    """A run recorded before option tables (options without it, as its run.json keeps them) goes on
    with the paper's bound it began with, to the bit, at every resume: from a checkpoint of state
    version 3 and from one its resumed run wrote (version 4). Options that name it are obeyed."""
    opts = HdpPcsvb0.resolve_options(dict(K=8, tables="bound"))
    model = HdpPcsvb0(small_lda, opts, 3)
    model.step()
    old_opts = {k: v for k, v in opts.items() if k != "tables"}
    resumed = HdpPcsvb0.from_state(small_lda, old_opts, dict(model.state(), version=np.int64(3)))
    assert resumed.opts["tables"] == "bound"
    model.step(), resumed.step()
    again = HdpPcsvb0.from_state(small_lda, old_opts, resumed.state())  # the second resume
    assert again.opts["tables"] == "bound" and not again._sample_tables
    model.step(), again.step()
    for k, v in model.state().items():
        assert np.array_equal(v, again.state()[k]), k
    today = HdpPcsvb0.from_state(small_lda, HdpPcsvb0.resolve_options(dict(K=8)), model.state())
    assert today.opts["tables"] == "auto" and today._sample_tables
    with pytest.raises(InputError, match="tables='all'"):
        build(HdpPcsvb0, small_lda, tables="all")
    # auto: the draws word by word, the bound with clumping; sample and bound as given
    for tables, clumping, drawn in [
        ("auto", False, True), ("auto", True, False), ("sample", True, True), ("bound", False, False),
    ]:  # fmt: skip
        assert build(HdpPcsvb0, small_lda, K=8, tables=tables, clumping=clumping)._sample_tables == drawn


@pytest.mark.parametrize("K", [1, 7, 8, 9, 16, 17, 200])
def test_pcsvb0_draw_is_the_first_topic_whose_running_sum_exceeds_u(K):
    """_draw (blocks of 8, then a scan) against cumsum; u near 1 with q summing a little under 1 (as
    q does after normalising by a product) falls on the last topic, never past it."""
    from topictool.models.variational.pcsvb0 import _draw

    rng = np.random.default_rng(K)
    for _ in range(200):
        q = rng.random(K) ** 3
        q *= 1.0 / q.sum()
        u = rng.random()
        running = np.cumsum(q)
        assert _draw(q, u) == (int(np.argmax(running > u)) if running[-1] > u else K - 1)
    q = np.full(K, 1.0 / K * (1 - 2.0**-52))
    assert _draw(q, 1 - 2.0**-53) == K - 1
    assert _draw(q, 0.0) == 0


def test_pcsvb0_passes_draw_afresh(small_lda):
    """The draws' key changes with the pass and the seed, so a document's counts are drawn anew."""
    a = build(HdpPcsvb0, small_lda, K=8)
    first = a._pass_key()
    a.step()
    assert a._pass_key() != first
    assert build(HdpPcsvb0, small_lda, seed=2, K=8)._pass_key() != first


def test_pcsvb0_tables_of_an_underflowed_topic():
    """A topic drawn where alpha pi_k has underflowed to 0 counts the limit of (T1), one table."""
    from topictool.models.variational.pcsvb0 import _expected_tables

    drawn = np.array([2, 3], dtype=np.int64)
    api = np.array([0.0, 0.5])
    assert _expected_tables(drawn, api) == pytest.approx(1.0 + 0.5 * (psi(3.5) - psi(0.5)), rel=1e-12)
    assert not drawn.any()


def test_pcsvb0_drawn_tables_are_unbiased():
    """(T1) from one draw of a document's counts is an unbiased estimate of the expected tables under
    q: over many streams its mean is the expectation over every assignment of the tokens (three
    words, the last one twice, as clumping draws it)."""
    from itertools import product

    from topictool.models.variational.pcsvb0 import _absent_and_draw, _document_stream, _draw_space, _expected_tables

    qs = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.5, 0.25, 0.25]])
    weights = [1, 1, 2]
    api = np.array([0.5, 2.0, 0.1])
    rows = [i for i, m in enumerate(weights) for _ in range(m)]  # the tokens' q rows

    def tables(c):
        return sum(api[k] * (psi(api[k] + c[k]) - psi(api[k])) for k in range(3) if c[k] > 0)

    mean = second = 0.0
    for z in product(range(3), repeat=len(rows)):
        p = np.prod([qs[r, k] for r, k in zip(rows, z)])
        t = tables(np.bincount(z, minlength=3))
        mean, second = mean + p * t, second + p * t * t
    sd = np.sqrt(second - mean * mean)
    gen, drawn = _draw_space(True, 3)
    prod, n, total = np.ones(3), 20000, 0.0
    for d in range(n):
        _document_stream(gen, np.uint64(12345), d)
        for q, m in zip(qs, weights):
            _absent_and_draw(prod, q, m, gen, drawn)
        assert drawn.sum() == len(rows)
        total += _expected_tables(drawn, api)
        assert not drawn.any()  # cleared for the next document
    assert abs(total / n - mean) < 4 * sd / np.sqrt(n)
    assert mean > sum(1 - np.prod([(1 - qs[r, k]) for r in rows]) for k in range(3))  # above the bound


@pytest.mark.parametrize("alpha_update", ["document", "corpus"])
def test_pcsvb0_checkpoints_of_state_version_2_still_resume(small_lda, alpha_update):
    """Version 2 had no E_bar: the document mode resumes to the same model as today's state; the
    corpus mode starts E_bar at the value the checkpoint's alpha implies, (S4) read backwards."""
    opts = dict(K=8, alpha_update=alpha_update)
    model = build(HdpPcsvb0, small_lda, seed=3, **opts)
    model.step()
    now = model.state()
    old = {k: v.copy() for k, v in now.items() if k != "E_bar"}
    old["version"] = np.int64(2)
    b = HdpPcsvb0.from_state(small_lda, HdpPcsvb0.resolve_options(opts), old)
    assert b.E_bar == 0.0
    a = HdpPcsvb0.from_state(small_lda, HdpPcsvb0.resolve_options(opts), now)
    if alpha_update == "document":
        a.step(), b.step()
        for k, v in a.state().items():
            if k != "E_bar":
                assert np.array_equal(v, b.state()[k]), k
    else:
        lengths = small_lda.doc_lengths()
        implied = model.alpha * np.sum(psi(lengths + model.alpha) - psi(model.alpha)) / len(lengths)
        b.E_bar = implied
        a = HdpPcsvb0.from_state(small_lda, HdpPcsvb0.resolve_options(opts), old)
        a.step(), b.step()
        assert a.E_bar == pytest.approx(b.E_bar, rel=1e-9) and a.alpha == pytest.approx(b.alpha, rel=1e-9)


def test_alpha_solve_over_the_length_histogram():
    """(S4) over a histogram of lengths: the same root as the fixed point over the documents,
    and its trigamma against scipy's."""
    x = np.concatenate([np.logspace(-4, 4, 200), [5.999, 6.0, 6.001]])
    np.testing.assert_allclose([sticks.trigamma(v) for v in x], polygamma(1, x), rtol=2e-11)
    doc_len = np.array([5, 17, 17, 300, 0, 41, 5, 1, 2000], dtype=np.int64)
    values, counts = sticks.length_histogram(doc_len)
    assert values.tolist() == [1, 5, 17, 41, 300, 2000] and counts.tolist() == [1, 2, 2, 1, 1, 1]
    for E_total in (8.5, 30.0, 700.0):  # between the 8 documents and the 2,381 tokens
        exact = brentq(lambda a, e=E_total: a * np.sum(counts * (psi(values + a) - psi(a))) - e, 1e-8, 1e8, xtol=1e-15)
        for start in (1e-3, 1.0, 1e3):
            got = sticks.alpha_solve_lengths(values, counts, E_total, start, 50, 1e-12)
            assert got == pytest.approx(exact, rel=1e-9)
        assert sticks.alpha_solve(doc_len, E_total, 1.0, 100000, 1e-14) == pytest.approx(exact, rel=1e-7)
    # below one topic per document there is no root: alpha goes to its floor
    assert sticks.alpha_solve_lengths(values, counts, 7.0, 1.0, 200, 1e-12) < 1e-3


def test_lazy_tables_stay_consistent(small_lda):
    """n_k = sum_w n_kw for the scaled tables after many decays (and fold-backs)."""
    svi = build(LdaSvi, small_lda, K=5, minibatch=8)
    scvb0 = build(LdaScvb0, small_lda, K=5, minibatch=8, s_phi=50.0, tau_phi=1.0)
    pcsvb0 = build(HdpPcsvb0, small_lda, K=6, s_c=200.0, tau_c=1.0)
    for _ in range(3):
        svi.step()
        scvb0.step()
        pcsvb0.step()
    np.testing.assert_allclose(svi.lam_k, svi.lam_wk.sum(axis=0), rtol=1e-9)
    np.testing.assert_allclose(scvb0.n_z, scvb0.phi_wk.sum(axis=0), rtol=1e-9)
    np.testing.assert_allclose(pcsvb0.nk, pcsvb0.nkw.sum(axis=0), rtol=1e-9)
    # both stochastic collapsed tables keep the corpus scale: sum_k n_k = N
    assert scvb0.scale * scvb0.n_z.sum() == pytest.approx(small_lda.N, rel=1e-9)
    assert pcsvb0.scale * pcsvb0.nk.sum() == pytest.approx(small_lda.N, rel=1e-9)


def test_decay_scaled_folds_the_scale_back():
    A = np.array([[1.0, 2.0], [3.0, 4.0]])
    B = A.sum(axis=0)
    s = kern.decay_scaled(A, B, 1.0, 0.5)
    assert s == 0.5 and A[0, 0] == 1.0
    s = kern.decay_scaled(A, B, 1e-99, 0.5)  # 5e-100 < 1e-100? no: 5e-100 >= 1e-100
    assert s == pytest.approx(5e-100)
    s = kern.decay_scaled(A, B, s, 0.9)  # underflows past the threshold: folded back
    assert s == 1.0
    np.testing.assert_allclose(A, np.array([[1.0, 2.0], [3.0, 4.0]]) * 5e-101, rtol=1e-12)
    np.testing.assert_allclose(B, A.sum(axis=0), rtol=1e-12)
    s = kern.decay_scaled(A, B, 1.0, 1.0)  # rho = 1 forgets everything
    assert s == 1.0 and not A.any() and not B.any()


def test_exp_digamma_accuracy():
    x = np.concatenate([np.logspace(-3, 6, 400), [0.01, 0.5, 1.0, 5.999, 6.0, 6.001]])
    ours = np.array([kern.exp_digamma(v) for v in x])
    np.testing.assert_allclose(ours, np.exp(psi(x)), rtol=1e-8, atol=1e-300)  # denormals aside


def test_step_size_schedule():
    assert kern.step_size(10.0, 1000.0, 0.9, 0) == pytest.approx(10.0 / 1000.0**0.9)
    assert kern.step_size(10.0, 1.0, 0.9, 0) == 1.0  # capped
    c = kern.keep_fraction(1.0, 10.0, 0.9, 3, 4)
    assert c == pytest.approx(np.prod([1 - 1 / (10.0 + t) ** 0.9 for t in range(3, 7)]))


@pytest.mark.parametrize(
    "cls,bad",
    [
        (LdaSvi, {"K": 0}),
        (LdaSvi, {"alpha": -1.0}),
        (LdaSvi, {"kappa": 1.5}),
        (LdaSvi, {"minibatch": 0}),
        (LdaScvb0, {"beta": 0.0}),
        (LdaScvb0, {"eta": 0.0}),  # the old name, through aliases
        (LdaScvb0, {"kappa": 0.4}),  # base.KAPPA: [0.5, 1] for every family
        (LdaSvi, {"local_iterations": 0}),
        (LdaScvb0, {"burn_in": -1}),
        (HdpPcvb0, {"init": "kmeans"}),
        (HdpPcsvb0, {"beta": 0.0}),
        (HdpPcsvb0, {"minibatch": -2}),
        (HdpPcsvb0, {"tau_c": -1.0}),
        (HdpPcsvb0, {"alpha_update": "minibatch"}),
        (HdpPcsvb0, {"no_such_option": 1}),
    ],
)
def test_bad_options(small_lda, cls, bad):
    with pytest.raises(InputError):
        build(cls, small_lda, **bad)


@pytest.mark.parametrize(
    "cls,old,new",
    [
        (LdaSvi, {"eta": 0.02, "tau0": 3.0, "max_local_iters": 7}, {"beta": 0.02, "tau": 3.0, "local_iterations": 7}),
        (LdaScvb0, {"eta": 0.02}, {"beta": 0.02}),
        (HdpPcvb0, {"optimize_hyper": False}, {"optimize_alpha": False, "optimize_gamma": False}),
        (HdpPcsvb0, {"optimize_hyper": False}, {"optimize_alpha": False, "optimize_gamma": False}),
    ],
)
def test_old_option_names(cls, old, new):
    """Options renamed to the shared vocabulary still resolve (old configs, old runs)."""
    resolved = cls.resolve_options(old)
    assert {k: resolved[k] for k in new} == new and not set(old) & set(resolved)


@pytest.mark.parametrize("cls", [LdaSvi, LdaScvb0, HdpPcvb0, HdpPcsvb0])
def test_protocol(small_lda, cls):
    """Declared step unit, threads taken (tests/test_variational_threads.py), doc_topics (D, K),
    iteration counted by base."""
    assert cls.step_unit == ("sweep" if cls is HdpPcvb0 else "pass")
    assert cls.supports_threads and cls.check_threads(2) == 2
    m = build(cls, small_lda, K=4)
    metrics = m.step()
    assert m.iteration == 1 and "tokens" not in metrics  # a pass visits every token
    n_dk = m.doc_topics()
    assert n_dk.shape == (small_lda.D, 4) and np.all(n_dk >= 0)
    np.testing.assert_allclose(n_dk.sum(axis=1), small_lda.doc_lengths(), rtol=1e-3, atol=1e-6)


def test_from_state_rejects_other_corpus(small_lda):
    m = build(HdpPcsvb0, small_lda, K=4)
    other = small_lda.subset(np.arange(10))
    with pytest.raises(InputError, match="shape"):
        HdpPcsvb0.from_state(other, HdpPcsvb0.resolve_options({"K": 4}), m.state())


# ----------------------------------------------------------------------------
# recovery of planted structure


def hellinger(P, Q):
    return np.sqrt(0.5 * ((np.sqrt(P)[:, None, :] - np.sqrt(Q)[None, :, :]) ** 2).sum(axis=-1))


@pytest.fixture(scope="module")
def planted_lda():
    return synth.lda(topics=10, vocab_size=500, documents=1000, test_documents=50, length=100, seed=3)


@pytest.mark.parametrize(
    "cls,opts,steps",
    [
        (LdaSvi, dict(K=10, minibatch=50), 30),
        (LdaScvb0, dict(K=10, minibatch=20, tau_phi=100.0), 10),
        (HdpPcvb0, dict(K=20), 20),
        (HdpPcsvb0, dict(K=20), 15),
    ],
    ids=["lda-svi", "lda-scvb0", "hdp-pcvb0", "hdp-pcsvb0"],
)
def test_recovers_planted_topics(planted_lda, cls, opts, steps):
    train, _, truth = planted_lda
    m = build(cls, train, seed=3, **opts)
    for _ in range(steps):
        m.step()
    best = hellinger(truth["phi"], m.snapshot().phi).min(axis=1)
    assert best.mean() < 0.25, best


@pytest.fixture(scope="module")
def planted_hdp():
    return synth.hdp(truncation=50, seed=3)


# PCSVB0: the paper's n_kw step size (s_c = 10) gives n_kw a memory of under half an epoch on this
# 100k-token corpus (rho^c N ~ 2 counts per token after 20 passes), and the noise splits large
# topics (18-26 topics above 1% over data seeds 1-3); s_c = 2 with clumping is within +-3 (see
# docs/models/variational.md).
@pytest.mark.parametrize(
    "cls,opts,steps",
    [
        (HdpPcvb0, dict(K=50), 30),
        (HdpPcsvb0, dict(K=50, s_c=2.0, clumping=True), 20),
    ],
    ids=["hdp-pcvb0", "hdp-pcsvb0"],
)
def test_number_of_topics(planted_hdp, cls, opts, steps):
    train, _, truth = planted_hdp
    m = build(cls, train, seed=1, **opts)
    for _ in range(steps):
        metrics = m.step()
    found = int((m.snapshot().topic_weight > 0.01).sum())
    assert abs(found - int(truth["topics_above_1pct"])) <= 3, (found, int(truth["topics_above_1pct"]))
    assert metrics["topics_above_1pct"] == found


# ----------------------------------------------------------------------------
# the training loop end to end


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_train_cli_with_evaluation_and_resume(tmp_path, name):
    corpus = tmp_path / "c"
    r = run(
        "synth",
        "lda",
        "-o",
        corpus,
        "-K",
        "4",
        "-V",
        "80",
        "--documents",
        "60",
        "--length",
        "30",
        "--test-documents",
        "10",
    )
    assert r.exit_code == 0, r.stderr
    out = tmp_path / "run"
    option = "clumping=true" if name == "hdp-pcvb0" else "minibatch=16"
    r = run(
        "train",
        corpus,
        "-m",
        name,
        "-K",
        "6",
        "-n",
        "2",
        "--test",
        corpus,
        "--eval-every",
        "1",
        "--log-every",
        "1",
        "--checkpoint-every",
        "1",
        "--debug-checks",
        "-o",
        out,
        "--set",
        option,
    )
    assert r.exit_code == 0, r.stderr
    rows = store.read_jsonl(out / "metrics.jsonl")
    assert [row["documents_seen"] for row in rows] == [60, 120]
    assert all(np.isfinite(row["test_perplexity"]) for row in rows)
    assert all(np.isfinite(row["log_likelihood"]) for row in rows)
    r = run("train", "--resume", out, "-n", "1")
    assert r.exit_code == 0, r.stderr
    assert store.read_jsonl(out / "metrics.jsonl")[-1]["documents_seen"] == 180


def test_comparison_config_runs_are_self_contained(tmp_path):
    """Every [[runs]] table of configs/pcsvb0-comparison.toml is a valid `train --config` file."""
    import tomllib
    from pathlib import Path

    from topictool.training import load_config

    path = Path(__file__).resolve().parent.parent / "configs" / "pcsvb0-comparison.toml"
    cfg = tomllib.loads(path.read_text())
    assert cfg["experiment"]["holdout"] == "fraction:0.3" and cfg["experiment"]["iterations"] == 30
    assert [r["model"] for r in cfg["runs"]] == ["hdp-pcsvb0", "lda-scvb0", "hdp-pcvb0"]
    for r in cfg["runs"]:
        lines = [f"{k} = {json.dumps(v)}" for k, v in r.items() if k not in ("label", "options")]
        lines += ["[options]"] + [f"{k} = {json.dumps(v)}" for k, v in r["options"].items()]
        one = tmp_path / f"{r['label']}.toml"
        one.write_text("\n".join(lines) + "\n")
        top, options = load_config(one)
        assert top["K"] == 200 and top["iterations"] == 30
        cls = registry.get(top["model"])
        resolved = cls.resolve_options(dict(options, K=top["K"]))
        assert resolved["beta"] == 0.01


def test_order_by_size_is_a_stable_sort_by_decreasing_size():
    """The sticks' order: topics by decreasing size, ties in their current order (what a stable
    argsort of -size gives), from any starting order."""
    rng = np.random.default_rng(1)
    for trial in range(300):
        K = int(rng.integers(1, 30))
        size = rng.integers(0, 4, K).astype(float) if trial % 2 else rng.random(K)
        order = rng.permutation(K)
        want = order[np.argsort(-size[order], kind="stable")]
        sticks.order_by_size(size, order)
        assert np.array_equal(order, want)


def test_keep_table_gives_keep_fraction_to_the_bit():
    """The document steps' factors come from a table made once (kernels.keep_table) instead of a
    power a token: the same products as keep_fraction, bit for bit, for runs of one and of m steps
    (clumping), at the defaults of SCVB0 and PCSVB0 and at an extreme step size."""
    for s, tau, kappa in ((1.0, 10.0, 0.9), (1.0, 10.0, 0.5), (30.0, 1.0, 0.5)):
        table = kern.keep_table(s, tau, kappa, 400)
        for t in (0, 1, 7, 100, 391):
            for m in (1, 2, 9):
                assert kern.keep_fraction_table(table, t, m) == kern.keep_fraction(s, tau, kappa, t, m)
