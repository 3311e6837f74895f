"""Plain-text sources: a directory of files, a .zip of files, or one document per line."""

import fnmatch
import io
import os
import zipfile
from pathlib import Path

from ..errors import InputError
from .sources import decode, decode_lines, file_size, read_lines

#: members of a directory or zip that are plainly not documents of the collection (file names,
#: matched without regard to case); hidden files and macOS's __MACOSX folders are skipped too
NOT_DOCUMENTS = ("readme*", "license*", "licence*", "copying*", "changelog*", "thumbs.db", "desktop.ini")


def not_a_document(name):
    """True when the member ``name`` (a relative path, '/'-separated) is not a document."""
    parts = name.replace(os.sep, "/").split("/")
    if "__MACOSX" in parts or any(p.startswith(".") for p in parts):
        return True
    base = parts[-1].lower()
    return any(fnmatch.fnmatch(base, pattern) for pattern in NOT_DOCUMENTS)


#: kinds of text source whose documents are lines: a file, or the member files of a directory or zip
LINE_KINDS = ("lines", "dir-lines", "zip-lines")


def lines_kind(path):
    """The kind of ``path`` read a document per line: 'dir-lines' or 'zip-lines' (every member
    file's lines, as NLTK's webtext is laid out) or 'lines' (one file). A zip read as one file of
    lines would be its compressed bytes, which latin-1 decodes without a word of complaint."""
    path = Path(path)
    if path.is_dir():
        return "dir-lines"
    if _starts_as_zip(path) and zipfile.is_zipfile(path):
        return "zip-lines"
    return "lines"


def _starts_as_zip(path):
    """True when ``path`` is a regular file (a FIFO would be consumed) that begins as a zip does.
    is_zipfile alone looks for its end record anywhere in the last 64 KB, which a large .gz or
    .bz2 file of lines can hold by chance."""
    if not path.is_file():
        return False
    try:
        with open(path, "rb") as f:
            return f.read(4) in (b"PK\x03\x04", b"PK\x05\x06")
    except OSError:
        return False


class TextSource:
    """The documents of one text source, named by their file (or line) and read in order.

    kind: 'dir' (one document per file, recursive, sorted), 'zip' (one per member file,
    sorted), 'lines' (one per line), 'dir-lines' and 'zip-lines' (one per line of every member
    file, in the members' order; named 'member:line'). Files not matching ``include`` are not
    read; files that are plainly not documents (``not_a_document``) are skipped and listed in
    ``skipped``."""

    def __init__(self, path, kind, encoding="utf-8", errors="strict", include="*"):
        self.path, self.kind = Path(path), kind
        self.encoding, self.errors, self.include = encoding, errors, include
        self.skipped = []
        self.bytes_read = 0  # raw bytes of the documents read so far (a lines file: its size once read)
        self._members = None

    @property
    def per_line(self):
        """True when the documents are lines, not files."""
        return self.kind in LINE_KINDS

    @property
    def container(self):
        """'dir' or 'zip' for the kinds that read member files, 'lines' for one file."""
        return self.kind.removesuffix("-lines")

    def members(self):
        """The member files of a directory or zip, listed now (prepare lists them before it
        creates its output, which may lie inside the directory); None for a lines file."""
        if self._members is None and self.container == "dir":
            self._members = self._select(_walk(self.path))
        elif self._members is None and self.container == "zip":
            with self._open_zip() as zf:
                self._members = self._select(i.filename for i in zf.infolist() if not i.is_dir())
        return self._members

    def _open_zip(self):
        try:
            return zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError) as e:
            raise InputError(f"not a readable zip file: {e}", self.path) from None

    def __iter__(self):
        """(name, text) of every document."""
        path = self.path
        if self.kind == "lines":
            for lineno, line in read_lines(path, self.encoding, self.errors):
                yield f"{path.name}:{lineno}", line
            self.bytes_read += file_size(path)
            return
        for name, where, raw in self._member_bytes():
            self.bytes_read += len(raw)
            if not self.per_line:
                yield name, decode(raw, where, 1, self.encoding, self.errors)
                continue
            # split and decoded as read_lines does a file, so a member reads as that file would alone
            for lineno, line in decode_lines(io.BytesIO(raw), where, self.encoding, self.errors):
                yield f"{name}:{lineno}", line

    def _member_bytes(self):
        """(name, the path errors name, raw bytes) of every member file of a directory or zip."""
        path = self.path
        if self.container == "dir":
            for name in self.members():
                f = path / name
                try:
                    raw = f.read_bytes()
                except OSError as e:
                    raise InputError(f"cannot read: {e.strerror}", f) from None
                yield name, f, raw
        elif self.container == "zip":
            names = self.members()
            with self._open_zip() as zf:
                for name in names:
                    try:
                        raw = zf.read(name)
                    except (zipfile.BadZipFile, OSError, EOFError) as e:
                        raise InputError(f"damaged member {name}: {e}", path) from None
                    yield name, f"{path}!{name}", raw
        else:  # pragma: no cover - callers pass a known kind
            raise ValueError(self.kind)

    def _select(self, names):
        """The included members in sorted order; the ones that are not documents go to skipped."""
        chosen = []
        for name in sorted(names):
            if not (fnmatch.fnmatch(name.rsplit("/", 1)[-1], self.include) or fnmatch.fnmatch(name, self.include)):
                continue
            (self.skipped if not_a_document(name) else chosen).append(name)
        return chosen


def documents_per_folder(names):
    """{folder: documents} by the first folder below the documents' common folder ('.' for
    files directly in it): the movie reviews' zip gives {'neg': 1000, 'pos': 1000}."""
    counter = FolderCounter()
    for name in names:
        counter.add(name)
    return counter.result()


class FolderCounter:
    """documents_per_folder counted as the names go by: only one count per distinct folder is
    kept (prepare streams its documents and does not hold their names)."""

    def __init__(self):
        self.per_parent = {}

    def add(self, name):
        parent = tuple(name.split("/")[:-1])
        self.per_parent[parent] = self.per_parent.get(parent, 0) + 1

    def result(self):
        if not self.per_parent:
            return {}
        common = os.path.commonprefix(list(self.per_parent))
        counts = {}
        for parent, n in self.per_parent.items():
            # a file directly in the common folder counts as '.'; else its first folder below it
            folder = parent[len(common)] if len(parent) > len(common) else "."
            counts[folder] = counts.get(folder, 0) + n
        return dict(sorted(counts.items()))


def _walk(root):
    """Relative '/'-separated names of the files below ``root``."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        # hidden folders (.git, ...) and macOS metadata are not walked at all
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__MACOSX")
        for name in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return out
