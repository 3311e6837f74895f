"""Numba kernels of lida-gibbs: collapsed Gibbs sampling for topic models with the IBP
compound Dirichlet prior on both sides (Archambeau, Lakshminarayanan & Bouchard, "Latent
IBP compound Dirichlet Allocation", TPAMI 2015), and its special cases FTM (Williamson et
al. 2010, sparse document side), STM (Wang & Blei 2010, sparse topic side) and LDA.

Symbols (the paper's, in ASCII in the code):

    theta_bar[d, k]  θ̄_kd  document d may use topic k      ~ Bernoulli(π_k),  π_k ~ Beta(a, b)
    phi_bar[v, k]    φ̄_vk  topic k may emit word v          ~ Bernoulli(κ_v),  κ_v ~ Beta(c, e)
        a = ηδ/K, b = δ  (two-parameter IBP over documents; δ = 1 is the one-parameter IBP)
        c = γλ/V, e = λ  (two-parameter IBP over topics)
    θ_d | θ̄_d ~ Dirichlet(α) over the topics with θ̄_kd = 1
    φ_k | φ̄_k ~ Dirichlet(β) over the words with φ̄_vk = 1
    n_dk, n_vk, n_k   tokens by (document, topic), (word, topic), topic;  n_d tokens of d
    m_k = Σ_d θ̄_kd   documents that may use k;   K_d = Σ_k θ̄_kd  topics active in d
    m_v = Σ_k φ̄_vk   topics that may emit v;     V_k = Σ_v φ̄_vk  words active in k

With π, θ, κ and φ integrated out:

 (1) P(Θ̄)        = Π_k B(a + m_k, b + D − m_k) / B(a, b)
 (2) P(z | Θ̄)    = Π_d Γ(αK_d)/Γ(αK_d + n_d) · Π_{k: θ̄_kd=1} Γ(α + n_dk)/Γ(α)
 (3) P(Φ̄)        = Π_v B(c + m_v, e + K − m_v) / B(c, e)
 (4) P(w | z, Φ̄) = Π_k Γ(βV_k)/Γ(βV_k + n_k) · Π_{v: φ̄_vk=1} Γ(β + n_vk)/Γ(β)

and the Gibbs conditionals (counts without the variable being sampled):

 (5) p(z_i = k | rest) ∝ θ̄_kd φ̄_vk (α + n_dk)(β + n_vk) / (βV_k + n_k)
 (6) θ̄_kd of an unused pair (n_dk = 0), the ratio (1)(2) at θ̄_kd = 1 over θ̄_kd = 0:
         odds = (a + m_k⁻)/(b + D − 1 − m_k⁻) · Γ(α(A+1)) Γ(αA + n_d) / (Γ(α(A+1) + n_d) Γ(αA)),
         A = K_d⁻ (the other active topics of d); the second factor is the change of the
         Dirichlet normaliser Γ(Σ_active α)/Γ(Σ_active α + n_d) of (2).  A used pair stays on.
 (7) φ̄_vk of an unused pair (n_vk = 0), from (3)(4) in the same way:
         odds = (c + m_v⁻)/(e + K − 1 − m_v⁻) · Γ(β(A+1)) Γ(βA + n_k) / (Γ(β(A+1) + n_k) Γ(βA)),
         A = V_k⁻.
 (8) posterior expectations with the expected activations (used for snapshots and the
     training likelihood; ⟨x̄⟩ = 1 for a used pair, else the probability (6) or (7)):
         E[θ_dk] = (α⟨θ̄_kd⟩ + n_dk) / (α Σ_j ⟨θ̄_jd⟩ + n_d)
         E[φ_kv] = (β⟨φ̄_vk⟩ + n_vk) / (β Σ_u ⟨φ̄_uk⟩ + n_k)
         and for a new document ⟨θ̄_k⟩ = (a + m_k)/(a + b + D), so its effective prior is α⟨θ̄_k⟩.
 (9) nonparametric (K → ∞, a → 0): (6) with a = 0 for the topics other documents use; the
     number j of topics used by d alone and holding none of its tokens is redrawn from
         P(j) ∝ Poisson(j; ηδ/(δ + D − 1)) · Γ(α(K⁰ + j)) / Γ(α(K⁰ + j) + n_d),
     K⁰ the other active topics of d (the Poisson-process view of the IBP's new dishes: the
     occupied singletons stay, the empty ones are a Poisson process tilted by (2)); a new
     topic's φ̄ column is drawn from the predictive (c + m_v)/(c + e + K_obs); and (7) uses
     K_obs, the number of topics in use, in place of K.

Layout. theta_bar (D, K) and phi_bar (W, K) are uint8 (the model's own latent matrices;
all ones on a side that is not sparse). n_dk is not stored: it is rebuilt for each document
from z when the document is visited. n_vk is kept per word as a list of (topic, count) slots
sorted by topic, word v owning tw_*[tw_ptr[v] : tw_ptr[v+1]] (min(frequency, K) slots) of
which the first tw_len[v] are used. The sorted order is canonical -- rebuilding from z gives
the same arrays -- so a resumed run continues bit for bit.

Sampler for (5): SparseLDA's bucket split (Yao, Mimno & McCallum 2009) adapted to the
masks. (5) = θ̄_kd φ̄_vk [αβ + n_dk β + (α + n_dk) n_vk] / (βV_k + n_k), so

    q = Σ_{k: n_vk > 0} θ̄_kd (α + n_dk) n_vk/(βV_k + n_k)   exact: n_vk > 0 implies φ̄_vk = 1
    r = Σ_{k: n_dk > 0} n_dk β/(βV_k + n_k)                  n_dk > 0 implies θ̄_kd = 1; no φ̄ mask
    s = Σ_{k: θ̄_kd = 1} αβ/(βV_k + n_k)                      no φ̄ mask

q is summed over the word's topics for every token; r and s are kept up to date
incrementally within a document (r walked over the document's non-zero topics, s over its
active topics, rarely). A draw landing in r or s on a topic with φ̄_vk = 0 is rejected and
redrawn: exact rejection sampling, since the proposal only adds mass to masked pairs. After
MAX_REJECTIONS in a row the masked distribution is computed exactly. With no mask (ftm,
lda) nothing is ever rejected and this is SparseLDA restricted to the active topics.
"""

