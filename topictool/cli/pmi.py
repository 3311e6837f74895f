"""topictool pmi: topic coherence (PMI / NPMI) against a reference corpus."""

import click

from .common import emit_json, json_option, print_table, rank_option, top_option, vocab_option


@click.command("pmi", short_help="Topic coherence (PMI, NPMI) against a reference corpus.")
@click.argument("model", required=False)
@click.option(
    "--topics",
    "topics_file",
    type=click.Path(dir_okay=False),
    help="Score the topics of this file instead of a MODEL: one topic per line, words or word ids "
    "(topics --format txt writes it; hca .toplst files are read too).",
)
@click.option(
    "--reference",
    required=True,
    help="REF.npz from `topictool cooc`, or an hca-style PMI file ('id1 id2 pmi' per line, .gz ok).",
)
@vocab_option("Vocabulary of the word ids in a .pmi file or a topics file (default for a MODEL: its own).")
@top_option(minimum=2)
@rank_option("prob", help="How a MODEL's top words are chosen (see `topictool topics`).")
@click.option(
    "--convention",
    type=click.Choice(["newman", "hca"]),
    default="newman",
    show_default=True,
    help="newman: mean over the N(N-1)/2 pairs; hca: sum over pairs / N^2 (hca's figures).",
)
@click.option("--normalized", is_flag=True, help="NPMI instead of PMI (needs a REF.npz).")
@json_option
def command(model, topics_file, reference, vocab, top, rank, convention, normalized, as_json):
    """Coherence of the topics of MODEL (a run directory or a snapshot .npz), or of a topics
    file, against a reference: for the top words of each topic, the PMI (or NPMI) of its
    word pairs, log p(wi,wj) / (p(wi) p(wj)) from co-occurrence in the reference (a pair
    never seen together scores 0), averaged per topic by --convention. Prints each topic's
    score and words, the mean over topics and (for a MODEL) the mean weighted by topic
    proportions; a topics file has no proportions, so its weighted mean is null."""
    from ..errors import InputError
    from ..evaluate.coherence import coherence

    if (model is None) == (topics_file is None):
        raise InputError("give either MODEL or --topics FILE")
    result = coherence(
        reference,
        topics=topics_file,
        model=model,
        vocab=vocab,
        top=top,
        rank=rank,
        convention=convention,
        normalized=normalized,
    )
    if as_json:
        emit_json(result)
        return
    measure = "NPMI" if normalized else "PMI"
    has_weight = model is not None
    columns = [("topic", "right"), (measure, "right")] + ([("weight", "right")] if has_weight else []) + ["words"]
    rows = []
    for t in result["topics"]:
        words = " ".join(w + ("*" if w in t["missing"] else "") for w in t["words"])
        rows.append((t["index"], f"{t['score']:.4f}") + ((f"{t['weight']:.4f}",) if has_weight else ()) + (words,))
    title = f"{measure} ({convention} convention) against {reference}"
    print_table(title, columns, rows)
    line = f"mean {measure} {result['mean']:.4f} over {len(result['topics'])} topics"
    if result["weighted_mean"] is not None:
        line += f"; weighted by topic proportion {result['weighted_mean']:.4f}"
    click.echo(line)
    missing = sorted({w for t in result["topics"] for w in t["missing"]})
    if missing:
        click.echo(f"* {len(missing)} word(s) not in the reference vocabulary (their pairs score 0)", err=True)
