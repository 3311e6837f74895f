"""Everything that touches the disk for writing: the one output rule, the run lock,
atomic files, strict JSON, checkpoints.

The output rule (every command that writes follows it, through this module):

* A file output (``-o FILE``) must not exist unless ``--force`` is given, must not
  be a directory or a symbolic link, must not be an input of the same command,
  and its parent must be a directory. It is written to a temporary name beside it,
  fsynced and renamed over the target, so a kill at any moment leaves either the
  old complete file or the new complete file.
* A directory output (a prepared corpus, a run, a cooc state) carries a marker
  file (``.topictool``, naming its kind). An existing directory is replaced only
  with ``--force``, only if it is topictool's own of the same kind holding nothing
  but the files topictool writes there, never the current directory or one of its
  ancestors, never a path that holds an input of the same command, and only after
  the new directory is complete: the new one is built beside it under a hidden
  ``.NAME.*.partial`` name and swapped in by one atomic rename (Linux's
  ``renameat2(RENAME_EXCHANGE)``), so a kill at any moment leaves the old
  directory or the new one, whole.
* A directory that topictool writes over time (a run, a cooc state) holds a lock
  (``flock`` on ``.topictool.lock``, released by the kernel on any exit, kill -9
  included): a second writer is refused with the holder's pid.
* Files and directories follow the umask (0644/0755 under umask 022).
"""

import contextlib
import ctypes
import ctypes.util
import errno
import fnmatch
import functools
import hashlib
import io
import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .errors import DamagedFileError, InputError, existing_file

try:  # POSIX; elsewhere there is no run lock (topictool targets Linux and macOS)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

MARKER = ".topictool"
LOCK = ".topictool.lock"

# What topictool writes inside each kind of directory (paths relative to it). A
# directory holding anything else is not replaced by --force: it holds the user's files.
_OWN_FILES = {
    "corpus": (
        "corpus.json",
        "vocab.txt",
        "train.npz",
        "train.shard-*.npz",
        "test.npz",
        "train.names.txt",
        "test.names.txt",
        "truth.npz",
        "train.ldac",
        "test.ldac",
        "docword.train.txt",
        "docword.test.txt",
        "vocab.train.txt",
        "vocab.test.txt",
        "data_prep.json",
    ),  # the record data_prep/ adds to the corpora it makes
    "run": (
        "run.json",
        "metrics.jsonl",
        "model.npz",
        "vocab.txt",
        "checkpoints",
        "checkpoints/iter-*.npz",
        "checkpoints/.*.tmp",
    ),
    "cooc-state": ("state.npz", "run-*.keys", "run-*.counts", ".run-*.tmp"),
}
_ALWAYS_OWN = (MARKER, LOCK, ".*.tmp")
_KIND_NAMES = {"corpus": "prepared corpus", "run": "run directory", "cooc-state": "cooc partial state"}


def register_kind(kind, own_files, label):
    """Make another kind of directory known to the output rule (data_prep's work folders)."""
    _OWN_FILES[kind] = tuple(own_files)
    _KIND_NAMES[kind] = label


# ---------------------------------------------------------------------------
# permissions


def umask():
    """The process umask (read without changing it where /proc allows; not cached, so a
    caller's os.umask() between two writes is honoured)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # pragma: no cover - not Linux
    os.umask(mask)
    return mask


def _file_mode():
    return 0o666 & ~umask()


def _dir_mode():
    return 0o777 & ~umask()


# ---------------------------------------------------------------------------
# atomic files


def _fsync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _mkdirs(path):
    """mkdir -p with the umask's mode (Path.mkdir does this too; named for clarity)."""
    Path(path).mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def atomic_open(path, mode="wb", encoding="utf-8"):
    """Open a temporary file beside ``path``; on success fsync and rename it."""
    path = Path(path)
    _mkdirs(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _file_mode())  # mkstemp creates 0600 whatever the umask
        binary = "b" in mode
        kw = {} if binary else {"encoding": encoding, "newline": "\n"}
        with os.fdopen(fd, "wb" if binary else "w", **kw) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        _before_rename_hook(tmp, path)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _before_rename_hook(tmp, path):
    """Tests replace this to inject a failure between write and rename."""


