"""hdp-pcvb0: batch zero-order collapsed variational Bayes for the HDP (Sato,
Kurihara & Nakagawa, "Practical Collapsed Variational Bayes Inference for
Hierarchical Dirichlet Process", KDD 2012), with the lower-bound approximation of
the expected table counts.

Symbols: T sticks (option K, the truncation); beta the symmetric prior on topics'
words, V = W words; alpha the document-level concentration and gamma the top-level
one; pi (T) the top-level topic weights, a document's prior is alpha pi; q(z_di = k)
the variational topic distribution of token i of document d; expected counts
n_dk, n_kw, n_k (sums of q); a superscript -di leaves token i out.

One iteration (``step()``):
  for every document d, for every token i (in the corpus's order):
    q(z_di = k) ∝ (n_dk^-di + alpha pi_k) (n_kw^-di + beta) / (n_k^-di + V beta)            (P1)
    (the counts then include the new q(z_di))
  E_dk = E[1(n_dk >= 1)] = 1 - prod_i (1 - q(z_di = k))                                       (P2)
  sticks re-ordered by size (n_k, largest first; ``reorder``), then
    u_k = 1 + sum_d E_dk,  v_k = gamma + sum_{l>k} sum_d E_dl                                (S2)
    gamma = (T - 1) / sum_{k<T} [Psi(u_k + v_k) - Psi(v_k)]                                   (S3)
    alpha = sum_{d,k} E_dk / sum_d [Psi(n_d + alpha) - Psi(alpha)]                            (S4)
    pi_k = ubar_k prod_{l<k} (1 - ubar_l),  ubar_k = u_k / (u_k + v_k),  ubar_T = 1           (S1)
  (S2)-(S3) are solved together for gamma (v depends on gamma) and (S4) for alpha, each
  by fixed-point iteration to a relative change of 1e-10 (a single step per sweep
  converges at the rate of the unused sticks' share, ~0.9, and lags the counts: on
  the movie reviews, from gamma = 1, 3.6 after 30 sweeps against 5.7 solved, and
  held-out perplexity 4,293 against 4,281); then (S1) with the v of the solved gamma.
  ``optimize_gamma=false`` keeps gamma and ``optimize_alpha=false`` alpha at their
  options' values (``optimize_hyper`` before the rename set both). (S1)-(S4) are in
  ``sticks``. One step visits every token once (step_unit "sweep").

Threads (``--threads T``): the vocabulary-partitioned schedule of lda-gibbs (Yan et al. 2009;
docs/models/lda-gibbs.md). The documents are cut into T blocks and the words into T blocks, both
of about equal units; in round r = 0..T-1 thread t updates the units of (document block t, word
block (t + r) mod T), so no two threads touch the same document's n_dk and q or the same word's
n_wk: those are exact, as on one thread. Only n_k is shared: each thread updates its own copy
during a round, and after the round the copies' changes are added to n_k in thread order (the
staleness of lda-gibbs's threads: a round). A document's units are visited a word block at a time
(its words ascend, so each block's are a run), so its running prod_i (1 - q_ik) for (P2) is kept
per document across the rounds (D x K). A sweep is one kernel call per thread, waiting for the
others on a barrier inside it (``threads.Barrier``) (``_pcvb0_thread``), or, where the C library has none, one
Workers.run per round. The scheme it replaced (AD-LDA: a copy of n_wk per thread, merged 8 times
a sweep) took 1.36x one thread's CPU at 2 threads on the movie reviews and gave 1.3-1.4x.

Implementation notes.
- q(z_di) of every token is stored (single precision: N x T x 4 bytes, the memory
  cost of batch CVB0), and the count tables are always exactly the sums of the
  stored values, so removing and re-adding a token never drifts.
- ``clumping``: one q per distinct word of a document, shared by its m copies; -di
  then removes one copy, and the m copies are updated together (N x T becomes
  nnz x T); (P2) uses (1 - q)^m.
- prod_i (1 - q) underflows harmlessly: once it is below 1e-300, E_dk = 1 to double
  precision, and it is set to 0.
- Start (``init``): "sequential" (default) draws every token's topic in turn from
  (P1)'s conditional given the draws before it (a collapsed Gibbs sampler's first
  sweep) with pi the prior mean GEM(gamma) and q one-hot; "random" gives every token
  normalised uniform random q. Uniform random q starts all T topics alike, and CVB0
  never separates such interchangeable topics again: on ``synth hdp`` (T = 50, 11
  planted topics above 1%) it ends 30 sweeps with 40-43 topics above 1%, the large
  planted topics split over several; the sequential start gives 12-15. u, v, pi
  then follow from the start's E_dk; alpha and gamma start at their options' values.
"""

import numba
import numpy as np

from ...corpus.corpus import token_blocks
from ...threads import BARRIERS, Barrier, barrier_wait
from . import kernels as kern
from . import sticks
from .common import HDP_DEFAULTS, CollapsedHdpModel

