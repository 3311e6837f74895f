"""topictool installs like a tool: the wheel built from the checkout, installed into a fresh
virtual environment outside it, gives a working `topictool` that needs no file of the
repository (the corpus, a model, its evaluation), and the build warns of nothing of ours."""

import os
import re
import site
import subprocess
import sys

from .conftest import ROOT

# lines a build prints about the project's own packaging metadata (licence fields, ...)
OWN_WARNINGS = re.compile(r"Warning\b|deprecat", re.I)


def test_wheel_installs_and_runs_outside_the_checkout(tmp_path):
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-v", "-w", str(wheels)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    lines = (build.stdout + build.stderr).splitlines()
    # setuptools' note that pip switched byte-compiling off concerns no project's metadata
    warnings = [x for x in lines if OWN_WARNINGS.search(x) and "byte-compiling is disabled" not in x]
    assert warnings == [], warnings
    (wheel,) = wheels.glob("topictool-*.whl")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    subprocess.run(
        [py, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True, timeout=300
    )
    # the run-time dependencies (numpy, numba, ...) from this interpreter, without reinstalling
    # them; directories named by a .pth file are not site directories, so the checkout's own
    # editable install (a .pth in the same site-packages) stays inactive
    purelib = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True
    ).stdout.strip()
    with open(os.path.join(purelib, "dependencies.pth"), "w") as f:
        f.write("\n".join(site.getsitepackages()) + "\n")

    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    def tt(*args):
        r = subprocess.run(["topictool", *args], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, (args, r.stderr[-2000:])
        return r.stdout

    where = subprocess.run(
        [py, "-c", "import topictool; print(topictool.__file__)"], cwd=work, env=env, capture_output=True, text=True
    ).stdout
    assert where.startswith(str(venv)), where
    tt("synth", "lda", "-o", "c", "-K", "3", "-V", "40", "--documents", "60", "--length", "30", "--format", "ldac")
    tt("prepare", "c/train.ldac", "--vocab", "c/vocab.txt", "--min-count", "1", "-o", "p")
    tt("prepare", str(ROOT / "README.md"), "-o", "text", "--source-format", "lines", "--min-count", "1")  # stop words
    tt("train", "p", "-m", "lda-gibbs", "-K", "3", "-n", "5", "-o", "run")
    out = tt("evaluate", "run", "p", "--json")
    assert '"perplexity"' in out
