"""Co-occurrence counts among a few words (the topics' top words) from a prepared corpus.

``topictool pmi --reference CORPUS_DIR`` scores topics against a corpus made by
``topictool prepare`` (the training corpus itself, or a held-out one) without
a REF.npz: only the T distinct top words of the topics are counted, into a
dense T x T table, which takes seconds.

Units
-----
* ``window=0`` (document): every document of the part is one unit, counted
  straight from its bag of words (``train.npz``/``test.npz``).
* ``window=w`` (sliding window): a bag of words has no order, so the token
  sequence of every document is rebuilt from the text sources recorded in
  ``corpus.json``: each source is read and tokenised again with the options
  prepare used (token pattern, encoding, include pattern), the tokens that are
  not words of the corpus vocabulary (stop words, pruned words) are dropped,
  documents left empty are dropped (as prepare dropped them), and the part's
  documents are taken by prepare's seeded split. Every rebuilt document must
  have exactly the bag of words stored for it, and its name the name in
  ``PART.names.txt``; otherwise the sources changed since prepare and the
  corpus is refused (``InputError``). The windows slide over these vocabulary
  tokens (the text as the model saw it), not over the raw text: a document of
  n tokens gives max(1, n - w + 1) windows, as in ``topictool.cooc`` and gensim.
  A corpus prepared from LdaC/UCI files or by ``synth`` has no token order:
  only document units are possible.

Window counting
---------------
``boolean`` (Röder et al. 2015, Palmetto, ``topictool cooc``): a word is in a
window when one of its tokens is. ``gensim``: as gensim's
``WordOccurrenceAccumulator`` (4.x) counts: when the window slides by one, the
word of the token leaving it is marked absent even if another of its tokens is
still inside, and the entering token's word is marked present; so a word
repeated within fewer than w tokens is missed in some windows it occupies.
This reproduces gensim's sliding-window figures (c_v, c_npmi, c_uci) exactly;
it is offered for comparison only.

Counts: ``units`` (U), ``word_units[t]`` units holding word t, ``pairs[s, t]``
units holding both (symmetric; ``pairs[t, t] = word_units[t]``).
"""

import json
from pathlib import Path

import numpy as np
from numba import njit

from .. import kernels  # noqa: F401  (before any kernel: the cache key, kernels/__init__.py)
from ..errors import InputError
from .count import distinct_words, first_window, word_enters, word_leaves

WINDOW_COUNTING = ("boolean", "gensim")


@njit(cache=True, nogil=True)
def count_small(ids, doc_ptr, window, gensim, T):
    """(units, word_units[T], pairs[T, T]) of documents given as CSR rows of ids (-1: not counted).

    window <= 0: documents are the units. Pair counts grow by the number of
    windows two words share, added when one of them leaves (as in count.py).

    The walk over documents and windows is count.count_units's on purpose (its loop head
    repeats here): that one fills a resumable hash table for whole vocabularies, this one a
    dense matrix for the few words of some topics; the window set itself is shared
    (distinct_words, first_window, word_enters, word_leaves).
    """
    word_units = np.zeros(T, np.int64)
    pairs = np.zeros((T, T), np.int64)
    cnt = np.zeros(T, np.int64)
    enter = np.zeros(T, np.int64)
    slot = np.zeros(T, np.int64)
    present = np.zeros(T, np.int64)
    units = 0
    D = doc_ptr.shape[0] - 1
    for d in range(D):
        a = doc_ptr[d]
        b = doc_ptr[d + 1]
        n = b - a
        npres = 0
        if window <= 0:
            npres = distinct_words(ids, a, b, cnt, present)
            units += 1
            for i in range(npres):
                u = present[i]
                word_units[u] += 1
                for j in range(i + 1, npres):
                    pairs[u, present[j]] += 1
                cnt[u] = 0
            continue
        if n == 0:
            continue
        w = window
        nwin = 1 if n <= w else n - w + 1
        npres = first_window(ids, a, n, w, cnt, enter, slot, present)
        for s in range(1, nwin):
            vo = ids[a + s - 1]
            vi = ids[a + s + w - 1]
            if vo == vi and (not gensim or vo < 0 or cnt[vo] > 0):
                continue  # unchanged (gensim: leaves and re-enters at once)
            leaving = False
            if vo >= 0:
                if gensim:
                    leaving = cnt[vo] > 0
                    if leaving:
                        cnt[vo] = 0
                else:
                    cnt[vo] -= 1
                    leaving = cnt[vo] == 0
            if leaving:
                eo = enter[vo]
                word_units[vo] += s - eo
                npres = word_leaves(vo, slot, present, npres)
                for i in range(npres):
                    u = present[i]
                    e = enter[u] if enter[u] > eo else eo
                    pairs[u, vo] += s - e
            if vi >= 0:
                npres = word_enters(vi, s, cnt, enter, slot, present, npres)
                cnt[vi] = 1 if gensim else cnt[vi] + 1
        for i in range(npres):
            u = present[i]
            word_units[u] += nwin - enter[u]
            for j in range(i + 1, npres):
                v = present[j]
                e = enter[u] if enter[u] > enter[v] else enter[v]
                pairs[u, v] += nwin - e
        for i in range(npres):
            cnt[present[i]] = 0
        units += nwin
    sym = pairs + pairs.T
    for t in range(T):
        sym[t, t] = word_units[t]
    return units, word_units, sym


