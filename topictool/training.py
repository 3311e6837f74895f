"""The one training loop every model uses.

It knows models only through the Model protocol (models/base.py): it builds or
restores a model, calls ``step()`` for each iteration, logs metrics.jsonl,
evaluates on a test corpus when asked, writes checkpoints and the latest
snapshot, and turns SIGTERM/SIGINT into "checkpoint, then exit 0".
"""

import datetime
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import __version__, store
from .corpus import load_corpus
from .corpus.holdout import parse_holdout
from .errors import InputError
from .models import registry
from .signals import StopFlag

RUN_FORMAT_VERSION = 1


@dataclass
class TrainSpec:
    corpus: str
    model: str
    iterations: int
    seed: int = 1
    threads: int = 1
    options: dict = field(default_factory=dict)  # resolved model options
    test: str = None
    eval_every: int = 0
    holdout: str = "every:5"
    eval_seed: int = 1
    allow_oov: bool = False
    checkpoint_every: int = 50
    keep_checkpoints: int = 3
    log_every: int = 10
    debug_checks: bool = False
    show_topics: int = 0  # print every topic's top words every N iterations (0: never)
    engine: str = "local"  # local | mpi (topictool/mpi.py; the number of ranks is in run.json)


def _now():
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def resolve_spec(corpus, model, iterations, seed, threads, options, **rest):
    """Validate everything before anything is written; returns (TrainSpec, model class)."""
    cls = registry.get(model)
    check_engine_support(cls, rest.get("engine", "local"))
    resolved = cls.resolve_options(options)
    if iterations is None or iterations < 0:
        raise InputError(f"-n/--iterations must be >= 0, got {iterations}")
    if threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    spec = TrainSpec(
        corpus=str(corpus),
        model=model,
        iterations=int(iterations),
        seed=int(seed),
        threads=int(threads),
        options=resolved,
        **rest,
    )
    for name in ("checkpoint_every", "keep_checkpoints", "log_every", "eval_every"):
        if getattr(spec, name) < 0:
            raise InputError(f"--{name.replace('_', '-')} must be >= 0")
    if spec.test:
        parse_holdout(spec.holdout)  # refused now, not at the first evaluation (nor stored in run.json)
        if spec.eval_every <= 0:
            spec.eval_every = max(1, spec.log_every)
    elif spec.eval_every:
        raise InputError("--eval-every needs --test (a test corpus to evaluate on)")
    return spec, cls


def check_engine_support(cls, engine):
    """--engine mpi only for the families that declare ``supports_mpi`` (models/base.py)."""
    from .mpi import check_engine

    check_engine(engine)
    if engine == "mpi" and not cls.supports_mpi:
        from .models.registry import names

        able = ", ".join(n for n in names() if registry.get(n).supports_mpi)
        raise InputError(f"{cls.name} does not run on MPI ranks: --engine mpi is refused (models that do: {able})")


def _load_inputs(spec, cls, engine=None):
    """The training and test corpora, checked against each other, the model and memory. Under
    MPI each rank reads its own documents (mpi.rank_corpus) and the whole test corpus."""
    if engine is not None and engine.size > 1:
        from .mpi import rank_corpus

        corpus = rank_corpus(spec.corpus, engine, spec.threads)
    else:
        corpus = load_corpus(spec.corpus, part="train")
    cls.check_size(corpus, spec.options, spec.threads)
    test = None
    if spec.test:
        from .evaluate.completion import heldout_split

        test = load_corpus(spec.test, part="test")
        heldout_split(test, corpus.vocab, spec.holdout, spec.seed, spec.allow_oov)
    return corpus, test


def train(spec, out, force=False, echo=None, engine=None):
    """Start a new run in directory ``out`` (replacing an old run of topictool's only with
    ``force``, and only once the new run has written its first checkpoint).

    ``engine`` (mpi.MpiEngine; None: one process): every rank runs this with its own documents;
    rank 0 alone checks and writes the run directory (the output rule), the others write only
    their parts of each checkpoint."""
    cls = registry.get(spec.model)
    engine = engine or LocalEngine()
    _resume_hint(engine, out)
    output = engine.agree(_root_output, engine, out, force, spec)
    with StopFlag() as stop:
        if output is None:
            output = _RankOutput()
        output.stop = stop
        corpus, test = engine.agree(_load_inputs, spec, cls, engine)
        model = cls(corpus, spec.options, spec.seed, threads=spec.threads)
        engine.agree(output.open)
        try:
            return _start(output, spec, cls, model, corpus, test, echo, engine)
        except BaseException:
            output.abort()
            raise
        finally:
            output.close()


