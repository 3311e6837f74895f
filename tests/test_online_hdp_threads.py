"""Threads of the direct-assignment variational HDP (hdp-online, hdp-online-sm, hdp-batch):
the local step by blocks of documents, per-thread statistics summed in thread order."""

import numpy as np
import pytest

from topictool.evaluate.completion import document_completion
from topictool.models.online_hdp import model as oh
from topictool.models.online_hdp.split_merge import Minibatch
from topictool.synth import bars

from .conftest import run

MODELS = {"hdp-online": oh.OnlineHdp, "hdp-online-sm": oh.OnlineHdpSplitMerge, "hdp-batch": oh.BatchHdp}
OPTS = {
    "hdp-online": dict(K=10, minibatch=50),
    "hdp-online-sm": dict(K=3, minibatch=50),
    "hdp-batch": dict(K=10, hyper_burn_in=1),  # alpha and the prior learned from step 2
}


@pytest.fixture(scope="module")
def small_bars():
    return bars(documents=400, test_documents=40, length=100, alpha=0.3, side=5, seed=3)


def make(name, corpus, threads, seed=1, **extra):
    cls = MODELS[name]
    return cls(corpus, cls.resolve_options({**OPTS[name], **extra}), seed, threads=threads)


def trained(name, corpus, threads, steps, seed=1):
    m = make(name, corpus, threads, seed)
    for _ in range(steps):
        m.step()
        m.check_invariants()
    return m


def same_state(a, b):
    sa, sb = a.state(), b.state()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert np.array_equal(sa[k], sb[k]), k


def test_local_step_threads_match_one_thread(small_bars):
    """Documents are independent given the globals: theta, varphi and each document's bound
    are the same bits on 1, 2 or 3 threads. The statistics are too when varphi is kept (summed
    word by word in document order); without it each thread's block is summed on its own."""
    train = small_bars[0]
    ref = make("hdp-online", train, 1)
    mb = Minibatch.of(train, np.arange(0, 400, 3))
    K = ref.K
    out = {}
    for T in (1, 2, 3, 7):
        m = make("hdp-online", train, T)
        assert np.array_equal(m.lam, ref.lam)
        for keep in (True, False):
            theta = np.empty((mb.S, K + 1))
            sstats, phi, doc_elbo, iters = m._local_step(mb, theta, True, keep_phi=keep)
            out[T, keep] = (theta, phi, doc_elbo, iters, sstats)
    for T in (2, 3, 7):
        for keep in (True, False):
            for a, b in zip(out[1, keep][:4], out[T, keep][:4]):
                assert np.array_equal(a, b)
        assert np.array_equal(out[T, True][4], out[1, True][4])
        assert np.allclose(out[T, False][4], out[1, True][4], rtol=1e-12, atol=1e-12)
        assert not np.array_equal(out[T, True][4], np.zeros_like(out[T, True][4]))
    # the topic terms and lambda's update are computed by topics: the same bits
    m1, m2 = make("hdp-online", train, 1), make("hdp-online", train, 2)
    e1, e2 = np.empty(K), np.empty(K)
    assert np.array_equal(m1._topic_terms(elog_sum=e1), m2._topic_terms_beside(lambda: None, e2))
    assert np.array_equal(e1, e2)
    sstats = out[1, True][4]
    assert np.array_equal(
        m1._online_lambda(0.01, 0.7, 0.02, mb.words, 3.0, sstats),
        m2._online_lambda(0.01, 0.7, 0.02, mb.words, 3.0, sstats),
    )
    hist = np.abs(m1.lam - 0.01)
    assert np.array_equal(m1._combine(0.02, hist, mb.words, sstats), m2._combine(0.02, hist, mb.words, sstats))


@pytest.mark.parametrize("name", list(MODELS))
def test_same_seed_and_threads_same_model(small_bars, name):
    train = small_bars[0]
    steps = 3 if name == "hdp-batch" else 8
    for T in (2, 3):
        a = trained(name, train, T, steps)
        b = trained(name, train, T, steps)
        same_state(a, b)
    # the thread count changes only the order of the statistics' sums; hdp-online-sm's lambda
    # comes from the moves' local steps, whose sums are in document order: the same bits
    c = trained(name, train, 1, steps)
    if name == "hdp-online-sm":
        same_state(a, c)
    assert a.K == c.K
    if name == "hdp-online":
        assert np.allclose(a.lam, c.lam, rtol=1e-8)


