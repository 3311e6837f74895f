"""The burstiness front end (Doyle & Elkan 2009; Buntine & Mishra 2014, sect. 4).

Every document d and topic k get their own word distribution

    psi_{d,k} ~ PYP(a_psi, b_psi_k, phi_k)

(a_psi = ``burst_discount``, one concentration b_psi_k = ``burst_concentration[k]`` per
topic), marginalised like every other node (pyp.py): in document d, topic k holds
N_dk tokens (= n_dk of the document side) at S_dk tables, n_wk of them word w at s_wk
tables. Only a token that opens a table (burst indicator r = 1) is a draw from phi_k,
i.e. reaches the topic model; r = 0 tokens repeat a word already cached in the document.

Sampling factor of topic k for a token of word w, other tokens' counts given
(p_k(w) is the topic model's factor for w, e.g. the word side of eq. 4):

  s_wk > 0                                                                    (paper eq. 6)
      r = 1:  (b_psi_k + a_psi S_dk) / (b_psi_k + N_dk) * S^{n+1}_{s+1}/S^n_s (s+1)/(n+1) * p_k(w)
      r = 0:  1 / (b_psi_k + N_dk)                      * S^{n+1}_s/S^n_s (n-s+1)/(n+1)
  n_wk = s_wk = 0                                                             (paper eq. 7)
      r = 1:  (b_psi_k + a_psi S_dk) / (b_psi_k + N_dk) * p_k(w)

(n = n_wk, s = s_wk, Stirling numbers at discount a_psi). A word occurring once in a
document always has n_wk = s_wk = 0 when it is sampled, so only words that occur more
than once need per-document counts: the samplers walk a document's CSR row (one entry
per distinct word, tokens of a word consecutive), number the entries with count >= 2 as
"slots", and keep n_wk, s_wk for slots only — rebuilt from (z, r) when the sweep enters
the document, so the state adds one byte (r) per token.

Hyper-parameters: b_psi_k is sampled per topic from
    sum_d [log (b|a)_{S_dk} - log (b)_{N_dk}] + log prior(b),
a_psi from sum_{d,k} log (b_k|a)_{S_dk} + sum_{d,w,k} log S^{n_wk}_{s_wk,a} (hyper.py).
"""

import numba
import numpy as np

from ... import kernels  # noqa: F401  (before any kernel: the cache key, kernels/__init__.py)
from .pyp import indicator_weights


# Eq. 6 / eq. 7 for one topic: returns (coefficient of p_k(w) for r = 1, weight of r = 0).
@numba.njit(cache=True, nogil=True, inline="always")
def burst_weights(R, a, b, n, s, S, N):
    inv = 1.0 / (b + N)
    if s == 0:
        return (b + a * S) * inv, 0.0
    A, B = indicator_weights(R, a, n, s)
    return (b + a * S) * inv * A, B * inv


def max_slots(corpus):
    """The largest number of distinct words occurring more than once in one document."""
    multi = (corpus.counts >= 2).astype(np.int64)
    c = np.concatenate([[0], np.cumsum(multi)])
    per_doc = c[corpus.doc_ptr[1:]] - c[corpus.doc_ptr[:-1]]
    return int(per_doc.max()) if len(per_doc) else 0


def max_in_document_count(corpus):
    return int(corpus.counts.max()) if corpus.nnz else 1


# Per document d0..d1-1, from (z, r): every (k, N_dk, S_dk) with N_dk > 0 and every multi-word
# (k, n_wk, s_wk) with n_wk > 0, in document order. i0: the first token of document d0. Output
# arrays sized by the documents' tokens; returns the counts used.
@numba.njit(cache=True, nogil=True)
def burst_statistics(
    doc_ptr, counts, z, r, K, n_slots, topic_k, topic_N, topic_S, pair_k, pair_n, pair_s, d0, d1, i0
):  # fmt: skip
    N_k = np.zeros(K, dtype=np.int64)
    S_k = np.zeros(K, dtype=np.int64)
    nw = np.zeros((max(n_slots, 1), K), dtype=np.int64)
    sw = np.zeros((max(n_slots, 1), K), dtype=np.int64)
    n_topic = 0
    n_pair = 0
    i = i0
    for d in range(d0, d1):
        doc_first = i
        slot = 0
        for e in range(doc_ptr[d], doc_ptr[d + 1]):
            c = counts[e]
            first = i
            for _ in range(c):
                k = z[i]
                N_k[k] += 1
                if r[i]:
                    S_k[k] += 1
                if c >= 2:
                    nw[slot, k] += 1
                    if r[i]:
                        sw[slot, k] += 1
                i += 1
            if c >= 2:
                for j in range(first, i):
                    k = z[j]
                    if nw[slot, k] > 0:
                        pair_k[n_pair] = k
                        pair_n[n_pair] = nw[slot, k]
                        pair_s[n_pair] = sw[slot, k]
                        n_pair += 1
                        nw[slot, k] = 0
                        sw[slot, k] = 0
                slot += 1
        for j in range(doc_first, i):
            k = z[j]
            if N_k[k] > 0:
                topic_k[n_topic] = k
                topic_N[n_topic] = N_k[k]
                topic_S[n_topic] = S_k[k]
                n_topic += 1
                N_k[k] = 0
                S_k[k] = 0
    return n_topic, n_pair
