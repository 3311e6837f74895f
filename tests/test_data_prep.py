"""data_prep/: each recipe on a tiny fixture in its source format, and the download helper
against a local HTTP server (no network)."""

import bz2
import gzip
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from data_prep import fetch, recipes
from data_prep.download import ChecksumError, DownloadError, download

from .conftest import ROOT, run


def in_process(args):
    """The recipes' topictool runner, in this process (as the CLI, via conftest.run)."""
    r = run(*args)
    if r.exit_code:
        raise recipes.ToolFailed(r.exit_code, ["topictool", *map(str, args)], (r.stderr or "").strip())


def settings(out, **kw):
    kw.setdefault("log", lambda message: None)
    return recipes.Settings(out=out, topictool=in_process, **kw)


def manifest(corpus_dir):
    return json.loads((Path(corpus_dir) / "corpus.json").read_text())


def lines(path):
    return Path(path).read_text().splitlines()


def add_file(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def add_dir(tar, name):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    tar.addfile(info)


def cli(*argv, capsys):
    """fetch.main in-process: (exit code, stderr lines)."""
    code = fetch.main([str(a) for a in argv])
    return code, [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


# ---------------------------------------------------------------------------
# UCI bag of words


def write_uci(directory, collection="kos", D=5):
    directory.mkdir(parents=True, exist_ok=True)
    vocab = ["cocoa", "prices", "grain", "wheat"]
    rows = [(d, w, 3) for d in range(1, D + 1) for w in (1, 2, 3, 4) if (d + w) % 3]
    text = f"{D}\n{len(vocab)}\n{len(rows)}\n" + "".join(f"{d} {w} {c}\n" for d, w, c in rows)
    docword = directory / f"docword.{collection}.txt.gz"
    docword.write_bytes(gzip.compress(text.encode()))
    (directory / f"vocab.{collection}.txt").write_text("\n".join(vocab) + "\n")
    return docword


def test_uci_kos_from_file(tmp_path):
    docword = write_uci(tmp_path / "dl")
    out = tmp_path / "build" / "kos"
    record = recipes.run_recipe("kos", settings(out, sources=[docword]))
    m = manifest(out)
    assert (m["D"], m["W"]) == (5, 4)
    assert (m["train"]["D"], m["test"]["D"]) == (4, 1)  # --test-fraction 0.2 by default
    assert m["options"]["min_count"] == 5 and m["options"]["stopwords"] == "none"
    saved = json.loads((out / "data_prep.json").read_text())
    assert saved["recipe"] == "kos" and saved["commands"][0][:2] == ["topictool", "prepare"]
    assert [Path(i["path"]).name for i in record["inputs"]] == ["docword.kos.txt.gz", "vocab.kos.txt"]
    assert len(saved["inputs"][0]["sha256"]) == 64


def test_uci_directory_source_and_existing_output(tmp_path, capsys):
    write_uci(tmp_path / "dl", "nips")
    out = tmp_path / "nips"
    code, err = cli(
        "nips",
        "--from",
        tmp_path / "dl",
        "-o",
        out,
        "--test-fraction",
        "0.4",
        "--topictool",
        f"{sys.executable} -m topictool",
        capsys=capsys,
    )
    assert code == 0, err
    assert manifest(out)["test"]["D"] == 2
    code, err = cli("nips", "--from", tmp_path / "dl", "-o", out, capsys=capsys)
    assert code == 2 and len(err) == 1 and "already exists" in err[0]


def test_uci_corrupt_gzip_is_one_line_exit_2(tmp_path, capsys):
    write_uci(tmp_path / "dl")
    bad = tmp_path / "dl" / "docword.kos.txt.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage that is not deflate data" * 3)
    code, err = cli("kos", "--from", bad, "-o", tmp_path / "kos", capsys=capsys)
    assert code == 2 and len(err) == 1
    assert "docword.kos.txt.gz" in err[0] and "not a readable compressed file" in err[0]
    assert not (tmp_path / "kos").exists()


def test_uci_vocabulary_length_is_checked(tmp_path):
    docword = write_uci(tmp_path / "dl")
    (tmp_path / "dl" / "vocab.kos.txt").write_text("cocoa\nprices\n")
    with pytest.raises(recipes.InputError, match="has 2 words but docword.kos.txt.gz says W=4"):
        recipes.run_recipe("kos", settings(tmp_path / "kos", sources=[docword]))


# ---------------------------------------------------------------------------
# Reuters-21578

REPEATED = "Cocoa prices rose. " * 3


def reuters_entry(newid, topics_attr, lewis, cgi, topics=(), title="", body=None):
    text_type = ' TYPE="BRIEF"' if body is None else ""
    body_xml = "" if body is None else f"<DATELINE>    SALVADOR, Feb 26 - </DATELINE><BODY>{body}\n Reuter\n&#3;</BODY>"
    return (
        f'<REUTERS TOPICS="{topics_attr}" LEWISSPLIT="{lewis}" CGISPLIT="{cgi}" OLDID="{5540 + newid}" '
        f'NEWID="{newid}">\n<DATE>26-FEB-1987 15:01:01.79</DATE>\n'
        f"<TOPICS>{''.join(f'<D>{t}</D>' for t in topics)}</TOPICS>\n<PLACES><D>brazil</D></PLACES>\n"
        f"<PEOPLE></PEOPLE>\n<ORGS></ORGS>\n<EXCHANGES></EXCHANGES>\n<COMPANIES></COMPANIES>\n"
        f"<UNKNOWN> \n&#5;&#5;&#5;C T\n&#22;&#22;&#1;f0704&#31;reute\nu f BC-COCOA  02-26 0105</UNKNOWN>\n"
        f"<TEXT{text_type}>&#2;\n<TITLE>{title}</TITLE>\n{body_xml}</TEXT>\n</REUTERS>\n"
    )


REUTERS_FILES = {
    "reut2-000.sgm": [
        reuters_entry(1, "YES", "TRAIN", "TRAINING-SET", ["cocoa"], "BAHIA COCOA REVIEW", REPEATED + "Bahia farmers"),
        reuters_entry(2, "NO", "TRAIN", "TRAINING-SET", [], "WHEAT", "Wheat exports fell."),
        reuters_entry(3, "YES", "TEST", "PUBLISHED-TESTSET", ["grain"], "GRAIN", "Grain and cocoa prices."),
        reuters_entry(4, "YES", "NOT-USED", "TRAINING-SET", ["cocoa"], "UNUSED", REPEATED),
    ],
    "reut2-001.sgm": [
        reuters_entry(5, "BYPASS", "TRAIN", "TRAINING-SET", ["cocoa"], "BYPASSED", REPEATED),
        reuters_entry(6, "YES", "TRAIN", "TRAINING-SET", [], "COCOA PRICES RISE &lt;BRIEF>"),
        reuters_entry(
            7,
            "YES",
            "TRAIN",
            "TRAINING-SET",
            ["grain", "wheat"],
            "ACME",
            REPEATED + "&lt;ACME&gt; Corp said grain &amp; wheat.",
        ),
        reuters_entry(8, "YES", "TEST", "TRAINING-SET", ["cocoa"], "COCOA", "Cocoa prices fell."),
    ],
}


def write_reuters(path, files=REUTERS_FILES, extra=()):
    with tarfile.open(path, "w:gz") as tar:
        for name, entries in files.items():
            add_file(tar, name, ('<!DOCTYPE lewis SYSTEM "lewis.dtd">\n' + "".join(entries)).encode("latin-1"))
        for name in ("README.txt", "lewis.dtd", "all-topics-strings.lc.txt", *extra):
            add_file(tar, name, b"not a story\n")
    return path


def test_reuters_modapte(tmp_path):
    tarball = write_reuters(tmp_path / "reuters21578.tar.gz")
    out = tmp_path / "reuters"
    record = recipes.run_recipe("reuters", settings(out, sources=[tarball]))
    src = tmp_path / "work" / "reuters" / "source"
    # TOPICS="YES" only; LEWISSPLIT decides; NOT-USED, NO and BYPASS left out; 6 has no body
    assert lines(src / "train.ids") == ["1", "7"] and lines(src / "test.ids") == ["3", "8"]
    assert lines(src / "train.labels") == ["cocoa", "grain wheat"]
    train_text = lines(src / "train.txt")
    assert train_text[1].startswith("Cocoa prices rose.")
    assert train_text[1].endswith("<ACME> Corp said grain & wheat. Reuter")
    assert "BAHIA COCOA REVIEW" not in train_text[0]  # no titles unless asked
    assert record["extracted"] == {
        "sgm_files": 2,
        "entries": 8,
        "train": 2,
        "test": 2,
        "not_in_split": 3,
        "empty_skipped": 1,
        "without_topic_skipped": 0,
    }
    work = tmp_path / "work" / "reuters"
    corpus, train, test = manifest(out), manifest(work / "train"), manifest(work / "test")
    assert (corpus["train"]["D"], corpus["test"]["D"], corpus["D"]) == (2, 2, 4)
    assert lines(out / "vocab.txt") == lines(work / "train" / "vocab.txt") == ["cocoa", "prices", "rose"]
    assert lines(work / "test" / "vocab.txt") == lines(work / "train" / "vocab.txt")
    assert train["options"]["min_count"] == 5 and train["options"]["stopwords"] == "english"
    assert test["options"]["vocab"].endswith("train/vocab.txt") and test["options"]["test_fraction"] == 0
    assert corpus["test_prepared_with_training_vocabulary"] is True
    assert (out / "test.npz").exists() and not (work / "train" / "test.npz").exists()
    assert json.loads((out / "data_prep.json").read_text())["extracted"]["train"] == 2
    from topictool.corpus import load_corpus

    assert load_corpus(out, part="test").D == 2


def test_reuters_titles_and_other_splits(tmp_path):
    tarball = write_reuters(tmp_path / "reuters21578.tar.gz")
    docs, files = recipes.read_reuters(tarball)
    assert files == 2 and [d.newid for d in docs] == list(range(1, 9))
    assert docs[5].title == "COCOA PRICES RISE <BRIEF>" and docs[6].topics == ["grain", "wheat"]
    parts, _ = recipes.split_reuters(docs, "modapte", title=True)
    assert [d[0] for d in parts["train"]] == [1, 6, 7] and parts["train"][0][2].startswith("BAHIA COCOA REVIEW Cocoa")
    parts, _ = recipes.split_reuters(docs, "modapte", title=True, require_topic=True)
    assert [d[0] for d in parts["train"]] == [1, 7]
    parts, counts = recipes.split_reuters(docs, "modlewis")
    assert [d[0] for d in parts["train"]] == [1, 2, 7] and [d[0] for d in parts["test"]] == [3, 8]
    parts, _ = recipes.split_reuters(docs, "modhayes")
    assert [d[0] for d in parts["test"]] == [3] and [d[0] for d in parts["train"]] == [1, 2, 4, 5, 7, 8]
    out = tmp_path / "lewis"
    recipes.run_recipe("reuters-modlewis", settings(out, sources=[tarball], min_count=1))
    assert lines(tmp_path / "work" / "lewis" / "source" / "train.ids") == ["1", "2", "7"]
    assert manifest(out)["train"]["D"] == 3


def test_reuters_bad_inputs_are_one_line_exit_2(tmp_path, capsys):
    no_sgm = tmp_path / "other.tar.gz"
    with tarfile.open(no_sgm, "w:gz") as tar:
        add_file(tar, "README.txt", b"hello\n")
    code, err = cli("reuters", "--from", no_sgm, "-o", tmp_path / "r1", capsys=capsys)
    assert code == 2 and len(err) == 1 and "no reut2-NNN.sgm files" in err[0]

    corrupt = tmp_path / "reuters21578.tar.gz"
    write_reuters(corrupt)
    data = corrupt.read_bytes()
    corrupt.write_bytes(data[: len(data) // 2])  # truncated download
    code, err = cli("reuters", "--from", corrupt, "-o", tmp_path / "r2", capsys=capsys)
    assert code == 2 and len(err) == 1 and "damaged archive" in err[0]

    (tmp_path / "notgz.tar.gz").write_bytes(b"this is not an archive at all")
    code, err = cli("reuters", "--from", tmp_path / "notgz.tar.gz", "-o", tmp_path / "r3", capsys=capsys)
    assert code == 2 and len(err) == 1 and "not a readable tar archive" in err[0]

    broken = write_reuters(
        tmp_path / "broken.tar.gz", {"reut2-000.sgm": ['<REUTERS TOPICS="YES" NEWID="1">\n<TEXT>x</TEXT></REUTERS>\n']}
    )
    code, err = cli("reuters", "--from", broken, "-o", tmp_path / "r4", capsys=capsys)
    assert code == 2 and len(err) == 1 and "reut2-000.sgm:2: <REUTERS> entry without LEWISSPLIT, CGISPLIT" in err[0]
    code, err = cli("reuters", "--from", corrupt, "-o", tmp_path / "r5", "--test-fraction", "0.1", capsys=capsys)
    assert code == 2 and "own train/test split" in err[0]
    code, err = cli("kos", "--download", "-o", tmp_path / "k", "--title", capsys=capsys)
    assert code == 2 and err == ["fetch.py kos: error: --title does not apply to kos"]


# ---------------------------------------------------------------------------
# 20 Newsgroups


def post(subject, body, signature="Some One   signature words here"):
    return (
        f"From: someone@example.edu (Some One)\nSubject: {subject}\nOrganization: Example University\n"
        f"Lines: 9\n\nIn article <1993Apr1.1@x.edu> other@y.edu writes:\n> quoted earlier words\n"
        f"{body}\n\n-- \n{signature}\n"
    ).encode("latin-1")


BODY = "The orbit of the moon; shuttle launch. Orbit moon shuttle launch."


def write_20news(path):
    with tarfile.open(path, "w:gz") as tar:
        add_dir(tar, "20news-bydate-train")
        add_file(tar, "20news-bydate-train/sci.space/60001", post("Re: orbits", BODY + " Caf\xe9"))
        add_file(tar, "20news-bydate-train/alt.atheism/51060", post("Re: gods", BODY))
        add_file(tar, "20news-bydate-train/alt.atheism/49960", post("Atheism FAQ", BODY))
        add_file(tar, "20news-bydate-test/sci.space/61000", post("launch", "Moon launch next year."))
        add_file(tar, "20news-bydate-test/alt.atheism/53068", post("faith", "The shuttle is no god."))
        add_file(tar, "20news-bydate-test/alt.atheism/53069", b"Subject: header only\n")
    return path


def test_20news_by_date(tmp_path):
    tarball = write_20news(tmp_path / "20news-bydate.tar.gz")
    out = tmp_path / "20news"
    record = recipes.run_recipe("20news", settings(out, sources=[tarball], verify=False))
    src = tmp_path / "work" / "20news" / "source"
    assert lines(src / "train.ids") == ["alt.atheism/49960", "alt.atheism/51060", "sci.space/60001"]
    assert lines(src / "test.labels") == ["alt.atheism", "sci.space"]
    text = (src / "train.txt").read_text()
    assert "Organization" not in text and "Subject" not in text  # headers removed
    assert "quoted earlier words" in text and "signature" in text  # kept unless asked
    assert "Caf\xe9" in text  # Latin-1 read, UTF-8 written
    assert record["extracted"]["empty_skipped"] == 1
    m = manifest(out)
    assert (m["train"]["D"], m["test"]["D"]) == (3, 2)
    vocab = set(lines(out / "vocab.txt"))
    assert {"launch", "moon", "orbit", "shuttle"} <= vocab and not {"organization", "university", "subject"} & vocab


def test_20news_quotes_and_footers_as_scikit_learn(tmp_path):
    text = post("x", "Real body words.").decode("latin-1")
    after = recipes.strip_header(text)
    assert after.startswith("In article")
    assert recipes.strip_quotes(after).splitlines()[0] == "Real body words."
    assert "signature" not in recipes.strip_footer(after) and "Real body" in recipes.strip_footer(after)
    assert recipes.strip_footer("only one line") == "only one line"
    assert recipes.strip_footer("\n\nfirst\n\nsecond\n") == "first"
    tarball = write_20news(tmp_path / "20news-bydate.tar.gz")
    parts, _ = recipes.read_newsgroups(tarball, remove=("quotes", "footers"))
    joined = " ".join(t for _, _, t in parts["train"])
    assert "quoted" not in joined and "writes" not in joined and "signature" not in joined
    assert "orbit" in joined


def test_20news_recorded_checksum_guards_from_file(tmp_path, capsys):
    tarball = write_20news(tmp_path / "20news-bydate.tar.gz")
    code, err = cli("20news", "--from", tarball, "-o", tmp_path / "n", capsys=capsys)
    assert code == 2 and len(err) == 1
    assert "sha256 is" in err[0] and "8f1b2514" in err[0] and "--no-verify" in err[0]
    sha = hashlib.sha256(tarball.read_bytes()).hexdigest()
    code, err = cli(
        "20news",
        "--from",
        tarball,
        "-o",
        tmp_path / "n",
        "--sha256",
        sha,
        "--remove",
        "quotes",
        "--min-count",
        "1",
        "--topictool",
        f"{sys.executable} -m topictool",
        capsys=capsys,
    )
    assert code == 0, err
    assert "writes" not in (tmp_path / "work" / "n" / "source" / "train.txt").read_text()


def test_20news_tarball_without_splits(tmp_path, capsys):
    tarball = tmp_path / "20news-18828.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        add_file(tar, "20news-18828/alt.atheism/1", post("x", BODY))
    code, err = cli("20news", "--from", tarball, "--no-verify", "-o", tmp_path / "n", capsys=capsys)
    assert code == 2 and len(err) == 1 and "no posts under 20news-bydate-train/" in err[0]


# ---------------------------------------------------------------------------
# AP (Blei's LDA-C data)


def write_ap(path, members=("ap/ap.dat", "ap/vocab.txt", "ap/ap.txt")):
    docs = ["3 0:4 1:2 2:3", "2 1:5 3:1", "3 0:2 2:2 3:4", "2 0:3 1:3", "1 2:6"]
    data = {
        "ap/ap.dat": ("\n".join(docs) + "\n").encode(),
        "ap/vocab.txt": b"i\nnew\npercent\npeople\n",
        "ap/ap.txt": b"<DOC>\n<DOCNO> AP881218-0003 </DOCNO>\n<TEXT>\n text \n</TEXT>\n</DOC>\n",
    }
    with tarfile.open(path, "w:gz") as tar:
        add_dir(tar, "ap")
        for name in members:
            add_file(tar, name, data[name])
    return path


def test_ap(tmp_path):
    tarball = write_ap(tmp_path / "ap.tgz")
    out = tmp_path / "ap"
    recipes.run_recipe("ap", settings(out, sources=[tarball]))
    assert lines(tmp_path / "work" / "ap" / "source" / "vocab.txt") == ["i", "new", "percent", "people"]
    m = manifest(out)
    assert (m["D"], m["W"], m["train"]["D"], m["test"]["D"]) == (5, 4, 4, 1)
    assert m["options"]["stopwords"] == "none"


def test_ap_without_members(tmp_path, capsys):
    tarball = write_ap(tmp_path / "ap.tgz", members=("ap/ap.txt",))
    code, err = cli("ap", "--from", tarball, "-o", tmp_path / "ap", capsys=capsys)
    assert code == 2 and len(err) == 1 and "no ap/ap.dat or ap/vocab.txt in it" in err[0]


def test_ap_through_make(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    tarball = write_ap(tmp_path / "ap.tgz")
    cmd = [
        "make",
        "-s",
        "-C",
        str(ROOT / "data_prep"),
        "ap",
        f"FROM={tarball}",
        f"OUT={tmp_path / 'build'}",
        f"PYTHON={sys.executable}",
        f"TOPICTOOL={sys.executable} -m topictool",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert manifest(tmp_path / "build" / "ap")["D"] == 5
    assert (tmp_path / "build" / "work" / "ap" / "source" / "ap.dat").exists()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)  # up to date: nothing to do
    assert r.returncode == 0 and "prepare" not in r.stderr


# ---------------------------------------------------------------------------
# Wikipedia -> cooc reference


def write_dump(path):
    def page(title, pid, text, redirect=""):
        return (
            f"<page><title>{title}</title><ns>0</ns><id>{pid}</id>{redirect}<revision><id>{pid}0</id>"
            f'<text xml:space="preserve">{text}</text></revision></page>\n'
        )

    xml = (
        '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">\n'
        "<siteinfo><sitename>Wikipedia</sitename></siteinfo>\n"
        + page("Cocoa", 1, "'''Cocoa''' prices rose in [[Bahia]]. Cocoa farmers sold grain.{{cite|x}}")
        + page("Grain", 2, "Grain prices fell; [[cocoa]] prices rose.")
        + page("Cacao", 3, "#REDIRECT [[Cocoa]]", '<redirect title="Cocoa" />')
        + "</mediawiki>\n"
    )
    path.write_bytes(bz2.compress(xml.encode()))
    return path


def test_wikipedia_reference(tmp_path):
    dump = write_dump(tmp_path / "enwiki-20240101-pages-articles.xml.bz2")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("cocoa\nprices\ngrain\n")
    out = tmp_path / "wikipedia"
    recipes.run_recipe("wikipedia", settings(out, sources=[dump], vocab=str(vocab)))
    with np.load(out / "reference.npz", allow_pickle=False) as ref:
        assert int(ref["documents"]) == 2  # two articles; the redirect is not one
        assert bytes(ref["vocab_utf8"]).decode().split("\n") == ["cocoa", "prices", "grain"]
        assert ref["word_counts"].min() > 0
    with pytest.raises(recipes.InputError, match="needs --vocab"):
        recipes.run_recipe("wikipedia", settings(tmp_path / "w2", sources=[dump]))
    not_a_dump = write_ap(tmp_path / "ap.tgz")
    with pytest.raises(recipes.InputError, match="ap.tgz: not a MediaWiki XML dump"):
        recipes.run_recipe("wikipedia", settings(tmp_path / "w3", sources=[dump, not_a_dump], vocab=str(vocab)))


# ---------------------------------------------------------------------------
# the download helper, against a local server


class Server:
    """A local HTTP server with Range support; records each request's Range header."""

    def __init__(self):
        self.files, self.seen = {}, []
        self.cut_once, self.ignore_range = set(), False
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                owner.seen.append((self.path, self.headers.get("Range")))
                data = owner.files.get(self.path)
                if data is None:
                    self.send_error(404)
                    return
                start = 0
                rng = self.headers.get("Range")
                if rng and not owner.ignore_range:
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.send_header("ETag", '"v1"')
                self.end_headers()
                body = data[start:]
                if self.path in owner.cut_once:  # announce everything, send half, hang up
                    owner.cut_once.discard(self.path)
                    body = body[: len(body) // 2]
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def server():
    with Server() as s:
        yield s


PAYLOAD = bytes(range(256)) * 400  # 102,400 bytes
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()
FAST = dict(retries=2, backoff=0, timeout=5, log=lambda m: None, chunk_size=4096)


def test_download_fresh(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    dest = download(server.url + "/f.bin", tmp_path / "f.bin", sha256=PAYLOAD_SHA, **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin", "f.bin.sha256"]
    assert (tmp_path / "f.bin.sha256").read_text().split()[0] == PAYLOAD_SHA
    download(server.url + "/f.bin", dest, sha256=PAYLOAD_SHA, **FAST)  # present: verified, not fetched
    assert len(server.seen) == 1


def test_download_resumes_a_partial_part_file_with_range(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    (tmp_path / "f.bin.part").write_bytes(PAYLOAD[:30000])
    download(server.url + "/f.bin", tmp_path / "f.bin", sha256=PAYLOAD_SHA, **FAST)
    assert server.seen == [("/f.bin", "bytes=30000-")]
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD and not (tmp_path / "f.bin.part").exists()


def test_download_resumes_after_a_dropped_connection(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    server.cut_once.add("/f.bin")
    download(server.url + "/f.bin", tmp_path / "f.bin", sha256=PAYLOAD_SHA, **FAST)
    assert [r for _, r in server.seen] == [None, f"bytes={len(PAYLOAD) // 2}-"]
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD


def test_download_starts_over_when_the_range_is_ignored_or_complete(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    server.ignore_range = True
    (tmp_path / "f.bin.part").write_bytes(b"stale bytes of something else")
    download(server.url + "/f.bin", tmp_path / "f.bin", sha256=PAYLOAD_SHA, **FAST)
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD
    server.ignore_range = False
    (tmp_path / "g.bin.part").write_bytes(PAYLOAD)  # complete already: 416, then verified
    server.files["/g.bin"] = PAYLOAD
    download(server.url + "/g.bin", tmp_path / "g.bin", sha256=PAYLOAD_SHA, **FAST)
    assert (tmp_path / "g.bin").read_bytes() == PAYLOAD


def test_download_checksum_mismatch_and_http_errors(server, tmp_path):
    server.files["/f.bin"] = PAYLOAD
    with pytest.raises(ChecksumError, match="sha256 of the download is"):
        download(server.url + "/f.bin", tmp_path / "f.bin", sha256="0" * 64, **FAST)
    assert list(tmp_path.iterdir()) == []  # no file, no part left
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(server.url + "/missing", tmp_path / "m.bin", **FAST)
    assert len(server.seen) == 2  # a 404 is not retried
    (tmp_path / "have.bin").write_bytes(b"local copy")
    with pytest.raises(ChecksumError, match="have.bin: sha256 is"):
        download(server.url + "/f.bin", tmp_path / "have.bin", sha256=PAYLOAD_SHA, **FAST)


def test_recipe_download_through_a_mirror(server, tmp_path, capsys):
    dl = tmp_path / "dl"
    write_uci(dl, "kos")
    for f in dl.iterdir():
        server.files[f"/uci/{f.name}"] = f.read_bytes()
    out = tmp_path / "build" / "kos"
    code, err = cli(
        "kos",
        "--download",
        "--mirror",
        server.url + "/uci/",
        "-o",
        out,
        "--topictool",
        f"{sys.executable} -m topictool",
        capsys=capsys,
    )
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "build" / "downloads").iterdir()) == [
        "docword.kos.txt.gz",
        "docword.kos.txt.gz.sha256",
        "vocab.kos.txt",
        "vocab.kos.txt.sha256",
    ]
    assert manifest(out)["D"] == 5
    code, err = cli(
        "kos",
        "-o",
        tmp_path / "again",
        "--downloads",
        tmp_path / "build" / "downloads",
        "--topictool",
        f"{sys.executable} -m topictool",
        capsys=capsys,
    )
    assert code == 0, err  # the completed download is reused without --download
    assert len(server.seen) == 2


def test_wikipedia_download_checked_against_wikimedia_sha1sums(server, tmp_path):
    dump = write_dump(tmp_path / "dump.xml.bz2").read_bytes()
    name = "enwiki-20240101-pages-articles.xml.bz2"
    server.files[f"/enwiki/20240101/{name}"] = dump
    server.files["/enwiki/latest/enwiki-latest-sha1sums.txt"] = (
        f"{'1' * 40}  enwiki-20240101-pages-articles-multistream.xml.bz2\n{hashlib.sha1(dump).hexdigest()}  {name}\n"
    ).encode()
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("cocoa\nprices\n")
    s = settings(tmp_path / "w" / "wikipedia", download=True, mirror=server.url + "/enwiki", vocab=str(vocab))
    record = recipes.run_recipe("wikipedia", s)
    assert record["inputs"][0]["url"].endswith(f"/enwiki/20240101/{name}")
    assert (tmp_path / "w" / "downloads" / name).exists() and (tmp_path / "w" / "wikipedia" / "reference.npz").exists()
    server.files["/enwiki/latest/enwiki-latest-sha1sums.txt"] = f"{'2' * 40}  {name}\n".encode()
    (tmp_path / "w" / "downloads" / name).unlink()
    with pytest.raises(ChecksumError, match="sha1 of the download"):
        recipes.run_recipe(
            "wikipedia",
            settings(
                tmp_path / "w" / "wikipedia", download=True, force=True, mirror=server.url + "/enwiki", vocab=str(vocab)
            ),
        )
