"""Models from other tools as Snapshots, and the plain text model format.

``load_model(path)`` opens any MODEL of DESIGN.md (a run directory's
``model.npz`` or a snapshot ``.npz``). The importers read the files another
tool writes and return a ``Snapshot``:

    import_hca(phi_path, tokens_path=None, par_path=None, alpha_path=None, vocab_path=None)
    import_mallet(weights_path, keys_path=None, vocab_path=None)
    import_text(prefix, vocab_path=None)          (the format of docs/formats-text-model.md)
    export_text(snapshot, prefix)                 (its writer)

What every importer does with the topics (so a snapshot's promises hold):

* Vocabulary alignment. With ``vocab_path`` (a file with one word per line, a
  prepared corpus directory, or a sequence of words) the topics are re-indexed
  by word onto that vocabulary; otherwise the tool's own word list is used.
  Words of the imported model outside the vocabulary are dropped (their mass
  reported); if no word overlaps, InputError.
* No zero probabilities. A vocabulary word that the imported model lacks, or
  that has probability 0 (or an underflowed float32), gets, in each topic, the
  smallest positive probability that topic gives any imported word
  ("smallest-mass smoothing"), before the row is renormalised. Every such
  repair is reported.
* Rows renormalised to sum to 1 (rows already summing to 1 within rounding are
  left bit-for-bit untouched, so export_text -> import_text is the identity).

The messages (one line each) are appended to the list passed as ``report=``
(for the command line to print) and kept in ``snapshot.meta["import_messages"]``;
``snapshot.meta["source"]`` records the files read. import_text keeps the meta
stored with the model (its .meta.json) unchanged.
"""

import json
import math
import struct
from pathlib import Path

import numpy as np

from .. import store
from ..errors import InputError
from ..snapshot import Snapshot

#: alpha used when a model's files do not give it: Mallet's default sum of the
#: Dirichlet parameters (--alpha 5.0), spread evenly over the topics.
DEFAULT_ALPHA_SUM = 5.0

TEXT_SUFFIXES = {
    "phi": ".phi.txt",
    "vocab": ".vocab.txt",
    "alpha": ".alpha.txt",
    "weights": ".weights.txt",
    "meta": ".meta.json",
}


# ----------------------------------------------------------------------------
# models on disk


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


# ----------------------------------------------------------------------------
# shared: reading text, aligning, smoothing


def _read_text(path, what):
    path = Path(path)
    if not path.exists():
        raise InputError(f"no such file ({what})", path)
    if path.is_dir():
        raise InputError(f"is a directory, expected the {what}", path)
    from ..corpus.sources import open_binary

    with open_binary(path) as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text ({e.reason})", path, line) from None


def _word_list(source, what="vocabulary"):
    """Words from a file (one per line), a prepared corpus directory, or a sequence."""
    if isinstance(source, (str, Path)):
        p = Path(source)
        if p.is_dir():
            p = p / "vocab.txt"
        lines = _read_text(p, what).splitlines()
        while lines and not lines[-1].strip():
            lines.pop()
        words = []
        for lineno, line in enumerate(lines, 1):
            w = line.strip()
            if not w:
                raise InputError("blank line in a vocabulary file (line numbers are word ids)", p, lineno)
            words.append(w)
        _check_unique(words, p)
        return tuple(words)
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


# ----------------------------------------------------------------------------
# hca


def _read_hca_phi(path):
    """hca's STEM.phi: uint32 W, T, C (samples averaged), then float32 rows, W the minor index.

    The matrix has T rows, or T+1 when hca also estimated the beta vector
    (non-Dirichlet word side); the extra row is returned separately.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("no such file (hca .phi)", path)
    data = path.read_bytes()
    if len(data) < 12:
        raise InputError("too short for an hca .phi file (needs a 12-byte header)", path)
    for endian in ("<", ">"):
        W, T, C = struct.unpack(endian + "3I", data[:12])
        body = len(data) - 12
        if W == 0 or T == 0 or body % 4:
            continue
        n = body // 4
        if n == W * T:
            rows = T
        elif n == W * (T + 1):
            rows = T + 1
        else:
            continue
        mat = np.frombuffer(data, dtype=endian + "f4", count=rows * W, offset=12).reshape(rows, W)
        mat = mat.astype(np.float64)
        return mat[:T], (mat[T] if rows > T else None), int(W), int(T), int(C)
    raise InputError("not an hca .phi file: the header (W, T, samples) does not match the file size", path)


def _read_hca_par(path):
    """hca's STEM.par: 'name = value' lines, '#' comments; vector values space-separated."""
    out = {}
    for lineno, line in enumerate(_read_text(path, "hca .par").splitlines(), 1):
        s = line.split("#", 1)[0].strip()
        if not s:
            continue
        if "=" not in s:
            raise InputError(f"expected 'name = value', got {line.strip()!r}", path, lineno)
        k, v = s.split("=", 1)
        out[k.strip()] = (v.strip(), lineno)
    return out


