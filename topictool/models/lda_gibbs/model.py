"""lda-gibbs: collapsed Gibbs sampling for LDA (Griffiths & Steyvers 2004) with
Mallet's SparseLDA sampler, optional AD-LDA threads, and Mallet's hyperparameter
optimisation (asymmetric alpha, symmetric beta; Wallach 2008).

Symbols: alpha (K) the Dirichlet prior on a document's topic proportions theta_d;
beta the symmetric prior on each topic's word distribution phi_k; z the topic of
every token; n_kw, n_k, n_dk the counts of z by (topic, word), topic, (document, topic).
Option ``alpha`` is the per-topic value (Mallet's --alpha is the sum, K times it).

The sweep itself is `topictool.kernels.sparse_lda` (its docstring has the bucket
decomposition, the count layout and the speed figures behind the choice of sampler);
this class owns the arrays, the threads, the schedule of hyperparameter updates and
saving. Memory per token: 4 bytes of word id + 2 of topic (4 when K >= 32768), plus
at most one 4-byte word-topic slot per token (min(frequency, K) per word), times
(threads + 1) when threads > 1.
"""

import numpy as np

from ...errors import InputError
from ...kernels.dirichlet_opt import doc_topic_histograms, learn_parameters, learn_symmetric_concentration
from ...kernels.rng import make_streams
from ...snapshot import Snapshot
from ..base import NONNEGATIVE, PRIOR, Model
from . import kernels as kern

STATE_VERSION = 1

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


def _check_options(opts):
    if opts["K"] < 1:
        raise InputError(f"option K={opts['K']}: must be at least 1")
    if opts["K"] >= 2**30:
        raise InputError(f"option K={opts['K']}: too many topics")
    if not opts["alpha"] > 0:
        raise InputError(f"option alpha={opts['alpha']!r}: must be > 0")
    if not opts["beta"] > 0:
        raise InputError(f"option beta={opts['beta']!r}: must be > 0")
    if opts["optimize_interval"] < 0:
        raise InputError(f"option optimize_interval={opts['optimize_interval']}: must be >= 0 (0 never optimises)")
    if opts["optimize_burn_in"] < 0:
        raise InputError(f"option optimize_burn_in={opts['optimize_burn_in']}: must be >= 0")
    if opts["alpha_vector"]:
        _parse_alpha_vector(opts["alpha_vector"], opts["K"])


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

    def __init__(self, corpus, options, rng_seed, threads=1):
        self._setup(corpus, options, threads)
        self.seed = int(rng_seed) & ((1 << 64) - 1)
        self.iteration = 0
        if self.opts["alpha_vector"]:
            self.alpha = _parse_alpha_vector(self.opts["alpha_vector"], self.K)
        else:
            self.alpha = np.full(self.K, self.opts["alpha"], dtype=np.float64)
        self.beta = float(self.opts["beta"])
        self.rng = make_streams(self.seed, self.threads)
        kern.init_assignments(self.token_ptr, self.block_ptr, self.z, self.rng, self.K)
        self._rebuild_counts()

    # -- construction helpers -------------------------------------------------------

    def _setup(self, corpus, options, threads):
        self.opts = self.resolve_options(dict(options))
        _check_options(self.opts)
        threads = int(threads)
        if threads < 1:
            raise InputError(f"threads={threads}: must be at least 1")
        self.corpus = corpus
        self.K = int(self.opts["K"])
        self.W = corpus.W
        self.D = corpus.D
        self.token_ptr, self.words = corpus.tokens()
        self.N = len(self.words)
        if self.N == 0:
            raise InputError("the corpus has no tokens")
        self.threads = threads
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

    def state(self):
        return {
            "version": np.int64(STATE_VERSION),
            "z": self.z.copy(),
            "rng": self.rng.copy(),
            "alpha": self.alpha.copy(),
            "beta": np.float64(self.beta),
            "iteration": np.int64(self.iteration),
            "seed": np.uint64(self.seed),
            "threads": np.int64(self.threads),
        }

    @classmethod
    def from_state(cls, corpus, options, arrays, threads=1):
        """Rebuild from `state()`. Exact continuation needs the same corpus and threads; with a
        different thread count the RNG streams are re-derived from (seed, iteration)."""
        self = cls.__new__(cls)
        self._setup(corpus, options, threads)
        missing = [k for k in ("z", "rng", "alpha", "beta", "iteration", "seed") if k not in arrays]
        if missing:
            raise InputError(f"lda-gibbs state lacks {', '.join(missing)}")
        version = int(arrays.get("version", STATE_VERSION))
        if version > STATE_VERSION:
            raise InputError(f"lda-gibbs state version {version} is newer than this topictool understands")
        z = np.asarray(arrays["z"])
        if z.shape != (self.N,):
            raise InputError(f"state has {z.shape[0] if z.ndim else 0} assignments but the corpus has {self.N} tokens")
        if self.N and (int(z.min()) < 0 or int(z.max()) >= self.K):
            raise InputError(f"state has topic assignments outside 0..{self.K - 1} (K={self.K})")
        alpha = np.asarray(arrays["alpha"], dtype=np.float64)
        if alpha.shape != (self.K,) or not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
            raise InputError(f"state alpha must be {self.K} positive numbers")
        beta = float(arrays["beta"])
        if not (np.isfinite(beta) and beta > 0):
            raise InputError(f"state beta={beta!r} must be positive")
        self.z[:] = z
        self.alpha = alpha.copy()
        self.beta = beta
        self.iteration = int(arrays["iteration"])
        self.seed = int(arrays["seed"])
        rng = np.asarray(arrays["rng"], dtype=np.uint64)
        if rng.shape == (self.threads, 4):
            self.rng = rng.copy()
        else:
            self.rng = make_streams(
                (self.seed + 0x9E3779B97F4A7C15 * (self.iteration + 1)) & ((1 << 64) - 1), self.threads
            )
        self._rebuild_counts()
        return self

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
        n_dk = kern.doc_topic_counts(self.token_ptr, self.z, self.K)
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

    def doc_topic_counts(self):
        """n_dk (D x K int32), computed from z."""
        return kern.doc_topic_counts(self.token_ptr, self.z, self.K)
