"""Topic coherence of `topictool pmi` against gensim's CoherenceModel (UMass, NPMI, C_V).

    /tmp/benchenv/bin/python scripts/bench/coherence_vs_gensim.py [--corpus /tmp/movies-coh]
        [--source /work/shared/data/nltk/movie_reviews.zip] [--run /tmp/movies-coh-run] [--top 10]

Runs in the bench environment (gensim 4.4 beside topictool; gensim is never a
dependency of topictool). Prepares the movie reviews and trains lda-gibbs
(K=20, 100 sweeps, seed 1) when --corpus / --run do not exist yet, takes the
top --top words of every topic (by probability) and scores them

* with gensim: ``CoherenceModel(topics=..., texts=..., dictionary=..., coherence=
  'u_mass' | 'c_npmi' | 'c_v', topn=top, processes=1)`` (windows: gensim's
  defaults, 10 for c_npmi and 110 for c_v; u_mass on the bags of words);
* with topictool: ``coherence(CORPUS, model=RUN, measure=..., convention='gensim',
  window_counting='gensim')`` (the same defaults), against the training part.

The texts given to gensim are built here, not by topictool's code under test: the
zip's member files in sorted order (README skipped, as prepare skips it), each
tokenised by topictool's Tokenizer with the pattern recorded in corpus.json, its
tokens kept when they are words of the prepared vocabulary (prepare removed stop
words before pruning, so no stop word is in it, and pruned words are not), and
the training documents taken by name from train.names.txt. These are the
documents of train.npz with their tokens in text order (checked: same bags).

Prints, per measure, the window, both means and the largest absolute difference
over the topics (the target is 1e-6), and topictool's figure under boolean window
counting (what Röder et al. and `topictool cooc` count; gensim's accumulator
forgets a word when one of its tokens leaves the window while another remains).
"""

import argparse
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from topictool.corpus import load_corpus  # noqa: E402
from topictool.corpus.text import not_a_document  # noqa: E402
from topictool.corpus.tokenizer import Tokenizer  # noqa: E402
from topictool.evaluate.coherence import coherence  # noqa: E402
from topictool.snapshot import load_model  # noqa: E402
from topictool.topics import top_words  # noqa: E402

MEASURES = [("umass", "u_mass"), ("npmi", "c_npmi"), ("cv", "c_v")]


def topictool_cli(*args):
    subprocess.run([sys.executable, "-m", "topictool", *map(str, args)], check=True, stdout=subprocess.DEVNULL)


def training_texts(corpus_dir, source):
    """Token lists of the training documents, in text order, over the prepared vocabulary."""
    manifest = json.loads((corpus_dir / "corpus.json").read_text())
    vocab = (corpus_dir / "vocab.txt").read_text().split("\n")[:-1]
    keep = set(vocab)
    tokenize = Tokenizer(manifest["options"]["token_pattern"])
    with zipfile.ZipFile(source) as zf:
        docs = {}
        for name in sorted(i.filename for i in zf.infolist() if not i.is_dir()):
            if not not_a_document(name):
                docs[name] = [t for t in tokenize(zf.read(name).decode("utf-8")) if t in keep]
    names = (corpus_dir / "train.names.txt").read_text().split("\n")[:-1]
    texts = [docs[n] for n in names]
    # the same bags of words as train.npz
    train = load_corpus(corpus_dir, part="train")
    index = {w: i for i, w in enumerate(vocab)}
    for d, text in enumerate(texts):
        a, b = train.doc_ptr[d], train.doc_ptr[d + 1]
        ids, counts = np.unique([index[t] for t in text], return_counts=True)
        assert np.array_equal(ids, train.word_ids[a:b]) and np.array_equal(counts, train.counts[a:b]), d
    return texts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="/tmp/movies-coh", type=Path)
    ap.add_argument("--source", default="/work/shared/data/nltk/movie_reviews.zip", type=Path)
    ap.add_argument("--run", default="/tmp/movies-coh-run", type=Path)
    ap.add_argument("--top", default=10, type=int)
    args = ap.parse_args()

    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    if not args.corpus.exists():
        topictool_cli("prepare", args.source, "-o", args.corpus)
    if not args.run.exists():
        topictool_cli("train", args.corpus, "-m", "lda-gibbs", "-K", 20, "-n", 100, "--seed", 1, "-o", args.run)
    topics = [words for _, _, words, _ in top_words(load_model(args.run), args.top, "prob")]
    texts = training_texts(args.corpus, args.source)
    dictionary = Dictionary(texts)
    bow = [dictionary.doc2bow(t) for t in texts]
    print(f"{len(texts)} training documents, {sum(map(len, texts))} tokens, {len(topics)} topics x top {args.top}")
    print()
    print(
        "| measure | window | gensim mean | topictool mean | max abs diff (topics) | gensim s | topictool s |"
        " topictool, boolean windows |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    for ours, theirs in MEASURES:
        t0 = time.perf_counter()
        kw = dict(corpus=bow) if theirs == "u_mass" else dict(texts=texts)
        cm = CoherenceModel(topics=topics, dictionary=dictionary, coherence=theirs, topn=args.top, processes=1, **kw)
        g = np.array(cm.get_coherence_per_topic())
        tg = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = coherence(
            args.corpus, model=args.run, top=args.top, measure=ours, convention="gensim", window_counting="gensim"
        )
        tt = time.perf_counter() - t0
        assert [t["words"] for t in r["topics"]] == topics
        s = np.array([t["score"] for t in r["topics"]])
        diff = float(np.max(np.abs(s - g)))
        worst = max(worst, diff)
        boolean = ""
        if r["window"] != "document":
            b = coherence(args.corpus, model=args.run, top=args.top, measure=ours, convention="gensim")
            boolean = f"{b['mean']:.6f}"
        print(
            f"| {ours} (gensim {theirs}) | {r['window']} | {g.mean():.6f} | {r['mean']:.6f} | {diff:.1e} |"
            f" {tg:.2f} | {tt:.2f} | {boolean or 'n/a'} |"
        )
    print()
    print(f"largest difference {worst:.2e} ({'within' if worst <= 1e-6 else 'OUTSIDE'} 1e-6)")
    return 0 if worst <= 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
