"""Split and merge moves of oHDP-SM (Bryant & Sudderth 2012, section 3).

The moves act on one minibatch S after its local step and after the online
update of the global parameters has been *computed* (but not yet committed). The
update is kept in parts, on the pseudo-counts lambda - eta:

    lambda_k = eta + hist_k + mb_k         hist_k  = (1 - rho_t) (lambda_k(old) - eta)
                                           mb_k    = rho_t D/|S| sum_{j in S} n_jw varphi_jwk
    beta*_k  = bhist_k + bmb_k             bhist_k = (1 - rho_t) beta*_k(old), bmb_k = rho_t beta-hat_k

so that every move can redistribute the minibatch's share of a topic while the
history stays with the topic that had it.

(S1) Split of topic k into k', k'' (section 3.1):
    lambda_k'  = (1 - rho_t) lambda_k                  (the history)
    lambda_k'' = rho_t lambda-hat_k                   (the minibatch)
    beta*_k'   = (1 - rho_t) beta*_k,  beta*_k'' = rho_t beta-hat_k
    -- applied to the pseudo-counts lambda - eta: each of k', k'' keeps the prior eta.
    (Splitting eta itself, as a literal reading would, leaves both topics with
    parameters below the prior on every word the minibatch lacks; the bound then
    charges about one nat per such word, which on a 15,000-word vocabulary rejects
    every split.) With split_init="seed" (default) the minibatch part of lambda_k''
    starts from a profile half one document's topic-k counts, half the minibatch's
    (``propose_split``).
    varphi_jwk' = omega varphi_jwk, varphi_jwk'' = (1 - omega) varphi_jwk, theta likewise,
    omega = beta*_k' / (beta*_k' + beta*_k'');
(S2) then ``split_iterations`` restricted iterations: the local step for k', k'' only
    (kernels.split_local: the mass varphi_jwk is shared between them, every other topic
    fixed), and the global step for k', k'' only (lambda_k' = eta + hist_k + mb_k',
    lambda_k'' = eta + mb_k'', beta-hat_k shared in proportion to the minibatch counts).
(S3) The split is accepted if the minibatch bound rises.

(M1) Merge of k1, k2 (section 3.2): candidates are pairs whose E[pi_jk] have positive
covariance across the minibatch (above ``merge_threshold``), tried in decreasing order
of the correlation; varphi, theta, beta* and the pseudo-counts lambda - eta (each of
their parts) are summed; accepted if the bound rises.

(M2) Topics that fell out of use: one holding less than ``unused_share`` of the
minibatch's tokens is proposed for merging into its nearest topic (accepted if the
bound rises); one with less than a token of pseudo-counts and of minibatch mass is
dropped and its beta* joins the remainder (``MoveState.prune_empty``).

The minibatch bound (eq. 2 with the document terms scaled by D/|S|):
    L_S = log p(beta* | gamma) + sum_k T_k(lambda_k) + D/|S| sum_{j in S} l_j
(kernels module docstring: T_k, l_j; log p(beta*) is the log density of its sticks,
K log gamma + (gamma - 1) log beta*_{K+1}). A move changes only the terms of the
topics it touches and log p(beta*), so ``delta`` is computed from those;
``full_bound`` recomputes L_S from scratch (tests check that the two agree).

A proposal builds new arrays and never writes to the current ones: a rejected
move leaves every array exactly as it was.
"""

from dataclasses import dataclass, field

import numpy as np

from ...threads import handed_out, split
from . import kernels as kern

# work whose cost per document varies (the local steps): documents in this many chunks a thread,
# handed out as threads finish
CHUNKS_PER_THREAD = 4


def on_threads(workers, fn):
    """fn(t, T) for the T parts: fn(0, 1) at once without workers (or with one thread), else
    part t on the workers' thread t."""
    T = 1 if workers is None else workers.threads
    if T == 1:
        fn(0, 1)
    else:
        workers.run(lambda t: fn(t, T))


