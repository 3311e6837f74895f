import json

import numpy as np

from topictool.corpus import load_corpus

from .conftest import run


def test_bars_truth_and_lengths(tmp_path):
    r = run("synth", "bars", "-o", tmp_path / "b", "--documents", "300", "--test-documents", "30")
    assert r.exit_code == 0, r.stderr
    truth = np.load(tmp_path / "b" / "truth.npz", allow_pickle=False)
    phi = truth["phi"]
    assert phi.shape == (20, 100)
    grid = phi.reshape(20, 10, 10)
    for k in range(10):  # topic k is row k, topic 10+k is column k, each uniform over its 10 cells
        expect_row = np.zeros((10, 10))
        expect_row[k, :] = 0.1
        expect_col = np.zeros((10, 10))
        expect_col[:, k] = 0.1
        assert np.array_equal(grid[k], expect_row) and np.array_equal(grid[10 + k], expect_col)
    train, test = load_corpus(tmp_path / "b"), load_corpus(tmp_path / "b", part="test")
    assert train.D == 300 and test.D == 30 and train.W == 100
    assert np.all(train.doc_lengths() == 250) and np.all(test.doc_lengths() == 250)
    assert truth["theta"].shape == (300, 20) and np.allclose(truth["theta"].sum(1), 1)
    # every word of a document lies on a bar that the document's mixture uses
    support = truth["theta"][:5] @ phi > 0
    for d in range(5):
        words = train.word_ids[train.doc_ptr[d] : train.doc_ptr[d + 1]]
        assert support[d, words].all()


def test_same_seed_same_files(tmp_path):
    for name in ("a", "b"):
        assert run("synth", "lda", "-o", tmp_path / name, "--documents", "50", "--seed", "3").exit_code == 0
    for f in ("train.npz", "test.npz", "truth.npz", "vocab.txt", "corpus.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    assert run("synth", "lda", "-o", tmp_path / "c", "--documents", "50", "--seed", "4").exit_code == 0
    assert (tmp_path / "a" / "train.npz").read_bytes() != (tmp_path / "c" / "train.npz").read_bytes()


def test_lda_asymmetric_alpha_and_hdp_truth(tmp_path):
    r = run("synth", "lda", "-o", tmp_path / "l", "-K", "3", "--alpha", "1,0.5,0.1", "--documents", "20", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["synth"]["alpha"] == "1,0.5,0.1"
    assert np.allclose(np.load(tmp_path / "l" / "truth.npz")["alpha"], [1, 0.5, 0.1])
    assert run("synth", "lda", "-o", tmp_path / "m", "-K", "3", "--alpha", "1,2").exit_code == 2
    r = run("synth", "hdp", "-o", tmp_path / "h", "-T", "30", "--documents", "200")
    assert r.exit_code == 0, r.stderr
    t = np.load(tmp_path / "h" / "truth.npz", allow_pickle=False)
    assert np.isclose(t["global_weights"].sum(), 1) and t["phi"].shape == (30, 500)
    assert 1 < float(t["effective_topics"]) < 30
