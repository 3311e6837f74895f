"""Document-completion hold-out: which tokens of a test document are observed
and which are held out (DESIGN.md, "Evaluation definitions").

For each document its tokens are expanded (word ids repeated by count, in the
corpus's CSR order) and put in a seeded random order. The order of document d
depends only on (seed, d): every token gets a 64-bit key from a hash of
(seed, d, position in the expanded document), and tokens are sorted by key
within the document. Then

    every:N      holds out the tokens at positions N-1, 2N-1, ... of that order
                 (so floor(n_d / N) tokens of a document of n_d tokens);
    fraction:F   holds out the first round(F * n_d) tokens of that order
                 (round half up), i.e. a uniformly random subset of that size.

Because the split is a function of the test corpus and the seed alone, two
models evaluated on the same TEST with the same seed see the same held-out
tokens (models with different vocabularies drop their own out-of-vocabulary
tokens afterwards; see evaluate/completion.py).
"""

import re
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

_SPEC = re.compile(r"^\s*(every|fraction)\s*:\s*([^\s]+)\s*$")


@dataclass(frozen=True)
class HoldoutSpec:
    kind: str  # "every" or "fraction"
    value: float  # N (an int >= 2) or F (0 < F < 1)

    def __str__(self):
        return f"{self.kind}:{int(self.value) if self.kind == 'every' else self.value:g}"


def parse_holdout(spec):
    """'every:5' / 'fraction:0.2' -> HoldoutSpec; InputError on anything else."""
    if isinstance(spec, HoldoutSpec):
        return spec
    m = _SPEC.match(str(spec))
    if not m:
        raise InputError(f"--holdout {spec!r}: expected every:N (an integer N >= 2) or fraction:F (0 < F < 1)")
    kind, raw = m.groups()
    if kind == "every":
        try:
            n = int(raw)
        except ValueError:
            raise InputError(f"--holdout {spec!r}: N must be an integer >= 2") from None
        if not 2 <= n < 2**31:
            raise InputError(
                f"--holdout {spec!r}: N must be an integer >= 2 and < 2**31 (every:1 would hold out everything)"
            )
        return HoldoutSpec("every", n)
    try:
        f = float(raw)
    except ValueError:
        raise InputError(f"--holdout {spec!r}: F must be a number with 0 < F < 1") from None
    if not (0.0 < f < 1.0):
        raise InputError(f"--holdout {spec!r}: F must be a number with 0 < F < 1")
    return HoldoutSpec("fraction", f)


@dataclass(frozen=True)
class HoldoutSplit:
    """Observed and held-out tokens of D documents, CSR-like.

    observed_ptr int64 (D+1), observed_words int32: document d observes
        observed_words[observed_ptr[d]:observed_ptr[d+1]]
    heldout_ptr  int64 (D+1), heldout_words  int32: likewise for held-out tokens
    Tokens of a document appear in their random order.
    """

    observed_ptr: np.ndarray
    observed_words: np.ndarray
    heldout_ptr: np.ndarray
    heldout_words: np.ndarray

    @property
    def D(self):
        return len(self.observed_ptr) - 1

    def drop_words(self, keep):
        """Remove tokens whose word fails the boolean mask ``keep`` (indexed by word id).

        Returns (new split, observed tokens dropped, held-out tokens dropped).
        """
        obs_ptr, obs, n_obs = _filter(self.observed_ptr, self.observed_words, keep)
        held_ptr, held, n_held = _filter(self.heldout_ptr, self.heldout_words, keep)
        return HoldoutSplit(obs_ptr, obs, held_ptr, held), n_obs, n_held

    def map_words(self, mapping):
        """Replace every word id w by mapping[w] (all tokens must map to >= 0)."""
        return HoldoutSplit(
            self.observed_ptr,
            mapping[self.observed_words].astype(np.int32),
            self.heldout_ptr,
            mapping[self.heldout_words].astype(np.int32),
        )


def _filter(ptr, words, keep):
    mask = keep[words]
    D = len(ptr) - 1
    doc = np.repeat(np.arange(D, dtype=np.int64), np.diff(ptr))
    new_ptr = np.zeros(D + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc[mask], minlength=D), out=new_ptr[1:])
    return new_ptr, words[mask].astype(np.int32, copy=False), int(len(words) - mask.sum())


# splitmix64's finaliser, vectorised over uint64 arrays (wrap-around arithmetic).
_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix64(x):
    x = x ^ (x >> np.uint64(30))
    x = x * _C1
    x = x ^ (x >> np.uint64(27))
    x = x * _C2
    return x ^ (x >> np.uint64(31))


def token_keys(token_ptr, seed):
    """A pseudo-random uint64 key per token that depends only on (seed, document, position)."""
    D = len(token_ptr) - 1
    lengths = np.diff(token_ptr)
    doc = np.repeat(np.arange(D, dtype=np.uint64), lengths)
    pos = (np.arange(token_ptr[-1], dtype=np.int64) - np.repeat(token_ptr[:-1], lengths)).astype(np.uint64)
    with np.errstate(over="ignore"):
        s = _mix64(np.full(1, int(seed) & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64) + _GOLDEN)
        per_doc = _mix64(s ^ ((doc + np.uint64(1)) * _GOLDEN))
        return _mix64(per_doc + (pos + np.uint64(1)) * _C2)


def random_order(token_ptr, seed):
    """Permutation of all tokens that shuffles each document within itself."""
    D = len(token_ptr) - 1
    doc = np.repeat(np.arange(D, dtype=np.int64), np.diff(token_ptr))
    return np.lexsort((token_keys(token_ptr, seed), doc))


def split_tokens(token_ptr, words, spec="every:5", seed=1):
    """Split expanded tokens (token_ptr int64 (D+1), words int32 (N)) into observed and held out."""
    spec = parse_holdout(spec)
    token_ptr = np.asarray(token_ptr, dtype=np.int64)
    words = np.asarray(words, dtype=np.int32)
    D = len(token_ptr) - 1
    lengths = np.diff(token_ptr)
    order = random_order(token_ptr, seed)
    shuffled = words[order]
    pos = np.arange(len(words), dtype=np.int64) - np.repeat(token_ptr[:-1], lengths)
    if spec.kind == "every":
        n = int(spec.value)
        held = (pos + 1) % n == 0
    else:
        n_held = np.floor(spec.value * lengths + 0.5).astype(np.int64)
        held = pos < np.repeat(n_held, lengths)
    doc = np.repeat(np.arange(D, dtype=np.int64), lengths)
    held_ptr = np.zeros(D + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc[held], minlength=D), out=held_ptr[1:])
    obs_ptr = token_ptr - held_ptr
    return HoldoutSplit(obs_ptr, shuffled[~held].astype(np.int32), held_ptr, shuffled[held].astype(np.int32))


def split_corpus(corpus, spec="every:5", seed=1):
    """The document-completion split of a Corpus (see the module docstring)."""
    token_ptr, words = corpus.tokens()
    return split_tokens(token_ptr, words, spec, seed)
