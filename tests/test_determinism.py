"""A model depends on the seed, the options and the thread count, and on nothing else: not on
numba's cache (cold or warm) and not on the CPU's vector width (numba's host target against
its generic one, numpy's and OpenBLAS's SIMD kernels against their baseline ones). Each
configuration trains every golden run (tests/golden.py) in a fresh process and must give
tests/golden.json bit for bit."""

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from . import golden
from .conftest import ROOT, SHARED, shared

EXPECTED = json.loads((Path(__file__).parent / "golden.json").read_text())


def generic_cpu_env():
    """Environment variables that make numba, numpy and OpenBLAS use baseline instructions."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    env = {"NUMBA_CPU_NAME": "generic", "NPY_DISABLE_CPU_FEATURES": " ".join(__cpu_dispatch__)}
    if platform.machine() in ("x86_64", "AMD64"):
        env["OPENBLAS_CORETYPE"] = "Prescott"  # SSE3 kernels: runs on every x86-64
    return env


def checksums(tmp_path, name, cache, extra=None):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), **(extra or {})}
    out = tmp_path / name
    r = subprocess.run(
        [sys.executable, "-m", "tests.golden", str(out), str(SHARED)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def differing(result):
    return sorted(label for label in EXPECTED if result.get(label) != EXPECTED[label])


def test_cold_and_warm_cache_host_and_generic_cpu_give_the_same_models(tmp_path):
    shared(*golden.CH)
    cache = tmp_path / "numba-cache"
    cold = checksums(tmp_path, "cold", cache)
    warm = checksums(tmp_path, "warm", cache)
    generic = checksums(tmp_path, "generic", tmp_path / "numba-cache-generic", generic_cpu_env())
    assert differing(cold) == [], "cold cache"
    assert differing(warm) == [], "warm cache"
    assert differing(generic) == [], "generic CPU"
