"""Direct-assignment variational HDP topic models (Bryant & Sudderth, NIPS 2012):

    hdp-online      online (stochastic) variational inference, fixed truncation K
    hdp-online-sm   the same with split and merge moves: K grows and shrinks (oHDP-SM)
    hdp-batch       batch coordinate ascent, fixed truncation K

Model (HDP-LDA, direct assignment): beta ~ GEM(gamma); pi_j ~ DP(alpha beta);
phi_k ~ Dir(eta); z_jn ~ pi_j; w_jn ~ phi_{z_jn}.

Names: the formulas and the functions of this module use the paper's letters. Its eta, the
topic-word prior, is the option ``beta`` (the tool's name for it in every model; ``eta`` and
``optimize_eta`` are accepted as aliases) and the models' attribute ``beta``; its beta*, the
global topic weights, is the attribute ``beta_star``.

Variational family (section 2): q(beta) a point mass at beta* ((K+1)-vector: K topics
and the remaining mass), q(phi_k) = Dir(lambda_k), q(pi_j) = Dir(theta_j) over the
K topics and the remainder, q(z_jn) = Cat(varphi_jn) over the K topics only
("nested truncation": only q(z) is truncated).

Updates (equation labels as in docs/models/online_hdp.md):
    (L1) varphi_jwk ∝ exp{E[log phi_kw] + E[log pi_jk]}
    (L2) theta_jk = alpha beta*_k + sum_w n_jw varphi_jwk          (kernels.e_step)
    (G1) batch:  lambda_kw = eta + sum_j n_jw varphi_jwk
    (G2) online: lambda-hat_kw = eta + D/|S| sum_{j in S} n_jw varphi_jwk,
                 lambda <- (1 - rho_t) lambda + rho_t lambda-hat, rho_t = (tau + t)^-kappa,
                 done on the pseudo-counts lambda - eta (identical while eta is fixed)
    (G3) beta*:  maximiser of log p(v* | gamma) + sum_j [E log p(pi_j | alpha beta*) - E log q(pi_j)]
                 by projected L-BFGS over the stick logits (quasi_newton.py: no BLAS, so the
                 same result on every CPU) -- jointly with theta (``beta_objective``,
                 default) or with theta fixed as in the paper's supplement
                 (``beta_objective_fixed_theta``, option global_update="fixed-theta");
                 online: beta-hat from the minibatch (document terms scaled by D/|S|),
                 beta* <- (1 - rho_t) beta* + rho_t beta-hat
    (H1) alpha:  Newton steps in log alpha on the same document terms (jointly with theta,
                 ``newton_alpha_collapsed``, or theta fixed, ``newton_alpha``)
    (H2) eta:    Newton steps in log eta on sum_k E[log p(phi_k | eta)]
    (H3) gamma:  closed form, the maximiser of log p(v* | gamma): gamma = K / -log beta*_{K+1}
    Online, the hyperparameters take the maximiser on the current minibatch (alpha) or on the
    current global parameters (eta, gamma) after ``hyper_burn_in`` steps; batch: every
    iteration after ``hyper_burn_in``, each guarded so that the bound never decreases.

The evidence lower bound (eq. 2 and the supplement) is split into per-topic and
per-document terms in kernels.py (module docstring).

One step() is one minibatch of ``minibatch`` documents for the online models (step_unit
"minibatch"; passes visit the documents in a fresh random order each time) and one full
coordinate-ascent iteration (local step on every document, then lambda, beta*,
hyperparameters) for hdp-batch (step_unit "pass"). Topics are kept in decreasing order of
beta* (for reading; the bound does not depend on the order).

Metrics of step(): documents_seen, tokens (online: the minibatch's), topics, elbo (online:
the minibatch bound L_S = log p(beta*) + sum_k T_k + D/|S| sum_{j in S} l_j of the model as it
met the minibatch, after its local step; batch: the full bound after the iteration),
elbo_per_token, rho (online), alpha, gamma, beta (the prior eta), beta_remainder,
documents_per_s, and for hdp-online-sm the tried and accepted splits and merges
(split_merge.run_moves).
``eval_method = "vb"``: the snapshot's alpha is alpha beta*_k for the K topics, phi is
E[phi_k] = lambda_k / sum_w lambda_kw.

State (base.Model.state): lam, beta_star, alpha, gamma, beta; online also the pass's document
order and cursor; hdp-batch theta (D x (K+1)). hdp-online-sm's lam and beta_star change shape
with K. documents_seen follows from the iteration; the online minibatch bound of the last step
is not kept (log_likelihood() is NaN after a resume until the next step). Version 1 states
(keys beta for beta*, hyper) are read through upgrade_state().
"""

import math
import time

import numpy as np
from scipy.special import digamma, gammaln, polygamma

from ...errors import InputError
from ...kernels.rng import shuffle, uniform
from ...snapshot import Snapshot
from ...threads import handed_out, padded, split
from ..base import KAPPA, NONNEGATIVE, POSITIVE, POSITIVE_INT, PRIOR, Model, Range
from . import kernels as kern
from .quasi_newton import maximize_box
from .split_merge import (
    CHUNKS_PER_THREAD,
    Minibatch,
    MoveState,
    by_ranges,
    combine_on,
    doc_blocks,
    on_threads,
    run_moves,
)

# Shape of the Gamma(shape, 1/shape) noise of the initial lambda (Hoffman et al. 2010 use 100).
INIT_SHAPE = 100.0
# beta* entries are kept in [BETA_FLOOR, 1]: stick logits are bounded so that log beta* stays finite.
STICK_LOGIT_BOUND = 30.0
BETA_FLOOR = 1e-13
HYPER_BOUNDS = dict(alpha=(1e-4, 1e4), gamma=(1e-3, 1e4), eta=(1e-6, 1e2))
NEWTON_STEPS = 50
# the local step on T threads without varphi kept: each thread every T-th of INTERLEAVE * T chunks
INTERLEAVE = 16


# ---------------------------------------------------------------------------------------------
# the global objective in beta* (supplement) and the hyperparameter updates


def log_stick_prior_and_grad(beta, gamma):
    """E_q[log p(beta | gamma)] for q(beta) a point mass, taken as the log density of its sticks
    v*_k = beta*_k / sum_{l>=k} beta*_l under v_k ~ Beta(1, gamma):
        K log gamma + (gamma - 1) log beta*_{K+1},
    and its gradient treating the K+1 entries as free.

    (The density of beta* itself adds the Jacobian -sum_k log r_k, r_k = sum_{l>=k} beta*_l; that
    term grows without bound as trailing topics empty, so it rewards keeping empty topics -- about
    30 nats each at beta* = 1e-13 -- and no move could ever remove one; it also depends on the
    order of the topics. For a point mass either choice is a convention; the sticks are the
    GEM's own parametrisation.)"""
    K = len(beta) - 1
    f = K * math.log(gamma) + (gamma - 1.0) * math.log(beta[K])
    g = np.zeros(K + 1)
    g[K] = (gamma - 1.0) / beta[K]
    return f, g


