import json
import math

import numpy as np
import pytest

from topictool.evaluate.diagnostics import (
    effective_topics,
    hellinger,
    model_diagnostics,
    run_figures,
)
from topictool.snapshot import Snapshot

from .conftest import run


def snap(phi, weight):
    phi = np.asarray(phi, dtype=float)
    return Snapshot(
        phi=phi,
        alpha=np.full(len(phi), 0.1),
        topic_weight=np.asarray(weight, float),
        vocab=tuple(f"w{i}" for i in range(phi.shape[1])),
        meta={"model": "test"},
    )


def test_effective_topics():
    assert effective_topics([1, 1, 1, 1]) == pytest.approx(4)
    assert effective_topics([0, 3, 0]) == pytest.approx(1)
    # H = 0.5 ln 2 + 2 * 0.25 ln 4 = 1.5 ln 2
    assert effective_topics([0.5, 0.25, 0.25]) == pytest.approx(2**1.5)


def test_hellinger():
    assert hellinger([[0.5, 0.5, 0, 0]], [0.5, 0.5, 0, 0])[0] == pytest.approx(0, abs=1e-7)
    assert hellinger([[1, 0]], [0, 1])[0] == pytest.approx(1)
    # 1 - sqrt(0.5 * 1) = 0.29289...
    assert hellinger([[0.5, 0.5]], [1, 0])[0] == pytest.approx(math.sqrt(1 - math.sqrt(0.5)))


def test_model_diagnostics():
    phi = [[0.25, 0.25, 0.25, 0.25], [1 - 3e-9, 1e-9, 1e-9, 1e-9]]
    info = model_diagnostics(snap(phi, [3, 1]))
    assert info["effective_topics"] == pytest.approx(math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25))))
    t0, t1 = info["topics"]
    assert t0["proportion"] == pytest.approx(0.75)
    assert t0["effective_words"] == pytest.approx(4)
    assert t1["effective_words"] == pytest.approx(1, abs=1e-6)
    assert t0["hellinger_uniform"] == pytest.approx(0, abs=1e-7)
    # corpus distribution p = 0.75 * uniform + 0.25 * topic 1
    p = 0.75 * np.array(phi[0]) + 0.25 * np.array(phi[1])
    assert t1["hellinger_corpus"] == pytest.approx(math.sqrt(1 - np.sqrt(np.array(phi[1]) * p).sum()))
    assert t0["doc_sparsity"] is None
    counts = np.array([[3, 0], [0, 2], [1, 0], [5, 0]])
    info = model_diagnostics(snap(phi, [3, 1]), counts)
    assert [t["doc_sparsity"] for t in info["topics"]] == [0.25, 0.75]


def write_run(d, phi=((0.5, 0.5), (0.9, 0.1)), **run_json):
    d.mkdir(parents=True, exist_ok=True)
    snap(phi, [1, 1]).save(d / "model.npz")
    (d / "run.json").write_text(json.dumps(run_json))
    lines = [json.dumps({"iteration": i, "seconds": 0.5, "tokens_per_s": 1000.0 * i}) for i in (1, 2, 3)]
    (d / "metrics.jsonl").write_text("\n".join(lines) + '\n{"iteration": 4, "seco')  # torn last line
    return d


def test_run_figures(tmp_path):
    d = write_run(
        tmp_path / "run", model="lda-gibbs", options={"K": 2}, iterations_done=3, seconds_total=1.7, bytes_per_token=9.5
    )
    f = run_figures(d)
    assert f == {
        "model": "lda-gibbs",
        "iterations": 3,
        "seconds": 1.7,
        "tokens_per_s": 2000.0,
        "bytes_per_token": 9.5,
        "options": {"K": 2},
    }
    d2 = write_run(tmp_path / "run2")  # run.json without the figures
    f = run_figures(d2)
    assert f["iterations"] == 3 and f["seconds"] == pytest.approx(1.5) and f["bytes_per_token"] is None
    assert run_figures(tmp_path / "nothing")["iterations"] is None


def test_cli_info(tmp_path):
    snap([[0.5, 0.5], [0.9, 0.1]], [1, 3]).save(tmp_path / "m.npz")
    r = run("info", tmp_path / "m.npz", "--json")
    assert r.exit_code == 0, r.stderr
    obj = json.loads(r.stdout)
    assert {"effective_topics", "topics"} <= set(obj) and len(obj["topics"]) == 2
    assert {"index", "proportion", "effective_words", "hellinger_corpus"} <= set(obj["topics"][0])
    assert "run" not in obj
    d = write_run(tmp_path / "run", model="lda-gibbs", iterations_done=3, seconds_total=2.0)
    r = run("info", d, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["run"]["iterations"] == 3
    r = run("info", d)
    assert r.exit_code == 0 and "effective number of topics" in r.stdout and "iterations" in r.stdout
    r = run("info", tmp_path / "checkpoints-missing")
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1


def test_cli_info_on_a_trained_run_reports_doc_sparsity(tmp_path):
    r = run(
        "synth",
        "lda",
        "-K",
        "3",
        "-V",
        "40",
        "--documents",
        "60",
        "--test-documents",
        "10",
        "--length",
        "30",
        "-o",
        tmp_path / "c",
    )
    assert r.exit_code == 0, r.stderr
    r = run("train", tmp_path / "c", "-m", "lda-gibbs", "-K", "3", "-n", "3", "-o", tmp_path / "run")
    assert r.exit_code == 0, r.stderr
    r = run("info", tmp_path / "run", "--json")
    assert r.exit_code == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["run"]["iterations"] == 3 and obj["run"]["bytes_per_token"] > 0
    assert all(0 <= t["doc_sparsity"] <= 1 for t in obj["topics"])
    r = run("evaluate", tmp_path / "run", tmp_path / "c", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["documents"] == 10
