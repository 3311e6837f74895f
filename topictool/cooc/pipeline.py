"""The cooc job: reading the sources (reader threads), counting in worker processes,
the resumable partial state (OUT.state/) with its checkpoints and signals, progress."""

import contextlib
import hashlib
import json
import multiprocessing as mp
import os
import queue
import shutil
import signal
import sys
import threading
import time
import traceback
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import __version__, store
from ..corpus.sources import decode
from ..corpus.text import lines_kind
from ..corpus.tokenizer import DEFAULT_PATTERN, Tokenizer
from ..errors import InputError
from ..signals import StopFlag
from .count import PairCounter
from .reference import FORMAT, FORMAT_VERSION, write_reference
from .spill import _run_files, merge_into_run

STATE_VERSION = 1


# ----------------------------------------------------------------------------
# sources


def source_kind(path, source_format="auto"):
    """'wiki' (MediaWiki XML dump), 'lines' (a document per line; 'dir-lines' and 'zip-lines'
    for every member file's lines), 'dir' or 'zip'."""
    from ..corpus.wikipedia import is_dump

    path = Path(path)
    if not path.exists():
        raise InputError("no such file or directory", path)
    if source_format == "wiki":
        if not is_dump(path):
            raise InputError(
                "not a MediaWiki XML dump (no <mediawiki> element at its start; damaged or not decompressible?)", path
            )
        return "wiki"
    if source_format == "lines":
        return lines_kind(path)
    if path.is_dir():
        return "dir"
    if source_format == "files" or (path.suffix.lower() == ".zip" and zipfile.is_zipfile(path)):
        return "zip"
    return "wiki" if is_dump(path) else "lines"


@dataclass
class _Batch:
    source: int  # index of the input
    kind: str  # 'pages' or 'texts'
    items: list
    consumed: int  # units of the input it covers (pages, lines or files)
    nbytes: int  # uncompressed bytes of the items


def _iter_batches(index, path, kind, skip, opts, stats):
    """Batches of the units of one input after the first ``skip`` ones."""
    batch_bytes = opts["batch_bytes"]
    batch_items = opts["batch_items"]
    items, consumed, nbytes = [], 0, 0
    mode = "pages" if kind == "wiki" else "texts"
    for unit, size, count in _iter_units(path, kind, skip, opts, stats):
        items.append(unit)
        consumed += count
        nbytes += size
        if nbytes >= batch_bytes or len(items) >= batch_items:
            yield _Batch(index, mode, items, consumed, nbytes)
            items, consumed, nbytes = [], 0, 0
    if consumed:
        yield _Batch(index, mode, items, consumed, nbytes)


def _iter_units(path, kind, skip, opts, stats):
    from ..corpus.text import TextSource
    from ..corpus.wikipedia import iter_page_blocks, open_dump

    if kind == "wiki":
        for block, pages in iter_page_blocks(path, skip, stats, min(opts["batch_bytes"], 1 << 20)):
            yield block, len(block), pages
    elif kind == "lines":
        stream, raw_file = open_dump(path)
        with raw_file, stream:
            lineno = 0
            total = 0
            try:
                for lineno, line in enumerate(stream, 1):
                    total += len(line)
                    if lineno % 1024 == 0:
                        stats["bytes"] = total
                        with contextlib.suppress(OSError, ValueError):
                            stats["compressed_bytes"] = raw_file.tell()
                    if lineno > skip:
                        yield decode(line, path, lineno, opts["encoding"], opts["errors"]).rstrip("\r\n"), len(line), 1
            except (OSError, EOFError) as e:
                raise InputError(f"cannot read (damaged compressed data?): {e}", path, lineno + 1) from None
            stats["bytes"] = total
    else:
        total = 0
        source = TextSource(path, kind, opts["encoding"], opts["errors"], opts["include"])
        for i, (_, text) in enumerate(source):
            total += len(text)
            stats["bytes"] = total
            stats["units"] = i + 1
            if i >= skip:
                yield text, len(text), 1


# ----------------------------------------------------------------------------
# worker pools


def _process_batch(counter, batch):
    if batch.kind == "pages":
        return counter.add_pages(batch.items)
    return counter.add_texts(batch.items)


