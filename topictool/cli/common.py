"""What every command shares: output switches, rendering, progress."""

import click

from ..errors import InputError

# the ranges of the integer options every command shares (larger values only overflow
# the int32/int64 arrays they size, far from where anyone needs them)
COUNT = click.IntRange(0, 2**31 - 1)
POSITIVE = click.IntRange(1, 2**31 - 1)
SEED = click.IntRange(0, 2**64 - 1)
THREADS = click.IntRange(1, 1024)


def json_option(f):
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")(f)


def force_option(f):
    return click.option("--force", is_flag=True, help="Replace an existing output.")(f)


def options(*decorators):
    """Several click options as one decorator (applied in the order listed)."""

    def apply(f):
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


#: --source-format of the commands that read what prepare reads (prepare, infer)
source_format_option = click.option(
    "--source-format",
    type=click.Choice(["auto", "files", "lines", "ldac", "uci"]),
    default="auto",
    show_default=True,
    help="How to read SOURCE: files (a directory or zip, a document each), lines (a document per line of a file, "
    "or of every file of a directory or zip), ldac or uci. auto: directories and zips are files, LdaC/UCI are "
    "recognised by name or content, else lines.",
)

#: --format of the commands that write a corpus directory (prepare, synth)
export_format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["none", "ldac", "uci", "both"]),
    default="none",
    show_default=True,
    help="Also export the corpus as LdaC and/or UCI files.",
)

_text_options = options(
    click.option("--include", default="*", show_default=True, help="File-name pattern for directories and zips."),
    click.option("--encoding", default="utf-8", show_default=True, help="Encoding of text sources."),
    click.option(
        "--errors",
        type=click.Choice(["strict", "replace", "ignore"]),
        default="strict",
        show_default=True,
        help="Undecodable bytes in text sources: report them (strict) or replace/ignore them.",
    ),
    click.option(
        "--token-pattern",
        default=None,
        help="Regular expression of a token, applied after lower-casing. [default: runs of letters, "
        "with inner apostrophes and hyphens]",
    ),
)


def text_options(f):
    """--include, --encoding, --errors and --token-pattern: how text is read and tokenized, the
    same for every command that reads text. The command receives them as one dict, ``text``."""
    import functools

    from ..corpus.tokenizer import DEFAULT_PATTERN

    @_text_options
    @functools.wraps(f)
    def wrapper(include, encoding, errors, token_pattern, **kw):
        pattern = DEFAULT_PATTERN if token_pattern is None else token_pattern
        text = dict(include=include, encoding=encoding, errors=errors, token_pattern=pattern)
        return f(text=text, **kw)

    return wrapper


def engine_option(help):
    """--engine local|mpi (train, evaluate; docs/cluster.md)."""
    return click.option("--engine", type=click.Choice(["local", "mpi"]), default="local", show_default=True, help=help)


def vocab_option(purpose, required=False):
    """--vocab: a file of one word per line (hca .words: the last column) or a prepared corpus
    directory, on every command that takes one."""
    return click.option(
        "--vocab",
        required=required,
        help=f"{purpose} A file of one word per line (hca .words: the last column) or a prepared corpus directory.",
    )


def top_option(minimum=1, help="Top words per topic."):
    return click.option("--top", default=10, show_default=True, type=click.IntRange(minimum, 2**31 - 1), help=help)


def rank_option(
    default,
    help="How a topic's top words are chosen: term-score (Blei & Lafferty 2009), "
    "prob (phi), or lift (phi / corpus word probability).",
):
    return click.option(
        "--rank", type=click.Choice(["term-score", "prob", "lift"]), default=default, show_default=True, help=help
    )


def emit_json(obj):
    """Strict JSON on stdout: NaN and infinities are null (their keys listed in "non_finite")."""
    from ..store import dumps

    click.echo(dumps(obj, indent=2))


def console(stderr=False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def print_table(title, columns, rows, show_header=True):
    """A rich table on stdout (plain text when stdout is not a terminal)."""
    from rich.table import Table

    table = Table(title=title, show_edge=False, show_header=show_header)
    for c in columns:
        justify = "right" if isinstance(c, tuple) and c[1] == "right" else "left"
        table.add_column(c[0] if isinstance(c, tuple) else c, justify=justify)
    for r in rows:
        table.add_row(*[_fmt(v) for v in r])
    console().print(table)


def _fmt(v):
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def parse_key_values(pairs, option="--set"):
    """['a=1', 'b=x'] -> {'a': '1', 'b': 'x'}; InputError on a malformed pair."""
    out = {}
    for p in pairs:
        if "=" not in p:
            raise InputError(f"{option} {p!r}: expected key=value")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out
