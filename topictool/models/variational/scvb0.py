"""lda-scvb0: stochastic collapsed variational Bayes (zero order) for LDA (Foulds,
Boyles, DuBois, Smyth & Welling, "Stochastic Collapsed Variational Bayesian
Inference for Latent Dirichlet Allocation", KDD 2013, Algorithm 1).

Symbols (the paper's): K topics, W words, C tokens in the corpus, C_j tokens in
document j; alpha, eta the symmetric Dirichlet priors; gamma_ij (K) the variational
distribution of the topic of token i of document j; expected counts N^Theta_j (K,
per document), N^Phi (W x K, topic-word) and N^Z (K, topic totals). For a minibatch
M of documents (|M| = its number of tokens):

  for each document j in M, ``burn_in`` passes and then a final pass over its tokens:
    gamma_ijk ∝ (N^Phi_{w_ij k} + beta) (N^Theta_jk + alpha) / (N^Z_k + W beta)          (F1)
    N^Theta_j <- (1 - rho^Theta_t) N^Theta_j + rho^Theta_t C_j gamma_ij                   (F2)
    (final pass only) Nhat^Phi_{w_ij} += C / |M| gamma_ij,   Nhat^Z += C / |M| gamma_ij
  then
    N^Phi <- (1 - rho^Phi_t) N^Phi + rho^Phi_t Nhat^Phi                                   (F3)
    N^Z   <- (1 - rho^Phi_t) N^Z   + rho^Phi_t Nhat^Z                                     (F4)

  rho^Phi_t = s_phi / (tau_phi + t)^kappa, t counting minibatches over the run;
  rho^Theta_t = s_theta / (tau_theta + t)^kappa, t counting token updates of the
  document in this visit (burn-in included), from 0. Defaults (s, tau, kappa) =
  (10, 1000, 0.9) and (1, 10, 0.9) as in the paper.

Implementation notes.
- N^Phi and N^Z are one lazily decayed table (``kernels``: scale * A), so (F3)-(F4)
  cost O(K x distinct words of the minibatch), not O(K W); Nhat^Phi is accumulated
  in a scratch table, a row per distinct word in the order the words are met
  (``kernels.touch``: a compact block, 0.84x the CPU a pass at K = 100 against rows by
  word id), whose used rows are cleared after each minibatch.
- N^Phi, N^Z are fixed during a minibatch (as in the paper), so 1 / (N^Z + W beta) is
  computed once per minibatch.
- N^Theta_j is kept for every document (D x K) and carried from pass to pass.
- ``clumping``: one update per distinct word of a document, scaled by its count m
  (the paper's Sec. 3.3): gamma is computed once and (F2) applied as m updates
  with that gamma, N^Theta_j <- c N^Theta_j + (1 - c) C_j gamma with
  c = prod_{i<m} (1 - rho^Theta_{t+i}), i.e. (1 - rho)^m for a constant step.
- Tokens of a document are visited in the corpus's order (word id ascending, the
  copies of a word together); the documents of each pass in random order.
- Start: every distinct word of every document gets a random soft assignment
  (normalised uniforms), and the three count tables are their sums.
- Threads (``--threads T``): N^Phi and N^Z are fixed during a minibatch (the paper's minibatch
  form), so its documents are independent given them: thread t takes a run of the minibatch's
  documents (about equal tokens), updates their N^Theta rows and accumulates its own Nhat^Phi,
  Nhat^Z; after the minibatch the T accumulators are summed in thread order (``kernels.merge_rows``,
  each thread merging a range of words, ``merge_ranges``) into (F3)-(F4). A thread clears its own accumulator's rows
  at its next minibatch (``kernels.clear_touched``), not the merging thread, so that they stay in
  its own core's cache. The same algorithm as on one thread; only the summation order differs. A
  pass is one kernel call per thread (``_scvb0_pass_thread``), the threads waiting for each other
  twice a minibatch on a barrier inside it (``threads.Barrier``): driven from Python instead
  (``_pass_rounds``, where the C library has no POSIX mutexes), the two Workers.run and the merge's
  Python of every minibatch held 2 threads at 1.4-1.6x one on the movie reviews.
- One ``step()`` is one pass over the corpus in minibatches of ``minibatch`` documents
  (step_unit "pass"; t counts the minibatches of the whole run).
"""

import numba
import numpy as np

from ...kernels.jit import no_nrt
from ...kernels.sums import sum8
from ...threads import BARRIERS, Barrier, barrier_wait
from ..base import POSITIVE_INT
from . import kernels as kern
from .common import VariationalModel

# ----------------------------------------------------------------------------
# kernels


