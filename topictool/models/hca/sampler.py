"""The Gibbs sweep of hdp-gibbs and nplda-gibbs over topics and table counts (Buntine & Mishra 2014).

Model (pyp.py has the node algebra, burst.py the burstiness front end):

    alpha   ~ GEM(a_alpha, b_alpha) truncated at K             root of the document side
    theta_d ~ PYP(a_theta, b_theta, alpha)                      one node per document
    word side, either
      phi_k ~ Dirichlet(beta, ..., beta)                        hdp-gibbs   (WORD_DIRICHLET)
    or
      beta  ~ GEM(a_beta, b_beta) over the W words              nplda-gibbs (WORD_PYP)
      phi_k ~ PYP(a_phi, b_phi, beta)
    [psi_dk ~ PYP(a_psi, b_psi_k, phi_k)                        burst=true]
    z_i ~ theta_d,  w_i ~ phi_{z_i}  (or psi_{d, z_i})

State: the topic z of every token, the burst indicator r (burst only), and table counts:
t_dk (document d, topic k), t_kw (topic k, word w; WORD_PYP). Customer counts n_dk are
rebuilt per document from z; n_kw and n_k count the tokens that reach the topic model
(r = 1). No seating is stored: only how many tables each cell has (pyp.py).

One token update (``sweep``), its customers moved with the seating summed out (pyp.py, "One
customer's seat"):

1. Leave. The token's customer leaves its document cell (d, k) and, if it reaches the topic
   model, its cell (k, w); at each it sat alone with probability pyp.alone(n, t), and then
   its table and that table's customer at the parent (the alpha root, the word root) go too.
   A customer can always leave, except with burst: a token whose stored indicator r = 1 makes
   it the only table (s_wk = 1) of a word that has more copies under k in the document is left
   as it is ("blocked", eq. 6's indicators, as in hca).
2. Topic. p(z = k | rest) is summed over joining and opening at each node: the document
   node's (n_dk - a t_dk) + (b + a T_d) p_alpha(k), times the word side, the topic node's
   ((n_kw - a t_kw) + (b + a T_k) p_beta(w)) / (b + n_k) for WORD_PYP or the Dirichlet
   (n_kw + beta)/(n_k + W beta), wrapped by eq. 6/7 with burst.
3. For the chosen k, top-down: r (eq. 6), whether the document customer opens a table (its
   term's share of step 2's document factor), and whether the topic customer does (only if
   r = 1). Then all counts are added.

Speed: the K-term sum of step 2 uses per-topic factors, refreshed only for the two topics a
token leaves and joins (the document side per document in Bd and P; the word side's 1/(b + n_k)
and (b + a T_k)/(b + n_k) in wk0, wk1), and reads the cell (k, w)'s n_kw and t_kw. Every number
is a pure function of the integer counts and the hyper-parameters, which is what makes a
resumed run bit-for-bit identical.

Stirling tables grow on demand: before each token the sweep checks that the tables cover
the largest counts seen so far plus the one customer a token can add; if not it returns
STATUS_GROW with its position, the Python side grows the tables and calls it again
(no draw has been made for that token yet, so the result does not depend on table sizes).
"""

import numba
import numpy as np

from ...kernels.jit import no_nrt
from ...kernels.rng import uniform
from .burst import burst_weights
from .pyp import alone, join_weight, root_norm, root_numerator, word_root_probability

WORD_DIRICHLET = 0
WORD_PYP = 1

# layout of the ``hyper`` array
H_A_THETA, H_B_THETA, H_A_ALPHA, H_B_ALPHA, H_BETA, H_A_PHI, H_B_PHI, H_A_BETA, H_B_BETA, H_A_PSI = range(10)
N_HYPER = 10

# layout of ``extent`` (largest counts seen) and ``bounds`` (largest counts possible):
# per table (theta, phi, psi) a customer count n and a table count t
X_N_THETA, X_T_THETA, X_N_PHI, X_T_PHI, X_N_PSI, X_T_PSI = range(6)

# layout of ``stats``
S_BLOCKED, S_SAMPLED = range(2)

STATUS_DONE = 0
STATUS_GROW = 1


