"""Readers and writers: LdaC, UCI, vocabularies, text sources, compression."""

import bz2
import gzip
import zipfile

import numpy as np
import pytest

from topictool.corpus import load_corpus
from topictool.corpus.ldac import read_ldac, write_ldac
from topictool.corpus.prepare import PrepareOptions, build_corpus, prepare, source_kind
from topictool.corpus.tokenizer import Tokenizer
from topictool.corpus.uci import read_uci, write_uci
from topictool.corpus.vocabulary import read_vocab, select_words
from topictool.errors import InputError

from .conftest import make_corpus

VOCAB = ("apple", "banana", "cherry", "date", "elder")


def sample():
    return make_corpus([{0: 2, 3: 1}, {1: 5}, {}, {4: 1, 2: 3, 0: 1}], VOCAB)


def test_ldac_round_trip(tmp_path):
    c = sample()
    write_ldac(c, tmp_path / "x.ldac")
    assert (tmp_path / "x.ldac").read_text().splitlines() == ["2 0:2 3:1", "1 1:5", "0", "3 0:1 2:3 4:1"]
    back = read_ldac(tmp_path / "x.ldac", VOCAB)
    assert back.equals(c)
    assert back.D == 4 and back.N == 13


def test_ldac_duplicate_ids_are_summed_and_rows_sorted(tmp_path):
    (tmp_path / "x.ldac").write_text("3 4:1 0:2 4:3\n")
    c = read_ldac(tmp_path / "x.ldac", VOCAB)
    assert c.word_ids.tolist() == [0, 4] and c.counts.tolist() == [2, 4]


def test_uci_round_trip(tmp_path):
    c = sample()
    write_uci(c, tmp_path / "docword.s.txt", tmp_path / "vocab.s.txt")
    lines = (tmp_path / "docword.s.txt").read_text().splitlines()
    assert lines[:3] == ["4", "5", str(c.nnz)] and lines[3] == "1 1 2"
    back = load_corpus(tmp_path / "docword.s.txt")  # vocabulary found beside it
    assert back.equals(c)


@pytest.mark.parametrize("opener,suffix", [(gzip.open, ".gz"), (bz2.open, ".bz2")])
def test_compressed_inputs(tmp_path, opener, suffix):
    c = sample()
    write_ldac(c, tmp_path / "x.ldac")
    with opener(tmp_path / f"y.ldac{suffix}", "wb") as f:
        f.write((tmp_path / "x.ldac").read_bytes())
    (tmp_path / "y.vocab").write_text("\n".join(VOCAB) + "\n")
    assert load_corpus(tmp_path / f"y.ldac{suffix}").equals(c)


def test_hca_words_file_takes_last_column(tmp_path):
    (tmp_path / "v.words").write_text("0 text 186ed 630 315 church\n1 text df7b 534 69 pope\n")
    assert read_vocab(tmp_path / "v.words") == ("church", "pope")


def test_vocab_with_repeated_word_names_line(tmp_path):
    (tmp_path / "v.txt").write_text("a\nb\na\n")
    with pytest.raises(InputError) as e:
        read_vocab(tmp_path / "v.txt")
    assert e.value.line == 3


def test_tokenizer():
    t = Tokenizer()
    assert t("Don't stop-me NOW, 1990s x_y l'amour’s") == ["don't", "stop-me", "now", "s", "x", "y", "l'amour's"]


def test_text_sources_dir_zip_lines(tmp_path):
    docs = ["the cat sat on the mat cat", "a dog and a cat", "dog dog bird"]
    (tmp_path / "d").mkdir()
    for i, t in enumerate(docs):
        (tmp_path / "d" / f"{i}.txt").write_text(t)
    with zipfile.ZipFile(tmp_path / "z.zip", "w") as z:
        for i, t in enumerate(docs):
            z.writestr(f"docs/{i}.txt", t)
    (tmp_path / "lines.txt").write_text("\n".join(docs) + "\n")
    opts = PrepareOptions(min_count=1, test_fraction=0)
    got = [build_corpus([tmp_path / s], opts)[0] for s in ("d", "z.zip", "lines.txt")]
    assert got[0].equals(got[1]) and got[0].equals(got[2])
    c = got[0]
    assert c.vocab == ("cat", "sat", "mat", "dog", "bird")  # stop words gone, first-seen order
    assert c.N == (2 + 1 + 1) + (1 + 1) + (2 + 1) and c.D == 3