# (F1) for word w of document d into gam (K), unnormalised; returns their sum. An elementwise loop
# (vectorised) and sum8's eight chains in a fixed order (kernels/sums.py): 39, 55 and 101 ns a token
# at K = 50, 100 and 200 where one running sum took 45, 92 and about 180 (a `/tmp` microbenchmark,
# 2026-11-28).
@numba.njit(cache=True, nogil=True, inline="always")
def _responsibilities(phi_w, inv_nz, n_theta_d, gam, scale, beta, alpha):
    K = gam.shape[0]
    for k in range(K):
        gam[k] = (scale * phi_w[k] + beta) * inv_nz[k] * (n_theta_d[k] + alpha)
    return sum8(gam, K)


# (F1)-(F2) for the documents order[lo:hi] of a minibatch, with N^Phi = scale * phi_wk and
# 1 / (N^Z + W beta) = inv_nz held fixed; the final pass adds sum gamma into acc, acc_z (words
# touched listed in touched, marked in mark). Writes n_theta's rows of these documents only and
# reads the shared tables only, so threads may run it on disjoint runs of documents at once.
# gam: K of scratch (no_nrt: kernels/jit.py). Returns (n_touched, tokens).
# The burn-in, clumping and touch loop is the same as pcsvb0._document's, around different
# updates (SCVB0's (F1)-(F2), no sticks and no per-token (B3)): kept apart so each inner loop stays
# branch-free.
@no_nrt
def _scvb0_docs(
    doc_ptr, word_ids, counts, doc_len, order, lo, hi, n_theta, phi_wk, scale, inv_nz, acc, acc_z, mark, touched,
    n_touched, alpha, beta, keep_theta, burn_in, clumping, gam,
):  # fmt: skip
    K = phi_wk.shape[1]
    tokens = 0
    for b in range(lo, hi):
        d = order[b]
        Cj = doc_len[d]
        tokens += Cj
        td = 0
        for p in range(burn_in + 1):
            final = p == burn_in
            for i in range(doc_ptr[d], doc_ptr[d + 1]):
                w = word_ids[i]
                m = counts[i]
                reps = 1 if clumping else m
                weight = m if clumping else 1
                slot = 0
                if final:
                    n_touched = kern.touch(mark, touched, n_touched, w)
                    slot = mark[w]
                for _r in range(reps):
                    inv = 1.0 / _responsibilities(phi_wk[w], inv_nz, n_theta[d], gam, scale, beta, alpha)  # (F1)
                    c = kern.keep_fraction_table(keep_theta, td, weight)
                    f = (1.0 - c) * Cj * inv
                    for k in range(K):  # (F2)
                        n_theta[d, k] = c * n_theta[d, k] + f * gam[k]
                    td += weight
                    if final:
                        g = weight * inv
                        for k in range(K):
                            acc[slot, k] += g * gam[k]
                            acc_z[k] += g * gam[k]
    return n_touched, tokens


# 1 / (N^Z + W beta) for the minibatch, N^Z = scale * n_z.
@no_nrt
def _inverse_totals(n_z, scale, W, beta, inv_nz):
    for k in range(n_z.shape[0]):
        inv_nz[k] = 1.0 / (scale * n_z[k] + W * beta)


# One SCVB0 pass (F1)-(F4) over the documents in ``order`` on one thread; N^Phi = scale * phi_wk,
# N^Z = scale * n_z. acc (W x K) and acc_z (K) are zero on entry and exit; mark (W) is -1 on entry
# and exit. Returns (scale, t).
@numba.njit(cache=True, nogil=True)
def _scvb0_pass(
    doc_ptr, word_ids, counts, doc_len, order, minibatch, n_theta, phi_wk, n_z, scale, acc, acc_z,
    mark, touched, alpha, beta, C, s_phi, tau_phi, keep_theta, kappa, t, burn_in, clumping,
):  # fmt: skip
    W, K = phi_wk.shape
    D = order.shape[0]
    inv_nz = np.empty(K, dtype=np.float64)
    gam = np.empty(K, dtype=np.float64)
    for lo in range(0, D, minibatch):
        hi = min(lo + minibatch, D)
        _inverse_totals(n_z, scale, W, beta, inv_nz)
        n_touched, tokens = _scvb0_docs(
            doc_ptr, word_ids, counts, doc_len, order, lo, hi, n_theta, phi_wk, scale, inv_nz, acc, acc_z, mark,
            touched, 0, alpha, beta, keep_theta, burn_in, clumping, gam,
        )  # fmt: skip
        # (F3)-(F4): N <- (1 - rho) N + rho C/|M| sum gamma
        rho = kern.step_size(s_phi, tau_phi, kappa, t)
        scale = kern.flush_minibatch(phi_wk, n_z, scale, rho, C, tokens, acc, acc_z, mark, touched, n_touched)
        t += 1
    return scale, t


