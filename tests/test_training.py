"""The training loop: run directory, metrics, checkpoints, exact resume, signals, errors."""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from topictool import store

from .conftest import run

MODEL_ARRAYS = ("phi", "alpha", "topic_weight")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("small")
    r = run(
        "synth",
        "lda",
        "-o",
        d / "c",
        "-K",
        "5",
        "-V",
        "120",
        "--documents",
        "150",
        "--length",
        "40",
        "--test-documents",
        "20",
    )
    assert r.exit_code == 0, r.stderr
    return d / "c"


def train(*args):
    r = run("train", *args)
    assert r.exit_code == 0, r.stderr
    return r


def final_state(run_dir):
    _, meta, arrays = store.latest_checkpoint(run_dir)
    return meta, arrays


def same_model(a, b):
    ma, mb = np.load(a / "model.npz"), np.load(b / "model.npz")
    for k in MODEL_ARRAYS:
        assert np.array_equal(ma[k], mb[k]), k
    (ia, sa), (ib, sb) = final_state(a), final_state(b)
    assert ia["iteration"] == ib["iteration"]
    assert sorted(sa) == sorted(sb)
    for k in sa:
        assert np.array_equal(sa[k], sb[k]), k


@pytest.mark.parametrize("threads", [1, 2])
def test_exact_resume(small, tmp_path, threads):
    common = ["-m", "lda-gibbs", "-K", "5", "--seed", "3", "--threads", str(threads), "--checkpoint-every", "7"]
    train(small, *common, "-n", "40", "-o", tmp_path / "whole")
    train(small, *common, "-n", "20", "-o", tmp_path / "half")
    train("--resume", tmp_path / "half", "-n", "20")
    same_model(tmp_path / "whole", tmp_path / "half")
    info = json.loads((tmp_path / "half" / "run.json").read_text())
    assert info["iterations_done"] == 40
    rows = store.read_jsonl(tmp_path / "half" / "metrics.jsonl")
    assert [r["iteration"] for r in rows] == list(range(1, 41))
    assert all(r["seconds"] > 0 and r["tokens_per_s"] > 0 for r in rows)
    assert len(store.list_checkpoints(tmp_path / "half")) <= 3


def test_failure_between_write_and_rename_keeps_previous_checkpoint(small, tmp_path, monkeypatch):
    common = ["-m", "lda-gibbs", "-K", "5", "--seed", "4", "--checkpoint-every", "10"]
    train(small, *common, "-n", "30", "-o", tmp_path / "whole")

    def fail_on_20(tmp, path):
        if path.name == "iter-000020.npz":
            raise OSError("injected failure before rename")

    monkeypatch.setattr(store, "_before_rename_hook", fail_on_20)
    r = run("train", small, *common, "-n", "30", "-o", tmp_path / "cut")
    assert r.exit_code == 1 and "injected failure" in r.stderr
    monkeypatch.undo()
    ckpts = [p.name for p in store.list_checkpoints(tmp_path / "cut")]
    assert ckpts == ["iter-000010.npz"]
    assert not [p for p in (tmp_path / "cut" / "checkpoints").iterdir() if p.name.startswith(".")]
    train("--resume", tmp_path / "cut", "-n", "20")
    same_model(tmp_path / "whole", tmp_path / "cut")