import math

import numba
import numpy as np

from ...kernels.jit import no_nrt
from ...kernels.partition import first_at_least
from ...kernels.partition import words_ascending as words_ascending  # re-exported: the model's check
from ...kernels.rng import randint, uniform, xoshiro_step

# Exact fallback after this many rejected draws of one token (see the module docstring).
MAX_REJECTIONS = 16
# At most this many new topics per document per sweep in the nonparametric step (9).
MAX_NEW_TOPICS = 64
# resample_phi_bar memoises the Dirichlet factor of (7) for V_k within this distance of its start.
RATIO_CACHE = 256
# ... and caps it (it is +inf when the pair must be on) so that u(1 + o) < o stays defined.
RATIO_CAP = 1e200


# ----------------------------------------------------------------------------------------
# scalar pieces of the activation conditionals (6), (7)


# The Beta-Bernoulli (π or κ collapsed) factor of (6)/(7): odds of one more unit on.
@numba.njit(cache=True, nogil=True)
def prior_odds(m_other, n_other, a, b):
    """(a + m)/(b + n − m): m of the n other units are on; Beta(a, b) prior, integrated out."""
    return (a + m_other) / (b + n_other - m_other)


# The Dirichlet-normaliser factor of (6)/(7) (and of the Poisson weights of (9)).
@numba.njit(cache=True, nogil=True)
def dirichlet_ratio(conc, active_other, n):
    """Γ(c(A+1)) Γ(cA + n) / (Γ(c(A+1) + n) Γ(cA)) for concentration c per component, A
    other active components and n tokens: 1 when n = 0, +inf when A = 0 < n (the unit must
    be on to hold the tokens)."""
    if n == 0:
        return 1.0
    if active_other <= 0:
        return np.inf
    x = conc * active_other
    if n <= 16:
        r = 1.0
        for i in range(n):
            r *= (x + i) / (x + conc + i)
        return r
    return math.exp(math.lgamma(x + conc) - math.lgamma(x + conc + n) - math.lgamma(x) + math.lgamma(x + n))


@numba.njit(cache=True, nogil=True)
def on_probability(odds, ratio):
    """P(on) from the prior odds and the likelihood ratio of (6)/(7)."""
    if ratio == np.inf:
        return 1.0
    o = odds * ratio
    return o / (1.0 + o)


# Eq. (6)/(7): the full conditional P(unit on | rest) of one unused activation.
@numba.njit(cache=True, nogil=True)
def activation_conditional(m_other, n_other, a, b, active_other, conc, n):
    """P(θ̄_kd = 1 | rest) with (m_k⁻, D − 1, ηδ/K, δ, K_d⁻, α, n_d), or
    P(φ̄_vk = 1 | rest) with (m_v⁻, K − 1, γλ/V, λ, V_k⁻, β, n_k)."""
    return on_probability(prior_odds(m_other, n_other, a, b), dirichlet_ratio(conc, active_other, n))


