#!/usr/bin/env python
"""hdp-gibbs and nplda-gibbs against Buntine's hca on the same split, the same cycles, one evaluator.

Not a test. For every prepared corpus given, every model (HDP-LDA, NP-LDA) and every seed:

  topictool  trains K topics for --cycles sweeps in a process of its own (one core), with
             phi_average = --average (the snapshot averages the estimates of the last sweeps);
             records CPU and wall seconds of training and the process's peak RSS (its own VmHWM).
  hca        (only when the environment variable HCA_BINARY names a built hca executable)
             runs on the LdaC export of the same training split for the same cycles with
             -lphi,1,BURN and -lalpha,1,BURN (the same last sweeps averaged; hca takes an interval
             of 1 as 2, so it averages every other one of them), its CPU and
             wall seconds measured, its peak RSS read from its own VmHWM; its phi and
             alpha are imported (topictool.importers.import_hca). When it runs, topictool is
             also run for the cycles that fit in hca's CPU time (the equal-time row).

Both models are then scored by the same code, topictool's document completion
(evaluate/completion.py: every 5th token of a seeded random order held out, Gibbs fold-in with
phi and alpha fixed, 10 burn-in and 40 samples). The per-corpus table gives the mean
perplexity over the seeds with its range, the last-sample perplexity (no averaging), seconds
and memory; --write-doc replaces the table between the markers in docs/models/hca.md.

    python scripts/bench/vs_hca.py /tmp/mv /tmp/ch /tmp/su --seeds 1,2,3,4,5 --json vs_hca.json
    HCA_BINARY=$HOME/hca/HCA/hca/hca python scripts/bench/vs_hca.py /tmp/mv --write-doc
    python scripts/bench/vs_hca.py --merge a.json b.json --write-doc    # seeds run as separate jobs
    python scripts/bench/vs_hca.py /tmp/ch --equal-time-from a.json --json t.json   # then --merge a.json t.json

Without HCA_BINARY the hca rows are skipped with one line saying so (hca is not part of
topictool and is never downloaded or built by this script). The model flags given to hca are
those of the same models as topictool's defaults (HCA_FLAGS below): document-side discounts 0
(hca 0.63's own default too, given explicitly), a symmetric Dirichlet on the words for HDP-LDA.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ONE_CORE, load, peak_rss_mb, status_mb

MODELS = {"HDP-LDA": "hdp-gibbs", "NP-LDA": "nplda-gibbs"}
# hca flags for the models topictool's defaults define (hca's manual, "Different models"; -S sets a
# hyper-parameter's start value; a discount set to 0 is held at 0 in both programs). -B is the
# per-word Dirichlet parameter (hca multiplies it by W and clamps it to min(1, 10000/W) a word:
# -B42.58 on ch gave betatot 4258, 1.0 a word); both
# programs then sample the same hyper-parameters (b, b0 and beta; NP-LDA b, b0, bw, bw0, aw, aw0).
HCA_FLAGS = {
    "HDP-LDA": ["-Ahdp", "-Sa=0", "-Sb=10", "-Sb0=10", "-B0.01"],
    "NP-LDA": ["-Sa=0", "-Sa0=0", "-Sb=10", "-Sb0=10", "-Saw=0.5", "-Sbw=100", "-Saw0=0.5", "-Sbw0=10"],
}
DOC = Path(__file__).resolve().parents[2] / "docs" / "models" / "hca.md"
BEGIN, END = "<!-- vs_hca table: written by scripts/bench/vs_hca.py -->", "<!-- end of the vs_hca table -->"


def score(snapshot, test, seed):
    from topictool.evaluate.completion import document_completion

    return document_completion(snapshot, test, holdout="every:5", burn_in=10, samples=40, seed=seed)["perplexity"]


def topictool_worker(a):
    """One topictool run in this process: prints its figures as one JSON line."""
    from topictool.models import registry

    train, test = load(a.corpus), load(a.corpus, "test")
    cls = registry.get(a.model)
    opts = cls.resolve_options({"K": a.K, "phi_average": a.average})
    cls(train.subset(np.arange(min(train.D, 10))), opts, a.seed).step()  # compile / load kernels, untimed
    model = cls(train, opts, a.seed)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(a.cycles):
        model.step()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    snap = model.snapshot()
    averaged = score(snap, test, 1)
    model.phi_average = 0  # the last sample's own estimates, for the "no averaging" column
    last = score(model.snapshot(), test, 1)
    print(
        json.dumps(
            {
                "perplexity": averaged,
                "perplexity_last_sample": last,
                "cpu_seconds": cpu,
                "wall_seconds": wall,
                "peak_rss_mb": peak_rss_mb(),
                "cycles": a.cycles,
                "hyperparameters": model.hyperparameters(summary=True),
            }
        )
    )


def run_topictool(corpus, model, seed, a, cycles, average):
    cmd = [sys.executable, __file__, corpus, "--worker", model, "--seed", str(seed), "--K", str(a.K)]
    cmd += ["--cycles", str(cycles), "--average", str(average)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **ONE_CORE))
    if proc.returncode != 0:
        sys.exit(f"topictool {model} on {corpus} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# hca's peak memory: its own VmHWM, read while it runs (see _common.peak_rss_mb for why not
# getrusage). hca allocates its arrays as it starts and keeps them, so the last reading is its peak
# up to what it allocates in its last POLL seconds (its final reports).
POLL = 0.02


def run_measured(cmd, log):
    """Run cmd with its output into the file log; (exit code, wall s, CPU s, peak RSS MB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        peak = 0.0
        while proc.poll() is None:
            now = status_mb("VmHWM", proc.pid)  # None once it has exited
            if now is not None:
                peak = max(peak, now)
            time.sleep(POLL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return proc.returncode, wall, cpu, peak


def run_hca(binary, corpus, label, seed, a, work):
    from topictool.corpus.ldac import write_ldac
    from topictool.importers import import_hca

    train, test = load(corpus), load(corpus, "test")
    stem = Path(work) / "train"
    if not Path(f"{stem}.ldac").exists():
        write_ldac(train, Path(f"{stem}.ldac"))
        Path(f"{stem}.tokens").write_text("\n".join(train.vocab) + "\n")
    rep = Path(work) / f"{label}-{seed}"
    burn = a.cycles - a.average
    # -W: the vocabulary's size (hca takes the largest word id of the training file otherwise, and
    # its phi would be narrower than the vocabulary when the last words occur only in the test split)
    cmd = [binary, "-e", f"-K{a.K}", f"-W{train.W}", f"-C{a.cycles}", f"-s{seed}", "-fldac"]
    cmd += [f"-lphi,1,{burn}", f"-lalpha,1,{burn}", *HCA_FLAGS[label], str(stem), str(rep)]
    log = Path(work) / f"{label}-{seed}.log"
    code, wall, cpu, peak = run_measured(cmd, log)
    if code != 0:
        sys.exit(f"hca failed ({' '.join(cmd)}):\n{log.read_text(errors='replace')[-3000:]}")
    snap = import_hca(Path(f"{rep}.phi"), tokens_path=Path(f"{stem}.tokens"), vocab_path=corpus)
    snap = snap[0] if isinstance(snap, tuple) else snap
    return {
        "perplexity": score(snap, test, 1),
        "cpu_seconds": cpu,
        "wall_seconds": wall,
        "peak_rss_mb": peak,
        "cycles": a.cycles,
        "command": " ".join(cmd),
    }


def summary(rows):
    p = np.array([r["perplexity"] for r in rows])
    out = {
        "perplexity_mean": float(p.mean()),
        "perplexity_min": float(p.min()),
        "perplexity_max": float(p.max()),
        "cpu_seconds": float(np.mean([r["cpu_seconds"] for r in rows])),
        "wall_seconds": float(np.mean([r["wall_seconds"] for r in rows])),
        "peak_rss_mb": float(max(r["peak_rss_mb"] for r in rows)),
        "cycles": rows[0]["cycles"],
    }
    if "perplexity_last_sample" in rows[0]:
        out["last_sample_mean"] = float(np.mean([r["perplexity_last_sample"] for r in rows]))
    return out


def table(results, seeds):
    """The markdown table; ``seeds`` (comma-separated) names the seeds run, and each row says how
    many of them it has (a merge may pool more seeds for some corpora than for others)."""
    lines = [
        "| corpus | model | system | cycles | seeds | perplexity, mean over the seeds (range) | last sample "
        "| CPU s | wall s | peak RSS MB |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        s = r["summary"]
        last = f"{s['last_sample_mean']:,.0f}" if "last_sample_mean" in s else "-"
        lines.append(
            f"| {r['corpus']} | {r['label']} | {r['system']} | {s['cycles']} | {len(r['runs'])} "
            f"| {s['perplexity_mean']:,.1f} ({s['perplexity_min']:,.0f}-{s['perplexity_max']:,.0f}) | {last} "
            f"| {s['cpu_seconds']:.1f} | {s['wall_seconds']:.1f} | {s['peak_rss_mb']:.0f} |"
        )
    return "\n".join(lines) + f"\n\nSeeds run: {seeds}."


def write_doc(text):
    doc = DOC.read_text()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"{DOC}: no {BEGIN} ... {END} markers")
    head, rest = doc.split(BEGIN, 1)
    DOC.write_text(head + BEGIN + "\n" + text + "\n" + END + rest.split(END, 1)[1])


# the system name's ending that marks topictool's equal-time row (``equal_time_row``)
EQUAL_TIME = ", hca's CPU time"


def is_equal_time(row):
    return row["system"].endswith(EQUAL_TIME)


def equal_time_row(corpus, label, ours, theirs, seeds, a):
    """topictool again for the cycles that fit in hca's mean CPU seconds at topictool's own CPU
    seconds a cycle in ``ours``, the same share of them averaged: the "hca's CPU time" row."""
    per_cycle = np.mean([r["cpu_seconds"] for r in ours]) / ours[0]["cycles"]
    cycles = int(np.mean([r["cpu_seconds"] for r in theirs]) / per_cycle)
    avg = max(1, round(a.average * cycles / a.cycles))
    model = MODELS[label]
    same = [run_topictool(corpus, model, s, a, cycles, avg) for s in seeds]
    return dict(corpus=Path(corpus).name, label=label, system=f"topictool {model}{EQUAL_TIME}", runs=same)


def equal_time_from(a, seeds):
    """topictool's equal-time rows from an earlier --json run (no-equal-time): for every corpus given
    and model, the cycles that fit in that run's mean hca CPU seconds at its topictool's CPU seconds
    a cycle, the same third of them averaged; the rows a --merge adds to the earlier run's."""
    runs = {}
    for path in a.equal_time_from:
        for r in json.loads(Path(path).read_text())["results"]:
            if not is_equal_time(r):  # (a merged file has them too; the equal-cycles row is wanted)
                runs[(r["corpus"], r["label"], r["system"] == "hca")] = r["runs"]
    results = []
    for corpus in a.corpora:
        name = Path(corpus).name
        for label in a.models.split(","):
            ours, theirs = runs.get((name, label, False)), runs.get((name, label, True))
            if not ours or not theirs:
                sys.exit(f"{name} {label}: no topictool and hca rows in {', '.join(a.equal_time_from)}")
            row = equal_time_row(corpus, label, ours, theirs, seeds, a)
            row["summary"] = summary(row["runs"])
            results.append(row)
            s = row["summary"]
            cycles = row["runs"][0]["cycles"]
            print(f"{name:12s} {label:8s} {row['system']:40s} {s['perplexity_mean']:9.1f}  {cycles} cycles", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"args": vars(a), "results": results}, indent=1))