def write_text(path, text):
    with atomic_open(path, "w") as f:
        f.write(text)


def write_json(path, obj):
    write_text(path, dumps(obj, indent=2) + "\n")


def write_npz(path, compress=False, **arrays):
    """Atomically write an .npz (no pickled objects allowed)."""
    buf = io.BytesIO()
    for name, a in arrays.items():
        if np.asarray(a).dtype == object:
            raise TypeError(f"array {name!r} has dtype object; refusing to pickle")
    (np.savez_compressed if compress else np.savez)(buf, **arrays)
    with atomic_open(path, "wb") as f:
        f.write(buf.getbuffer())


def load_npz(path, required=()):
    """Load an .npz without pickle; InputError naming the file on any problem."""
    path = existing_file(path, "an .npz file")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as e:  # zipfile/format errors of many kinds
        raise InputError(f"not a readable .npz file ({e.__class__.__name__}: {e})", path) from None
    missing = [k for k in required if k not in arrays]
    if missing:
        raise InputError(f"missing array(s) {', '.join(missing)}", path)
    return arrays


# ---------------------------------------------------------------------------
# words in .npz files: one UTF-8 byte array, so a file's size is the sum of its
# words (a fixed-width unicode array pads every word to the longest one: one 1 MB
# "word" made a vocabulary of 4,000 words 16 GB)


def encode_words(words):
    """uint8 array of the words joined by newlines (words hold no whitespace)."""
    text = "\n".join(words)
    if len(text) + 1 != sum(len(w) + 1 for w in words) or any("\n" in w for w in words):
        raise ValueError("a word contains a newline")
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def decode_words(arrays, name="vocab", path=None):
    """The words stored under ``name + '_utf8'`` (or, as older files have them, ``name``)."""
    if name + "_utf8" in arrays:
        raw = np.asarray(arrays[name + "_utf8"])
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise InputError(f"{name}_utf8 must be a byte array", path)
        try:
            text = raw.tobytes().decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{name}_utf8 is not UTF-8", path) from None
        return tuple(text.split("\n")) if text else ()
    if name in arrays:
        return tuple(str(w) for w in np.asarray(arrays[name]).reshape(-1))
    raise InputError(f"missing array {name}_utf8", path)


# ---------------------------------------------------------------------------
# strict JSON: NaN and infinities become null (listed under "non_finite")


def json_safe(obj):
    """(copy of obj with non-finite floats as None, list of the paths that were)."""
    bad = []

    def clean(o, where):
        if isinstance(o, dict):
            return {k: clean(v, f"{where}.{k}" if where else str(k)) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v, f"{where}[{i}]") for i, v in enumerate(o)]
        if isinstance(o, np.ndarray):
            return clean(o.tolist(), where)
        if isinstance(o, (np.integer, np.bool_)):
            return o.item()
        if isinstance(o, (float, np.floating)):
            if not math.isfinite(o):
                bad.append(where)
                return None
            return float(o)
        return o

    return clean(obj, ""), bad


def dumps(obj, indent=None):
    """Strict JSON text: a non-finite number is written as null and, for a dict, its
    key path listed under "non_finite" (no bare NaN/Infinity, which is not JSON)."""
    clean, bad = json_safe(obj)
    if bad and isinstance(clean, dict):
        clean["non_finite"] = sorted(set(clean.get("non_finite") or []) | set(bad))
    return json.dumps(clean, indent=indent, allow_nan=False, ensure_ascii=False)


# ---------------------------------------------------------------------------
# output paths: the checks made before anything is computed or written


def _abs(path):
    return Path(os.path.abspath(os.fspath(path)))


def _real(path):
    return Path(os.path.realpath(os.fspath(path)))


def _is_within(inner, outer):
    """inner == outer or inner lies below outer (both real paths)."""
    return inner == outer or outer in inner.parents


