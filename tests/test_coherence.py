"""PMI / NPMI topic coherence (topictool.evaluate.coherence and `topictool pmi`)."""

import gzip
import math
import shutil

import numpy as np
import pytest

from topictool.evaluate.coherence import coherence, read_pmi_file
from topictool.snapshot import Snapshot

from .conftest import run, run_json, shared

#  U = 5 documents; counts: apple 3, banana 2, cherry 2, date 1, elder 1, fig 1;
#  together: apple+banana 2, apple+cherry 1, banana+cherry 1, cherry+date 1, elder+fig 1.
DOCS = ["apple banana", "apple banana cherry", "cherry date", "apple", "elder fig"]
VOCAB = ["apple", "banana", "cherry", "date", "elder", "fig"]
L = math.log


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    d = tmp_path_factory.mktemp("pmi")
    (d / "docs.txt").write_text("\n".join(DOCS) + "\n")
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    r = run("cooc", d / "docs.txt", "--vocab", d / "vocab.txt", "-o", d / "ref.npz", "--window", "doc")
    assert r.exit_code == 0, r.stderr
    (d / "topics.txt").write_text("apple banana cherry\napple elder\ndate cherry apple\n")
    return d


def pmi_json(*args):
    return run_json("pmi", *args)


def test_pmi_and_npmi_by_hand(ref):
    ab, ac, bc, cd = L(2 * 5 / (3 * 2)), L(1 * 5 / (3 * 2)), L(1 * 5 / (2 * 2)), L(1 * 5 / (2 * 1))
    expected = {
        ("newman", False): [(ab + ac + bc) / 3, 0.0, (cd + 0 + ac) / 3],
        ("hca", False): [(ab + ac + bc) / 9, 0.0, (cd + 0 + ac) / 9],
        ("newman", True): [(ab / L(5 / 2) + ac / L(5) + bc / L(5)) / 3, 0.0, (cd / L(5) + 0 + ac / L(5)) / 3],
        ("hca", True): [(ab / L(5 / 2) + ac / L(5) + bc / L(5)) / 9, 0.0, (cd / L(5) + 0 + ac / L(5)) / 9],
    }
    for (convention, normalized), scores in expected.items():
        args = ["--topics", ref / "topics.txt", "--reference", ref / "ref.npz", "--convention", convention]
        out = pmi_json(*args, *(["--normalized"] if normalized else []))
        got = [t["score"] for t in out["topics"]]
        assert got == pytest.approx(scores, rel=1e-12, abs=1e-15), (convention, normalized)
        assert out["topics"][1]["score"] == 0.0  # apple and elder never occur together
        assert out["mean"] == pytest.approx(sum(scores) / 3, rel=1e-12)
        assert out["weighted_mean"] is None  # a topics file has no topic proportions
        assert [t["index"] for t in out["topics"]] == [0, 1, 2]
        assert out["topics"][0]["words"] == ["apple", "banana", "cherry"]


def test_words_missing_from_the_reference_score_zero(ref):
    (ref / "odd.txt").write_text("apple zebra banana\n")
    out = pmi_json("--topics", ref / "odd.txt", "--reference", ref / "ref.npz")
    assert out["topics"][0]["missing"] == ["zebra"]
    assert out["topics"][0]["score"] == pytest.approx(L(5 / 3) / 3, rel=1e-12)


