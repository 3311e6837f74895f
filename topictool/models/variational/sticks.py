"""Stick-breaking weights and HDP hyper-parameters for the collapsed HDP models
(PCVB0, Sato, Kurihara & Nakagawa KDD 2012; PCSVB0, Bleier 2013).

Symbols. T sticks (the truncation; option K). The top-level weights are
pi = GEM(gamma) truncated at T; q(pi) is a product of Beta(u_k, v_k) sticks and
the models use its mean stick-by-stick:

    ubar_k = u_k / (u_k + v_k)  (ubar_T = 1),     pi_k = ubar_k prod_{l<k} (1 - ubar_l)          (S1)

With E_dk = E[1(n_dk >= 1)] = 1 - prod_i (1 - q(z_di = k)) (the lower bound of the
table count of topic k in document d):

    u_k = 1 + sum_d E_dk,      v_k = gamma + sum_{l>k} sum_d E_dl                               (S2)
    gamma = (T - 1) / sum_{k<T} [Psi(u_k + v_k) - Psi(v_k)]                                      (S3)
    alpha = sum_{d,k} E_dk / sum_d [Psi(n_d + alpha) - Psi(alpha)]                               (S4)

"k" in (S1)-(S3) is a stick *position*. Topics keep their array index for ever;
``order[p]`` is the topic at position p, so re-ordering the sticks by size is a
permutation of ``order`` (O(T log T)) and never moves count tables.

Representation for the stochastic updates (PCSVB0). Write s_k = u_k - 1 and
v_k = gbar + sum_{l after k} s_l. The updates
    u_k <- (1 - rho) u_k + rho (1 + D E_k)
    v_k <- (1 - rho) v_k + rho (gamma + D sum_{l>k} E_l)
are then exactly  s_k <- (1 - rho) s_k + rho D E_k  and  gbar <- (1 - rho) gbar + rho gamma
(both sides are linear), and the representation stays valid when the order
changes: s travels with its topic, and v is re-derived in the new order. The
batch update (S2) is the case rho = 1. So a model stores ``u`` (per topic),
``gbar`` and ``order``; ``stick_v`` derives v.
"""

import numba
import numpy as np

from ...kernels.jit import no_nrt
from ...kernels.special import digamma, digamma_diff

# Learned concentrations are kept inside these bounds: a topic-less corpus or a
# pathological minibatch must not drive them to 0 or infinity.
HYPER_MIN = 1e-6
HYPER_MAX = 1e6


# One step x <- numerator / s of the fixed points (S3) and (S4), kept in [HYPER_MIN, HYPER_MAX]:
# (new x, whether its relative change is <= tol); a sum s that is not positive and finite leaves x
# as it is (and ends the iteration).
@numba.njit(cache=True, nogil=True)
def _fixed_point_step(numerator, s, x, tol):
    if not (s > 0.0) or not np.isfinite(s):
        return x, True
    new = min(max(numerator / s, HYPER_MIN), HYPER_MAX)
    return new, abs(new - x) <= tol * x


# order = topics by decreasing size (stable: ties keep their current order). Insertion sort in place:
# hdp-pcsvb0 calls it after every document, when the order has changed by a swap or two, so it is
# about linear and allocates nothing (a stable argsort gives the same order).
@no_nrt
def order_by_size(size, order):
    for p in range(1, order.shape[0]):
        k = order[p]
        s = size[k]
        i = p - 1
        while i >= 0 and size[order[i]] < s:
            order[i + 1] = order[i]
            i -= 1
        order[i + 1] = k


# v_k = gbar + sum_{l after k in order} (u_l - 1)    (S2 in the (s, gbar) form), per topic.
@no_nrt
def stick_v(order, u, gbar, v):
    T = order.shape[0]
    tail = 0.0
    for p in range(T - 1, -1, -1):
        k = order[p]
        v[k] = gbar + tail
        tail += u[k] - 1.0


# pi_k = ubar_k prod_{l<k} (1 - ubar_l), ubar_T = 1    (S1), per topic; the product in log space.
@no_nrt
def stick_weights(order, u, v, pi):
    T = order.shape[0]
    log_rest = 0.0
    for p in range(T):
        k = order[p]
        if p == T - 1:
            pi[k] = np.exp(log_rest)
        else:
            ub = u[k] / (u[k] + v[k])
            pi[k] = ub * np.exp(log_rest)
            log_rest += np.log(v[k] / (u[k] + v[k]))


# gamma = (T - 1) / sum_{k<T} [Psi(u_k + v_k) - Psi(v_k)]    (S3), over the first T-1 positions.
@no_nrt
def gamma_update(order, u, v, gamma):
    T = order.shape[0]
    if T < 2:
        return gamma
    s = 0.0
    for p in range(T - 1):
        k = order[p]
        s += digamma(u[k] + v[k]) - digamma(v[k])
    return _fixed_point_step(T - 1, s, gamma, 0.0)[0]


