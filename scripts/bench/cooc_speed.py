"""Throughput of `topictool cooc` on a MediaWiki dump (default: the 206-article sample).

    .venv/bin/python scripts/bench/cooc_speed.py [--dump PATH] [--vocab FILE] [--workers 1 2]
                                                 [--repeat 3] [--full-gb 90]

Reports, per configuration, the best of --repeat runs (the machine may be shared):
wall-clock MB/s of uncompressed XML, MB/s per worker, and MB per CPU-second of
all processes (the figure that does not depend on other load), plus a breakdown
of one worker's time (decompression, page parsing + markup stripping,
tokenizing, counting) and the extrapolated hours for a full English dump
(--full-gb of uncompressed XML) on 2 and 16 cores.

Without --vocab, the vocabulary is the 10,000 most frequent non-stop-words of the
dump itself (the size of a typical topic-model vocabulary).
"""

import argparse
import bz2
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from topictool.cooc import CoocOptions, PairCounter, build_reference  # noqa: E402
from topictool.corpus.tokenizer import Tokenizer, load_stopwords  # noqa: E402
from topictool.corpus.wikipedia import article_text, iter_raw_pages  # noqa: E402

SAMPLE = ROOT.parent / "shared" / "data" / "wikipedia" / "enwiki-sample-206-articles.xml.bz2"


def cpu_seconds():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def make_vocab(dump, path, size=10000):
    tok, stop = Tokenizer(), load_stopwords("english")
    counts = collections.Counter()
    for raw in iter_raw_pages(dump):
        text = article_text(raw)
        if text is not None:
            counts.update(t for t in tok(text) if t not in stop)
    words = [w for w, _ in counts.most_common(size)]
    Path(path).write_text("\n".join(words) + "\n")
    return words


def breakdown(dump, vocab, window):
    """CPU seconds of each stage for one worker over the whole dump (single thread)."""
    clock = time.process_time
    warm = PairCounter(vocab[:2], window=window)
    warm.add_texts([" ".join(vocab[:2])])  # load the compiled kernels before timing
    warm.pairs()
    t0 = clock()
    with bz2.open(dump) if str(dump).endswith(".bz2") else open(dump, "rb") as f:
        nbytes = len(f.read())
    t_bz2 = clock() - t0
    t0 = clock()
    pages = list(iter_raw_pages(dump))
    t_split = clock() - t0 - t_bz2
    t0 = clock()
    texts = [t for t in (article_text(p) for p in pages) if t is not None]
    t_strip = clock() - t0
    counter = PairCounter(vocab, window=window)
    t0 = clock()
    tokens = [counter.tokenize(t) for t in texts]
    t_tok = clock() - t0
    t0 = clock()
    counter._add_token_lists(tokens)
    counter.pairs()
    t_count = clock() - t0
    return nbytes, {
        "bz2 decompression": t_bz2,
        "page splitting": max(t_split, 1e-3),
        "page parsing + markup stripping": t_strip,
        "tokenizing": t_tok,
        "id mapping + window counting": t_count,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dump", default=str(SAMPLE))
    ap.add_argument("--vocab")
    ap.add_argument("--window", default="10")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--full-gb", type=float, default=90.0, help="uncompressed size of a full dump, GB")
    args = ap.parse_args()
    dump = Path(args.dump)
    if not dump.exists():
        sys.exit(f"no dump at {dump} (pass --dump)")
    tmp = Path(tempfile.mkdtemp(prefix="cooc-bench-"))
    vocab_path = Path(args.vocab) if args.vocab else tmp / "vocab.txt"
    if not args.vocab:
        make_vocab(dump, vocab_path)
    vocab = [w.split()[-1] for w in vocab_path.read_text().splitlines() if w.strip()]
    window = "doc" if args.window == "doc" else int(args.window)
    print(
        f"dump {dump.name}  vocabulary {len(vocab):,} words  window {window}  "
        f"cpus {os.cpu_count()}  load {os.getloadavg()[0]:.1f}"
    )

    nbytes, parts = breakdown(dump, vocab, window)
    total = sum(parts.values())
    print(
        f"\none worker, stage by stage, CPU time ({nbytes / 1e6:.1f} MB of XML, {total:.2f} s, "
        f"{nbytes / total / 1e6:.2f} MB/s):"
    )
    for name, sec in parts.items():
        print(f"  {name:34s} {sec:6.3f} s  {nbytes / sec / 1e6 if sec else float('inf'):8.1f} MB/s")

    for workers in args.workers:
        best = None
        for rep in range(args.repeat):
            out = tmp / f"ref-{workers}-{rep}.npz"
            c0, t0 = cpu_seconds(), time.perf_counter()
            summary = build_reference(
                [dump], vocab_path, out, CoocOptions(window=window, workers=workers), progress="none"
            )
            wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
            if best is None or wall < best[0]:
                best = (wall, cpu, summary)
            out.unlink()
        wall, cpu, summary = best
        mb = summary["bytes_read"] / 1e6
        print(
            f"\n--workers {workers}: {mb:.1f} MB in {wall:.2f} s wall, {cpu:.2f} s CPU (all processes): "
            f"{mb / wall:.2f} MB/s, {mb / wall / workers:.2f} MB/s per worker, {mb / cpu:.2f} MB per CPU-second; "
            f"{summary['documents']} documents, {summary['units']:,} windows, {summary['pairs']:,} pairs"
        )

    # CPU seconds per MB of XML: reading (decompression + cutting into page blocks, in the
    # main process) and counting (parsing, stripping, tokenizing, counting, in a worker)
    mb = nbytes / 1e6
    read = (parts["bz2 decompression"] + parts["page splitting"]) / mb
    count = sum(v for k, v in parts.items() if k not in ("bz2 decompression", "page splitting")) / mb
    gb = args.full_gb
    print(f"\nper worker (counting only): {1 / count:.2f} MB/s;  reading one bz2 stream: {1 / read:.1f} MB/s")
    print(f"extrapolation to a full English dump ({gb:.0f} GB of XML):")
    for cores in (2, 16):
        for streams, what in ((1, "one .bz2 file"), (min(27, max(1, cores // 4)), "the 27 split .bz2 files")):
            rate = min(cores / (read + count), streams / read)  # all cores busy, or the reader threads
            print(f"  {cores:2d} cores, {what:24s}: {rate:6.1f} MB/s -> {gb * 1e3 / rate / 3600:5.1f} hours")


if __name__ == "__main__":
    main()
