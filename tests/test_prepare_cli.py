"""`topictool prepare` end to end, on real data where present, and its error paths."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from topictool.corpus import load_corpus
from topictool.corpus.ldac import read_ldac
from topictool.corpus.vocabulary import read_vocab

from .conftest import run, shared


def test_ch_ldac_prepare_and_exports(tmp_path):
    ldac, words = shared("ch", "ch.ldac"), shared("ch", "ch.words")
    out = tmp_path / "X"
    r = run("prepare", ldac, "--vocab", words, "-o", out, "--test-fraction", "0", "--format", "ldac")
    assert r.exit_code == 0, r.stderr
    m = json.loads((out / "corpus.json").read_text())
    assert (m["D"], m["W"], m["N"]) == (395, 4258, 84010)
    vocab = read_vocab(words)
    original = read_ldac(ldac, vocab)
    exported = read_ldac(out / "train.ldac", read_vocab(out / "vocab.txt"))
    assert exported.equals(original)
    # Independently of our reader: the exported lines hold the same id:count multisets.
    for a, b in zip(open(ldac), open(out / "train.ldac")):
        assert sorted(a.split()[1:]) == sorted(b.split()[1:])
    # Written as UCI and read back: identical.
    r = run(
        "prepare",
        out / "train.ldac",
        "--vocab",
        out / "vocab.txt",
        "-o",
        tmp_path / "U",
        "--test-fraction",
        "0",
        "--format",
        "uci",
    )
    assert r.exit_code == 0, r.stderr
    assert load_corpus(tmp_path / "U" / "docword.train.txt").equals(original)
    assert load_corpus(tmp_path / "U").equals(original)


def test_text_to_ldac_to_prepared_round_trip(tmp_path):
    (tmp_path / "docs.txt").write_text(
        "The quick brown fox jumps over the lazy dog.\nA lazy dog sleeps; the fox runs!\n"
        "Quick, quick: brown bread and fox-like foxes.\n"
    )
    r = run(
        "prepare",
        tmp_path / "docs.txt",
        "-o",
        tmp_path / "A",
        "--min-count",
        "1",
        "--test-fraction",
        "0",
        "--format",
        "ldac",
    )
    assert r.exit_code == 0, r.stderr
    r = run(
        "prepare",
        tmp_path / "A" / "train.ldac",
        "--vocab",
        tmp_path / "A" / "vocab.txt",
        "-o",
        tmp_path / "B",
        "--min-count",
        "1",
        "--test-fraction",
        "0",
    )
    assert r.exit_code == 0, r.stderr
    a, b = load_corpus(tmp_path / "A"), load_corpus(tmp_path / "B")
    assert a.equals(b)
    bags = [
        {
            a.vocab[w]: int(c)
            for w, c in zip(a.word_ids[a.doc_ptr[d] : a.doc_ptr[d + 1]], a.counts[a.doc_ptr[d] : a.doc_ptr[d + 1]])
        }
        for d in range(a.D)
    ]
    assert bags[0] == {"quick": 1, "brown": 1, "fox": 1, "jumps": 1, "lazy": 1, "dog": 1}
    assert bags[2] == {"quick": 2, "brown": 1, "bread": 1, "fox-like": 1, "foxes": 1}


def test_train_test_split_is_seeded_and_disjoint(tmp_path):
    (tmp_path / "d.txt").write_text("".join(f"word{i % 7} other{i % 3} common\n" for i in range(50)))
    for name in ("S1", "S2"):
        assert (
            run(
                "prepare",
                tmp_path / "d.txt",
                "-o",
                tmp_path / name,
                "--min-count",
                "1",
                "--seed",
                "7",
                "--test-fraction",
                "0.2",
            ).exit_code
            == 0
        )
    m = json.loads((tmp_path / "S1" / "corpus.json").read_text())
    assert m["train"]["D"] == 40 and m["test"]["D"] == 10 and m["N"] == m["train"]["N"] + m["test"]["N"]
    assert (tmp_path / "S1" / "test.npz").read_bytes() == (tmp_path / "S2" / "test.npz").read_bytes()
    assert (tmp_path / "S1" / "corpus.json").read_bytes() == (tmp_path / "S2" / "corpus.json").read_bytes()


def test_movie_reviews_size_time_memory(tmp_path):
    src = shared("nltk", "movie_reviews.zip")
    out = tmp_path / "movies"
    # The peak is the child's own VmHWM, written as it exits: getrusage's ru_maxrss of a child
    # (RUSAGE_CHILDREN, os.wait4, RUSAGE_SELF alike) starts from the forking process's resident
    # size, which exec carries over, and the test process itself passes 1 GB late in a full run.
    hwm = tmp_path / "hwm"
    code = (
        "import atexit, os\n"
        "def peak():\n"
        "    with open('/proc/self/status') as f, open(os.environ['HWM'], 'w') as out:\n"
        "        out.write(next(line for line in f if line.startswith('VmHWM')).split()[1])\n"
        "atexit.register(peak)\n"
        "from topictool.cli.main import main\n"
        "main()\n"
    )
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", code, "prepare", str(src), "-o", str(out), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "HWM": str(hwm)},
    )
    seconds = time.perf_counter() - t0
    assert p.returncode == 0, p.stderr
    peak_kb = int(hwm.read_text())
    m = json.loads(p.stdout)
    assert m["D"] == 2000 and 14000 <= m["W"] <= 15500  # 2,000 reviews; the zip's README is skipped
    assert m["documents_per_folder"] == {"neg": 1000, "pos": 1000}
    assert m["skipped_files"] == {"count": 1, "names": ["movie_reviews/README"]}
    assert m["test"]["D"] == round(m["D"] * 0.2)
    assert seconds < 20 and peak_kb < 1_000_000


def _collection(root):
    """Two folders of documents and the files around them that are not documents."""
    docs = {"c/a/1.txt": "apple banana apple", "c/a/2.txt": "banana cherry", "c/b/3.txt": "cherry apple"}
    extra = {"c/README.md": "about it", "c/LICENSE": "terms", "c/b/.DS_Store": "x", "__MACOSX/c/a/._1.txt": "x"}
    for name, text in {**docs, **extra}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return docs


@pytest.mark.parametrize("container", ["dir", "zip"])
def test_files_that_are_not_documents_are_skipped_and_named(tmp_path, container):
    import zipfile

    docs = _collection(tmp_path / "src")
    src = tmp_path / "src"
    if container == "zip":
        src = tmp_path / "c.zip"
        with zipfile.ZipFile(src, "w") as z:
            for f in sorted((tmp_path / "src").rglob("*")):
                if f.is_file():
                    z.write(f, f.relative_to(tmp_path / "src").as_posix())
    common = ["--min-count", "1", "--test-fraction", "0", "--stopwords", "none", "--json"]
    r = run("prepare", src, "-o", tmp_path / "out", *common)
    assert r.exit_code == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["D"] == len(docs) and m["documents_per_folder"] == {"a": 2, "b": 1}
    skipped = set(m["skipped_files"]["names"])
    assert {"c/README.md", "c/LICENSE", "c/b/.DS_Store"} <= skipped
    assert "__MACOSX/c/a/._1.txt" in skipped if container == "zip" else m["skipped_files"]["count"] == 3
    # --include keeps its meaning: only the matching files are read
    r = run("prepare", src, "-o", tmp_path / "only-a", "--include", "c/a/*", *common)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["D"] == 2


BAD_CASES = {
    "ldac_count_mismatch": ("x.ldac", "2 0:1 1:2\n3 0:1 1:1\n", 2, "declares 3 terms"),
    "ldac_non_integer": ("x.ldac", "1 0:1\n2 0:1 1:1.5\n", 2, "integer"),
    "ldac_negative": ("x.ldac", "1 0:1\n1 1:-2\n", 2, "negative"),
    "ldac_id_too_large": ("x.ldac", "1 0:1\n1 0:1\n1 3:1\n", 3, "outside the vocabulary"),
    "uci_header": ("docword.x.txt", "2\n3\n4\n1 1 1\n1 2 1\n2 3 5\n", 3, "NNZ=4"),
    "uci_doc_range": ("docword.x.txt", "2\n3\n3\n1 1 1\n1 2 1\n3 3 5\n", 6, "document id 3"),
    "uci_bad_field": ("docword.x.txt", "2\n3\n3\n1 1 1\n1 2 x\n2 3 5\n", 5, "3 integers"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_bag_input_exit_2_one_line(tmp_path, case):
    name, body, line, text = BAD_CASES[case]
    (tmp_path / name).write_text(body)
    (tmp_path / "x.vocab").write_text("a\nb\nc\n")
    (tmp_path / "vocab.x.txt").write_text("a\nb\nc\n")
    out = tmp_path / "out"
    r = run("prepare", tmp_path / name, "-o", out, "--min-count", "1", "--test-fraction", "0")
    assert r.exit_code == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"{name}:{line}:" in err and text in err, err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_undecodable_bytes_reported_or_replaced(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"good words here\nbad \xff\xfe bytes here\n")
    r = run("prepare", tmp_path / "t.txt", "-o", tmp_path / "o", "--min-count", "1", "--test-fraction", "0")
    assert r.exit_code == 2 and "t.txt:2:" in r.stderr and "undecodable" in r.stderr
    assert not (tmp_path / "o").exists()
    r = run(
        "prepare",
        tmp_path / "t.txt",
        "-o",
        tmp_path / "o",
        "--min-count",
        "1",
        "--test-fraction",
        "0",
        "--errors",
        "replace",
    )
    assert r.exit_code == 0
    assert "bytes" in read_vocab(tmp_path / "o" / "vocab.txt")


def test_empty_after_pruning(tmp_path):
    (tmp_path / "t.txt").write_text("one two three\n")
    r = run("prepare", tmp_path / "t.txt", "-o", tmp_path / "o")
    assert r.exit_code == 2 and "empty after reading and pruning" in r.stderr
    assert not (tmp_path / "o").exists()


def test_missing_file_and_existing_output(tmp_path):
    r = run("prepare", tmp_path / "nope.txt", "-o", tmp_path / "o")
    assert r.exit_code == 2 and "nope.txt: no such file" in r.stderr
    (tmp_path / "t.txt").write_text("cat dog\ndog cat\n")
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "keep").write_text("mine")
    r = run("prepare", tmp_path / "t.txt", "-o", tmp_path / "o", "--min-count", "1")
    assert r.exit_code == 2 and "--force" in r.stderr
    assert (tmp_path / "o" / "keep").read_text() == "mine"
    # --force replaces only topictool's own output: a user's directory is refused, untouched
    r = run("prepare", tmp_path / "t.txt", "-o", tmp_path / "o", "--min-count", "1", "--test-fraction", "0", "--force")
    assert r.exit_code == 2 and "not a directory topictool wrote" in r.stderr
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["keep"]
    assert (tmp_path / "o" / "keep").read_text() == "mine"
    (tmp_path / "o" / "keep").unlink()  # an empty directory holds nothing to lose
    r = run("prepare", tmp_path / "t.txt", "-o", tmp_path / "o", "--min-count", "1", "--test-fraction", "0")
    assert r.exit_code == 0, r.stderr
    r = run("prepare", tmp_path / "t.txt", "-o", tmp_path / "o", "--min-count", "1", "--test-fraction", "0", "--force")
    assert r.exit_code == 0, r.stderr


def test_failure_midway_leaves_nothing(tmp_path, monkeypatch):
    from topictool.corpus import prepare as prep

    (tmp_path / "t.txt").write_text("cat dog\ndog cat\n")

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(prep, "write_vocab", boom)
    r = run("prepare", tmp_path / "t.txt", "-o", tmp_path / "o", "--min-count", "1")
    assert r.exit_code == 1 and "internal error" in r.stderr and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "t.txt"]


def test_damaged_prepared_corpus_is_reported(tmp_path):
    (tmp_path / "t.txt").write_text("cat dog\ndog cat fish\nfish\n")
    assert (
        run("prepare", tmp_path / "t.txt", "-o", tmp_path / "o", "--min-count", "1", "--test-fraction", "0").exit_code
        == 0
    )
    a = dict(np.load(tmp_path / "o" / "train.npz"))
    a["counts"][0] += 1
    np.savez(tmp_path / "o" / "train.npz", **a)
    from topictool.errors import InputError

    with pytest.raises(InputError, match="checksum"):
        load_corpus(tmp_path / "o")
