"""hdp-pcsvb0: practical collapsed stochastic variational Bayes (zero order) for the
HDP (Bleier, "Practical Collapsed Stochastic Variational Inference for the HDP",
NIPS 2013 Workshop on Topic Models; arXiv:1312.0412): Sato et al.'s PCVB0 with
Foulds et al.'s stochastic updates, document by document and word by word.

Symbols: T sticks (option K, the truncation); V = W words; N tokens in the corpus,
n_d in document d, D documents; beta the symmetric prior on the topics' words;
alpha (document level) and gamma (top level) the concentrations; pi (T) the top-level
weights, so a document's prior is alpha pi; q(z_di = k) the topic distribution of
token i of document d; expected counts n_dk (per document), n_kw, n_k (corpus).
Sticks (u_k, v_k) and (S1)-(S3) as in ``sticks``.

For each document d (in random order), ``burn_in`` passes that update n_dk only and
then a final pass, token by token (in the corpus's order):
    q(z_di = k) ∝ (n_dk + alpha pi_k) (n_kw + beta) / (n_k + V beta)                  (B1)
                  (the current token is not subtracted)
    n_dk <- (1 - rho^d_t) n_dk + rho^d_t n_d q(z_di = k)                             (B2)
    (final pass) n_kw <- (1 - rho^c_t) n_kw + rho^c_t N q(z_di = k) 1[w_di = w]       (B3)
                 n_k  <- (1 - rho^c_t) n_k  + rho^c_t N q(z_di = k)
then, with E_k = E[1(n_dk >= 1)] = 1 - prod_i (1 - q(z_di = k)) from the final pass,
    sticks re-ordered by size (n_k, largest first; ``reorder``)
    u_k <- (1 - rho^h_t) u_k + rho^h_t (1 + D E_k)                                    (B4)
    v_k <- (1 - rho^h_t) v_k + rho^h_t (gamma + D sum_{l>k} E_l)                      (B5)
    gamma <- (T - 1) / sum_{k<T} [Psi(u_k + v_k) - Psi(v_k)]                          (S3)
    alpha <- (1 - rho^h_t) alpha + rho^h_t t_d / (Psi(n_d + alpha) - Psi(alpha))     (B6)
    pi_k = ubar_k prod_{l<k} (1 - ubar_l),  ubar_k = u_k / (u_k + v_k),  ubar_T = 1   (S1)
((B5) uses the gamma before (S3); ``optimize_gamma=false`` skips (S3) and
``optimize_alpha=false`` (B6); ``optimize_hyper`` before the rename set both.)

t_d is the document's tables as alpha counts them (option ``tables``). The paper's (``bound``)
is sum_k E_k, the expected number of topics in use, a lower bound of the tables: as the topics
sharpen it falls to the handful of topics a document uses and alpha drains with it (to 0.7 on
ch after 30 passes, docs/models/variational.md). ``sample`` draws the document's counts c_k once
from the final pass's q (each token's topic, from a stream of the seed, the pass and the
document) and takes the expected tables of a CRP with concentration alpha pi_k given them:
    t_d = sum_{k: c_k > 0} alpha pi_k [Psi(alpha pi_k + c_k) - Psi(alpha pi_k)]          (T1)
an unbiased estimate of E_q[tables] (which the bound is below, and which n_dk's mean plugged into
the concave expectation overshoots); rho^h averages the draws. The default, ``auto``, is
``sample``, or ``bound`` with ``clumping`` (there a word's copies are drawn from one q, spread
over more topics than word by word's, and alpha ran away on the movie reviews).

``alpha_update = "corpus"`` replaces (B6), a step toward each document's own ratio, by the
stochastic form of (S4) (the ratio of the corpus's sums, not a running mean of ratios):
    E_bar <- (1 - rho^h_t) E_bar + rho^h_t t_d                                        (B7)
    alpha solves  alpha sum_d [Psi(n_d + alpha) - Psi(alpha)] = D' E_bar               (B8)
with D' the non-empty documents and the sum over the corpus's document-length histogram
(``sticks.alpha_solve_lengths``, Newton from the current alpha). E_bar (the tables per
document) is kept, and reported as ``tables_per_document``, in both modes. The default
is the paper's (B6): on the movie reviews, ch and state_union both give the same alpha
trajectory (docs/models/variational.md), because alpha follows the (S4) fixed point of the
current topics in either form.

Step sizes rho_t = s / (tau + t)^kappa: (s_c, tau_c) = (10, 1000) for n_kw with t the
number of token updates of n_kw so far; (s_d, tau_d) = (1, 10) for n_dk with t the
token updates of this document in this visit (burn-in included, from 0);
(s_h, tau_h) = (5, 100) for the sticks and hyper-parameters with t the number of
documents so far; kappa = 0.9.

Speed-ups the paper names as next steps, both options here:
- ``clumping``: one update per distinct word of a document, scaled by its count m.
  q is computed once, and (B2), (B3) are applied as m consecutive updates with that q,
  which in closed form is  n <- c n + (1 - c) target  with  c = prod_{i<m} (1 - rho_{t+i})
  (both step counters advance by m), and (1 - q)^m enters E_k.
- ``minibatch`` = M > 0: n_kw, n_k, the sticks and the hyper-parameters are fixed
  while a minibatch of M documents is processed (n_dk is still updated token by
  token); then (B3) is applied once with the minibatch's statistics scaled to the
  corpus, N / |M| sum_{tokens of M} q 1[w_di = w] (|M| the minibatch's tokens), and
  (B4)-(B6) once with the minibatch's mean E_k and
  alpha target sum_{d in M} t_d / sum_{d in M} (Psi(n_d + alpha) - Psi(alpha)).
  Both step counters (c and h) then count minibatches.
  ``minibatch = 0`` (default) is the word-by-word algorithm above.

Threads (``--threads T``):
- ``minibatch`` > 0: n_kw, n_k and the sticks are fixed during a minibatch, so its documents are
  independent given them: thread t takes a run of its documents (about equal tokens) into its own
  statistics (and E_k, alpha sums); they are summed in thread order before (B3)-(B6). The same
  algorithm as on one thread; only the summation order differs.
- word by word (``minibatch = 0``), in rounds of about ROUND_TOKENS tokens per thread: thread t runs its
  run of the round's documents token by token (``_document``) on its own copy of n_kw, n_k: the
  round's table (a word's row copied when the thread first meets it) decayed by its own (B3) steps
  plus its own additions (``_view_run``), with its step counter t_c starting after the tokens of the
  threads before it, and the sticks of the round's start. After the round the threads' tables are
  composed into the table (``_merge_tables``): in thread order, n <- c_t n + a_t for t = 0..T-1
  (c_t the product of thread t's decays, a_t its additions) would be the sequence of (B3) updates of
  the round's documents in order, except that each thread did not see the others' updates of the
  round; the merge takes the mean of that over the T! orders of the threads' runs
  (``_order_weight``), so that no thread's additions are decayed by all the others' steps. Then
  (B4)-(B6) take each document's step in order with its E_k. The staleness is a round: about
  T x ROUND_TOKENS tokens (rounds end at a document's end, so one long document makes its round
  longer). A pass is one kernel call per thread (``_round_thread``), the threads waiting on a
  barrier (``threads.Barrier``) inside it three times a round; where the C library has no POSIX
  mutexes, a Workers.run per round and per merge from Python.

Implementation notes.
- (B3) touches every word: n_kw (and n_k) are a lazily decayed table (``kernels``:
  scale * A): the (1 - rho) decay is one multiplication of the scale, only the current
  word's row is written, and the scale is folded back into the table when it falls
  below 1e-100 (about once per ~230 units of sum rho).
- The sticks are stored as u (per topic), gbar and the stick order: v_k = gbar +
  sum_{l after k} (u_l - 1) is then exactly (B5) for any order (``sticks``), and a
  re-ordering is a permutation of ``order`` only.
- n_dk is kept for every document (D x T) and carried from pass to pass.
- Start (``init``, as hdp-pcvb0): "sequential" (default) draws every token's topic
  in turn given the draws before it, from (B1)'s conditional with pi the prior mean
  GEM(gamma); "random" gives every distinct word of every document normalised
  uniform random q. n_dk, n_kw, n_k are the counts of the start (n_kw, n_k at corpus
  scale), u_k = 1 + sum_d E_dk from them, gbar = gamma.
- One ``step()`` is one pass over the corpus (step_unit "pass"). The word-by-word
  algorithm is the minibatch pass with minibatches of one document whose (B3) is applied
  token by token instead of once (``_document``), so both share one kernel.
"""