class CorpusCounts:
    """Unit, word and pair counts of a prepared corpus among ``words`` (see the module docstring)."""

    kind = "corpus"

    def __init__(self, directory, words, part="train", window=0, counting="boolean"):
        if counting not in WINDOW_COUNTING:
            raise InputError(f"--window-counting {counting!r}: expected one of {', '.join(WINDOW_COUNTING)}")
        self.path = str(directory)
        self.part = part
        self.window = int(window or 0)
        self.counting = counting if self.window else None
        self.words = tuple(dict.fromkeys(words))
        self.index = {w: t for t, w in enumerate(self.words)}
        parts = ("train", "test") if part == "all" else (part,)
        ids, ptrs, documents = [], [], 0
        for p in parts:
            vocab, tok_ids, doc_ptr = corpus_units(directory, p, self.window > 0)
            col = np.array([self.index.get(w, -1) for w in vocab], np.int64)
            ids.append(col[tok_ids] if len(tok_ids) else np.zeros(0, np.int64))
            ptrs.append(doc_ptr)
            documents += len(doc_ptr) - 1
        self.documents = documents
        units, wc, pairs = 0, np.zeros(len(self.words), np.int64), np.zeros((len(self.words),) * 2, np.int64)
        for i, ptr in zip(ids, ptrs):
            u, c, m = count_small(
                np.ascontiguousarray(i, np.int64),
                np.ascontiguousarray(ptr, np.int64),
                self.window,
                counting == "gensim",
                len(self.words),
            )
            units, wc, pairs = units + u, wc + c, pairs + m
        self.units = int(units)
        self.word_counts = wc
        self.pair_table = pairs

    def ids(self, words):
        return np.array([self.index.get(w, -1) for w in words], np.int64)

    def counts(self, ids):
        """(c, C): units of each word and of each pair (C[i, i] = c[i]); 0 for ids -1."""
        ids = np.asarray(ids, np.int64)
        ok = ids >= 0
        c = np.where(ok, self.word_counts[np.where(ok, ids, 0)], 0)
        C = self.pair_table[np.ix_(np.where(ok, ids, 0), np.where(ok, ids, 0))].copy()
        C[~ok, :] = 0
        C[:, ~ok] = 0
        return c.astype(np.int64), C.astype(np.int64)


def corpus_units(directory, part="train", ordered=False):
    """(vocab, ids, doc_ptr) of a prepared corpus part: bags (each word once) or, with
    ``ordered``, the rebuilt token sequences over the corpus vocabulary."""
    from ..corpus.prepared import load_prepared

    corpus = load_prepared(directory, part)
    if not ordered:
        return corpus.vocab, np.asarray(corpus.word_ids, np.int64), np.asarray(corpus.doc_ptr, np.int64)
    ids, doc_ptr = token_sequences(directory, part, corpus)
    return corpus.vocab, ids, doc_ptr


