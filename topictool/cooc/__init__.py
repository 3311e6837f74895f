"""Reference co-occurrence counts for topic coherence (``topictool cooc``).

What is counted
---------------
Only the words of a given vocabulary W are counted, but every token of a
document occupies its position: the tokenizer of ``topictool prepare`` turns a
document into its token sequence t_0 .. t_{n-1}, and tokens outside the
vocabulary (stop words, rare words, numbers are not tokens at all) keep their
place in that sequence, as in Newman et al. (2010) and palmetto's "boolean
sliding window". A *unit* is a pseudo-document:

* ``--window w`` (default 10): every window position of w consecutive tokens,
  t_s .. t_{s+w-1} for s = 0 .. n-w. A document shorter than w tokens (but not
  empty) is one unit, so a document of n >= 1 tokens gives max(1, n-w+1) units;
  a document without tokens gives none.
* ``--window doc``: every document is one unit (also one without tokens).

Documents are: the articles of a MediaWiki dump (main namespace, not redirects;
see ``topictool.corpus.wikipedia``), the non-blank lines of a text file, the
non-blank files of a directory or zip.

Then, with U the number of units,

    word_counts[v]        = number of units containing word v at least once
    pair count of (v, u)  = number of units containing both v and u (v != u)
    p(v) = word_counts[v] / U,     p(v, u) = pair count / U

A word repeated inside a unit counts once for that unit.

How it is counted
-----------------
The window kernel slides incrementally: ``cnt[v]`` is the multiplicity of v in
the current window and ``enter[v]`` the first window of v's current stretch of
presence. When v leaves (its multiplicity drops to 0 on moving to window s) it
was present in windows enter[v] .. s-1, and every word u still present shared
windows max(enter[u], enter[v]) .. s-1 with it, so the pair count of (u, v)
grows by s - max(enter[u], enter[v]) in one step rather than one window at a
time. At the end of a document the words still present are closed the same
way. Pair counts are accumulated in an open-addressing hash table keyed by
``i * W + j`` (i < j), emptied into sorted (key, count) arrays when it fills.

Memory stays bounded on a reference of any size (a full English Wikipedia
dump: ~20 GB of bz2, ~90 GB of XML, 6 million articles): only pairs of
vocabulary words are kept; each worker's sorted arrays are spilled to "run"
files when they exceed its share of ``--memory``; runs are merged by key ranges
(streamed through memory maps) into larger runs and finally into the output.

Workers and the partial state
-----------------------------
The main process reads the inputs — reader threads, one input each, up to
``(N + 3) // 4`` at a time (bz2/gzip decompression releases the GIL, so several
input files, e.g. the 27 files of a split dump, decompress in parallel) — and
cuts them into batches of whole pages (dumps are cut at a ``</page>``, the
workers split the pages) or documents; ``--workers N`` processes (with N = 1:
the main process itself) parse pages, strip markup, tokenize and count. Every
``checkpoint_seconds`` (and when the run is interrupted by SIGINT/SIGTERM) all
batches sent so far are finished, each worker writes its counts as a run file,
and ``state.npz`` in the state directory (``OUT.state`` beside the output) is
replaced atomically: the runs that hold the counts, the word counts and totals,
and for each input the number of pages / lines / files consumed. A killed run
restarts from the last state: it skips that many units of each input and counts
the rest, so the final counts equal an uninterrupted run's. Run files not named
in the state (written after the last checkpoint) are deleted on restart.

Output (``REF.npz``, loads without pickle)
------------------------------------------
``vocab`` (W words), ``word_counts`` (int64, W), ``pair_keys`` (int64, sorted,
key = i*W + j with i < j), ``pair_counts`` (int64), ``units`` (0-d: windows, or
documents with ``--window doc``), ``documents`` (0-d), ``tokens`` (0-d, all
tokens, in and out of the vocabulary), ``window`` (0-d: w, or 0 for documents)
and ``meta``, a 0-d string holding JSON: format, sources, options, totals.
``pair_keys``/``pair_counts`` are stored uncompressed so ``load_reference`` can
memory-map them.
"""

import contextlib
import hashlib
import itertools
import json
import multiprocessing as mp
import os
import queue
import shutil
import signal
import struct
import sys
import threading
import time
import traceback
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from .. import __version__, store
from ..corpus.sources import decode
from ..corpus.tokenizer import DEFAULT_PATTERN, Tokenizer
from ..errors import InputError

FORMAT = "topictool-cooc"
FORMAT_VERSION = 1
STATE_VERSION = 1
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


@njit(cache=True, nogil=True)
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
            for p in range(a, b):
                v = ids[p]
                if v >= 0 and cnt[v] == 0:
                    cnt[v] = 1
                    present[npres] = v
                    npres += 1
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
        # window 0
        for p in range(a, a + min(n, w)):
            v = ids[p]
            if v >= 0:
                if cnt[v] == 0:
                    enter[v] = 0
                    slot[v] = npres
                    present[npres] = v
                    npres += 1
                cnt[v] += 1
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
                    k = slot[vo]
                    last = present[npres - 1]
                    present[k] = last
                    slot[last] = k
                    npres -= 1
                    for i in range(npres):
                        u = present[i]
                        e = enter[u] if enter[u] > eo else eo
                        key = u * W + vo if u < vo else vo * W + u
                        acc[0] += _insert(tkeys, tvals, mask, shift, key, s - e)
            if vi >= 0:
                if cnt[vi] == 0:
                    enter[vi] = s
                    slot[vi] = npres
                    present[npres] = vi
                    npres += 1
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