def _root_output(engine, out, force, spec):
    """Rank 0's DirectoryOutput (checked now, before anything is read); None on other ranks."""
    if not engine.is_root:
        return None
    return store.DirectoryOutput(out, force, kind="run", inputs=[spec.corpus, spec.test], resume_hint=True)


class _RankOutput:
    """What ranks other than 0 know of the run directory: nothing of their own to open, commit
    or remove; they write their checkpoint parts where rank 0 says (``path``, broadcast)."""

    path = target = None

    def open(self):
        return self

    def commit(self):
        pass

    def abort(self):
        pass

    def close(self):
        pass


class LocalEngine:
    """mpi.LocalEngine without importing topictool.mpi (one process: every collective the identity)."""

    rank, size, is_root = 0, 1, True

    def agree(self, fn, *args, **kw):
        return fn(*args, **kw)

    def any(self, flag):
        return bool(flag)

    def bcast(self, obj):
        return obj


def _start(output, spec, cls, model, corpus, test, echo, engine):
    from .corpus.vocabulary import write_vocab

    run = output.path
    D, N = getattr(corpus, "D_total", corpus.D), getattr(corpus, "N_total", corpus.N)
    info = {
        "format_version": RUN_FORMAT_VERSION,
        "model": spec.model,
        "spec": asdict(spec),
        "options": spec.options,
        "seed": spec.seed,
        "threads": spec.threads,
        "corpus": {
            "path": str(Path(spec.corpus).resolve()),
            "sha256": corpus.sha256(),
            "D": D,
            "W": corpus.W,
            "N": N,
        },
        "test": None
        if test is None
        else {"path": str(Path(spec.test).resolve()), "sha256": test.sha256(), "D": test.D, "N": test.N},
        "step_unit": cls.step_unit,
        "iterations_done": 0,
        "iterations_target": spec.iterations,
        "seconds_total": 0.0,
        "topictool_version": __version__,
        "created": _now(),
        "updated": _now(),
        "bytes_per_token": model_bytes(model) / max(corpus.N, 1),
    }
    if engine.size > 1:
        info["engine"] = {"name": "mpi", "ranks": engine.size, "threads_per_rank": spec.threads}

    def write_start():
        if engine.is_root:
            (run / "checkpoints").mkdir()
            write_vocab(corpus.vocab, run / "vocab.txt")
            store.write_json(run / "run.json", info)

    engine.agree(write_start)
    return _loop(output, info, spec, model, corpus, test, 0, spec.iterations, echo, engine)


class _Resumed:
    """A run directory being continued: written in place, under its lock."""

    def __init__(self, run):
        self.path = self.target = Path(run)
        self.lock = store.DirLock(run)

    def commit(self):
        pass


def resume(run, more=None, threads=None, echo=None, show_topics=None, engine=None):
    """Continue a run from its newest usable checkpoint (holding the run's lock); ``show_topics``
    overrides the run's --show-topics for this session. An MPI run continues only under MPI with
    the same number of ranks and threads (``engine``), and is exact then too."""
    run = Path(run)
    engine = engine or LocalEngine()
    _resume_hint(engine, run)
    info, spec = engine.agree(_read_run, run, engine)
    if threads is not None and threads != spec.threads:
        raise InputError(f"this run uses --threads {spec.threads}; exact resume needs the same number")
    if show_topics is not None:
        spec.show_topics = int(show_topics)
    if more is not None and more < 0:
        raise InputError(f"-n/--iterations must be >= 0, got {more}")
    cls = registry.get(spec.model)
    # the paths as resolved when the run started (spec holds them as the user typed them)
    spec.corpus = info["corpus"]["path"]
    spec.test = (info.get("test") or {}).get("path")
    output = _Resumed(run)
    with StopFlag() as output.stop:
        engine.agree(lambda: output.lock.acquire("run directory") if engine.is_root else None)
        try:
            return _resume(output, info, spec, cls, more, echo, engine)
        finally:
            output.lock.release()


def _resume_hint(engine, run):
    """What a rank that loses its partners tells the user (mpi.py's watchdog)."""
    if hasattr(engine, "hint"):
        engine.hint = (
            f"The run continues from its last complete checkpoint: mpiexec -n {engine.size} topictool train "
            f"--resume {run} --engine mpi"
        )


