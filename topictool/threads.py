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

import threading

__all__ = ["Workers", "split"]


def split(n, parts):
    """Boundaries (parts + 1) cutting range(n) into ``parts`` runs of nearly equal length."""
    return [n * p // parts for p in range(parts + 1)]


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

    def __getstate__(self):  # a model may be copied (tests, probes): its threads are not
        return {"threads": self.threads}

    def __setstate__(self, state):
        self.__init__(state["threads"])

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
