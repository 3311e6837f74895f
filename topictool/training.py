"""The one training loop every model uses.

It knows models only through the Model protocol (models/base.py): it builds or
restores a model, calls ``step()`` for each iteration, logs metrics.jsonl,
evaluates on a test corpus when asked, writes checkpoints and the latest
snapshot, and turns SIGTERM/SIGINT into "checkpoint, then exit 0".
"""
import datetime
import json
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import __version__, store
from .corpus import load_corpus
from .errors import InputError
from .models import registry

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
    checkpoint_every: int = 50
    keep_checkpoints: int = 3
    log_every: int = 10
    debug_checks: bool = False


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def resolve_spec(corpus, model, iterations, seed, threads, options, **rest):
    """Validate everything before anything is written; returns (TrainSpec, model class)."""
    cls = registry.get(model)
    resolved = cls.resolve_options(options)
    if iterations is None or iterations < 0:
        raise InputError(f"-n/--iterations must be >= 0, got {iterations}")
    if threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    spec = TrainSpec(corpus=str(corpus), model=model, iterations=int(iterations), seed=int(seed),
                     threads=int(threads), options=resolved, **rest)
    if spec.test and spec.eval_every <= 0:
        spec.eval_every = max(1, spec.log_every)
    for name in ("checkpoint_every", "keep_checkpoints", "log_every", "eval_every"):
        if getattr(spec, name) < 0:
            raise InputError(f"--{name.replace('_', '-')} must be >= 0")
    return spec, cls


def train(spec, out, force=False, echo=None):
    """Start a new run in directory ``out``."""
    cls = registry.get(spec.model)
    corpus = load_corpus(spec.corpus, part="train")
    test = load_corpus(spec.test, part="test") if spec.test else None
    model = cls(corpus, spec.options, spec.seed, threads=spec.threads)
    out = Path(out)
    if out.exists():
        if not force:
            raise InputError("run directory already exists (use --force to replace it, or --resume to continue)",
                             out)
        import shutil

        shutil.rmtree(out)
    (out / "checkpoints").mkdir(parents=True)
    from .corpus.vocabulary import write_vocab

    write_vocab(corpus.vocab, out / "vocab.txt")
    info = {
        "format_version": RUN_FORMAT_VERSION,
        "model": spec.model,
        "spec": asdict(spec),
        "options": spec.options,
        "seed": spec.seed,
        "threads": spec.threads,
        "corpus": {"path": str(Path(spec.corpus).resolve()), "sha256": corpus.sha256(),
                   "D": corpus.D, "W": corpus.W, "N": corpus.N},
        "test": None if test is None else {"path": str(Path(spec.test).resolve()), "sha256": test.sha256(),
                                             "D": test.D, "N": test.N},
        "iterations_done": 0,
        "iterations_target": spec.iterations,
        "seconds_total": 0.0,
        "topictool_version": __version__,
        "created": _now(),
        "updated": _now(),
        "bytes_per_token": model_bytes(model) / max(corpus.N, 1),
    }
    store.write_json(out / "run.json", info)
    return _loop(out, info, spec, model, corpus, test, 0, spec.iterations, echo)


def resume(run, more=None, threads=None, echo=None):
    """Continue a run from its newest usable checkpoint."""
    run = Path(run)
    info = store.read_run_json(run)
    spec = TrainSpec(**info["spec"])
    if threads is not None and threads != spec.threads:
        raise InputError(f"this run uses --threads {spec.threads}; exact resume needs the same number")
    cls = registry.get(spec.model)
    corpus = load_corpus(info["corpus"]["path"], part="train")
    if corpus.sha256() != info["corpus"]["sha256"]:
        raise InputError("the corpus has changed since this run started (checksum differs)", info["corpus"]["path"])
    test = load_corpus(info["test"]["path"], part="test") if info.get("test") else None
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
    return _loop(run, info, spec, model, corpus, test, done, target, echo)


def model_bytes(model):
    """Bytes held in the model's numpy arrays (the per-token memory figure)."""
    total = 0
    for v in vars(model).values():
        if isinstance(v, np.ndarray):
            total += v.nbytes
    return total


class _StopFlag:
    def __init__(self):
        self.signal = None

    def __call__(self, signum, frame):
        self.signal = signum


