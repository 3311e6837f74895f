"""prepare streams text (topictool/corpus/stream.py): the same bytes as before streaming, the
same output for every --threads, memory that does not grow with the corpus, and the output rule
kept (scratch files only inside the staging directory, gone afterwards; failures leave nothing)."""

import hashlib
import json
import tracemalloc

import numpy as np
import pytest

from topictool.corpus import load_corpus, stream
from topictool.corpus.prepare import PrepareOptions, build_corpus, prepare
from topictool.corpus.split import split_documents

from .conftest import run, shared


def digest(directory):
    """One checksum of a prepared directory's files (corpus.json without the paths it records)."""
    h = hashlib.sha256()
    for p in sorted(directory.iterdir()):
        if p.name.startswith("."):
            continue
        data = p.read_bytes()
        if p.suffix == ".npz":  # the arrays, not the zip container (whose headers vary by Python release)
            with np.load(p) as z:
                data = b"".join(
                    k.encode() + str(z[k].dtype).encode() + str(z[k].shape).encode() + z[k].tobytes() for k in z.files
                )
        if p.name == "corpus.json":
            m = json.loads(data)
            m.pop("source")
            m["options"].pop("vocab")
            data = json.dumps(m).encode()
        h.update(p.name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


def hidden(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


# Checksums of the outputs that prepare wrote before it streamed (commit 70bc216, in memory):
# the arrays of every .npz and the bytes of every other file.
BEFORE = {
    "movies": "c6f7dc7d29b3f6273a8a367138a1ff4f2dcffc26a8d44d5844c3351665b3f273",
    "movies_opts": "73faffce765a6143948868e5d249d55cc281fdb67c999d51ce281d28b384ca93",
    "fixed": "8f7d95545fc90437df9594a4ff282f07ff1ad3d93a787e9025174063352da6ea",
}


@pytest.mark.parametrize(
    "case,threads",
    [("movies", 1), ("movies_opts", 2), ("fixed", 3)],
)
def test_same_bytes_as_before_streaming(tmp_path, monkeypatch, case, threads):
    src = shared("nltk", "movie_reviews.zip")
    args = {
        "movies": [],
        "movies_opts": "--shards 3 --format both --min-df 2 --max-df 0.5 --min-count 3 --seed 5".split(),
        "fixed": ["--vocab", shared("ch", "ch.words")],
    }[case]
    # small chunks and batches: many of each, so their seams are crossed
    monkeypatch.setattr(stream, "CHUNK_ROWS", 50_000)
    monkeypatch.setattr(stream, "BATCH_CHARS", 200_000)
    r = run("prepare", src, "-o", tmp_path / case, *args, "--threads", threads, "--json")
    assert r.exit_code == 0, r.stderr
    assert digest(tmp_path / case) == BEFORE[case]
    assert hidden(tmp_path / case) == [".topictool", ".topictool.lock"]  # no scratch file left
    m = json.loads(r.stdout)
    assert m["threads"] == threads and m["input_mb"] > 7 and m["mb_per_s"] > 0


def _text_dir(root, docs, seed=0, vocab=300, length=60):
    """A directory of ``docs`` text files (two folders, some empty, some all stop words)."""
    rng = np.random.default_rng(seed)
    words = [f"w{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}x" for i in range(vocab)]
    for d in range(docs):
        n = int(rng.integers(0, length)) if d % 17 else 0
        text = " ".join(words[int(i)] for i in rng.zipf(1.3, n) % vocab)
        if d % 23 == 5:
            text = "the and of"
        path = root / ("a" if d % 3 else "b") / f"doc{d:05d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\nThe END of it.\n" if d % 7 else text)
    return root


OPTION_SETS = [
    {},
    {"min_count": 1, "min_df": 3, "max_df": 0.2, "test_fraction": 0.3, "seed": 4},
    {"min_count": 2, "max_df": 40.0, "stopwords": "none", "test_fraction": 0.0},
]


@pytest.mark.parametrize("options", OPTION_SETS)
def test_streamed_equals_in_memory(tmp_path, monkeypatch, options):
    """The streamed prepare writes exactly the corpus the in-memory reader and prune() give."""
    src = _text_dir(tmp_path / "src", 700)
    monkeypatch.setattr(stream, "CHUNK_ROWS", 997)
    monkeypatch.setattr(stream, "BATCH_CHARS", 3000)
    opts = PrepareOptions(**options)
    m = prepare([str(src)], tmp_path / "out", opts)
    corpus, facts = build_corpus([str(src)], opts)
    train_idx, test_idx = split_documents(corpus.D, opts.test_fraction, opts.seed)
    assert load_corpus(tmp_path / "out").equals(corpus.subset(train_idx))
    if len(test_idx):
        assert load_corpus(tmp_path / "out", "test").equals(corpus.subset(test_idx))
    names = facts.pop("names")
    assert (tmp_path / "out" / "train.names.txt").read_text().split("\n")[:-1] == [names[i] for i in train_idx]
    for key, value in facts.items():
        assert m[key] == value, key
    assert m["empty_documents_dropped"] > 0 and m["documents_per_folder"].keys() == {"a", "b"}


def test_threads_give_identical_output(tmp_path, monkeypatch):
    src = _text_dir(tmp_path / "src", 900, seed=3)
    (tmp_path / "lines.txt").write_text("".join(f"wab{i % 9}x wac{i % 5}x and wad{i % 4}x\n" for i in range(3000)))
    monkeypatch.setattr(stream, "CHUNK_ROWS", 1500)
    monkeypatch.setattr(stream, "BATCH_CHARS", 2000)
    outs = []
    for threads in (1, 2, 3, 1):
        out = tmp_path / f"t{threads}-{len(outs)}"
        r = run("prepare", src, tmp_path / "lines.txt", "-o", out, "--min-count", "2", "--threads", threads)
        assert r.exit_code == 0, r.stderr
        outs.append(out)
    first = {p.name: p.read_bytes() for p in outs[0].iterdir() if p.name != "corpus.json"}
    for out in outs[1:]:
        assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != "corpus.json"} == first
        assert (out / "corpus.json").read_text() == (outs[0] / "corpus.json").read_text()


