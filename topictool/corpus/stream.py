"""prepare's streaming of text: documents tokenised file by file (in worker processes with
``threads`` > 1), rows spilled to scratch files, then pruned, renumbered, split and written in
bounded chunks.

What is held in memory: the vocabulary (words, their corpus and document frequencies), a few
numbers per document (rows, tokens, part: ~25 bytes each), the documents being tokenised, and
one chunk of rows (CHUNK_ROWS) at a time. Never the corpus's tokens or rows as a whole.

Pass 1 (``scan_text``): documents in the order prepare reads them (sources in order, files
sorted); each document's distinct words (stop words removed) get ids in order of first sight,
as the in-memory reader (prepare._BagBuilder) numbers them; its (id, count) rows, ascending by
id, are appended to scratch files, its name to another.

Pass 2 (``split_scan``): the vocabulary mask (pruning) gives the final ids (old order kept, so
rows stay ascending); a first sweep over the rows counts each document's rows that remain (to
drop the empty documents and draw the seeded split exactly as the in-memory path does), a
second writes each kept row to its part's scratch files. The parts are then written from those
(``Part``: the same bytes as Corpus.sha256, save_arrays, write_ldac and write_uci give).

The scratch files are hidden ``.*.tmp`` files inside prepare's staging directory: the output
rule counts them as topictool's own, they go when the directory is aborted, and prepare removes
them before the directory is put in place.
"""

import hashlib
import itertools
import os
import zipfile
from array import array
from collections import Counter, deque
from pathlib import Path

import numpy as np

from .. import store
from ..errors import InputError
from .corpus import Corpus

#: (word id, count) rows per chunk of pass 2 and of the writers: ~60 bytes a row of temporaries at most
CHUNK_ROWS = 1 << 20
#: characters of text (or documents) per tokenising task
BATCH_CHARS = 1 << 20
BATCH_DOCS = 4096


# -- tokenising: the same function inline (threads=1) and in each worker process --------------


def tokenise_batch(texts, tokenize, stop):
    """Each text's distinct words (stop words removed) and their counts, in order of first
    occurrence, with the words numbered within the batch: (batch words in order of first sight,
    their batch numbers, each text's word numbers, counts, words per text). The numbers are not
    contiguous (the caller maps them through a table); numbering here, in the worker, leaves the
    main process one dictionary look-up per distinct word of the batch, not per word of each text.
    """
    numbers = {}
    counter = itertools.count()
    delete = dict.__delitem__  # Counter's own __delitem__ is Python code
    ids, counts, lengths = array("q"), array("i"), array("q")
    for text in texts:
        c = Counter(tokenize(text))
        if stop:
            for w in c.keys() & stop:
                delete(c, w)  # (the others keep their order)
        ids.extend(map(numbers.setdefault, c, counter))
        counts.extend(c.values())
        lengths.append(len(c))
    return list(numbers), array("q", numbers.values()), ids, counts, lengths


_WORKER = None  # (tokenizer, stop words) of a worker process


def _worker_init(pattern, stop):
    import signal

    from .tokenizer import Tokenizer

    # Ctrl-C reaches the whole process group: the main process stops the pool (no traceback per worker)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _WORKER
    _WORKER = (Tokenizer(pattern), stop)


def _worker_batch(texts):
    return tokenise_batch(texts, *_WORKER)


def _batches(sources):
    """(names, texts, is-file flags) batches of about BATCH_CHARS of text, in reading order."""
    names, texts, files, size = [], [], [], 0
    for source in sources:
        for name, text in source:
            names.append(name)
            texts.append(text)
            files.append(not source.per_line)
            size += len(text)
            if size >= BATCH_CHARS or len(texts) >= BATCH_DOCS:
                yield names, texts, files
                names, texts, files, size = [], [], [], 0
    if texts:
        yield names, texts, files