@njit(cache=True, nogil=True)
def merge_sorted(k1, c1, k2, c2):
    """Merge two key-sorted (key, count) arrays, adding the counts of equal keys."""
    n1 = k1.shape[0]
    n2 = k2.shape[0]
    ok = np.empty(n1 + n2, np.int64)
    oc = np.empty(n1 + n2, np.int64)
    i = 0
    j = 0
    n = 0
    while i < n1 and j < n2:
        a = k1[i]
        b = k2[j]
        if a < b:
            ok[n] = a
            oc[n] = c1[i]
            i += 1
        elif b < a:
            ok[n] = b
            oc[n] = c2[j]
            j += 1
        else:
            ok[n] = a
            oc[n] = c1[i] + c2[j]
            i += 1
            j += 1
        n += 1
    while i < n1:
        ok[n] = k1[i]
        oc[n] = c1[i]
        i += 1
        n += 1
    while j < n2:
        ok[n] = k2[j]
        oc[n] = c2[j]
        j += 1
        n += 1
    if 4 * n < 3 * (n1 + n2):
        return ok[:n].copy(), oc[:n].copy()
    return ok[:n], oc[:n]


def _merge_many(parts):
    """Merge a list of sorted (keys, counts) pairs, smallest first."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    parts.sort(key=lambda p: len(p[0]))
    while len(parts) > 1:
        a = parts.pop(0)
        b = parts.pop(0)
        m = merge_sorted(
            np.ascontiguousarray(a[0], np.int64),
            np.ascontiguousarray(a[1], np.int64),
            np.ascontiguousarray(b[0], np.int64),
            np.ascontiguousarray(b[1], np.int64),
        )
        parts.append(m)
        parts.sort(key=lambda p: len(p[0]))
    k, c = parts[0]
    return np.asarray(k, np.int64), np.asarray(c, np.int64)


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


# ----------------------------------------------------------------------------
# run files: sorted int64 keys and counts, raw, memory-mappable


def write_run(run_dir, keys, counts):
    """Write a sorted run atomically; returns [name, entries]."""
    name = f"run-{uuid.uuid4().hex[:16]}"
    _write_raw(Path(run_dir) / f"{name}.keys", keys)
    _write_raw(Path(run_dir) / f"{name}.counts", counts)
    return [name, int(len(keys))]


def _write_raw(path, a):
    a = np.ascontiguousarray(a, dtype="<i8")
    with store.atomic_open(path, "wb") as f:
        step = 1 << 22
        for i in range(0, len(a), step):
            f.write(a[i : i + step].tobytes())


def _open_run(run_dir, name):
    out = []
    for ext in ("keys", "counts"):
        p = Path(run_dir) / f"{name}.{ext}"
        size = p.stat().st_size
        out.append(np.memmap(p, dtype="<i8", mode="r") if size else np.zeros(0, np.int64))
    if len(out[0]) != len(out[1]):
        raise InputError("damaged partial-state run file (keys and counts differ in length)", run_dir / name)
    return out


def _run_files(run_dir, name):
    return [Path(run_dir) / f"{name}.keys", Path(run_dir) / f"{name}.counts"]


def merge_runs(run_dir, names, write, chunk=1 << 22):
    """Stream the merge of sorted runs into write(keys, counts), key range by key range."""
    runs = [_open_run(run_dir, n) for n in names]
    runs = [r for r in runs if len(r[0])]
    if not runs:
        return
    largest = max(runs, key=lambda r: len(r[0]))[0]
    bounds = [int(x) for x in largest[chunk::chunk]] + [None]
    pos = [0] * len(runs)
    for hi in bounds:
        parts = []
        for i, (k, c) in enumerate(runs):
            end = len(k) if hi is None else int(np.searchsorted(k, hi, side="left"))
            if end > pos[i]:
                parts.append((np.array(k[pos[i] : end]), np.array(c[pos[i] : end])))
            pos[i] = end
        keys, counts = _merge_many(parts)
        if len(keys):
            write(keys, counts)


class _RunWriter:
    """Append sorted chunks to a new run (temporary files, renamed on close)."""

    def __init__(self, run_dir):
        self.run_dir = Path(run_dir)
        self.name = f"run-{uuid.uuid4().hex[:16]}"
        self.entries = 0
        self._tmp = [p.with_name("." + p.name + ".tmp") for p in _run_files(run_dir, self.name)]
        self._files = [open(p, "wb") for p in self._tmp]

    def __call__(self, keys, counts):
        self._files[0].write(np.ascontiguousarray(keys, "<i8").tobytes())
        self._files[1].write(np.ascontiguousarray(counts, "<i8").tobytes())
        self.entries += len(keys)

    def close(self):
        for f, tmp, final in zip(self._files, self._tmp, _run_files(self.run_dir, self.name)):
            f.flush()
            os.fsync(f.fileno())
            f.close()
            os.replace(tmp, final)
        return [self.name, self.entries]

    def abort(self):
        for f, tmp in zip(self._files, self._tmp):
            f.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def merge_into_run(run_dir, names):
    w = _RunWriter(run_dir)
    try:
        merge_runs(run_dir, names, w)
    except BaseException:
        w.abort()
        raise
    return w.close()


# ----------------------------------------------------------------------------
# sources


def source_kind(path, source_format="auto"):
    """'wiki' (MediaWiki XML dump), 'lines' (a document per line), 'dir' or 'zip'."""
    from ..corpus.wikipedia import is_dump

    path = Path(path)
    if not path.exists():
        raise InputError("no such file or directory", path)
    if source_format == "wiki":
        if not is_dump(path):
            raise InputError(
                "not a MediaWiki XML dump (no <mediawiki> element at its start; damaged or not decompressible?)", path
            )
        return "wiki"
    if source_format == "lines":
        if path.is_dir():
            raise InputError("is a directory, not a file of lines", path)
        return "lines"
    if path.is_dir():
        return "dir"
    if source_format == "files" or (path.suffix.lower() == ".zip" and zipfile.is_zipfile(path)):
        return "zip"
    return "wiki" if is_dump(path) else "lines"


@dataclass
class _Batch:
    source: int  # index of the input
    kind: str  # 'pages' or 'texts'
    items: list
    consumed: int  # units of the input it covers (pages, lines or files)
    nbytes: int  # uncompressed bytes of the items


def _iter_batches(index, path, kind, skip, opts, stats):
    """Batches of the units of one input after the first ``skip`` ones."""
    batch_bytes = opts["batch_bytes"]
    batch_items = opts["batch_items"]
    items, consumed, nbytes = [], 0, 0
    mode = "pages" if kind == "wiki" else "texts"
    for unit, size, count in _iter_units(path, kind, skip, opts, stats):
        items.append(unit)
        consumed += count
        nbytes += size
        if nbytes >= batch_bytes or len(items) >= batch_items:
            yield _Batch(index, mode, items, consumed, nbytes)
            items, consumed, nbytes = [], 0, 0
    if consumed:
        yield _Batch(index, mode, items, consumed, nbytes)


def _iter_units(path, kind, skip, opts, stats):
    from ..corpus.text import iter_text_documents
    from ..corpus.wikipedia import iter_page_blocks, open_dump

    if kind == "wiki":
        for block, pages in iter_page_blocks(path, skip, stats, min(opts["batch_bytes"], 1 << 20)):
            yield block, len(block), pages
    elif kind == "lines":
        stream, raw_file = open_dump(path)
        with raw_file, stream:
            lineno = 0
            total = 0
            try:
                for lineno, line in enumerate(stream, 1):
                    total += len(line)
                    if lineno % 1024 == 0:
                        stats["bytes"] = total
                        with contextlib.suppress(OSError, ValueError):
                            stats["compressed_bytes"] = raw_file.tell()
                    if lineno > skip:
                        yield decode(line, path, lineno, opts["encoding"], opts["errors"]).rstrip("\r\n"), len(line), 1
            except (OSError, EOFError) as e:
                raise InputError(f"cannot read (damaged compressed data?): {e}", path, lineno + 1) from None
            stats["bytes"] = total
    else:
        total = 0
        for i, text in enumerate(iter_text_documents(path, kind, opts["encoding"], opts["errors"], opts["include"])):
            total += len(text)
            stats["bytes"] = total
            stats["units"] = i + 1
            if i >= skip:
                yield text, len(text), 1


# ----------------------------------------------------------------------------
# worker pools


def _process_batch(counter, batch):
    if batch.kind == "pages":
        return counter.add_pages(batch.items)
    return counter.add_texts(batch.items)


class _InlinePool:
    """--workers 1: count in the main process."""

    def __init__(self, config):
        self.counter = PairCounter(**config)
        self.done = []  # (batch source, consumed, documents) acknowledgements

    def submit(self, batch):
        docs = _process_batch(self.counter, batch)
        self.done.append((batch.source, batch.nbytes, docs))

    def poll(self):
        out, self.done = self.done, []
        return out

    def flush(self):
        return [self.counter.flush()]

    def close(self):
        pass


def _worker_main(wid, tasks, results, config, parent):
    # a batch system signals the whole process group: the main process checkpoints
    # (asking the workers to flush) and then stops them; a killed main process is
    # noticed by the watchdog thread
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    try:
        counter = PairCounter(**config)
        while True:
            msg = tasks.get()
            if msg[0] == "batch":
                batch = msg[1]
                docs = _process_batch(counter, batch)
                results.put(("ack", wid, (batch.source, batch.nbytes, docs)))
            elif msg[0] == "flush":
                results.put(("flushed", wid, counter.flush()))
            else:
                return
    except InputError as e:
        results.put(("input-error", wid, (e.message, e.path, e.line)))
    except BaseException as e:  # noqa: BLE001 - reported to the main process
        results.put(("error", wid, f"{e.__class__.__name__}: {e}\n{traceback.format_exc()}"))


def _exit_with_parent(parent):
    """A worker whose main process was killed exits at once (it may be blocked reading a
    half-sent batch from a pipe that the other workers keep open)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)


