"""lda-gibbs: collapsed Gibbs sampling for LDA (Griffiths & Steyvers 2004) with
Mallet's SparseLDA sampler, optional AD-LDA threads, and Mallet's hyperparameter
optimisation (asymmetric alpha, symmetric beta; Wallach 2008).

Symbols: alpha (K) the Dirichlet prior on a document's topic proportions theta_d;
beta the symmetric prior on each topic's word distribution phi_k; z the topic of
every token; n_kw, n_k, n_dk the counts of z by (topic, word), topic, (document, topic).
Option ``alpha`` is the per-topic value (Mallet's --alpha is the sum, K times it).

The sweep itself is `kernels.py` beside this file (its docstring has the bucket
decomposition, the count layout and the speed figures behind the choice of sampler);
this class owns the arrays, the threads, the schedule of hyperparameter updates and
saving. Memory per token: 4 bytes of word id + 2 of topic (4 when K >= 32768), plus
at most one 4-byte word-topic slot per token (min(frequency, K) per word), times
(threads + 1) when threads > 1.
"""

import numpy as np

from ...errors import InputError
from ...kernels.dirichlet_opt import doc_topic_histograms, learn_parameters, learn_symmetric_concentration
from ...snapshot import Snapshot, doc_topic_csr
from ..base import NONNEGATIVE, PRIOR, Model, doc_topic_counts
from . import kernels as kern

# Mallet's Gamma hyperprior on each alpha_k (ParallelTopicModel.optimizeAlpha).
ALPHA_PRIOR_SHAPE = 1.001
ALPHA_PRIOR_SCALE = 1.0
# learnSymmetricConcentration: at most this many fixed-point steps per beta update.
BETA_ITERATIONS = 200
BETA_TOLERANCE = 1e-12
# Learned hyperparameters are kept at least this large so that no division by zero
# or log(0) can follow from a topic that lost all of its documents.
HYPER_FLOOR = 1e-12


def _parse_alpha_vector(text, K):
    parts = [p for p in text.replace(" ", "").split(",") if p]
    try:
        values = np.array([float(p) for p in parts], dtype=np.float64)
    except ValueError:
        raise InputError(f"option alpha_vector={text!r}: expected {K} comma-separated numbers") from None
    if values.shape != (K,):
        raise InputError(f"option alpha_vector has {len(values)} values but K={K}")
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        bad = values[~(np.isfinite(values) & (values > 0))][0]
        raise InputError(f"option alpha_vector: every value must be > 0, got {bad!r}")
    return values


def _blocks(token_ptr, threads):
    """Document boundaries (threads+1) cutting the corpus into blocks of ~equal token counts."""
    N = token_ptr[-1]
    targets = (np.arange(threads + 1, dtype=np.int64) * N) // threads
    ptr = np.searchsorted(token_ptr, targets, side="left").astype(np.int64)
    ptr[0] = 0
    ptr[-1] = len(token_ptr) - 1
    return np.maximum.accumulate(ptr)


