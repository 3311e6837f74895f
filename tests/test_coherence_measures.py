"""UMass, NPMI and C_V against a prepared corpus (`pmi --measure`, topictool.cooc.prepared).

The expected values are written out from the definitions (gensim's conventions: eps = 1e-12,
natural log, the higher-ranked word conditions in UMass) on counts read off the four
documents by hand, not computed by the code under test.
"""

import json
import math
import shutil

import numpy as np
import pytest

from topictool.cooc.prepared import count_small

from .conftest import run, run_json

DOCS = ["apple banana apple cherry", "banana cherry date", "apple date", "cherry egg banana"]
TOPICS = "banana cherry apple\ndate egg apple\n"
EPS = 1e-12
L = math.log

# Document units (U = 4): apple {1,3}, banana {1,2,4}, cherry {1,2,4}, date {2,3}, egg {4};
# together: apple+banana {1}, apple+cherry {1}, apple+date {3}, banana+cherry {1,2,4},
# banana+date {2}, cherry+date {2}, banana+egg {4}, cherry+egg {4}; apple+egg and date+egg never.
DOC_COUNTS = {"apple": 2, "banana": 3, "cherry": 3, "date": 2, "egg": 1}
DOC_PAIRS = {("banana", "cherry"): 3, ("apple", "banana"): 1, ("apple", "cherry"): 1, ("apple", "date"): 1}
DOC_PAIRS.update({("date", "egg"): 0, ("apple", "egg"): 0})


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("measures")
    (d / "docs.txt").write_text("\n".join(DOCS) + "\n")
    r = run("prepare", d / "docs.txt", "-o", d / "c", "--stopwords", "none", "--min-count", "1", "--test-fraction", "0")
    assert r.exit_code == 0, r.stderr
    (d / "t.txt").write_text(TOPICS)
    return d


def pmi_json(*args):
    return run_json("pmi", *args)


def scores(out):
    return [t["score"] for t in out["topics"]]


def npmi(co, c1, c2, U):
    return L((co / U + EPS) / ((c1 / U) * (c2 / U))) / -L(co / U + EPS)


def test_umass_by_hand(work):
    out = pmi_json("--topics", work / "t.txt", "--reference", work / "c", "--measure", "umass")
    # topic 0 (banana, cherry, apple): cherry|banana, apple|banana, apple|cherry
    t0 = (L((3 / 4 + EPS) / (3 / 4)) + L((1 / 4 + EPS) / (3 / 4)) + L((1 / 4 + EPS) / (3 / 4))) / 3
    # topic 1 (date, egg, apple): egg|date (never together), apple|date, apple|egg (never together)
    t1 = (L((0 + EPS) / (2 / 4)) + L((1 / 4 + EPS) / (2 / 4)) + L((0 + EPS) / (1 / 4))) / 3
    assert scores(out) == pytest.approx([t0, t1], rel=1e-12)
    assert out["mean"] == pytest.approx((t0 + t1) / 2, rel=1e-12)
    assert (out["measure"], out["convention"], out["window"], out["units"], out["epsilon"]) == (
        "umass",
        "gensim",
        "document",
        4,
        1e-12,
    )
    assert out["reference"] == str(work / "c") and out["reference_kind"] == "corpus" and out["part"] == "train"
    # Mimno et al.'s own form: the sum of log (D(wi, wj) + 1) / D(wj)
    out = pmi_json("--topics", work / "t.txt", "--reference", work / "c", "--measure", "umass", "--convention", "mimno")
    assert scores(out) == pytest.approx([L(4 / 3) + 2 * L(2 / 3), L(1 / 2) + L(2 / 2) + L(1 / 1)], rel=1e-12)


def test_npmi_by_hand(work):
    out = pmi_json(
        "--topics", work / "t.txt", "--reference", work / "c", "--measure", "npmi", "--window", "doc",
        "--convention", "gensim",
    )  # fmt: skip
    t0 = (npmi(3, 3, 3, 4) + npmi(1, 3, 2, 4) + npmi(1, 3, 2, 4)) / 3
    t1 = (npmi(0, 2, 1, 4) + npmi(1, 2, 2, 4) + npmi(0, 1, 2, 4)) / 3
    assert scores(out) == pytest.approx([t0, t1], rel=1e-12)
    assert npmi(0, 2, 1, 4) == pytest.approx(-1.0, abs=0.1)  # eps: an unseen pair is about -1, not 0
    # the newman convention (topictool's PMI rule): no eps, unseen pairs 0
    old = pmi_json("--topics", work / "t.txt", "--reference", work / "c", "--normalized", "--window", "doc")
    n = lambda co, c1, c2: L(co * 4 / (c1 * c2)) / L(4 / co)  # noqa: E731
    assert scores(old) == pytest.approx([(n(3, 3, 3) + 2 * n(1, 3, 2)) / 3, n(1, 2, 2) / 3], rel=1e-12)
    assert (old["measure"], old["convention"], old["normalized"]) == ("npmi", "newman", True)


