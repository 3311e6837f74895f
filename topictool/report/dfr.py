"""dfr-browser's data files (`topictool export dfr-browser`), as its README specifies them:

info.json     {"title", "meta_info", "VIS"}: a stub to edit (title and the About page's HTML)
tw.json       {"alpha": [alpha_k], "tw": [{"words": [...], "weights": [...]}]}: each topic's
              top words by probability with their weights (the topic's expected count of
              the word, phi_kv w_k N, rounded; phi_kv when N is unknown)
dt.json.zip   a zip holding dt.json, {"i", "p", "x"}: the document-topic matrix in compressed
              sparse column form: topic t's documents are i[p[t]:p[t+1]] with weights
              x[p[t]:p[t+1]] (Gibbs models: the token counts n_dt; others: proportions)
meta.csv.zip  a zip holding meta.csv: headerless CSV, one row a training document in the
              model's order, dfr-browser's eight columns (id, title, author, journal,
              volume, issue, date, pages): the name `prepare` recorded as id and title,
              the name's folder (e.g. neg/pos) as "journal", the rest empty
"""

import csv
import io
import json
import zipfile

import numpy as np

from ..topics import top_word_ids
from . import compute

FILES = ("info.json", "tw.json", "dt.json.zip", "meta.csv.zip")


def topic_words(snapshot, tokens, top=50):
    """tw.json's object."""
    phi = np.asarray(snapshot.phi, dtype=np.float64)
    w = compute.topic_proportions(snapshot.topic_weight)
    ids = top_word_ids(phi, top)
    tw = []
    for k in range(phi.shape[0]):
        if tokens:
            weights = [int(round(x)) for x in phi[k, ids[k]] * w[k] * tokens]
        else:
            weights = [float(x) for x in phi[k, ids[k]]]
        tw.append({"words": [snapshot.vocab[v] for v in ids[k]], "weights": weights})
    return {"alpha": [float(a) for a in snapshot.alpha], "tw": tw}


def sparse_columns(theta, csr, K):
    """dt.json's {"i", "p", "x"} from the CSR counts (doc-major) or, without them, theta."""
    if csr is not None:
        ptr, topic, count = (np.asarray(a) for a in csr)
        doc = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
        x = count.astype(np.int64)
    else:
        theta = np.asarray(theta, dtype=np.float64)
        doc, topic = np.nonzero(theta)
        x = theta[doc, topic]
    topic = topic.astype(np.int64)
    order = np.lexsort((doc, topic))
    p = np.zeros(K + 1, dtype=np.int64)
    np.cumsum(np.bincount(topic, minlength=K), out=p[1:])
    return {"i": doc[order].tolist(), "p": p.tolist(), "x": x[order].tolist()}


def metadata_csv(names):
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for name in names:
        name = " ".join(str(name).split())
        folder = name.rsplit("/", 1)[0] if "/" in name else ""
        writer.writerow([name, name, "", folder, "", "", "", ""])
    return buf.getvalue()


def zipped(member, text):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        info = zipfile.ZipInfo(member, date_time=(1980, 1, 1, 0, 0, 0))  # reproducible bytes
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        z.writestr(info, text.encode("utf-8"))
    return buf.getvalue()


def info_json(snapshot, model, D):
    name = snapshot.meta.get("model", "model") if isinstance(snapshot.meta, dict) else "model"
    return {
        "title": f"{name}, {snapshot.K} topics",
        "meta_info": (
            f"<p>Exported by topictool from {model}: {snapshot.K} topics, {snapshot.W} words, {D} documents. "
            "Edit this file's title and meta_info to describe your corpus.</p>"
        ),
        "VIS": {"overview_words": 15},
    }


def browser_files(model, snapshot, theta, csr, names, tokens, top=50):
    """{file name: bytes} of the four files."""
    K = snapshot.K
    return {
        "info.json": (json.dumps(info_json(snapshot, model, len(names)), indent=2) + "\n").encode("utf-8"),
        "tw.json": json.dumps(topic_words(snapshot, tokens, top)).encode("utf-8"),
        "dt.json.zip": zipped("dt.json", json.dumps(sparse_columns(theta, csr, K))),
        "meta.csv.zip": zipped("meta.csv", metadata_csv(names)),
    }
