"""lda-svi: stochastic variational inference for LDA (Hoffman, Blei, Wang & Paisley,
"Stochastic Variational Inference", JMLR 14, 2013, Fig. 6 / Algorithm for LDA;
the code follows Hoffman's onlineldavb.py).

Symbols (the paper's): K topics, W words, D documents; alpha the symmetric
Dirichlet prior on theta_d; beta the prior on each topic's words (the paper's eta;
option ``eta`` before the rename); lambda (K x W) the
variational Dirichlet parameters of the topics ("lambda" here and in the paper;
scikit-learn's ``components_``); gamma_d (K) the document's variational Dirichlet;
phi_dwk the word's topic responsibilities. For a minibatch M of documents:

  local step, for each d in M, to convergence (mean |change of gamma_d| < local_tol)
  or local_iterations:
    phi_dwk ∝ exp{E[log theta_dk] + E[log beta_kw]}                                   (L1)
            = exp{Psi(gamma_dk) - Psi(sum_k gamma_dk) + Psi(lambda_kw) - Psi(sum_w lambda_kw)}
    gamma_dk = alpha + sum_w n_dw phi_dwk                                                (L2)
  global step:
    lambda_hat_kw = beta + D / |M| sum_{d in M} n_dw phi_dwk                              (G1)
    lambda <- (1 - rho_t) lambda + rho_t lambda_hat,   rho_t = (tau + t)^-kappa              (G2)

Implementation notes.
- Updates go per distinct word of a document with its count n_dw, not per token.
- exp{E[log beta_kw]} is computed once per minibatch for the minibatch's words
  (digamma values precomputed per minibatch), and exp{E[log theta_dk]} once per
  local iteration; the common factor exp{-Psi(sum_k gamma_dk)} cancels in (L1)-(L2)
  and is left out.
- lambda - beta is a lazily decayed table (``kernels``: scale * A), so (G2) costs
  O(K x words of the minibatch), not O(K W).
- lambda starts as beta + Gamma(100, 1/100) draws, as in onlineldavb. In the first
  ``cold_passes`` passes every local step starts gamma_d from fresh Gamma(100, 1/100)
  draws, as in the paper; later passes start it from the document's gamma_d of the
  previous pass (warm start), which needs about a third of the local iterations.
  Warm starts from the very first passes keep documents in the basins of the
  early, poor topics (movie reviews, K = 100, 10 passes: held-out perplexity 4,164
  warm from pass 2, 4,139 with 3 cold passes, 4,128 never warm; planted topics on
  ``synth lda`` are recovered worse too), so the default is 3.
- exp{E[log beta_kw]} and the local step's sums are single precision (twice the SIMD
  width; the responsibilities need no more), each word's row scaled to a maximum of 1
  (a per-word factor cancels in (L1)-(L2)); gamma, the sufficient statistics and
  lambda are double precision.
- Default tau = 2 (option ``tau0`` before the rename): with tau = 1 the first step has rho_0 = 1 and the first
  minibatch's statistics replace lambda outright; rho_0 = 2^-0.7 keeps part of the
  flat initialisation as smoothing (movie reviews, K = 100, 10 passes, 3 seeds, warm
  starts from pass 2: mean held-out perplexity 4,172 against 4,318 with tau = 1;
  4,204 with tau = 4; 4,473 with tau = 64). scikit-learn's online LDA starts its
  update count at 1, which is tau = learning_offset + 1.
- One ``step()`` is one pass over the corpus in random order, in minibatches of
  ``minibatch`` documents (step_unit "pass"; t counts minibatches over the whole run).
- MPI ranks (``train --engine mpi``): every rank holds lambda and draws the same document order
  of the whole corpus (stream 0, the same on every rank); each minibatch is split among the ranks
  by who owns its documents, each rank runs the local step on its own (gamma_d is per rank, and a
  rank's cold starts draw from its own stream), the sufficient statistics are summed over the
  union of the minibatch's words (in rank order: the same bits on every rank), and every rank
  then does the same global step. The result depends on the number of ranks (the sums' order,
  the cold starts' streams), never on timing.
- Threads (``--threads T``): per minibatch, exp{E[log beta]} of its words is computed by the T
  threads (a range of the words each), then thread t runs the local step of a run of the
  minibatch's documents (about equal tokens) into its own sufficient statistics, drawing its cold
  starts from its own stream (row t; MPI ranks: rows 1..T, see ``initialise``); lambda is read
  only. The statistics are summed in thread order (``_sum_threads``), then the global step is the
  same as on one thread. The local step depends only on lambda and the document, so the only
  differences from one thread are the summation order and the cold starts' draws. A pass is one
  kernel call per thread (``_svi_pass_thread``), the threads waiting for each other on a POSIX
  barrier inside it (four times a minibatch); driven from Python a minibatch at a time
  (``_pass_rounds``, where the C library has no barriers) 2 threads gave 1.3-1.4x one on the
  movie reviews, the Workers.run calls, the statistics' allocation and the serial global step
  between the parallel parts.
- No fastmath anywhere: with it, LLVM reassociated the local step's single-precision sums
  (vectorised with the CPU target's width, and differently in a fresh compilation than in
  numba's cached copy), so the same seed gave other models on a cold cache, a warm cache
  and NUMBA_CPU_NAME=generic. Every sum now runs in one fixed order: the normaliser over
  topics for all words at once (vectorised across words), gamma's sums over words for all
  topics at once (vectorised across topics). On the ch corpus (one core) that is
  9.8 M tokens/s at K = 10 and 2.08 at K = 100, against 15.2 and 2.47 with fastmath (plain
  loops without fastmath: 8.0 and 1.30).
"""