def _read_run(run, engine):
    """(run.json, its TrainSpec), refused unless this engine can continue it exactly."""
    info = store.read_run_json(run)
    try:
        spec = TrainSpec(**info["spec"])
    except TypeError as e:
        raise InputError(f"run.json has an unexpected spec ({e})", run / "run.json") from None
    ranks = int((info.get("engine") or {}).get("ranks", 1))
    if ranks > 1 and engine.size != ranks:
        raise InputError(
            f"this run was trained on {ranks} MPI ranks; exact resume needs the same number: "
            f"mpiexec -n {ranks} topictool train --resume {run} --engine mpi"
        )
    if ranks == 1 and engine.size > 1:
        raise InputError(f"this run was trained in one process; continue it in one (without mpiexec -n {engine.size})")
    return info, spec


def _resume(output, info, spec, cls, more, echo, engine):
    run = output.path
    corpus, test = engine.agree(_load_inputs, spec, cls, engine)
    if corpus.sha256() != info["corpus"]["sha256"]:
        raise InputError("the corpus has changed since this run started (checksum differs)", info["corpus"]["path"])
    warn = echo or (lambda m: print(f"topictool: warning: {m}", file=sys.stderr))
    if engine.size > 1:
        path, meta, arrays = _latest_rank_checkpoint(run, engine, warn)
    else:
        path, meta, arrays = store.latest_checkpoint(run, warn=warn)
    if meta.get("model") != spec.model:
        raise InputError(f"checkpoint is of model {meta.get('model')}, run.json says {spec.model}", path)
    done = int(meta["iteration"])
    model = engine.agree(cls.from_state, corpus, spec.options, arrays, threads=spec.threads)
    target = done + more if more is not None else info["iterations_target"]
    info["iterations_target"] = max(target, done)
    if engine.is_root:
        # Metrics after the checkpoint belong to iterations that will be redone.
        store.rewrite_jsonl(run / "metrics.jsonl", store.read_jsonl(run / "metrics.jsonl", upto_iteration=done))
    info["seconds_total"] = float(meta.get("seconds_total", info.get("seconds_total", 0.0)))
    return _loop(output, info, spec, model, corpus, test, done, target, echo, engine)


def _latest_rank_checkpoint(run, engine, warn):
    """The newest checkpoint every rank can read its part of: (path, meta, the global arrays
    with this rank's own arrays added). Damaged or missing parts are reported (by rank 0) and
    the previous checkpoint is used, by every rank alike."""
    candidates = [p for p in reversed(store.list_checkpoints(run))]
    for path in candidates:
        try:
            meta, arrays = store.load_checkpoint(path)
            if int(meta.get("ranks", 1)) != engine.size:
                raise InputError(
                    f"this checkpoint was written by {meta.get('ranks', 1)} ranks, not {engine.size}", path
                )
            arrays.update(store.load_rank_part(run, meta, engine.rank))
            problem = None
        except InputError as e:
            problem = str(e)
        problems = engine.allgather(problem)
        bad = [p for p in problems if p is not None]
        if not bad:
            return path, meta, arrays
        if engine.is_root:
            warn(f"{bad[0]}; using the previous checkpoint")
    from .mpi import AgreedError

    raise AgreedError(f"{run}: no usable checkpoint in this run directory (every rank's part is needed)")


def model_bytes(model):
    """Bytes held in the model's numpy arrays (the per-token memory figure)."""
    total = 0
    for v in vars(model).values():
        if isinstance(v, np.ndarray):
            total += v.nbytes
    return total


