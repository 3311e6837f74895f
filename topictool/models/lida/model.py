"""lida-gibbs: sparse topic models with the IBP compound Dirichlet prior, by collapsed Gibbs.

Archambeau, Lakshminarayanan & Bouchard, "Latent IBP compound Dirichlet Allocation"
(TPAMI 2015; NIPS workshop 2011). A document may use only the topics switched on for it
(θ̄_kd, an Indian buffet over documents) and a topic may emit only the words switched on
for it (φ̄_vk, an Indian buffet over topics); the proportions and the topics are Dirichlet
over what is switched on. ``variant`` picks the sides:

    lida   both sides sparse                      (Archambeau et al.)
    ftm    document side only: focused topics     (Williamson, Wang, Heller & Blei, ICML 2010)
    stm    topic side only: sparse topics         (Wang & Blei, NIPS 2010)
    lda    neither: exactly collapsed-Gibbs LDA   (Griffiths & Steyvers 2004)

Options (symbols of the paper):
    K              topics (the capacity when nonparametric)
    alpha, beta    α, β: Dirichlet parameter of each active topic / active word (the
                   document-topic and topic-word priors, as in every family)
    theta_bar_mass, theta_bar_concentration
                   η, δ: two-parameter IBP over documents, π_k ~ Beta(ηδ/K, δ); η is the
                   expected number of active topics per document (K → ∞)
    phi_bar_mass, phi_bar_concentration
                   γ, λ: two-parameter IBP over topics, κ_v ~ Beta(γλ/V, λ); γ is the
                   expected number of active words per topic (V → ∞)
    nonparametric  K → ∞ on the document side (lida and ftm): Poisson(ηδ/(δ + D − 1)) new
                   topics per document, held in the K slots; K_obs replaces K in (7)
    initial_topics topics in use at the start when nonparametric

The IBP options were called eta, delta, gamma and lam (the paper's letters) until eta and
gamma clashed with the tool's vocabulary (eta: a topic-word prior, gamma: an HDP's top-level
concentration); the old names still work (``aliases``).

The equations (1)-(9) are written out in `kernels.py` beside this file, which holds every
loop; this class owns the arrays, validates options, and assembles metrics and snapshots.
One step is one sweep: the topics of all tokens (5), then θ̄ (6) or (9), then φ̄ (7). The
chain starts with every activation on (LDA's state) and z uniform; nonparametric runs start
with ``initial_topics`` topics on in every document.

Memory: 4 bytes of word id and 2 of topic per token (4 when K ≥ 32768), up to two int32
per token in the word-topic lists, plus D x K and W x K bytes for θ̄ and φ̄ (``theta_on``
and ``phi_on``; the state arrays ``theta_bar`` and ``phi_bar`` are the same matrices packed
8 to a byte along each row, as checkpoints hold them). Threads add three K-vectors each.

Threads (--threads T > 1; docs/models/lida.md, "Threads"). (5) runs on the vocabulary-
partitioned schedule of lda-gibbs (Yan, Xu & Qi 2009): documents cut into T blocks of about
N/T tokens and words into T runs of about equal cost (_word_runs); a sweep is T rounds, and
in round r thread t samples the tokens of its documents whose words are in run (t + r) mod
T. No two threads touch the same document's z or n_dk, or the same word's n_vk, so those are
exact: only the topic totals n_k are shared, each thread sampling against its own copy and
the copies' changes summed after every round. The zero / non-zero state of n_dk and n_vk,
which decides which activations (6) and (7) may switch off, is therefore exactly that of z.
(6) runs on the document blocks against per-thread copies of m_k, (7) on T ranges of words
against per-thread copies of V_k, both summed back after the phase; the nonparametric (9)
hands out topic slots and φ̄ columns shared by every document and stays on one thread (a few
ms). Thread t draws from rng row t; T = 1 runs the serial kernels, unchanged.
"""

import numpy as np

from ...corpus.corpus import token_blocks
from ...errors import InputError
from ...snapshot import Snapshot
from ...threads import padded, split
from ..base import POSITIVE_INT, PRIOR, Model, doc_topic_counts
from . import kernels as kern

