"""The demo's measure of recovered bars (scripts/show_bars.py): a topic shows a bar when its
most probable words are the bar's cells, for a sharp Gibbs phi and a smooth variational one."""

import importlib.util

import numpy as np
import pytest

from topictool.models.hca.hdp import HdpGibbs
from topictool.models.online_hdp.model import OnlineHdpSplitMerge
from topictool.synth import bars

from .conftest import ROOT

spec = importlib.util.spec_from_file_location("show_bars", ROOT / "scripts" / "show_bars.py")
show_bars = importlib.util.module_from_spec(spec)
spec.loader.exec_module(show_bars)


@pytest.fixture(scope="module")
def small_bars():
    return bars(documents=400, test_documents=40, length=100, alpha=0.3, side=5, seed=3)


def test_the_truth_smoothed_or_mixed(small_bars):
    truth = small_bars[2]["phi"]
    assert list(show_bars.bars_shown(truth, truth)) == list(range(10))
    # a smooth phi: 40% of the mass spread over every word; Hellinger to the bar is 0.3
    smooth = 0.6 * truth + 0.4 / truth.shape[1]
    assert list(show_bars.bars_shown(smooth, truth)) == list(range(10))
    # two bars in one topic (a cross, even an uneven one), or a bar with a cell missing, show no bar
    broken = truth[2].copy()
    broken[np.flatnonzero(broken)[0]] = 0
    mixed = np.vstack([0.5 * truth[0] + 0.5 * truth[6], 0.6 * truth[0] + 0.4 * truth[6], broken / broken.sum()])
    assert list(show_bars.bars_shown(mixed, truth)) == [-1, -1, -1]


@pytest.mark.parametrize(
    "cls,opts,steps", [(HdpGibbs, {"K": 15}, 200), (OnlineHdpSplitMerge, {"K": 2, "minibatch": 50}, 100)]
)
def test_both_demo_models_show_every_bar(small_bars, cls, opts, steps):
    train, _, truth = small_bars
    model = cls(train, cls.resolve_options(opts), 1)
    for _ in range(steps):
        model.step()
    snap = model.snapshot()
    shown = show_bars.bars_shown(snap.phi[snap.topic_weight > 0.02], truth["phi"])
    assert set(shown) - {-1} == set(range(10)), shown
