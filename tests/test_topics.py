import csv
import io
import json
import math

import numpy as np
import pytest

from topictool.errors import InputError
from topictool.snapshot import Snapshot
from topictool.topics import lift, read_topics_file, render, term_score, top_words, write_topics

from .conftest import run

PHI = np.array([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
VOCAB = ("apple", "banana", "cherry", "date")


def snap(phi=PHI, weight=(0.5, 0.3, 0.2), vocab=VOCAB):
    K = len(phi)
    return Snapshot(
        phi=np.asarray(phi, dtype=float),
        alpha=np.full(K, 0.1),
        topic_weight=np.asarray(weight, float),
        vocab=tuple(vocab),
        meta={"model": "test"},
    )


def test_term_score_by_hand():
    # phi_kv * log(phi_kv / (prod_j phi_jv)^(1/3)); e.g. column 0: geometric mean
    # (0.4 * 0.1 * 0.25)^(1/3) = 0.01^(1/3) = 0.2154435, so topic 0 scores
    # 0.4 * ln(0.4 / 0.2154435) = 0.4 * 0.6187660 = 0.2475064
    expected = [
        [0.247506398715, 0.05877866649, -0.041907243961, -0.076752836433],
        [-0.076752836433, -0.041907243961, 0.05877866649, 0.247506398715],
        [0.037190591886, 0.003401832877, 0.003401832877, 0.037190591886],
    ]
    assert np.allclose(term_score(PHI), expected, atol=1e-11)
    # and entry by entry straight from the definition
    for k in range(3):
        for v in range(4):
            gm = (PHI[0, v] * PHI[1, v] * PHI[2, v]) ** (1 / 3)
            assert term_score(PHI)[k, v] == pytest.approx(PHI[k, v] * math.log(PHI[k, v] / gm), rel=1e-12)


def test_lift_by_hand():
    # p(v) = 0.5 * phi_0v + 0.3 * phi_1v + 0.2 * phi_2v; column 0: 0.2 + 0.03 + 0.05 = 0.28
    lf = lift(PHI, [0.5, 0.3, 0.2])
    assert lf[0, 0] == pytest.approx(0.4 / 0.28)
    assert lf[1, 3] == pytest.approx(0.4 / (0.05 + 0.12 + 0.05))


def test_top_words_ranks_and_ties():
    t = top_words(snap(), top=2, rank="prob")
    assert [x[0] for x in t] == [0, 1, 2]
    assert t[0][2] == ["apple", "banana"] and t[0][3] == [0.4, 0.3]
    assert t[1][2] == ["date", "cherry"]
    assert t[2][2] == ["apple", "banana"]  # all tied: by word id
    assert t[0][1] == pytest.approx(0.5)
    ts = top_words(snap(), top=4)  # term-score
    assert ts[2][2] == ["apple", "date", "banana", "cherry"]
    assert top_words(snap(), top=99)[0][2] == ["apple", "banana", "cherry", "date"]
    with pytest.raises(InputError):
        top_words(snap(), rank="tfidf")


def test_render_json_csv():
    t = top_words(snap(), top=3)
    obj = json.loads(render(t, "json", "term-score"))
    assert [set(x) for x in obj["topics"]] == [{"index", "weight", "words", "scores"}] * 3
    assert obj["topics"][1]["words"][0] == "date"
    rows = list(csv.reader(io.StringIO(render(t, "csv"))))
    assert rows[0] == ["topic", "weight", "position", "word", "score"] and len(rows) == 1 + 9


def test_txt_round_trip(tmp_path):
    t = top_words(snap(), top=3)
    path = tmp_path / "topics.txt"
    write_topics(t, path, "txt")
    assert path.read_text().splitlines()[0] == "apple banana cherry"
    assert read_topics_file(path) == [x[2] for x in t]
    ids = read_topics_file(path, vocab=VOCAB)
    assert ids == [[VOCAB.index(w) for w in x[2]] for x in t]
    vfile = tmp_path / "vocab.txt"
    vfile.write_text("\n".join(VOCAB) + "\n")
    assert read_topics_file(path, vocab=vfile) == ids


def test_read_topics_file_ids_and_errors(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("# hca-style ids\n0 3 1\n\ncherry 2\n")
    assert read_topics_file(p, vocab=VOCAB) == [[0, 3, 1], [2, 2]]
    p.write_text("apple\nfig banana\n")
    with pytest.raises(InputError) as e:
        read_topics_file(p, vocab=VOCAB)
    assert e.value.line == 2 and "fig" in str(e.value)
    p.write_text("7\n")
    with pytest.raises(InputError):
        read_topics_file(p, vocab=VOCAB)
    p.write_text("\n# nothing\n")
    with pytest.raises(InputError):
        read_topics_file(p)


def test_cli_topics(tmp_path):
    snap().save(tmp_path / "m.npz")
    r = run("topics", tmp_path / "m.npz", "--json", "--top", "2")
    assert r.exit_code == 0, r.stderr
    obj = json.loads(r.stdout)
    assert len(obj["topics"]) == 3 and obj["topics"][0]["words"] == ["apple", "banana"]
    out = tmp_path / "sub" / "t.txt"
    r = run("topics", tmp_path / "m.npz", "--format", "txt", "--rank", "prob", "--top", "2", "-o", out)
    assert r.exit_code == 0 and out.read_text() == "apple banana\ndate cherry\napple banana\n"
    r = run("topics", tmp_path / "m.npz")
    assert r.exit_code == 0 and "banana" in r.stdout
    r = run("topics", tmp_path / "m.npz", "--format", "csv", "--top", "1")
    assert r.exit_code == 0 and r.stdout.splitlines()[1].startswith("0,")
    r = run("topics", tmp_path / "m.npz", "-o", tmp_path / "t.json")
    assert r.exit_code == 0 and json.loads((tmp_path / "t.json").read_text())["topics"][0]["index"] == 0
    r = run("topics", tmp_path / "m.npz", "--format", "table", "-o", tmp_path / "t.tab")
    assert r.exit_code == 2 and not (tmp_path / "t.tab").exists()
    r = run("topics", tmp_path / "nope.npz")
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
