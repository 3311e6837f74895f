"""Kernels shared by the model families, and the key of every topictool kernel's numba cache.

numba keys a function's cache (``cache=True``) on its own source file only. A kernel that calls or
inlines a jitted function of another file (``threads.take_part``, ``sums.sum8``, the RNG) keeps
the copy it was compiled with until its own file changes: after ``git pull`` in an editable
install that changed only the other file, the old code runs on (a changed lock protocol hung a
64-thread sweep that way). So, before any kernel is decorated, this package puts its own cache
locators in front of numba's: the same places and files, keyed on the contents of every numba
module of topictool together. Any change to one of them recompiles every kernel once.

Every module that decorates a cached kernel imports this package first (a kernel module under
``kernels/`` does so by being in it); tests/test_kernel_cache.py checks each in a fresh process.
"""

import functools
import hashlib
from pathlib import Path

import numba.core.caching as _caching

_ROOT = Path(__file__).resolve().parents[1]


def numba_sources():
    """(path, source bytes) of every topictool module that uses numba, in path order."""
    for path in sorted(_ROOT.rglob("*.py")):
        try:
            source = path.read_bytes()
        except OSError:  # not a module Python could import either (a dangling link, say)
            continue
        if b"numba" in source:
            yield path, source


@functools.cache
def package_stamp():
    """A digest of the sources of every topictool module that uses numba (read once a process)."""
    digest = hashlib.sha256()
    for path, source in numba_sources():
        digest.update(str(path.relative_to(_ROOT)).encode() + b"\0" + hashlib.sha256(source).digest())
    return digest.hexdigest()


def _in_package(py_file):
    try:
        Path(py_file).resolve().relative_to(_ROOT)
    except (OSError, ValueError):
        return False
    return True


def _package_keyed(base):
    """numba's locator ``base``, for topictool's files only, with the package's stamp added."""

    class Locator(base):
        _topictool = True  # (registered once: _register)

        @classmethod
        def from_function(cls, py_func, py_file):
            return super().from_function(py_func, py_file) if _in_package(py_file) else None

        def get_source_stamp(self):
            return super().get_source_stamp(), package_stamp()

    Locator.__name__ = Locator.__qualname__ = f"Topictool{base.__name__}"
    return Locator


def _register():
    """Each package-keyed locator goes just before the numba locator it extends, so numba's order
    of preference (NUMBA_CACHE_DIR, then __pycache__, then the user's cache) is kept."""
    classes = getattr(getattr(_caching, "CacheImpl", None), "_locator_classes", None)
    if classes is None or any(getattr(c, "_topictool", False) for c in classes):
        return  # another numba layout (caches keyed as numba keys them), or registered already
    for name in ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator"):
        base = getattr(_caching, name, None)
        if base in classes:
            classes.insert(classes.index(base), _package_keyed(base))


_register()
