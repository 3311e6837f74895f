import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from topictool.errors import InputError
from topictool.importers import export_text, import_hca, import_mallet, import_text
from topictool.snapshot import Snapshot, load_model

FIX = Path(__file__).parent / "fixtures"
HCA, MALLET = FIX / "hca", FIX / "mallet"
C1 = np.array([[0.5, 0.2, 0.1, 0.1, 0.1], [0.05, 0.05, 0.6, 0.2, 0.1], [0.1, 0.1, 0.1, 0.1, 0.6]])
FRUIT = ("apple", "banana", "cherry", "date", "elder")


def test_fixture_bytes_are_as_documented():
    for name, (W, T, C), rows in (
        ("c1.phi", (5, 3, 4), C1),
        ("c2.phi", (5, 2, 1), [[0.4, 0.3, 0.2, 0.1, 0.0], [0.1, 0.1, 0.2, 0.3, 0.3], [0.2] * 5]),
    ):
        data = (HCA / name).read_bytes()
        assert struct.unpack("<3I", data[:12]) == (W, T, C)
        assert np.array_equal(np.frombuffer(data[12:], "<f4"), np.asarray(rows, "<f4").ravel())


def rows_sum_to_one(s):
    return np.allclose(s.phi.sum(axis=1), 1.0, atol=1e-12) and np.all(s.phi > 0)


def test_hca_with_tokens_par_and_alpha():
    report = []
    s = import_hca(HCA / "c1.phi", tokens_path=HCA / "ch.tokens", report=report)
    assert s.vocab == FRUIT
    assert rows_sum_to_one(s)
    assert np.allclose(s.phi, C1, atol=1e-7)  # float32 in the file
    assert np.allclose(s.alpha, 10 * np.array([0.5, 0.3, 0.2]))  # b * pi from .par and .alpha
    assert np.allclose(s.topic_weight, [0.5, 0.3, 0.2])
    assert s.burst_concentration is None
    assert s.meta["source"]["files"]["par"].endswith("c1.par")
    assert s.meta["hyperparameters"]["b"] == 10
    assert report == s.meta.get("import_messages", [])


def test_hca_words_file_gives_the_same_vocabulary():
    s = import_hca(HCA / "c1.phi", tokens_path=HCA / "ch.words")
    assert s.vocab == FRUIT


def test_hca_beta_row_zero_smoothing_dirichlet_alpha_and_burst():
    report = []
    s = import_hca(HCA / "c2.phi", tokens_path=HCA / "ch.tokens", report=report)
    assert s.K == 2 and rows_sum_to_one(s)
    # the zero for "elder" in topic 0 gets the topic's smallest probability, 0.1, then renormalise
    assert np.allclose(s.phi[0], np.array([0.4, 0.3, 0.2, 0.1, 0.1]) / 1.1, atol=1e-7)
    assert np.allclose(s.alpha, [0.5, 0.5])  # alphatot = 1 spread evenly (no .alpha for c2)
    assert np.allclose(s.topic_weight, [0.6, 0.4])
    assert np.allclose(s.burst_concentration, [50, 80]) and s.burst_discount == 0.5
    assert any("beta" in m for m in report) and any("zero" in m for m in report)


