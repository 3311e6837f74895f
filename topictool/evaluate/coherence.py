"""Topic coherence: PMI and NPMI of a topic's top words against a reference (``topictool pmi``).

Pair scores (Newman, Lau, Grieser & Baldwin 2010; DESIGN.md "Evaluation definitions")
-------------------------------------------------------------------------------------
With the counts of a co-occurrence reference (``topictool cooc``: U units —
sliding windows or documents —, c(w) units holding w, c(wi, wj) units holding
both; see ``topictool.cooc``), p(w) = c(w)/U and p(wi, wj) = c(wi, wj)/U:

    PMI(wi, wj)  = log p(wi, wj) / (p(wi) p(wj))          (natural log)
    NPMI(wi, wj) = PMI(wi, wj) / -log p(wi, wj)            (Bouma 2009; in [-1, 1])

A pair never seen together scores 0 (no smoothing), under PMI and NPMI alike;
so does a pair with a word missing from the reference and a word paired with
itself (a topic listing a word twice). NPMI of a pair present in every unit
(p(wi, wj) = 1) is 1.

A hca-style PMI file (``id1 id2 pmi`` per line, ``.gz``/``.bz2`` allowed; as
made by hca's ``cooc2pmi.pl``) gives PMI(wi, wj) directly, for word ids of a
vocabulary (``--vocab``, or the model's). Read as hca's ``report_pmi`` reads it
(hca/util/pmi.c): a pair is symmetric, the last line for a pair wins, lines
with id1 == id2 are ignored, pairs not in the file score 0. Such a file holds
no probabilities, so NPMI needs a REF.npz.

Topic scores (N = number of top words of the topic, pairs i < j)
-----------------------------------------------------------------
    newman  score = sum_{i<j} PMI(wi, wj) / (N (N-1) / 2)    the mean over pairs
    hca     score = sum_{i<j} PMI(wi, wj) / N**2              hca's report_pmi: the
            sum over all ordered pairs (the diagonal being 0) halved, divided by N*N

A topic with fewer than two words scores 0. Averages over topics: ``mean``
(unweighted) and ``weighted_mean`` (weighted by the model's topic proportions;
hca's reported PMI is this weighted mean under the hca convention). A topics
file carries no proportions, so its ``weighted_mean`` is None.

Which words
-----------
For a model, the ``top`` words of each topic by ``topictool.topics`` ranking
(``rank``, default ``prob``: the most probable words, as in Newman et al. 2010
and as hca with ``-ophi``/``-ocount``; hca's own default ``-oidf`` orders a
topic's words by the share of the word's occurrences that fall in the topic,
which within a topic is the order of ``lift`` up to hca's smoothing of counts).
For a topics file (one topic per line, as ``topictool topics --format txt``
writes: words, or integer word ids of ``--vocab``; or hca's ``.toplst``,
``k: id id ...``, whose topic numbers are kept and whose root topic ``-1`` is
skipped as hca does), the first ``top`` words of each line.

Measures beyond PMI (``--measure``; Röder, Both & Hinneburg 2015)
------------------------------------------------------------------
With U units, c(w) and c(wi, wj) as above (c(w, w) = c(w)), eps = 1e-12 and
the top words w1..wN in rank order (w1 the first), the ``gensim`` convention
computes exactly what gensim's ``CoherenceModel`` (4.x) does:

    pmi     mean_{i<j} log ((c(wi,wj)/U + eps) / (c(wi)/U * c(wj)/U))        gensim 'c_uci'
    npmi    mean_{i<j} PMI_eps(wi,wj) / -log (c(wi,wj)/U + eps)               gensim 'c_npmi'
    umass   mean_{i>j} log ((c(wi,wj)/U + eps) / (c(wj)/U))                   gensim 'u_mass'
            (the higher-ranked word wj conditions; Mimno et al. 2011)
    cv      with M[i, j] = NPMI_eps(wi, wj) for all i, j (also i = j), the
            context vectors u_i = M[i, :] and v = sum_i M[i, :] (one-set
            segmentation, gamma 1): mean_i cos(u_i, v)                         gensim 'c_v'

Under ``gensim`` an unseen pair is not 0: its eps gives log eps terms (NPMI
near -1). ``--convention mimno`` for umass is the paper's own form:
sum_{i>j} log ((c(wi,wj) + 1) / c(wj)) (a sum, smoothed by 1). A word missing
from the reference (or counted in no unit) makes every pair it is in score 0
(and its entries of the cv context vectors 0; a zero vector's cosine is 0),
where gensim would drop it or fail; it is listed as missing.

Units are what the reference counted: a REF.npz's windows or documents, a
prepared corpus directory's documents (``--window doc``) or sliding windows
over its rebuilt token sequences (``topictool.cooc.prepared``; the defaults
follow gensim: umass documents, pmi and npmi 10 tokens, cv 110 tokens).
"""

