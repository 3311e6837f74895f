"""What the four variational models share on the Python side: corpus arrays,
option checks, the state() / from_state() round trip, and metrics; and what the two
collapsed HDP models (PCVB0, PCSVB0) share on output."""

import numpy as np

from ...errors import InputError
from ...kernels.rng import make_streams, shuffle
from ...snapshot import Snapshot
from ..base import NONNEGATIVE, POSITIVE, PRIOR, Model, effective_topics  # noqa: F401 (re-exported)
from .kernels import point_log_likelihood

_MASK64 = (1 << 64) - 1


def check_positive(opts, *names):
    for name in names:
        v = opts[name]
        if not (np.isfinite(v) and v > 0):
            raise InputError(f"option {name}={v!r}: must be > 0")


def check_at_least(opts, name, low):
    if opts[name] < low:
        raise InputError(f"option {name}={opts[name]!r}: must be at least {low}")


def check_kappa(opts, name="kappa"):
    """0 < kappa <= 1; (0.5, 1] is the range with the Robbins-Monro guarantee, 0.5 is gensim's default."""
    v = opts[name]
    if not (0.0 < v <= 1.0):
        raise InputError(
            f"option {name}={v!r}: must lie in (0, 1] (in (0.5, 1] the step sizes are guaranteed to converge)"
        )


def check_K(opts):
    if opts["K"] < 1:
        raise InputError(f"option K={opts['K']}: must be at least 1")
    if opts["K"] > 1 << 20:
        raise InputError(f"option K={opts['K']}: too many topics")


def check_init(opts):
    if opts["init"] not in ("sequential", "random"):
        raise InputError(f"option init={opts['init']!r}: expected sequential or random")


