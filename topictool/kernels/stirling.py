"""Generalised second-order Stirling numbers S^n_{t,a} for Pitman-Yor table counts.

Buntine & Hutter (2012, "A Bayesian view of the Poisson-Dirichlet process", sect. 2.2)
define, for a discount 0 <= a < 1,

    S^{n+1}_{t,a} = S^n_{t-1,a} + (n - t a) S^n_{t,a}                                  (B&H 2012, recursion)
    S^0_{0,a} = 1,   S^n_{0,a} = 0 for n >= 1,   S^n_{t,a} = 0 for t > n,

so S^n_{1,a} = (1 - a)_{n-1} (a rising factorial), S^n_{n,a} = 1, and for a = 0 these are
the unsigned Stirling numbers of the first kind. They count the ways n customers of a
Pitman-Yor restaurant sit at t tables; the hca samplers need them through the posterior
factor S^n_{t,a} of every node (S^n_{t,a} / C(n, t) where, as at the burst nodes, the
state also says which customers opened the tables: Chen, Du & Buntine 2011).

What the samplers need are ratios, and ratios are what is stored. The table kept here
is the within-row ratio

    R[n, t] = S^n_{t-1,a} / S^n_{t,a}          1 <= t <= n   (R[n, 1] = 0; "infinite" for t > n)

which obeys a recursion of positive terms only (no cancellation, no exp or log):

    R[n+1, t] = (R[n, t-1] + n - (t-1) a) / (1 + (n - t a) / R[n, t])                 (ratio recursion)

and gives the two ratios of adding one customer to a node holding n customers at t tables:

    U(n, t) = S^{n+1}_{t,a}   / S^n_{t,a} = (n - t a) + R[n, t]            same tables
    V(n, t) = S^{n+1}_{t+1,a} / S^n_{t,a} = 1 + (n - (t+1) a) / R[n, t+1]  one table more

Logarithms, for likelihoods and for sampling discounts, come from the same ratios:
log S^n_{t,a} = log (1-a)_{n-1} - sum_{j=2..t} log R[n, j].

Bounds: a table covers n <= n_max rows and t <= t_cap columns. ``StirlingTable`` grows
it on demand (between sweeps; a kernel never reallocates) and rebuilds it when the
discount changes. Building costs O(n_max t_cap) divisions.
"""

import math

import numba
import numpy as np

INF = np.inf


# ----------------------------------------------------------------------------
# kernels


# The ratio recursion above, row by row: fills R[n, t] for 1 <= n <= n_max, 1 <= t <= min(n, t_cap).
@numba.njit(cache=True, nogil=True)
def fill_ratio_table(a, R):
    """Fill R (shape (n_max+1, t_cap+1), float64) for discount a; unused cells are +inf,
    R[n, 0] is unused (0)."""
    n_rows, n_cols = R.shape
    t_cap = n_cols - 1
    for n in range(n_rows):
        R[n, 0] = 0.0
        for t in range(1, n_cols):
            R[n, t] = INF
    if n_rows < 2 or t_cap < 1:
        return
    R[1, 1] = 0.0
    for n in range(1, n_rows - 1):
        R[n + 1, 1] = 0.0
        top = min(n + 1, t_cap)
        for t in range(2, top + 1):
            num = R[n, t - 1] + (n - (t - 1) * a)
            r = R[n, t]
            den = 1.0 if r == INF else 1.0 + (n - t * a) / r
            R[n + 1, t] = num / den


# U(n, t) = S^{n+1}_{t,a} / S^n_{t,a}: the customer joins one of the t existing tables.
@numba.njit(cache=True, nogil=True, inline="always")
def ratio_same_tables(R, a, n, t):
    return (n - t * a) + R[n, t]


# V(n, t) = S^{n+1}_{t+1,a} / S^n_{t,a}: the customer opens table t+1 (1 when t = n).
@numba.njit(cache=True, nogil=True, inline="always")
def ratio_new_table(R, a, n, t):
    if t + 1 > n:
        return 1.0
    return 1.0 + (n - (t + 1) * a) / R[n, t + 1]


# log S^n_{t,a} for one (n, t) from a filled table (t <= t_cap, n <= n_max).
@numba.njit(cache=True, nogil=True)
def log_stirling_from_table(R, a, n, t):
    if t > n or (t == 0 and n > 0):
        return -INF
    if n == 0:
        return 0.0
    s = math.lgamma(n - a) - math.lgamma(1.0 - a)
    for j in range(2, t + 1):
        s -= math.log(R[n, j])
    return s


