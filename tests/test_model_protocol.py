"""Adding a model family is one class and one registry call: a model written in the tests
(tests/toy_model.py) trains, checkpoints, resumes exactly, evaluates and is described through
the command line with nothing else changed."""

import json

import numpy as np
import pytest

from topictool.models import registry

from .conftest import run
from .toy_model import DocumentMixture


@pytest.fixture(scope="module")
def toy():
    registry.register(DocumentMixture.name, DocumentMixture)
    yield DocumentMixture.name
    registry.MODELS.pop(DocumentMixture.name)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("toy") / "c"
    r = run("synth", "lda", "-o", d, "-K", "4", "-V", "60", "--documents", "80", "--length", "30", "--seed", "2")
    assert r.exit_code == 0, r.stderr
    return d


def arrays(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files if k != "meta"}


def train(toy, corpus, out, *extra):
    r = run("train", corpus, "-m", toy, "-K", "4", "--seed", "5", "--checkpoint-every", "2", "-o", out, *extra)
    assert r.exit_code == 0, r.stderr
    return r


def test_trains_checkpoints_and_resumes_exactly(toy, corpus, tmp_path):
    train(toy, corpus, tmp_path / "whole", "-n", "6")
    train(toy, corpus, tmp_path / "half", "-n", "3")
    r = run("train", "--resume", tmp_path / "half", "-n", "3")
    assert r.exit_code == 0, r.stderr
    whole, half = arrays(tmp_path / "whole" / "model.npz"), arrays(tmp_path / "half" / "model.npz")
    assert whole.keys() == half.keys()
    for k in whole:
        assert np.array_equal(whole[k], half[k]), k
    info = json.loads((tmp_path / "whole" / "run.json").read_text())
    assert info["step_unit"] == "sweep" and info["iterations_done"] == 6
    assert len(list((tmp_path / "whole" / "checkpoints").iterdir())) >= 2
    rows = [json.loads(x) for x in (tmp_path / "whole" / "metrics.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == list(range(1, 7))
    assert all(1 <= row["topics_used"] <= 4 for row in rows)


def test_evaluates_and_is_described(toy, corpus, tmp_path):
    train(toy, corpus, tmp_path / "run", "-n", "4", "--test", corpus, "--eval-every", "2")
    r = run("evaluate", tmp_path / "run", corpus, "--json")
    assert r.exit_code == 0, r.stderr
    result = json.loads(r.stdout)
    assert np.isfinite(result["perplexity"]) and 1 < result["perplexity"] < 60
    # train --test reports what evaluate reports (same defaults, taken from the snapshot)
    last = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["test_perplexity"] == pytest.approx(result["perplexity"], rel=1e-12)
    r = run("info", tmp_path / "run", "--json")
    assert r.exit_code == 0, r.stderr
    r = run("train", "--list-models", "--json")
    rows = {row["name"]: row for row in json.loads(r.stdout)["models"]}
    assert rows[toy] == dict(name=toy, step_unit="sweep", threads=False, mpi=False, eval_method="gibbs")
    assert rows["lda-gibbs"]["mpi"] and not rows["hdp-gibbs"]["mpi"]


def test_refuses_what_it_does_not_support(toy, corpus, tmp_path):
    r = run("train", corpus, "-m", toy, "-K", "4", "--threads", "2", "-o", tmp_path / "t")
    assert r.exit_code == 2 and "refused" in r.stderr and not (tmp_path / "t").exists()
    r = run("train", corpus, "-m", toy, "-K", "4", "--set", "alpha=-1", "-o", tmp_path / "a")
    assert r.exit_code == 2 and "alpha" in r.stderr and not (tmp_path / "a").exists()
    with pytest.raises(ValueError):
        registry.register(toy, DocumentMixture)


def test_memory_estimate_counts_the_threads_own_tables():
    """Families whose threads hold their own topic-word tables (the variational and online HDP
    statistics, lda-gibbs's copy-merge copies) ask for that memory before anything is allocated;
    lda-gibbs's partitioned schedule shares one table."""
    from topictool.models import registry

    D, W, N = 1000, 50_000, 1_000_000
    for name in ("lda-scvb0", "hdp-pcsvb0", "hdp-online"):
        cls = registry.get(name)
        one, many = cls.memory_estimate(D, W, N, {"K": 100}, 1), cls.memory_estimate(D, W, N, {"K": 100}, 16)
        assert many - one >= 16 * 8 * 100 * W, name
    lda = registry.get("lda-gibbs")
    shared = lda.memory_estimate(D, W, N, {"K": 100, "schedule": "partition"}, 16)
    assert shared == lda.memory_estimate(D, W, N, {"K": 100}, 1)
    copies = lda.memory_estimate(D, W, N, {"K": 100, "schedule": "copy-merge"}, 16)
    assert copies - shared == 16 * 4 * N