class _ProcessPool:
    """--workers N: N counting processes fed batches by the main process."""

    inflight_per_worker = 2

    def __init__(self, n, config):
        methods = mp.get_all_start_methods()
        ctx = mp.get_context("fork" if "fork" in methods else "spawn")
        self.results = ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(n)]
        self.inflight = [0] * n
        self.done = []
        self.procs = [
            ctx.Process(
                target=_worker_main,
                args=(i, self.tasks[i], self.results, config, os.getpid()),
                daemon=True,
                name=f"topictool-cooc-{i}",
            )
            for i in range(n)
        ]
        for p in self.procs:
            p.start()

    def _receive(self, block=True):
        while True:
            try:
                msg = self.results.get(timeout=1.0 if block else 0.0)
                break
            except queue.Empty:
                dead = [p for p in self.procs if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"cooc worker {dead[0].name} died (exit code {dead[0].exitcode})") from None
                if not block:
                    return None
        kind, wid, payload = msg
        if kind == "ack":
            self.inflight[wid] -= 1
            self.done.append(payload)
        elif kind == "input-error":
            raise InputError(*payload)
        elif kind == "error":
            raise RuntimeError(f"cooc worker {wid} failed: {payload}")
        return msg

    def submit(self, batch):
        while min(self.inflight) >= self.inflight_per_worker:
            self._receive()
        wid = int(np.argmin(self.inflight))
        self.inflight[wid] += 1
        self.tasks[wid].put(("batch", batch))

    def poll(self):
        while self._receive(block=False) is not None:
            pass
        out, self.done = self.done, []
        return out

    def flush(self):
        for t in self.tasks:
            t.put(("flush",))
        got = {}
        while len(got) < len(self.tasks):
            msg = self._receive()
            if msg[0] == "flushed":
                got[msg[1]] = msg[2]
        return [got[i] for i in range(len(self.tasks))]

    def close(self):
        for t in self.tasks:
            with contextlib.suppress(Exception):
                t.put(("stop",))
        for p in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)