def tokenised(sources, pattern, stop, threads=1):
    """(names, is-file flags, tokenise_batch result) per batch, in reading order, whatever
    ``threads``. With threads > 1, that many worker processes tokenise (Python's regex holds the
    GIL, so threads would not run at once); this process reads, decodes and numbers the words.
    At most 2 batches per worker are in flight, so memory does not grow with the corpus."""
    if threads <= 1:
        from .tokenizer import Tokenizer

        tokenize = Tokenizer(pattern)
        for names, texts, files in _batches(sources):
            yield names, files, tokenise_batch(texts, tokenize, stop)
        return
    import multiprocessing

    # spawn: a fresh interpreter per worker (fork hung once here when the pool was stopped early)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(threads, initializer=_worker_init, initargs=(pattern, stop)) as pool:
        pending = deque()
        for names, texts, files in _batches(sources):
            pending.append((names, files, pool.apply_async(_worker_batch, (texts,))))
            del texts
            if len(pending) >= 2 * threads:
                names0, files0, result = pending.popleft()
                yield names0, files0, result.get()
        while pending:
            names0, files0, result = pending.popleft()
            yield names0, files0, result.get()


# -- pass 1 ---------------------------------------------------------------------------------------


class Scan:
    """Pass 1's result: the vocabulary with frequencies, rows per document, and the scratch files
    (row ids, row counts, document names) in ``scratch``."""

    def __init__(self, scratch, fixed=None):
        self.scratch = Path(scratch)
        self.fixed = fixed is not None
        self.words = list(fixed) if self.fixed else []
        self.index = {w: i for i, w in enumerate(self.words)}
        self.tf = np.zeros(max(len(self.words), 1024), dtype=np.int64)  # corpus frequency by id
        self.df = np.zeros_like(self.tf)  # document frequency by id
        self.doc_rows = array("q")  # rows of each document
        self.oov = 0
        self.ids_path = self.scratch / ".stream-ids.tmp"
        self.counts_path = self.scratch / ".stream-counts.tmp"
        self.names_path = self.scratch / ".stream-names.tmp"
        self.paths = [self.ids_path, self.counts_path, self.names_path]

    @property
    def D(self):
        return len(self.doc_rows)

    def add(self, names, result, files_out):
        """One tokenised batch: number new words, sort each document's rows by id, append."""
        words, numbers, local, counts, lengths = result
        ids = np.fromiter(map(self.index.get, words, itertools.repeat(-1)), dtype=np.int64, count=len(words))
        new = np.flatnonzero(ids < 0)
        if len(new) and not self.fixed:
            index, vocab = self.index, self.words
            for p in new.tolist():  # the batch's words in order of first sight: ids in that order
                ids[p] = index[words[p]] = len(vocab)
                vocab.append(words[p])
        table = np.empty(len(local), dtype=np.int64)  # batch number -> id (numbers < len(local))
        table[np.frombuffer(numbers, dtype=np.int64)] = ids
        ids = table[np.frombuffer(local, dtype=np.int64)]
        cnt = np.frombuffer(counts, dtype=np.int32)
        lengths = np.frombuffer(lengths, dtype=np.int64)
        if self.fixed:
            outside = ids < 0
            self.oov += int(cnt[outside].sum(dtype=np.int64))  # words outside --vocab: counted, dropped
        doc = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        if self.fixed:
            ids, cnt, doc = ids[~outside], cnt[~outside], doc[~outside]
        # rows ascending by id within each document (documents stay in order)
        order = np.argsort(doc * (len(self.words) + 1) + ids, kind="stable")
        ids, cnt = ids[order].astype(np.int32), cnt[order]
        ids.tofile(files_out[0])
        np.ascontiguousarray(cnt).tofile(files_out[1])
        self.doc_rows.frombytes(np.bincount(doc, minlength=len(lengths)).astype(np.int64).tobytes())
        if len(self.words) > len(self.tf):
            grow = max(len(self.words), 2 * len(self.tf))
            self.tf = np.concatenate([self.tf, np.zeros(grow - len(self.tf), np.int64)])
            self.df = np.concatenate([self.df, np.zeros(grow - len(self.df), np.int64)])
        W = len(self.tf)
        self.tf += np.bincount(ids, weights=cnt, minlength=W).astype(np.int64)
        self.df += np.bincount(ids, minlength=W)
        files_out[2].write(b"".join(_name_line(n) for n in names))


def _name_line(name):
    """A document's line of train/test.names.txt (as prepared.write_names writes it)."""
    return (" ".join(str(name).split("\t")).replace("\n", " ").replace("\r", " ") + "\n").encode("utf-8")


