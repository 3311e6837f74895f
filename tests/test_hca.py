"""The hca samplers: hdp-gibbs, nplda-gibbs, the burstiness front end, burst-aware completion."""

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from topictool.errors import InputError
from topictool.evaluate.completion import document_completion
from topictool.kernels import stirling
from topictool.kernels.rng import make_streams
from topictool.kernels.slice import slice_sample
from topictool.models.hca import pyp
from topictool.models.hca.burst import burst_weights
from topictool.models.hca.hdp import HdpGibbs
from topictool.models.hca.nplda import NpldaGibbs
from topictool.snapshot import Snapshot
from topictool.synth import hdp as synth_hdp

from .conftest import make_corpus, straight_and_resumed

FIXED = {"sample_hyper_every": 0, "sample_discount_every": 0}


# ----------------------------------------------------------------------------
# exact arithmetic helpers


def exact_stirling(a, n_max):
    S = [[Fraction(0)] * (n_max + 2) for _ in range(n_max + 2)]
    S[0][0] = Fraction(1)
    for n in range(n_max + 1):
        for t in range(1, n + 2):
            S[n + 1][t] = S[n][t - 1] + (n - t * a) * S[n][t]
    return S


def poch(b, a, T):
    out = Fraction(1)
    for i in range(T):
        out *= b + i * a
    return out


def node_factor(n, t, a, b, S, indicators=False):
    """pyp.py's eq. 3' exactly: (b|a)_T Gamma(b)/Gamma(b+N) prod S^n_t; with ``indicators`` the
    paper's eq. 3, each term divided by C(n, t) (the burst nodes, whose indicators are stored)."""
    out = poch(b, a, sum(t)) / poch(b, Fraction(1), sum(n))
    for nk, tk in zip(n, t):
        out *= S[nk][tk] / (math.comb(nk, tk) if indicators else 1)
    return out


def gem_factor(counts, a0, b0):
    """The GEM root's factor (b0|a0)_{K+} / (b0)_T prod (1 - a0)_{T_k - 1}."""
    used = [c for c in counts if c > 0]
    out = poch(b0, a0, len(used)) / poch(b0, Fraction(1), sum(counts))
    for c in used:
        out *= poch(1 - a0, Fraction(1), c - 1)
    return out


# ----------------------------------------------------------------------------
# 3. one customer's seat (pyp.py): against the seatings themselves, enumerated


def set_partitions(n):
    if n == 0:
        yield []
        return
    for p in set_partitions(n - 1):
        for i in range(len(p)):
            yield p[:i] + [p[i] + [n - 1]] + p[i + 1 :]
        yield p + [[n - 1]]


def seating_weight(blocks, a):
    """A seating's own weight at a node: prod over its tables of (1 - a)_{size - 1}."""
    out = Fraction(1)
    for block in blocks:
        out *= poch(1 - a, Fraction(1), len(block) - 1)
    return out


@pytest.mark.parametrize("a", [Fraction(0), Fraction(3, 10), Fraction(7, 10)])
def test_a_leaving_customer_sat_alone_as_often_as_the_seatings_say(a):
    """P(alone | n, t) = S^{n-1}_{t-1} / S^n_t: the weight of the seatings of n customers at t
    tables in which customer 0 sits alone, over all of them; the Stirling numbers' own sums too."""
    R = stirling.StirlingTable(float(a), 12, t_cap=12).R
    for n in range(1, 8):
        for t in range(1, n + 1):
            seatings = [p for p in set_partitions(n) if len(p) == t]
            total = sum(seating_weight(p, a) for p in seatings)
            assert total == exact_stirling(a, 8)[n][t]
            alone = sum(seating_weight(p, a) for p in seatings if [0] in p)
            assert pyp.alone(R, float(a), n, t) == pytest.approx(float(alone / total), rel=1e-12, abs=1e-15), (n, t)


