"""lda-gibbs on MPI ranks against one process, in the same run (docs/cluster.md has the figures).

    python scripts/bench/mpi_scaling.py [--corpus DIR] [-K 100] [-n 200] [--repeats 2] [--out DIR]

1. The movie reviews (../shared/data/nltk/movie_reviews.zip) prepared twice: one file, and
   `--shards 4`.
2. Interleaved, ``--repeats`` times: one process x 1 thread, and `mpiexec -n 2` x 1 thread
   (`--engine mpi`) with each schedule of ``--schedules`` (partition: the cells across ranks;
   copy-merge: AD-LDA's exchange), K=100, 200 sweeps, the same seed. Time: the sum of the sweeps'
   own times (run.json's seconds_total: no start-up, no numba compilation, no checkpoints);
   speed-up = median one-process time / median two-rank time; steady: the median sweep of the
   second half. Perplexity: `evaluate` (document completion, the default hold-out) of each final
   model on the test split.
3. The sharded corpus on 2 ranks: each rank's peak resident memory (getrusage, printed by every
   rank at exit) against the same run on the one-file corpus (every rank reads the whole file).
4. The exchange measured: bytes received per sweep (comm_bytes), the way (partition, sparse or
   dense), tokens that changed topic (copy-merge); and, with
   `mpiexec -n 2 python scripts/bench/mpi_scaling.py --probe`, the time of a dense int32
   Allreduce and of the dense apply kernel for a range of K x W (the inputs of the paper
   projection in docs/cluster.md).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOVIES = ROOT.parent / "shared" / "data" / "nltk" / "movie_reviews.zip"
BIN = Path(sys.executable).parent
MPIEXEC = shutil.which("mpiexec", path=str(BIN)) or shutil.which("mpiexec")

# run as a rank: topictool's main, then this rank's peak memory on stderr
RSS_WRAPPER = (
    "import atexit, os, resource, sys\n"
    "def _peak():\n"
    "    r = os.environ.get('PMI_RANK', '0')\n"
    "    print(f'PEAK_RSS_MB rank={r} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}', "
    "file=sys.stderr, flush=True)\n"
    "atexit.register(_peak)\n"
    "from topictool.cli.main import main\n"
    "sys.argv = ['topictool'] + sys.argv[1:]\n"
    "main()\n"
)


def sh(cmd, env=None):
    t0 = time.perf_counter()
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{r.stderr}")
    return r, time.perf_counter() - t0


def one_core_env():
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    return env


def train(corpus, out, K, n, ranks, wrapper=False, schedule="partition"):
    args = ["train", corpus, "-m", "lda-gibbs", "-K", K, "-n", n, "--seed", "1", "--threads", "1"]
    args += ["--set", f"schedule={schedule}"]
    args += ["--checkpoint-every", "0", "--log-every", "0", "-o", out, "--force"]
    py = [sys.executable, "-c", RSS_WRAPPER] if wrapper else [sys.executable, "-m", "topictool"]
    if ranks > 1:
        cmd = [MPIEXEC, "-n", ranks, *py, *args, "--engine", "mpi"]
    else:
        cmd = [*py, *args]
    r, wall = sh(cmd, one_core_env())
    info = json.loads((Path(out) / "run.json").read_text())
    rows = [json.loads(x) for x in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    peaks = [float(x.split()[-1]) for x in r.stderr.splitlines() if x.startswith("PEAK_RSS_MB")]
    return {"seconds": info["seconds_total"], "wall": wall, "rows": rows, "peaks": peaks}


def memory(one_file, sharded, work, K, sweeps=3):
    """Peak resident memory of each of 2 ranks: every rank reading the one file, against each
    reading only its shards; one process beside them."""
    manifest = json.loads((sharded / "corpus.json").read_text())
    npz = {p.name: p.stat().st_size for p in sorted(sharded.glob("train.shard-*.npz"))}
    report = {
        "corpus": {k: manifest["train"][k] for k in ("D", "N")},
        "train_npz_MB": round((one_file / "train.npz").stat().st_size / 1e6, 1),
        "shard_npz_MB": [round(v / 1e6, 1) for v in npz.values()],
        "K": K,
        "sweeps": sweeps,
        "peak_rss_mb": {
            "one_process": train(one_file, work / "m-single", K, sweeps, 1, wrapper=True)["peaks"],
            "two_ranks_one_file": train(one_file, work / "m-onefile", K, sweeps, 2, wrapper=True)["peaks"],
            "two_ranks_shards4": train(sharded, work / "m-shards", K, sweeps, 2, wrapper=True)["peaks"],
        },
        "load_average_at_end": os.getloadavg(),
    }
    # reading alone: what rank 0 of 2 holds after reading its documents, one file against shards
    code = (
        "import resource, sys; from pathlib import Path; from topictool import mpi\n"
        "class E:\n    size, rank = 2, 0\n"
        "c = mpi.rank_corpus(Path(sys.argv[1]), E(), 1)\n"
        "print(c.N, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    base = (
        "import resource; import topictool.mpi, topictool.corpus; "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    report["reading_only_peak_rss_mb"] = {
        "interpreter_and_imports": float(sh([sys.executable, "-c", base])[0].stdout.split()[-1]),
        "rank0_of_2_one_file": float(sh([sys.executable, "-c", code, one_file])[0].stdout.split()[-1]),
        "rank0_of_2_shards4": float(sh([sys.executable, "-c", code, sharded])[0].stdout.split()[-1]),
    }
    print(json.dumps(report, indent=1))


def perplexity(run, corpus):
    r, _ = sh([sys.executable, "-m", "topictool", "evaluate", run, corpus, "--json"], one_core_env())
    return json.loads(r.stdout)["perplexity"]


def probe():
    """Under mpiexec: dense int32 Allreduce and the dense apply kernel, for several K x W."""
    import numpy as np
    from mpi4py import MPI

    from topictool.models.lda_gibbs import kernels as kern

    comm = MPI.COMM_WORLD
    out = []
    for K, W in ((100, 14_660), (1000, 14_660), (100, 100_000), (1000, 32_768)):
        a = np.ones(K * W, dtype=np.int32)
        b = np.empty_like(a)
        times = []
        for _ in range(7):
            comm.Barrier()
            t0 = time.perf_counter()
            comm.Allreduce(a, b, MPI.SUM)
            times.append(time.perf_counter() - t0)
        # the apply kernel on a word-major table with changes in every word
        tw_ptr = np.arange(W + 1, dtype=np.int64) * min(K, 64)
        tw = np.zeros(tw_ptr[-1], dtype=np.int32)
        n_k = np.zeros(K, dtype=np.int32)
        TB = kern.topic_bits(K)
        own = np.zeros(K * W, dtype=np.int32)
        total = np.zeros(K * W, dtype=np.int32)
        total[:: K + 1] = 1  # one changed cell per word
        kern.apply_dense(tw_ptr, tw.copy(), n_k.copy(), total, own, TB)  # compile
        t0 = time.perf_counter()
        kern.apply_dense(tw_ptr, tw, n_k, total, own, TB)
        apply = time.perf_counter() - t0
        if comm.Get_rank() == 0:
            mb = a.nbytes / 1e6
            med = statistics.median(times)
            out.append(
                {
                    "K": K,
                    "W": W,
                    "MB": round(mb, 1),
                    "allreduce_s": round(med, 5),
                    "allreduce_GB_per_s": round(2 * a.nbytes * (comm.Get_size() - 1) / comm.Get_size() / med / 1e9, 2),
                    "apply_dense_s": round(apply, 5),
                }
            )
    if comm.Get_rank() == 0:
        print(json.dumps({"ranks": comm.Get_size(), "probe": out}, indent=1))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", help="a prepared movie-review corpus (default: prepared here from ../shared/data)")
    p.add_argument("-K", type=int, default=100)
    p.add_argument("-n", type=int, default=200)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument(
        "--schedules",
        default="partition,copy-merge",
        help="lda-gibbs schedules of the 2-rank runs (partition: cells across ranks; copy-merge: AD-LDA)",
    )
    p.add_argument("--out", help="keep the runs here (default: a temporary directory)")
    p.add_argument("--probe", action="store_true", help="(under mpiexec) time Allreduce and the apply kernel")
    p.add_argument(
        "--memory-corpora",
        nargs=2,
        metavar=("ONE_FILE", "SHARDED"),
        help="only the memory comparison, on a larger corpus prepared twice (one file; --shards 4)",
    )
    a = p.parse_args()
    if a.probe:
        return probe()
    if MPIEXEC is None:
        raise SystemExit("mpiexec not found: pip install 'topictool[mpi]'")
    work = Path(a.out or tempfile.mkdtemp(prefix="mpi-scaling-"))
    work.mkdir(parents=True, exist_ok=True)
    if a.memory_corpora:
        return memory(*map(Path, a.memory_corpora), work, a.K)
    corpus = Path(a.corpus) if a.corpus else work / "movies"
    sharded = work / "movies-shards4"
    if not a.corpus:
        if not MOVIES.exists():
            raise SystemExit(f"no movie reviews at {MOVIES}")
        sh([sys.executable, "-m", "topictool", "prepare", MOVIES, "-o", corpus, "--force"])
    prepared = json.loads((corpus / "corpus.json").read_text())
    src = prepared["source"][0]
    how = prepared.get("options", {})
    text = [f"--{k}={how[k]}" for k in ("encoding", "errors") if how.get(k)]  # e.g. state_union's latin-1
    sh([sys.executable, "-m", "topictool", "prepare", src, *text, "-o", sharded, "--shards", "4", "--force"])

    # warm numba's cache (every code path) so that no timed run compiles
    train(corpus, work / "warm1", a.K, 3, 1)
    layouts = {"one": (1, "partition")}
    for schedule in a.schedules.split(","):
        layouts[f"two-{schedule}"] = (2, schedule)
        train(corpus, work / f"warm-{schedule}", a.K, 3, 2, schedule=schedule)
    results = {name: [] for name in layouts}
    for rep in range(a.repeats):
        order = list(layouts) if rep % 2 == 0 else list(layouts)[::-1]
        for name in order:
            ranks, schedule = layouts[name]
            res = train(corpus, work / f"{name}-{rep}", a.K, a.n, ranks, schedule=schedule)
            res["perplexity"] = perplexity(work / f"{name}-{rep}", corpus)
            results[name].append(res)
            print(f"{name} rep {rep}: {res['seconds']:.2f} s of sweeps, perplexity {res['perplexity']:.1f}", flush=True)
    N = prepared["train"]["N"]

    def steady(res):  # median seconds of a sweep in the second half
        return statistics.median(r["seconds"] for r in res["rows"] if r["iteration"] > a.n // 2)

    t1 = statistics.median(r["seconds"] for r in results["one"])
    s1 = statistics.median(steady(r) for r in results["one"])
    p1 = results["one"][0]["perplexity"]
    layouts_report = {}
    for name in layouts:
        if name == "one":
            continue
        runs = results[name]
        t2 = statistics.median(r["seconds"] for r in runs)
        late = [r for r in runs[0]["rows"] if r["iteration"] > a.n // 2]
        exchange = {
            "ways": sorted({r.get("exchange") for r in runs[0]["rows"]}),
            "bytes_per_sweep_second_half": statistics.median(r["comm_bytes"] for r in late),
            "comm_seconds_per_sweep_second_half": statistics.median(r["comm_seconds"] for r in late),
        }
        if all("tokens_moved" in r for r in late):
            exchange["tokens_moved_fraction_second_half"] = statistics.median(r["tokens_moved"] for r in late) / N
            exchange["dense_bytes_per_sweep_would_be"] = 2 * 4 * a.K * prepared["W"] // 2
        p2 = runs[0]["perplexity"]
        layouts_report[name] = {
            "seconds": [round(r["seconds"], 3) for r in runs],
            "speedup": round(t1 / t2, 3),
            "steady_sweep_ms": round(1000 * statistics.median(steady(r) for r in runs), 2),
            "steady_speedup": round(s1 / statistics.median(steady(r) for r in runs), 3),
            "perplexity": round(p2, 2),
            "perplexity_difference_percent": round(100 * (p2 - p1) / p1, 2),
            "exchange": exchange,
        }
    # memory: the one-file corpus (every rank reads all of it) against --shards 4 (each rank reads 2)
    mem_one = train(corpus, work / "mem-onefile", a.K, 5, 2, wrapper=True)["peaks"]
    mem_shards = train(sharded, work / "mem-shards", a.K, 5, 2, wrapper=True)["peaks"]
    mem_single = train(corpus, work / "mem-single", a.K, 5, 1, wrapper=True)["peaks"]
    shard_tokens = [s["N"] for s in json.loads((sharded / "corpus.json").read_text())["train"]["shards"]]
    report = {
        "corpus": {"D": prepared["train"]["D"], "W": prepared["W"], "N": N},
        "K": a.K,
        "sweeps": a.n,
        "one_process_seconds": [round(r["seconds"], 3) for r in results["one"]],
        "one_process_steady_sweep_ms": round(1000 * s1, 2),
        "perplexity_one": round(p1, 2),
        "two_ranks": layouts_report,
        "peak_rss_mb": {
            "one_process": mem_single,
            "two_ranks_one_file": mem_one,
            "two_ranks_shards4": mem_shards,
            "tokens_per_rank_shards4": [sum(shard_tokens[:2]), sum(shard_tokens[2:])],
        },
        "load_average_at_end": os.getloadavg(),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
