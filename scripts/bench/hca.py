#!/usr/bin/env python
"""Benchmark: LDA, HDP-LDA, NP-LDA and their bursty versions side by side (Buntine & Mishra 2014, table 3 style).

Not a test. For each model, in its own process (so peak memory is its own): train on the
training split of a prepared corpus, time every sweep (wall clock and process CPU time),
then measure document-completion perplexity on the test split (``--holdout``, default every
5th token of a seeded random order): the plain measure for every model, and for bursty
models also the burst-aware measure (topictool/evaluate/burst_completion.py), which is
the one to compare (judging a bursty model by phi alone under-rates it).

    python scripts/bench/hca.py /tmp/movies-hca --K 100 --iterations 300 --json hca-bench.json
    python scripts/bench/hca.py /tmp/movies-hca --models hdp,hdp-burst --hca ~/bin/hca

Models: lda (topictool lda-gibbs, symmetric alpha=0.1, beta=0.01), hdp (hdp-gibbs),
nplda (nplda-gibbs), hdp-burst, nplda-burst (burst=true, ``--burst-discount``).
``--hca PATH`` also runs Buntine's hca binary on the same data (LdaC export of the same
train/test split; -hdoc,5 for its own document completion) and reports its timing and
its own test perplexity, plus ours measured on its phi (hca -lphi) when it writes one.
PMI: the movie-review corpus has no co-occurrence reference, so none is computed.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import peak_rss_mb

MODELS = {
    "lda": ("lda-gibbs", {}),
    "hdp": ("hdp-gibbs", {}),
    "nplda": ("nplda-gibbs", {}),
    "hdp-burst": ("hdp-gibbs", {"burst": True}),
    "nplda-burst": ("nplda-gibbs", {"burst": True}),
}
# hca command-line flags for the same models (hca's manual, "Different models")
HCA_FLAGS = {
    "lda": ["-Adir", "-Bdir"],
    "hdp": ["-B0.001"],
    "nplda": [],
    "hdp-burst": ["-B0.001", "-Sbdk=100"],
    "nplda-burst": ["-Sbdk=100"],
}


def model_class(name):
    if name == "lda-gibbs":
        from topictool.models.lda_gibbs.model import LdaGibbs

        return LdaGibbs
    if name == "hdp-gibbs":
        from topictool.models.hca.hdp import HdpGibbs

        return HdpGibbs
    from topictool.models.hca.nplda import NpldaGibbs

    return NpldaGibbs


def array_bytes(model):
    """Bytes in the model's numpy arrays (as the training loop reports), plus Stirling tables."""
    total = sum(v.nbytes for v in vars(model).values() if isinstance(v, np.ndarray))
    for table in getattr(model, "tables", {}).values():
        total += table.R.nbytes
    return total


