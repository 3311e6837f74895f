"""topictool topics: the top words of each topic."""

from pathlib import Path

import click

from ..errors import InputError
from .common import force_option, json_option, rank_option, top_option


@click.command("topics", short_help="Top words of each topic.")
@click.argument("model")
@top_option(help="Words per topic.")
@rank_option("term-score")
# (declared as pmi's --convention is: a choice whose default depends on the other options)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "txt"]),
    default=None,
    help="table (default on stdout), json, csv, or txt: one topic per line, words separated by "
    "spaces (pmi --topics reads it). With -o the default comes from the file's suffix "
    "(.json, .csv, else txt).",
)
@click.option("-o", "--output", "out", help="Write to this file (atomically) instead of stdout.")
@force_option
@json_option
def command(model, top, rank, fmt, out, force, as_json):
    """Print (or write) the top words of each topic of MODEL (a run directory or a snapshot .npz)."""
    from ..snapshot import load_model
    from ..topics import print_topics_table, render, top_words, write_topics

    if as_json:
        fmt = "json"
    if fmt is None:
        fmt = {".json": "json", ".csv": "csv"}.get(Path(out).suffix.lower(), "txt") if out else "table"
    if fmt == "table" and out:
        raise InputError("--format table prints to the terminal; use json, csv or txt with -o")
    if out:
        from .. import store

        store.check_output_file(out, force, inputs=[model])
    topics = top_words(load_model(model), top=top, rank=rank)
    if fmt == "table":
        print_topics_table(topics, rank)
        return
    if out:
        write_topics(topics, out, fmt, rank)
    else:
        click.echo(render(topics, fmt, rank), nl=False)