def by_ranges(workers, n, fn):
    """fn(lo, hi) over n items (``on_threads``), part t the t-th of nearly equal ranges (topics,
    columns, words; threads.split); one item (a merge's new topic) inline, without waking the
    threads."""
    if n <= 1:
        fn(0, n)
        return
    on_threads(workers, lambda t, T: fn(n * t // T, n * (t + 1) // T))


def doc_blocks(ptr, parts):
    """Boundaries (parts + 1) cutting the documents of CSR ``ptr`` into blocks of about equal
    entries (the work of a local step is about proportional to them)."""
    first, nnz = int(ptr[0]), int(ptr[-1] - ptr[0])
    cut = np.searchsorted(ptr, first + np.array(split(nnz, parts)), side="left")
    cut[-1] = len(ptr) - 1
    return cut


def combine_on(workers, eta, hist, words, mbstats):
    """``combine`` on the workers' threads by ranges of topics (the same bits)."""
    if workers is None or workers.threads == 1:
        return combine(eta, hist, words, mbstats)
    out = np.empty_like(hist)
    by_ranges(workers, hist.shape[0], lambda lo, hi: kern.combine_rows(eta, hist, words, mbstats, out, lo, hi))
    return out


def combine(eta, hist, words, mbstats):
    """lambda = eta + hist, then + mbstats (U, K) on the minibatch words: the online update of
    lambda written on the pseudo-counts (hist = (1 - rho) (lambda_old - eta))."""
    lam = hist + eta
    lam[:, words] += mbstats.T
    return lam


def rebuild_hist(origin, hist):
    """The rows ``origin`` (MoveState.origin) describes, from the rows ``hist`` they started as:
    the same operations in the same order, so the same bits as the moves' own result."""

    def row(o):
        if o is None:
            return np.zeros(hist.shape[1])
        if isinstance(o, tuple):
            return row(o[1]) + row(o[2])
        return hist[o]

    return np.array([row(o) for o in origin]).reshape(len(origin), hist.shape[1])


def stick_prior(beta, gamma):
    """log p(v* | gamma) of the sticks of beta* (online_hdp.log_stick_prior_and_grad)."""
    return float(kern.log_stick_prior(beta, float(gamma)))


@dataclass
class Minibatch:
    """Documents of a minibatch as local CSR arrays over their distinct words."""

    docs: np.ndarray  # (S,) document ids
    ptr: np.ndarray  # (S+1,) int64
    wid: np.ndarray  # (nnz,) int64 index into words
    cnt: np.ndarray  # (nnz,) float64
    words: np.ndarray  # (U,) int64 vocabulary ids
    _by_word: tuple = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, corpus, docs):
        docs = np.asarray(docs, dtype=np.int64)
        sub = corpus.subset(docs)
        words, wid = np.unique(sub.word_ids, return_inverse=True)
        return cls(docs, sub.doc_ptr, wid.astype(np.int64), sub.counts.astype(np.float64), words.astype(np.int64))

    @property
    def S(self):
        return len(self.docs)

    @property
    def U(self):
        return len(self.words)

    def by_word(self):
        """(word_ptr (U+1), tokens (nnz)): the entries t of each distinct word u, in increasing t
        (document order), are tokens[word_ptr[u]:word_ptr[u + 1]]; made once, on first use."""
        if self._by_word is None:
            self._by_word = kern.entries_by_word(self.wid, self.U)
        return self._by_word

    def word_sums(self, weights):
        """sum over the tokens of each distinct word of cnt * weights (U,), in entry order. On one
        thread at any thread count: a few thousand additions, less than waking the threads costs
        (on 2 threads this took twice one thread's time)."""
        return np.bincount(self.wid, weights=self.cnt * weights, minlength=self.U)


@dataclass
class Proposal:
    kind: str  # "split" or "merge"
    topics: tuple  # (k,) for a split, (k1, k2) for a merge
    delta: float  # change of the minibatch bound
    arrays: dict  # the new columns


class MoveState:
    """Everything the moves of one minibatch read and write (all arrays, K current topics).

    hist (K, W), mbstats (U, K): the parts of lambda - eta (module docstring)
    bhist, bmb (K+1): the two parts of beta* (entry K: the remainder)
    phi (nnz, K): varphi of every token of the minibatch; theta (S, K+1), consistent:
        theta_jk = alpha beta*_k + sum_w n_jw varphi_jwk
    alpha, eta, gamma: hyperparameters; scale = D/|S|; rho = rho_t.
    """

    def __init__(self, mb, W, scale, rho, hyper, parts, phi, theta, iterations=(5, 20, 1e-3), workers=None):
        """hyper: {alpha, eta, gamma}; parts: {hist, mbstats, bhist, bmb}; iterations:
        (split_iterations, split_local_iterations, local_tol); workers: the model's threads
        (topictool.threads.Workers) for the per-topic caches and a split's restricted local
        step, which are computed by topics or by documents (the same bits for any count)."""
        self.workers = workers
        self.mb, self.W, self.scale, self.rho = mb, int(W), float(scale), float(rho)
        self.alpha, self.eta, self.gamma = (float(hyper[k]) for k in ("alpha", "eta", "gamma"))
        self.hist, self.mbstats, self.bhist, self.bmb = (parts[k] for k in ("hist", "mbstats", "bhist", "bmb"))
        self.phi, self.theta = phi, theta
        self.ids = list(range(self.hist.shape[0]))  # stable names of the topics while indices shift
        # how each row of hist came from the rows it started with: an index, None (a zero row: a
        # split's new topic) or ("+", left, right) (a merge, added in that order); MPI ranks other
        # than rank 0 rebuild hist from it (``rebuild_hist``) instead of receiving K x W numbers
        self.origin = list(range(self.hist.shape[0]))
        self._chunks = None  # _split_local's chunks of documents (made on first use)
        its, local_its, tol = iterations
        self.split_iterations, self.split_local_iterations, self.local_tol = int(its), int(local_its), float(tol)
        self._refresh()

    # -- the current bound, by parts -----------------------------------------------

    @property
    def K(self):
        return self.hist.shape[0]

    @property
    def beta(self):
        return self.bhist + self.bmb

    def lam(self):
        """lambda (K, W), computed as the online update does: eta + hist, then + mb on U."""
        return combine_on(self.workers, self.eta, self.hist, self.mb.words, self.mbstats)

    def _lam_row(self, hist_row, mb_col):
        row = self.eta + hist_row
        row[self.mb.words] += mb_col
        return row

    def _refresh(self):
        """Per-topic caches of the current state: E[log phi] on U, column terms, T_k, the
        topics' minibatch token counts (``usage``); a move's proposal computes its new topics'.
        Every one of them is a topic's own, so each thread takes a range of topics and computes
        all of them for it (one wake of the threads; the rows of lambda it has just made are in
        its cache)."""
        from scipy.special import digamma

        mb, K, eta = self.mb, self.K, self.eta
        self.psi_sum = digamma(self.theta.sum(axis=1))
        lam = np.empty_like(self.hist)
        self.elog, self.col = np.empty((mb.U, K)), np.empty(K)
        self.T, elog_sum, self.used = np.empty(K), np.empty(K), np.empty(K)
        phi, theta, ab = (np.ascontiguousarray(a) for a in (self.phi, self.theta[:, :K], self.alpha * self.beta[:K]))

        def topics(lo, hi):
            kern.combine_rows(eta, self.hist, mb.words, self.mbstats, lam, lo, hi)
            kern.expected_log_topics_range(lam, mb.words, self.elog, lo, hi)
            args = (mb.ptr, mb.wid, mb.cnt, phi, theta, ab, self.elog, self.psi_sum, self.col)
            kern.column_terms_range(*args, lo, hi)
            kern.topic_terms_range(lam, eta, self.T, elog_sum, lo, hi)
            kern.weighted_column_sums(mb.cnt, phi, self.used, lo, hi)

        by_ranges(self.workers, K, topics)

    def _columns(self, phi, theta, ab, elog):
        """The column terms of the bound for a move's one or two new columns of phi, theta, on the
        calling thread (the whole state's: ``_refresh``)."""
        out = np.empty(phi.shape[1])
        mb = self.mb
        args = (mb.ptr, mb.wid, mb.cnt, *(np.ascontiguousarray(a) for a in (phi, theta, ab, elog)), self.psi_sum, out)
        kern.column_terms_range(*args, 0, phi.shape[1])
        return out

    def _topic_terms(self, rows, workers):
        """T_k of a move's one or two new rows (each row its own: a lone split's two on two
        threads)."""
        rows, n = np.ascontiguousarray(rows), rows.shape[0]
        out, elog_sum = np.empty(n), np.empty(n)
        by_ranges(workers, n, lambda lo, hi: kern.topic_terms_range(rows, self.eta, out, elog_sum, lo, hi))
        return out

    def _elog_rows(self, rows, workers):
        rows, n = np.ascontiguousarray(rows), rows.shape[0]
        out = np.empty((self.mb.U, n))
        by_ranges(workers, n, lambda lo, hi: kern.expected_log_topics_range(rows, self.mb.words, out, lo, hi))
        return out

    def full_bound(self):
        """L_S of the current state, recomputed from scratch (no caches)."""
        from scipy.special import digamma, gammaln

        lam = self.lam()
        K = self.K
        T = np.empty(K)
        kern.topic_terms(lam, self.eta, T, np.empty(K))
        elog = np.empty((self.mb.U, K))
        kern.expected_log_topics(lam, self.mb.words, elog)
        ab = self.alpha * self.beta
        tsum = self.theta.sum(axis=1)
        psi_sum = digamma(tsum)
        col = np.empty(K)
        kern.column_terms(
            self.mb.ptr,
            self.mb.wid,
            self.mb.cnt,
            np.ascontiguousarray(self.phi),
            np.ascontiguousarray(self.theta[:, :K]),
            np.ascontiguousarray(ab[:K]),
            elog,
            psi_sum,
            col,
        )
        rem = self.theta[:, K]
        rem_terms = gammaln(rem) - gammaln(ab[K]) + (ab[K] - rem) * (digamma(rem) - psi_sum)
        docs = gammaln(self.alpha) - gammaln(tsum) + rem_terms
        return stick_prior(self.beta, self.gamma) + T.sum() + self.scale * (col.sum() + docs.sum())

    def usage(self):
        """Minibatch token count of every topic, sum_j n_jk (K,; read only): a cache, kept by the
        moves (each column summed in entry order whether whole or new, so the same bits as
        summing varphi afresh; it was, 4-5 times a step, 3-4 % of one)."""
        view = self.used.view()
        view.flags.writeable = False
        return view

    # -- split ----------------------------------------------------------------------

    def propose_split(self, k, seed_doc=None):
        """The split of topic k into k' (keeps index k) and k'' (appended), as in the module
        docstring; None when topic k has no tokens in the minibatch or k'' ends with none.

        With ``seed_doc`` (a document of the minibatch; option split_init="seed", the default),
        the minibatch part of lambda_k'' starts from a word profile half that document's topic-k
        counts and half the whole minibatch's, rescaled to the minibatch's total, instead of the
        minibatch's alone. Without it (the paper's initialisation, split_init="paper") k'' starts
        as the minibatch's copy of topic k, and a topic that mixes two themes is split into two
        copies of the same mixture that the restricted iterations cannot pull apart: on bars, K
        then stalls well below 20. The half from the whole minibatch keeps every word of the
        topic in k'': started from one document alone, a word that document lacks starts at the
        prior in k'' and is never assigned to it, and a bar found that way lacks for good its
        word shared with the crossing bar (K0 = 2 on bars: 7 of 10 seeds recovered all 20 bars
        from one document's counts, 10 of 10 from the half-and-half profile).

        The whole history of topic k stays with k', as in the paper. (Dividing it between k' and
        k'' word by word, in the proportion the restricted iterations divide the minibatch's
        tokens, was tried: K0 = 2 then ended with 15-18 topics and 3-11 bars on 10 of 10 seeds.)"""
        part = self._split_part(k, seed_doc, self.workers)
        return None if part is None else self._split_proposal(k, part)

    def _split_part(self, k, seed_doc, workers):
        """The work of ``propose_split``: the restricted iterations and the new topics' terms and
        arrays. It reads topic k's entries of the state only, which the splits of other topics
        leave as they were, so splits of several topics can be worked out at once (``run_moves``)
        and judged in turn. ``workers``: the threads it runs on (None: the calling thread)."""
        mb, rho, scale, alpha = self.mb, self.rho, self.scale, self.alpha
        mass = self.phi[:, k].copy()
        n_k = self.theta[:, k] - alpha * self.beta[k]
        stats_k = mb.word_sums(mass)
        if stats_k.sum() <= 0.0:
            return None
        bh, bm = float(self.bhist[k]), float(self.bmb[k])
        if bh <= 0.0 or bm <= 0.0:
            return None
        # section 3.1: k' keeps the history, k'' takes the minibatch; varphi, theta divided by omega
        hist_a, hist_b = self.hist[k], np.zeros(self.W)
        mb_a, mb_b = np.zeros(mb.U), self.mbstats[:, k].copy()
        if seed_doc is not None:
            lo, hi = mb.ptr[seed_doc], mb.ptr[seed_doc + 1]
            seed = np.bincount(mb.wid[lo:hi], weights=mb.cnt[lo:hi] * mass[lo:hi], minlength=mb.U)
            if seed.sum() > 0.0:
                profile = 0.5 * seed / seed.sum() + 0.5 * stats_k / stats_k.sum()
                mb_b = profile * mb_b.sum()
        beta_a, beta_b = bh, bm
        omega = beta_a / (beta_a + beta_b)
        theta_a = omega * self.theta[:, k]
        theta_b = (1.0 - omega) * self.theta[:, k]
        phi_a = omega * mass
        sum_hist_a = float(hist_a.sum())
        for _ in range(self.split_iterations):
            elog_a, elog_b = self._split_elogs(hist_a, mb_a, sum_hist_a, mb_b, workers)
            args = (mb.ptr, mb.wid, mb.cnt, mass, elog_a, elog_b, alpha * beta_a, alpha * beta_b)
            self._split_local(workers, *args, theta_a, theta_b, phi_a, self.split_local_iterations, self.local_tol)
            stats_a = mb.word_sums(phi_a)
            stats_b = np.maximum(stats_k - stats_a, 0.0)
            n_a, n_b = stats_a.sum(), stats_b.sum()
            share_a = n_a / (n_a + n_b)
            mb_a = rho * scale * stats_a
            mb_b = rho * scale * stats_b
            beta_a, beta_b = bh + bm * share_a, bm * (1.0 - share_a)
            # theta consistent with the new beta*: theta_jk = alpha beta*_k + n_jk
            na_doc = self._doc_sums(phi_a)
            theta_a = alpha * beta_a + na_doc
            theta_b = alpha * beta_b + (n_k - na_doc)
        if beta_b <= 0.0 or beta_a <= 0.0:
            return None
        phi_b = mass - phi_a
        row_a = self._lam_row(hist_a, mb_a)
        row_b = self._lam_row(hist_b, mb_b)
        rows = np.vstack([row_a, row_b])
        elog = self._elog_rows(rows, workers)
        cols = self._columns(
            np.column_stack([phi_a, phi_b]),
            np.column_stack([theta_a, theta_b]),
            np.array([alpha * beta_a, alpha * beta_b]),
            elog,
        )
        T = self._topic_terms(rows, workers)
        arrays = dict(
            hist=(hist_a, hist_b),
            mbstats=(mb_a, mb_b),
            bhist=(bh, 0.0),
            bmb=(bm * share_a, bm * (1.0 - share_a)),
            phi=(phi_a, phi_b),
            theta=(theta_a, theta_b),
            elog=(elog[:, 0], elog[:, 1]),
            col=tuple(cols),
            T=tuple(T),
            used=(kern.weighted_sum(mb.cnt, phi_a), kern.weighted_sum(mb.cnt, phi_b)),
        )
        return arrays, T, cols, beta_a, beta_b

    def _split_proposal(self, k, part):
        """The Proposal of a split of topic k whose work ``part`` is done (``_split_part``), its
        change of the bound taken on the current topics (the stick prior's depends on K)."""
        arrays, T, cols, beta_a, beta_b = part
        beta_new = np.concatenate([self.beta[:k], [beta_a], self.beta[k + 1 : -1], [beta_b], self.beta[-1:]])
        delta = (
            T.sum()
            - self.T[k]
            + self.scale * (cols.sum() - self.col[k])
            + stick_prior(beta_new, self.gamma)
            - stick_prior(self.beta, self.gamma)
        )
        return Proposal("split", (k,), float(delta), arrays)

    def _split_local(self, workers, *args):
        """kernels.split_local; on the workers' threads by chunks of documents (each document's
        restricted step is its own: the same bits)."""
        if workers is None or workers.threads == 1:
            kern.split_local(*args)
            return
        # chunks handed out as threads finish: a document iterates until its split converges (one
        # sweep where topic k is absent, up to split_local_iterations where it is used), so blocks
        # of equal entries left one thread waiting (2 threads ran this 1.2x one thread's speed)
        if self._chunks is None:
            self._chunks = doc_blocks(self.mb.ptr, CHUNKS_PER_THREAD * workers.threads)
        cut = self._chunks
        workers.run(handed_out(len(cut) - 1, lambda c: kern.split_local_docs(*args, cut[c], cut[c + 1])))

    def _split_elogs(self, hist_a, mb_a, sum_hist_a, mb_b, workers):
        """E[log phi_w] on the minibatch words of a split's two topics, lambda = eta + hist + mb
        (k'' has no history: hist_b is zero), on the workers' threads by ranges of words."""
        U = self.mb.U
        total_a = sum_hist_a + self.eta * self.W + mb_a.sum()
        total_b = self.eta * self.W + mb_b.sum()
        elog_a, elog_b = np.empty(U), np.empty(U)
        args = (self.eta, self.mb.words, hist_a, mb_a, total_a, mb_b, total_b, elog_a, elog_b)
        by_ranges(workers, U, lambda lo, hi: kern.split_expected_logs(*args, lo, hi))
        return elog_a, elog_b

    def _doc_sums(self, phi_col):
        """sum_w n_jw phi_jw per document (S,), as differences of the running sum over the
        minibatch's entries (kernels.doc_sums_of_column)."""
        out = np.empty(self.mb.S)
        kern.doc_sums_of_column(self.mb.ptr, self.mb.cnt, phi_col, out)
        return out

    # -- merge ----------------------------------------------------------------------

    def merge_candidates(self, threshold):
        """Pairs (k1, k2), k1 < k2, whose E[pi_jk1], E[pi_jk2] have positive covariance across the
        minibatch (section 3.2) and a correlation (the covariance normalised by the two standard
        deviations) above ``threshold``, in decreasing order of the correlation.

        The covariance itself scales with the topics' sizes, so a threshold on it either admits
        every pair of large topics or no pair of small ones; the correlation picks out the
        fragments of one theme. On the movie reviews the bound favours merging almost any two
        of its broad topics (hdp-batch, too, ends with a higher bound at K = 10 than at K = 50
        but a worse held-out likelihood): with every positively correlated pair a candidate,
        K fell to 2-3 within three passes; with correlation > 0.6 it stays in the 20s-40s."""
        K = self.K
        if K < 2 or self.mb.S < 2:
            return []
        epi = self.theta[:, :K] / self.theta.sum(axis=1, keepdims=True)
        cov = np.empty((K, K))
        kern.column_covariance(epi, cov)
        sd = np.sqrt(np.maximum(np.diag(cov), 1e-300))
        iu, ju = np.triu_indices(K, 1)
        c = cov[iu, ju]
        r = c / (sd[iu] * sd[ju])
        keep = (c > 0.0) & (r > threshold)
        cor = r[keep]
        order = np.argsort(-cor, kind="stable")
        return [(int(a), int(b)) for a, b in zip(iu[keep][order], ju[keep][order])]

    def prune_empty(self):
        """Drop topics whose pseudo-counts sum_w (lambda_kw - eta) are below one token and that
        hold less than one token of the minibatch; their beta* moves to the remainder."""
        mass = self.hist.sum(axis=1) + self.mbstats.sum(axis=0)
        usage = self.usage()
        empty = np.flatnonzero((mass < 1.0) & (usage < 1.0))
        if len(empty) == 0 or len(empty) >= self.K:
            return 0
        keep = np.setdiff1d(np.arange(self.K), empty)
        keep1 = np.concatenate([keep, [self.K]])
        self.bhist[-1] += self.bhist[empty].sum()
        self.bmb[-1] += self.bmb[empty].sum()
        # their (sub-token) minibatch mass goes to the most used topic, as in a merge
        top = int(np.argmax(usage))
        self.phi[:, top] += self.phi[:, empty].sum(axis=1)
        self.theta[:, top] += (self.theta[:, empty] - self.alpha * self.beta[empty]).sum(axis=1)
        self.mbstats[:, top] += self.mbstats[:, empty].sum(axis=1)
        self.theta[:, self.K] = self.alpha * (self.bhist[-1] + self.bmb[-1])
        self.hist, self.mbstats = self.hist[keep], self.mbstats[:, keep]
        self.bhist, self.bmb = self.bhist[keep1], self.bmb[keep1]
        self.phi, self.theta = self.phi[:, keep], self.theta[:, keep1]
        self.ids = [self.ids[k] for k in keep]
        self.origin = [self.origin[k] for k in keep]
        self._refresh()
        return int(len(empty))

    def unused_topics(self, min_share):
        """Topics holding less than max(1, min_share * tokens) of the minibatch's tokens, least used
        first."""
        usage = self.usage()
        limit = max(1.0, min_share * float(self.mb.cnt.sum()))
        top = int(np.argmax(usage))
        return [int(k) for k in np.argsort(usage, kind="stable") if usage[k] < limit and k != top]

    def closest_topic(self, k):
        """The topic whose E[phi] is nearest to topic k's (largest Bhattacharyya coefficient):
        the partner an unused topic is proposed to merge into."""
        lam, bc = self.lam(), np.empty(self.K)
        by_ranges(self.workers, self.K, lambda lo, hi: kern.bhattacharyya(lam, k, bc, lo, hi))
        bc[k] = -np.inf
        return int(np.argmax(bc))

    def propose_merge(self, a, b):
        alpha = self.alpha
        hist_m = self.hist[a] + self.hist[b]
        mb_m = self.mbstats[:, a] + self.mbstats[:, b]
        phi_m = self.phi[:, a] + self.phi[:, b]
        theta_m = self.theta[:, a] + self.theta[:, b]
        bh = float(self.bhist[a] + self.bhist[b])
        bm = float(self.bmb[a] + self.bmb[b])
        row = self._lam_row(hist_m, mb_m)[None, :]
        elog = self._elog_rows(row, None)  # one row: inline (by_ranges)
        col = self._columns(phi_m[:, None], theta_m[:, None], np.array([alpha * (bh + bm)]), elog)
        T = self._topic_terms(row, None)
        beta = self.beta
        keep = [k for k in range(self.K) if k not in (a, b)]
        beta_new = np.concatenate([beta[keep], [bh + bm], beta[-1:]])
        delta = (
            T[0]
            - self.T[a]
            - self.T[b]
            + self.scale * (col[0] - self.col[a] - self.col[b])
            + stick_prior(beta_new, self.gamma)
            - stick_prior(beta, self.gamma)
        )
        arrays = dict(
            hist=hist_m,
            mbstats=mb_m,
            bhist=bh,
            bmb=bm,
            phi=phi_m,
            theta=theta_m,
            elog=elog[:, 0],
            col=float(col[0]),
            T=float(T[0]),
            used=kern.weighted_sum(self.mb.cnt, phi_m),
        )
        return Proposal("merge", (a, b), float(delta), arrays)

    # -- applying an accepted move ----------------------------------------------------

    def apply(self, p):
        """Make proposal p the current state. Returns the indices of the topics it produced."""
        if p.kind == "split":
            return self._apply_split(p)
        return self._apply_merge(p)

    # the state's arrays that have a topic axis, with that axis
    _TOPIC_AXES = (
        ("hist", 0),
        ("mbstats", 1),
        ("bhist", 0),
        ("bmb", 0),
        ("phi", 1),
        ("theta", 1),
        ("elog", 1),
        ("col", 0),
        ("T", 0),
        ("used", 0),
    )

    def _apply_split(self, p):
        """k' replaces topic k, k'' is inserted at index K (after the K topics, before a
        remainder entry). One new array each, written once (it is the largest part of a move)."""
        (k,) = p.topics
        K = self.K

        def fill(src, dst, new, s):
            dst[:K, s] = src[:K, s]
            dst[K + 1 :, s] = src[K:, s]
            dst[k, s] = new[0][s]
            dst[K, s] = new[1][s]

        self._rebuild(+1, fill, p.arrays)
        self.ids = self.ids + [max(self.ids) + 1]
        self.origin = self.origin + [None]
        return (self.ids[k], self.ids[K])

    def _apply_merge(self, p):
        """The merged topic replaces a, b (> a) is removed."""
        a, b = p.topics

        def fill(src, dst, new, s):
            dst[:b, s] = src[:b, s]
            dst[b:, s] = src[b + 1 :, s]
            dst[a, s] = new[s]

        self._rebuild(-1, fill, p.arrays)
        keep = self.ids[a]
        self.ids = self.ids[:b] + self.ids[b + 1 :]
        self.origin[a] = ("+", self.origin[a], self.origin[b])
        self.origin = self.origin[:b] + self.origin[b + 1 :]
        return (keep,)

    def _rebuild(self, change, fill, arrays):
        """Every array of _TOPIC_AXES anew with ``change`` more topics, written by
        fill(src, dst, new, s): src and dst with the topic axis first, the proposal's ``new``
        entries, s a slice of the other axis. On the workers' threads, thread t filling the t-th
        range of every 2-D array's other axis (copies are exact: the same bits for every T)."""
        parts = []
        for name, axis in self._TOPIC_AXES:
            old = np.asarray(getattr(self, name))
            shape = list(old.shape)
            shape[axis] += change
            arr = np.empty(shape, dtype=old.dtype)
            parts.append((np.moveaxis(old, axis, 0), np.moveaxis(arr, axis, 0), arrays[name]))
            setattr(self, name, arr)

        def run(t, T):
            for src, dst, new in parts:
                if src.ndim == 1:  # as a column: one entry per topic
                    if t == 0:
                        one = tuple(np.reshape(x, 1) for x in new) if change > 0 else np.reshape(new, 1)
                        fill(src[:, None], dst[:, None], one, slice(None))
                    continue
                n = src.shape[1]
                fill(src, dst, new, slice(n * t // T, n * (t + 1) // T))

        on_threads(self.workers, run)

    def arrays(self):
        """The state arrays (for tests: a rejected move must leave them bit-for-bit equal)."""
        return dict(
            hist=self.hist, mbstats=self.mbstats, bhist=self.bhist, bmb=self.bmb, phi=self.phi, theta=self.theta
        )


def run_moves(
    state,
    rng_uniform,
    max_splits,
    split_tries,
    merge_tries,
    merge_threshold,
    max_topics,
    margin=0.0,
    unused_share=1e-3,
    split_init="seed",
    log=None,
):
    """Propose splits, then merges, on ``state`` (a MoveState), accepting each that raises L_S by
    more than ``margin`` nats (and by more than rounding). Split candidates are drawn without
    replacement with probability proportional to their minibatch token counts, using
    ``rng_uniform()`` (a draw in [0, 1) from the model's stream); merge candidates come from
    ``merge_candidates``, recomputed after every accepted merge; before them, every topic in
    ``unused_topics(unused_share)`` is proposed once for merging into its nearest topic. A topic
    takes part in at most one accepted split or correlated merge per minibatch. Returns a dict of
    counts; ``log`` (a list) receives (kind, topics, delta) of every proposal."""
    counts = dict(
        splits_tried=0,
        splits_accepted=0,
        merges_tried=0,
        merges_accepted=0,
        unused_tried=0,
        unused_merged=0,
        moves_delta=0.0,
    )
    touched = set()
    tol = 1e-9 * max(1.0, abs(state.col.sum() * state.scale))

    def accept(p):
        if log is not None:
            log.append((p.kind, p.topics, p.delta))
        return p.delta > margin + tol

    # splits
    usage = state.usage()
    w = np.where(usage >= 1.0, usage, 0.0)
    candidates = []
    for _ in range(min(split_tries, int(np.count_nonzero(w)))):
        cum = np.cumsum(w)
        k = min(int(np.searchsorted(cum, rng_uniform() * cum[-1], side="right")), len(w) - 1)
        while w[k] == 0.0:  # rounding at the end of the cumulative sum
            k -= 1
        candidates.append(k)
        w[k] = 0.0
    # Splits append new topics, so the indices of the others stay valid, and a split reads only
    # its own topic's entries (MoveState._split_part): the next m candidates, which are tried
    # whatever becomes of the ones before them (even if all of them are accepted), are worked out
    # at once, one on each thread, and then judged and applied in turn -- the same proposals,
    # draws and outcomes as one after another. (On 2 threads a split's own steps ran 1.3x one
    # thread's speed: short kernels between Python.)
    workers = state.workers
    T = 1 if workers is None else workers.threads
    i = 0
    while i < len(candidates) and counts["splits_accepted"] < max_splits and state.K < max_topics:
        m = int(min(T, max_splits - counts["splits_accepted"], max_topics - state.K, len(candidates) - i))
        batch, seeds = candidates[i : i + m], []
        i += m
        for k in batch:
            counts["splits_tried"] += 1
            seed_doc = None
            if split_init == "seed":
                # a document of the minibatch, drawn with probability proportional to its tokens of k
                n_k = state._doc_sums(state.phi[:, k])
                cum = np.cumsum(n_k)
                seed_doc = min(int(np.searchsorted(cum, rng_uniform() * cum[-1], side="right")), len(cum) - 1)
            seeds.append(seed_doc)
        if m == 1:
            parts = [state._split_part(batch[0], seeds[0], workers)]
        else:
            parts = [None] * m

            def one_each(t, batch=batch, seeds=seeds, parts=parts):
                if t < len(batch):
                    parts[t] = state._split_part(batch[t], seeds[t], None)

            workers.run(one_each)
        for k, part in zip(batch, parts, strict=True):
            p = None if part is None else state._split_proposal(k, part)
            if p is not None and accept(p):
                touched.update(state.apply(p))
                counts["splits_accepted"] += 1
                counts["moves_delta"] += p.delta

    # topics with no pseudo-counts left (lambda = eta within one token, no minibatch token):
    # q(z = k) = 0 and q(phi_k) = p(phi_k), i.e. the topic is beyond the truncation already --
    # dropped (its beta* joins the remainder). The bound cannot judge this: for a point mass
    # q(beta) the stick term changes by log gamma per stick whatever the data say.
    counts["pruned"] = state.prune_empty()

    # topics that fell out of use: each proposed once for merging into the topic nearest to it
    # (not counted in merge_tries; the receiving topic may take several). The nearest topic is
    # where a stale copy of a theme belongs; the most used topic (the earlier partner) is an
    # arbitrary one, and a merge pours the unused topic's history into it.
    rejected, tried = set(), set()
    while True:
        small = [
            k for k in state.unused_topics(unused_share) if state.ids[k] not in touched and state.ids[k] not in tried
        ]
        if not small:
            break
        k = small[0]
        tried.add(state.ids[k])
        top = state.closest_topic(k)
        pair = (min(k, top), max(k, top))
        ik, itop = state.ids[k], state.ids[top]
        counts["unused_tried"] += 1
        p = state.propose_merge(*pair)
        if accept(p):
            state.apply(p)
            touched.discard(itop)
            counts["unused_merged"] += 1
            counts["moves_delta"] += p.delta
        else:
            rejected.add((ik, itop))

    # merges of correlated pairs
    budget = merge_tries
    while budget > 0:
        found = False
        for a, b in state.merge_candidates(merge_threshold):
            ia, ib = state.ids[a], state.ids[b]
            if ia in touched or ib in touched or (ia, ib) in rejected:
                continue
            found = True
            budget -= 1
            counts["merges_tried"] += 1
            p = state.propose_merge(a, b)
            if accept(p):
                touched.update(state.apply(p))
                touched.add(ib)
                counts["merges_accepted"] += 1
                counts["moves_delta"] += p.delta
                break  # indices changed: recompute the candidates
            rejected.add((ia, ib))
            if budget <= 0:
                break
        if not found:
            break
    return counts
