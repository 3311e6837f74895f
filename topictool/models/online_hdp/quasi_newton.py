"""A small box-constrained quasi-Newton maximiser (projected L-BFGS), free of BLAS and LAPACK.

It replaces scipy's L-BFGS-B for beta-hat (model.optimize_beta): scipy's routine calls BLAS
ddot/daxpy and LAPACK, whose kernels OpenBLAS picks by CPU, so the same seed gave a different
model.npz on an AVX2 and an AVX-512 machine. Here every inner product is a numba loop in index
order, so the iterates depend only on the objective's values. (Until 2026-11-28 they were
``np.sum(a * b)`` and the two-loop recursion was Python: about 800 small numpy calls a step of
hdp-online, a third of beta-hat's time, run on one thread while the others wait.)

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

import numba
import numpy as np

from ... import kernels  # noqa: F401  (before any kernel: the cache key, kernels/__init__.py)


@numba.njit(cache=True, nogil=True)
def _dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


def maximize_box(fun, x0, lo, hi, maxiter=200, ftol=1e-10, gtol=1e-6, memory=10, c1=1e-4, backtracks=50):
    """Maximise ``fun(x) -> (f, grad f)`` over lo <= x <= hi (scalars or arrays) from x0
    (clipped into the box). Returns (x, f(x), steps taken); x is always inside the box and
    f never below f(clip(x0))."""
    x = np.clip(np.asarray(x0, dtype=np.float64), lo, hi)
    f, g = fun(x)
    F, G = -float(f), -np.asarray(g, dtype=np.float64)
    # the pairs (s, y) as rows, oldest first, and 1 / s.y; ``count`` of them in use
    S, Y, R = np.empty((memory, len(x))), np.empty((memory, len(x))), np.empty(memory)
    count = 0
    d = np.empty(len(x))
    steps = 0
    while steps < maxiter:
        if not np.isfinite(F) or np.max(np.abs(x - np.clip(x - G, lo, hi)), initial=0.0) <= gtol:
            break
        free = ~(((x <= lo) & (G > 0.0)) | ((x >= hi) & (G < 0.0)))
        _direction(G, free, S, Y, R, count, d)
        if not _dot(G, d) < 0.0:
            count = 0
            _direction(G, free, S, Y, R, count, d)
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
            if count == memory:  # drop the oldest
                S[:-1], Y[:-1], R[:-1] = S[1:].copy(), Y[1:].copy(), R[1:].copy()
                count -= 1
            S[count], Y[count], R[count] = s, y, 1.0 / sy
            count += 1
        done = F - Fn <= ftol * max(abs(F), abs(Fn), 1.0)
        x, F, G = xn, Fn, Gn
        if done:
            break
    return x, -F, steps


@numba.njit(cache=True, nogil=True)
def _direction(G, free, S, Y, R, count, out):
    """out = -H q, q = G on the free variables and 0 on the others, by the L-BFGS two-loop
    recursion over the first ``count`` pairs (H0 = s.y / y.y of the newest pair; without pairs,
    steepest descent scaled to a largest move of 1); zero on the fixed variables."""
    n = G.shape[0]
    q = np.empty(n)
    for i in range(n):
        q[i] = G[i] if free[i] else 0.0
    coef = np.empty(max(count, 1))
    for p in range(count - 1, -1, -1):
        a = R[p] * _dot(S[p], q)
        coef[p] = a
        for i in range(n):
            q[i] -= a * Y[p, i]
    if count > 0:
        h0 = _dot(S[count - 1], Y[count - 1]) / _dot(Y[count - 1], Y[count - 1])
        for i in range(n):
            q[i] *= h0
    else:
        big = 0.0
        for i in range(n):
            big = max(big, abs(q[i]))
        scale = max(1.0, big)
        for i in range(n):
            q[i] /= scale
    for p in range(count):
        b = coef[p] - R[p] * _dot(Y[p], q)
        for i in range(n):
            q[i] += S[p, i] * b
    for i in range(n):
        out[i] = -q[i] if free[i] else 0.0
