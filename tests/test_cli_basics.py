import subprocess
import sys

from .conftest import run

COMMANDS = ["prepare", "train", "snapshot", "evaluate", "cooc", "pmi", "topics", "info", "synth"]


def test_help_lists_every_command():
    r = run("--help")
    assert r.exit_code == 0
    for c in COMMANDS:
        assert f"\n  {c} " in r.stdout, c


def test_every_command_has_help():
    for c in COMMANDS:
        r = run(c, "--help")
        assert r.exit_code in (0, 2), c


def test_console_script_runs():
    p = subprocess.run([sys.executable, "-m", "topictool", "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and "topictool" in p.stdout


def test_shell_completion_as_the_readme_says():
    """README: eval "$(_TOPICTOOL_COMPLETE=bash_source topictool)"; commands and options complete."""
    import os
    import shutil

    exe = shutil.which("topictool", path=os.path.dirname(sys.executable)) or "topictool"
    for shell in ("bash", "zsh", "fish"):
        env = dict(os.environ, _TOPICTOOL_COMPLETE=f"{shell}_source")
        p = subprocess.run([exe], env=env, capture_output=True, text=True)
        assert p.returncode == 0 and "_TOPICTOOL_COMPLETE" in p.stdout, shell
    env = dict(os.environ, _TOPICTOOL_COMPLETE="bash_complete", COMP_WORDS="topictool train --ev", COMP_CWORD="2")
    p = subprocess.run([exe], env=env, capture_output=True, text=True)
    assert "--eval-every" in p.stdout and "--eval-seed" in p.stdout
