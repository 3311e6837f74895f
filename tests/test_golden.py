"""The redesign changed how every family is built, restored and driven, not what it computes:
the same seed, options and threads give the same model.npz arrays as before it, bit for bit
(tests/golden.json was recorded with the code before the redesign, lda-gibbs's two entries and
hdp-online-sm's since re-recorded for deliberate changes; see tests/golden.py)."""

import json
from pathlib import Path

import pytest

from . import golden
from .conftest import SHARED, run, shared

EXPECTED = json.loads((Path(__file__).parent / "golden.json").read_text())


@pytest.fixture(scope="module")
def ch(tmp_path_factory):
    shared(*golden.CH)
    d = tmp_path_factory.mktemp("golden")
    r = run("prepare", SHARED.joinpath(*golden.CH), "--vocab", SHARED.joinpath(*golden.CH_WORDS), "-o", d / "ch")
    assert r.exit_code == 0, r.stderr
    return d


@pytest.mark.parametrize("label", sorted(golden.RUNS))
def test_same_model_as_before_the_redesign(label, ch):
    out = ch / label
    r = run(*golden.train_args(ch / "ch", label, out))
    assert r.exit_code == 0, r.stderr
    assert golden.checksums(out / "model.npz") == EXPECTED[label]
