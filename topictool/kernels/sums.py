"""A sum in a fixed order that the processor can still run in parallel.

A loop ``total += x[k]`` is one chain of additions, each waiting for the one before (four cycles
each): over K = 100 topics the chain, not the arithmetic, sets the time. Letting the compiler
reassociate the sum (numba's fastmath) vectorises it, but the order it then sums in depends on
the path the vectorised loop takes, and that is chosen at run time by checks on where the arrays
lie in memory: two models with the same seed came out different in their last bits (lda-scvb0,
2026-11-28). ``sum8`` keeps eight running sums, k mod 8, combined in a fixed tree: independent
chains the processor overlaps, and the same bits whatever the addresses.
"""

import numba


@numba.njit(cache=True, nogil=True, _nrt=False, inline="always")
def sum8(x, n):
    """x[0] + ... + x[n-1] as eight running sums (k mod 8) combined pairwise."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    k = 0
    while k + 8 <= n:
        s0 += x[k]
        s1 += x[k + 1]
        s2 += x[k + 2]
        s3 += x[k + 3]
        s4 += x[k + 4]
        s5 += x[k + 5]
        s6 += x[k + 6]
        s7 += x[k + 7]
        k += 8
    while k < n:
        s0 += x[k]
        k += 1
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
