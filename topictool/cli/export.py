"""topictool export: what other tools read (doc-topic tables, Mallet's state file)."""

import click

from .common import emit_json, force_option, json_option, print_table
from .infer import doc_topic_options


@click.group("export", short_help="Write doc-topic tables or a Mallet state file for other tools.")
def command():
    """Export a model's training documents' topic mixtures (`export doc-topics`) or an lda-gibbs
    run's topic assignments in Mallet's state format (`export state`)."""


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