import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError

CONVENTIONS = ("newman", "hca", "gensim", "mimno")
MEASURES = ("pmi", "npmi", "umass", "cv")
#: which conventions each measure has; the first is its default
MEASURE_CONVENTIONS = {
    "pmi": ("newman", "hca", "gensim"),
    "npmi": ("newman", "hca", "gensim"),
    "umass": ("gensim", "mimno"),
    "cv": ("gensim",),
}
#: default window of each measure on a prepared corpus (gensim's): 0 = documents
DEFAULT_WINDOWS = {"pmi": 10, "npmi": 10, "umass": 0, "cv": 110}
EPSILON = 1e-12


# ----------------------------------------------------------------------------
# pair tables


class CoocPairs:
    """(N)PMI of word pairs from a co-occurrence reference (REF.npz)."""

    kind = "cooc"

    def __init__(self, reference):
        self.ref = reference
        self.index = {w: i for i, w in enumerate(reference.vocab)}
        self.path = reference.path

    def ids(self, words):
        return np.array([self.index.get(w, -1) for w in words], np.int64)

    def matrix(self, ids, normalized=False):
        """N x N matrix of pair scores (upper triangle used) for reference ids (-1: missing)."""
        return _pmi_matrix(ids, *self.counts(ids), float(self.ref.units), normalized)

    def counts(self, ids):
        """(c, C): units of each word and of each pair (C[i, i] = c[i]); 0 for ids -1."""
        ids = np.asarray(ids, np.int64)
        N = len(ids)
        ok = ids >= 0
        c = np.where(ok, np.asarray(self.ref.word_counts)[np.where(ok, ids, 0)], 0).astype(np.int64)
        C = np.diag(c)
        if N > 1:
            a, b = np.triu_indices(N, 1)
            both = ok[a] & ok[b]
            joint = np.zeros(len(a), np.int64)
            joint[both] = self.ref.pair_counts_of(ids[a][both], ids[b][both])
            same = both & (ids[a] == ids[b])  # a word listed twice: with itself in all its units
            joint[same] = c[a][same]
            C[a, b] = joint
            C[b, a] = joint
        return c, C


def _pmi_matrix(ids, c, C, U, normalized):
    """N x N matrix of (N)PMI (upper triangle) from the unit counts c of the N words and C of
    their pairs; a pair never seen together, one with a missing word (id -1) and a word with
    itself score 0."""
    ids = np.asarray(ids, np.int64)
    N = len(ids)
    out = np.zeros((N, N))
    if N < 2:
        return out
    a, b = np.triu_indices(N, 1)
    joint = np.where((ids[a] >= 0) & (ids[b] >= 0) & (ids[a] != ids[b]), C[a, b], 0)
    seen = joint > 0
    vals = np.zeros(len(a))
    if seen.any():
        vals[seen] = _pmi_values(joint[seen], c[a][seen], c[b][seen], U, normalized)
    out[a, b] = vals
    return out


def _pmi_values(cj, ca, cb, U, normalized):
    """PMI (or NPMI) of pairs seen together: counts cj (> 0), ca, cb out of U units."""
    cj = np.asarray(cj).astype(np.float64)
    ca = np.asarray(ca).astype(np.float64)
    cb = np.asarray(cb).astype(np.float64)
    pmi = np.log(cj) + math.log(U) - np.log(ca) - np.log(cb)
    if normalized:
        neglog_joint = math.log(U) - np.log(cj)
        with np.errstate(divide="ignore", invalid="ignore"):
            pmi = np.where(neglog_joint > 0, pmi / np.where(neglog_joint > 0, neglog_joint, 1.0), 1.0)
    return pmi


class CorpusPairs:
    """Counts of a prepared corpus directory among the topics' words (``topictool.cooc.prepared``)."""

    kind = "corpus"

    def __init__(self, counts):
        self.ref = counts
        self.path = counts.path
        self.ids = counts.ids
        self.counts = counts.counts

    def matrix(self, ids, normalized=False):
        """As CoocPairs.matrix."""
        return _pmi_matrix(ids, *self.counts(ids), float(self.ref.units), normalized)