def scan_text(text_sources, scratch, pattern, stop, fixed=None, threads=1, on_batch=None):
    """Pass 1 over ``text_sources`` (TextSource objects, members listed); returns a Scan and
    the names of the documents that are files (a FolderCounter)."""
    from .text import FolderCounter

    scan = Scan(scratch, fixed)
    folders = FolderCounter()
    with open(scan.ids_path, "wb") as fi, open(scan.counts_path, "wb") as fc, open(scan.names_path, "wb") as fn:
        for names, files, result in tokenised(text_sources, pattern, stop, threads):
            scan.add(names, result, (fi, fc, fn))
            for name, is_file in zip(names, files):
                if is_file:
                    folders.add(name)
            if on_batch is not None:
                on_batch(scan)
    scan.W_seen = len(scan.words)
    scan.tf, scan.df = scan.tf[: scan.W_seen], scan.df[: scan.W_seen]
    return scan, folders


# -- columns and parts: a split's rows in memory or in a scratch file -----------------------------


class Column:
    """An int32 column of rows: a numpy array, or a raw scratch file."""

    def __init__(self, array=None, path=None):
        self.array, self.path = array, path

    def read(self, lo, hi):
        if self.array is not None:
            return self.array[lo:hi]
        with open(self.path, "rb") as f:
            f.seek(4 * int(lo))
            a = np.fromfile(f, dtype=np.int32, count=int(hi - lo))
        if len(a) != hi - lo:  # the scratch file was cut short (removed or truncated meanwhile)
            raise InputError(f"scratch file ends early ({len(a):,} of {int(hi - lo):,} rows)", self.path)
        return a


