"""What the four variational models share on the Python side (base.Model does the
options, threads, state() and from_state()): the corpus arrays, the option limits, the
value checks after a restore, the metrics, the snapshot and the training
log-likelihood; and what the two collapsed HDP models (PCVB0, PCSVB0) share: their
options, the start and the stick-breaking weights."""

import numpy as np

from ...corpus.corpus import token_blocks
from ...errors import InputError
from ...kernels.rng import shuffle
from ...snapshot import Snapshot
from ...threads import padded
from ..base import KAPPA, NONNEGATIVE, POSITIVE, POSITIVE_INT, PRIOR, Model, Range, effective_topics
from . import kernels as kern
from . import sticks

#: the options of the collapsed HDP models (PCVB0 and PCSVB0 add their own)
HDP_DEFAULTS = {
    "K": 200,
    "beta": 0.01,
    "alpha": 1.0,
    "gamma": 1.0,
    "optimize_alpha": True,
    "optimize_gamma": True,
    "reorder": True,
    "clumping": False,
    "init": "sequential",
}
#: optimize_hyper (before the rename) set both
HDP_ALIASES = {"optimize_hyper": ("optimize_alpha", "optimize_gamma")}
INITS = ("sequential", "random")


class VariationalModel(Model):
    """Base of the variational family. A model declares what base.Model asks for, and
    ``lazy_table`` (its lazily decayed table, its totals and the table's name) when it has
    one; it implements allocate (after ``super().allocate()``, which reads the corpus),
    initialise, step, ``topic_word()`` (K, W), ``topic_totals()`` (K,), ``_prior()`` (K,) and
    ``doc_topics()`` (D, K)."""

    eval_method = "vb"
    supports_threads = True  # each model's scheme: its module docstring, docs/models/variational.md
    STATE_VERSION = 2  # 2: iteration (base) in place of epoch and documents_seen
    limits = {
        "K": Range(1, 2**20),
        **{k: PRIOR for k in ("alpha", "beta", "gamma", "s_c", "s_d", "s_h", "s_phi", "s_theta", "local_tol")},
        # step sizes s / (tau + t)^kappa start at t = 0: tau must be positive
        **{k: POSITIVE for k in ("tau_c", "tau_d", "tau_h", "tau_phi", "tau_theta", "tau")},
        "kappa": KAPPA,
        "local_iterations": POSITIVE_INT,
        **{k: NONNEGATIVE for k in ("burn_in", "minibatch", "cold_passes")},
    }
    doc_topic_bytes = 8
    thread_topic_word_bytes = 8  # _thread_tables: a float64 (rows, K) table per thread
    lazy_table = None
    _barrier = None  # threads.Barrier of a model whose threaded pass waits inside its kernels
    _python_rounds = False  # True: the threaded pass from Python, a Workers.run a round (tests)
    #: state scalars that must be positive (the others must be >= 0)
    positive_scalars = frozenset({"scale", "alpha", "gamma", "gbar"})

    def check_options(self, opts):
        if "init" in opts and opts["init"] not in INITS:
            raise InputError(f"option init={opts['init']!r}: expected sequential or random")

    def allocate(self):
        corpus = self.corpus
        self.doc_ptr = np.ascontiguousarray(corpus.doc_ptr, dtype=np.int64)
        self.word_ids = np.ascontiguousarray(corpus.word_ids, dtype=np.int32)
        self.counts = np.ascontiguousarray(corpus.counts, dtype=np.int32)
        self.doc_len = corpus.doc_lengths().astype(np.int64)

    def restored(self):
        for name in self.state_scalars:
            v = getattr(self, name)
            if v < 0 or (name in self.positive_scalars and not v > 0):
                raise InputError(f"{self.name} state: {name}={v!r} out of range")
        for name in self.state_arrays:
            a = getattr(self, name)
            if a.dtype.kind == "f" and a.size and a.min() < 0:
                raise InputError(f"{self.name} state: {name} has negative entries")

    # -- what a step shares -------------------------------------------------------------

    @classmethod
    def upgrade_state(cls, arrays, version):
        # version 1 counted passes as "epoch" (with documents_seen = epoch * D beside it)
        if version == 1 and "epoch" in arrays and "iteration" not in arrays:
            arrays["iteration"] = arrays.pop("epoch")
        return arrays

    def _epoch_order(self):
        """A fresh random document order for this pass (from the model's stream)."""
        order = np.arange(self.D, dtype=np.int64)
        shuffle(order, self.rng, 0)
        return order

    def _documents(self):
        """The corpus as the pass kernels take it: doc_ptr, word_ids, counts, doc_len."""
        return self.doc_ptr, self.word_ids, self.counts, self.doc_len

    def _metrics(self, **extra):
        return {"documents_seen": self.iteration * self.D, **extra}

    def _document_keep_table(self, s, tau):
        """1 - rho_t (options s, tau and kappa) for every step t of a document's visit, its burn-in
        passes included: the step counter of the document-level updates (SCVB0's (F2), PCSVB0's
        (B2)) restarts at every document, so a table of the longest document's steps replaces a
        power a token, for the same numbers (kernels.keep_table)."""
        o = self.opts
        steps = (int(o["burn_in"]) + 1) * int(self.doc_len.max(initial=0))
        return kern.keep_table(float(o[s]), float(o[tau]), float(o["kappa"]), steps)

    # -- threads ----------------------------------------------------------------------------

    def _thread_tables(self, rows):
        """Per-thread statistics (``kernels``' thread section): acc (T, rows, K), acc_k (T, >= K),
        mark (T, rows, all -1), touched (T, rows), n_touched (T)."""
        T, K = self.threads, self.K
        return (
            np.zeros((T, rows, K), dtype=np.float64),
            self._thread_rows(),
            np.full((T, rows), -1, dtype=np.int64),
            np.zeros((T, rows), dtype=np.int64),
            np.zeros(T, dtype=np.int64),
        )

    def _merge(self, table, totals, tables, f, merges):
        """The threads' statistics (``tables``, as from _thread_tables) into ``table`` and ``totals``,
        weighted by f (T): thread t merges its range of words (kernels.merge_rows, ``merge_ranges``
        for a pass of ``merges`` minibatches)."""
        acc, acc_k, mark, _, n_touched = tables
        ranges = self.merge_ranges(merges)
        f = np.ascontiguousarray(f, dtype=np.float64)
        self.workers.run(lambda t: kern.merge_rows(table, acc, f, mark, ranges[t], ranges[t + 1]))
        kern.merge_totals(totals, acc_k, f)
        n_touched[:] = 0

    def merge_ranges(self, merges):
        """Word boundaries (T + 1) for the threads' merges of a pass of ``merges`` minibatches: a
        merge costs K a touched word, and a word of document frequency df is touched by about
        min(df, merges) of them, so the ranges hold about equal sums of that. Equal ranges of ids
        gave the first thread most of the work: ids follow first appearance, so the frequent words
        come first (the movie reviews: 85 % of the tokens in the first half). Which thread merges
        a word does not change its sum (thread order)."""
        key = (merges, self.threads)
        if getattr(self, "_merge_ranges", (None,))[0] != key:
            touched = np.minimum(self.corpus.doc_frequencies(), max(1, merges))
            ptr = np.zeros(len(touched) + 1, dtype=np.int64)
            np.cumsum(touched, out=ptr[1:])
            self._merge_ranges = (key, token_blocks(ptr, self.threads))
        return self._merge_ranges[1]

    def _thread_rows(self):
        """(T, >= K) float64 zeros, a row of K per thread written at every token by its thread: padded
        (columns past K unused) so that each row has cache lines of its own."""
        return padded(self.threads, self.K, np.float64, full=True)

    def _minibatch_cuts(self, order, minibatch):
        """(minibatches, T + 1) positions into ``order``: row b cuts minibatch b (order[b M : b M + M])
        into the threads' runs (``_cuts``)."""
        starts = range(0, self.D, minibatch)
        return np.array([lo + self._cuts(order[lo : lo + minibatch]) for lo in starts], dtype=np.int64)

    def _cuts(self, docs):
        """Positions (T + 1) cutting the document list ``docs`` into one run per thread, of
        about equal tokens (a thread's share of the work is its tokens)."""
        ptr = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum(self.doc_len[docs], out=ptr[1:])
        return token_blocks(ptr, self.threads)

    def check_invariants(self):
        """The topic totals equal the sums of the (lazily decayed) topic-word table, all finite."""
        table, totals, name = self.lazy_table
        table, totals = getattr(self, table), getattr(self, totals)
        if not (np.all(np.isfinite(table)) and np.all(np.isfinite(totals))):
            raise AssertionError(f"{self.name}: {name} has NaN or infinite entries")
        if not np.allclose(totals, table.sum(axis=0), rtol=1e-8, atol=1e-12 * max(1.0, float(np.abs(totals).max()))):
            raise AssertionError(f"{self.name}: the totals of {name} differ from its column sums")

    # -- estimates ------------------------------------------------------------------------

    def _theta_parts(self):
        """(a_dk, b_k) with theta_d ∝ a_d + b (the training log-likelihood's point estimate)."""
        return self.doc_topics(), self._prior()

    def _meta_extra(self):
        return {"minibatches": int(self.t)}

    def snapshot(self):
        phi = self.topic_word()
        phi /= phi.sum(axis=1, keepdims=True)
        totals = self.topic_totals()
        meta = {
            "model": self.name,
            "options": dict(self.opts),
            "iteration": self.iteration,
            "documents_seen": self.iteration * self.D,
            "tokens": self.N,
            **self._meta_extra(),
        }
        return Snapshot(
            phi=phi, alpha=self._prior(), topic_weight=totals / totals.sum(), vocab=self.corpus.vocab, meta=meta
        )

    def log_likelihood(self):
        """Training log-likelihood of the point estimates theta_d ∝ a_d + b and phi as in the snapshot."""
        phi_wk = np.ascontiguousarray(self.topic_word().T)
        a_dk, b_k = self._theta_parts()
        return float(kern.point_log_likelihood(self.doc_ptr, self.word_ids, self.counts, a_dk, b_k, phi_wk))


