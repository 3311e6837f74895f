#!/usr/bin/env python
"""Run the experiment grid of a config in configs/, gather its metrics, draw its figures.

Used by scripts/Makefile (`make -C scripts reproduce-NAME DATA=...`), which runs the
independent training runs of a grid in parallel under `make -j`. The steps:

    reproduce.py labels  CONFIG [--smoke]              the run labels, one per line
    reproduce.py prepare CONFIG DATA OUT [--smoke]     OUT/corpus: the prepared data
    reproduce.py run     CONFIG LABEL OUT [--smoke]    OUT/runs/LABEL: one training run
    reproduce.py gather  CONFIG OUT                    OUT/metrics.csv from every metrics.jsonl
    reproduce.py plot    CONFIG OUT                    OUT/figures/*.png (needs the plot extra)

A config has an [experiment] table (data, prepare options, hold-out, evaluation schedule,
the x axis of its figures, a smoke data set) and [[runs]] tables, each self-contained:
label, then the keys `topictool train --config` reads (model, K, iterations, seed,
threads, [runs.options]). DATA is a prepared corpus directory, any SOURCE of
`topictool prepare`, or `synth:bars|lda|hdp|lida` for synthetic data. --smoke shrinks
every run (few iterations, few topics, tiny synthetic data) so a whole grid finishes in
seconds: it checks that every config still runs, not what it finds.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

SMOKE_ITERATIONS = 3
SMOKE_K = 6
SMOKE_SYNTH = {
    "bars": ["--documents", "200", "--test-documents", "20", "--length", "50"],
    "lda": ["-K", "5", "-V", "80", "--documents", "120", "--test-documents", "20", "--length", "40"],
    "hdp": ["-T", "10", "-V", "80", "--documents", "120", "--test-documents", "20", "--length", "40"],
    "lida": ["-K", "5", "-V", "80", "--documents", "120", "--test-documents", "20", "--length", "40"],
}


def topictool():
    exe = Path(sys.executable).with_name("topictool")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "topictool"]


def load(config):
    with open(config, "rb") as f:
        cfg = tomllib.load(f)
    exp = cfg.get("experiment", {})
    runs = cfg.get("runs", [])
    if not runs:
        sys.exit(f"{config}: no [[runs]] tables")
    labels = [r.get("label") for r in runs]
    if (
        None in labels
        or len(set(labels)) != len(labels)
        or any(not str(x).replace("-", "").replace("_", "").isalnum() for x in labels)
    ):
        sys.exit(f"{config}: every run needs a unique label of letters, digits, - and _")
    return exp, runs


def sh(cmd):
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd)
    if r.returncode != 0:
        sys.exit(r.returncode)


def cmd_labels(a):
    _, runs = load(a.config)
    print("\n".join(r["label"] for r in runs))


def cmd_prepare(a):
    exp, _ = load(a.config)
    out = Path(a.out)
    data = exp.get("smoke_data", "synth:lda") if a.smoke else (a.data or exp.get("data", ""))
    if not data.startswith("synth:") and not all(Path(p).exists() for p in data.split() or [""]):
        sys.exit(
            f"{a.config}: give DATA= (a prepared corpus, a prepare SOURCE, or synth:NAME); "
            f"the experiment used {exp.get('data', '?')!r} (see data_prep/README.md)"
        )
    if out.exists():
        return
    if data.startswith("synth:"):
        name = data.split(":", 1)[1]
        extra = SMOKE_SYNTH.get(name, []) if a.smoke else []
        sh(topictool() + ["synth", name, "-o", str(out), "--seed", "1", *extra])
    elif (Path(data) / "corpus.json").exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(Path(data).resolve(), out)
    else:
        opts = exp.get("prepare", {})
        cmd = topictool() + ["prepare", *data.split(), "-o", str(out)]
        for k, v in opts.items():
            cmd += [f"--{k.replace('_', '-')}", str(v)]
        sh(cmd)


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def cmd_run(a):
    exp, runs = load(a.config)
    run = next((r for r in runs if r["label"] == a.label), None)
    if run is None:
        sys.exit(f"{a.config}: no run labelled {a.label!r}")
    out = Path(a.out)
    rundir = out / "runs" / a.label
    rundir.parent.mkdir(parents=True, exist_ok=True)
    top = {k: v for k, v in run.items() if k not in ("label", "options", "after")}
    options = dict(run.get("options", {}))
    if a.smoke:
        top["iterations"] = min(int(top.get("iterations", SMOKE_ITERATIONS)), SMOKE_ITERATIONS)
        top["K"] = min(int(top.get("K", SMOKE_K)), SMOKE_K)
        options.update(run.get("smoke_options", {}) or {})
        options.update(exp.get("smoke_options", {}).get(top.get("model"), {}))
    options.pop("smoke_options", None)
    cfg = "".join(f"{k} = {_toml_value(v)}\n" for k, v in top.items() if k != "smoke_options")
    cfg += "[options]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in options.items())
    cfg_path = out / "runs" / f"{a.label}.toml"
    cfg_path.write_text(cfg)
    corpus = str(out / "corpus")
    cmd = topictool() + [
        "train",
        corpus,
        "--config",
        str(cfg_path),
        "-o",
        str(rundir),
        "--force",
        "--log-every",
        str(exp.get("log_every", 10)),
    ]
    if exp.get("eval_every"):
        cmd += ["--test", corpus, "--eval-every", str(exp["eval_every"]), "--holdout", exp.get("holdout", "every:5")]
    sh(cmd)
    sh(
        topictool()
        + [
            "topics",
            str(rundir),
            "--top",
            "10",
            "--rank",
            exp.get("rank", "term-score"),
            "-o",
            str(rundir / "topics.txt"),
        ]
    )
    for step in run.get("after", []) or exp.get("after", []):
        sh(topictool() + step.split() + [str(rundir)])
    (rundir / "done").write_text("")


def cmd_gather(a):
    exp, runs = load(a.config)
    out = Path(a.out)
    rows, keys = [], ["label", "model", "K"]
    for run in runs:
        path = out / "runs" / run["label"] / "metrics.jsonl"
        if not path.exists():
            continue
        info_path = path.with_name("run.json")
        if info_path.exists():  # the K actually trained (smoke runs shrink it)
            run = dict(run, K=json.loads(info_path.read_text())["options"].get("K", run.get("K")))
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            r = {"label": run["label"], "model": run.get("model"), "K": run.get("K"), **r}
            for k in r:
                if k not in keys and not isinstance(r[k], (list, dict)):
                    keys.append(k)
            rows.append(r)
    tmp = out / ".metrics.csv.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, out / "metrics.csv")
    print(f"{out / 'metrics.csv'}: {len(rows)} rows from {len({r['label'] for r in rows})} runs")


def cmd_plot(a):
    exp, runs = load(a.config)
    out = Path(a.out)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[plot]'); figures skipped")
        return
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    x = exp.get("x", "iteration")
    figs = out / "figures"
    figs.mkdir(exist_ok=True)
    for y, name in (
        ("test_perplexity", "perplexity"),
        ("active_topics", "topics"),
        ("num_topics", "topics"),
        ("alpha", "alpha"),  # the learned concentration of the HDP models (a number per row)
    ):
        series = {}
        for r in rows:
            try:
                point = (float(r[x]), float(r[y]))
            except (KeyError, TypeError, ValueError):  # absent, empty, or not a number (a vector)
                continue
            series.setdefault(r["label"], []).append(point)
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, pts in series.items():
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label)
        ax.set_xlabel(x.replace("_", " "))
        ax.set_ylabel(y.replace("_", " "))
        ax.set_title(exp.get("name", Path(a.config).stem))
        ax.legend()
        fig.tight_layout()
        fig.savefig(figs / f"{name}.png", dpi=120)
        plt.close(fig)
        print(f"{figs / (name + '.png')}")


def cmd_coverage(a):
    """Fail unless every registered model was trained somewhere below OUT (the smoke check)."""
    from topictool.models import registry

    trained = set()
    for info in Path(a.out).rglob("run.json"):
        trained.add(json.loads(info.read_text())["model"])
    missing = sorted(set(registry.names()) - trained)
    if missing:
        sys.exit(f"smoke: these models were not trained by any config: {', '.join(missing)}")
    print(f"smoke: all {len(trained)} models trained: {', '.join(sorted(trained))}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, args in (
        ("labels", ["config"]),
        ("prepare", ["config", "data", "out"]),
        ("run", ["config", "label", "out"]),
        ("gather", ["config", "out"]),
        ("plot", ["config", "out"]),
        ("coverage", ["out"]),
    ):
        s = sub.add_parser(name)
        for arg in args:
            s.add_argument(arg, nargs="?" if arg == "data" else None)
        s.add_argument("--smoke", action="store_true")
    a = p.parse_args()
    globals()[f"cmd_{a.cmd}"](a)


if __name__ == "__main__":
    main()