import numba
import numpy as np

from ...kernels.rng import gamma as gamma_draw
from ...kernels.rng import make_streams, shuffle
from ...threads import BARRIERS, Barrier, barrier_wait, split
from ..base import POSITIVE_INT
from . import kernels as kern
from .common import VariationalModel

# ----------------------------------------------------------------------------
# kernels


# gamma_dk ~ Gamma(100, 1/100): the random start of every document's gamma (onlineldavb).
@numba.njit(cache=True, nogil=True)
def _random_gamma_rows(gamma_dk, rng, row):
    for d in range(gamma_dk.shape[0]):
        for k in range(gamma_dk.shape[1]):
            gamma_dk[d, k] = gamma_draw(rng, row, 100.0) / 100.0


# phinorm_i = 1e-30 + sum_k et_k eb_kw_i, the normaliser of (L1) for every word of the document, the
# topics summed in order (k outer: vectorised across the words, no reassociation).
@numba.njit(cache=True, nogil=True)
def _normalisers(et, ebT, phinorm):
    for i in range(phinorm.shape[0]):
        phinorm[i] = np.float32(1e-30)
    for k in range(et.shape[0]):
        e = et[k]
        for i in range(phinorm.shape[0]):
            phinorm[i] += e * ebT[k, i]


# Local step (L1)-(L2) for one document; adds n_dw phi_dwk into sstats[local word].
# eb[j, k] = exp{E[log beta_kw]} for local word j, and ebT[k, i] = eb[loc[i], k] for the document's
# i-th word (topic-major, for the normalisers); s (K, float32) is scratch. Returns the number of
# iterations. Every sum has one fixed order (no fastmath): results do not depend on the CPU target.
@numba.njit(cache=True, nogil=True)
def _local_step(loc, cnt, ebT, eb, g, alpha, max_iters, tol, sstats, et, s, phinorm, r):
    K = g.shape[0]
    n = loc.shape[0]
    for k in range(K):
        et[k] = np.float32(kern.exp_digamma(g[k]))
    it = 0
    while it < max_iters:
        it += 1
        # phi_dwk ∝ et_k eb_kw (L1)
        _normalisers(et, ebT, phinorm)
        for i in range(n):
            r[i] = cnt[i] / phinorm[i]
        # gamma_dk = alpha + et_k sum_w n_dw eb_kw / normaliser_w (L2): words in order, all topics at once
        for k in range(K):
            s[k] = np.float32(0.0)
        for i in range(n):
            ri = r[i]
            j = loc[i]
            for k in range(K):
                s[k] += ri * eb[j, k]
        change = 0.0
        for k in range(K):
            new = alpha + et[k] * np.float64(s[k])
            change += abs(new - g[k])
            g[k] = new
        for k in range(K):
            et[k] = np.float32(kern.exp_digamma(g[k]))
        if change / K < tol:
            break
    # n_dw phi_dwk with phi from the final gamma
    _normalisers(et, ebT, phinorm)
    for i in range(n):
        j = loc[i]
        f = cnt[i] / phinorm[i]
        for k in range(K):
            sstats[j, k] += f * et[k] * eb[j, k]
    return it


