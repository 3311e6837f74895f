"""Seeded, checkpointable random numbers for numba kernels.

Generator: xoshiro256** (Blackman & Vigna 2018), 256 bits of state per stream.
A model owns a ``uint64`` array of shape (streams, 4) -- one row per thread --
and saves it in checkpoints, so a resumed run continues exactly the same
sequence. Streams are seeded with splitmix64 from (seed, stream key), which
gives independent-looking streams for any key (thread index, document index).
"""

import numba
import numpy as np

from .jit import no_nrt  # called for every token: no reference counts

MASK64 = (1 << 64) - 1  # seeds and keys are taken modulo 2^64
_U53 = 1.0 / 9007199254740992.0  # 2**-53


@numba.njit(cache=True, nogil=True, inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@numba.njit(cache=True, nogil=True)
def splitmix64(x):
    """One splitmix64 step: returns (new_x, output)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    z = x
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x, z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True)
def seed_row(state, row, seed, key):
    """Fill state[row] from (seed, key) with splitmix64."""
    x = np.uint64(seed) * np.uint64(0xD1B54A32D192ED03) ^ np.uint64(key)
    for i in range(4):
        x, z = splitmix64(x)
        state[row, i] = z
    # xoshiro must not start from all zeros; splitmix64 makes that
    # astronomically unlikely, but guard anyway.
    if state[row, 0] == 0 and state[row, 1] == 0 and state[row, 2] == 0 and state[row, 3] == 0:
        state[row, 0] = np.uint64(1)


def make_streams(seed, n):
    """State array for ``n`` independent streams derived from ``seed``."""
    seed = int(seed) & MASK64
    state = np.empty((int(n), 4), dtype=np.uint64)
    for row in range(int(n)):
        seed_row(state, row, np.uint64(seed), np.uint64(row))
    return state


@numba.njit(cache=True, nogil=True, inline="always")
def xoshiro_step(s0, s1, s2, s3):
    """One xoshiro256** step on a state held in locals: (output, s0, s1, s2, s3).
    For kernels that keep the state in registers across a hot loop."""
    result = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, s0, s1, s2, s3


@no_nrt
def next_u64(state, row):
    result, s0, s1, s2, s3 = xoshiro_step(state[row, 0], state[row, 1], state[row, 2], state[row, 3])
    state[row, 0] = s0
    state[row, 1] = s1
    state[row, 2] = s2
    state[row, 3] = s3
    return result


@no_nrt
def uniform(state, row):
    """Uniform double in [0, 1) with 53 random bits."""
    return np.float64(next_u64(state, row) >> np.uint64(11)) * _U53


@no_nrt
def randint(state, row, n):
    """Uniform integer in [0, n) for n > 0 (53-bit multiply; bias < n / 2**53)."""
    return np.int64(uniform(state, row) * n) % n


@numba.njit(cache=True, nogil=True)
def shuffle(order, state, row):
    """Fisher-Yates shuffle of ``order`` in place with stream ``row`` of ``state``."""
    for i in range(order.shape[0] - 1, 0, -1):
        j = randint(state, row, i + 1)
        tmp = order[i]
        order[i] = order[j]
        order[j] = tmp


@numba.njit(cache=True, nogil=True)
def standard_normal(state, row):
    """Marsaglia's polar method (the second value is discarded to keep
    the state a pure function of the number of draws)."""
    while True:
        u = 2.0 * uniform(state, row) - 1.0
        v = 2.0 * uniform(state, row) - 1.0
        s = u * u + v * v
        if 0.0 < s < 1.0:
            return u * np.sqrt(-2.0 * np.log(s) / s)


@numba.njit(cache=True, nogil=True)
def gamma(state, row, shape):
    """Gamma(shape, 1) by Marsaglia & Tsang (2000); shape < 1 by boosting."""
    if shape <= 0.0:
        return 0.0
    boost = 1.0
    if shape < 1.0:
        u = uniform(state, row)
        while u == 0.0:
            u = uniform(state, row)
        boost = u ** (1.0 / shape)
        shape += 1.0
    d = shape - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    while True:
        x = standard_normal(state, row)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform(state, row)
        if u < 1.0 - 0.0331 * x * x * x * x:
            return d * v * boost
        if np.log(u) < 0.5 * x * x + d * (1.0 - v + np.log(v)):
            return d * v * boost


@numba.njit(cache=True, nogil=True)
def beta(state, row, a, b):
    x = gamma(state, row, a)
    y = gamma(state, row, b)
    s = x + y
    if s <= 0.0:
        return 0.5
    return x / s