# ----------------------------------------------------------------------------------------
# per-word topic lists (n_vk), sorted by topic (a topic's slot found by first_at_least)


@no_nrt
def _list_add(tw_ptr, tw_topic, tw_count, tw_len, v, k):
    s = tw_ptr[v]
    e = s + tw_len[v]
    j = first_at_least(tw_topic, s, e, k)
    if j < e and tw_topic[j] == k:
        tw_count[j] += 1
        return
    for x in range(e, j, -1):
        tw_topic[x] = tw_topic[x - 1]
        tw_count[x] = tw_count[x - 1]
    tw_topic[j] = k
    tw_count[j] = 1
    tw_len[v] += 1


@no_nrt
def _list_drop(tw_topic, tw_count, tw_len, v, s, j):
    """Remove slot j (count 0) of word v, whose slots start at s."""
    e = s + tw_len[v]
    for x in range(j, e - 1):
        tw_topic[x] = tw_topic[x + 1]
        tw_count[x] = tw_count[x + 1]
    tw_topic[e - 1] = 0
    tw_count[e - 1] = 0
    tw_len[v] -= 1


# n_vk (word lists) and n_k from the assignments z.
@numba.njit(cache=True, nogil=True)
def build_counts(words, z, tw_ptr, tw_topic, tw_count, tw_len, n_k):
    tw_topic[:] = 0
    tw_count[:] = 0
    tw_len[:] = 0
    n_k[:] = 0
    for i in range(words.shape[0]):
        k = z[i]
        _list_add(tw_ptr, tw_topic, tw_count, tw_len, words[i], k)
        n_k[k] += 1


# Start: each token on a topic drawn uniformly among its document's active ones.
@numba.njit(cache=True, nogil=True)
def init_assignments(token_ptr, z, theta_bar, rng):
    K = theta_bar.shape[1]
    active = np.empty(K, dtype=np.int64)
    for d in range(token_ptr.shape[0] - 1):
        n_act = 0
        for k in range(K):
            if theta_bar[d, k]:
                active[n_act] = k
                n_act += 1
        for i in range(token_ptr[d], token_ptr[d + 1]):
            z[i] = active[randint(rng, 0, n_act)]


# The number of tokens on an inactive (document, topic) or (word, topic) pair (invariant check).
@numba.njit(cache=True, nogil=True)
def count_violations(token_ptr, words, z, theta_bar, phi_bar):
    bad = 0
    for d in range(token_ptr.shape[0] - 1):
        for i in range(token_ptr[d], token_ptr[d + 1]):
            k = z[i]
            if theta_bar[d, k] == 0 or phi_bar[words[i], k] == 0:
                bad += 1
    return bad


# ----------------------------------------------------------------------------------------
# topics


# Eq. (5), one Gibbs sweep restricted to the active pairs, over one cell: the tokens of
# documents d0..d1-1 whose words are in w0..w1-1 (the whole corpus, 0..D-1 and 0..W-1, on one
# thread; a cell of the threads' schedule otherwise). n_dk counts every token of the document,
# so the caller must own the documents' whole z while this runs. (Its parameter list only looks
# like that of evaluate/plain.py's _fold_in_and_score: a different kernel, nothing to share.)
@numba.njit(cache=True, nogil=True)
def sweep_topics(
    d0,
    d1,
    w0,
    w1,
    token_ptr,
    words,
    z,
    theta_bar,
    phi_bar,
    tw_ptr,
    tw_topic,
    tw_count,
    tw_len,
    n_k,
    V_k,
    alpha,
    beta,
    rng,
):
    """Resample z of the cell in document order (bucket sampler of the module docstring).
    Returns the number of rejected draws."""
    K = n_k.shape[0]
    n_dk = np.zeros(K, dtype=np.int64)
    inv = np.zeros(K, dtype=np.float64)  # 1/(βV_k + n_k), kept for the document's active topics
    coef = np.zeros(K, dtype=np.float64)  # (α + n_dk)/(βV_k + n_k) on active topics, else 0
    active = np.empty(K, dtype=np.int64)  # the document's active topics, ascending
    nz = np.empty(K, dtype=np.int64)  # its topics with n_dk > 0, and their positions in nz
    nz_pos = np.empty(K, dtype=np.int64)
    qcum = np.empty(K, dtype=np.float64)
    return _sweep_cell(
        d0, d1, w0, w1, token_ptr, words, z, theta_bar, phi_bar, tw_ptr, tw_topic, tw_count, tw_len, n_k, V_k, alpha,
        beta, rng, n_dk, inv, coef, active, nz, nz_pos, qcum,
    )  # fmt: skip


