"""Special functions for numba kernels: digamma and log-gamma helpers.

``math.lgamma`` already works inside numba, so only what it lacks lives here.
All functions are scalar ``float64 -> float64`` and compile once.
"""

import math

import numba
import numpy as np

# Bernoulli-number coefficients of the asymptotic series
# psi(x) ~ log x - 1/(2x) - sum_n B_2n / (2n x^2n), for x >= 6.
_B2 = 1.0 / 12.0
_B4 = 1.0 / 120.0
_B6 = 1.0 / 252.0
_B8 = 1.0 / 240.0
_B10 = 1.0 / 132.0
_B12 = 691.0 / 32760.0
_B14 = 1.0 / 12.0


# psi(x) = d/dx log Gamma(x): recurrence psi(x) = psi(x+1) - 1/x up to x >= 6, then the
# asymptotic series; reflection psi(1-x) - psi(x) = pi cot(pi x) for x < 0.
@numba.njit(cache=True, nogil=True)
def digamma(x):
    """Digamma function; -inf at 0, NaN at negative integers and -inf (as scipy)."""
    if np.isnan(x) or x == -np.inf:
        return np.nan
    if x == np.inf:
        return np.inf
    if x == 0.0:
        return -np.inf
    shift = 0.0
    if x < 0.0:
        if x == math.floor(x):
            return np.nan
        # psi(x) = psi(1 - x) - pi / tan(pi x)
        shift = -math.pi / math.tan(math.pi * x)
        x = 1.0 - x
    result = 0.0
    while x < 6.0:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv2 * (_B2 - inv2 * (_B4 - inv2 * (_B6 - inv2 * (_B8 - inv2 * (_B10 - inv2 * (_B12 - inv2 * _B14))))))
    return result + math.log(x) - 0.5 * inv - series + shift


# log Gamma(b + N) - log Gamma(b) = log of b (b+1) ... (b+N-1), the rising factorial
# (the normaliser of a Dirichlet or Pitman-Yor node's eq. 3).
@numba.njit(cache=True, nogil=True)
def log_rising(b, N):
    if N <= 0:
        return 0.0
    return math.lgamma(b + N) - math.lgamma(b)


# log (b|a)_T = log prod_{t<T} (b + t a), the Pochhammer symbol with increment a
# (T log b when a = 0).
@numba.njit(cache=True, nogil=True)
def log_pochhammer(b, a, T):
    if T <= 0:
        return 0.0
    if a == 0.0:
        return T * math.log(b)
    return T * math.log(a) + math.lgamma(b / a + T) - math.lgamma(b / a)


# psi(x + n) - psi(x) = sum_{i<n} 1/(x+i): the digamma difference of Wallach's recurrence.
@numba.njit(cache=True, nogil=True)
def digamma_diff(x, n):
    """psi(x + n) - psi(x) for n >= 0; the direct sum for small n, digamma beyond."""
    if n <= 20:
        s = 0.0
        for i in range(n):
            s += 1.0 / (x + i)
        return s
    return digamma(x + n) - digamma(x)
