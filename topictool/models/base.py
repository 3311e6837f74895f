"""The Model protocol: the only thing the training loop knows about a model.

A model family is a class with these members (see DESIGN.md):

    name: str                                 registry name, e.g. "lda-gibbs"
    defaults: dict                            every option with its default; keys
                                              outside it are rejected by the loop
    __init__(corpus, options, rng_seed, threads=1)   build state (arrays only)
    step() -> dict                            one iteration; returns metrics
    snapshot() -> Snapshot                    current estimate of phi, alpha, weights
    state() -> dict[str, np.ndarray]          everything needed to resume exactly
    from_state(corpus, options, arrays, threads=1)   classmethod; inverse of state()
    check_invariants()                        raise AssertionError if counts and
                                              assignments disagree (debug-checks mode)
    log_likelihood() -> float                 training log-likelihood or bound
"""

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

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
NONNEGATIVE = Range(0.0)
POSITIVE = Range(0.0, lo_open=True)
POSITIVE_INT = Range(1)


class Model:
    name = "abstract"
    defaults: dict = {}
    #: option name -> Range, checked by resolve_options (options not named: type only)
    limits: dict = {"K": Range(1, 2**31 - 1)}
    #: bytes each (document, topic) cell takes where a model keeps doc-topic tables dense
    doc_topic_bytes = 0

    def __init__(self, corpus, options, rng_seed, threads=1):
        raise NotImplementedError

    def step(self):
        raise NotImplementedError

    def snapshot(self):
        raise NotImplementedError

    def state(self):
        raise NotImplementedError

    @classmethod
    def from_state(cls, corpus, options, arrays, threads=1):
        raise NotImplementedError

    def check_invariants(self):
        pass

    def log_likelihood(self):
        return float("nan")

    @classmethod
    def resolve_options(cls, given):
        """Merge ``given`` over ``defaults``; unknown keys and wrong types are InputError."""
        opts = dict(cls.defaults)
        for key, value in given.items():
            if key not in cls.defaults:
                known = ", ".join(sorted(cls.defaults))
                raise InputError(f"unknown option {key!r} for model {cls.name} (known: {known})")
            opts[key] = _coerce(key, value, cls.defaults[key])
        for key, rng in cls.limits.items():
            if key in opts and not isinstance(opts[key], bool):
                rng.check(key, opts[key])
        return opts

    @classmethod
    def memory_estimate(cls, D, W, N, options, threads=1):
        """A lower bound of the bytes training allocates: tokens (word id and topic),
        the word-topic counts (int32) and the snapshot's phi (float64), dense
        doc-topic tables where the model has them."""
        K = int(options.get("K", 1))
        return 8 * N + 12 * K * W + cls.doc_topic_bytes * D * K

    @classmethod
    def check_size(cls, corpus, options, threads=1):
        """InputError before anything is allocated when the corpus or K cannot fit."""
        from ..memory import check_memory

        N = int(corpus.N)
        need = cls.memory_estimate(corpus.D, corpus.W, N, options, threads)
        check_memory(need, f"training {cls.name} (D={corpus.D:,}, W={corpus.W:,}, N={N:,}, K={options.get('K')})")
        if N > MAX_TOKENS:
            raise InputError(f"the corpus has {N:,} tokens; topictool's count tables hold at most {MAX_TOKENS:,}")


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
