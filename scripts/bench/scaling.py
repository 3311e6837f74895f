#!/usr/bin/env python
"""Thread scaling of one model: tokens/s, speed-up, efficiency, CPU seconds per step, peak
memory per token and held-out perplexity for each thread count, with tomotopy's LDAModel
beside lda-gibbs when it is installed (bench environment only).

    python scripts/bench/scaling.py --model lda-gibbs --corpus build/movies --threads 1,2,16
    python scripts/bench/scaling.py --synth 50000:20000:100:200 --threads 1,2 --steps 20 --tomotopy

--corpus is a prepared corpus (its test part, when it has one, gives the perplexity); --synth
D:W:K:LENGTH makes a `topictool synth lda` corpus of D documents (Poisson lengths) in a
temporary directory first. Every (tool, threads) configuration runs in a process of its own, so
its peak memory is its own; --repeat R runs all of them R times, alternating, and reports
medians, so that drift of the machine's speed hits every configuration alike.

Per configuration (JSON with --json FILE):
  first_tokens_per_s   tokens x steps / seconds over the first --first steps from the random
                       start, model construction (each tool's own initialisation) included
  tokens_per_s         the same over the --steps steps after those (steady state)
  cpu_per_step         CPU seconds of the whole process per step in steady state (all threads)
  speedup, efficiency  tokens_per_s against the same tool's one thread (efficiency: / threads)
  bytes_per_token      (peak RSS - RSS before the model was built) / training tokens
  model_bytes_per_token  the model's own numpy arrays / training tokens (topictool only)
  array_peak_bytes_per_token  the peak of numpy's allocations from building the model to the
                       end of its second step (tracemalloc, in an untimed model of its own),
                       temporaries included / training tokens
  perplexity           held-out document-completion perplexity (every:5 held out, topictool's
                       scorer for every tool) after the last step
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from _common import ONE_CORE, load, peak_rss_mb, save_snapshot, status_mb, tomotopy_lda, tomotopy_phi


def rss_mb():
    mb = status_mb("VmRSS")
    return float("nan") if mb is None else mb


def array_bytes(obj):
    return sum(v.nbytes for v in vars(obj).values() if isinstance(v, np.ndarray))


def perplexity(snapshot_path, corpus_dir, threads):
    from topictool.evaluate.completion import document_completion
    from topictool.snapshot import Snapshot

    test = corpus_dir / "test.npz"
    if not test.exists():
        return None
    res = document_completion(Snapshot.load(snapshot_path), load(corpus_dir, part="test"), seed=1, threads=threads)
    return res["perplexity"]


def run_topictool(a, threads, out):
    from topictool.models import registry

    corpus = load(a.corpus)
    cls = registry.get(a.model)
    options = cls.resolve_options({"K": a.K, **dict(kv.split("=", 1) for kv in a.set)})
    # compile (or load from numba's cache) every kernel before the clock starts
    warm = cls(corpus.subset(np.arange(min(corpus.D, 20))), options, 1, threads=threads)
    warm.step()
    warm.log_likelihood()
    warm.snapshot()
    del warm
    before = rss_mb()
    # numpy's allocations (the model's arrays and every temporary) in a model of its own, built
    # and stepped twice: tracemalloc's hooks take the GIL at every allocation, numba's inside
    # nogil kernels included, which would slow the timed threads (64 threads: 5x the CPU)
    tracemalloc.start()
    traced_model = cls(corpus, options, a.seed, threads=threads)
    for _ in range(2):
        traced_model.step()
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del traced_model
    t0, c0 = time.perf_counter(), time.process_time()
    m = cls(corpus, options, a.seed, threads=threads)
    tokens = 0
    for _ in range(a.first):
        tokens += m.step_tokens(m.step())
    t1, c1 = time.perf_counter(), time.process_time()
    steady = 0
    for _ in range(a.steps):
        steady += m.step_tokens(m.step())
    t2, c2 = time.perf_counter(), time.process_time()
    peak = peak_rss_mb()  # before the snapshot's dense phi
    m.snapshot().save(out / "model.npz")
    return {
        "first_tokens_per_s": tokens / (t1 - t0) if a.first else None,
        "tokens_per_s": steady / (t2 - t1),
        "cpu_per_step": (c2 - c1) / a.steps,
        "first_cpu": c1 - c0,
        "bytes_per_token": (peak - before) * 2**20 / corpus.N,
        "model_bytes_per_token": array_bytes(m) / corpus.N,
        "array_peak_bytes_per_token": traced / corpus.N,
        "N": corpus.N,
        "log_likelihood_per_token": m.log_likelihood() / corpus.N,
    }


def run_tomotopy(a, threads, out):
    import tomotopy as tp

    corpus = load(a.corpus)
    before = rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    m = tomotopy_lda(corpus, a.K, 0.1, 0.01, a.seed)
    t_docs = time.perf_counter() - t0  # building Python lists of words for add_doc
    scheme = tp.ParallelScheme.PARTITION if threads > 1 else tp.ParallelScheme.NONE
    t0, c0 = time.perf_counter(), time.process_time()
    m.train(a.first, workers=threads, parallel=scheme)  # initialisation happens here
    t1, c1 = time.perf_counter(), time.process_time()
    m.train(a.steps, workers=threads, parallel=scheme)
    t2, c2 = time.perf_counter(), time.process_time()
    peak = peak_rss_mb()
    phi = tomotopy_phi(m, corpus.vocab, a.K)
    save_snapshot(out / "model.npz", phi, m.alpha, corpus.vocab, "tomotopy")
    return {
        "first_tokens_per_s": corpus.N * a.first / (t1 - t0) if a.first else None,
        "tokens_per_s": corpus.N * a.steps / (t2 - t1),
        "cpu_per_step": (c2 - c1) / a.steps,
        "first_cpu": c1 - c0,
        "add_doc_seconds": t_docs,
        "bytes_per_token": (peak - before) * 2**20 / corpus.N,
        "N": corpus.N,
        "log_likelihood_per_token": m.ll_per_word,
    }


def one(a):
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    row = run_tomotopy(a, a.one, out) if a.tool == "tomotopy" else run_topictool(a, a.one, out)
    if a.perplexity:
        row["perplexity"] = perplexity(out / "model.npz", Path(a.corpus), 1)
    print(json.dumps(row))


def make_synth(spec, where):
    D, W, K, length = (int(x) for x in spec.split(":"))
    out = Path(where) / f"synth-{D}-{W}-{K}-{length}"
    if not out.exists():
        cmd = [sys.executable, "-m", "topictool", "synth", "lda", "-K", str(K), "-V", str(W)]
        cmd += ["--documents", str(D), "--test-documents", str(max(1, D // 50)), "--length", str(length)]
        subprocess.run([*cmd, "--poisson-length", "-o", str(out), "--seed", "7"], check=True, stdout=subprocess.DEVNULL)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="lda-gibbs")
    p.add_argument("--corpus")
    p.add_argument("--synth", help="D:W:K:LENGTH of a synth lda corpus made for the run")
    p.add_argument("--threads", default=",".join(str(2**i) for i in range(8) if 2**i <= (os.cpu_count() or 1)))
    p.add_argument("-K", "--K", type=int, default=100)
    p.add_argument("--first", type=int, default=0, help="steps timed from the random start")
    p.add_argument("--steps", type=int, default=20, help="steps timed after those")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--set", action="append", default=[], help="model option KEY=VALUE")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--tomotopy", action="store_true", help="tomotopy beside lda-gibbs")
    p.add_argument("--tools", help="comma-separated, instead of the above: topictool, tomotopy")
    p.add_argument("--perplexity", action="store_true")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--tool", default="topictool", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--work", help="keep corpora and models here (default: a temporary directory)")
    a = p.parse_args()
    if a.one is not None:
        return one(a)

    work = Path(a.work or tempfile.mkdtemp(prefix="scaling-"))
    if a.synth:
        a.corpus = str(make_synth(a.synth, work))
    if not a.corpus:
        p.error("give --corpus or --synth")
    threads = [int(t) for t in a.threads.split(",")]
    tools = ["topictool"] + (["tomotopy"] if a.tomotopy and a.model == "lda-gibbs" else [])
    if a.tools:
        tools = a.tools.split(",")
    runs = {(tool, t): [] for tool in tools for t in threads}
    for rep in range(a.repeat):
        for tool, t in runs:
            cmd = [sys.executable, __file__, "--one", str(t), "--tool", tool, "--corpus", a.corpus]
            cmd += ["--model", a.model, "--K", str(a.K), "--first", str(a.first), "--steps", str(a.steps)]
            cmd += ["--seed", str(a.seed), "--out", str(work / f"{tool}-{t}-{rep}")]
            cmd += [x for kv in a.set for x in ("--set", kv)] + (["--perplexity"] if a.perplexity else [])
            env = {**os.environ, **ONE_CORE}  # numba's and BLAS's own pools: one thread; ours: t
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"{tool} threads={t} failed:\n{done.stderr}")
            runs[tool, t].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"  [{rep + 1}/{a.repeat}] {tool} threads={t}: {runs[tool, t][-1]}", file=sys.stderr, flush=True)

    def med(rows, key):
        vals = [r[key] for r in rows if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    table = []
    for tool, t in runs:
        rows = runs[tool, t]
        row = {"tool": tool, "threads": t, **{k: med(rows, k) for k in rows[0]}}
        base = med(runs[tool, threads[0]], "tokens_per_s")
        row["speedup"] = row["tokens_per_s"] / base * threads[0]
        row["efficiency"] = row["speedup"] / t
        table.append(row)
    load_avg = os.getloadavg()
    result = {
        "model": a.model,
        "corpus": a.corpus,
        "K": a.K,
        "options": a.set,
        "first": a.first,
        "steps": a.steps,
        "repeat": a.repeat,
        "cpus": os.cpu_count(),
        "load_average": load_avg,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "rows": table,
    }
    cols = [
        ("tool", "{:>9}"),
        ("threads", "{:>7}"),
        ("first_tokens_per_s", "{:>10.3g}"),
        ("tokens_per_s", "{:>10.3g}"),
        ("speedup", "{:>7.2f}"),
        ("efficiency", "{:>6.2f}"),
        ("cpu_per_step", "{:>8.3f}"),
        ("bytes_per_token", "{:>7.2f}"),
        ("array_peak_bytes_per_token", "{:>7.2f}"),
        ("perplexity", "{:>9.2f}"),
    ]
    print(" ".join(f"{name[:10]:>10}" for name, _ in cols))
    for row in table:
        print(" ".join("{:>10}".format(fmt.format(row[n]) if row.get(n) is not None else "-") for n, fmt in cols))
    print(f"load average at the end {load_avg[0]:.2f}, {os.cpu_count()} CPUs")
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
