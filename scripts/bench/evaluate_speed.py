#!/usr/bin/env python
"""Speed of document-completion evaluation (topictool evaluate).

Default workload: a K=100 model with topics drawn from a symmetric Dirichlet over
W=5000 words, and a test set of 400 documents of 300 tokens (120k tokens) drawn
from it by the LDA generative process; every:5 hold-out, 10 burn-in + 40 samples
(50 Gibbs sweeps over the observed tokens), one thread. Target: < 10 s.

    python scripts/bench/evaluate_speed.py [--threads 1] [--method gibbs|vb]
    python scripts/bench/evaluate_speed.py --model RUN_OR_NPZ --test CORPUS

The first call compiles the kernel (or loads numba's cache); it is timed
separately from the measured runs.
"""

import argparse
import json
import time

import numpy as np


def synthetic(K=100, W=5000, D=400, length=300, alpha=0.1, beta=0.05, seed=1):
    from topictool.corpus import Corpus
    from topictool.snapshot import Snapshot

    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(W, beta), K)
    phi = (phi + 1e-12) / (phi + 1e-12).sum(axis=1, keepdims=True)
    theta = rng.dirichlet(np.full(K, alpha), D)
    ptr = np.zeros(D + 1, dtype=np.int64)
    words, counts = [], []
    for d in range(D):
        bag = rng.multinomial(length, theta[d] @ phi)
        nz = np.flatnonzero(bag)
        words.append(nz.astype(np.int32))
        counts.append(bag[nz].astype(np.int32))
        ptr[d + 1] = ptr[d] + len(nz)
    vocab = tuple(f"w{i}" for i in range(W))
    snap = Snapshot(phi=phi, alpha=np.full(K, alpha), topic_weight=theta.mean(axis=0), vocab=vocab, meta={})
    return snap, Corpus(ptr, np.concatenate(words), np.concatenate(counts), vocab)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="run directory or snapshot .npz (default: synthetic K=100)")
    ap.add_argument("--test", help="test CORPUS (prepared directory or LdaC/UCI file)")
    ap.add_argument("--method", default="gibbs", choices=["gibbs", "vb"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--burn-in", type=int, default=10)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from topictool.evaluate.completion import document_completion

    if args.model:
        from topictool.corpus import load_corpus
        from topictool.snapshot import load_model

        snap, test = load_model(args.model), load_corpus(args.test, part="test")
    else:
        snap, test = synthetic()
    t0 = time.perf_counter()
    document_completion(snap, test.subset([0]), method=args.method, burn_in=1, samples=1)
    warm = time.perf_counter() - t0
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        r = document_completion(
            snap, test, method=args.method, burn_in=args.burn_in, samples=args.samples, threads=args.threads
        )
        times.append(time.perf_counter() - t0)
    best = min(times)
    sweeps = args.burn_in + args.samples
    out = {
        "K": snap.K,
        "W": snap.W,
        "documents": test.D,
        "tokens": test.N,
        "method": args.method,
        "sweeps": sweeps if args.method == "gibbs" else None,
        "threads": args.threads,
        "compile_or_cache_load_s": round(warm, 3),
        "seconds_best": round(best, 3),
        "seconds_all": [round(t, 3) for t in times],
        "observed_token_sweeps_per_s": round(r["observed_tokens"] * sweeps / best) if args.method == "gibbs" else None,
        "perplexity": r["perplexity"],
        "target_s": 10.0,
        "ok": best < 10.0,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
