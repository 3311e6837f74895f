"""lda-scvb0: stochastic collapsed variational Bayes (zero order) for LDA (Foulds,
Boyles, DuBois, Smyth & Welling, "Stochastic Collapsed Variational Bayesian
Inference for Latent Dirichlet Allocation", KDD 2013, Algorithm 1).

Symbols (the paper's): K topics, W words, C tokens in the corpus, C_j tokens in
document j; alpha, eta the symmetric Dirichlet priors; gamma_ij (K) the variational
distribution of the topic of token i of document j; expected counts N^Theta_j (K,
per document), N^Phi (W x K, topic-word) and N^Z (K, topic totals). For a minibatch
M of documents (|M| = its number of tokens):

  for each document j in M, ``burn_in`` passes and then a final pass over its tokens:
    gamma_ijk ∝ (N^Phi_{w_ij k} + eta) (N^Theta_jk + alpha) / (N^Z_k + W eta)            (F1)
    N^Theta_j <- (1 - rho^Theta_t) N^Theta_j + rho^Theta_t C_j gamma_ij                   (F2)
    (final pass only) Nhat^Phi_{w_ij} += C / |M| gamma_ij,   Nhat^Z += C / |M| gamma_ij
  then
    N^Phi <- (1 - rho^Phi_t) N^Phi + rho^Phi_t Nhat^Phi                                   (F3)
    N^Z   <- (1 - rho^Phi_t) N^Z   + rho^Phi_t Nhat^Z                                     (F4)

  rho^Phi_t = s_phi / (tau_phi + t)^kappa, t counting minibatches over the run;
  rho^Theta_t = s_theta / (tau_theta + t)^kappa, t counting token updates of the
  document in this visit (burn-in included), from 0. Defaults (s, tau, kappa) =
  (10, 1000, 0.9) and (1, 10, 0.9) as in the paper.

Implementation notes.
- N^Phi and N^Z are one lazily decayed table (``kernels``: scale * A), so (F3)-(F4)
  cost O(K x distinct words of the minibatch), not O(K W); Nhat^Phi is accumulated
  in a dense scratch table whose touched rows are cleared after each minibatch.
- N^Phi, N^Z are fixed during a minibatch (as in the paper), so 1 / (N^Z + W eta) is
  computed once per minibatch.
- N^Theta_j is kept for every document (D x K) and carried from pass to pass.
- ``clumping``: one update per distinct word of a document, scaled by its count m
  (the paper's Sec. 3.3): gamma is computed once and (F2) applied as m updates
  with that gamma, N^Theta_j <- c N^Theta_j + (1 - c) C_j gamma with
  c = prod_{i<m} (1 - rho^Theta_{t+i}), i.e. (1 - rho)^m for a constant step.
- Tokens of a document are visited in the corpus's order (word id ascending, the
  copies of a word together); the documents of each pass in random order.
- Start: every distinct word of every document gets a random soft assignment
  (normalised uniforms), and the three count tables are their sums.
- One ``step()`` is one pass over the corpus in minibatches of ``minibatch`` documents.
"""

import numba
import numpy as np

from ...snapshot import Snapshot
from . import kernels as kern
from .common import VariationalModel, check_at_least, check_K, check_kappa, check_positive

# ----------------------------------------------------------------------------
# kernels


# One SCVB0 pass (F1)-(F4) over the documents in ``order``; N^Phi = scale * phi_wk, N^Z = scale * n_z.
# acc (W x K) and acc_z (K) are zero on entry and exit; mark (W) is -1 on entry and exit.
# Returns (scale, t).
@numba.njit(cache=True, nogil=True)
def _scvb0_pass(
    doc_ptr,
    word_ids,
    counts,
    doc_len,
    order,
    minibatch,
    n_theta,
    phi_wk,
    n_z,
    scale,
    acc,
    acc_z,
    mark,
    touched,
    alpha,
    eta,
    C,
    s_phi,
    tau_phi,
    s_theta,
    tau_theta,
    kappa,
    t,
    burn_in,
    clumping,
):
    W, K = phi_wk.shape
    D = order.shape[0]
    gam = np.empty(K, dtype=np.float64)
    inv_nz = np.empty(K, dtype=np.float64)
    for lo in range(0, D, minibatch):
        hi = min(lo + minibatch, D)
        for k in range(K):
            inv_nz[k] = 1.0 / (scale * n_z[k] + W * eta)
        n_touched = 0
        tokens = 0
        for b in range(lo, hi):
            d = order[b]
            Cj = doc_len[d]
            tokens += Cj
            td = 0
            for p in range(burn_in + 1):
                final = p == burn_in
                for i in range(doc_ptr[d], doc_ptr[d + 1]):
                    w = word_ids[i]
                    m = counts[i]
                    reps = 1 if clumping else m
                    weight = m if clumping else 1
                    if final and mark[w] < 0:
                        mark[w] = n_touched
                        touched[n_touched] = w
                        n_touched += 1
                    for _r in range(reps):
                        total = 0.0
                        for k in range(K):  # (F1)
                            x = (scale * phi_wk[w, k] + eta) * inv_nz[k] * (n_theta[d, k] + alpha)
                            gam[k] = x
                            total += x
                        inv = 1.0 / total
                        c = kern.keep_fraction(s_theta, tau_theta, kappa, td, weight)
                        f = (1.0 - c) * Cj * inv
                        for k in range(K):  # (F2)
                            n_theta[d, k] = c * n_theta[d, k] + f * gam[k]
                        td += weight
                        if final:
                            g = weight * inv
                            for k in range(K):
                                acc[w, k] += g * gam[k]
                                acc_z[k] += g * gam[k]
        # (F3)-(F4): N <- (1 - rho) N + rho C/|M| sum gamma
        rho = kern.step_size(s_phi, tau_phi, kappa, t)
        scale = kern.decay_scaled(phi_wk, n_z, scale, rho)
        if tokens > 0:
            f = rho * C / tokens / scale
            for j in range(n_touched):
                w = touched[j]
                for k in range(K):
                    phi_wk[w, k] += f * acc[w, k]
                    acc[w, k] = 0.0
                mark[w] = -1
            for k in range(K):
                n_z[k] += f * acc_z[k]
                acc_z[k] = 0.0
        t += 1
    return scale, t


