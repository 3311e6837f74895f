"""topictool prepare: text, LdaC or UCI in; a prepared corpus directory out."""

import time

import click

from .common import (
    POSITIVE,
    SEED,
    THREADS,
    emit_json,
    export_format_option,
    force_option,
    json_option,
    print_table,
    source_format_option,
    text_options,
    vocab_option,
)


@click.command("prepare", short_help="Prepare a corpus from text, LdaC or UCI sources.")
@click.argument("sources", nargs=-1, required=True)
@click.option("-o", "--output", "out", required=True, help="Prepared corpus directory to create.")
@export_format_option
@click.option(
    "--stopwords",
    default=None,
    help="english, none, or a file of words. [default: english for text, none for LdaC/UCI]",
)
@click.option(
    "--min-count", default=5, show_default=True, type=POSITIVE, help="Drop words seen fewer times in the whole corpus."
)
@click.option("--min-df", default=1, show_default=True, type=POSITIVE, help="Drop words in fewer documents.")
@click.option(
    "--max-df",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Drop words in more documents (a fraction if <= 1, else a count).",
)
@click.option(
    "--test-fraction",
    default=0.2,
    show_default=True,
    type=click.FloatRange(0, 1, max_open=True),
    help="Fraction of documents held out as test.npz.",
)
@click.option("--seed", default=1, show_default=True, type=SEED, help="Seed of the train/test split.")
# (a count option declared as train's --checkpoint-every is: same shape, another meaning)
@click.option(
    "--shards",
    default=1,
    show_default=True,
    type=POSITIVE,
    help="Write the training split as N shard files of contiguous documents (for `train --engine mpi`: each "
    "rank reads only its own shards).",
)
@vocab_option(
    "The fixed vocabulary of text sources (other tokens dropped; no pruning or stop words), or the "
    "vocabulary of an LdaC/UCI source (default: found beside it)."
)
@source_format_option
@text_options
@click.option(
    "--threads",
    default=1,
    show_default=True,
    type=THREADS,
    help="Worker processes tokenising text sources (the output does not depend on it; LdaC/UCI sources take 1).",
)
@force_option
@json_option
def command(sources, out, fmt, force, as_json, text, shards, threads, **kw):
    """Read SOURCE... (directories or zips of text files, a text file with one document per
    line, an LdaC file, or a UCI docword file; .gz/.bz2 read transparently) and write a
    prepared corpus directory: corpus.json, vocab.txt, train.npz and test.npz (with --shards N,
    train.shard-0000.npz ... in place of train.npz)."""
    from ..corpus.prepare import PrepareOptions, prepare

    opts = PrepareOptions(format=fmt, **text, **kw)
    t0 = time.perf_counter()
    manifest = prepare(list(sources), out, opts, force=force, shards=shards, threads=threads)
    seconds = time.perf_counter() - t0
    manifest["seconds"] = round(seconds, 3)
    manifest["threads"] = threads
    # the speed of the whole command: bytes read from the sources (MB = 10**6 bytes) per second
    manifest["input_mb"] = round(manifest.pop("input_bytes") / 1e6, 3)
    manifest["mb_per_s"] = round(manifest["input_mb"] / max(seconds, 1e-9), 2)
    manifest["output"] = str(out)
    if as_json:
        emit_json(manifest)
    else:
        show_manifest(manifest, f"prepared {out}")


def show_manifest(m, title):
    rows = [("documents", m["D"]), ("vocabulary", m["W"]), ("tokens", m["N"])]
    for part in ("train", "test"):
        if m.get(part):
            rows.append((f"{part} documents / tokens", f"{m[part]['D']:,} / {m[part]['N']:,}"))
    if m.get("train", {}).get("shards"):
        rows.append(("training shards", len(m["train"]["shards"])))
    per_folder = m.get("documents_per_folder") or {}
    if len(per_folder) > 1:
        rows.append(("documents per folder", ", ".join(f"{k} {v:,}" for k, v in per_folder.items())))
    skipped = m.get("skipped_files") or {}
    if skipped.get("count"):
        more = skipped["count"] - len(skipped["names"])
        names = ", ".join(skipped["names"]) + (f" and {more:,} more" if more > 0 else "")
        rows.append((f"files skipped, not documents ({skipped['count']:,})", names))
    if m.get("empty_documents_dropped"):
        rows.append(("empty documents dropped", m["empty_documents_dropped"]))
    if m.get("oov_tokens_dropped"):
        rows.append(("tokens outside --vocab dropped", m["oov_tokens_dropped"]))
    if m.get("exports"):
        rows.append(("exports", " ".join(m["exports"])))
    if "seconds" in m:
        rows.append(("seconds", m["seconds"]))
    if "mb_per_s" in m:
        threads = f"{m['threads']} thread" + ("s" if m["threads"] != 1 else "")
        rows.append(("read", f"{m['input_mb']:,.1f} MB at {m['mb_per_s']:,.1f} MB/s ({threads})"))
    print_table(title, ["", ("", "right")], rows, show_header=False)
