"""Safe by construction: what topictool refuses, and what it never destroys.

Every refusal here must be exit 2 with one line on stderr, and must leave every file
that existed before byte-identical (contents, modes, and the set of names). The
classes: --force on each command against a foreign directory, `.`, `..`, the input,
a symbolic link; each command's -o over an existing file, a directory, below a file;
two writers on one run; priors that overflow and hold-outs that hold nothing out;
vocabularies that do not match; compressed inputs truncated and faked; sizes that
cannot fit; umask; a kill -9 during `train --force`; strict JSON; checkpoint order.
"""

import bz2
import gzip
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from topictool import memory, store

from .conftest import run

# ---------------------------------------------------------------------------
# helpers


def tree(root):
    """Everything below ``root``: relative path -> (kind, mode, content or link target)."""
    root = Path(root)
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", st.st_mode, os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", st.st_mode, None)
            else:
                out[rel] = ("file", st.st_mode, p.read_bytes())
    return out


def refused(args, root, expect=None):
    """Run the command; assert exit 2, one stderr line, and nothing under ``root`` changed."""
    before = tree(root)
    r = run(*args)
    err = r.stderr.strip()
    assert r.exit_code == 2, (args, r.exit_code, r.stderr, r.exception)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    if expect is not None:
        assert expect in err, err
    after = tree(root)
    assert after.keys() == before.keys(), set(after) ^ set(before)
    for k in before:
        assert after[k] == before[k], k
    return r


