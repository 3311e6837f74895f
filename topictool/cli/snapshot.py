"""topictool snapshot: a model file from a run, or imported from another tool."""

import click

from .common import COUNT, emit_json, force_option, json_option, vocab_option


class _RunOrSubcommand(click.Group):
    """`snapshot RUN -o M.npz` and `snapshot import ...` share one command name."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group("snapshot", cls=_RunOrSubcommand, short_help="Write a model snapshot from a run, or import one.")
def command():
    """Write the snapshot of a run (`snapshot RUN [--iteration N] -o MODEL.npz`) or import
    another tool's model (`snapshot import --from hca|mallet|text ... -o MODEL.npz`)."""


@command.command("run", hidden=True)
@click.argument("run", type=click.Path(exists=False))
@click.option("--iteration", type=COUNT, help="Checkpoint iteration (default: the latest).")
@click.option("-o", "--output", "out", required=True, help="Snapshot .npz to write.")
@force_option
@json_option
def run_cmd(run, iteration, out, force, as_json):
    """Snapshot of RUN at its latest or a given checkpoint."""
    from .. import store
    from ..training import snapshot_of_run

    store.check_output_file(out, force, inputs=[run])
    snap = snapshot_of_run(run, iteration)
    snap.save(out)
    result = {
        "output": out,
        "K": snap.K,
        "W": snap.W,
        "iteration": snap.meta.get("iteration"),
        "model": snap.meta.get("model"),
    }
    if as_json:
        emit_json(result)
    else:
        click.echo(
            f"wrote {out}: {snap.meta.get('model')} at iteration {snap.meta.get('iteration')}, K={snap.K}, W={snap.W}"
        )


@command.command("import")
@click.option(
    "--from",
    "source",
    type=click.Choice(["hca", "mallet", "text"]),
    required=True,
    help="The tool that wrote FILES (docs/commands/snapshot.md lists the files of each).",
)
@click.argument("files", nargs=-1, required=True)
@vocab_option("Vocabulary to align the model to.")
@click.option("-o", "--output", "out", required=True, help="Snapshot .npz to write.")
@force_option
@json_option
def import_cmd(source, files, vocab, out, force, as_json):
    """Import a model so that it is judged by the same code as ours.

    \b
    hca:    STEM.phi [DICTIONARY]  (.par/.alpha beside it are read; DICTIONARY is
            hca's .tokens or .words file)
    mallet: WEIGHTS [KEYS]  (--topic-word-weights-file, --output-topic-keys)
    text:   PREFIX  (PREFIX.phi.txt, PREFIX.vocab.txt, ...; docs/formats-text-model.md)

    --vocab aligns the model to a vocabulary (a file or a prepared corpus); words
    missing on either side are reported."""
    from .. import importers, store
    from ..errors import InputError

    notes = []
    files = list(files)
    inputs = [*files, vocab]
    if source == "hca" and files:
        inputs += [files[0] + ".phi", files[0][:-4] + ".par" if files[0].endswith(".phi") else files[0] + ".par"]
    if source == "text" and files:
        inputs += list(importers.text_paths(files[0]).values())
    store.check_output_file(out, force, inputs=inputs)
    if source == "hca":
        if len(files) > 2:
            raise InputError("--from hca takes STEM.phi (or STEM) and optionally the dictionary (.tokens/.words)")
        phi = files[0] if files[0].endswith(".phi") else files[0] + ".phi"
        snap = importers.import_hca(
            phi, tokens_path=files[1] if len(files) > 1 else None, vocab_path=vocab, report=notes
        )
    elif source == "mallet":
        if len(files) > 2:
            raise InputError("--from mallet takes the topic-word weights file and optionally the topic keys file")
        snap = importers.import_mallet(
            files[0], keys_path=files[1] if len(files) > 1 else None, vocab_path=vocab, report=notes
        )
    else:
        if len(files) != 1:
            raise InputError("--from text takes one PREFIX (PREFIX.phi.txt, PREFIX.vocab.txt, ...)")
        snap = importers.import_text(files[0], vocab_path=vocab, report=notes)
    snap.save(out)
    result = {"output": out, "K": snap.K, "W": snap.W, "notes": notes}
    if as_json:
        emit_json(result)
    else:
        for n in notes:
            click.echo(f"note: {n}", err=True)
        click.echo(f"wrote {out}: K={snap.K}, W={snap.W}")