def test_model_top_words_and_weighted_mean(ref, tmp_path):
    phi = np.array([[0.4, 0.3, 0.2, 0.05, 0.03, 0.02], [0.02, 0.03, 0.05, 0.2, 0.3, 0.4]])
    Snapshot(phi=phi, alpha=np.full(2, 0.1), topic_weight=np.array([3.0, 1.0]), vocab=tuple(VOCAB)).save(
        tmp_path / "m.npz"
    )
    out = pmi_json(tmp_path / "m.npz", "--reference", ref / "ref.npz", "--top", "3")
    assert [t["words"] for t in out["topics"]] == [["apple", "banana", "cherry"], ["fig", "elder", "date"]]
    s0 = (L(5 / 3) + L(5 / 6) + L(5 / 4)) / 3
    s1 = (L(5) + 0 + 0) / 3  # elder+fig; date never with either
    assert [t["score"] for t in out["topics"]] == pytest.approx([s0, s1], rel=1e-12)
    assert [t["weight"] for t in out["topics"]] == [0.75, 0.25]
    assert out["weighted_mean"] == pytest.approx(0.75 * s0 + 0.25 * s1, rel=1e-12)
    assert out["mean"] == pytest.approx((s0 + s1) / 2, rel=1e-12)
    # an hca-style .pmi file in the model's word ids (its vocabulary named with --vocab)
    (tmp_path / "m.pmi").write_text(
        f"0 1 {L(5 / 3)!r}\n1 0 {L(5 / 3)!r}\n0 2 {L(5 / 6)!r}\n1 2 {L(5 / 4)!r}\n4 5 {L(5)!r}\n4 4 9.0\n"
    )
    (tmp_path / "m.words").write_text("".join(w + "\n" for w in VOCAB))
    out2 = pmi_json(
        tmp_path / "m.npz", "--reference", tmp_path / "m.pmi", "--vocab", tmp_path / "m.words", "--top", "3"
    )
    assert [t["score"] for t in out2["topics"]] == pytest.approx([s0, s1], rel=1e-12)
    r = run("pmi", tmp_path / "m.npz", "--reference", ref / "ref.npz", "--top", "3")
    assert r.exit_code == 0 and "weighted by topic proportion" in r.stdout and "apple banana cherry" in r.stdout


def _read_pmi_independently(path):
    values = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            i, j, v = line.split()
            i, j = int(i), int(j)
            if i != j:
                values[(min(i, j), max(i, j))] = float(v)
    return values


def test_hca_pmi_file_convention_matches_the_definition(tmp_path):
    pmi_path, words_path = shared("ch", "ch.pmi.gz"), shared("ch", "ch.words")
    words = [line.split()[-1] for line in words_path.read_text().splitlines()]
    topics = [list(range(0, 10)), list(range(10, 20)), [218, 1486, 524, 1282, 889, 61, 1713, 900, 1874, 309]]
    (tmp_path / "t.txt").write_text("".join(" ".join(words[i] for i in t) + "\n" for t in topics))
    pmi = _read_pmi_independently(pmi_path)
    expected = []
    for t in topics:
        pairs = [pmi.get((min(a, b), max(a, b)), 0.0) for n, a in enumerate(t) for b in t[n + 1 :]]
        expected.append(math.fsum(pairs) / len(t) ** 2)
    assert expected[2] > 0.5 and expected[0] != 0.0
    out = pmi_json(
        "--topics", tmp_path / "t.txt", "--vocab", words_path, "--reference", pmi_path, "--convention", "hca"
    )
    assert [t["score"] for t in out["topics"]] == expected  # exactly
    assert out["mean"] == pytest.approx(np.mean(expected), rel=1e-15)
    # hca's own .toplst form of the same topics (word ids, "k:" prefixes, root topic -1 skipped)
    (tmp_path / "t.toplst").write_text(
        "".join(f"{k}: " + " ".join(map(str, t)) + "\n" for k, t in enumerate(topics)) + "-1: 1 2 3\n"
    )
    out2 = pmi_json(
        "--topics", tmp_path / "t.toplst", "--vocab", words_path, "--reference", pmi_path, "--convention", "hca"
    )
    assert [t["score"] for t in out2["topics"]] == expected
    # the newman convention is the same sums over N(N-1)/2
    out3 = pmi_json("--topics", tmp_path / "t.txt", "--vocab", words_path, "--reference", pmi_path)
    assert [t["score"] for t in out3["topics"]] == pytest.approx([e * 100 / 45 for e in expected], rel=1e-12)