import numba
import numpy as np

from ...corpus.corpus import token_blocks
from ...errors import InputError
from ...kernels.jit import no_nrt
from ...kernels.prefetch import prefetch
from ...kernels.rng import MASK64, seed_row, splitmix64, uniform
from ...kernels.special import digamma_diff
from ...threads import BARRIERS, Barrier, barrier_wait, padded, split
from . import kernels as kern
from . import sticks
from .common import HDP_ALIASES, HDP_DEFAULTS, CollapsedHdpModel

#: option alpha_update: (B7)-(B8), the stochastic form of (S4) over the corpus, or (B6), a step
#: toward each document's own ratio (the paper's Algorithm)
ALPHA_UPDATES = ("corpus", "document")
#: option tables: what counts as a document's tables in alpha's update, (B6) or (B7): the expected
#: tables of its counts drawn once from q (T1), the paper's lower bound sum_k E_dk, or (auto) the
#: draws but with clumping the bound (a word's copies drawn from one q spread over more topics than
#: word by word's, and alpha ran away: docs/models/variational.md)
TABLES = ("auto", "sample", "bound")

# ----------------------------------------------------------------------------
# kernels

# hyper = [alpha, gamma, gbar, E_bar]: the kernels update it in place.

# Newton's method for (S4) over the length histogram: relative tolerance and step cap (warm started
# from the current alpha, it takes 2-3 steps).
ALPHA_TOL = 1e-10
ALPHA_ITERS = 50


# After a document (or a minibatch): re-order, (B4)-(B5) with the mean E_k (E_mean), (S3), then alpha:
# (B6) with the target alpha_target (skipped if <= 0), or (B7)-(B8) with E_doc, the mean of sum_k E_dk
# over the minibatch's documents; (S1).
@no_nrt
def _sticks_step(
    n_k, order, u, v, pi, hyper, E_mean, alpha_target, E_doc, D_total, rho, opt_alpha, opt_gamma, reorder,
    alpha_corpus, len_values, len_counts, n_docs,
):  # fmt: skip
    K = u.shape[0]
    if reorder:
        sticks.order_by_size(n_k, order)
    for k in range(K):  # (B4)
        u[k] = (1.0 - rho) * u[k] + rho * (1.0 + D_total * E_mean[k])
    hyper[2] = (1.0 - rho) * hyper[2] + rho * hyper[1]  # (B5): gbar
    sticks.stick_v(order, u, hyper[2], v)
    if opt_gamma:
        hyper[1] = sticks.gamma_update(order, u, v, hyper[1])  # (S3)
    if not hyper[3] > 0.0:  # unknown (a checkpoint of state version 2): the value alpha implies
        s = 0.0
        for j in range(len_values.shape[0]):
            s += len_counts[j] * sticks.alpha_denominator(hyper[0], len_values[j])
        hyper[3] = hyper[0] * s / n_docs
    hyper[3] = (1.0 - rho) * hyper[3] + rho * E_doc  # (B7)
    if opt_alpha and alpha_corpus:  # (B8)
        hyper[0] = sticks.alpha_solve_lengths(
            len_values, len_counts, n_docs * hyper[3], hyper[0], ALPHA_ITERS, ALPHA_TOL
        )  # fmt: skip
    elif opt_alpha and alpha_target > 0.0:  # (B6)
        a = (1.0 - rho) * hyper[0] + rho * alpha_target
        hyper[0] = min(max(a, sticks.HYPER_MIN), sticks.HYPER_MAX)
    sticks.stick_weights(order, u, v, pi)  # (S1)


# (B1) for word w into q (K), with n_kw = scale * nkw, n_k = scale * nk; returns nothing.
@numba.njit(cache=True, nogil=True, inline="always")
def _responsibility(n_dk_d, api, nkw_w, nk, scale, beta, Vbeta, q):
    K = q.shape[0]
    total = 0.0
    for k in range(K):
        x = (n_dk_d[k] + api[k]) * (scale * nkw_w[k] + beta) / (scale * nk[k] + Vbeta)
        q[k] = x
        total += x
    inv = 1.0 / total
    for k in range(K):
        q[k] *= inv


# (B2) for a token of weight ``weight`` with responsibilities q: n_dk_d (K, document d's row) <- c n_dk_d
# + (1 - c) n_d q at step td of the document (keep_d: ``HdpPcsvb0._keep_d``). Returns td + weight.
@numba.njit(cache=True, nogil=True, inline="always")
def _document_step(n_dk_d, q, n_d, keep_d, td, weight):
    c = kern.keep_fraction_table(keep_d, td, weight)
    f = (1.0 - c) * n_d
    for k in range(q.shape[0]):
        n_dk_d[k] = c * n_dk_d[k] + f * q[k]
    return td + weight


# One factor of prod_k (1 - q_k) for every k (kern.absent, m tokens of weight), and with a stream
# (gen: a row, tables = "sample") the token's topic drawn from q m times into drawn.
@numba.njit(cache=True, nogil=True, inline="always")
def _absent_and_draw(prod, q, m, gen, drawn):
    for k in range(q.shape[0]):
        prod[k] = kern.absent(prod[k], q[k], m)
    for _ in range(m if gen.shape[0] > 0 else 0):
        drawn[_draw(q, uniform(gen, 0))] += 1