@no_nrt
def _sweep_cell(
    d0, d1, w0, w1, token_ptr, words, z, theta_bar, phi_bar, tw_ptr, tw_topic, tw_count, tw_len, n_k, V_k, alpha, beta,
    rng, n_dk, inv, coef, active, nz, nz_pos, qcum,
):  # fmt: skip
    """sweep_topics, given its scratch (kernels/jit.py)."""
    W = phi_bar.shape[0]
    K = n_k.shape[0]
    ab = alpha * beta
    rejections = 0
    for d in range(d0, d1):
        lo = token_ptr[d]
        hi = token_ptr[d + 1]
        if hi == lo:
            continue
        if w0 > 0:  # the cell's tokens: one run, the document's tokens being in word order
            lo = first_at_least(words, lo, hi, w0)
        if w1 < W:
            hi = first_at_least(words, lo, hi, w1)
        if hi == lo:
            continue
        for i in range(token_ptr[d], token_ptr[d + 1]):
            n_dk[z[i]] += 1
        n_act = 0
        n_nz = 0
        s_sum = 0.0  # Σ_active αβ/(βV_k + n_k):  smoothing bucket s
        r_sum = 0.0  # Σ_{n_dk>0} n_dk β/(βV_k + n_k):  document bucket r
        for k in range(K):
            if theta_bar[d, k]:
                active[n_act] = k
                n_act += 1
                den = beta * V_k[k] + n_k[k]
                x = 1.0 / den if den > 0.0 else 0.0
                inv[k] = x
                coef[k] = (alpha + n_dk[k]) * x
                s_sum += ab * x
                if n_dk[k] > 0:
                    nz[n_nz] = k
                    nz_pos[k] = n_nz
                    n_nz += 1
                    r_sum += beta * n_dk[k] * x
        for i in range(lo, hi):
            v = words[i]
            k = z[i]
            # take token i out of topic k
            s_sum -= ab * inv[k]
            r_sum -= beta * n_dk[k] * inv[k]
            n_dk[k] -= 1
            n_k[k] -= 1
            s = tw_ptr[v]
            L = tw_len[v]
            j_old = first_at_least(tw_topic, s, s + L, k)
            tw_count[j_old] -= 1  # a slot left at 0 stays until the new topic is placed
            k_old = k
            den = beta * V_k[k] + n_k[k]
            x = 1.0 / den if den > 0.0 else 0.0
            inv[k] = x
            coef[k] = (alpha + n_dk[k]) * x
            s_sum += ab * x
            r_sum += beta * n_dk[k] * x
            if n_dk[k] == 0:  # swap-remove k from the nonzero list
                n_nz -= 1
                last = nz[n_nz]
                nz[nz_pos[k]] = last
                nz_pos[last] = nz_pos[k]
            # q bucket: the word's topics (coef is 0 on the document's inactive topics)
            q = 0.0
            for j in range(L):
                q += coef[tw_topic[s + j]] * tw_count[s + j]
                qcum[j] = q
            if r_sum < 0.0:
                r_sum = 0.0
            tries = 0
            while True:
                u = uniform(rng, 0) * (q + r_sum + s_sum)
                if u < q:
                    j = 0
                    while j < L - 1 and qcum[j] <= u:
                        j += 1
                    k = tw_topic[s + j]
                    break
                u -= q
                if u < r_sum:
                    acc = 0.0
                    k = nz[n_nz - 1] if n_nz > 0 else active[n_act - 1]
                    for a in range(n_nz):
                        t = nz[a]
                        acc += beta * n_dk[t] * inv[t]
                        if acc > u:
                            k = t
                            break
                else:
                    u -= r_sum
                    acc = 0.0
                    k = active[n_act - 1]
                    for a in range(n_act):
                        t = active[a]
                        acc += ab * inv[t]
                        if acc > u:
                            k = t
                            break
                if phi_bar[v, k]:
                    break
                rejections += 1
                tries += 1
                if tries >= MAX_REJECTIONS:
                    k = _exact_draw(v, phi_bar, active, n_act, coef, beta, tw_topic, s, L, qcum, q, rng)
                    break
            # put it back on topic k
            z[i] = k
            s_sum -= ab * inv[k]
            r_sum -= beta * n_dk[k] * inv[k]
            if n_dk[k] == 0:
                nz[n_nz] = k
                nz_pos[k] = n_nz
                n_nz += 1
            n_dk[k] += 1
            n_k[k] += 1
            if k == k_old:
                tw_count[j_old] += 1
            else:
                if tw_count[j_old] == 0:
                    _list_drop(tw_topic, tw_count, tw_len, v, s, j_old)
                _list_add(tw_ptr, tw_topic, tw_count, tw_len, v, k)
            x = 1.0 / (beta * V_k[k] + n_k[k])
            inv[k] = x
            coef[k] = (alpha + n_dk[k]) * x
            s_sum += ab * x
            r_sum += beta * n_dk[k] * x
        for a in range(n_act):
            t = active[a]
            n_dk[t] = 0
            coef[t] = 0.0
    return rejections


