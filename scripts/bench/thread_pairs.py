#!/usr/bin/env python
"""Every model family on 1 and T threads, measured side by side in one process (issue 18, item 4).

For each model a one-thread and a T-thread model are built from the same prepared corpus, seed and
options and trained --warmup steps each; then --steps steps alternate between them, --block steps of
one and then of the other (a block's mean per step is one sample), so that the machine's drifting
speed (a shared 2-core VM here) hits both alike. Reported per model: the median over the samples of
one thread's wall seconds per step divided by T threads', the CPU seconds per step of each (the
whole process, all threads), and held-out document-completion perplexity of both after the run (the
corpus's test part, every:5 held out, each model's own fold-in method) with their ratio.

    python scripts/bench/thread_pairs.py /tmp/mv --K 50 --threads 2 --json pairs.json
    python scripts/bench/thread_pairs.py /tmp/mv --models lda-svi,hdp-pcvb0 --steps 30

One comparison says little on a shared VM: when the host takes one of the two cores for a while,
the T-thread model loses far more than the one-thread model (docs/benchmarks.md: sixteen runs of
the same code gave one model 1.17x to 1.86x). --repeat N runs the whole list N times, model after
model each time, and ends with each model's median speed-up over the runs and their range:

    python scripts/bench/thread_pairs.py /tmp/mv --K 50 --threads 2 --repeat 6 --json pairs.json

Separate processes per configuration (scaling.py) are the way to compare peak memory; this script
is the way to compare speed on a machine whose speed changes between runs.
"""

import argparse
import json
import statistics

from _common import alternated, load

# (model, options beyond K, warm-up steps, timed steps): each family's default options, steps of
# comparable length (a pass, a sweep or a minibatch) as in docs/benchmarks.md's table
MODELS = [
    ("hdp-gibbs", {}, 5, 40),
    ("hdp-gibbs", {"burst": True}, 5, 30),
    ("nplda-gibbs", {}, 5, 40),
    ("lida-gibbs", {}, 5, 30),
    ("lda-svi", {}, 3, 30),
    ("lda-scvb0", {}, 3, 30),
    ("hdp-pcvb0", {}, 2, 10),
    ("hdp-pcsvb0", {}, 2, 10),
    ("hdp-online", {}, 3, 60),
    ("hdp-online-sm", {}, 3, 40),
    ("hdp-batch", {}, 1, 6),
]


def pair(name, options, warmup, steps, corpus, test, K, threads, seed, block=1):
    from topictool.evaluate.completion import document_completion
    from topictool.models import registry

    cls = registry.get(name)
    opts = cls.resolve_options({"K": K, **options})
    models = {T: cls(corpus, opts, seed, threads=T) for T in (1, threads)}
    times = alternated(models, warmup, steps, block)
    ratios = [a[0] / b[0] for a, b in zip(times[1], times[threads], strict=True)]
    perplexity = {
        T: document_completion(m.snapshot(), test, method=cls.eval_method)["perplexity"] for T, m in models.items()
    }
    return {
        "model": name,
        "options": options,
        "threads": threads,
        "steps": steps // block * block,
        "block": block,
        "speedup": statistics.median(ratios),
        "speedup_quartiles": statistics.quantiles(ratios, n=4),
        "cpu_per_step": {str(T): statistics.median(c for _, c in v) for T, v in times.items()},
        "perplexity": {str(T): p for T, p in perplexity.items()},
        "perplexity_ratio": perplexity[threads] / perplexity[1],
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpus", help="a prepared corpus with a test part")
    p.add_argument("--K", type=int, default=50)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--models", help="comma-separated names (default: every family, as MODELS)")
    p.add_argument("--steps", type=int, help="timed steps for every model (default: MODELS' own)")
    p.add_argument(
        "--block",
        type=int,
        default=1,
        help="steps of one model before the other's turn (default 1); a turn's first step runs on caches "
        "the other model has just filled, so longer blocks measure a run's steady state",
    )
    p.add_argument("--repeat", type=int, default=1, help="run the whole list this many times (default 1)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    corpus, test = load(a.corpus), load(a.corpus, "test")
    chosen = [m for m in MODELS if not a.models or m[0] in a.models.split(",")]
    shortest = min((a.steps or m[3] for m in chosen), default=0)
    if a.block < 1 or shortest // a.block < 2:
        p.error(f"--block {a.block}: must be at least 1 and leave every model two samples ({shortest} steps)")
    if a.repeat < 1:
        p.error(f"--repeat {a.repeat}: must be at least 1")
    runs = []
    head = f"{'speed-up':>9} {'quartiles':>13} {'CPU s/step 1 / T':>18} {'perplexity 1 / T':>20} {'ratio':>7}"
    for run in range(a.repeat):
        if a.repeat > 1:
            print(f"run {run + 1} of {a.repeat}")
        print(f"{'model':<26} {head}")
        rows = []
        for name, options, warmup, steps in chosen:
            r = pair(name, options, warmup, a.steps or steps, corpus, test, a.K, a.threads, a.seed, a.block)
            rows.append(r)
            q = r["speedup_quartiles"]
            cpu, pp = r["cpu_per_step"], r["perplexity"]
            print(
                f"{label_of(r):<26} {r['speedup']:>8.2f}x {q[0]:>6.2f}-{q[2]:<6.2f}"
                f" {cpu['1']:>8.3f} / {cpu[str(a.threads)]:<7.3f}"
                f" {pp['1']:>9,.1f} / {pp[str(a.threads)]:<9,.1f} {r['perplexity_ratio'] - 1:>+6.2%}",
                flush=True,
            )
        runs.append(rows)
    summary = [summarise([rows[j] for rows in runs], a.threads) for j in range(len(chosen))]
    if a.repeat > 1:
        print(f"\nover the {a.repeat} runs: {'median':>8} {'lowest-highest':>15} {'CPU s/step 1 / T (medians)':>27}")
        for r in summary:
            low, high = r["speedup_range"]
            cpu = r["cpu_per_step"]
            print(
                f"{label_of(r):<26} {r['speedup']:>8.2f}x {low:>7.2f}-{high:<7.2f}"
                f" {cpu['1']:>10.3f} / {cpu[str(a.threads)]:<7.3f}"
            )
    if a.json:
        out = {"corpus": a.corpus, "K": a.K, "seed": a.seed, "block": a.block, "repeat": a.repeat}
        with open(a.json, "w") as f:
            json.dump({**out, "rows": summary, "runs": runs}, f, indent=1)


def label_of(r):
    return r["model"] + "".join(f" {k}={v}" for k, v in r["options"].items())


def summarise(rows, threads):
    """One model's runs: the median of their speed-ups and its range, the medians of the CPU
    seconds per step; the perplexities are each run's (the same seed and threads: the same model)."""
    speedups = [r["speedup"] for r in rows]
    cpu = {str(T): statistics.median(r["cpu_per_step"][str(T)] for r in rows) for T in (1, threads)}
    return {
        **{k: rows[0][k] for k in ("model", "options", "threads", "steps", "block", "perplexity", "perplexity_ratio")},
        "speedup": statistics.median(speedups),
        "speedup_range": [min(speedups), max(speedups)],
        "speedups": speedups,
        "cpu_per_step": cpu,
    }


if __name__ == "__main__":
    main()
