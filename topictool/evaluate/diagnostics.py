"""Diagnostics of a model (snapshot) and of a training run (run directory).

Definitions (entropies in nats):

effective_topics     exp(H(w)), w = the corpus topic proportions (topic_weight,
                     normalised; zero entries ignored). Equals K for uniform
                     weights and 1 when one topic holds everything (hca's
                     "exp.ent").
proportion           w_k.
effective_words      exp(H(phi_k)) (hca's "ew").
hellinger_corpus     Hellinger distance between phi_k and the corpus word
                     distribution p(v) = sum_j w_j phi_jv:
                     H(P, Q) = sqrt(1 - sum_v sqrt(P_v Q_v)), in [0, 1].
                     (hca's "pd" reports a different scaling of the same idea.)
hellinger_uniform    the same distance from phi_k to the uniform distribution over
                     the vocabulary (hca's "ud").
doc_sparsity         fraction of training documents in which topic k has no
                     token (hca's "ds"). It needs document-topic counts, so it is
                     reported only for a run directory whose model defines them
                     (``Model.doc_topics()``, rebuilt from the latest checkpoint and
                     the training corpus); for a snapshot alone it is null: a
                     snapshot carries no document-level information.

Run figures (from RUN/run.json and RUN/metrics.jsonl, read defensively):
iterations (run.json "iterations_done", else the last logged iteration), seconds
(run.json "seconds_total", else the sum of the logged per-iteration "seconds"),
tokens_per_s (mean of the logged "tokens_per_s"), bytes_per_token (run.json
"bytes_per_token": memory of the sampler state per training token), model,
options.
"""

import json
import math
from pathlib import Path

import numpy as np

from ..models.base import effective_topics
from ..topics import corpus_word_distribution


def _row_entropies(phi):
    phi = np.asarray(phi, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(phi > 0, phi * np.log(phi), 0.0)
    return -plogp.sum(axis=1)


def hellinger(P, q):
    """Hellinger distance of each row of P to the distribution q: sqrt(1 - sum sqrt(P q))."""
    P = np.atleast_2d(np.asarray(P, dtype=np.float64))
    bc = np.sqrt(P * np.asarray(q, dtype=np.float64)[None, :]).sum(axis=1)
    return np.sqrt(np.clip(1.0 - bc, 0.0, 1.0))


def model_diagnostics(snapshot, doc_topic_counts=None):
    """{"effective_topics", "K", "W", "topics": [per-topic dicts]} for a Snapshot.

    doc_topic_counts: optional (D, K) array of per-document topic counts, which
    gives doc_sparsity; without it doc_sparsity is None.
    """
    phi = np.asarray(snapshot.phi, dtype=np.float64)
    K, W = phi.shape
    w = np.asarray(snapshot.topic_weight, dtype=np.float64)
    total = w.sum()
    w = w / total if total > 0 else np.full(K, 1.0 / K)
    p = corpus_word_distribution(phi, w)
    eff_words = np.exp(_row_entropies(phi))
    h_corpus = hellinger(phi, p)
    h_uniform = hellinger(phi, np.full(W, 1.0 / W))
    sparsity = None
    if doc_topic_counts is not None:
        counts = np.asarray(doc_topic_counts)
        if counts.ndim == 2 and counts.shape[1] == K and counts.shape[0] > 0:
            sparsity = (counts == 0).mean(axis=0)
    topics = []
    for k in range(K):
        topics.append(
            {
                "index": k,
                "proportion": float(w[k]),
                "effective_words": float(eff_words[k]),
                "hellinger_corpus": float(h_corpus[k]),
                "hellinger_uniform": float(h_uniform[k]),
                "doc_sparsity": None if sparsity is None else float(sparsity[k]),
            }
        )
    return {"effective_topics": effective_topics(w), "K": int(K), "W": int(W), "topics": topics}


# ----------------------------------------------------------------------------
# run directories


def _read_json(path):
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}


def read_metrics(path):
    """The JSON objects of a metrics.jsonl file; unreadable lines (e.g. a torn last line) skipped."""
    rows = []
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return rows
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            rows.append(obj)
    return rows


def _number(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return x if math.isfinite(x) else None


def run_figures(run_dir):
    """Iterations, wall time, mean tokens/s and bytes per token of a run directory (None where unknown)."""
    run_dir = Path(run_dir)
    info = _read_json(run_dir / "run.json")
    metrics = read_metrics(run_dir / "metrics.jsonl")
    iterations = _number(info.get("iterations_done"))
    if iterations is None:
        its = [_number(m.get("iteration")) for m in metrics]
        its = [i for i in its if i is not None]
        iterations = max(its) if its else None
    seconds = _number(info.get("seconds_total"))
    if seconds is None:
        secs = [_number(m.get("seconds")) for m in metrics]
        secs = [s for s in secs if s is not None]
        seconds = float(sum(secs)) if secs else None
    rates = [_number(m.get("tokens_per_s")) for m in metrics]
    rates = [r for r in rates if r is not None]
    options = info.get("options")
    return {
        "model": info.get("model") if isinstance(info.get("model"), str) else None,
        "iterations": None if iterations is None else int(iterations),
        "seconds": seconds,
        "tokens_per_s": float(np.mean(rates)) if rates else None,
        "bytes_per_token": _number(info.get("bytes_per_token")),
        "options": options if isinstance(options, dict) else None,
    }


def run_doc_topic_counts(run_dir, K):
    """(D, K) topic counts of the training documents at a run's latest checkpoint, from the
    model's own doc_topics(); None when the model defines none or its corpus is gone."""
    from ..errors import InputError
    from ..training import model_of_run

    try:
        counts = model_of_run(run_dir).doc_topics()
    except InputError:  # an optional figure: a moved corpus is not an error of `info`
        return None
    if counts is None:
        return None
    counts = np.asarray(counts)
    return counts if counts.ndim == 2 and counts.shape[1] == K else None