# Eq. (5) for one token, the φ̄ mask applied exactly (after too many rejections).
@no_nrt
def _exact_draw(v, phi_bar, active, n_act, coef, beta, tw_topic, s, L, qcum, q, rng):
    """Eq. (5) without rejection: the smoothing mass β coef_k = β(α + n_dk)/(βV_k + n_k)
    summed under the φ̄_vk mask."""
    r = 0.0
    last = -1
    for a in range(n_act):
        t = active[a]
        if phi_bar[v, t]:
            r += beta * coef[t]
            last = t
    u = uniform(rng, 0) * (q + r)
    if u < q or last < 0:
        j = 0
        while j < L - 1 and qcum[j] <= u:
            j += 1
        return tw_topic[s + j]
    u -= q
    acc = 0.0
    for a in range(n_act):
        t = active[a]
        if phi_bar[v, t]:
            acc += beta * coef[t]
            if acc > u:
                return t
    return last


# ----------------------------------------------------------------------------------------
# document activations θ̄


# n_dk of document d (added into n_dk, zero on entry) and K_d, its active topics.
@no_nrt
def _doc_counts(token_ptr, z, theta_bar, d, n_dk):
    for i in range(token_ptr[d], token_ptr[d + 1]):
        n_dk[z[i]] += 1
    K_d = 0
    for k in range(theta_bar.shape[1]):
        K_d += theta_bar[d, k]
    return K_d


# n_dk back to zero after document d.
@no_nrt
def _doc_clear(token_ptr, z, d, n_dk):
    for i in range(token_ptr[d], token_ptr[d + 1]):
        n_dk[z[i]] = 0


# Eq. (6): P(θ̄_kd = 1 | rest) of an unused pair currently ``cur``, m_other = m_k⁻; ratio_on and
# ratio_off are dirichlet_ratio(α, A, n_d) for A = K_d − 1 (the pair is on) and A = K_d (off).
@numba.njit(cache=True, nogil=True)
def _theta_bar_conditional(cur, m_other, D, a, b, ratio_on, ratio_off):
    return on_probability(prior_odds(m_other, D - 1, a, b), ratio_on if cur else ratio_off)


# Eq. (6) over document d: every unused pair (n_dk = 0) redrawn, except, when nonparametric,
# the topics no other document uses (step (9) handles those). Returns the new K_d.
@no_nrt
def _resample_doc_theta_bar(d, theta_bar, m_k, n_dk, K_d, n_d, alpha, a, b, nonparametric, rng):
    D = theta_bar.shape[0]
    ratio_on = dirichlet_ratio(alpha, K_d - 1, n_d)
    ratio_off = dirichlet_ratio(alpha, K_d, n_d)
    for k in range(theta_bar.shape[1]):
        cur = theta_bar[d, k]
        m_other = m_k[k] - cur
        if n_dk[k] > 0 or (nonparametric and m_other <= 0):
            continue
        p = _theta_bar_conditional(cur, m_other, D, a, b, ratio_on, ratio_off)
        new = 1 if uniform(rng, 0) < p else 0
        if new != cur:
            theta_bar[d, k] = new
            m_k[k] += new - cur
            K_d += new - cur
            ratio_on = dirichlet_ratio(alpha, K_d - 1, n_d)
            ratio_off = dirichlet_ratio(alpha, K_d, n_d)
    return K_d


# Eq. (6): resample θ̄_kd of every unused (document, topic) pair (finite K).
@numba.njit(cache=True, nogil=True)
def resample_theta_bar(token_ptr, z, theta_bar, m_k, alpha, a, b, rng):
    resample_theta_bar_docs(0, token_ptr.shape[0] - 1, token_ptr, z, theta_bar, m_k, alpha, a, b, rng)


