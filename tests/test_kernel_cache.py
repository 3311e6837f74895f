"""The numba cache of topictool's kernels is keyed on every numba module of the package
(topictool/kernels/__init__.py), so a kernel never runs a stale copy of another file's function."""

import json
import os
import subprocess
import sys

import pytest

from topictool import kernels


def numba_modules():
    """Every topictool module of package_stamp's, as a name."""
    names = []
    for path, _ in kernels.numba_sources():
        parts = path.relative_to(kernels._ROOT.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def run(code, env=None):
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **(env or {})}, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


LOCATORS = """
import importlib, json, sys
from numba.core.registry import CPUDispatcher
found = {}
for name in sys.argv[1:] or %r:
    module = importlib.import_module(name)
    for key, value in vars(module).items():
        if isinstance(value, CPUDispatcher) and value._cache.__class__.__name__ == "FunctionCache":
            if value.py_func.__module__ == name:
                found[name + "." + key] = type(value._cache._impl._locator).__name__
print(json.dumps(found))
"""


def test_every_cached_kernel_is_keyed_on_the_package_even_imported_first():
    # One fresh process a module, so that no other module's import registers the locators for it.
    seen = {}
    for name in numba_modules():
        seen.update(run(LOCATORS % ([name],)))
    assert len(seen) > 50  # the check found the kernels (a changed layout would find none)
    wrong = {k: v for k, v in seen.items() if not v.startswith("Topictool")}
    assert not wrong, f"kernels decorated before topictool.kernels was imported: {wrong}"


def test_package_stamp_follows_numba_modules_only(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("import numba\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    monkeypatch.setattr(kernels, "_ROOT", tmp_path)
    stamp = kernels.package_stamp.__wrapped__
    first = stamp()
    (tmp_path / "b.py").write_text("x = 2\n")
    assert stamp() == first
    (tmp_path / "a.py").write_text("import numba  # changed\n")
    assert stamp() != first


CALL = """
import json, numpy as np
import topictool.kernels as k
if %r:
    k.package_stamp = lambda: "another version of a file this kernel calls"
from topictool.kernels.sums import sum8
sum8(np.ones(10), 10)
print(json.dumps([sum(sum8.stats.cache_hits.values()), sum(sum8.stats.cache_misses.values())]))
"""


@pytest.mark.parametrize("where", ["NUMBA_CACHE_DIR", "__pycache__"])
def test_a_change_elsewhere_in_the_package_recompiles(tmp_path, where):
    env = {"NUMBA_CACHE_DIR": str(tmp_path)} if where == "NUMBA_CACHE_DIR" else {}
    run(CALL % False, env)  # compiled or loaded, and cached
    hits, misses = run(CALL % False, env)
    assert (hits, misses) == (1, 0)
    hits, misses = run(CALL % True, env)  # same file, another package stamp: not the cached copy
    assert (hits, misses) == (0, 1)
    run(CALL % False, env)  # (the package's own stamp cached again for the other tests)
