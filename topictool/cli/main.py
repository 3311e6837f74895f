"""The `topictool` console script: a click group of thin commands.

Errors: a TopicToolError becomes one line on stderr and its exit code
(2 for bad input); any other exception is exit 1 with one line, and
``--debug`` shows the traceback instead.
"""

import importlib
import signal
import sys
import threading

import click

from .. import __version__
from ..errors import TopicToolError

# command name -> module in topictool.cli defining `command`; imported lazily
# so that `topictool --help` stays fast and compiles nothing.
COMMANDS = {
    "prepare": "prepare",
    "train": "train",
    "snapshot": "snapshot",
    "evaluate": "evaluate",
    "infer": "infer",
    "export": "export",
    "cooc": "cooc",
    "pmi": "pmi",
    "topics": "topics",
    "info": "info",
    "report": "report",
    "synth": "synth",
}


class LazyGroup(click.Group):
    def main(self, args=None, prog_name=None, **extra):
        """Like click's, but a usage error is one line on stderr (exit 2)."""
        try:
            return super().main(args, prog_name=prog_name or "topictool", standalone_mode=False, **extra)
        except click.UsageError as e:
            cmd = e.ctx.command_path if e.ctx else "topictool"
            click.echo(f"{cmd}: error: {e.format_message()} (see '{cmd} --help')", err=True)
            sys.exit(2)
        except click.ClickException as e:
            click.echo(f"topictool: error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            click.echo("topictool: aborted", err=True)
            sys.exit(1)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)

    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module = importlib.import_module(f"topictool.cli.{COMMANDS[name]}")
        return module.command

    def invoke(self, ctx):
        # One signal rule: SIGTERM is Ctrl-C. Commands with work to resume (train, cooc) catch
        # both to save it and exit 0 (signals.StopFlag); any other command stops, removes
        # what it had half-written, and exits 130.
        main_thread = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler) if main_thread else None
        try:
            return self._invoke(ctx)
        finally:
            if main_thread:
                signal.signal(signal.SIGTERM, previous)

    def _invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except TopicToolError as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"topictool: error: {e}", err=True)
            sys.exit(e.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("topictool: interrupted (nothing half-written is left)", err=True)
            sys.exit(130)
        except Exception as e:  # an unexpected failure: still one line unless --debug
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(
                f"topictool: internal error: {e.__class__.__name__}: {e} (rerun with --debug for the traceback)",
                err=True,
            )
            sys.exit(1)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="topictool")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def main(ctx, debug):
    """topictool: fit, evaluate and compare topic models from the shell."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def unavailable(name, issue_title):
    """A registered command whose implementation has not landed yet."""

    @click.command(
        name,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        help=f"{issue_title} (not available yet).",
        add_help_option=False,
    )
    @click.pass_context
    def cmd(ctx):
        click.echo(f"topictool {name}: not available yet", err=True)
        sys.exit(2)

    return cmd
