"""One recipe per public data set: get the published file, extract plain inputs, run `topictool`.

``fetch.py NAME -o OUT`` makes OUT the prepared corpus directory of data set NAME, what
every experiment reads (``topictool train OUT ...``, ``DATA=OUT`` for scripts/):

``OUT/``                 corpus.json, vocab.txt, train.npz, test.npz (+ --format exports)
``OUT/data_prep.json``   what was done: the recipe, its inputs (path, URL, size, sha256),
                         settings, extraction counts and the topictool commands run

For data sets with their own train/test split (Reuters, 20 Newsgroups) OUT's train.npz is
the source's training split and test.npz its test split, in the training vocabulary.

Work files go to WORK (default ``OUT/../work/NAME``):

``WORK/source/``         the plain inputs ``topictool prepare`` reads, for data sets that come
                         as archives: ``train.txt`` / ``test.txt`` (one document per line,
                         whitespace collapsed), ``train.ids`` / ``test.ids`` (the source's id
                         of each line's document) and ``train.labels`` / ``test.labels`` (its
                         categories, space-separated; empty when it has none). AP: ``ap.dat``
                         (LdaC) and ``vocab.txt``. UCI files are read where they lie.
``WORK/train/``,         split data sets: the training part prepared alone, and the test part
``WORK/test/``           prepared with its vocabulary (``--vocab train/vocab.txt
                         --test-fraction 0``), each holding its documents as train.npz; OUT
                         joins them.

Wikipedia is the exception: OUT is a directory holding ``reference.npz`` (``topictool
cooc`` counts for ``topictool pmi``) and ``data_prep.json``.

Downloads go to a shared downloads directory (default ``OUT/../downloads``) and are reused
by later runs; see ``download.py`` for resuming and verification.
"""

import datetime
import html
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass, field, fields
from pathlib import Path

from topictool import __version__, store
from topictool.errors import InputError, TopicToolError

from .download import USER_AGENT, download, file_digests, verify_file

# WORK/source: the documents of a data set's own train/test split, as text (write_splits)
store.register_kind("data-prep-splits", ("*.txt", "*.ids", "*.labels"), "data_prep split folder")


# ---------------------------------------------------------------------------
# what a recipe is given


@dataclass(frozen=True)
class Remote:
    """A published file. ``sha256`` only when known for certain (never guessed): None means
    only the length the server announces is checked, and the digest of what arrived is
    printed and kept beside the file (``NAME.sha256``) so it can be recorded here."""

    filename: str
    url: str
    sha256: str = None
    size: str = ""  # for people: approximate download size


@dataclass
class Settings:
    out: Path  # the prepared corpus directory (Wikipedia: the reference's directory)
    sources: list = field(default_factory=list)  # --from: already downloaded files (or directories)
    download: bool = False
    downloads: Path = None  # downloads directory; default OUT/../downloads
    work: Path = None  # work files; default OUT/../work/NAME
    mirror: str = None  # fetch BASE/<file name> instead of the recorded URL
    sha256: str = None  # expected sha256 of the (single) input, overriding the recorded one
    verify: bool = True  # check inputs against recorded checksums
    force: bool = False  # replace an existing OUT (Wikipedia: OUT/reference.npz)
    # topictool prepare (the papers' preprocessing; see README)
    min_count: int = 5
    stopwords: str = None  # None: the recipe's default (english for text, none for bags)
    token_pattern: str = None  # None: topictool's default (letters, inner ' and -)
    test_fraction: float = None  # data sets without their own split; None: 0.2
    seed: int = 1
    format: str = "none"  # also export ldac / uci / both
    prepare_args: list = field(default_factory=list)  # more `topictool prepare` options
    # reuters
    split: str = None  # modapte | modlewis | modhayes
    title: bool = False  # put the <TITLE> before the body
    require_topic: bool = False  # keep only documents with at least one TOPICS category
    # 20news
    remove: tuple = ()  # also remove: footers, quotes (headers always)
    # wikipedia
    vocab: str = None  # words to count: a vocabulary file or a prepared corpus
    window: str = "10"
    workers: int = 1
    dump: str = "latest"  # dump date (YYYYMMDD) or latest
    # how to run topictool, where to report
    topictool: object = None  # callable(list of args); default: the `topictool` program
    log: object = None  # callable(str); default: print to stderr

    def __post_init__(self):
        self.out = Path(self.out).expanduser()
        self.downloads = Path(self.downloads).expanduser() if self.downloads else self.out.parent / "downloads"
        self.work = Path(self.work).expanduser() if self.work else self.out.parent / "work" / self.out.name
        self.sources = [Path(p).expanduser() for p in self.sources]
        if self.log is None:
            self.log = _stderr
        if self.topictool is None:
            self.topictool = Subprocess(default_topictool(), self.log)


