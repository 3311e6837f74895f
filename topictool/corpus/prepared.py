"""The prepared corpus directory (DESIGN.md) and `load_corpus`, which accepts any CORPUS."""

import json
from pathlib import Path

import numpy as np

from .. import store
from ..errors import DamagedFileError, InputError
from .corpus import Corpus, concat
from .sources import open_binary, strip_compression

FORMAT_VERSION = 1


def save_arrays(corpus, path):
    store.write_npz(
        path,
        doc_ptr=corpus.doc_ptr.astype(np.int64),
        word_ids=corpus.word_ids.astype(np.int32),
        counts=corpus.counts.astype(np.int32),
    )


def write_names(names, path):
    """Document names, one a line (line i names document i); tabs and line breaks in a name
    become spaces."""
    text = "".join(" ".join(str(n).split("\t")).replace("\n", " ").replace("\r", " ") + "\n" for n in names)
    store.write_text(path, text)


def read_names(directory, part="train", D=None):
    """The names of a prepared corpus's documents, or None (synthetic corpora, older corpora)."""
    path = Path(directory) / f"{part}.names.txt"
    if not Path(directory).is_dir() or not path.is_file():
        return None
    names = path.read_text(encoding="utf-8").split("\n")[:-1]
    if D is not None and len(names) != D:
        raise InputError(f"{len(names)} names for {D} documents", path)
    return names


def load_prepared(directory, part="train"):
    directory = Path(directory)
    manifest_path = directory / "corpus.json"
    try:
        manifest = json.loads(manifest_path.read_text("utf-8"))
    except FileNotFoundError:
        raise InputError("not a prepared corpus directory (no corpus.json)", directory) from None
    except ValueError as e:
        raise DamagedFileError(f"not valid JSON: {e}", manifest_path) from None
    if manifest.get("format_version", 0) > FORMAT_VERSION:
        raise InputError(f"written by a newer topictool (format {manifest.get('format_version')})", manifest_path)
    from .vocabulary import read_vocab

    vocab = read_vocab(directory / "vocab.txt")
    shards = _shards(manifest, part, manifest_path)
    if shards is not None:  # prepare --shards: the part is the shards' documents in order
        corpus = concat([_load_shard(directory, s, vocab) for s in shards], vocab)
        npz = directory / shards[0]["file"]
    else:
        npz = directory / f"{part}.npz"
        if not npz.exists():
            what = "no test split (prepared with --test-fraction 0?)" if part == "test" else f"no {part}.npz"
            raise InputError(what, directory)
        corpus = _load_arrays(npz, vocab)
    expected = (manifest.get(part) or {}).get("sha256")
    if expected and expected != corpus.sha256():
        raise DamagedFileError("checksum does not match corpus.json (damaged or edited)", npz)
    return corpus


def _load_arrays(npz, vocab):
    a = store.load_npz(npz, required=("doc_ptr", "word_ids", "counts"))
    corpus = Corpus(a["doc_ptr"].astype(np.int64), a["word_ids"].astype(np.int32), a["counts"].astype(np.int32), vocab)
    return corpus.check(npz)


# -- shards (prepare --shards N): the training split as N files of contiguous documents ---------

SHARD_NAME = "{part}.shard-{index:04d}.npz"


def _shards(manifest, part, manifest_path):
    """The shard list of ``part`` in corpus.json (dicts: file, D, N, sha256), or None."""
    shards = (manifest.get(part) or {}).get("shards")
    if shards is None:
        return None
    ok = (
        isinstance(shards, list)
        and shards
        and all(
            isinstance(s, dict) and isinstance(s.get("file"), str) and "/" not in s["file"] and "D" in s and "N" in s
            for s in shards
        )
    )
    if not ok:
        raise DamagedFileError(f"the shard list of {part} is not a list of {{file, D, N, sha256}}", manifest_path)
    return shards