def _cv(words, counts, pairs, U):
    """C_V from its definition: context vectors of NPMI (eps) against the topic's words."""
    N = len(words)
    co = lambda a, b: counts[a] if a == b else pairs.get((a, b), pairs.get((b, a), 0))  # noqa: E731
    M = [[npmi(co(a, b), counts[a], counts[b], U) for b in words] for a in words]
    v = [sum(M[i][j] for i in range(N)) for j in range(N)]
    norm = lambda x: math.sqrt(sum(e * e for e in x))  # noqa: E731
    return sum(sum(M[i][j] * v[j] for j in range(N)) / (norm(M[i]) * norm(v)) for i in range(N)) / N


def test_cv_by_hand_documents(work):
    out = pmi_json("--topics", work / "t.txt", "--reference", work / "c", "--measure", "cv", "--window", "doc")
    t0 = _cv(["banana", "cherry", "apple"], DOC_COUNTS, DOC_PAIRS, 4)
    t1 = _cv(["date", "egg", "apple"], DOC_COUNTS, DOC_PAIRS, 4)
    assert scores(out) == pytest.approx([t0, t1], rel=1e-12)
    assert 0 < t1 < t0 < 1


# Windows of 3 tokens (the documents' tokens are all vocabulary words here):
#   doc 1 "apple banana apple cherry" -> [apple banana apple], [banana apple cherry];
#   docs 2, 3, 4 are one window each (doc 3 has 2 tokens < 3): U = 5.
# boolean: apple 3, banana 4, cherry 3; apple+banana 2, apple+cherry 1, banana+cherry 3.
# gensim: sliding to window 2 drops the leaving token's word (apple) though another apple
#   stays: apple 2 (d1 w1, d3), apple+banana 1, apple+cherry 0; the rest as boolean.
WIN_BOOL = ({"apple": 3, "banana": 4, "cherry": 3}, {("apple", "banana"): 2, ("apple", "cherry"): 1})
WIN_GENSIM = ({"apple": 2, "banana": 4, "cherry": 3}, {("apple", "banana"): 1, ("apple", "cherry"): 0})


@pytest.mark.parametrize("counting, expected", [("boolean", WIN_BOOL), ("gensim", WIN_GENSIM)])
def test_sliding_windows_by_hand(work, counting, expected):
    counts, pairs = expected
    pairs = {**pairs, ("banana", "cherry"): 3}
    (work / "t0.txt").write_text("banana cherry apple\n")
    args = ["--topics", work / "t0.txt", "--reference", work / "c", "--window", "3", "--window-counting", counting]
    cv = pmi_json(*args, "--measure", "cv")
    assert cv["units"] == 5 and cv["window"] == 3 and cv["window_counting"] == counting
    assert scores(cv) == pytest.approx([_cv(["banana", "cherry", "apple"], counts, pairs, 5)], rel=1e-12)
    um = pmi_json(*args, "--measure", "umass")
    b, c, a = counts["banana"], counts["cherry"], counts["apple"]
    expected_umass = (
        L((3 / 5 + EPS) / (b / 5)) + L((pairs["apple", "banana"] / 5 + EPS) / (b / 5))
        + L((pairs["apple", "cherry"] / 5 + EPS) / (c / 5))
    ) / 3  # fmt: skip
    assert scores(um) == pytest.approx([expected_umass], rel=1e-12)
    nm = pmi_json(*args, "--measure", "npmi", "--convention", "gensim")
    ab, ac = pairs["apple", "banana"], pairs["apple", "cherry"]
    expected_npmi = (npmi(3, b, c, 5) + npmi(ab, b, a, 5) + npmi(ac, c, a, 5)) / 3
    assert scores(nm) == pytest.approx([expected_npmi], rel=1e-12)


