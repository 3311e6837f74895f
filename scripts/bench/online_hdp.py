#!/usr/bin/env python
"""Benchmark and experiment for the direct-assignment variational HDP models
(hdp-online, hdp-online-sm, hdp-batch; docs/models/online_hdp.md).

Not a test. Two parts:

movies  Held-out per-word log-likelihood against documents seen, at the same budget of
        documents, for the three models and gensim's HdpModel (Wang, Paisley & Blei 2011;
        run with the Python given by --gensim-python, e.g. /work/bench-venv/bin/python).
        Every system trains in its own process with one BLAS/OpenMP thread and writes a
        snapshot (phi, alpha) after every pass; all snapshots are then judged by the same
        code, topictool's document completion (VB fold-in, --holdout, default fraction:0.2:
        theta from 80% of each test document, the log-likelihood of the other 20%, the
        paper's metric). Throughput is documents (and tokens) per second of training time.

            python scripts/bench/online_hdp.py movies /tmp/movies-ohdp --passes 10 \\
                --gensim-python /work/bench-venv/bin/python --json movies.json

bars    hdp-online-sm from several initial K and seeds on topictool.synth.bars (2,000
        documents, 20 bars): final number of topics, bars matched (Hellinger < 0.2),
        topics matching a bar, held-out log-likelihood; and hdp-online with fixed K.

            python scripts/bench/online_hdp.py bars --starts 2,5,10,50,100 --seeds 1-10 \\
                --steps 800 --json bars.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ONE_CORE = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
MODELS = {"hdp-online": "OnlineHdp", "hdp-online-sm": "OnlineHdpSplitMerge", "hdp-batch": "BatchHdp"}


def parse_set(items):
    out = {}
    for item in items or []:
        key, _, value = item.partition("=")
        out[key] = value
    return out


# --------------------------------------------------------------------------------------------
# workers (run in their own process)


def worker_topictool(args):
    """Train one topictool model; a snapshot after every pass; prints a JSON list of passes."""
    from topictool.corpus import load_corpus
    from topictool.models.online_hdp import model as online_hdp

    corpus = load_corpus(args.corpus, part="train")
    cls = getattr(online_hdp, MODELS[args.model])
    opts = cls.resolve_options(dict(json.loads(args.options), K=args.K))
    model = cls(corpus, opts, args.seed)
    out, train_s, rows = [], 0.0, []
    for p in range(1, args.passes + 1):
        while model.documents_seen < p * corpus.D:
            t0 = time.perf_counter()
            row = model.step()
            train_s += time.perf_counter() - t0
            rows.append(row)
        snap = model.snapshot()
        path = Path(args.out) / f"{args.model}-pass{p:03d}.npz"
        snap.save(path)
        out.append(
            {
                "pass": p,
                "documents_seen": int(model.documents_seen),
                "train_seconds": train_s,
                "topics": int(model.K),
                "snapshot": str(path),
                "alpha": model.alpha,
                "elbo_per_token": rows[-1].get("elbo_per_token"),
                "splits_accepted": sum(r.get("splits_accepted", 0) for r in rows),
                "merges_accepted": sum(r.get("merges_accepted", 0) + r.get("unused_merged", 0) for r in rows),
            }
        )
    print(json.dumps(out))


def worker_gensim(args):
    """gensim HdpModel with its defaults, one pass per update(); snapshot = hdp_to_lda()."""
    import logging

    from gensim.models import HdpModel

    from topictool.corpus import load_corpus
    from topictool.snapshot import Snapshot

    logging.disable(logging.WARNING)
    corpus = load_corpus(args.corpus, part="train")
    bow = [
        list(zip(corpus.word_ids[lo:hi].tolist(), corpus.counts[lo:hi].tolist()))
        for lo, hi in zip(corpus.doc_ptr[:-1], corpus.doc_ptr[1:])
    ]
    id2word = dict(enumerate(corpus.vocab))
    chunksize = 256
    per_pass = -(-corpus.D // chunksize)
    out, train_s = [], 0.0
    hdp = None
    for p in range(1, args.passes + 1):
        t0 = time.perf_counter()
        if hdp is None:
            hdp = HdpModel(bow, id2word, chunksize=chunksize, max_chunks=per_pass, random_state=args.seed)
        else:
            hdp.update(bow)
        train_s += time.perf_counter() - t0
        alpha, beta = hdp.hdp_to_lda()
        phi = np.asarray(beta, dtype=np.float64)
        phi /= phi.sum(axis=1, keepdims=True)
        path = Path(args.out) / f"gensim-pass{p:03d}.npz"
        Snapshot(
            phi=phi,
            alpha=np.asarray(alpha, dtype=np.float64),
            topic_weight=np.asarray(alpha, dtype=np.float64) / np.sum(alpha),
            vocab=corpus.vocab,
            meta={"model": "gensim-HdpModel", "T": int(hdp.m_T)},
        ).save(path)
        out.append(
            {
                "pass": p,
                "documents_seen": p * corpus.D,
                "train_seconds": train_s,
                "topics": int(hdp.m_T),
                "snapshot": str(path),
            }
        )
    print(json.dumps(out))


# --------------------------------------------------------------------------------------------
# movies


def run_worker(python, argv):
    env = dict(os.environ, **ONE_CORE)
    r = subprocess.run([python, __file__, *argv], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"worker {argv[:3]} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def movies(args):
    from topictool.corpus import load_corpus
    from topictool.evaluate.completion import document_completion
    from topictool.snapshot import Snapshot

    train = load_corpus(args.corpus, part="train")
    test = load_corpus(args.corpus, part="test")
    tmp = Path(tempfile.mkdtemp(prefix="ohdp-bench-"))
    results = {
        "corpus": str(args.corpus),
        "D": train.D,
        "N": train.N,
        "W": train.W,
        "test_D": test.D,
        "passes": args.passes,
        "holdout": args.holdout,
        "systems": {},
    }
    Ks = {"hdp-online": args.K_online, "hdp-online-sm": args.K_sm, "hdp-batch": args.K_batch}
    for system in args.systems.split(","):
        t0 = time.time()
        if system == "gensim":
            rows = run_worker(args.gensim_python, ["_gensim", args.corpus, str(tmp), str(args.passes), str(args.seed)])
        else:
            opts = json.dumps(parse_set(args.set) if system == "hdp-online-sm" else {})
            rows = run_worker(
                sys.executable,
                ["_topictool", args.corpus, str(tmp), str(args.passes), str(args.seed), system, str(Ks[system]), opts],
            )
        for row in rows:
            res = document_completion(
                Snapshot.load(row["snapshot"]), test, holdout=args.holdout, method="vb", seed=args.eval_seed
            )
            row["heldout_log_likelihood_per_token"] = res["log_likelihood_per_token"]
            row["perplexity"] = res["perplexity"]
            row["documents_per_s"] = row["documents_seen"] / row["train_seconds"]
            row["tokens_per_s"] = row["pass"] * train.N / row["train_seconds"]
        results["systems"][system] = rows
        last = rows[-1]
        print(
            f"{system:14s} K={last['topics']:4d}  ll/token {last['heldout_log_likelihood_per_token']:.4f}  "
            f"perplexity {last['perplexity']:8.1f}  {last['documents_per_s']:7.1f} docs/s  "
            f"{last['tokens_per_s'] / 1e3:6.1f} k tokens/s  ({time.time() - t0:.0f}s)",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print_table(results)


def print_table(results):
    systems = results["systems"]
    names = list(systems)
    print("\nheld-out log-likelihood per token (document completion, VB fold-in) after each pass")
    print("pass  docs    " + "  ".join(f"{n:>14s}" for n in names))
    for i in range(results["passes"]):
        cells = []
        for n in names:
            rows = systems[n]
            cells.append(f"{rows[i]['heldout_log_likelihood_per_token']:14.4f}" if i < len(rows) else " " * 14)
        print(f"{i + 1:4d}  {(i + 1) * results['D']:6d}  " + "  ".join(cells))


# --------------------------------------------------------------------------------------------
# bars


def bars_one(spec):
    """(model, K0, seed, steps, minibatch, options) -> result dict."""
    model_name, K0, seed, steps, minibatch, options = spec
    from topictool.evaluate.completion import document_completion
    from topictool.models.online_hdp import model as online_hdp
    from topictool.synth import bars

    train, test, truth = bars(documents=2000, seed=seed)
    cls = getattr(online_hdp, MODELS[model_name])
    model = cls(train, cls.resolve_options(dict(options, K=K0, minibatch=minibatch)), seed)
    t0 = time.perf_counter()
    history = []
    for it in range(1, steps + 1):
        model.step()
        if it % max(1, steps // 8) == 0:
            history.append([it, model.K, *matches(model.snapshot().phi, truth["phi"])])
    secs = time.perf_counter() - t0
    snap = model.snapshot()
    bars_matched, topics_matching = matches(snap.phi, truth["phi"])
    res = document_completion(snap, test, holdout="fraction:0.2", method="vb", seed=1)
    return {
        "model": model_name,
        "K0": K0,
        "seed": seed,
        "steps": steps,
        "K": snap.K,
        "bars_matched": bars_matched,
        "topics_matching": topics_matching,
        "success": bool(abs(snap.K - 20) <= 1 and bars_matched == 20 and topics_matching >= snap.K - 1),
        "heldout_log_likelihood_per_token": res["log_likelihood_per_token"],
        "perplexity": res["perplexity"],
        "alpha": model.alpha,
        "beta": model.beta,  # the learned topic-word prior (option beta, the paper's eta)
        "seconds": secs,
        "history": history,
    }


def matches(phi, truth, threshold=0.2):
    h = np.sqrt(np.maximum(0.0, 1.0 - np.sqrt(phi[:, None, :] * truth[None, :, :]).sum(-1)))
    return int((h.min(axis=0) < threshold).sum()), int((h.min(axis=1) < threshold).sum())


def seeds_of(text):
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def bars_experiment(args):
    os.environ.update(ONE_CORE)
    starts = [int(k) for k in args.starts.split(",") if k.strip()]
    sm_options = parse_set(args.set)
    specs = [
        ("hdp-online-sm", k, s, args.steps, args.minibatch, sm_options) for k in starts for s in seeds_of(args.seeds)
    ]
    if args.K_online > 0:
        specs += [("hdp-online", args.K_online, s, args.steps, args.minibatch, {}) for s in seeds_of(args.seeds)]
    results = []
    if args.workers > 1:
        from multiprocessing import get_context

        with get_context("spawn").Pool(args.workers) as pool:
            for r in pool.imap(bars_one, specs):
                results.append(r)
                report_bars_row(r)
    else:
        for spec in specs:
            r = bars_one(spec)
            results.append(r)
            report_bars_row(r)
    summary = {}
    for r in results:
        key = f"{r['model']} K0={r['K0']}"
        s = summary.setdefault(key, {"runs": 0, "successes": 0, "K": [], "ll": []})
        s["runs"] += 1
        s["successes"] += int(r["success"])
        s["K"].append(r["K"])
        s["ll"].append(r["heldout_log_likelihood_per_token"])
    print("\nsummary (success: 20 +- 1 topics, all 20 bars matched, every topic but at most one matching)")
    for key, s in summary.items():
        print(
            f"{key:22s} success {s['successes']}/{s['runs']}  K {min(s['K'])}-{max(s['K'])}  "
            f"held-out ll/token mean {np.mean(s['ll']):.4f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": results, "summary": summary}, indent=1))


def report_bars_row(r):
    print(
        json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items() if k != "history"}),
        flush=True,
    )


# --------------------------------------------------------------------------------------------


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_topictool":
        a = argparse.Namespace(
            corpus=argv[1],
            out=argv[2],
            passes=int(argv[3]),
            seed=int(argv[4]),
            model=argv[5],
            K=int(argv[6]),
            options=argv[7],
        )
        return worker_topictool(a)
    if argv and argv[0] == "_gensim":
        a = argparse.Namespace(corpus=argv[1], out=argv[2], passes=int(argv[3]), seed=int(argv[4]))
        return worker_gensim(a)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("movies", help="learning curves on a prepared corpus (train/test)")
    m.add_argument("corpus")
    m.add_argument("--passes", type=int, default=10)
    m.add_argument("--systems", default="hdp-online,hdp-online-sm,hdp-batch,gensim")
    m.add_argument("--K-online", type=int, default=50)
    m.add_argument("--K-sm", type=int, default=10)
    m.add_argument("--K-batch", type=int, default=50)
    m.add_argument("--set", action="append", help="KEY=VALUE option of hdp-online-sm (repeatable)")
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--eval-seed", type=int, default=1)
    m.add_argument("--holdout", default="fraction:0.2")
    m.add_argument("--gensim-python", default="/work/bench-venv/bin/python")
    m.add_argument("--json")
    b = sub.add_parser("bars", help="topic recovery on synthetic bars")
    b.add_argument("--starts", default="2,5,10,50,100", help="initial K of the hdp-online-sm runs ('' : none)")
    b.add_argument("--seeds", default="1-10")
    b.add_argument("--steps", type=int, default=800)
    b.add_argument("--minibatch", type=int, default=100)
    b.add_argument("--K-online", type=int, default=50, help="truncation of the hdp-online runs (0: none)")
    b.add_argument("--set", action="append", help="KEY=VALUE option of hdp-online-sm (repeatable)")
    b.add_argument("--workers", type=int, default=1)
    b.add_argument("--json")
    args = ap.parse_args(argv)
    if args.cmd == "movies":
        movies(args)
    else:
        bars_experiment(args)


if __name__ == "__main__":
    main()