def _loop(output, info, spec, model, corpus, test, done, target, echo, engine):
    """Steps ``done+1 .. target``; writes into ``output.path`` (``output.commit()`` after a
    checkpoint puts a staged run in place of the one it replaces). Under MPI every rank runs
    this loop in step; rank 0 alone logs and writes, and the ranks agree after every step on
    whether a signal asks them to stop, so that they all checkpoint the same iteration."""
    stop = output.stop
    root = engine.is_root
    reporter = Progress(done, target, spec.log_every, model.step_unit) if root else _Quiet()
    seconds_total = float(info.get("seconds_total", 0.0))
    it = done
    last_ckpt = done
    counter = getattr(engine, "comm", None)
    try:
        while it < target and not engine.any(stop.signal is not None):
            t0 = time.perf_counter()
            mark = counter.mark() if counter is not None else None
            metrics = model.step()
            dt = time.perf_counter() - t0
            it += 1
            seconds_total += dt
            tokens = model.step_tokens(metrics)
            row = {
                "iteration": it,
                "seconds": round(dt, 6),
                "elapsed": round(seconds_total, 3),
                "tokens_per_s": round(tokens / dt, 1) if dt > 0 else None,
            }
            row.update(metrics)
            if mark is not None:
                row.update(counter.since(mark))
            if spec.debug_checks:
                model.check_invariants()
            logged = spec.log_every and (it % spec.log_every == 0 or it == target)
            if logged:
                row["log_likelihood"] = float(model.log_likelihood())
                _check_finite(row, it, spec, engine)
            if test is not None and spec.eval_every and (it % spec.eval_every == 0 or it == target):
                row.update(_evaluate(model, test, spec, engine))
            if root:
                store.append_jsonl(output.path / "metrics.jsonl", row)
                reporter.update(row)
                if spec.show_topics and it % spec.show_topics == 0:
                    reporter.topics(it, model.snapshot())
            if spec.checkpoint_every and it % spec.checkpoint_every == 0 and it < target:
                _checkpoint(output, info, spec, model, it, seconds_total, engine)
                last_ckpt = it
    finally:
        reporter.close()
    if it != last_ckpt or not engine.bcast(bool(store.list_checkpoints(output.path)) if root else None):
        _checkpoint(output, info, spec, model, it, seconds_total, engine)
    if not root:
        return {"rank": engine.rank, "iterations_done": it}
    run = output.path
    summary = {
        "run": str(output.target),
        "model": spec.model,
        "iterations_done": it,
        "iterations_target": info["iterations_target"],
        "seconds_total": round(seconds_total, 3),
        "stopped_by_signal": stop.signal is not None,
    }
    rows = store.read_jsonl(run / "metrics.jsonl")
    if rows:
        summary["last"] = rows[-1]
    return summary


def _checkpoint(output, info, spec, model, iteration, seconds_total, engine):
    meta = {"model": spec.model, "seed": spec.seed, "threads": spec.threads, "seconds_total": seconds_total}
    state = model.state()
    parts = None
    if engine.size > 1:
        # every rank writes its own part, then rank 0 commits (store.save_checkpoint)
        run = Path(engine.bcast(str(output.path) if engine.is_root else None))
        own = {k: state.pop(k) for k in model.rank_state}
        checksum = engine.agree(store.save_rank_part, run, iteration, engine.rank, engine.size, own)
        parts = engine.allgather(checksum)
        meta["engine"] = "mpi"
    snap = run_snapshot(model, spec.model, iteration, output.target, info["corpus"]["path"], engine)

    def commit():
        if not engine.is_root:
            return
        run = output.path
        store.save_checkpoint(run, iteration, state, meta, keep=spec.keep_checkpoints, parts=parts)
        snap.save(run / "model.npz")
        info.update(iterations_done=iteration, seconds_total=round(seconds_total, 3), updated=_now())
        store.write_json(run / "run.json", info)
        output.commit()  # the run is whole now: a staged run replaces the old one here

    engine.agree(commit)


class _Quiet:
    """The progress of ranks other than 0: nothing."""

    def update(self, row):
        pass

    def topics(self, iteration, snapshot):
        pass

    def close(self):
        pass


def _check_finite(row, iteration, spec, engine=None):
    """A non-finite log-likelihood means the numbers broke down (an extreme prior the
    option checks let through?): stop before anything of it is written. (Under MPI the value is
    reduced, the same on every rank: every rank stops alike.)"""
    import math

    value = row.get("log_likelihood")
    if value is not None and not math.isfinite(value):
        error = InputError
        if engine is not None and engine.size > 1:
            from .mpi import AgreedError as error
        raise error(
            f"the log-likelihood of {spec.model} became {value} at iteration {iteration} (numerical "
            f"overflow; check the priors: {json.dumps(spec.options, sort_keys=True)}); nothing of "
            f"this iteration was written"
        )


def _evaluate(model, test, spec, engine=None):
    from .evaluate.completion import document_completion

    # the same evaluation as `evaluate RUN TEST` with its defaults (seed 1, the model's method);
    # under MPI the test documents are shared out among the ranks (the same figure)
    extra = {"engine": engine} if engine is not None and engine.size > 1 else {}
    res = document_completion(
        model.snapshot(),
        test,
        holdout=spec.holdout,
        method=model.eval_method,
        seed=spec.eval_seed,
        threads=spec.threads,
        allow_oov=spec.allow_oov,
        **extra,
    )
    return {"test_perplexity": res["perplexity"], "test_log_likelihood_per_token": res["log_likelihood_per_token"]}


