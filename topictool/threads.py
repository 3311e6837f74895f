"""Real threads for the numba kernels: ``--threads N`` runs N operating-system threads.

numba's own pool (``prange``) has as many threads as the machine has cores, fixed when it
first starts, so ``--threads 16`` on a 2-core machine would quietly run two. Instead every
parallel phase is a ``nogil`` numba function over one part of the work (a block of documents,
a cell of lda-gibbs's schedule, a range of words), and ``Workers(T).run(fn)`` calls ``fn(0)``
... ``fn(T-1)`` on T threads at once and returns when every part is done: one barrier per
call. Part t always runs on the same thread (part 0 on the caller's), the parts touch
disjoint data and each draws from its own random stream, so the result depends on T but
never on the order in which the operating system runs the threads.

Between calls the threads wait on locks, so with more threads than cores the waiting costs no
CPU time; a call costs a few microseconds per thread. Inside a kernel (Barrier, RoundPool, below)
a thread that the cores can run checks for a while before it sleeps, since a sleeping virtual CPU
takes tens of microseconds to wake.
"""

import ctypes
import ctypes.util
import math
import os
import threading

import numba
import numpy as np
from numba.core import types

from . import kernels  # noqa: F401  (before any kernel: the cache key, kernels/__init__.py)

__all__ = [
    "BARRIERS",
    "POOLS",
    "Barrier",
    "RoundPool",
    "Workers",
    "barrier_wait",
    "finish_part",
    "handed_out",
    "next_round",
    "padded",
    "split",
    "take_part",
]

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None)

# A pool of a round's parts (lda-gibbs's partitioned sweep: a round is T cells, one per lane): any
# thread takes the next untaken part of the current round; the thread that finishes a round's last
# part closes the round (the callers' reconciliation: every other thread is then waiting) and
# opens the next. A part's result depends on the part, never on the thread that runs it, so the
# model is the same whichever thread runs what, and so the parts need no more threads than the
# cores can run at once: with T > cores, ``RoundPool.runners`` = cores threads take the T lanes'
# cells (``Workers.run(fn, pool.runners)``). The other T - cores threads could only sleep: a
# barrier per round woke all T threads every round (T^2 context switches a sweep, at 64 threads on
# two cores a quarter of one thread's sweep), and starting 64 threads into a kernel where 62 of
# them slept still cost 8 % of one thread's sweep. A thread that finds a round's parts all taken
# checks for the next round for a while (``POOL_CHECKS``) before it sleeps on the condition. The
# counters are written under a POSIX mutex only; sleepers are woken after it is released, so that
# they do not wake to find it still held.
mutex_lock = types.ExternalFunction("pthread_mutex_lock", types.int32(types.intp))
mutex_unlock = types.ExternalFunction("pthread_mutex_unlock", types.int32(types.intp))
cond_wait = types.ExternalFunction("pthread_cond_wait", types.int32(types.intp, types.intp))
cond_broadcast = types.ExternalFunction("pthread_cond_broadcast", types.int32(types.intp))
thread_self = types.ExternalFunction("pthread_self", types.uintp())
POOLS = all(
    hasattr(_libc, f"pthread_{name}")
    for name in ("mutex_init", "mutex_lock", "mutex_unlock", "cond_init", "cond_wait", "cond_broadcast")
)
# more than sizeof(pthread_mutex_t) and sizeof(pthread_cond_t): 40 and 48 on glibc, 64 and 48 on macOS
_SYNC_BYTES = 128
_ROUND, _TAKEN, _FINISHED, _ROUNDS, _POOL_CHECKS = range(5)  # RoundPool.state


BARRIERS = POOLS  # barrier_wait is built on the same mutex and condition


def _sync_memory(nbytes):
    """nbytes of zeros holding an initialised POSIX mutex (at 0) and condition (at _SYNC_BYTES)."""
    if not POOLS:
        raise RuntimeError("this C library has no POSIX mutexes and conditions")
    memory = np.zeros(nbytes, dtype=np.uint8)
    for name, offset in (("mutex", 0), ("cond", _SYNC_BYTES)):
        init = getattr(_libc, f"pthread_{name}_init")
        init.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        init.restype = ctypes.c_int
        if init(memory.ctypes.data + offset, None) != 0:
            raise OSError(f"pthread_{name}_init failed")
    return memory