def token_sequences(directory, part, corpus):
    """The part's documents as token id sequences rebuilt from the sources (module docstring)."""
    from ..corpus.prepare import source_kind
    from ..corpus.prepared import read_names
    from ..corpus.split import split_documents
    from ..corpus.text import TextSource
    from ..corpus.tokenizer import Tokenizer

    directory = Path(directory)
    manifest = json.loads((directory / "corpus.json").read_text("utf-8"))
    sources = manifest.get("source")
    opts = manifest.get("options") or {}
    no_order = (
        f"{directory} holds bags of words and names no text sources to read their token order from "
        "(prepared from LdaC/UCI files, or by synth): use --window doc"
    )
    if not sources:
        raise InputError(no_order)
    kinds = []
    for s in sources:
        if not Path(s).exists():
            raise InputError(f"the text source of this prepared corpus is gone ({s}): use --window doc", directory)
        kinds.append(source_kind(s, opts.get("source_format", "auto")))
    if any(k in ("ldac", "uci") for k in kinds):
        raise InputError(no_order)
    index = {w: i for i, w in enumerate(corpus.vocab)}
    tokenize = Tokenizer(opts.get("token_pattern") or Tokenizer().pattern)
    enc, err, include = opts.get("encoding", "utf-8"), opts.get("errors", "strict"), opts.get("include", "*")
    names, seqs = [], []
    for s, k in zip(sources, kinds):
        for name, text in TextSource(s, k, enc, err, include):
            seq = np.fromiter((i for i in map(index.get, tokenize(text)) if i is not None), np.int32)
            if len(seq):  # prepare dropped documents left empty
                names.append(name)
                seqs.append(seq)
    changed = f"the sources of this prepared corpus changed since prepare ({', '.join(sources)})"
    if len(seqs) != manifest.get("D"):
        raise InputError(f"{changed}: {len(seqs)} documents instead of {manifest.get('D')}", directory)
    train_idx, test_idx = split_documents(len(seqs), float(opts.get("test_fraction", 0.2)), int(opts.get("seed", 1)))
    take = train_idx if part == "train" else test_idx
    if len(take) != corpus.D:
        raise InputError(f"{changed}: the {part} split has {len(take)} documents, not {corpus.D}", directory)
    stored_names = read_names(directory, part, corpus.D)
    lengths = np.array([len(seqs[i]) for i in take], np.int64)
    doc_ptr = np.zeros(len(take) + 1, np.int64)
    np.cumsum(lengths, out=doc_ptr[1:])
    ids = np.concatenate([seqs[i] for i in take]).astype(np.int64) if len(take) else np.zeros(0, np.int64)
    for d, i in enumerate(take):
        if stored_names is not None and stored_names[d] != names[i]:
            raise InputError(f"{changed}: document {d} is {names[i]!r}, not {stored_names[d]!r}", directory)
    # every rebuilt document has exactly the stored bag of words
    W = corpus.W
    rebuilt = np.sort(np.repeat(np.arange(len(take), dtype=np.int64), lengths) * W + ids)
    entry_doc = np.repeat(np.arange(corpus.D, dtype=np.int64), np.diff(corpus.doc_ptr))
    stored = np.sort(np.repeat(entry_doc * W + corpus.word_ids.astype(np.int64), corpus.counts.astype(np.int64)))
    if len(rebuilt) != len(stored) or not np.array_equal(rebuilt, stored):
        n = min(len(rebuilt), len(stored))
        diff = np.flatnonzero(rebuilt[:n] != stored[:n])
        d = int(min(rebuilt[diff[0]], stored[diff[0]]) // W) if len(diff) else int(stored[n - 1] // W) if n else 0
        raise InputError(f"{changed}: document {d} ({names[take[d]]}) has other words than its stored bag", directory)
    return ids, doc_ptr
