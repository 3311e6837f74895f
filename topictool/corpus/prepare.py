"""`topictool prepare`: sources -> pruned vocabulary -> train/test split -> prepared directory."""

import zipfile
from array import array
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .. import __version__, store
from ..errors import InputError
from . import stream
from .corpus import Corpus, concat, token_blocks
from .prepared import (
    FORMAT_VERSION,
    SHARD_NAME,
    detect_bag_format,
    read_bag_file,
    save_arrays,
    write_names,
)
from .sources import file_size
from .split import split_documents
from .stream import Part
from .text import TextSource, documents_per_folder, lines_kind
from .tokenizer import DEFAULT_PATTERN, Tokenizer, load_stopwords
from .vocabulary import drop_empty_documents, prune, read_vocab, select_words, write_vocab


@dataclass
class PrepareOptions:
    format: str = "none"  # none | ldac | uci | both: exports beside the arrays
    stopwords: str = None  # english | none | FILE; default english for text, none for bags
    min_count: int = 5
    min_df: int = 1
    max_df: float = 1.0
    test_fraction: float = 0.2
    seed: int = 1
    vocab: str = None  # fixed vocabulary for text; the vocabulary of an LdaC/UCI source
    encoding: str = "utf-8"
    errors: str = "strict"
    token_pattern: str = DEFAULT_PATTERN
    source_format: str = "auto"  # auto | files | lines | ldac | uci
    include: str = "*"  # file-name pattern for directories and zips


