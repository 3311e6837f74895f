"""`make -C scripts smoke`: every experiment config runs on tiny synthetic data and every
registered model is trained at least once. Runs last (conftest orders it), when the
numba kernels are already compiled and cached by the other tests."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_scripts_smoke(tmp_path):
    p = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-C",
            str(ROOT / "scripts"),
            "smoke",
            f"PY={sys.executable}",
            f"BUILD={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    assert "smoke: all" in p.stdout
