"""Synthetic corpora from the LIDA generative process (sparse θ and sparse φ), with the truth.

Archambeau, Lakshminarayanan & Bouchard (2015), finite K, symbols as in
`topictool.models.lida.kernels` (option names of the model in brackets: eta [theta_bar_mass],
delta [theta_bar_concentration], gamma [phi_bar_mass], lam [phi_bar_concentration]):

    π_k ~ Beta(ηδ/K, δ)         θ̄_kd ~ Bernoulli(π_k)      θ_d ~ Dirichlet(α) over {k: θ̄_kd = 1}
    κ_v ~ Beta(γλ/V, λ)         φ̄_vk ~ Bernoulli(κ_v)      φ_k ~ Dirichlet(β) over {v: φ̄_vk = 1}
    bag of words of d ~ Multinomial(length, θ_d φ)

One departure, so that every document and topic is defined: a document that draws no
active topic draws its row of θ̄ again, and a topic that draws no active word its column of
φ̄ again (the process conditioned on at least one of each).
"""

import numpy as np

from ...corpus import Corpus
from ...errors import InputError
from ...synth import check_positive, check_size, docs_from_mixtures, make_rng


def _bernoulli_rows(rng, p, n):
    """n rows of independent Bernoulli(p) (p a vector), each redrawn until it has a one."""
    out = rng.random((n, len(p))) < p
    empty = ~out.any(axis=1)
    while empty.any():
        out[empty] = rng.random((int(empty.sum()), len(p))) < p
        empty = ~out.any(axis=1)
    return out


def _sparse_dirichlet_rows(rng, conc, mask):
    """Dirichlet(conc) over the True entries of each row of ``mask``, zero elsewhere."""
    g = rng.gamma(conc, size=mask.shape) * mask
    s = g.sum(axis=1, keepdims=True)
    bad = s[:, 0] <= 0  # every gamma underflowed: the mass goes to the first active entry
    if bad.any():
        first = np.argmax(mask[bad], axis=1)
        g[bad] = 0.0
        g[np.flatnonzero(bad), first] = 1.0
        s = g.sum(axis=1, keepdims=True)
    return g / s


def lida(
    topics=20,
    vocab_size=500,
    documents=1000,
    test_documents=100,
    length=100,
    alpha=1.0,
    beta=0.5,
    eta=5.0,
    delta=1.0,
    gamma=50.0,
    lam=1.0,
    seed=1,
):
    """Returns (train Corpus, test Corpus, truth). Truth arrays:

    phi (K, V), theta (D, K), theta_test, alpha (K): α π_k, the effective Dirichlet prior of a
    new document (what a snapshot's alpha estimates); theta_bar (D, K), theta_bar_test,
    phi_bar (K, V) (aligned with phi), pi (K), kappa (V); theta_bar_density (of the training
    documents) and phi_bar_density (fractions of ones); alpha_active = α and beta = β.
    """
    check_positive(
        topics=topics,
        vocab_size=vocab_size,
        documents=documents,
        length=length,
        alpha=alpha,
        beta=beta,
        eta=eta,
        delta=delta,
        gamma=gamma,
        lam=lam,
    )
    if test_documents < 0:
        raise InputError(f"--test-documents must be >= 0, got {test_documents}")
    K, V = int(topics), int(vocab_size)
    check_size(documents + test_documents, length, K, V)
    rng = make_rng(seed)
    pi = rng.beta(eta * delta / K, delta, size=K)
    kappa = rng.beta(gamma * lam / V, lam, size=V)
    phi_bar = _bernoulli_rows(rng, kappa, K)  # (K, V): row k = column k of φ̄
    phi = _sparse_dirichlet_rows(rng, float(beta), phi_bar)
    n = documents + test_documents
    theta_bar = _bernoulli_rows(rng, pi, n)  # (D + D_test, K)
    theta = _sparse_dirichlet_rows(rng, float(alpha), theta_bar)
    lengths = np.full(n, int(length))
    width = len(str(V - 1))
    vocab = [f"w{i:0{width}d}" for i in range(V)]
    train = docs_from_mixtures(rng, theta[:documents], phi, lengths[:documents], vocab)
    if test_documents:
        test = docs_from_mixtures(rng, theta[documents:], phi, lengths[documents:], vocab)
    else:  # (docs_from_mixtures needs at least one document)
        test = Corpus(
            np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), tuple(vocab)
        )
    truth = dict(
        phi=phi,
        theta=theta[:documents],
        theta_test=theta[documents:],
        alpha=alpha * pi,
        theta_bar=theta_bar[:documents].astype(np.uint8),
        theta_bar_test=theta_bar[documents:].astype(np.uint8),
        phi_bar=phi_bar.astype(np.uint8),
        pi=pi,
        kappa=kappa,
        theta_bar_density=np.float64(theta_bar[:documents].mean()),
        phi_bar_density=np.float64(phi_bar.mean()),
        alpha_active=np.float64(alpha),
        beta=np.float64(beta),
    )
    return train, test, truth