# Thread t's part of a whole SCVB0 pass on T threads (module docstring, "Threads"), waiting for the
# others inside the kernel (``threads.Barrier``): per minibatch b, (F1)-(F2) on the run
# order[cuts[b, t]:cuts[b, t + 1]] into its own acc[t], acc_z[t]; barrier; (F3)-(F4) on its range of
# words [ranges[t], ranges[t + 1]) -- the decay folded into its rows when the scale underflows, then
# every thread's statistics of those rows in thread order -- and thread 0 the totals; barrier. Every
# thread computes the same scale, rho and token total, so the sums are those of the Python rounds
# (``LdaScvb0._pass_rounds``) to the bit. Returns (scale, t) after the pass.
@numba.njit(cache=True, nogil=True)
def _scvb0_pass_thread(
    tid, doc_ptr, word_ids, counts, doc_len, order, cuts, ranges, n_theta, phi_wk, n_z, scale, acc, acc_z, mark,
    touched, tokens, alpha, beta, C, s_phi, tau_phi, keep_theta, kappa, t, burn_in, clumping, barrier,
):  # fmt: skip
    W, K = phi_wk.shape
    T = acc.shape[0]
    inv_nz = np.empty(K, dtype=np.float64)
    f = np.empty(T, dtype=np.float64)
    gam = np.empty(K, dtype=np.float64)
    w0, w1 = ranges[tid], ranges[tid + 1]
    n_touched = 0
    for b in range(cuts.shape[0]):
        _inverse_totals(n_z, scale, W, beta, inv_nz)
        kern.clear_touched(acc[tid], mark[tid], touched[tid], n_touched)  # its rows of the last minibatch
        n_touched, tokens[tid] = _scvb0_docs(
            doc_ptr, word_ids, counts, doc_len, order, cuts[b, tid], cuts[b, tid + 1], n_theta, phi_wk, scale, inv_nz,
            acc[tid], acc_z[tid], mark[tid], touched[tid], 0, alpha, beta, keep_theta, burn_in, clumping,
            gam,
        )  # fmt: skip
        barrier_wait(barrier)
        total = 0
        for u in range(T):
            total += tokens[u]
        rho = kern.step_size(s_phi, tau_phi, kappa, t)
        scale = kern.decay_scaled_rows(phi_wk, n_z, scale, rho, w0, w1, tid == 0)
        f[:] = rho * C / max(total, 1) / scale
        kern.merge_rows(phi_wk, acc, f, mark, w0, w1, False)
        if tid == 0:
            kern.merge_totals(n_z, acc_z, f)
        t += 1
        barrier_wait(barrier)
    kern.clear_touched(acc[tid], mark[tid], touched[tid], n_touched)
    return scale, t


# ----------------------------------------------------------------------------
# the model


