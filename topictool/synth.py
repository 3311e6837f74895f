"""Synthetic corpora with a known truth: bars, LDA and HDP generative processes.

Each generator returns (train Corpus, test Corpus, truth dict of arrays). The
bag of words of a document is drawn as Multinomial(length, theta_d @ phi),
which is the LDA generative process with the topic assignments marginalised.
"""

import numpy as np

from .corpus import Corpus
from .errors import InputError


def make_rng(seed):
    return np.random.default_rng(np.random.PCG64(int(seed)))


def docs_from_mixtures(rng, theta, phi, lengths, vocab):
    """Counts of each document's words; theta (D, K) rows, phi (K, V) rows."""
    D = theta.shape[0]
    ptr = np.zeros(D + 1, dtype=np.int64)
    words, counts = [], []
    block = 256  # bound the (block, V) dense probability matrix
    for lo in range(0, D, block):
        hi = min(lo + block, D)
        p = theta[lo:hi] @ phi
        p /= p.sum(axis=1, keepdims=True)
        bag = rng.multinomial(lengths[lo:hi], p)
        for i, row in enumerate(bag):
            nz = np.flatnonzero(row)
            words.append(nz.astype(np.int32))
            counts.append(row[nz].astype(np.int32))
            ptr[lo + i + 1] = ptr[lo + i] + len(nz)
    if not words:
        return Corpus(ptr, np.zeros(0, np.int32), np.zeros(0, np.int32), tuple(vocab))
    return Corpus(ptr, np.concatenate(words), np.concatenate(counts), tuple(vocab))


def _dirichlet_rows(rng, alpha, n):
    """n draws from Dirichlet(alpha), robust to tiny parameters (no all-zero rows)."""
    g = rng.gamma(np.broadcast_to(alpha, (n, len(alpha))))
    s = g.sum(axis=1, keepdims=True)
    bad = s[:, 0] <= 0
    if bad.any():  # every gamma underflowed: put the mass on the largest parameter
        g[bad] = 0.0
        g[bad, int(np.argmax(alpha))] = 1.0
        s = g.sum(axis=1, keepdims=True)
    return g / s


def _split(rng, truth_theta, phi, D, lengths, vocab):
    train = docs_from_mixtures(rng, truth_theta[:D], phi, lengths[:D], vocab)
    test = docs_from_mixtures(rng, truth_theta[D:], phi, lengths[D:], vocab)
    return train, test


def check_positive(**kw):
    for k, v in kw.items():
        try:
            ok = v is not None and 0 < float(v) <= 1e12
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise InputError(f"--{k.replace('_', '-')} must be a positive number (at most 1e12), got {v}")


def check_size(documents, length, K, V):
    """Refuse, before generating, a corpus that cannot fit in memory (a lower bound of
    what generation allocates: mixtures, topics and the CSR arrays)."""
    from .memory import check_memory

    n = int(documents)
    check_memory(
        8 * n * K + 8 * K * V + 16 * n * min(int(length), V) + 8 * n,
        f"generating {n:,} documents of {int(length):,} words (K={K:,}, V={V:,})",
    )


def bars(documents=2000, test_documents=200, length=250, alpha=1.0, side=10, seed=1):
    """Griffiths & Steyvers (2004) bars: a side x side grid, one topic per row and column."""
    check_positive(documents=documents, length=length, alpha=alpha, side=side)
    V, K = side * side, 2 * side
    check_size(documents + test_documents, length, K, V)
    phi = np.zeros((K, V))
    for r in range(side):
        phi[r, r * side : (r + 1) * side] = 1.0 / side  # row r
        phi[side + r, r::side] = 1.0 / side  # column r
    rng = make_rng(seed)
    a = np.full(K, float(alpha))
    theta = _dirichlet_rows(rng, a, documents + test_documents)
    lengths = np.full(documents + test_documents, int(length))
    vocab = [f"r{i // side}c{i % side}" for i in range(V)]
    train, test = _split(rng, theta, phi, documents, lengths, vocab)
    truth = dict(phi=phi, theta=theta[:documents], theta_test=theta[documents:], alpha=a)
    return train, test, truth


def parse_alpha(alpha, K):
    """A float, or K comma-separated floats."""
    if isinstance(alpha, str):
        try:
            vals = [float(x) for x in alpha.split(",")]
        except ValueError:
            raise InputError(f"--alpha {alpha!r}: expected a number or {K} comma-separated numbers") from None
    else:
        vals = [float(alpha)]
    if len(vals) == 1:
        vals = vals * K
    if len(vals) != K or not all(np.isfinite(v) and 0 < v <= 1e12 for v in vals):
        raise InputError(f"--alpha needs one positive value or {K} of them, got {len(vals)}")
    return np.array(vals)


def lda(
    topics=10,
    vocab_size=500,
    documents=1000,
    test_documents=100,
    length=100,
    alpha="0.1",
    beta=0.01,
    poisson_length=False,
    seed=1,
):
    """The LDA generative process with symmetric Dirichlet(beta) topics."""
    check_positive(topics=topics, vocab_size=vocab_size, documents=documents, length=length, beta=beta)
    check_size(documents + test_documents, length, topics, vocab_size)
    rng = make_rng(seed)
    a = parse_alpha(alpha, topics)
    phi = _dirichlet_rows(rng, np.full(vocab_size, float(beta)), topics)
    theta = _dirichlet_rows(rng, a, documents + test_documents)
    n = documents + test_documents
    lengths = np.maximum(rng.poisson(length, n), 1) if poisson_length else np.full(n, int(length))
    width = len(str(vocab_size - 1))
    vocab = [f"w{i:0{width}d}" for i in range(vocab_size)]
    train, test = _split(rng, theta, phi, documents, lengths, vocab)
    truth = dict(phi=phi, theta=theta[:documents], theta_test=theta[documents:], alpha=a)
    return train, test, truth


def hdp(
    truncation=50,
    gamma=5.0,
    alpha=1.0,
    beta=0.05,
    vocab_size=500,
    documents=1000,
    test_documents=100,
    length=100,
    seed=1,
):
    """Truncated HDP: global weights GEM(gamma), documents DP(alpha) over them, topics Dirichlet(beta)."""
    check_positive(
        truncation=truncation,
        gamma=gamma,
        alpha=alpha,
        beta=beta,
        vocab_size=vocab_size,
        documents=documents,
        length=length,
    )
    check_size(documents + test_documents, length, truncation, vocab_size)
    rng = make_rng(seed)
    T = int(truncation)
    sticks = rng.beta(1.0, gamma, size=T)
    sticks[-1] = 1.0
    weights = sticks * np.concatenate([[1.0], np.cumprod(1.0 - sticks[:-1])])
    phi = _dirichlet_rows(rng, np.full(vocab_size, float(beta)), T)
    n = documents + test_documents
    theta = _dirichlet_rows(rng, alpha * weights, n)
    lengths = np.full(n, int(length))
    width = len(str(vocab_size - 1))
    vocab = [f"w{i:0{width}d}" for i in range(vocab_size)]
    train, test = _split(rng, theta, phi, documents, lengths, vocab)
    used = theta[:documents].T @ lengths[:documents]
    used = used / used.sum()
    nz = used[used > 0]
    truth = dict(
        phi=phi,
        theta=theta[:documents],
        theta_test=theta[documents:],
        alpha=alpha * weights,
        global_weights=weights,
        topic_weight=used,
        effective_topics=np.float64(np.exp(-(nz * np.log(nz)).sum())),
        topics_above_1pct=np.int64((used > 0.01).sum()),
    )
    return train, test, truth
