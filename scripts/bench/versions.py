#!/usr/bin/env python
"""Two versions of topictool side by side in one process: the same model, steps alternating.

A change meant to speed a model up is judged here against the code before it: OLD is another
checkout (``git worktree add /tmp/old COMMIT``), NEW this one (or --new). Both models are built
from the same prepared corpus, seed, options and threads, trained --warmup steps, then --steps
steps alternate between them; reported are the medians of the per-step ratios NEW / OLD of CPU and
wall seconds. On a shared VM whose speed drifts by tens of percent within minutes, only a ratio
taken step by step like this says anything about a change of a few percent. Whether the two give
the same model is reported too (the declared state's arrays compared after the run).

    git worktree add /tmp/old HEAD~3
    python scripts/bench/versions.py /tmp/old /tmp/movies --model hdp-gibbs --threads 2 --steps 12
"""

import argparse
import atexit
import json
import os
import shutil
import statistics
import sys
import tempfile

# Both versions compile into a cache directory of this run's own. Two versions loaded from their
# caches in one process failed ("NRT_adapt_ndarray_to_python: descr is NULL", 2026-11-29), and a
# fresh cache directory cured it every time; the likely cause is that numba finds a cached
# kernel's runtime environment by its qualified name, which both versions share, while a kernel
# compiled in the process gets a name of its own. (numba reads this when first imported.)
if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="topictool-versions-")
    atexit.register(shutil.rmtree, os.environ["NUMBA_CACHE_DIR"], True)

import numpy as np  # noqa: E402
from _common import alternated, model_options  # noqa: E402


def build(path, corpus_dir, name, options, threads):
    """The model from the checkout at path (its topictool imported afresh: both stay loaded)."""
    for key in [k for k in sys.modules if k == "topictool" or k.startswith("topictool.")]:
        del sys.modules[key]
    sys.path.insert(0, path)
    try:
        from topictool.corpus import load_corpus
        from topictool.models import registry

        cls = registry.get(name)
        return cls(load_corpus(corpus_dir), cls.resolve_options(dict(options)), 1, threads=threads)
    finally:
        sys.path.remove(path)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old", help="the other checkout (its root, holding topictool/)")
    p.add_argument("corpus", help="a prepared corpus")
    p.add_argument("--new", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    p.add_argument("--model", default="lda-gibbs")
    p.add_argument("--K", type=int, default=50)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a model option (JSON value)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=12)
    a = p.parse_args()
    options = model_options(a.set, K=a.K)
    old = build(os.path.abspath(a.old), a.corpus, a.model, options, a.threads)
    new = build(os.path.abspath(a.new), a.corpus, a.model, options, a.threads)
    times = alternated({"old": old, "new": new}, a.warmup, a.steps)
    wall = {key: [w for w, _ in t] for key, t in times.items()}
    cpu = {key: [c for _, c in t] for key, t in times.items()}
    # the declared state (state_array_names(): the hca family declares it by a method, so the class
    # attribute state_arrays is empty there, and comparing it said "same" of any two chains)
    names = new.state_array_names()
    same = bool(names) and all(
        np.array_equal(getattr(old, name), getattr(new, name)) for name in names if getattr(old, name, None) is not None
    )
    out = {
        "model": a.model,
        "threads": a.threads,
        "cpu_s_per_step_old": statistics.median(cpu["old"]),
        "cpu_s_per_step_new": statistics.median(cpu["new"]),
        "cpu_new_over_old": statistics.median(n / o for o, n in zip(cpu["old"], cpu["new"])),
        "wall_new_over_old": statistics.median(n / o for o, n in zip(wall["old"], wall["new"])),
        "same_state": same,
    }
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}))


if __name__ == "__main__":
    main()