# (S2)-(S3) solved together for gamma (batch form): v_k = gamma + tail_k with tail_k = sum_{l after k}
# (u_l - 1) fixed, and gamma = (T - 1) / sum_{k<T} [Psi(u_k + v_k) - Psi(v_k)] iterated to a fixed
# point (relative change <= tol, at most max_iter steps). One step of it is gamma_update.
@numba.njit(cache=True, nogil=True)
def gamma_solve(order, u, gamma, max_iter, tol):
    T = order.shape[0]
    if T < 2:
        return gamma
    tail = np.empty(T, dtype=np.float64)
    acc = 0.0
    for p in range(T - 1, -1, -1):
        tail[p] = acc
        acc += u[order[p]] - 1.0
    for _it in range(max_iter):
        s = 0.0
        for p in range(T - 1):
            k = order[p]
            s += digamma(u[k] + gamma + tail[p]) - digamma(gamma + tail[p])
        gamma, done = _fixed_point_step(T - 1, s, gamma, tol)
        if done:
            break
    return gamma


# alpha = E_total / sum_d [Psi(n_d + alpha) - Psi(alpha)]    (S4) iterated to a fixed point over the
# documents' lengths n_d (n_d = 0 skipped).
@numba.njit(cache=True, nogil=True)
def alpha_solve(doc_len, E_total, alpha, max_iter, tol):
    if not (E_total > 0.0):
        return alpha
    for _it in range(max_iter):
        s = 0.0
        for d in range(doc_len.shape[0]):
            if doc_len[d] > 0:
                s += digamma_diff(alpha, doc_len[d])
        alpha, done = _fixed_point_step(E_total, s, alpha, tol)
        if done:
            break
    return alpha


# Trigamma psi'(x) for x > 0: psi'(x) = psi'(x + 1) + 1/x^2 up to x >= 6, then the asymptotic series
# 1/x + 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + 1/(42x^7) - 1/(30x^9) + 5/(66x^11) - 691/(2730x^13)
# (relative error < 2e-11 there).
@numba.njit(cache=True, nogil=True)
def trigamma(x):
    result = 0.0
    while x < 6.0:
        result += 1.0 / (x * x)
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    tail = 1.0 / 42.0 - inv2 * (1.0 / 30.0 - inv2 * (5.0 / 66.0 - inv2 * (691.0 / 2730.0)))
    series = inv * (1.0 + inv * (0.5 + inv * (1.0 / 6.0 - inv2 * (1.0 / 30.0 - inv2 * tail))))
    return result + series


# Document lengths as a histogram: (distinct non-zero lengths ascending, their counts).
def length_histogram(doc_len):
    values, counts = np.unique(np.asarray(doc_len, dtype=np.int64), return_counts=True)
    keep = values > 0
    return values[keep].astype(np.int64), counts[keep].astype(np.int64)


# (S4) over a corpus given as a length histogram: the alpha with
#     alpha sum_j c_j [Psi(n_j + alpha) - Psi(alpha)] = E_total,
# i.e. alpha = E_total / sum_d [Psi(n_d + alpha) - Psi(alpha)]. The left side, f(alpha), rises
# from the number of documents (alpha -> 0) to the number of tokens (alpha -> inf), so the root is
# unique; Newton's method on log f against log alpha from the given alpha (warm start), to a
# relative change of tol (at most max_iter steps), kept in [HYPER_MIN, HYPER_MAX].
@numba.njit(cache=True, nogil=True)
def alpha_solve_lengths(len_values, len_counts, E_total, alpha, max_iter, tol):
    if not (E_total > 0.0) or len_values.shape[0] == 0:
        return alpha
    x = min(max(alpha, HYPER_MIN), HYPER_MAX)
    target = np.log(E_total)
    for _it in range(max_iter):
        s = 0.0  # S = sum_j c_j [Psi(n_j + x) - Psi(x)]
        ds = 0.0  # dS/dx
        t0 = trigamma(x)
        for j in range(len_values.shape[0]):
            s += len_counts[j] * digamma_diff(x, len_values[j])
            ds += len_counts[j] * (trigamma(x + len_values[j]) - t0)
        slope = 1.0 + x * ds / s  # d log(x S) / d log x, > 0
        step = (np.log(x * s) - target) / max(slope, 1e-3)
        step = min(max(step, -2.0), 2.0)  # at most a factor e^2 per step
        new = min(max(x * np.exp(-step), HYPER_MIN), HYPER_MAX)
        done = abs(new - x) <= tol * x
        x = new
        if done:
            break
    return x


# Denominator of (S4) for one document: Psi(n_d + alpha) - Psi(alpha).
@numba.njit(cache=True, nogil=True)
def alpha_denominator(alpha, n_d):
    return digamma_diff(alpha, n_d)