@pytest.mark.parametrize("a", [Fraction(0), Fraction(3, 10), Fraction(7, 10)])
def test_an_entering_customer_joins_or_opens_as_the_seatings_say(a):
    """Document node with explicit seatings of its topics under a GEM root: for every seating with
    the given counts, the joint factor (the node's (b|a)_T / (b)_N prod_tables (1 - a)_{size-1}
    times the root's) after one more customer over before, summed over the tables it may join,
    is the sampler's weight: join_weight / (b + N), and (b + a T) / (b + N) p_root for a new table."""
    b, a0, b0 = Fraction(3, 2), Fraction(1, 5), Fraction(7, 10)
    sizes = [[2, 1], [1], [], [5], []]  # table sizes of each topic's tables
    root = [4, 2, 1, 3, 0]  # root counts (tables from all documents); topic 4 unused
    n, t = [sum(x) for x in sizes], [len(x) for x in sizes]
    K, N, T = len(n), sum(n), sum(t)
    used = sum(c > 0 for c in root)
    first_empty = next(k for k in range(K) if root[k] == 0)

    def joint(sz, rt):
        out = poch(b, a, sum(len(x) for x in sz)) / poch(b, Fraction(1), sum(map(sum, sz)))
        for tables in sz:
            for size in tables:
                out *= poch(1 - a, Fraction(1), size - 1)
        return out * gem_factor(rt, a0, b0)

    before = joint(sizes, root)
    for k in range(K):
        join = sum(
            joint([x if j != k else x[:i] + [x[i] + 1] + x[i + 1 :] for j, x in enumerate(sizes)], root)
            for i in range(len(sizes[k]))
        )
        join = float(join / before)
        got_join = pyp.join_weight(float(a), n[k], t[k]) / (float(b) + N)
        assert got_join == pytest.approx(join, rel=1e-12, abs=1e-15), k
        if root[k] == 0 and k != first_empty:
            continue  # a new topic always takes the first empty index (hca's convention)
        grown = [x + [1] if j == k else x for j, x in enumerate(sizes)]
        r2 = [c + (j == k) for j, c in enumerate(root)]
        opened = float(joint(grown, r2) / before)
        p_root = pyp.root_numerator(root[k], k == first_empty, float(a0), float(b0), used) * pyp.root_norm(
            sum(root), float(b0)
        )
        assert (float(b) + float(a) * T) / (float(b) + N) * p_root == pytest.approx(opened, rel=1e-12), k


def test_word_root_probability_is_ratio_of_gem_factors():
    a0, b0, W = Fraction(3, 10), Fraction(2), 6
    counts = [3, 0, 1, 0, 2, 0]

    def factor(c):  # GEM with uniformly random word labels: times (W - K+)! / W!
        used = sum(x > 0 for x in c)
        return gem_factor(c, a0, b0) * Fraction(math.factorial(W - used), math.factorial(W))

    used = sum(x > 0 for x in counts)
    for w in range(W):
        c2 = list(counts)
        c2[w] += 1
        want = float(factor(c2) / factor(counts))
        got = pyp.word_root_probability(counts[w], sum(counts), used, W, float(a0), float(b0))
        assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("a", [Fraction(0), Fraction(1, 2)])
def test_burst_factor_matches_eq6(a):
    """psi_dk node of one document and topic: word counts n_w at s_w tables, S tables of N tokens."""
    b = Fraction(4, 3)
    n = [4, 2, 1, 0]
    s = [2, 1, 1, 0]
    S_ = exact_stirling(a, 10)
    af = float(a)
    R = stirling.StirlingTable(af, 10, t_cap=10).R
    before = node_factor(n, s, a, b, S_, indicators=True)
    for w in range(len(n)):
        for r in (0, 1):
            n2, s2 = list(n), list(s)
            n2[w] += 1
            s2[w] += r
            if s2[w] == 0:
                continue
            ratio = float(node_factor(n2, s2, a, b, S_, indicators=True) / before)  # r = 1: times p_k(w)
            coef, zero = burst_weights(R, af, float(b), n[w], s[w], sum(s), sum(n))
            assert (coef if r else zero) == pytest.approx(ratio, rel=1e-12)
        if n[w] == 0:  # eq. 7: r = 1 only, weight (b + a S) / (b + N)
            coef, zero = burst_weights(R, af, float(b), 0, 0, sum(s), sum(n))
            assert zero == 0.0
            assert coef == pytest.approx((float(b) + af * sum(s)) / (float(b) + sum(n)), rel=1e-14)