@numba.njit(cache=True, nogil=True)
def random_topics(z, K, rng):
    """Initial topics: uniform over all K (hca's random start)."""
    for i in range(z.shape[0]):
        z[i] = np.int64(uniform(rng, 0) * K) % K


@numba.njit(cache=True, nogil=True, inline="always")
def _table_ok(R, n_seen, t_seen, n_bound):
    n_max = R.shape[0] - 1
    t_cap = R.shape[1] - 1
    n_ok = n_seen + 2 <= n_max or n_max >= n_bound
    t_ok = t_seen + 2 <= t_cap or t_cap >= n_max
    return n_ok and t_ok


@numba.njit(cache=True, nogil=True, inline="always")
def _draw(cum, total, u):
    """First index whose cumulative weight exceeds u * total (binary search); never a zero-weight one."""
    K = cum.shape[0]
    x = u * total
    lo = 0
    hi = K - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if cum[mid] > x:
            hi = mid
        else:
            lo = mid + 1
    while lo > 0 and cum[lo] == cum[lo - 1]:
        lo -= 1
    return lo


# Root (alpha) bookkeeping after T_k changes by delta: K+, the first empty topic and the
# urn numerators P (pyp.root_numerator) of every topic whose numerator changed.
@no_nrt
def _root_change(k, delta, T_k, gs, P, a0, b0):
    K = T_k.shape[0]
    old = T_k[k]
    T_k[k] = old + delta
    gs[0] += delta
    if old == 0 and delta > 0:
        gs[1] += 1
        if gs[2] == k:
            fe = -1
            for j in range(k + 1, K):
                if T_k[j] == 0:
                    fe = j
                    break
            gs[2] = fe
    elif old + delta == 0:
        gs[1] -= 1
        fe = gs[2]
        if fe < 0 or k < fe:
            if fe >= 0:
                P[fe] = 0.0
            gs[2] = k
    P[k] = root_numerator(T_k[k], k == gs[2], a0, b0, gs[1])
    fe = gs[2]
    if fe >= 0:
        P[fe] = root_numerator(0, True, a0, b0, gs[1])


@no_nrt
def _word_root_change(w, k, delta, TW_k, TwT, gs):
    TW_k[k] += delta
    old = TwT[w]
    TwT[w] = old + delta
    gs[3] += delta
    if old == 0:
        gs[4] += 1
    elif old + delta == 0:
        gs[4] -= 1


@numba.njit(cache=True, nogil=True, inline="always")
def _word_topic_factors(k, pyp_words, n_k, TW_k, hyper, W, wk1, wk0):
    """Per-topic parts of the word factor: Dirichlet wk1 = 1/(n_k + W beta);
    PYP wk0 = 1/(b_phi + n_k), wk1 = (b_phi + a_phi TW_k) wk0."""
    if pyp_words:
        inv = 1.0 / (hyper[H_B_PHI] + n_k[k])
        wk0[k] = inv
        wk1[k] = (hyper[H_B_PHI] + hyper[H_A_PHI] * TW_k[k]) * inv
    else:
        wk1[k] = 1.0 / (n_k[k] + W * hyper[H_BETA])
        wk0[k] = 0.0


# One sweep (or, with adding=True, the initial sequential placement of every token with its
# topic fixed): the algorithm of the module docstring. Returns (status, document, token).
# Only tokens of words w_lo <= w < w_hi are sampled (all of them on one thread); word_totals,
# when not empty, holds the word root's total and used count to start from, and gets the
# running ones back on return (threads: other threads write TwT meanwhile).
@numba.njit(cache=True, nogil=True)
def sweep(
    adding,
    d_begin,
    i_begin,
    token_ptr,
    doc_ptr,
    word_ids,
    counts,
    z,
    r,
    t_dk,
    n_kw,
    n_k,
    t_kw,
    TW_k,
    TwT,
    T_k,
    R_theta,
    R_phi,
    R_psi,
    hyper,
    b_psi,
    word_mode,
    burst,
    n_slots,
    extent,
    bounds,
    rng,
    stats,
    w_lo,
    w_hi,
    word_totals,
):
    K = t_dk.shape[1]
    gs = np.zeros(5, dtype=np.int64)
    P = np.empty(K)
    wk1 = np.empty(K)
    wk0 = np.empty(K)
    ndk = np.zeros(K, dtype=np.int64)
    Bd = np.empty(K)
    S_k = np.zeros(K, dtype=np.int64)
    Z1 = np.empty(K)
    Z0 = np.empty(K)
    nw = np.zeros((max(n_slots, 1), K), dtype=np.int32)
    sw = np.zeros((max(n_slots, 1), K), dtype=np.int32)
    cum = np.empty(K)
    return _sweep_documents(
        adding, d_begin, i_begin, token_ptr, doc_ptr, word_ids, counts, z, r, t_dk, n_kw, n_k, t_kw, TW_k, TwT,
        T_k, R_theta, R_phi, R_psi, hyper, b_psi, word_mode, burst, n_slots, extent, bounds, rng, stats, w_lo, w_hi,
        word_totals, gs, P, wk1, wk0, ndk, Bd, S_k, Z1, Z0, nw, sw, cum,
    )  # fmt: skip