# The minibatch's distinct words (first-seen order over the documents ``docs``), mark[w] set to
# each one's local index (the caller resets it), and the longest document's length.
@numba.njit(cache=True, nogil=True)
def _local_words(doc_ptr, word_ids, docs, mark):
    n_local = 0
    max_len = 0
    for b in range(docs.shape[0]):
        d = docs[b]
        max_len = max(max_len, doc_ptr[d + 1] - doc_ptr[d])
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w = word_ids[i]
            if mark[w] < 0:
                mark[w] = n_local
                n_local += 1
    words = np.empty(n_local, dtype=np.int64)
    for b in range(docs.shape[0]):
        d = docs[b]
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            words[mark[word_ids[i]]] = word_ids[i]
    return words, max_len


# eb[j] = exp{E[log beta_kw]} = exp{Psi(lambda_kw) - Psi(sum_w lambda_kw)} for the local words j0..j1-1.
# Each word's row is divided by its largest entry: a per-word factor cancels in (L1)-(L2), and the
# single-precision copy then neither underflows nor holds denormals.
@numba.njit(cache=True, nogil=True)
def _expected_log_beta(words, lam_wk, lam_k, scale, beta, eb, j0, j1):
    W, K = lam_wk.shape
    inv_sum = np.empty(K, dtype=np.float64)
    for k in range(K):
        inv_sum[k] = 1.0 / kern.exp_digamma(W * beta + scale * lam_k[k])
    rw = np.empty(K, dtype=np.float64)
    for j in range(j0, j1):
        w = words[j]
        top = 0.0
        for k in range(K):
            rw[k] = kern.exp_digamma(beta + scale * lam_wk[w, k]) * inv_sum[k]
            top = max(top, rw[k])
        inv_top = 1.0 / top if top > 0.0 else 1.0
        for k in range(K):
            x = rw[k] * inv_top
            eb[j, k] = x if x > 1e-30 else 0.0


