"""LdaC (Blei's lda-c) format: one document per line, `M id:count id:count ...`, ids 0-based."""

from array import array

import numpy as np

from .. import store
from ..errors import InputError
from .corpus import from_triples
from .sources import read_lines

_MAX_COUNT = 2**31 - 1


def read_ldac(path, vocab, encoding="utf-8"):
    """Read an LdaC file against ``vocab``; every inconsistency names its line."""
    W = len(vocab)
    docs, words, counts = array("q"), array("q"), array("q")
    D = 0
    for lineno, line in read_lines(path, encoding, "strict"):
        fields = line.split()
        if not fields:
            continue  # tolerate blank lines (e.g. a trailing one)
        try:
            declared = int(fields[0])
        except ValueError:
            raise InputError(f"expected the number of distinct terms first, got {fields[0]!r}", path, lineno) from None
        if declared != len(fields) - 1:
            raise InputError(f"declares {declared} terms but has {len(fields) - 1} id:count pairs", path, lineno)
        for pair in fields[1:]:
            wid, sep, cnt = pair.partition(":")
            try:
                if not sep:
                    raise ValueError
                wid, cnt = int(wid), int(cnt)
            except ValueError:
                raise InputError(f"bad pair {pair!r}: expected integer id:count", path, lineno) from None
            if cnt < 0:
                raise InputError(f"negative count in {pair!r}", path, lineno)
            if cnt > _MAX_COUNT:
                raise InputError(f"count in {pair!r} exceeds {_MAX_COUNT:,} (counts are int32)", path, lineno)
            if wid < 0 or wid >= W:
                raise InputError(f"word id {wid} outside the vocabulary of {W} words", path, lineno)
            docs.append(D)
            words.append(wid)
            counts.append(cnt)
        D += 1
    if D == 0:
        raise InputError("no documents", path)
    return from_triples(
        np.frombuffer(docs, np.int64), np.frombuffer(words, np.int64), np.frombuffer(counts, np.int64), D, vocab
    )


def write_ldac(corpus, path):
    write_ldac_chunks([corpus], path)


def write_ldac_chunks(chunks, path):
    """One LdaC file from corpora of consecutive documents (prepare streams a split in chunks)."""
    with store.atomic_open(path, "w") as f:
        for corpus in chunks:
            for d in range(corpus.D):
                lo, hi = corpus.doc_ptr[d], corpus.doc_ptr[d + 1]
                pairs = " ".join(
                    f"{w}:{c}" for w, c in zip(corpus.word_ids[lo:hi].tolist(), corpus.counts[lo:hi].tolist())
                )
                f.write(f"{hi - lo} {pairs}\n" if hi > lo else "0\n")


def looks_like_ldac(first_lines):
    for line in first_lines:
        fields = line.split()
        if not fields:
            continue
        if not fields[0].isdigit() or any(":" not in p for p in fields[1:]):
            return False
    return True