def merge(a):
    """The runs of several --json files as one table: rows of the same corpus, model and system
    pooled (their seeds together), in the order they first appear."""
    rows, seeds = {}, []
    for path in a.merge:
        data = json.loads(Path(path).read_text())
        seeds += [s for s in data["args"]["seeds"].split(",") if s not in seeds]  # (a merge's too)
        for r in data["results"]:
            key = (r["corpus"], r["label"], r["system"])
            rows.setdefault(key, dict(corpus=r["corpus"], label=r["label"], system=r["system"], runs=[]))
            rows[key]["runs"] += r["runs"]
    corpora = list(dict.fromkeys(key[0] for key in rows))
    rank = {"hca": 1}  # topictool's equal-cycles row, hca's, topictool's at hca's CPU time

    def order(r):
        system = 2 if is_equal_time(r) else rank.get(r["system"], 0)
        return corpora.index(r["corpus"]), list(MODELS).index(r["label"]), system

    results = sorted(rows.values(), key=order)
    for r in results:
        r["summary"] = summary(r["runs"])
    text = table(results, ",".join(seeds))
    print(text)
    if a.json:
        merged = {"merged": a.merge, "args": {"seeds": ",".join(seeds)}, "results": results}
        Path(a.json).write_text(json.dumps(merged, indent=1))
    if a.write_doc:
        write_doc(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpora", nargs="*", help="prepared corpus directories (train and test splits)")
    ap.add_argument("--K", type=int, default=100)
    ap.add_argument("--cycles", type=int, default=300)
    ap.add_argument("--average", type=int, default=100, help="sweeps averaged at the end (phi_average, hca -lphi)")
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--models", default="HDP-LDA,NP-LDA")
    ap.add_argument("--json", help="write every run's figures here")
    ap.add_argument("--write-doc", action="store_true", help=f"replace the table in {DOC.name}")
    ap.add_argument("--no-equal-time", action="store_true", help="skip topictool's runs for hca's CPU time")
    ap.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        help="no runs: one table of the runs in these --json files (e.g. seeds split over jobs)",
    )
    ap.add_argument(
        "--equal-time-from",
        nargs="+",
        metavar="JSON",
        help="only topictool's equal-time rows, from the hca and topictool CPU seconds of these --json runs",
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        a.corpus, a.model = a.corpora[0], a.worker
        return topictool_worker(a)
    if a.merge:
        return merge(a)
    if not a.corpora:
        ap.error("give prepared corpus directories (or --merge JSON ...)")
    if not 0 <= a.average <= a.cycles:
        sys.exit("--average must be between 0 and --cycles")
    seeds = [int(s) for s in a.seeds.split(",")]
    if a.equal_time_from:
        return equal_time_from(a, seeds)
    binary = os.environ.get("HCA_BINARY")
    if not binary:
        print("hca: skipped (HCA_BINARY is not set to a built hca executable)", flush=True)
    elif not os.access(binary, os.X_OK):
        sys.exit(f"HCA_BINARY={binary}: not an executable file")
    results = []
    for corpus in a.corpora:
        name = Path(corpus).name
        for label in a.models.split(","):
            model = MODELS[label]
            ours = [run_topictool(corpus, model, s, a, a.cycles, a.average) for s in seeds]
            results.append(dict(corpus=name, label=label, system=f"topictool {model}", runs=ours))
            if binary:
                with tempfile.TemporaryDirectory() as work:
                    theirs = [run_hca(binary, corpus, label, s, a, work) for s in seeds]
                results.append(dict(corpus=name, label=label, system="hca", runs=theirs))
            if binary and not a.no_equal_time:
                results.append(equal_time_row(corpus, label, ours, theirs, seeds, a))
            for r in results[-(1 + bool(binary) + bool(binary and not a.no_equal_time)) :]:
                r["summary"] = summary(r["runs"])
                s = r["summary"]
                print(
                    f"{name:12s} {label:8s} {r['system']:40s} {s['perplexity_mean']:9.1f} "
                    f"({s['perplexity_min']:.1f}-{s['perplexity_max']:.1f})  {s['cpu_seconds']:7.1f} CPU s",
                    flush=True,
                )
    text = table(results, a.seeds)
    print(text)
    if a.json:
        machine = {"uname": list(os.uname()), "load_average": os.getloadavg(), "hca": binary}
        Path(a.json).write_text(json.dumps({"args": vars(a), "machine": machine, "results": results}, indent=1))
    if a.write_doc:
        write_doc(text)


if __name__ == "__main__":
    main()
