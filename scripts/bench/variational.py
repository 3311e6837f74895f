#!/usr/bin/env python
"""Benchmark of the variational family (docs/models/variational.md has the figures).

Not a test. Three parts, each judged by topictool's document-completion
perplexity (method "vb", the same code for every system: a peer's topic-word
matrix and alpha are turned into a Snapshot first):

  svi        lda-svi against gensim LdaModel and scikit-learn's
             LatentDirichletAllocation (online and batch) at equal passes: the
             same K, alpha, eta, minibatch, tau0 / offset, kappa / decay and
             local-step tolerance; training time only, one core
             (BLAS threads pinned to 1), each system in its own process.
  collapsed  the paper's protocol (Bleier 2013): PCSVB0 vs SCVB0 (alpha = 0.1) vs
             PCVB0, beta = 0.01, T = 200, 30 iterations, held-out perplexity every
             few iterations against documents seen (test documents split 70/30:
             --holdout fraction:0.3); with --gibbs-too the final models are also
             scored by issue 19's evaluator (every 5th token, Gibbs fold-in).
  variants   what clumping and minibatches do to PCSVB0's speed and perplexity.

    python scripts/bench/variational.py svi /tmp/movies --K 100 --passes 10 --json svi.json
    python scripts/bench/variational.py collapsed /tmp/movies --json collapsed.json
    python scripts/bench/variational.py variants /tmp/movies --json variants.json

Run it where the peers are installed (e.g. /work/bench-venv); a missing peer is
reported and skipped. Timings are wall-clock and CPU seconds of training only;
on a shared machine the CPU seconds are the steadier figure.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ONE_CORE, doc_term, gensim_corpus, load, save_snapshot


class Clock:
    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


# ----------------------------------------------------------------------------
# part 1: lda-svi against gensim and scikit-learn


def svi_topictool(c, a, out):
    from topictool.models.variational.svi import LdaSvi

    opts = LdaSvi.resolve_options(
        {
            "K": a.K,
            "alpha": a.alpha,
            "eta": a.eta,
            "tau0": a.tau0,
            "kappa": a.kappa,
            "minibatch": a.minibatch,
            "local_tol": a.tol,
            "max_local_iters": a.max_local_iters,
            **dict(kv.split("=", 1) for kv in a.set),
        }
    )
    LdaSvi(c.subset(np.arange(min(c.D, 20))), opts, a.seed).step()  # compile / load kernels, untimed
    model = LdaSvi(c, opts, a.seed)
    with Clock() as clock:
        for _ in range(a.passes):
            model.step()
    model.snapshot().save(out)
    return clock


def svi_gensim(c, a, out):
    from gensim.models import LdaModel

    bow, id2word = gensim_corpus(c)
    kw = dict(
        num_topics=a.K,
        id2word=id2word,
        alpha=np.full(a.K, a.alpha),
        eta=a.eta,
        passes=a.passes,
        random_state=a.seed,
        eval_every=None,
        update_every=1,
    )
    if not a.peer_defaults:
        kw.update(
            chunksize=a.minibatch, decay=a.kappa, offset=a.tau0, iterations=a.max_local_iters, gamma_threshold=a.tol
        )
    with Clock() as clock:
        m = LdaModel(bow, **kw)
    save_snapshot(out, m.get_topics(), a.alpha, c.vocab, "gensim")
    return clock


def _sklearn(c, a, out, method):
    """Online: ``partial_fit`` once per pass (fit() would add a final E-step over the corpus
    to the timed region); its step size is (learning_offset + 1 + t)^-decay, so
    learning_offset = tau0 - 1 gives lda-svi's schedule. Batch: ``fit``."""
    from sklearn.decomposition import LatentDirichletAllocation

    X = doc_term(c)
    kw = dict(
        n_components=a.K,
        doc_topic_prior=a.alpha,
        topic_word_prior=a.eta,
        learning_method=method,
        max_iter=a.passes,
        random_state=a.seed,
        n_jobs=1,
        evaluate_every=-1,
        total_samples=c.D,
    )
    if not a.peer_defaults:
        kw.update(
            batch_size=a.minibatch,
            learning_decay=a.kappa,
            learning_offset=max(a.tau0 - 1.0, 1.0),
            mean_change_tol=a.tol,
            max_doc_update_iter=a.max_local_iters,
        )
    m = LatentDirichletAllocation(**kw)
    with Clock() as clock:
        if method == "online":
            for _ in range(a.passes):
                m.partial_fit(X)
        else:
            m.fit(X)
    save_snapshot(out, m.components_, a.alpha, c.vocab, f"sklearn-{method}")
    return clock


