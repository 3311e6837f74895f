"""infer (new documents), export doc-topics (the training documents), export state (Mallet's
format) and train --show-topics, through the command line."""

import gzip
import json
import zipfile

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from topictool.corpus import load_corpus
from topictool.export import read_mallet_state
from topictool.snapshot import Snapshot

from .conftest import run


def ok(*args):
    r = run(*args)
    assert r.exit_code == 0, (args, r.stderr)
    return r


def read_npz(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def mean_tv(a, b):
    return float(0.5 * np.abs(a - b).sum(axis=1).mean())


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """synth lda (5 topics, 400 + 100 documents of 150 words) and lda-gibbs trained on it."""
    d = tmp_path_factory.mktemp("infer")
    ok("synth", "lda", "-o", d / "c", "-K", "5", "-V", "150", "--documents", "400", "--test-documents", "100",
       "--length", "150", "--alpha", "0.3")  # fmt: skip
    ok("train", d / "c", "-m", "lda-gibbs", "-K", "5", "-n", "200", "--seed", "2", "-o", d / "run")
    return d


def test_infer_recovers_the_training_mixtures_and_the_true_test_theta(planted):
    d = planted
    ok("infer", d / "run", d / "c", "--part", "train", "-o", d / "train.npz")
    ok("export", "doc-topics", d / "run", "-o", d / "trained.npz")
    inferred, trained = read_npz(d / "train.npz"), read_npz(d / "trained.npz")
    assert mean_tv(inferred["theta"], trained["theta"]) < 0.1
    # the test documents against their true theta, topics matched to the truth by phi
    ok("infer", d / "run", d / "c", "--part", "test", "-o", d / "test.npz", "--threads", "2")
    truth = read_npz(d / "c" / "truth.npz")
    phi = Snapshot.load(d / "run" / "model.npz").phi
    cost = np.sqrt(0.5 * ((np.sqrt(phi)[:, None] - np.sqrt(truth["phi"])[None]) ** 2).sum(-1))
    rows, cols = linear_sum_assignment(cost)
    theta = read_npz(d / "test.npz")["theta"][:, rows]
    assert mean_tv(theta, truth["theta_test"][:, cols]) < 0.15


def test_infer_is_the_same_for_any_thread_count_and_seeded(planted):
    d = planted
    for threads in ("1", "2"):
        ok("infer", d / "run", d / "c", "--part", "test", "-o", d / f"t{threads}.npz", "--threads", threads)
    ok("infer", d / "run", d / "c", "--part", "test", "-o", d / "s2.npz", "--seed", "2")
    a, b, c = (read_npz(d / f) for f in ("t1.npz", "t2.npz", "s2.npz"))
    assert np.array_equal(a["theta"], b["theta"]) and np.array_equal(a["doc_topic_count"], b["doc_topic_count"])
    assert not np.array_equal(a["theta"], c["theta"])
    assert np.allclose(a["theta"].sum(axis=1), 1.0)


def test_text_is_tokenised_as_the_training_corpus_was(tmp_path):
    rng = np.random.default_rng(5)
    words = ["Apple", "banana", "cherry's", "date-palm", "elder", "fig", "the", "and", "x1"]
    with zipfile.ZipFile(tmp_path / "docs.zip", "w") as z:
        for i in range(40):
            z.writestr(f"docs/{i:02d}.txt", " ".join(rng.choice(words, 30)) + ".")
        z.writestr("docs/README", "not a document")
    ok("prepare", tmp_path / "docs.zip", "-o", tmp_path / "p", "--min-count", "1", "--test-fraction", "0")
    ok("train", tmp_path / "p", "-m", "lda-gibbs", "-K", "2", "-n", "2", "-o", tmp_path / "run")
    r = ok("infer", tmp_path / "run", tmp_path / "docs.zip", "-o", tmp_path / "t.tsv", "--json")
    result = json.loads(r.stdout)
    assert result["documents"] == 40 and result["skipped_files"]["names"] == ["docs/README"]
    # stop words (the, and) are not in the vocabulary and not counted as unknown words
    assert result["oov_tokens"] == 0
    prepared = load_corpus(tmp_path / "p")
    assert result["tokens"] == prepared.N
    # word for word: the documents infer reads are the ones prepare wrote
    from topictool.infer import read_documents

    corpus, names, _ = read_documents(tmp_path / "docs.zip", Snapshot.load(tmp_path / "run" / "model.npz"))
    assert corpus.vocab == prepared.vocab
    for a in ("doc_ptr", "word_ids", "counts"):
        assert np.array_equal(getattr(corpus, a), getattr(prepared, a)), a
    lines = (tmp_path / "t.tsv").read_text().splitlines()
    assert [line.split("\t")[1] for line in lines] == (tmp_path / "p" / "train.names.txt").read_text().split()
    assert all(abs(sum(map(float, line.split("\t")[2:])) - 1) < 1e-4 for line in lines)


def test_export_state_is_read_back_as_the_runs_assignments(planted, tmp_path):
    from topictool.training import model_of_run

    d = planted
    ok("export", "state", d / "run", "-o", tmp_path / "state.gz")
    doc, typeindex, topic, alpha, beta = read_mallet_state(tmp_path / "state.gz")
    model = model_of_run(d / "run")
    assert np.array_equal(topic, model.z) and np.array_equal(typeindex, model.words)
    assert np.array_equal(np.bincount(doc), np.diff(model.token_ptr))
    assert np.allclose(alpha, model.alpha) and beta == pytest.approx(model.beta)
    with gzip.open(tmp_path / "state.gz", "rt") as f:
        assert f.readline() == "#doc source pos typeindex type topic\n"
    r = run("export", "state", d / "missing-run", "-o", tmp_path / "s2.gz")
    assert r.exit_code == 2 and not (tmp_path / "s2.gz").exists()


def test_export_doc_topics_rows_sum_to_one_and_match_the_snapshot(planted, tmp_path):
    d = planted
    snap = Snapshot.load(d / "run" / "model.npz")
    counts = snap.doc_topic_matrix()
    assert counts.sum() == load_corpus(d / "c").N
    ok("export", "doc-topics", d / "run" / "model.npz", "-o", tmp_path / "dt.tsv")
    rows = np.array(
        [[float(x) for x in line.split("\t")[2:]] for line in (tmp_path / "dt.tsv").read_text().splitlines()]
    )
    assert np.allclose(rows.sum(axis=1), 1.0, atol=1e-5)
    expected = (counts + snap.alpha) / (counts.sum(axis=1, keepdims=True) + snap.alpha.sum())
    assert np.allclose(rows, expected, atol=1e-6)
    ok("export", "doc-topics", d / "run", "-o", tmp_path / "top2.csv", "--max-topics", "2")
    first = (tmp_path / "top2.csv").read_text().splitlines()[1].split(",")
    assert len(first) == 6 and float(first[3]) >= float(first[5])
    # an existing output is refused without --force, and nothing is written over it
    (tmp_path / "keep.tsv").write_text("mine")
    r = run("export", "doc-topics", d / "run", "-o", tmp_path / "keep.tsv")
    assert r.exit_code == 2 and (tmp_path / "keep.tsv").read_text() == "mine"


def test_train_shows_topics_every_n_iterations(planted, tmp_path):
    r = ok("train", planted / "c", "-m", "lda-gibbs", "-K", "3", "-n", "4", "--show-topics", "2", "--log-every", "0",
           "-o", tmp_path / "r")  # fmt: skip
    assert r.stderr.count("topics at sweep") == 2 and "topics at sweep 4:" in r.stderr