def _check_parent(path):
    """The nearest existing ancestor of ``path`` must be a writable directory."""
    a = path.parent
    while not os.path.lexists(a) and a != a.parent:
        a = a.parent
    if not a.is_dir():
        raise InputError(f"cannot create the output: {a} is not a directory", path)
    if not os.access(a, os.W_OK | os.X_OK):
        raise InputError(f"cannot create the output: no permission to write in {a}", path)


def _check_not_input(out, inputs, file_output=False):
    """The output must not be an input, nor hold one; an existing output file must not lie
    inside an input directory either (``snapshot RUN -o RUN/model.npz``)."""
    real_out = _real(out)
    exists = os.path.lexists(out)
    for p in inputs or ():
        if p is None or not os.path.lexists(p):
            continue
        real_in = _real(p)
        if _is_within(real_in, real_out):
            what = "is" if real_in == real_out else "holds"
            raise InputError(f"the output {what} an input of this command ({p}); choose another output", out)
        if file_output and exists and real_in.is_dir() and _is_within(real_out, real_in):
            raise InputError(f"the output is a file of an input of this command ({p}); choose another output", out)


def check_output_file(path, force=False, inputs=()):
    """Validate ``-o FILE`` before any work: returns the path. See the module docstring."""
    if path is None or str(path) == "":
        raise InputError("missing output file name")
    p = _abs(path)
    if os.path.islink(p):
        raise InputError("is a symbolic link; give the path of the file itself", path)
    if p.is_dir():
        raise InputError("is a directory; expected a file name", path)
    _check_parent(p)
    if p.exists():
        if not force:
            raise InputError("output already exists (use --force to replace it)", path)
        if not os.access(p, os.W_OK):
            raise InputError("output exists and is not writable", path)
    _check_not_input(p, inputs, file_output=True)
    return Path(path)


def kind_of(directory):
    """The kind of a topictool directory ('corpus', 'run', 'cooc-state'), or None if foreign."""
    d = Path(directory)
    marker = d / MARKER
    if marker.is_file() and not marker.is_symlink():
        try:
            kind = json.loads(marker.read_text("utf-8")).get("kind")
        except (ValueError, OSError, AttributeError):
            return None
        return kind if kind in _OWN_FILES else None
    # directories written before the marker existed
    for kind, name, keys in (
        ("run", "run.json", ("format_version", "topictool_version", "spec")),
        ("corpus", "corpus.json", ("format_version", "topictool_version")),
    ):
        try:
            info = json.loads((d / name).read_text("utf-8"))
        except (ValueError, OSError):
            continue
        if isinstance(info, dict) and all(k in info for k in keys):
            return kind
    if kind_files_match(d, "cooc-state") and (d / "state.npz").is_file():
        return "cooc-state"
    return None


def foreign_entries(directory, kind):
    """Entries of ``directory`` (relative paths) that topictool does not write there."""
    d = Path(directory)
    patterns = _OWN_FILES[kind] + _ALWAYS_OWN
    out = []
    for root, dirs, files in os.walk(d):
        rel_root = Path(root).relative_to(d)
        for name in sorted(dirs) + sorted(files):
            rel = (rel_root / name).as_posix()
            full = Path(root) / name
            if full.is_symlink() or not any(fnmatch.fnmatchcase(rel, p) for p in patterns):
                out.append(rel)
        dirs[:] = [x for x in dirs if not (Path(root) / x).is_symlink()]
    return out


def kind_files_match(directory, kind):
    return not foreign_entries(directory, kind)


def own_name(relative_path, kind):
    """True if topictool writes files of this name in a directory of this kind."""
    return any(fnmatch.fnmatchcase(relative_path, p) for p in _OWN_FILES[kind] + _ALWAYS_OWN)


