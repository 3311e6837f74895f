"""Co-occurrence counting (topictool.cooc and `topictool cooc`)."""

import bz2
import gzip
import itertools
import json
import os
import signal
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topictool import cooc
from topictool.cooc import CoocOptions, PairCounter, build_reference, load_reference
from topictool.corpus.tokenizer import Tokenizer
from topictool.corpus.wikipedia import iter_raw_pages

from .conftest import run, shared
from .test_wikipedia import SAMPLE, _independent_article_titles, sample_articles

SMALL_VOCAB = [
    "war",
    "army",
    "government",
    "people",
    "state",
    "world",
    "century",
    "language",
    "church",
    "city",
    "music",
    "film",
    "water",
    "light",
    "united",
    "states",
    "first",
    "new",
    "used",
    "also",
    "albedo",
    "surface",
    "anarchism",
    "autism",
]


def brute_force(docs, W, window):
    """Units, word counts and {key: pair count} by enumerating every unit (no cleverness)."""
    word = np.zeros(W, np.int64)
    pairs = {}
    units = 0
    for d in docs:
        if window == "doc":
            wins = [d]
        elif len(d) == 0:
            wins = []
        else:
            wins = [d] if len(d) <= window else [d[s : s + window] for s in range(len(d) - window + 1)]
        for win in wins:
            units += 1
            present = sorted({v for v in win if v >= 0})
            for v in present:
                word[v] += 1
            for a, b in itertools.combinations(present, 2):
                pairs[a * W + b] = pairs.get(a * W + b, 0) + 1
    return units, word, pairs


def membership_count(docs, W, window):
    """The same counts for long documents: for each document a units x words 0/1 matrix
    (unit s holds word v iff v occurs among its tokens s .. s+w-1), summed over units."""
    word = np.zeros(W, np.int64)
    joint = np.zeros((W, W), np.int64)
    units = 0
    for d in docs:
        d = np.asarray(d, np.int64)
        n = len(d)
        if window == "doc":
            nwin, w = 1, max(n, 1)
        elif n == 0:
            continue
        else:
            w = window
            nwin = 1 if n <= w else n - w + 1
        member = np.zeros((nwin, W), bool)
        for p in np.flatnonzero(d >= 0):  # token p lies in the windows s with s <= p < s + w
            member[max(0, p - w + 1) : min(p, nwin - 1) + 1, d[p]] = True
        m = member.astype(np.int64)
        units += nwin
        word += m.sum(axis=0)
        joint += m.T @ m
    a, b = np.triu_indices(W, 1)
    pairs = {int(i * W + j): int(joint[i, j]) for i, j in zip(a, b) if joint[i, j]}
    return units, word, pairs


def as_dict(keys, counts):
    return dict(zip(np.asarray(keys).tolist(), np.asarray(counts).tolist()))


def check_against_brute_force(ref, docs, window):
    units, word, pairs = membership_count(docs, ref.W, window)
    assert ref.units == units
    assert np.array_equal(ref.word_counts, word)
    assert np.all(np.diff(np.asarray(ref.pair_keys)) > 0)
    assert as_dict(ref.pair_keys, ref.pair_counts) == pairs


# ----------------------------------------------------------------------------
# the kernel


docs_strategy = st.lists(st.lists(st.integers(-1, 7), max_size=25), min_size=1, max_size=6)


@settings(max_examples=80, deadline=None)
@given(docs=docs_strategy, window=st.sampled_from([2, 3, 5, 10, "doc"]), bits=st.sampled_from([1, 2, 3, 12]))
def test_counts_equal_brute_force(docs, window, bits):
    W = 8
    c = PairCounter([f"w{i}" for i in range(W)], window=window, table_bits=bits)
    c._alloc_table(bits)  # a tiny table: forces drains, also in the middle of a document's pairs
    ptr = np.cumsum([0] + [len(d) for d in docs])
    c.add_ids(np.array([v for d in docs for v in d], np.int64), ptr)
    keys, counts = c.pairs()
    units, word, pairs = brute_force(docs, W, window)
    mu, mw, mp = membership_count(docs, W, window)  # the test's two counts agree
    assert (mu, mw.tolist(), mp) == (units, word.tolist(), pairs)
    assert c.units == units and c.documents == len(docs)
    assert np.array_equal(c.word_units, word)
    assert as_dict(keys, counts) == pairs


