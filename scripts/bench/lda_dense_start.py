#!/usr/bin/env python
"""Do lda-gibbs's dense and sparse samplers mix alike? Training log p(w, z)/N after given sweeps
from the same random starts, every sweep dense against every sweep sparse, over many seeds.

    PYTHONPATH=. python scripts/bench/lda_dense_start.py --seeds 10 --sweeps 3,8,15

Both are exact Gibbs (tests/test_lda_gibbs.py checks each against the enumerated posterior and
one draw against eq. (1)); this checks that a sweep of one advances the chain as far as a sweep
of the other. The corpus is drawn from LDA (K topics, V words, D documents of LENGTH tokens).
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.test_lda_gibbs import make_lda_corpus  # noqa: E402
from topictool.models.lda_gibbs import model as lda_model  # noqa: E402
from topictool.models.lda_gibbs.model import LdaGibbs  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--K", type=int, default=100)
    p.add_argument("--V", type=int, default=3000)
    p.add_argument("--D", type=int, default=2500)
    p.add_argument("--length", type=int, default=200)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--sweeps", default="3,8,15")
    a = p.parse_args()
    at = [int(x) for x in a.sweeps.split(",")]
    corpus, _, _ = make_lda_corpus(K=a.K, V=a.V, D=a.D, length=a.length, alpha=0.1, beta=0.01, seed=5)
    # the dense start on any corpus, for every sweep (fraction 0) or none (fraction above 1)
    lda_model.DENSE_BYTES_PER_TOKEN = 1e12
    lda_model.DENSE_SWEEPS = 10**9
    result = {}
    for sampler, fraction in (("dense", 0.0), ("sparse", 2.0)):
        lda_model.DENSE_TOPICS_FRACTION = fraction
        rows = []
        for seed in range(a.seeds):
            m = LdaGibbs(corpus, LdaGibbs.resolve_options({"K": a.K}), seed)
            row = []
            for s in range(1, max(at) + 1):
                m.step()
                if s in at:
                    row.append(m.log_likelihood() / corpus.N)
            rows.append(row)
        result[sampler] = np.array(rows)
        print(f"{sampler:6} mean {result[sampler].mean(0).round(4)} sd {result[sampler].std(0).round(4)}", flush=True)
    diff = result["dense"].mean(0) - result["sparse"].mean(0)
    se = np.sqrt(result["dense"].var(0) / a.seeds + result["sparse"].var(0) / a.seeds)
    print(f"N={corpus.N}, sweeps {at}: dense - sparse {diff.round(4)}, standard error {se.round(4)}")


if __name__ == "__main__":
    main()