# The first k whose running sum of q exceeds u (u uniform on [0, 1): a draw from q; a rounding residue
# falls on the last topic). By blocks of 8 first: each block's sum is a few independent additions
# that the processor runs ahead, where one running sum over K topics would wait on K additions in
# turn (as a fused loop did: +35 % of a pass's time at K = 200). The last block is always left to
# the scan, which stops at K - 1: q sums to a little under 1 as often as not, and a u above the
# blocks' sum must not run past the last topic.
@numba.njit(cache=True, nogil=True, inline="always")
def _draw(q, u):
    K = q.shape[0]
    b = 0
    while b + 8 < K:
        s = ((q[b] + q[b + 1]) + (q[b + 2] + q[b + 3])) + ((q[b + 4] + q[b + 5]) + (q[b + 6] + q[b + 7]))
        if u < s:
            break
        u -= s
        b += 8
    k = b
    while k < K - 1:
        u -= q[k]
        if u < 0.0:
            break
        k += 1
    return k


# (T1) for a document whose counts were drawn into ``drawn`` (cleared here for the next document):
#     sum_{k: drawn_k > 0} alpha pi_k [Psi(alpha pi_k + drawn_k) - Psi(alpha pi_k)],
# the expected number of tables of a CRP with concentration alpha pi_k given drawn_k customers. Under
# q, sum_k E_dk = E[#{k: n_dk >= 1}] is a lower bound of E[tables] (a topic in use has one table at
# least): it is what drains alpha as the topics sharpen (docs/models/variational.md). Plugging
# n_dk's mean into the concave expectation errs the other way and runs away; one draw of the counts
# is an unbiased estimate of E_q[tables], and rho^h averages the draws.
@numba.njit(cache=True, nogil=True)
def _expected_tables(drawn, api):
    tables = 0.0
    for k in range(drawn.shape[0]):
        if drawn[k] > 0:
            if api[k] > 0.0:
                tables += api[k] * digamma_diff(api[k], drawn[k])
            else:  # alpha pi_k underflowed: the limit, one table
                tables += 1.0
            drawn[k] = 0
    return tables


# Room for a document's draws (``_absent_and_draw``): a stream and K counts, or none (tables = "bound").
@numba.njit(cache=True, nogil=True)
def _draw_space(sample_tables, K):
    n = 1 if sample_tables else 0
    return np.zeros((n, 4), dtype=np.uint64), np.zeros(K * n, dtype=np.int64)


# The stream of document d's draws in a pass: seeded from (the pass's key, d), so that the draws depend
# on the seed, the pass and the document only (not on the threads). Returns gen (gen.shape[0] == 0:
# none, tables = "bound").
@numba.njit(cache=True, nogil=True, inline="always")
def _document_stream(gen, key, d):
    if gen.shape[0] > 0:
        seed_row(gen, 0, key, np.uint64(d))
    return gen


# Document d: burn_in passes of (B1)-(B2), then the final one, which also applies (B3) token by
# token (``batch`` false) or adds the document's statistics into acc, acc_k (words marked in mark,
# touched); prod[k] = prod_i (1 - q_ik) of the final pass, and (gen a stream) the document's counts
# drawn from its q into drawn. Returns (scale, t_c, n_touched).
# A thread of the word-by-word rounds (``_view_run``) passes its own table as nkw, nk, scale and the
# round's shared table as base (0 rows on one thread) with its scale base_scale: a word's row is
# copied from base when the thread first sees it in the round (marked in mark, touched), decayed by
# the thread's (B3) steps so far, whose product view[0] keeps.
@no_nrt
def _document(
    d, doc_ptr, word_ids, counts, n_d, n_dk, nkw, nk, scale, api, q, prod, beta, N, s_c, tau_c, keep_d, kappa, t_c,
    burn_in, clumping, batch, acc, acc_k, mark, touched, n_touched, gen, drawn, base, base_scale, view,
):  # fmt: skip
    W, K = nkw.shape
    Vbeta = W * beta
    private = base.shape[0] > 0
    cb = view[0]
    td = 0
    for p in range(burn_in + 1):
        final = p == burn_in
        for k in range(K):
            prod[k] = 1.0
        end = doc_ptr[d + 1]
        for i in range(doc_ptr[d], end):
            w = word_ids[i]
            m = counts[i]
            reps = 1 if clumping else m
            weight = m if clumping else 1
            if i + 1 < end:  # the next word's row, while this one is worked on
                nxt = nkw[word_ids[i + 1]]
                for k in range(0, K, 8):
                    prefetch(nxt, k)
            if final and batch:
                n_touched = kern.touch(mark, touched, n_touched, w)
            elif private and mark[w] < 0:  # the round's row, as the thread's steps have decayed it
                n_touched = kern.touch(mark, touched, n_touched, w)
                f = cb * base_scale / scale
                for k in range(K):
                    nkw[w, k] = f * base[w, k]
            for _r in range(reps):
                _responsibility(n_dk[d], api, nkw[w], nk, scale, beta, Vbeta, q)  # (B1)
                td = _document_step(n_dk[d], q, n_d, keep_d, td, weight)  # (B2)
                if not final:
                    continue
                if batch:
                    slot = mark[w]
                    for k in range(K):
                        acc[slot, k] += weight * q[k]
                        acc_k[k] += weight * q[k]
                else:  # (B3)
                    c = kern.keep_fraction(s_c, tau_c, kappa, t_c, weight)
                    cb *= c
                    scale = kern.decay_scaled(nkw, nk, scale, 1.0 - c)
                    g = (1.0 - c) * N / scale
                    for k in range(K):
                        nkw[w, k] += g * q[k]
                        nk[k] += g * q[k]
                    t_c += weight
                _absent_and_draw(prod, q, weight, gen, drawn)
    view[0] = cb
    return scale, t_c, n_touched