SVI_SYSTEMS = {
    "topictool": svi_topictool,
    "gensim": svi_gensim,
    "sklearn-online": lambda c, a, out: _sklearn(c, a, out, "online"),
    "sklearn-batch": lambda c, a, out: _sklearn(c, a, out, "batch"),
}


def svi_child(a):
    c = load(a.corpus)
    clock = SVI_SYSTEMS[a.one](c, a, a.out)
    print(json.dumps({"seconds": clock.wall, "cpu_seconds": clock.cpu, "D": c.D, "N": c.N}))


def part_svi(a):
    from topictool.evaluate.completion import document_completion
    from topictool.snapshot import Snapshot

    test = load(a.corpus, "test")
    results = []
    env = dict(os.environ, **ONE_CORE)
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.systems.split(","):
            out = Path(tmp) / f"{name}.npz"
            cmd = [sys.executable, __file__, "svi", a.corpus, "--one", name, "--out", str(out)]
            for key in ("K", "passes", "alpha", "eta", "tau0", "kappa", "minibatch", "tol", "max_local_iters", "seed"):
                cmd += [f"--{key.replace('_', '-')}", str(getattr(a, key))]
            if a.peer_defaults:
                cmd.append("--peer-defaults")
            for kv in a.set:
                cmd += ["--set", kv]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["?"])[-1]
                print(f"{name}: skipped ({last})", file=sys.stderr)
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            ev = document_completion(Snapshot.load(out), test, holdout=a.holdout, method="vb", seed=1)
            r.update(
                system=name,
                perplexity=ev["perplexity"],
                docs_per_s=r["D"] * a.passes / r["seconds"],
                docs_per_cpu_s=r["D"] * a.passes / r["cpu_seconds"],
                tokens_per_s=r["N"] * a.passes / r["seconds"],
                tokens_per_cpu_s=r["N"] * a.passes / r["cpu_seconds"],
            )
            results.append(r)
            print(
                f"{name:15s} {r['seconds']:7.2f} s ({r['cpu_seconds']:7.2f} CPU s)  "
                f"{r['docs_per_cpu_s']:8.0f} docs/CPU s  {r['tokens_per_cpu_s'] / 1e6:5.2f} M tokens/CPU s  "
                f"perplexity {r['perplexity']:8.1f}",
                flush=True,
            )
    ref = next((r for r in results if r["system"] == "topictool"), None)
    if ref:
        print("\nrelative to topictool lda-svi:")
        for r in results:
            print(
                f"  {r['system']:15s} topictool is x{r['cpu_seconds'] / ref['cpu_seconds']:.2f} faster (CPU), "
                f"x{r['seconds'] / ref['seconds']:.2f} (wall); perplexity ratio "
                f"{ref['perplexity'] / r['perplexity']:.3f}"
            )
    return results


# ----------------------------------------------------------------------------
# parts 2 and 3: the collapsed methods, perplexity against documents seen


def collapsed_runs(a):
    """(label, model name, options) of the paper's comparison, from configs/pcsvb0-comparison.toml."""
    import tomllib

    with open(a.config, "rb") as f:
        cfg = tomllib.load(f)
    return [(r["label"], r["model"], dict(r.get("options", {}), K=a.T or r["K"])) for r in cfg["runs"]]


