"""What `topictool export` writes for other tools: the training documents' topic mixtures, an
lda-gibbs run's topic assignments in Mallet's state format, pyLDAvis's prepared data and
dfr-browser's data files."""

import gzip
import io
from pathlib import Path

import numpy as np

from . import doc_topics, store
from .corpus.prepared import read_names
from .errors import InputError


def training_doc_topics(model):
    """(theta (D, K), counts CSR or None, names) of the training documents of MODEL (a run or a
    snapshot): from the snapshot's doc-topic counts (Gibbs models), or for a run of another
    model from its checkpoint (expected counts)."""
    from .snapshot import doc_topic_csr, load_model

    snap = load_model(model)
    if snap.doc_topics is not None:
        counts, csr = snap.doc_topic_matrix(), snap.doc_topics
    elif Path(model).is_dir():
        from .training import model_of_run

        counts, csr = model_of_run(model).doc_topics(), None
        if counts is None:
            raise InputError(f"model {snap.meta.get('model')} keeps no per-document topic counts", model)
        counts = np.asarray(counts, dtype=np.float64)
        if counts.shape[1] != snap.K:
            raise InputError("the run's doc-topic counts do not match its snapshot's topics", model)
        if np.issubdtype(counts.dtype, np.integer):
            csr = doc_topic_csr(dense=counts)
    else:
        raise InputError(
            "this snapshot holds no doc-topic counts (written by a model other than a Gibbs sampler, or by an older "
            "topictool): export from its run directory",
            model,
        )
    theta = doc_topics.proportions_from_counts(counts, np.asarray(snap.alpha, dtype=np.float64))
    return theta, csr, document_names(snap, len(theta))


def document_names(snap, D):
    """The names `prepare` recorded for the model's training documents, or their indices."""
    corpus = snap.meta.get("corpus")
    names = None
    if corpus:
        try:
            names = read_names(corpus, "train", D)
        except InputError:
            names = None
    return names if names is not None else [str(d) for d in range(D)]


def write_mallet_state(run, out):
    """An lda-gibbs run's topic assignments as Mallet's gzipped state file:

        #doc source pos typeindex type topic
        #alpha : alpha_0 alpha_1 ...
        #beta : beta
        0 NAME 0 12 word 3

    one line a token. Tokens are in the prepared corpus's order (each document's bag of
    words, word ids ascending), the only order a prepared corpus keeps; names have their
    white space replaced by '_'."""
    from .training import model_of_run

    info = store.read_run_json(run)
    if info.get("model") != "lda-gibbs":
        raise InputError(f"export state writes lda-gibbs runs (Mallet's model); this run is {info.get('model')}", run)
    model = model_of_run(run)
    vocab = model.corpus.vocab
    names = read_names(info["corpus"]["path"], "train", model.D) or ["NA"] * model.D
    buf = io.StringIO()
    buf.write("#doc source pos typeindex type topic\n")
    buf.write("#alpha : " + " ".join(repr(float(a)) for a in model.alpha) + "\n")
    buf.write(f"#beta : {float(model.beta)!r}\n")
    words, z, ptr = model.words, model.z, model.token_ptr
    for d in range(model.D):
        name = "_".join(str(names[d]).split()) or "NA"
        for pos, i in enumerate(range(ptr[d], ptr[d + 1])):
            w = int(words[i])
            buf.write(f"{d} {name} {pos} {w} {vocab[w]} {int(z[i])}\n")
    with store.atomic_open(out, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
        gz.write(buf.getvalue().encode("utf-8"))
    return {"output": str(out), "documents": model.D, "tokens": int(model.N), "iteration": model.iteration}


def read_mallet_state(path):
    """(doc, typeindex, topic) int arrays and the alpha and beta lines of a Mallet state file
    (read as its documented format: for tests and users' checks)."""
    alpha, beta, rows = None, None, []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("#alpha :"):
                alpha = np.array([float(x) for x in line.split(":", 1)[1].split()])
            elif line.startswith("#beta :"):
                beta = float(line.split(":", 1)[1])
            elif not line.startswith("#"):
                doc, _source, _pos, typeindex, _type, topic = line.split()
                rows.append((int(doc), int(typeindex), int(topic)))
    a = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return a[:, 0], a[:, 1], a[:, 2], alpha, beta


# ----------------------------------------------------------------------------
# LDAvis and dfr-browser (topictool.report holds the figures and the formats)

DFR_BROWSER_KIND = "dfr-browser"


def _register_dfr_browser_kind():
    from .report.dfr import FILES

    store.register_kind(DFR_BROWSER_KIND, FILES, "dfr-browser data directory")  # idempotent


def write_ldavis(model, out, corpus=None, R=30, lambda_step=0.01):
    """pyLDAvis's prepared-data JSON of MODEL (a run or a snapshot) at ``out``
    (topictool.report.ldavis has the format)."""
    from .report.compute import training_tokens
    from .report.ldavis import prepared_data
    from .snapshot import load_model

    snap = load_model(model)
    tokens, _ = training_tokens(snap, corpus)
    data = prepared_data(snap, tokens, R, lambda_step)
    store.write_text(out, store.dumps(data) + "\n")
    return {"output": str(out), "K": snap.K, "R": data["R"], "tokens": tokens, "rows": len(data["tinfo"]["Term"])}


def check_dfr_browser_output(out, force, inputs):
    _register_dfr_browser_kind()
    return store.check_output_dir(out, force, kind=DFR_BROWSER_KIND, inputs=inputs)


def write_dfr_browser(model, out, force=False, corpus=None, top=50):
    """dfr-browser's data files (info.json, tw.json, dt.json.zip, meta.csv.zip) of MODEL in the
    directory ``out``, built beside it and put in place whole (topictool.report.dfr has the
    formats)."""
    from .corpus.prepared import read_names
    from .report.compute import training_tokens
    from .report.dfr import browser_files
    from .snapshot import load_model

    check_dfr_browser_output(out, force, [model, corpus])
    snap = load_model(model)
    tokens, _ = training_tokens(snap, corpus)
    if snap.doc_topics is not None:  # a Gibbs model's counts: no dense table needed
        theta, csr = None, snap.doc_topics
        names = document_names(snap, len(csr[0]) - 1)
    else:
        theta, csr, names = training_doc_topics(model)
    if corpus is not None:
        names = read_names(corpus, "train", len(names)) or names
    files = browser_files(str(model), snap, theta, csr, names, tokens, top)
    with store.staged_directory(out, force, kind=DFR_BROWSER_KIND, inputs=[model, corpus]) as d:
        for name, data in files.items():
            with store.atomic_open(Path(d) / name, "wb") as f:
                f.write(data)
    return {
        "output": str(out),
        "K": snap.K,
        "documents": len(names),
        "weights": "counts" if csr is not None else "proportions",
    }
