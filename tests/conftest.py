import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TOPICTOOL_SHARED_DATA", ROOT.parent / "shared" / "data"))


def shared(*parts):
    """Path into ../shared/data, or skip the test with the reason."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real data not present: {p} (tests on ../shared/data run only where it exists)")
    return p


class Result:
    def __init__(self, r):
        self.exit_code = r.exit_code
        self.stdout = r.stdout
        self.stderr = r.stderr
        self.exception = r.exception


def run(*args):
    """Run the CLI in-process; returns exit code, stdout and stderr."""
    from topictool.cli.main import main

    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True)
    return Result(r)


def run_json(*args):
    """Run a command with --json; its parsed output (the command must succeed)."""
    import json

    r = run(*args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def make_corpus(docs, vocab):
    """Corpus from a list of {word id: count} dicts."""
    from topictool.corpus import from_triples

    d, w, c = [], [], []
    for i, bag in enumerate(docs):
        for k, v in bag.items():
            d.append(i)
            w.append(k)
            c.append(v)
    return from_triples(np.array(d), np.array(w), np.array(c), len(docs), tuple(vocab))


def straight_and_resumed(cls, corpus, opts, seed, first, then):
    """(a model trained first + then steps in one go, the same model trained first steps, put
    through state() and from_state() and trained then steps more), after asserting that the two
    states are equal key by key: the exact-resume check every family makes."""
    whole = cls(corpus, opts, seed)
    for _ in range(first + then):
        whole.step()
    half = cls(corpus, opts, seed)
    for _ in range(first):
        half.step()
    resumed = cls.from_state(corpus, opts, {k: np.array(v) for k, v in half.state().items()})
    for _ in range(then):
        resumed.step()
    a, b = whole.state(), resumed.state()
    assert sorted(a) == sorted(b)
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    return whole, resumed


@pytest.fixture
def cli():
    return run


def pytest_collection_modifyitems(items):
    """The smoke run of every config goes last (it reuses the kernels the tests compiled)."""
    items.sort(key=lambda item: "test_zz_smoke" in item.nodeid)
