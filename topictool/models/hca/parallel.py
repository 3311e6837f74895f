"""Threads for the hca sweep: document blocks against private copies of the shared counts
(AD-LDA, Newman et al. 2009, extended to table counts), merged after every sweep.

The sweep with T threads (model.py, ``HcaGibbs._run_sweep_threaded``):

1. Documents are cut into T contiguous blocks of nearly equal token counts. Everything of a
   document -- its tokens' z and r, its row of t_dk, its burst caches -- is touched by the one
   thread that owns its block.
2. Each thread sweeps its block with the ordinary sweep kernel and its own random stream
   against its own ``Copies`` slot of the shared statistics: the word side n_kw, n_k (and,
   NP-LDA, t_kw, the cached factors Aw, Bw, the word root's TW_k, TwT) and the topic root's
   T_k. Other threads' changes are invisible to it until the sweep ends (one sweep of
   staleness, as in AD-LDA). The W x K copies are kept equal to the shared arrays by the
   merge (below) and copied whole (``refresh``) only when something else changed the shared
   ones: the first sweep, a resume, a new discount a_phi (new cached factors).
3. ``merge`` (words cut into T ranges, one per thread) adds every copy's change to the
   shared counts: x = x0 + sum_t (x_t - x0), in t = 0..T-1 order (integers, so exact).
   Customer counts n_kw can only come out right (each token is in one block). Table counts
   t_kw can break 1 <= t <= n (t = 0 when n = 0): two threads each remove a customer that
   is not a table head from a cell with two customers at one table (merged n = 0, t = 1), or
   both remove a head and one adds a non-head (merged n = 1, t = 0); with t0 >= 3 tables
   the merged t can even be negative (each thread keeps t_t >= 1 on its own, the sum
   t_A + t_B - t0 need not). Such a cell is
   repaired to the nearest valid value, t = min(max(t, 1), n) (t = 0 when n = 0): the
   smallest change that restores a state of positive probability; the next sweep then
   resamples the cell's indicators from their exact conditional. Repairs are counted
   (``merge_repairs`` in the step's metrics); they are rare (a few per million tokens).
   The cached factors Aw, Bw are recomputed for every cell whose (n, t) changed, the word
   root's TwT (per word) and TW_k (per range, summed after) from the merged t_kw, and each
   copy's cell that differs from the merged one is overwritten with it.

Every part reads shared data no part writes during the call and writes only its own, so
the result depends on T but not on how the operating system schedules the threads.
"""

import numba
import numpy as np

from .pyp import indicator_weights


class Copies:
    """One thread's private view of the shared statistics per slot t (first axis)."""

    SHARED = ("n_kw", "n_k", "t_kw", "Aw", "Bw", "TW_k", "TwT", "T_k", "extent", "stats")

    def __init__(self, T, model):
        for name in self.SHARED:
            a = getattr(model, name)
            setattr(self, name, np.zeros((T, *a.shape), dtype=a.dtype))
        self.TW_part = np.zeros((T, *model.TW_k.shape), dtype=np.int64)
        self.repairs = np.zeros(T, dtype=np.int64)
        self.missed = np.zeros(T, dtype=np.int64)
        self.max_n = np.zeros(T, dtype=np.int64)
        self.max_t = np.zeros(T, dtype=np.int64)

    def nbytes(self):
        return sum(a.nbytes for a in vars(self).values() if isinstance(a, np.ndarray))


# Thread t's private copy of the shared statistics (inside the kernel: the GIL is released).
@numba.njit(cache=True, nogil=True)
def refresh(n_kw, n_k, t_kw, Aw, Bw, TW_k, TwT, T_k, c_n_kw, c_n_k, c_t_kw, c_Aw, c_Bw, c_TW_k, c_TwT, c_T_k):
    c_n_kw[:] = n_kw
    c_n_k[:] = n_k
    c_t_kw[:] = t_kw
    c_Aw[:] = Aw
    c_Bw[:] = Bw
    c_TW_k[:] = TW_k
    c_TwT[:] = TwT
    c_T_k[:] = T_k