# (G3) the beta* objective, jointly with theta
def beta_objective(beta, n, weight, alpha, gamma, workers=None):
    """The bound as a function of beta*, maximised jointly with theta (theta_jk = alpha beta*_k + n_jk):
        log p(beta* | gamma) + weight sum_j sum_{k<=K} [lgamma(alpha beta*_k + n_jk) - lgamma(alpha beta*_k)]
    (plus terms free of beta*). n (S, K): the documents' expected topic counts; weight: D/|S| online.
    Returns (f, g), g_k = df/dbeta*_k over the K+1 entries.

    The sums over documents are numba's (kern.beta_objective_docs: libm's lgamma); ``workers``
    with T > 1 threads: each thread a block of documents, the blocks' sums added in thread order
    (the same bits for a given T, hdp-batch's way; the online models' beta-hat runs on one thread
    beside the topic terms, model._topic_terms_beside)."""
    S, K = n.shape
    f, g = log_stick_prior_and_grad(beta, gamma)
    ab = np.ascontiguousarray(alpha * beta[:K])
    T = 1 if workers is None else workers.threads
    fs, gs = np.zeros(T), padded(T, K, np.float64)  # rows written at every document: a cache line apart

    def part(t, T):
        fs[t] = kern.beta_objective_docs(ab, n, S * t // T, S * (t + 1) // T, gs[t])

    on_threads(workers, part)
    total = 0.0
    for t in range(T):
        total += fs[t]
    f += weight * (total - S * gammaln(ab).sum())
    g[:K] += weight * alpha * (gs.sum(axis=0) - S * digamma(ab))
    return f, g


# (G3) the beta* objective of the supplement, theta fixed
def beta_objective_fixed_theta(beta, elog_pi_sums, docs, alpha, gamma):
    """The paper's objective (supplement): the bound as a function of beta* with theta held fixed,
        log p(beta* | gamma) + docs [lgamma(alpha) - sum_k lgamma(alpha beta*_k)]
        + alpha sum_k beta*_k sum_j E[log pi_jk]     (k over the K topics and the remainder).
    ``docs`` is the (scaled) number of documents, ``elog_pi_sums`` the (scaled) sums over them.
    Returns (f, g). (option global_update="fixed-theta"; see ``optimize_beta``)"""
    f, g = log_stick_prior_and_grad(beta, gamma)
    ab = alpha * beta
    f += docs * (gammaln(alpha) - gammaln(ab).sum()) + alpha * np.sum(beta * elog_pi_sums)
    g += alpha * (elog_pi_sums - docs * digamma(ab))
    return f, g


def sticks_to_beta(u):
    """beta*_k = v_k prod_{l<k} (1 - v_l), beta*_{K+1} = prod_l (1 - v_l), v = sigmoid(u)."""
    return sticks_and_weights(u)[0]


def sticks_and_weights(u):
    """(beta*, v): beta* as ``sticks_to_beta`` and the sticks v = sigmoid(u) (kernels.sticks_to_beta)."""
    u = np.ascontiguousarray(u, dtype=np.float64)
    beta, v = np.empty(len(u) + 1), np.empty(len(u))
    kern.sticks_to_beta(u, beta, v)
    return beta, v


def beta_to_sticks(beta):
    """The stick logits of beta*, clipped to [-STICK_LOGIT_BOUND, STICK_LOGIT_BOUND]."""
    u = np.empty(len(beta) - 1)
    kern.beta_to_sticks(np.ascontiguousarray(beta, dtype=np.float64), STICK_LOGIT_BOUND, u)
    return u


def optimize_beta(beta0, objective):
    """beta-hat: the maximiser of ``objective(beta) -> (f, g)`` by L-BFGS-B over the stick logits
    u (beta*_k = v_k prod_{l<k} (1 - v_l), v = sigmoid(u)), started at beta0; returns beta0
    itself unless the result has a higher objective.

    ``beta_objective`` (the default, beta_update="joint") maximises the bound jointly over beta*
    and theta. The paper's objective holds theta fixed (``beta_objective_fixed_theta``); since
    theta_jk contains alpha beta*_k from the previous local step, its maximiser stays close to
    the old beta*: on bars, a topic holding 42% of a minibatch's tokens kept beta* = 0.88 and
    one holding 3% kept 4e-4, minibatch after minibatch."""

    def pos(u):
        beta, v = sticks_and_weights(u)
        beta = np.maximum(beta, 1e-300)
        f, g = objective(beta)
        # df/du_m = g_m beta_m (1 - v_m) - v_m sum_{k>m} g_k beta_k
        gb = g * beta
        after = np.cumsum(gb[::-1])[::-1]
        du = gb[:-1] * (1.0 - v) - v * after[1:]
        return f, du

    f0 = objective(beta0)[0]
    u, _, _ = maximize_box(
        pos, beta_to_sticks(beta0), -STICK_LOGIT_BOUND, STICK_LOGIT_BOUND, maxiter=200, ftol=1e-10, gtol=1e-6
    )
    beta = np.maximum(sticks_to_beta(u), 1e-300)
    if not (np.all(np.isfinite(beta)) and objective(beta)[0] >= f0):
        return beta0.copy()
    return beta


def _newton_log(f, d1, d2, x, lo, hi):
    """Maximise f over x in [lo, hi] by Newton steps on y = log x with step halving;
    f never decreases. d1, d2: first and second derivatives in x."""
    x = float(min(max(x, lo), hi))
    fx = f(x)
    for _ in range(NEWTON_STEPS):
        g1 = x * d1(x)  # df/dy
        g2 = x * d1(x) + x * x * d2(x)  # d2f/dy2
        step = -g1 / g2 if g2 < 0 else np.sign(g1)
        step = float(np.clip(step, -2.0, 2.0))
        improved = False
        for _ in range(30):
            y = min(max(math.log(x) + step, math.log(lo)), math.log(hi))
            cand = math.exp(y)
            fc = f(cand)
            if fc >= fx:
                improved = cand != x
                x, fx = cand, fc
                break
            step *= 0.5
        if not improved or abs(step) < 1e-10:
            break
    return x


# (H1) alpha, theta fixed
def newton_alpha(alpha, beta, elog_pi_sums, docs):
    """alpha maximising docs [lgamma(alpha) - sum_k lgamma(alpha beta*_k)] + alpha sum_k beta*_k sum_j E[log pi_jk]."""
    b = beta
    s = float(np.sum(b * elog_pi_sums))

    def f(a):
        return docs * (gammaln(a) - gammaln(a * b).sum()) + a * s

    def d1(a):
        return docs * (digamma(a) - np.sum(b * digamma(a * b))) + s

    def d2(a):
        return docs * (polygamma(1, a) - np.sum(b * b * polygamma(1, a * b)))

    return _newton_log(f, d1, d2, alpha, *HYPER_BOUNDS["alpha"])


# (H1) alpha, jointly with theta
def newton_alpha_collapsed(alpha, beta, n, lengths, weight=1.0, workers=None):
    """alpha maximising, jointly with theta = alpha beta* + n (its optimum given varphi), the
    document part of the bound: weight sum_j [lgamma(alpha) - lgamma(alpha + N_j)
    + sum_k (lgamma(alpha beta*_k + n_jk) - lgamma(alpha beta*_k))], n_jk = sum_w n_jw varphi_jwk.

    With theta fixed instead (``newton_alpha``) the update barely moves alpha from where
    the local step that produced theta put it; optimising the pair is still an exact
    coordinate step of the bound (varphi fixed), and learns alpha from the soft counts.

    The sums over documents are numba's (kern.alpha_objective_docs: libm's lgamma, an own
    trigamma); ``workers`` with T > 1 threads: each thread a block of documents, the blocks'
    sums added in thread order (the same bits for a given T)."""
    b = np.ascontiguousarray(beta[: n.shape[1]])
    n = np.ascontiguousarray(n)
    lengths = np.ascontiguousarray(lengths, dtype=np.float64)
    S = n.shape[0]
    T = 1 if workers is None else workers.threads

    def docs(a, order):
        parts = np.zeros(T)

        def part(t, T):
            parts[t] = kern.alpha_objective_docs(a, b, n, lengths, order, S * t // T, S * (t + 1) // T)

        on_threads(workers, part)
        total = 0.0
        for t in range(T):
            total += parts[t]
        return total

    def f(a):
        return weight * (S * (gammaln(a) - gammaln(a * b).sum()) + docs(a, 0))

    def d1(a):
        return weight * (S * (digamma(a) - np.sum(b * digamma(a * b))) + docs(a, 1))

    def d2(a):
        return weight * (S * (polygamma(1, a) - np.sum(b * b * polygamma(1, a * b))) + docs(a, 2))

    return _newton_log(f, d1, d2, alpha, *HYPER_BOUNDS["alpha"])


# (H2) eta
def newton_eta(eta, elog_phi_sum, K, W):
    """eta maximising sum_k [lgamma(W eta) - W lgamma(eta)] + eta sum_k sum_w E[log phi_kw]."""

    def f(e):
        return K * (gammaln(W * e) - W * gammaln(e)) + e * elog_phi_sum

    def d1(e):
        return K * W * (digamma(W * e) - digamma(e)) + elog_phi_sum

    def d2(e):
        return K * W * (W * polygamma(1, W * e) - polygamma(1, e))

    return _newton_log(f, d1, d2, eta, *HYPER_BOUNDS["eta"])


# (H3) gamma
def gamma_update(beta):
    """gamma = K / -log beta*_{K+1}: the maximiser of log p(beta* | gamma)."""
    K = len(beta) - 1
    lo, hi = HYPER_BOUNDS["gamma"]
    return float(np.clip(K / max(-math.log(beta[K]), 1e-300), lo, hi))


def elog_pi_sums(theta):
    out = np.empty(theta.shape[1])
    kern.expected_log_pi_sums(theta, out)
    return out


# ---------------------------------------------------------------------------------------------
# the models


class _VariationalHdp(Model):
    """What the three models share: options, lambda/beta*/hyperparameters, snapshot, bound.

    Attributes: lam (K, W) lambda; beta_star (K+1) beta*; alpha, gamma; beta the topic-word prior
    (the paper's eta; option ``beta``, ``eta`` before the rename). Topics are kept in decreasing
    order of beta*."""

    eval_method = "vb"
    supports_threads = True  # the local step by blocks of documents, lambda by topics (docs)
    thread_topic_word_bytes = 8  # a thread's statistics over the minibatch's words (at most W)
    STATE_VERSION = 2  # 2: keys lam, beta_star, alpha, gamma, beta (the prior) in place of beta (beta*), hyper
    defaults = {
        "K": 100,
        "alpha": 10.0,
        "gamma": 1.0,
        "beta": 0.01,
        "optimize_alpha": True,
        "optimize_gamma": True,
        "optimize_beta": True,
        "hyper_burn_in": 10,
        "global_update": "joint",
        "local_iterations": 100,
        "local_tol": 1e-3,
    }
    # the paper's name of the topic-word prior, the option's name until it took the tool's
    aliases = {"eta": "beta", "optimize_eta": "optimize_beta"}
    limits = {
        **Model.limits,
        "alpha": PRIOR,
        "gamma": PRIOR,
        "beta": PRIOR,
        "hyper_burn_in": NONNEGATIVE,
        "local_iterations": POSITIVE_INT,
        "local_tol": PRIOR,
    }
    state_arrays = ("lam", "beta_star")
    state_scalars = {"alpha": float, "gamma": float, "beta": float}
    equal_start = True  # initial beta*: equal shares (fixed truncation) or the GEM prior mean

    def check_options(self, opts):
        if opts["global_update"] not in ("joint", "fixed-theta"):
            raise InputError(f"option global_update={opts['global_update']!r}: expected joint or fixed-theta")

    def rng_streams(self):
        return 2  # row 0: initialisation and document order; row 1: the moves

    def allocate(self):
        o = self.opts
        self.alpha, self.gamma, self.beta = float(o["alpha"]), float(o["gamma"]), float(o["beta"])
        self.lam = np.empty((self.K, self.W))
        self.beta_star = np.empty(self.K + 1)
        self.last_elbo = float("nan")

    def initialise(self):
        K = self.K
        kern.random_topics(self.rng, 0, self.beta, INIT_SHAPE, self.lam)
        # beta*: the GEM(gamma) prior mean, E[v] = 1 / (1 + gamma) for every stick, so beta*
        # decreases geometrically. With a fixed truncation (equal_start) the K topics share
        # 1 - beta*_{K+1} equally instead: from the prior mean, topic 40 of 50 starts at
        # beta* ~ 1e-12 (gamma = 1), a hidden truncation that left hdp-online with K = 50 on 1 of
        # the 20 bars against 17 from the equal start. hdp-online-sm starts from few topics and
        # grows; its asymmetric start breaks the symmetry between them sooner (with an equal
        # start, K0 = 2 reached all 20 bars on 1 of the first 6 seeds instead of 6).
        v = 1.0 / (1.0 + self.gamma)
        if self.equal_start:
            rest = max((1.0 - v) ** K, BETA_FLOOR)
            self.beta_star = np.append(np.full(K, (1.0 - rest) / K), rest)
        else:
            sticks = [max(v * (1.0 - v) ** k, BETA_FLOOR) for k in range(K)]  # Python's pow: libm, not numpy's SIMD
            self.beta_star = np.array([*sticks, (1.0 - v) ** K])
            self.beta_star /= self.beta_star.sum()

    @classmethod
    def upgrade_state(cls, arrays, version):
        """Version 1 (before the rename of eta to beta): beta* under the key beta, the
        hyperparameters packed as hyper = (alpha, gamma, eta), documents_seen, last_elbo and
        theta_ready stored; today's keys are beta_star, alpha, gamma, beta (the prior)."""
        if version == 1 and "hyper" in arrays and "beta_star" not in arrays:
            arrays = dict(arrays)
            arrays["beta_star"] = arrays.pop("beta")
            arrays["alpha"], arrays["gamma"], arrays["beta"] = np.asarray(arrays.pop("hyper"), dtype=np.float64)
            for key in ("documents_seen", "last_elbo", "theta_ready"):  # follow from the rest now
                arrays.pop(key, None)
            if "theta" in arrays and int(arrays["iteration"]) == 0:
                arrays["theta"] = np.zeros_like(arrays["theta"])  # never written: np.empty's contents
        return arrays

    def restored(self):
        lam, beta_star = self.lam, self.beta_star
        if lam.shape[1] != self.W or beta_star.shape != (lam.shape[0] + 1,):
            raise InputError(
                f"{self.name} state: lam {lam.shape} and beta_star {beta_star.shape} do not fit "
                f"W={self.W} words and K+1 entries"
            )
        if not (np.all(lam > 0) and np.all(beta_star > 0)):
            raise InputError(f"{self.name} state: lam and beta_star must be positive")
        for name in self.state_scalars:
            if not getattr(self, name) > 0:
                raise InputError(f"{self.name} state: {name}={getattr(self, name)!r} must be positive")
        self.K = lam.shape[0]

    # -- pieces of the bound --------------------------------------------------------

    def _topic_terms(self, lam=None, elog_sum=None):
        """T_k of every topic of ``lam`` (the model's lambda unless given); fills ``elog_sum``
        (sum_w E[log phi_kw]) when given. Threads take ranges of topics (the same bits)."""
        lam = self.lam if lam is None else lam
        K = lam.shape[0]
        out = np.empty(K)
        elog_sum = np.empty(K) if elog_sum is None else elog_sum
        by_ranges(self.workers, K, lambda lo, hi: kern.topic_terms_range(lam, self.beta, out, elog_sum, lo, hi))
        return out

    def _topic_terms_beside(self, serial_part, elog_sum, hist=None, keep=0.0):
        """serial_part() and _topic_terms(elog_sum=elog_sum), and with ``hist`` (K, W) the history
        part of the update, hist = keep (lambda - beta): one after the other on one thread; on
        T > 1 threads serial_part on thread 0 (Python, which would otherwise leave the other
        threads idle) while the others take topics one at a time from a shared counter (their
        terms, then their rows of hist), thread 0 joining them when its part is done. Each
        topic's terms and row are its own (out[k], elog_sum[k], hist[k]), so the result is the
        same for every T and whichever thread takes a topic."""
        lam, K = self.lam, self.lam.shape[0]
        rows = 0 if hist is None else K
        if self.threads == 1:
            serial_part()
            out = self._topic_terms(elog_sum=elog_sum)
            if rows:
                kern.decayed_rows(lam, self.beta, keep, hist, 0, K)
            return out
        out = np.empty(K)

        def item(i):
            if i < K:
                kern.topic_terms_range(lam, self.beta, out, elog_sum, i, i + 1)
            else:
                kern.decayed_rows(lam, self.beta, keep, hist, i - K, i - K + 1)

        topics = handed_out(K + rows, item)

        def part(t):
            if t == 0:
                serial_part()
            topics(t)

        self.workers.run(part)
        return out

    def _local_step(self, mb, theta, init_theta, keep_phi, max_iter=None, lam_parts=None, alpha=None, beta_star=None):
        """kernels.e_step on a minibatch (with the model's lambda, alpha, beta* unless given);
        returns (sstats (U, K), phi, doc_elbo, doc_iters). ``lam_parts`` (eta, hist, mbstats):
        lambda as split_merge.combine would make it, read without making it."""
        eta, hist, mbstats = (0.0, self.lam, np.zeros((0, self.K))) if lam_parts is None else lam_parts
        alpha = self.alpha if alpha is None else alpha
        beta_star = self.beta_star if beta_star is None else beta_star
        K = hist.shape[0]
        elog = np.empty((mb.U, K))
        # accumulated into, except on threads with varphi kept (then summed afresh: no zeroing)
        sstats = np.empty((mb.U, K)) if keep_phi and self.threads > 1 else np.zeros((mb.U, K))
        phi = np.empty((len(mb.wid) if keep_phi else 0, K))  # e_step writes every row it keeps
        doc_elbo = np.zeros(mb.S)
        doc_iters = np.zeros(mb.S, dtype=np.int64)
        max_iter = self.opts["local_iterations"] if max_iter is None else max_iter
        local = (mb.ptr, mb.wid, mb.cnt)
        after = (alpha, alpha * beta_star, theta, init_theta, max_iter, self.opts["local_tol"])
        lam_args = (eta, hist, mb.words, mbstats)  # lambda, as the two E[log phi] kernels read it
        if self.threads == 1:
            ps = np.empty(K)
            kern.topic_digamma_sums(*lam_args, ps, 0, K)
            kern.expected_log_words(*lam_args, ps, elog, 0, mb.U)
            kern.e_step(*local, elog, *after, sstats, phi, doc_elbo, doc_iters)
        else:
            self._threaded_local_step(mb, lam_args, elog, local, after, sstats, phi, doc_elbo, doc_iters)
        return sstats, phi, doc_elbo, doc_iters

    def _threaded_local_step(self, mb, lam_args, elog, local, after, sstats, phi, doc_elbo, doc_iters):
        """The local step on T threads: E[log phi] by topics, then by words, then the documents
        (below). Documents are independent given the global parameters, so only the order of
        the sums over documents in sstats can depend on T: it does when varphi is not kept,
        not when it is."""
        T, (U, K) = self.threads, elog.shape
        topics, words = split(K, T), split(U, T)
        ps, shift, x = np.empty(K), np.empty(U), np.empty((U, K))

        def prologue(t):
            kern.topic_digamma_sums(*lam_args, ps, topics[t], topics[t + 1])

        def words_part(t):
            kern.expected_log_words(*lam_args, ps, elog, words[t], words[t + 1])
            kern.exp_shifted(elog, shift, x, words[t], words[t + 1])

        self.workers.run(prologue)
        self.workers.run(words_part)
        if len(phi):
            # varphi kept (the moves' steps): the documents in chunks handed out as threads
            # finish (their iterations to converge vary: blocks of equal tokens took 51 and 43
            # ms), then sstats from varphi word by word, each word's tokens in document order
            # -- the additions e_step makes, so the same bits as one thread
            chunks = doc_blocks(mb.ptr, CHUNKS_PER_THREAD * T)
            none = np.zeros((0, K))
            self.workers.run(
                handed_out(
                    len(chunks) - 1,
                    lambda c: kern.e_step_docs(
                        *local, x, shift, *after, none, phi, doc_elbo, doc_iters, chunks[c], chunks[c + 1]
                    ),
                )
            )
            word_ptr, word_tok = mb.by_word()
            by_entries = np.searchsorted(word_ptr, split(len(mb.wid), T))  # ranges of words, equal entries
            self.workers.run(
                lambda t: kern.word_sums_of_rows(
                    word_ptr, word_tok, mb.cnt, phi, sstats, by_entries[t], by_entries[t + 1]
                )
            )
            return
        # varphi not kept: each thread its own statistics (part 0 in sstats itself), the parts
        # then added to sstats in thread order. Thread t takes every T-th of INTERLEAVE * T chunks
        # of about equal entries, not one block: a document's cost is not its entries alone
        # (hdp-batch on the movie reviews: two blocks of equal entries took 628 and 396 ms a
        # pass), and a fixed schedule keeps the sums' order, so the bits, a function of T alone.
        chunks = doc_blocks(mb.ptr, INTERLEAVE * T)
        parts = np.zeros((T - 1, U, K))

        def docs_part(t):
            own = sstats if t == 0 else parts[t - 1]
            for c in range(t, len(chunks) - 1, T):
                kern.e_step_docs(*local, x, shift, *after, own, phi, doc_elbo, doc_iters, chunks[c], chunks[c + 1])

        self.workers.run(docs_part)
        self.workers.run(lambda t: kern.add_parts(sstats, parts, words[t], words[t + 1]))

    def _combine(self, prior, hist, words, mbstats):
        """split_merge.combine, on the model's threads by ranges of topics (the same bits)."""
        return combine_on(self.workers if self.threads > 1 else None, prior, hist, words, mbstats)

    def _online_lambda(self, eta, keep, prior, words, coef, sstats):
        """(G2): prior + keep (lambda - eta), + coef sstats on the minibatch's words, by ranges
        of topics on the model's threads (each topic's row is its own: the same bits for any T)."""
        out, lam = np.empty_like(self.lam), self.lam
        by_ranges(
            self.workers,
            self.K,
            lambda lo, hi: kern.online_lambda(lam, eta, keep, prior, words, coef, sstats, out, lo, hi),
        )
        return out

    def _sort_topics(self, *columns_of):
        """Put the topics in decreasing order of beta*; permutes lambda, beta* and the given
        (rows, K+1) theta-like arrays' first K columns. Returns the permutation."""
        order = np.argsort(-self.beta_star[:-1], kind="stable")
        if np.array_equal(order, np.arange(self.K)):
            return order
        self.lam = self.lam[order]
        self.beta_star = np.concatenate([self.beta_star[order], self.beta_star[-1:]])
        for a in columns_of:
            a[:, :-1] = a[:, order]
        return order

    def _beta_hat(self, theta, n, weight, threaded=False):
        """beta-hat on the documents of theta (S, K+1) / n (S, K), weighted by ``weight``;
        ``threaded``: the objective's document sums on the model's threads (hdp-batch)."""
        if self.opts["global_update"] == "joint":
            n = np.ascontiguousarray(n)
            workers = self.workers if threaded and self.threads > 1 else None

            def objective(b):
                return beta_objective(b, n, weight, self.alpha, self.gamma, workers)
        else:
            elps = elog_pi_sums(theta)

            def objective(b):
                return beta_objective_fixed_theta(b, weight * elps, weight * theta.shape[0], self.alpha, self.gamma)

        return optimize_beta(self.beta_star, objective)

    def _alpha_hat(self, theta, n, beta_star, weight, threaded=False):
        """(H1) on the documents of theta / n; ``threaded``: the sums on the model's threads (hdp-batch)."""
        if self.opts["global_update"] == "joint":
            workers = self.workers if threaded and self.threads > 1 else None
            return newton_alpha_collapsed(self.alpha, beta_star, n, n.sum(axis=1), weight, workers)
        return newton_alpha(self.alpha, beta_star, weight * elog_pi_sums(theta), weight * theta.shape[0])

    def _prior_update(self, elog_sum):
        """(H2): the topic-word prior's maximiser given sum_k sum_w E[log phi_kw]."""
        return newton_eta(self.beta, float(elog_sum.sum()), self.K, self.W)

    def _metrics(self, started, docs, elbo, weighted_tokens, **extra):
        """The metrics every step reports (module docstring); elbo_per_token divides elbo by
        ``weighted_tokens`` (online: D/|S| times the minibatch's tokens)."""
        dt = time.perf_counter() - started
        out = {
            "documents_seen": self.documents_seen,
            "topics": self.K,
            "elbo": float(elbo),
            "elbo_per_token": float(elbo / weighted_tokens) if weighted_tokens else None,
            **extra,
            "alpha": self.alpha,
            "gamma": self.gamma,
            "beta": self.beta,
            "beta_remainder": float(self.beta_star[-1]),
            "documents_per_s": round(docs / dt, 1) if dt > 0 else None,
        }
        return out

    # -- the Model protocol ------------------------------------------------------------

    def snapshot(self):
        phi = self.lam / self.lam.sum(axis=1, keepdims=True)
        used = np.maximum(self.lam - self.beta, 0.0).sum(axis=1)
        weight = used / used.sum() if used.sum() > 0 else self.beta_star[:-1] / self.beta_star[:-1].sum()
        meta = {
            "model": self.name,
            "options": dict(self.opts),
            "iteration": self.iteration,
            "documents_seen": self.documents_seen,
            "alpha": self.alpha,
            "gamma": self.gamma,
            "beta": self.beta,
            "beta_remainder": float(self.beta_star[-1]),
            "topics": self.K,
        }
        return Snapshot(
            phi=phi, alpha=self.alpha * self.beta_star[:-1], topic_weight=weight, vocab=self.corpus.vocab, meta=meta
        )

    def check_invariants(self):
        def fail(msg):
            raise AssertionError(f"{self.name} invariant broken: {msg}")

        if self.lam.shape != (self.K, self.W) or self.beta_star.shape != (self.K + 1,):
            fail("lambda is not K x W or beta* does not have K+1 entries")
        if not (np.all(np.isfinite(self.lam)) and np.all(self.lam > 0)):
            fail("lambda is not positive and finite")
        if not (np.all(self.beta_star > 0) and abs(self.beta_star.sum() - 1.0) < 1e-9):
            fail(f"beta* is not a positive vector summing to 1 (sum {self.beta_star.sum()!r})")
        if np.any(np.diff(self.beta_star[:-1]) > 0):
            fail("topics are not in decreasing order of beta*")
        for n in ("alpha", "gamma", "beta"):
            v = getattr(self, n)
            if not (np.isfinite(v) and v > 0):
                fail(f"{n}={v!r} is not positive and finite")


class OnlineHdp(_VariationalHdp):
    """hdp-online: stochastic variational inference over minibatches, fixed truncation K."""

    name = "hdp-online"
    step_unit = "minibatch"
    defaults = dict(_VariationalHdp.defaults, minibatch=100, tau=1.0, kappa=0.5)
    # rho_t = (tau + t)^-kappa from t = 0: tau must be positive
    limits = dict(_VariationalHdp.limits, minibatch=POSITIVE_INT, tau=POSITIVE, kappa=KAPPA)
    state_arrays = (*_VariationalHdp.state_arrays, "order")
    state_scalars = dict(_VariationalHdp.state_scalars, cursor=int)
    moves = False
    # MPI ranks: every rank draws the same minibatches of the whole corpus and does the local step
    # for the documents it owns; the sufficient statistics are summed over the union of the
    # minibatch's words and theta is gathered in minibatch order, so that the global step (lambda,
    # beta*, the hyperparameters) is the same computation on every rank. hdp-online-sm's moves
    # are made by rank 0 on the gathered minibatch and broadcast. Every state entry is the same on
    # every rank (rank_state is empty: no per-document state).
    supports_mpi = True

    def allocate(self):
        self.engine = getattr(self.corpus, "engine", None)
        if self.engine is not None:  # D: the whole corpus's documents (the order, D/|S|, ...)
            self.D = int(self.corpus.D_total)
        super().allocate()
        self.order = np.arange(self.D, dtype=np.int64)
        self.cursor = self.D  # the first step shuffles

    def restored(self):
        super().restored()
        if not np.array_equal(np.sort(self.order), np.arange(self.D)):
            raise InputError(f"{self.name} state: order is not a permutation of the {self.D} documents")
        if not 0 <= self.cursor <= self.D:
            raise InputError(f"{self.name} state: cursor={self.cursor} outside 0..{self.D}")

    @property
    def documents_seen(self):
        """Every step visits min(minibatch, D) documents."""
        return self.iteration * min(self.opts["minibatch"], self.D)

    def _next_minibatch(self):
        """The next ``minibatch`` documents of the current pass (a pass visits every document once,
        in an order shuffled with the model's stream at its start; a minibatch may span two passes)."""
        size = min(self.opts["minibatch"], self.D)
        out = []
        while len(out) < size:
            if self.cursor >= self.D:
                self.order = np.arange(self.D, dtype=np.int64)
                shuffle(self.order, self.rng, 0)
                self.cursor = 0
            take = min(size - len(out), self.D - self.cursor)
            out.extend(self.order[self.cursor : self.cursor + take].tolist())
            self.cursor += take
        return np.array(out, dtype=np.int64)

    def rho(self, t=None):
        """rho_t = (tau + t)^-kappa, t = the number of minibatches already processed."""
        t = self.iteration if t is None else t
        return float((self.opts["tau"] + t) ** -self.opts["kappa"])

    def step(self):
        started = time.perf_counter()
        o = self.opts
        K = self.K
        if self.engine is None:
            mb = Minibatch.of(self.corpus, self._next_minibatch())
            S = mb.S
            theta = np.empty((S, K + 1))
            sstats, phi, doc_elbo, _ = self._local_step(mb, theta, True, keep_phi=self.moves)
            words, doc_elbo_sum, tokens = mb.words, doc_elbo.sum(), float(mb.cnt.sum())
        else:
            mb, theta, sstats, words, doc_elbo_sum, tokens = self._local_on_ranks(self._next_minibatch())
            S = theta.shape[0]
        scale = self.D / S

        rho = self.rho()
        n = np.maximum(theta[:, :K] - self.alpha * self.beta_star[:K], 0.0)  # n_jk (theta = alpha beta* + n)
        hat = {}

        def serial_part():  # beta-hat, then alpha from the minibatch (below): Python, on one thread
            hat["beta"] = beta_hat = self._beta_hat(theta, n, scale)
            beta_new = (1.0 - rho) * self.beta_star + rho * beta_hat
            if o["hyper_burn_in"] <= self.iteration and o["optimize_alpha"]:
                hat["alpha"] = self._alpha_hat(theta, n, beta_new, scale)

        # the online update of lambda (on its pseudo-counts lambda - beta) and of beta*, in parts
        # (split_merge.MoveState): lambda = beta + (1 - rho)(lambda - beta) + rho D/|S| sstats
        # (hdp-online: in one threaded kernel, below, from the prior before this step's update)
        fused, old_prior = not self.moves, self.beta
        hist = None if fused else np.empty_like(self.lam)

        # the bound of the model as it met this minibatch (after the local step); its topic terms
        # (and the moves' history part of lambda) are computed beside the serial part (neither
        # reads what the other writes)
        elog_sum = np.empty(K)
        T = self._topic_terms_beside(serial_part, elog_sum, hist, 1.0 - rho)
        elbo = float(kern.log_stick_prior(self.beta_star, self.gamma)) + T.sum() + scale * doc_elbo_sum
        beta_hat = hat["beta"]
        mbstats = None if fused else (rho * scale) * sstats
        bhist = (1.0 - rho) * self.beta_star
        bmb = rho * beta_hat
        beta_new = bhist + bmb

        # hyperparameters: alpha from the minibatch, gamma and the prior from the global parameters;
        # each replaces the old value (they are maximisers, not gradients)
        alpha, gamma, prior = self.alpha, self.gamma, self.beta
        if o["hyper_burn_in"] <= self.iteration:
            alpha = hat.get("alpha", alpha)
            if o["optimize_beta"]:
                prior = self._prior_update(elog_sum)
            if o["optimize_gamma"]:
                gamma = gamma_update(beta_new)
        self.alpha, self.gamma, self.beta = alpha, gamma, prior

        parts, metrics = (hist, mbstats, bhist, bmb), {}
        if self.moves and self.engine is None:
            parts, metrics = self._moves(mb, scale, rho, theta, n, beta_new, parts)
        elif self.moves:
            parts, metrics = self._moves_on_ranks(mb, scale, rho, theta, n, beta_new, parts)
        hist, mbstats, bhist, bmb = parts

        if fused:
            self.lam = self._online_lambda(old_prior, 1.0 - rho, prior, words, rho * scale, sstats)
        else:
            self.lam = self._combine(prior, hist, words, mbstats)
        self.K = self.lam.shape[0]
        beta_star = np.maximum(bhist + bmb, BETA_FLOOR)
        self.beta_star = beta_star / beta_star.sum()
        self._sort_topics()
        self.iteration += 1
        self.last_elbo = elbo
        return self._metrics(started, S, elbo, scale * tokens, tokens=int(tokens), rho=rho, **metrics)

    def _local_on_ranks(self, docs):
        """The local step of minibatch ``docs`` (global ids) on MPI ranks: (the whole minibatch on
        rank 0 for the moves, else None; theta (S, K+1) in minibatch order; the statistics (U, K)
        summed on the union of the minibatch's words; those words; the bound's document terms;
        the tokens)."""
        engine, first = self.engine, int(self.corpus.first_doc)
        here = (docs >= first) & (docs < first + self.corpus.D)
        local = Minibatch.of(self.corpus, docs[here] - first)
        theta_here = np.empty((local.S, self.K + 1))
        sstats, _, doc_elbo, _ = self._local_step(local, theta_here, True, keep_phi=False)
        every, _ = engine.allgatherv(local.words)
        words = np.unique(every)
        full = np.zeros((len(words), self.K))
        full[np.searchsorted(words, local.words)] = sstats
        sstats = engine.sum(full)
        # theta and the documents' bound terms in minibatch order
        positions = engine.allgatherv(np.flatnonzero(here))[0]
        theta = np.empty((len(docs), self.K + 1))
        theta[positions] = engine.allgatherv(theta_here)[0].reshape(-1, self.K + 1)
        elbo_terms = np.empty(len(docs))
        elbo_terms[positions] = engine.allgatherv(doc_elbo)[0]
        tokens = float(engine.sum(np.array([float(local.cnt.sum())]))[0])
        mb = self._gather_minibatch(docs, here, local) if self.moves else None
        return mb, theta, sstats, words, elbo_terms.sum(), tokens

    def _gather_minibatch(self, docs, here, local):
        """The whole minibatch (Minibatch.of on the whole corpus, as one process makes it) on rank 0."""
        engine = self.engine
        parts = [
            engine.gatherv(a) for a in (np.flatnonzero(here), np.diff(local.ptr), local.words[local.wid], local.cnt)
        ]
        if not engine.is_root:
            return None
        positions, lengths, word_ids, cnt = (np.concatenate(p) for p in parts)
        starts = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        order = np.argsort(positions)
        ptr = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum(lengths[order], out=ptr[1:])
        take = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in order]) if len(order) else np.zeros(0, int)
        words, wid = np.unique(word_ids[take], return_inverse=True)
        return Minibatch(docs, ptr, wid.astype(np.int64), cnt[take], words.astype(np.int64))

    def _moves_on_ranks(self, mb, scale, rho, theta, n, beta_new, parts):
        """hdp-online-sm's moves on MPI ranks: rank 0 makes them on the whole minibatch and sends
        the outcome (how every topic's history arose from the old ones, the new minibatch parts,
        the counts); the other ranks rebuild the history from their own copy."""
        from .split_merge import rebuild_hist

        engine = self.engine
        if engine.is_root:
            outcome = self._moves(mb, scale, rho, theta, n, beta_new, parts, keep_origin=True)
        else:
            outcome = None
        origin, mbstats, bhist, bmb, metrics = engine.bcast(outcome)
        hist = parts[0] if origin is None else rebuild_hist(origin, parts[0])
        return (hist, mbstats, bhist, bmb), metrics

    def _moves(self, mb, scale, rho, theta, n, beta_new, parts, keep_origin=False):
        """hdp-online-sm's split and merge moves on the computed update, whose ``parts`` are
        (hist, mbstats, bhist, bmb) (split_merge.run_moves); returns the new parts and the
        moves' counts."""
        o = self.opts
        if self.iteration < o["moves_after"]:
            counts = dict.fromkeys(MOVE_COUNTS, 0) | {"moves_delta": 0.0}
            return (None, *parts[1:], counts) if keep_origin else (parts, counts)
        hist, mbstats, bhist, bmb = parts
        alpha, prior, K = self.alpha, self.beta, self.K
        # Re-fit the minibatch under the updated globals before judging moves: rounds of the
        # local step and of the minibatch part of lambda, as many as a split's restricted
        # iterations, so that a move is not credited with the gain of merely re-fitting.
        theta[:, :K] = alpha * beta_new[:K] + n
        theta[:, K] = alpha * beta_new[K]
        for _ in range(o["split_iterations"]):
            lam_parts = (prior, hist, mbstats)  # lambda = combine(prior, hist, mb.words, mbstats), not made
            sstats, phi, _, _ = self._local_step(
                mb, theta, False, True, lam_parts=lam_parts, alpha=alpha, beta_star=beta_new
            )
            mbstats = (rho * scale) * sstats
        state = MoveState(
            mb,
            self.W,
            scale,
            rho,
            hyper=dict(alpha=alpha, eta=prior, gamma=self.gamma),
            parts=dict(hist=hist, mbstats=mbstats, bhist=bhist, bmb=bmb),
            phi=phi,
            theta=theta,
            iterations=(o["split_iterations"], o["split_local_iterations"], o["local_tol"]),
            workers=self.workers if self.threads > 1 else None,
        )
        counts = run_moves(
            state,
            lambda: uniform(self.rng, 1),
            o["max_splits"],
            o["split_tries"],
            o["merge_tries"],
            o["merge_threshold"],
            o["max_topics"],
            o["move_margin"],
            o["unused_share"],
            o["split_init"],
        )
        if keep_origin:
            return state.origin, state.mbstats, state.bhist, state.bmb, counts
        return (state.hist, state.mbstats, state.bhist, state.bmb), counts

    def log_likelihood(self):
        """The minibatch bound L_S of the last step (a stochastic estimate of the full bound;
        NaN before the first step of this process: L_S is not part of the state)."""
        return self.last_elbo