def source_kind(path, source_format="auto"):
    """'dir', 'zip', 'lines', 'dir-lines', 'zip-lines', 'ldac' or 'uci'."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file or directory", path)
    if source_format == "files":
        return "dir" if path.is_dir() else "zip"
    if source_format == "lines":
        return lines_kind(path)
    if source_format in ("ldac", "uci"):
        return source_format
    if path.is_dir():
        return "dir"
    if path.suffix.lower() == ".zip" and zipfile.is_zipfile(path):
        return "zip"
    return detect_bag_format(path) or "lines"


def build_corpus(sources, opts):
    """Read every source into one Corpus and apply the vocabulary options.

    Returns (corpus, facts) where facts records what was dropped, and ``facts["names"]``
    names each document (its file, zip member or ``file:line``).
    """
    kinds = [source_kind(s, opts.source_format) for s in sources]
    bags = [k in ("ldac", "uci") for k in kinds]
    if any(bags) and not all(bags):
        raise InputError("cannot mix text sources with LdaC/UCI sources in one prepare")
    facts = {}
    if all(bags):
        parts = [read_bag_file(s, k, opts.vocab, opts.encoding) for s, k in zip(sources, kinds)]
        if any(p.vocab != parts[0].vocab for p in parts[1:]):
            raise InputError("LdaC/UCI sources must share one vocabulary", sources[1])
        corpus = concat(parts)
        names = [f"{Path(s).name}:{i + 1}" for s, p in zip(sources, parts) for i in range(p.D)]
        stop = load_stopwords(opts.stopwords or "none", opts.encoding)
        keep = np.array([w not in stop for w in corpus.vocab], dtype=bool)
        corpus = prune(corpus, opts.min_count, opts.min_df, opts.max_df, keep=keep)
    else:
        fixed = read_vocab(opts.vocab, opts.encoding) if opts.vocab else None
        stop = frozenset() if fixed else load_stopwords(opts.stopwords or "english", opts.encoding)
        corpus, names, text_facts = read_text(sources, kinds, opts, fixed, stop)
        facts.update(text_facts)
        if fixed is None:
            corpus = prune(corpus, opts.min_count, opts.min_df, opts.max_df)
    W_before = corpus.W
    kept = np.diff(corpus.doc_ptr) > 0
    corpus, dropped = drop_empty_documents(corpus)
    facts["empty_documents_dropped"] = dropped
    facts["names"] = [n for n, k in zip(names, kept) if k]
    if corpus.D == 0 or corpus.N == 0 or W_before == 0:
        raise InputError(
            f"the corpus is empty after reading and pruning (min-count {opts.min_count}, "
            f"min-df {opts.min_df}, max-df {opts.max_df}, stop words {opts.stopwords or 'default'})",
            sources[0],
        )
    return corpus, facts


def read_text(sources, kinds, opts, fixed=None, stop=frozenset()):
    """Text sources tokenised as prepare does: (corpus, document names, facts). With ``fixed``
    (a vocabulary) other words are dropped and counted (facts["oov_tokens_dropped"])."""
    builder = _BagBuilder(fixed, stop)
    tokenize = Tokenizer(opts.token_pattern)
    names, files, skipped = [], [], []
    for s, k in zip(sources, kinds):
        source = TextSource(s, k, opts.encoding, opts.errors, opts.include)
        for name, text in source:
            builder.add(tokenize(text))
            names.append(name)
            if not source.per_line:
                files.append(name)
        skipped += source.skipped
    facts = {"oov_tokens_dropped": builder.oov}
    if files:
        facts["documents_per_folder"] = documents_per_folder(files)
    # what was passed over is said, not silently dropped (the first names, and how many)
    facts["skipped_files"] = {"count": len(skipped), "names": skipped[:20]}
    return builder.corpus(), names, facts


def prepare(sources, out, opts, force=False, shards=1, threads=1):
    """Build the prepared corpus directory ``out``; returns its manifest. With ``shards`` > 1 the
    training split is written as that many files of contiguous documents with ~equal tokens
    (train.shard-0000.npz, ...; corpus.json lists them) in place of train.npz, so that each MPI
    rank reads only its own.

    Text is streamed (corpus/stream.py): memory holds the vocabulary and a few numbers per
    document, not the tokens; ``threads`` worker processes tokenise (the output is the same for
    any number). LdaC/UCI sources are read whole, as before. The returned manifest also says
    ``input_bytes`` (read from the sources; not in corpus.json)."""
    if not sources:
        raise InputError("no SOURCE given")
    if int(shards) < 1:
        raise InputError(f"--shards must be at least 1, got {shards}")
    if int(threads) < 1:
        raise InputError(f"--threads must be at least 1, got {threads}")
    if opts.format not in ("none", "ldac", "uci", "both"):
        raise InputError(f"--format must be ldac, uci, both or none, got {opts.format!r}")
    Tokenizer(opts.token_pattern)  # a bad pattern is refused before any source is read
    inputs = [*sources, opts.vocab, opts.stopwords if opts.stopwords not in (None, "english", "none") else None]
    store.check_output_dir(out, force, "corpus", inputs)
    kinds = [source_kind(s, opts.source_format) for s in sources]
    bags = [k in ("ldac", "uci") for k in kinds]
    if any(bags) and not all(bags):
        raise InputError("cannot mix text sources with LdaC/UCI sources in one prepare")
    if all(bags) and int(threads) > 1:
        # (refused, not ignored: LdaC/UCI files are parsed by one process)
        raise InputError(f"--threads {threads}: only text sources are tokenised in parallel; use 1 for LdaC/UCI")
    if all(bags):
        manifest = _prepare_bags(sources, out, opts, force, int(shards), inputs)
    else:
        manifest = _prepare_text(sources, kinds, out, opts, force, int(shards), int(threads), inputs)
    return manifest


def _manifest(sources, opts, D, W, N, facts):
    return {
        "format_version": FORMAT_VERSION,
        "topictool_version": __version__,
        "source": [str(Path(s).resolve()) for s in sources],
        "options": {k: v for k, v in asdict(opts).items()},
        "D": D,
        "W": W,
        "N": N,
        **facts,
    }


def _shard_pieces(train, shards):
    """{file: Part} of the training split cut into ``shards`` runs of ~equal tokens ({} for 1)."""
    if shards <= 1:
        return {}
    if shards > train.D:
        raise InputError(f"--shards {shards}: the training split has only {train.D:,} documents")
    token_ptr = np.zeros(train.D + 1, dtype=np.int64)
    np.cumsum(train.doc_tokens, out=token_ptr[1:])
    cuts = token_blocks(token_ptr, shards)
    if np.any(np.diff(cuts) == 0):
        raise InputError(f"--shards {shards}: too many shards for the training split's documents")
    return {SHARD_NAME.format(part="train", index=i): train.slice(cuts[i], cuts[i + 1]) for i in range(shards)}


def _prepare_bags(sources, out, opts, force, shards, inputs):
    """LdaC/UCI sources: read whole (they are bags already), then written as text's parts are."""
    corpus, facts = build_corpus(sources, opts)
    names = facts.pop("names")
    train_idx, test_idx = split_documents(corpus.D, opts.test_fraction, opts.seed)
    parts = {"train": Part.of(corpus.subset(train_idx))}
    part_names = {"train": [names[i] for i in train_idx]}
    if len(test_idx):
        parts["test"] = Part.of(corpus.subset(test_idx))
        part_names["test"] = [names[i] for i in test_idx]
    manifest = _manifest(sources, opts, corpus.D, corpus.W, corpus.N, facts)
    pieces = _shard_pieces(parts["train"], shards)

    def names_out(stage, name):
        write_names(part_names[name], stage / f"{name}.names.txt")

    with store.staged_directory(out, force, "corpus", inputs) as stage:
        _write_parts(stage, manifest, corpus.vocab, parts, pieces, names_out, opts)
    manifest["input_bytes"] = sum(file_size(s) for s in sources)
    return manifest