@no_nrt
def _sweep_documents(
    adding, d_begin, i_begin, token_ptr, doc_ptr, word_ids, counts, z, r, t_dk, n_kw, n_k, t_kw, TW_k, TwT,
    T_k, R_theta, R_phi, R_psi, hyper, b_psi, word_mode, burst, n_slots, extent, bounds, rng, stats, w_lo, w_hi,
    word_totals, gs, P, wk1, wk0, ndk, Bd, S_k, Z1, Z0, nw, sw, cum,
):  # fmt: skip
    """The sweep, given its scratch (kernels/jit.py; gs zero): the global counts and per-topic
    factors, then the documents."""
    D = doc_ptr.shape[0] - 1
    K = t_dk.shape[1]
    W = n_kw.shape[0]
    pyp_words = word_mode == WORD_PYP
    a = hyper[H_A_THETA]
    b = hyper[H_B_THETA]
    a0 = hyper[H_A_ALPHA]
    b0 = hyper[H_B_ALPHA]
    beta = hyper[H_BETA]
    a_phi = hyper[H_A_PHI]
    a_beta = hyper[H_A_BETA]
    b_beta = hyper[H_B_BETA]
    a_psi = hyper[H_A_PSI]

    # global counts: gs = [T, K+, first empty topic, TWT, TWT non-zero]
    gs[2] = -1
    for k in range(K):
        gs[0] += T_k[k]
        if T_k[k] > 0:
            gs[1] += 1
        elif gs[2] < 0:
            gs[2] = k
    if pyp_words and word_totals.shape[0] > 0:
        # threads (model.py): the word root's totals as the round began (other threads write
        # TwT rows of their own words meanwhile)
        gs[3] = word_totals[0]
        gs[4] = word_totals[1]
    elif pyp_words:
        for w in range(W):
            gs[3] += TwT[w]
            if TwT[w] > 0:
                gs[4] += 1
    for k in range(K):
        P[k] = root_numerator(T_k[k], k == gs[2], a0, b0, gs[1])
        _word_topic_factors(k, pyp_words, n_k, TW_k, hyper, W, wk1, wk0)

    for d in range(d_begin, D):
        tok0 = token_ptr[d]
        tok1 = token_ptr[d + 1]
        resume = i_begin if d == d_begin else tok0
        built_end = resume if adding else tok1
        # --- the document's counts from the tokens already placed
        for k in range(K):
            ndk[k] = 0
            S_k[k] = 0
        i = tok0
        slot = 0
        for e in range(doc_ptr[d], doc_ptr[d + 1]):
            c = counts[e]
            for _ in range(c):
                if i < built_end:
                    k = z[i]
                    ndk[k] += 1
                    if burst:
                        rr = r[i]
                        S_k[k] += rr
                        if c >= 2:
                            nw[slot, k] += 1
                            sw[slot, k] += rr
                i += 1
            if c >= 2:
                slot += 1
        Td = 0
        for k in range(K):
            Td += t_dk[d, k]
            Bd[k] = join_weight(a, ndk[k], t_dk[d, k])
            if burst:
                Z0[k] = 1.0 / (b_psi[k] + ndk[k])
                Z1[k] = (b_psi[k] + a_psi * S_k[k]) * Z0[k]

        # --- the tokens
        i = tok0
        slot = 0
        for e in range(doc_ptr[d], doc_ptr[d + 1]):
            w = word_ids[e]
            c = counts[e]
            if w < w_lo or w >= w_hi:  # another thread's words this round (model.py)
                i += c
                if c >= 2:
                    slot += 1
                continue
            sl = slot if (burst and c >= 2) else -1
            for _ in range(c):
                if i < resume:
                    i += 1
                    continue
                grow = not _table_ok(R_theta, extent[X_N_THETA], extent[X_T_THETA], bounds[0])
                if pyp_words and not _table_ok(R_phi, extent[X_N_PHI], extent[X_T_PHI], bounds[1]):
                    grow = True
                if burst and not _table_ok(R_psi, extent[X_N_PSI], extent[X_T_PSI], bounds[2]):
                    grow = True
                if grow:
                    if word_totals.shape[0] > 0:  # the running totals, for the call that resumes
                        word_totals[0] = gs[3]
                        word_totals[1] = gs[4]
                    return STATUS_GROW, d, i
                k = z[i]
                rr = r[i] if burst else 1

                if not adding:
                    # 1. leave: the burst indicator may block; else the customers go, each with its
                    # table when it sat alone (u = 1)
                    if sl >= 0 and rr == 1 and nw[sl, k] > 1 and sw[sl, k] == 1:
                        stats[S_BLOCKED] += 1
                        i += 1
                        continue
                    u_doc = 1
                    if ndk[k] > 1:
                        u_doc = 1 if uniform(rng, 0) < alone(R_theta, a, ndk[k], t_dk[d, k]) else 0
                    u_w = 0
                    if pyp_words and rr == 1:
                        u_w = 1
                        if n_kw[w, k] > 1:
                            u_w = 1 if uniform(rng, 0) < alone(R_phi, a_phi, n_kw[w, k], t_kw[w, k]) else 0
                    ndk[k] -= 1
                    t_dk[d, k] -= u_doc
                    if u_doc:
                        Td -= 1
                        _root_change(k, -1, T_k, gs, P, a0, b0)
                    Bd[k] = join_weight(a, ndk[k], t_dk[d, k])
                    if burst:
                        if sl >= 0:
                            nw[sl, k] -= 1
                            sw[sl, k] -= rr
                        S_k[k] -= rr
                        Z0[k] = 1.0 / (b_psi[k] + ndk[k])
                        Z1[k] = (b_psi[k] + a_psi * S_k[k]) * Z0[k]
                    if rr:
                        n_kw[w, k] -= 1
                        n_k[k] -= 1
                        if pyp_words:
                            t_kw[w, k] -= u_w
                            if u_w:
                                _word_root_change(w, k, -1, TW_k, TwT, gs)
                        _word_topic_factors(k, pyp_words, n_k, TW_k, hyper, W, wk1, wk0)

                # 2. the topic: each node's join + open weights (pyp.py) x eq. 6/7 with burst
                cT = (b + a * Td) * root_norm(gs[0], b0)
                pb = 0.0
                if pyp_words:
                    pb = word_root_probability(TwT[w], gs[3], gs[4], W, a_beta, b_beta)
                if adding:
                    knew = k
                else:
                    total = 0.0
                    for kk in range(K):
                        F = cT * P[kk] + Bd[kk]
                        if F > 0.0:
                            if pyp_words:
                                G = pb * wk1[kk] + wk0[kk] * join_weight(a_phi, n_kw[w, kk], t_kw[w, kk])
                            else:
                                G = (n_kw[w, kk] + beta) * wk1[kk]
                            if burst:
                                if sl >= 0 and sw[sl, kk] > 0:
                                    one, zero = burst_weights(
                                        R_psi, a_psi, b_psi[kk], nw[sl, kk], sw[sl, kk], S_k[kk], ndk[kk]
                                    )
                                    G = one * G + zero
                                else:
                                    G = Z1[kk] * G
                            total += F * G
                        cum[kk] = total
                    knew = k
                    if total > 0.0:
                        knew = _draw(cum, total, uniform(rng, 0))
                    stats[S_SAMPLED] += 1

                # 3. for the chosen topic, top-down: r, then whether each customer opens a table
                F = cT * P[knew] + Bd[knew]
                if pyp_words:
                    G1 = pb * wk1[knew]
                    G = G1 + wk0[knew] * join_weight(a_phi, n_kw[w, knew], t_kw[w, knew])
                else:
                    G1 = (n_kw[w, knew] + beta) * wk1[knew]
                    G = G1
                rr = 1
                if burst and sl >= 0 and sw[sl, knew] > 0:
                    one, zero = burst_weights(
                        R_psi, a_psi, b_psi[knew], nw[sl, knew], sw[sl, knew], S_k[knew], ndk[knew]
                    )
                    rr = 1 if uniform(rng, 0) * (one * G + zero) < one * G else 0
                u_doc = 1
                if t_dk[d, knew] > 0:
                    u_doc = 1 if uniform(rng, 0) * F < cT * P[knew] else 0
                u_w = 0
                if pyp_words and rr:
                    u_w = 1
                    if t_kw[w, knew] > 0:
                        u_w = 1 if uniform(rng, 0) * G < G1 else 0

                # add the token's customers, with the tables they opened
                k = knew
                ndk[k] += 1
                t_dk[d, k] += u_doc
                if u_doc:
                    Td += 1
                    _root_change(k, 1, T_k, gs, P, a0, b0)
                Bd[k] = join_weight(a, ndk[k], t_dk[d, k])
                if ndk[k] > extent[X_N_THETA]:
                    extent[X_N_THETA] = ndk[k]
                if t_dk[d, k] > extent[X_T_THETA]:
                    extent[X_T_THETA] = t_dk[d, k]
                if burst:
                    if sl >= 0:
                        nw[sl, k] += 1
                        sw[sl, k] += rr
                        if nw[sl, k] > extent[X_N_PSI]:
                            extent[X_N_PSI] = nw[sl, k]
                        if sw[sl, k] > extent[X_T_PSI]:
                            extent[X_T_PSI] = sw[sl, k]
                    S_k[k] += rr
                    Z0[k] = 1.0 / (b_psi[k] + ndk[k])
                    Z1[k] = (b_psi[k] + a_psi * S_k[k]) * Z0[k]
                    r[i] = rr
                if rr:
                    n_kw[w, k] += 1
                    n_k[k] += 1
                    if pyp_words:
                        t_kw[w, k] += u_w
                        if u_w:
                            _word_root_change(w, k, 1, TW_k, TwT, gs)
                        if n_kw[w, k] > extent[X_N_PHI]:
                            extent[X_N_PHI] = n_kw[w, k]
                        if t_kw[w, k] > extent[X_T_PHI]:
                            extent[X_T_PHI] = t_kw[w, k]
                    _word_topic_factors(k, pyp_words, n_k, TW_k, hyper, W, wk1, wk0)
                z[i] = k
                i += 1
            if c >= 2:
                slot += 1
        # clear the document's slot counts
        if burst:
            i = tok0
            slot = 0
            for e in range(doc_ptr[d], doc_ptr[d + 1]):
                c = counts[e]
                if c >= 2:
                    for j in range(c):
                        nw[slot, z[i + j]] = 0
                        sw[slot, z[i + j]] = 0
                    slot += 1
                i += c
    if word_totals.shape[0] > 0:
        word_totals[0] = gs[3]
        word_totals[1] = gs[4]
    return STATUS_DONE, D, token_ptr[D]


# ----------------------------------------------------------------------------
# counts from the state (resume, invariant checks; n_dk is models/base.doc_topic_counts)


@numba.njit(cache=True, nogil=True)
def word_topic_counts(doc_ptr, word_ids, counts, z, r, burst, W, K):
    """n_kw as (W x K int32) over the tokens that reach the topic model (r = 1), and n_k."""
    n_kw = np.zeros((W, K), dtype=np.int32)
    n_k = np.zeros(K, dtype=np.int32)
    i = 0
    for e in range(word_ids.shape[0]):
        w = word_ids[e]
        for _j in range(counts[e]):
            if (not burst) or r[i]:
                n_kw[w, z[i]] += 1
                n_k[z[i]] += 1
            i += 1
    return n_kw, n_k
