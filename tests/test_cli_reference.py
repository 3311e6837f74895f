"""docs/cli.md ends with every option of every command, generated from the click definitions
(scripts/cli_reference.py): this fails when the page is stale."""

import importlib.util

from .conftest import ROOT

spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
reference = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reference)


def test_docs_cli_md_is_generated_from_the_commands():
    text = reference.DOC.read_text(encoding="utf-8")
    assert reference.updated(text) == text, "docs/cli.md is stale: run python scripts/cli_reference.py"


def test_every_option_of_every_command_is_listed():
    import click

    from topictool.cli.main import main

    text = reference.DOC.read_text(encoding="utf-8").split(reference.BEGIN)[1]
    ctx = reference.root_context()
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        for p in cmd.get_params(click.Context(cmd, info_name=name, parent=ctx)):
            for opt in p.opts if isinstance(p, click.Option) else ():
                assert f"`{opt}`" in text, (name, opt)