def _par_float(par, key, path):
    if key not in par:
        return None
    v, lineno = par[key]
    try:
        return float(v)
    except ValueError:
        raise InputError(f"{key} = {v!r} is not a number", path, lineno) from None


def _par_vector(par, key, T, path):
    """A vector parameter with T entries; '-' (hca's empty topic) reads as 0."""
    if key not in par:
        return None
    v, lineno = par[key]
    toks = v.replace(",", " ").split()
    try:
        vec = np.array([0.0 if t == "-" else float(t) for t in toks], dtype=np.float64)
    except ValueError:
        raise InputError(f"{key} has a non-numeric entry", path, lineno) from None
    if len(vec) != T:
        raise InputError(f"{key} has {len(vec)} entries but the model has T={T} topics", path, lineno)
    return vec


def _read_hca_tokens(path):
    """hca's dictionary: DataStem.tokens (one token per line) or a text-bags .words file
    (as shipped with hca's demo data, e.g. `0 text 186ed9e1771489a1 630 315 church`: the word
    is the last field). The same reader as `prepare --vocab`."""
    from ..corpus.vocabulary import read_vocab

    return read_vocab(path)


def import_hca(phi_path, tokens_path=None, par_path=None, alpha_path=None, vocab_path=None, report=None):
    """Import an hca model (Buntine's hca, run with ``-lphi,...`` and optionally ``-lalpha,...``).

    Files:
      phi_path     RepStem.phi (required): binary, uint32 W, T, sample count, then
                   T (or T+1) x W float32 word probabilities per topic.
      tokens_path  the dictionary of hca's data, one token per line (DataStem.tokens,
                   as hca's -V reads) or a text-bags DataStem.words file. Optional if
                   ``vocab_path`` lists the same W words in hca's order.
      par_path     RepStem.par (default: beside the .phi): T, W, PYalpha, alphatot or
                   a, b, probs (topic proportions), bdk and ad (burstiness) ...
      alpha_path   RepStem.alpha (default: beside the .phi, if present): T lines, the
                   estimated prior topic proportions.
      vocab_path   vocabulary to align to (file, prepared corpus directory, or words).
      report       optional list; the import's messages are appended to it.

    alpha (the Dirichlet prior on a document's topic proportions):
      PYalpha = 0 (Dirichlet, -Adir)      alphatot/T each, or alphatot * .alpha normalised
      PYalpha = 1, 2, 3 (hdp, hpdd, pdp)  b * pi, pi = .alpha (the -lalpha average) or
                                          the .par "probs"; with discount a > 0 this is
                                          the Dirichlet approximation of the PYP (reported)
      NGalpha present (-Ang)              NGalpha (approximation, reported)
      no .par                             5 * pi with pi from .alpha, else 5/T each (reported)
    topic_weight: the .par "probs", else alpha normalised. A .par with "bdk" gives
    burst_concentration = bdk and burst_discount = ad.
    """
    phi_path = Path(phi_path)
    messages = []
    rows, beta_row, W, T, C = _read_hca_phi(phi_path)
    files = {"phi": str(phi_path)}
    stem = phi_path.with_suffix("") if phi_path.suffix == ".phi" else phi_path
    if par_path is None and Path(f"{stem}.par").exists():
        par_path = Path(f"{stem}.par")
    if alpha_path is None and Path(f"{stem}.alpha").exists():
        alpha_path = Path(f"{stem}.alpha")
    if beta_row is not None:
        messages.append("the .phi file also holds hca's estimated beta vector (extra row); ignored")

    target = None if vocab_path is None else _word_list(vocab_path)
    if tokens_path is not None:
        words = _read_hca_tokens(tokens_path)
        files["tokens"] = str(tokens_path)
        if len(words) != W:
            raise InputError(f"the dictionary has {len(words)} words but the .phi file has W={W}", tokens_path)
    elif target is not None:
        if len(target) != W:
            raise InputError(
                f"the .phi file has W={W} words but the vocabulary has {len(target)}; "
                f"give hca's dictionary (DataStem.tokens or .words) as well",
                phi_path,
            )
        words = target
        messages.append("hca's word order taken to be the vocabulary's (no dictionary given)")
    else:
        raise InputError(
            "an hca .phi file holds no words: give hca's dictionary (DataStem.tokens or "
            "DataStem.words) or the vocabulary in hca's word order",
            phi_path,
        )

    par = {}
    hyper = {"T": T, "W": W, "phi_samples": C}
    if par_path is not None:
        par = _read_hca_par(par_path)
        files["par"] = str(par_path)
        for key, want in (("T", T), ("W", W)):
            v = _par_float(par, key, par_path)
            if v is not None and int(v) != want:
                raise InputError(f"{key} = {int(v)} but the .phi file has {key} = {want}", par_path, par[key][1])
    pi = None
    if alpha_path is not None:
        pi = _numbers(_read_text(alpha_path, "hca .alpha"), alpha_path, "hca .alpha")
        files["alpha"] = str(alpha_path)
        if len(pi) != T or np.any(pi < 0) or not pi.sum() > 0:
            raise InputError(f"expected {T} non-negative numbers, not all zero", alpha_path)
        pi = pi / pi.sum()

    probs = _par_vector(par, "probs", T, par_path) if par else None
    py_alpha = int(_par_float(par, "PYalpha", par_path) or 0) if par else None
    if par and _par_vector(par, "NGalpha", T, par_path) is not None:
        alpha = _par_vector(par, "NGalpha", T, par_path)
        hyper["NGalpha"] = alpha.tolist()
        messages.append("normalised-gamma alpha side (-Ang): using NGalpha as a Dirichlet prior (approximation)")
    elif par and py_alpha == 0:
        alphatot = _par_float(par, "alphatot", par_path)
        if alphatot is None or alphatot <= 0:
            raise InputError("Dirichlet alpha side (PYalpha = 0) but no positive alphatot", par_path)
        alpha = alphatot * (pi if pi is not None else np.full(T, 1.0 / T))
        hyper.update(PYalpha=0, alphatot=alphatot)
    elif par:
        b = _par_float(par, "b", par_path)
        a = _par_float(par, "a", par_path) or 0.0
        if b is None or b <= 0:
            raise InputError(f"Pitman-Yor alpha side (PYalpha = {py_alpha}) but no positive concentration b", par_path)
        base = pi if pi is not None else probs
        if base is None or not base.sum() > 0:
            raise InputError("no topic proportions: give the .alpha file (hca -lalpha) or a .par with probs", par_path)
        alpha = b * base / base.sum()
        hyper.update(PYalpha=py_alpha, a=a, b=b)
        if a > 0:
            messages.append(
                f"alpha side is a Pitman-Yor process with discount a={a:g}; using the Dirichlet "
                f"approximation alpha = b * pi"
            )
    else:
        if pi is not None:
            alpha = DEFAULT_ALPHA_SUM * pi
            messages.append(f"no .par file: the concentration is unknown; alpha = {DEFAULT_ALPHA_SUM:g} * (.alpha)")
        else:
            alpha = np.full(T, DEFAULT_ALPHA_SUM / T)
            messages.append(f"no .par or .alpha file: using symmetric alpha = {DEFAULT_ALPHA_SUM:g}/T")
    if np.any(alpha == 0):
        messages.append(f"{int(np.sum(alpha == 0))} topic(s) are empty in hca (alpha 0); they stay empty")

    topic_weight = probs if probs is not None and probs.sum() > 0 else alpha
    burst = None
    if par and "bdk" in par:
        bdk = _par_vector(par, "bdk", T, par_path)
        ad = _par_float(par, "ad", par_path) or 0.0
        burst = (bdk, ad)
        hyper.update(bdk=bdk.tolist(), ad=ad)
    for key in ("betatot", "aw", "bw", "aw0", "bw0", "a0", "b0", "ITER", "PYbeta"):
        v = _par_float(par, key, par_path) if par else None
        if v is not None:
            hyper[key] = v

    weights, vocab = align(rows, words, target, messages, "hca model")
    phi = complete_rows(weights, messages, "hca model")
    meta = {"model": "import:hca", "source": {"format": "hca", "files": files}, "hyperparameters": hyper}
    return _finish(phi, alpha, topic_weight, vocab, meta, messages, phi_path, burst, report)