def _prepare_text(sources, kinds, out, opts, force, shards, threads, inputs):
    """Text sources, streamed: pass 1 tokenises into scratch files inside the staging
    directory, pass 2 prunes, renumbers, splits and writes (corpus/stream.py)."""
    fixed = read_vocab(opts.vocab, opts.encoding) if opts.vocab else None
    stop = frozenset() if fixed else load_stopwords(opts.stopwords or "english", opts.encoding)
    text_sources = [TextSource(s, k, opts.encoding, opts.errors, opts.include) for s, k in zip(sources, kinds)]
    for source in text_sources:
        source.members()  # listed before the output exists (it may lie inside a source directory)
    with store.staged_directory(out, force, "corpus", inputs) as stage:
        scan = None
        try:
            scan, folders = stream.scan_text(text_sources, stage, opts.token_pattern, stop, fixed, threads)
            facts = {"oov_tokens_dropped": scan.oov}
            per_folder = folders.result()
            if per_folder:
                facts["documents_per_folder"] = per_folder
            skipped = [name for source in text_sources for name in source.skipped]
            facts["skipped_files"] = {"count": len(skipped), "names": skipped[:20]}
            # the vocabulary: as prune() keeps it (word order kept), or the fixed one whole
            W_seen = len(scan.words)
            if fixed is None:
                limit = opts.max_df * scan.D if opts.max_df <= 1.0 else opts.max_df
                mask = (scan.tf >= max(opts.min_count, 1)) & (scan.df >= opts.min_df) & (scan.df <= limit)
            else:
                mask = np.ones(W_seen, dtype=bool)
            new_id = np.full(W_seen, -1, dtype=np.int64)
            new_id[mask] = np.arange(int(mask.sum()))
            vocab = tuple(w for w, m in zip(scan.words, mask) if m)
            kept = stream.kept_rows(scan, new_id)
            nonempty = np.flatnonzero(kept > 0)
            facts["empty_documents_dropped"] = scan.D - len(nonempty)
            N = int(scan.tf[mask].sum())
            if len(nonempty) == 0 or N == 0 or len(vocab) == 0:
                raise InputError(
                    f"the corpus is empty after reading and pruning (min-count {opts.min_count}, "
                    f"min-df {opts.min_df}, max-df {opts.max_df}, stop words {opts.stopwords or 'default'})",
                    sources[0],
                )
            train_idx, test_idx = split_documents(len(nonempty), opts.test_fraction, opts.seed)
            part_of = np.full(scan.D, -1, dtype=np.int8)
            part_of[nonempty[train_idx]] = 0
            part_of[nonempty[test_idx]] = 1
            split = stream.split_scan(scan, new_id, vocab, part_of, kept)
            parts = {"train": split[0]}
            if len(test_idx):
                parts["test"] = split[1]
            manifest = _manifest(sources, opts, len(nonempty), len(vocab), N, facts)
            pieces = _shard_pieces(parts["train"], shards)

            def names_out(stage, name):
                if name == "train":  # both names files at once, in one sweep of the names
                    outputs = {0: stage / "train.names.txt"}
                    if "test" in parts:
                        outputs[1] = stage / "test.names.txt"
                    stream.copy_names(scan, part_of, outputs)

            _write_parts(stage, manifest, vocab, parts, pieces, names_out, opts)
        finally:
            if scan is not None:
                stream.remove_scratch(scan)
    manifest["input_bytes"] = sum(source.bytes_read for source in text_sources)
    return manifest


