"""topictool's plain text model format (docs/formats-text-model.md): its reader and writer."""

import json
from pathlib import Path

import numpy as np

from .. import store
from ..errors import InputError
from .common import DEFAULT_ALPHA_SUM, _finish, _numbers, _read_text, _word_list, align, complete_rows

TEXT_SUFFIXES = {
    "phi": ".phi.txt",
    "vocab": ".vocab.txt",
    "alpha": ".alpha.txt",
    "weights": ".weights.txt",
    "meta": ".meta.json",
}


def text_paths(prefix):
    return {k: Path(f"{prefix}{s}") for k, s in TEXT_SUFFIXES.items()}


def import_text(prefix, vocab_path=None, report=None):
    """Import a model in topictool's plain text format (docs/formats-text-model.md).

    Files (PREFIX + suffix):
      .phi.txt      K lines of W numbers (topic-word probabilities or weights); required
      .vocab.txt    W words, one per line; required unless ``vocab_path`` is given, in
                    which case the columns are taken to be in that vocabulary's order
      .alpha.txt    K numbers; optional (default: 5/K each, reported)
      .weights.txt  K numbers, corpus topic proportions; optional (default: alpha normalised)
      .meta.json    optional JSON object: {"meta": {...}, "burst_concentration": [K numbers],
                    "burst_discount": number}
      vocab_path    vocabulary to align to (file, prepared corpus directory, or words).
      report        optional list; the import's messages are appended to it.
    """
    p = text_paths(prefix)
    messages = []
    files = {"phi": str(p["phi"])}
    text = _read_text(p["phi"], "phi of a text model")
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        try:
            rows.append(np.array([float(t) for t in s.split()], dtype=np.float64))
        except ValueError:
            raise InputError("expected whitespace-separated numbers", p["phi"], lineno) from None
        if len(rows[-1]) != len(rows[0]):
            raise InputError(f"{len(rows[-1])} numbers but the first topic has {len(rows[0])}", p["phi"], lineno)
    if not rows:
        raise InputError("no topics in the file", p["phi"])
    weights = np.vstack(rows)
    K, W = weights.shape

    target = None if vocab_path is None else _word_list(vocab_path)
    if p["vocab"].exists():
        words = _word_list(p["vocab"])
        files["vocab"] = str(p["vocab"])
        if len(words) != W:
            raise InputError(f"{len(words)} words but the phi file has {W} columns", p["vocab"])
    elif target is not None:
        if len(target) != W:
            raise InputError(f"the phi file has {W} columns but the vocabulary has {len(target)} words", p["phi"])
        words = target
    else:
        raise InputError(f"no vocabulary: expected {p['vocab'].name} beside the phi file, or give one", p["phi"])

    def per_topic(key, what):
        """K numbers from the optional file p[key], or None when it is absent."""
        if not p[key].exists():
            return None
        values = _numbers(_read_text(p[key], what), p[key], what)
        files[key] = str(p[key])
        if len(values) != K:
            raise InputError(f"{len(values)} numbers but the model has {K} topics", p[key])
        return values

    alpha = per_topic("alpha", "alpha")
    if alpha is None:
        alpha = np.full(K, DEFAULT_ALPHA_SUM / K)
        messages.append(f"no {p['alpha'].name}: using symmetric alpha = {DEFAULT_ALPHA_SUM:g}/K")
    topic_weight = per_topic("weights", "topic weights")
    if topic_weight is None:
        topic_weight = alpha
    meta, burst = {}, None
    if p["meta"].exists():
        files["meta"] = str(p["meta"])
        try:
            obj = json.loads(_read_text(p["meta"], "meta"))
        except ValueError as e:
            raise InputError(f"not valid JSON: {e}", p["meta"]) from None
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object", p["meta"])
        meta = obj.get("meta") or {}
        if not isinstance(meta, dict):
            raise InputError('"meta" must be a JSON object', p["meta"])
        if obj.get("burst_concentration") is not None:
            bc = np.asarray(obj["burst_concentration"], dtype=np.float64)
            if bc.shape != (K,):
                raise InputError(f"burst_concentration must have {K} entries", p["meta"])
            burst = (bc, float(obj.get("burst_discount") or 0.0))

    aligned, vocab = align(weights, words, target, messages, "text model")
    phi = complete_rows(aligned, messages, "text model")
    if not meta:
        meta = {"model": "import:text", "source": {"format": "text", "files": files}}
    return _finish(phi, alpha, topic_weight, vocab, meta, messages, p["phi"], burst, report)


def export_text(snapshot, prefix):
    """Write ``snapshot`` in the plain text format; returns the paths written.

    Numbers are written with 17 significant digits, so import_text(prefix)
    gives back the identical arrays (and vocabulary, meta and burst arrays).
    """
    p = text_paths(prefix)
    bad = [w for w in snapshot.vocab if not w or w != w.strip() or "\n" in w or "\r" in w]
    if bad:
        raise InputError(f"word {bad[0]!r} cannot be written one per line")
    _write_matrix(p["phi"], np.asarray(snapshot.phi, dtype=np.float64))
    store.write_text(p["vocab"], "".join(w + "\n" for w in snapshot.vocab))
    _write_matrix(p["alpha"], np.asarray(snapshot.alpha, dtype=np.float64)[:, None])
    _write_matrix(p["weights"], np.asarray(snapshot.topic_weight, dtype=np.float64)[:, None])
    obj = {"meta": snapshot.meta or {}}
    if snapshot.burst_concentration is not None:
        obj["burst_concentration"] = [float(x) for x in np.asarray(snapshot.burst_concentration)]
        obj["burst_discount"] = float(snapshot.burst_discount or 0.0)
    store.write_text(p["meta"], json.dumps(obj, indent=2, sort_keys=True) + "\n")
    return list(p.values())


def _write_matrix(path, a):
    with store.atomic_open(path, "w") as f:
        np.savetxt(f, a, fmt="%.17g", delimiter=" ")
