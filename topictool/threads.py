"""Real threads for the numba kernels: ``--threads N`` runs N operating-system threads.

numba's own pool (``prange``) has as many threads as the machine has cores, fixed when it
first starts, so ``--threads 16`` on a 2-core machine would quietly run two. Instead every
parallel phase is a ``nogil`` numba function over one part of the work (a block of documents,
a cell of lda-gibbs's schedule, a range of words), and ``Workers(T).run(fn)`` calls ``fn(0)``
... ``fn(T-1)`` on T threads at once and returns when every part is done: one barrier per
call. Part t always runs on the same thread (part 0 on the caller's), the parts touch
disjoint data and each draws from its own random stream, so the result depends on T but
never on the order in which the operating system runs the threads.

The threads wait on locks (no spinning), so with more threads than cores the waiting costs
no CPU time; a call costs a few microseconds per thread.
"""

import ctypes
import ctypes.util
import threading

import numpy as np
from numba.core import types

__all__ = ["BARRIERS", "Barrier", "Workers", "barrier_wait", "handed_out", "padded", "split"]

# A barrier the kernels themselves can wait on (POSIX pthread_barrier_wait, called from nopython
# code without the GIL): a schedule of many short rounds -- lda-gibbs's partitioned sweep -- then
# costs one Workers.run per sweep instead of one per round, and a round's barrier costs a few
# microseconds per thread instead of the tens that waking Python code does. Not every libc has
# POSIX barriers (macOS's has not); without them BARRIERS is False and callers use Workers.run
# per round. The address is passed as an integer: on the 64-bit ABIs numba targets, a pointer
# argument travels in the same register.
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
BARRIERS = hasattr(_libc, "pthread_barrier_init") and hasattr(_libc, "pthread_barrier_wait")
barrier_wait = types.ExternalFunction("pthread_barrier_wait", types.int32(types.intp))
_BARRIER_BYTES = 128  # more than sizeof(pthread_barrier_t) on every libc that has it (32 on glibc)


class Barrier:
    """A pthread barrier for ``threads`` threads, held in ``self.memory`` (a numpy array that a
    kernel takes as an argument and waits on with ``barrier_wait(memory.ctypes.data)``)."""

    def __init__(self, threads):
        if not BARRIERS:
            raise RuntimeError("this C library has no POSIX barriers")
        self.memory = np.zeros(_BARRIER_BYTES, dtype=np.uint8)
        init = _libc.pthread_barrier_init
        init.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
        init.restype = ctypes.c_int
        if init(self.memory.ctypes.data, None, int(threads)) != 0:
            raise OSError(f"pthread_barrier_init failed for {threads} threads")


def padded(T, n, dtype, full=False):
    """(T, n) zeros whose rows are 128 bytes apart at least: the threads' private counters and
    random streams, written at every token, never share a cache line (false sharing cost
    hdp-gibbs 60 % more CPU on 2 threads). ``full``: the whole C-contiguous (T, n + padding)
    array instead of the (T, n) view, for kernels that take all rows as one 2-D argument
    (columns past n unused)."""
    pad = 128 // np.dtype(dtype).itemsize
    rows = np.zeros((T, n + pad), dtype=dtype)
    return rows if full else rows[:, :n]


def split(n, parts):
    """Boundaries (parts + 1) cutting range(n) into ``parts`` runs of nearly equal length."""
    return [n * p // parts for p in range(parts + 1)]


def handed_out(n, fn):
    """A part for ``Workers.run``: the threads take the items 0 .. n-1 one at a time from a shared
    counter and call fn(i) on each, until none is left. For work whose cost per item varies
    (documents that converge in 3 or 100 iterations): a thread that finishes early takes more.
    Which thread takes an item is up to the operating system, so fn(i) must write only what is
    item i's own for the result to stay the same."""
    taken, lock = [0], threading.Lock()

    def part(t):
        while True:
            with lock:
                i = taken[0]
                taken[0] += 1
            if i >= n:
                return
            fn(i)

    return part


class Workers:
    """T threads running ``fn(t)`` for every t on each ``run(fn)``; T = 1 runs inline.

    The T - 1 helper threads are daemons, started on first use and parked on a lock
    between calls; ``close()`` ends them (a Workers object is also usable after close: it
    starts new ones)."""

    def __init__(self, threads):
        self.threads = int(threads)
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self._pool = []  # (thread, start lock, done lock) per helper
        self._fn = None
        self._errors = [None] * self.threads
        self._stop = False

    def _start(self):
        self._stop = False
        for t in range(1, self.threads):
            start, done = threading.Lock(), threading.Lock()
            start.acquire()
            done.acquire()
            th = threading.Thread(target=self._loop, args=(t, start, done), name=f"topictool-{t}", daemon=True)
            th.start()
            self._pool.append((th, start, done))

    def _loop(self, t, start, done):
        while True:
            start.acquire()
            if self._stop:
                done.release()
                return
            try:
                self._fn(t)
            except BaseException as e:  # handed to the caller by run()
                self._errors[t] = e
            done.release()

    def run(self, fn):
        """fn(t) for t in range(T), concurrently; re-raises the first part's exception."""
        if self.threads == 1:
            fn(0)
            return
        if not self._pool:
            self._start()
        self._fn = fn
        for _, start, _ in self._pool:
            start.release()
        try:
            fn(0)
        except BaseException as e:
            self._errors[0] = e
        for _, _, done in self._pool:
            done.acquire()
        self._fn = None
        errors = [e for e in self._errors if e is not None]
        self._errors = [None] * self.threads
        if errors:
            raise errors[0]

    def close(self):
        if not self._pool:
            return
        self._stop = True
        for _, start, _ in self._pool:
            start.release()
        for th, _, done in self._pool:
            done.acquire()
            th.join()
        self._pool = []
