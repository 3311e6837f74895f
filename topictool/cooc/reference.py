"""The reference file (REF.npz): writing it with the big pair arrays streamed from run
files, and loading it with those arrays memory-mapped."""

import json
import shutil
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import store
from ..errors import InputError

FORMAT = "topictool-cooc"
FORMAT_VERSION = 1


# ----------------------------------------------------------------------------
# the output file


def write_reference(out, small, big):
    """Write REF.npz atomically: ``small`` arrays, then ``big`` ones streamed from raw int64 files."""
    with store.atomic_open(out, "wb") as f:
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, arr in small.items():
                arr = np.asarray(arr)
                if arr.dtype == object:
                    raise TypeError(f"array {name!r} has dtype object")
                with zf.open(name + ".npy", "w", force_zip64=True) as m:
                    np.lib.format.write_array(m, arr, allow_pickle=False)
            for name in ("pair_keys", "pair_counts"):
                path = big.get(name)
                n = path.stat().st_size // 8 if path is not None else 0
                header = {"descr": np.lib.format.dtype_to_descr(np.dtype("<i8")), "fortran_order": False, "shape": (n,)}
                with zf.open(name + ".npy", "w", force_zip64=True) as m:
                    np.lib.format.write_array_header_2_0(m, header)
                    if path is not None:
                        with open(path, "rb") as src:
                            shutil.copyfileobj(src, m, 1 << 22)


@dataclass
class Reference:
    """A loaded REF.npz (``pair_keys``/``pair_counts`` possibly memory-mapped)."""

    path: str
    vocab: tuple
    word_counts: np.ndarray
    pair_keys: np.ndarray
    pair_counts: np.ndarray
    units: int
    documents: int
    tokens: int
    window: object
    meta: dict

    @property
    def W(self):
        return len(self.vocab)

    def pair_count(self, i, j):
        """Number of units holding both words i and j (vocabulary ids; 0 if i == j is not asked)."""
        return self.pair_counts_of(np.array([i]), np.array([j]))[0]

    def pair_counts_of(self, i, j):
        """Vectorised: units holding both i[n] and j[n] (0 where never together or i == j)."""
        i = np.asarray(i, np.int64)
        j = np.asarray(j, np.int64)
        lo = np.minimum(i, j)
        hi = np.maximum(i, j)
        keys = lo * self.W + hi
        out = np.zeros(len(keys), np.int64)
        if len(self.pair_keys) == 0 or len(keys) == 0:
            return out
        pos = np.searchsorted(self.pair_keys, keys)
        ok = pos < len(self.pair_keys)
        ok[ok] = np.asarray(self.pair_keys[pos[ok]]) == keys[ok]
        ok &= lo != hi
        out[ok] = np.asarray(self.pair_counts[pos[ok]])
        return out


_REQUIRED = ("word_counts", "pair_keys", "pair_counts", "units", "meta")  # and vocab_utf8 (or vocab)


def load_reference(path, mmap=True):
    """Read a REF.npz written by ``cooc``; InputError naming the file on any problem."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", path)
    arrays = None
    if mmap:
        arrays = _load_mapped(path)
    if arrays is None:
        arrays = store.load_npz(path, required=_REQUIRED)
    missing = [k for k in _REQUIRED if k not in arrays]
    if missing:
        raise InputError(
            f"not a co-occurrence reference (missing {', '.join(missing)}; make one with `topictool cooc`)", path
        )
    try:
        meta = json.loads(str(arrays["meta"]))
    except ValueError:
        raise InputError("meta is not valid JSON (damaged reference?)", path) from None
    if meta.get("format") != FORMAT:
        raise InputError(f"not a co-occurrence reference (format {meta.get('format')!r})", path)
    vocab = store.decode_words(arrays, "vocab", path)
    W = len(vocab)
    wc = np.asarray(arrays["word_counts"]).astype(np.int64)
    keys, counts = arrays["pair_keys"], arrays["pair_counts"]
    if wc.shape != (W,) or keys.ndim != 1 or keys.shape != counts.shape:
        raise InputError("array shapes do not agree (damaged reference?)", path)
    if keys.dtype.kind != "i" or counts.dtype.kind != "i":
        raise InputError("pair arrays are not integers (damaged reference?)", path)
    if len(keys) and (int(keys[0]) < 1 or int(keys[-1]) >= W * W):
        raise InputError("pair keys outside the vocabulary (damaged reference?)", path)
    window = int(arrays["window"]) if "window" in arrays else meta.get("window")
    return Reference(
        str(path),
        vocab,
        wc,
        keys,
        counts,
        int(arrays["units"]),
        int(arrays["documents"]) if "documents" in arrays else meta.get("documents", 0),
        int(arrays["tokens"]) if "tokens" in arrays else meta.get("tokens", 0),
        "doc" if window == 0 else window,
        meta,
    )


def _load_mapped(path):
    """Arrays of an uncompressed .npz with the big ones memory-mapped; None if that fails."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = {i.filename[:-4]: i for i in zf.infolist() if i.filename.endswith(".npy")}
            out = {}
            for name, info in infos.items():
                if name in ("pair_keys", "pair_counts") and info.compress_type == zipfile.ZIP_STORED:
                    out[name] = None
                else:
                    with zf.open(info) as m:
                        out[name] = np.lib.format.read_array(m, allow_pickle=False)
        with open(path, "rb") as f:
            for name in [n for n, v in out.items() if v is None]:
                info = infos[name]
                f.seek(info.header_offset)
                local = f.read(30)
                if local[:4] != b"PK\x03\x04":
                    return None
                fn_len, extra_len = struct.unpack("<HH", local[26:30])
                start = info.header_offset + 30 + fn_len + extra_len
                f.seek(start)
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
                else:
                    return None
                if dtype.hasobject or fortran or len(shape) != 1:
                    return None
                offset = f.tell()
                if offset + shape[0] * dtype.itemsize > start + info.file_size:
                    return None
                out[name] = (
                    np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)
                    if shape[0]
                    else np.zeros(0, dtype)
                )
        return out
    except Exception:  # noqa: BLE001 - fall back to the plain loader, which names the problem
        return None
