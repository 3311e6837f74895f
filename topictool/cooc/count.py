"""Counting co-occurrences: the window and document kernels, the open-addressing hash
table they fill, and one worker's PairCounter (see the package docstring)."""

import itertools
from pathlib import Path

import numpy as np
from numba import njit

from ..corpus.tokenizer import DEFAULT_PATTERN, Tokenizer
from ..kernels.jit import no_nrt
from .spill import _merge_many, merge_sorted, write_run

_EMPTY = -1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


# ----------------------------------------------------------------------------
# kernels


@njit(cache=True, nogil=True, inline="always")
def _insert(tkeys, tvals, mask, shift, key, c):
    """Add c to key's count in the open-addressing table; returns 1 if the key is new."""
    i = np.int64((np.uint64(key) * _GOLDEN) >> shift) & mask
    while True:
        k = tkeys[i]
        if k == key:
            tvals[i] += c
            return 0
        if k == _EMPTY:
            tkeys[i] = key
            tvals[i] = c
            return 1
        i = (i + 1) & mask


# The present-word set of a document or window, shared by count_units and cooc/prepared.py:
# present[:npres] lists the words in it, slot[v] is v's place there, cnt[v] its tokens inside,
# enter[v] the window at which it came in.
@njit(cache=True, nogil=True, inline="always")
def distinct_words(ids, a, b, cnt, present):
    """present[:npres] = the distinct counted words of ids[a:b] (cnt[v] set to 1); returns npres."""
    npres = 0
    for p in range(a, b):
        v = ids[p]
        if v >= 0 and cnt[v] == 0:
            cnt[v] = 1
            present[npres] = v
            npres += 1
    return npres


@njit(cache=True, nogil=True, inline="always")
def word_enters(v, s, cnt, enter, slot, present, npres):
    """Word v gets a token into window s (v absent before: it joins the set); returns npres."""
    if cnt[v] == 0:
        enter[v] = s
        slot[v] = npres
        present[npres] = v
        npres += 1
    return npres


@njit(cache=True, nogil=True, inline="always")
def first_window(ids, a, n, w, cnt, enter, slot, present):
    """The set of window 0 (tokens a .. a + min(n, w) - 1); returns npres."""
    npres = 0
    for p in range(a, a + min(n, w)):
        v = ids[p]
        if v >= 0:
            npres = word_enters(v, 0, cnt, enter, slot, present, npres)
            cnt[v] += 1
    return npres


@njit(cache=True, nogil=True, inline="always")
def word_leaves(v, slot, present, npres):
    """Word v leaves the set (its last position taken by the set's last word); returns npres."""
    k = slot[v]
    last = present[npres - 1]
    present[k] = last
    slot[last] = k
    return npres - 1


@no_nrt  # _insert and the window helpers are entered for every pair: no reference counts
def count_units(
    ids,
    doc_ptr,
    start_doc,
    start_row,
    window,
    W,
    tkeys,
    tvals,
    shift,
    max_used,
    word_units,
    cnt,
    enter,
    slot,
    present,
    acc,
):
    """Count the units (windows, or documents if window <= 0) of documents start_doc.. .

    ids: token ids (-1 outside the vocabulary), documents as CSR rows (doc_ptr).
    Adds to word_units, to the pair table (tkeys, tvals) and to acc[1] (units);
    acc[0] is the number of used table slots, kept <= max_used. Returns
    (doc, row): (D, 0) when all documents are done; otherwise the table is full
    and counting resumes at (doc, row) after it is emptied (row > 0 only in
    document mode: the document's pairs resume at its present-word row - 1,
    its unit and word counts being done).
    """
    mask = tkeys.shape[0] - 1
    D = doc_ptr.shape[0] - 1
    for d in range(start_doc, D):
        a = doc_ptr[d]
        b = doc_ptr[d + 1]
        n = b - a
        npres = 0
        if window <= 0:
            # document mode: one unit per document, each pair of distinct words once
            npres = distinct_words(ids, a, b, cnt, present)
            resume = d == start_doc and start_row > 0
            row0 = start_row - 1 if resume else 0
            if not resume:
                acc[1] += 1
                for i in range(npres):
                    word_units[present[i]] += 1
            for i in range(row0, npres):
                if acc[0] + (npres - 1 - i) > max_used:
                    for k in range(npres):
                        cnt[present[k]] = 0
                    return d, i + 1
                u = present[i]
                for j in range(i + 1, npres):
                    v = present[j]
                    key = u * W + v if u < v else v * W + u
                    acc[0] += _insert(tkeys, tvals, mask, shift, key, 1)
            for k in range(npres):
                cnt[present[k]] = 0
            continue
        if n == 0:
            continue
        w = window
        nwin = 1 if n <= w else n - w + 1
        nv = 0
        for p in range(a, b):
            if ids[p] >= 0:
                nv += 1
        m = min(w, nv)
        if m > 0 and acc[0] + nv * (m - 1) + m * (m - 1) // 2 > max_used:
            return d, 0
        npres = first_window(ids, a, n, w, cnt, enter, slot, present)
        # slide: window s drops t_{s-1} and takes t_{s+w-1}
        for s in range(1, nwin):
            vo = ids[a + s - 1]
            vi = ids[a + s + w - 1]
            if vo == vi:
                continue
            if vo >= 0:
                cnt[vo] -= 1
                if cnt[vo] == 0:
                    eo = enter[vo]
                    word_units[vo] += s - eo
                    npres = word_leaves(vo, slot, present, npres)
                    for i in range(npres):
                        u = present[i]
                        e = enter[u] if enter[u] > eo else eo
                        key = u * W + vo if u < vo else vo * W + u
                        acc[0] += _insert(tkeys, tvals, mask, shift, key, s - e)
            if vi >= 0:
                npres = word_enters(vi, s, cnt, enter, slot, present, npres)
                cnt[vi] += 1
        # close the words still present after the last window
        for i in range(npres):
            u = present[i]
            word_units[u] += nwin - enter[u]
            for j in range(i + 1, npres):
                v = present[j]
                e = enter[u] if enter[u] > enter[v] else enter[v]
                key = u * W + v if u < v else v * W + u
                acc[0] += _insert(tkeys, tvals, mask, shift, key, nwin - e)
        for i in range(npres):
            cnt[present[i]] = 0
        acc[1] += nwin
    return D, 0