# (L1)-(L2) for the documents ``docs``, each started from gamma_dk (warm) or from Gamma(100, 1/100)
# draws of stream ``row``, with eb and the local indices in mark (see _local_words); adds
# sum_d n_dw phi_dwk into sstats (n_local, K). Returns the local iterations done. Writes only the
# gamma_dk rows of ``docs`` and sstats: threads may run it at once on disjoint documents.
@numba.njit(cache=True, nogil=True)
def _local_documents(
    doc_ptr, word_ids, counts, docs, mark, eb, gamma_dk, warm, alpha, max_iters, tol, rng, row, sstats
):
    K = eb.shape[1]
    et = np.empty(K, dtype=np.float32)
    s = np.empty(K, dtype=np.float32)
    g = np.empty(K, dtype=np.float64)
    iters = 0
    max_len = 0
    for b in range(docs.shape[0]):
        d = docs[b]
        max_len = max(max_len, doc_ptr[d + 1] - doc_ptr[d])
    loc = np.empty(max_len, dtype=np.int64)
    cnt = np.empty(max_len, dtype=np.float32)
    phinorm = np.empty(max_len, dtype=np.float32)
    r = np.empty(max_len, dtype=np.float32)
    ebT_buf = np.empty(K * max_len, dtype=np.float32)
    for b in range(docs.shape[0]):
        d = docs[b]
        n = doc_ptr[d + 1] - doc_ptr[d]
        ebT = ebT_buf[: K * n].reshape((K, n))  # C-contiguous (K, n)
        for i in range(n):
            j = mark[word_ids[doc_ptr[d] + i]]
            loc[i] = j
            cnt[i] = counts[doc_ptr[d] + i]
            for k in range(K):
                ebT[k, i] = eb[j, k]
        if warm:
            for k in range(K):
                g[k] = gamma_dk[d, k]
        else:
            for k in range(K):
                g[k] = gamma_draw(rng, row, 100.0) / 100.0
        if n > 0:
            iters += _local_step(loc[:n], cnt[:n], ebT, eb, g, alpha, max_iters, tol, sstats, et, s, phinorm[:n], r[:n])
        for k in range(K):
            gamma_dk[d, k] = g[k]
    return iters


# The local step (L1)-(L2) of one minibatch on one thread: the documents ``docs`` (local indices, in
# order); returns the minibatch's distinct words (first-seen order), their sufficient statistics
# sum_d n_dw phi_dwk (n_local, K) and the local iterations done. ``mark`` (W, all -1) is left as it came.
@numba.njit(cache=True, nogil=True)
def _minibatch_local(
    doc_ptr, word_ids, counts, docs, lam_wk, lam_k, scale, gamma_dk, warm, alpha, beta, max_iters, tol, rng, row, mark
):  # fmt: skip
    K = lam_wk.shape[1]
    words, _ = _local_words(doc_ptr, word_ids, docs, mark)
    n_local = words.shape[0]
    eb = np.empty((n_local, K), dtype=np.float32)
    _expected_log_beta(words, lam_wk, lam_k, scale, beta, eb, 0, n_local)
    sstats = np.zeros((n_local, K), dtype=np.float64)
    iters = _local_documents(
        doc_ptr, word_ids, counts, docs, mark, eb, gamma_dk, warm, alpha, max_iters, tol, rng, row, sstats
    )  # fmt: skip
    for j in range(n_local):
        mark[words[j]] = -1
    return words, sstats, iters


# out[j0:j1] = sum_t sstats[t, j0:j1] (t in order): the threads' statistics, a range of rows.
@numba.njit(cache=True, nogil=True)
def _sum_threads(sstats, out, j0, j1):
    for j in range(j0, j1):
        for k in range(out.shape[1]):
            x = 0.0
            for t in range(sstats.shape[0]):
                x += sstats[t, j, k]
            out[j, k] = x


# (G1)-(G2): lambda - beta <- (1 - rho)(lambda - beta) + rho D/|M| sstats, on the words of sstats'
# rows; returns the new scale.
@numba.njit(cache=True, nogil=True)
def _global_step(lam_wk, lam_k, scale, words, sstats, rho, D_total, size):
    scale = kern.decay_scaled(lam_wk, lam_k, scale, rho)
    f = rho * D_total / size / scale
    _add_rows(lam_wk, words, sstats, f, 0, words.shape[0])
    _add_totals(lam_k, sstats, f, words.shape[0])
    return scale


# (G1)-(G2)'s additions: lambda's rows words[j0:j1] += f sstats[j0:j1] ...
@numba.njit(cache=True, nogil=True)
def _add_rows(lam_wk, words, sstats, f, j0, j1):
    for j in range(j0, j1):
        w = words[j]
        for k in range(lam_wk.shape[1]):
            lam_wk[w, k] += f * sstats[j, k]