def _write_parts(stage, manifest, vocab, parts, pieces, names_out, opts):
    """vocab.txt, the parts' arrays (or the training shards), names and exports; corpus.json last."""
    for name, part in parts.items():
        manifest[name] = {"D": part.D, "N": part.N, "sha256": part.sha256()}
    if pieces:
        manifest["train"]["shards"] = [{"file": f, "D": p.D, "N": p.N, "sha256": p.sha256()} for f, p in pieces.items()]
    exports = []
    write_vocab(vocab, stage / "vocab.txt")
    for name, part in parts.items():
        if name == "train" and pieces:
            for file, piece in pieces.items():
                piece.save(stage / file)
        else:
            part.save(stage / f"{name}.npz")
        names_out(stage, name)
        if opts.format in ("ldac", "both"):
            from .ldac import write_ldac_chunks

            write_ldac_chunks(part.chunks(), stage / f"{name}.ldac")
            exports.append(f"{name}.ldac")
        if opts.format in ("uci", "both"):
            from .uci import write_uci_chunks

            write_uci_chunks(
                part.chunks(), part.D, part.nnz, vocab, stage / f"docword.{name}.txt", stage / f"vocab.{name}.txt"
            )
            exports += [f"docword.{name}.txt", f"vocab.{name}.txt"]
    manifest["exports"] = exports
    store.write_json(stage / "corpus.json", manifest)


def save_corpus_dir(out, train, test=None, extra=None, force=False, formats="none"):
    """Write already built corpora as a prepared directory (used by `synth`).

    ``extra`` maps file names to callables writing into the staging directory.
    (`synth` checks its output with store.check_output_dir before generating.)
    """
    parts = {"train": train}
    if test is not None and test.D:
        parts["test"] = test
    manifest = {
        "format_version": FORMAT_VERSION,
        "topictool_version": __version__,
        "D": sum(p.D for p in parts.values()),
        "W": train.W,
        "N": sum(p.N for p in parts.values()),
    }
    with store.staged_directory(out, force, "corpus") as stage:
        write_vocab(train.vocab, stage / "vocab.txt")
        exports = []
        for name, part in parts.items():
            save_arrays(part, stage / f"{name}.npz")
            manifest[name] = {"D": part.D, "N": part.N, "sha256": part.sha256()}
            if formats in ("ldac", "both"):
                from .ldac import write_ldac

                write_ldac(part, stage / f"{name}.ldac")
                exports.append(f"{name}.ldac")
            if formats in ("uci", "both"):
                from .uci import write_uci

                write_uci(part, stage / f"docword.{name}.txt", stage / f"vocab.{name}.txt")
                exports += [f"docword.{name}.txt", f"vocab.{name}.txt"]
        manifest["exports"] = exports
        for writer in (extra or {}).values():
            writer(stage, manifest)
        store.write_json(stage / "corpus.json", manifest)
    return manifest


class _BagBuilder:
    """Streams tokenised documents into CSR buffers (no per-token objects kept)."""

    def __init__(self, fixed_vocab=None, stop=frozenset()):
        self.fixed = fixed_vocab is not None
        self.words = list(fixed_vocab) if self.fixed else []
        self.index = {w: i for i, w in enumerate(self.words)}
        self.stop = stop
        self.doc_ptr = array("q", [0])
        self.word_ids = array("i")
        self.counts = array("i")
        self.oov = 0

    def add(self, tokens):
        pairs = []
        index, stop = self.index, self.stop
        for w, n in Counter(tokens).items():
            if w in stop:
                continue
            i = index.get(w)
            if i is None:
                if self.fixed:
                    self.oov += n
                    continue
                i = index[w] = len(self.words)
                self.words.append(w)
            pairs.append((i, n))
        pairs.sort()
        for i, n in pairs:
            self.word_ids.append(i)
            self.counts.append(n)
        self.doc_ptr.append(len(self.word_ids))

    def corpus(self):
        return Corpus(
            np.frombuffer(self.doc_ptr, np.int64).copy(),
            np.frombuffer(self.word_ids, np.int32).copy(),
            np.frombuffer(self.counts, np.int32).copy(),
            tuple(self.words),
        )


__all__ = ["PrepareOptions", "prepare", "build_corpus", "save_corpus_dir", "select_words"]