def test_lines_of_every_member_of_a_directory_or_zip(tmp_path):
    """--source-format lines on a directory or zip reads every member file's lines as documents
    (NLTK's webtext is laid out so), as the members' lines would read as one file of lines. It
    used to read a zip's compressed bytes as one file of lines, which latin-1 decodes silently."""
    members = {"a.txt": "doc one cat\ndog doc\n", "b.txt": "cat bird\n\r\nbird cat cat", "README": "not a doc\n"}
    (tmp_path / "d").mkdir()
    for name, text in members.items():
        (tmp_path / "d" / name).write_text(text)
    with zipfile.ZipFile(tmp_path / "z.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in members.items():
            z.writestr(f"web/{name}", text)
    (tmp_path / "all.txt").write_text(members["a.txt"] + members["b.txt"])
    opts = PrepareOptions(min_count=1, test_fraction=0, source_format="lines", encoding="latin-1")
    (d, fd), (z, fz), (one, _) = (build_corpus([tmp_path / s], opts) for s in ("d", "z.zip", "all.txt"))
    assert d.equals(one) and z.equals(one) and d.D == 4  # the empty line is dropped, README skipped
    assert fd["names"] == ["a.txt:1", "a.txt:2", "b.txt:1", "b.txt:3"]
    assert fz["names"] == ["web/a.txt:1", "web/a.txt:2", "web/b.txt:1", "web/b.txt:3"]
    assert fz["empty_documents_dropped"] == 1 and fz["skipped_files"]["names"] == ["web/README"]
    assert "documents_per_folder" not in fz  # the documents are lines, not files
    # streamed prepare (the CLI's path) gives the same corpus
    prepare([tmp_path / "z.zip"], tmp_path / "out", opts)
    assert load_corpus(tmp_path / "out").equals(one)
    # a file of lines whose end happens to hold a zip's end record is still a file of lines
    tail = tmp_path / "tail.txt"
    tail.write_bytes(b"doc one cat\ndog doc\nPK\x05\x06" + bytes(18))
    assert zipfile.is_zipfile(tail) and source_kind(tail, "lines") == "lines"
    # a bad byte is named by member and line
    with zipfile.ZipFile(tmp_path / "bad.zip", "w") as zf:
        zf.writestr("web/a.txt", b"fine\nalso fine\nbad \xff here\n")
    with pytest.raises(InputError) as e:
        build_corpus([tmp_path / "bad.zip"], PrepareOptions(min_count=1, test_fraction=0, source_format="lines"))
    assert "bad.zip!web/a.txt" in str(e.value) and ":3" in str(e.value) and "undecodable" in str(e.value)


def test_fixed_vocabulary_drops_other_tokens(tmp_path):
    (tmp_path / "lines.txt").write_text("the cat sat\nzebra zebra\ncat dog\n")
    (tmp_path / "v.txt").write_text("dog\ncat\nunused\n")
    c, facts = build_corpus([tmp_path / "lines.txt"], PrepareOptions(vocab=str(tmp_path / "v.txt"), test_fraction=0))
    assert c.vocab == ("dog", "cat", "unused")  # kept exactly, even unused words
    assert c.D == 2  # the zebra document became empty and was dropped
    assert facts["empty_documents_dropped"] == 1 and facts["oov_tokens_dropped"] == 4


def test_pruning_by_count_and_document_frequency(tmp_path):
    (tmp_path / "lines.txt").write_text("aa bb cc\naa bb\naa dd dd dd\n")
    base = dict(stopwords="none", test_fraction=0)
    c, _ = build_corpus([tmp_path / "lines.txt"], PrepareOptions(min_count=2, **base))
    assert c.vocab == ("aa", "bb", "dd")
    c, _ = build_corpus([tmp_path / "lines.txt"], PrepareOptions(min_count=1, min_df=2, **base))
    assert c.vocab == ("aa", "bb")
    c, _ = build_corpus([tmp_path / "lines.txt"], PrepareOptions(min_count=1, max_df=0.7, **base))
    assert c.vocab == ("bb", "cc", "dd")


def test_select_words_keeps_counts():
    c = sample()
    s = select_words(c, np.array([True, False, True, False, True]))
    assert s.vocab == ("apple", "cherry", "elder")
    assert s.N == c.N - 5 - 1 and s.D == c.D


def test_subset_and_tokens():
    c = sample()
    s = c.subset([3, 0])
    assert s.word_ids.tolist() == [0, 2, 4, 0, 3] and s.doc_ptr.tolist() == [0, 3, 5]
    ptr, words = c.tokens()
    assert ptr.tolist() == [0, 3, 8, 8, 13] and words[:3].tolist() == [0, 0, 3]


def test_uci_unsorted_body(tmp_path):
    (tmp_path / "docword.u.txt").write_text("2\n3\n3\n2 3 1\n1 2 4\n2 1 2\n")
    (tmp_path / "vocab.u.txt").write_text("a\nb\nc\n")
    c = read_uci(tmp_path / "docword.u.txt", ("a", "b", "c"))
    assert c.doc_ptr.tolist() == [0, 1, 3] and c.word_ids.tolist() == [1, 0, 2] and c.counts.tolist() == [4, 2, 1]