# A barrier the kernels themselves can wait on (``barrier_wait(memory)``, called from nopython code
# without the GIL): a schedule of many short phases -- the variational models' minibatches -- then
# costs one Workers.run per pass instead of one per phase. It is built on the POSIX mutex and
# condition below (``POOLS``; every libc that has threads has them). A thread that arrives before
# the last first checks the barrier's generation for a while (``SPIN_CHECKS`` times, each under the
# mutex) before it sleeps on the condition, when there are no more threads than cores: a sleeping
# core takes tens of microseconds to wake on a VM (an interrupt to another virtual CPU), against a
# phase of about 0.7 ms (lda-scvb0's minibatch on the movie reviews: 2 x 16 waits a pass). With more
# threads than cores it sleeps at once, so that waiting costs no CPU time.
_BARRIER_BYTES = 3 * 128  # mutex, condition, then the state (int64: arrived, generation, threads, checks)
_ARRIVED, _GENERATION, _PARTIES, _CHECKS = range(4)
SPIN_CHECKS = 20_000  # at about 20-40 ns a check, at most about half a millisecond
POOL_CHECKS = 50_000  # take_part's checks, a few nanoseconds each (no mutex)


class Barrier:
    """A barrier for ``threads`` threads, held in ``self.memory`` (a numpy array that a kernel takes
    as an argument and waits on with ``barrier_wait(memory)``)."""

    def __init__(self, threads):
        self.memory = _sync_memory(_BARRIER_BYTES)
        state = self.memory[2 * _SYNC_BYTES :].view(np.int64)
        state[_PARTIES] = int(threads)
        state[_CHECKS] = SPIN_CHECKS if threads <= usable_cores() else 0


@numba.njit(cache=True, nogil=True)
def barrier_wait(memory):
    """Returns when every thread of the ``Barrier`` whose memory this is has called it."""
    mutex = memory.ctypes.data
    cond = mutex + _SYNC_BYTES
    state = memory[2 * _SYNC_BYTES :].view(np.int64)
    mutex_lock(mutex)
    generation = state[_GENERATION]
    state[_ARRIVED] += 1
    if state[_ARRIVED] == state[_PARTIES]:  # the last: open the next generation
        state[_ARRIVED] = 0
        state[_GENERATION] = generation + 1
        mutex_unlock(mutex)
        cond_broadcast(cond)
        return
    mutex_unlock(mutex)
    for _ in range(state[_CHECKS]):  # read under the mutex: its calls are the compiler's fences too
        mutex_lock(mutex)
        done = state[_GENERATION] != generation
        mutex_unlock(mutex)
        if done:
            return
    mutex_lock(mutex)
    while state[_GENERATION] == generation:
        cond_wait(cond, mutex)
    mutex_unlock(mutex)