# ----------------------------------------------------------------------------
# reading inputs in threads


class _Readers:
    """One thread per input (at most ``threads`` at a time) putting batches on a bounded queue."""

    def __init__(self, inputs, opts, maxsize):
        self.q = queue.Queue(maxsize=maxsize)
        self.stats = {i: {"bytes": 0, "compressed_bytes": 0} for i, *_ in inputs}
        self._stop = threading.Event()
        self._pending = list(inputs)
        self._active = 0
        self._threads = []
        self._lock = threading.Lock()
        self._max = max(1, opts["readers"])
        self.opts = opts
        with self._lock:
            self._start_more()

    def _start_more(self):
        while self._pending and self._active < self._max:
            args = self._pending.pop(0)
            t = threading.Thread(target=self._read, args=args, daemon=True)
            self._active += 1
            self._threads.append(t)
            t.start()

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self.q.put(item, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    def _read(self, index, path, kind, skip):
        try:
            for batch in _iter_batches(index, path, kind, skip, self.opts, self.stats[index]):
                if not self._put(("batch", batch)):
                    return
            self._put(("end", index))
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            self._put(("error", e))
        finally:
            with self._lock:
                self._active -= 1
                self._start_more()

    def get(self):
        return self.q.get()

    def close(self):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)


# ----------------------------------------------------------------------------
# the job


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def state_dir_for(out):
    out = Path(out)
    return out.with_name(out.name + ".state")


@dataclass
class CoocOptions:
    window: object = 10  # int w, or "doc"
    workers: int = 1
    source_format: str = "auto"  # auto | wiki | lines | files
    encoding: str = "utf-8"
    errors: str = "strict"
    include: str = "*"
    token_pattern: str = DEFAULT_PATTERN
    checkpoint_seconds: float = 300.0
    memory_mb: int = 2048  # for the pair counts of all workers together
    batch_bytes: int = 1 << 20
    batch_items: int = 20000
    restart: bool = False  # discard an existing partial state
    force: bool = False  # replace an existing output


def parse_window(value):
    """'doc' -> 'doc'; an integer >= 2 -> int; anything else is an InputError."""
    if isinstance(value, str) and value.strip().lower() in ("doc", "document", "documents"):
        return "doc"
    try:
        w = int(value)
    except (TypeError, ValueError):
        raise InputError(f"--window {value!r}: expected a number of tokens (>= 2) or 'doc'") from None
    if not 2 <= w < 2**31:
        raise InputError(f"--window {w}: a window needs at least 2 tokens and fewer than 2**31 (or use 'doc')")
    return w


class _NothingCounted(InputError):
    """The sources gave no document, or no word of the vocabulary: the reference would be all zeros."""


class Interrupted(KeyboardInterrupt):
    """SIGINT/SIGTERM during `cooc`: the state was saved; rerunning continues."""

    def __init__(self, message, state_dir=None):
        super().__init__(message)
        self.state_dir = state_dir


#: test hook: called after each batch is handed to the workers (may raise to simulate a kill)
_after_batch = None


