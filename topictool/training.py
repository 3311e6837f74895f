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


def _now():
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def resolve_spec(corpus, model, iterations, seed, threads, options, **rest):
    """Validate everything before anything is written; returns (TrainSpec, model class)."""
    cls = registry.get(model)
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


def _load_inputs(spec, cls):
    """The training and test corpora, checked against each other, the model and memory."""
    corpus = load_corpus(spec.corpus, part="train")
    cls.check_size(corpus, spec.options, spec.threads)
    test = None
    if spec.test:
        from .evaluate.completion import heldout_split

        test = load_corpus(spec.test, part="test")
        heldout_split(test, corpus.vocab, spec.holdout, spec.seed, spec.allow_oov)
    return corpus, test


def train(spec, out, force=False, echo=None):
    """Start a new run in directory ``out`` (replacing an old run of topictool's only with
    ``force``, and only once the new run has written its first checkpoint)."""
    cls = registry.get(spec.model)
    output = store.DirectoryOutput(out, force, kind="run", inputs=[spec.corpus, spec.test], resume_hint=True)
    with StopFlag() as output.stop:
        corpus, test = _load_inputs(spec, cls)
        model = cls(corpus, spec.options, spec.seed, threads=spec.threads)
        output.open()
        try:
            return _start(output, spec, cls, model, corpus, test, echo)
        except BaseException:
            output.abort()
            raise
        finally:
            output.close()


def _start(output, spec, cls, model, corpus, test, echo):
    from .corpus.vocabulary import write_vocab

    run = output.path
    (run / "checkpoints").mkdir()
    write_vocab(corpus.vocab, run / "vocab.txt")
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
            "D": corpus.D,
            "W": corpus.W,
            "N": corpus.N,
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
    store.write_json(run / "run.json", info)
    return _loop(output, info, spec, model, corpus, test, 0, spec.iterations, echo)


class _Resumed:
    """A run directory being continued: written in place, under its lock."""

    def __init__(self, run):
        self.path = self.target = Path(run)
        self.lock = store.DirLock(run)

    def commit(self):
        pass


def resume(run, more=None, threads=None, echo=None, show_topics=None):
    """Continue a run from its newest usable checkpoint (holding the run's lock); ``show_topics``
    overrides the run's --show-topics for this session."""
    run = Path(run)
    info = store.read_run_json(run)
    try:
        spec = TrainSpec(**info["spec"])
    except TypeError as e:
        raise InputError(f"run.json has an unexpected spec ({e})", run / "run.json") from None
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
        output.lock.acquire("run directory")
        try:
            return _resume(output, info, spec, cls, more, echo)
        finally:
            output.lock.release()


def _resume(output, info, spec, cls, more, echo):
    run = output.path
    corpus, test = _load_inputs(spec, cls)
    if corpus.sha256() != info["corpus"]["sha256"]:
        raise InputError("the corpus has changed since this run started (checksum differs)", info["corpus"]["path"])
    warn = echo or (lambda m: print(f"topictool: warning: {m}", file=sys.stderr))
    path, meta, arrays = store.latest_checkpoint(run, warn=warn)
    if meta.get("model") != spec.model:
        raise InputError(f"checkpoint is of model {meta.get('model')}, run.json says {spec.model}", path)
    done = int(meta["iteration"])
    model = cls.from_state(corpus, spec.options, arrays, threads=spec.threads)
    target = done + more if more is not None else info["iterations_target"]
    info["iterations_target"] = max(target, done)
    # Metrics after the checkpoint belong to iterations that will be redone.
    store.rewrite_jsonl(run / "metrics.jsonl", store.read_jsonl(run / "metrics.jsonl", upto_iteration=done))
    info["seconds_total"] = float(meta.get("seconds_total", info.get("seconds_total", 0.0)))
    return _loop(output, info, spec, model, corpus, test, done, target, echo)