def test_kernel_counts_match_a_direct_window_scan():
    """Random documents: the incremental kernel equals counting every window one by one."""
    rng = np.random.default_rng(3)
    T = 6
    for window, gensim in [(0, False), (2, False), (4, False), (7, False), (4, True), (2, True)]:
        lengths = rng.integers(0, 14, 30)
        ptr = np.r_[0, np.cumsum(lengths)]
        ids = rng.integers(-1, T, ptr[-1])
        units, wc, pairs = count_small(ids, ptr, window, gensim, T)
        U, c, C = 0, np.zeros(T, int), np.zeros((T, T), int)
        for d in range(30):
            doc = list(ids[ptr[d] : ptr[d + 1]])
            if window == 0:
                wins = [doc]
            elif not doc:
                wins = []
            else:
                wins = [doc[s : s + window] for s in range(max(1, len(doc) - window + 1))]
            flags = set()
            for s, win in enumerate(wins):
                if not gensim or s == 0:
                    flags = set(win)
                else:  # gensim 4: drop the leaving token's word, add the entering one's
                    flags.discard(doc[s - 1])
                    flags.add(win[-1])
                present = sorted(v for v in flags if v >= 0)
                U += 1
                for i in present:
                    c[i] += 1
                    for j in present:
                        C[i, j] += 1
        assert units == U and np.array_equal(wc, c) and np.array_equal(pairs, C), (window, gensim)


def test_prepared_corpus_reference_round_trip(work, tmp_path):
    """A prepared corpus counted on the spot gives what a REF.npz of `cooc` gives."""
    words = work / "c" / "vocab.txt"
    # documents: cooc over the same texts
    r = run("cooc", work / "docs.txt", "--vocab", words, "-o", tmp_path / "doc.npz", "--window", "doc")
    assert r.exit_code == 0, r.stderr
    # windows: cooc over the vocabulary tokens of the texts (here the texts themselves)
    r = run("cooc", work / "docs.txt", "--vocab", words, "-o", tmp_path / "w3.npz", "--window", "3")
    assert r.exit_code == 0, r.stderr
    for ref, window in [(tmp_path / "doc.npz", "doc"), (tmp_path / "w3.npz", "3")]:
        for extra in [[], ["--normalized"], ["--measure", "umass"], ["--measure", "cv"], ["--convention", "hca"]]:
            a = pmi_json("--topics", work / "t.txt", "--reference", ref, *extra)
            b = pmi_json("--topics", work / "t.txt", "--reference", work / "c", "--window", window, *extra)
            assert scores(a) == pytest.approx(scores(b), rel=1e-12, abs=1e-15), (window, extra)
            assert a["window"] == b["window"] and a["units"] == b["units"]
    # the REF.npz's window is its own: another one asked for is refused
    r = run("pmi", "--topics", work / "t.txt", "--reference", tmp_path / "w3.npz", "--window", "110")
    assert r.exit_code == 2 and "windows of 3 tokens" in r.stderr
    r = run("pmi", "--topics", work / "t.txt", "--reference", tmp_path / "w3.npz", "--window-counting", "gensim")
    assert r.exit_code == 2 and "prepared corpus" in r.stderr


def test_held_out_part_and_model(tmp_path):
    """--part test counts the held-out documents; a MODEL's top words are scored as a topics file's."""
    from topictool.snapshot import Snapshot

    docs = [f"apple banana {'cherry' if i % 2 else 'date'} egg" for i in range(10)]
    (tmp_path / "d.txt").write_text("\n".join(docs) + "\n")
    r = run("prepare", tmp_path / "d.txt", "-o", tmp_path / "c", "--stopwords", "none", "--min-count", "1")
    assert r.exit_code == 0, r.stderr
    vocab = tuple((tmp_path / "c" / "vocab.txt").read_text().split())
    phi = np.array([[0.5 if w == "apple" else 0.3 if w == "cherry" else 0.2 / 3 for w in vocab]])
    Snapshot(phi=phi, alpha=np.ones(1), topic_weight=np.ones(1), vocab=vocab).save(tmp_path / "m.npz")
    outs = {
        p: pmi_json(tmp_path / "m.npz", "--reference", tmp_path / "c", "--part", p, "--measure", "umass", "--top", "2")
        for p in ("train", "test", "all")
    }
    assert outs["train"]["units"] + outs["test"]["units"] == outs["all"]["units"] == 10
    assert outs["test"]["units"] == 2 and outs["all"]["topics"][0]["words"] == ["apple", "cherry"]
    for p, out in outs.items():
        n = {"train": 8, "test": 2, "all": 10}[p]
        cherry = sum(1 for i in _split_docs(tmp_path / "c", p) if i % 2)
        # cherry | apple: apple is in every document; a word in no unit of the part is missing (0)
        expected = L((cherry / n + EPS) / 1.0) if cherry else 0.0
        assert out["topics"][0]["score"] == pytest.approx(expected, rel=1e-12), p
        assert out["topics"][0]["missing"] == ([] if cherry else ["cherry"])
    r = run("pmi", tmp_path / "m.npz", "--reference", tmp_path / "c", "--measure", "cv")
    assert r.exit_code == 0, r.stderr
    assert "C_V (gensim convention)" in r.stdout and "boolean windows of 110 tokens" in r.stdout