def test_damaged_checkpoint_falls_back_to_previous(small, tmp_path):
    common = ["-m", "lda-gibbs", "-K", "5", "--seed", "5", "--checkpoint-every", "5"]
    train(small, *common, "-n", "15", "-o", tmp_path / "a")
    train(small, *common, "-n", "10", "-o", tmp_path / "b")
    last = store.list_checkpoints(tmp_path / "b")[-1]
    data = bytearray(last.read_bytes())
    data[len(data) // 2] ^= 0xFF
    last.write_bytes(bytes(data))
    r = run("train", "--resume", tmp_path / "b", "-n", "10")
    assert r.exit_code == 0, r.stderr
    assert "previous checkpoint" in r.stderr
    same_model(tmp_path / "a", tmp_path / "b")


def test_sigterm_checkpoints_and_exits_zero(small, tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "topictool",
        "train",
        str(small),
        "-m",
        "lda-gibbs",
        "-K",
        "5",
        "--seed",
        "6",
        "-n",
        "100000",
        "-o",
        str(tmp_path / "r"),
        "--checkpoint-every",
        "0",
        "--log-every",
        "0",
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    metrics = tmp_path / "r" / "metrics.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (metrics.exists() and metrics.stat().st_size > 0):
        time.sleep(0.1)
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    done = info["iterations_done"]
    assert 0 < done < 100000
    assert store.list_checkpoints(tmp_path / "r")[-1].name == f"iter-{done:06d}.npz"
    rows = store.read_jsonl(metrics)
    assert rows[-1]["iteration"] == done
    # the interrupted run equals an uninterrupted one of the same length
    train(small, "-m", "lda-gibbs", "-K", "5", "--seed", "6", "-n", str(done), "-o", tmp_path / "u")
    same_model(tmp_path / "r", tmp_path / "u")


def test_config_set_and_snapshot_command(small, tmp_path):
    (tmp_path / "c.toml").write_text('model = "lda-gibbs"\nK = 4\niterations = 6\nseed = 2\n[options]\nalpha = 0.5\n')
    train(
        small,
        "--config",
        tmp_path / "c.toml",
        "--set",
        "beta=0.02",
        "-o",
        tmp_path / "r",
        "--checkpoint-every",
        "3",
        "--keep-checkpoints",
        "5",
    )
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    assert info["options"]["K"] == 4 and info["options"]["alpha"] == 0.5 and info["options"]["beta"] == 0.02
    assert info["iterations_done"] == 6
    r = run("snapshot", tmp_path / "r", "-o", tmp_path / "m.npz", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["iteration"] == 6
    m = np.load(tmp_path / "m.npz", allow_pickle=False)
    assert m["phi"].shape == (4, 120) and np.allclose(m["phi"].sum(1), 1)
    assert np.array_equal(m["phi"], np.load(tmp_path / "r" / "model.npz")["phi"])
    r = run("snapshot", tmp_path / "r", "--iteration", "3", "-o", tmp_path / "m3.npz")
    assert r.exit_code == 0, r.stderr
    assert not np.array_equal(np.load(tmp_path / "m3.npz")["phi"], m["phi"])
    r = run("snapshot", tmp_path / "r", "--iteration", "4", "-o", tmp_path / "m4.npz")
    assert r.exit_code == 2 and "no checkpoint for iteration 4" in r.stderr


def test_debug_checks_and_log_likelihood(small, tmp_path):
    train(small, "-m", "lda-gibbs", "-K", "5", "-n", "12", "--debug-checks", "--log-every", "4", "-o", tmp_path / "r")
    rows = store.read_jsonl(tmp_path / "r" / "metrics.jsonl")
    lls = [r["log_likelihood"] for r in rows if "log_likelihood" in r]
    assert len(lls) == 3 and all(np.isfinite(lls))
    assert lls[-1] > lls[0]  # the sampler climbs from a random start


def one_line_exit_2(r, text):
    assert r.exit_code == 2, (r.exit_code, r.stderr)
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and text in err, err


def test_train_errors(small, tmp_path):
    one_line_exit_2(run("train", small, "-m", "lda-gibbs", "-K", "0", "-o", tmp_path / "a"), "0 is not in the range")
    one_line_exit_2(
        run("train", small, "-m", "lda-gibbs", "--set", "K=0", "-o", tmp_path / "a"), "-K must be at least 1"
    )
    one_line_exit_2(run("train", small, "-m", "nope", "-o", tmp_path / "a"), "unknown model 'nope'")
    one_line_exit_2(
        run("train", small, "-m", "lda-gibbs", "--set", "colour=red", "-o", tmp_path / "a"), "unknown option 'colour'"
    )
    one_line_exit_2(run("train", tmp_path / "missing", "-m", "lda-gibbs", "-o", tmp_path / "a"), "missing")
    assert not (tmp_path / "a").exists()
    # a damaged run: every checkpoint broken
    train(small, "-m", "lda-gibbs", "-K", "3", "-n", "2", "-o", tmp_path / "d")
    for p in store.list_checkpoints(tmp_path / "d"):
        p.write_bytes(b"garbage")
    one_line_exit_2(run("train", "--resume", tmp_path / "d", "-n", "2"), "no usable checkpoint")
    (tmp_path / "d" / "run.json").write_text("{broken")
    one_line_exit_2(run("train", "--resume", tmp_path / "d"), "run.json is not valid JSON")
    one_line_exit_2(run("train", "--resume", tmp_path / "nodir"), "not a run directory")
