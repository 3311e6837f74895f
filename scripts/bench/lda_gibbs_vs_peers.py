#!/usr/bin/env python
"""Benchmark: topictool lda-gibbs against peer LDA implementations on one prepared corpus.

Not a test. Run it in an environment with topictool and the peers installed
(`pip install -e '.[bench]'`); peers that are missing are reported and skipped.

For every system, in its own process (so peak memory is its own): train LDA
with the same K, alpha, beta and iterations on the training split, time the
training only, record peak resident memory, and save phi and alpha as a
topictool snapshot. Then every snapshot is judged by the same code,
topictool's document-completion perplexity on the test split.

    python scripts/bench/lda_gibbs_vs_peers.py CORPUS_DIR --K 100 --iterations 200 \
        --systems topictool:1,topictool:2,tomotopy,lda,gensim --json out.json
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
from _common import doc_term, gensim_corpus, lda_arguments, load, peak_rss_mb, save_snapshot, tomotopy_lda, tomotopy_phi


def run_topictool(c, a, threads, out):
    from topictool.models.lda_gibbs.model import LdaGibbs

    opts = LdaGibbs.resolve_options({"K": a.K, "alpha": a.alpha, "beta": a.beta})
    base = peak_rss_mb()
    model = LdaGibbs(c, opts, a.seed, threads=threads)
    model.step()  # warm-up: compile/load kernels outside the timed region
    model = LdaGibbs(c, opts, a.seed, threads=threads)
    t0 = time.perf_counter()
    for _ in range(a.iterations):
        model.step()
    dt = time.perf_counter() - t0
    snap = model.snapshot()
    snap.save(out)
    return dt, base


def run_tomotopy(c, a, threads, out):

    base = peak_rss_mb()
    mdl = tomotopy_lda(c, a.K, a.alpha, a.beta, a.seed)
    mdl.train(0, workers=threads)  # initialise outside the timed region
    t0 = time.perf_counter()
    mdl.train(a.iterations, workers=threads)
    dt = time.perf_counter() - t0
    phi = tomotopy_phi(mdl, c.vocab, a.K)
    save_snapshot(out, phi, mdl.alpha, c.vocab, "tomotopy")
    return dt, base


def run_lda(c, a, threads, out):
    import lda

    X = doc_term(c)
    base = peak_rss_mb()
    m = lda.LDA(n_topics=a.K, n_iter=a.iterations, alpha=a.alpha, eta=a.beta, random_state=a.seed, refresh=10**9)
    t0 = time.perf_counter()
    m.fit(X)
    dt = time.perf_counter() - t0
    save_snapshot(out, m.topic_word_, a.alpha, c.vocab, "lda")
    return dt, base


def run_gensim(c, a, threads, out):
    from gensim.models import LdaMulticore

    bow, id2word = gensim_corpus(c)
    base = peak_rss_mb()
    t0 = time.perf_counter()
    m = LdaMulticore(
        bow,
        num_topics=a.K,
        id2word=id2word,
        alpha=np.full(a.K, a.alpha),
        eta=a.beta,
        passes=a.gensim_passes,
        workers=threads,
        random_state=a.seed,
        chunksize=2000,
    )
    dt = time.perf_counter() - t0
    save_snapshot(out, m.get_topics(), a.alpha, c.vocab, "gensim")
    return dt, base


SYSTEMS = {"topictool": run_topictool, "tomotopy": run_tomotopy, "lda": run_lda, "gensim": run_gensim}


def child(a):
    c = load(a.corpus)
    dt, base = SYSTEMS[a.one](c, a, a.threads, a.out)
    sweeps = a.gensim_passes if a.one == "gensim" else a.iterations
    print(
        json.dumps(
            {
                "seconds": dt,
                "tokens_per_s": c.N * sweeps / dt,
                "peak_rss_mb": peak_rss_mb(),
                "rss_before_train_mb": base,
                "N": c.N,
            }
        )
    )


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    lda_arguments(p)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--gensim-passes", type=int, default=10)
    p.add_argument("--systems", default="topictool:1,topictool:2,tomotopy:1,lda:1,gensim:1")
    p.add_argument("--eval-samples", type=int, default=40)
    p.add_argument("--json", help="Also write the results here.")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        return child(a)

    from topictool.corpus import load_corpus
    from topictool.evaluate.completion import document_completion
    from topictool.snapshot import Snapshot

    test = load_corpus(a.corpus, part="test")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in a.systems.split(","):
            name, _, threads = spec.partition(":")
            threads = int(threads or 1)
            out = Path(tmp) / f"{name}-{threads}.npz"
            cmd = [
                sys.executable,
                __file__,
                a.corpus,
                "--one",
                name,
                "--threads",
                str(threads),
                "--out",
                str(out),
                "--K",
                str(a.K),
                "--iterations",
                str(a.iterations),
                "--alpha",
                str(a.alpha),
                "--beta",
                str(a.beta),
                "--seed",
                str(a.seed),
                "--gensim-passes",
                str(a.gensim_passes),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["?"])[-1]
                print(f"{spec}: skipped ({last})", file=sys.stderr)
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            ev = document_completion(Snapshot.load(out), test, samples=a.eval_samples, seed=1)
            r.update(
                system=name,
                threads=threads,
                perplexity=ev["perplexity"],
                tokens_per_s_per_core=r["tokens_per_s"] / threads,
            )
            results.append(r)
            print(
                f"{spec:14s} {r['tokens_per_s'] / 1e6:7.2f} M tok/s  {r['tokens_per_s_per_core'] / 1e6:6.2f} M/core  "
                f"peak {r['peak_rss_mb']:7.0f} MB  perplexity {r['perplexity']:8.1f}",
                flush=True,
            )
    ref = next((r for r in results if r["system"] == "topictool" and r["threads"] == 1), None)
    if ref:
        print("\nratios to topictool (1 thread):")
        for r in results:
            speed = r["tokens_per_s_per_core"] / ref["tokens_per_s_per_core"]
            mem, ppl = r["peak_rss_mb"] / ref["peak_rss_mb"], r["perplexity"] / ref["perplexity"]
            print(f"  {r['system']}:{r['threads']}  speed/core x{speed:.2f}  memory x{mem:.2f}  perplexity x{ppl:.3f}")
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {
                    "args": vars(a),
                    "machine": dict(zip(("sysname", "nodename", "release", "version", "machine"), os.uname())),
                    "results": results,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
