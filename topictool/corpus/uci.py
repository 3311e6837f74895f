"""UCI bag-of-words: docword.X.txt (3-line header D, W, NNZ; then `doc word count`, 1-based)."""

import itertools
import re

import numpy as np

from .. import store
from ..errors import InputError
from .corpus import from_triples
from .sources import decode, open_binary, strip_compression

_BLOCK = 1 << 20  # lines parsed at once on the fast path


def vocab_path_for(docword_path):
    """docword.kos.txt[.gz] -> vocab.kos.txt (beside it)."""
    from pathlib import Path

    p = Path(docword_path)
    name = strip_compression(p.name)
    m = re.match(r"docword\.(.+)\.txt$", name)
    if not m:
        return None
    for cand in (f"vocab.{m.group(1)}.txt", f"vocab.{m.group(1)}.txt.gz", f"vocab.{m.group(1)}.txt.bz2"):
        if (p.parent / cand).exists():
            return p.parent / cand
    return p.parent / f"vocab.{m.group(1)}.txt"


def read_uci(path, vocab):
    W_vocab = len(vocab)
    with open_binary(path) as f:
        header = []
        for i in range(3):
            raw = f.readline()
            try:
                header.append(int(decode(raw, path, i + 1).strip()))
            except ValueError:
                raise InputError(
                    "UCI header: expected an integer (D, W, NNZ on the first 3 lines)", path, i + 1
                ) from None
        D, W, NNZ = header
        if W != W_vocab:
            raise InputError(f"UCI header says W={W} but the vocabulary has {W_vocab} words", path, 2)
        parts_d, parts_w, parts_c = [], [], []
        lineno = 3
        seen = 0
        while True:
            lines = list(itertools.islice(f, _BLOCK))
            if not lines:
                break
            trip = _parse_block(lines, path, lineno + 1, D, W)
            lineno += len(lines)
            seen += len(trip)
            if seen > NNZ:
                raise InputError(f"UCI header says NNZ={NNZ} but the body has more entries", path, 3)
            parts_d.append(trip[:, 0] - 1)
            parts_w.append(trip[:, 1] - 1)
            parts_c.append(trip[:, 2])
    if seen != NNZ:
        raise InputError(f"UCI header says NNZ={NNZ} but the body has {seen} entries", path, 3)

    def cat(xs):
        return np.concatenate(xs) if xs else np.zeros(0, np.int64)

    return from_triples(cat(parts_d), cat(parts_w), cat(parts_c), D, vocab)


def _parse_block(lines, path, first_lineno, D, W):
    """Fast vectorised parse; on any doubt fall back to a line scan for the exact error."""
    blob = b"".join(lines)
    fields = blob.split()
    nonblank = sum(1 for ln in lines if ln.strip())
    try:
        if len(fields) != 3 * nonblank:
            raise ValueError
        trip = np.array(fields, dtype=np.int64).reshape(-1, 3) if fields else np.zeros((0, 3), np.int64)
        if len(trip) and (
            trip[:, 0].min() < 1
            or trip[:, 0].max() > D
            or trip[:, 1].min() < 1
            or trip[:, 1].max() > W
            or trip[:, 2].min() < 0
        ):
            raise ValueError
        return trip
    except (ValueError, OverflowError):
        _scan(lines, path, first_lineno, D, W)
        raise InputError("malformed UCI body", path, first_lineno) from None  # not reached: _scan raises


def _scan(lines, path, first_lineno, D, W):
    for i, raw in enumerate(lines):
        lineno = first_lineno + i
        fields = raw.split()
        if not fields:
            continue
        if len(fields) != 3:
            raise InputError(f"expected 3 integers 'doc word count', got {len(fields)} fields", path, lineno)
        try:
            d, w, c = (int(x) for x in fields)
        except ValueError:
            raise InputError("expected 3 integers 'doc word count'", path, lineno) from None
        if not 1 <= d <= D:
            raise InputError(f"document id {d} outside 1..{D} declared in the header", path, lineno)
        if not 1 <= w <= W:
            raise InputError(f"word id {w} outside 1..{W} declared in the header", path, lineno)
        if c < 0:
            raise InputError(f"negative count {c}", path, lineno)
        if max(d, w, c) > 2**31 - 1:
            raise InputError(f"a number exceeds {2**31 - 1:,} (ids and counts are int32)", path, lineno)


def write_uci(corpus, docword_path, vocab_path):
    write_uci_chunks([corpus], corpus.D, corpus.nnz, corpus.vocab, docword_path, vocab_path)


def write_uci_chunks(chunks, D, nnz, vocab, docword_path, vocab_path):
    """One UCI docword file (and its vocabulary) from corpora of consecutive documents, D
    documents and nnz rows in all (prepare streams a split in chunks)."""
    with store.atomic_open(docword_path, "w") as f:
        f.write(f"{D}\n{len(vocab)}\n{nnz}\n")
        first = 1  # the 1-based number of the chunk's first document
        for corpus in chunks:
            rows = np.repeat(np.arange(first, first + corpus.D), np.diff(corpus.doc_ptr))
            first += corpus.D
            block = 1 << 18
            for lo in range(0, corpus.nnz, block):
                hi = min(lo + block, corpus.nnz)
                f.write(
                    "".join(
                        f"{d} {w} {c}\n"
                        for d, w, c in zip(
                            rows[lo:hi].tolist(), (corpus.word_ids[lo:hi] + 1).tolist(), corpus.counts[lo:hi].tolist()
                        )
                    )
                )
    store.write_text(vocab_path, "".join(w + "\n" for w in vocab))


def looks_like_uci(path_name, first_lines):
    if re.match(r"docword\..+\.txt$", strip_compression(path_name)):
        return True
    heads = [ln.strip() for ln in first_lines[:4]]
    return len(heads) >= 4 and all(h.isdigit() for h in heads[:3]) and len(heads[3].split()) == 3
