"""Run files: sorted int64 (key, count) arrays on disk, written atomically, memory-mapped
and merged by key ranges, so the pair counts of any reference fit in bounded memory."""

import contextlib
import os
import uuid
from pathlib import Path

import numpy as np
from numba import njit

from .. import kernels, store  # noqa: F401  (kernels before any kernel: the cache key)
from ..errors import InputError

# ----------------------------------------------------------------------------
# run files: sorted int64 keys and counts, raw, memory-mappable


def write_run(run_dir, keys, counts):
    """Write a sorted run atomically; returns [name, entries]."""
    name = f"run-{uuid.uuid4().hex[:16]}"
    _write_raw(Path(run_dir) / f"{name}.keys", keys)
    _write_raw(Path(run_dir) / f"{name}.counts", counts)
    return [name, int(len(keys))]


def _write_raw(path, a):
    a = np.ascontiguousarray(a, dtype="<i8")
    with store.atomic_open(path, "wb") as f:
        step = 1 << 22
        for i in range(0, len(a), step):
            f.write(a[i : i + step].tobytes())


def _open_run(run_dir, name):
    out = []
    for ext in ("keys", "counts"):
        p = Path(run_dir) / f"{name}.{ext}"
        size = p.stat().st_size
        out.append(np.memmap(p, dtype="<i8", mode="r") if size else np.zeros(0, np.int64))
    if len(out[0]) != len(out[1]):
        raise InputError("damaged partial-state run file (keys and counts differ in length)", run_dir / name)
    return out


def _run_files(run_dir, name):
    return [Path(run_dir) / f"{name}.keys", Path(run_dir) / f"{name}.counts"]


def merge_runs(run_dir, names, write, chunk=1 << 22):
    """Stream the merge of sorted runs into write(keys, counts), key range by key range."""
    runs = [_open_run(run_dir, n) for n in names]
    runs = [r for r in runs if len(r[0])]
    if not runs:
        return
    largest = max(runs, key=lambda r: len(r[0]))[0]
    bounds = [int(x) for x in largest[chunk::chunk]] + [None]
    pos = [0] * len(runs)
    for hi in bounds:
        parts = []
        for i, (k, c) in enumerate(runs):
            end = len(k) if hi is None else int(np.searchsorted(k, hi, side="left"))
            if end > pos[i]:
                parts.append((np.array(k[pos[i] : end]), np.array(c[pos[i] : end])))
            pos[i] = end
        keys, counts = _merge_many(parts)
        if len(keys):
            write(keys, counts)


class _RunWriter:
    """Append sorted chunks to a new run (temporary files, renamed on close)."""

    def __init__(self, run_dir):
        self.run_dir = Path(run_dir)
        self.name = f"run-{uuid.uuid4().hex[:16]}"
        self.entries = 0
        self._tmp = [p.with_name("." + p.name + ".tmp") for p in _run_files(run_dir, self.name)]
        self._files = [open(p, "wb") for p in self._tmp]

    def __call__(self, keys, counts):
        self._files[0].write(np.ascontiguousarray(keys, "<i8").tobytes())
        self._files[1].write(np.ascontiguousarray(counts, "<i8").tobytes())
        self.entries += len(keys)

    def close(self):
        for f, tmp, final in zip(self._files, self._tmp, _run_files(self.run_dir, self.name)):
            f.flush()
            os.fsync(f.fileno())
            f.close()
            os.replace(tmp, final)
        return [self.name, self.entries]

    def abort(self):
        for f, tmp in zip(self._files, self._tmp):
            f.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def merge_into_run(run_dir, names):
    w = _RunWriter(run_dir)
    try:
        merge_runs(run_dir, names, w)
    except BaseException:
        w.abort()
        raise
    return w.close()


@njit(cache=True, nogil=True)
def merge_sorted(k1, c1, k2, c2):
    """Merge two key-sorted (key, count) arrays, adding the counts of equal keys."""
    n1 = k1.shape[0]
    n2 = k2.shape[0]
    ok = np.empty(n1 + n2, np.int64)
    oc = np.empty(n1 + n2, np.int64)
    i = 0
    j = 0
    n = 0
    while i < n1 and j < n2:
        a = k1[i]
        b = k2[j]
        if a < b:
            ok[n] = a
            oc[n] = c1[i]
            i += 1
        elif b < a:
            ok[n] = b
            oc[n] = c2[j]
            j += 1
        else:
            ok[n] = a
            oc[n] = c1[i] + c2[j]
            i += 1
            j += 1
        n += 1
    while i < n1:
        ok[n] = k1[i]
        oc[n] = c1[i]
        i += 1
        n += 1
    while j < n2:
        ok[n] = k2[j]
        oc[n] = c2[j]
        j += 1
        n += 1
    if 4 * n < 3 * (n1 + n2):
        return ok[:n].copy(), oc[:n].copy()
    return ok[:n], oc[:n]


def _merge_many(parts):
    """Merge a list of sorted (keys, counts) pairs, smallest first."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    parts.sort(key=lambda p: len(p[0]))
    while len(parts) > 1:
        a = parts.pop(0)
        b = parts.pop(0)
        m = merge_sorted(
            np.ascontiguousarray(a[0], np.int64),
            np.ascontiguousarray(a[1], np.int64),
            np.ascontiguousarray(b[0], np.int64),
            np.ascontiguousarray(b[1], np.int64),
        )
        parts.append(m)
        parts.sort(key=lambda p: len(p[0]))
    k, c = parts[0]
    return np.asarray(k, np.int64), np.asarray(c, np.int64)
