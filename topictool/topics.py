"""Word rankings for topics, topic-list files and their writers.

Rankings of word v in topic k (phi is K x W, rows sum to 1):

    prob        phi_kv
    term-score  phi_kv * log(phi_kv / (prod_j phi_jv)^(1/K))      (Blei & Lafferty 2009)
                = phi_kv * (log phi_kv - mean_j log phi_jv)
    lift        phi_kv / p(v),  p(v) = sum_k topic_weight_k phi_kv  (the corpus word distribution)

``top_words`` returns, per topic, the ``top`` words in decreasing score (ties
broken by word id). Topic-list text files (format ``txt``) hold one topic per
line, words separated by single spaces; ``read_topics_file`` reads them back and
also accepts integer word ids in place of words (hca's ``.toplst`` style).
"""

import csv
import io
import json
from pathlib import Path

import numpy as np

from . import store
from .errors import InputError, existing_file

RANKS = ("term-score", "prob", "lift")
FORMATS = ("table", "json", "csv", "txt")


def _log(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


def term_score(phi):
    """Blei & Lafferty (2009): phi_kv * log(phi_kv / geometric mean over topics of phi_jv)."""
    phi = np.asarray(phi, dtype=np.float64)
    logphi = _log(phi)
    with np.errstate(invalid="ignore"):
        score = phi * (logphi - logphi.mean(axis=0, keepdims=True))
    # a zero phi_kv scores 0 (the limit x log x -> 0); a word with phi_jv = 0 in
    # another topic has geometric mean 0 and an infinite score where phi_kv > 0
    score[phi == 0] = 0.0
    return score


def corpus_word_distribution(phi, topic_weight):
    """p(v) = sum_k w_k phi_kv with the topic weights normalised (uniform if all zero)."""
    phi = np.asarray(phi, dtype=np.float64)
    w = np.asarray(topic_weight, dtype=np.float64)
    s = w.sum()
    w = w / s if s > 0 else np.full(phi.shape[0], 1.0 / phi.shape[0])
    return w @ phi


def lift(phi, topic_weight):
    """phi_kv / p(v); 0 where p(v) = 0."""
    p = corpus_word_distribution(phi, topic_weight)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(p > 0, np.asarray(phi, dtype=np.float64) / p, 0.0)
    return out


def scores(snapshot, rank="term-score"):
    """K x W matrix of the chosen ranking."""
    if rank == "prob":
        return np.asarray(snapshot.phi, dtype=np.float64)
    if rank == "term-score":
        return term_score(snapshot.phi)
    if rank == "lift":
        return lift(snapshot.phi, snapshot.topic_weight)
    raise InputError(f"--rank {rank!r}: expected one of {', '.join(RANKS)}")


def top_word_ids(score, top):
    """Per row, the ``top`` column indices in decreasing score, ties by index (K x top)."""
    K, W = score.shape
    top = min(int(top), W)
    if top <= 0:
        return np.zeros((K, 0), dtype=np.int64)
    out = np.empty((K, top), dtype=np.int64)
    for k in range(K):
        row = score[k]
        if top < W:
            # candidates: everything scoring at least the top-th largest value
            cut = np.partition(row, W - top)[W - top]
            cand = np.flatnonzero(row >= cut)
        else:
            cand = np.arange(W)
        order = np.lexsort((cand, -row[cand]))
        out[k] = cand[order[:top]]
    return out


def top_words(snapshot, top=10, rank="term-score"):
    """[(topic index, topic weight, [words], [scores])] for every topic, in index order."""
    if int(top) < 1:
        raise InputError(f"--top {top}: must be >= 1")
    s = scores(snapshot, rank)
    ids = top_word_ids(s, top)
    w = np.asarray(snapshot.topic_weight, dtype=np.float64)
    total = w.sum()
    weights = w / total if total > 0 and abs(total - 1.0) > 1e-12 else w
    vocab = snapshot.vocab
    out = []
    for k in range(s.shape[0]):
        out.append((k, float(weights[k]), [vocab[i] for i in ids[k]], [float(x) for x in s[k, ids[k]]]))
    return out


# ----------------------------------------------------------------------------
# writers


def topics_json(topics, rank=None):
    """The --json shape: {"topics": [{"index", "weight", "words", "scores"}]} (non-finite scores -> null)."""
    obj = {
        "topics": [
            {"index": k, "weight": wt, "words": words, "scores": [_finite(x) for x in sc]}
            for k, wt, words, sc in topics
        ]
    }
    if rank is not None:
        obj["rank"] = rank
    return obj


def render(topics, fmt, rank=None):
    """The text of ``topics`` in format json, csv or txt."""
    if fmt == "json":
        return json.dumps(topics_json(topics, rank), indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["topic", "weight", "position", "word", "score"])
        for k, wt, words, sc in topics:
            for pos, (word, s) in enumerate(zip(words, sc)):
                writer.writerow([k, repr(wt), pos, word, repr(s)])
        return buf.getvalue()
    if fmt == "txt":
        lines = []
        for k, _, words, _ in topics:
            bad = [w for w in words if not w or any(c.isspace() for c in w)]
            if bad:
                raise InputError(f"topic {k}: word {bad[0]!r} contains whitespace and cannot be written as txt")
            lines.append(" ".join(words))
        return "\n".join(lines) + "\n"
    raise InputError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")


def _finite(x):
    return x if np.isfinite(x) else None


def write_topics(topics, path, fmt="txt", rank=None):
    """Write ``topics`` atomically to ``path`` (json, csv or txt)."""
    store.write_text(path, render(topics, fmt, rank))


def print_topics_table(topics, rank="term-score"):
    from .cli.common import print_table

    rows = [(k, f"{wt:.4f}", " ".join(words)) for k, wt, words, _ in topics]
    print_table(f"Top words ({rank})", [("topic", "right"), ("weight", "right"), "words"], rows)


# ----------------------------------------------------------------------------
# reader


def read_topic_lines(path):
    """[(line number, tokens)] of a topic-list file's lines that are neither blank nor '#' comments."""
    path = existing_file(path, "a topics file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text ({e.reason} at byte {e.start})", path) from None
    lines = [(n, line.split()) for n, line in enumerate(text.splitlines(), 1)]
    return [(n, tokens) for n, tokens in lines if tokens and not tokens[0].startswith("#")]


def word_id(token, index, W, path, line):
    """The id of ``token``: a word of ``index`` (word -> id; may be None) first, else an integer
    id below W; InputError naming the file and line otherwise."""
    if index is not None and token in index:
        return index[token]
    try:
        i = int(token)
    except ValueError:
        raise InputError(f"word {token!r} is not in the vocabulary", path, line) from None
    if not 0 <= i < W:
        raise InputError(f"word id {i} outside the vocabulary of {W} words", path, line)
    return i


def read_topics_file(path, vocab=None):
    """Read a topic-list file: one topic per line, words (or integer ids) separated by whitespace.

    Blank lines and lines starting with '#' are skipped. Without ``vocab``,
    returns a list of lists of the tokens as written (str). With ``vocab`` (a
    sequence of words, or a path to a file with one word per line), returns a
    list of lists of int word ids: a token is looked up as a word first, and
    only if it is not a word of the vocabulary is it read as an integer id
    (0-based); anything else is an InputError naming the line.
    """
    if vocab is not None and isinstance(vocab, (str, Path)):
        from .corpus.vocabulary import read_vocab

        vocab = read_vocab(vocab)
    index = None if vocab is None else {w: i for i, w in enumerate(vocab)}
    topics = []
    for lineno, tokens in read_topic_lines(path):
        if index is None:
            topics.append(tokens)
        else:
            topics.append([word_id(t, index, len(index), path, lineno) for t in tokens])
    if not topics:
        raise InputError("no topics in the file", path)
    return topics
