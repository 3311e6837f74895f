"""Snapshot: the portable estimate of a topic model (DESIGN.md, snapshot .npz)."""

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import store
from .errors import InputError

DOC_TOPIC_KEYS = ("doc_topic_ptr", "doc_topic_topic", "doc_topic_count")


def doc_topic_csr(dense=None, token_ptr=None, z=None, K=None):
    """Topic counts of documents as compact CSR (ptr int64, topic int16/int32, count int32),
    from a dense (D, K) table or from every token's topic z (documents cut by token_ptr)
    without building the dense table."""
    if dense is not None:
        dense = np.asarray(dense)
        D, K = dense.shape
        doc, topic = np.nonzero(dense)
        count = dense[doc, topic]
    else:
        D = len(token_ptr) - 1
        doc_of = np.repeat(np.arange(D, dtype=np.int64), np.diff(token_ptr))
        keys, count = np.unique(doc_of * K + np.asarray(z, dtype=np.int64), return_counts=True)
        doc, topic = keys // K, keys % K
    ptr = np.zeros(D + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc, minlength=D), out=ptr[1:])
    return ptr, topic.astype(np.int16 if K < 2**15 else np.int32), count.astype(np.int32)


@dataclass
class Snapshot:
    phi: np.ndarray  # (K, W) rows sum to 1, posterior mean incl. prior smoothing
    alpha: np.ndarray  # (K,) effective Dirichlet prior on a document's proportions
    topic_weight: np.ndarray  # (K,) corpus topic proportions
    vocab: tuple  # (W,) words
    meta: dict = field(default_factory=dict)
    burst_concentration: np.ndarray = None  # (K,) for models with the burstiness front end
    burst_discount: float = None
    # the training documents' topic counts of a Gibbs model, CSR: document d holds topics
    # doc_topics[1][ptr[d]:ptr[d+1]] with counts doc_topics[2][...]; ptr = doc_topics[0]
    doc_topics: tuple = None

    @property
    def K(self):
        return self.phi.shape[0]

    @property
    def W(self):
        return self.phi.shape[1]

    def check(self, path=None):
        phi = self.phi
        if phi.ndim != 2 or phi.shape[1] != len(self.vocab):
            raise InputError(f"phi has shape {phi.shape} but the vocabulary has {len(self.vocab)} words", path)
        if self.alpha.shape != (phi.shape[0],) or self.topic_weight.shape != (phi.shape[0],):
            raise InputError("alpha and topic_weight must have one entry per topic", path)
        for name in ("phi", "alpha", "topic_weight"):
            a = getattr(self, name)
            if not np.all(np.isfinite(a)):
                raise InputError(f"{name} has NaN or infinite entries", path)
        if np.any(phi < 0) or not np.allclose(phi.sum(axis=1), 1.0, atol=1e-6):
            raise InputError("phi rows must be non-negative and sum to 1", path)
        if self.doc_topics is not None:
            ptr, topic, count = self.doc_topics
            ok = ptr.ndim == 1 and len(ptr) >= 1 and ptr[0] == 0 and np.all(np.diff(ptr) >= 0)
            ok = ok and ptr[-1] == len(topic) == len(count) and np.all(count > 0)
            if not ok or (len(topic) and (topic.min() < 0 or topic.max() >= phi.shape[0])):
                raise InputError("doc_topic arrays are not a CSR table of topic counts", path)
        return self

    def doc_topic_matrix(self):
        """The training documents' topic counts as a dense (D, K) array, or None."""
        if self.doc_topics is None:
            return None
        ptr, topic, count = self.doc_topics
        out = np.zeros((len(ptr) - 1, self.K), dtype=np.int64)
        out[np.repeat(np.arange(len(ptr) - 1), np.diff(ptr)), topic] = count
        return out

    def save(self, path):
        arrays = dict(
            phi=np.asarray(self.phi, dtype=np.float64),
            alpha=np.asarray(self.alpha, dtype=np.float64),
            topic_weight=np.asarray(self.topic_weight, dtype=np.float64),
            vocab_utf8=store.encode_words(self.vocab),
            meta=np.array(json.dumps(self.meta, sort_keys=True)),
        )
        if self.burst_concentration is not None:
            arrays["burst_concentration"] = np.asarray(self.burst_concentration, dtype=np.float64)
            arrays["burst_discount"] = np.float64(self.burst_discount)
        if self.doc_topics is not None:
            arrays.update(zip(DOC_TOPIC_KEYS, self.doc_topics))
        self.check(path)
        store.write_npz(path, **arrays)

    @classmethod
    def load(cls, path):
        a = store.load_npz(path, required=("phi", "alpha", "topic_weight"))
        try:
            meta = json.loads(str(a["meta"])) if "meta" in a else {}
        except ValueError:
            raise InputError("meta is not valid JSON", path) from None
        snap = cls(
            phi=a["phi"].astype(np.float64),
            alpha=a["alpha"].astype(np.float64),
            topic_weight=a["topic_weight"].astype(np.float64),
            vocab=store.decode_words(a, "vocab", path),
            meta=meta,
            burst_concentration=a.get("burst_concentration"),
            burst_discount=float(a["burst_discount"]) if "burst_discount" in a else None,
            doc_topics=tuple(a[k] for k in DOC_TOPIC_KEYS) if all(k in a for k in DOC_TOPIC_KEYS) else None,
        )
        return snap.check(path)


def load_model(path):
    """A run directory -> its model.npz as a Snapshot; a snapshot .npz -> Snapshot."""
    p = Path(path)
    if p.is_dir():
        m = p / "model.npz"
        if not m.exists():
            raise InputError("run directory has no model.npz (no snapshot written yet)", p)
        return Snapshot.load(m)
    if not p.exists():
        raise InputError("no such file or directory", p)
    return Snapshot.load(p)