@pytest.mark.parametrize("name", list(MODELS))
def test_resume_with_threads(small_bars, name):
    train = small_bars[0]
    cls = MODELS[name]
    n, k = (4, 2) if name == "hdp-batch" else (10, 4)
    whole = trained(name, train, 2, n)
    half = trained(name, train, 2, k)
    resumed = cls.from_state(train, cls.resolve_options(OPTS[name]), half.state(), threads=2)
    for _ in range(n - k):
        resumed.step()
    same_state(whole, resumed)


@pytest.mark.parametrize("name", list(MODELS))
def test_threads_keep_quality(small_bars, name):
    """Held-out perplexity with 2 threads within 1% of one thread's."""
    train, test, _ = small_bars
    steps = 10 if name == "hdp-batch" else 40
    ppl = {}
    for T in (1, 2):
        m = trained(name, train, T, steps)
        ppl[T] = document_completion(m.snapshot(), test, holdout="every:5", method="vb")["perplexity"]
    assert abs(ppl[2] / ppl[1] - 1) < 0.01, ppl


def test_cli_threads(tmp_path):
    corpus = tmp_path / "bars"
    r = run("synth", "bars", "-o", corpus, "--documents", "200", "--length", "50", "--side", "5", "--seed", "3")
    assert r.exit_code == 0, r.stderr
    for out in ("a", "b"):
        r = run("train", corpus, "-m", "hdp-online", "-K", "5", "-n", "6", "--threads", "2", "-o", tmp_path / out)
        assert r.exit_code == 0, r.stderr
    with np.load(tmp_path / "a" / "model.npz") as a, np.load(tmp_path / "b" / "model.npz") as b:
        assert np.array_equal(a["phi"], b["phi"])


def test_moves_on_threads_match_one_thread(small_bars):
    """The moves' per-topic caches (by topics and columns) and a split's restricted local step
    (by documents) give the same bits on any number of threads: the same moves are accepted."""
    import copy

    from topictool.models.online_hdp import split_merge as sm
    from topictool.threads import Workers

    model = make("hdp-online-sm", small_bars[0], 1, minibatch=60)
    captured = []
    original = oh.run_moves
    oh.run_moves = lambda state, *a, **kw: (captured.append(copy.deepcopy(state)), original(state, *a, **kw))[1]
    try:
        for _ in range(3):
            model.step()
    finally:
        oh.run_moves = original
    results = []
    for T in (1, 2, 3):
        state = copy.deepcopy(captured[-1])
        state.workers = Workers(T)
        state._refresh()
        log = []
        counts = sm.run_moves(state, iter(np.linspace(0.05, 0.95, 200)).__next__, 3, 6, 10, -1.0, 100, log=log)
        results.append((state, counts, log))
        state.workers.close()
    (ref, counts, log) = results[0]
    assert counts["splits_accepted"] + counts["merges_accepted"] >= 1
    # on threads the later splits of a batch are worked out before the earlier ones are judged:
    # make sure an accepted split (which changes the state under them) is followed by another
    # (here the second and third are accepted: the third and fourth share a batch on 2 threads)
    splits = [delta > 0.0 for kind, _, delta in log if kind == "split"]
    assert any(splits[:-1])
    for state, c, lg in results[1:]:
        assert c == counts and lg == log and state.K == ref.K
        for name, x in ref.arrays().items():
            assert np.array_equal(x, state.arrays()[name]), name
        assert np.array_equal(ref.T, state.T) and np.array_equal(ref.col, state.col)
    # the per-topic caches the moves keep are what the state gives afresh (the column terms
    # within rounding: their psi(sum_k theta_jk) is the state's at the start of the moves)
    fresh = copy.deepcopy(ref)
    fresh._refresh()
    for name in ("used", "T", "elog"):
        assert np.array_equal(getattr(ref, name), getattr(fresh, name)), name
    assert np.allclose(ref.col, fresh.col, rtol=1e-12, atol=0.0)