# sum_i w_i log S^{n_i}_{t_i,a} over (n, t) pairs sorted by n, with a rolling row of R:
# O(max n * max t) divisions and memory O(max t). Used to sample discounts and for likelihoods.
@numba.njit(cache=True, nogil=True)
def sum_log_stirling(a, n, t, w):
    """Pairs must satisfy 1 <= t_i <= n_i and be sorted by n (ascending)."""
    m = n.shape[0]
    if m == 0:
        return 0.0
    t_max = 1
    for i in range(m):
        if t[i] > t_max:
            t_max = t[i]
    row = np.full(t_max + 1, INF)
    new = np.full(t_max + 1, INF)
    lg1a = math.lgamma(1.0 - a)
    total = 0.0
    i = 0
    # row currently holds R[cur, .]; start at cur = 1
    cur = 1
    row[1] = 0.0
    while i < m:
        target = n[i]
        while cur < target:
            new[1] = 0.0
            top = min(cur + 1, t_max)
            for tt in range(2, top + 1):
                num = row[tt - 1] + (cur - (tt - 1) * a)
                r = row[tt]
                den = 1.0 if r == INF else 1.0 + (cur - tt * a) / r
                new[tt] = num / den
            for tt in range(1, top + 1):
                row[tt] = new[tt]
            cur += 1
        while i < m and n[i] == cur:
            s = math.lgamma(cur - a) - lg1a
            for j in range(2, t[i] + 1):
                s -= math.log(row[j])
            total += w[i] * s
            i += 1
    return total


# Exact-in-log-space reference: log S^n_{t,a} for all n <= n_max, t <= t_max by the
# recursion with log-add-exp (for tests and small tables; O(n_max t_max) exp/log).
@numba.njit(cache=True, nogil=True)
def log_stirling_table(a, n_max, t_max):
    L = np.full((n_max + 1, t_max + 1), -INF)
    L[0, 0] = 0.0
    for n in range(n_max):
        for t in range(1, min(n + 1, t_max) + 1):
            x = L[n, t - 1]
            c = n - t * a
            y = L[n, t] + math.log(c) if (c > 0.0 and L[n, t] > -INF) else -INF
            if x == -INF:
                L[n + 1, t] = y
            elif y == -INF:
                L[n + 1, t] = x
            elif x > y:
                L[n + 1, t] = x + math.log1p(math.exp(y - x))
            else:
                L[n + 1, t] = y + math.log1p(math.exp(x - y))
    return L


# ----------------------------------------------------------------------------
# Python side


class StirlingTable:
    """The ratio table R for one discount, grown on demand.

    ``R`` is (n_max+1, t_cap+1) float64; kernels receive it with the discount ``a`` and
    must only ask for V(n, t) with t + 1 <= t_cap (U(n, t) with t <= t_cap).
    """

    def __init__(self, a, n_max, t_cap=32):
        self.a = float(a)
        self.n_max = max(int(n_max), 2)
        self.t_cap = max(2, min(int(t_cap), self.n_max))
        self.R = np.empty((self.n_max + 1, self.t_cap + 1), dtype=np.float64)
        fill_ratio_table(self.a, self.R)

    @property
    def nbytes(self):
        return self.R.nbytes

    def ensure(self, n_needed, t_needed, n_bound=None):
        """Cover rows up to n_needed and columns up to t_needed, with headroom (rows at most
        n_bound: counts never exceed it, so the kernels need no more)."""
        n_max, t_cap = self.n_max, self.t_cap
        if n_needed > n_max:
            n_max = max(int(n_needed), 2 * n_max)
            if n_bound is not None:
                n_max = max(min(n_max, int(n_bound)), self.n_max)
        if t_needed > t_cap:
            t_cap = max(int(t_needed), 2 * t_cap)
        t_cap = max(2, min(t_cap, n_max))
        if n_max != self.n_max or t_cap != self.t_cap:
            self.n_max, self.t_cap = n_max, t_cap
            self.R = np.empty((n_max + 1, t_cap + 1), dtype=np.float64)
            fill_ratio_table(self.a, self.R)

    def set_discount(self, a):
        a = float(a)
        if a != self.a:
            self.a = a
            fill_ratio_table(self.a, self.R)

    def log(self, n, t):
        return log_stirling_from_table(self.R, self.a, int(n), int(t))


def sorted_pairs(n, t, weights=None):
    """Aggregate (n, t) pairs with n >= 2 (S^1_1 = 1 adds nothing) into unique pairs sorted by n,
    as int64 arrays plus float64 multiplicities, for ``sum_log_stirling``."""
    n = np.asarray(n, dtype=np.int64).ravel()
    t = np.asarray(t, dtype=np.int64).ravel()
    w = np.ones(len(n)) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    keep = n >= 2
    n, t, w = n[keep], t[keep], w[keep]
    if len(n) == 0:
        return n, t, w
    key = n * (int(t.max()) + 1) + t
    uniq, inverse = np.unique(key, return_inverse=True)
    ww = np.bincount(inverse, weights=w)
    first = np.zeros(len(uniq), dtype=np.int64)
    first[inverse] = np.arange(len(key))
    return n[first].copy(), t[first].copy(), ww
