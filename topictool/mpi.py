"""The engine of `train` and `evaluate`: one process (``local``, the default) or P MPI ranks
(``--engine mpi``, started by ``mpiexec -n P topictool ...`` or ``srun topictool ...``).

mpi4py is imported here and only here, and only when ``--engine mpi`` is asked for: without the
``mpi`` extra nothing changes and nothing imports it. docs/cluster.md has the user's side.

What an engine offers the training loop, the models and the evaluator (``LocalEngine`` is the
same interface for one process, every operation the identity):

    rank, size, is_root   rank 0 of P decides and writes every shared file (store.py's rule)
    sum(a)                element-wise sum over the ranks, the same bits on every rank: integer
                          arrays by MPI Allreduce (exact in any order); float arrays in rank order
                          (each rank sums one slice of every rank's array, then the slices are
                          gathered), so the result never depends on the MPI library's choice of
                          reduction order
    max(a), any(flag)     integer maximum; "did any rank ...?" (the loop's stop agreement)
    bcast, allgather      small Python objects (pickled in memory, never on disk)
    allgatherv(a)         1-D arrays of every rank concatenated in rank order, with the offsets
    gatherv(a)            the same on rank 0 only (None elsewhere)
    agree(fn)             fallible work of each rank (reading its shards, writing its checkpoint
                          part): every rank learns whether every rank succeeded; on a failure every
                          rank raises the same one-line error (the lowest failing rank's), marked
                          ``agreed`` so that only rank 0 prints it
The bytes this rank receives in collectives and the seconds it spends in them are counted
(``comm``), so that a step can report them (comm_bytes, comm_seconds).

A rank that dies (SIGKILL, the out-of-memory killer, a lost node): MPICH's mpiexec and srun kill
the other ranks at once. Where the launcher does not (``mpiexec -disable-auto-cleanup``, srun
without --kill-on-bad-exit), every rank runs a watchdog thread on its own communicator: rank 0
and every other rank exchange a heartbeat every second, and a rank that hears nothing from its
partner for ``TOPICTOOL_MPI_TIMEOUT`` seconds (20) prints one line and exits; rank 0 first tells
the others to exit (silently: its line says why). A watchdog blocked inside an MPI call is found
by a thread of its own that makes none (``_Watchdog._deadman``). The run then resumes from its last complete
checkpoint. An unexpected error of one rank ends every rank the same way.
"""

import contextlib
import os
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from .corpus.corpus import Corpus, token_blocks
from .errors import InputError, TopicToolError

ENGINES = ("local", "mpi")
# MpiEngine.allgatherv: a ring of Sendrecv steps from this many bytes in all (tag of its messages)
RING_BYTES = 64 << 10
RING_TAG = 7
DEFAULT_TIMEOUT = 20.0

# environment variables a launcher sets in every process it starts (MPICH/Intel hydra, PMI-1/2,
# PMIx (Open MPI, srun --mpi=pmix), MVAPICH) and srun's own
_LAUNCHER_VARS = ("PMI_RANK", "PMI_FD", "PMI_PORT", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK")
# the number of processes as the launcher says it, where it says it
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "PMIX_SIZE")

RESUME_HINT = (
    "A run continues from its last complete checkpoint: mpiexec -n {P} topictool train --resume RUN --engine mpi"
)
LAUNCH_HINT = "start it as `mpiexec -n P topictool ...` or, in a Slurm job, `srun topictool ...` (docs/cluster.md)"


def launched(environ=None):
    """True if this process was started by an MPI launcher (mpiexec, mpirun, srun)."""
    env = os.environ if environ is None else environ
    if any(v in env for v in _LAUNCHER_VARS):
        return True
    step = env.get("SLURM_STEP_ID", "")
    # inside an srun step (a batch script itself runs as step "batch", not launched by srun)
    return step.isdigit() and "SLURM_PROCID" in env