def test_node_log_factor_matches_exact():
    a, b = Fraction(2, 5), Fraction(3)
    n = np.array([6, 0, 2, 9])
    t = np.array([3, 0, 1, 4])
    S = exact_stirling(a, 12)
    R = stirling.StirlingTable(float(a), 12, t_cap=12).R
    want = math.log(node_factor(list(n), list(t), a, b, S))
    assert pyp.node_log_factor(n, t, float(a), float(b), R) == pytest.approx(want, rel=1e-12)
    root = np.array([5, 0, 2, 1])
    assert pyp.root_log_factor(root, 0.3, 1.7) == pytest.approx(
        math.log(gem_factor(list(root), Fraction(3, 10), Fraction(17, 10))), rel=1e-12
    )


# ----------------------------------------------------------------------------
# the whole sweep samples the exact posterior (tiny corpus, every state enumerated)


def tiny_corpus():
    return make_corpus([{0: 2, 1: 1}, {1: 1, 2: 1}], ["a", "b", "c"])


def canonical(model):
    """The state up to relabelling of topics."""
    z, r, t_dk, t_kw = model.z, model.r, model.t_dk, model.t_kw
    blocks = []
    for k in range(model.K):
        toks = tuple(np.flatnonzero(z == k))
        if toks:
            blocks.append(
                (
                    toks,
                    tuple(t_dk[:, k]),
                    tuple(t_kw[:, k]) if model.pyp_words else (),
                    tuple(r[list(toks)]) if model.burst else (),
                )
            )
    return tuple(sorted(blocks))


def exact_posterior(cls, corpus, opts):
    """Every state (z up to relabelling, table counts, burst indicators) with its posterior
    probability, exp(log_likelihood)."""
    base = cls(corpus, opts, 1)
    N, K = base.N, base.K
    doc = np.repeat(np.arange(base.D), np.diff(base.token_ptr))
    word = np.repeat(base.word_ids, base.counts)
    multi = np.repeat(base.counts >= 2, base.counts)
    out = {}
    for part in set_partitions(N):
        z = np.zeros(N, dtype=base.z.dtype)
        for k, block in enumerate(part):
            z[block] = k
        for r in itertools.product(*[(0, 1) if base.burst and multi[i] else (1,) for i in range(N)]):
            r = np.array(r, dtype=np.uint8)
            groups = {}
            for i in range(N):
                groups.setdefault((doc[i], word[i], z[i]), []).append(r[i])
            if any(max(v) == 0 for v in groups.values()):
                continue
            n_dk = np.zeros((base.D, K), int)
            n_kw = np.zeros((base.W, K), int)
            for i in range(N):
                n_dk[doc[i], z[i]] += 1
                if r[i]:
                    n_kw[word[i], z[i]] += 1
            cells_d = list(zip(*np.nonzero(n_dk)))
            cells_w = list(zip(*np.nonzero(n_kw))) if base.pyp_words else []
            for td in itertools.product(*[range(1, n_dk[c] + 1) for c in cells_d]):
                for tw in itertools.product(*[range(1, n_kw[c] + 1) for c in cells_w]):
                    arrays = base.state()
                    arrays["z"] = z
                    arrays["t_dk"] = np.zeros((base.D, K), np.int32)
                    for c, v in zip(cells_d, td):
                        arrays["t_dk"][c] = v
                    if base.pyp_words:
                        arrays["t_kw"] = np.zeros((base.W, K), np.int32)
                        for c, v in zip(cells_w, tw):
                            arrays["t_kw"][c] = v
                    if base.burst:
                        arrays["r"] = r
                    m = cls.from_state(corpus, opts, arrays)
                    ll = m.log_likelihood()
                    key = canonical(m)
                    assert key not in out
                    out[key] = ll
    keys = list(out)
    v = np.array([out[k] for k in keys])
    p = np.exp(v - v.max())
    return dict(zip(keys, p / p.sum()))


HDP_TINY = {"K": 5, "b_theta": 1.5, "b_alpha": 0.7, "beta": 0.5, **FIXED}
NP_TINY = {
    "K": 5,
    "a_theta": 0.3,
    "b_theta": 1.5,
    "a_alpha": 0.2,
    "b_alpha": 0.7,
    "a_phi": 0.4,
    "b_phi": 0.9,
    "a_beta": 0.3,
    "b_beta": 2.0,
    **FIXED,
}
BURST_TINY = {"burst": True, "burst_discount": 0.3, "burst_concentration": 0.8}


