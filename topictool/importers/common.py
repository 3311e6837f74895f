"""What every importer shares: reading text, word lists, aligning a model onto a vocabulary,
smoothing and renormalising rows, and building the Snapshot (see the package docstring)."""

from pathlib import Path

import numpy as np

from ..errors import InputError, existing_file
from ..snapshot import Snapshot

#: alpha used when a model's files do not give it: Mallet's default sum of the
#: Dirichlet parameters (--alpha 5.0), spread evenly over the topics.
DEFAULT_ALPHA_SUM = 5.0


def _read_text(path, what):
    path = existing_file(path, f"the {what}")
    from ..corpus.sources import open_binary

    with open_binary(path) as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text ({e.reason})", path, line) from None


def _word_list(source):
    """Words from a vocabulary file or prepared corpus (corpus.vocabulary.read_vocab), or a sequence."""
    if isinstance(source, (str, Path)):
        from ..corpus.vocabulary import read_vocab

        return read_vocab(source)
    words = tuple(str(w) for w in source)
    _check_unique(words, None)
    return words


def _check_unique(words, path):
    seen = {}
    for i, w in enumerate(words):
        if w in seen:
            raise InputError(f"word {w!r} appears twice (lines {seen[w] + 1} and {i + 1})", path, i + 1)
        seen[w] = i
    if not words:
        raise InputError("the vocabulary is empty", path)


def _row_tolerance(W):
    # rounding error of a sum of W doubles each <= 1, generously bounded
    return max(1e-12, 8 * np.finfo(np.float64).eps * W)


def complete_rows(weights, messages, what="imported model"):
    """Smallest-mass smoothing and renormalisation of a K x W array (NaN = word absent).

    In each row, absent (NaN) and non-positive entries get the smallest positive
    value of that row; a row with no positive value becomes uniform. Rows are
    then divided by their sums, unless nothing was filled and they already sum
    to 1 within rounding.
    """
    a = np.array(weights, dtype=np.float64, copy=True)
    K, W = a.shape
    absent = np.isnan(a)
    if np.any(np.isinf(a)):
        raise InputError(f"the {what} has infinite weights")
    if np.any(a[~absent] < 0):
        raise InputError(f"the {what} has negative weights")
    fill = absent | (a <= 0)
    n_absent = int(absent.sum())
    n_zero = int((fill & ~absent).sum())
    uniform_rows = 0
    if fill.any():
        for k in np.flatnonzero(fill.any(axis=1)):
            row = a[k]
            pos = row[~fill[k]]
            if pos.size == 0:
                row[:] = 1.0
                uniform_rows += 1
            else:
                row[fill[k]] = pos.min()
    if n_absent:
        messages.append(
            f"{n_absent} (topic, word) entries absent from the {what} were given the topic's "
            f"smallest probability (smallest-mass smoothing)"
        )
    if n_zero:
        messages.append(
            f"{n_zero} zero probabilities in the {what} were raised to the topic's smallest "
            f"positive probability (smallest-mass smoothing)"
        )
    if uniform_rows:
        messages.append(f"{uniform_rows} topic(s) of the {what} had no positive weight and were made uniform")
    sums = a.sum(axis=1)
    renorm = fill.any(axis=1) | (np.abs(sums - 1.0) > _row_tolerance(W))
    if renorm.any():
        a[renorm] /= sums[renorm, None]
    return a


def align(weights, words, vocab, messages, what="imported model"):
    """Re-index the columns of ``weights`` (named by ``words``) onto ``vocab``; NaN where absent."""
    words = tuple(words)
    if vocab is None or tuple(vocab) == words:
        return np.asarray(weights, dtype=np.float64), words
    vocab = tuple(vocab)
    index = {w: i for i, w in enumerate(vocab)}
    src = np.fromiter((index.get(w, -1) for w in words), dtype=np.int64, count=len(words))
    inside = src >= 0
    n_in = int(inside.sum())
    if n_in == 0:
        raise InputError(
            f"no word of the {what} is in the given vocabulary of {len(vocab)} words (wrong vocabulary file?)"
        )
    weights = np.asarray(weights, dtype=np.float64)
    out = np.full((weights.shape[0], len(vocab)), np.nan)
    out[:, src[inside]] = weights[:, inside]
    dropped = len(words) - n_in
    if dropped:
        with np.errstate(invalid="ignore"):
            tot = np.nansum(weights, axis=1)
            lost = np.nansum(weights[:, ~inside], axis=1) / np.where(tot > 0, tot, 1)
        example = ", ".join(repr(w) for w in np.asarray(words, dtype=object)[~inside][:3])
        messages.append(
            f"{dropped} of the {len(words)} words of the {what} are not in the vocabulary and were "
            f"dropped (e.g. {example}; mean mass {float(np.mean(lost)):.3g} per topic)"
        )
    missing = len(vocab) - n_in
    if missing:
        messages.append(f"{missing} of the {len(vocab)} vocabulary words are not in the {what}")
    return out, vocab


def _finish(phi, alpha, topic_weight, vocab, meta, messages, path, burst=None, report=None):
    topic_weight = np.asarray(topic_weight, dtype=np.float64)
    s = topic_weight.sum()
    if not (np.all(np.isfinite(topic_weight)) and np.all(topic_weight >= 0) and s > 0):
        topic_weight = np.asarray(alpha, dtype=np.float64)
        s = topic_weight.sum()
        messages.append("topic weights unavailable; using alpha normalised")
    topic_weight = topic_weight / s if abs(s - 1.0) > _row_tolerance(len(topic_weight)) else topic_weight
    meta = dict(meta)
    if messages:
        meta["import_messages"] = list(messages)
    if report is not None:
        report.extend(messages)
    snap = Snapshot(
        phi=np.ascontiguousarray(phi, dtype=np.float64),
        alpha=np.asarray(alpha, dtype=np.float64),
        topic_weight=topic_weight,
        vocab=tuple(vocab),
        meta=meta,
        burst_concentration=None if burst is None else np.asarray(burst[0], dtype=np.float64),
        burst_discount=None if burst is None else float(burst[1]),
    )
    if np.any(snap.alpha < 0) or not np.all(np.isfinite(snap.alpha)) or snap.alpha.sum() <= 0:
        raise InputError("alpha must be finite, non-negative and not all zero", path)
    return snap.check(path)


def _numbers(text, path, what):
    """All whitespace-separated numbers of ``text`` ('#' comment lines skipped) as float64."""
    values = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        for tok in s.split():
            try:
                values.append(float(tok))
            except ValueError:
                raise InputError(f"expected a number in the {what}, got {tok!r}", path, lineno) from None
    return np.array(values, dtype=np.float64)
