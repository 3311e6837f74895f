#!/usr/bin/env python
"""What ``phi_average`` (the snapshot's phi and alpha averaged over the last N steps) does to
held-out perplexity, model by model and corpus by corpus.

Not a test. For each corpus and seed one chain is trained --steps steps with phi_average = --average
and judged twice by document completion on the corpus's test part (every 5th token held out, the
model's own fold-in method, 10 burn-in and 40 samples, evaluate's seed 1): with the averaged
estimates, and with the last step's own (the same chain: averaging never changes it). Printed: each
run's two perplexities, then per corpus the means over the seeds and the relative change.

    python scripts/bench/phi_average.py /tmp/mv /tmp/ch /tmp/su --model lda-gibbs --seeds 1,2,3
    python scripts/bench/phi_average.py /tmp/ch --model nplda-gibbs --steps 300 --average 100 --json out.json
"""

import argparse
import json
import statistics
import time
from pathlib import Path

from _common import load, model_options


def score(snapshot, test, method):
    from topictool.evaluate.completion import document_completion

    return document_completion(snapshot, test, holdout="every:5", burn_in=10, samples=40, seed=1, method=method)[
        "perplexity"
    ]


def run(corpus, a, seed):
    from topictool.models import registry

    train, test = load(corpus), load(corpus, "test")
    cls = registry.get(a.model)
    model = cls(train, cls.resolve_options(model_options(a.set, K=a.K, phi_average=a.average)), seed)
    cpu = time.process_time()
    for _ in range(a.steps):
        model.step()
    cpu = time.process_time() - cpu
    averaged = score(model.snapshot(), test, cls.eval_method)
    model.phi_average = 0  # the last step's own estimates, from the same chain
    last = score(model.snapshot(), test, cls.eval_method)
    return {"corpus": Path(corpus).name, "seed": seed, "averaged": averaged, "last": last, "cpu_seconds": cpu}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpora", nargs="+", help="prepared corpora with a test part")
    p.add_argument("--model", default="lda-gibbs")
    p.add_argument("--K", type=int, default=100)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--average", type=int, default=100, help="phi_average (default 100: the last third)")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more options (JSON values)")
    p.add_argument("--json", help="write every run here")
    a = p.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    rows = []
    for corpus in a.corpora:
        for seed in seeds:
            r = run(corpus, a, seed)
            rows.append(r)
            print(
                f"{r['corpus']:10s} seed {seed:3d}  last {r['last']:9.1f}  averaged {r['averaged']:9.1f}  "
                f"{r['cpu_seconds']:6.1f} CPU s",
                flush=True,
            )
    print(f"\n{a.model}, K = {a.K}, {a.steps} steps, the last {a.average} averaged; means over seeds {a.seeds}:")
    for name in dict.fromkeys(r["corpus"] for r in rows):
        mine = [r for r in rows if r["corpus"] == name]
        last = statistics.mean(r["last"] for r in mine)
        averaged = statistics.mean(r["averaged"] for r in mine)
        change = [100 * (r["averaged"] / r["last"] - 1) for r in mine]
        print(
            f"{name:10s} last {last:9.1f}  averaged {averaged:9.1f}  {100 * (averaged / last - 1):+6.2f} % "
            f"(seeds {min(change):+.2f} to {max(change):+.2f} %)"
        )
    if a.json:
        Path(a.json).write_text(json.dumps({"model": a.model, "K": a.K, "steps": a.steps, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