# ----------------------------------------------------------------------------
# Mallet


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
        try:
            t, wt = int(parts[0]), float(parts[2])
        except ValueError:
            raise InputError(
                f"expected an integer topic and a numeric weight, got {line.strip()!r}", path, lineno
            ) from None
        if t < 0 or not math.isfinite(wt) or wt < 0:
            raise InputError("topic must be >= 0 and weight finite and >= 0", path, lineno)
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
        try:
            t, a = int(parts[0]), float(parts[1])
        except ValueError:
            raise InputError(
                f"expected an integer topic and a numeric alpha, got {line.strip()[:60]!r}", path, lineno
            ) from None
        if t in alpha:
            raise InputError(f"topic {t} appears twice", path, lineno)
        if not math.isfinite(a) or a < 0:
            raise InputError(f"alpha {a} must be finite and >= 0", path, lineno)
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


# ----------------------------------------------------------------------------
# the text format (docs/formats-text-model.md)


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

    if p["alpha"].exists():
        alpha = _numbers(_read_text(p["alpha"], "alpha"), p["alpha"], "alpha")
        files["alpha"] = str(p["alpha"])
        if len(alpha) != K:
            raise InputError(f"{len(alpha)} numbers but the model has {K} topics", p["alpha"])
    else:
        alpha = np.full(K, DEFAULT_ALPHA_SUM / K)
        messages.append(f"no {p['alpha'].name}: using symmetric alpha = {DEFAULT_ALPHA_SUM:g}/K")
    if p["weights"].exists():
        topic_weight = _numbers(_read_text(p["weights"], "topic weights"), p["weights"], "topic weights")
        files["weights"] = str(p["weights"])
        if len(topic_weight) != K:
            raise InputError(f"{len(topic_weight)} numbers but the model has {K} topics", p["weights"])
    else:
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