@pytest.mark.parametrize(
    "cls,opts",
    [
        (HdpGibbs, HDP_TINY),
        (HdpGibbs, {**HDP_TINY, **BURST_TINY}),
        (NpldaGibbs, NP_TINY),
        (NpldaGibbs, {**NP_TINY, **BURST_TINY}),
    ],
    ids=["hdp", "hdp-burst", "nplda", "nplda-burst"],
)
def test_sweep_samples_the_exact_posterior(cls, opts):
    corpus = tiny_corpus()
    exact = exact_posterior(cls, corpus, opts)
    model = cls(corpus, opts, 7)
    sweeps = 30_000
    freq = {}
    for _ in range(sweeps):
        model._run_sweep()
        key = canonical(model)
        freq[key] = freq.get(key, 0) + 1
    model.check_invariants()
    assert set(freq) <= set(exact), "the sampler visited a state of zero posterior probability"
    tv = 0.5 * sum(abs(freq.get(k, 0) / sweeps - p) for k, p in exact.items())
    # Monte Carlo noise of 30k correlated sweeps is TV ~ 0.02-0.04 here; a wrong factor
    # anywhere in the sweep (e.g. hca's renormalised root) gives TV ~ 0.2.
    assert tv < 0.07, tv


# ----------------------------------------------------------------------------
# 1. planted truth


def hellinger(p, q):
    return np.sqrt(np.maximum(0.0, 1.0 - np.sqrt(p[:, None, :] * q[None, :, :]).sum(-1)))


@pytest.fixture(scope="module")
def planted():
    return synth_hdp(
        truncation=30,
        gamma=5.0,
        alpha=1.0,
        beta=0.05,
        vocab_size=300,
        documents=500,
        test_documents=50,
        length=100,
        seed=2,
    )


@pytest.mark.parametrize("cls", [HdpGibbs, NpldaGibbs], ids=["hdp", "nplda"])
def test_planted_truth_is_recovered(planted, cls):
    train, _, truth = planted
    model = cls(train, {"K": 40}, 1)
    for _ in range(600):
        metrics = model.step()
    model.check_invariants()
    snap = model.snapshot()
    best = hellinger(truth["phi"], snap.phi).min(axis=1)
    weight = truth["topic_weight"]
    assert float((best * weight).sum() / weight.sum()) < 0.25
    assert np.all(best[weight > 0.03] < 0.25)
    eff = metrics["effective_topics"]
    assert abs(eff - truth["effective_topics"]) <= 0.2 * truth["effective_topics"], eff
    assert 0.5 < model.hyperparameters()["b_theta"] < 2.0  # truth: alpha = 1
    if cls is HdpGibbs:
        assert 0.03 < model.hyperparameters()["beta"] < 0.08  # truth: beta = 0.05


# ----------------------------------------------------------------------------
# state, snapshot, options


@pytest.fixture(scope="module")
def small():
    train, test, _ = synth_hdp(truncation=10, documents=60, test_documents=20, vocab_size=80, length=40, seed=5)
    return train, test


RESUME_CASES = [
    (HdpGibbs, {"K": 12, "burst": True, "burst_discount": 0.3, "sample_hyper_every": 2, "sample_discount_every": 3}),
    (
        NpldaGibbs,
        {
            "K": 12,
            "a_theta": 0.2,
            "a_alpha": 0.1,
            "burst": True,
            "burst_discount": 0.3,
            "sample_hyper_every": 2,
            "sample_discount_every": 3,
        },
    ),
    (NpldaGibbs, {"K": 12}),
    (HdpGibbs, {"K": 12, "phi_average": 7}),
]


@pytest.mark.parametrize("cls,opts", RESUME_CASES, ids=["hdp-burst", "nplda-burst", "nplda", "hdp-phi-average"])
def test_exact_resume(small, cls, opts):
    train, _ = small
    whole, resumed = straight_and_resumed(cls, train, opts, 11, 10, 10)
    sa, sb = whole.snapshot(), resumed.snapshot()
    assert np.array_equal(sa.phi, sb.phi) and np.array_equal(sa.alpha, sb.alpha)
    assert whole.log_likelihood() == resumed.log_likelihood()
    resumed.check_invariants()


