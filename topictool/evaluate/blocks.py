"""The scorers' documents on T real threads (``evaluate``, ``train --test``, ``infer``,
``export doc-topics``).

The documents are cut into T runs of about equal tokens (corpus.token_blocks) and
``Workers(T)`` (topictool/threads.py) calls a nogil numba kernel on run t on thread t, so
``--threads 16`` runs 16 threads even on a 2-core machine (numba's ``prange`` pool would be
capped at the core count). Every document draws from its own random stream seeded from
(seed, document index) and writes its results to its own rows, so the blocks touch disjoint
data and the figures do not depend on T: the callers sum the per-document results in document
order afterwards.
"""

import numpy as np

from ..corpus.corpus import token_blocks
from ..threads import Workers

__all__ = ["document_blocks", "over_blocks"]


def document_blocks(ptrs, threads):
    """Boundaries (threads + 1) cutting the documents of the CSR pointers ``ptrs`` (one or
    several arrays of D + 1 entries, whose tokens are added) into runs of about equal tokens."""
    total = np.zeros_like(np.asarray(ptrs[0], dtype=np.int64))
    for p in ptrs:
        total += np.asarray(p, dtype=np.int64)
    return [int(c) for c in token_blocks(total, threads)]


def over_blocks(threads, ptrs, block):
    """``block(lo, hi)`` for each of ``threads`` runs of documents [lo, hi), each on its own
    thread and all at once (one barrier); every run is called, empty ones too. With one thread,
    ``block(0, D)`` on the caller's thread."""
    threads = int(threads)
    cuts = document_blocks(ptrs, threads)
    workers = Workers(threads)
    try:
        workers.run(lambda t: block(cuts[t], cuts[t + 1]))
    finally:
        workers.close()  # no parked threads left behind by an evaluation