class LdaGibbs(Model):
    name = "lda-gibbs"
    defaults = {
        "K": 100,
        "alpha": 0.1,
        "alpha_vector": "",
        "beta": 0.01,
        "optimize_alpha": False,
        "optimize_interval": 10,
        "optimize_burn_in": 50,
        "optimize_beta": True,
    }
    limits = {
        **Model.limits,
        "alpha": PRIOR,
        "beta": PRIOR,
        "optimize_interval": NONNEGATIVE,
        "optimize_burn_in": NONNEGATIVE,
    }

    step_unit = "sweep"
    supports_threads = True  # AD-LDA document blocks (see step)
    eval_method = "gibbs"
    state_arrays = ("z", "alpha")
    state_scalars = {"beta": float}

    def check_options(self, opts):
        if opts["K"] >= 2**30:
            raise InputError(f"option K={opts['K']}: too many topics")
        if opts["alpha_vector"]:
            _parse_alpha_vector(opts["alpha_vector"], opts["K"])

    def rng_streams(self):
        return self.threads  # one stream per thread's document block

    def allocate(self):
        self.token_ptr, self.words = self.corpus.tokens()
        threads = self.threads
        self.block_ptr = _blocks(self.token_ptr, threads)
        self.z = np.zeros(self.N, dtype=np.int16 if self.K < 32768 else np.int32)
        self.TB = kern.topic_bits(self.K)
        max_freq = int(np.bincount(self.words, minlength=self.W).max())
        self.tw_ptr = kern.word_slots(self.words, self.W, self.K)
        self.tw = np.zeros(self.tw_ptr[-1], dtype=kern.packed_dtype(self.K, max_freq))
        self.n_k = np.zeros(self.K, dtype=np.int32)
        if threads > 1:
            self.tw_local = np.zeros((threads, len(self.tw)), dtype=self.tw.dtype)
            self.n_k_local = np.zeros((threads, self.K), dtype=np.int32)
        if self.opts["alpha_vector"]:
            self.alpha = _parse_alpha_vector(self.opts["alpha_vector"], self.K)
        else:
            self.alpha = np.full(self.K, self.opts["alpha"], dtype=np.float64)
        self.beta = float(self.opts["beta"])

    def initialise(self):
        kern.init_assignments(self.token_ptr, self.block_ptr, self.z, self.rng, self.K)
        self._rebuild_counts()

    def restored(self):
        if int(self.z.min()) < 0 or int(self.z.max()) >= self.K:
            raise InputError(f"state has topic assignments outside 0..{self.K - 1} (K={self.K})")
        if np.any(self.alpha <= 0):
            raise InputError(f"state alpha must be {self.K} positive numbers")
        if not self.beta > 0:
            raise InputError(f"state beta={self.beta!r} must be positive")
        self._rebuild_counts()

    def _rebuild_counts(self):
        """n_kw and n_k from z (and the threads' copies of them)."""
        kern.build_counts(self.words, self.z, self.tw_ptr, self.tw, self.n_k, self.TB)
        if self.threads > 1:
            self.tw_local[:] = self.tw
            self.n_k_local[:] = self.n_k

    # -- the Model protocol ---------------------------------------------------------

    def step(self):
        """One Gibbs sweep over every token, then the hyperparameter update when due."""
        if self.threads == 1:
            kern.sample_block(
                self.token_ptr,
                self.words,
                self.z,
                self.tw_ptr,
                self.tw,
                self.n_k,
                self.alpha,
                self.beta,
                self.rng,
                0,
                0,
                self.D,
                self.TB,
            )
        else:
            kern.sweep_parallel(
                self.token_ptr,
                self.words,
                self.z,
                self.block_ptr,
                self.tw_ptr,
                self.tw_local,
                self.n_k_local,
                self.alpha,
                self.beta,
                self.rng,
                self.TB,
            )
            kern.merge_parallel(self.tw_ptr, self.tw, self.tw_local, self.n_k, self.n_k_local, self.TB)
        self.iteration += 1
        o = self.opts
        optimized = False
        if (
            o["optimize_alpha"]
            and o["optimize_interval"] > 0
            and self.iteration > o["optimize_burn_in"]
            and self.iteration % o["optimize_interval"] == 0
        ):
            self._optimize_hyperparameters()
            optimized = True
        return {
            "alpha_sum": float(self.alpha.sum()),
            "beta": float(self.beta),
            "active_topics": int(np.count_nonzero(self.n_k)),
            "hyper_optimized": optimized,
        }

    def _optimize_hyperparameters(self):
        """Mallet's optimizeAlpha (one fixed-point step) and optimizeBeta (to convergence)."""
        topic_doc_hist, doc_len_hist = doc_topic_histograms(self.token_ptr, self.z, self.K)
        learn_parameters(self.alpha, topic_doc_hist, doc_len_hist, ALPHA_PRIOR_SHAPE, ALPHA_PRIOR_SCALE, 1)
        np.maximum(self.alpha, HYPER_FLOOR, out=self.alpha)
        if self.opts["optimize_beta"]:
            count_hist, size_hist = kern.word_topic_histograms(self.tw, self.n_k, self.TB)
            beta_sum = learn_symmetric_concentration(
                count_hist, size_hist, self.W, self.beta * self.W, BETA_ITERATIONS, BETA_TOLERANCE
            )
            self.beta = max(float(beta_sum) / self.W, HYPER_FLOOR)
        if not (np.all(np.isfinite(self.alpha)) and np.isfinite(self.beta)):
            raise FloatingPointError("hyperparameter optimisation produced a non-finite value")

    def log_likelihood(self):
        """Collapsed joint log p(w, z | alpha, beta), as Mallet's modelLogLikelihood."""
        return float(
            kern.log_likelihood(self.token_ptr, self.z, self.tw, self.n_k, self.alpha, self.beta, self.W, self.TB)
        )

    def snapshot(self):
        phi = kern.topic_word_mean(self.tw_ptr, self.tw, self.n_k, self.beta, self.TB)
        meta = {
            "model": self.name,
            "options": dict(self.opts),
            "iteration": self.iteration,
            "alpha_sum": float(self.alpha.sum()),
            "beta": float(self.beta),
            "threads": self.threads,
            "tokens": self.N,
        }
        return Snapshot(
            phi=phi,
            alpha=self.alpha.copy(),
            topic_weight=self.n_k.astype(np.float64) / self.N,
            vocab=self.corpus.vocab,
            meta=meta,
        )

    def check_invariants(self):
        """Raise AssertionError unless every count table agrees with z, recomputed from scratch."""

        def fail(msg):
            raise AssertionError(f"lda-gibbs invariant broken: {msg}")

        if int(self.n_k.sum(dtype=np.int64)) != self.N:
            fail(f"n_k sums to {int(self.n_k.sum())}, not N={self.N}")
        tw = np.zeros_like(self.tw)
        n_k = np.zeros_like(self.n_k)
        kern.build_counts(self.words, self.z, self.tw_ptr, tw, n_k, self.TB)
        if not np.array_equal(n_k, self.n_k):
            fail("n_k disagrees with z")
        if not np.array_equal(tw, self.tw):
            fail("n_kw (word-topic slots) disagrees with z")
        if int((self.tw >> self.TB).sum(dtype=np.int64)) != self.N:
            fail("n_kw does not sum to N")
        n_dk = self.doc_topics()
        if not np.array_equal(n_dk.sum(axis=1, dtype=np.int64), np.diff(self.token_ptr)):
            fail("n_dk rows do not sum to the document lengths")
        if not np.array_equal(n_dk.sum(axis=0, dtype=np.int64), self.n_k.astype(np.int64)):
            fail("n_dk columns disagree with n_k")
        if self.threads > 1:
            if not (np.all(self.tw_local == self.tw) and np.all(self.n_k_local == self.n_k)):
                fail("a thread's copy of the counts differs from the merged counts")
        if not (np.all(np.isfinite(self.alpha)) and np.all(self.alpha > 0) and self.beta > 0):
            fail("hyperparameters are not positive and finite")

    # -- extras ---------------------------------------------------------------------

    def doc_topics(self):
        """n_dk (D x K int32), computed from z."""
        return doc_topic_counts(self.token_ptr, self.z, self.K)

    def doc_topic_table(self):
        return doc_topic_csr(token_ptr=self.token_ptr, z=self.z, K=self.K)  # without the dense table