def check_output_dir(path, force=False, kind="corpus", inputs=(), resume_hint=False):
    """Validate a directory output before any work; returns the path. See the module docstring."""
    if path is None or str(path) == "":
        raise InputError("missing output directory name")
    p = _abs(path)
    what = _KIND_NAMES[kind]
    if os.path.islink(p):
        raise InputError("is a symbolic link; give the path of the directory itself", path)
    if os.path.lexists(p) and not p.is_dir():
        raise InputError(f"exists and is not a directory (expected a {what})", path)
    cwd = _real(os.getcwd())
    if os.path.lexists(p) and _is_within(cwd, _real(p)):
        where = "the current directory" if _real(p) == cwd else "an ancestor of the current directory"
        raise InputError(f"is {where}; topictool never writes over it", path)
    _check_parent(p)
    _check_not_input(p, inputs)
    if p.is_dir() and any(p.iterdir()):
        if not force:
            hint = ", or --resume to continue it" if resume_hint and kind_of(p) == "run" else ""
            raise InputError(f"output already exists (use --force to replace it{hint})", path)
        found = kind_of(p)
        if found is None:
            raise InputError(
                f"is not a directory topictool wrote (no {MARKER} marker); --force replaces only "
                f"topictool's own output",
                path,
            )
        if found != kind:
            raise InputError(f"is a topictool {_KIND_NAMES[found]}, not a {what}; not replacing it", path)
        foreign = foreign_entries(p, kind)
        if foreign:
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            raise InputError(f"holds files topictool did not write ({foreign[0]}{more}); not replacing it", path)
    return Path(path)


# ---------------------------------------------------------------------------
# directory locks


class DirLock:
    """An exclusive flock on DIR/.topictool.lock (an empty file).

    The kernel releases it when the process ends in any way, kill -9 included,
    so a stale lock never blocks; a second writer is refused with the holder's pid,
    which the kernel reports (/proc/locks): the file is never written, so locking
    an old directory to replace it changes nothing in it.
    """

    def __init__(self, directory):
        self.directory = Path(directory)
        self.fd = None

    def acquire(self, what="directory"):
        if fcntl is None:  # pragma: no cover
            return self
        path = self.directory / LOCK
        for _ in range(3):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, _file_mode())
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder_pid(fd)
                os.close(fd)
                raise InputError(
                    f"this {what} is in use by another topictool process (pid {holder}); wait for it "
                    f"to finish or stop it first",
                    self.directory,
                ) from None
            # the lock file we locked must still be the one at the path (a --force may have swapped
            # the directory between our open and our flock)
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return self
            os.close(fd)
        raise InputError(f"this {what} keeps changing while being locked", self.directory)

    def release(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def _holder_pid(fd):
    """The pid holding a flock on the file open as ``fd``, from /proc/locks (Linux)."""
    st = os.fstat(fd)
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    try:
        with open("/proc/locks", encoding="ascii") as f:
            for line in f:
                fields = line.split()
                if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
                    continue
                dev = fields[5].split(":")
                try:
                    if (int(dev[0], 16), int(dev[1], 16), int(dev[2])) == want:
                        return fields[4]
                except (ValueError, IndexError):
                    continue
    except OSError:
        pass
    return "unknown"


def lock_held(directory):
    """True if another process holds DIR's lock."""
    path = Path(directory) / LOCK
    if fcntl is None or not path.exists():
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------
# building a directory beside its target and swapping it in

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@functools.cache
def _renameat2():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):  # pragma: no cover - not glibc >= 2.28
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _rename2(src, dst, flags):
    """renameat2; returns False where the system or file system does not offer it."""
    fn = _renameat2()
    if fn is None:  # pragma: no cover
        return False
    if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):  # pragma: no cover - e.g. some network file systems
        return False
    raise OSError(err, os.strerror(err), str(dst))


def _before_swap_hook(stage, target):
    """Tests replace this to inject a failure (or a kill) just before the swap."""