def _load_shard(directory, shard, vocab):
    npz = Path(directory) / shard["file"]
    if not npz.exists():
        raise InputError("shard file missing (the prepared corpus is incomplete)", npz)
    corpus = _load_arrays(npz, vocab)
    if corpus.D != int(shard["D"]) or corpus.N != int(shard["N"]):
        raise DamagedFileError("shard sizes do not match corpus.json (damaged or edited)", npz)
    if shard.get("sha256") and shard["sha256"] != corpus.sha256():
        raise DamagedFileError("checksum does not match corpus.json (damaged or edited)", npz)
    return corpus


def shard_table(path, part="train"):
    """The shards of a prepared corpus's part (list of dicts: file, D, N, sha256), or None when the
    corpus is one file (or not a prepared directory)."""
    directory = Path(path)
    manifest_path = directory / "corpus.json"
    if not directory.is_dir() or not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text("utf-8"))
    except ValueError as e:
        raise DamagedFileError(f"not valid JSON: {e}", manifest_path) from None
    return _shards(manifest, part, manifest_path)


def load_shards(path, part, indices):
    """Only the shards ``indices`` (a contiguous range) of a sharded part, concatenated: (Corpus,
    {D, N, sha256} of the whole part). What an MPI rank reads: never the whole corpus."""
    from .vocabulary import read_vocab

    directory = Path(path)
    manifest_path = directory / "corpus.json"
    manifest = json.loads(manifest_path.read_text("utf-8"))
    shards = _shards(manifest, part, manifest_path)
    vocab = read_vocab(directory / "vocab.txt")
    local = concat([_load_shard(directory, shards[i], vocab) for i in indices], vocab)
    info = manifest.get(part) or {}
    return local, {"D": int(info.get("D", 0)), "N": int(info.get("N", 0)), "sha256": info.get("sha256", "")}


def load_corpus(path, part="train", vocab=None, encoding="utf-8"):
    """Any CORPUS of DESIGN.md: a prepared directory, or an LdaC / UCI file (+ vocabulary).

    ``part`` selects train or test of a prepared directory; a bare file is one part.
    """
    path = Path(path)
    if path.is_dir():
        return load_prepared(path, part)
    kind = detect_bag_format(path)
    if kind is None:
        raise InputError("not a corpus: expected a prepared directory, an LdaC file or a UCI docword file", path)
    return read_bag_file(path, kind, vocab, encoding)


def detect_bag_format(path):
    """'ldac', 'uci' or None, from the name and the first lines."""
    from .ldac import looks_like_ldac
    from .uci import looks_like_uci

    first = []
    with open_binary(path) as f:
        for _ in range(5):
            raw = f.readline()
            if not raw:
                break
            first.append(raw.decode("utf-8", "replace"))
    name = strip_compression(Path(path).name)
    if looks_like_uci(name, first):
        return "uci"
    if name.endswith(".ldac") or (first and looks_like_ldac(first)):
        return "ldac"
    return None


def find_vocab_beside(path, kind):
    path = Path(path)
    if kind == "uci":
        from .uci import vocab_path_for

        p = vocab_path_for(path)
        return p if p is not None and p.exists() else None
    stem = strip_compression(path.name)
    stem = stem[: -len(".ldac")] if stem.endswith(".ldac") else stem
    for cand in (f"{stem}.vocab", f"{stem}.words", f"{stem}.vocab.txt", "vocab.txt"):
        if (path.parent / cand).exists():
            return path.parent / cand
    return None


def read_bag_file(path, kind, vocab=None, encoding="utf-8"):
    from .ldac import read_ldac
    from .uci import read_uci
    from .vocabulary import read_vocab

    vocab_path = Path(vocab) if vocab is not None else find_vocab_beside(path, kind)
    if vocab_path is None:
        raise InputError(f"no vocabulary found beside this {kind.upper()} file; give --vocab", path)
    words = read_vocab(vocab_path, encoding)
    return read_ldac(path, words, encoding) if kind == "ldac" else read_uci(path, words)