# Eq. (6) over documents d0..d1-1 (a thread's block; D is still theta_bar's row count).
@numba.njit(cache=True, nogil=True)
def resample_theta_bar_docs(d0, d1, token_ptr, z, theta_bar, m_k, alpha, a, b, rng):
    n_dk = np.zeros(theta_bar.shape[1], dtype=np.int64)
    for d in range(d0, d1):
        K_d = _doc_counts(token_ptr, z, theta_bar, d, n_dk)
        n_d = token_ptr[d + 1] - token_ptr[d]
        _resample_doc_theta_bar(d, theta_bar, m_k, n_dk, K_d, n_d, alpha, a, b, False, rng)
        _doc_clear(token_ptr, z, d, n_dk)


# Eq. (9): θ̄ of the topics in use (a = 0), then the document's empty singleton topics redrawn.
@numba.njit(cache=True, nogil=True)
def resample_theta_bar_ibp(token_ptr, z, theta_bar, m_k, alpha, b, new_rate, phi_bar, m_v, V_k, c, e, sparse_phi, rng):
    """Returns (topics created, topics removed, denied): denied sums over documents the
    probability, roughly, that one more new topic than the K slots allow was wanted."""
    D = token_ptr.shape[0] - 1
    K = theta_bar.shape[1]
    W = phi_bar.shape[0]
    n_dk = np.zeros(K, dtype=np.int64)
    weights = np.empty(MAX_NEW_TOPICS + 1, dtype=np.float64)
    K_obs = 0
    for k in range(K):
        if m_k[k] > 0:
            K_obs += 1
    created = 0
    removed = 0
    denied = 0.0
    for d in range(D):
        K_d = _doc_counts(token_ptr, z, theta_bar, d, n_dk)
        n_d = token_ptr[d + 1] - token_ptr[d]
        # topics used by other documents: (6) with a = 0
        K_d = _resample_doc_theta_bar(d, theta_bar, m_k, n_dk, K_d, n_d, alpha, 0.0, b, True, rng)
        # the empty singletons of d are removed (their slots freed) ...
        for k in range(K):
            if theta_bar[d, k] and m_k[k] == 1 and n_dk[k] == 0:
                theta_bar[d, k] = 0
                m_k[k] = 0
                K_d -= 1
                K_obs -= 1
                removed += 1
                if sparse_phi:
                    for v in range(W):
                        if phi_bar[v, k]:
                            phi_bar[v, k] = 0
                            m_v[v] -= 1
                    V_k[k] = 0
        # ... and their number j redrawn: P(j) ∝ Poisson(j; new_rate) Γ(α(K⁰+j))/Γ(α(K⁰+j)+n_d)
        free = K - K_obs
        j_max = min(free, MAX_NEW_TOPICS)
        weights[0] = 1.0
        total = 1.0
        j_top = 0
        for j in range(1, j_max + 1):
            w = weights[j - 1] * new_rate / j * dirichlet_ratio(alpha, K_d + j - 1, n_d)
            weights[j] = w
            total += w
            j_top = j
            if w < 1e-17 * total:
                break
        if j_top == free:  # the capacity K stopped the series: add up the probability denied
            w = weights[j_top] * new_rate / (j_top + 1) * dirichlet_ratio(alpha, K_d + j_top, n_d)
            denied += w / (total + w)
        u = uniform(rng, 0) * total
        j_new = 0
        acc = weights[0]
        while acc <= u and j_new < j_top:
            j_new += 1
            acc += weights[j_new]
        k = 0
        for _ in range(j_new):
            while m_k[k] > 0:
                k += 1
            theta_bar[d, k] = 1
            m_k[k] = 1
            if sparse_phi:  # the new topic's words from the predictive of κ given the topics in use
                cnt = 0
                for v in range(W):
                    if uniform(rng, 0) * (c + e + K_obs) < c + m_v[v]:
                        phi_bar[v, k] = 1
                        m_v[v] += 1
                        cnt += 1
                V_k[k] = cnt
            K_obs += 1
            K_d += 1
            created += 1
        _doc_clear(token_ptr, z, d, n_dk)
    return created, removed, denied


# The prior odds of (7) for word v's pairs that are on and off.
@numba.njit(cache=True, nogil=True)
def _word_odds(mv, n_other, c, e):
    """prior_odds for a pair of word v that is on (m_v⁻ = m_v − 1) and one that is off
    (m_v⁻ = m_v); an impossible case (no pair on, or none off) gets 0."""
    on = prior_odds(mv - 1, n_other, c, e) if 1 <= mv <= n_other + 1 else 0.0
    off = prior_odds(mv, n_other, c, e) if mv <= n_other else 0.0
    return on, off