@njit(cache=True, nogil=True)
def drain_table(tkeys, tvals, key_bits):
    """Take the used entries out of the table (which is left empty), sorted by key.

    An LSD radix sort on 11-bit digits of the key (keys are < 2**key_bits).
    """
    n = 0
    for i in range(tkeys.shape[0]):
        if tkeys[i] != _EMPTY:
            n += 1
    k = np.empty(n, np.int64)
    c = np.empty(n, np.int64)
    n = 0
    for i in range(tkeys.shape[0]):
        if tkeys[i] != _EMPTY:
            k[n] = tkeys[i]
            c[n] = tvals[i]
            tkeys[i] = _EMPTY
            n += 1
    k2 = np.empty(n, np.int64)
    c2 = np.empty(n, np.int64)
    hist = np.zeros(2049, np.int64)
    shift = 0
    while shift < key_bits:
        hist[:] = 0
        for i in range(n):
            hist[((k[i] >> shift) & 2047) + 1] += 1
        for b in range(1, 2049):
            hist[b] += hist[b - 1]
        for i in range(n):
            d = (k[i] >> shift) & 2047
            p = hist[d]
            k2[p] = k[i]
            c2[p] = c[i]
            hist[d] = p + 1
        k, k2 = k2, k
        c, c2 = c2, c
        shift += 11
    return k, c


# ----------------------------------------------------------------------------
# one worker's counts