class VariationalModel(Model):
    """Base of the variational family.

    Subclasses set ``name``, ``defaults``, ``_arrays`` (names of ndarray attributes
    that make up the state; their shapes and dtypes are those of a fresh
    ``_allocate()``) and ``_scalars`` (name -> float or int), and implement
    ``_check_options``, ``_allocate``, ``_initialise`` and ``step``.
    """

    eval_method = "vb"
    limits = {
        **Model.limits,
        **{k: PRIOR for k in ("alpha", "beta", "eta", "gamma", "s_c", "s_d", "s_h", "s_phi", "s_theta", "local_tol")},
        # step sizes s / (tau + t)^kappa start at t = 0: tau must be positive
        **{k: POSITIVE for k in ("tau_c", "tau_d", "tau_h", "tau_phi", "tau_theta", "tau0")},
        **{k: NONNEGATIVE for k in ("burn_in", "minibatch", "cold_passes")},
    }
    doc_topic_bytes = 8
    STATE_VERSION = 1
    _arrays = ()
    _scalars = {}

    def __init__(self, corpus, options, rng_seed, threads=1):
        self._setup(corpus, options, threads)
        self.seed = int(rng_seed) & _MASK64
        self.rng = make_streams(self.seed, 1)
        self.epoch = 0
        self.documents_seen = 0
        self._initialise()

    # -- construction ----------------------------------------------------------------

    def _setup(self, corpus, options, threads):
        self.opts = self.resolve_options(dict(options))
        self._check_options(self.opts)
        threads = int(threads)
        if threads < 1:
            raise InputError(f"threads={threads}: must be at least 1")
        self.threads = threads  # the kernels are sequential; accepted for the protocol
        self.corpus = corpus
        self.K = int(self.opts["K"])
        self.D = corpus.D
        self.W = corpus.W
        self.doc_ptr = np.ascontiguousarray(corpus.doc_ptr, dtype=np.int64)
        self.word_ids = np.ascontiguousarray(corpus.word_ids, dtype=np.int32)
        self.counts = np.ascontiguousarray(corpus.counts, dtype=np.int32)
        self.doc_len = corpus.doc_lengths().astype(np.int64)
        self.N = int(self.doc_len.sum())
        if self.N == 0:
            raise InputError("the corpus has no tokens")
        self._allocate()

    def _check_options(self, opts):
        raise NotImplementedError

    def _allocate(self):
        raise NotImplementedError

    def _initialise(self):
        raise NotImplementedError

    # -- state -------------------------------------------------------------------------

    def state(self):
        out = {
            "version": np.int64(self.STATE_VERSION),
            "rng": self.rng.copy(),
            "seed": np.uint64(self.seed),
            "epoch": np.int64(self.epoch),
            "documents_seen": np.int64(self.documents_seen),
        }
        for name in self._arrays:
            out[name] = getattr(self, name).copy()
        for name, kind in self._scalars.items():
            out[name] = np.float64(getattr(self, name)) if kind is float else np.int64(getattr(self, name))
        return out

    @classmethod
    def from_state(cls, corpus, options, arrays, threads=1):
        self = cls.__new__(cls)
        self._setup(corpus, options, threads)
        need = ["rng", "seed", "epoch", "documents_seen", *cls._arrays, *cls._scalars]
        missing = [k for k in need if k not in arrays]
        if missing:
            raise InputError(f"{cls.name} state lacks {', '.join(missing)}")
        version = int(arrays.get("version", cls.STATE_VERSION))
        if version > cls.STATE_VERSION:
            raise InputError(f"{cls.name} state version {version} is newer than this topictool understands")
        rng = np.asarray(arrays["rng"], dtype=np.uint64)
        if rng.shape != (1, 4):
            raise InputError(f"{cls.name} state: rng has shape {rng.shape}, expected (1, 4)")
        self.rng = rng.copy()
        self.seed = int(arrays["seed"])
        self.epoch = int(arrays["epoch"])
        self.documents_seen = int(arrays["documents_seen"])
        for name in cls._arrays:
            fresh = getattr(self, name)
            a = np.asarray(arrays[name])
            if a.shape != fresh.shape:
                raise InputError(
                    f"{cls.name} state: {name} has shape {a.shape}, expected {fresh.shape} "
                    f"(same corpus and K={self.K}?)"
                )
            if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                raise InputError(f"{cls.name} state: {name} has NaN or infinite entries")
            setattr(self, name, np.ascontiguousarray(a, dtype=fresh.dtype).copy())
        for name, kind in cls._scalars.items():
            v = kind(arrays[name])
            if kind is float and not np.isfinite(v):
                raise InputError(f"{cls.name} state: {name}={v!r} is not finite")
            setattr(self, name, v)
        self._after_restore()
        return self

    def _after_restore(self):
        pass

    # -- shared pieces -----------------------------------------------------------------

    def _check_table(self, table, totals, name):
        """A lazily decayed table and its totals agree (totals = column sums) and are finite."""
        if not (np.all(np.isfinite(table)) and np.all(np.isfinite(totals))):
            raise AssertionError(f"{self.name}: {name} has NaN or infinite entries")
        if not np.allclose(totals, table.sum(axis=0), rtol=1e-8, atol=1e-12 * max(1.0, float(np.abs(totals).max()))):
            raise AssertionError(f"{self.name}: the totals of {name} differ from its column sums")

    def _epoch_order(self):
        """A fresh random document order for this pass (from the model's stream)."""
        order = np.arange(self.D, dtype=np.int64)
        shuffle(order, self.rng, 0)
        return order

    def _meta(self, **extra):
        meta = {
            "model": self.name,
            "options": dict(self.opts),
            "epoch": self.epoch,
            "documents_seen": self.documents_seen,
            "tokens": self.N,
        }
        meta.update(extra)
        return meta


class CollapsedHdpModel(VariationalModel):
    """What PCVB0 and PCSVB0 share on output: phi from the smoothed expected counts
    (``topic_word``), theta_d ∝ n_dk + alpha pi_k, topic weights from the topic totals."""

    def topic_totals(self):
        """Expected tokens of each topic (K,)."""
        raise NotImplementedError

    def snapshot(self):
        phi = self.topic_word()
        phi /= phi.sum(axis=1, keepdims=True)
        totals = self.topic_totals()
        return Snapshot(
            phi=phi,
            alpha=self.alpha * self.pi,
            topic_weight=totals / totals.sum(),
            vocab=self.corpus.vocab,
            meta=self._meta(alpha=self.alpha, gamma=self.gamma, stick_order=self.order.tolist()),
        )

    def log_likelihood(self):
        """Training log-likelihood of theta_d ∝ n_dk + alpha pi_k and phi as in the snapshot."""
        phi_wk = np.ascontiguousarray(self.topic_word().T)
        return float(
            point_log_likelihood(self.doc_ptr, self.word_ids, self.counts, self.n_dk, self.alpha * self.pi, phi_wk)
        )
