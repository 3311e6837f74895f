"""The Model protocol: the only thing the training loop and the evaluators know
about a model, and the plumbing every family shares.

A family declares (class attributes):

    name            registry name, e.g. "lda-gibbs"
    step_unit       what one step (one -n) is: "sweep" (every token once), "pass"
                    (every document once) or "minibatch" (some documents)
    supports_threads  False: --threads > 1 is refused (never silently ignored)
    supports_mpi    True: `train --engine mpi` runs the family on P MPI ranks (False: refused
                    with one line). Such a family then gets, as its corpus, the rank's own
                    documents (mpi.RankCorpus: engine, first_doc, D_total, N_total, block_ptr,
                    first_block), does its part of a step on them and the engine's reductions
                    (engine.sum, ...) so that every rank ends the step with the same global state
    rank_state      the state entries each MPI rank holds for its own documents (e.g. ("z",
                    "rng")): each rank saves them in its part of a checkpoint; every other entry
                    is the same on every rank and rank 0 saves it once
    eval_method     how `evaluate` folds test documents in: "gibbs" or "vb" (a snapshot
                    with the burstiness front end adds its document cache either way)
    defaults        every option with its default (the type of the default is the
                    option's type); limits: option -> Range; aliases: old option
                    names (runs written before a rename) -> new name or names
    state_arrays    ndarray attributes that, with seed, iteration and rng, are the
                    whole state (state_array_names() when it depends on the options);
    state_scalars   scalar attributes in the state (name -> int or float);
    resizable       state arrays whose shape may change while training (the model
                    checks them in restored())
    STATE_VERSION   bumped when the state's meaning changes

and implements:

    allocate()      arrays for the corpus and options (no randomness)
    initialise()    the random start, drawing from self.rng
    restored()      after from_state(): check the values, rebuild what the state does
                    not hold (counts from assignments)
    upgrade_state() a state of an older STATE_VERSION in today's terms (optional)
    step() -> dict  one step_unit; returns metrics (key "tokens": the tokens this step
                    visited, when not the whole corpus; see step_tokens)
    snapshot()      the current estimate: Snapshot(phi, alpha, topic_weight, ...)
    log_likelihood()  training log-likelihood or bound
    check_invariants()  AssertionError when counts and assignments disagree (--debug-checks)
    doc_topics()    (D, K) topic counts of the training documents, or None (doc_topic_table()
                    gives them sparse, for snapshots; a family may compute that directly)
    rng_streams()   how many random streams (rows of self.rng) the model uses

Base does the rest, once for every family: option resolution and range checks,
the threads check, the empty-corpus check, state(), from_state() with every resume
check (version, missing keys, shapes, dtypes, finiteness, RNG shape), the memory
estimate and the step's token count.
"""

import math
import weakref
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..kernels.rng import MASK64, make_streams
from ..threads import Workers

STEP_UNITS = ("sweep", "pass", "minibatch")

#: count tables and token indices are int32
MAX_TOKENS = 2**31 - 1


@dataclass(frozen=True)
class Range:
    """The allowed values of a numeric option: lo < x (or lo <= x) and x <= hi (or x < hi)."""

    lo: float = None
    hi: float = None
    lo_open: bool = False
    hi_open: bool = False

    def check(self, key, value):
        ok = isinstance(value, (int, float)) and math.isfinite(value)
        if ok and self.lo is not None:
            ok = value > self.lo if self.lo_open else value >= self.lo
        if ok and self.hi is not None:
            ok = value < self.hi if self.hi_open else value <= self.hi
        if not ok:
            raise InputError(f"option {key}={value!r}: must be {self}")

    def __str__(self):
        lo = "" if self.lo is None else f"{'>' if self.lo_open else '>='} {self.lo:g}"
        hi = "" if self.hi is None else f"{'<' if self.hi_open else '<='} {self.hi:g}"
        return " and ".join(x for x in (lo, hi) if x) or "finite"