def _launcher_size(environ=None):
    env = os.environ if environ is None else environ
    for v in _SIZE_VARS:
        if env.get(v, "").isdigit():
            return int(env[v])
    if env.get("SLURM_STEP_ID", "").isdigit() and env.get("SLURM_STEP_NUM_TASKS", "").isdigit():
        return int(env["SLURM_STEP_NUM_TASKS"])
    return None


def launcher_rank(environ=None):
    """This process's rank as the launcher's environment says it (0 when it does not)."""
    env = os.environ if environ is None else environ
    for v in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"):
        if env.get(v, "").isdigit():
            return int(env[v])
    return 0


@contextlib.contextmanager
def quiet_ranks(name):
    """Around a command's checks under ``--engine mpi``: an error every rank meets alike before
    the engine starts (a bad option) is printed by rank 0 only."""
    try:
        yield
    except TopicToolError as e:
        if name == "mpi" and launcher_rank() != 0:
            sys.exit(e.exit_code)
        raise


def on_ranks(name, threads, fn):
    """fn(engine) under the engine ``name``, with MPI's error rules (module docstring): an error
    every rank meets alike is printed once, by rank 0, and every rank exits with its code; an
    error of one rank alone is printed by it and ends every rank. Returns fn's result (rank 0's
    is the one to show; the others return None)."""
    if name == "local":
        if launched() and (_launcher_size() or 1) > 1:
            if launcher_rank() != 0:
                sys.exit(2)
            raise InputError(
                f"started by an MPI launcher as {_launcher_size()} processes but without --engine mpi (each would "
                f"do the whole work alone); add --engine mpi, or run it without the launcher"
            )
        return fn(LocalEngine())
    try:
        engine = make_engine(name, threads)
    except TopicToolError as e:
        if launcher_rank() != 0:  # every rank meets it alike: rank 0 says it
            sys.exit(e.exit_code)
        raise
    try:
        result = fn(engine)
    except AgreedError as e:
        engine.close()
        if not engine.is_root:
            sys.exit(e.exit_code)
        raise
    except BaseException as e:
        if isinstance(e, SystemExit):
            code = e.code if isinstance(e.code, int) else 1
        else:
            code = e.exit_code if isinstance(e, TopicToolError) else 1
            what = str(e) if isinstance(e, TopicToolError) else f"internal error: {e.__class__.__name__}: {e}"
            _say(f"{what} (MPI rank {engine.rank} of {engine.size}; stopping every rank)")
        if code == 0:
            engine.close()
            raise
        engine.abort(code)
    engine.close()
    return result if engine.is_root else None


def check_engine(name):
    if name not in ENGINES:
        raise InputError(f"--engine {name!r}: expected local or mpi")
    return name


def make_engine(name, threads=1):
    """The engine ``name`` ('local' or 'mpi'): InputError (one line, exit 2) when --engine mpi
    is asked for outside an MPI launcher or without mpi4py."""
    check_engine(name)
    if name == "local":
        return LocalEngine()
    return MpiEngine(threads)


class CommCounter:
    """Bytes received and seconds spent in collectives (totals; a step reports differences)."""

    def __init__(self):
        self.bytes = 0
        self.seconds = 0.0
        self.calls = 0

    def mark(self):
        return (self.bytes, self.seconds)

    def since(self, mark):
        return {"comm_bytes": int(self.bytes - mark[0]), "comm_seconds": round(self.seconds - mark[1], 6)}


class LocalEngine:
    """One process: every collective is the identity."""

    name = "local"
    rank = 0
    size = 1
    is_root = True

    def __init__(self):
        self.comm = CommCounter()

    def sum(self, a):
        return a

    def max(self, a):
        return a

    def any(self, flag):
        return bool(flag)

    def bcast(self, obj):
        return obj

    def allgather(self, obj):
        return [obj]

    def allgatherv(self, a):
        a = np.ascontiguousarray(a)
        return a, np.array([0, len(a)], dtype=np.int64)

    def gatherv(self, a):
        return [np.ascontiguousarray(a)]

    def barrier(self):
        pass

    def agree(self, fn, *args, **kw):
        return fn(*args, **kw)

    def close(self):
        pass

    def describe(self):
        return {"name": "local", "ranks": 1}