class CoocJob:
    def __init__(self, sources, vocab_path, out, options=None, progress=None):
        from ..corpus.vocabulary import read_vocab

        self.opts = options or CoocOptions()
        self.window = parse_window(self.opts.window)
        if not sources:
            raise InputError("no REFERENCE given")
        if int(self.opts.workers) < 1:
            raise InputError(f"--workers {self.opts.workers}: must be at least 1")
        self.out = store.check_output_file(out, self.opts.force, inputs=[*sources, vocab_path])
        Tokenizer(self.opts.token_pattern)  # a bad pattern is refused before anything is read
        vp = Path(vocab_path)
        if vp.is_dir():
            vp = vp / "vocab.txt"
        if not vp.exists():
            raise InputError("vocabulary file not found", vp)
        self.vocab_path = vp
        self.vocab = read_vocab(vp)
        self.sources = [Path(s) for s in sources]
        self.kinds = [source_kind(s, self.opts.source_format) for s in self.sources]
        self.state_dir = state_dir_for(self.out)
        self._check_state_dir()
        self.progress = progress
        tok = Tokenizer(self.opts.token_pattern)
        # vocabulary words the tokenizer never produces (upper case, digits, spaces ...) count 0
        self.uncountable = [w for w in self.vocab if tok(w) != [w]]
        self.fingerprint = {
            "format": FORMAT,
            "state_version": STATE_VERSION,
            "sources": [
                {"path": str(s.resolve()), "kind": k, "size": _size(s), "mtime": _mtime(s)}
                for s, k in zip(self.sources, self.kinds)
            ],
            "vocab": str(vp.resolve()),
            "vocab_sha256": _sha256_file(vp),
            "W": len(self.vocab),
            "window": self.window,
            "token_pattern": self.opts.token_pattern,
            "encoding": self.opts.encoding,
            "errors": self.opts.errors,
            "include": self.opts.include,
        }

    # -- state

    def _new_state(self):
        return {
            "fingerprint": self.fingerprint,
            "consumed": [0] * len(self.sources),
            "done": [False] * len(self.sources),
            "runs": [],
            "units": 0,
            "documents": 0,
            "tokens": 0,
            "bytes": [0] * len(self.sources),
            "seconds": 0.0,
            "checkpoints": 0,
        }

    def _check_state_dir(self):
        """OUT.state must be absent or cooc's own partial state (never a user's directory)."""
        d = self.state_dir
        if not os.path.lexists(d):
            return
        if d.is_symlink() or not d.is_dir():
            raise InputError("is in the way of cooc's partial state (not a directory of cooc's); move it", d)
        if any(d.iterdir()):
            if store.kind_of(d) != "cooc-state":
                raise InputError(
                    "is not a cooc partial state (no .topictool marker); cooc would write its partial "
                    "counts here: move it",
                    d,
                )
            foreign = store.foreign_entries(d, "cooc-state")
            if foreign:
                raise InputError(f"holds files cooc did not write ({foreign[0]}); move them", d)

    def _load_state(self):
        p = self.state_dir / "state.npz"
        fresh = not self.state_dir.exists()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._lock = store.DirLock(self.state_dir).acquire("cooc partial state")
        if fresh or not (self.state_dir / store.MARKER).exists():
            store.write_marker(self.state_dir, "cooc-state")
        if self.opts.restart:
            for f in self.state_dir.iterdir():
                if f.name not in (store.MARKER, store.LOCK):
                    f.unlink()
        if not p.exists():
            self.state = self._new_state()
            self.word_units = np.zeros(len(self.vocab), np.int64)
            self._clean_orphans()
            return False
        arrays = store.load_npz(p, required=("state", "word_units"))
        try:
            state = json.loads(str(arrays["state"]))
        except ValueError:
            raise InputError("partial state is damaged (state is not JSON); rerun with --restart", p) from None
        if state.get("fingerprint") != self.fingerprint:
            diff = _first_difference(state.get("fingerprint") or {}, self.fingerprint)
            raise InputError(
                f"holds the partial counts of a different cooc run ({diff} differs); "
                f"rerun with --restart to discard them",
                self.state_dir,
            )
        self.state = state
        self.word_units = arrays["word_units"].astype(np.int64)
        if self.word_units.shape != (len(self.vocab),):
            raise InputError("partial state is damaged (word counts); rerun with --restart", p)
        for name, n in self.state["runs"]:
            for f in _run_files(self.state_dir, name):
                if not f.exists() or f.stat().st_size != 8 * n:
                    raise InputError(
                        f"partial state is damaged ({f.name} missing or truncated); rerun with --restart",
                        self.state_dir,
                    )
        self._clean_orphans()
        return True

    def _clean_orphans(self):
        keep = {f.name for name, _ in self.state["runs"] for f in _run_files(self.state_dir, name)}
        keep.add("state.npz")
        keep.update((store.MARKER, store.LOCK))
        for f in self.state_dir.iterdir():
            if f.name not in keep and store.own_name(f.name, "cooc-state"):
                with contextlib.suppress(OSError):
                    f.unlink()

    def _save_state(self):
        store.write_npz(
            self.state_dir / "state.npz", state=np.array(json.dumps(self.state)), word_units=self.word_units
        )

    # -- running

    def run(self):
        self._lock = None
        try:
            return self._run()
        except BaseException as e:
            # nothing saved yet, or nothing worth resuming: leave nothing behind
            if not (self.state_dir / "state.npz").exists() or isinstance(e, _NothingCounted):
                shutil.rmtree(self.state_dir, ignore_errors=True)
            raise
        finally:
            if self._lock is not None:
                self._lock.release()

    def _run(self):
        t_start = time.perf_counter()
        resumed = self._load_state()
        self.resumed = resumed
        workers = int(self.opts.workers)
        per_worker = max(64, int(self.opts.memory_mb) // workers)
        table_bits = int(min(22, max(16, np.floor(np.log2(per_worker * (1 << 20) / 4 / 16)))))
        spill_entries = max(1 << 20, (per_worker * (1 << 20) - 16 * (1 << table_bits)) // 48)
        config = dict(
            vocab=self.vocab,
            window=self.window,
            token_pattern=self.opts.token_pattern,
            table_bits=table_bits,
            spill_entries=spill_entries,
            run_dir=str(self.state_dir),
        )
        _warm_up()
        pool = _InlinePool(config) if workers == 1 else _ProcessPool(workers, config)
        todo = [
            (i, self.sources[i], self.kinds[i], self.state["consumed"][i])
            for i in range(len(self.sources))
            if not self.state["done"][i]
        ]
        ropts = dict(
            batch_bytes=int(self.opts.batch_bytes),
            batch_items=int(self.opts.batch_items),
            encoding=self.opts.encoding,
            errors=self.opts.errors,
            include=self.opts.include,
            readers=max(1, min(len(todo), (workers + 3) // 4)),
        )
        stop = _StopFlag()
        old = _install_handlers(stop)
        readers = None
        reporter = _Reporter(self, self.progress)
        seconds0 = float(self.state.get("seconds", 0.0))
        try:
            readers = _Readers(todo, ropts, maxsize=2 * workers + 2) if todo else None
            remaining = len(todo)
            last_ckpt = time.perf_counter()
            while remaining:
                msg = readers.get()
                if msg[0] == "error":
                    raise msg[1]
                if msg[0] == "end":
                    self.state["done"][msg[1]] = True
                    remaining -= 1
                else:
                    batch = msg[1]
                    pool.submit(batch)
                    self.state["consumed"][batch.source] += batch.consumed
                    self.state["bytes"][batch.source] += batch.nbytes
                    if _after_batch is not None:
                        _after_batch(self)
                reporter.update(pool.poll(), readers.stats)
                if stop.signal is not None:
                    break
                if time.perf_counter() - last_ckpt >= float(self.opts.checkpoint_seconds) and remaining:
                    self.state["seconds"] = seconds0 + time.perf_counter() - t_start
                    self._checkpoint(pool)
                    last_ckpt = time.perf_counter()
            self.state["seconds"] = seconds0 + time.perf_counter() - t_start
            self._checkpoint(pool)
        finally:
            if readers is not None:
                readers.close()
            pool.close()
            reporter.close()
            _restore_handlers(old)
        if stop.signal is not None:
            raise Interrupted(
                f"interrupted by signal {stop.signal}; the partial counts are saved in "
                f"{self.state_dir}; run the same command again to continue",
                self.state_dir,
            )
        summary = self._finish()
        summary["seconds"] = round(self.state["seconds"], 3)
        summary["resumed"] = resumed
        return summary

    def _checkpoint(self, pool):
        for r in pool.flush():
            self.state["runs"].extend(r["runs"])
            self.word_units += r["word_units"]
            self.state["units"] += int(r["units"])
            self.state["documents"] += int(r["documents"])
            self.state["tokens"] += int(r["tokens"])
        self.state["checkpoints"] = int(self.state.get("checkpoints", 0)) + 1
        self._save_state()
        self._compact()

    def _compact(self, fanout=4):
        """Tiered merging: when `fanout` runs share a size class, merge them into one."""
        while True:
            levels = {}
            for name, n in self.state["runs"]:
                levels.setdefault(int(np.log(max(n, 1) / 65536.0) / np.log(fanout)) if n > 65536 else 0, []).append(
                    name
                )
            group = next((names for lvl, names in sorted(levels.items()) if len(names) >= fanout), None)
            if group is None:
                return
            merged = merge_into_run(self.state_dir, group)
            old = set(group)
            self.state["runs"] = [r for r in self.state["runs"] if r[0] not in old] + [merged]
            self._save_state()
            for name in group:
                for f in _run_files(self.state_dir, name):
                    with contextlib.suppress(OSError):
                        f.unlink()

    def _finish(self):
        st = self.state
        if st["documents"] == 0:
            raise _NothingCounted(
                "the reference holds no documents (a MediaWiki dump with no articles, or empty "
                "sources?); nothing written",
                self.sources[0],
            )
        if int(self.word_units.sum()) == 0:
            raise _NothingCounted(
                f"no word of the vocabulary ({len(self.vocab):,} words, {self.vocab_path}) occurs "
                f"in the {st['documents']:,} reference documents; is it the right vocabulary or "
                f"source format?",
                self.sources[0],
            )
        runs = [name for name, _ in self.state["runs"]]
        if len(runs) > 1:
            final = merge_into_run(self.state_dir, runs)
        elif runs:
            final = self.state["runs"][0]
        else:
            final = None
        st = self.state
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "topictool_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "sources": [
                {"path": s["path"], "kind": s["kind"], "units_read": c}
                for s, c in zip(self.fingerprint["sources"], st["consumed"])
            ],
            "vocab": self.fingerprint["vocab"],
            "vocab_sha256": self.fingerprint["vocab_sha256"],
            "W": len(self.vocab),
            "window": self.window,
            "unit": "document" if self.window == "doc" else f"window of {self.window} tokens",
            "oov_tokens_keep_positions": True,
            "token_pattern": self.opts.token_pattern,
            "uncountable_words": self.uncountable,
            "units": st["units"],
            "documents": st["documents"],
            "tokens": st["tokens"],
            "pairs": 0 if final is None else int(final[1]),
            "bytes_read": int(sum(st["bytes"])),
            "seconds": round(st["seconds"], 3),
        }
        small = dict(
            vocab_utf8=store.encode_words(self.vocab),
            word_counts=self.word_units,
            units=np.int64(st["units"]),
            documents=np.int64(st["documents"]),
            tokens=np.int64(st["tokens"]),
            window=np.int64(0 if self.window == "doc" else self.window),
            meta=np.array(json.dumps(meta)),
        )
        big = (
            {}
            if final is None
            else {
                "pair_keys": _run_files(self.state_dir, final[0])[0],
                "pair_counts": _run_files(self.state_dir, final[0])[1],
            }
        )
        write_reference(self.out, small, big)
        shutil.rmtree(self.state_dir, ignore_errors=True)
        return dict(meta, output=str(self.out))


def _first_difference(a, b):
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            return k
    return "nothing"


def _size(p):
    try:
        return p.stat().st_size if p.is_file() else None
    except OSError:
        return None


def _mtime(p):
    try:
        return int(p.stat().st_mtime) if p.is_file() else None
    except OSError:
        return None


def _warm_up():
    """Compile (or load from cache) the kernels before worker processes fork."""
    c = PairCounter(("a", "b"), window=2, table_bits=4)
    c.add_ids(np.array([0, 1, 0], np.int64), np.array([0, 3], np.int64))
    c.pairs()


class _StopFlag:
    def __init__(self):
        self.signal = None

    def __call__(self, signum, frame):
        self.signal = signum


def _install_handlers(stop):
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}


def _restore_handlers(old):
    for s, h in old.items():
        signal.signal(s, h)


class _Reporter:
    """Progress: a rich bar on a terminal, otherwise a plain line every ``every`` seconds."""

    def __init__(self, job, progress, every=30.0):
        self.job = job
        self.mode = progress if progress is not None else ("rich" if sys.stderr.isatty() else "plain")
        self.every = every
        self.t0 = time.perf_counter()
        self.last = self.t0
        self.docs = 0
        self.bytes = 0
        self.total = sum(s["size"] or 0 for s in job.fingerprint["sources"])
        # inputs finished before a restart count as read
        self.done_before = sum(s["size"] or 0 for s, done in zip(job.fingerprint["sources"], job.state["done"]) if done)
        self.bar = None
        if self.mode == "rich":
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("[bold]cooc"),
                BarColumn(),
                DownloadColumn(),
                TextColumn("{task.fields[status]}"),
                TimeRemainingColumn(),
                transient=False,
            )
            self.task = self.bar.add_task("cooc", total=self.total or None, status="")
            self.bar.start()

    def update(self, acks, stats):
        for _, nbytes, docs in acks:
            self.docs += docs
            self.bytes += nbytes
        now = time.perf_counter()
        done = self.done_before + sum(s.get("compressed_bytes", 0) for s in stats.values())
        rate = self.bytes / max(now - self.t0, 1e-9) / 1e6
        status = f"{self.docs:,} documents  {self.bytes / 1e6:,.0f} MB read  {rate:.1f} MB/s"
        if self.bar is not None:
            self.bar.update(self.task, completed=done, status=status)
        elif self.mode == "plain" and now - self.last >= self.every:
            self.last = now
            pct = f"  {100 * done / self.total:.1f}% of the input" if self.total else ""
            print(f"cooc: {status}{pct}", file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def build_reference(sources, vocab_path, out, options=None, progress=None):
    """Count co-occurrences of ``vocab_path``'s words in ``sources`` into ``out`` (REF.npz)."""
    return CoocJob(sources, vocab_path, out, options, progress).run()


# ----------------------------------------------------------------------------
# the output file


def write_reference(out, small, big):
    """Write REF.npz atomically: ``small`` arrays, then ``big`` ones streamed from raw int64 files."""
    with store.atomic_open(out, "wb") as f:
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, arr in small.items():
                arr = np.asarray(arr)
                if arr.dtype == object:
                    raise TypeError(f"array {name!r} has dtype object")
                with zf.open(name + ".npy", "w", force_zip64=True) as m:
                    np.lib.format.write_array(m, arr, allow_pickle=False)
            for name in ("pair_keys", "pair_counts"):
                path = big.get(name)
                n = path.stat().st_size // 8 if path is not None else 0
                header = {"descr": np.lib.format.dtype_to_descr(np.dtype("<i8")), "fortran_order": False, "shape": (n,)}
                with zf.open(name + ".npy", "w", force_zip64=True) as m:
                    np.lib.format.write_array_header_2_0(m, header)
                    if path is not None:
                        with open(path, "rb") as src:
                            shutil.copyfileobj(src, m, 1 << 22)


@dataclass
class Reference:
    """A loaded REF.npz (``pair_keys``/``pair_counts`` possibly memory-mapped)."""

    path: str
    vocab: tuple
    word_counts: np.ndarray
    pair_keys: np.ndarray
    pair_counts: np.ndarray
    units: int
    documents: int
    tokens: int
    window: object
    meta: dict

    @property
    def W(self):
        return len(self.vocab)

    def pair_count(self, i, j):
        """Number of units holding both words i and j (vocabulary ids; 0 if i == j is not asked)."""
        return self.pair_counts_of(np.array([i]), np.array([j]))[0]

    def pair_counts_of(self, i, j):
        """Vectorised: units holding both i[n] and j[n] (0 where never together or i == j)."""
        i = np.asarray(i, np.int64)
        j = np.asarray(j, np.int64)
        lo = np.minimum(i, j)
        hi = np.maximum(i, j)
        keys = lo * self.W + hi
        out = np.zeros(len(keys), np.int64)
        if len(self.pair_keys) == 0 or len(keys) == 0:
            return out
        pos = np.searchsorted(self.pair_keys, keys)
        ok = pos < len(self.pair_keys)
        ok[ok] = np.asarray(self.pair_keys[pos[ok]]) == keys[ok]
        ok &= lo != hi
        out[ok] = np.asarray(self.pair_counts[pos[ok]])
        return out


_REQUIRED = ("word_counts", "pair_keys", "pair_counts", "units", "meta")  # and vocab_utf8 (or vocab)


def load_reference(path, mmap=True):
    """Read a REF.npz written by ``cooc``; InputError naming the file on any problem."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", path)
    arrays = None
    if mmap:
        arrays = _load_mapped(path)
    if arrays is None:
        arrays = store.load_npz(path, required=_REQUIRED)
    missing = [k for k in _REQUIRED if k not in arrays]
    if missing:
        raise InputError(
            f"not a co-occurrence reference (missing {', '.join(missing)}; make one with `topictool cooc`)", path
        )
    try:
        meta = json.loads(str(arrays["meta"]))
    except ValueError:
        raise InputError("meta is not valid JSON (damaged reference?)", path) from None
    if meta.get("format") != FORMAT:
        raise InputError(f"not a co-occurrence reference (format {meta.get('format')!r})", path)
    vocab = store.decode_words(arrays, "vocab", path)
    W = len(vocab)
    wc = np.asarray(arrays["word_counts"]).astype(np.int64)
    keys, counts = arrays["pair_keys"], arrays["pair_counts"]
    if wc.shape != (W,) or keys.ndim != 1 or keys.shape != counts.shape:
        raise InputError("array shapes do not agree (damaged reference?)", path)
    if keys.dtype.kind != "i" or counts.dtype.kind != "i":
        raise InputError("pair arrays are not integers (damaged reference?)", path)
    if len(keys) and (int(keys[0]) < 1 or int(keys[-1]) >= W * W):
        raise InputError("pair keys outside the vocabulary (damaged reference?)", path)
    window = int(arrays["window"]) if "window" in arrays else meta.get("window")
    return Reference(
        str(path),
        vocab,
        wc,
        keys,
        counts,
        int(arrays["units"]),
        int(arrays["documents"]) if "documents" in arrays else meta.get("documents", 0),
        int(arrays["tokens"]) if "tokens" in arrays else meta.get("tokens", 0),
        "doc" if window == 0 else window,
        meta,
    )


def _load_mapped(path):
    """Arrays of an uncompressed .npz with the big ones memory-mapped; None if that fails."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = {i.filename[:-4]: i for i in zf.infolist() if i.filename.endswith(".npy")}
            out = {}
            for name, info in infos.items():
                if name in ("pair_keys", "pair_counts") and info.compress_type == zipfile.ZIP_STORED:
                    out[name] = None
                else:
                    with zf.open(info) as m:
                        out[name] = np.lib.format.read_array(m, allow_pickle=False)
        with open(path, "rb") as f:
            for name in [n for n, v in out.items() if v is None]:
                info = infos[name]
                f.seek(info.header_offset)
                local = f.read(30)
                if local[:4] != b"PK\x03\x04":
                    return None
                fn_len, extra_len = struct.unpack("<HH", local[26:30])
                start = info.header_offset + 30 + fn_len + extra_len
                f.seek(start)
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
                else:
                    return None
                if dtype.hasobject or fortran or len(shape) != 1:
                    return None
                offset = f.tell()
                if offset + shape[0] * dtype.itemsize > start + info.file_size:
                    return None
                out[name] = (
                    np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)
                    if shape[0]
                    else np.zeros(0, dtype)
                )
        return out
    except Exception:  # noqa: BLE001 - fall back to the plain loader, which names the problem
        return None