#: a Dirichlet parameter, concentration or mass: positive, and small enough that sums
#: over a vocabulary and log-gamma functions of it stay finite (1e308 gave NaN)
PRIOR = Range(0.0, 1e6, lo_open=True)
#: a Pitman-Yor discount
DISCOUNT = Range(0.0, 1.0, hi_open=True)
#: the decay of a Robbins-Monro step size rho_t = s / (tau + t)^kappa: in [0.5, 1] the steps
#: sum to infinity while their squares stay finite or nearly so (0.5 is gensim's default)
KAPPA = Range(0.5, 1.0)
NONNEGATIVE = Range(0.0)
POSITIVE = Range(0.0, lo_open=True)
POSITIVE_INT = Range(1)


class Model:
    # -- what a family declares ---------------------------------------------------------
    name = "abstract"
    step_unit = "sweep"
    supports_threads = False
    supports_mpi = False
    rank_state: tuple = ()
    eval_method = "gibbs"
    defaults: dict = {}
    limits: dict = {"K": Range(1, 2**31 - 1)}
    aliases: dict = {}
    #: bytes each (document, topic) cell takes where a model keeps doc-topic tables dense
    doc_topic_bytes = 0
    #: bytes each thread holds per (topic, word) cell of its own tables (statistics, copies)
    thread_topic_word_bytes = 0
    STATE_VERSION = 1
    state_arrays: tuple = ()
    state_scalars: dict = {}
    resizable: frozenset = frozenset()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        # a declaration out of the vocabulary is a bug of the family, found when it is imported
        if cls.step_unit not in STEP_UNITS or cls.eval_method not in ("gibbs", "vb"):
            raise TypeError(f"{cls.__name__}: step_unit {cls.step_unit!r} or eval_method {cls.eval_method!r} unknown")

    # -- what a family implements ---------------------------------------------------------

    def check_options(self, opts):
        """Rules between options beyond the per-option limits (InputError)."""

    def allocate(self):
        raise NotImplementedError

    def initialise(self):
        raise NotImplementedError

    def restored(self):
        """Called by from_state() once the state arrays and scalars are in place."""

    def step(self):
        raise NotImplementedError

    def snapshot(self):
        raise NotImplementedError

    def log_likelihood(self):
        return float("nan")

    def check_invariants(self):
        pass

    def doc_topics(self):
        return None

    def doc_topic_table(self):
        """The training documents' topic counts as a snapshot carries them (CSR, see
        snapshot.doc_topic_csr), or None when doc_topics() holds no integer counts."""
        counts = self.doc_topics()
        if counts is None or not np.issubdtype(np.asarray(counts).dtype, np.integer):
            return None
        from ..snapshot import doc_topic_csr

        return doc_topic_csr(dense=counts)

    def rng_streams(self):
        return 1

    def state_array_names(self):
        return self.state_arrays

    @classmethod
    def upgrade_state(cls, arrays, version):
        """A state written under an older STATE_VERSION in today's terms (checkpoints of runs
        started before a change must still resume); the default knows of no older version."""
        return arrays

    # -- what base does ---------------------------------------------------------------------

    def __init__(self, corpus, options, rng_seed, threads=1):
        self._build(corpus, options, threads)
        self.seed = int(rng_seed) & MASK64
        self.iteration = 0
        self.rng = make_streams(self.seed, self.rng_streams())
        self.initialise()

    @classmethod
    def check_threads(cls, threads):
        threads = int(threads)
        if threads < 1:
            raise InputError(f"--threads {threads}: must be at least 1")
        if threads > 1 and not cls.supports_threads:
            raise InputError(f"{cls.name} runs on one thread: --threads {threads} is refused rather than ignored")
        return threads

    def _build(self, corpus, options, threads):
        """Options, threads and corpus sizes, then the family's arrays (allocate)."""
        self.opts = self.resolve_options(dict(options))
        self.check_options(self.opts)
        self.threads = self.check_threads(threads)
        self.corpus = corpus
        self.K = int(self.opts["K"])
        self.W = corpus.W
        self.D = corpus.D
        self.N = int(corpus.N)
        if self.N == 0:
            raise InputError("the corpus has no tokens")
        self.allocate()

    @property
    def workers(self):
        """The model's ``threads`` threads (topictool.threads.Workers), started on first use:
        ``self.workers.run(fn)`` runs fn(0..threads-1) at once, fn a call of a nogil kernel."""
        workers = self.__dict__.get("_workers")
        if workers is None or workers.threads != self.threads:
            workers = self._workers = Workers(self.threads)
            weakref.finalize(self, workers.close)  # the threads end with the model
        return workers

    def state(self):
        """Everything needed to continue exactly: the declared arrays and scalars, the
        seed, the iteration and the random streams."""
        out = {
            "version": np.int64(self.STATE_VERSION),
            "seed": np.uint64(self.seed),
            "iteration": np.int64(self.iteration),
            "rng": self.rng.copy(),
        }
        for name in self.state_array_names():
            out[name] = getattr(self, name).copy()
        for name, kind in self.state_scalars.items():
            out[name] = np.float64(getattr(self, name)) if kind is float else np.int64(getattr(self, name))
        return out

    @classmethod
    def from_state(cls, corpus, options, arrays, threads=1):
        """The inverse of state(), for the same corpus, options and threads; InputError on
        any mismatch (a state from another version, corpus, K or options)."""
        self = cls.__new__(cls)
        self._build(corpus, options, threads)
        version = int(arrays.get("version", cls.STATE_VERSION))
        if version > cls.STATE_VERSION:
            raise InputError(f"{cls.name} state version {version} is newer than this topictool understands")
        if version < cls.STATE_VERSION:
            arrays = cls.upgrade_state(dict(arrays), version)
        names = tuple(self.state_array_names())
        missing = [k for k in ("seed", "iteration", "rng", *names, *cls.state_scalars) if k not in arrays]
        if missing:
            raise InputError(
                f"{cls.name} state lacks {', '.join(missing)} (written by another version, or with other options?)"
            )
        self.seed = int(arrays["seed"])
        self.iteration = int(arrays["iteration"])
        rng = np.asarray(arrays["rng"])
        if rng.shape != (self.rng_streams(), 4) or rng.dtype != np.uint64:
            raise InputError(f"{cls.name} state: rng has shape {rng.shape}, expected ({self.rng_streams()}, 4)")
        self.rng = rng.copy()
        for name in names:
            fresh = getattr(self, name)
            a = np.asarray(arrays[name])
            same = a.ndim == fresh.ndim if name in cls.resizable else a.shape == fresh.shape
            if not same:
                raise InputError(
                    f"{cls.name} state: {name} has shape {a.shape}, expected {fresh.shape} "
                    f"(same corpus and K={self.K}?)"
                )
            if a.dtype.kind not in "biuf" or (a.dtype.kind == "f" and not np.all(np.isfinite(a))):
                raise InputError(f"{cls.name} state: {name} is not a finite numeric array")
            setattr(self, name, np.ascontiguousarray(a, dtype=fresh.dtype).copy())
        for name, kind in cls.state_scalars.items():
            v = kind(arrays[name])
            if kind is float and not np.isfinite(v):
                raise InputError(f"{cls.name} state: {name}={v!r} is not finite")
            setattr(self, name, v)
        self.restored()
        return self

    def step_tokens(self, metrics):
        """Tokens the step that returned ``metrics`` visited (tokens/s is per step)."""
        return int(metrics.get("tokens", self.N))

    @classmethod
    def resolve_options(cls, given):
        """Merge ``given`` over ``defaults``; unknown keys and wrong types are InputError.
        Old names (``aliases``) are accepted for runs written before a rename."""
        opts = dict(cls.defaults)
        renamed = _renamed(cls, given)
        # an error about a value names the option as the user wrote it
        written = {new: f"{new} (given as {old})" for old, new in _pairs(cls, given) if old != new}
        for key, value in renamed.items():
            if key not in cls.defaults:
                known = ", ".join(sorted(cls.defaults))
                raise InputError(f"unknown option {key!r} for model {cls.name} (known: {known})")
            opts[key] = _coerce(written.get(key, key), value, cls.defaults[key])
        for key, rng in cls.limits.items():
            if key in opts and not isinstance(opts[key], bool):
                rng.check(written.get(key, key), opts[key])
        return opts

    @classmethod
    def memory_estimate(cls, D, W, N, options, threads=1):
        """A lower bound of the bytes training allocates: tokens (word id and topic),
        the word-topic counts (int32) and the snapshot's phi (float64), dense
        doc-topic tables where the model has them, and the threads' own topic-word tables
        (thread_topic_word_bytes per cell and thread)."""
        K = int(options.get("K", 1))
        per_thread = cls.thread_topic_word_bytes * K * W if int(threads) > 1 else 0
        return 8 * N + 12 * K * W + cls.doc_topic_bytes * D * K + int(threads) * per_thread

    @classmethod
    def check_size(cls, corpus, options, threads=1):
        """InputError before anything is allocated when the corpus or K cannot fit."""
        from ..memory import check_memory

        N = int(corpus.N)
        need = cls.memory_estimate(corpus.D, corpus.W, N, options, threads)
        check_memory(need, f"training {cls.name} (D={corpus.D:,}, W={corpus.W:,}, N={N:,}, K={options.get('K')})")
        if N > MAX_TOKENS:
            raise InputError(f"the corpus has {N:,} tokens; topictool's count tables hold at most {MAX_TOKENS:,}")


