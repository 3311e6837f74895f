"""Snapshot: the portable estimate of a topic model (DESIGN.md, snapshot .npz)."""

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import store
from .errors import InputError


@dataclass
class Snapshot:
    phi: np.ndarray  # (K, W) rows sum to 1, posterior mean incl. prior smoothing
    alpha: np.ndarray  # (K,) effective Dirichlet prior on a document's proportions
    topic_weight: np.ndarray  # (K,) corpus topic proportions
    vocab: tuple  # (W,) words
    meta: dict = field(default_factory=dict)
    burst_concentration: np.ndarray = None  # (K,) for models with the burstiness front end
    burst_discount: float = None

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
        return self

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