# the counts split_merge.run_moves returns (and hdp-online-sm reports as zeros before moves_after)
MOVE_COUNTS = (
    "splits_tried",
    "splits_accepted",
    "merges_tried",
    "merges_accepted",
    "unused_tried",
    "unused_merged",
    "pruned",
)


class OnlineHdpSplitMerge(OnlineHdp):
    """hdp-online-sm: oHDP with split and merge moves (split_merge.py); K is the initial
    number of topics."""

    name = "hdp-online-sm"
    defaults = dict(
        OnlineHdp.defaults,
        max_splits=3,
        split_tries=6,
        split_iterations=6,
        split_local_iterations=10,
        merge_tries=10,
        merge_threshold=0.6,
        max_topics=1000,
        moves_after=1,
        move_margin=0.0,
        unused_share=1e-3,
        split_init="seed",
    )
    limits = dict(
        OnlineHdp.limits,
        **dict.fromkeys(("max_splits", "split_tries", "merge_tries", "moves_after", "move_margin"), NONNEGATIVE),
        split_iterations=POSITIVE_INT,
        split_local_iterations=POSITIVE_INT,
        merge_threshold=Range(),
        max_topics=POSITIVE_INT,
        unused_share=Range(0.0, 1.0),
    )
    resizable = frozenset({"lam", "beta_star"})  # the moves change K
    moves = True
    equal_start = False

    def check_options(self, opts):
        super().check_options(opts)
        if opts["max_topics"] < opts["K"]:
            raise InputError(f"option max_topics={opts['max_topics']}: must be at least K={opts['K']}")
        if opts["split_init"] not in ("seed", "paper"):
            raise InputError(f"option split_init={opts['split_init']!r}: expected seed or paper")

    def restored(self):
        super().restored()
        if self.K > self.opts["max_topics"]:
            raise InputError(f"{self.name} state has {self.K} topics, more than max_topics={self.opts['max_topics']}")


