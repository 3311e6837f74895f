"""topictool export: what other tools read (doc-topic tables, Mallet's state file)."""

import click

from .common import emit_json, force_option, json_option, print_table
from .infer import doc_topic_options


@click.group("export", short_help="Write doc-topic tables, Mallet state, LDAvis or dfr-browser files for other tools.")
def command():
    """Export a model's training documents' topic mixtures (`export doc-topics`), an lda-gibbs
    run's topic assignments in Mallet's state format (`export state`), pyLDAvis's prepared data
    (`export ldavis`) or dfr-browser's data files (`export dfr-browser`)."""


def _report(result, title, as_json):
    if as_json:
        emit_json(result)
    else:
        print_table(
            title, ["", ("", "right")], [(k.replace("_", " "), v) for k, v in result.items()], show_header=False
        )


@command.command("doc-topics")
@click.argument("model")
@click.option("-o", "--output", "out", required=True, help="File to write (.tsv, .csv or .npz).")
@doc_topic_options
@force_option
@json_option
def doc_topics_cmd(model, out, fmt, threshold, max_topics, force, as_json):
    """The training documents' topic proportions of MODEL (a run or a snapshot of a Gibbs model;
    for a variational model, its run), (n_dk + alpha_k) / (n_d + sum alpha) as Mallet writes
    them, named as prepare recorded the documents."""
    from .. import doc_topics, store
    from ..export import training_doc_topics

    doc_topics.check_options(out, fmt, threshold, max_topics)
    store.check_output_file(out, force, inputs=[model])
    theta, csr, names = training_doc_topics(model)
    doc_topics.write(out, theta, names, fmt, threshold, max_topics, csr, {"model": str(model)})
    _report({"output": str(out), "documents": len(theta), "K": int(theta.shape[1])}, f"doc-topics -> {out}", as_json)


@command.command("state")
@click.argument("run")
@click.option("-o", "--output", "out", required=True, help="Gzipped state file to write (e.g. state.gz).")
@force_option
@json_option
def state_cmd(run, out, force, as_json):
    """An lda-gibbs RUN's topic assignments at its latest checkpoint in Mallet's gzipped state
    format (`#doc source pos typeindex type topic`, with #alpha and #beta lines), as Mallet's
    --output-state writes it, for dfr-browser and Mallet's own readers."""
    from .. import store
    from ..export import write_mallet_state

    store.check_output_file(out, force, inputs=[run])
    _report(write_mallet_state(run, out), f"state -> {out}", as_json)


corpus_option = click.option(
    "--corpus",
    default=None,
    help="The training corpus (default: the one the model recorded), for the token count and document names.",
)


@command.command("ldavis")
@click.argument("model")
@click.option("-o", "--output", "out", required=True, help="JSON file to write (e.g. lda.json).")
@corpus_option
@click.option(
    "--top-terms", "R", default=30, show_default=True, type=click.IntRange(1, 200), help="Terms per topic (R)."
)
@force_option
@json_option
def ldavis_cmd(model, out, corpus, R, force, as_json):
    """pyLDAvis's prepared data of MODEL (a run or a snapshot) as JSON: mdsDat, tinfo,
    token.table, R, lambda.step, plot.opts and topic.order, which LDAvis (the R package's or
    pyLDAvis's page) loads as it is. Topics are numbered 1..K by decreasing prevalence, as
    pyLDAvis does; topic.order gives each one's topictool index + 1."""
    from .. import store
    from ..export import write_ldavis

    store.check_output_file(out, force, inputs=[model, corpus])
    _report(write_ldavis(model, out, corpus, R), f"ldavis -> {out}", as_json)


@command.command("dfr-browser")
@click.argument("model")
@click.option("-o", "--output", "out", required=True, help="Directory to write (dfr-browser's data/ folder).")
@corpus_option
@click.option(
    "--top", default=50, show_default=True, type=click.IntRange(1, 2**31 - 1), help="Words per topic in tw.json."
)
@force_option
@json_option
def dfr_browser_cmd(model, out, corpus, top, force, as_json):
    """dfr-browser's data files for MODEL (a run, or a Gibbs model's snapshot): info.json (a stub
    to edit), tw.json (top words and weights), dt.json.zip (the documents' topic counts,
    compressed sparse columns) and meta.csv.zip (the documents as prepare named them). Copy
    them into dfr-browser's data/ folder."""
    from ..export import write_dfr_browser

    _report(write_dfr_browser(model, out, force, corpus, top), f"dfr-browser -> {out}", as_json)
