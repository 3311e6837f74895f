"""What every command shares: output switches, rendering, progress."""

import sys

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


def is_terminal():
    return sys.stderr.isatty()