def test_hca_aligned_to_another_vocabulary(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("cherry\napple\nfig\n")
    report = []
    s = import_hca(HCA / "c1.phi", tokens_path=HCA / "ch.tokens", vocab_path=vocab, report=report)
    assert s.vocab == ("cherry", "apple", "fig")
    assert rows_sum_to_one(s)
    # topic 0: cherry 0.1, apple 0.5, fig absent -> smallest present (0.1); renormalised over 0.7
    assert np.allclose(s.phi[0], np.array([0.1, 0.5, 0.1]) / 0.7, atol=1e-7)
    assert any("dropped" in m for m in report) and any("not in the hca model" in m for m in report)
    vocab.write_text("fig\nkiwi\n")
    with pytest.raises(InputError, match="no word"):
        import_hca(HCA / "c1.phi", tokens_path=HCA / "ch.tokens", vocab_path=vocab)


def test_hca_needs_words_and_consistent_dimensions(tmp_path):
    with pytest.raises(InputError, match="dictionary"):
        import_hca(HCA / "c1.phi")
    with pytest.raises(InputError, match="W=5"):
        import_hca(HCA / "c1.phi", vocab_path=["a", "b"])
    s = import_hca(HCA / "c1.phi", vocab_path=list(FRUIT))
    assert s.vocab == FRUIT
    # no .par, no .alpha beside the phi: symmetric default alpha, reported
    shutil.copy(HCA / "c1.phi", tmp_path / "x.phi")
    report = []
    s = import_hca(tmp_path / "x.phi", tokens_path=HCA / "ch.tokens", report=report)
    assert np.allclose(s.alpha, 5 / 3) and any("alpha" in m for m in report)
    (tmp_path / "short.phi").write_bytes(struct.pack("<3I", 5, 3, 1) + b"\0" * 8)
    with pytest.raises(InputError, match="does not match"):
        import_hca(tmp_path / "short.phi", tokens_path=HCA / "ch.tokens")
    (tmp_path / "x.par").write_text("T = 4\n")
    with pytest.raises(InputError, match="T = 4"):
        import_hca(tmp_path / "x.phi", tokens_path=HCA / "ch.tokens")


def test_mallet_weights_and_keys():
    report = []
    s = import_mallet(MALLET / "weights.txt", keys_path=MALLET / "keys.txt", report=report)
    assert s.vocab == ("zebra", "apple", "mango", "kiwi")  # Mallet's alphabet order, as in the file
    w0 = np.array([0.01, 5.01, 3.01, 2.01])
    w1 = np.array([8.01, 0.01, 1.01, 3.01])
    assert np.allclose(s.phi, [w0 / w0.sum(), w1 / w1.sum()], rtol=1e-14)
    assert rows_sum_to_one(s)
    assert np.allclose(s.alpha, [0.25, 0.75])
    assert np.allclose(s.topic_weight, [10 / 22, 12 / 22])
    assert s.meta["hyperparameters"]["beta_estimate"] == pytest.approx(0.01)
    assert report == []
    s2 = import_mallet(MALLET / "weights.txt", report=report)
    assert np.allclose(s2.alpha, 2.5) and len(report) == 1


def test_mallet_alignment_and_errors(tmp_path):
    s = import_mallet(MALLET / "weights.txt", vocab_path=["kiwi", "apple", "pear"])
    assert s.vocab == ("kiwi", "apple", "pear") and rows_sum_to_one(s)
    with pytest.raises(InputError, match="no word"):
        import_mallet(MALLET / "weights.txt", vocab_path=["pear"])
    bad = tmp_path / "w.txt"
    bad.write_text("0\tapple\t1.0\n0\tpear\tlots\n")
    with pytest.raises(InputError) as e:
        import_mallet(bad)
    assert e.value.line == 2
    bad.write_text("0\tapple\t1.0\n2\tpear\t1.0\n")
    with pytest.raises(InputError, match="missing"):
        import_mallet(bad)
    bad.write_text("0\tapple\t1.0\n0\tapple\t2.0\n")
    with pytest.raises(InputError, match="twice"):
        import_mallet(bad)
    keys = tmp_path / "k.txt"
    keys.write_text("0\t0.5\tzebra\n")
    with pytest.raises(InputError, match="topics"):
        import_mallet(MALLET / "weights.txt", keys_path=keys)


def random_snapshot(burst=False, seed=0):
    rng = np.random.default_rng(seed)
    K, W = 4, 50
    phi = rng.dirichlet(np.full(W, 0.3), K)
    phi = phi / phi.sum(axis=1, keepdims=True)
    extra = dict(burst_concentration=rng.uniform(1, 100, K), burst_discount=0.37) if burst else {}
    return Snapshot(
        phi=phi,
        alpha=rng.uniform(0.01, 1, K),
        topic_weight=rng.dirichlet(np.ones(K)),
        vocab=tuple(f"wörd{i}" for i in range(W)),
        meta={"model": "lda-gibbs", "beta": 0.01},
        **extra,
    )


@pytest.mark.parametrize("burst", [False, True])
def test_text_export_import_is_the_identity(tmp_path, burst):
    s = random_snapshot(burst)
    paths = export_text(s, tmp_path / "m")
    assert {p.name for p in paths} == {"m.phi.txt", "m.vocab.txt", "m.alpha.txt", "m.weights.txt", "m.meta.json"}
    report = []
    t = import_text(tmp_path / "m", report=report)
    assert report == []
    for name in ("phi", "alpha", "topic_weight"):
        assert np.array_equal(getattr(s, name), getattr(t, name)), name
    assert t.vocab == s.vocab and t.meta == s.meta
    if burst:
        assert np.array_equal(t.burst_concentration, s.burst_concentration) and t.burst_discount == s.burst_discount
    else:
        assert t.burst_concentration is None
    t.save(tmp_path / "m.npz")
    u = Snapshot.load(tmp_path / "m.npz")
    assert np.array_equal(u.phi, s.phi) and u.vocab == s.vocab


def test_text_hand_made_model(tmp_path):
    (tmp_path / "h.phi.txt").write_text("# two topics\n2 1 1 0\n0.25 0.25 0.25 0.25\n")
    (tmp_path / "h.vocab.txt").write_text("a\nb\nc\nd\n")
    report = []
    s = import_text(tmp_path / "h", report=report)
    assert np.allclose(s.phi[0], np.array([2, 1, 1, 1]) / 5)
    assert np.array_equal(s.phi[1], [0.25] * 4)
    assert np.allclose(s.alpha, 2.5) and np.allclose(s.topic_weight, 0.5)
    assert len(report) == 2  # default alpha, zero smoothed
    (tmp_path / "h.phi.txt").write_text("1 2\n1 2 3\n")
    with pytest.raises(InputError) as e:
        import_text(tmp_path / "h")
    assert e.value.line == 2
    with pytest.raises(InputError):
        import_text(tmp_path / "absent")


def test_load_model(tmp_path):
    s = random_snapshot()
    s.save(tmp_path / "x.npz")
    assert np.array_equal(load_model(tmp_path / "x.npz").phi, s.phi)
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(InputError, match="model.npz"):
        load_model(run)
    s.save(run / "model.npz")
    assert load_model(run).vocab == s.vocab
    with pytest.raises(InputError):
        load_model(tmp_path / "missing.npz")


def test_imported_models_save_and_load(tmp_path):
    s = import_hca(HCA / "c2.phi", tokens_path=HCA / "ch.words")
    s.save(tmp_path / "h.npz")
    t = Snapshot.load(tmp_path / "h.npz")
    assert np.array_equal(t.phi, s.phi) and np.allclose(t.burst_concentration, [50, 80])
    assert t.meta["import_messages"] == s.meta["import_messages"]


def test_mallet_lines_in_any_order(tmp_path):
    lines = (MALLET / "weights.txt").read_text().splitlines()
    shuffled = tmp_path / "w.txt"
    shuffled.write_text("\n".join([lines[i] for i in (5, 0, 7, 2, 1, 4, 3, 6)]) + "\n")
    a = import_mallet(MALLET / "weights.txt")
    b = import_mallet(shuffled)
    assert b.vocab == ("apple", "zebra", "kiwi", "mango")  # first appearance
    order = [a.vocab.index(w) for w in b.vocab]
    assert np.array_equal(a.phi[:, order], b.phi) and np.array_equal(a.topic_weight, b.topic_weight)