def test_beta_objective_matches_scipy_on_any_thread_count():
    """(G3)'s document sums are numba's (libm's lgamma, the kernels' digamma), on one thread or
    on T threads by blocks of documents: the same values as the formula with scipy's functions."""
    from scipy.special import digamma, gammaln

    from topictool.threads import Workers

    rng = np.random.default_rng(1)
    S, K = 37, 6
    n = rng.gamma(0.5, 4.0, (S, K))
    beta = rng.dirichlet(np.ones(K + 1))
    weight, alpha, gamma = 2.5, 3.0, 1.5
    ab = alpha * beta[:K]
    f_ref = K * np.log(gamma) + (gamma - 1.0) * np.log(beta[K])
    f_ref += weight * (gammaln(ab + n).sum() - S * gammaln(ab).sum())
    g_ref = np.zeros(K + 1)
    g_ref[K] = (gamma - 1.0) / beta[K]
    g_ref[:K] = weight * alpha * (digamma(ab + n).sum(axis=0) - S * digamma(ab))
    for workers in (None, Workers(2), Workers(3)):
        f, g = oh.beta_objective(beta, n, weight, alpha, gamma, workers)
        assert f == pytest.approx(f_ref, rel=1e-12) and np.allclose(g, g_ref, rtol=1e-12)


def test_alpha_update_is_the_maximiser_on_any_thread_count():
    """(H1) jointly with theta, its document sums in numba on one thread or T threads: the
    result is where the objective written with scipy's functions has zero slope and is a
    maximum, and it hardly depends on T (only the order of the blocks' sums does)."""
    from scipy.special import gammaln, polygamma

    from topictool.models.online_hdp import kernels as kern
    from topictool.threads import Workers

    x = np.array([1e-9, 0.003, 0.5, 1.0, 5.9, 6.0, 17.3, 1e4])
    assert np.allclose([kern._trigamma(v) for v in x], polygamma(1, x), rtol=1e-10)
    rng = np.random.default_rng(2)
    n = rng.gamma(0.3, 10.0, (41, 5))
    beta = rng.dirichlet(np.ones(6))
    b, lengths, weight = beta[:5], n.sum(axis=1), 3.0

    def f(a):
        return weight * (len(n) * gammaln(a) - gammaln(a + lengths).sum() + (gammaln(a * b + n) - gammaln(a * b)).sum())

    ref = oh.newton_alpha_collapsed(0.7, beta, n, lengths, weight)
    h = 1e-5 * ref
    assert abs(f(ref + h) - f(ref - h)) / (2 * h) < 1e-6 * abs(f(ref))
    assert f(ref) >= max(f(0.9 * ref), f(1.1 * ref))
    for T in (2, 3):
        assert oh.newton_alpha_collapsed(0.7, beta, n, lengths, weight, Workers(T)) == pytest.approx(ref, rel=1e-8)


def test_split_word_sums_and_expected_logs():
    """A split's per-word sums are added in entry order; its E[log phi] (numba's digamma) agrees
    with scipy's."""
    from scipy.special import digamma

    from topictool.models.online_hdp import kernels as kern

    rng = np.random.default_rng(3)
    S, W = 23, 40
    docs = [rng.choice(W, size=rng.integers(1, 12), replace=False) for _ in range(S)]
    ptr = np.concatenate([[0], np.cumsum([len(d) for d in docs])])
    wid_global = np.concatenate([np.sort(d) for d in docs])
    words, wid = np.unique(wid_global, return_inverse=True)
    mb = Minibatch(np.arange(S), ptr, wid, rng.integers(1, 5, len(wid)).astype(np.float64), words)
    weights = rng.random(len(wid))
    ref = np.zeros(len(words))
    for t in range(len(wid)):
        ref[wid[t]] += mb.cnt[t] * weights[t]
    assert np.array_equal(mb.word_sums(weights), ref)
    hist_a = rng.gamma(0.5, 3.0, W)
    mb_a, mb_b = rng.gamma(0.5, 2.0, len(words)), rng.gamma(0.5, 2.0, len(words))
    total_a, total_b = hist_a.sum() + 0.5 * W + mb_a.sum(), 0.5 * W + mb_b.sum()
    elog_a, elog_b = np.empty(len(words)), np.empty(len(words))
    kern.split_expected_logs(0.5, words, hist_a, mb_a, total_a, mb_b, total_b, elog_a, elog_b, 0, len(words))
    assert np.allclose(elog_a, digamma(0.5 + hist_a[words] + mb_a) - digamma(total_a), rtol=1e-12, atol=1e-12)
    assert np.allclose(elog_b, digamma(0.5 + mb_b) - digamma(total_b), rtol=1e-12, atol=1e-12)
