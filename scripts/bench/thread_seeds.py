#!/usr/bin/env python
"""Held-out perplexity of one thread against T threads, seed by seed (issue 18, item 4: "within 1 %
in perplexity of one thread").

For each seed a one-thread and a T-thread model of the same seed and options are trained --steps
steps on the corpus's training part and judged by document completion on its test part (every 5th
token held out, the model's own fold-in method, evaluate's default seed), one after the other in
this process. Printed: each seed's two perplexities and T threads' relative difference, then the
mean of the differences and their range. A thread scheme's cost in quality shows as a mean that
stays on one side of zero across seeds and corpora; one seed says little (two seeds of one thread
differ by 1-6 % on the small corpora).

    python scripts/bench/thread_seeds.py /tmp/mv --model hdp-pcsvb0 --K 50 --steps 10 --seeds 1,2,3,4,5
    python scripts/bench/thread_seeds.py /tmp/ch --model hdp-pcsvb0 --threads 2 --json ch.json
"""

import argparse
import json
import statistics

from _common import load, model_options


def perplexity(cls, train, test, options, seed, threads, steps):
    from topictool.evaluate.completion import document_completion

    m = cls(train, cls.resolve_options(dict(options)), seed, threads=threads)
    for _ in range(steps):
        m.step()
    return document_completion(m.snapshot(), test, method=cls.eval_method)["perplexity"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpus", help="a prepared corpus with a test part")
    p.add_argument("--model", default="hdp-pcsvb0")
    p.add_argument("--K", type=int, default=50)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=10, help="training steps of every model (default 10)")
    p.add_argument("--seeds", default="1,2,3,4,5", help="comma-separated (default 1,2,3,4,5)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a model option (JSON value)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()

    from topictool.models import registry

    cls = registry.get(a.model)
    options = model_options(a.set, K=a.K)
    train, test = load(a.corpus), load(a.corpus, "test")
    rows = []
    for seed in (int(s) for s in a.seeds.split(",")):
        one = perplexity(cls, train, test, options, seed, 1, a.steps)
        many = perplexity(cls, train, test, options, seed, a.threads, a.steps)
        rows.append({"seed": seed, "one_thread": one, "threads": many, "difference": many / one - 1})
        diff = 100 * rows[-1]["difference"]
        print(f"seed {seed}: 1 thread {one:,.1f}  {a.threads} threads {many:,.1f}  {diff:+.2f} %")
    diffs = [r["difference"] for r in rows]
    result = {
        "corpus": a.corpus,
        "model": a.model,
        "options": options,
        "threads": a.threads,
        "steps": a.steps,
        "rows": rows,
        "mean_difference": statistics.mean(diffs),
    }
    print(f"mean {100 * result['mean_difference']:+.2f} % ({100 * min(diffs):+.2f} % to {100 * max(diffs):+.2f} %)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1, allow_nan=False)


if __name__ == "__main__":
    main()