def variant_runs(a):
    T = a.T or 200
    base = {"K": T, "beta": 0.01}
    return [
        ("word by word", "hdp-pcsvb0", dict(base)),
        ("alpha over the corpus", "hdp-pcsvb0", dict(base, alpha_update="corpus")),
        ("clumping", "hdp-pcsvb0", dict(base, clumping=True)),
        ("minibatch 16", "hdp-pcsvb0", dict(base, minibatch=16)),
        ("minibatch 16 + clumping", "hdp-pcsvb0", dict(base, minibatch=16, clumping=True)),
        ("minibatch 64 + clumping", "hdp-pcsvb0", dict(base, minibatch=64, clumping=True)),
    ]


MODEL_CLASSES = {  # used when the registry does not list the model (yet)
    "lda-svi": "topictool.models.variational.svi:LdaSvi",
    "lda-scvb0": "topictool.models.variational.scvb0:LdaScvb0",
    "hdp-pcvb0": "topictool.models.variational.pcvb0:HdpPcvb0",
    "hdp-pcsvb0": "topictool.models.variational.pcsvb0:HdpPcsvb0",
}


def model_class(name):
    import importlib

    from topictool.models import registry

    if name in registry.MODELS:
        return registry.get(name)
    module, cls = MODEL_CLASSES[name].split(":")
    return getattr(importlib.import_module(module), cls)


def curve_child(a):
    """One run in its own process: iterations with evaluation every --eval-every."""
    from topictool.evaluate.completion import document_completion

    c = load(a.corpus)
    test = load(a.corpus, "test")
    cls = model_class(a.model)
    opts = cls.resolve_options(json.loads(a.options))
    cls(c.subset(np.arange(min(c.D, 20))), opts, a.seed).step()  # compile / load kernels, untimed
    model = cls(c, opts, a.seed)
    rows, cpu, wall = [], 0.0, 0.0
    for it in range(1, a.iterations + 1):
        with Clock() as clock:
            metrics = model.step()
        cpu += clock.cpu
        wall += clock.wall
        if it % a.eval_every == 0 or it == a.iterations:
            ev = document_completion(model.snapshot(), test, holdout=a.holdout, method="vb", seed=1)
            w = model.snapshot().topic_weight
            row = {}
            if a.gibbs_too and it == a.iterations:  # the evaluator as well, on the final model
                row["perplexity_gibbs"] = document_completion(
                    model.snapshot(), test, holdout="every:5", method="gibbs", burn_in=10, samples=40, seed=1
                )["perplexity"]
            rows.append(
                {
                    **row,
                    "iteration": it,
                    "documents_seen": metrics["documents_seen"],
                    "seconds": wall,
                    "cpu_seconds": cpu,
                    "perplexity": ev["perplexity"],
                    "topics_above_1pct": int((w > 0.01).sum()),
                    "alpha": metrics.get("alpha"),
                    "gamma": metrics.get("gamma"),
                    "tables_per_document": metrics.get("tables_per_document"),
                }
            )
    print(json.dumps({"rows": rows, "D": c.D, "N": c.N}))


