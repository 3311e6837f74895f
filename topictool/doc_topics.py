"""Documents' topic mixtures written out: `infer` (new documents) and `export doc-topics`
(the training documents of a run or snapshot) share these layouts.

    .tsv   Mallet's --output-doc-topics: one line a document, `index<TAB>name<TAB>p_0 ... p_{K-1}`
           (Mallet 2.0.8 and later); with --threshold or --max-topics, `index<TAB>name` then
           `topic<TAB>proportion` pairs, largest first (the layout those options give in Mallet)
    .csv   the same columns, comma-separated, with a header line
    .npz   theta (D, K) float64, the document names, and topic counts as CSR
           (doc_topic_ptr, doc_topic_topic, doc_topic_count) where there are counts
"""

import io
import json
from pathlib import Path

import numpy as np

from . import store
from .errors import InputError

FORMATS = ("tsv", "csv", "npz")


def output_format(path, fmt=None):
    """The layout of ``path``: ``fmt`` if given, else from the suffix (.npz, .csv, else tsv)."""
    if fmt:
        return fmt
    suffix = Path(path).suffix.lower()
    return {".npz": "npz", ".csv": "csv"}.get(suffix, "tsv")


def proportions_from_counts(counts, alpha):
    """theta_dk = (n_dk + alpha_k) / (n_d + sum alpha): Mallet's doc-topic proportions."""
    counts = np.asarray(counts, dtype=np.float64)
    return (counts + alpha) / (counts.sum(axis=1, keepdims=True) + alpha.sum())


def check_options(path, fmt=None, threshold=0.0, max_topics=None):
    """InputError for a bad layout, threshold or topic count (before any work is done)."""
    fmt = output_format(path, fmt)
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if not 0.0 <= threshold < 1.0:
        raise InputError(f"--threshold {threshold}: must be in [0, 1)")
    if max_topics is not None and max_topics < 1:
        raise InputError(f"--max-topics {max_topics}: must be at least 1")
    return fmt


def write(path, theta, names, fmt=None, threshold=0.0, max_topics=None, csr=None, meta=None):
    """Write the (D, K) proportions ``theta`` of documents ``names`` to ``path``, atomically (the
    caller has checked the output with store.check_output_file)."""
    fmt = check_options(path, fmt, threshold, max_topics)
    names = [" ".join(str(n).splitlines()) for n in names]  # one line each, whatever a file was called
    if fmt == "npz":
        arrays = dict(theta=np.asarray(theta, dtype=np.float64), names_utf8=store.encode_words(names))
        if csr is not None:
            from .snapshot import DOC_TOPIC_KEYS

            arrays.update(zip(DOC_TOPIC_KEYS, csr))
        arrays["meta"] = np.array(json.dumps(meta or {}, sort_keys=True))
        store.write_npz(path, **arrays)
        return
    sep = "\t" if fmt == "tsv" else ","
    sparse = threshold > 0 or max_topics is not None
    buf = io.StringIO()
    if fmt == "csv":
        header = [
            "doc",
            "name",
            *(("topic", "proportion") if sparse else (f"topic_{k}" for k in range(theta.shape[1]))),
        ]
        buf.write(sep.join(header) + "\n")
    for d, (row, name) in enumerate(zip(theta, names)):
        name = _field(name, sep)
        if sparse:
            order = np.argsort(-row, kind="stable")
            order = [k for k in order if row[k] >= threshold][:max_topics]
            cells = [f"{k}{sep}{row[k]:.6g}" for k in order]
        else:
            cells = [f"{p:.6g}" for p in row]
        buf.write(sep.join([str(d), name, *cells]) + "\n")
    store.write_text(path, buf.getvalue())


def _field(name, sep):
    """A document name as one field: separators, quotes and line breaks quoted CSV-style."""
    if sep in name or '"' in name or "\n" in name:
        return '"' + name.replace('"', '""') + '"'
    return name