# (S3) and (S4) are equations in gamma and alpha: each is iterated to this relative change.
FIXED_POINT_TOL = 1e-10
FIXED_POINT_ITERS = 500

# ----------------------------------------------------------------------------
# kernels


# (P1) on the units of documents d0..d1-1 whose words are in [w0, w1) (module docstring, "Threads"),
# against n_k, a thread's copy of the totals; prod[d] (K) keeps each document's running
# prod_i (1 - q_ik) across the rounds (set to 1 in the round where ``first``).
@numba.njit(cache=True, nogil=True)
def _pcvb0_cell(unit_ptr, unit_words, unit_counts, d0, d1, w0, w1, first, q, n_dk, n_wk, n_k, prod, alpha_pi, beta):
    V, K = n_wk.shape
    Vbeta = V * beta
    x = np.empty(K, dtype=np.float64)
    for d in range(d0, d1):
        if first:
            prod[d, :] = 1.0
        a, b = unit_ptr[d], unit_ptr[d + 1]
        i0 = a + np.searchsorted(unit_words[a:b], w0)
        i1 = a + np.searchsorted(unit_words[a:b], w1)
        for i in range(i0, i1):
            w = unit_words[i]
            m = unit_counts[i]
            total = 0.0
            for k in range(K):  # (P1), as _pcvb0_part
                qo = np.float64(q[i, k])
                x[k] = (max(n_dk[d, k] - qo, 0.0) + alpha_pi[k]) * (max(n_wk[w, k] - qo, 0.0) + beta)
                x[k] /= max(n_k[k] - qo, 0.0) + Vbeta
                total += x[k]
            inv = 1.0 / total
            for k in range(K):
                qn = np.float32(x[k] * inv)
                diff = m * (np.float64(qn) - np.float64(q[i, k]))
                q[i, k] = qn
                n_dk[d, k] += diff
                n_wk[w, k] += diff
                n_k[k] += diff
                prod[d, k] = kern.absent(prod[d, k], np.float64(qn), m)


# After a round: n_k <- n_k + sum_t (copies[t] - n_k) (t in order), and every copy gets the result
# (copies (T, >= K): columns past K are padding).
@numba.njit(cache=True, nogil=True)
def _reconcile(n_k, copies):
    for k in range(n_k.shape[0]):
        base = n_k[k]
        x = base
        for t in range(copies.shape[0]):
            x += copies[t, k] - base
        n_k[k] = x
        copies[:, k] = x


# (P2) for documents d0..d1-1 from their products: adds sum_d E_dk into E_sum (K); returns sum_{d,k} E_dk.
@numba.njit(cache=True, nogil=True)
def _pcvb0_E(unit_ptr, d0, d1, prod, E_sum):
    E_total = 0.0
    for d in range(d0, d1):
        if unit_ptr[d + 1] == unit_ptr[d]:
            continue
        for k in range(prod.shape[1]):
            e = 1.0 - prod[d, k]
            E_sum[k] += e
            E_total += e
    return E_total


# Thread tid's sweep: its cells of the T rounds, the threads waiting for each other (``threads.Barrier``)
# after each cell and after thread 0 has reconciled the totals; then (P2) of its documents into E_t[tid].
@numba.njit(cache=True, nogil=True)
def _pcvb0_thread(
    tid, unit_ptr, unit_words, unit_counts, doc_cut, word_cut, q, n_dk, n_wk, n_k, copies, prod, alpha_pi, beta, E_t,
    barrier,
):  # fmt: skip
    T = copies.shape[0]
    d0, d1 = doc_cut[tid], doc_cut[tid + 1]
    for r in range(T):
        b = (tid + r) % T
        _pcvb0_cell(
            unit_ptr, unit_words, unit_counts, d0, d1, word_cut[b], word_cut[b + 1], r == 0, q, n_dk, n_wk,
            copies[tid], prod, alpha_pi, beta,
        )  # fmt: skip
        barrier_wait(barrier)
        if tid == 0:
            _reconcile(n_k, copies)
        barrier_wait(barrier)
    return _pcvb0_E(unit_ptr, d0, d1, prod, E_t[tid])


# ----------------------------------------------------------------------------
# the model


