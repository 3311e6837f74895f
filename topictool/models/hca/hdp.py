"""hdp-gibbs: HDP-LDA by collapsed Gibbs sampling over table counts (hca's ``-B0.001`` with its default
document side; Buntine & Mishra 2014, "HDP-LDA").

    alpha   ~ GEM(0, b_alpha), truncated at K topics
    theta_d ~ DP(b_theta, alpha)            (a Pitman-Yor process with discount 0)
    phi_k   ~ Dirichlet(beta, ..., beta)    symmetric; beta sampled unless fixed
    z ~ theta_d, w ~ phi_z                  [with burst=true: w ~ psi_{d,z}, burst.py]

Options (hca's name in brackets): K (-K, the truncation), b_theta [b] = 10, b_alpha [b0] = 10,
beta [-B value] = 0.01 per word (hca samples the total W beta), burst [-Sbdk], burst_discount
[ad] = 0.5 (the manual's -Sad=0.5), burst_concentration [bdk] = 100, sample_hyper_every = 3,
sample_discount_every = 11, sample_hyper_after = 0 (none sampled through this sweep, hca's -G
var,cycles,start), fix (comma-separated names held fixed, hca's -F), phi_average = 0
(the snapshot averages the last N sweeps' estimates, hca's -lphi).
"""

from .model import HcaGibbs, family_defaults


class HdpGibbs(HcaGibbs):
    name = "hdp-gibbs"
    defaults = family_defaults(beta=0.01)
