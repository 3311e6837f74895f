"""`topics --format txt` output is what `pmi --topics` reads: the same words, the same scores."""

import json

import numpy as np

from topictool.snapshot import Snapshot

from .conftest import run

VOCAB = ("ant", "bee", "cat", "dog", "eel", "fox")


def test_topics_txt_read_back_by_pmi(tmp_path):
    phi = np.array([[0.4, 0.3, 0.2, 0.05, 0.03, 0.02], [0.02, 0.03, 0.05, 0.2, 0.3, 0.4]])
    Snapshot(phi=phi, alpha=np.array([0.1, 0.1]), topic_weight=np.array([0.5, 0.5]), vocab=VOCAB).save(
        tmp_path / "m.npz"
    )
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    # an hca-style PMI file over the same ids: pairs (0,1)=1.0, (0,2)=0.5, (4,5)=2.0, (3,5)=-1.0
    (tmp_path / "ref.pmi").write_text("0 1 1.0\n0 2 0.5\n4 5 2.0\n3 5 -1.0\n")
    r = run("topics", tmp_path / "m.npz", "--format", "txt", "--rank", "prob", "--top", "3", "-o", tmp_path / "t.txt")
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "t.txt").read_text().split("\n")[:2] == ["ant bee cat", "fox eel dog"]
    r = run(
        "pmi",
        "--topics",
        tmp_path / "t.txt",
        "--reference",
        tmp_path / "ref.pmi",
        "--vocab",
        tmp_path / "vocab.txt",
        "--top",
        "3",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    from_file = json.loads(r.stdout)
    scores = [t["score"] for t in from_file["topics"]]
    assert np.allclose(scores, [(1.0 + 0.5 + 0) / 3, (2.0 - 1.0 + 0) / 3])  # newman: mean over 3 pairs
    # a .pmi file's ids refer to the vocabulary it was made with: a MODEL needs it named too
    r = run("pmi", tmp_path / "m.npz", "--reference", tmp_path / "ref.pmi", "--top", "3")
    assert r.exit_code == 2 and "--vocab" in r.stderr
    r = run(
        "pmi",
        tmp_path / "m.npz",
        "--reference",
        tmp_path / "ref.pmi",
        "--vocab",
        tmp_path / "vocab.txt",
        "--top",
        "3",
        "--rank",
        "prob",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    from_model = json.loads(r.stdout)
    assert [t["score"] for t in from_model["topics"]] == scores
    assert np.isclose(from_model["weighted_mean"], np.mean(scores))