def test_window_definition_by_hand():
    # a b x a c  (x out of the vocabulary keeps its position), window 3:
    # windows [a b x] [b x a] [x a c] -> a:3 b:2 c:1, ab:2 ac:1 bc:0
    c = PairCounter(["a", "b", "c"], window=3)
    c.add_texts(["a b x a c", "   ", ""])  # blank texts are not documents
    keys, counts = c.pairs()
    assert (c.units, c.documents, c.tokens) == (3, 1, 5)
    assert c.word_units.tolist() == [3, 2, 1]
    assert as_dict(keys, counts) == {0 * 3 + 1: 2, 0 * 3 + 2: 1}
    # shorter than the window: one unit
    d = PairCounter(["a", "b", "c"], window=10)
    d.add_texts(["a b", "c"])
    assert (d.units, d.word_units.tolist()) == (2, [1, 1, 1])


def test_spilled_runs_merge_to_the_same_counts(tmp_path):
    rng = np.random.default_rng(3)
    docs = [rng.integers(-1, 30, size=rng.integers(0, 80)).tolist() for _ in range(60)]
    ptr = np.cumsum([0] + [len(d) for d in docs])
    ids = np.array([v for d in docs for v in d], np.int64)
    whole = PairCounter([str(i) for i in range(30)], window=5)
    whole.add_ids(ids, ptr)
    expected = whole.pairs()
    spilling = PairCounter([str(i) for i in range(30)], window=5, spill_entries=20, run_dir=tmp_path)
    spilling._alloc_table(5)
    spilling.add_ids(ids, ptr)
    out = spilling.flush()
    assert len(out["runs"]) > 2
    name, n = cooc.spill.merge_into_run(tmp_path, [r[0] for r in out["runs"]])
    keys, counts = cooc.spill._open_run(tmp_path, name)
    assert np.array_equal(keys, expected[0]) and np.array_equal(counts, expected[1]) and n == len(keys)


# ----------------------------------------------------------------------------
# the Wikipedia sample


@pytest.fixture(scope="module")
def sample_docs():
    path = shared(*SAMPLE)
    index = {w: i for i, w in enumerate(SMALL_VOCAB)}
    tok = Tokenizer()
    return [[index.get(t, -1) for t in tok(text)] for text in sample_articles(path).values()]


@pytest.fixture(scope="module")
def sample_refs(tmp_path_factory):
    path = shared(*SAMPLE)
    d = tmp_path_factory.mktemp("cooc")
    (d / "vocab.txt").write_text("\n".join(SMALL_VOCAB) + "\n")
    refs = {}
    for window in ("10", "doc"):
        out = d / f"ref-{window}.npz"
        r = run("cooc", path, "--vocab", d / "vocab.txt", "-o", out, "--window", window, "--json")
        assert r.exit_code == 0, r.stderr
        refs[window] = (out, json.loads(r.stdout))
    return d, refs


@pytest.fixture(scope="module")
def small_dump(sample_refs):
    """The first 70 pages of the sample (0.6 MB; 62 redirects, 8 articles) as a dump, and its counts."""
    d, _ = sample_refs
    pages = list(itertools.islice(iter_raw_pages(shared(*SAMPLE)), 70))
    dump = d / "small-pages-articles.xml.bz2"
    dump.write_bytes(bz2.compress(b"<mediawiki>\n<siteinfo></siteinfo>\n" + b"\n".join(pages) + b"\n</mediawiki>\n"))
    out = d / "small-ref.npz"
    build_reference([dump], d / "vocab.txt", out, CoocOptions(window=10))
    return dump, out