# The documents order[lo:hi] of a minibatch (or a thread's run of one), each by ``_document``; adds
# their E_dk into E_mean (K). alpha is the current alpha (for (B6)'s denominators). gen (1 x 4, or
# 0 x 4 for tables = "bound"), drawn (K zeros, or none) and key (the pass's, ``_pass_key``): the
# documents' draws. Returns (scale, t_c, n_touched, tokens, documents, the documents' tables (sum_{d,k}
# E_dk, or (T1) summed over d), sum_d (Psi(n_d + alpha) - Psi(alpha))). view (1): scratch of ``_document``.
@no_nrt
def _run_documents(
    doc_ptr, word_ids, counts, doc_len, order, lo, hi, n_dk, nkw, nk, scale, api, q, prod, E_mean, alpha, beta, N,
    s_c, tau_c, keep_d, kappa, t_c, burn_in, clumping, batch, acc, acc_k, mark, touched, n_touched, alpha_corpus,
    gen, drawn, key, view,
):  # fmt: skip
    K = nkw.shape[1]
    tokens = 0
    docs = 0
    tables = 0.0
    psi_total = 0.0
    for b in range(lo, hi):
        d = order[b]
        n_d = doc_len[d]
        if n_d == 0:
            continue
        tokens += n_d
        docs += 1
        scale, t_c, n_touched = _document(
            d, doc_ptr, word_ids, counts, n_d, n_dk, nkw, nk, scale, api, q, prod, beta, N, s_c, tau_c, keep_d,
            kappa, t_c, burn_in, clumping, batch, acc, acc_k, mark, touched, n_touched, _document_stream(gen, key, d),
            drawn, nkw[0:0], 1.0, view,
        )  # fmt: skip
        for k in range(K):
            e = 1.0 - prod[k]  # E_k
            E_mean[k] += e
            if gen.shape[0] == 0:
                tables += e
        if gen.shape[0] > 0:
            tables += _expected_tables(drawn, api)
        if not alpha_corpus:
            psi_total += sticks.alpha_denominator(alpha, n_d)
    return scale, t_c, n_touched, tokens, docs, tables, psi_total


# After a minibatch of ``docs`` non-empty documents (E_mean: the sum of their E_dk; tables: of their
# tables, ``_run_documents``): (B3) with its statistics if ``batch``, then the sticks and
# hyper-parameters (B4)-(B6), (S1), (S3). Returns (scale, t_c, t_h).
@no_nrt
def _minibatch_end(
    nkw, nk, scale, acc, acc_k, mark, touched, n_touched, batch, N, tokens, docs, E_mean, tables, psi_total,
    s_c, tau_c, s_h, tau_h, kappa, t_c, t_h, stick_order, u, v, pi, hyper, D_total, optimize_alpha, optimize_gamma,
    reorder, alpha_corpus, len_values, len_counts, n_docs,
):  # fmt: skip
    K = nkw.shape[1]
    if batch:  # (B3) with the minibatch's statistics: n <- (1 - rho) n + rho N/|M| sum q 1[w]
        rho = kern.step_size(s_c, tau_c, kappa, t_c)
        scale = kern.flush_minibatch(nkw, nk, scale, rho, N, tokens, acc, acc_k, mark, touched, n_touched)
        t_c += 1
    for k in range(K):
        E_mean[k] /= docs
    rho = kern.step_size(s_h, tau_h, kappa, t_h)
    target = tables / psi_total if psi_total > 0.0 else 0.0
    _sticks_step(
        nk, stick_order, u, v, pi, hyper, E_mean, target, tables / docs, D_total, rho, optimize_alpha,
        optimize_gamma, reorder, alpha_corpus, len_values, len_counts, n_docs,
    )  # fmt: skip
    t_h += 1
    return scale, t_c, t_h


# One pass (B1)-(B6), (S1), (S3) over the documents in ``order`` on one thread: in minibatches of
# ``minibatch`` documents, or (minibatch 0) word by word, which is minibatches of one document with
# (B3) token by token. acc (W x K), acc_k (K) are zero and mark (W) is -1 on entry and exit.
# sample_tables: (T1) for alpha, with the draws of the pass's key. Returns (scale, t_c, t_h).
@numba.njit(cache=True, nogil=True)
def _pcsvb0_pass(
    doc_ptr, word_ids, counts, doc_len, order, minibatch, n_dk, nkw, nk, scale, acc, acc_k, mark, touched,
    stick_order, u, v, pi, hyper, beta, N, D_total, s_c, tau_c, keep_d, s_h, tau_h, kappa, t_c, t_h, burn_in,
    clumping, optimize_alpha, optimize_gamma, reorder, alpha_corpus, len_values, len_counts, sample_tables, key,
):  # fmt: skip
    K = nkw.shape[1]
    D = order.shape[0]
    batch = minibatch > 0
    M = minibatch if batch else 1
    q = np.empty(K, dtype=np.float64)
    api = np.empty(K, dtype=np.float64)
    prod = np.empty(K, dtype=np.float64)
    E_mean = np.empty(K, dtype=np.float64)
    view = np.ones(1, dtype=np.float64)
    gen, drawn = _draw_space(sample_tables, K)
    n_docs = _non_empty(len_counts)
    for lo in range(0, D, M):
        hi = min(lo + M, D)
        for k in range(K):
            api[k] = hyper[0] * pi[k]
            E_mean[k] = 0.0
        scale, t_c, n_touched, tokens, docs, tables, psi_total = _run_documents(
            doc_ptr, word_ids, counts, doc_len, order, lo, hi, n_dk, nkw, nk, scale, api, q, prod, E_mean, hyper[0],
            beta, N, s_c, tau_c, keep_d, kappa, t_c, burn_in, clumping, batch, acc, acc_k, mark, touched, 0,
            alpha_corpus, gen, drawn, key, view,
        )  # fmt: skip
        if docs == 0:
            continue
        scale, t_c, t_h = _minibatch_end(
            nkw, nk, scale, acc, acc_k, mark, touched, n_touched, batch, N, tokens, docs, E_mean, tables, psi_total,
            s_c, tau_c, s_h, tau_h, kappa, t_c, t_h, stick_order, u, v, pi, hyper, D_total, optimize_alpha,
            optimize_gamma, reorder, alpha_corpus, len_values, len_counts, n_docs,
        )  # fmt: skip
    return scale, t_c, t_h


# The non-empty documents of order[lo:hi].
@numba.njit(cache=True, nogil=True)
def _non_empty_run(order, lo, hi, doc_len):
    n = 0
    for b in range(lo, hi):
        if doc_len[order[b]] > 0:
            n += 1
    return n


# The corpus's non-empty documents (the sum of the length histogram's counts).
@numba.njit(cache=True, nogil=True)
def _non_empty(len_counts):
    n_docs = 0.0
    for j in range(len_counts.shape[0]):
        n_docs += len_counts[j]
    return n_docs


# ----------------------------------------------------------------------------
# threads (module docstring, "Threads")

# Word by word on T threads: tokens per thread per round. Every round ends in a merge of the threads'
# touched rows and the sticks' steps, so short rounds cost (rounds of 64 documents a thread: 1.60x at
# 2 threads on the movie reviews, 1.2x on the Wikipedia sample's short documents), and long ones see
# the others' updates late. Six seeds at K = 50 (docs/models/variational.md; the merge then in thread
# order, and the paper's tables): 2^16 tokens left 2 threads 1.0 % and 1.2 % below one thread's
# perplexity on the movie reviews and the Wikipedia sample (both ~450,000 tokens: 4 rounds a pass),
# 2^18 (1 round) 0.9 % and 3.7 % above, 2^17 within 0.2 % on both.
ROUND_TOKENS = 1 << 17


