"""Plain-text sources: a directory of files, a .zip of files, or one document per line."""

import fnmatch
import os
import zipfile
from pathlib import Path

from ..errors import InputError
from .sources import decode, read_lines


def iter_text_documents(path, kind, encoding="utf-8", errors="strict", include="*"):
    """Yield document texts from ``path``.

    kind: 'dir' (one document per file, recursive, sorted), 'zip' (one per
    member file, sorted), 'lines' (one per line).
    """
    path = Path(path)
    if kind == "lines":
        for _, line in read_lines(path, encoding, errors):
            yield line
    elif kind == "dir":
        for f in _walk(path, include):
            try:
                raw = f.read_bytes()
            except OSError as e:
                raise InputError(f"cannot read: {e.strerror}", f) from None
            yield decode(raw, f, 1, encoding, errors)
    elif kind == "zip":
        try:
            zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as e:
            raise InputError(f"not a readable zip file: {e}", path) from None
        with zf:
            names = sorted(i.filename for i in zf.infolist() if not i.is_dir() and _included(i.filename, include))
            for name in names:
                try:
                    raw = zf.read(name)
                except (zipfile.BadZipFile, OSError, EOFError) as e:
                    raise InputError(f"damaged member {name}: {e}", path) from None
                yield decode(raw, f"{path}!{name}", 1, encoding, errors)
    else:  # pragma: no cover - callers pass a known kind
        raise ValueError(kind)


def _included(name, include):
    base = name.rsplit("/", 1)[-1]
    return not base.startswith(".") and (fnmatch.fnmatch(base, include) or fnmatch.fnmatch(name, include))


def _walk(root, include):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if _included(rel, include):
                out.append(Path(dirpath) / name)
    return sorted(out)