def ok(*args):
    r = run(*args)
    assert r.exit_code == 0, (args, r.stderr, r.exception)
    return r


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A prepared corpus, a text source, a run and its snapshot (never modified by the tests)."""
    d = tmp_path_factory.mktemp("safety")
    ok(
        "synth",
        "lda",
        "-o",
        d / "corpus",
        "-K",
        "3",
        "-V",
        "40",
        "--documents",
        "30",
        "--length",
        "20",
        "--test-documents",
        "5",
        "--format",
        "ldac",
    )
    (d / "texts").mkdir()
    for i in range(6):
        (d / "texts" / f"doc{i}.txt").write_text(f"apple banana cherry {'date ' * i} elder fig\n")
    ok("train", d / "corpus", "-m", "lda-gibbs", "-K", "3", "-n", "4", "--checkpoint-every", "2", "-o", d / "run")
    ok("snapshot", d / "run", "-o", d / "model.npz")
    ok("prepare", d / "texts", "-o", d / "words", "--min-count", "1", "--test-fraction", "0")
    return d


@pytest.fixture
def work(base, tmp_path, monkeypatch):
    """A scratch copy of the base files, with the current directory at work/a/b (which holds a file)."""
    for name in ("corpus", "texts", "run", "words"):
        shutil.copytree(base / name, tmp_path / name, symlinks=True)
    shutil.copy2(base / "model.npz", tmp_path / "model.npz")
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "notes.txt").write_text("a user's notes\n")
    (tmp_path / "a" / "b" / "data.csv").write_text("1,2,3\n")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "thesis.tex").write_text("\\chapter{One}\n")
    (tmp_path / "afile").write_text("a user's file\n")
    monkeypatch.chdir(tmp_path / "a" / "b")
    return tmp_path


# the commands that write a directory, as functions of the output (and the work folder)
DIR_COMMANDS = {
    "prepare": lambda w, out: ["prepare", w / "texts", "-o", out, "--min-count", "1"],
    "synth-bars": lambda w, out: ["synth", "bars", "--documents", "10", "--test-documents", "2", "-o", out],
    "synth-lda": lambda w, out: ["synth", "lda", "--documents", "10", "--test-documents", "2", "-o", out],
    "synth-hdp": lambda w, out: ["synth", "hdp", "--documents", "10", "--test-documents", "2", "-o", out],
    "synth-lida": lambda w, out: ["synth", "lida", "--documents", "10", "--test-documents", "2", "-o", out],
    "train": lambda w, out: ["train", w / "corpus", "-m", "lda-gibbs", "-K", "3", "-n", "2", "-o", out],
}
# the commands that write a file
FILE_COMMANDS = {
    "snapshot": lambda w, out: ["snapshot", w / "run", "-o", out],
    "snapshot-import": lambda w, out: ["snapshot", "import", "--from", "text", w / "m", "-o", out],
    "topics": lambda w, out: ["topics", w / "model.npz", "--format", "txt", "-o", out],
    "cooc": lambda w, out: ["cooc", w / "texts", "--vocab", w / "words", "--window", "doc", "-o", out],
}


# ---------------------------------------------------------------------------
# directory outputs


@pytest.mark.parametrize("cmd", sorted(DIR_COMMANDS))
def test_directory_outputs_refuse_what_is_not_theirs(cmd, work):
    make = DIR_COMMANDS[cmd]
    w = work
    os.symlink(w / "run" if cmd == "train" else w / "corpus", w / "link")
    os.symlink(w / "nowhere", w / "dangling")
    cases = [
        (w / "foreign", [], "already exists"),
        (w / "foreign", ["--force"], "not a directory topictool wrote"),
        (".", ["--force"], "current directory"),
        ("..", ["--force"], "ancestor of the current directory"),
        (w, ["--force"], "ancestor of the current directory"),
        (w / "link", ["--force"], "symbolic link"),
        (w / "dangling", [], "symbolic link"),
        (w / "afile", ["--force"], "not a directory"),
        (w / "afile" / "sub", [], "is not a directory"),
    ]
    # topictool's own, but of another kind
    if cmd == "train":
        shutil.copytree(w / "corpus", w / "run2")  # a prepared corpus where a run would go
        cases += [
            (w / "run2", ["--force"], "prepared corpus, not a run directory"),
            (w / "corpus", ["--force"], "is an input"),
        ]
    else:
        cases += [(w / "run", ["--force"], "run directory, not a prepared corpus")]
    if cmd == "prepare":
        cases += [(w / "texts", ["--force"], "is an input"), (w, ["--force"], None)]
    for out, extra, expect in cases:
        refused(make(w, out) + extra, w, expect)


@pytest.mark.parametrize("cmd", sorted(DIR_COMMANDS))
def test_force_replaces_only_its_own_whole_directory(cmd, work):
    make = DIR_COMMANDS[cmd]
    w = work
    out = w / "out"
    ok(*make(w, out))
    assert (out / store.MARKER).is_file()
    refused(make(w, out), w, "already exists")
    ok(*make(w, out), "--force")
    assert not [p for p in w.iterdir() if p.name.startswith(".out.")]  # no staging left behind
    (out / "my-notes.txt").write_text("mine\n")
    refused(make(w, out) + ["--force"], w, "holds files topictool did not write (my-notes.txt)")


def test_prepare_refuses_an_output_holding_its_source(work):
    w = work
    (w / "proj" / "src").mkdir(parents=True)
    shutil.copy(w / "corpus" / "train.ldac", w / "proj" / "src" / "x.ldac")
    shutil.copy(w / "corpus" / "vocab.txt", w / "proj" / "src" / "x.vocab")
    refused(["prepare", w / "proj" / "src" / "x.ldac", "-o", w / "proj", "--force"], w, "holds an input")
    refused(
        ["prepare", w / "texts", "--vocab", w / "proj" / "src" / "x.vocab", "-o", w / "proj" / "src", "--force"],
        w,
        "holds an input",
    )


# ---------------------------------------------------------------------------
# file outputs


@pytest.mark.parametrize("cmd", sorted(FILE_COMMANDS))
def test_file_outputs_refuse_what_they_must_not_replace(cmd, work):
    make = FILE_COMMANDS[cmd]
    w = work
    from topictool.importers import export_text
    from topictool.snapshot import load_model

    export_text(load_model(w / "model.npz"), w / "m")
    (w / "existing.txt").write_text("precious\n")
    os.symlink(w / "existing.txt", w / "link.txt")
    os.symlink(w / "nowhere.txt", w / "dangling.txt")
    inputs = {
        "snapshot": w / "run" / "model.npz",
        "snapshot-import": w / "m.phi.txt",
        "topics": w / "model.npz",
        "cooc": w / "words" / "vocab.txt",
    }
    cases = [
        (w / "existing.txt", [], "already exists (use --force"),
        (w / "foreign", ["--force"], "is a directory"),
        (w / "afile" / "sub.txt", [], "is not a directory"),
        (w / "dangling.txt", [], "symbolic link"),
        (w / "link.txt", ["--force"], "symbolic link"),
        (inputs[cmd], ["--force"], "input of this command"),
    ]
    for out, extra, expect in cases:
        refused(make(w, out) + extra, w, expect)
    # with --force an existing file of the user's is replaced (atomically), as asked
    ok(*make(w, w / "existing.txt"), "--force")
    assert (w / "existing.txt").read_bytes() != b"precious\n"


def test_snapshot_never_overwrites_without_force(work):
    w = work
    (w / "m.npz").write_bytes(b"not mine to lose")
    refused(["snapshot", w / "run", "-o", w / "m.npz"], w, "already exists")
    refused(["snapshot", w / "run", "-o", w / "foreign"], w, "is a directory")
    refused(["snapshot", w / "run", "-o", "."], w, "is a directory")


# ---------------------------------------------------------------------------
# one writer per run


def _wait_for_lock(run_dir, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if store.lock_held(run_dir):
            return
        if proc.poll() is not None:
            raise AssertionError(f"writer ended early: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError("the writer never took the lock")


def test_a_second_writer_is_refused_with_the_holders_pid(work):
    w = work
    proc = subprocess.Popen(
        [sys.executable, "-m", "topictool", "train", "--resume", str(w / "run"), "-n", "100000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for_lock(w / "run", proc)
        ignore = {"run"}  # the running writer changes its own run; everything else must stay
        before = {k: v for k, v in tree(w).items() if k.split("/")[0] not in ignore}
        for args, expect in (
            (["train", "--resume", w / "run", "-n", "1"], f"pid {proc.pid}"),
            (
                ["train", w / "corpus", "-m", "lda-gibbs", "-K", "3", "-n", "2", "-o", w / "run", "--force"],
                f"pid {proc.pid}",
            ),
        ):
            r = run(*args)
            assert r.exit_code == 2 and expect in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert {k: v for k, v in tree(w).items() if k.split("/")[0] not in ignore} == before
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    # the writer finished cleanly: its run resumes, and no metrics of another process are in it
    rows = store.read_jsonl(w / "run" / "metrics.jsonl")
    assert [r["iteration"] for r in rows] == list(range(1, len(rows) + 1))
    ok("train", "--resume", w / "run", "-n", "1")


def test_a_stale_lock_of_a_killed_writer_does_not_block(work):
    w = work
    proc = subprocess.Popen(
        [sys.executable, "-m", "topictool", "train", "--resume", str(w / "run"), "-n", "100000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for_lock(w / "run", proc)
    proc.kill()
    proc.wait()
    assert not store.lock_held(w / "run")
    ok("train", "--resume", w / "run", "-n", "1")


# ---------------------------------------------------------------------------
# values refused before anything is written

PRIOR_OPTIONS = {
    "lda-gibbs": ["alpha", "beta"],
    "lida-gibbs": [
        "alpha",
        "beta",
        "theta_bar_mass",
        "theta_bar_concentration",
        "phi_bar_mass",
        "phi_bar_concentration",
    ],
    "hdp-gibbs": ["b_theta", "b_alpha", "beta", "burst_concentration"],
    "nplda-gibbs": ["b_theta", "b_alpha", "b_phi", "b_beta"],
    "lda-svi": ["alpha", "beta"],
    "lda-scvb0": ["alpha", "beta"],
    "hdp-pcvb0": ["alpha", "beta", "gamma"],
    "hdp-pcsvb0": ["alpha", "beta", "gamma"],
    "hdp-online": ["alpha", "gamma", "beta"],
    "hdp-online-sm": ["alpha", "gamma", "beta"],
    "hdp-batch": ["alpha", "gamma", "beta"],
}


@pytest.mark.parametrize("model", sorted(PRIOR_OPTIONS))
def test_priors_that_overflow_are_refused(model, work):
    w = work
    for name in PRIOR_OPTIONS[model]:
        for bad in ("1e308", "inf", "nan", "0", "-1", "1e7"):
            refused(
                ["train", w / "corpus", "-m", model, "-K", "3", "-n", "2", "--set", f"{name}={bad}", "-o", w / "new"],
                w,
                f"option {name}=",
            )


@pytest.mark.parametrize("model", sorted(PRIOR_OPTIONS))
def test_the_largest_allowed_priors_train_to_finite_numbers(model, work):
    w = work
    sets = [x for name in PRIOR_OPTIONS[model] for x in ("--set", f"{name}=1e6")]
    extra = ["--set", "minibatch=10"] if model in ("hdp-online", "hdp-online-sm", "lda-scvb0", "lda-svi") else []
    ok(
        "train",
        w / "corpus",
        "-m",
        model,
        "-K",
        "3",
        "-n",
        "2",
        "--log-every",
        "1",
        *sets,
        *extra,
        "--test",
        w / "corpus",
        "-o",
        w / "big",
    )
    for line in (w / "big" / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c} in metrics.jsonl"))
        assert row["log_likelihood"] is not None and np.isfinite(row["log_likelihood"]), row
        assert row["test_perplexity"] is not None and np.isfinite(row["test_perplexity"]), row


HUGE = "99999999999999999999"


def test_numbers_out_of_range_are_refused(work):
    w = work
    train = ["train", w / "corpus", "-K", "3", "-n", "1", "-o", w / "new"]
    cases = [
        train + ["-m", "lda-gibbs", "--threads", HUGE],
        train + ["-m", "lda-gibbs", "--seed", "-1"],
        ["train", w / "corpus", "-m", "lda-gibbs", "-n", HUGE, "-o", w / "new"],
        train + ["-m", "lda-svi", "--set", "tau0=0"],
        train + ["-m", "lda-scvb0", "--set", "tau_phi=-0"],
        train + ["-m", "hdp-online", "--set", "tau=0"],
        train + ["-m", "hdp-online", "--set", f"local_iterations={HUGE}"],
        train + ["-m", "lda-svi", "--set", f"minibatch={HUGE}"],
        ["evaluate", w / "model.npz", w / "corpus", "--samples", HUGE],
        ["evaluate", w / "model.npz", w / "corpus", "--holdout", f"every:{HUGE}"],
        ["synth", "lda", "-K", HUGE, "-o", w / "new"],
        ["synth", "bars", "--side", HUGE, "-o", w / "new"],
        ["cooc", w / "texts", "--vocab", w / "words", "-o", w / "ref.npz", "--window", HUGE],
        ["prepare", w / "texts", "-o", w / "new", "--seed", "-1"],
        ["prepare", w / "texts", "-o", w / "new", "--stopwords", w / "texts"],
    ]
    (w / "big.ldac").write_text(f"1 0:{HUGE}\n")
    (w / "big.vocab").write_text("a\n")
    cases += [
        ["prepare", w / "big.ldac", "-o", w / "new"],
        ["train", w / "big.ldac", "-m", "lda-gibbs", "-o", w / "new"],
        ["evaluate", w / "model.npz", w / "big.ldac", "--allow-oov"],
    ]
    for args in cases:
        refused(args, w)


def test_holdouts_are_checked_before_training(work):
    w = work
    train = ["train", w / "corpus", "-m", "lda-gibbs", "-K", "3", "-n", "2", "-o", w / "new", "--test", w / "corpus"]
    refused(train + ["--holdout", "every:100000"], w, "holds out no token")
    refused(train + ["--holdout", "every:1"], w, "--holdout")
    refused(train + ["--holdout", "sometimes"], w, "--holdout")
    refused(train + ["--holdout", "fraction:1.5"], w, "--holdout")
    refused(
        ["train", w / "corpus", "-m", "lda-gibbs", "-n", "2", "-o", w / "new", "--eval-every", "5"],
        w,
        "--eval-every needs --test",
    )
    refused(["evaluate", w / "model.npz", w / "corpus", "--holdout", "every:100000"], w, "holds out no token")
    refused(["evaluate", w / "model.npz", w / "corpus", "--holdout", "fraction:0.0001"], w, "holds out no token")


def test_a_test_corpus_with_another_vocabulary_is_refused_unless_allowed(work):
    w = work
    ok("synth", "lda", "-o", w / "other", "-V", "60", "--documents", "5", "--test-documents", "5", "--seed", "9")
    refused(
        ["train", w / "corpus", "-m", "lda-gibbs", "-K", "3", "-n", "2", "-o", w / "new", "--test", w / "other"],
        w,
        "--allow-oov",
    )
    refused(["evaluate", w / "model.npz", w / "other"], w, "--allow-oov")
    r = ok("evaluate", w / "model.npz", w / "other", "--allow-oov", "--json")
    res = json.loads(r.stdout)
    assert res["oov_tokens"] > 0 and res["heldout_tokens"] > 0
    r = ok("evaluate", w / "model.npz", w / "other", "--allow-oov")
    assert "%" in r.stdout  # the dropped fraction is reported


def test_config_files_are_checked(work):
    w = work
    train = ["train", w / "corpus", "-n", "1", "-o", w / "new", "--config"]
    (w / "bin.toml").write_bytes(bytes(range(256)) * 4)
    refused(train + [w / "bin.toml"], w, "not a TOML file")
    for i, text in enumerate(
        [
            'model = "lda-gibbs"\nK = "x"\n',
            "model = 3\n",
            'model = "lda-gibbs"\niterations = -1\n',
            'model = "lda-gibbs"\noptions = 5\n',
            'model = "lda-gibbs"\nalpha = [1, 2]\n',
            'model = "lda-gibbs"\n[options]\nalpha = "lots"\n',
            'model = "lda-gibbs"\nK = 1.5\n',
            'model = "lda-gibbs"\nthreads = 0\n',
            'model = "lda-gibbs"\nK = 3\n[options]\nK = 4\n',
            'model = "lda-gibbs\n',
        ]
    ):
        (w / f"c{i}.toml").write_text(text)
        refused(train + [w / f"c{i}.toml"], w)
    refused(train + [w / "foreign"], w, "is a directory")


def test_set_overrides_the_config_and_the_config_the_defaults(work):
    w = work
    (w / "c.toml").write_text('model = "lda-gibbs"\nK = 7\niterations = 2\n[options]\nalpha = 0.3\n')
    ok("train", w / "corpus", "--config", w / "c.toml", "--set", "K=4", "--set", "alpha=0.2", "-o", w / "r1")
    info = json.loads((w / "r1" / "run.json").read_text())
    assert info["options"]["K"] == 4 and info["options"]["alpha"] == 0.2 and info["iterations_target"] == 2
    ok("train", w / "corpus", "--config", w / "c.toml", "-o", w / "r2")
    info = json.loads((w / "r2" / "run.json").read_text())
    assert info["options"]["K"] == 7 and info["options"]["alpha"] == 0.3
    refused(["train", w / "corpus", "--config", w / "c.toml", "-K", "3", "--set", "K=5", "-o", w / "r3"], w, "disagree")


@pytest.mark.parametrize("pattern", ["a*", "", "\\b", "(\\w+)", "(?:x)|", "[", "x{0,3}"])
def test_token_patterns_that_cannot_tokenize_are_refused(pattern, work):
    w = work
    refused(["prepare", w / "texts", "-o", w / "new", "--token-pattern", pattern], w, "--token-pattern")
    refused(
        ["cooc", w / "texts", "--vocab", w / "corpus", "-o", w / "ref.npz", "--token-pattern", pattern],
        w,
        "--token-pattern",
    )


def test_cooc_refuses_a_reference_with_no_documents_or_no_vocabulary_word(work):
    w = work
    (w / "page.xml").write_text("<html><body>" + "<p>nothing of the vocabulary here</p>" * 50 + "</body></html>\n")
    refused(["cooc", w / "page.xml", "--vocab", w / "corpus", "-o", w / "ref.npz"], w, "no word of the vocabulary")
    refused(
        ["cooc", w / "page.xml", "--source-format", "wiki", "--vocab", w / "corpus", "-o", w / "ref.npz"],
        w,
        "not a MediaWiki XML dump",
    )
    (w / "empty.txt").write_text("")
    refused(["cooc", w / "empty.txt", "--vocab", w / "corpus", "-o", w / "ref.npz"], w, "no documents")
    # OUT.state that is not cooc's own is never touched
    (w / "ref.npz.state").mkdir()
    (w / "ref.npz.state" / "keep.txt").write_text("mine\n")
    refused(["cooc", w / "texts", "--vocab", w / "corpus", "-o", w / "ref.npz", "--restart"], w, "not a cooc")


def test_a_pmi_file_needs_its_own_vocabulary(work):
    w = work
    (w / "ref.pmi").write_text("0 1 1.5\n2 3 0.5\n")
    refused(["pmi", w / "model.npz", "--reference", w / "ref.pmi"], w, "--vocab")
    # ids that are in range but name none of the topics' words: the wrong vocabulary
    (w / "other.words").write_text("".join(f"x{i}\n" for i in range(100)))
    (w / "far.pmi").write_text("38 39 1.5\n")
    (w / "t.txt").write_text("w00 w01 w02\nw03 w04 w05\n")
    refused(
        ["pmi", "--topics", w / "t.txt", "--reference", w / "far.pmi", "--vocab", w / "corpus"],
        w,
        "is --vocab the vocabulary it was made with",
    )
    refused(["pmi", w / "model.npz", "--reference", w / "ref.pmi", "--vocab", w / "other.words"], w)


# ---------------------------------------------------------------------------
# compressed inputs, truncated and faked


def _compressed(kind, data):
    return gzip.compress(data) if kind == "gz" else bz2.compress(data)


@pytest.mark.parametrize("kind", ["gz", "bz2"])
def test_truncated_and_fake_compressed_inputs(kind, work):
    w = work
    ldac = (w / "corpus" / "train.ldac").read_bytes() * 20
    lines = b"".join(f"apple banana cherry line {i} date elder\n".encode() for i in range(2000))
    good_ldac = _compressed(kind, ldac)
    good_lines = _compressed(kind, lines)
    vocab = (w / "corpus" / "vocab.txt").read_bytes()
    files = {
        f"cut.ldac.{kind}": good_ldac[: len(good_ldac) // 2],
        f"fake.ldac.{kind}": b"this is not compressed at all\n" * 10,
        f"cut.txt.{kind}": good_lines[: len(good_lines) // 2],
        f"fake.txt.{kind}": os.urandom(3000),
        f"empty.txt.{kind}": b"",
        f"cut.vocab.{kind}": _compressed(kind, vocab)[:20],
    }
    for name, data in files.items():
        (w / name).write_bytes(data)
    for name in ("cut.ldac", "fake.ldac"):
        refused(["prepare", w / f"{name}.{kind}", "--vocab", w / "corpus" / "vocab.txt", "-o", w / "new"], w)
    for name in ("cut.txt", "fake.txt", "empty.txt"):
        refused(["prepare", w / f"{name}.{kind}", "-o", w / "new", "--min-count", "1"], w)
        refused(["cooc", w / f"{name}.{kind}", "--vocab", w / "corpus", "-o", w / "ref.npz"], w)
    refused(["prepare", w / "corpus" / "train.ldac", "--vocab", w / f"cut.vocab.{kind}", "-o", w / "new"], w)
    refused(["pmi", w / "model.npz", "--reference", w / f"cut.txt.{kind}", "--vocab", w / "corpus"], w)
    refused(["evaluate", w / "model.npz", w / f"cut.ldac.{kind}", "--vocab", w / "corpus" / "vocab.txt"], w)
    for stem in ("cut", "fake"):  # as a CORPUS of train, with its vocabulary beside it
        (w / f"{stem}.vocab").write_bytes(vocab)
        refused(["train", w / f"{stem}.ldac.{kind}", "-m", "lda-gibbs", "-o", w / "new"], w)


def test_damaged_zip_and_npz_inputs(work):
    w = work
    (w / "fake.zip").write_bytes(b"PK\x03\x04" + os.urandom(500))
    refused(["prepare", w / "fake.zip", "-o", w / "new", "--source-format", "files"], w)
    (w / "fake.npz").write_bytes(b"PK\x03\x04" + os.urandom(500))
    refused(["topics", w / "fake.npz"], w)
    refused(["evaluate", w / "fake.npz", w / "corpus"], w)


# ---------------------------------------------------------------------------
# sizes


def test_a_one_megabyte_word_does_not_make_a_huge_model(work):
    w = work
    (w / "big").mkdir()
    giant = "x" * (1 << 20)
    for i in range(4):
        (w / "big" / f"d{i}.txt").write_text(f"{giant} apple banana cherry {giant}\n")
    ok("prepare", w / "big", "-o", w / "bigc", "--min-count", "1", "--test-fraction", "0", "--token-pattern", "[a-z]+")
    ok("train", w / "bigc", "-m", "lda-gibbs", "-K", "2", "-n", "1", "-o", w / "bigr")
    size = (w / "bigr" / "model.npz").stat().st_size
    assert size < 3 * (1 << 20), size  # the words themselves, not 4 x 4 MB of padding
    from topictool.snapshot import load_model

    assert giant in load_model(w / "bigr").vocab


def test_counts_that_cannot_fit_are_refused_before_allocating(work):
    w = work
    (w / "huge.ldac").write_text("1 0:2147483647\n1 1:2147483647\n1 2:2147483647\n")
    (w / "huge.vocab").write_text("a\nb\nc\n")
    r = refused(["train", w / "huge.ldac", "-m", "lda-gibbs", "-K", "3", "-n", "1", "-o", w / "new"], w)
    assert "GiB of memory" in r.stderr or "at most 2,147,483,647" in r.stderr, r.stderr
    r = refused(["evaluate", w / "model.npz", w / "huge.ldac", "--allow-oov"], w)
    assert "GiB of memory" in r.stderr, r.stderr


def test_huge_K_is_refused_with_the_memory_it_needs(work, monkeypatch):
    w = work
    monkeypatch.setattr(memory, "available_bytes", lambda: 1 << 30)
    r = refused(
        ["train", w / "corpus", "-m", "lda-gibbs", "-K", "10000000", "-n", "1", "-o", w / "new"], w, "GiB of memory"
    )
    assert "needs at least" in r.stderr and "1.0 GiB are available" in r.stderr
    refused(["synth", "lda", "--documents", "100000000", "-o", w / "new"], w, "GiB of memory")


# ---------------------------------------------------------------------------
# permissions follow the umask


@pytest.mark.parametrize("mask,file_mode,dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_outputs_follow_the_umask(mask, file_mode, dir_mode, work):
    w = work
    old = os.umask(mask)
    try:
        outs = [w / "o-synth", w / "o-prep", w / "o-run", w / "o-snap.npz", w / "o-topics.txt", w / "o-ref.npz"]
        ok("synth", "lda", "--documents", "20", "--test-documents", "5", "-o", outs[0], "--format", "both")
        ok("prepare", w / "texts", "-o", outs[1], "--min-count", "1", "--format", "both")
        ok(
            "train",
            outs[0],
            "-m",
            "lda-gibbs",
            "-K",
            "3",
            "-n",
            "4",
            "--checkpoint-every",
            "2",
            "--test",
            outs[0],
            "-o",
            outs[2],
        )
        ok("train", "--resume", outs[2], "-n", "2")
        ok("train", outs[0], "-m", "lda-gibbs", "-K", "3", "-n", "2", "-o", outs[2], "--force")
        ok("snapshot", outs[2], "-o", outs[3])
        ok("topics", outs[3], "-o", outs[4])
        ok("cooc", w / "texts", "--vocab", outs[1], "--window", "doc", "-o", outs[5])
    finally:
        os.umask(old)
    seen = 0
    for out in outs:
        paths = [out] + ([Path(r) / n for r, ds, fs in os.walk(out) for n in ds + fs] if out.is_dir() else [])
        for p in paths:
            mode = stat.S_IMODE(os.lstat(p).st_mode)
            assert mode == (dir_mode if p.is_dir() else file_mode), (p, oct(mode))
            seen += 1
    assert seen > 25


# ---------------------------------------------------------------------------
# kill -9 during `train --force` over an existing run


KILLER = """
import os, sys
from topictool import store
from topictool.cli.main import main
point = sys.argv[1]
original = store._move_into_place
def kill(*a):
    os.kill(os.getpid(), 9)