def test_read_pmi_file_keeps_wanted_pairs_last_wins(tmp_path):
    p = tmp_path / "x.pmi"
    p.write_text("0 1 1.5\n\n2 3 -0.5\n1 0 2.5\n3 3 7\n")
    assert read_pmi_file(p, 4) == {(0, 1): 2.5, (2, 3): -0.5}
    assert read_pmi_file(p, 4, wanted={0, 1}) == {(0, 1): 2.5}


def test_bad_input_exits_2_with_one_line(ref, tmp_path):
    topics = ref / "topics.txt"
    good = dict(vocab=ref / "vocab.txt")

    def fails(*args, expect):
        r = run("pmi", *args)
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        assert expect in r.stderr and r.stderr.count("\n") == 1, r.stderr

    (tmp_path / "bad.pmi").write_text("0 1 0.5\n1 2 0.25\n2 x 0.1\n")
    fails("--topics", topics, "--vocab", good["vocab"], "--reference", tmp_path / "bad.pmi", expect="bad.pmi:3:")
    (tmp_path / "range.pmi").write_text("0 1 0.5\n\n0 99 1.0\n")
    fails(
        "--topics",
        topics,
        "--vocab",
        good["vocab"],
        "--reference",
        tmp_path / "range.pmi",
        expect="range.pmi:3: id2 99 is outside the vocabulary of 6 words",
    )
    (tmp_path / "nan.pmi").write_text("0 1 nan\n")
    fails("--topics", topics, "--vocab", good["vocab"], "--reference", tmp_path / "nan.pmi", expect="nan.pmi:1:")
    (tmp_path / "ok.pmi").write_text("0 1 0.5\n")
    fails("--topics", topics, "--reference", tmp_path / "ok.pmi", expect="--vocab")
    fails(
        "--topics",
        topics,
        "--vocab",
        good["vocab"],
        "--reference",
        tmp_path / "ok.pmi",
        "--normalized",
        expect="--normalized",
    )
    fails("--topics", topics, "--vocab", tmp_path / "nope.txt", "--reference", tmp_path / "ok.pmi", expect="nope.txt")
    # damaged references
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04" + b"\x00" * 50)
    fails("--topics", topics, "--reference", tmp_path / "junk.npz", expect="junk.npz")
    data = (ref / "ref.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    fails("--topics", topics, "--reference", tmp_path / "cut.npz", expect="cut.npz")
    Snapshot(phi=np.full((1, 6), 1 / 6), alpha=np.ones(1), topic_weight=np.ones(1), vocab=tuple(VOCAB)).save(
        tmp_path / "model.npz"
    )
    fails("--topics", topics, "--reference", tmp_path / "model.npz", expect="not a co-occurrence reference")
    fails("--topics", topics, "--reference", tmp_path / "missing.npz", expect="missing.npz")
    fails(tmp_path / "model.npz", "--topics", topics, "--reference", ref / "ref.npz", expect="either MODEL")
    (tmp_path / "t.txt").write_text("apple nosuchword\n")
    fails(
        "--topics",
        tmp_path / "t.txt",
        "--vocab",
        good["vocab"],
        "--reference",
        tmp_path / "ok.pmi",
        expect="t.txt:1: word 'nosuchword' is not in the vocabulary",
    )


def test_reference_is_memory_mapped_and_matches_plain_load(ref):
    from topictool.cooc import load_reference

    mapped = load_reference(ref / "ref.npz")
    plain = load_reference(ref / "ref.npz", mmap=False)
    assert isinstance(mapped.pair_keys, np.memmap)
    assert np.array_equal(mapped.pair_keys, plain.pair_keys)
    assert mapped.pair_counts_of([0, 0, 4, 0], [1, 4, 5, 0]).tolist() == [2, 0, 1, 0]
    shutil.copy(ref / "ref.npz", ref / "copy.npz")
    assert coherence(ref / "copy.npz", topics=ref / "topics.txt")["topics"][1]["score"] == 0.0