# A thread's run order[lo:hi] of a word-by-word round: ``_document`` for each document on the thread's
# own table (own, own_k at its scale view[1]; view[0] the product of its (B3) steps), which starts as
# the round's table (nkw, nk, scale: no thread writes it during the round) with its rows copied as the
# thread first meets each word (marked in mark, touched). Per token the thread reads and writes one
# table, as one thread does, so its memory traffic is one thread's: a version that read the round's
# table and added to rows of its own beside it (``view`` of the two) cost 1.12x one thread's CPU on
# one core and 1.2-1.4x on two (docs/benchmarks.md). Its E_dk into E_docs[b - first] and (drawn_docs
# not empty: tables = "sample") its counts drawn with the pass's key into drawn_docs[b - first] (zero
# on entry; (T1) is taken in ``_round_sticks``, with the alpha pi of the document's turn, as one thread
# does). The documents' prior is alpha pi of the round's start (pi, alpha); with drawn tables and
# ``step_alpha`` the thread steps its own copy of alpha through its documents by (B6), as if they came
# right after the round's start (their step counts from t_h on): a round is about half a pass at 2
# threads on the movie reviews, and (T1) feeds alpha back into q, so an alpha held for a round ends
# 1-2 % worse there. Returns n_touched.
@numba.njit(cache=True, nogil=True)
def _view_run(
    doc_ptr, word_ids, counts, doc_len, order, lo, hi, first, n_dk, nkw, nk, scale, view, own, own_k, mark, touched,
    pi, alpha, t_h, s_h, tau_h, step_alpha, E_docs, drawn_docs, key, beta, N, s_c, tau_c, keep_d, kappa, t_c,
    burn_in, clumping,
):  # fmt: skip
    K = nkw.shape[1]
    q = np.empty(K, dtype=np.float64)
    prod = np.empty(K, dtype=np.float64)
    api = np.empty(K, dtype=np.float64)
    for k in range(K):
        api[k] = alpha * pi[k]
        own_k[k] = nk[k]
    view[0] = 1.0
    s = scale
    sampled = drawn_docs.shape[0] > 0
    gen, _ = _draw_space(sampled, 0)
    n_touched = 0
    for b in range(lo, hi):
        d = order[b]
        n_d = doc_len[d]
        if n_d == 0:
            continue
        drawn = drawn_docs[b - first] if sampled else drawn_docs[0:0, 0]
        s, t_c, n_touched = _document(
            d, doc_ptr, word_ids, counts, n_d, n_dk, own, own_k, s, api, q, prod, beta, N, s_c, tau_c, keep_d,
            kappa, t_c, burn_in, clumping, False, own, own_k, mark, touched, n_touched, _document_stream(gen, key, d),
            drawn, nkw, scale, view,
        )  # fmt: skip
        for k in range(K):
            E_docs[b - first, k] = 1.0 - prod[k]
        if sampled and step_alpha:  # (B6) on the thread's own alpha (the counts stay for _round_sticks)
            tables = _expected_tables(drawn_docs[b - first].copy(), api)
            rho = kern.step_size(s_h, tau_h, kappa, t_h)
            alpha = (1.0 - rho) * alpha + rho * tables / sticks.alpha_denominator(alpha, n_d)
            alpha = min(max(alpha, sticks.HYPER_MIN), sticks.HYPER_MAX)
            for k in range(K):
                api[k] = alpha * pi[k]
            t_h += 1
    view[1] = s
    return n_touched


# After a word-by-word round: (B4)-(B6), (S1), (S3) for each of its non-empty documents order[lo:hi]
# in order, with its E_dk (E_docs[b - lo]) and tables ((T1) of its drawn counts drawn_docs[b - lo]
# with the current alpha pi, clearing them; sum_k E_dk when drawn_docs is empty), as the one-thread
# pass does after each document. Returns t_h.
@numba.njit(cache=True, nogil=True)
def _round_sticks(
    order, lo, hi, doc_len, E_docs, drawn_docs, nk, stick_order, u, v, pi, hyper, D_total, s_h, tau_h, kappa, t_h,
    optimize_alpha, optimize_gamma, reorder, alpha_corpus, len_values, len_counts,
):  # fmt: skip
    K = nk.shape[0]
    E_mean = np.empty(K, dtype=np.float64)
    api = np.empty(K, dtype=np.float64)
    n_docs = _non_empty(len_counts)
    sampled = drawn_docs.shape[0] > 0
    for b in range(lo, hi):
        n_d = doc_len[order[b]]
        if n_d == 0:
            continue
        tables = 0.0
        for k in range(K):
            E_mean[k] = E_docs[b - lo, k]
            if not sampled:
                tables += E_mean[k]
        if sampled:
            for k in range(K):
                api[k] = hyper[0] * pi[k]
            tables = _expected_tables(drawn_docs[b - lo], api)
        psi = 0.0 if alpha_corpus else sticks.alpha_denominator(hyper[0], n_d)
        rho = kern.step_size(s_h, tau_h, kappa, t_h)
        target = tables / psi if psi > 0.0 else 0.0
        _sticks_step(
            nk, stick_order, u, v, pi, hyper, E_mean, target, tables, D_total, rho, optimize_alpha, optimize_gamma,
            reorder, alpha_corpus, len_values, len_counts, n_docs,
        )  # fmt: skip
        t_h += 1
    return t_h


# The weight of thread t's additions in a round's merge: the mean, over the T! orders in which the
# threads' runs could have come one after the other, of the decay the threads after t apply to them,
#     g_t = mean over orders of prod_{s after t} c_s = (1/T) sum_k e_k(c_s, s != t) / C(T-1, k)
# (e_k the k-th elementary symmetric polynomial of the other threads' decays c = views[:, 0]). Each
# order is a sequence of the round's (B3) updates (save that no thread saw the others'); thread order
# alone (g_t = prod_{s>t} c_s) decays thread 0's additions by every later thread's steps, which at
# 2 threads on rounds longer than the table's memory (1 / rho^c tokens) threw most of thread 0's half
# away: 2 threads ended 1-3 % above one thread's perplexity (docs/models/variational.md). The mean
# keeps the table's mass as each order does (sum_t g_t (1 - c_t) = 1 - prod_t c_t). f_k, the mean of
# the products over the k-subsets of the others, is built one thread at a time (with n threads in:
# f_k <- ((n + 1 - k) f_k + k c f_{k-1}) / (n + 1), a mean of means, so nothing under- or
# overflows): O(T^2).
@numba.njit(cache=True, nogil=True)
def _order_weight(views, t):
    T = views.shape[0]
    f = np.zeros(T)
    f[0] = 1.0
    n = 0
    for s in range(T):
        if s == t:
            continue
        c = views[s, 0]
        f[n + 1] = c * f[n]
        for k in range(n, 0, -1):
            f[k] = ((n + 1 - k) * f[k] + k * c * f[k - 1]) / (n + 1)
        n += 1
    total = 0.0
    for k in range(T):
        total += f[k]
    return total / T


