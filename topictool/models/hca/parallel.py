"""Threads for the hca sweep: a vocabulary-partitioned schedule (Yan et al. 2009; tomotopy's
``partition``), so that no two threads ever touch the same document's or the same word's counts.

Documents are cut into T blocks and words into T blocks, both of nearly equal token counts.
A sweep is T rounds; in round r thread t samples the tokens of document block (t + r) mod T
whose word lies in word block t, with the ordinary sweep kernel (sampler.sweep, restricted to
the word block) and its own random stream (row t). After the T rounds every token was
sampled once. A thread keeps its word block and the document blocks move, because the word
side is what a cell reads most per token and what is larger on most corpora (K x W counts and
tables against the documents' K-rows): with the documents fixed instead, the word block that
changed cores every round cost the movie reviews' two-thread cells 1.5-2 ms of 11.5
(docs/models/hca.md, "Threads"). Within a round:

- exclusive to thread t: the round's documents' z, r and rows of t_dk (the document nodes, and
  with burst the psi_dk nodes and their slot caches, rebuilt from z and r whenever the kernel
  enters a document), and its word block's rows of n_kw, t_kw and TwT (the topic
  nodes' cells of those words and the word root's counts of them). Each row is written by one
  thread only, so every per-cell statistic and every table-count constraint 0 <= t <= n,
  t >= 1 when n > 0, holds exactly as in the serial sweep;
- shared, copied: the per-topic totals summed over documents or words -- n_k (customers of
  topic k's node), TW_k (its tables), T_k (the alpha root's counts) -- and the word root's
  total and used count. Each thread works on its own copy of these (``Schedule``), seeing the
  other threads' changes at the next round. After the round the copies' changes are added
  to the shared totals in t = 0..T-1 order (integers: exact): x = x0 + sum_t (x_t - x0).

Why the totals need no repair: each is a sum, over rows a thread owns exclusively, of cells
the threads keep valid; the merged total is exactly that sum over the merged rows (T_k is
the column sum of t_dk, n_k of n_kw, TW_k of t_kw), so it is never negative and agrees with
the cells; ``check_invariants`` verifies it. What is stale is the totals' *view*: for at
most one round a thread does not see the other threads' changes to n_k, TW_k, T_k, which
move by a few per topic out of thousands (AD-LDA's staleness, but only on K numbers).
"""

import numpy as np

from ...threads import padded


def balanced_cuts(weights, T):
    """Boundaries (T + 1) cutting range(len(weights)) into T runs of nearly equal total weight."""
    n = len(weights)
    csum = np.concatenate([[0], np.cumsum(np.asarray(weights, dtype=np.int64))])
    total = int(csum[-1])
    cuts = np.searchsorted(csum, [total * t // T for t in range(T + 1)], side="left")
    cuts[0], cuts[-1] = 0, n
    return [int(x) for x in np.maximum.accumulate(np.minimum(cuts, n))]


class Schedule:
    """The document and word blocks and each thread's copies of the per-topic totals, its
    counters and its random stream (rows of ``padded`` arrays)."""

    def __init__(self, model):
        T = model.threads
        self.T = T
        self.docs = balanced_cuts(np.diff(model.token_ptr), T)
        self.words = balanced_cuts(model.corpus.word_counts(), T)
        self.n_k = padded(T, len(model.n_k), model.n_k.dtype)
        self.TW_k = padded(T, len(model.TW_k), model.TW_k.dtype)
        self.T_k = padded(T, len(model.T_k), model.T_k.dtype)
        self.extent = padded(T, len(model.extent), model.extent.dtype)
        self.stats = padded(T, len(model.stats), model.stats.dtype)
        self.word_totals = padded(T, 2 if model.pyp_words else 0, np.int64)
        self.rng = padded(T, 4, np.uint64)

    def rng_of(self, t):
        """Thread t's stream as the (1, 4) array the kernels take (row 0 of it)."""
        return self.rng[t : t + 1]

    def start_sweep(self, m):
        self.stats[:] = 0
        self.rng[:] = m.rng

    def end_sweep(self, m):
        m.rng[:] = self.rng
        for t in range(self.T):
            m.stats += self.stats[t]

    def start_round(self, m):
        self.n_k[:] = m.n_k
        self.TW_k[:] = m.TW_k
        self.T_k[:] = m.T_k
        self.extent[:] = m.extent
        if m.pyp_words:  # the word root's total and used count (TwT rows change under the threads)
            self.word_totals[:, 0] = int(m.TwT.sum())
            self.word_totals[:, 1] = int(np.count_nonzero(m.TwT))
        self._start = (m.n_k.copy(), m.TW_k.copy(), m.T_k.copy())

    def end_round(self, m):
        n_k0, TW_k0, T_k0 = self._start
        for t in range(self.T):  # fixed order (integers: exact in any order anyway)
            m.n_k += self.n_k[t] - n_k0
            m.TW_k += self.TW_k[t] - TW_k0
            m.T_k += self.T_k[t] - T_k0
        np.max(self.extent, axis=0, out=m.extent)