class HdpPcvb0(CollapsedHdpModel):
    """Batch practical collapsed variational Bayes (CVB0) for the HDP; see the module docstring."""

    name = "hdp-pcvb0"
    step_unit = "sweep"
    defaults = HDP_DEFAULTS
    state_arrays = ("q", "n_dk", "n_wk", "n_k", "u", "v", "pi", "order")
    state_scalars = {"alpha": float, "gamma": float}

    def allocate(self):
        super().allocate()
        K, W, D = self.K, self.W, self.D
        if self.opts["clumping"]:
            self.unit_ptr, self.unit_words, self.unit_counts = self.doc_ptr, self.word_ids, self.counts
        else:
            self.unit_ptr, self.unit_words = self.corpus.tokens()
            self.unit_counts = np.ones(len(self.unit_words), dtype=np.int32)
        self.q = np.zeros((len(self.unit_words), K), dtype=np.float32)
        self.n_dk = np.zeros((D, K), dtype=np.float64)
        self.n_wk = np.zeros((W, K), dtype=np.float64)
        self.n_k = np.zeros(K, dtype=np.float64)
        self._allocate_sticks()
        # the documents' running prod_i (1 - q_ik) for (P2) (2 / mean document length of q's bytes)
        self._prod = np.ones((D, K), dtype=np.float64)
        if self.threads > 1:  # module docstring, "Threads": the blocks and n_k's copies
            T = self.threads
            self._doc_cut = token_blocks(self.unit_ptr, T)
            per_word = np.bincount(self.unit_words, minlength=W)
            self._word_cut = token_blocks(np.concatenate(([0], np.cumsum(per_word))), T)
            self._copies = self._thread_rows()

    def initialise(self):
        self._start(self.unit_ptr, self.unit_words, self.unit_counts, self.n_dk, self.n_wk, self.n_k, self.q)

    def check_invariants(self):
        """The count tables equal the sums of the stored q (up to rounding)."""
        n_dk, n_wk, n_k = np.zeros_like(self.n_dk), np.zeros_like(self.n_wk), np.zeros_like(self.n_k)
        kern.counts_from_q(self.unit_ptr, self.unit_words, self.unit_counts, self.q, n_dk, n_wk, n_k)
        for name, a, b in (("n_dk", self.n_dk, n_dk), ("n_kw", self.n_wk, n_wk), ("n_k", self.n_k, n_k)):
            if not np.allclose(a, b, rtol=1e-6, atol=1e-6 * self.N):
                raise AssertionError(f"hdp-pcvb0: {name} differs from the sums of q by {np.abs(a - b).max():g}")

    def step(self):
        """One batch iteration: (P1)-(P2) over every token, then re-order, (S2)-(S3) and (S4) solved, (S1)."""
        o = self.opts
        E_sum = np.zeros(self.K)
        units = (self.unit_ptr, self.unit_words, self.unit_counts)
        if self.threads == 1:  # one cell: every document, every word
            _pcvb0_cell(
                *units, 0, self.D, 0, self.W, True, self.q, self.n_dk, self.n_wk, self.n_k, self._prod,
                self.alpha * self.pi, float(o["beta"]),
            )  # fmt: skip
            E_total = _pcvb0_E(self.unit_ptr, 0, self.D, self._prod, E_sum)
        else:  # module docstring, "Threads"
            E_total = self._sweep_threads(units, E_sum)
        self._reorder()
        self.u[:] = 1.0 + E_sum  # (S2): u
        solve = (FIXED_POINT_ITERS, FIXED_POINT_TOL)
        if o["optimize_gamma"]:
            self.gamma = float(sticks.gamma_solve(self.order, self.u, self.gamma, *solve))
        if o["optimize_alpha"]:
            self.alpha = float(sticks.alpha_solve(self.doc_len, E_total, self.alpha, *solve))
        self._stick_weights(self.gamma)
        self.iteration += 1
        return self._metrics()

    def _sweep_threads(self, units, E_sum):
        """(P1)-(P2) on T threads, the vocabulary-partitioned schedule (module docstring, "Threads"):
        one kernel call per thread with barriers (``threads.BARRIERS``), else a Workers.run per round."""
        T = self.threads
        alpha_pi, beta = self.alpha * self.pi, float(self.opts["beta"])
        tables = (self.q, self.n_dk, self.n_wk)
        E_t = np.zeros((T, self.K))
        self._copies[:, : self.K] = self.n_k
        if BARRIERS and not self._python_rounds:
            if self._barrier is None:
                self._barrier = Barrier(T)
            E_total = [0.0] * T

            def thread(t):
                E_total[t] = _pcvb0_thread(
                    t, *units, self._doc_cut, self._word_cut, *tables, self.n_k, self._copies, self._prod, alpha_pi,
                    beta, E_t, self._barrier.memory,
                )  # fmt: skip

            self.workers.run(thread)
        else:
            d, w = self._doc_cut, self._word_cut
            for r in range(T):

                def cell(t, r=r):
                    b = (t + r) % T
                    _pcvb0_cell(
                        *units, d[t], d[t + 1], w[b], w[b + 1], r == 0, *tables, self._copies[t], self._prod,
                        alpha_pi, beta,
                    )  # fmt: skip

                self.workers.run(cell)
                _reconcile(self.n_k, self._copies)
            E_total = [_pcvb0_E(self.unit_ptr, d[t], d[t + 1], self._prod, E_t[t]) for t in range(T)]
        for t in range(T):
            E_sum += E_t[t]
        return float(sum(E_total))

    # -- estimates -----------------------------------------------------------------------

    def topic_word(self):
        """(n_kw + beta) / (n_k + V beta), as (K, W)."""
        beta = self.opts["beta"]
        return np.ascontiguousarray(((self.n_wk + beta) / (self.n_k + self.W * beta)).T)

    def topic_totals(self):
        return self.n_k