def test_state_keys_doc_topics_and_threads(small):
    """Checkpoint keys as before the base protocol; doc_topics is n_dk; a stream per thread."""
    train, _ = small
    m = NpldaGibbs(train, {"K": 6, "burst": True}, 2)
    m.step()
    keys = ["burst_concentration", "hyper", "iteration", "r", "rng", "seed", "t_dk", "t_kw", "version", "z"]
    assert sorted(m.state()) == keys
    assert sorted(HdpGibbs(train, {"K": 6}, 2).state()) == ["hyper", "iteration", "rng", "seed", "t_dk", "version", "z"]
    n_dk = m.doc_topics()
    assert n_dk.shape == (train.D, 6) and np.array_equal(n_dk.sum(axis=1), np.diff(m.token_ptr))
    arrays = m.state()
    arrays["t_dk"][n_dk == 0] = 0
    arrays["t_dk"][np.unravel_index(np.argmax(n_dk), n_dk.shape)] = n_dk.max() + 1
    with pytest.raises(InputError, match="t_dk"):
        NpldaGibbs.from_state(train, {"K": 6, "burst": True}, arrays)
    # threads: one random stream per thread (tests/test_hca_threads.py tests the threaded sweep)
    assert HdpGibbs(train, {"K": 6}, 1, threads=2).state()["rng"].shape == (2, 4)


def test_hyperparameters_are_sampled_and_discounts_stay_in_range(small):
    train, _ = small
    m = NpldaGibbs(
        train,
        {
            "K": 12,
            "a_theta": 0.2,
            "burst": True,
            "burst_discount": 0.3,
            "sample_hyper_every": 1,
            "sample_discount_every": 2,
        },
        3,
    )
    start = m.hyperparameters()
    for _ in range(6):
        m.step()
    h = m.hyperparameters()
    for name in ("b_theta", "b_alpha", "b_phi", "b_beta", "a_theta", "a_phi", "a_beta", "burst_discount"):
        assert h[name] != start[name], name
    assert h["a_alpha"] == 0.0  # a discount that starts at 0 is held at 0, as in hca
    for name in ("a_theta", "a_phi", "a_beta", "burst_discount"):
        assert 0.01 <= h[name] <= 0.98
    assert len(set(h["burst_concentration"])) > 1
    m.check_invariants()
    fixed = NpldaGibbs(train, {"K": 12, "fix": "b_phi, a_phi", "sample_hyper_every": 1, "sample_discount_every": 1}, 3)
    for _ in range(3):
        fixed.step()
    assert fixed.hyperparameters()["b_phi"] == 100.0 and fixed.hyperparameters()["a_phi"] == 0.5


def test_no_hyperparameter_is_sampled_before_sample_hyper_after(small):
    """sample_hyper_after=N (hca's -G var,cycles,start): every hyper-parameter keeps its start value
    through sweep N and is sampled from sweep N + 1 on, on the same schedule as without it."""
    train, _ = small
    opts = {"K": 12, "sample_hyper_every": 1, "sample_discount_every": 1, "sample_hyper_after": 4}
    m = NpldaGibbs(train, opts, 3)
    start = m.hyperparameters()
    for _ in range(4):
        m.step()
    assert m.hyperparameters() == start
    m.step()
    h = m.hyperparameters()
    for name in ("b_theta", "b_alpha", "b_phi", "b_beta", "a_phi", "a_beta"):
        assert h[name] != start[name], name


def test_invariant_check_catches_corruption(small):
    train, _ = small
    m = NpldaGibbs(train, {"K": 8, "burst": True}, 2)
    m.step()
    m.check_invariants()
    d, k = np.argwhere(m.t_dk > 0)[0]
    m.t_dk[d, k] = 0
    with pytest.raises(AssertionError, match="t_dk"):
        m.check_invariants()
    m.t_dk[d, k] = 1
    m.T_k[k] += 1
    with pytest.raises(AssertionError):
        m.check_invariants()


