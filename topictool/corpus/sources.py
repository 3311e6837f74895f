"""Opening input files: .gz and .bz2 transparently, decoding with line numbers."""

import bz2
import gzip
import os
import zlib
from pathlib import Path

from ..errors import InputError, existing_file


def strip_compression(name):
    """'x.ldac.gz' -> 'x.ldac'."""
    name = str(name)
    for ext in (".gz", ".bz2"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def open_binary(path):
    """Open a (possibly compressed) file for binary reading; InputError if missing."""
    path = existing_file(path)
    try:
        if path.name.endswith(".gz"):
            return CheckedStream(gzip.open(path, "rb"), path, "gzip")
        if path.name.endswith(".bz2"):
            return CheckedStream(bz2.open(path, "rb"), path, "bzip2")
        return open(path, "rb")
    except OSError as e:
        raise InputError(f"cannot open: {e.strerror or e}", path) from None


#: what a damaged or fake compressed stream raises while it is read
DECOMPRESSION_ERRORS = (OSError, EOFError, zlib.error, ValueError)


class CheckedStream:
    """A decompressing binary stream whose read errors (a truncated or fake .gz/.bz2)
    are InputErrors naming the file, not tracebacks."""

    def __init__(self, f, path, what):
        self._f, self.path, self.what = f, Path(path), what

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except DECOMPRESSION_ERRORS as e:
            if isinstance(e, InputError):
                raise
            raise InputError(
                f"not a readable compressed file (damaged, or not {self.what} data: {e})", self.path
            ) from None

    def read(self, *args):
        return self._call(self._f.read, *args)

    def readline(self, *args):
        return self._call(self._f.readline, *args)

    def readlines(self, *args):
        return self._call(self._f.readlines, *args)

    def __iter__(self):
        while True:
            line = self.readline()
            if not line:
                return
            yield line

    def tell(self):
        return self._f.tell()

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_lines(path, encoding="utf-8", errors="strict"):
    """Yield (line number, decoded line without newline); one clear error on bad bytes."""
    with open_binary(path) as f:
        lineno = 0
        try:
            for lineno, line in decode_lines(f, path, encoding, errors):
                yield lineno, line
        except (OSError, EOFError, ValueError) as e:
            if isinstance(e, InputError):
                raise
            raise InputError(f"cannot read (damaged compressed data?): {e}", path, lineno + 1) from None


def decode_lines(f, path, encoding="utf-8", errors="strict"):
    """(line number, decoded line without newline) of a binary stream, split at b"\\n"; bad bytes
    are reported as in ``path`` at their line."""
    for lineno, raw in enumerate(f, 1):
        yield lineno, decode(raw, path, lineno, encoding, errors).rstrip("\r\n")


def decode(raw, path, lineno, encoding="utf-8", errors="strict"):
    try:
        return raw.decode(encoding, errors)
    except UnicodeDecodeError as e:
        line = lineno + raw[: e.start].count(b"\n")
        raise InputError(
            f"undecodable bytes for encoding {encoding} at byte {e.start} of the line "
            f"(use --encoding, or --errors replace|ignore)",
            path,
            line,
        ) from None
    except LookupError:
        raise InputError(f"unknown encoding {encoding!r}") from None


def file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