class _InlinePool:
    """--workers 1: count in the main process."""

    def __init__(self, config):
        self.counter = PairCounter(**config)
        self.done = []  # (batch source, consumed, documents) acknowledgements

    def submit(self, batch):
        docs = _process_batch(self.counter, batch)
        self.done.append((batch.source, batch.nbytes, docs))

    def poll(self):
        out, self.done = self.done, []
        return out

    def flush(self):
        return [self.counter.flush()]

    def close(self):
        pass


def _worker_main(wid, tasks, results, config, parent):
    # a batch system signals the whole process group: the main process checkpoints
    # (asking the workers to flush) and then stops them; a killed main process is
    # noticed by the watchdog thread
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    try:
        counter = PairCounter(**config)
        while True:
            msg = tasks.get()
            if msg[0] == "batch":
                batch = msg[1]
                docs = _process_batch(counter, batch)
                results.put(("ack", wid, (batch.source, batch.nbytes, docs)))
            elif msg[0] == "flush":
                results.put(("flushed", wid, counter.flush()))
            else:
                return
    except InputError as e:
        results.put(("input-error", wid, (e.message, e.path, e.line)))
    except BaseException as e:  # noqa: BLE001 - reported to the main process
        results.put(("error", wid, f"{e.__class__.__name__}: {e}\n{traceback.format_exc()}"))