class Part:
    """A split (or a shard of one): doc_ptr in memory, rows in Columns from ``row0`` on."""

    def __init__(self, doc_ptr, ids, counts, vocab, doc_tokens, row0=0):
        self.doc_ptr = np.asarray(doc_ptr, dtype=np.int64)
        self.ids, self.counts, self.vocab = ids, counts, tuple(vocab)
        self.doc_tokens = np.asarray(doc_tokens, dtype=np.int64)
        self.row0 = int(row0)

    @classmethod
    def of(cls, corpus):
        return cls(corpus.doc_ptr, Column(corpus.word_ids), Column(corpus.counts), corpus.vocab, corpus.doc_lengths())

    @property
    def D(self):
        return len(self.doc_ptr) - 1

    @property
    def N(self):
        return int(self.doc_tokens.sum())

    @property
    def nnz(self):
        return int(self.doc_ptr[-1])

    def slice(self, d0, d1):
        """Documents d0..d1-1 as a Part."""
        ptr = self.doc_ptr[d0 : d1 + 1]
        return Part(ptr - ptr[0], self.ids, self.counts, self.vocab, self.doc_tokens[d0:d1], self.row0 + ptr[0])

    def row_chunks(self, column):
        """The column's rows of this part, CHUNK_ROWS at a time."""
        for lo in range(0, self.nnz, CHUNK_ROWS):
            hi = min(lo + CHUNK_ROWS, self.nnz)
            yield column.read(self.row0 + lo, self.row0 + hi)

    def chunks(self):
        """Corpora of consecutive documents of about CHUNK_ROWS rows (for the LdaC/UCI writers)."""
        for d0, d1 in doc_chunks(np.diff(self.doc_ptr)):
            piece = self.slice(d0, d1)
            lo, hi = piece.row0, piece.row0 + piece.nnz
            yield Corpus(piece.doc_ptr, self.ids.read(lo, hi), self.counts.read(lo, hi), self.vocab)

    def sha256(self):
        """Corpus.sha256 of this part, streamed."""
        h = hashlib.sha256()
        h.update(self.doc_ptr.astype("<i8").tobytes())
        for column in (self.ids, self.counts):
            for a in self.row_chunks(column):
                h.update(np.ascontiguousarray(a, dtype="<i4").tobytes())
        h.update("\n".join(self.vocab).encode("utf-8"))
        return h.hexdigest()

    def save(self, path):
        """prepared.save_arrays's .npz, byte for byte (np.savez's layout: stored, zip64 members,
        format 1.0 headers), written a chunk at a time."""
        from numpy.lib import format as npy

        columns = (
            ("doc_ptr", "<i8", self.D + 1, [self.doc_ptr]),
            ("word_ids", "<i4", self.nnz, self.row_chunks(self.ids)),
            ("counts", "<i4", self.nnz, self.row_chunks(self.counts)),
        )
        with store.atomic_open(path, "wb") as f:
            with zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
                for name, dtype, n, pieces in columns:
                    with z.open(name + ".npy", "w", force_zip64=True) as member:
                        header = {"descr": npy.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": (n,)}
                        npy.write_array_header_1_0(member, header)
                        for a in pieces:
                            member.write(np.ascontiguousarray(a, dtype=dtype).tobytes())


def doc_chunks(doc_rows, limit=None):
    """(d0, d1) runs of consecutive documents of at most ``limit`` rows (one document more
    when it alone is larger)."""
    limit = CHUNK_ROWS if limit is None else limit
    ends = np.cumsum(doc_rows, dtype=np.int64)
    D, d0, base = len(ends), 0, 0
    while d0 < D:
        d1 = int(np.searchsorted(ends, base + limit, side="right"))
        d1 = max(d1, d0 + 1)
        yield d0, d1
        base = int(ends[d1 - 1])
        d0 = d1


# -- pass 2 ---------------------------------------------------------------------------------------


def kept_rows(scan, new_id):
    """Rows of each document that survive the vocabulary mask (int64, D)."""
    doc_rows = np.frombuffer(scan.doc_rows, dtype=np.int64)
    out = np.zeros(len(doc_rows), dtype=np.int64)
    ids = Column(path=scan.ids_path)
    starts = np.concatenate([[0], np.cumsum(doc_rows)])
    for d0, d1 in doc_chunks(doc_rows):
        a = ids.read(starts[d0], starts[d1])
        row = np.repeat(np.arange(d1 - d0), doc_rows[d0:d1])
        out[d0:d1] = np.bincount(row[new_id[a] >= 0], minlength=d1 - d0)
    return out


def split_scan(scan, new_id, vocab, part_of, kept):
    """Write each kept row, renumbered, to its part's scratch files; returns {part: Part} for the
    parts 0 (train) and 1 (test) that ``part_of`` (int8 per document, -1 dropped) names."""
    doc_rows = np.frombuffer(scan.doc_rows, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(doc_rows)])
    ids, counts = Column(path=scan.ids_path), Column(path=scan.counts_path)
    doc_tokens = np.zeros(len(doc_rows), dtype=np.int64)
    paths = {p: tuple(scan.scratch / f".stream-part{p}-{c}.tmp" for c in ("ids", "counts")) for p in (0, 1)}
    scan.paths += [x for pair in paths.values() for x in pair]
    files = {p: (open(a, "wb"), open(b, "wb")) for p, (a, b) in paths.items()}
    try:
        for d0, d1 in doc_chunks(doc_rows):
            lo, hi = starts[d0], starts[d1]
            a, c = new_id[ids.read(lo, hi)], counts.read(lo, hi)
            row = np.repeat(np.arange(d1 - d0), doc_rows[d0:d1])
            keep = a >= 0
            a, c, row = a[keep], c[keep], row[keep]
            doc_tokens[d0:d1] = np.bincount(row, weights=c, minlength=d1 - d0).astype(np.int64)
            where = part_of[d0:d1][row]
            for p, (fi, fc) in files.items():
                sel = where == p
                a[sel].astype(np.int32).tofile(fi)
                np.ascontiguousarray(c[sel]).tofile(fc)
    finally:
        for fi, fc in files.values():
            fi.close()
            fc.close()
    parts = {}
    for p in (0, 1):
        docs = np.flatnonzero(part_of == p)
        ptr = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum(kept[docs], out=ptr[1:])
        parts[p] = Part(ptr, Column(path=paths[p][0]), Column(path=paths[p][1]), vocab, doc_tokens[docs])
    return parts


def copy_names(scan, part_of, outputs):
    """Route the documents' names to their part's names file (``outputs``: {part: path})."""
    import contextlib

    with contextlib.ExitStack() as stack:
        files = {p: stack.enter_context(store.atomic_open(path, "wb")) for p, path in outputs.items()}
        with open(scan.names_path, "rb") as f:
            for d, line in enumerate(f):
                out = files.get(int(part_of[d]))
                if out is not None:
                    out.write(line)


def remove_scratch(scan):
    for p in scan.paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