# Rows [w0, w1) of a word-by-word round's merge (``HdpPcsvb0._merge_views``; thread 0 also the
# totals): the threads' tables composed with weights g (``_order_weight``). Thread t's table
# F_t = s_t own_t (views[t] = [cb_t, s_t]) is the round's n_0 = scale nkw decayed by its steps plus
# its additions a_t (a_t = F_t - cb_t n_0 for a row thread t met, else 0), and
#     n = P n_0 + sum_{t met w} g_t (F_t - cb_t n_0),   P = prod_t cb_t,
# which with g_t = prod_{s>t} cb_s is the round's (B3) updates in thread order, n <- cb_t n + a_t,
# and with the order weights their mean over the threads' orders. It is summed a thread's row at a
# time. The subtraction rounds, so n is clamped at 0 (a decay of far more than 1e-100 in a round left
# -1e-323 once, and a negative count stops a resume). Rows no thread met are only decayed, which the
# new scale does: P scale, or 1 when that falls below RESCALE_BELOW, and those rows are then
# multiplied by it (``decay_scaled``). Every caller computes the same scale. Marks are reset. Returns
# the new scale.
@no_nrt
def _merge_tables(nkw, nk, scale, own, own_k, views, mark, w0, w1, with_totals, g):
    T = views.shape[0]
    K = nkw.shape[1]
    P = 1.0
    for t in range(T):
        P *= views[t, 0]
    S = scale * P
    folded = S < kern.RESCALE_BELOW
    new = 1.0 if folded else S
    for w in range(w0, w1):
        a = P
        hit = False
        for t in range(T):
            if mark[t, w] >= 0:
                a -= g[t] * views[t, 0]
                hit = True
        if not hit:
            if folded:
                f = max(S, 0.0)
                for k in range(K):
                    nkw[w, k] *= f
            continue
        a *= scale / new
        for k in range(K):
            nkw[w, k] *= a
        for t in range(T):
            if mark[t, w] >= 0:
                b = g[t] * views[t, 1] / new
                for k in range(K):
                    nkw[w, k] += b * own[t, w, k]
                mark[t, w] = -1
        for k in range(K):
            nkw[w, k] = max(nkw[w, k], 0.0)
    if with_totals:  # every thread met the totals
        a = P
        for t in range(T):
            a -= g[t] * views[t, 0]
        a *= scale / new
        for k in range(K):
            x = a * nk[k]
            for t in range(T):
                x += g[t] * views[t, 1] / new * own_k[t, k]
            nk[k] = max(x, 0.0)
    return new