def _peak_bytes(tmp_path, name, docs):
    src = _text_dir(tmp_path / name, docs, seed=1, vocab=5000, length=300)
    tracemalloc.start()
    try:
        prepare([str(src)], tmp_path / f"{name}-out", PrepareOptions(min_count=1, stopwords="none"))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_corpus(tmp_path, monkeypatch):
    """Four times the documents: the peak of traced allocations (numpy's included) grows by the
    few bytes kept per document, not by the rows; reading everything into memory would add
    8 bytes per row and as much again for the splits (~1.4 MB here)."""
    monkeypatch.setattr(stream, "CHUNK_ROWS", 4096)
    monkeypatch.setattr(stream, "BATCH_CHARS", 8192)
    small = _peak_bytes(tmp_path, "small", 600)
    large = _peak_bytes(tmp_path, "large", 2400)
    rows = load_corpus(tmp_path / "large-out").nnz
    assert rows > 80_000
    # the per-document arrays and the list of file names (~110 bytes a document) may grow;
    # the rows held in memory (ids and counts, 8 bytes a row, and the splits' copies) may not
    assert large - small < 1800 * 250, (small, large, rows)


def test_failure_while_streaming_leaves_old_output_and_nothing_else(tmp_path):
    src = _text_dir(tmp_path / "src", 200)
    out = tmp_path / "out"
    assert run("prepare", src, "-o", out, "--min-count", "1").exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    (src / "b" / "doc00150.txt").write_bytes(b"good words \xff bad\n")
    for threads in (1, 2):
        r = run("prepare", src, "-o", out, "--min-count", "1", "--force", "--threads", threads)
        assert r.exit_code == 2, r.stderr
        err = r.stderr.strip()
        assert len(err.splitlines()) == 1 and "doc00150.txt:1:" in err and "undecodable" in err
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "src"]  # no staging left
    # a new output that fails: nothing at all is left
    r = run("prepare", src, "-o", tmp_path / "new", "--min-count", "1", "--threads", "2")
    assert r.exit_code == 2 and not (tmp_path / "new").exists()


def test_output_inside_the_source_directory_is_not_read(tmp_path):
    """The files are listed before the output (and its scratch files) exist."""
    src = _text_dir(tmp_path / "src", 100)
    r = run("prepare", src, "-o", src / "prepared", "--min-count", "1", "--json")
    assert r.exit_code == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["skipped_files"] == {"count": 0, "names": []}
    assert m["D"] + m["empty_documents_dropped"] == 100


def test_threads_refused_for_bag_sources(tmp_path):
    (tmp_path / "x.ldac").write_text("2 0:1 1:2\n1 2:1\n")
    (tmp_path / "x.vocab").write_text("a\nb\nc\n")
    r = run("prepare", tmp_path / "x.ldac", "-o", tmp_path / "o", "--threads", "2")
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and "--threads 2" in r.stderr
    assert not (tmp_path / "o").exists()
    r = run("prepare", tmp_path / "x.ldac", "-o", tmp_path / "o", "--min-count", "1", "--test-fraction", "0")
    assert r.exit_code == 0, r.stderr