VARIANTS = ("lida", "ftm", "stm", "lda")
# With threads: a token's fixed cost in (5), in steps of its word list's loop (_word_runs).
CELL_TOKEN_COST = 32
IBP_OPTIONS = ("theta_bar_mass", "theta_bar_concentration", "phi_bar_mass", "phi_bar_concentration")


class PackedBits:
    """A state array held as bits: reading gives the 0/1 matrix attribute ``matrix`` packed 8
    to a byte along each row (np.packbits), assigning packed bits unpacks them into it."""

    def __init__(self, matrix):
        self.matrix = matrix

    def __get__(self, model, owner=None):
        return self if model is None else np.packbits(getattr(model, self.matrix), axis=1)

    def __set__(self, model, bits):
        getattr(model, self.matrix)[:] = np.unpackbits(bits, axis=1, count=model.K)


class LidaGibbs(Model):
    name = "lida-gibbs"
    defaults = {
        "K": 100,
        "variant": "lida",
        "alpha": 0.1,
        "beta": 0.01,
        "theta_bar_mass": 10.0,
        "theta_bar_concentration": 1.0,
        "phi_bar_mass": 100.0,
        "phi_bar_concentration": 1.0,
        "nonparametric": False,
        "initial_topics": 10,
    }
    # the paper's letters, the option names until eta and gamma clashed with the tool's vocabulary
    aliases = dict(zip(("eta", "delta", "gamma", "lam"), IBP_OPTIONS))
    limits = {
        **Model.limits,
        **{k: PRIOR for k in ("alpha", "beta", *IBP_OPTIONS)},
        "initial_topics": POSITIVE_INT,
    }
    doc_topic_bytes = 1
    step_unit = "sweep"
    supports_threads = True  # partitioned cells for (5), blocks for (6) and (7): _step_threads
    eval_method = "gibbs"
    STATE_VERSION = 1
    # θ̄ (D, K) and φ̄ (W, K) in checkpoints: packed bits of theta_on and phi_on
    theta_bar = PackedBits("theta_on")
    phi_bar = PackedBits("phi_on")

    def state_array_names(self):
        return ("z",) + ("theta_bar",) * self.sparse_theta + ("phi_bar",) * self.sparse_phi

    # -- construction ---------------------------------------------------------------

    def check_options(self, o):
        if o["variant"] not in VARIANTS:
            raise InputError(f"option variant={o['variant']!r}: expected one of {', '.join(VARIANTS)}")
        if o["nonparametric"]:
            if o["variant"] not in ("lida", "ftm"):
                raise InputError(
                    f"option nonparametric=true needs variant lida or ftm (the document side is the "
                    f"IBP that grows), not variant={o['variant']}"
                )
            if o["initial_topics"] > o["K"]:
                raise InputError(f"option initial_topics={o['initial_topics']}: must be between 1 and K={o['K']}")

    def allocate(self):
        o = self.opts
        self.variant = o["variant"]
        self.sparse_theta = self.variant in ("lida", "ftm")
        self.sparse_phi = self.variant in ("lida", "stm")
        self.nonparametric = bool(o["nonparametric"])
        self.alpha, self.beta = float(o["alpha"]), float(o["beta"])
        eta, delta = o["theta_bar_mass"], o["theta_bar_concentration"]
        gamma, lam = o["phi_bar_mass"], o["phi_bar_concentration"]
        # Beta priors of the two IBPs: π_k ~ Beta(a, b), κ_v ~ Beta(c, e)
        self.a = eta * delta / self.K
        self.b = float(delta)
        self.c = gamma * lam / self.W
        self.e = float(lam)
        self.new_rate = eta * delta / (delta + self.D - 1)  # (9)
        self.token_ptr, self.words = self.corpus.tokens()
        self.z = np.zeros(self.N, dtype=np.int16 if self.K < 32768 else np.int32)
        # θ̄ and φ̄, all on where the side is not sparse
        self.theta_on = np.full((self.D, self.K), 0 if self.sparse_theta else 1, dtype=np.uint8)
        self.phi_on = np.full((self.W, self.K), 0 if self.sparse_phi else 1, dtype=np.uint8)
        freq = np.bincount(self.words, minlength=self.W).astype(np.int64)
        self.tw_ptr = np.zeros(self.W + 1, dtype=np.int64)
        np.cumsum(np.minimum(freq, self.K), out=self.tw_ptr[1:])
        self.tw_topic = np.zeros(self.tw_ptr[-1], dtype=np.int32)
        self.tw_count = np.zeros(self.tw_ptr[-1], dtype=np.int32)
        self.tw_len = np.zeros(self.W, dtype=np.int32)
        self.n_k = np.zeros(self.K, dtype=np.int32)
        T = self.threads
        if T > 1:
            # documents cut into T blocks of about N/T tokens and words into T runs of about equal
            # cost (the cells of (5)); words also into T ranges of W/T for (7), K steps a word
            if not kern.words_ascending(self.token_ptr, self.words):
                raise RuntimeError("lida-gibbs threads: a document's tokens are not in word order")
            self.block_ptr = token_blocks(self.token_ptr, T)
            self.freq = freq
            self.cell_word_ptr = self._word_runs()
            self.phi_word_ptr = np.asarray(split(self.W, T), dtype=np.int64)
            # each thread's copies of the totals shared across its part, and of its random stream
            # (scratch, not state; rows a cache line apart: written at every token)
            self.loc_n_k = padded(T, self.K, np.int32)
            self.loc_m_k = padded(T, self.K, np.int64)
            self.loc_V_k = padded(T, self.K, np.int64)
            self.loc_rng = padded(T, 4, np.uint64)

    def _word_runs(self):
        """T + 1 cuts of the word ids into runs of about equal sampling cost for (5): a token of
        word v costs about CELL_TOKEN_COST + (its list's length) steps of the q bucket's loop
        (measured on the movie reviews; cutting by tokens alone left the run of frequent,
        long-listed words 1.2x slower). Recomputed each sweep from the lists (state, so a
        resumed run cuts the same)."""
        T = self.threads
        cost = self.freq * (CELL_TOKEN_COST + self.tw_len.astype(np.int64))
        return token_blocks(np.concatenate([[0], np.cumsum(cost)]), T)  # cut by running cost

    def rng_streams(self):
        return self.threads  # row t: thread t's blocks (row 0 alone with one thread)

    def initialise(self):
        if self.nonparametric:
            K0 = int(self.opts["initial_topics"])
            self.theta_on[:, :K0] = 1
            if self.sparse_phi:
                self.phi_on[:, :K0] = 1
        else:
            self.theta_on[:] = 1
            self.phi_on[:] = 1
        kern.init_assignments(self.token_ptr, self.z, self.theta_on, self.rng)
        self._rebuild()

    def restored(self):
        if int(self.z.min()) < 0 or int(self.z.max()) >= self.K:
            raise InputError(f"state has topic assignments outside 0..{self.K - 1} (K={self.K})")
        if kern.count_violations(self.token_ptr, self.words, self.z, self.theta_on, self.phi_on):
            raise InputError("state puts tokens on inactive (document, topic) or (word, topic) pairs")
        self._rebuild()

    def _rebuild(self):
        """Counts and activation totals from z, θ̄ and φ̄ (all integers: exact)."""
        kern.build_counts(self.words, self.z, self.tw_ptr, self.tw_topic, self.tw_count, self.tw_len, self.n_k)
        self.m_k = self.theta_on.sum(axis=0, dtype=np.int64)  # documents per topic
        self.m_v = self.phi_on.sum(axis=1, dtype=np.int64)  # topics per word
        self.V_k = self.phi_on.sum(axis=0, dtype=np.int64)  # words per topic

    def _in_use(self):
        if self.nonparametric:
            return (self.m_k > 0).astype(np.uint8)
        return np.ones(self.K, dtype=np.uint8)

    def _topic_args(self, n_k, rng):
        """sweep_topics' arguments after the cell: the tokens and z, θ̄ and φ̄, the word lists,
        n_k (the totals, or a thread's copy), V_k, α, β and the random stream."""
        return (
            self.token_ptr,
            self.words,
            self.z,
            self.theta_on,
            self.phi_on,
            self.tw_ptr,
            self.tw_topic,
            self.tw_count,
            self.tw_len,
            n_k,
            self.V_k,
            self.alpha,
            self.beta,
            rng,
        )

    def _phi_bar_args(self):
        """The arguments resample_phi_bar and phi_bar_expectation share: the word lists, φ̄ and
        its totals, the topics in use and their number, β and the Beta prior of κ."""
        in_use = self._in_use()
        return (
            self.tw_ptr,
            self.tw_topic,
            self.tw_len,
            self.phi_on,
            self.m_v,
            self.V_k,
            self.n_k,
            in_use,
            self.beta,
            self.c,
            self.e,
            int(in_use.sum()),
        )

    # -- the Model protocol ---------------------------------------------------------

    def step(self):
        """One iteration: z by (5), θ̄ by (6) or (9), φ̄ by (7)."""
        if self.threads > 1:
            return self._step_threads()
        rejections = kern.sweep_topics(0, self.D, 0, self.W, *self._topic_args(self.n_k, self.rng))
        metrics = {}
        if self.sparse_theta:
            if self.nonparametric:
                metrics.update(self._theta_bar_ibp())
            else:
                kern.resample_theta_bar(
                    self.token_ptr, self.z, self.theta_on, self.m_k, self.alpha, self.a, self.b, self.rng
                )
        if self.sparse_phi:
            kern.resample_phi_bar(*self._phi_bar_args(), self.rng)
        return self._finish(metrics, rejections)

    def _theta_bar_ibp(self):
        """(9) over every document, on one thread (row 0 of the random streams)."""
        created, removed, denied = kern.resample_theta_bar_ibp(
            self.token_ptr,
            self.z,
            self.theta_on,
            self.m_k,
            self.alpha,
            self.b,
            self.new_rate,
            self.phi_on,
            self.m_v,
            self.V_k,
            self.c,
            self.e,
            self.sparse_phi,
            self.rng,
        )
        return dict(topics_created=int(created), topics_removed=int(removed), capacity_denied=round(float(denied), 6))

    def _finish(self, metrics, rejections):
        self.iteration += 1
        metrics.update(self.activation_metrics())
        metrics["rejected_draws_per_token"] = round(int(rejections) / self.N, 6)
        return metrics

    def _step_threads(self):
        """One iteration on T threads (module docstring, "Threads"): (5) in T rounds, round r
        giving thread t the cell (document block t, word run (t + r) mod T), so no two threads
        touch the same document or word; n_k := n_k + Σ_t (copy_t − n_k) after every round.
        (6) rides on each thread's last round (its documents' z are then final), against its
        own copy of m_k; (9) runs on one thread; (7) on T ranges of words against copies of V_k."""
        T = self.threads
        self.cell_word_ptr = self._word_runs()
        bp, cw, pw = self.block_ptr, self.cell_word_ptr, self.phi_word_ptr
        finite_theta = self.sparse_theta and not self.nonparametric
        rejections = np.zeros(T, dtype=np.int64)
        self.loc_rng[:] = self.rng
        for r in range(T):

            def cell(t, r=r):
                u = (t + r) % T
                d0, d1, rng = int(bp[t]), int(bp[t + 1]), self.loc_rng[t : t + 1]
                loc_n_k, loc_m_k = self.loc_n_k[t], self.loc_m_k[t]
                loc_n_k[:] = self.n_k
                rejections[t] += kern.sweep_topics(d0, d1, int(cw[u]), int(cw[u + 1]), *self._topic_args(loc_n_k, rng))
                if finite_theta and r == T - 1:
                    loc_m_k[:] = self.m_k
                    kern.resample_theta_bar_docs(
                        d0, d1, self.token_ptr, self.z, self.theta_on, loc_m_k, self.alpha, self.a, self.b, rng
                    )

            self.workers.run(cell)
            self.n_k += _summed_change(self.loc_n_k, self.n_k)
        self.rng[:] = self.loc_rng  # (9) below draws from row 0
        metrics = {}
        if finite_theta:
            self.m_k += _summed_change(self.loc_m_k, self.m_k)
        elif self.sparse_theta:
            metrics.update(self._theta_bar_ibp())
        if self.sparse_phi:
            in_use = self._in_use()
            n_topics = int(in_use.sum())

            def words(t):
                v0, v1 = int(pw[t]), int(pw[t + 1])
                kern.phi_bar_range(
                    self.tw_ptr[v0 : v1 + 1],
                    self.tw_topic,
                    self.tw_len[v0:v1],
                    self.phi_on[v0:v1],
                    self.m_v[v0:v1],
                    self.V_k,
                    self.loc_V_k[t],
                    self.n_k,
                    in_use,
                    self.beta,
                    self.c,
                    self.e,
                    n_topics,
                    self.loc_rng[t : t + 1],
                )

            self.loc_rng[:] = self.rng
            self.workers.run(words)
            self.V_k += _summed_change(self.loc_V_k, self.V_k)
            self.rng[:] = self.loc_rng
        return self._finish(metrics, rejections.sum())

    def activation_metrics(self):
        """Fractions of active (document, topic) and (word, topic) pairs among the topics in use."""
        in_use = self._in_use().astype(bool)
        K_used = int(in_use.sum())
        words = float(self.V_k[in_use].sum())
        return {
            "theta_bar_density": float(self.m_k.sum()) / (self.D * K_used) if K_used else 0.0,
            "phi_bar_density": words / (self.W * K_used) if K_used else 0.0,
            "topics_per_document": float(self.m_k.sum()) / self.D,
            "words_per_topic": words / K_used if K_used else 0.0,
            "topics_in_use": K_used,
            "active_topics": int(np.count_nonzero(self.n_k)),
        }

    def expected_theta_bar(self):
        """⟨θ̄⟩ (D, K): 1 where the document uses the topic, else the conditional (6)."""
        if not self.sparse_theta:
            return np.ones((self.D, self.K))
        return kern.theta_bar_expectation(
            self.token_ptr,
            self.z,
            self.theta_on,
            self.m_k,
            self.alpha,
            0.0 if self.nonparametric else self.a,
            self.b,
            self.nonparametric,
        )

    def expected_phi_bar(self):
        """⟨φ̄⟩ (W, K): 1 where the topic emits the word, else the conditional (7)."""
        if not self.sparse_phi:
            return np.broadcast_to(self._in_use().astype(np.float64), (self.W, self.K)).copy()
        return kern.phi_bar_expectation(*self._phi_bar_args())

    def word_topic_counts(self):
        """n_vk (W x K int64)."""
        return kern.dense_word_topic(self.tw_ptr, self.tw_topic, self.tw_count, self.tw_len, self.K)

    def expected_theta(self):
        """E[θ] of (8) for the training documents, (D, K) rows summing to 1."""
        t = self.alpha * self.expected_theta_bar() + self._doc_topic_counts()
        t[t.sum(axis=1) == 0] = self._in_use()  # an empty document no topic expects: uniform
        return t / t.sum(axis=1, keepdims=True)

    def expected_phi(self):
        """E[φ] of (8), (K, W) rows summing to 1, every word non-zero (rows of topics not in use are zero)."""
        phi = (self.beta * self.expected_phi_bar() + self.word_topic_counts()).T
        np.maximum(phi, 1e-300, out=phi, where=self._in_use().astype(bool)[:, None])
        tot = phi.sum(axis=1, keepdims=True)
        return np.ascontiguousarray(np.divide(phi, tot, out=np.zeros_like(phi), where=tot > 0))

    def expected_alpha(self):
        """α⟨θ̄_k⟩ for a new document: (8) with ⟨θ̄_k⟩ = (a + m_k)/(a + b + D), or m_k/(δ + D) when
        nonparametric."""
        if not self.sparse_theta:
            return np.full(self.K, self.alpha)
        if self.nonparametric:
            return self.alpha * self.m_k / (self.b + self.D)
        return self.alpha * (self.a + self.m_k) / (self.a + self.b + self.D)

    def log_likelihood(self):
        """Σ over training tokens of log Σ_k E[θ_dk] E[φ_kw], the expectations of (8)."""
        phi_wk = np.ascontiguousarray(self.expected_phi().T)
        c = self.corpus
        return float(kern.expected_log_likelihood(c.doc_ptr, c.word_ids, c.counts, self.expected_theta(), phi_wk))

    def snapshot(self):
        phi = self.expected_phi()
        alpha = self.expected_alpha()
        weight = self.n_k.astype(np.float64) / self.N
        keep = self._in_use().astype(bool)
        meta = {
            "model": self.name,
            "options": dict(self.opts),
            "iteration": self.iteration,
            "topics": [int(k) for k in np.flatnonzero(keep)] if self.nonparametric else None,
            **self.activation_metrics(),
        }
        return Snapshot(phi=phi[keep], alpha=alpha[keep], topic_weight=weight[keep], vocab=self.corpus.vocab, meta=meta)

    def check_invariants(self):
        """Raise AssertionError unless the counts agree with z and no token sits on an inactive pair."""

        def fail(msg):
            raise AssertionError(f"lida-gibbs invariant broken: {msg}")

        tw_topic, tw_count = np.zeros_like(self.tw_topic), np.zeros_like(self.tw_count)
        tw_len, n_k = np.zeros_like(self.tw_len), np.zeros_like(self.n_k)
        kern.build_counts(self.words, self.z, self.tw_ptr, tw_topic, tw_count, tw_len, n_k)
        if not np.array_equal(n_k, self.n_k):
            fail("n_k disagrees with z")
        if not (
            np.array_equal(tw_len, self.tw_len)
            and np.array_equal(tw_topic, self.tw_topic)
            and np.array_equal(tw_count, self.tw_count)
        ):
            fail("the word-topic counts n_vk disagree with z")
        if int(self.n_k.sum(dtype=np.int64)) != self.N:
            fail("n_k does not sum to N")
        bad = kern.count_violations(self.token_ptr, self.words, self.z, self.theta_on, self.phi_on)
        if bad:
            fail(f"{bad} tokens sit on an inactive (document, topic) or (word, topic) pair")
        if not np.array_equal(self.m_k, self.theta_on.sum(axis=0)):
            fail("m_k (documents per topic) disagrees with theta_bar")
        if not (
            np.array_equal(self.m_v, self.phi_on.sum(axis=1)) and np.array_equal(self.V_k, self.phi_on.sum(axis=0))
        ):
            fail("m_v or V_k disagrees with phi_bar")
        if not self.sparse_theta and not self.theta_on.all():
            fail(f"variant {self.variant} switched off a (document, topic) pair")
        if not self.sparse_phi and not self.phi_on.all():
            fail(f"variant {self.variant} switched off a (word, topic) pair")
        if self.nonparametric:
            free = self.m_k == 0
            if self.sparse_phi and self.phi_on[:, free].any():
                fail("a topic not in use keeps active words")
            if self.n_k[free].any():
                fail("a topic not in use holds tokens")

    # -- extras ---------------------------------------------------------------------

    def _doc_topic_counts(self):
        """n_dk (D x K int32) over every slot, computed from z."""
        return doc_topic_counts(self.token_ptr, self.z, self.K)

    def doc_topics(self):
        """n_dk of the training documents for the snapshot's topics: every slot, or the
        topics in use when nonparametric (the snapshot keeps only those)."""
        n_dk = self._doc_topic_counts()
        return n_dk[:, self._in_use().astype(bool)] if self.nonparametric else n_dk


def _summed_change(copies, base):
    """Σ_t (copies[t] − base), t = 0..T-1 in order (int64: exact)."""
    total = np.zeros(base.shape, dtype=np.int64)
    for t in range(copies.shape[0]):
        total += copies[t].astype(np.int64) - base
    return total.astype(base.dtype)
