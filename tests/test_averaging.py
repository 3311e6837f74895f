"""phi_average=N (models/averaging.py), on every model that declares it: the snapshot's phi and
alpha are the means of the steps' own estimates over the last N steps, the chain is the one
without averaging, and a resumed run averages as the straight one does."""

import numpy as np
import pytest

from topictool.errors import InputError
from topictool.models import registry
from topictool.models.averaging import AVERAGE_STATE
from topictool.synth import hdp as synth_hdp

from .conftest import straight_and_resumed

AVERAGING = sorted(name for name in registry.MODELS if "phi_average" in registry.get(name).defaults)


@pytest.fixture(scope="module")
def small():
    train, _, _ = synth_hdp(truncation=10, documents=60, test_documents=20, vocab_size=80, length=40, seed=5)
    return train


def test_the_gibbs_samplers_average():
    assert AVERAGING == ["hdp-gibbs", "lda-gibbs", "nplda-gibbs"]


def chain(state):
    """The state without the sums: what the sampler itself is at."""
    return {k: v for k, v in state.items() if k not in AVERAGE_STATE}


@pytest.mark.parametrize("name", AVERAGING)
@pytest.mark.parametrize("threads", [1, 2])
def test_the_snapshot_is_the_mean_of_the_last_steps(small, name, threads):
    """At a multiple of N the mean is over the last N steps, in between over the last N and those
    since, before the N-th over all of them; the chain is the same as without averaging."""
    cls = registry.get(name)
    N = 4
    plain = cls(small, {"K": 8}, 5, threads=threads)
    avg = cls(small, {"K": 8, "phi_average": N}, 5, threads=threads)
    assert avg.snapshot().meta["phi_averaged_steps"] == 0
    phis, alphas = [], []
    for it in range(1, 11):
        plain.step()
        metrics = avg.step()
        s = plain.snapshot()
        phis.append(s.phi)
        alphas.append(s.alpha)
        count = it if it < N else N + it % N
        assert metrics["phi_averaged_steps"] == count
        got = avg.snapshot()
        assert got.meta["phi_averaged_steps"] == count
        want = np.mean(phis[-count:], axis=0)
        np.testing.assert_allclose(got.phi, want / want.sum(axis=1, keepdims=True), rtol=1e-12)
        np.testing.assert_allclose(got.alpha, np.mean(alphas[-count:], axis=0), rtol=1e-12)
    a, b = chain(plain.state()), chain(avg.state())
    assert sorted(a) == sorted(b)
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    # the averaged phi is not the last sweep's (the test would pass on an unaveraged snapshot otherwise)
    assert not np.allclose(got.phi, phis[-1])


@pytest.mark.parametrize("name", AVERAGING)
def test_resume_averages_as_the_straight_run(small, name):
    cls = registry.get(name)
    # 4 + 3: the straight run's block of 3 ends at step 6, after the resume
    whole, resumed = straight_and_resumed(cls, small, {"K": 8, "phi_average": 3}, 11, 4, 3)
    assert set(AVERAGE_STATE) <= set(whole.state())
    sa, sb = whole.snapshot(), resumed.snapshot()
    assert np.array_equal(sa.phi, sb.phi) and np.array_equal(sa.alpha, sb.alpha)


@pytest.mark.parametrize("name", AVERAGING)
def test_refused_below_zero_and_counted_in_memory(small, name):
    cls = registry.get(name)
    with pytest.raises(InputError, match="phi_average=-1"):
        cls(small, {"K": 8, "phi_average": -1}, 5)
    assert "phi_sum" not in cls(small, {"K": 8}, 5).state()
    D, W, N = small.D, small.W, small.N
    more = cls.memory_estimate(D, W, N, {"K": 8, "phi_average": 4}) - cls.memory_estimate(D, W, N, {"K": 8})
    assert more == 16 * 8 * W