def part_curves(a, runs):
    results = []
    env = dict(os.environ, **ONE_CORE)
    seeds = [int(x) for x in a.seeds.split(",")] if a.seeds else [a.seed]
    for (label, model, opts), seed in ((run, seed) for run in runs for seed in seeds):
        cmd = [
            sys.executable,
            __file__,
            "curve",
            a.corpus,
            "--model",
            model,
            "--options",
            json.dumps(opts),
            "--iterations",
            str(a.iterations),
            "--eval-every",
            str(a.eval_every),
            "--holdout",
            a.holdout,
            "--seed",
            str(seed),
        ] + (["--gibbs-too"] if a.gibbs_too else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            print(f"{label}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        r.update(label=label, model=model, options=opts, seed=seed)
        results.append(r)
        last = r["rows"][-1]
        print(
            f"{label:26s} seed {seed} {last['cpu_seconds']:7.1f} CPU s  "
            f"{r['N'] * a.iterations / last['cpu_seconds'] / 1e6:5.2f} M tokens/CPU s  "
            f"final perplexity {last['perplexity']:8.1f}  topics>1% {last['topics_above_1pct']}",
            flush=True,
        )
    if len(seeds) > 1:
        print(f"\nfinal held-out perplexity over seeds {a.seeds}: mean (min - max), CPU s mean")
        for label in dict.fromkeys(r["label"] for r in results):
            final = [r["rows"][-1] for r in results if r["label"] == label]
            p = np.array([f["perplexity"] for f in final])
            cpu = np.mean([f["cpu_seconds"] for f in final])
            spread = p.max() - p.min()
            print(f"{label:26s} {p.mean():9.1f} ({p.min():.1f} - {p.max():.1f})  spread {spread:6.1f}  {cpu:6.1f}")
        if a.gibbs_too:
            print(f"\nthe same final models by Gibbs fold-in, every 5th token held out (seeds {a.seeds}):")
            for label in dict.fromkeys(r["label"] for r in results):
                p = np.array([r["rows"][-1]["perplexity_gibbs"] for r in results if r["label"] == label])
                print(f"{label:26s} {p.mean():9.1f} ({p.min():.1f} - {p.max():.1f})  spread {p.max() - p.min():6.1f}")
    if results and len(seeds) == 1:
        its = [row["iteration"] for row in results[0]["rows"]]
        print("\nheld-out perplexity against documents seen:")
        print(f"{'iteration':>9s} {'documents':>10s} " + " ".join(f"{r['label']:>12.12s}" for r in results))
        for i, it in enumerate(its):
            cells = []
            for r in results:
                cells.append(f"{r['rows'][i]['perplexity']:12.1f}" if i < len(r["rows"]) else " " * 12)
            print(f"{it:9d} {results[0]['rows'][i]['documents_seen']:10d} " + " ".join(cells))
    return results


# ----------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("part", choices=["svi", "collapsed", "variants", "curve"])
    p.add_argument("corpus")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seeds", help="collapsed / variants: comma-separated seeds (e.g. 1,2,3,4,5); summary over them")
    p.add_argument("--holdout", default="fraction:0.3")
    p.add_argument("--json", help="Also write the results here.")
    # svi
    p.add_argument("--K", type=int, default=100)
    p.add_argument("--passes", type=int, default=10)
    p.add_argument("--alpha", type=float, default=0.1)
    p.add_argument("--eta", type=float, default=0.01)
    p.add_argument("--tau0", type=float, default=2.0)
    p.add_argument("--kappa", type=float, default=0.7)
    p.add_argument("--minibatch", type=int, default=256)
    p.add_argument("--tol", type=float, default=0.001)
    p.add_argument("--max-local-iters", type=int, default=100)
    p.add_argument("--systems", default="topictool,gensim,sklearn-online,sklearn-batch")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Extra lda-svi option (repeatable), e.g. --set warm_start=true.",
    )
    p.add_argument(
        "--peer-defaults",
        action="store_true",
        help="Run the peers with their own defaults (chunk size, decay, offset, iterations).",
    )
    # collapsed / variants
    p.add_argument("--T", type=int, default=0, help="Truncation / K (default: the config's).")
    p.add_argument("--config", default=str(Path(__file__).resolve().parents[2] / "configs" / "pcsvb0-comparison.toml"))
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--eval-every", type=int, default=3)
    p.add_argument(
        "--gibbs-too",
        action="store_true",
        help="Also score each final model as issue 19's evaluator does: every 5th token held out, Gibbs fold-in.",
    )
    # children
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--options", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.part == "svi" and a.one:
        return svi_child(a)
    if a.part == "curve":
        return curve_child(a)
    if a.part == "svi":
        results = part_svi(a)
    elif a.part == "collapsed":
        results = part_curves(a, collapsed_runs(a))
    else:
        results = part_curves(a, variant_runs(a))
    if a.json:
        machine = dict(zip(("sysname", "nodename", "release", "version", "machine"), os.uname()))
        Path(a.json).write_text(json.dumps({"args": vars(a), "machine": machine, "results": results}, indent=2))


if __name__ == "__main__":
    main()
