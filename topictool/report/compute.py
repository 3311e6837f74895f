"""The figures the report, `export ldavis` and `export dfr-browser` share.

Definitions (phi: K x W, rows p(w|k); w_k: the corpus topic proportions, normalised):

    p(w)          sum_k w_k phi_kw: the corpus word distribution the model implies
                  (topics.corpus_word_distribution)
    logprob_kw    log phi_kw
    loglift_kw    log phi_kw - log p(w)
    relevance     lambda * logprob_kw + (1 - lambda) * loglift_kw      (Sievert & Shirley 2014)
                  lambda = 1 ranks by probability, lambda = 0 by lift
    ranking       decreasing relevance, ties by word id (as topics.top_word_ids)
    candidates    per topic, the union over the lambda grid 0, step, 2 step, ..., 1 of the top R
                  words: every word any grid value shows, so a page holding only these words
                  ranks exactly as the whole vocabulary would at every grid value
    JSD           Jensen-Shannon divergence between two topics (natural log, in [0, log 2])
    coordinates   classical MDS (principal coordinate analysis) of the JSD matrix, as pyLDAvis's
                  default js_PCoA: double-centred -D^2/2, its two leading eigenvectors scaled by
                  the square roots of their eigenvalues; each axis's sign fixed so that its
                  largest-magnitude coordinate is positive
    saliency(w)   p(w) * sum_k p(k|w) log(p(k|w) / w_k), p(k|w) = w_k phi_kw / p(w)
                  (Chuang, Manning & Heer 2012): the words of the view with no topic selected

A phi_kw of exactly 0 (possible in sparse models) takes the log of the smallest positive double
instead of -inf, so every figure is finite and such words rank last, by id.
"""

from pathlib import Path

import numpy as np

from ..errors import InputError
from ..topics import corpus_word_distribution, top_word_ids

TINY = np.finfo(np.float64).tiny


def topic_proportions(topic_weight):
    """The topic weights normalised to sum 1 (uniform when they are all zero)."""
    w = np.asarray(topic_weight, dtype=np.float64)
    s = w.sum()
    return w / s if s > 0 else np.full(len(w), 1.0 / len(w))


def log_terms(phi, topic_weight):
    """(logprob (K, W), loglift (K, W), p(w) (W,)) of the module docstring."""
    phi = np.asarray(phi, dtype=np.float64)
    p = corpus_word_distribution(phi, topic_weight)
    logprob = np.log(np.maximum(phi, TINY))
    loglift = logprob - np.log(np.maximum(p, TINY))[None, :]
    return logprob, loglift, p


def relevance(logprob, loglift, lam):
    """lambda * logprob + (1 - lambda) * loglift, elementwise (as the page computes it)."""
    lam = float(lam)
    return lam * logprob + (1.0 - lam) * loglift


def lambda_grid(step=0.01):
    """0, step, ..., 1 as i / n (n = round(1 / step)): each value the double nearest to the
    decimal, as the page's Math.round(x * n) / n gives it."""
    n = int(round(1.0 / step))
    if n < 1 or abs(n * step - 1.0) > 1e-9:
        raise InputError(f"lambda step {step}: must divide 1 (0.01, 0.05, 0.1, ...)")
    return [i / n for i in range(n + 1)]


def ranking(logprob, loglift, lam, R):
    """(K, R) word ids of each topic's top R words by relevance at ``lam``."""
    return top_word_ids(relevance(logprob, loglift, lam), R)


def candidates(logprob, loglift, R, step=0.01):
    """Per topic, the sorted word ids in the top R at some lambda of the grid."""
    K = logprob.shape[0]
    sets = [set() for _ in range(K)]
    for lam in lambda_grid(step):
        ids = ranking(logprob, loglift, lam, R)
        for k in range(K):
            sets[k].update(ids[k].tolist())
    return [np.array(sorted(s), dtype=np.int64) for s in sets]


def saliency(phi, topic_weight):
    """(W,) saliency of each word (module docstring)."""
    phi = np.asarray(phi, dtype=np.float64)
    w = topic_proportions(topic_weight)
    p = corpus_word_distribution(phi, w)
    with np.errstate(divide="ignore", invalid="ignore"):
        given = np.where(p > 0, w[:, None] * phi / p[None, :], 0.0)  # p(k|w)
        ratio = np.where((given > 0) & (w[:, None] > 0), given / w[:, None], 1.0)
    return p * (given * np.log(ratio)).sum(axis=0)


def jsd_matrix(phi):
    """(K, K) Jensen-Shannon divergences between the rows of phi (natural log), as
    H(m) - (H(p) + H(q)) / 2 with m = (p + q) / 2 (one logarithm per word and pair)."""
    from scipy.special import xlogy

    phi = np.asarray(phi, dtype=np.float64)
    K = phi.shape[0]
    ent = -xlogy(phi, phi).sum(axis=1)
    out = np.zeros((K, K))
    for i in range(K - 1):
        m = 0.5 * (phi[i][None, :] + phi[i + 1 :])
        d = -xlogy(m, m).sum(axis=1) - 0.5 * (ent[i] + ent[i + 1 :])
        out[i, i + 1 :] = out[i + 1 :, i] = np.maximum(d, 0.0)
    return out


def pcoa(dist, dims=2):
    """(K, dims) classical MDS coordinates of a symmetric distance matrix (module docstring)."""
    d = np.asarray(dist, dtype=np.float64)
    K = d.shape[0]
    coords = np.zeros((K, dims))
    if K < 2:
        return coords
    J = np.eye(K) - 1.0 / K
    B = -0.5 * J @ (d * d) @ J
    vals, vecs = np.linalg.eigh((B + B.T) / 2)
    order = np.argsort(-vals, kind="stable")[:dims]
    for j, i in enumerate(order):
        v = vecs[:, i]
        if v[np.argmax(np.abs(v))] < 0:
            v = -v
        coords[:, j] = v * np.sqrt(max(vals[i], 0.0))
    return coords


def topic_coordinates(phi):
    """(K, 2) intertopic distance map: PCoA of the JSD matrix."""
    return pcoa(jsd_matrix(phi))


def training_tokens(snapshot, corpus=None):
    """(N, corpus path or None): the number of training tokens, from ``corpus`` (a prepared
    corpus or any CORPUS) when given, else the snapshot's record, else the corpus it recorded
    (when it is still there); N is None when none of these tells."""
    from ..corpus import load_corpus

    meta = snapshot.meta if isinstance(snapshot.meta, dict) else {}
    if corpus is not None:
        c = load_corpus(corpus)
        if c.W != snapshot.W:
            raise InputError(f"the corpus has {c.W} words but the model's vocabulary has {snapshot.W}", corpus)
        return int(c.N), str(corpus)
    recorded = meta.get("corpus") if isinstance(meta.get("corpus"), str) else None
    tokens = meta.get("tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
        return tokens, recorded
    if recorded and (Path(recorded) / "corpus.json").is_file():
        try:
            c = load_corpus(recorded)
        except InputError:
            return None, recorded
        if c.W == snapshot.W:
            return int(c.N), recorded
    return None, recorded