# ----------------------------------------------------------------------------------------
# topic activations φ̄


# Eq. (7): resample φ̄_vk of every unused (word, topic) pair.
@numba.njit(cache=True, nogil=True)
def resample_phi_bar(tw_ptr, tw_topic, tw_len, phi_bar, m_v, V_k, n_k, in_use, beta, c, e, n_topics, rng):
    """n_topics is K (finite) or K_obs (nonparametric); only topics with in_use set are visited.

    The Dirichlet factor of (7) depends on (V_k⁻, n_k) only; n_k is fixed during this step and
    V_k moves by ±1 per flip, so its values are cached per topic for A within RATIO_CACHE of
    the starting V_k (lgamma is the cost here otherwise)."""
    W = phi_bar.shape[0]
    K = phi_bar.shape[1]
    width = 2 * RATIO_CACHE + 1
    cache = np.full((K, width), np.nan)
    base = np.empty(K, dtype=np.int64)
    ratio_on = np.zeros(K, dtype=np.float64)
    ratio_off = np.zeros(K, dtype=np.float64)
    for k in range(K):
        if in_use[k]:
            base[k] = V_k[k] - RATIO_CACHE
            ratio_on[k] = _cached_ratio(cache, base, k, V_k[k] - 1, beta, np.int64(n_k[k]))
            ratio_off[k] = _cached_ratio(cache, base, k, V_k[k], beta, np.int64(n_k[k]))
    visit = in_use.copy()  # topics in use, minus (temporarily) those word v is used in
    n_other = n_topics - 1
    table_on = np.empty(K + 2, dtype=np.float64)  # the prior odds of (7) by m_v, for a pair on / off
    table_off = np.empty(K + 2, dtype=np.float64)
    for mv in range(K + 2):
        table_on[mv], table_off[mv] = _word_odds(mv, n_other, c, e)
    # the generator's state in locals for the hot loop (the same stream as rng.uniform)
    s0, s1, s2, s3 = rng[0, 0], rng[0, 1], rng[0, 2], rng[0, 3]
    for v in range(W):
        s = tw_ptr[v]
        for j in range(tw_len[v]):
            visit[tw_topic[s + j]] = 0
        mv = m_v[v]
        for k in range(K):
            if not visit[k]:
                continue
            cur = phi_bar[v, k]
            # on with probability o/(1 + o), o = odds x ratio (on_probability without the division)
            if cur:
                o = table_on[mv] * ratio_on[k]
            else:
                o = table_off[mv] * ratio_off[k]
            x, s0, s1, s2, s3 = xoshiro_step(s0, s1, s2, s3)
            u = np.float64(x >> np.uint64(11)) * _U53
            if (u * (1.0 + o) < o) != cur:
                if cur:
                    phi_bar[v, k] = 0
                    mv -= 1
                    V_k[k] -= 1
                    ratio_off[k] = ratio_on[k]
                    ratio_on[k] = _cached_ratio(cache, base, k, V_k[k] - 1, beta, np.int64(n_k[k]))
                else:
                    phi_bar[v, k] = 1
                    mv += 1
                    V_k[k] += 1
                    ratio_on[k] = ratio_off[k]
                    ratio_off[k] = _cached_ratio(cache, base, k, V_k[k], beta, np.int64(n_k[k]))
        m_v[v] = mv
        for j in range(tw_len[v]):
            visit[tw_topic[s + j]] = in_use[tw_topic[s + j]]
    rng[0, 0], rng[0, 1], rng[0, 2], rng[0, 3] = s0, s1, s2, s3


_U53 = 1.0 / 9007199254740992.0  # 2**-53, as in kernels/rng.py


@no_nrt
def _cached_ratio(cache, base, k, A, conc, n):
    """dirichlet_ratio(conc, A, n) of topic k, memoised in cache[k, A - base[k]]."""
    idx = A - base[k]
    if idx < 0 or idx >= cache.shape[1]:
        r = dirichlet_ratio(conc, A, n)
    else:
        r = cache[k, idx]
        if np.isnan(r):
            r = dirichlet_ratio(conc, A, n)
            cache[k, idx] = r
    return min(r, RATIO_CAP)


# ----------------------------------------------------------------------------------------
# Eq. (8): posterior expectations with the expected activations.


