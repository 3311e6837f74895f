"""Univariate slice sampling (Neal 2003, "Slice sampling", Ann. Statist. 31, figs. 3 and 5).

Used for hyper-parameters, whose log densities are cheap sums over count statistics. The
driver is plain Python (a handful of density evaluations per draw); the uniforms come
from the model's own xoshiro stream (topictool.kernels.rng), so a checkpoint restores the
exact sequence.

For a scale parameter (a concentration) the sampler works on y = log x, with density
f(e^y) e^y, so the step width is relative; bounds are honoured by treating the density as
zero outside [lo, hi].
"""

import math

from .rng import uniform


def slice_sample(logf, x0, lo, hi, rng, row=0, width=1.0, log_scale=False, max_steps=16, max_shrink=64):
    """One slice-sampling update of x0 under log density ``logf`` on [lo, hi]; returns the new x.

    Stepping out (Neal's fig. 3) with at most ``max_steps`` widths on either side, then
    shrinkage (fig. 5). If shrinkage fails ``max_shrink`` times (a density that is -inf
    almost everywhere), x0 is returned unchanged.
    """
    if log_scale:
        to_x = math.exp
        y0, ylo, yhi = math.log(x0), math.log(lo), math.log(hi)

        def g(y):
            if not (ylo <= y <= yhi):
                return -math.inf
            return logf(math.exp(y)) + y
    else:

        def to_x(y):
            return y

        y0, ylo, yhi = x0, lo, hi

        def g(y):
            if not (ylo <= y <= yhi):
                return -math.inf
            return logf(y)

    g0 = g(y0)
    if not math.isfinite(g0):
        return x0
    level = g0 + math.log(1.0 - uniform(rng, row))  # log of a uniform height under the density (never log 0)
    left = y0 - width * uniform(rng, row)
    right = left + width
    j = int(max_steps * uniform(rng, row))
    m = max_steps - 1 - j
    while j > 0 and left > ylo and g(left) > level:
        left -= width
        j -= 1
    while m > 0 and right < yhi and g(right) > level:
        right += width
        m -= 1
    left = max(left, ylo)
    right = min(right, yhi)
    for _ in range(max_shrink):
        y = left + (right - left) * uniform(rng, row)
        if g(y) > level:
            return to_x(y)
        if y < y0:
            left = y
        else:
            right = y
    return x0