def usable_cores():
    """The cores this process may run on: its CPU affinity, lowered to a cgroup's CPU quota when it
    has one (a container given 2 CPUs' time on a 64-core node has an affinity of 64)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    return max(1, min(cores, math.ceil(quota))) if quota else cores


def cgroup_cpu_quota(proc_cgroup="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """The CPUs' worth of time a cgroup quota allows this process (cgroup v2 ``cpu.max`` of its
    group and every group above it; v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``), or None when
    there is no quota or no cgroup file to read."""
    try:
        with open(proc_cgroup) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    limits = []
    for line in lines:
        if line.count(":") < 2:
            continue
        _, controllers, path = line.split(":", 2)
        rel = path.strip("/")
        if controllers == "":  # v2: the group and its ancestors
            parts = rel.split("/") if rel else []
            for depth in range(len(parts), -1, -1):
                fields = _read_fields(os.path.join(root, *parts[:depth], "cpu.max"))
                if len(fields) == 2 and fields[0] != "max" and float(fields[1]) > 0:
                    limits.append(float(fields[0]) / float(fields[1]))
        elif "cpu" in controllers.split(","):  # v1: the cpu controller's mount
            for mount in (controllers, "cpu", "cpu,cpuacct"):
                base = os.path.join(root, mount, rel)
                quota = _read_fields(os.path.join(base, "cpu.cfs_quota_us"))
                period = _read_fields(os.path.join(base, "cpu.cfs_period_us"))
                if quota and period:
                    if float(quota[0]) > 0 and float(period[0]) > 0:
                        limits.append(float(quota[0]) / float(period[0]))
                    break
    return min(limits) if limits else None


def _read_fields(path):
    try:
        with open(path) as f:
            return f.read().split()
    except (OSError, ValueError):
        return []


class RoundPool:
    """The mutex, condition and counters of ``take_part`` / ``finish_part`` / ``next_round`` for a
    schedule whose parts are taken by ``runners`` threads: min(threads, usable cores), the threads
    that call the kernel (``Workers.run(fn, pool.runners)``). ``memory`` (mutex, then condition) and
    ``state`` are what the kernels take."""

    def __init__(self, threads):
        self.threads = int(threads)
        self.memory = _sync_memory(2 * _SYNC_BYTES)
        self.state = np.zeros(16, dtype=np.int64)  # 128 bytes: a cache line of its own
        # once, not at every open(): usable_cores reads the cgroup's files
        self.runners = min(self.threads, usable_cores())

    def open(self, rounds):
        """Ready for a schedule of ``rounds`` rounds (call with no thread inside)."""
        self.state[:] = 0
        self.state[_ROUNDS] = rounds
        self.state[_POOL_CHECKS] = POOL_CHECKS


@numba.njit(cache=True, nogil=True)
def take_part(memory, state, parts):
    """Blocks until a part of the current round is untaken or every round is done: returns (round,
    part), or (-1, -1) when the schedule is over."""
    mutex = memory.ctypes.data
    cond = mutex + _SYNC_BYTES
    mutex_lock(mutex)
    r0 = state[_ROUND]
    if r0 < state[_ROUNDS] and state[_TAKEN] == parts:
        # The round's last parts are being run: check for the next round for a while first (a
        # part is short: about 10 microseconds at 64 lanes on the movie reviews; sleeping and
        # being woken cost a VM more CPU time than that)
        mutex_unlock(mutex)
        for _ in range(state[_POOL_CHECKS]):
            # without the mutex, which the round's last thread needs: an opaque call makes the
            # compiler read the counter again every time (and on x86 a load sees the last store)
            thread_self()
            if state[_ROUND] != r0:
                break
        mutex_lock(mutex)
    while state[_ROUND] < state[_ROUNDS] and state[_TAKEN] == parts:
        cond_wait(cond, mutex)
    r = state[_ROUND]
    p = -1
    if r < state[_ROUNDS]:
        p = state[_TAKEN]
        state[_TAKEN] = p + 1
    else:
        r = -1
    mutex_unlock(mutex)
    return r, p


@numba.njit(cache=True, nogil=True)
def finish_part(memory, state, parts):
    """Marks a part of the current round done; True for the round's last one, whose thread then
    closes the round and calls next_round (every other thread waits in take_part until then)."""
    mutex = memory.ctypes.data
    mutex_lock(mutex)
    state[_FINISHED] += 1
    last = state[_FINISHED] == parts
    mutex_unlock(mutex)
    return last


@numba.njit(cache=True, nogil=True)
def next_round(memory, state):
    """Opens the next round (or ends the schedule) and wakes the threads that sleep."""
    mutex = memory.ctypes.data
    cond = mutex + _SYNC_BYTES
    mutex_lock(mutex)
    state[_ROUND] += 1
    state[_TAKEN] = 0
    state[_FINISHED] = 0
    mutex_unlock(mutex)
    cond_broadcast(cond)


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

    def run(self, fn, parts=None):
        """fn(t) for t in range(parts) (default: T), concurrently, on the first ``parts`` threads;
        re-raises the first part's exception."""
        parts = self.threads if parts is None else parts
        if not 1 <= parts <= self.threads:
            raise ValueError(f"parts must be in 1..{self.threads}, got {parts}")
        if parts == 1:
            fn(0)
            return
        if not self._pool:
            self._start()
        self._fn = fn
        helpers = self._pool[: parts - 1]
        for _, start, _ in helpers:
            start.release()
        try:
            fn(0)
        except BaseException as e:
            self._errors[0] = e
        for _, _, done in helpers:
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