# Thread tid's part of a whole word-by-word pass on T threads (``HdpPcsvb0._round_threads``: lo, cuts
# and tc_off), waiting for the others on a barrier (``threads.Barrier``) inside the kernel. After its run of a round it
# computes its own merge weight (into weights, shared); then threads 0..T-2 merge the rows, a range of
# words each (``_merge_tables``), while the last thread merges the totals and steps the sticks per
# document, which read the totals and not the rows: the sticks' serial steps overlap the merge instead
# of following it (about 0.75 of 3.5 ms a round saved at two threads on the movie reviews). Which
# thread merges a row changes none of its arithmetic: the same bits as the Python rounds. Returns
# (scale, t_c, t_h).
@numba.njit(cache=True, nogil=True)
def _round_thread(
    tid, doc_ptr, word_ids, counts, doc_len, order, lo, cuts, tc_off, n_dk, nkw, nk, scale, views, own, own_k, mark,
    touched, E_docs, drawn_docs, key, stick_order, u, v, pi, hyper, beta, N, D_total, s_c, tau_c, keep_d, s_h,
    tau_h, kappa, t_c, t_h, burn_in, clumping, optimize_alpha, optimize_gamma, reorder, alpha_corpus, len_values,
    len_counts, weights, barrier,
):  # fmt: skip
    T = views.shape[0]
    W = nkw.shape[0]
    last = T - 1  # merges the totals and steps the sticks
    rows = max(T - 1, 1)  # the threads that merge the rows (all of them on one thread)
    w0, w1 = (W, W) if tid == last and T > 1 else (W * tid // rows, W * (tid + 1) // rows)  # threads.split
    step_alpha = optimize_alpha and not alpha_corpus
    for i in range(lo.shape[0] - 1):
        _view_run(
            doc_ptr, word_ids, counts, doc_len, order, cuts[i, tid], cuts[i, tid + 1], lo[i], n_dk, nkw, nk, scale,
            views[tid], own[tid], own_k[tid], mark[tid], touched[tid], pi, hyper[0], t_h, s_h, tau_h, step_alpha,
            E_docs, drawn_docs, key, beta, N, s_c, tau_c, keep_d, kappa, t_c + tc_off[i, tid], burn_in, clumping,
        )  # fmt: skip
        barrier_wait(barrier)
        weights[tid] = _order_weight(views, tid)
        barrier_wait(barrier)
        scale = _merge_tables(nkw, nk, scale, own, own_k, views, mark, w0, w1, tid == last, weights)
        if tid == last:
            _round_sticks(
                order, lo[i], lo[i + 1], doc_len, E_docs, drawn_docs, nk, stick_order, u, v, pi, hyper, D_total, s_h,
                tau_h, kappa, t_h, optimize_alpha, optimize_gamma, reorder, alpha_corpus, len_values, len_counts,
            )  # fmt: skip
        t_h += _non_empty_run(order, lo[i], lo[i + 1], doc_len)  # every thread: the next round's t_h
        t_c += tc_off[i, T]
        barrier_wait(barrier)
    return scale, t_c, t_h


# ----------------------------------------------------------------------------
# the model


class HdpPcsvb0(CollapsedHdpModel):
    """Practical collapsed stochastic variational Bayes (CVB0) for the HDP; see the module docstring."""

    name = "hdp-pcsvb0"
    step_unit = "pass"
    defaults = {
        **HDP_DEFAULTS,
        "s_c": 10.0,
        "tau_c": 1000.0,
        "s_d": 1.0,
        "tau_d": 10.0,
        "s_h": 5.0,
        "tau_h": 100.0,
        "kappa": 0.9,
        "minibatch": 0,
        "burn_in": 0,
        "alpha_update": "document",
        "tables": "auto",
    }
    aliases = HDP_ALIASES
    # 3: E_bar, the running estimate of a document's tables (B7); 4: option tables (a run whose
    # options lack it resumes with the bound it began with: from_state)
    STATE_VERSION = 4
    state_arrays = ("n_dk", "nkw", "nk", "u", "v", "pi", "order")
    state_scalars = {
        "scale": float, "t_c": int, "t_h": int, "alpha": float, "gamma": float, "gbar": float, "E_bar": float,
    }  # fmt: skip
    lazy_table = ("nkw", "nk", "n_kw")

    def allocate(self):
        super().allocate()
        K, W, D = self.K, self.W, self.D
        self.n_dk = np.zeros((D, K), dtype=np.float64)
        self.nkw = np.zeros((W, K), dtype=np.float64)  # n_kw / scale, word-major
        self.nk = np.zeros(K, dtype=np.float64)  # n_k / scale
        self._allocate_sticks()
        self.scale = 1.0
        self.t_c = 0
        self.t_h = 0
        self.gbar = self.gamma
        self.E_bar = 0.0
        self._lengths = sticks.length_histogram(self.doc_len)
        self._keep_d = self._document_keep_table("s_d", "tau_d")  # (B2)'s 1 - rho^d_t
        # the minibatch statistics, or (word by word on T threads) each thread's own copy of n_kw, n_k
        rows = W if self.opts["minibatch"] > 0 or self.threads > 1 else 0
        self._tables = self._thread_tables(rows)
        # each thread's [cb, s] (``_view_run``), written at each document's end: rows of their own
        self._views = padded(self.threads, 2, np.float64, full=True)

    def initialise(self):
        no_q = np.zeros((0, self.K), dtype=np.float32)
        self._start(self.doc_ptr, self.word_ids, self.counts, self.n_dk, self.nkw, self.nk, no_q)
        self.E_bar = float((self.u - 1.0).sum()) / max(int(self._lengths[1].sum()), 1)  # the start's E_dk

    def check_options(self, opts):
        super().check_options(opts)
        if "alpha_update" in opts and opts["alpha_update"] not in ALPHA_UPDATES:
            raise InputError(f"option alpha_update={opts['alpha_update']!r}: expected corpus or document")
        if "tables" in opts and opts["tables"] not in TABLES:
            raise InputError(f"option tables={opts['tables']!r}: expected auto, sample or bound")

    @classmethod
    def from_state(cls, corpus, options, arrays, threads=1):
        # A run started before option tables goes on as it began, with the bound: its recorded options
        # lack the option (every run started since records it), whatever its checkpoints' version.
        if "tables" not in options:
            options = {**options, "tables": "bound"}
        return super().from_state(corpus, options, arrays, threads)

    @classmethod
    def upgrade_state(cls, arrays, version):
        arrays = super().upgrade_state(arrays, version)
        if version < 3 and "E_bar" not in arrays:
            arrays["E_bar"] = np.float64(0.0)  # unknown: the first update derives it from alpha
        return arrays

    def step(self):
        """One pass over the corpus in random order (word by word, or in minibatches)."""
        o = self.opts
        hyper = np.array([self.alpha, self.gamma, self.gbar, self.E_bar])
        order = self._epoch_order()
        if self.threads > 1:  # module docstring, "Threads"
            (self._minibatch_threads if o["minibatch"] > 0 else self._round_threads)(order, hyper)
        else:
            acc, acc_k, mark, touched, _ = self._tables
            self.scale, self.t_c, self.t_h = _pcsvb0_pass(
                *self._documents(), order, o["minibatch"], self.n_dk, self.nkw, self.nk, self.scale, acc[0],
                acc_k[0], mark[0], touched[0], self.order, self.u, self.v, self.pi, hyper, float(o["beta"]),
                float(self.N), float(self.D), *self._steps(), self.t_c, self.t_h,
                *(o[k] for k in ("burn_in", "clumping", "optimize_alpha", "optimize_gamma", "reorder")),
                o["alpha_update"] == "corpus", *self._lengths, self._sample_tables, self._pass_key(),
            )  # fmt: skip
        self.alpha, self.gamma, self.gbar, self.E_bar = (float(x) for x in hyper)
        self.iteration += 1
        return self._metrics(
            rho_c=float(kern.step_size(o["s_c"], o["tau_c"], o["kappa"], max(self.t_c - 1, 0))),
            rho_h=float(kern.step_size(o["s_h"], o["tau_h"], o["kappa"], max(self.t_h - 1, 0))),
            tables_per_document=self.E_bar,
        )

    @property
    def _sample_tables(self):
        """(T1) for alpha's tables (option tables; auto: unless clumping)."""
        tables = self.opts["tables"]
        return tables == "sample" or (tables == "auto" and not self.opts["clumping"])

    def _pass_key(self):
        """The key of this pass's draws (tables = "sample"), from the seed and the passes done: a
        resumed run draws what the straight one did, whatever the threads."""
        _, key = splitmix64(np.uint64(self.seed ^ (self.iteration * 0x9E3779B97F4A7C15 & MASK64)))
        return np.uint64(key)  # (numba returns a Python int, which it would take back as an int64)

    def _merge_views(self):
        """The threads' tables of a word-by-word round composed into n_kw, their additions weighted by
        the mean over the threads' orders (``_order_weight``, ``_merge_tables``), each thread merging
        its range of words."""
        own, own_k, mark, _, _ = self._tables
        ranges, out = split(self.W, self.threads), [1.0] * self.threads
        weights = np.array([_order_weight(self._views, t) for t in range(self.threads)])

        def part(t):
            out[t] = _merge_tables(
                self.nkw, self.nk, self.scale, own, own_k, self._views, mark, ranges[t], ranges[t + 1], t == 0,
                weights,
            )  # fmt: skip

        self.workers.run(part)
        self.scale = out[0]

    def _steps(self):
        """s_c, tau_c, keep_d, s_h, tau_h, kappa."""
        o = self.opts
        s_c, tau_c, s_h, tau_h, kappa = (float(o[k]) for k in ("s_c", "tau_c", "s_h", "tau_h", "kappa"))
        return s_c, tau_c, self._keep_d, s_h, tau_h, kappa

    def _minibatch_threads(self, order, hyper):
        """Minibatches on T threads: thread t takes a run of each minibatch's documents (about equal
        tokens) with n_kw and the sticks held fixed, as one thread does, into its own statistics;
        these are summed in thread order before (B3)-(B6)."""
        o, T, K = self.opts, self.threads, self.K
        acc, acc_k, mark, touched, n_touched = self._tables
        s_c, tau_c, keep_d, s_h, tau_h, kappa = self._steps()
        beta, N, alpha_corpus = float(o["beta"]), float(self.N), o["alpha_update"] == "corpus"
        # each thread's E_dk sums and scratch q, prod (written at every token: rows a cache line apart)
        E, q, prod = (padded(T, K, np.float64) for _ in range(3))
        out, api = np.zeros((T, 4)), np.empty(K)  # tokens, documents, tables, psi_total
        n_docs = _non_empty(self._lengths[1])
        key = self._pass_key()
        draws = [_draw_space(self._sample_tables, K) for _ in range(T)]
        merges = -(-self.D // o["minibatch"])  # a pass's minibatches (merge_ranges)
        for lo in range(0, self.D, o["minibatch"]):
            hi = min(lo + o["minibatch"], self.D)
            cuts = lo + self._cuts(order[lo:hi])
            api[:] = hyper[0] * self.pi
            E[:] = 0.0

            def part(t, cuts=cuts):
                *_, n_touched[t], tokens, docs, tables, psi_total = _run_documents(
                    *self._documents(), order, cuts[t], cuts[t + 1], self.n_dk, self.nkw, self.nk, self.scale, api,
                    q[t], prod[t], E[t], hyper[0], beta, N, s_c, tau_c, keep_d, kappa, self.t_c, o["burn_in"],
                    o["clumping"], True, acc[t], acc_k[t], mark[t], touched[t], 0, alpha_corpus, *draws[t], key,
                    self._views[t],
                )  # fmt: skip
                out[t] = tokens, docs, tables, psi_total

            self.workers.run(part)
            tokens, docs = int(out[:, 0].sum()), int(out[:, 1].sum())
            if docs == 0:
                continue
            # (B3) with the minibatch's statistics, summed in thread order
            rho = kern.step_size(s_c, tau_c, kappa, self.t_c)
            self.scale = kern.decay_scaled(self.nkw, self.nk, self.scale, rho)
            self._merge(self.nkw, self.nk, self._tables, np.full(T, rho * N / tokens / self.scale), merges)
            self.t_c += 1
            E_mean, tables, psi_total = E[0].copy(), float(out[0, 2]), float(out[0, 3])
            for t in range(1, T):  # thread order
                E_mean += E[t]
                tables += float(out[t, 2])
                psi_total += float(out[t, 3])
            self.scale, self.t_c, self.t_h = _minibatch_end(
                self.nkw, self.nk, self.scale, acc[0], acc_k[0], mark[0], touched[0], 0, False, N, tokens, docs,
                E_mean, tables, psi_total, s_c, tau_c, s_h, tau_h, kappa, self.t_c, self.t_h, self.order, self.u,
                self.v, self.pi, hyper, float(self.D), o["optimize_alpha"], o["optimize_gamma"], o["reorder"],
                alpha_corpus, *self._lengths, n_docs,
            )  # fmt: skip

    def _round_threads(self, order, hyper):
        """Word by word on T threads, in rounds of about ROUND_TOKENS tokens per thread: each thread runs
        its documents on its own copy of n_kw (the round's table, its own decays and additions),
        with the sticks of the round's start; then the copies are composed into n_kw (the mean over the
        threads' orders), and the sticks take each document's step in order."""
        o, T, K = self.opts, self.threads, self.K
        own, own_k, mark, touched, n_touched = self._tables
        s_c, tau_c, keep_d, s_h, tau_h, kappa = self._steps()
        beta, N, alpha_corpus = float(o["beta"]), float(self.N), o["alpha_update"] == "corpus"
        # round i: documents order[lo[i]:lo[i + 1]] (rounds of about equal tokens, ROUND_TOKENS a
        # thread); thread t's run order[cuts[i, t]:cuts[i, t + 1]] (about equal tokens), its (B3) steps
        # after those of the threads before it: its t_c starts tc_off[i, t] tokens into the round
        # (tc_off[i, T]: the round's tokens)
        in_order = np.zeros(self.D + 1, dtype=np.int64)
        np.cumsum(self.doc_len[order], out=in_order[1:])
        lo = token_blocks(in_order, max(1, -(-int(in_order[-1]) // (ROUND_TOKENS * T))))
        # E_dk of a round's documents: at most D x K (a corpus that fits in one round), n_dk's size
        E_docs = np.zeros((int(np.diff(lo).max(initial=0)), K))
        step_alpha = o["optimize_alpha"] and not alpha_corpus  # _view_run
        # the counts drawn from a round's documents' q (tables = "sample"), as many as E_docs
        drawn_docs = np.zeros((E_docs.shape[0] if self._sample_tables else 0, K), dtype=np.int32)
        key = self._pass_key()
        cuts, tc_off = np.empty((len(lo) - 1, T + 1), dtype=np.int64), np.empty((len(lo) - 1, T + 1), np.int64)
        for i in range(len(lo) - 1):
            ptr = np.zeros(lo[i + 1] - lo[i] + 1, dtype=np.int64)
            np.cumsum(self.doc_len[order[lo[i] : lo[i + 1]]], out=ptr[1:])
            blocks = token_blocks(ptr, T)
            cuts[i], tc_off[i, :T], tc_off[i, T] = lo[i] + blocks, ptr[blocks[:T]], ptr[-1]
        if BARRIERS and not self._python_rounds:  # the whole pass, one kernel call a thread
            weights = np.empty(T)  # each round's merge weights (_order_weight), one a thread
            if self._barrier is None:
                self._barrier = Barrier(T)
            out = [None] * T

            def thread(t):
                out[t] = _round_thread(
                    t, *self._documents(), order, lo, cuts, tc_off, self.n_dk, self.nkw, self.nk, self.scale,
                    self._views, own, own_k, mark, touched, E_docs, drawn_docs, key, self.order, self.u, self.v,
                    self.pi, hyper, beta, N, float(self.D), s_c, tau_c, keep_d, s_h, tau_h, kappa, self.t_c,
                    self.t_h, o["burn_in"], o["clumping"], o["optimize_alpha"], o["optimize_gamma"], o["reorder"],
                    alpha_corpus, *self._lengths, weights, self._barrier.memory,
                )  # fmt: skip

            self.workers.run(thread)
            self.scale, self.t_c, self.t_h = out[0]
            return
        for i in range(len(lo) - 1):

            def part(t, i=i):
                n_touched[t] = _view_run(
                    *self._documents(), order, cuts[i, t], cuts[i, t + 1], lo[i], self.n_dk, self.nkw, self.nk,
                    self.scale, self._views[t], own[t], own_k[t], mark[t], touched[t], self.pi, hyper[0], self.t_h, s_h,
                    tau_h, step_alpha, E_docs, drawn_docs, key, beta, N, s_c, tau_c, keep_d, kappa,
                    self.t_c + int(tc_off[i, t]), o["burn_in"], o["clumping"],
                )  # fmt: skip

            self.workers.run(part)
            self._merge_views()
            self.t_c += int(tc_off[i, T])
            self.t_h = _round_sticks(
                order, lo[i], lo[i + 1], self.doc_len, E_docs, drawn_docs, self.nk, self.order, self.u, self.v,
                self.pi, hyper, float(self.D), s_h, tau_h, kappa, self.t_h, o["optimize_alpha"], o["optimize_gamma"],
                o["reorder"], alpha_corpus, *self._lengths,
            )  # fmt: skip

    # -- estimates -----------------------------------------------------------------------

    def topic_word(self):
        """(n_kw + beta) / (n_k + V beta), as (K, W)."""
        beta = self.opts["beta"]
        return np.ascontiguousarray(((self.scale * self.nkw + beta) / (self.scale * self.nk + self.W * beta)).T)

    def topic_totals(self):
        return self.nk