# ... and its totals, lam_k += f sstats[j] for j = 0..n-1 in order.
@numba.njit(cache=True, nogil=True)
def _add_totals(lam_k, sstats, f, n):
    for j in range(n):
        for k in range(lam_k.shape[0]):
            lam_k[k] += f * sstats[j, k]


# Thread tid's part of a whole pass on T threads (module docstring, "Threads"), waiting for the others
# on a barrier (``threads.Barrier``) inside the kernel. Per minibatch b (documents order[lo[b]:lo[b + 1]]), whose
# words are all_words[word_ptr[b]:word_ptr[b + 1]] (listed before the call, ``LdaSvi._pass_words``):
# each thread marks a range of them with their local index and computes their exp{E[log beta]};
# each thread the local step of its run order[cuts[b, tid]:cuts[b, tid + 1]] into sstats[tid] (cold
# starts from stream tid); each thread the sum over threads, lambda's rows and the marks' reset of
# its range of words; thread 0 lambda's totals (in word order, as _global_step). The same sums as
# ``LdaSvi._local`` with _global_step, to the bit. Scratch: sstats (T, U, K), total (U, K), eb (U, K)
# with U the most words of a minibatch; iters (T) gets each thread's local iterations. Returns
# (scale, t).
@numba.njit(cache=True, nogil=True)
def _svi_pass_thread(
    tid, doc_ptr, word_ids, counts, order, lo, cuts, lam_wk, lam_k, scale, gamma_dk, warm, alpha, beta, max_iters,
    tol, rng, mark, all_words, word_ptr, eb, sstats, total, iters, D_total, tau, kappa, t, barrier,
):  # fmt: skip
    T = sstats.shape[0]
    W = lam_wk.shape[0]
    v0, v1 = W * tid // T, W * (tid + 1) // T  # this thread's rows of lambda when the scale folds
    for b in range(lo.shape[0] - 1):
        words = all_words[word_ptr[b] : word_ptr[b + 1]]
        n = words.shape[0]
        j0, j1 = n * tid // T, n * (tid + 1) // T  # threads.split(n, T)
        for j in range(j0, j1):
            mark[words[j]] = j
        _expected_log_beta(words, lam_wk, lam_k, scale, beta, eb, j0, j1)
        sstats[tid, :n] = 0.0
        barrier_wait(barrier)
        docs = order[cuts[b, tid] : cuts[b, tid + 1]]
        iters[tid] += _local_documents(
            doc_ptr, word_ids, counts, docs, mark, eb[:n], gamma_dk, warm, alpha, max_iters, tol, rng, tid,
            sstats[tid, :n],
        )  # fmt: skip
        barrier_wait(barrier)
        _sum_threads(sstats[:, :n], total[:n], j0, j1)
        # (G1)-(G2) as _global_step: the decay (every thread folds its own rows when the scale underflows),
        # then lambda's rows of this thread's words, then (thread 0) the totals in word order
        rho = kern.step_size(1.0, tau, kappa, t)
        folded = scale * (1.0 - rho) < kern.RESCALE_BELOW
        scale = kern.decay_scaled_rows(lam_wk, lam_k, scale, rho, v0, v1, tid == 0)
        if folded:  # every thread's rows before anyone adds to any
            barrier_wait(barrier)
        f = rho * D_total / (lo[b + 1] - lo[b]) / scale
        _add_rows(lam_wk, words, total, f, j0, j1)
        for j in range(j0, j1):
            mark[words[j]] = -1
        barrier_wait(barrier)
        if tid == 0:
            _add_totals(lam_k, total, f, n)
        barrier_wait(barrier)  # lambda's totals, which the next minibatch's exp{E[log beta]} reads
        t += 1
    return scale, t


# The threaded pass's segments: minibatches whose word lists are made at once (``_pass_in_kernel``).
PASS_SEGMENT = 64


# ----------------------------------------------------------------------------
# the model