class PmiFilePairs:
    """PMI of word pairs from an hca-style ``.pmi`` file, for ids of a vocabulary."""

    kind = "pmi-file"

    def __init__(self, path, vocab):
        self.path = str(path)
        self.vocab = tuple(vocab)
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.values = None

    def ids(self, words):
        return np.array([self.index.get(w, -1) for w in words], np.int64)

    def load(self, wanted):
        """Read the file, keeping the pairs among the ``wanted`` ids."""
        self.values = read_pmi_file(self.path, len(self.vocab), wanted)

    def matrix(self, ids, normalized=False):
        if normalized:
            raise InputError(
                "--normalized (NPMI) needs a co-occurrence reference (REF.npz from `topictool "
                "cooc`); a .pmi file holds PMI values only (if it already holds NPMI, omit "
                "--normalized)",
                self.path,
            )
        N = len(ids)
        out = np.zeros((N, N))
        for a in range(N):
            for b in range(a + 1, N):
                i, j = int(ids[a]), int(ids[b])
                if i >= 0 and j >= 0 and i != j:
                    out[a, b] = self.values.get((min(i, j), max(i, j)), 0.0)
        return out


def read_pmi_file(path, W=None, wanted=None):
    """{(i, j): pmi} with i < j from an ``id1 id2 pmi`` file (gz/bz2 allowed).

    Ids must be integers in [0, W); values finite numbers; blank lines are
    skipped. Only pairs with both ids in ``wanted`` are kept (all if None).
    InputError names the file and line of the first malformed line.
    """
    from ..corpus.sources import open_binary

    path = Path(path)
    wanted_arr = None if wanted is None else np.array(sorted(set(int(w) for w in wanted if w >= 0)), np.int64)
    values = {}
    lineno = 0
    with open_binary(path) as f:
        while True:
            try:
                lines = f.readlines(1 << 22)
            except (OSError, EOFError, ValueError) as e:
                raise InputError(f"cannot read (damaged compressed data?): {e}", path, lineno + 1) from None
            if not lines:
                break
            first = lineno + 1
            lineno += len(lines)
            rows = _parse_block(lines, first, path, W)
            if rows is None:
                continue
            i = rows[:, 0].astype(np.int64)
            j = rows[:, 1].astype(np.int64)
            keep = i != j
            if wanted_arr is not None:
                keep &= np.isin(i, wanted_arr) & np.isin(j, wanted_arr)
            for a, b, v in zip(i[keep].tolist(), j[keep].tolist(), rows[keep, 2].tolist()):
                values[(a, b) if a < b else (b, a)] = v
    return values


def _parse_block(lines, first, path, W):
    """Rows (n x 3 float array) of a block of lines; InputError at the first bad line."""
    try:
        text = b"".join(lines).decode("utf-8")
    except UnicodeDecodeError:
        _find_bad_line(lines, first, path, W)
    if not text.strip():
        return None
    try:
        rows = np.loadtxt(io.StringIO(text), dtype=np.float64, ndmin=2, comments=None)
    except ValueError:
        _find_bad_line(lines, first, path, W)
    if rows.shape[1] != 3 or not _rows_ok(rows, W):
        _find_bad_line(lines, first, path, W)
    return rows


def _rows_ok(rows, W):
    ids = rows[:, :2]
    ok = np.all(np.isfinite(rows)) and np.all(ids >= 0) and np.all(ids == np.floor(ids))
    if ok and W is not None:
        ok = np.all(ids < W)
    return bool(ok)


_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _find_bad_line(lines, first, path, W):
    for n, raw in enumerate(lines, first):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", path, n) from None
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 3:
            raise InputError(f"expected 'id1 id2 pmi', got {len(fields)} field(s): {line.strip()[:60]!r}", path, n)
        for name, tok in zip(("id1", "id2"), fields[:2]):
            if not tok.isdigit():
                raise InputError(f"{name} {tok!r} is not a word id (a non-negative integer)", path, n)
            if W is not None and int(tok) >= W:
                raise InputError(f"{name} {tok} is outside the vocabulary of {W} words", path, n)
        try:
            v = float(fields[2])
        except ValueError:
            raise InputError(f"pmi value {fields[2]!r} is not a number", path, n) from None
        if not math.isfinite(v) or not _NUMBER.match(fields[2]):
            raise InputError(f"pmi value {fields[2]!r} is not a finite number", path, n)
    raise InputError("malformed PMI file", path, first)  # pragma: no cover - a block that failed has a bad line


