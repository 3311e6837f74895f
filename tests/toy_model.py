"""A model from outside the tool, for tests/test_model_protocol.py: a mixture of unigrams
(every document has one topic) by collapsed Gibbs sampling, written against the Model
protocol alone. Registering it is the only thing topictool needs to train, checkpoint,
resume, evaluate and describe it.

    p(z_d = k | z_-d, w) ∝ (m_k + alpha) prod_w Gamma(n_kw + c_dw + beta) / Gamma(n_kw + beta)
                          * Gamma(n_k + W beta) / Gamma(n_k + N_d + W beta)

(m_k documents and n_kw, n_k tokens of topic k without document d; c_dw its word counts.)
"""

import numpy as np
from scipy.special import gammaln

from topictool.errors import InputError
from topictool.kernels.rng import uniform
from topictool.models.base import PRIOR, Model, doc_topic_counts
from topictool.snapshot import Snapshot


class DocumentMixture(Model):
    name = "toy-mixture"
    step_unit = "sweep"
    eval_method = "gibbs"
    defaults = {"K": 10, "alpha": 1.0, "beta": 0.1}
    limits = {**Model.limits, "alpha": PRIOR, "beta": PRIOR}
    state_arrays = ("z",)

    def allocate(self):
        self.token_ptr, self.words = self.corpus.tokens()
        self.z = np.zeros(self.D, dtype=np.int32)
        self.alpha, self.beta = float(self.opts["alpha"]), float(self.opts["beta"])

    def initialise(self):
        for d in range(self.D):
            self.z[d] = int(uniform(self.rng, 0) * self.K)
        self.restored()

    def restored(self):
        if self.z.min() < 0 or self.z.max() >= self.K:
            raise InputError(f"state has topics outside 0..{self.K - 1}")
        self.n_kw = np.zeros((self.K, self.W), dtype=np.int64)
        for d in range(self.D):
            self._move(d, self.z[d], +1)

    def _words(self, d):
        return self.words[self.token_ptr[d] : self.token_ptr[d + 1]]

    def _move(self, d, k, sign):
        np.add.at(self.n_kw[k], self._words(d), sign)

    def step(self):
        K, Wb = self.K, self.W * self.beta
        m = np.bincount(self.z, minlength=K)
        for d in range(self.D):
            words, counts = np.unique(self._words(d), return_counts=True)
            k = self.z[d]
            self._move(d, k, -1)
            m[k] -= 1
            n_k = self.n_kw.sum(axis=1)
            nkw = self.n_kw[:, words] + self.beta
            logp = (
                np.log(m + self.alpha)
                + (gammaln(nkw + counts) - gammaln(nkw)).sum(axis=1)
                + gammaln(n_k + Wb)
                - gammaln(n_k + counts.sum() + Wb)
            )
            p = np.cumsum(np.exp(logp - logp.max()))
            k = min(int(np.searchsorted(p, uniform(self.rng, 0) * p[-1], side="right")), K - 1)
            self.z[d] = k
            self._move(d, k, +1)
            m[k] += 1
        self.iteration += 1
        return {"topics_used": int((m > 0).sum())}

    def snapshot(self):
        phi = (self.n_kw + self.beta) / (self.n_kw.sum(axis=1, keepdims=True) + self.W * self.beta)
        weight = np.bincount(self.z, minlength=self.K) + self.alpha
        return Snapshot(
            phi=phi, alpha=np.full(self.K, self.alpha), topic_weight=weight / weight.sum(), vocab=self.corpus.vocab
        )

    def log_likelihood(self):
        phi = self.snapshot().phi
        return float(np.log(phi[np.repeat(self.z, np.diff(self.token_ptr)), self.words]).sum())

    def check_invariants(self):
        assert self.n_kw.sum() == self.N

    def doc_topics(self):
        return doc_topic_counts(self.token_ptr, np.repeat(self.z, np.diff(self.token_ptr)), self.K)