@dataclass(frozen=True)
class Recipe:
    name: str
    function: object
    summary: str
    inputs: tuple = ()
    preset: dict = field(default_factory=dict)
    options: frozenset = frozenset()  # the recipe-specific Settings fields it uses (fetch.py checks)


RECIPES = {}


def register(name, summary, inputs=(), options=(), **preset):
    def wrap(function):
        RECIPES[name] = Recipe(name, function, summary, tuple(inputs), preset, frozenset(options))
        return function

    return wrap


def _plain(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def run_recipe(name, settings):
    """Run recipe ``name``; returns the record written to OUT/data_prep.json."""
    if name not in RECIPES:
        raise InputError(f"unknown data set {name!r} (known: {', '.join(RECIPES)})")
    recipe = RECIPES[name]
    if settings.sha256 and (len(recipe.inputs) > 1 or len(settings.sources) > 1):
        raise InputError(f"--sha256 names the digest of one input file; {name} reads several")
    record = {"recipe": name, "summary": recipe.summary, "inputs": [], "commands": []}
    settings.topictool = _Recorder(settings.topictool, record["commands"])
    record.update(recipe.function(settings, record, **recipe.preset) or {})
    made = settings.out / "corpus.json"
    if "corpus" not in record and made.exists():
        manifest = json.loads(made.read_text("utf-8"))
        record["corpus"] = {k: manifest[k] for k in ("D", "W", "N", "train", "test") if k in manifest}
    record["settings"] = {
        f.name: _plain(getattr(settings, f.name))
        for f in fields(settings)
        if f.name not in ("topictool", "log", "sources")
    }
    record["topictool_version"] = __version__
    record["created"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    store.write_json(settings.out / "data_prep.json", record)
    return record


# ---------------------------------------------------------------------------
# running topictool


class ToolFailed(TopicToolError):
    """A topictool command failed; it has reported why (its exit code is passed on)."""

    def __init__(self, code, command, message=None):
        super().__init__(message or f"{shlex.join(command)} failed with exit code {code}")
        self.exit_code = code
        self.command = command
        self.reported = message is None


def default_topictool():
    """$TOPICTOOL, else the `topictool` beside this Python, else `python -m topictool`."""
    if os.environ.get("TOPICTOOL"):
        return shlex.split(os.environ["TOPICTOOL"])
    beside = Path(sys.executable).parent / "topictool"
    if beside.exists():
        return [str(beside)]
    return [sys.executable, "-m", "topictool"]


class Subprocess:
    """Runs `topictool ARGS...` as a program (what the Makefile's $(TOPICTOOL) names)."""

    def __init__(self, command, log=None):
        self.command = list(command)
        self.log = log or _stderr

    def __call__(self, args):
        cmd = self.command + [str(a) for a in args]
        self.log("+ " + shlex.join(cmd))
        try:
            code = subprocess.call(cmd)
        except OSError as e:
            raise InputError(f"cannot run topictool ({e.strerror}); give --topictool PATH", cmd[0]) from None
        if code:
            raise ToolFailed(code, cmd)


class _Recorder:
    def __init__(self, runner, commands):
        self.runner, self.commands = runner, commands

    def __call__(self, args):
        self.commands.append(["topictool", *[str(a) for a in args]])
        self.runner(args)


def _prepare(s, sources, out, *, kind, stopwords, test_fraction, vocab=None, force=True, fmt=None):
    args = [
        "prepare",
        *sources,
        "-o",
        out,
        "--source-format",
        kind,
        "--min-count",
        s.min_count,
        "--stopwords",
        stopwords,
        "--test-fraction",
        test_fraction,
        "--seed",
        s.seed,
        "--format",
        fmt or "none",
    ]
    if vocab is not None:
        args += ["--vocab", vocab]
    if s.token_pattern:
        args += ["--token-pattern", s.token_pattern]
    if force:
        args.append("--force")
    s.topictool(args + list(s.prepare_args))


def _check_output(s, path=None):
    path = s.out if path is None else path
    if Path(path).exists() and not s.force:
        raise InputError("output already exists (use --force to replace it)", path)


def _no_split_option(s, name):
    if s.test_fraction is not None:
        raise InputError(f"{name} comes with its own train/test split; --test-fraction does not apply")


def prepare_with_split(s, record, *, stopwords):
    """WORK/source/{train,test}.txt -> WORK/train, WORK/test (training vocabulary) -> OUT."""
    src = s.work / "source"
    _prepare(s, [src / "train.txt"], s.work / "train", kind="lines", stopwords=stopwords, test_fraction=0)
    _prepare(
        s,
        [src / "test.txt"],
        s.work / "test",
        kind="lines",
        stopwords="none",
        test_fraction=0,
        vocab=s.work / "train" / "vocab.txt",
    )
    record["corpus"] = combine_splits(s.work / "train", s.work / "test", s.out, s.format, s.force)


def combine_splits(train_dir, test_dir, out, fmt="none", force=False):
    """One prepared directory from two: train.npz of ``train_dir`` and (as test.npz) of ``test_dir``."""
    from topictool.corpus.prepare import save_corpus_dir
    from topictool.corpus.prepared import load_prepared

    train, test = load_prepared(train_dir, "train"), load_prepared(test_dir, "train")
    if train.vocab != test.vocab:
        raise InputError(
            f"the test part was not prepared with the training vocabulary ({train_dir}/vocab.txt)", test_dir
        )
    made = {
        name: json.loads((Path(d) / "corpus.json").read_text("utf-8"))
        for name, d in (("train", train_dir), ("test", test_dir))
    }

    def provenance(stage, manifest):
        manifest["source"] = made["train"].get("source", []) + made["test"].get("source", [])
        manifest["options"] = made["train"].get("options", {})
        manifest["test_prepared_with_training_vocabulary"] = True
        for part in ("train", "test"):
            for key in ("empty_documents_dropped", "oov_tokens_dropped"):
                if made[part].get(key):
                    manifest.setdefault(key, {})[part] = made[part][key]

    manifest = save_corpus_dir(out, train, test, extra={"provenance": provenance}, force=force, formats=fmt)
    return {k: manifest[k] for k in ("D", "W", "N", "train", "test") if k in manifest}


# ---------------------------------------------------------------------------
# getting the input


def obtain(s, remote, record):
    """Path of the published file ``remote``: downloaded with --download, or a completed
    earlier download in the downloads directory."""
    url = f"{s.mirror.rstrip('/')}/{remote.filename}" if s.mirror else remote.url
    sha256 = None if not s.verify else (s.sha256 or remote.sha256)
    dest = s.downloads / remote.filename
    if s.download:
        download(url, dest, sha256=sha256, log=s.log)
    elif dest.exists():
        try:
            verify_file(dest, sha256)
        except InputError as e:
            raise type(e)(e.message + "; delete it to download it again", e.path) from None
    else:
        raise InputError(
            f"{remote.filename} is not downloaded yet: give --download (make: DOWNLOAD=1) to fetch "
            f"it from {url}{f' ({remote.size})' if remote.size else ''}, or --from FILE (make: FROM=FILE) "
            f"for a copy you have",
            s.downloads,
        )
    _record_input(record, dest, url, sha256)
    return dest


def given_file(s, remote, record, path=None):
    """The --from file (or unpacked directory) standing for ``remote``; checked against its
    recorded sha256 if any."""
    path = Path(path or s.sources[0])
    if not path.exists():
        raise InputError("no such file or directory", path)
    sha256 = None if not s.verify or path.is_dir() else (s.sha256 or remote.sha256)
    if sha256:
        try:
            verify_file(path, sha256)
        except InputError as e:
            raise type(e)(e.message + "; if this copy is right, use --no-verify", e.path) from None
    _record_input(record, path, None, sha256)
    return path


def input_file(s, remote, record):
    """--from FILE, else the download."""
    if s.sources:
        if len(s.sources) != 1:
            raise InputError(f"give one --from file ({remote.filename}), got {len(s.sources)}")
        return given_file(s, remote, record)
    return obtain(s, remote, record)


def _record_input(record, path, url, sha256):
    path = Path(path)
    entry = {"path": str(path.resolve())}
    if url:
        entry["url"] = url
    if path.is_file():
        entry["bytes"] = path.stat().st_size
        sidecar = path.with_name(path.name + ".sha256")
        if sha256:
            entry["sha256"] = sha256
        elif sidecar.exists():
            entry["sha256"] = sidecar.read_text("utf-8").split()[0]
        elif entry["bytes"] <= 1 << 30:
            entry["sha256"] = file_digests(path)["sha256"]
    record["inputs"].append(entry)


_ARCHIVE_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error)


def iter_archive(path, want=lambda name: True):
    """(name, bytes) of the regular files of a tar archive (any compression) or of a
    directory tree whose (relative, '/'-separated) name ``want`` accepts; sorted for a
    directory, in archive order for a tar."""
    path = Path(path)
    if path.is_dir():
        for f in sorted(path.rglob("*")):
            name = f.relative_to(path).as_posix()
            if f.is_file() and want(name):
                yield name, f.read_bytes()
        return
    try:
        tar = tarfile.open(path, "r:*")
    except _ARCHIVE_ERRORS as e:
        raise InputError(f"not a readable tar archive ({_reason(e)})", path) from None
    name = None
    with tar:
        try:
            for member in tar:
                name = member.name[2:] if member.name.startswith("./") else member.name
                if member.isfile() and want(name):
                    yield name, tar.extractfile(member).read()
        except _ARCHIVE_ERRORS as e:
            where = f" after {name}" if name else ""
            raise InputError(f"damaged archive, unreadable{where} ({_reason(e)})", path) from None


def _reason(e):
    text = " ".join(str(e).split()) or e.__class__.__name__
    return text if len(text) < 120 else text[:117] + "..."


def write_splits(directory, splits):
    """WORK/source/{part}.txt/.ids/.labels for each part: a list of (id, labels, text).
    The whole directory is replaced at once."""
    with store.staged_directory(directory, force=True, kind="data-prep-splits") as stage:
        for part, docs in splits.items():
            with (
                store.atomic_open(stage / f"{part}.txt", "w") as txt,
                store.atomic_open(stage / f"{part}.ids", "w") as ids,
                store.atomic_open(stage / f"{part}.labels", "w") as labels,
            ):
                for doc_id, doc_labels, text in docs:
                    txt.write(text + "\n")
                    ids.write(f"{doc_id}\n")
                    labels.write(" ".join(doc_labels) + "\n")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(text):
    """Control characters (Reuters' &#2; &#3; markers, C1 bytes of Latin-1 text) and
    whitespace, line breaks of every kind included, collapsed to single spaces."""
    return " ".join(_CONTROL.sub(" ", text).split())


# ---------------------------------------------------------------------------
# UCI bag of words: KOS, NIPS, Enron, NYTimes, PubMed

UCI_BASE = "https://archive.ics.uci.edu/ml/machine-learning-databases/bag-of-words/"
UCI_SIZES = {
    "kos": "about 1 MB",
    "nips": "about 2 MB",
    "enron": "about 12 MB",
    "nytimes": "about 223 MB",
    "pubmed": "about 1.7 GB",
}
UCI_NAMES = {
    "kos": "KOS blog entries",
    "nips": "NIPS full papers",
    "enron": "Enron e-mails",
    "nytimes": "New York Times news articles",
    "pubmed": "PubMed abstracts",
}


def _uci_remotes(collection):
    return (
        Remote(f"docword.{collection}.txt.gz", UCI_BASE + f"docword.{collection}.txt.gz", size=UCI_SIZES[collection]),
        Remote(f"vocab.{collection}.txt", UCI_BASE + f"vocab.{collection}.txt"),
    )


def uci_bag_of_words(s, record, collection):
    """UCI "Bag of Words": docword.X.txt.gz + vocab.X.txt, prepared as they are (the UCI
    vocabularies are already stop-worded and pruned), split by --test-fraction."""
    _check_output(s)
    docword_remote, vocab_remote = _uci_remotes(collection)
    if s.sources:
        docword, vocab = _uci_given(s, collection, record)
    else:
        docword, vocab = obtain(s, docword_remote, record), obtain(s, vocab_remote, record)
    D, W = check_uci(docword, vocab)
    s.log(f"{collection}: docword header D={D:,} W={W:,}")
    _prepare(
        s,
        [docword],
        s.out,
        kind="uci",
        vocab=vocab,
        stopwords=s.stopwords or "none",
        test_fraction=_test_fraction(s),
        force=s.force,
        fmt=s.format,
    )
    return {"layout": _LAYOUT}


def _uci_given(s, collection, record):
    """--from: the docword file (vocab beside it or a second --from), a directory holding
    both, or a zip of them (the UCI repository's bundle)."""
    names = re.compile(rf"(docword|vocab)\.{re.escape(collection)}\.txt(\.gz|\.bz2)?$")
    found = {}
    for path in s.sources:
        if not path.exists():
            raise InputError("no such file or directory", path)
        if path.is_dir():
            for f in sorted(path.iterdir()):
                m = names.match(f.name)
                if m:
                    found.setdefault(m.group(1), f)
        elif zipfile.is_zipfile(path):
            found.update({k: v for k, v in _uci_from_zip(s, path, names).items() if k not in found})
        else:
            m = names.match(path.name)
            kind = m.group(1) if m else ("vocab" if "docword" in found else "docword")
            found[kind] = path
    if "docword" not in found:
        raise InputError(f"no docword.{collection}.txt[.gz] among the --from inputs", s.sources[0])
    if "vocab" not in found:
        from topictool.corpus.uci import vocab_path_for

        beside = vocab_path_for(found["docword"])
        if beside is None or not beside.exists():
            raise InputError(f"no vocab.{collection}.txt beside it: give it as a second --from", found["docword"])
        found["vocab"] = beside
    for kind in ("docword", "vocab"):
        _record_input(record, found[kind], None, None)
    return found["docword"], found["vocab"]


def _uci_from_zip(s, path, names):
    out = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                base = info.filename.rsplit("/", 1)[-1]
                m = names.match(base)
                if m and m.group(1) not in out:
                    dest = s.work / "source" / base
                    with zf.open(info) as src, store.atomic_open(dest, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
                    out[m.group(1)] = dest
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as e:
        raise InputError(f"damaged zip file ({_reason(e)})", path) from None
    return out


def check_uci(docword, vocab):
    """(D, W) from the docword header, checked against the vocabulary's length: a wrong
    or damaged file is reported before topictool reads it all."""
    from topictool.corpus.sources import open_binary

    try:
        with open_binary(docword) as f:
            head = [f.readline() for _ in range(3)]
    except (OSError, EOFError, zlib.error) as e:
        raise InputError(f"not a readable compressed file ({_reason(e)})", docword) from None
    fields = [h.strip() for h in head]
    if not all(x.isdigit() for x in fields):
        raise InputError("not a UCI docword file: the first three lines must be D, W and NNZ", docword)
    D, W = int(fields[0]), int(fields[1])
    with open_binary(vocab) as f:
        words = sum(1 for line in f if line.strip())
    if words != W:
        raise InputError(f"has {words:,} words but {Path(docword).name} says W={W:,}", vocab)
    return D, W


for _c in UCI_SIZES:
    register(
        _c,
        f"UCI Bag of Words: {UCI_NAMES[_c]}",
        _uci_remotes(_c),
        options=("test_fraction", "stopwords", "min_count", "token_pattern", "format", "prepare_args", "seed"),
        collection=_c,
    )(uci_bag_of_words)


def _test_fraction(s):
    return 0.2 if s.test_fraction is None else s.test_fraction


# ---------------------------------------------------------------------------
# Reuters-21578, Distribution 1.0 (SGML)

REUTERS = Remote(
    "reuters21578.tar.gz",
    "https://archive.ics.uci.edu/ml/machine-learning-databases/reuters21578-mld/reuters21578.tar.gz",
    size="about 8 MB, 28 MB unpacked",
)

# split -> (attribute, training value, test value, TOPICS values admitted (None: any))
REUTERS_SPLITS = {
    "modapte": ("LEWISSPLIT", "TRAIN", "TEST", {"YES"}),
    "modlewis": ("LEWISSPLIT", "TRAIN", "TEST", {"YES", "NO"}),
    "modhayes": ("CGISPLIT", "TRAINING-SET", "PUBLISHED-TESTSET", None),
}

_SGM_NAME = re.compile(r"(?:^|/)reut2-\d{3}\.sgm$")
_REUTERS_ENTRY = re.compile(r"<REUTERS\b([^>]*)>(.*?)</REUTERS>", re.S)
_ATTRIBUTE = re.compile(r'([A-Z]+)="([^"]*)"')
_CATEGORY = re.compile(r"<D>(.*?)</D>", re.S)


@dataclass
class ReutersDoc:
    newid: int
    attributes: dict
    topics: list
    title: str
    body: str


def _element(block, tag):
    m = re.search(rf"<{tag}\b[^>]*>(.*?)</{tag}>", block, re.S)
    return m.group(1) if m else ""


def parse_reuters_sgml(text, name="?"):
    """The <REUTERS> entries of one .sgm file, entities decoded (``&lt;`` -> ``<``,
    ``&#3;`` -> a control character the tokenizer ignores)."""
    docs = []
    for m in _REUTERS_ENTRY.finditer(text):
        attributes = dict(_ATTRIBUTE.findall(m.group(1)))
        missing = [a for a in ("NEWID", "TOPICS", "LEWISSPLIT", "CGISPLIT") if a not in attributes]
        if missing or not attributes.get("NEWID", "").isdigit():
            raise InputError(
                f"<REUTERS> entry without {', '.join(missing) or 'a numeric NEWID'}",
                name,
                text.count("\n", 0, m.start()) + 1,
            )
        entry, body_text = m.group(2), _element(m.group(2), "TEXT")
        docs.append(
            ReutersDoc(
                int(attributes["NEWID"]),
                attributes,
                [html.unescape(t).strip() for t in _CATEGORY.findall(_element(entry, "TOPICS"))],
                html.unescape(_element(body_text, "TITLE")),
                html.unescape(_element(body_text, "BODY")),
            )
        )
    if "<REUTERS" in text and not docs:
        raise InputError("no complete <REUTERS>...</REUTERS> entry (a damaged file?)", name)
    return docs


def read_reuters(path):
    """All entries of reut2-000.sgm .. reut2-021.sgm in a tarball or directory, in file order.
    The files are 8-bit text, not quite UTF-8: decoded as Latin-1, which never fails."""
    docs, files = [], 0
    for name, raw in iter_archive(path, lambda n: bool(_SGM_NAME.search(n))):
        files += 1
        docs += parse_reuters_sgml(raw.decode("latin-1"), f"{path}!{name}")
    if not files:
        raise InputError("no reut2-NNN.sgm files: is this the Reuters-21578 distribution (reuters21578.tar.gz)?", path)
    return docs, files


def split_reuters(docs, split="modapte", title=False, require_topic=False):
    """{"train": [...], "test": [...]} of (NEWID, topics, one-line text), and counts."""
    attribute, train_value, test_value, admitted = REUTERS_SPLITS[split]
    parts = {"train": [], "test": []}
    counts = {"not_in_split": 0, "empty_skipped": 0, "without_topic_skipped": 0}
    for d in docs:
        value = d.attributes[attribute]
        part = "train" if value == train_value else "test" if value == test_value else None
        if part is None or (admitted is not None and d.attributes["TOPICS"] not in admitted):
            counts["not_in_split"] += 1
            continue
        if require_topic and not d.topics:
            counts["without_topic_skipped"] += 1
            continue
        text = one_line((d.title + "\n" if title else "") + d.body)
        if not text:
            counts["empty_skipped"] += 1
            continue
        parts[part].append((d.newid, d.topics, text))
    return parts, counts


@register(
    "reuters",
    'Reuters-21578 news, ModApte split (TOPICS="YES", LEWISSPLIT TRAIN/TEST)',
    (REUTERS,),
    options=("split", "title", "require_topic", "stopwords", "min_count", "token_pattern", "format", "prepare_args"),
)
def reuters(s, record, split=None):
    split = (s.split or split or "modapte").lower()
    if split not in REUTERS_SPLITS:
        raise InputError(f"--split must be one of {', '.join(REUTERS_SPLITS)}, got {split!r}")
    s.split = split
    _no_split_option(s, "Reuters-21578")
    _check_output(s)
    source = input_file(s, REUTERS, record)
    docs, files = read_reuters(source)
    parts, counts = split_reuters(docs, split, s.title, s.require_topic)
    for part in ("train", "test"):
        if not parts[part]:
            raise InputError(f"no documents in the {split} {part}ing split (of {len(docs)} entries)", source)
    write_splits(s.work / "source", parts)
    s.log(
        f"reuters: {files} .sgm files, {len(docs):,} entries; {split}: train {len(parts['train']):,}, "
        f"test {len(parts['test']):,}, not in the split {counts['not_in_split']:,}, empty skipped "
        f"{counts['empty_skipped']:,}"
        + (f", without a topic skipped {counts['without_topic_skipped']:,}" if s.require_topic else "")
    )
    prepare_with_split(s, record, stopwords=s.stopwords or "english")
    return {
        "extracted": {
            "sgm_files": files,
            "entries": len(docs),
            "train": len(parts["train"]),
            "test": len(parts["test"]),
            **counts,
        },
        "layout": _SPLIT_LAYOUT,
    }


register(
    "reuters-modlewis",
    "Reuters-21578 news, ModLewis split (TOPICS YES or NO, LEWISSPLIT TRAIN/TEST)",
    (REUTERS,),
    options=RECIPES["reuters"].options,
    split="modlewis",
)(reuters)
register(
    "reuters-modhayes",
    "Reuters-21578 news, ModHayes split (CGISPLIT TRAINING-SET/PUBLISHED-TESTSET)",
    (REUTERS,),
    options=RECIPES["reuters"].options,
    split="modhayes",
)(reuters)

_LAYOUT = {"corpus": "OUT: the prepared corpus; test.npz holds the documents --test-fraction held out"}
_SPLIT_LAYOUT = {
    "corpus": "OUT: the prepared corpus; train.npz = the source's training split, test.npz = its test split",
    "source": "WORK/source/{train,test}.{txt,ids,labels}: one document per line, its id, its labels",
    "train": "WORK/train: the training split prepared alone (its train.npz)",
    "test": "WORK/test: the test split prepared with WORK/train/vocab.txt (its train.npz)",
}


# ---------------------------------------------------------------------------
# 20 Newsgroups, "by date" version

NEWSGROUPS = Remote(
    "20news-bydate.tar.gz",
    "https://ndownloader.figshare.com/files/5975967",
    # the sha256 scikit-learn records for this file (sklearn/datasets/_twenty_newsgroups.py)
    sha256="8f1b2514ca22a5ade8fbb9cfa5727df95fa587f4c87b786e15c759fa66d95610",
    size="about 14 MB",
)
NEWSGROUPS_DIRS = {"20news-bydate-train": "train", "20news-bydate-test": "test"}

# a line that quotes another post, or introduces a quotation (as scikit-learn's remove=("quotes",))
_QUOTING_LINE = re.compile(r"writes in|writes:|wrote:|says:|said:|^In article|^Quoted from|^\||^>")


def strip_header(text):
    """The post without its mail/news header: everything up to the first blank line."""
    return text.partition("\n\n")[2]


def strip_footer(text):
    """Without the signature: what follows the last blank or all-dashes line, if that line
    is not the first (blank lines at the end ignored)."""
    lines = text.strip().split("\n")
    for i in range(len(lines) - 1, 0, -1):
        if not lines[i].strip().strip("-"):
            return "\n".join(lines[:i])
    return text


def strip_quotes(text):
    """Without lines quoting other posts ('>' or '|' first) or introducing a quote."""
    return "\n".join(line for line in text.split("\n") if not _QUOTING_LINE.search(line))


def read_newsgroups(path, remove=()):
    """{"train": [...], "test": [...]} of ("group/number", [group], one-line text), sorted by
    group and number; posts are Latin-1 (as scikit-learn reads them)."""
    parts = {"train": [], "test": []}
    empty = 0

    def want(name):
        bits = name.split("/")
        return len(bits) >= 3 and bits[-3] in NEWSGROUPS_DIRS

    for name, raw in iter_archive(path, want):
        split_dir, group, number = name.split("/")[-3:]
        text = strip_header(raw.decode("latin-1").replace("\r\n", "\n"))
        if "footers" in remove:
            text = strip_footer(text)
        if "quotes" in remove:
            text = strip_quotes(text)
        text = one_line(text)
        if not text:
            empty += 1
            continue
        parts[NEWSGROUPS_DIRS[split_dir]].append((f"{group}/{number}", [group], text))
    for part, docs in parts.items():
        if not docs:
            raise InputError(f"no posts under 20news-bydate-{part}/: is this 20news-bydate.tar.gz?", path)
        docs.sort(key=_post_order)
    return parts, empty


def _post_order(doc):
    """Group, then article number numerically (49960 before 51060 before 101551)."""
    group, number = doc[0].split("/")
    return group, int(number) if number.isdigit() else -1, number


@register(
    "20news",
    "20 Newsgroups, by-date train/test split (headers removed)",
    (NEWSGROUPS,),
    options=("remove", "stopwords", "min_count", "token_pattern", "format", "prepare_args"),
)
def newsgroups(s, record):
    asked = s.remove.split(",") if isinstance(s.remove, str) else s.remove
    remove = {r.strip().lower() for r in asked if r.strip()} - {"headers"}
    unknown = remove - {"footers", "quotes"}
    if unknown:
        raise InputError(f"--remove takes headers, footers and quotes, got {', '.join(sorted(unknown))}")
    s.remove = tuple(sorted(remove | {"headers"}))
    _no_split_option(s, "20 Newsgroups by date")
    _check_output(s)
    source = input_file(s, NEWSGROUPS, record)
    parts, empty = read_newsgroups(source, remove)
    write_splits(s.work / "source", parts)
    s.log(
        f"20news: removed {', '.join(s.remove)}; train {len(parts['train']):,} posts, test "
        f"{len(parts['test']):,}, empty skipped {empty:,}"
    )
    prepare_with_split(s, record, stopwords=s.stopwords or "english")
    return {
        "extracted": {
            "train": len(parts["train"]),
            "test": len(parts["test"]),
            "empty_skipped": empty,
            "removed": list(s.remove),
        },
        "layout": _SPLIT_LAYOUT,
    }


# ---------------------------------------------------------------------------
# AP: Blei's LDA-C example data (ap/ap.dat in LdaC, ap/vocab.txt)

AP = Remote("ap.tgz", "https://www.cs.columbia.edu/~blei/lda-c/ap.tgz", size="a few MB")


@register(
    "ap",
    "Associated Press articles from Blei's LDA-C page (LdaC + vocabulary)",
    (AP,),
    options=("test_fraction", "stopwords", "min_count", "token_pattern", "format", "prepare_args", "seed"),
)
def ap(s, record):
    _check_output(s)
    source = input_file(s, AP, record)
    wanted = {"ap.dat", "vocab.txt"}
    src = s.work / "source"
    found = set()
    for name, raw in iter_archive(source, lambda n: n.rsplit("/", 1)[-1] in wanted):
        base = name.rsplit("/", 1)[-1]
        if base in found:
            continue
        found.add(base)
        with store.atomic_open(src / base, "wb") as f:
            f.write(raw)
    missing = wanted - found
    if missing:
        raise InputError(f"no {' or '.join('ap/' + m for m in sorted(missing))} in it: is this Blei's ap.tgz?", source)
    _prepare(
        s,
        [src / "ap.dat"],
        s.out,
        kind="ldac",
        vocab=src / "vocab.txt",
        stopwords=s.stopwords or "none",
        test_fraction=_test_fraction(s),
        force=s.force,
        fmt=s.format,
    )
    return {"layout": {**_LAYOUT, "source": "WORK/source/ap.dat (LdaC), WORK/source/vocab.txt"}}


# ---------------------------------------------------------------------------
# English Wikipedia -> co-occurrence reference for `topictool pmi`

WIKIPEDIA_BASE = "https://dumps.wikimedia.org/enwiki"
WIKIPEDIA = Remote(
    "enwiki-latest-pages-articles.xml.bz2",
    f"{WIKIPEDIA_BASE}/latest/enwiki-latest-pages-articles.xml.bz2",
    size="over 20 GB",
)
_DUMP_NAME = re.compile(r"^enwiki-(\d{8}|latest)-pages-articles\.xml\.bz2$")


@register(
    "wikipedia",
    "English Wikipedia dump -> `topictool cooc` reference for a vocabulary",
    (WIKIPEDIA,),
    options=("vocab", "window", "workers", "dump", "token_pattern"),
)
def wikipedia(s, record):
    if not s.vocab:
        raise InputError("wikipedia needs --vocab (make: VOCAB=): a vocabulary file or a prepared corpus directory")
    ref = s.out / "reference.npz"
    _check_output(s, ref)
    if s.sources:
        dumps = [given_file(s, WIKIPEDIA, record, p) for p in s.sources]
        from topictool.corpus.wikipedia import is_dump

        for dump in dumps:
            if not is_dump(dump):
                raise InputError("not a MediaWiki XML dump (*-pages-articles*.xml[.bz2]), or a damaged one", dump)
    else:
        dumps = [wikipedia_dump(s, record)]
    args = [
        "cooc",
        *dumps,
        "--source-format",
        "wiki",
        "--vocab",
        s.vocab,
        "--window",
        s.window,
        "--workers",
        s.workers,
        "-o",
        ref,
    ]
    if s.token_pattern:
        args += ["--token-pattern", s.token_pattern]
    if s.force:
        args.append("--force")
    s.topictool(args)
    return {"layout": {"reference": "OUT/reference.npz (topictool pmi --reference)"}}


def wikipedia_dump(s, record):
    """The dump of --dump DATE (latest by default), checked against Wikimedia's sha1sums."""
    base = (s.mirror or WIKIPEDIA_BASE).rstrip("/")
    if not s.download:
        found = sorted(s.downloads.glob("enwiki-*-pages-articles.xml.bz2"))
        if len(found) == 1:
            _record_input(record, found[0], None, None)
            return found[0]
        if found:
            raise InputError(f"{len(found)} dumps in the downloads directory; choose one with --from", s.downloads)
        raise InputError(
            f"no dump downloaded yet: give --download (make: DOWNLOAD=1) to fetch "
            f"{base}/{s.dump}/enwiki-{s.dump}-pages-articles.xml.bz2 ({WIKIPEDIA.size}), or --from "
            f"DUMP (make: FROM=)",
            s.downloads,
        )
    date, name, sha1 = s.dump, f"enwiki-{s.dump}-pages-articles.xml.bz2", None
    sums_url = f"{base}/{s.dump}/enwiki-{s.dump}-sha1sums.txt"
    try:
        sums = _fetch_text(sums_url)
    except (urllib.error.URLError, OSError, ValueError) as e:
        s.log(f"wikipedia: warning: cannot read {sums_url} ({getattr(e, 'reason', e)}); the dump is not verified")
        sums = ""
    for line in sums.splitlines():
        bits = line.split()
        if len(bits) == 2 and _DUMP_NAME.match(bits[1]):
            sha1, name = bits[0].lower(), bits[1]
            date = _DUMP_NAME.match(name).group(1)  # latest -> the date it stands for: a stable URL
            break
    else:
        if sums:
            s.log(f"wikipedia: warning: {sums_url} lists no pages-articles.xml.bz2; the dump is not verified")
    url = f"{base}/{date}/{name}"
    dest = download(url, s.downloads / name, sha1=sha1 if s.verify else None, log=s.log)
    _record_input(record, dest, url, None)
    if sha1:
        record["inputs"][-1]["sha1"] = sha1
    return dest


def _fetch_text(url, timeout=60):
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(request, timeout=timeout) as r:
        return r.read(1 << 20).decode("utf-8")


# ---------------------------------------------------------------------------


def _stderr(message):
    print(message, file=sys.stderr, flush=True)


def describe():
    """Rows (name, summary, inputs) for --list."""
    return [
        (r.name, r.summary, [f"{i.url} ({i.size})" if i.size else i.url for i in r.inputs]) for r in RECIPES.values()
    ]


__all__ = [
    "RECIPES",
    "Settings",
    "Remote",
    "run_recipe",
    "parse_reuters_sgml",
    "split_reuters",
    "read_reuters",
    "read_newsgroups",
    "strip_header",
    "strip_footer",
    "strip_quotes",
    "combine_splits",
    "check_uci",
    "iter_archive",
]