def test_sample_window_counts(sample_refs, sample_docs):
    _, refs = sample_refs
    out, summary = refs["10"]
    ref = load_reference(out)
    assert ref.documents == len(_independent_article_titles(shared(*SAMPLE))) == 106
    assert ref.vocab == tuple(SMALL_VOCAB) and ref.window == 10
    check_against_brute_force(ref, sample_docs, 10)
    assert ref.units == sum(max(1, len(d) - 9) for d in sample_docs if d)
    assert ref.tokens == sum(len(d) for d in sample_docs)
    meta = ref.meta
    assert meta["window"] == 10 and meta["sources"][0]["kind"] == "wiki" and meta["sources"][0]["units_read"] == 206
    assert summary["documents"] == 106 and not os.path.exists(str(out) + ".state")
    # the file loads without pickle, with plain numpy too
    with np.load(out, allow_pickle=False) as z:
        assert z["pair_keys"].dtype == np.int64 and json.loads(str(z["meta"]))["format"] == "topictool-cooc"


def test_sample_document_counts(sample_refs, sample_docs):
    _, refs = sample_refs
    ref = load_reference(refs["doc"][0])
    assert ref.units == ref.documents == 106 and ref.window == "doc"
    check_against_brute_force(ref, sample_docs, "doc")


def test_two_workers_give_the_same_counts(sample_refs, small_dump):
    d, _ = sample_refs
    dump, expected = small_dump
    out = d / "small-w2.npz"
    r = run("cooc", dump, "--vocab", d / "vocab.txt", "-o", out, "--workers", "2")
    assert r.exit_code == 0, r.stderr
    assert _same_reference(out, expected)
    assert load_reference(out).documents == len(_independent_article_titles(dump)) == 8


def _same_reference(p, q):
    a, b = load_reference(p), load_reference(q)
    return (
        a.units == b.units
        and a.documents == b.documents
        and a.tokens == b.tokens
        and np.array_equal(a.word_counts, b.word_counts)
        and np.array_equal(a.pair_keys, b.pair_keys)
        and np.array_equal(a.pair_counts, b.pair_counts)
    )


def test_killed_run_resumes_to_the_same_counts(sample_refs, small_dump, monkeypatch):
    d, _ = sample_refs
    dump, expected = small_dump
    out = d / "small-resumed.npz"
    opts = dict(window=10, checkpoint_seconds=0, batch_bytes=60_000)
    seen = []

    def kill_after_five(job):
        seen.append(job.state["consumed"][0])
        if len(seen) == 5:
            raise KeyboardInterrupt  # as abrupt as a kill: nothing is saved after the last checkpoint

    monkeypatch.setattr(cooc.pipeline, "_after_batch", kill_after_five)
    with pytest.raises(KeyboardInterrupt):
        build_reference([dump], d / "vocab.txt", out, CoocOptions(**opts))
    monkeypatch.setattr(cooc.pipeline, "_after_batch", None)
    state_dir = cooc.state_dir_for(out)
    with np.load(state_dir / "state.npz") as z:
        state = json.loads(str(z["state"]))
    assert 0 < state["consumed"][0] == seen[3] < 70  # the last checkpoint: after the 4th batch
    assert state["documents"] > 0 and len(state["runs"]) >= 1
    (state_dir / "run-orphan.keys").write_bytes(b"\0" * 8)  # as if killed while writing a run
    summary = build_reference([dump], d / "vocab.txt", out, CoocOptions(**opts))
    assert summary["resumed"] and not state_dir.exists()
    assert _same_reference(out, expected)


