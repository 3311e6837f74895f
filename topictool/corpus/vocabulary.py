"""Vocabulary files, pruning and re-mapping of word ids."""

import numpy as np

from .. import store
from ..errors import InputError
from .corpus import Corpus
from .sources import read_lines


def vocab_file(path):
    """The vocabulary file of ``path``: itself, or a prepared corpus directory's vocab.txt."""
    from pathlib import Path

    path = Path(path)
    if path.is_dir():
        if not (path / "vocab.txt").is_file():
            raise InputError("a directory without vocab.txt (expected a vocabulary file or a prepared corpus)", path)
        return path / "vocab.txt"
    return path


def read_vocab(path, encoding="utf-8", errors="strict"):
    """The one vocabulary reader: a file with one word per line (for hca's `.words` files
    the word is the last column), or a prepared corpus directory. Line number = word id, so
    blank lines (but trailing ones) and repeated words are errors."""
    path = vocab_file(path)
    words, seen, blank = [], {}, None
    for lineno, line in read_lines(path, encoding, errors):
        fields = line.split()
        if not fields:
            blank = blank or lineno  # blank lines are fine only at the very end
            continue
        if blank:
            raise InputError("empty line inside the vocabulary (line numbers are word ids)", path, blank)
        word = fields[-1]
        if word in seen:
            raise InputError(f"word {word!r} repeats line {seen[word]}", path, lineno)
        seen[word] = lineno
        words.append(word)
    if not words:
        raise InputError("vocabulary file is empty", path)
    return tuple(words)


def write_vocab(vocab, path):
    store.write_text(path, "".join(w + "\n" for w in vocab))


def prune(corpus, min_count=1, min_df=1, max_df=1.0, keep=None):
    """Drop words by corpus frequency and document frequency.

    max_df is a fraction of documents when <= 1, otherwise a document count.
    ``keep`` (bool mask) can restrict the vocabulary further. Word order is kept.
    """
    counts = corpus.word_counts()
    df = corpus.doc_frequencies()
    limit = max_df * corpus.D if max_df <= 1.0 else max_df
    mask = (counts >= max(min_count, 1)) & (df >= min_df) & (df <= limit)
    if keep is not None:
        mask &= keep
    return select_words(corpus, mask)


def select_words(corpus, mask):
    """Keep the words where ``mask`` is true, renumbered in their old order."""
    new_id = np.full(corpus.W, -1, dtype=np.int64)
    new_id[mask] = np.arange(int(mask.sum()))
    kept = mask[corpus.word_ids]
    row = np.repeat(np.arange(corpus.D), np.diff(corpus.doc_ptr))[kept]
    ptr = np.zeros(corpus.D + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=corpus.D), out=ptr[1:])
    vocab = tuple(w for w, m in zip(corpus.vocab, mask) if m)
    return Corpus(ptr, new_id[corpus.word_ids[kept]].astype(np.int32), corpus.counts[kept], vocab)


def drop_empty_documents(corpus):
    lengths = np.diff(corpus.doc_ptr)
    nonempty = np.flatnonzero(lengths > 0)
    if len(nonempty) == corpus.D:
        return corpus, 0
    return corpus.subset(nonempty), corpus.D - len(nonempty)


def align(corpus, vocab):
    """Re-express ``corpus`` over another vocabulary, by word; returns (corpus, dropped tokens)."""
    if tuple(corpus.vocab) == tuple(vocab):
        return corpus, 0
    index = {w: i for i, w in enumerate(vocab)}
    mapping = np.array([index.get(w, -1) for w in corpus.vocab], dtype=np.int64)
    mapped = mapping[corpus.word_ids] if corpus.nnz else np.zeros(0, np.int64)
    kept = mapped >= 0
    dropped = int(corpus.counts[~kept].sum())
    from .corpus import from_triples

    row = np.repeat(np.arange(corpus.D), np.diff(corpus.doc_ptr))
    out = from_triples(row[kept], mapped[kept], corpus.counts[kept], corpus.D, vocab)
    return out, dropped