if point == "before-swap":
    store._before_swap_hook = lambda stage, target: kill()
elif point == "after-swap":
    def moved(stage, target):
        old = original(stage, target)
        kill()
    store._move_into_place = moved
elif point == "first-checkpoint":
    original_save = store.save_checkpoint
    def save(*a, **k):
        kill()
    store.save_checkpoint = save
main(sys.argv[2:])
"""


def _is_whole_run(run_dir):
    info = store.read_run_json(run_dir)
    _, meta, _ = store.latest_checkpoint(run_dir)
    from topictool.snapshot import load_model

    load_model(run_dir)
    return info, meta


@pytest.mark.parametrize("point", ["first-checkpoint", "before-swap", "after-swap"])
def test_kill_during_force_leaves_the_old_run_or_the_new_one_whole(point, work):
    w = work
    old = tree(w / "run")
    args = [
        "train",
        str(w / "corpus"),
        "-m",
        "lda-gibbs",
        "-K",
        "3",
        "-n",
        "6",
        "--seed",
        "5",
        "--checkpoint-every",
        "3",
        "-o",
        str(w / "run"),
        "--force",
    ]
    p = subprocess.run([sys.executable, "-c", KILLER, point, *args], capture_output=True, timeout=300)
    assert p.returncode == -9, p.stderr
    if point == "after-swap":
        info, meta = _is_whole_run(w / "run")
        assert info["seed"] == 5 and meta["iteration"] == 3
        ok("train", "--resume", w / "run")
        assert store.read_run_json(w / "run")["iterations_done"] == 6
    else:
        assert tree(w / "run") == old  # the old run, byte for byte
    # what the killed process left beside the run is topictool's own and goes with the next --force
    ok("train", w / "corpus", "-m", "lda-gibbs", "-K", "3", "-n", "2", "-o", w / "run", "--force")
    assert not [p.name for p in w.iterdir() if p.name.startswith(".run.")]


def test_kill_at_random_moments_of_train_force(work):
    w = work
    rng = np.random.default_rng(7)
    args = [
        sys.executable,
        "-m",
        "topictool",
        "train",
        str(w / "corpus"),
        "-m",
        "lda-gibbs",
        "-K",
        "3",
        "-n",
        "60",
        "--seed",
        "8",
        "--checkpoint-every",
        "1",
        "-o",
        str(w / "run"),
        "--force",
    ]
    outcomes = set()
    for _ in range(6):
        old = tree(w / "run")
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(float(rng.uniform(0.05, 2.5)))
        proc.kill()
        proc.wait()
        now = tree(w / "run")
        if now == old:
            outcomes.add("old")
        else:
            info, _ = _is_whole_run(w / "run")
            assert info["seed"] == 8
            outcomes.add("new")
    assert outcomes  # each kill left one of the two, whole; say which were seen
    print("outcomes", sorted(outcomes))


# ---------------------------------------------------------------------------
# strict JSON and checkpoint order


def test_json_is_strict():
    text = store.dumps({"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": -float("inf")}, "e": 2.5})
    obj = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert obj == {"a": None, "b": [1.0, None], "c": {"d": None}, "e": 2.5, "non_finite": ["a", "b[1]", "c.d"]}


def test_json_output_of_commands_is_strict(work):
    w = work
    for args in (
        ["info", w / "run", "--json"],
        ["evaluate", w / "model.npz", w / "corpus", "--json"],
        ["topics", w / "model.npz", "--json"],
        ["train", "--resume", w / "run", "-n", "1", "--json"],
    ):
        r = ok(*args)
        json.loads(r.stdout, parse_constant=lambda c, args=args: pytest.fail(f"bare {c} in {args}"))
    for line in (w / "run" / "metrics.jsonl").read_text().splitlines():
        json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c} in metrics.jsonl"))


def test_checkpoints_are_ordered_by_number(tmp_path):
    for it in (999_999, 1_000_000, 2, 10_000_001):
        store.save_checkpoint(tmp_path, it, {"x": np.arange(3)}, {"model": "m"}, keep=0)
    assert [store.checkpoint_iteration(p) for p in store.list_checkpoints(tmp_path)] == [
        2,
        999_999,
        1_000_000,
        10_000_001,
    ]
    _, meta, _ = store.latest_checkpoint(tmp_path)
    assert meta["iteration"] == 10_000_001
    store.save_checkpoint(tmp_path, 10_000_002, {"x": np.arange(3)}, {"model": "m"}, keep=2)
    assert [store.checkpoint_iteration(p) for p in store.list_checkpoints(tmp_path)] == [10_000_001, 10_000_002]