def model_bytes(model):
    """Bytes held in the model's numpy arrays (the per-token memory figure)."""
    total = 0
    for v in vars(model).values():
        if isinstance(v, np.ndarray):
            total += v.nbytes
    return total


def _loop(output, info, spec, model, corpus, test, done, target, echo):
    """Steps ``done+1 .. target``; writes into ``output.path`` (``output.commit()`` after a
    checkpoint puts a staged run in place of the one it replaces)."""
    stop = output.stop
    reporter = Progress(done, target, spec.log_every, model.step_unit)
    seconds_total = float(info.get("seconds_total", 0.0))
    it = done
    last_ckpt = done
    try:
        while it < target and stop.signal is None:
            t0 = time.perf_counter()
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
            if spec.debug_checks:
                model.check_invariants()
            logged = spec.log_every and (it % spec.log_every == 0 or it == target)
            if logged:
                row["log_likelihood"] = float(model.log_likelihood())
                _check_finite(row, it, spec)
            if test is not None and spec.eval_every and (it % spec.eval_every == 0 or it == target):
                row.update(_evaluate(model, test, spec))
            store.append_jsonl(output.path / "metrics.jsonl", row)
            reporter.update(row)
            if spec.show_topics and it % spec.show_topics == 0:
                reporter.topics(it, model.snapshot())
            if spec.checkpoint_every and it % spec.checkpoint_every == 0 and it < target:
                _checkpoint(output, info, spec, model, it, seconds_total)
                last_ckpt = it
    finally:
        reporter.close()
    if it != last_ckpt or not store.list_checkpoints(output.path):
        _checkpoint(output, info, spec, model, it, seconds_total)
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


def _checkpoint(output, info, spec, model, iteration, seconds_total):
    run = output.path
    meta = {"model": spec.model, "seed": spec.seed, "threads": spec.threads, "seconds_total": seconds_total}
    store.save_checkpoint(run, iteration, model.state(), meta, keep=spec.keep_checkpoints)
    run_snapshot(model, spec.model, iteration, output.target, info["corpus"]["path"]).save(run / "model.npz")
    info.update(iterations_done=iteration, seconds_total=round(seconds_total, 3), updated=_now())
    store.write_json(run / "run.json", info)
    output.commit()  # the run is whole now: a staged run replaces the old one here


def _check_finite(row, iteration, spec):
    """A non-finite log-likelihood means the numbers broke down (an extreme prior the
    option checks let through?): stop before anything of it is written."""
    import math

    value = row.get("log_likelihood")
    if value is not None and not math.isfinite(value):
        raise InputError(
            f"the log-likelihood of {spec.model} became {value} at iteration {iteration} (numerical "
            f"overflow; check the priors: {json.dumps(spec.options, sort_keys=True)}); nothing of "
            f"this iteration was written"
        )


def _evaluate(model, test, spec):
    from .evaluate.completion import document_completion

    # the same evaluation as `evaluate RUN TEST` with its defaults (seed 1, the model's method)
    res = document_completion(
        model.snapshot(),
        test,
        holdout=spec.holdout,
        method=model.eval_method,
        seed=spec.eval_seed,
        threads=spec.threads,
        allow_oov=spec.allow_oov,
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


def run_snapshot(model, name, iteration, run, corpus_path):
    """The snapshot a run publishes: the model's estimate; what it is (model, iteration, run,
    how to evaluate it); how its corpus was prepared (so `infer` tokenises text the same way);
    and for Gibbs models the training documents' topic counts."""
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
    corpus (InputError when either is gone)."""
    info = store.read_run_json(run)
    spec = TrainSpec(**info["spec"])
    cls = registry.get(spec.model)
    corpus = load_corpus(info["corpus"]["path"], part="train")
    _, _, arrays = store.latest_checkpoint(run, iteration=iteration)
    return cls.from_state(corpus, spec.options, arrays, threads=spec.threads)


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