class PairCounter:
    """Counts of one worker: units, word counts and pair counts (see the module docstring).

    ``add_pages`` takes raw ``<page>`` elements of a dump, ``add_texts`` plain
    documents, ``add_ids`` token id sequences. ``pairs()`` returns the sorted
    pair arrays; ``flush(run_dir)`` writes them as run files and resets.
    """

    def __init__(
        self, vocab, window=10, token_pattern=DEFAULT_PATTERN, table_bits=22, spill_entries=None, run_dir=None
    ):
        self.vocab = tuple(vocab)
        self.W = len(self.vocab)
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.window = 0 if window in (None, "doc", 0) else int(window)
        self.tokenize = Tokenizer(token_pattern)
        self.run_dir = None if run_dir is None else Path(run_dir)
        self.spill_entries = spill_entries
        self._cnt = np.zeros(self.W, np.int64)
        self._enter = np.zeros(self.W, np.int64)
        self._slot = np.zeros(self.W, np.int64)
        self._present = np.zeros(self.W, np.int64)
        self._key_bits = max(1, int(self.W * self.W - 1).bit_length())
        # the table must take at least one document row (W - 1 pairs) in document mode
        self._base_bits = max(int(table_bits), int(np.ceil(np.log2(max(4 * self.W, 16)))))
        self._alloc_table(self._base_bits)
        self._chunks = []
        self._spilled = []
        self.reset_totals()

    def reset_totals(self):
        self.word_units = np.zeros(self.W, np.int64)
        self.units = 0
        self.documents = 0
        self.tokens = 0

    def _alloc_table(self, bits):
        self._bits = bits
        self._tkeys = np.full(1 << bits, _EMPTY, np.int64)
        self._tvals = np.zeros(1 << bits, np.int64)
        self._max_used = int(0.6 * (1 << bits))
        self._acc = np.zeros(2, np.int64)

    # -- input

    def add_pages(self, blocks):
        """Blocks of raw <page> elements: articles (ns 0, not redirects) are documents, others skipped."""
        from ..corpus.wikipedia import article_text, split_pages

        texts = []
        for block in blocks:
            for raw in split_pages(block):
                t = article_text(raw)
                if t is not None:
                    texts.append(t)
        self._add_token_lists([self.tokenize(t) for t in texts])
        return len(texts)

    def add_texts(self, texts):
        """Plain documents; a blank (whitespace-only) text is not a document."""
        docs = [self.tokenize(t) for t in texts if t and not t.isspace()]
        self._add_token_lists(docs)
        return len(docs)

    def _add_token_lists(self, docs):
        get = self.index.get
        lengths = np.fromiter((len(d) for d in docs), np.int64, count=len(docs))
        ptr = np.zeros(len(docs) + 1, np.int64)
        np.cumsum(lengths, out=ptr[1:])
        n = int(ptr[-1])
        ids = np.fromiter(map(get, itertools.chain.from_iterable(docs), itertools.repeat(-1, n)), np.int64, count=n)
        self.add_ids(ids, ptr)

    def add_ids(self, ids, doc_ptr):
        """Token ids (-1 outside the vocabulary) of documents given as CSR rows."""
        ids = np.ascontiguousarray(ids, np.int64)
        doc_ptr = np.ascontiguousarray(doc_ptr, np.int64)
        if len(ids) and (ids.max() >= self.W or ids.min() < -1):
            raise ValueError("token id outside the vocabulary")
        D = len(doc_ptr) - 1
        self.documents += D
        self.tokens += int(doc_ptr[-1] - doc_ptr[0]) if D else 0
        doc, row = 0, 0
        while doc < D:
            units_before = int(self._acc[1])
            doc, row = count_units(
                ids,
                doc_ptr,
                doc,
                row,
                self.window,
                self.W,
                self._tkeys,
                self._tvals,
                np.uint64(64 - self._bits),
                self._max_used,
                self.word_units,
                self._cnt,
                self._enter,
                self._slot,
                self._present,
                self._acc,
            )
            self.units += int(self._acc[1]) - units_before
            self._acc[1] = 0
            if doc < D:
                if self._acc[0] == 0:  # one (window-mode) document needs a larger table
                    self._alloc_table(self._bits + 1)
                else:
                    self._drain_table()
        if self._bits > self._base_bits:  # back to the usual size after an exceptional document
            self._drain_table()
            self._alloc_table(self._base_bits)

    # -- accumulation

    def _drain_table(self):
        keys, counts = drain_table(self._tkeys, self._tvals, self._key_bits)
        self._acc[0] = 0
        self._push(keys, counts)

    def _push(self, keys, counts):
        # binary-counter merging: O(N log N) in total
        self._chunks.append((keys, counts))
        while len(self._chunks) > 1 and len(self._chunks[-2][0]) <= 2 * len(self._chunks[-1][0]):
            b = self._chunks.pop()
            a = self._chunks.pop()
            self._chunks.append(merge_sorted(a[0], a[1], b[0], b[1]))
        held = sum(len(c[0]) for c in self._chunks)
        if self.spill_entries and self.run_dir is not None and held > self.spill_entries:
            keys, counts = _merge_many(self._chunks)
            self._chunks = []
            self._spilled.append(write_run(self.run_dir, keys, counts))

    def pairs(self):
        """All pair counts so far (not spilled ones): sorted keys, counts."""
        if self._acc[0]:
            self._drain_table()
        keys, counts = _merge_many(self._chunks)
        self._chunks = [(keys, counts)] if len(keys) else []
        return keys, counts

    def flush(self, run_dir=None):
        """Write the counts since the last flush as run files; return them with the totals, and reset."""
        run_dir = Path(run_dir) if run_dir is not None else self.run_dir
        keys, counts = self.pairs()
        runs = list(self._spilled)
        if len(keys):
            runs.append(write_run(run_dir, keys, counts))
        out = {
            "runs": runs,
            "word_units": self.word_units,
            "units": self.units,
            "documents": self.documents,
            "tokens": self.tokens,
        }
        self._chunks = []
        self._spilled = []
        self.reset_totals()
        return out
