#!/usr/bin/env python
"""How much of a model's training goes to numba's reference counts (docs/architecture.md).

For each model, a child process trains it (--warmup steps, then --steps) under ``perf record``
(software clock samples: no hardware counters needed, so it works in a VM), and the share of the
samples that fall in numba's NRT_incref and NRT_decref is reported, with the CPU seconds a step.
A kernel whose loops take no counts (kernels/jit.py, ``no_nrt``) shows about 0 %.

    python scripts/bench/refcounts.py /tmp/movies --models hdp-gibbs,lida-gibbs,hdp-pcsvb0
    python scripts/bench/refcounts.py /tmp/movies --models lda-gibbs --threads 64 --K 100

Needs Linux ``perf``; prints a line and exits 2 without it.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from _common import ONE_CORE

#: the child: trains, then writes the two functions' addresses (they exist once something is compiled)
CHILD = """
import sys, time
from numba.core.registry import cpu_target
from topictool.corpus import load_corpus
from topictool.models import registry
name, corpus, T, K, warm, steps, out = sys.argv[1:8]
cls = registry.get(name)
m = cls(load_corpus(corpus), cls.resolve_options({"K": int(K)}), 1, threads=int(T))
for _ in range(int(warm)):
    m.step()
c = time.process_time()
for _ in range(int(steps)):
    m.step()
cpu = (time.process_time() - c) / int(steps)
engine = cpu_target.target_context.codegen()._engine
with open(out, "w") as f:
    f.write(f"{engine.get_function_address('NRT_incref')} {engine.get_function_address('NRT_decref')} {cpu}")
"""


def share(model, corpus, threads, K, warmup, steps):
    with tempfile.TemporaryDirectory() as tmp:
        data, out = os.path.join(tmp, "perf.data"), os.path.join(tmp, "addresses")
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-o", data, sys.executable, "-c", CHILD]
        cmd += [model, corpus, str(threads), str(K), str(warmup), str(steps), out]
        # cwd: not the checkout, whose topictool would shadow PYTHONPATH's (python -c puts "" first)
        subprocess.run(cmd, check=True, env={**os.environ, **ONE_CORE}, stdout=subprocess.DEVNULL, cwd=tmp)
        inc, dec, cpu = open(out).read().split()
        inc, dec = int(inc), int(dec)
        ips = subprocess.run(["perf", "script", "-i", data, "-F", "ip"], capture_output=True, text=True).stdout.split()
        # the two functions are a few instructions each; samples land on them or just after
        hits = sum(1 for ip in map(lambda x: int(x, 16), ips) if inc <= ip < inc + 48 or dec <= ip < dec + 48)
        return hits / max(len(ips), 1), float(cpu)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpus", help="a prepared corpus")
    p.add_argument("--models", default="lda-gibbs,hdp-gibbs,nplda-gibbs,lida-gibbs,lda-scvb0,hdp-pcsvb0")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--K", type=int, default=50)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=10)
    a = p.parse_args()
    if shutil.which("perf") is None:
        print("refcounts.py: Linux perf is not installed (it samples the training process)", file=sys.stderr)
        sys.exit(2)
    print(f"{'model':<16} {'threads':>7} {'CPU s a step':>12} {'reference counts':>17}")
    for model in a.models.split(","):
        frac, cpu = share(model, a.corpus, a.threads, a.K, a.warmup, a.steps)
        print(f"{model:<16} {a.threads:>7} {cpu:>12.4f} {100 * frac:>16.1f}%")


if __name__ == "__main__":
    main()
