#!/usr/bin/env python
"""Paired steady-state speed of topictool lda-gibbs and tomotopy's LDAModel (one thread each).

Both models are built in one process from the same prepared corpus and trained to
--warmup sweeps; then rounds of --chunk sweeps alternate between them, so machine-speed
drift hits both alike, and the median ratio of tokens/s is reported. Run it in the bench
environment (tomotopy installed):

    python scripts/bench/lda_paired_speed.py CORPUS_DIR --K 100 --warmup 100 --rounds 10 --chunk 10
"""

import argparse
import statistics
import time

from _common import lda_arguments, tomotopy_lda


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    lda_arguments(p)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--chunk", type=int, default=10)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()

    from topictool.corpus import load_corpus
    from topictool.models.lda_gibbs.model import LdaGibbs

    c = load_corpus(a.corpus)
    ours = LdaGibbs(c, LdaGibbs.resolve_options({"K": a.K, "alpha": a.alpha, "beta": a.beta}), 1, threads=a.threads)
    theirs = tomotopy_lda(c, a.K, a.alpha, a.beta, 1)
    t0 = time.perf_counter()
    for _ in range(a.warmup):
        ours.step()
    t1 = time.perf_counter()
    theirs.train(a.warmup, workers=a.threads)
    t2 = time.perf_counter()
    print(
        f"warm-up {a.warmup} sweeps: topictool {c.N * a.warmup / (t1 - t0) / 1e6:.2f} M tok/s, "
        f"tomotopy {c.N * a.warmup / (t2 - t1) / 1e6:.2f} M tok/s"
    )
    ratios, ours_rates, their_rates = [], [], []
    for _ in range(a.rounds):
        t0 = time.perf_counter()
        for _ in range(a.chunk):
            ours.step()
        t1 = time.perf_counter()
        theirs.train(a.chunk, workers=a.threads)
        t2 = time.perf_counter()
        ro, rt = c.N * a.chunk / (t1 - t0), c.N * a.chunk / (t2 - t1)
        ours_rates.append(ro)
        their_rates.append(rt)
        ratios.append(ro / rt)
    print(
        f"steady state, {a.rounds} rounds of {a.chunk} sweeps, K={a.K}, threads={a.threads}: "
        f"topictool median {statistics.median(ours_rates) / 1e6:.2f} M tok/s, "
        f"tomotopy median {statistics.median(their_rates) / 1e6:.2f} M tok/s, "
        f"ratio median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})"
    )
    print(f"log-likelihood per token: topictool {ours.log_likelihood() / c.N:.4f}, tomotopy {theirs.ll_per_word:.4f}")


if __name__ == "__main__":
    main()
