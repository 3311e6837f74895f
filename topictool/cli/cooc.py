"""topictool cooc: word and pair co-occurrence counts of a reference corpus (for `pmi`)."""

import click

from .common import (
    THREADS,
    emit_json,
    force_option,
    json_option,
    print_table,
    text_options,
    vocab_option,
)


@click.command("cooc", short_help="Count word co-occurrences in a reference corpus (for pmi).")
@click.argument("references", metavar="REFERENCE...", nargs=-1, required=True)
@vocab_option("Words to count; pairs are counted among these words only.", required=True)
@click.option(
    "-o", "--output", "out", required=True, type=click.Path(dir_okay=False), help="Reference file to write (REF.npz)."
)
@click.option(
    "--window",
    default="10",
    show_default=True,
    help="Sliding window of this many tokens (Newman et al. 2010), or 'doc' for whole documents.",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=THREADS,
    help="Counting processes (the main process reads and decompresses).",
)
@click.option(
    "--source-format",
    type=click.Choice(["auto", "wiki", "lines", "files"]),
    default="auto",
    show_default=True,
    help="wiki: a MediaWiki XML dump; lines: one document per line (of a file, or of every file of a directory or "
    "zip); files: a directory or zip of documents. auto: dumps are recognised by their content.",
)
@text_options
@click.option(
    "--checkpoint-every",
    "checkpoint_seconds",
    default=300.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds between saves of the partial state.",
)
@click.option(
    "--memory",
    "memory_mb",
    default=2048,
    show_default=True,
    type=click.IntRange(64, 2**40),
    help="MB for pair counts in memory, all workers together; more are spilled to disk.",
)
@click.option("--restart", is_flag=True, help="Discard the partial state of an earlier run and start over.")
@force_option
@json_option
def command(references, vocab, out, force, as_json, text, **kw):
    """Count, for the words of VOCAB, in how many units of the REFERENCE corpora each word
    and each pair of words occurs; a unit is a sliding window of --window tokens (default
    10; tokens outside VOCAB keep their positions) or, with --window doc, a document.

    REFERENCE: MediaWiki XML dumps (*-pages-articles*.xml.bz2; articles only, markup
    stripped, redirects skipped), text files with one document per line, directories or
    zips of documents; .gz/.bz2 read transparently. Text is tokenized as by prepare.

    The partial counts are saved every --checkpoint-every seconds in OUTPUT.state/ (and on
    SIGINT/SIGTERM); running the same command again continues where it stopped. The
    output (REF.npz) is what `topictool pmi --reference` reads."""
    from ..cooc import CoocOptions, Interrupted, build_reference

    opts = CoocOptions(**text, **kw, force=force)
    try:
        summary = build_reference(list(references), vocab, out, opts)
    except Interrupted as e:
        # as train does: a signal (a cluster's preemption) saves the state and is not a failure
        click.echo(f"topictool cooc: {e}", err=True)
        if as_json:
            emit_json({"output": None, "stopped_by_signal": True, "state": str(e.state_dir)})
        return
    bad = summary.get("uncountable_words") or []
    if bad:
        click.echo(
            f"topictool cooc: warning: {len(bad)} vocabulary word(s) are never tokens of the tokenizer "
            f"and count 0 (e.g. {', '.join(repr(w) for w in bad[:3])})",
            err=True,
        )
    if as_json:
        emit_json(summary)
        return
    unit = "documents" if summary["window"] == "doc" else f"windows of {summary['window']} tokens"
    rows = [
        ("documents", summary["documents"]),
        (f"units ({unit})", summary["units"]),
        ("tokens", summary["tokens"]),
        ("vocabulary", summary["W"]),
        ("word pairs seen together", summary["pairs"]),
        ("MB read (uncompressed)", round(summary["bytes_read"] / 1e6, 1)),
        ("seconds", summary["seconds"]),
    ]
    if summary.get("resumed"):
        rows.append(("resumed from a partial state", "yes"))
    print_table(f"co-occurrence counts -> {out}", ["", ("", "right")], rows, show_header=False)