def _move_into_place(stage, target):
    """Move the complete directory ``stage`` to ``target``; returns the old target's new
    path (to be removed) or None. Atomic: a kill leaves the old target or the new one."""
    _before_swap_hook(stage, target)
    if not os.path.lexists(target):
        try:
            if not _rename2(stage, target, _RENAME_NOREPLACE):  # pragma: no cover
                os.rename(stage, target)
        except OSError as e:
            if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise InputError(
                    "the output appeared while this command was writing it (another process?); "
                    f"the new output is left in {stage}",
                    target,
                ) from None
            raise
        _fsync_dir(Path(target).parent)
        return None
    if _rename2(stage, target, _RENAME_EXCHANGE):
        _fsync_dir(Path(target).parent)
        return Path(stage)
    # pragma: no cover - no atomic exchange here: two renames (a kill between them leaves
    # the old directory at the returned name)
    old = Path(tempfile.mkdtemp(prefix=f".{Path(target).name}.", suffix=".old", dir=Path(target).parent))
    os.rename(target, old / "old")
    os.rename(stage, target)
    _fsync_dir(Path(target).parent)
    return old


def write_marker(directory, kind):
    from . import __version__

    write_text(
        Path(directory) / MARKER,
        json.dumps({"kind": kind, "written_by": "topictool", "topictool_version": __version__}) + "\n",
    )


def _remove_own(directory):
    """Remove a directory this process made (a failed or replaced output)."""
    shutil.rmtree(directory, ignore_errors=True)


def _clean_stale_partials(target):
    """Remove ``.NAME.*.partial`` / ``.NAME.*.old`` siblings that an earlier killed
    command left behind: only topictool's own, and only when no process holds them."""
    target = _abs(target)
    parent = target.parent
    if not parent.is_dir():
        return
    for p in parent.glob(f".{glob_escape(target.name)}.*"):
        if not p.is_dir() or p.is_symlink() or not re.search(r"\.(partial|old)$", p.name):
            continue
        inner = p / "old" if p.name.endswith(".old") and (p / "old").is_dir() else p
        kind = kind_of(inner)
        if kind is None or not kind_files_match(inner, kind) or lock_held(inner):
            continue
        _remove_own(p)


def glob_escape(name):
    return re.sub(r"([*?\[])", r"[\1]", name)


class DirectoryOutput:
    """A directory output being written: new, or replacing an old one of topictool's.

    ``path`` is where files go now: the target itself when it did not exist, else a
    hidden staging directory beside it. ``commit()`` swaps the staging directory in
    (repeated calls do nothing); ``abort()`` removes what this object created.
    With ``lock`` the directory holds its writer's lock for the object's lifetime.
    """

    def __init__(self, target, force=False, kind="corpus", inputs=(), lock=False, resume_hint=False):
        self.target = check_output_dir(target, force, kind, inputs, resume_hint)
        self.kind = kind
        self.force = force
        self.inputs = inputs
        self.lock = lock
        self.path = None
        self.staged = False
        self.committed = False
        self._locks = []

    def open(self):
        target = _abs(self.target)
        # check again: time has passed since the command began
        check_output_dir(self.target, self.force, self.kind, self.inputs)
        _clean_stale_partials(target)
        what = _KIND_NAMES[self.kind]
        if target.is_dir() and not any(target.iterdir()):
            os.rmdir(target)  # an empty directory holds nothing to lose: write in its place
        if target.is_dir():
            # replace topictool's own old output: hold its lock while the new one is built
            self._locks.append(DirLock(target).acquire(what))
            self.path = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
            self.staged = True
        else:
            _mkdirs(target.parent)
            try:
                os.mkdir(target, _dir_mode())
            except FileExistsError:
                raise InputError("output already exists (created by another process just now)", self.target) from None
            self.path = target
        os.chmod(self.path, _dir_mode())  # mkdtemp makes 0700 whatever the umask
        write_marker(self.path, self.kind)
        self._locks.append(DirLock(self.path).acquire(what))
        return self

    def commit(self):
        """The new directory is complete: put it in place of the old one."""
        if self.committed:
            return
        if self.staged:
            target = _abs(self.target)
            # the old directory must still be topictool's own (a user may have added files to it meanwhile)
            if target.is_dir() and any(target.iterdir()):
                foreign = foreign_entries(target, self.kind)
                if foreign:
                    raise InputError(
                        f"files were added to the old output while this command ran ({foreign[0]}); "
                        f"not replacing it (the new output is in {self.path})",
                        self.target,
                    )
            _fsync_dir(self.path)
            old = _move_into_place(self.path, target)
            self.path = target
            self.staged = False
            if old is not None:
                _remove_own(old)
        self.committed = True

    def abort(self):
        """A failure before commit: remove what was built; the old output is untouched."""
        if not self.committed and self.path is not None:
            _remove_own(self.path)
            self.path = None

    def close(self):
        for lk in self._locks:
            lk.release()
        self._locks = []