# ----------------------------------------------------------------------------
# the model


class LdaScvb0(VariationalModel):
    """Stochastic collapsed variational Bayes (CVB0) for LDA; see the module docstring."""

    name = "lda-scvb0"
    defaults = {
        "K": 100,
        "alpha": 0.1,
        "eta": 0.01,
        "minibatch": 100,
        "burn_in": 1,
        "clumping": False,
        "s_phi": 10.0,
        "tau_phi": 1000.0,
        "s_theta": 1.0,
        "tau_theta": 10.0,
        "kappa": 0.9,
    }
    _arrays = ("n_theta", "phi_wk", "n_z")
    _scalars = {"scale": float, "t": int}

    def _check_options(self, o):
        check_K(o)
        check_positive(o, "alpha", "eta", "s_phi", "s_theta")
        for name in ("tau_phi", "tau_theta"):
            if not (o[name] >= 0):
                from ...errors import InputError

                raise InputError(f"option {name}={o[name]!r}: must be >= 0")
        check_kappa(o)
        check_at_least(o, "minibatch", 1)
        check_at_least(o, "burn_in", 0)

    def _allocate(self):
        K, W, D = self.K, self.W, self.D
        self.n_theta = np.zeros((D, K), dtype=np.float64)  # N^Theta
        self.phi_wk = np.zeros((W, K), dtype=np.float64)  # N^Phi / scale
        self.n_z = np.zeros(K, dtype=np.float64)  # N^Z / scale
        self.scale = 1.0
        self.t = 0
        self._acc = np.zeros((W, K), dtype=np.float64)
        self._acc_z = np.zeros(K, dtype=np.float64)
        self._mark = np.full(W, -1, dtype=np.int64)
        self._touched = np.zeros(W, dtype=np.int64)

    def _initialise(self):
        kern.soft_init(
            self.doc_ptr,
            self.word_ids,
            self.counts,
            self.rng,
            0,
            self.n_theta,
            self.phi_wk,
            self.n_z,
            np.zeros((0, self.K), dtype=np.float32),
            np.zeros(0),
        )

    def step(self):
        """One pass over the corpus in random order, in minibatches of ``minibatch`` documents."""
        o = self.opts
        order = self._epoch_order()
        self.scale, self.t = _scvb0_pass(
            self.doc_ptr,
            self.word_ids,
            self.counts,
            self.doc_len,
            order,
            np.int64(o["minibatch"]),
            self.n_theta,
            self.phi_wk,
            self.n_z,
            np.float64(self.scale),
            self._acc,
            self._acc_z,
            self._mark,
            self._touched,
            np.float64(o["alpha"]),
            np.float64(o["eta"]),
            np.float64(self.N),
            np.float64(o["s_phi"]),
            np.float64(o["tau_phi"]),
            np.float64(o["s_theta"]),
            np.float64(o["tau_theta"]),
            np.float64(o["kappa"]),
            np.int64(self.t),
            np.int64(o["burn_in"]),
            bool(o["clumping"]),
        )
        self.epoch += 1
        self.documents_seen += self.D
        return {
            "epoch": self.epoch,
            "documents_seen": self.documents_seen,
            "minibatches": int(self.t),
            "rho_phi": float(kern.step_size(o["s_phi"], o["tau_phi"], o["kappa"], self.t - 1)),
        }

    def check_invariants(self):
        """The topic totals equal the sums of the (lazily decayed) topic-word table."""
        self._check_table(self.phi_wk, self.n_z, "N^Phi")

    # -- estimates -----------------------------------------------------------------------

    def topic_word(self):
        """(N^Phi + eta) / (N^Z + W eta), as (K, W)."""
        eta = self.opts["eta"]
        phi = (self.scale * self.phi_wk + eta) / (self.scale * self.n_z + self.W * eta)
        return np.ascontiguousarray(phi.T)

    def snapshot(self):
        phi = self.topic_word()
        phi /= phi.sum(axis=1, keepdims=True)
        return Snapshot(
            phi=phi,
            alpha=np.full(self.K, self.opts["alpha"]),
            topic_weight=self.n_z / self.n_z.sum(),
            vocab=self.corpus.vocab,
            meta=self._meta(minibatches=int(self.t)),
        )

    def log_likelihood(self):
        """Training log-likelihood of theta_j = (N^Theta_j + alpha) / (C_j + K alpha), phi as in the snapshot."""
        phi_wk = np.ascontiguousarray(self.topic_word().T)
        return float(
            kern.point_log_likelihood(
                self.doc_ptr, self.word_ids, self.counts, self.n_theta, np.full(self.K, self.opts["alpha"]), phi_wk
            )
        )
