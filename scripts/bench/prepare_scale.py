"""`topictool prepare` on a large text directory: peak memory of the process tree and MB/s.

Builds a directory of SIZE megabytes (default 2,048) of text files by repeating the documents of
../shared/data (the movie reviews, the State of the Union addresses, the web text) under new
names (copy-00001/pos/cv000_29590.txt, ...) in a temporary directory, runs
`topictool prepare DIR -o OUT --json --threads T` as a subprocess for each T, and measures:

* peak RSS of the process tree (prepare and its worker processes, summed), sampled from /proc
  every 100 ms, and the largest single process's peak (getrusage RUSAGE_CHILDREN ru_maxrss);
* MB/s as prepare reports it (bytes read from the sources / wall seconds; MB = 10**6 bytes).

The temporary directory is removed afterwards. Prints the results and writes them as JSON.

    python scripts/bench/prepare_scale.py --size-mb 200 --threads 1 2 --output prepare_scale.json
"""

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
ZIPS = ("nltk/movie_reviews.zip", "nltk/state_union.zip", "nltk/webtext.zip")


def documents():
    """(relative name, bytes) of the text documents in ../shared/data (no READMEs)."""
    out = []
    for rel in ZIPS:
        with zipfile.ZipFile(DATA / rel) as z:
            for info in z.infolist():
                base = info.filename.rsplit("/", 1)[-1].lower()
                if info.is_dir() or base.startswith(("readme", ".")):
                    continue
                out.append((info.filename, z.read(info)))
    return out


def build(root, size_bytes):
    """Copies of the documents under copy-NNNNN/ until ``size_bytes`` are written; (files, bytes)."""
    docs = documents()
    files = written = 0
    copy = 0
    while written < size_bytes:
        copy += 1
        for name, data in docs:
            path = root / f"copy-{copy:05d}" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            files += 1
            written += len(data)
            if written >= size_bytes:
                break
    return files, written


def tree_rss_kb(pid):
    """Resident memory (kB) of ``pid`` and all its descendants, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


def run_prepare(src, out, threads):
    cmd = [sys.executable, "-m", "topictool", "prepare", str(src), "-o", str(out), "--json", "--threads", str(threads)]
    cmd += ["--errors", "replace"]  # a State of the Union address holds a byte that is not UTF-8
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss_kb(proc.pid))
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate()
    done.set()
    sampler.join()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"prepare failed ({proc.returncode}): {stderr.strip()}")
    m = json.loads(stdout)
    largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "threads": threads,
        "seconds": m["seconds"],
        "wall_seconds": round(wall, 2),
        "input_mb": m["input_mb"],
        "mb_per_s": m["mb_per_s"],
        "peak_tree_rss_mb": round(peak[0] / 1024, 1),
        # the largest single process so far (monotone across runs: only meaningful when it grows)
        "peak_single_process_rss_mb": round(largest / 1024, 1) if largest > before else None,
        "D": m["D"],
        "W": m["W"],
        "N": m["N"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=2048, help="text to build, MB (10**6 bytes) [2048]")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="prepare --threads values [1 2]")
    ap.add_argument("--tmp", default=None, help="where the temporary directory goes [the system's temp dir]")
    ap.add_argument("--output", default=None, help="JSON file to write [prepare_scale-SIZE.json here]")
    args = ap.parse_args()
    if not (DATA / ZIPS[0]).is_file():
        raise SystemExit(f"no shared data at {DATA}")
    work = Path(tempfile.mkdtemp(prefix="prepare-scale-", dir=args.tmp))
    try:
        t0 = time.perf_counter()
        files, written = build(work / "src", int(args.size_mb * 1e6))
        print(f"built {files:,} files, {written / 1e6:,.1f} MB in {time.perf_counter() - t0:.1f} s", flush=True)
        runs = []
        for t in args.threads:
            out = work / f"out-{t}"
            r = run_prepare(work / "src", out, t)
            r["train_sha256"] = json.loads((out / "corpus.json").read_text())["train"]["sha256"]
            shutil.rmtree(out)
            runs.append(r)
            print(json.dumps(r), flush=True)
        result = {
            "command": "topictool prepare DIR -o OUT --json --threads T --errors replace",
            "files": files,
            "input_bytes": written,
            "same_output_for_every_threads": len({r["train_sha256"] for r in runs}) == 1,
            "runs": runs,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "load_average_after": os.getloadavg(),
            "date": time.strftime("%Y-%m-%d"),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    Path(args.output or f"prepare_scale-{int(args.size_mb)}.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