@contextlib.contextmanager
def staged_directory(out, force=False, kind="corpus", inputs=()):
    """Build a directory output and put it in place when the body succeeds.

    Yields the path to write into. If the body raises, what was built is removed
    and an old output is left as it was. See the module docstring for the rule.
    """
    output = DirectoryOutput(out, force, kind, inputs).open()
    try:
        yield output.path
        output.commit()
    except BaseException:
        output.abort()
        raise
    finally:
        output.close()


# ---------------------------------------------------------------------------
# Run directories and checkpoints (DESIGN.md, "Run directory")

CHECKPOINT_VERSION = 1
_CKPT_DIR = "checkpoints"
_CKPT_NAME = re.compile(r"^iter-(\d+)\.npz$")


def _arrays_checksum(arrays):
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode())
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def checkpoint_path(run, iteration):
    return Path(run) / _CKPT_DIR / f"iter-{int(iteration):06d}.npz"


def checkpoint_iteration(path):
    m = _CKPT_NAME.match(Path(path).name)
    return int(m.group(1)) if m else None


def save_checkpoint(run, iteration, arrays, meta, keep=3, parts=None):
    """Write checkpoints/iter-NNNNNN.npz (versioned, checksummed); keep the last ``keep``.

    An MPI run's checkpoint has a part per rank besides (``rank_part_path``, written by each rank
    with ``save_rank_part`` before this is called): ``parts`` lists their checksums in rank order
    and goes into this file's header. This file is written last, so it is the commit: a
    checkpoint counts only once every rank's part is on disk, and a kill at any moment leaves the
    previous complete checkpoint."""
    for name in arrays:
        if name.startswith("__"):
            raise ValueError(f"reserved array name {name}")
    header = dict(meta, format_version=CHECKPOINT_VERSION, iteration=int(iteration), checksum=_arrays_checksum(arrays))
    if parts is not None:
        header["ranks"] = len(parts)
        header["parts"] = list(parts)
    path = checkpoint_path(run, iteration)
    write_npz(path, __meta__=np.array(dumps(header)), **arrays)
    if keep and keep > 0:
        for old in list_checkpoints(run)[:-keep]:
            with contextlib.suppress(OSError):
                old.unlink()
        _prune_rank_parts(run, {checkpoint_iteration(p) for p in list_checkpoints(run)}, int(iteration))
    return path


# -- the per-rank parts of an MPI run's checkpoints ---------------------------------------------

_PART_NAME = re.compile(r"^iter-(\d+)\.rank-(\d+)-of-(\d+)\.npz$")


def rank_part_path(run, iteration, rank, ranks):
    """checkpoints/iter-NNNNNN.rank-RRRR-of-PPPP.npz: what rank RRRR of PPPP holds for its own
    documents at that iteration."""
    return Path(run) / _CKPT_DIR / f"iter-{int(iteration):06d}.rank-{int(rank):04d}-of-{int(ranks):04d}.npz"


def save_rank_part(run, iteration, rank, ranks, arrays):
    """Write one rank's part of a checkpoint (atomically, fsynced); returns its checksum (the
    commit, save_checkpoint, records it)."""
    checksum = _arrays_checksum(arrays)
    header = {"format_version": CHECKPOINT_VERSION, "iteration": int(iteration), "rank": int(rank), "ranks": int(ranks)}
    header["checksum"] = checksum
    write_npz(rank_part_path(run, iteration, rank, ranks), __meta__=np.array(dumps(header)), **arrays)
    return checksum