def _import_mpi():
    if not launched():
        raise InputError(f"--engine mpi was not started by an MPI launcher; {LAUNCH_HINT}")
    try:
        import mpi4py
    except ImportError:
        raise InputError(
            "--engine mpi needs mpi4py: pip install 'topictool[mpi]' (on a cluster, build mpi4py against "
            "the site's MPI instead: docs/cluster.md)"
        ) from None
    mpi4py.rc.thread_level = "multiple"  # the watchdog thread talks while the main thread computes
    from mpi4py import MPI

    return MPI


class AgreedError(InputError):
    """An error every rank raises alike (see MpiEngine.agree): rank 0 prints it, the others exit
    with its code silently."""

    def __init__(self, message, exit_code=2):
        super().__init__(message)
        self.exit_code = exit_code
        self.agreed = True


class MpiEngine:
    """P ranks of an MPI job (module docstring)."""

    name = "mpi"

    def __init__(self, threads=1):
        MPI = _import_mpi()
        self.MPI = MPI
        world = MPI.COMM_WORLD
        self.rank = world.Get_rank()
        self.size = world.Get_size()
        self.is_root = self.rank == 0
        self.threads = int(threads)
        expected = _launcher_size()
        if expected is not None and expected != self.size:
            raise InputError(
                f"the launcher started {expected} processes but MPI sees {self.size} in this one: mpi4py is "
                f"not built for the launcher's MPI (srun needs --mpi=pmi2 or pmix and mpi4py built against the "
                f"site's MPI; docs/cluster.md)"
            )
        self.comm_world = world.Dup()
        self.comm_world.Set_errhandler(MPI.ERRORS_RETURN)
        self.comm = CommCounter()
        self.hint = RESUME_HINT
        self.timeout = _timeout()
        self.watchdog = None
        if self.size > 1:
            hb = world.Dup()
            hb.Set_errhandler(MPI.ERRORS_RETURN)
            self.watchdog = _Watchdog(MPI, hb, self.timeout, self)
            self.watchdog.start()

    def describe(self):
        return {"name": "mpi", "ranks": self.size}

    # -- collectives -----------------------------------------------------------------------

    def _timed(self, nbytes, fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        self.comm.seconds += time.perf_counter() - t0
        self.comm.bytes += int(nbytes)
        self.comm.calls += 1
        return out

    def sum(self, a):
        """Element-wise sum over the ranks (a new array; the same bits on every rank)."""
        a = np.ascontiguousarray(a)
        if self.size == 1:
            return a.copy()
        if a.dtype.kind in "iub":
            out = np.empty_like(a)
            ring = 2 * a.nbytes * (self.size - 1) // self.size
            self._timed(ring, self.comm_world.Allreduce, a, out, self.MPI.SUM)
            return out
        return self._ordered_sum(a)

    def _ordered_sum(self, a):
        """Float sum in rank order: rank c receives slice c of every rank's array (Alltoallv),
        adds them in rank order, and the slices are gathered (Allgatherv): the bytes of a ring
        Allreduce, and a result that does not depend on the MPI library."""
        P = self.size
        flat = a.reshape(-1)
        n = flat.size
        bounds = np.array([(n * c) // P for c in range(P + 1)], dtype=np.int64)
        sizes = np.diff(bounds)
        mine = int(sizes[self.rank])
        parts = np.empty((P, mine), dtype=flat.dtype)
        send = [flat, (sizes.tolist(), bounds[:-1].tolist())]
        recv = [parts.reshape(-1), ([mine] * P, [mine * r for r in range(P)])]
        item = flat.dtype.itemsize
        self._timed(mine * (P - 1) * item, self.comm_world.Alltoallv, send, recv)
        chunk = parts[0].copy()
        for r in range(1, P):
            chunk += parts[r]
        out = np.empty(n, dtype=flat.dtype)
        self._timed((n - mine) * item, self.comm_world.Allgatherv, chunk, [out, (sizes.tolist(), bounds[:-1].tolist())])
        return out.reshape(a.shape)

    def max(self, a):
        a = np.ascontiguousarray(np.asarray(a))
        out = np.empty_like(a)
        self._timed(a.nbytes, self.comm_world.Allreduce, a, out, self.MPI.MAX)
        return out

    def any(self, flag):
        return bool(self.max(np.array([1 if flag else 0], dtype=np.int64))[0])

    def bcast(self, obj):
        return self._timed(0, self.comm_world.bcast, obj, 0)

    def allgather(self, obj):
        return self._timed(0, self.comm_world.allgather, obj)

    def allgatherv(self, a):
        """(every rank's 1-D array concatenated in rank order, offsets (P+1)). From RING_BYTES in
        all, the parts go round a ring of P - 1 Sendrecv steps, each rank passing on the part it
        has just received (bandwidth-optimal, as MPI's own large-message allgather): MPICH's
        Allgatherv of 140 KB between two ranks took 270-300 us where a Sendrecv of the same
        bytes took 15-20 (this machine; scripts/bench/mpi_scaling.py --probe)."""
        a = np.ascontiguousarray(a).reshape(-1)
        P, p = self.size, self.rank
        counts = np.empty(P, dtype=np.int64)
        self._timed(8 * P, self.comm_world.Allgather, np.array([len(a)], dtype=np.int64), counts)
        offsets = np.zeros(P + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        out = np.empty(int(offsets[-1]), dtype=a.dtype)
        received = (int(offsets[-1]) - len(a)) * a.dtype.itemsize
        if int(offsets[-1]) * a.dtype.itemsize < RING_BYTES:
            self._timed(received, self.comm_world.Allgatherv, a, [out, (counts.tolist(), offsets[:-1].tolist())])
            return out, offsets
        out[offsets[p] : offsets[p + 1]] = a
        t0 = time.perf_counter()
        for step in range(P - 1):
            give, take = (p - step) % P, (p - step - 1) % P
            self.comm_world.Sendrecv(
                out[offsets[give] : offsets[give + 1]], (p + 1) % P, RING_TAG,
                out[offsets[take] : offsets[take + 1]], (p - 1) % P, RING_TAG,
            )  # fmt: skip
        self.comm.seconds += time.perf_counter() - t0
        self.comm.bytes += received
        self.comm.calls += P - 1
        return out, offsets

    def shift(self, send, recv, dest, source):
        """One step of a ring: ``send`` to rank dest while receiving into ``recv`` (room enough)
        from rank source. Returns the number of elements received."""
        from mpi4py.util import dtlib

        status = self.MPI.Status()
        self._timed(0, self.comm_world.Sendrecv, send, dest, 0, recv, source, 0, status)
        n = status.Get_count(dtlib.from_numpy_dtype(recv.dtype))
        self.comm.bytes += n * recv.itemsize
        return n

    def gatherv(self, a):
        """Every rank's 1-D array on rank 0 (a list in rank order); None on the other ranks."""
        a = np.ascontiguousarray(a).reshape(-1)
        counts = self._timed(0, self.comm_world.gather, len(a), 0)
        if self.is_root:
            offsets = np.zeros(self.size + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            out = np.empty(int(offsets[-1]), dtype=a.dtype)
            recv = [out, (list(counts), offsets[:-1].tolist())]
            self._timed((int(offsets[-1]) - len(a)) * a.dtype.itemsize, self.comm_world.Gatherv, a, recv, 0)
            return [out[offsets[r] : offsets[r + 1]] for r in range(self.size)]
        self._timed(0, self.comm_world.Gatherv, a, None, 0)
        return None

    def barrier(self):
        self._timed(0, self.comm_world.Barrier)

    def agree(self, fn, *args, **kw):
        """fn(*args, **kw) on every rank; if it raised a topictool error (or OSError) on any rank,
        every rank raises AgreedError with the lowest failing rank's line and exit code."""
        failure = None
        result = None
        try:
            result = fn(*args, **kw)
        except TopicToolError as e:
            failure = (str(e), e.exit_code)
        except OSError as e:
            failure = (f"{e.filename + ': ' if e.filename else ''}{e.strerror or e}", 1)
        failures = self.allgather(failure)
        for rank, f in enumerate(failures):
            if f is not None:
                where = f" (rank {rank} of {self.size})" if rank else ""
                raise AgreedError(f[0] + where, f[1])
        return result

    def abort(self, code=1):
        """End every rank now (an unexpected error of this rank: its line is printed already)."""
        sys.stderr.flush()
        sys.stdout.flush()
        if self.watchdog is not None:
            self.watchdog.abort_all(code)
        os._exit(code)

    def close(self):
        """The normal end (every rank calls it): stop the watchdog with a handshake."""
        if self.watchdog is not None:
            self.watchdog.close()
            self.watchdog = None


def _timeout():
    raw = os.environ.get("TOPICTOOL_MPI_TIMEOUT", "")
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"TOPICTOOL_MPI_TIMEOUT={raw!r}: expected seconds (a number > 0)") from None
    if not value > 0:
        raise InputError(f"TOPICTOOL_MPI_TIMEOUT={raw!r}: expected seconds (a number > 0)")
    return value


class _Watchdog:
    """Heartbeats between rank 0 and every other rank on a communicator of their own (module
    docstring). Messages: HEARTBEAT, END (this rank stops sending: a normal end), ABORT (exit now
    with the code it carries, silently).

    The heartbeats are MPI calls, and an MPI call of the watchdog's can itself block: the library
    may hold its lock while this rank's main thread waits in a collective on a rank that stopped
    (SIGSTOP, a stuck node). A second thread (``_deadman``), which makes no MPI call, counts the
    watchdog's rounds; when it has seen none for the timeout, it says so and exits, as the
    watchdog would. It counts rounds it saw pass, not clock time, so that a main thread holding
    the GIL for a while (which stops both threads alike) is not taken for a hang."""

    HEARTBEAT, END, ABORT = 11, 12, 13

    def __init__(self, MPI, comm, timeout, engine):
        self.engine = engine  # for its resume hint (training sets it)
        self.MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = float(timeout)
        self.interval = min(1.0, self.timeout / 10.0)
        self.peers = list(range(1, self.size)) if self.rank == 0 else [0]
        self.last = dict.fromkeys(self.peers, time.monotonic())
        self.ended = set()
        self.pending = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="topictool-mpi-watchdog", daemon=True)
        self.rounds = 0  # the watchdog's rounds done (read by the deadman)
        self.deadman = threading.Thread(target=self._deadman, name="topictool-mpi-deadman", daemon=True)

    def start(self):
        self.thread.start()
        self.deadman.start()

    def _send(self, peer, tag, value=0):
        buf = np.array([value], dtype=np.int64)
        req = self.comm.Isend(buf, dest=peer, tag=tag)
        self.pending.append((req, buf))

    def _prune(self):
        self.pending = [(r, b) for r, b in self.pending if not r.Test()]

    def _drain(self):
        """Receive whatever arrived; returns the code of an ABORT, if one came."""
        status = self.MPI.Status()
        buf = np.zeros(1, dtype=np.int64)
        abort = None
        while self.comm.Iprobe(source=self.MPI.ANY_SOURCE, tag=self.MPI.ANY_TAG, status=status):
            src, tag = status.Get_source(), status.Get_tag()
            self.comm.Recv(buf, source=src, tag=tag)
            self.last[src] = time.monotonic()
            if tag == self.END:
                self.ended.add(src)
            elif tag == self.ABORT:
                abort = int(buf[0])
        return abort

    def _run(self):
        try:
            while not self.stopping.wait(self.interval):
                with self.lock:
                    if self.stopping.is_set():
                        break
                    for p in self.peers:
                        if p not in self.ended and len(self.pending) < 64 * len(self.peers):
                            self._send(p, self.HEARTBEAT)
                    self._prune()
                    abort = self._drain()
                    if abort is not None:
                        if self.rank == 0:  # a rank failed: it printed its line; end the others
                            self._abort_peers(abort)
                        _exit_now(abort)
                    now = time.monotonic()
                    for p in self.peers:
                        if p not in self.ended and now - self.last[p] > self.timeout:
                            self._lost(p, now - self.last[p])
                self.rounds += 1
        except Exception as e:  # an MPI error talking to a peer: it is gone
            _say(
                f"MPI rank {self.rank}: the connection to the other ranks failed "
                f"({e.__class__.__name__}: {e}); stopping"
            )
            _exit_now(1)

    def _lost(self, peer, silent_for):
        hint = self.engine.hint.replace("{P}", str(self.size))
        _ENDING.acquire()  # one line a rank, whichever thread finds the loss first
        _say(
            f"MPI rank {peer} of {self.size} stopped answering for {silent_for:.0f} s (killed, out of memory, or its "
            f"node lost); rank {self.rank} stops too. {hint}"
        )
        if self.rank == 0:
            self._abort_peers(1)
        _exit_now(1)

    def _deadman(self):
        """Exit when the watchdog has done no round while this thread woke more than timeout /
        interval times (the class docstring)."""
        seen, still = -1, 0
        while not self.stopping.wait(self.interval):
            if self.rounds != seen:
                seen, still = self.rounds, 0
                continue
            still += 1
            if still * self.interval > self.timeout and not self.stopping.is_set():
                hint = self.engine.hint.replace("{P}", str(self.size))
                _ENDING.acquire()
                _say(
                    f"MPI stopped answering on rank {self.rank} of {self.size} for {still * self.interval:.0f} s "
                    f"(a rank hangs, or its node is lost); rank {self.rank} stops. {hint}"
                )
                _exit_now(1)

    def _abort_peers(self, code):
        for p in self.peers:
            if p not in self.ended:
                try:
                    self._send(p, self.ABORT, code)
                except Exception:
                    pass
        deadline = time.monotonic() + 2.0
        while self.pending and time.monotonic() < deadline:
            try:
                self._prune()
            except Exception:
                break
            time.sleep(0.01)

    def abort_all(self, code):
        """This rank failed (its line is printed): rank 0 ends the others; another rank asks rank 0 to."""
        self.stopping.set()
        with self.lock:
            self._abort_peers(code)

    def close(self):
        """Stop with a handshake: END to every partner, then receive until each partner's END."""
        self.stopping.set()
        self.thread.join()
        with self.lock:
            for p in self.peers:
                self._send(p, self.END)
            deadline = time.monotonic() + self.timeout
            while len(self.ended) < len(self.peers) and time.monotonic() < deadline:
                abort = self._drain()
                if abort is not None:
                    _exit_now(abort)
                time.sleep(0.002)
            while self.pending and time.monotonic() < deadline:
                self._prune()
                time.sleep(0.002)
            if len(self.ended) < len(self.peers):
                gone = sorted(set(self.peers) - self.ended)
                _say(f"MPI rank {gone[0]} of {self.size} did not finish with the others; rank {self.rank} stops")
                _exit_now(1)
        self.comm.Free()


_ENDING = threading.Lock()  # taken, never released, by the thread that prints a rank's last line


def _say(message):
    try:
        sys.stderr.write(f"topictool: error: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


def _exit_now(code):
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(int(code))


# ---------------------------------------------------------------------------------------------
# which documents each rank owns


@dataclass(frozen=True, eq=False)
class RankCorpus(Corpus):
    """The documents of one rank (a contiguous run of the corpus), with where they sit in it.

    engine       the MpiEngine (the models' collectives)
    first_doc    the global index of the rank's first document
    D_total, N_total   the whole corpus's documents and tokens
    block_ptr    the rank's thread blocks (local document boundaries, threads+1)
    first_block  the global index of the rank's first thread block (rank * threads)
    sha256_total the checksum of the whole corpus (as corpus.json records it)
    """

    engine: object = None
    first_doc: int = 0
    D_total: int = 0
    N_total: int = 0
    block_ptr: np.ndarray = None
    first_block: int = 0
    sha256_total: str = ""

    def sha256(self):
        return self.sha256_total


def rank_corpus(path, engine, threads, part="train"):
    """This rank's documents of the training corpus at ``path`` (a RankCorpus).

    A corpus prepared with --shards: the shards are grouped into P contiguous runs of ~equal
    tokens and the rank reads only its own shard files; its thread blocks cut its documents by
    tokens. One file (train.npz, LdaC, UCI): every rank reads it and keeps its part: the
    corpus is cut into P x threads blocks of ~equal tokens (as one process with P x threads
    threads cuts it) and rank r keeps blocks r*threads .. (r+1)*threads-1.
    """
    from .corpus.prepared import load_corpus, load_shards, shard_table

    P, r = engine.size, engine.rank
    shards = shard_table(path, part)
    if shards is not None:
        ptr = np.zeros(len(shards) + 1, dtype=np.int64)
        np.cumsum([s["N"] for s in shards], out=ptr[1:])
        if len(shards) < P:
            raise InputError(
                f"the corpus has {len(shards)} shards for {P} ranks; each rank needs at least one "
                f"(prepare --shards N with N >= {P})",
                path,
            )
        groups = token_blocks(ptr, P)
        if np.any(np.diff(groups) == 0):
            raise InputError(f"the {len(shards)} shards cannot be shared by {P} ranks (one would get none)", path)
        mine = range(int(groups[r]), int(groups[r + 1]))
        local, total = load_shards(path, part, mine)
        first_doc = sum(int(s["D"]) for s in shards[: groups[r]])
        token_ptr = np.zeros(local.D + 1, dtype=np.int64)
        np.cumsum(local.doc_lengths(), out=token_ptr[1:])
        blocks = token_blocks(token_ptr, threads)
        D_total, N_total, sha = total["D"], total["N"], total.get("sha256", "")
    else:
        whole = load_corpus(path, part=part)
        token_ptr = np.zeros(whole.D + 1, dtype=np.int64)
        np.cumsum(whole.doc_lengths(), out=token_ptr[1:])
        cuts = token_blocks(token_ptr, P * threads)
        lo, hi = int(cuts[r * threads]), int(cuts[(r + 1) * threads])
        local = whole.subset(np.arange(lo, hi))
        blocks = cuts[r * threads : (r + 1) * threads + 1] - lo
        first_doc, D_total, N_total, sha = lo, whole.D, whole.N, whole.sha256()
        del whole
    if local.N == 0:
        raise InputError(f"rank {r} of {P} got no tokens (too few documents for {P} ranks?)", path)
    return RankCorpus(
        local.doc_ptr,
        local.word_ids,
        local.counts,
        local.vocab,
        engine=engine,
        first_doc=int(first_doc),
        D_total=int(D_total),
        N_total=int(N_total),
        block_ptr=np.asarray(blocks, dtype=np.int64),
        first_block=r * threads,
        sha256_total=sha,
    )


def doc_range(D, size, rank):
    """Documents [lo, hi) of ``rank`` when D documents are dealt out in contiguous runs."""
    return (D * rank) // size, (D * (rank + 1)) // size