@pytest.mark.parametrize(
    "cls,bad,match",
    [
        (HdpGibbs, {"K": 0}, "K=0"),
        (HdpGibbs, {"b_theta": -1.0}, "b_theta=-1.0"),
        (HdpGibbs, {"beta": 0.0}, "beta=0.0"),
        (NpldaGibbs, {"a_phi": 1.0}, "a_phi=1.0"),
        (NpldaGibbs, {"burst_discount": -0.1}, "burst_discount=-0.1"),
        (NpldaGibbs, {"fix": "b_phi,nope"}, "'nope'"),
        (HdpGibbs, {"a_phi": 0.5}, "unknown option 'a_phi'"),
        (HdpGibbs, {"sample_hyper_every": -2}, "sample_hyper_every=-2"),
        (NpldaGibbs, {"sample_hyper_after": -1}, "sample_hyper_after=-1"),
    ],
)
def test_bad_options_are_named(small, cls, bad, match):
    with pytest.raises(InputError, match=match):
        cls(small[0], bad, 1)


def test_snapshot(small, tmp_path):
    train, _ = small
    for cls in (HdpGibbs, NpldaGibbs):
        m = cls(train, {"K": 10, "burst": True}, 4)
        for _ in range(5):
            m.step()
        s = m.snapshot()
        assert np.allclose(s.phi.sum(axis=1), 1.0) and np.all(s.phi > 0)
        assert s.alpha.shape == (10,) and np.all(s.alpha > 0)
        assert s.alpha.sum() == pytest.approx(m.hyperparameters()["b_theta"])
        assert s.topic_weight.sum() == pytest.approx(1.0)
        assert s.burst_concentration.shape == (10,) and s.burst_discount == 0.5
        s.save(tmp_path / "m.npz")
        back = Snapshot.load(tmp_path / "m.npz")
        assert np.array_equal(back.burst_concentration, s.burst_concentration)
        assert back.burst_discount == s.burst_discount
        theta = m.theta_estimate()
        assert np.allclose(theta.sum(axis=1), 1.0)
    plain = HdpGibbs(train, {"K": 10}, 4).snapshot()
    assert plain.burst_concentration is None and plain.burst_discount is None


def test_slice_sampler_draws_from_its_density():
    rng = make_streams(5, 1)
    shape = 3.0

    def logf(x):
        return (shape - 1) * math.log(x) - x

    x, xs = 1.0, []
    for _ in range(4000):
        x = slice_sample(logf, x, 1e-6, 1e3, rng, log_scale=True)
        xs.append(x)
    xs = np.array(xs[200:])
    assert xs.mean() == pytest.approx(shape, rel=0.08)
    assert xs.var() == pytest.approx(shape, rel=0.2)


def test_grouped_hyperparameter_densities_match_the_node_by_node_sums():
    """The burst concentrations and discount are sampled on histograms of the nodes' counts by
    topic; those densities equal the node-by-node ones (any node order, a = 0 included)."""
    from topictool.models.hca import hyper as hp

    rng = np.random.default_rng(4)
    G, P = 5, 400
    group = rng.integers(0, G - 1, P)  # the last group has no node: its density is the prior's
    N = rng.geometric(0.3, P)
    T = np.minimum(N, rng.geometric(0.5, P))
    b = rng.uniform(0.5, 50.0, G)
    t_ptr, t_val, t_freq = hp._histograms(group, T, G)
    n_ptr, n_val, n_freq = hp._histograms(group, N, G)
    for g in range(G):
        mine = group == g
        values, counts = np.unique(T[mine], return_counts=True)
        assert np.array_equal(t_val[t_ptr[g] : t_ptr[g + 1]], values)
        assert np.array_equal(t_freq[t_ptr[g] : t_ptr[g + 1]], counts)
        for a in (0.0, 0.37):
            ts, ns = slice(t_ptr[g], t_ptr[g + 1]), slice(n_ptr[g], n_ptr[g + 1])
            got = hp.grouped_concentration_logpdf(b[g], a, t_val[ts], t_freq[ts], n_val[ns], n_freq[ns])
            assert got == pytest.approx(hp.concentration_logpdf(b[g], a, T[mine], N[mine]), rel=1e-12, abs=1e-9)
    for a in (0.0, 0.61):
        want = hp.sum_log_pochhammer(b[group], a, T)
        assert hp.grouped_log_pochhammer(b, a, t_ptr, t_val, t_freq) == pytest.approx(want, rel=1e-12)
    # the topic-word counts' histogram for the Dirichlet's beta: np.unique of the positive counts
    counts = np.concatenate([rng.geometric(0.05, 3000), np.zeros(502, int), rng.integers(4000, 5000, 40)])
    rng.shuffle(counts)
    counts = counts.astype(np.int32).reshape(-1, 7)
    values, freq = hp.positive_value_histogram(counts.reshape(-1))
    want_values, want_freq = np.unique(counts[counts > 0], return_counts=True)
    assert np.array_equal(values, want_values) and np.array_equal(freq, want_freq)


