"""A small box-constrained quasi-Newton maximiser (projected L-BFGS), free of BLAS and LAPACK.

It replaces scipy's L-BFGS-B for beta-hat (model.optimize_beta): scipy's routine calls BLAS
ddot/daxpy and LAPACK, whose kernels OpenBLAS picks by CPU, so the same seed gave a different
model.npz on an AVX2 and an AVX-512 machine. Here every inner product is ``np.sum(a * b)``
(numpy's pairwise summation, whose order is fixed), so the iterates depend only on the
objective's values.

Method (Bertsekas's projected Newton, with the L-BFGS two-loop recursion as the Hessian
model): at x, the variables at a bound whose gradient pushes outward are held fixed; the
two-loop recursion over the last ``memory`` pairs (s, y) gives the direction on the others;
the step is x(t) = clip(x + t d, lo, hi) with t = 1, 1/2, 1/4, ... until the Armijo condition
F(x(t)) <= F(x) + c1 grad F . (x(t) - x) holds (F = -f, minimised). The first step, and any
step whose quasi-Newton direction does not descend, is projected steepest descent scaled so
that no coordinate moves by more than 1. Pairs with s . y <= 1e-10 y . y are not stored.

Stops (as scipy's L-BFGS-B options ``ftol``, ``gtol``, ``maxiter``) when the projected gradient
max_i |x_i - clip(x_i - dF/dx_i)| is at most ``gtol``, when a step reduces F by at most
``ftol`` max(|F|, |F_new|, 1), after ``maxiter`` steps, or when no step length decreases F.
"""

import numpy as np


def _dot(a, b):
    return float(np.sum(a * b))


def maximize_box(fun, x0, lo, hi, maxiter=200, ftol=1e-10, gtol=1e-6, memory=10, c1=1e-4, backtracks=50):
    """Maximise ``fun(x) -> (f, grad f)`` over lo <= x <= hi (scalars or arrays) from x0
    (clipped into the box). Returns (x, f(x), steps taken); x is always inside the box and
    f never below f(clip(x0))."""
    x = np.clip(np.asarray(x0, dtype=np.float64), lo, hi)
    f, g = fun(x)
    F, G = -float(f), -np.asarray(g, dtype=np.float64)
    pairs = []  # (s, y, 1 / s.y), oldest first
    steps = 0
    while steps < maxiter:
        if not np.isfinite(F) or np.max(np.abs(x - np.clip(x - G, lo, hi)), initial=0.0) <= gtol:
            break
        free = ~(((x <= lo) & (G > 0.0)) | ((x >= hi) & (G < 0.0)))
        d = _direction(np.where(free, G, 0.0), pairs, free)
        if not _dot(G, d) < 0.0:
            pairs = []
            d = _direction(np.where(free, G, 0.0), pairs, free)
        t = 1.0
        for _ in range(backtracks):
            xn = np.clip(x + t * d, lo, hi)
            slope = _dot(G, xn - x)
            fn, gn = fun(xn)
            Fn = -float(fn)
            if slope < 0.0 and np.isfinite(Fn) and Fn <= F + c1 * slope:
                break
            t *= 0.5
        else:
            break
        steps += 1
        Gn = -np.asarray(gn, dtype=np.float64)
        s, y = xn - x, Gn - G
        sy = _dot(s, y)
        if sy > 1e-10 * _dot(y, y):
            pairs.append((s, y, 1.0 / sy))
            del pairs[:-memory]
        done = F - Fn <= ftol * max(abs(F), abs(Fn), 1.0)
        x, F, G = xn, Fn, Gn
        if done:
            break
    return x, -F, steps


def _direction(q, pairs, free):
    """-H q by the L-BFGS two-loop recursion (H0 = s.y / y.y of the newest pair; without pairs,
    steepest descent scaled to a largest move of 1), zero on the fixed variables."""
    q = q.copy()
    coef = []
    for s, y, r in reversed(pairs):
        a = r * _dot(s, q)
        coef.append(a)
        q -= a * y
    if pairs:
        s, y, _ = pairs[-1]
        q *= _dot(s, y) / _dot(y, y)
    else:
        q /= max(1.0, float(np.max(np.abs(q), initial=0.0)))
    for (s, y, r), a in zip(pairs, reversed(coef)):
        q += s * (a - r * _dot(y, q))
    return -np.where(free, q, 0.0)