def test_sigterm_saves_state_and_rerun_continues(sample_refs, monkeypatch):
    d, refs = sample_refs
    out = d / "ref-term.npz"
    batches = []

    def term_after_two(job):
        batches.append(1)
        if len(batches) == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(cooc.pipeline, "_after_batch", term_after_two)
    r = run("cooc", shared(*SAMPLE), "--vocab", d / "vocab.txt", "-o", out)
    assert r.exit_code == 0 and "run the same command again" in r.stderr
    assert not out.exists() and (cooc.state_dir_for(out) / "state.npz").exists()
    monkeypatch.setattr(cooc.pipeline, "_after_batch", None)
    r = run("cooc", shared(*SAMPLE), "--vocab", d / "vocab.txt", "-o", out, "--window", "5")
    assert r.exit_code == 2 and "different cooc run (window differs)" in r.stderr
    r = run("cooc", shared(*SAMPLE), "--vocab", d / "vocab.txt", "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["resumed"] is True
    assert _same_reference(out, refs["10"][0])


# ----------------------------------------------------------------------------
# text sources and errors


def test_text_sources_lines_gz_dir_zip(tmp_path):
    docs = ["The apple and the banana.", "", "banana cherry apple apple", "Cherry, date!", "apple"]
    (tmp_path / "v.txt").write_text("apple\nbanana\ncherry\ndate\n")
    with gzip.open(tmp_path / "docs.txt.gz", "wt") as f:
        f.write("\n".join(docs) + "\n")
    (tmp_path / "dir").mkdir()
    for i, t in enumerate(docs):
        (tmp_path / "dir" / f"{i}.txt").write_text(t)
    with zipfile.ZipFile(tmp_path / "docs.zip", "w") as z:
        for i, t in enumerate(docs):
            z.writestr(f"d/{i}.txt", t)
    # --source-format lines on a zip or directory: every member file's lines (webtext's layout)
    halves = {"a.txt": "\n".join(docs[:3]) + "\n", "b.txt": "\n".join(docs[3:])}
    (tmp_path / "linedir").mkdir()
    with zipfile.ZipFile(tmp_path / "lines.zip", "w") as z:
        for name, text in halves.items():
            z.writestr(f"d/{name}", text)
            (tmp_path / "linedir" / name).write_text(text)
    index = {"apple": 0, "banana": 1, "cherry": 2, "date": 3}
    ids = [[index.get(t, -1) for t in Tokenizer()(x)] for x in docs if x.strip()]
    sources = [("docs.txt.gz",), ("dir",), ("docs.zip",), ("lines.zip", "--source-format", "lines")]
    sources.append(("linedir", "--source-format", "lines"))
    for source, *how in sources:
        for window in ("3", "doc"):
            out = tmp_path / f"{source}-{window}.npz"
            r = run("cooc", tmp_path / source, *how, "--vocab", tmp_path / "v.txt", "-o", out, "--window", window)
            assert r.exit_code == 0, r.stderr
            ref = load_reference(out)
            assert ref.documents == 4
            check_against_brute_force(ref, ids, 3 if window == "3" else "doc")


def test_bad_input_exits_2_with_one_line(tmp_path):
    (tmp_path / "docs.txt").write_text("a b\n")
    (tmp_path / "v.txt").write_text("a\nb\n")
    r = run("cooc", tmp_path / "docs.txt", "--vocab", tmp_path / "missing.txt", "-o", tmp_path / "r.npz")
    assert r.exit_code == 2 and "missing.txt" in r.stderr and r.stderr.count("\n") == 1
    r = run("cooc", tmp_path / "nope.txt", "--vocab", tmp_path / "v.txt", "-o", tmp_path / "r.npz")
    assert r.exit_code == 2 and "nope.txt" in r.stderr and r.stderr.count("\n") == 1
    r = run("cooc", tmp_path / "docs.txt", "--vocab", tmp_path / "v.txt", "-o", tmp_path / "r.npz", "--window", "x")
    assert r.exit_code == 2 and "--window" in r.stderr and r.stderr.count("\n") == 1
    assert run("cooc", tmp_path / "docs.txt", "--vocab", tmp_path / "v.txt", "-o", tmp_path / "r.npz").exit_code == 0
    r = run("cooc", tmp_path / "docs.txt", "--vocab", tmp_path / "v.txt", "-o", tmp_path / "r.npz")
    assert r.exit_code == 2 and "already exists" in r.stderr
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 a b\n".encode("latin-1"))
    r = run("cooc", tmp_path / "latin1.txt", "--vocab", tmp_path / "v.txt", "-o", tmp_path / "l.npz")
    assert r.exit_code == 2 and "latin1.txt:1" in r.stderr and r.stderr.count("\n") == 1
    assert not cooc.state_dir_for(tmp_path / "l.npz").exists()  # a failed run leaves nothing behind
    (tmp_path / "v2.txt").write_text("a\nB\nb2\n")
    r = run("cooc", tmp_path / "docs.txt", "--vocab", tmp_path / "v2.txt", "-o", tmp_path / "w.npz", "--json")
    assert r.exit_code == 0 and "2 vocabulary word(s) are never tokens" in r.stderr
    assert json.loads(r.stdout)["uncountable_words"] == ["B", "b2"]
