"""topictool info: diagnostics of a model or a run."""

from pathlib import Path

import click

from .common import COUNT, emit_json, json_option, print_table


@click.command("info", short_help="Effective number of topics and per-topic diagnostics of a model or run.")
@click.argument("model")
@click.option(
    "--top", default=5, show_default=True, type=COUNT, help="Top words (term-score) shown per topic in the table."
)
@json_option
def command(model, top, as_json):
    """Diagnostics of MODEL (a snapshot .npz) or RUN (a run directory): effective number of
    topics, and per topic its proportion, effective number of words, Hellinger distance to
    the corpus word distribution (and document sparsity when a checkpoint has the counts).
    For a run also iterations, wall time, mean tokens/s and bytes per training token."""
    from ..evaluate.diagnostics import model_diagnostics, run_doc_topic_counts, run_figures
    from ..snapshot import load_model
    from ..topics import top_words

    snapshot = load_model(model)
    is_run = Path(model).is_dir()
    counts = run_doc_topic_counts(model, snapshot.K) if is_run else None
    info = model_diagnostics(snapshot, counts)
    info["model"] = snapshot.meta.get("model") if isinstance(snapshot.meta, dict) else None
    if is_run:
        info["run"] = run_figures(model)
    if snapshot.burst_concentration is not None:
        info["burst_discount"] = snapshot.burst_discount
    if as_json:
        emit_json(info)
        return
    summary = [
        ("model", info["model"] or "?"),
        ("topics (K)", info["K"]),
        ("vocabulary (W)", info["W"]),
        ("effective number of topics", info["effective_topics"]),
    ]
    if is_run:
        r = info["run"]
        summary += [
            ("iterations", _opt(r["iterations"])),
            ("wall time (s)", _opt(r["seconds"])),
            ("mean tokens/s", _opt(r["tokens_per_s"])),
            ("bytes per training token", _opt(r["bytes_per_token"])),
        ]
    print_table(f"info: {model}", ["", ("", "right")], summary, show_header=False)
    words = {k: " ".join(w) for k, _, w, _ in top_words(snapshot, top=top)} if top else {}
    order = sorted(info["topics"], key=lambda t: -t["proportion"])
    cols = [("topic", "right"), ("proportion", "right"), ("eff. words", "right"), ("hellinger", "right")]
    has_sparsity = order and order[0]["doc_sparsity"] is not None
    if has_sparsity:
        cols.append(("doc sparsity", "right"))
    if top:
        cols.append("top words")
    rows = []
    for t in order:
        row = [t["index"], f"{t['proportion']:.4f}", round(t["effective_words"], 1), f"{t['hellinger_corpus']:.3f}"]
        if has_sparsity:
            row.append(f"{t['doc_sparsity']:.3f}")
        if top:
            row.append(words[t["index"]])
        rows.append(row)
    print_table("topics by proportion", cols, rows)


def _opt(v):
    return "-" if v is None else v