class CollapsedHdpModel(VariationalModel):
    """What PCVB0 and PCSVB0 share: the start (option init), the sticks, the per-step
    metrics and the output: phi from the smoothed expected counts (``topic_word``),
    theta_d ∝ n_dk + alpha pi_k, topic weights from the topic totals."""

    aliases = HDP_ALIASES

    def restored(self):
        super().restored()
        if not np.array_equal(np.sort(self.order), np.arange(self.K)):
            raise InputError(f"{self.name} state: order is not a permutation of the {self.K} sticks")

    def _allocate_sticks(self):
        K = self.K
        self.u = np.ones(K, dtype=np.float64)
        self.v = np.ones(K, dtype=np.float64)
        self.pi = np.full(K, 1.0 / K)
        self.order = np.arange(K, dtype=np.int64)
        self.alpha = float(self.opts["alpha"])
        self.gamma = float(self.opts["gamma"])

    def _start(self, unit_ptr, unit_words, unit_counts, n_dk, n_wk, n_k, q):
        """The start (option init) into the count tables (and q, unless it has no rows), then
        the sticks of its E_dk; u, v, pi follow, alpha and gamma keep their options' values."""
        E_sum = np.zeros(self.K)
        if self.opts["init"] == "sequential":
            self._stick_weights(self.gamma)  # pi: the prior's mean GEM(gamma)
            beta = self.opts["beta"]
            kern.sequential_init(
                unit_ptr, unit_words, unit_counts, self.alpha * self.pi, beta, self.rng, 0, n_dk, n_wk, n_k, q, E_sum
            )
            if q.shape[0]:
                kern.counts_from_q(unit_ptr, unit_words, unit_counts, q, n_dk, n_wk, n_k)
        else:
            kern.soft_init(unit_ptr, unit_words, unit_counts, self.rng, 0, n_dk, n_wk, n_k, q, E_sum)
        self._reorder()
        self.u[:] = 1.0 + E_sum  # (S2): u
        self._stick_weights(self.gamma)

    def _reorder(self):
        if self.opts["reorder"]:
            sticks.order_by_size(self.topic_totals(), self.order)

    def _stick_weights(self, gbar):
        """v from u and gbar in the current order (S2), then pi (S1)."""
        sticks.stick_v(self.order, self.u, gbar, self.v)
        sticks.stick_weights(self.order, self.u, self.v, self.pi)

    def _metrics(self, **extra):
        w = self.topic_totals() / self.topic_totals().sum()
        return super()._metrics(
            alpha=self.alpha,
            gamma=self.gamma,
            topics_above_1pct=int((w > 0.01).sum()),
            effective_topics=effective_topics(w),
            **extra,
        )

    def _prior(self):
        return self.alpha * self.pi

    def _meta_extra(self):
        return {"alpha": self.alpha, "gamma": self.gamma, "stick_order": self.order.tolist()}

    def doc_topics(self):
        """n_dk: the expected topic counts of every training document (D x K)."""
        return self.n_dk.copy()