def snapshot_of_run(run, iteration=None):
    """The Snapshot of a run at its latest (or a given) checkpoint."""
    run = Path(run)
    store.read_run_json(run)  # a run directory, or InputError
    if iteration is None and (run / "model.npz").exists():
        from .snapshot import Snapshot

        latest = store.list_checkpoints(run)
        snap = Snapshot.load(run / "model.npz")
        if latest and snap.meta.get("iteration") == store.checkpoint_iteration(latest[-1]):
            return snap
    model = model_of_run(run, iteration)
    info = store.read_run_json(run)
    return run_snapshot(model, info["model"], model.iteration, run, info["corpus"]["path"])


def run_snapshot(model, name, iteration, run, corpus_path, engine=None):
    """The snapshot a run publishes: the model's estimate; what it is (model, iteration, run,
    how to evaluate it); how its corpus was prepared (so `infer` tokenises text the same way);
    and for Gibbs models the training documents' topic counts (under MPI gathered from every
    rank: the result on rank 0, None on the others)."""
    if engine is not None and engine.size > 1:
        table = model.doc_topic_table() if model.eval_method == "gibbs" else None
        tables = _gather_table(engine, table)
        if not engine.is_root:
            return None
        snap = run_snapshot(model, name, iteration, run, corpus_path)
        if tables is not None and model.eval_method == "gibbs":
            snap.doc_topics = tables
        return snap
    snap = model.snapshot()
    snap.meta = dict(
        snap.meta,
        model=name,
        iteration=iteration,
        run=str(Path(run).resolve()),
        corpus=str(corpus_path),
        eval_method=model.eval_method,
        step_unit=model.step_unit,
    )
    prepared = _prepare_options(corpus_path)
    if prepared is not None:
        snap.meta["prepare"] = prepared
    if model.eval_method == "gibbs":
        table = model.doc_topic_table()
        if table is not None and len(table[0]) == model.D + 1 and (len(table[1]) == 0 or table[1].max() < snap.K):
            snap.doc_topics = table
    return snap


def _gather_table(engine, table):
    """Every rank's doc-topic CSR table (ptr, topic, count) joined in rank order, on rank 0."""
    flags = engine.allgather(table is not None)
    if not all(flags):
        return None
    ptr, topic, count = table
    ptrs = engine.gatherv(np.diff(ptr))
    topics = engine.gatherv(topic)
    counts = engine.gatherv(count)
    if not engine.is_root:
        return None
    lengths = np.concatenate(ptrs)
    out_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_ptr[1:])
    return out_ptr, np.concatenate(topics), np.concatenate(counts)


def _prepare_options(corpus_path):
    """The text options of a prepared corpus (corpus.json), or None for a bare LdaC/UCI file."""
    manifest = Path(corpus_path) / "corpus.json"
    try:
        options = json.loads(manifest.read_text("utf-8")).get("options")
    except (OSError, ValueError):
        return None
    keys = ("stopwords", "token_pattern", "encoding", "errors", "include", "source_format")
    return {k: options[k] for k in keys if k in options} if isinstance(options, dict) else None


def model_of_run(run, iteration=None):
    """The model of a run restored from its latest (or a given) checkpoint and its training
    corpus (InputError when either is gone). An MPI run's checkpoint is put together from every
    rank's part, in one process (to read: snapshots, doc-topics; it continues only under MPI)."""
    info = store.read_run_json(run)
    spec = TrainSpec(**info["spec"])
    cls = registry.get(spec.model)
    corpus = load_corpus(info["corpus"]["path"], part="train")
    _, meta, arrays = store.latest_checkpoint(run, iteration=iteration)
    if int(meta.get("ranks", 1)) > 1:
        arrays = _joined_parts(run, meta, arrays, cls, corpus, spec)
    return cls.from_state(corpus, spec.options, arrays, threads=spec.threads)


def _joined_parts(run, meta, arrays, cls, corpus, spec):
    """The state of an MPI checkpoint for one process: each rank's arrays joined in rank order
    (documents are dealt out to the ranks in order); the random streams are fresh (a model
    restored this way is read, never continued)."""
    from .kernels.rng import make_streams

    parts = [store.load_rank_part(run, meta, r) for r in range(int(meta["ranks"]))]
    arrays = dict(arrays)
    for name in cls.rank_state:
        if name != "rng":
            arrays[name] = np.concatenate([p[name] for p in parts])
    probe = cls.__new__(cls)
    probe.threads = spec.threads
    probe.opts = cls.resolve_options(dict(spec.options))
    arrays["rng"] = make_streams(int(arrays["seed"]), probe.rng_streams())
    return arrays