class BatchHdp(_VariationalHdp):
    """hdp-batch: coordinate ascent on the full bound, fixed truncation K."""

    name = "hdp-batch"
    step_unit = "pass"
    defaults = dict(_VariationalHdp.defaults)
    doc_topic_bytes = 8  # theta (D x (K+1)) is dense
    state_arrays = (*_VariationalHdp.state_arrays, "theta")

    def allocate(self):
        super().allocate()
        self.mb = Minibatch.of(self.corpus, np.arange(self.D))
        self.theta = np.zeros((self.D, self.K + 1))  # set by the first step's local step

    def restored(self):
        super().restored()
        if np.any(self.theta < 0):
            raise InputError(f"{self.name} state: theta has negative entries")

    @property
    def documents_seen(self):
        return self.iteration * self.D

    @property
    def theta_ready(self):
        """theta holds a local step's result (from the first step on)."""
        return self.iteration > 0

    def step(self):
        """One coordinate-ascent iteration: every document's (varphi, theta) from the current
        theta, then lambda, beta*, alpha, gamma, the prior; each step is an exact or guarded
        maximisation, so the bound (``elbo()``) never decreases."""
        started = time.perf_counter()
        o = self.opts
        mb = self.mb
        K = self.K
        sstats, _, _, _ = self._local_step(mb, self.theta, not self.theta_ready, keep_phi=False)
        lam = np.full((K, self.W), self.beta)
        lam[:, mb.words] += sstats.T
        self.lam = lam
        # beta* (and alpha) jointly with theta, or with theta fixed (option global_update)
        n = np.maximum(self.theta[:, :K] - self.alpha * self.beta_star[:K], 0.0)
        self.beta_star = self._beta_hat(self.theta, n, 1.0, threaded=True)
        if o["hyper_burn_in"] <= self.iteration and o["optimize_alpha"]:
            self.alpha = self._alpha_hat(self.theta, n, self.beta_star, 1.0, threaded=True)
        if o["global_update"] == "joint":
            self.theta[:, :K] = self.alpha * self.beta_star[:K] + n
            self.theta[:, K] = self.alpha * self.beta_star[K]
        if o["hyper_burn_in"] <= self.iteration:
            if o["optimize_gamma"]:
                g = gamma_update(self.beta_star)
                if kern.log_stick_prior(self.beta_star, g) >= kern.log_stick_prior(self.beta_star, self.gamma):
                    self.gamma = g
            if o["optimize_beta"]:
                elog_sum = np.empty(K)
                self._topic_terms(elog_sum=elog_sum)
                self.beta = self._prior_update(elog_sum)
        self._sort_topics(self.theta)
        self.iteration += 1
        self.last_elbo = self.elbo()
        return self._metrics(started, self.D, self.last_elbo, self.N)

    def elbo(self):
        """The full bound at the current state: varphi = varphi*(theta) (the best varphi for
        the stored theta), the stored theta, lambda, beta* and hyperparameters."""
        if not self.theta_ready:
            return float("nan")
        theta = self.theta.copy()
        _, _, doc_elbo, _ = self._local_step(self.mb, theta, False, keep_phi=False, max_iter=0)
        return float(kern.log_stick_prior(self.beta_star, self.gamma) + self._topic_terms().sum() + doc_elbo.sum())

    def log_likelihood(self):
        """The full bound (``elbo()``) after the last step."""
        if np.isnan(self.last_elbo) and self.theta_ready:
            self.last_elbo = self.elbo()  # a resumed model: the bound is a function of the state
        return self.last_elbo

    def doc_topics(self):
        """(D, K) expected topic counts n_jk = theta_jk - alpha beta*_k of the last local step
        (None before the first step)."""
        if not self.theta_ready:
            return None
        return np.maximum(self.theta[:, :-1] - self.alpha * self.beta_star[:-1], 0.0)
