"""The self-contained HTML report of a model or run (`topictool report`).

One file: the page's style and script (static/report.css, static/report.js, the project's own)
and every datum inline, no external reference, so it opens from a laptop's disk with no network.
What the page shows and where it comes from:

    map         compute.topic_coordinates (JSD + PCoA), circle areas by prevalence
    terms       the selected topic's top R terms by relevance at the slider's lambda, ranked in
                the page from compute.candidates (so exactly compute.ranking at every grid
                value); bars: the topic's expected count of the term (phi_kw w_k N) against
                its corpus count (p(w) N); with no topic selected, the R most salient terms
    table       prevalence, effective number of words and Hellinger distance to the corpus
                distribution (evaluate.diagnostics), coherence against --reference
                (evaluate.coherence, the model's top 10 words by probability), top words by
                term-score; rendered here, sortable in the page
    documents   the selected topic's top documents by proportion (export.training_doc_topics:
                a Gibbs model's counts, or a variational run's checkpoint), named as `prepare`
                recorded them
    curves      for a run: log-likelihood, test perplexity, tokens/s and, for a non-parametric
                model, the topics in use (and the effective number of topics where the model
                logs it), against the iteration (metrics.jsonl), as inline SVG

The state lives in the URL fragment, #topic=3&lambda=0.6 (topictool's 0-based topic index).
"""

import html
import json
import re
from importlib import resources
from pathlib import Path

import numpy as np

from .. import __version__
from ..errors import InputError
from . import compute
from .svg import line_chart

#: (metrics key, chart title) of the training curves, in page order
CURVES = (
    ("log_likelihood", "log-likelihood"),
    ("test_perplexity", "test perplexity"),
    ("tokens_per_s", "tokens/s"),
)
#: metrics keys that count the topics in use, first found wins
TOPICS_IN_USE = ("active_topics", "topics")
NONPARAMETRIC = ("hdp-gibbs", "nplda-gibbs", "hdp-pcvb0", "hdp-pcsvb0", "hdp-online", "hdp-online-sm", "hdp-batch")
_URL = re.compile(r"(?i)\b(https?):")


def no_urls_html(text):
    """HTML text with any "http:"/"https:" written as a character reference (same rendering)."""
    return _URL.sub(lambda m: m.group(1) + "&#58;", text)