def _loop(run, info, spec, model, corpus, test, done, target, echo):
    stop = _StopFlag()
    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    reporter = Progress(done, target, spec.log_every)
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
            # a step is a pass over the corpus unless the model says how many tokens it visited
            # (an online minibatch step reports "tokens")
            tokens = metrics.get("tokens", corpus.N)
            row = {"iteration": it, "seconds": round(dt, 6), "elapsed": round(seconds_total, 3),
                   "tokens_per_s": round(tokens / dt, 1) if dt > 0 else None}
            row.update(metrics)
            if spec.debug_checks:
                model.check_invariants()
            logged = spec.log_every and (it % spec.log_every == 0 or it == target)
            if logged:
                row["log_likelihood"] = float(model.log_likelihood())
            if test is not None and spec.eval_every and (it % spec.eval_every == 0 or it == target):
                row.update(_evaluate(model, test, spec))
            store.append_jsonl(run / "metrics.jsonl", row)
            reporter.update(row)
            if spec.checkpoint_every and it % spec.checkpoint_every == 0 and it < target:
                _checkpoint(run, info, spec, model, it, seconds_total)
                last_ckpt = it
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        reporter.close()
    if it != last_ckpt or not store.list_checkpoints(run):
        _checkpoint(run, info, spec, model, it, seconds_total)
    summary = {"run": str(run), "model": spec.model, "iterations_done": it,
               "iterations_target": info["iterations_target"], "seconds_total": round(seconds_total, 3),
               "stopped_by_signal": stop.signal is not None}
    rows = store.read_jsonl(run / "metrics.jsonl")
    if rows:
        summary["last"] = rows[-1]
    return summary


def _checkpoint(run, info, spec, model, iteration, seconds_total):
    meta = {"model": spec.model, "seed": spec.seed, "threads": spec.threads, "seconds_total": seconds_total}
    store.save_checkpoint(run, iteration, model.state(), meta, keep=spec.keep_checkpoints)
    snap = model.snapshot()
    snap.meta = dict(snap.meta, model=spec.model, iteration=iteration, run=str(Path(run).resolve()))
    snap.save(run / "model.npz")
    info.update(iterations_done=iteration, seconds_total=round(seconds_total, 3), updated=_now())
    store.write_json(run / "run.json", info)


def _evaluate(model, test, spec):
    from .evaluate.perplexity import document_completion

    method = getattr(model, "eval_method", "gibbs")
    res = document_completion(model.snapshot(), test, holdout=spec.holdout, method=method, seed=spec.seed,
                              threads=spec.threads)
    return {"test_perplexity": res["perplexity"], "test_log_likelihood_per_token": res["log_likelihood_per_token"]}


def snapshot_of_run(run, iteration=None):
    """The Snapshot of a run at its latest (or a given) checkpoint."""
    run = Path(run)
    info = store.read_run_json(run)
    if iteration is None and (run / "model.npz").exists():
        from .snapshot import Snapshot

        latest = store.list_checkpoints(run)
        snap = Snapshot.load(run / "model.npz")
        if latest and snap.meta.get("iteration") == int(latest[-1].stem.split("-")[1]):
            return snap
    spec = TrainSpec(**info["spec"])
    cls = registry.get(spec.model)
    corpus = load_corpus(info["corpus"]["path"], part="train")
    _, meta, arrays = store.latest_checkpoint(run, iteration=iteration)
    model = cls.from_state(corpus, spec.options, arrays, threads=spec.threads)
    snap = model.snapshot()
    snap.meta = dict(snap.meta, model=spec.model, iteration=int(meta["iteration"]), run=str(run.resolve()))
    return snap


class Progress:
    """A rich progress bar on a terminal; a plain line every ``log_every`` iterations otherwise."""

    def __init__(self, done, target, log_every):
        self.log_every = log_every or 0
        self.target = target
        self.bar = None
        if sys.stderr.isatty() and target > done:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, \
                TimeRemainingColumn

            self.bar = RichProgress(TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(),
                                    TextColumn("{task.fields[status]}"), TimeRemainingColumn(), transient=False)
            self.task = self.bar.add_task("train", total=target, completed=done, status="")
            self.bar.start()

    def update(self, row):
        status = _status(row)
        if self.bar is not None:
            self.bar.update(self.task, completed=row["iteration"], status=status)
        elif self.log_every and (row["iteration"] % self.log_every == 0 or row["iteration"] == self.target):
            print(f"iteration {row['iteration']}/{self.target}  {status}", file=sys.stderr, flush=True)

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
            cfg = tomllib.load(f)
    except FileNotFoundError:
        raise InputError("config file not found", path) from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"invalid TOML: {e}", path) from None
    options = dict(cfg.pop("options", {}) or {})
    top = {k: cfg.pop(k) for k in ("model", "K", "iterations", "seed", "threads") if k in cfg}
    for k, v in cfg.items():
        if isinstance(v, dict):
            raise InputError(f"unexpected table [{k}] (only [options] is read by train)", path)
        options[k] = v
    return top, options


def dump(obj):
    return json.dumps(obj, indent=2)