def _exit_with_parent(parent):
    """A worker whose main process was killed exits at once (it may be blocked reading a
    half-sent batch from a pipe that the other workers keep open)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)


class _ProcessPool:
    """--workers N: N counting processes fed batches by the main process."""

    inflight_per_worker = 2

    def __init__(self, n, config):
        methods = mp.get_all_start_methods()
        ctx = mp.get_context("fork" if "fork" in methods else "spawn")
        self.results = ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(n)]
        self.inflight = [0] * n
        self.done = []
        self.procs = [
            ctx.Process(
                target=_worker_main,
                args=(i, self.tasks[i], self.results, config, os.getpid()),
                daemon=True,
                name=f"topictool-cooc-{i}",
            )
            for i in range(n)
        ]
        for p in self.procs:
            p.start()

    def _receive(self, block=True):
        while True:
            try:
                msg = self.results.get(timeout=1.0 if block else 0.0)
                break
            except queue.Empty:
                dead = [p for p in self.procs if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"cooc worker {dead[0].name} died (exit code {dead[0].exitcode})") from None
                if not block:
                    return None
        kind, wid, payload = msg
        if kind == "ack":
            self.inflight[wid] -= 1
            self.done.append(payload)
        elif kind == "input-error":
            raise InputError(*payload)
        elif kind == "error":
            raise RuntimeError(f"cooc worker {wid} failed: {payload}")
        return msg

    def submit(self, batch):
        while min(self.inflight) >= self.inflight_per_worker:
            self._receive()
        wid = int(np.argmin(self.inflight))
        self.inflight[wid] += 1
        self.tasks[wid].put(("batch", batch))

    def poll(self):
        while self._receive(block=False) is not None:
            pass
        out, self.done = self.done, []
        return out

    def flush(self):
        for t in self.tasks:
            t.put(("flush",))
        got = {}
        while len(got) < len(self.tasks):
            msg = self._receive()
            if msg[0] == "flushed":
                got[msg[1]] = msg[2]
        return [got[i] for i in range(len(self.tasks))]

    def close(self):
        for t in self.tasks:
            with contextlib.suppress(Exception):
                t.put(("stop",))
        for p in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)


# ----------------------------------------------------------------------------
# reading inputs in threads


class _Readers:
    """One thread per input (at most ``threads`` at a time) putting batches on a bounded queue."""

    def __init__(self, inputs, opts, maxsize):
        self.q = queue.Queue(maxsize=maxsize)
        self.stats = {i: {"bytes": 0, "compressed_bytes": 0} for i, *_ in inputs}
        self._stop = threading.Event()
        self._pending = list(inputs)
        self._active = 0
        self._threads = []
        self._lock = threading.Lock()
        self._max = max(1, opts["readers"])
        self.opts = opts
        with self._lock:
            self._start_more()

    def _start_more(self):
        while self._pending and self._active < self._max:
            args = self._pending.pop(0)
            t = threading.Thread(target=self._read, args=args, daemon=True)
            self._active += 1
            self._threads.append(t)
            t.start()

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self.q.put(item, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    def _read(self, index, path, kind, skip):
        try:
            for batch in _iter_batches(index, path, kind, skip, self.opts, self.stats[index]):
                if not self._put(("batch", batch)):
                    return
            self._put(("end", index))
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            self._put(("error", e))
        finally:
            with self._lock:
                self._active -= 1
                self._start_more()

    def get(self):
        return self.q.get()

    def close(self):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)


# ----------------------------------------------------------------------------
# the job


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def state_dir_for(out):
    out = Path(out)
    return out.with_name(out.name + ".state")


@dataclass
class CoocOptions:
    window: object = 10  # int w, or "doc"
    workers: int = 1
    source_format: str = "auto"  # auto | wiki | lines | files
    encoding: str = "utf-8"
    errors: str = "strict"
    include: str = "*"
    token_pattern: str = DEFAULT_PATTERN
    checkpoint_seconds: float = 300.0
    memory_mb: int = 2048  # for the pair counts of all workers together
    batch_bytes: int = 1 << 20
    batch_items: int = 20000
    restart: bool = False  # discard an existing partial state
    force: bool = False  # replace an existing output


def parse_window(value):
    """'doc' -> 'doc'; an integer >= 2 -> int; anything else is an InputError."""
    if isinstance(value, str) and value.strip().lower() in ("doc", "document", "documents"):
        return "doc"
    try:
        w = int(value)
    except (TypeError, ValueError):
        raise InputError(f"--window {value!r}: expected a number of tokens (>= 2) or 'doc'") from None
    if not 2 <= w < 2**31:
        raise InputError(f"--window {w}: a window needs at least 2 tokens and fewer than 2**31 (or use 'doc')")
    return w


class _NothingCounted(InputError):
    """The sources gave no document, or no word of the vocabulary: the reference would be all zeros."""


class Interrupted(KeyboardInterrupt):
    """SIGINT/SIGTERM during `cooc`: the state was saved; rerunning continues."""

    def __init__(self, message, state_dir=None):
        super().__init__(message)
        self.state_dir = state_dir


#: test hook: called after each batch is handed to the workers (may raise to simulate a kill)
_after_batch = None


class CoocJob:
    def __init__(self, sources, vocab_path, out, options=None, progress=None):
        from ..corpus.vocabulary import read_vocab, vocab_file

        self.opts = options or CoocOptions()
        self.window = parse_window(self.opts.window)
        if not sources:
            raise InputError("no REFERENCE given")
        if int(self.opts.workers) < 1:
            raise InputError(f"--workers {self.opts.workers}: must be at least 1")
        self.out = store.check_output_file(out, self.opts.force, inputs=[*sources, vocab_path])
        Tokenizer(self.opts.token_pattern)  # a bad pattern is refused before anything is read
        self.vocab_path = vp = vocab_file(vocab_path)
        self.vocab = read_vocab(vp)
        self.sources = [Path(s) for s in sources]
        self.kinds = [source_kind(s, self.opts.source_format) for s in self.sources]
        self.state_dir = state_dir_for(self.out)
        self._check_state_dir()
        self.progress = progress
        tok = Tokenizer(self.opts.token_pattern)
        # vocabulary words the tokenizer never produces (upper case, digits, spaces ...) count 0
        self.uncountable = [w for w in self.vocab if tok(w) != [w]]
        self.fingerprint = {
            "format": FORMAT,
            "state_version": STATE_VERSION,
            "sources": [
                {"path": str(s.resolve()), "kind": k, "size": _size(s), "mtime": _mtime(s)}
                for s, k in zip(self.sources, self.kinds)
            ],
            "vocab": str(vp.resolve()),
            "vocab_sha256": _sha256_file(vp),
            "W": len(self.vocab),
            "window": self.window,
            "token_pattern": self.opts.token_pattern,
            "encoding": self.opts.encoding,
            "errors": self.opts.errors,
            "include": self.opts.include,
        }

    # -- state

    def _new_state(self):
        return {
            "fingerprint": self.fingerprint,
            "consumed": [0] * len(self.sources),
            "done": [False] * len(self.sources),
            "runs": [],
            "units": 0,
            "documents": 0,
            "tokens": 0,
            "bytes": [0] * len(self.sources),
            "seconds": 0.0,
            "checkpoints": 0,
        }

    def _check_state_dir(self):
        """OUT.state must be absent or cooc's own partial state (never a user's directory)."""
        d = self.state_dir
        if not os.path.lexists(d):
            return
        if d.is_symlink() or not d.is_dir():
            raise InputError("is in the way of cooc's partial state (not a directory of cooc's); move it", d)
        if any(d.iterdir()):
            if store.kind_of(d) != "cooc-state":
                raise InputError(
                    "is not a cooc partial state (no .topictool marker); cooc would write its partial "
                    "counts here: move it",
                    d,
                )
            foreign = store.foreign_entries(d, "cooc-state")
            if foreign:
                raise InputError(f"holds files cooc did not write ({foreign[0]}); move them", d)

    def _load_state(self):
        p = self.state_dir / "state.npz"
        fresh = not self.state_dir.exists()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._lock = store.DirLock(self.state_dir).acquire("cooc partial state")
        if fresh or not (self.state_dir / store.MARKER).exists():
            store.write_marker(self.state_dir, "cooc-state")
        if self.opts.restart:
            for f in self.state_dir.iterdir():
                if f.name not in (store.MARKER, store.LOCK):
                    f.unlink()
        if not p.exists():
            self.state = self._new_state()
            self.word_units = np.zeros(len(self.vocab), np.int64)
            self._clean_orphans()
            return False
        arrays = store.load_npz(p, required=("state", "word_units"))
        try:
            state = json.loads(str(arrays["state"]))
        except ValueError:
            raise InputError("partial state is damaged (state is not JSON); rerun with --restart", p) from None
        if state.get("fingerprint") != self.fingerprint:
            diff = _first_difference(state.get("fingerprint") or {}, self.fingerprint)
            raise InputError(
                f"holds the partial counts of a different cooc run ({diff} differs); "
                f"rerun with --restart to discard them",
                self.state_dir,
            )
        self.state = state
        self.word_units = arrays["word_units"].astype(np.int64)
        if self.word_units.shape != (len(self.vocab),):
            raise InputError("partial state is damaged (word counts); rerun with --restart", p)
        for name, n in self.state["runs"]:
            for f in _run_files(self.state_dir, name):
                if not f.exists() or f.stat().st_size != 8 * n:
                    raise InputError(
                        f"partial state is damaged ({f.name} missing or truncated); rerun with --restart",
                        self.state_dir,
                    )
        self._clean_orphans()
        return True

    def _clean_orphans(self):
        keep = {f.name for name, _ in self.state["runs"] for f in _run_files(self.state_dir, name)}
        keep.add("state.npz")
        keep.update((store.MARKER, store.LOCK))
        for f in self.state_dir.iterdir():
            if f.name not in keep and store.own_name(f.name, "cooc-state"):
                with contextlib.suppress(OSError):
                    f.unlink()

    def _save_state(self):
        store.write_npz(
            self.state_dir / "state.npz", state=np.array(json.dumps(self.state)), word_units=self.word_units
        )

    # -- running

    def run(self):
        self._lock = None
        try:
            return self._run()
        except BaseException as e:
            # nothing saved yet, or nothing worth resuming: leave nothing behind
            if not (self.state_dir / "state.npz").exists() or isinstance(e, _NothingCounted):
                shutil.rmtree(self.state_dir, ignore_errors=True)
            raise
        finally:
            if self._lock is not None:
                self._lock.release()

    def _run(self):
        t_start = time.perf_counter()
        resumed = self._load_state()
        self.resumed = resumed
        workers = int(self.opts.workers)
        per_worker = max(64, int(self.opts.memory_mb) // workers)
        table_bits = int(min(22, max(16, np.floor(np.log2(per_worker * (1 << 20) / 4 / 16)))))
        spill_entries = max(1 << 20, (per_worker * (1 << 20) - 16 * (1 << table_bits)) // 48)
        config = dict(
            vocab=self.vocab,
            window=self.window,
            token_pattern=self.opts.token_pattern,
            table_bits=table_bits,
            spill_entries=spill_entries,
            run_dir=str(self.state_dir),
        )
        _warm_up()
        pool = _InlinePool(config) if workers == 1 else _ProcessPool(workers, config)
        todo = [
            (i, self.sources[i], self.kinds[i], self.state["consumed"][i])
            for i in range(len(self.sources))
            if not self.state["done"][i]
        ]
        ropts = dict(
            batch_bytes=int(self.opts.batch_bytes),
            batch_items=int(self.opts.batch_items),
            encoding=self.opts.encoding,
            errors=self.opts.errors,
            include=self.opts.include,
            readers=max(1, min(len(todo), (workers + 3) // 4)),
        )
        with StopFlag() as stop:
            readers = None
            reporter = _Reporter(self, self.progress)
            seconds0 = float(self.state.get("seconds", 0.0))
            try:
                readers = _Readers(todo, ropts, maxsize=2 * workers + 2) if todo else None
                remaining = len(todo)
                last_ckpt = time.perf_counter()
                while remaining:
                    msg = readers.get()
                    if msg[0] == "error":
                        raise msg[1]
                    if msg[0] == "end":
                        self.state["done"][msg[1]] = True
                        remaining -= 1
                    else:
                        batch = msg[1]
                        pool.submit(batch)
                        self.state["consumed"][batch.source] += batch.consumed
                        self.state["bytes"][batch.source] += batch.nbytes
                        if _after_batch is not None:
                            _after_batch(self)
                    reporter.update(pool.poll(), readers.stats)
                    if stop.signal is not None:
                        break
                    if time.perf_counter() - last_ckpt >= float(self.opts.checkpoint_seconds) and remaining:
                        self.state["seconds"] = seconds0 + time.perf_counter() - t_start
                        self._checkpoint(pool)
                        last_ckpt = time.perf_counter()
                self.state["seconds"] = seconds0 + time.perf_counter() - t_start
                self._checkpoint(pool)
            finally:
                if readers is not None:
                    readers.close()
                pool.close()
                reporter.close()
        if stop.signal is not None:
            raise Interrupted(
                f"interrupted by signal {stop.signal}; the partial counts are saved in "
                f"{self.state_dir}; run the same command again to continue",
                self.state_dir,
            )
        summary = self._finish()
        summary["seconds"] = round(self.state["seconds"], 3)
        summary["resumed"] = resumed
        return summary

    def _checkpoint(self, pool):
        for r in pool.flush():
            self.state["runs"].extend(r["runs"])
            self.word_units += r["word_units"]
            self.state["units"] += int(r["units"])
            self.state["documents"] += int(r["documents"])
            self.state["tokens"] += int(r["tokens"])
        self.state["checkpoints"] = int(self.state.get("checkpoints", 0)) + 1
        self._save_state()
        self._compact()

    def _compact(self, fanout=4):
        """Tiered merging: when `fanout` runs share a size class, merge them into one."""
        while True:
            levels = {}
            for name, n in self.state["runs"]:
                levels.setdefault(int(np.log(max(n, 1) / 65536.0) / np.log(fanout)) if n > 65536 else 0, []).append(
                    name
                )
            group = next((names for lvl, names in sorted(levels.items()) if len(names) >= fanout), None)
            if group is None:
                return
            merged = merge_into_run(self.state_dir, group)
            old = set(group)
            self.state["runs"] = [r for r in self.state["runs"] if r[0] not in old] + [merged]
            self._save_state()
            for name in group:
                for f in _run_files(self.state_dir, name):
                    with contextlib.suppress(OSError):
                        f.unlink()

    def _finish(self):
        st = self.state
        if st["documents"] == 0:
            raise _NothingCounted(
                "the reference holds no documents (a MediaWiki dump with no articles, or empty "
                "sources?); nothing written",
                self.sources[0],
            )
        if int(self.word_units.sum()) == 0:
            raise _NothingCounted(
                f"no word of the vocabulary ({len(self.vocab):,} words, {self.vocab_path}) occurs "
                f"in the {st['documents']:,} reference documents; is it the right vocabulary or "
                f"source format?",
                self.sources[0],
            )
        runs = [name for name, _ in self.state["runs"]]
        if len(runs) > 1:
            final = merge_into_run(self.state_dir, runs)
        elif runs:
            final = self.state["runs"][0]
        else:
            final = None
        st = self.state
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "topictool_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "sources": [
                {"path": s["path"], "kind": s["kind"], "units_read": c}
                for s, c in zip(self.fingerprint["sources"], st["consumed"])
            ],
            "vocab": self.fingerprint["vocab"],
            "vocab_sha256": self.fingerprint["vocab_sha256"],
            "W": len(self.vocab),
            "window": self.window,
            "unit": "document" if self.window == "doc" else f"window of {self.window} tokens",
            "oov_tokens_keep_positions": True,
            "token_pattern": self.opts.token_pattern,
            "uncountable_words": self.uncountable,
            "units": st["units"],
            "documents": st["documents"],
            "tokens": st["tokens"],
            "pairs": 0 if final is None else int(final[1]),
            "bytes_read": int(sum(st["bytes"])),
            "seconds": round(st["seconds"], 3),
        }
        small = dict(
            vocab_utf8=store.encode_words(self.vocab),
            word_counts=self.word_units,
            units=np.int64(st["units"]),
            documents=np.int64(st["documents"]),
            tokens=np.int64(st["tokens"]),
            window=np.int64(0 if self.window == "doc" else self.window),
            meta=np.array(json.dumps(meta)),
        )
        big = (
            {}
            if final is None
            else {
                "pair_keys": _run_files(self.state_dir, final[0])[0],
                "pair_counts": _run_files(self.state_dir, final[0])[1],
            }
        )
        write_reference(self.out, small, big)
        shutil.rmtree(self.state_dir, ignore_errors=True)
        return dict(meta, output=str(self.out))


def _first_difference(a, b):
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            return k
    return "nothing"


def _size(p):
    try:
        return p.stat().st_size if p.is_file() else None
    except OSError:
        return None


def _mtime(p):
    try:
        return int(p.stat().st_mtime) if p.is_file() else None
    except OSError:
        return None


def _warm_up():
    """Compile (or load from cache) the kernels before worker processes fork."""
    c = PairCounter(("a", "b"), window=2, table_bits=4)
    c.add_ids(np.array([0, 1, 0], np.int64), np.array([0, 3], np.int64))
    c.pairs()


class _Reporter:
    """Progress: a rich bar on a terminal, otherwise a plain line every ``every`` seconds."""

    def __init__(self, job, progress, every=30.0):
        self.job = job
        self.mode = progress if progress is not None else ("rich" if sys.stderr.isatty() else "plain")
        self.every = every
        self.t0 = time.perf_counter()
        self.last = self.t0
        self.docs = 0
        self.bytes = 0
        self.total = sum(s["size"] or 0 for s in job.fingerprint["sources"])
        # inputs finished before a restart count as read
        self.done_before = sum(s["size"] or 0 for s, done in zip(job.fingerprint["sources"], job.state["done"]) if done)
        self.bar = None
        if self.mode == "rich":
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("[bold]cooc"),
                BarColumn(),
                DownloadColumn(),
                TextColumn("{task.fields[status]}"),
                TimeRemainingColumn(),
                transient=False,
            )
            self.task = self.bar.add_task("cooc", total=self.total or None, status="")
            self.bar.start()

    def update(self, acks, stats):
        for _, nbytes, docs in acks:
            self.docs += docs
            self.bytes += nbytes
        now = time.perf_counter()
        done = self.done_before + sum(s.get("compressed_bytes", 0) for s in stats.values())
        rate = self.bytes / max(now - self.t0, 1e-9) / 1e6
        status = f"{self.docs:,} documents  {self.bytes / 1e6:,.0f} MB read  {rate:.1f} MB/s"
        if self.bar is not None:
            self.bar.update(self.task, completed=done, status=status)
        elif self.mode == "plain" and now - self.last >= self.every:
            self.last = now
            pct = f"  {100 * done / self.total:.1f}% of the input" if self.total else ""
            print(f"cooc: {status}{pct}", file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def build_reference(sources, vocab_path, out, options=None, progress=None):
    """Count co-occurrences of ``vocab_path``'s words in ``sources`` into ``out`` (REF.npz)."""
    return CoocJob(sources, vocab_path, out, options, progress).run()
