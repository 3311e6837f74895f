"""pyLDAvis's prepared data (`topictool export ldavis`), loadable by LDAvis as it is.

The JSON object has the members of pyLDAvis's ``PreparedData.to_dict()``; each table is an
object of equal-length columns:

    mdsDat       x, y, topics, cluster, Freq      one row a topic, in decreasing prevalence:
                 topics 1..K (the display numbers), cluster 1, Freq the prevalence in percent,
                 x, y the intertopic distance map (compute.topic_coordinates)
    tinfo        Term, Freq, Total, Category, logprob, loglift
                 first R rows Category "Default": the R most salient words (Freq = Total =
                 their corpus count, floored; logprob = loglift = R, R-1, ..., 1 as pyLDAvis
                 writes them); then for display topic j, Category "Topicj", one row for each of
                 its candidate words (compute.candidates), in word-id order: Freq the topic's
                 expected count of the word, Total the word's corpus count, logprob and loglift
                 at full precision. Sorting a topic's rows by relevance with a stable sort (as
                 LDAvis does) gives topictool's ranking, ties by word id.
    token.table  Topic, Freq, Term    for every word in tinfo (ordered by word, then topic),
                 the topics holding at least half a token of it: Freq = round(count) / corpus
                 count of the word
    R            words shown (30);  lambda.step  the slider's step (0.01)
    plot.opts    {"xlab": "PC1", "ylab": "PC2"}
    topic.order  topic.order[j - 1] - 1 is topictool's index of display topic j

Counts: topic k holds w_k N tokens (w the corpus topic proportions, N the training tokens), so
its count of word v is phi_kv w_k N and the word's corpus count is the sum over topics (the
model's own corpus counts, which is what pyLDAvis computes since LDAvis#41: a topic's bar never
exceeds the word's).
"""

import numpy as np

from ..errors import InputError
from ..topics import top_word_ids
from . import compute


def prepared_data(snapshot, tokens, R=30, lambda_step=0.01):
    """The prepared-data dict of ``snapshot`` trained on ``tokens`` tokens."""
    if tokens is None or tokens <= 0:
        raise InputError(
            "the number of training tokens is unknown (the model records none and its corpus is gone): "
            "give the training corpus with --corpus"
        )
    phi = np.asarray(snapshot.phi, dtype=np.float64)
    K, W = phi.shape
    vocab = list(snapshot.vocab)
    R = int(min(R, W))
    w = compute.topic_proportions(snapshot.topic_weight)
    order = np.argsort(-w, kind="stable")
    term_topic = phi * (w * float(tokens))[:, None]
    total = term_topic.sum(axis=0)
    logprob, loglift, _ = compute.log_terms(phi, w)

    tinfo = {c: [] for c in ("Term", "Freq", "Total", "Category", "logprob", "loglift")}

    def row(v, freq, tot, category, lp, ll):
        tinfo["Term"].append(vocab[v])
        tinfo["Freq"].append(float(freq))
        tinfo["Total"].append(float(tot))
        tinfo["Category"].append(category)
        tinfo["logprob"].append(float(lp))
        tinfo["loglift"].append(float(ll))

    default = top_word_ids(compute.saliency(phi, w)[None, :], R)[0]
    for rank, v in enumerate(default):
        row(v, np.floor(total[v]), np.floor(total[v]), "Default", R - rank, R - rank)
    cands = compute.candidates(logprob, loglift, R, lambda_step)
    shown = set(default.tolist())
    for j, k in enumerate(order, 1):
        for v in cands[k]:
            row(v, term_topic[k, v], total[v], f"Topic{j}", logprob[k, v], loglift[k, v])
        shown.update(cands[k].tolist())

    table = {"Topic": [], "Freq": [], "Term": []}
    for v in sorted(shown, key=lambda v: (vocab[v], v)):
        for j, k in enumerate(order, 1):
            f = term_topic[k, v]
            if f >= 0.5:
                table["Topic"].append(j)
                table["Freq"].append(float(np.round(f) / total[v]))
                table["Term"].append(vocab[v])

    xy = compute.topic_coordinates(phi)[order]
    return {
        "mdsDat": {
            "x": xy[:, 0].tolist(),
            "y": xy[:, 1].tolist(),
            "topics": list(range(1, K + 1)),
            "cluster": [1] * K,
            "Freq": (w[order] * 100.0).tolist(),
        },
        "tinfo": tinfo,
        "token.table": table,
        "R": R,
        "lambda.step": float(lambda_step),
        "plot.opts": {"xlab": "PC1", "ylab": "PC2"},
        "topic.order": (order + 1).tolist(),
    }


def sorted_terms(data, topic, lam):
    """The words of display topic ``topic`` (1-based) by relevance at ``lam``, as LDAvis orders
    them (a stable sort of the topic's tinfo rows): for tests and users' checks."""
    t = data["tinfo"]
    rows = [i for i, c in enumerate(t["Category"]) if c == f"Topic{topic}"]
    rel = {i: lam * t["logprob"][i] + (1 - lam) * t["loglift"][i] for i in rows}
    rows.sort(key=lambda i: -rel[i])  # stable: equal relevance keeps the rows' order
    return [t["Term"][i] for i in rows]
