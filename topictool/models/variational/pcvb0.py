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

Threads (``--threads T``): the documents are cut into T blocks of about equal units, each cut into
ROUNDS parts; in round r thread t sweeps part r of its block on its own copy of n_wk and n_k (q and
n_dk of its documents are its own), so it sees its own updates at once and the other threads'
at the end of the round, when the copies' changes are added to the tables (in thread order, by
word ranges in parallel) and the copies refreshed. This is AD-LDA's scheme for CVB0 with a
staleness of 1/ROUNDS of a sweep (a whole sweep, ROUNDS = 1, cost +0.7% held-out perplexity on
the movie reviews at 20 sweeps; 8 rounds +0.2%). E_dk sums are per thread, summed in order.

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
from ...threads import split
from . import kernels as kern
from . import sticks
from .common import HDP_DEFAULTS, CollapsedHdpModel

# (S3) and (S4) are equations in gamma and alpha: each is iterated to this relative change.
FIXED_POINT_TOL = 1e-10
FIXED_POINT_ITERS = 500
# With T threads a sweep is ROUNDS rounds: in each, every thread takes the next of its ROUNDS blocks
# of documents, and the threads' changes to n_wk, n_k are added to the tables after every round.
ROUNDS = 8

# ----------------------------------------------------------------------------
# kernels


# One batch sweep (P1)-(P2) over all documents: ``_pcvb0_part`` over documents 0..D-1 on the tables
# themselves (its list of touched words unused). Adds sum_d E_dk into E_sum (K); returns sum_{d,k} E_dk.
@numba.njit(cache=True, nogil=True)
def _pcvb0_sweep(unit_ptr, unit_words, unit_counts, q, n_dk, n_wk, n_k, alpha_pi, beta, E_sum):
    D = unit_ptr.shape[0] - 1
    V = n_wk.shape[0]
    mark = np.full(V, -1, dtype=np.int64)
    touched = np.empty(V, dtype=np.int64)
    E_total, _ = _pcvb0_part(
        unit_ptr, unit_words, unit_counts, 0, D, q, n_dk, n_wk, n_k, mark, touched, alpha_pi, beta, E_sum
    )
    return E_total


# The sweep (P1)-(P2) of one thread over documents d0..d1-1 (module docstring, "Threads") on its own
# copy of the topic-word counts, n_wk and n_k (the tables as they were when the round began, plus its
# own changes); lists the words it changes in touched (marked in mark) and writes q, n_dk of its own
# documents only. Adds its sum_d E_dk into E_sum (K); returns (sum_{d,k} E_dk, n_touched).
@numba.njit(cache=True, nogil=True)
def _pcvb0_part(unit_ptr, unit_words, unit_counts, d0, d1, q, n_dk, n_wk, n_k, mark, touched, alpha_pi, beta, E_sum):
    V, K = n_wk.shape
    Vbeta = V * beta
    x = np.empty(K, dtype=np.float64)
    prod = np.empty(K, dtype=np.float64)
    E_total = 0.0
    n_touched = 0
    for d in range(d0, d1):
        if unit_ptr[d + 1] == unit_ptr[d]:
            continue
        for k in range(K):
            prod[k] = 1.0
        for i in range(unit_ptr[d], unit_ptr[d + 1]):
            w = unit_words[i]
            m = unit_counts[i]
            n_touched = kern.touch(mark, touched, n_touched, w)
            total = 0.0
            for k in range(K):  # (P1)
                qo = np.float64(q[i, k])
                a = max(n_dk[d, k] - qo, 0.0)
                b = max(n_wk[w, k] - qo, 0.0)
                c = max(n_k[k] - qo, 0.0)
                x[k] = (a + alpha_pi[k]) * (b + beta) / (c + Vbeta)
                total += x[k]
            inv = 1.0 / total
            for k in range(K):
                qn = np.float32(x[k] * inv)
                diff = m * (np.float64(qn) - np.float64(q[i, k]))
                q[i, k] = qn
                n_dk[d, k] += diff
                n_wk[w, k] += diff
                n_k[k] += diff
                prod[k] = kern.absent(prod[k], np.float64(qn), m)
        for k in range(K):  # (P2)
            e = 1.0 - prod[k]
            E_sum[k] += e
            E_total += e
    return E_total, n_touched


# Rows [w0, w1) of the threads' copies into the table: for every row some thread changed,
# table[w] <- table[w] + sum_t (copy_t[w] - table[w]) (t in order), and every copy gets the result;
# marks reset. The threads run it on disjoint word ranges at once.
@numba.njit(cache=True, nogil=True)
def _merge_copies(table, copies, mark, w0, w1):
    T, _, K = copies.shape
    for w in range(w0, w1):
        hit = False
        for t in range(T):
            if mark[t, w] >= 0:
                hit = True
                mark[t, w] = -1
        if not hit:
            continue
        for k in range(K):
            base = table[w, k]
            x = base
            for t in range(T):
                x += copies[t, w, k] - base
            table[w, k] = x
            for t in range(T):
                copies[t, w, k] = x


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
        if self.threads > 1:  # each thread's documents, and its changes to n_wk, n_k during a sweep
            self._blocks = token_blocks(self.unit_ptr, self.threads * ROUNDS)
            # each thread's copy of n_wk, n_k (rows it changed in touched, marked in mark)
            self._copy_wk, self._copy_k, self._mark, self._touched, _ = self._thread_tables(W)

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
        if self.threads == 1:
            E_total = _pcvb0_sweep(
                *units, self.q, self.n_dk, self.n_wk, self.n_k, self.alpha * self.pi, float(o["beta"]), E_sum
            )  # fmt: skip
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
        """(P1)-(P2) on T threads in ROUNDS rounds: in round r thread t sweeps its r-th block of
        documents on its own copy of n_wk and n_k; after the round the copies' changes are added to
        the tables and the copies refreshed; all sums in thread order (module docstring, "Threads")."""
        T, W = self.threads, self.W
        copy_wk, copy_k, mark, touched = self._copy_wk, self._copy_k, self._mark, self._touched
        E_t, E_total = np.zeros((T, self.K)), np.zeros((ROUNDS, T))
        alpha_pi, beta, cuts = self.alpha * self.pi, float(self.opts["beta"]), self._blocks
        ranges = split(W, T)
        copy_k[:] = self.n_k
        for r in range(ROUNDS):

            def part(t, r=r):
                if r == 0:  # the copies start as the tables
                    copy_wk[t][:] = self.n_wk
                b = t * ROUNDS + r
                E_total[r, t], _ = _pcvb0_part(
                    *units, cuts[b], cuts[b + 1], self.q, self.n_dk, copy_wk[t], copy_k[t], mark[t], touched[t],
                    alpha_pi, beta, E_t[t],
                )  # fmt: skip

            self.workers.run(part)
            self.workers.run(lambda t: _merge_copies(self.n_wk, copy_wk, mark, ranges[t], ranges[t + 1]))
            for k in range(self.K):  # n_k likewise
                x = base = float(self.n_k[k])
                for t in range(T):
                    x += float(copy_k[t, k]) - base
                self.n_k[k] = x
            copy_k[:] = self.n_k
        for t in range(T):
            E_sum += E_t[t]
        return float(sum(E_total.T.ravel().tolist()))

    # -- estimates -----------------------------------------------------------------------

    def topic_word(self):
        """(n_kw + beta) / (n_k + V beta), as (K, W)."""
        beta = self.opts["beta"]
        return np.ascontiguousarray(((self.n_wk + beta) / (self.n_k + self.W * beta)).T)

    def topic_totals(self):
        return self.n_k
