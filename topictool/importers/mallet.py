"""Mallet's topic-word weights (--topic-word-weights-file) and topic keys (--output-topic-keys)."""

import math
from pathlib import Path

import numpy as np

from ..errors import InputError
from .common import DEFAULT_ALPHA_SUM, _finish, _read_text, _word_list, align, complete_rows


def _topic_number(topic, number, what, line, path, lineno):
    """(topic, value) of a line's fields: a topic >= 0 and a finite value >= 0, else InputError."""
    try:
        t, x = int(topic), float(number)
    except ValueError:
        raise InputError(
            f"expected an integer topic and a numeric {what}, got {line.strip()[:60]!r}", path, lineno
        ) from None
    if t < 0 or not math.isfinite(x) or x < 0:
        raise InputError(f"topic must be >= 0 and {what} finite and >= 0, got {line.strip()[:60]!r}", path, lineno)
    return t, x


def _read_mallet_weights(path):
    """Mallet's --topic-word-weights-file: lines 'topic<TAB>word<TAB>weight', weight = beta + count."""
    text = _read_text(path, "Mallet topic-word weights")
    fast = _mallet_weights_fast(text)
    if fast is not None:
        return fast
    topics, words, weights = [], [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            parts = line.split()
        if len(parts) != 3:
            raise InputError("expected 'topic<TAB>word<TAB>weight'", path, lineno)
        t, wt = _topic_number(parts[0], parts[2], "weight", line, path, lineno)
        topics.append(t)
        words.append(parts[1])
        weights.append(wt)
    if not topics:
        raise InputError("no topic-word weights in the file", path)
    return np.array(topics, dtype=np.int64), words, np.array(weights, dtype=np.float64)


def _mallet_weights_fast(text):
    """Vectorised parse of a well-formed weights file; None if anything is unusual
    (the line-by-line parser then finds and names the offending line)."""
    body = text.rstrip("\n")
    if not body or "\r" in body or "\n\n" in body:
        return None
    fields = body.replace("\n", "\t").split("\t")
    if len(fields) % 3 or len(fields) // 3 != body.count("\n") + 1:
        return None
    try:
        topics = np.array(fields[0::3], dtype=np.int64)
        weights = np.array(fields[2::3], dtype=np.float64)
    except ValueError:
        return None
    if topics.min() < 0 or not np.all(np.isfinite(weights)) or weights.min() < 0:
        return None
    return topics, fields[1::3], weights


def _word_index(topics, words, K):
    """(words in order of first appearance, word index of every line).

    Mallet writes every topic's block in the same alphabet order, which is
    recognised without hashing each line; anything else is indexed line by line.
    """
    n = len(words)
    if n % K == 0:
        W = n // K
        block = words[:W]
        if (
            np.array_equal(topics, np.repeat(np.arange(K), W))
            and len(set(block)) == W
            and all(words[b * W : (b + 1) * W] == block for b in range(1, K))
        ):
            return tuple(block), np.tile(np.arange(W, dtype=np.int64), K)
    index = {}
    idx = np.fromiter((index.setdefault(w, len(index)) for w in words), dtype=np.int64, count=n)
    return tuple(index), idx


def _read_mallet_keys(path):
    """Mallet's --output-topic-keys: lines 'topic<TAB>alpha<TAB>top words'."""
    text = _read_text(path, "Mallet topic keys")
    alpha = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.split(None, 2)
        if len(parts) < 2:
            raise InputError("expected 'topic<TAB>alpha<TAB>words'", path, lineno)
        t, a = _topic_number(parts[0], parts[1], "alpha", line, path, lineno)
        if t in alpha:
            raise InputError(f"topic {t} appears twice", path, lineno)
        alpha[t] = a
    if not alpha:
        raise InputError("no topics in the file", path)
    return alpha


def import_mallet(weights_path, keys_path=None, vocab_path=None, report=None):
    """Import a Mallet model (``mallet train-topics``).

    Files:
      weights_path  --topic-word-weights-file output (required): one line per topic and
                    word, 'topic<TAB>word<TAB>weight', weight = beta + count (unnormalised).
                    phi_k = weights_k / sum(weights_k), the posterior mean. Word order: as
                    first met in the file (Mallet's alphabet order).
      keys_path     --output-topic-keys output (optional): 'topic<TAB>alpha<TAB>top words';
                    gives alpha (asymmetric with --optimize-interval). Without it alpha =
                    5/K for every topic (Mallet's default --alpha 5.0, a sum), reported.
      vocab_path    vocabulary to align to (file, prepared corpus directory, or words).
      report        optional list; the import's messages are appended to it.

    topic_weight: the topic token counts recovered from the weights, count = weight - beta,
    with beta estimated as the smallest weight in the file; alpha normalised if that fails.
    """
    messages = []
    topics, words, weights = _read_mallet_weights(weights_path)
    files = {"weights": str(weights_path)}
    K = int(topics.max()) + 1
    present = np.bincount(topics, minlength=K) > 0
    if not present.all():
        raise InputError(
            f"topics must be numbered 0..{K - 1}; missing {np.flatnonzero(~present)[:5].tolist()}", weights_path
        )
    src_words, word_idx = _word_index(topics, words, K)
    W = len(src_words)
    flat = topics * W + word_idx
    per_cell = np.bincount(flat, minlength=K * W)
    if per_cell.max() > 1:
        dup = int(np.argmax(per_cell > 1))
        raise InputError(f"topic {dup // W}, word {src_words[dup % W]!r} appears twice", weights_path)
    mat = np.full((K, W), np.nan)
    mat[topics, word_idx] = weights

    beta = float(np.nanmin(mat))
    counts = np.where(np.isnan(mat), 0.0, mat - beta)
    n_k = counts.sum(axis=1)
    topic_weight = n_k if n_k.sum() > 0 else None
    hyper = {"beta_estimate": beta, "K": K, "W": W}

    if keys_path is not None:
        amap = _read_mallet_keys(keys_path)
        files["keys"] = str(keys_path)
        if sorted(amap) != list(range(K)):
            raise InputError(
                f"the keys file has topics {min(amap)}..{max(amap)} ({len(amap)} topics) but the "
                f"weights file has 0..{K - 1}",
                keys_path,
            )
        alpha = np.array([amap[k] for k in range(K)], dtype=np.float64)
    else:
        alpha = np.full(K, DEFAULT_ALPHA_SUM / K)
        messages.append(f"no topic-keys file: using symmetric alpha = {DEFAULT_ALPHA_SUM:g}/K (Mallet's default)")
    if topic_weight is None:
        topic_weight = alpha

    target = None if vocab_path is None else _word_list(vocab_path)
    aligned, vocab = align(mat, src_words, target, messages, "Mallet model")
    phi = complete_rows(aligned, messages, "Mallet model")
    meta = {"model": "import:mallet", "source": {"format": "mallet", "files": files}, "hyperparameters": hyper}
    return _finish(phi, alpha, topic_weight, vocab, meta, messages, Path(weights_path), None, report)