class Progress:
    """A rich progress bar on a terminal; a plain line every ``log_every`` iterations otherwise."""

    def __init__(self, done, target, log_every, unit="iteration"):
        self.log_every = log_every or 0
        self.target = target
        self.unit = unit
        self.bar = None
        if sys.stderr.isatty() and target > done:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeRemainingColumn,
            )
            from rich.progress import (
                Progress as RichProgress,
            )

            self.bar = RichProgress(
                TextColumn(f"[bold]train ({unit}s)"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                TimeRemainingColumn(),
                transient=False,
            )
            self.task = self.bar.add_task("train", total=target, completed=done, status="")
            self.bar.start()

    def update(self, row):
        status = _status(row)
        if self.bar is not None:
            self.bar.update(self.task, completed=row["iteration"], status=status)
        elif self.log_every and (row["iteration"] % self.log_every == 0 or row["iteration"] == self.target):
            print(f"{self.unit} {row['iteration']}/{self.target}  {status}", file=sys.stderr, flush=True)

    def topics(self, iteration, snapshot, top=10):
        """Every topic's most probable words (Mallet's --show-topics-interval): above the
        progress bar on a terminal, plain lines otherwise."""
        from .topics import top_words

        lines = [f"topics at {self.unit} {iteration}:"]
        for k, weight, words, _ in top_words(snapshot, top=top, rank="prob"):
            if weight > 0:
                lines.append(f"  {k:>4} {weight:7.2%}  {' '.join(words)}")
        text = "\n".join(lines)
        if self.bar is not None:
            self.bar.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def _status(row):
    parts = []
    if row.get("tokens_per_s"):
        parts.append(f"{row['tokens_per_s'] / 1e6:.2f} M tokens/s")
    if "log_likelihood" in row:
        parts.append(f"loglik {row['log_likelihood']:.6g}")
    if "test_perplexity" in row:
        parts.append(f"test perplexity {row['test_perplexity']:.1f}")
    parts.append(f"elapsed {row['elapsed']:.1f}s")
    return "  ".join(parts)


def load_config(path):
    """A TOML experiment config: model, K, iterations, seed, threads, and an [options] table
    (other top-level keys are model options too)."""
    import tomllib

    try:
        with open(path, "rb") as f:
            cfg = tomllib.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        raise InputError("config file not found", path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a TOML file", path) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", path) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not a TOML file (undecodable bytes at byte {e.start})", path) from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"invalid TOML: {e}", path, _toml_line(e)) from None
    options = cfg.pop("options", {})
    if not isinstance(options, dict):
        raise InputError("'options' must be a table ([options])", path)
    options = dict(options)
    top = {k: cfg.pop(k) for k in _CONFIG_TYPES if k in cfg}
    for k, (kind, low) in _CONFIG_TYPES.items():
        if k not in top:
            continue
        v = top[k]
        high = _CONFIG_MAX.get(k)
        if isinstance(v, bool) or not isinstance(v, kind) or (low is not None and v < low) or (high and v > high):
            want = "a string" if kind is str else f"an integer in [{low}, {high}]"
            raise InputError(f"{k} = {v!r}: expected {want}", path)
    for k, v in cfg.items():
        if isinstance(v, dict):
            raise InputError(f"unexpected table [{k}] (only [options] is read by train)", path)
        options[k] = v
    for k, v in options.items():
        if isinstance(v, (dict, list)) or not isinstance(v, (str, int, float, bool)):
            raise InputError(f"option {k} = {v!r}: expected a number, a string or true/false", path)
    if "K" in options and "K" in top and options["K"] != top["K"]:
        raise InputError(f"K is given twice ({top['K']} and options.K = {options['K']})", path)
    if "K" in options:
        top["K"] = options.pop("K")
        if isinstance(top["K"], bool) or not isinstance(top["K"], int) or top["K"] < 1:
            raise InputError(f"K = {top['K']!r}: expected an integer >= 1", path)
    return top, options


# the top-level keys of a config that are not model options: type, lower bound
_CONFIG_TYPES = {"model": (str, None), "K": (int, 1), "iterations": (int, 0), "seed": (int, 0), "threads": (int, 1)}
_CONFIG_MAX = {"K": 2**31 - 1, "iterations": 2**31 - 1, "seed": 2**64 - 1, "threads": 1024}


def _toml_line(e):
    import re

    m = re.search(r"line (\d+)", str(e))
    return int(m.group(1)) if m else None