# Words lo..hi-1 of the shared word side get every copy's change (step 3 of the module
# docstring), and every copy whose cell differs from the result gets the result too (so the
# copies start the next sweep fresh without a full copy). Returns (repaired cells, cells whose
# factors the Stirling table cannot cover yet -- marked Aw = -1 for ``fill_marked`` --,
# largest merged n, largest merged t).
@numba.njit(cache=True, nogil=True)
def merge(lo, hi, pyp_words, n_kw, t_kw, Aw, Bw, c_n_kw, c_t_kw, c_Aw, c_Bw, R_phi, a_phi, TwT, TW_part):
    T = c_n_kw.shape[0]
    K = n_kw.shape[1]
    rows = R_phi.shape[0]
    cols = R_phi.shape[1]
    repairs = 0
    missed = 0
    max_n = 0
    max_t = 0
    for k in range(TW_part.shape[0]):  # empty for the Dirichlet word side
        TW_part[k] = 0
    for w in range(lo, hi):
        tw = 0
        for k in range(K):
            n0 = n_kw[w, k]
            n = n0
            for th in range(T):
                n += c_n_kw[th, w, k] - n0
            if n > max_n:
                max_n = n
            if not pyp_words:
                if n != n0:
                    n_kw[w, k] = n
                for th in range(T):
                    if c_n_kw[th, w, k] != n:
                        c_n_kw[th, w, k] = n
                continue
            t0 = t_kw[w, k]
            t = t0
            for th in range(T):
                t += c_t_kw[th, w, k] - t0
            # the nearest valid table count (module docstring): 0 when n = 0, else in 1..n
            if n == 0:
                if t != 0:
                    t = 0
                    repairs += 1
            elif t > n:
                t = n
                repairs += 1
            elif t < 1:
                t = 1
                repairs += 1
            if t > max_t:
                max_t = t
            tw += t
            TW_part[k] += t
            if n != n0 or t != t0:
                n_kw[w, k] = n
                t_kw[w, k] = t
                if n < rows and t + 1 < cols:
                    A, B = indicator_weights(R_phi, a_phi, n, t)
                    Aw[w, k] = A
                    Bw[w, k] = B
                else:
                    Aw[w, k] = -1.0
                    missed += 1
            for th in range(T):
                if c_n_kw[th, w, k] != n or c_t_kw[th, w, k] != t:
                    c_n_kw[th, w, k] = n
                    c_t_kw[th, w, k] = t
                    c_Aw[th, w, k] = Aw[w, k]
                    c_Bw[th, w, k] = Bw[w, k]
        if pyp_words:
            TwT[w] = tw
    return repairs, missed, max_n, max_t


# The factors of the cells ``merge`` marked (Aw = -1), once the table has grown to cover them.
@numba.njit(cache=True, nogil=True)
def fill_marked(n_kw, t_kw, R_phi, a_phi, Aw, Bw):
    W, K = n_kw.shape
    for w in range(W):
        for k in range(K):
            if Aw[w, k] < 0.0:
                A, B = indicator_weights(R_phi, a_phi, n_kw[w, k], t_kw[w, k])
                Aw[w, k] = A
                Bw[w, k] = B


def document_blocks(token_ptr, T):
    """Document boundaries (T + 1) cutting the corpus into T runs of nearly equal token counts."""
    D = len(token_ptr) - 1
    N = int(token_ptr[-1])
    cuts = np.searchsorted(token_ptr, [N * t // T for t in range(T + 1)], side="left")
    cuts[0], cuts[-1] = 0, D
    return [int(x) for x in np.maximum.accumulate(np.minimum(cuts, D))]


def split_words(W, T):
    """Word boundaries (T + 1) for the merge: every word costs the same (K cells)."""
    return [W * t // T for t in range(T + 1)]
