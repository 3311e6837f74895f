"""topictool report: one self-contained HTML file showing a model or a run."""

import click

from .common import COUNT, emit_json, force_option, json_option, print_table

MEASURES = ("pmi", "npmi", "umass", "cv")


@click.command("report", short_help="A self-contained HTML report of a model or run (LDAvis-style).")
@click.argument("model")
@click.option("-o", "--output", "out", required=True, help="HTML file to write (e.g. report.html).")
@click.option(
    "--corpus",
    default=None,
    help="The training corpus (default: the one the model recorded): the token count for the bars and the "
    "documents' names.",
)
@click.option(
    "--reference",
    default=None,
    help="Coherence reference for the topic table: a REF.npz (topictool cooc) or a prepared corpus directory.",
)
@click.option(
    "--measure",
    type=click.Choice(MEASURES),
    default="npmi",
    show_default=True,
    help="Coherence measure of the topic table (with --reference).",
)
@click.option(
    "--window",
    default=None,
    help="For a prepared corpus as --reference: 'doc' (documents are the units) or a sliding window of this many "
    "tokens (default: the measure's, as pmi's).",
)
@click.option(
    "--top-terms",
    default=30,
    show_default=True,
    type=click.IntRange(1, 200),
    help="Terms shown for a topic (LDAvis's R).",
)
@click.option("--top-docs", default=10, show_default=True, type=COUNT, help="Documents shown for a topic.")
@force_option
@json_option
def command(model, out, corpus, reference, measure, window, top_terms, top_docs, force, as_json):
    """Write one HTML file showing MODEL (a snapshot .npz) or RUN (a run directory): the
    intertopic distance map (Jensen-Shannon divergence, classical MDS; click a topic), the
    selected topic's terms by relevance with a lambda slider (Sievert & Shirley 2014), a topic
    table (prevalence, effective words, Hellinger distance to the corpus, coherence with
    --reference, top words), a run's training curves and the topic's top documents. Every
    script, style and datum is inline: it opens anywhere, with no network. The view is kept in
    the address: report.html#topic=3&lambda=0.6."""
    from .. import store
    from ..report.page import build_report

    store.check_output_file(out, force, inputs=[model, corpus, reference])
    page = build_report(model, corpus, reference, measure, top_terms, top_docs, window=window)
    store.write_text(out, page)
    result = {"output": str(out), "bytes": len(page.encode("utf-8"))}
    if as_json:
        emit_json(result)
    else:
        print_table(f"report -> {out}", ["", ("", "right")], list(result.items()), show_header=False)