def _split_docs(corpus_dir, part):
    names = []
    for p in ("train", "test") if part == "all" else (part,):
        names += (corpus_dir / f"{p}.names.txt").read_text().split()
    return [int(n.rsplit(":", 1)[1]) - 1 for n in names]


def test_windows_need_the_unchanged_text_sources(work, tmp_path):
    shutil.copytree(work / "c", tmp_path / "c")
    shutil.copy(work / "docs.txt", tmp_path / "docs.txt")
    manifest = json.loads((tmp_path / "c" / "corpus.json").read_text())
    manifest["source"] = [str(tmp_path / "docs.txt")]
    (tmp_path / "c" / "corpus.json").write_text(json.dumps(manifest))
    args = ["--topics", work / "t.txt", "--reference", tmp_path / "c", "--measure", "cv"]
    assert run("pmi", *args).exit_code == 0
    (tmp_path / "docs.txt").write_text("apple banana cherry apple\n" + "\n".join(DOCS[1:]) + "\n")  # same bag
    assert run("pmi", *args).exit_code == 0
    (tmp_path / "docs.txt").write_text("apple banana cherry\n" + "\n".join(DOCS[1:]) + "\n")
    r = run("pmi", *args)
    assert r.exit_code == 2 and "changed since prepare" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    (tmp_path / "docs.txt").unlink()
    r = run("pmi", *args)
    assert r.exit_code == 2 and "--window doc" in r.stderr
    assert run("pmi", *args, "--window", "doc").exit_code == 0  # documents need only the bags
    del manifest["source"]
    (tmp_path / "c" / "corpus.json").write_text(json.dumps(manifest))
    r = run("pmi", *args)
    assert r.exit_code == 2 and "--window doc" in r.stderr


def test_option_combinations_refused(work, tmp_path):
    def fails(*args, expect):
        r = run("pmi", "--topics", work / "t.txt", *args)
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        assert expect in r.stderr and r.stderr.count("\n") == 1, r.stderr

    ref = ["--reference", work / "c"]
    fails(*ref, "--normalized", "--measure", "umass", expect="--normalized")
    fails(*ref, "--measure", "cv", "--convention", "hca", expect="does not apply to --measure cv")
    fails(*ref, "--measure", "umass", "--convention", "newman", expect="does not apply")
    fails(*ref, "--window", "1", expect="--window 1")
    fails(*ref, "--part", "test", expect="no test split")
    (tmp_path / "plain").mkdir()
    fails("--reference", tmp_path / "plain", expect="prepared corpus")
    (tmp_path / "v.txt").write_text("apple\nbanana\ncherry\ndate\negg\n")
    (tmp_path / "r.pmi").write_text("0 1 0.5\n")
    pmi_file = ["--reference", tmp_path / "r.pmi", "--vocab", tmp_path / "v.txt"]
    fails(*pmi_file, "--measure", "umass", expect="needs co-occurrence counts")
    fails(*pmi_file, "--convention", "gensim", expect="needs co-occurrence counts")
    fails(*pmi_file, "--measure", "npmi", expect="--normalized")
    fails(*pmi_file, "--window", "10", expect="not counts of units")


def test_table_names_measure_window_top_and_reference(work):
    r = run("pmi", "--topics", work / "t.txt", "--reference", work / "c", "--measure", "umass", "--top", "3")
    assert r.exit_code == 0, r.stderr
    head = " ".join(r.stdout.split())
    assert "UMass (gensim convention) against" in head and "(train); documents; top 3" in head
    assert "mean UMass" in r.stdout