def script_json(obj):
    """JSON for a <script type="application/json"> element: nothing in it can end the element
    or read as a URL ('<', '>', '&' and the colon of "http:" as \\u escapes, valid JSON)."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return _URL.sub(lambda m: m.group(1) + "\\u003a", text)


def _short(x, digits=6):
    return float(f"{float(x):.{digits}g}")


def is_nonparametric(snapshot):
    meta = snapshot.meta if isinstance(snapshot.meta, dict) else {}
    name = meta.get("model")
    options = meta.get("options") if isinstance(meta.get("options"), dict) else {}
    return name in NONPARAMETRIC or (name == "lida-gibbs" and bool(options.get("nonparametric")))


# ----------------------------------------------------------------------------
# the parts


def _merge_best(best, values, docs, top):
    """Per topic the ``top`` (value, doc) pairs of ``best`` and the new candidates, by value then doc."""
    out = []
    for k in range(len(values)):
        v = np.concatenate([best[k][0], values[k]])
        d = np.concatenate([best[k][1], docs[k]])
        order = np.lexsort((d, -v))[:top]
        out.append((v[order], d[order]))
    return out


def top_documents_of_counts(csr, alpha, top, chunk=65536):
    """Per topic the ``top`` documents by proportion (n_dk + alpha_k) / (n_d + sum alpha), ties by
    index, from CSR topic counts, a chunk of documents at a time (never D x K at once): a list
    of (proportions, document indices)."""
    from ..doc_topics import proportions_from_counts

    ptr, topic, count = (np.asarray(a) for a in csr)
    D, K = len(ptr) - 1, len(alpha)
    best = [(np.zeros(0), np.zeros(0, dtype=np.int64)) for _ in range(K)]
    for start in range(0, D, chunk):
        stop = min(D, start + chunk)
        dense = np.zeros((stop - start, K), dtype=np.int64)
        lo, hi = ptr[start], ptr[stop]
        dense[np.repeat(np.arange(stop - start), np.diff(ptr[start : stop + 1])), topic[lo:hi]] = count[lo:hi]
        theta = proportions_from_counts(dense, alpha)
        ids = compute.top_word_ids(np.ascontiguousarray(theta.T), top)
        best = _merge_best(best, [theta[ids[k], k] for k in range(K)], [ids[k] + start for k in range(K)], top)
    return best


def top_documents(model, snapshot, top, corpus=None):
    """({"names", "top"} or None, note): per topic its ``top`` documents by proportion, each
    [name index, proportion, tokens of the topic or None]: from a Gibbs snapshot's counts, else
    from export.training_doc_topics (a variational run's checkpoint)."""
    from ..corpus.prepared import read_names
    from ..export import document_names, training_doc_topics

    if top <= 0:
        return None, "Top documents were not asked for (--top-docs 0)."
    K = snapshot.K
    counts = None
    if snapshot.doc_topics is not None:
        alpha = np.asarray(snapshot.alpha, dtype=np.float64)
        best = top_documents_of_counts(snapshot.doc_topics, alpha, top)
        ptr, topic, count = snapshot.doc_topics
        D = len(ptr) - 1
        names = document_names(snapshot, D)

        def tokens(d, k):
            row = slice(ptr[d], ptr[d + 1])
            hit = np.flatnonzero(topic[row] == k)
            return int(count[row][hit[0]]) if len(hit) else 0

        counts = tokens
    else:
        try:
            theta, _, names = training_doc_topics(model)
        except InputError as e:
            return None, f"No document-topic figures for this model: {e}."
        D = len(theta)
        ids = compute.top_word_ids(np.ascontiguousarray(theta.T), top)  # by proportion, ties by index
        best = [(theta[ids[k], k], ids[k]) for k in range(K)]
    if corpus is not None:
        names = read_names(corpus, "train", D) or names
    used, out = {}, []
    for k in range(K):
        rows = []
        for value, d in zip(best[k][0].tolist(), best[k][1].tolist()):
            i = used.setdefault(d, len(used))
            rows.append([i, _short(value), None if counts is None else counts(d, k)])
        out.append(rows)
    doc_names = [None] * len(used)
    for d, i in used.items():
        doc_names[i] = str(names[d])
    return {"names": doc_names, "top": out}, ""


def coherence_scores(model, reference, measure, K, window=None):
    """Per topic its coherence against ``reference`` (None without one)."""
    if reference is None:
        return None
    from ..evaluate.coherence import coherence

    result = coherence(reference, model=model, top=10, rank="prob", measure=measure, window=window)
    scores = [None] * K
    for t in result["topics"]:
        scores[t["index"]] = t["score"]
    return scores


def topic_table(snapshot, diag, coherence, measure, words):
    """The topic table's HTML (rows data-topic=k; cells data-value for sorting)."""
    esc = html.escape
    head = ["topic", "prevalence", "eff. words", "Hellinger to corpus"]
    if coherence is not None:
        head.append(f"coherence ({measure})")
    head.append("top words (term-score)")
    out = ['<table class="topics"><thead><tr>']
    out += [f"<th>{esc(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for t in diag["topics"]:
        k = t["index"]
        cells = [
            (k, str(k)),
            (t["proportion"], f"{100 * t['proportion']:.2f}%"),
            (t["effective_words"], f"{t['effective_words']:.1f}"),
            (t["hellinger_corpus"], f"{t['hellinger_corpus']:.3f}"),
        ]
        if coherence is not None:
            c = coherence[k]
            cells.append(("" if c is None or not np.isfinite(c) else c, "-" if c is None else f"{c:.3f}"))
        row = [f'<tr data-topic="{k}">']
        row += [f'<td data-value="{esc(repr(v) if isinstance(v, float) else str(v))}">{esc(s)}</td>' for v, s in cells]
        text = " ".join(words[k])
        row.append(f'<td class="words" data-value="{esc(text)}">{esc(text)}</td></tr>')
        out.append("".join(row))
    out.append("</tbody></table>")
    return "".join(out)


def metric_series(rows, key):
    """(iterations, values) of ``key`` in metrics rows, the last row of an iteration winning."""
    by_it = {}
    for r in rows:
        it, v = r.get("iteration"), r.get(key)
        if isinstance(it, (int, float)) and not isinstance(it, bool) and isinstance(v, (int, float)):
            if not isinstance(v, bool) and np.isfinite(v):
                by_it[it] = float(v)
    its = sorted(by_it)
    return its, [by_it[i] for i in its]


def training_curves(run, snapshot):
    """The curves' HTML for a run directory, or a sentence saying why there are none."""
    from ..evaluate.diagnostics import read_metrics

    if run is None:
        return '<p class="note">Training curves come with a run directory (topictool report RUN).</p>'
    rows = read_metrics(Path(run) / "metrics.jsonl")
    charts = []
    for key, title in CURVES:
        xs, ys = metric_series(rows, key)
        if xs:
            charts.append(line_chart(xs, ys, title))
    if is_nonparametric(snapshot):
        for key in TOPICS_IN_USE:
            xs, ys = metric_series(rows, key)
            if xs:
                charts.append(line_chart(xs, ys, "topics in use"))
                break
        xs, ys = metric_series(rows, "effective_topics")
        if xs:
            charts.append(line_chart(xs, ys, "effective number of topics"))
    if not charts:
        return '<p class="note">The run logged no figures (metrics.jsonl is empty or missing).</p>'
    return '<div class="charts">' + "".join(charts) + "</div>"


# ----------------------------------------------------------------------------
# the page


def report_data(snapshot, tokens, R=30, lambda_step=0.01):
    """The JSON the page reads (see report.js)."""
    phi = np.asarray(snapshot.phi, dtype=np.float64)
    K, W = phi.shape
    R = int(min(R, W))
    w = compute.topic_proportions(snapshot.topic_weight)
    logprob, loglift, p = compute.log_terms(phi, w)
    cands = compute.candidates(logprob, loglift, R, lambda_step)
    default = compute.top_word_ids(compute.saliency(phi, w)[None, :], R)[0]
    ids = sorted(set(default.tolist()).union(*[c.tolist() for c in cands]))
    index = {v: i for i, v in enumerate(ids)}  # term indices in word-id order: ties rank alike
    xy = compute.topic_coordinates(phi)
    labels = compute.top_word_ids(phi, 3)
    return {
        "K": int(K),
        "W": int(W),
        "N": tokens,
        "R": R,
        "lambda_step": float(lambda_step),
        "terms": [snapshot.vocab[v] for v in ids],
        "pw": [_short(p[v]) for v in ids],
        "x": [_short(v) for v in xy[:, 0]],
        "y": [_short(v) for v in xy[:, 1]],
        "prevalence": [float(v) for v in w],
        "labels": [" ".join(snapshot.vocab[v] for v in labels[k]) for k in range(K)],
        "topics": [
            {
                "t": [index[v] for v in c.tolist()],
                "lp": [float(x) for x in logprob[k, c]],
                "ll": [float(x) for x in loglift[k, c]],
            }
            for k, c in enumerate(cands)
        ],
        "default": [index[v] for v in default.tolist()],
    }


def _static(name):
    return resources.files("topictool.report").joinpath("static", name).read_text(encoding="utf-8")


def build_report(model, corpus=None, reference=None, measure="npmi", R=30, top_docs=10, lambda_step=0.01, window=None):
    """The report's HTML text for MODEL (a snapshot .npz or a run directory)."""
    from ..evaluate.diagnostics import model_diagnostics
    from ..snapshot import load_model
    from ..topics import top_words

    snapshot = load_model(model)
    run = model if Path(model).is_dir() else None
    tokens, corpus_path = compute.training_tokens(snapshot, corpus)
    data = report_data(snapshot, tokens, R, lambda_step)
    docs, note = top_documents(model, snapshot, top_docs, corpus)
    data["docs"], data["docs_note"] = docs, note
    diag = model_diagnostics(snapshot)
    scores = coherence_scores(model, reference, measure, snapshot.K, window)
    words = {k: ws for k, _, ws, _ in top_words(snapshot, top=8, rank="term-score")}

    meta = snapshot.meta if isinstance(snapshot.meta, dict) else {}
    name = meta.get("model") or "model"
    title = f"{name}: {snapshot.K} topics ({Path(model).name})"
    summary = [f"{snapshot.K} topics", f"{snapshot.W:,} words"]
    summary.append(f"{tokens:,} training tokens" if tokens else "training tokens unknown (bars show shares)")
    summary.append(f"effective number of topics {diag['effective_topics']:.1f}")
    if isinstance(meta.get("iteration"), int):
        summary.append(f"iteration {meta['iteration']:,}")
    if corpus_path:
        summary.append(f"corpus {corpus_path}")
    table_note = (
        "Prevalence: share of the training tokens; eff. words: exp(entropy of p(w|k)); Hellinger distance of "
        "p(w|k) to the corpus word distribution"
        + (
            f"; coherence: {measure} of the top 10 words against {reference}"
            if reference is not None
            else " (give --reference for coherence)"
        )
        + ". Click a row to select its topic, a header to sort."
    )
    parts = {
        "VERSION": html.escape(__version__),
        "TITLE": html.escape(title),
        "SUMMARY": html.escape(", ".join(summary)),
        "TABLE_NOTE": html.escape(table_note),
        "TABLE": topic_table(snapshot, diag, scores, measure, words),
        "CURVES": training_curves(run, snapshot),
        "FOOTER": html.escape(f"Written by topictool {__version__} from {model}."),
    }
    parts = {k: no_urls_html(v) for k, v in parts.items()}
    parts["CSS"] = _static("report.css")
    parts["JS"] = _static("report.js")
    parts["DATA"] = script_json(data)
    page = re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: parts[m.group(1)], _static("page.html"))
    if _URL.search(page):  # the page's own files hold none; the data were escaped above
        raise AssertionError("the report would hold an http: or https: reference")
    return page
