"""``phi_average = N``: the snapshot's phi and alpha are the means of the model's own estimates over
its last N steps (hca's ``-lphi,1,B`` and ``-lalpha,1,B``), not the last step's. One option, one
meaning, on every model that has it (the Gibbs samplers: lda-gibbs, hdp-gibbs, nplda-gibbs).

A Gibbs chain's last sample is one draw; the mean of the estimates over its last sweeps is a
Monte Carlo estimate of the posterior mean, and it scores better on held-out text
(docs/models/hca.md, docs/models/lda-gibbs.md). The default 0 keeps a snapshot a sample's.

The model keeps two K x W float64 sums of phi (and two K sums of alpha): the last complete block of
N steps and the current one. At an iteration that is a multiple of N the mean is over exactly the
last N steps; in between over the last N and those since; before the N-th over all steps so far
(``averaged_steps``). The sums are state arrays (``AVERAGE_STATE``), so a resumed run averages as the
straight one did; they are the same on every MPI rank (computed from the global counts).
"""

import numpy as np

from .base import Range

#: the option, its default and its limits, for a family's ``defaults`` and ``limits``
AVERAGE_DEFAULT = {"phi_average": 0}
AVERAGE_LIMITS = {"phi_average": Range(0, 10000)}
#: the state arrays it adds while on
AVERAGE_STATE = ("phi_sum", "alpha_sum")


def average_bytes(options, W):
    """The bytes of the two K x W float64 sums (0 when off), for a family's memory_estimate."""
    return 16 * int(options.get("K", 1)) * W if int(options.get("phi_average", 0) or 0) else 0


class EstimateAverage:
    """Mixin for a Model. The family defines ``_estimates()`` -> (phi (K x W, rows summing to 1),
    alpha (K)), its estimates from the current state; calls ``_allocate_average()`` in allocate(),
    ``_average_step()`` at the end of every step() (after the iteration count has moved), adding
    what it returns to the step's metrics, and takes the snapshot's phi and alpha from
    ``_snapshot_estimates()``; and adds ``_average_names()`` to the state's array names."""

    def _estimates(self):
        raise NotImplementedError

    def _allocate_average(self):
        self.phi_average = int(self.opts["phi_average"])
        blocks = 2 if self.phi_average else 0
        self.phi_sum = np.zeros((blocks, self.K, self.W) if blocks else (0, 0, 0), dtype=np.float64)
        self.alpha_sum = np.zeros((blocks, self.K) if blocks else (0, 0), dtype=np.float64)

    def _average_names(self):
        return AVERAGE_STATE if self.phi_average else ()

    def _average_step(self):
        """Adds this step's estimates to the current block (a block of ``phi_average`` steps, once
        complete, replaces the previous one); returns the step's metric, {} when off."""
        if not self.phi_average:
            return {}
        phi, alpha = self._estimates()
        self.phi_sum[1] += phi
        self.alpha_sum[1] += alpha
        if self.iteration % self.phi_average == 0:
            self.phi_sum[0] = self.phi_sum[1]
            self.alpha_sum[0] = self.alpha_sum[1]
            self.phi_sum[1] = 0.0
            self.alpha_sum[1] = 0.0
        return {"phi_averaged_steps": self.averaged_steps()}

    def averaged_steps(self):
        """How many steps the snapshot's estimates average: the last N = ``phi_average`` at a
        multiple of N, otherwise the last N plus those since (all of them before the N-th); 0 when
        off or before the first step."""
        n = self.phi_average
        if not n:
            return 0
        return self.iteration if self.iteration < n else n + self.iteration % n

    def _snapshot_estimates(self):
        """(phi, alpha) for the snapshot: the means over ``averaged_steps()`` steps, or the current
        estimates when there are none."""
        steps = self.averaged_steps()
        if not steps:
            return self._estimates()
        phi = self.phi_sum.sum(axis=0) / steps
        phi /= phi.sum(axis=1, keepdims=True)
        return phi, self.alpha_sum.sum(axis=0) / steps