def load_rank_part(run, meta, rank):
    """The arrays of ``rank``'s part of the checkpoint whose header is ``meta``; DamagedFileError
    when it is missing or is not the part the commit recorded."""
    ranks = int(meta.get("ranks", 1))
    path = rank_part_path(run, meta["iteration"], rank, ranks)
    if not path.exists():
        raise DamagedFileError(f"the part of rank {rank} of {ranks} is missing", path)
    part_meta, arrays = load_checkpoint(path)
    expected = (meta.get("parts") or [None] * ranks)[rank]
    if expected is not None and part_meta.get("checksum") != expected:
        raise DamagedFileError("this rank part is not the one its checkpoint committed", path)
    return arrays


def _prune_rank_parts(run, kept, current):
    """Remove rank parts of checkpoints no longer kept (and of ones never committed) up to ``current``."""
    d = Path(run) / _CKPT_DIR
    for p in d.glob("iter-*.rank-*.npz"):
        m = _PART_NAME.match(p.name)
        if m and int(m.group(1)) not in kept and int(m.group(1)) <= current:
            with contextlib.suppress(OSError):
                p.unlink()


def list_checkpoints(run):
    """Checkpoint files in iteration order (numeric: iter-1000000 comes after iter-999999)."""
    d = Path(run) / _CKPT_DIR
    if not d.is_dir():
        return []
    found = [(checkpoint_iteration(p), p) for p in d.glob("iter-*.npz")]
    return [p for it, p in sorted((it, p) for it, p in found if it is not None)]


def load_checkpoint(path):
    """(meta, arrays) of one checkpoint; DamagedFileError if it fails its checks."""
    try:
        arrays = load_npz(path, required=("__meta__",))
        meta = json.loads(str(arrays.pop("__meta__")))
    except InputError as e:
        raise DamagedFileError(e.message, path) from None
    except ValueError:
        raise DamagedFileError("checkpoint header is not valid JSON", path) from None
    if meta.get("format_version", 0) > CHECKPOINT_VERSION:
        raise InputError(f"checkpoint format {meta.get('format_version')} is newer than this topictool", path)
    if meta.get("checksum") != _arrays_checksum(arrays):
        raise DamagedFileError("checkpoint checksum does not match its arrays (damaged file)", path)
    return meta, arrays


def latest_checkpoint(run, iteration=None, warn=None):
    """Newest loadable checkpoint (at most ``iteration``); damaged ones are reported and skipped."""
    candidates = list_checkpoints(run)
    if iteration is not None:
        candidates = [p for p in candidates if checkpoint_iteration(p) == int(iteration)]
        if not candidates:
            have = ", ".join(str(checkpoint_iteration(p)) for p in list_checkpoints(run)) or "none"
            raise InputError(f"no checkpoint for iteration {iteration} (have: {have})", run)
    damaged = []
    for path in reversed(candidates):
        try:
            found = (path, *load_checkpoint(path))
        except DamagedFileError as e:
            if iteration is not None:
                raise
            damaged.append(str(e))
            continue
        if warn:
            for message in damaged:
                warn(f"{message}; using the previous checkpoint")
        return found
    what = f" ({len(damaged)} damaged: {damaged[0]})" if damaged else ""
    raise InputError(f"no usable checkpoint in this run directory{what}", run)


def read_run_json(run):
    run = Path(run)
    if not run.exists():
        raise InputError("not a run directory (no such directory)", run)
    if not run.is_dir():
        raise InputError("not a run directory (a file)", run)
    path = run / "run.json"
    try:
        info = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise InputError("not a run directory (no run.json)", run) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"run.json is not valid JSON: {e}", path) from None
    if not isinstance(info, dict) or not isinstance(info.get("spec"), dict):
        raise InputError("run.json is not a topictool run description", path)
    return info


def append_jsonl(path, obj):
    """Append one line and fsync (a kill leaves at most a truncated last line, dropped on resume)."""
    line = dumps(obj) + "\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def read_jsonl(path, upto_iteration=None):
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue  # a line cut by a kill
                if upto_iteration is None or row.get("iteration", 0) <= upto_iteration:
                    rows.append(row)
    except FileNotFoundError:
        pass
    return rows


def rewrite_jsonl(path, rows):
    write_text(path, "".join(dumps(r) + "\n" for r in rows))