def worker(args):
    from topictool.corpus import load_corpus
    from topictool.evaluate.completion import document_completion

    key = args.worker
    name, extra = MODELS[key]
    opts = {"K": args.K, **extra}
    if "burst" in key:
        opts["burst_discount"] = args.burst_discount
    train = load_corpus(args.corpus, part="train")
    test = load_corpus(args.corpus, part="test")
    cls = model_class(name)
    opts = cls.resolve_options(opts)
    rss0 = peak_rss_mb()
    t0 = time.perf_counter()
    model = cls(train, opts, args.seed)
    init_s = time.perf_counter() - t0
    wall, cpu, trace = [], [], []
    for it in range(args.iterations):
        w0, c0 = time.perf_counter(), time.process_time()
        metrics = model.step()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
        if (it + 1) % max(1, args.iterations // 10) == 0:
            trace.append(
                {
                    "iteration": it + 1,
                    "effective_topics": metrics.get("effective_topics"),
                    "wall": round(float(np.mean(wall[-10:])), 4),
                }
            )
            print(
                f"  {key}: iteration {it + 1}/{args.iterations}, {np.mean(wall[-10:]):.3f} s/sweep",
                file=sys.stderr,
                flush=True,
            )
    snap = model.snapshot()
    from topictool.evaluate.diagnostics import effective_topics

    plain_snap = snap
    if snap.burst_concentration is not None:
        import dataclasses

        plain_snap = dataclasses.replace(snap, burst_concentration=None, burst_discount=None)
    ev = dict(holdout=args.holdout, burn_in=args.burn_in, samples=args.samples, seed=args.seed)
    plain = document_completion(plain_snap, test, **ev)
    result = {
        "model": key,
        "registry_name": name,
        "options": {k: v for k, v in opts.items()},
        "K": args.K,
        "iterations": args.iterations,
        "tokens": train.N,
        "init_seconds": round(init_s, 3),
        "seconds_per_sweep_wall": float(np.mean(wall[len(wall) // 2 :])),
        "seconds_per_sweep_cpu": float(np.mean(cpu[len(cpu) // 2 :])),
        "seconds_per_sweep_wall_median": float(np.median(wall)),
        "train_seconds_wall": float(np.sum(wall)),
        "effective_topics": float(effective_topics(snap.topic_weight)),
        "array_bytes_per_token": array_bytes(model) / train.N,
        "peak_rss_mb": peak_rss_mb(),
        "rss_before_model_mb": rss0,
        "perplexity_plain": plain["perplexity"],
        "heldout_tokens": plain["heldout_tokens"],
        "trace": trace,
    }
    result["tokens_per_s_cpu"] = train.N / result["seconds_per_sweep_cpu"]
    result["tokens_per_s_wall"] = train.N / result["seconds_per_sweep_wall"]
    if hasattr(model, "hyperparameters"):
        result["hyperparameters"] = model.hyperparameters(summary=True)
    if snap.burst_concentration is not None:
        b = document_completion(snap, test, **ev)  # the burst-aware scorer, chosen by the snapshot
        assert b["heldout_tokens"] == plain["heldout_tokens"]
        result["perplexity_burst"] = b["perplexity"]
    result["perplexity"] = result.get("perplexity_burst", result["perplexity_plain"])
    print(json.dumps(result))


def run_hca(args, key, workdir):
    """Run hca on the LdaC export of the same split; returns its figures (best effort)."""
    from topictool.corpus import load_corpus
    from topictool.corpus.ldac import write_ldac
    from topictool.evaluate.completion import document_completion

    train = load_corpus(args.corpus, part="train")
    test = load_corpus(args.corpus, part="test")
    data = Path(workdir) / "data"
    if not (data.parent / "data.ldac").exists():
        write_ldac(train, data.parent / "data.ldac")
        write_ldac(test, data.parent / "test.ldac")
        (data.parent / "data.tokens").write_text("\n".join(train.vocab) + "\n")
        (data.parent / "test.tokens").write_text("\n".join(test.vocab) + "\n")
    rep = Path(workdir) / f"rep-{key}"
    cmd = [
        args.hca,
        "-v",
        "-e",
        f"-K{args.K}",
        f"-C{args.iterations}",
        f"-s{args.seed}",
        "-fldac",
        f"-T{data.parent / 'test'}",
        "-hdoc,5",
        f"-lphi,5,{args.iterations // 2}",
        *HCA_FLAGS[key],
        str(data),
        str(rep),
    ]
    if "burst" in key and args.burst_discount > 0:
        cmd.insert(-2, f"-Sad={args.burst_discount}")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    log = proc.stdout + proc.stderr
    out = {
        "model": f"hca:{key}",
        "command": " ".join(cmd),
        "exit_code": proc.returncode,
        "wall_seconds": wall,
        "seconds_per_sweep_wall": wall / max(args.iterations, 1),
    }
    m = re.search(r"average of ([0-9.]+)\+([0-9.]+)\(s\) per cycle", log)
    if m:
        out["seconds_per_sweep_hca"] = float(m.group(1)) + float(m.group(2))
        out["tokens_per_s_wall"] = train.N / out["seconds_per_sweep_hca"]
    m = re.findall(r"log_2\(test perpHold\)\s*=\s*([0-9.]+)", log)
    if m:
        out["perplexity_hca_own_measure"] = 2 ** float(m[-1])
    phi = Path(str(rep) + ".phi")
    if phi.exists():
        try:
            from topictool.importers import import_hca

            snap = import_hca(phi, tokens_path=data.parent / "data.tokens", vocab_path=args.corpus)
            if isinstance(snap, tuple):
                snap = snap[0]
            plain = snap
            if snap.burst_concentration is not None:
                import dataclasses

                out["perplexity"] = document_completion(
                    snap, test, holdout=args.holdout, seed=args.seed, burn_in=args.burn_in, samples=args.samples
                )["perplexity"]
                plain = dataclasses.replace(snap, burst_concentration=None, burst_discount=None)
            out["perplexity_plain"] = document_completion(
                plain, test, holdout=args.holdout, seed=args.seed, burn_in=args.burn_in, samples=args.samples
            )["perplexity"]
            out.setdefault("perplexity", out["perplexity_plain"])
        except Exception as exc:  # an importer failure must not lose the timing
            out["import_error"] = repr(exc)
    if proc.returncode != 0:
        out["log_tail"] = log[-2000:]
    return out


def table(rows):
    lines = [
        "| model | perplexity | plain (phi only) | effective topics | s/sweep (wall) | s/sweep (CPU) "
        "| M tokens/s | array bytes/token | peak RSS MB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:

        def f(k, fmt, r=r):
            v = r.get(k)
            return format(v, fmt) if isinstance(v, (int, float)) else "-"

        perplexity = f("perplexity", ",.0f")
        if perplexity == "-" and "perplexity_hca_own_measure" in r:
            perplexity = f("perplexity_hca_own_measure", ",.0f") + " (hca's measure)"
        per_sweep = r.get("seconds_per_sweep_hca", r.get("seconds_per_sweep_wall"))
        speed = r.get("tokens_per_s_cpu", r.get("tokens_per_s_wall"))
        lines.append(
            f"| {r['model']} | {perplexity} | {f('perplexity_plain', ',.0f')} "
            f"| {f('effective_topics', '.1f')} | {per_sweep if per_sweep is None else format(per_sweep, '.3f')} "
            f"| {f('seconds_per_sweep_cpu', '.3f')} | {'-' if speed is None else format(speed / 1e6, '.2f')} "
            f"| {f('array_bytes_per_token', '.1f')} | {f('peak_rss_mb', '.0f')} |"
        )
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--K", type=int, default=100)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--models", default="lda,hdp,nplda,hdp-burst,nplda-burst")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--holdout", default="every:5")
    ap.add_argument("--burn-in", type=int, default=10)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--burst-discount", type=float, default=0.5)
    ap.add_argument("--hca", help="path to an hca binary to run on the same data")
    ap.add_argument("--json", help="write all results here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    rows = []
    keys = [k.strip() for k in args.models.split(",") if k.strip()]
    for key in keys:
        if key not in MODELS:
            sys.exit(f"unknown model {key!r} (choose from {', '.join(MODELS)})")
    for key in keys:
        cmd = [
            sys.executable,
            __file__,
            args.corpus,
            "--worker",
            key,
            "--K",
            str(args.K),
            "--iterations",
            str(args.iterations),
            "--seed",
            str(args.seed),
            "--holdout",
            args.holdout,
            "--burn-in",
            str(args.burn_in),
            "--samples",
            str(args.samples),
            "--burst-discount",
            str(args.burst_discount),
        ]
        print(f"running {key} ...", file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            rows.append({"model": key, "error": f"exit code {proc.returncode}"})
            continue
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    if args.hca:
        if not shutil.which(args.hca) and not os.access(args.hca, os.X_OK):
            sys.exit(f"--hca {args.hca}: not an executable")
        with tempfile.TemporaryDirectory() as tmp:
            for key in keys:
                print(f"running hca {key} ...", file=sys.stderr, flush=True)
                rows.append(run_hca(args, key, tmp))
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": rows}, indent=1))


if __name__ == "__main__":
    main()
