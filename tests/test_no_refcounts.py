"""The sweeps' loops take no reference counts (kernels/jit.py, docs/architecture.md).

A short training runs each model's kernel from Python (so its argument types are known); then a
fresh copy of that kernel is compiled, its callees down to the loop compiled anew too (a cached
kernel keeps no LLVM IR), and the loop's IR must call neither of numba's counting functions. The
same loop compiled with the runtime does call them (the control), so the test can tell the two
apart.
"""

import re

import numba
import pytest
from numba.core.caching import NullCache

from topictool import synth
from topictool.models import registry
from topictool.models.hca import sampler as hca_sampler
from topictool.models.lda_gibbs import kernels as lda_kernels
from topictool.models.lida import kernels as lida_kernels
from topictool.models.variational import pcsvb0, scvb0

COUNTS = re.compile(r"call [^\n]*@NRT_(?:incref|decref)")


@pytest.fixture(scope="module")
def corpus():
    train, _, _ = synth.lda(topics=4, vocab_size=60, documents=40, test_documents=0, length=30, seed=2)
    return train


def fresh(fn, **override):
    """A copy of the jitted fn with its own options (and override), compiled anew."""
    options = {k: v for k, v in fn.targetoptions.items() if k != "nopython"}
    options.update(cache=False, **override)
    return numba.njit(**options)(fn.py_func)


def compiled_loop(kernel, chain):
    """The last function of chain (the callees from kernel down to the loop), compiled anew as the
    kernel, itself compiled anew for the types a training step gave it, calls it."""
    caches = [callee._cache for callee in chain]
    try:
        for callee in chain:
            callee._cache = NullCache()
        fresh(kernel).compile(kernel.signatures[0])
    finally:  # the other tests keep the disk cache
        for callee, cache in zip(chain, caches):
            callee._cache = cache
    loop = chain[-1]
    assert loop.signatures, f"{kernel.__name__} did not call {loop.__name__}"
    return loop, loop.signatures[-1]


# (model, the kernel its step calls from Python, the callees down to the loop)
LOOPS = [
    ("lda-gibbs", lda_kernels.sample_block, [lda_kernels._block_documents]),
    ("hdp-gibbs", hca_sampler.sweep, [hca_sampler._sweep_documents]),
    ("lida-gibbs", lida_kernels.sweep_topics, [lida_kernels._sweep_cell]),
    ("lda-scvb0", scvb0._scvb0_pass, [scvb0._scvb0_docs]),
    ("hdp-pcsvb0", pcsvb0._pcsvb0_pass, [pcsvb0._run_documents, pcsvb0._document]),
]


@pytest.mark.parametrize("model, kernel, chain", LOOPS, ids=[m for m, _, _ in LOOPS])
def test_loop_takes_no_reference_counts(corpus, model, kernel, chain):
    cls = registry.get(model)
    cls(corpus, cls.resolve_options({"K": 5}), 1, threads=1).step()
    loop, sig = compiled_loop(kernel, chain)
    assert len(COUNTS.findall(loop.inspect_llvm(sig))) == 0
    if model == "lda-gibbs":  # the control: with the runtime, the same loop counts
        counted = fresh(loop, _nrt=True)
        counted.compile(sig)
        assert len(COUNTS.findall(counted.inspect_llvm(sig))) > 0