class LdaScvb0(VariationalModel):
    """Stochastic collapsed variational Bayes (CVB0) for LDA; see the module docstring."""

    name = "lda-scvb0"
    step_unit = "pass"
    defaults = {
        "K": 100,
        "alpha": 0.1,
        "beta": 0.01,
        "minibatch": 100,
        "burn_in": 1,
        "clumping": False,
        "s_phi": 10.0,
        "tau_phi": 1000.0,
        "s_theta": 1.0,
        "tau_theta": 10.0,
        "kappa": 0.9,
    }
    limits = {**VariationalModel.limits, "minibatch": POSITIVE_INT}
    aliases = {"eta": "beta"}
    state_arrays = ("n_theta", "phi_wk", "n_z")
    state_scalars = {"scale": float, "t": int}
    lazy_table = ("phi_wk", "n_z", "N^Phi")

    def allocate(self):
        super().allocate()
        K, W, D = self.K, self.W, self.D
        self.n_theta = np.zeros((D, K), dtype=np.float64)  # N^Theta
        self.phi_wk = np.zeros((W, K), dtype=np.float64)  # N^Phi / scale
        self.n_z = np.zeros(K, dtype=np.float64)  # N^Z / scale
        self.scale = 1.0
        self.t = 0
        # Nhat^Phi, Nhat^Z of the minibatch, one accumulator per thread
        self._acc, self._acc_z, self._mark, self._touched, self._n_touched = self._thread_tables(W)
        self._keep_theta = self._document_keep_table("s_theta", "tau_theta")  # (F2)'s 1 - rho^Theta_t

    def initialise(self):
        no_q, no_E = np.zeros((0, self.K), dtype=np.float32), np.zeros(0)
        tables = (self.n_theta, self.phi_wk, self.n_z)
        kern.soft_init(self.doc_ptr, self.word_ids, self.counts, self.rng, 0, *tables, no_q, no_E)

    def step(self):
        """One pass over the corpus in random order, in minibatches of ``minibatch`` documents."""
        o = self.opts
        order = self._epoch_order()
        alpha, beta = (float(o[k]) for k in ("alpha", "beta"))
        s_phi, tau_phi, kappa = (float(o[k]) for k in ("s_phi", "tau_phi", "kappa"))
        if self.threads == 1:
            self.scale, self.t = _scvb0_pass(
                *self._documents(), order, o["minibatch"], self.n_theta, self.phi_wk, self.n_z, self.scale,
                self._acc[0], self._acc_z[0], self._mark[0], self._touched[0], alpha, beta, float(self.N),
                s_phi, tau_phi, self._keep_theta, kappa, self.t, o["burn_in"], o["clumping"],
            )  # fmt: skip
        elif BARRIERS and not self._python_rounds:  # module docstring, "Threads": one kernel call a thread
            cuts = self._minibatch_cuts(order, o["minibatch"])
            ranges = self.merge_ranges(len(cuts))
            tokens = np.zeros(self.threads, dtype=np.int64)
            if self._barrier is None:
                self._barrier = Barrier(self.threads)
            out = [None] * self.threads

            def thread(t):
                out[t] = _scvb0_pass_thread(
                    t, *self._documents(), order, cuts, ranges, self.n_theta, self.phi_wk, self.n_z, self.scale,
                    self._acc, self._acc_z, self._mark, self._touched, tokens, alpha, beta, float(self.N), s_phi,
                    tau_phi, self._keep_theta, kappa, self.t, o["burn_in"], o["clumping"], self._barrier.memory,
                )  # fmt: skip

            self.workers.run(thread)
            self.scale, self.t = out[0]
        else:
            self._pass_rounds(order, alpha, beta, s_phi, tau_phi, kappa)
        self.iteration += 1
        rho_phi = kern.step_size(o["s_phi"], o["tau_phi"], o["kappa"], self.t - 1)
        return self._metrics(minibatches=self.t, rho_phi=float(rho_phi))

    def _pass_rounds(self, order, alpha, beta, s_phi, tau_phi, kappa):
        """The threaded pass from Python, a Workers.run per minibatch and one per merge: where the C
        library has no POSIX mutexes, and the reference the one-call kernel is tested against."""
        o = self.opts
        inv_nz = np.empty(self.K)
        tables = (self._acc, self._acc_z, self._mark, self._touched, self._n_touched)
        tokens = np.zeros(self.threads, dtype=np.int64)
        all_cuts = self._minibatch_cuts(order, o["minibatch"])
        for cuts in all_cuts:
            _inverse_totals(self.n_z, self.scale, self.W, beta, inv_nz)

            def part(t, cuts=cuts):
                self._n_touched[t], tokens[t] = _scvb0_docs(
                    *self._documents(), order, cuts[t], cuts[t + 1], self.n_theta, self.phi_wk, self.scale,
                    inv_nz, self._acc[t], self._acc_z[t], self._mark[t], self._touched[t], 0, alpha, beta,
                    self._keep_theta, o["burn_in"], o["clumping"], np.empty(self.K),
                )  # fmt: skip

            self.workers.run(part)
            # (F3)-(F4), the threads' statistics summed in thread order
            rho = kern.step_size(s_phi, tau_phi, kappa, self.t)
            self.scale = kern.decay_scaled(self.phi_wk, self.n_z, self.scale, rho)
            f = rho * float(self.N) / max(int(tokens.sum()), 1) / self.scale
            self._merge(self.phi_wk, self.n_z, tables, np.full(self.threads, f), len(all_cuts))
            self.t += 1

    # -- estimates -----------------------------------------------------------------------

    def topic_word(self):
        """(N^Phi + beta) / (N^Z + W beta), as (K, W)."""
        beta = self.opts["beta"]
        phi = (self.scale * self.phi_wk + beta) / (self.scale * self.n_z + self.W * beta)
        return np.ascontiguousarray(phi.T)

    def topic_totals(self):
        return self.n_z

    def _prior(self):
        return np.full(self.K, self.opts["alpha"])

    def doc_topics(self):
        """N^Theta: the expected topic counts of every training document (D x K)."""
        return self.n_theta.copy()