def _pairs(cls, given):
    """(name as given, today's name) for every option in ``given`` (an old name may map to several)."""
    for key in given:
        new = cls.aliases.get(key, key)
        for name in (new,) if isinstance(new, str) else new:
            yield key, name


def _renamed(cls, given):
    """``given`` with old option names replaced by the new ones."""
    out, source = {}, {}
    for key, name in _pairs(cls, given):
        value = given[key]
        if name in out and out[name] != value:
            raise InputError(f"option {name} is given twice with different values (as {source[name]} and {key})")
        out[name], source[name] = value, key
    return out


def effective_topics(weight):
    """exp of the entropy of the (normalised) topic weights: K when uniform, 1 when one topic
    holds everything (hca's "exp.ent"); zero weights ignored."""
    w = np.asarray(weight, dtype=np.float64).ravel()
    w = w[w > 0]
    if w.size == 0:
        return 0.0
    w = w / w.sum()
    return float(np.exp(-(w * np.log(w)).sum()))


def doc_topic_counts(token_ptr, z, K):
    """n_dk (D x K int32) from the topic of every token, documents as ``token_ptr`` cuts them."""
    D = len(token_ptr) - 1
    doc = np.repeat(np.arange(D, dtype=np.int64), np.diff(token_ptr))
    return np.bincount(doc * K + z, minlength=D * K).reshape(D, K).astype(np.int32)


def _coerce(key, value, default):
    """Convert a --set string (or TOML value) to the type of the default."""
    try:
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            s = str(value).strip().lower()
            if s in ("1", "true", "yes", "on"):
                return True
            if s in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(default, int):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            v = int(value)
            if not -(2**31) < v < 2**31:  # every integer option sizes or counts something int32
                raise ValueError
            return v
        if isinstance(default, float):
            v = float(value)
            if not np.isfinite(v):
                raise ValueError
            return v
        if default is None or isinstance(default, str):
            return value if not isinstance(value, str) else value
    except (TypeError, ValueError):
        pass
    else:
        return value
    raise InputError(f"option {key}={value!r}: expected {type(default).__name__}")
