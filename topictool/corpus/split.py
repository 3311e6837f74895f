"""Seeded train/test split by documents."""

import numpy as np

from ..errors import InputError


def split_documents(D, test_fraction, seed):
    """Indices (train, test), each ascending; test gets round(D * fraction) documents."""
    if not 0.0 <= test_fraction < 1.0:
        raise InputError(f"--test-fraction must be in [0, 1), got {test_fraction}")
    n_test = int(round(D * test_fraction))
    if test_fraction > 0 and n_test == 0 and D >= 2:
        n_test = 1
    if n_test >= D:
        raise InputError(f"test fraction {test_fraction} leaves no training documents out of {D}")
    perm = np.random.default_rng(np.random.PCG64(seed)).permutation(D)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])
