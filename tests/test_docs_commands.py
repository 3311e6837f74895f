"""Every `topictool ...` line of a code block in README.md and docs/ runs as written: the named
files are small stand-ins built here (a zip of text documents for the reviews, an LdaC file for
ch, a MediaWiki dump, Mallet's and the text format's model files), placeholders (CORPUS, RUN,
...) get concrete names, and sizes are cut (-K, -n) so that the whole set runs in seconds.
A renamed or removed option breaks this test, not the user."""

import bz2
import re
import shlex
import zipfile
from pathlib import Path

import numpy as np
import pytest

from .conftest import ROOT, run

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

# words of the stand-in documents (none is an English stop word)
WORDS = "apple banana cherry grape lemon mango olive peach plum quince river mountain forest ocean desert".split()


def command_lines(path):
    """The `topictool` command lines of a Markdown file's code blocks, continuation lines joined."""
    out = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("topictool "):
                out.append(line)
    return out


def cases():
    return [(p, line) for p in DOCS for line in command_lines(p)]


def test_the_docs_have_commands_to_check():
    assert len(cases()) >= 20


# ---------------------------------------------------------------------------
# the stand-in inputs


def _document(rng, n=40):
    return " ".join(rng.choice(WORDS, size=n))


def _stand_ins(work):
    rng = np.random.default_rng(3)
    with zipfile.ZipFile(work / "reviews.zip", "w") as z:
        for label in ("neg", "pos"):
            for i in range(30):
                z.writestr(f"reviews/{label}/cv{i:03d}.txt", _document(rng))
    (work / "movie_reviews.zip").write_bytes((work / "reviews.zip").read_bytes())
    # hca's ch: an LdaC file and its .words vocabulary (the word in the last column)
    docs = [np.bincount(rng.integers(0, len(WORDS), 30), minlength=len(WORDS)) for _ in range(40)]
    lines = [f"{np.count_nonzero(c)} " + " ".join(f"{w}:{n}" for w, n in enumerate(c) if n) for c in docs]
    (work / "ch.ldac").write_text("\n".join(lines) + "\n")
    (work / "ch.words").write_text("".join(f"{i} 1 {w}\n" for i, w in enumerate(WORDS)))
    pages = "".join(
        f"<page><title>Page {i}</title><ns>0</ns><id>{i + 1}</id><revision><id>{i + 10}</id>"
        f'<text xml:space="preserve">{_document(rng, 60)}</text></revision></page>\n'
        for i in range(20)
    )
    dump = f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" xml:lang="en">\n{pages}</mediawiki>\n'
    (work / "enwiki-pages-articles.xml.bz2").write_bytes(bz2.compress(dump.encode()))
    # Mallet's --topic-word-weights-file and --output-topic-keys for 3 topics
    weights = rng.gamma(1.0, size=(3, len(WORDS))) + 0.01
    (work / "weights.txt").write_text(
        "".join(f"{k}\t{w}\t{weights[k, i]:.4f}\n" for k in range(3) for i, w in enumerate(WORDS))
    )
    (work / "keys.txt").write_text("".join(f"{k}\t0.5\t{' '.join(WORDS[:5])}\n" for k in range(3)))
    # the text model format (docs/formats-text-model.md)
    (work / "PREFIX.phi.txt").write_text("".join(" ".join(f"{x:.4f}" for x in row) + "\n" for row in weights))
    (work / "PREFIX.vocab.txt").write_text("".join(f"{w}\n" for w in WORDS))


# placeholders of the docs -> what they stand for here
PLACEHOLDERS = {"CORPUS": "movies", "TEST": "movies", "SYNTH": "synth-out"}
CAPS = {"-K": 12, "-n": 3, "--shards": 4}


def _concrete(line, index, runs=None):
    """The command's arguments with the placeholders filled in and the sizes cut. A RUN after
    -o is a new run of this command's own; any other RUN is the page's latest (``runs``)."""
    runs = runs if runs is not None else ["run-base"]
    args = []
    for tok in shlex.split(line, comments=True)[1:]:
        if tok == "...":
            continue  # "and other options"
        tok = tok.strip("[]")  # [--threads 2]: an optional part, run as given
        if tok in ("RUN", "RUN/"):
            if args and args[-1] in ("-o", "--output"):
                runs.append(f"run-{index}")
            tok = runs[-1]
        elif tok in ("MODEL.npz",):
            tok = f"model-{index}.npz"
        tok = PLACEHOLDERS.get(tok, tok)
        if args and args[-1] in CAPS and tok.isdigit():
            tok = str(min(int(tok), CAPS[args[-1]]))
        args.append(tok)
    return args


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """One directory per docs page, the stand-ins in each, and the corpus most pages name."""
    return tmp_path_factory.mktemp("docs")


def _page_dir(work, path):
    d = work / path.relative_to(ROOT).as_posix().replace("/", "_")
    if not d.exists():
        d.mkdir()
        _stand_ins(d)
        if path.name != "README.md":  # README's own lines prepare it
            r = run("prepare", d / "reviews.zip", "-o", d / "movies")
            assert r.exit_code == 0, r.stderr
            r = run("train", d / "movies", "-m", "lda-gibbs", "-K", "4", "-n", "2", "-o", d / "run-base")
            assert r.exit_code == 0, r.stderr
    return d


@pytest.mark.parametrize("path", [p for p in DOCS if command_lines(p)], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_command_line_runs_as_written(path, work, monkeypatch):
    d = _page_dir(work, path)
    monkeypatch.chdir(d)
    runs = ["run-base"]
    for i, line in enumerate(command_lines(path)):
        args = _concrete(line, i, runs)
        r = run(*args)
        assert r.exit_code == 0, f"{path.name}: `{line}` -> {' '.join(args)}\n{r.stderr}"


def test_a_removed_option_fails_here(work, monkeypatch):
    """The check above would catch an option a page names that the tool does not know."""
    d = _page_dir(work, Path(ROOT / "README.md"))
    monkeypatch.chdir(d)
    r = run(*_concrete("topictool synth bars -o bars2 --no-such-option 3", 0))
    assert r.exit_code == 2 and "no-such-option" in r.stderr
