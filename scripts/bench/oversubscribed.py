#!/usr/bin/env python
"""CPU seconds per sweep of lda-gibbs on T threads against one thread, in one process (issue 18, item 2).

One model per thread count (the same corpus, seed and options) is trained --warmup sweeps; then
--sweeps single sweeps of each alternate, and for every T the median over the rounds of (T threads'
CPU seconds for its sweep) / (one thread's, the same round) is reported. Alternating in one process
lets the machine's drifting speed hit every model alike, which separate processes (scaling.py) do
not: on a shared 2-core VM one thread's sweep varies by 1.4x from process to process
(docs/benchmarks.md). With more threads than cores the CPU seconds are the work the schedule does,
not the waiting.

    python scripts/bench/oversubscribed.py /tmp/movies --threads 16,64 --warmup 150 --sweeps 30
    python scripts/bench/oversubscribed.py /tmp/synth10m --threads 2,16 --warmup 30 --sweeps 10 --json o.json

Held-out perplexity is not computed here (scaling.py --perplexity does it after a run).
"""

import argparse
import json
import statistics

from _common import alternated, load


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpus", help="a prepared corpus")
    p.add_argument("--threads", default="16,64", help="comma-separated thread counts to set against one")
    p.add_argument("--K", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--warmup", type=int, default=150, help="sweeps of every model before timing")
    p.add_argument("--sweeps", type=int, default=30, help="timed sweeps of every model, alternated")
    p.add_argument("--json", help="also write the result here")
    a = p.parse_args()

    from topictool.models.lda_gibbs.model import LdaGibbs

    corpus = load(a.corpus)
    counts = [1] + [int(t) for t in a.threads.split(",") if int(t) != 1]
    opts = LdaGibbs.resolve_options({"K": a.K})
    models = {T: LdaGibbs(corpus, dict(opts), a.seed, threads=T) for T in counts}
    cpu = {T: [c for _, c in times] for T, times in alternated(models, a.warmup, a.sweeps).items()}
    rows = []
    for T in counts:
        ratio = statistics.median(b / o for o, b in zip(cpu[1], cpu[T]))
        q = statistics.quantiles([b / o for o, b in zip(cpu[1], cpu[T])], n=4) if T > 1 else [1.0, 1.0, 1.0]
        rows.append(
            {"threads": T, "cpu_s_per_sweep": statistics.median(cpu[T]), "x_one_thread": ratio, "quartiles": q[::2]}
        )
        print(
            f"{T:>4} threads  CPU s a sweep {statistics.median(cpu[T]):.4f}  x one thread {ratio:.3f}"
            f"  (quartiles {q[0]:.3f}-{q[2]:.3f})"
        )
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"corpus": a.corpus, "K": a.K, "warmup": a.warmup, "sweeps": a.sweeps, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