# ⟨θ̄_kd⟩ for (8): 1 on a used pair, else the conditional (6) (a = 0, and 0 for topics no
# other document uses, when nonparametric).
@numba.njit(cache=True, nogil=True)
def theta_bar_expectation(token_ptr, z, theta_bar, m_k, alpha, a, b, nonparametric):
    D = token_ptr.shape[0] - 1
    K = theta_bar.shape[1]
    out = np.zeros((D, K), dtype=np.float64)
    n_dk = np.zeros(K, dtype=np.int64)
    for d in range(D):
        K_d = _doc_counts(token_ptr, z, theta_bar, d, n_dk)
        n_d = token_ptr[d + 1] - token_ptr[d]
        ratio_on = dirichlet_ratio(alpha, K_d - 1, n_d)
        ratio_off = dirichlet_ratio(alpha, K_d, n_d)
        for k in range(K):
            if n_dk[k] > 0:
                out[d, k] = 1.0
                continue
            cur = theta_bar[d, k]
            m_other = m_k[k] - cur
            if nonparametric and m_other <= 0:
                continue
            out[d, k] = _theta_bar_conditional(cur, m_other, D, a, b, ratio_on, ratio_off)
        _doc_clear(token_ptr, z, d, n_dk)
    return out


# ⟨φ̄_vk⟩ for (8): 1 on a used pair, else the conditional (7); 0 for topics not in use.
@numba.njit(cache=True, nogil=True)
def phi_bar_expectation(tw_ptr, tw_topic, tw_len, phi_bar, m_v, V_k, n_k, in_use, beta, c, e, n_topics):
    W = phi_bar.shape[0]
    K = phi_bar.shape[1]
    out = np.zeros((W, K), dtype=np.float64)
    ratio_on = np.zeros(K, dtype=np.float64)
    ratio_off = np.zeros(K, dtype=np.float64)
    for k in range(K):
        ratio_on[k] = dirichlet_ratio(beta, V_k[k] - 1, np.int64(n_k[k]))
        ratio_off[k] = dirichlet_ratio(beta, V_k[k], np.int64(n_k[k]))
    n_other = n_topics - 1
    for v in range(W):
        odds_on, odds_off = _word_odds(m_v[v], n_other, c, e)
        for k in range(K):
            if not in_use[k]:
                continue
            if phi_bar[v, k]:
                out[v, k] = on_probability(odds_on, ratio_on[k])
            else:
                out[v, k] = on_probability(odds_off, ratio_off[k])
        s = tw_ptr[v]
        for j in range(tw_len[v]):
            out[v, tw_topic[s + j]] = 1.0
    return out


# Dense n_vk as (W, K) from the word lists.
@numba.njit(cache=True, nogil=True)
def dense_word_topic(tw_ptr, tw_topic, tw_count, tw_len, K):
    W = tw_len.shape[0]
    out = np.zeros((W, K), dtype=np.int64)
    for v in range(W):
        s = tw_ptr[v]
        for j in range(tw_len[v]):
            out[v, tw_topic[s + j]] = tw_count[s + j]
    return out


# Σ over tokens of log Σ_k E[θ_dk] E[φ_kv], both from (8).
@numba.njit(cache=True, nogil=True)
def expected_log_likelihood(doc_ptr, word_ids, counts, theta, phi_wk):
    D = doc_ptr.shape[0] - 1
    K = theta.shape[1]
    total = 0.0
    for d in range(D):
        for j in range(doc_ptr[d], doc_ptr[d + 1]):
            v = word_ids[j]
            p = 0.0
            for k in range(K):
                p += theta[d, k] * phi_wk[v, k]
            total += counts[j] * math.log(p)
    return total


# ----------------------------------------------------------------------------------------
# threads (LidaGibbs._step_threads): (5) by sweep_topics on the cells of the vocabulary-
# partitioned schedule (Yan, Xu & Qi 2009; kernels/partition.py), (6) by resample_theta_bar_docs
# on blocks of documents and (7) on ranges of words, each thread against its own copy of the
# totals shared across its part (n_k, m_k, V_k), the copies' changes summed after.


# (7) over one range of words, thread t, against its own copy of V_k (a word's φ̄ row and m_v
# are its range's alone). block_* are tw_ptr[v0 : v1 + 1], tw_len[v0:v1], phi_bar[v0:v1] and
# m_v[v0:v1], sliced by the caller.
@numba.njit(cache=True, nogil=True)
def phi_bar_range(
    block_tw_ptr, tw_topic, block_tw_len, block_phi, block_m_v, V_k, loc_V_k, n_k, in_use, beta, c, e, n_topics, rng
):
    loc_V_k[:] = V_k
    resample_phi_bar(
        block_tw_ptr, tw_topic, block_tw_len, block_phi, block_m_v, loc_V_k, n_k, in_use, beta, c, e, n_topics, rng
    )
