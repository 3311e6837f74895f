"""topictool infer: the topic mixtures of new documents under a trained model."""

import click

from .common import (
    COUNT,
    POSITIVE,
    SEED,
    THREADS,
    emit_json,
    force_option,
    json_option,
    print_table,
    source_format_option,
    vocab_option,
)


def doc_topic_options(f):
    """--format, --threshold and --max-topics of a doc-topic table (infer, export doc-topics)."""
    f = click.option(
        "--max-topics", type=POSITIVE, help="At most this many topics a document, largest first (Mallet's layout)."
    )(f)
    f = click.option(
        "--threshold",
        default=0.0,
        show_default=True,
        type=click.FloatRange(0, 1, max_open=True),
        help="Only topics with at least this proportion, largest first (Mallet's layout).",
    )(f)
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["tsv", "csv", "npz"]),
        help="Layout of OUT. [default: from its suffix: .npz, .csv, else tsv, Mallet's --output-doc-topics]",
    )(f)


@click.command("infer", short_help="Topic mixtures of new documents under a model.")
@click.argument("model")
@click.argument("source")
@click.option("-o", "--output", "out", required=True, help="File to write (.tsv, .csv or .npz).")
@doc_topic_options
@click.option(
    "--part",
    type=click.Choice(["train", "test"]),
    default="train",
    show_default=True,
    help="Which split of a prepared corpus SOURCE to read.",
)
@source_format_option
@vocab_option("Vocabulary of an LdaC/UCI SOURCE (default: found beside it).")
@click.option("--burn-in", default=10, show_default=True, type=COUNT, help="Gibbs fold-in sweeps discarded.")
@click.option("--samples", default=40, show_default=True, type=POSITIVE, help="Gibbs fold-in sweeps averaged.")
@click.option("--seed", default=1, show_default=True, type=SEED, help="Seed of the fold-in.")
@click.option(
    "--threads", default=1, show_default=True, type=THREADS, help="Threads (the result does not depend on it)."
)
@force_option
@json_option
def command(model, source, out, fmt, threshold, max_topics, part, source_format, vocab, **kw):
    """Fold the documents of SOURCE (anything prepare reads: a text directory or zip, a file
    of one document per line, LdaC, UCI, or a prepared corpus) into MODEL (a run or a snapshot)
    by the model's own method, and write each document's topic proportions to OUT. Text is
    tokenised as the model's training corpus was; words the model lacks are counted and
    dropped."""
    from .. import doc_topics, store
    from ..infer import infer, read_documents
    from ..snapshot import load_model

    force, as_json = kw.pop("force"), kw.pop("as_json")
    doc_topics.check_options(out, fmt, threshold, max_topics)
    store.check_output_file(out, force, inputs=[model, source, vocab])
    snapshot = load_model(model)
    corpus, names, facts = read_documents(source, snapshot, part, vocab, source_format)
    theta, counts, summary = infer(snapshot, corpus, **kw)
    csr = None
    if counts is not None:
        from ..snapshot import doc_topic_csr

        csr = doc_topic_csr(dense=counts)
    meta = {"model": str(model), "source": str(source), **summary}
    doc_topics.write(out, theta, names, fmt, threshold, max_topics, csr, meta)
    result = {"output": str(out), **summary, "oov_tokens": facts.get("oov_tokens_dropped", 0)}
    for key in ("skipped_files", "notes"):
        if facts.get(key):
            result[key] = facts[key]
    if as_json:
        emit_json(result)
        return
    rows = [
        (k.replace("_", " "), v) for k, v in result.items() if v is not None and k not in ("notes", "skipped_files")
    ]
    print_table(f"infer -> {out}", ["", ("", "right")], rows, show_header=False)
    for note in result.get("notes", []):
        click.echo(f"topictool infer: note: {note}", err=True)
