"""Topic mixtures of new documents (`topictool infer`) and of the training documents
(`topictool export doc-topics`).

New documents are read as `prepare` reads sources (text directories, zips, one document per
line, LdaC, UCI, a prepared corpus); text is tokenised exactly as the model's training corpus
was (the snapshot records the prepare options, the vocabulary is the model's), and words the
model lacks are dropped and counted. Each document is then folded in by the model's own
method (evaluate/completion.fold_in: Gibbs with phi fixed, the VB fixed point for variational
models, the burst-aware document model for bursty ones), seeded per document; ``threads``
blocks of documents run on as many real threads (evaluate/blocks.py), and the result is the
same for any number of threads.
"""

import time
from pathlib import Path

import numpy as np

from .corpus.prepare import PrepareOptions, read_text, source_kind
from .corpus.prepared import load_prepared, read_bag_file, read_names
from .corpus.tokenizer import load_stopwords
from .corpus.vocabulary import align
from .errors import InputError


def read_documents(source, snapshot, part="train", vocab=None, source_format="auto"):
    """(corpus over the snapshot's vocabulary, document names, facts) of SOURCE."""
    path = Path(source)
    if path.is_dir() and (path / "corpus.json").is_file():
        corpus = load_prepared(path, part)
        names = read_names(path, part, corpus.D) or [f"{part}:{i}" for i in range(corpus.D)]
        corpus, oov = align(corpus, snapshot.vocab)
        return corpus, names, {"oov_tokens_dropped": int(oov)}
    kind = source_kind(path, source_format)
    if kind in ("ldac", "uci"):
        corpus = read_bag_file(path, kind, vocab)
        corpus, oov = align(corpus, snapshot.vocab)
        return corpus, [f"{path.name}:{i + 1}" for i in range(corpus.D)], {"oov_tokens_dropped": int(oov)}
    prepared = snapshot.meta.get("prepare") or {}
    opts = PrepareOptions(**{k: v for k, v in prepared.items() if k in PrepareOptions.__dataclass_fields__})
    notes = []
    if not prepared:
        notes.append("the model records no prepare options (trained on a bare LdaC/UCI file?): default tokenisation")
    try:
        stop = load_stopwords(opts.stopwords or "english", opts.encoding)
    except InputError as e:  # stop words only keep them out of the OOV count; the vocabulary lacks them anyway
        stop = frozenset()
        notes.append(f"the training stop words are not available ({e}); they count as words outside the vocabulary")
    corpus, names, facts = read_text([path], [kind], opts, fixed=tuple(snapshot.vocab), stop=stop)
    facts.pop("documents_per_folder", None)
    if notes:
        facts["notes"] = notes
    return corpus, names, facts


def infer(snapshot, corpus, method=None, burn_in=10, samples=40, seed=1, threads=1):
    """(theta (D, K), Gibbs topic counts (D, K) or None, summary dict) of a corpus over the
    snapshot's vocabulary."""
    from .evaluate.completion import fold_in

    started = time.perf_counter()
    theta, counts, used = fold_in(snapshot, corpus, method, burn_in, samples, seed, threads)
    summary = {
        "documents": corpus.D,
        "tokens": int(corpus.N),
        "empty_documents": int(np.count_nonzero(np.diff(corpus.doc_ptr) == 0)),
        "K": int(theta.shape[1]),
        "method": used,
        "burn_in": int(burn_in) if used != "vb" else None,
        "samples": int(samples) if used != "vb" else None,
        "seed": int(seed),
        "threads": int(threads),
        "seconds": round(time.perf_counter() - started, 3),
    }
    return theta, counts, summary
