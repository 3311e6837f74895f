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


def test_sigterm_stops_a_command_with_nothing_to_resume(tmp_path):
    """The signal rule (docs/cli.md): SIGTERM is Ctrl-C; a command without work to resume
    stops, leaves nothing half-written and exits 130 (train and cooc save and exit 0: tested
    with them)."""
    import errno
    import os
    import signal
    import time

    fifo = tmp_path / "docs.txt"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    args = [sys.executable, "-m", "topictool", "prepare", str(fifo), "-o", str(out), "--source-format", "lines"]
    p = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while True:  # opening the FIFO's write end succeeds once prepare reads it
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            assert e.errno == errno.ENXIO and p.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    os.write(fd, b"a first document\n")
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=60)
    os.close(fd)
    err = p.stderr.read()
    assert rc == 130 and err.count("\n") == 1 and "interrupted" in err, (rc, err)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["docs.txt"]
