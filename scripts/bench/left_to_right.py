#!/usr/bin/env python
"""Benchmark: do document completion and the left-to-right estimator rank models alike?

Not a test. Trains three models on the training split of a prepared corpus with
`topictool train` (each in its own process; a run directory already in --work is reused), then
scores each on the test split two ways:

- document-completion perplexity: `topictool evaluate`'s default (every:5 hold-out, Gibbs
  fold-in with 10 burn-in + 40 samples, seed 1);
- left-to-right: log p(w | phi, alpha) of whole test documents per token (Wallach et al. 2009;
  evaluate/left_to_right.py), --particles R (default 20), without resampling (Mallet's default)
  unless --resample; run with seeds 1 and 2 so that the table shows the estimator's own noise.

and reports whether the two orderings of the models agree.

    topictool prepare /work/shared/data/nltk/movie_reviews.zip -o /tmp/movies-l2r
    python scripts/bench/left_to_right.py /tmp/movies-l2r --work /tmp/l2r-runs --threads 2

Models (--models picks some): lda50 (lda-gibbs K=50), lda100 (lda-gibbs K=100), hdp100
(hdp-gibbs, truncation K=100), each --iterations sweeps (default 200), seed 1, the models'
default options (lda-gibbs: alpha=0.1, beta=0.01 fixed).
"""

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _common import load, peak_rss_mb

MODELS = {
    "lda50": ("lda-gibbs", 50),
    "lda100": ("lda-gibbs", 100),
    "hdp100": ("hdp-gibbs", 100),
}


def train(name, corpus, work, iterations, threads):
    """The run directory of model ``name``, trained unless it is already there."""
    model, K = MODELS[name]
    run = Path(work) / f"{name}-n{iterations}"
    if (run / "model.npz").exists():
        return run, None
    cmd = [sys.executable, "-m", "topictool", "train", str(corpus), "-m", model, "-K", str(K)]
    cmd += ["-n", str(iterations), "--seed", "1", "-o", str(run)]
    if model == "lda-gibbs":
        cmd += ["--threads", str(threads)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"training {name} failed: {proc.stderr.strip()}")
    return run, time.perf_counter() - t0


def ranks(values, higher_is_better):
    order = np.argsort(-np.asarray(values) if higher_is_better else np.asarray(values), kind="stable")
    return [int(i) for i in order]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", help="a prepared corpus directory (train and test splits)")
    ap.add_argument("--work", default="/tmp/l2r-runs", help="where the run directories go (reused when present)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--particles", type=int, default=20)
    ap.add_argument("--resample", action="store_true", help="left-to-right with resampling (O(N^2) per document)")
    ap.add_argument("--weighted", action="store_true", help="left-to-right with particles weighted by likelihood")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()

    from topictool.evaluate.completion import document_completion
    from topictool.evaluate.left_to_right import left_to_right
    from topictool.snapshot import load_model

    names = [m.strip() for m in args.models.split(",") if m.strip()]
    for n in names:
        if n not in MODELS:
            sys.exit(f"unknown model {n!r}: expected some of {', '.join(MODELS)}")
    test = load(args.corpus, part="test")
    Path(args.work).mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        run, train_seconds = train(name, args.corpus, args.work, args.iterations, args.threads)
        snap = load_model(run)
        t0 = time.perf_counter()
        dc = document_completion(snap, test, threads=args.threads)
        dc_seconds = time.perf_counter() - t0
        l2r = []
        for seed in (1, 2):
            t0 = time.perf_counter()
            kw = dict(particles=args.particles, resample=args.resample, weighted=args.weighted, seed=seed)
            kw["threads"] = args.threads
            r = left_to_right(snap, test, **kw)
            l2r.append((r, time.perf_counter() - t0))
        alpha = np.asarray(snap.alpha)
        row = {
            "model": name,
            "trainer": MODELS[name][0],
            "K": int(snap.K),
            "alpha_sum": float(alpha.sum()),
            "train_seconds": train_seconds,
            "completion_perplexity": dc["perplexity"],
            "completion_heldout_tokens": dc["heldout_tokens"],
            "completion_seconds": dc_seconds,
            "l2r_per_token": l2r[0][0]["log_likelihood_per_token"],
            "l2r_per_token_seed2": l2r[1][0]["log_likelihood_per_token"],
            "l2r_perplexity": l2r[0][0]["perplexity"],
            "l2r_tokens": l2r[0][0]["tokens"],
            "l2r_seconds": l2r[0][1],
            "particles": args.particles,
            "resample": bool(args.resample),
            "weighted": bool(args.weighted),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)

    by_completion = ranks([r["completion_perplexity"] for r in rows], higher_is_better=False)
    by_l2r = ranks([r["l2r_per_token"] for r in rows], higher_is_better=True)
    agree = by_completion == by_l2r
    how = "weighted, without" if args.weighted else "with" if args.resample else "without"
    print()
    print(f"| model | K | sum alpha | completion perplexity | left-to-right per token (R={args.particles}, ", end="")
    print(f"{how} resampling) | seed 2 | left-to-right perplexity | seconds (completion / left-to-right) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['trainer']} ({r['model']}) | {r['K']} | {r['alpha_sum']:.3g} | {r['completion_perplexity']:,.0f} "
            f"| {r['l2r_per_token']:.4f} | {r['l2r_per_token_seed2']:.4f} | {math.exp(-r['l2r_per_token']):,.0f} "
            f"| {r['completion_seconds']:.1f} / {r['l2r_seconds']:.1f} |"
        )
    print()
    print("order by document completion (best first):", ", ".join(rows[i]["model"] for i in by_completion))
    print("order by left-to-right (best first):       ", ", ".join(rows[i]["model"] for i in by_l2r))
    print("the orderings agree" if agree else "the orderings DISAGREE")
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"rows": rows, "agree": agree, "test_documents": test.D, "test_tokens": test.N}, indent=2)
        )


if __name__ == "__main__":
    main()
