"""topictool pmi: topic coherence (PMI, NPMI, UMass, C_V) against a reference corpus."""

import click

from .common import emit_json, json_option, print_table, rank_option, top_option, vocab_option


@click.command("pmi", short_help="Topic coherence (PMI, NPMI, UMass, C_V) against a reference corpus.")
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
    help="REF.npz from `topictool cooc`, an hca-style PMI file ('id1 id2 pmi' per line, .gz ok), or a "
    "prepared corpus directory (`topictool prepare`; its co-occurrences among the topics' words are "
    "counted on the spot).",
)
@vocab_option("Vocabulary of the word ids in a .pmi file or a topics file (default for a MODEL: its own).")
@top_option(minimum=2)
@rank_option("prob", help="How a MODEL's top words are chosen (see `topictool topics`).")
@click.option(
    "--measure",
    type=click.Choice(["pmi", "npmi", "umass", "cv"]),
    default=None,
    help="pmi (default), npmi, umass (Mimno et al. 2011) or cv (Röder et al. 2015, gensim's c_v).",
)
@click.option(
    "--convention",
    type=click.Choice(["newman", "hca", "gensim", "mimno"]),
    default=None,
    help="pmi/npmi: newman (default; mean over the N(N-1)/2 pairs, unseen pairs 0), hca (sum over "
    "pairs / N^2) or gensim (eps 1e-12, as gensim's c_uci/c_npmi); umass: gensim (default; mean, eps) "
    "or mimno (sum, +1); cv: gensim.",
)
@click.option("--normalized", is_flag=True, help="NPMI instead of PMI (the same as --measure npmi).")
@click.option(
    "--window",
    default=None,
    help="For a prepared corpus reference: 'doc' (documents are the units) or a sliding window of this "
    "many tokens over its rebuilt token sequences. Default: umass doc, pmi/npmi 10, cv 110 (gensim's). "
    "A REF.npz has its own window.",
)
@click.option(
    "--part",
    type=click.Choice(["train", "test", "all"]),
    default="train",
    show_default=True,
    help="Which documents of a prepared corpus reference are counted.",
)
@click.option(
    "--window-counting",
    type=click.Choice(["boolean", "gensim"]),
    default="boolean",
    show_default=True,
    help="boolean: a word is in a window when one of its tokens is; gensim: as gensim 4 counts windows "
    "(a repeated word can be missed), to reproduce its figures. Prepared corpus references only.",
)
@json_option
def command(
    model,
    topics_file,
    reference,
    vocab,
    top,
    rank,
    measure,
    convention,
    normalized,
    window,
    part,
    window_counting,
    as_json,
):
    """Coherence of the topics of MODEL (a run directory or a snapshot .npz), or of a topics
    file, against a reference: for the top words of each topic, the PMI (or NPMI) of its
    word pairs, log p(wi,wj) / (p(wi) p(wj)) from co-occurrence in the reference (a pair
    never seen together scores 0), averaged per topic by --convention. Prints each topic's
    score and words, the mean over topics and (for a MODEL) the mean weighted by topic
    proportions; a topics file has no proportions, so its weighted mean is null.

    --measure umass or cv, or --convention gensim, score as gensim's CoherenceModel does
    (u_mass, c_v, c_uci, c_npmi); the reference may be a prepared corpus (the training
    corpus itself, or a held-out one). The output names the measure, convention, window,
    top-N and reference."""
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
        measure=measure,
        window=window,
        part=part,
        window_counting=window_counting,
    )
    if as_json:
        emit_json(result)
        return
    name = {"pmi": "PMI", "npmi": "NPMI", "umass": "UMass", "cv": "C_V"}[result["measure"]]
    has_weight = model is not None
    columns = [("topic", "right"), (name, "right")] + ([("weight", "right")] if has_weight else []) + ["words"]
    rows = []
    for t in result["topics"]:
        words = " ".join(w + ("*" if w in t["missing"] else "") for w in t["words"])
        rows.append((t["index"], f"{t['score']:.4f}") + ((f"{t['weight']:.4f}",) if has_weight else ()) + (words,))
    title = f"{name} ({result['convention']} convention) against {reference}"
    if result["reference_kind"] == "corpus":
        title += f" ({result['part']})"
    if result["window"] is not None:
        win = result["window"]
        title += "; documents" if win == "document" else f"; {result['window_counting']} windows of {win} tokens"
    title += f"; top {result['top']}"
    print_table(title, columns, rows)
    line = f"mean {name} {result['mean']:.4f} over {len(result['topics'])} topics"
    if result["weighted_mean"] is not None:
        line += f"; weighted by topic proportion {result['weighted_mean']:.4f}"
    click.echo(line)
    missing = sorted({w for t in result["topics"] for w in t["missing"]})
    if missing:
        click.echo(
            f"* {len(missing)} word(s) not in the reference (or in none of its units): their pairs score 0",
            err=True,
        )