# ----------------------------------------------------------------------------
# burst-aware document completion


def bursty_corpora(seed=3):
    """LDA documents in which every drawn word repeats a geometric number of times."""
    rng = np.random.default_rng(seed)
    K, V = 6, 150
    phi = rng.dirichlet(np.full(V, 0.05), size=K)

    def docs(n):
        out = []
        for _ in range(n):
            theta = rng.dirichlet(np.full(K, 0.3))
            bag = {}
            for _ in range(25):
                w = int(rng.choice(V, p=theta @ phi))
                bag[w] = bag.get(w, 0) + int(rng.geometric(0.3))
            out.append(bag)
        return out

    vocab = [f"w{i}" for i in range(V)]
    return make_corpus(docs(300), vocab), make_corpus(docs(60), vocab)


@pytest.fixture(scope="module")
def bursty():
    train, test = bursty_corpora()
    plain = HdpGibbs(train, {"K": 12}, 1)
    burst = HdpGibbs(train, {"K": 12, "burst": True, "burst_discount": 0.3}, 1)
    for _ in range(60):
        plain.step()
        burst.step()
    return train, test, plain.snapshot(), burst.snapshot()


def test_burst_completion_beats_plain_on_bursty_text(bursty):
    _, test, plain, burst = bursty
    p_plain = document_completion(plain, test)
    p_burst = document_completion(burst, test)
    for key in ("perplexity", "log_likelihood_per_token", "heldout_tokens", "documents"):
        assert key in p_burst
    assert p_burst["heldout_tokens"] == p_plain["heldout_tokens"]  # the same split
    assert p_burst["documents"] == p_plain["documents"]
    assert p_burst["perplexity"] < 0.8 * p_plain["perplexity"]
    # judging the bursty model by phi alone under-rates it
    without_cache = dataclasses.replace(burst, burst_concentration=None, burst_discount=None)
    assert document_completion(without_cache, test)["perplexity"] > p_burst["perplexity"]


def test_burst_completion_is_thread_independent_and_tends_to_plain(bursty):
    _, test, _, burst = bursty
    one = document_completion(burst, test, samples=10, threads=1)
    two = document_completion(burst, test, samples=10, threads=2)
    assert one["perplexity"] == two["perplexity"]
    # an infinitely concentrated cache is phi itself: the plain measure (up to Monte Carlo noise)
    huge = dataclasses.replace(burst, burst_concentration=np.full(burst.K, 1e12))
    plain = dataclasses.replace(burst, burst_concentration=None, burst_discount=None)
    a = document_completion(huge, test)["perplexity"]
    b = document_completion(plain, test)["perplexity"]
    assert a == pytest.approx(b, rel=0.03)
    with pytest.raises(InputError, match="--method gibbs"):
        document_completion(burst, test, method="vb")


def test_topic_word_estimate_is_eq5_over_the_words_bit_for_bit():
    """The one-pass kernel against paper eq. 5 in numpy (pyp_estimate), with tables (NP-LDA's topic
    nodes over the beta root) and without (HDP-LDA's Dirichlet mean (n + beta) / (N + W beta)): the
    same bits, so snapshots (tests/golden.json) do not change."""
    gen = np.random.default_rng(3)
    W, K = 50, 7
    n = gen.integers(0, 9, (W, K)).astype(np.int32)
    t = np.minimum(n, gen.integers(0, 3, (W, K))).astype(np.int32)
    parent = gen.dirichlet(np.ones(W))
    want = pyp.pyp_estimate(n.T, t.T, 0.3, 40.0, parent[None, :])
    assert np.array_equal(pyp.topic_word_estimate(n, t, 0.3, 40.0, parent), want)
    beta = 0.05
    plain = pyp.topic_word_estimate(n, np.zeros((0, 0), np.int32), 0.0, beta, np.zeros(0))
    nf = n.T.astype(np.float64)
    assert np.array_equal(plain, (nf + beta) / (nf.sum(axis=1, keepdims=True) + W * beta))
