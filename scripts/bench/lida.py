#!/usr/bin/env python
"""Benchmark: lida-gibbs variants (lda, ftm, stm, lida) side by side with lda-gibbs.

Not a test. All models train on the same prepared corpus with the same K, alpha, beta and
seed, in lockstep: every round steps each model once, so a machine shared with other work
slows them all alike and the seconds per iteration stay comparable. Then each snapshot is
judged by topictool's document-completion perplexity on the test split (every:5 held out,
Gibbs fold-in, burn-in 10, 40 samples, seed 1), and for the lida-gibbs variants the
training perplexity from the expectations of (8) is reported too.

    .venv/bin/topictool prepare /work/shared/data/nltk/movie_reviews.zip -o /tmp/movies-lida
    .venv/bin/python scripts/bench/lida.py /tmp/movies-lida --K 100 --iterations 200 --json out.json
"""

import argparse
import json
import time

import numpy as np
from _common import lda_arguments


def build(name, corpus, a):
    if name == "lda-gibbs":
        from topictool.models.lda_gibbs.model import LdaGibbs

        return LdaGibbs(corpus, LdaGibbs.resolve_options({"K": a.K, "alpha": a.alpha, "beta": a.beta}), a.seed)
    from topictool.models.lida.model import LidaGibbs

    variant = name.split(":", 1)[1]
    opts = {"K": a.K, "alpha": a.alpha, "beta": a.beta, "variant": variant}
    for key in ("eta", "delta", "gamma", "lam"):
        if getattr(a, key) is not None:
            opts[key] = getattr(a, key)
    return LidaGibbs(corpus, LidaGibbs.resolve_options(opts), a.seed)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    lda_arguments(p)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--eta", type=float, default=None)
    p.add_argument("--delta", type=float, default=None)
    p.add_argument("--gamma", type=float, default=None)
    p.add_argument("--lam", type=float, default=None)
    p.add_argument("--variants", default="lda,ftm,stm,lida")
    p.add_argument("--no-baseline", action="store_true", help="skip lda-gibbs")
    p.add_argument("--json", default=None, help="write the results here")
    a = p.parse_args()

    from topictool.corpus import load_corpus
    from topictool.evaluate.completion import document_completion

    train = load_corpus(a.corpus, part="train")
    test = load_corpus(a.corpus, part="test")
    names = ([] if a.no_baseline else ["lda-gibbs"]) + [f"lida-gibbs:{v}" for v in a.variants.split(",")]
    try:
        import topictool.models.lda_gibbs.model  # noqa: F401
    except ImportError:
        names = [n for n in names if n != "lda-gibbs"]
    for n in names:  # compile or load every kernel outside the timed region
        build(n, train, a).step()
    models = {n: build(n, train, a) for n in names}
    seconds = {n: [] for n in names}
    metrics = {}
    for it in range(a.iterations):
        for n, m in models.items():
            t0 = time.perf_counter()
            metrics[n] = m.step()
            seconds[n].append(time.perf_counter() - t0)
        if (it + 1) % 25 == 0:
            print(
                f"iteration {it + 1}: " + "  ".join(f"{n} {np.mean(seconds[n][-25:]):.3f}s" for n in names), flush=True
            )
    rows = []
    base = np.mean(seconds["lda-gibbs"]) if "lda-gibbs" in seconds else None
    for n, m in models.items():
        snap = m.snapshot()
        t0 = time.perf_counter()
        ev = document_completion(snap, test, holdout="every:5", burn_in=10, samples=40, method="gibbs", seed=1)
        row = {
            "model": n,
            "seconds_per_iteration": float(np.mean(seconds[n])),
            "seconds_per_iteration_last_half": float(np.mean(seconds[n][len(seconds[n]) // 2 :])),
            "test_perplexity": float(ev["perplexity"]),
            "eval_seconds": round(time.perf_counter() - t0, 2),
        }
        if base:
            row["vs_lda_gibbs"] = row["seconds_per_iteration"] / base
        if n.startswith("lida-gibbs"):
            row["train_perplexity_expectations"] = float(np.exp(-m.log_likelihood() / m.N))
            row.update(
                {
                    k: metrics[n][k]
                    for k in (
                        "theta_bar_density",
                        "phi_bar_density",
                        "topics_per_document",
                        "words_per_topic",
                        "rejected_draws_per_token",
                    )
                }
            )
        rows.append(row)
    result = {
        "corpus": a.corpus,
        "D": train.D,
        "W": train.W,
        "N": train.N,
        "test_N": test.N,
        "K": a.K,
        "alpha": a.alpha,
        "beta": a.beta,
        "iterations": a.iterations,
        "seed": a.seed,
        "rows": rows,
    }
    print()
    print("| model | s/iter | x lda-gibbs | test perplexity | train perplexity (8) | θ̄ density | φ̄ density |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:

        def f(k, fmt, r=r):
            return format(r[k], fmt) if k in r else "–"

        print(
            f"| {r['model']} | {r['seconds_per_iteration']:.3f} | {f('vs_lda_gibbs', '.2f')} | "
            f"{r['test_perplexity']:.1f} | {f('train_perplexity_expectations', '.1f')} | "
            f"{f('theta_bar_density', '.3f')} | {f('phi_bar_density', '.3f')} |"
        )
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main()
