"""The Corpus type: documents as CSR rows of (word id, count) over a vocabulary."""

import hashlib
from dataclasses import dataclass

import numba
import numpy as np

from .. import kernels  # noqa: F401  (before any kernel: the cache key, kernels/__init__.py)
from ..errors import InputError


@dataclass(frozen=True, eq=False)
class Corpus:
    """Bag-of-words documents.

    doc_ptr  int64 (D+1): row d is word_ids[doc_ptr[d]:doc_ptr[d+1]]
    word_ids int32 (nnz): ascending and unique within a row
    counts   int32 (nnz): positive
    vocab    tuple of str (W): word id -> word
    """

    doc_ptr: np.ndarray
    word_ids: np.ndarray
    counts: np.ndarray
    vocab: tuple

    @property
    def D(self):
        return len(self.doc_ptr) - 1

    @property
    def W(self):
        return len(self.vocab)

    @property
    def N(self):
        return int(self.counts.sum(dtype=np.int64))

    @property
    def nnz(self):
        return len(self.word_ids)

    def doc_lengths(self):
        """Tokens per document, int64 (D)."""
        lengths = np.zeros(self.D, dtype=np.int64)
        _row_sums(self.doc_ptr, self.counts, lengths)
        return lengths

    def tokens(self, dtype=np.int32):
        """Tokens expanded in document order: (token_ptr int64 (D+1), words (N) of ``dtype``).
        Written straight into the result: numpy's repeat would first widen the counts to 8
        bytes each, more than the tokens themselves take."""
        token_ptr = np.zeros(self.D + 1, dtype=np.int64)
        np.cumsum(self.doc_lengths(), out=token_ptr[1:])
        words = np.empty(int(token_ptr[-1]), dtype=dtype)
        _expand(self.word_ids, self.counts, words)
        return token_ptr, words

    def word_counts(self):
        """Corpus frequency of every vocabulary word, int64 (W)."""
        return np.bincount(self.word_ids, weights=self.counts, minlength=self.W).astype(np.int64)

    def doc_frequencies(self):
        return np.bincount(self.word_ids, minlength=self.W).astype(np.int64)

    def subset(self, docs):
        """The documents with the given indices, in that order."""
        docs = np.asarray(docs, dtype=np.int64)
        starts, ends = self.doc_ptr[docs], self.doc_ptr[docs + 1]
        lengths = ends - starts
        ptr = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        idx = np.repeat(starts - ptr[:-1], lengths) + np.arange(ptr[-1])
        return Corpus(ptr, self.word_ids[idx], self.counts[idx], self.vocab)

    def sha256(self):
        h = hashlib.sha256()
        for a in (self.doc_ptr.astype("<i8"), self.word_ids.astype("<i4"), self.counts.astype("<i4")):
            h.update(np.ascontiguousarray(a).tobytes())
        h.update("\n".join(self.vocab).encode("utf-8"))
        return h.hexdigest()

    def equals(self, other):
        return (
            self.vocab == other.vocab
            and np.array_equal(self.doc_ptr, other.doc_ptr)
            and np.array_equal(self.word_ids, other.word_ids)
            and np.array_equal(self.counts, other.counts)
        )

    def check(self, path=None):
        """Validate the invariants; InputError naming ``path`` if broken."""
        D = self.D
        if D < 0 or self.doc_ptr[0] != 0 or self.doc_ptr[-1] != len(self.word_ids):
            raise InputError("document pointers do not span the word arrays", path)
        if len(self.counts) != len(self.word_ids):
            raise InputError("word_ids and counts differ in length", path)
        if np.any(np.diff(self.doc_ptr) < 0):
            raise InputError("document pointers decrease", path)
        if len(self.word_ids) and (self.word_ids.min() < 0 or self.word_ids.max() >= self.W):
            raise InputError(f"a word id lies outside the vocabulary of {self.W} words", path)
        if len(self.counts) and self.counts.min() <= 0:
            raise InputError("a count is not positive", path)
        return self


@numba.njit(cache=True, nogil=True)
def _row_sums(doc_ptr, counts, out):
    for d in range(doc_ptr.shape[0] - 1):
        total = 0
        for j in range(doc_ptr[d], doc_ptr[d + 1]):
            total += counts[j]
        out[d] = total


@numba.njit(cache=True, nogil=True)
def _expand(word_ids, counts, out):
    i = 0
    for j in range(word_ids.shape[0]):
        for _ in range(counts[j]):
            out[i] = word_ids[j]
            i += 1


def token_blocks(token_ptr, parts):
    """Document boundaries (parts + 1) cutting documents into ``parts`` runs of about equal
    tokens: lda-gibbs's thread blocks, prepare's shards, MPI ranks' documents."""
    token_ptr = np.asarray(token_ptr, dtype=np.int64)
    N = token_ptr[-1]
    targets = (np.arange(parts + 1, dtype=np.int64) * N) // parts
    ptr = np.searchsorted(token_ptr, targets, side="left").astype(np.int64)
    ptr[0] = 0
    ptr[-1] = len(token_ptr) - 1
    return np.maximum.accumulate(ptr)


def concat(parts, vocab=None):
    """Corpora over one vocabulary (``vocab``, default the first's), one after the other."""
    vocab = parts[0].vocab if vocab is None else vocab
    if len(parts) == 1:
        return parts[0]
    ptrs = [parts[0].doc_ptr]
    offset = parts[0].doc_ptr[-1]
    for p in parts[1:]:
        ptrs.append(p.doc_ptr[1:] + offset)
        offset += p.doc_ptr[-1]
    return Corpus(
        np.concatenate(ptrs),
        np.concatenate([p.word_ids for p in parts]),
        np.concatenate([p.counts for p in parts]),
        vocab,
    )


def from_triples(doc, word, count, D, vocab):
    """Build a Corpus from (doc, word, count) triples in any order; duplicates summed."""
    doc = np.asarray(doc, dtype=np.int64)
    word = np.asarray(word, dtype=np.int64)
    count = np.asarray(count, dtype=np.int64)
    keep = count > 0
    doc, word, count = doc[keep], word[keep], count[keep]
    W = len(vocab)
    key = doc * max(W, 1) + word
    order = np.argsort(key, kind="stable")
    key, count = key[order], count[order]
    uniq, first = np.unique(key, return_index=True)
    summed = np.add.reduceat(count, first) if len(first) else count[:0]
    d = uniq // max(W, 1)
    w = uniq % max(W, 1)
    ptr = np.zeros(D + 1, dtype=np.int64)
    np.cumsum(np.bincount(d, minlength=D), out=ptr[1:])
    if summed.size and summed.max() > np.iinfo(np.int32).max:
        raise InputError("a count exceeds 2**31-1")
    return Corpus(ptr, w.astype(np.int32), summed.astype(np.int32), tuple(vocab))