def open_pairs(reference, vocab=None):
    """The pair table of ``reference``: a REF.npz, or a .pmi[.gz] file with ``vocab`` (words)."""
    from ..cooc import load_reference

    p = Path(reference)
    if not p.exists():
        raise InputError("no such file", p)
    if _is_zip(p):
        return CoocPairs(load_reference(p))
    if vocab is None:
        raise InputError("a .pmi reference holds word ids: give their vocabulary with --vocab", p)
    return PmiFilePairs(p, vocab)


def _is_zip(p):
    try:
        with open(p, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError as e:
        raise InputError(f"cannot open: {e.strerror or e}", p) from None


# ----------------------------------------------------------------------------
# topics


@dataclass
class Topic:
    index: int
    words: list
    weight: float = None
    ids: list = None  # word ids when given by id (hca .toplst)


_TOPLST = re.compile(r"^\s*(-?\d+)\s*:")


def read_topics(path, top=None, vocab=None):
    """Topics of a topics file: plain (``topictool.topics.read_topics_file``) or hca ``.toplst``.

    Tokens are resolved as in ``read_topics_file``: a word of ``vocab`` first,
    otherwise an integer id into ``vocab``; without ``vocab`` tokens are words.
    Only the first ``top`` words of each line are kept.
    """
    from ..topics import read_topic_lines, word_id

    lines = read_topic_lines(path)
    if not lines:
        raise InputError("no topics in the file", path)
    W = None if vocab is None else len(vocab)
    if _TOPLST.match(" ".join(lines[0][1])):
        if vocab is None:
            raise InputError("an hca .toplst file lists word ids: give their vocabulary with --vocab", path)
        topics = []
        for n, toks in lines:
            line = " ".join(toks)
            m = _TOPLST.match(line)
            if not m:
                raise InputError("expected 'k: id id ...' (an hca .toplst line)", path, n)
            k = int(m.group(1))
            if k < 0:  # hca's root topic
                continue
            rest = line[m.end() :].split()
            ids = [word_id(t, None, W, path, n) for t in (rest[:top] if top else rest)]
            topics.append(Topic(k, [vocab[i] for i in ids], ids=ids))
        if not topics:
            raise InputError("no topics in the file", path)
        return topics
    index = None if vocab is None else {w: i for i, w in enumerate(vocab)}
    topics = []
    for k, (n, toks) in enumerate(lines):
        toks = toks[:top] if top else toks
        if index is None:
            topics.append(Topic(k, list(toks)))
        else:
            ids = [word_id(t, index, W, path, n) for t in toks]
            topics.append(Topic(k, [vocab[i] for i in ids], ids=ids))
    return topics


# ----------------------------------------------------------------------------
# scores


def topic_score(M, convention="newman"):
    """Score of one topic from its pair-score matrix (upper triangle)."""
    N = M.shape[0]
    if N < 2:
        return 0.0
    total = math.fsum(M[np.triu_indices(N, 1)].tolist())  # correctly rounded: independent of order
    if convention == "newman":
        return total / (N * (N - 1) / 2)
    if convention == "hca":
        return total / (N * N)
    raise InputError(f"--convention {convention!r}: expected one of {', '.join(CONVENTIONS)}")


def _npmi_eps(C, ci, cj, U):
    """gensim's NPMI with eps of pairs (arrays of counts; all counts of single words > 0)."""
    joint = C / U + EPSILON
    return np.log(joint / ((ci / U) * (cj / U))) / -np.log(joint)


def count_score(c, C, U, measure, convention="gensim"):
    """Score of one topic under the count-based conventions (the module docstring).

    c: units of each of the N top words (rank order), C: N x N pair units
    (C[i, i] = c[i]), U: units. Words with c = 0 are missing: their pairs score 0.
    """
    N = len(c)
    if N < 2:
        return 0.0
    c = np.asarray(c, np.float64)
    C = np.asarray(C, np.float64)
    U = float(U)
    ok = c > 0
    if measure == "cv":
        i, j = np.nonzero(np.outer(ok, ok))
        M = np.zeros((N, N))
        M[i, j] = _npmi_eps(C[i, j], c[i], c[j], U)
        v = M.sum(axis=0)
        nv = math.sqrt(math.fsum((v * v).tolist()))
        sims = []
        for k in range(N):
            nu = math.sqrt(math.fsum((M[k] * M[k]).tolist()))
            sims.append(float(M[k] @ v) / (nu * nv) if nu > 0 and nv > 0 else 0.0)
        return math.fsum(sims) / N
    a, b = np.tril_indices(N, -1)  # a > b: b is the higher-ranked word
    valid = ok[a] & ok[b]
    vals = np.zeros(len(a))
    ca, cb, cab = c[a][valid], c[b][valid], C[a, b][valid]
    if measure == "umass":
        if convention == "mimno":
            vals[valid] = np.log((cab + 1.0) / cb)
            return math.fsum(vals.tolist())
        vals[valid] = np.log((cab / U + EPSILON) / (cb / U))
    elif measure == "npmi":
        vals[valid] = _npmi_eps(cab, ca, cb, U)
    elif measure == "pmi":
        vals[valid] = np.log((cab / U + EPSILON) / ((ca / U) * (cb / U)))
    else:
        raise InputError(f"--measure {measure!r}: expected one of {', '.join(MEASURES)}")
    return math.fsum(vals.tolist()) / len(a)


def score_topics(topics, pairs, convention="newman", normalized=False, measure=None):
    """Coherence of ``topics`` (list of Topic) against a pair table.

    Returns {"topics": [{"index", "score", "words", "weight", "missing"}],
    "mean", "weighted_mean"} (see the module docstring).
    """
    measure = measure or ("npmi" if normalized else "pmi")
    if convention not in CONVENTIONS:
        raise InputError(f"--convention {convention!r}: expected one of {', '.join(CONVENTIONS)}")
    by_counts = convention in ("gensim", "mimno") or measure in ("umass", "cv")
    ids = [pairs.ids(t.words) for t in topics]
    if isinstance(pairs, PmiFilePairs):
        if measure == "npmi":
            pairs.matrix([], normalized=True)  # raises the explanation
        pairs.load(set(int(i) for row in ids for i in row if i >= 0))
        if not pairs.values and any(len(t.words) > 1 for t in topics):
            raise InputError(
                "not one pair of the topics' words is in this file: is --vocab the vocabulary it was made with?",
                pairs.path,
            )
    rows = []
    for t, tid in zip(topics, ids):
        if by_counts:
            c, C = pairs.counts(tid)
            score = count_score(c, C, pairs.ref.units, measure, convention)
            missing = [w for w, n in zip(t.words, c) if n <= 0]
        else:
            score = topic_score(pairs.matrix(tid, measure == "npmi"), convention)
            missing = [w for w, i in zip(t.words, tid) if i < 0]
        rows.append(
            {
                "index": t.index,
                "score": score,
                "words": list(t.words),
                "weight": t.weight,
                "missing": missing,
            }
        )
    scores = np.array([r["score"] for r in rows])
    mean = float(scores.mean()) if len(rows) else None
    weighted = None
    if rows and all(r["weight"] is not None for r in rows):
        w = np.array([r["weight"] for r in rows], np.float64)
        if w.sum() > 0:
            weighted = float((w * scores).sum() / w.sum())
    return {"topics": rows, "mean": mean, "weighted_mean": weighted}


def model_topics(snapshot, top=10, rank="prob"):
    """Topics of a model: its ``top`` words by ``rank`` and its normalised topic proportions."""
    from ..topics import top_words

    return [Topic(k, list(words), weight=float(wt)) for k, wt, words, _ in top_words(snapshot, top, rank)]


def resolve_measure(measure=None, normalized=False, convention=None):
    """(measure, convention) with their defaults; InputError for a combination that does not exist."""
    if normalized:
        if measure not in (None, "npmi"):
            raise InputError(f"--normalized means --measure npmi; it cannot go with --measure {measure}")
        measure = "npmi"
    measure = measure or "pmi"
    if measure not in MEASURES:
        raise InputError(f"--measure {measure!r}: expected one of {', '.join(MEASURES)}")
    allowed = MEASURE_CONVENTIONS[measure]
    convention = convention or allowed[0]
    if convention not in allowed:
        raise InputError(
            f"--convention {convention!r} does not apply to --measure {measure} (it has: {', '.join(allowed)})"
        )
    return measure, convention


def is_prepared_corpus(path):
    p = Path(path)
    return p.is_dir() and (p / "corpus.json").is_file()


def _window_value(window):
    """None (not given), 0 (documents) or a number of tokens."""
    if window is None:
        return None
    from ..cooc import parse_window

    w = parse_window(window)
    return 0 if w == "doc" else int(w)


def coherence(
    reference,
    topics=None,
    model=None,
    vocab=None,
    top=10,
    rank="prob",
    convention=None,
    normalized=False,
    measure=None,
    window=None,
    part="train",
    window_counting="boolean",
):
    """Score a model (path) or a topics file (path) against a reference.

    ``reference``: a REF.npz (``topictool cooc``), an hca-style .pmi file, or a
    prepared corpus directory (``topictool prepare``: its ``part``, train, test
    or all, counted among the topics' words with ``window``: 'doc', a number of
    tokens, or None for the measure's default; ``window_counting`` boolean or
    gensim). ``vocab``: path of a vocabulary (one word per line, or hca
    ``.words``) for topic-file ids and .pmi ids; for a model and a .pmi file
    the model's vocabulary is the default.
    """
    from ..corpus.vocabulary import read_vocab

    measure, convention = resolve_measure(measure, normalized, convention)
    if (topics is None) == (model is None):
        raise InputError("give either MODEL or --topics FILE")
    if int(top) < 1:
        raise InputError(f"--top {top}: must be at least 1")
    if part not in ("train", "test", "all"):
        raise InputError(f"--part {part!r}: expected train, test or all")
    w = _window_value(window)
    corpus_ref = is_prepared_corpus(reference)
    if not corpus_ref and Path(reference).is_dir():
        raise InputError("a directory as --reference must be a prepared corpus (no corpus.json here)", reference)
    words = None
    if vocab is not None:
        words = read_vocab(vocab)
    if model is not None:
        from ..snapshot import load_model

        snap = load_model(model)
        topic_list = model_topics(snap, top, rank)
        if words is None and not corpus_ref and not _is_zip(Path(reference)) and Path(reference).exists():
            # the model's own word list is not necessarily the one the file's ids refer to
            raise InputError(
                "a .pmi reference holds word ids of the vocabulary it was made with: give that vocabulary with --vocab",
                reference,
            )
    else:
        topic_list = None
    if corpus_ref:
        from ..cooc.prepared import CorpusCounts

        if topic_list is None:
            topic_list = read_topics(topics, top, words)
        w = DEFAULT_WINDOWS[measure] if w is None else w
        counts = CorpusCounts(reference, [x for t in topic_list for x in t.words], part, w, window_counting)
        pairs = CorpusPairs(counts)
    else:
        pairs = open_pairs(reference, words)
        if topic_list is None:
            topic_list = read_topics(topics, top, words)
        if pairs.kind == "pmi-file" and (measure not in ("pmi",) or convention not in ("newman", "hca")):
            if measure == "npmi" and convention != "gensim":
                pairs.matrix([], normalized=True)  # raises the explanation
            raise InputError(
                f"--measure {measure} --convention {convention} needs co-occurrence counts (a REF.npz or a "
                "prepared corpus); a .pmi file holds PMI values only",
                pairs.path,
            )
        if pairs.kind == "pmi-file" and w is not None:
            raise InputError(f"--window {window}: a .pmi file holds PMI values, not counts of units", pairs.path)
        if pairs.kind == "cooc":
            ref_w = 0 if pairs.ref.window == "doc" else int(pairs.ref.window)
            if w is not None and w != ref_w:
                raise InputError(
                    f"--window {window}: this reference counted "
                    + ("documents" if ref_w == 0 else f"windows of {ref_w} tokens")
                    + " (make another with `topictool cooc --window`, or score against a prepared corpus)",
                    reference,
                )
        if window_counting != "boolean":
            raise InputError(
                f"--window-counting {window_counting} needs a prepared corpus as --reference "
                "(a REF.npz holds boolean window counts)",
                reference,
            )
    result = score_topics(topic_list, pairs, convention, measure=measure)
    result.update(
        measure=measure,
        convention=convention,
        normalized=measure == "npmi",
        top=int(top),
        rank=rank if model is not None else None,
        reference=str(reference),
        reference_kind=pairs.kind,
    )
    if pairs.kind == "cooc":
        result["reference_window"] = pairs.ref.window
        result["reference_units"] = pairs.ref.units
        result["window"] = "document" if pairs.ref.window == "doc" else pairs.ref.window
        result["window_counting"] = None if pairs.ref.window == "doc" else "boolean"
        result["units"] = pairs.ref.units
    elif pairs.kind == "corpus":
        result["part"] = part
        result["window"] = "document" if counts.window == 0 else counts.window
        result["window_counting"] = counts.counting
        result["units"] = counts.units
        result["documents"] = counts.documents
    else:
        result["window"] = None
        result["window_counting"] = None
        result["units"] = None
    if measure in ("umass", "cv") or convention == "gensim":
        result["epsilon"] = None if convention == "mimno" else EPSILON
    return result