class LdaSvi(VariationalModel):
    """Stochastic variational inference for LDA; see the module docstring."""

    # (the declared attributes of base.Model: every family's header has this shape by design)

    name = "lda-svi"
    step_unit = "pass"
    defaults = {
        "K": 100,
        "alpha": 0.1,
        "beta": 0.01,
        "tau": 2.0,
        "kappa": 0.7,
        "minibatch": 256,
        "local_iterations": 100,
        "local_tol": 0.001,
        "cold_passes": 3,
    }
    limits = {**VariationalModel.limits, "minibatch": POSITIVE_INT}
    aliases = {"eta": "beta", "tau0": "tau", "max_local_iters": "local_iterations"}
    supports_mpi = True  # minibatches split among the ranks (module docstring)
    rank_state = ("gamma_dk", "rng")
    state_arrays = ("lam_wk", "lam_k", "gamma_dk")
    state_scalars = {"scale": float, "t": int}
    lazy_table = ("lam_wk", "lam_k", "lambda")

    def allocate(self):
        super().allocate()
        K, W = self.K, self.W
        self.lam_wk = np.zeros((W, K), dtype=np.float64)  # (lambda - beta)^T / scale
        self.lam_k = np.zeros(K, dtype=np.float64)  # its column sums
        self.gamma_dk = np.zeros((self.D, K), dtype=np.float64)
        self.scale = 1.0
        self.t = 0
        self._mark = np.full(W, -1, dtype=np.int64)  # the minibatch's words -> local index
        self.engine = getattr(self.corpus, "engine", None)

    def rng_streams(self):
        # row t: thread t's cold starts (row 0 also draws lambda's start and the document order). MPI:
        # row 0 the same on every rank, rows 1..T the rank's own (one per thread)
        return self.threads if getattr(self, "engine", None) is None else 1 + self.threads

    def _own_row(self, t):
        """The stream of thread t's cold starts."""
        return t if self.engine is None else 1 + t

    def initialise(self):
        # lambda = beta + Gamma(100, 1/100) (onlineldavb); gamma_d likewise.
        own = 0
        if self.engine is not None:  # rank r's rows: 1 + r T + t (with T = 1 as before threads)
            T, r = self.threads, self.engine.rank
            rows = [0] + [1 + r * T + t for t in range(T)]
            self.rng = make_streams(self.seed, 1 + self.engine.size * T)[rows].copy()
            own = 1
        _random_gamma_rows(self.lam_wk, self.rng, 0)
        self.lam_k[:] = self.lam_wk.sum(axis=0)
        _random_gamma_rows(self.gamma_dk, self.rng, own)

    def step(self):
        """One pass over the corpus in random order, in minibatches of ``minibatch`` documents:
        (L1)-(L2) on each minibatch's documents, then the global step (G1)-(G2). On MPI ranks
        (module docstring) every rank draws the same order, works on its own documents of each
        minibatch, and the statistics are summed before the identical global step."""
        o, engine = self.opts, self.engine
        alpha, beta, tau, kappa = (float(o[k]) for k in ("alpha", "beta", "tau", "kappa"))
        warm = self.iteration >= o["cold_passes"]
        if engine is None:
            D_total, first, order = self.D, 0, self._epoch_order()
        else:
            D_total, first = int(self.corpus.D_total), int(self.corpus.first_doc)
            order = np.arange(D_total, dtype=np.int64)
            shuffle(order, self.rng, 0)
        rho_first = kern.step_size(1.0, tau, kappa, self.t)
        iters = 0
        if engine is None and self.threads > 1 and BARRIERS and not self._python_rounds:
            iters = self._pass_in_kernel(order, warm, alpha, beta, tau, kappa)
        else:
            iters = self._pass_rounds(order, first, D_total, warm, alpha, beta, tau, kappa)
        self.iteration += 1
        if engine is not None:
            iters = int(engine.sum(np.array([iters], dtype=np.int64))[0])
        metrics = {
            "documents_seen": self.iteration * D_total,
            "minibatches": self.t,
            "rho_first": float(rho_first),
            "rho_last": float(kern.step_size(1.0, tau, kappa, self.t - 1)),
            "mean_local_iterations": float(iters) / max(D_total, 1),
        }
        if engine is not None:
            metrics["tokens"] = int(self.corpus.N_total)
        return metrics

    def _pass_rounds(self, order, first, D_total, warm, alpha, beta, tau, kappa):
        """The pass a minibatch at a time from Python (one thread, MPI ranks, and threads where the C
        library has no POSIX mutexes); returns the local iterations done."""
        o, engine, iters = self.opts, self.engine, 0
        for lo in range(0, D_total, o["minibatch"]):
            hi = min(lo + o["minibatch"], D_total)
            docs = order[lo:hi]
            if engine is not None:
                docs = docs[(docs >= first) & (docs < first + self.D)] - first
            words, sstats, it = self._local(docs, warm, alpha, beta)
            iters += it
            if engine is not None:  # the minibatch's words over every rank, sorted; statistics summed on them
                every, _ = engine.allgatherv(np.sort(words))
                union = np.unique(every)
                full = np.zeros((len(union), self.K))
                full[np.searchsorted(union, words)] = sstats
                words, sstats = union, engine.sum(full)
            rho = kern.step_size(1.0, tau, kappa, self.t)
            self.scale = _global_step(self.lam_wk, self.lam_k, self.scale, words, sstats, rho, float(D_total), hi - lo)
            self.t += 1
        return iters

    _scratch = None  # the threaded pass's scratch arrays (``_pass_in_kernel``)

    def _pass_in_kernel(self, order, warm, alpha, beta, tau, kappa):
        """The pass on T threads as one kernel call each (``_svi_pass_thread``) per segment of
        PASS_SEGMENT minibatches, whose word lists are made before it (``_pass_words``: their size
        is the segment's, not the corpus's); returns the local iterations done."""
        o, T, K = self.opts, self.threads, self.K
        if self._barrier is None:
            self._barrier = Barrier(T)
        lo_all = np.array([*range(0, self.D, o["minibatch"]), self.D], dtype=np.int64)
        cuts_all = self._minibatch_cuts(order, o["minibatch"])
        iters, out = np.zeros(T, dtype=np.int64), [None] * T
        for s0 in range(0, len(lo_all) - 1, PASS_SEGMENT):
            s1 = min(s0 + PASS_SEGMENT, len(lo_all) - 1)
            lo, cuts = lo_all[s0 : s1 + 1], cuts_all[s0:s1]
            all_words, word_ptr = self._pass_words(order, lo)
            # scratch for the largest minibatch vocabulary U (not W: the threads' statistics are
            # T x U x K): their exp{E[log beta]}, the threads' and the summed statistics
            U = int(np.diff(word_ptr).max(initial=0))
            if self._scratch is None or self._scratch[0].shape[0] < U:
                self._scratch = (np.empty((U, K), dtype=np.float32), np.empty((T, U, K)), np.empty((U, K)))
            args = (o["local_iterations"], float(o["local_tol"]), self.rng, self._mark, all_words, word_ptr)
            args += (*self._scratch, iters)

            def thread(t, lo=lo, cuts=cuts, args=args):
                out[t] = _svi_pass_thread(
                    t, self.doc_ptr, self.word_ids, self.counts, order, lo, cuts, self.lam_wk, self.lam_k, self.scale,
                    self.gamma_dk, warm, alpha, beta, *args, float(self.D), tau, kappa, self.t, self._barrier.memory,
                )  # fmt: skip

            self.workers.run(thread)
            self.scale, self.t = out[0]
        return int(iters.sum())

    def _pass_words(self, order, lo):
        """The distinct words of each minibatch b (documents order[lo[b]:lo[b + 1]]), each in
        first-seen order, as (words, ptr): minibatch b's are words[ptr[b]:ptr[b + 1]]. Listed before
        the kernel runs, on the threads (each a run of minibatches, with a mark array of its own), so
        that no thread waits while one lists a minibatch's words."""
        B, T, W = len(lo) - 1, self.threads, self.W
        runs = split(B, T)
        marks = [self._mark] + [np.full(W, -1, dtype=np.int64) for _ in range(1, T)]
        lists = [None] * B

        def part(t):
            for b in range(runs[t], runs[t + 1]):
                words, _ = _local_words(self.doc_ptr, self.word_ids, order[lo[b] : lo[b + 1]], marks[t])
                marks[t][words] = -1
                lists[b] = words

        self.workers.run(part)
        ptr = np.zeros(B + 1, dtype=np.int64)
        np.cumsum([len(w) for w in lists], out=ptr[1:])
        return (np.concatenate(lists) if B else np.empty(0, dtype=np.int64)), ptr

    def _local(self, docs, warm, alpha, beta):
        """(L1)-(L2) for the minibatch's documents ``docs``: (words, sstats, local iterations). With T
        threads, thread t takes the t-th run of ``docs`` (about equal tokens), with its own word map
        and stream; the statistics are summed in thread order (module docstring, "Threads")."""
        o = self.opts
        args = (o["local_iterations"], float(o["local_tol"]), self.rng)
        lam = (self.lam_wk, self.lam_k, self.scale, self.gamma_dk, warm, alpha, beta)
        corpus = (self.doc_ptr, self.word_ids, self.counts)
        if self.threads == 1:
            return _minibatch_local(*corpus, docs, *lam, *args, self._own_row(0), self._mark)
        # the minibatch's words and their exp{E[log beta]} (rows split among the threads), then each
        # thread's run of the documents (about equal tokens) into its own statistics, summed in order
        words, _ = _local_words(self.doc_ptr, self.word_ids, docs, self._mark)
        n, K, T = len(words), self.K, self.threads
        eb, sstats, total = np.empty((n, K), dtype=np.float32), np.zeros((T, n, K)), np.empty((n, K))
        rows, cuts, iters = split(n, T), self._cuts(docs), [0] * T
        self.workers.run(lambda t: _expected_log_beta(words, *lam[:3], beta, eb, rows[t], rows[t + 1]))

        def part(t):
            mine = docs[cuts[t] : cuts[t + 1]]
            iters[t] = _local_documents(
                *corpus, mine, self._mark, eb, self.gamma_dk, warm, alpha, *args, self._own_row(t), sstats[t]
            )  # fmt: skip

        self.workers.run(part)
        self.workers.run(lambda t: _sum_threads(sstats, total, rows[t], rows[t + 1]))
        self._mark[words] = -1
        return words, total, sum(iters)

    def log_likelihood(self):
        ll = super().log_likelihood()
        if self.engine is not None:  # every rank's documents
            ll = float(self.engine.sum(np.array([ll]))[0])
        return ll

    # -- estimates -----------------------------------------------------------------------

    def snapshot(self):
        snap = super().snapshot()
        if self.engine is not None:  # the whole corpus's figures, not this rank's
            D, N = int(self.corpus.D_total), int(self.corpus.N_total)
            snap.meta.update(documents_seen=self.iteration * D, tokens=N)
        return snap

    def topic_word(self):
        """E_q[phi] = lambda / sum_w lambda, as (K, W)."""
        lam = self.opts["beta"] + self.scale * self.lam_wk
        return np.ascontiguousarray((lam / lam.sum(axis=0)).T)

    def topic_totals(self):
        return self.lam_k

    def _prior(self):
        return np.full(self.K, self.opts["alpha"])

    def _theta_parts(self):
        """theta_d = gamma_d / sum gamma_d."""
        return self.gamma_dk, np.zeros(self.K)

    def doc_topics(self):
        """gamma_d - alpha: the expected topic counts of every training document (D x K)."""
        return np.maximum(self.gamma_dk - self.opts["alpha"], 0.0)
