"""hca's model files: STEM.phi, STEM.par / STEM.alpha, and its dictionary."""

import struct
from pathlib import Path

import numpy as np

from ..errors import InputError
from .common import DEFAULT_ALPHA_SUM, _finish, _numbers, _read_text, _word_list, align, complete_rows


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
