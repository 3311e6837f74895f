"""nplda-gibbs: NP-LDA by collapsed Gibbs sampling over table counts (hca's default model; Buntine &
Mishra 2014, "NP-LDA": Pitman-Yor processes with GEM roots on both sides).

    alpha   ~ GEM(a_alpha, b_alpha), truncated at K topics
    theta_d ~ PYP(a_theta, b_theta, alpha)    a_theta = 0 makes the document side an HDP
    beta    ~ GEM(a_beta, b_beta) over the W words
    phi_k   ~ PYP(a_phi, b_phi, beta)
    z ~ theta_d, w ~ phi_z                    [with burst=true: w ~ psi_{d,z}, burst.py]

Options with hca 0.63's defaults (its name in brackets): K, a_theta [a] = 0, b_theta [b] = 10,
a_alpha [a0] = 0, b_alpha [b0] = 10, a_phi [aw] = 0.5, b_phi [bw] = 100, a_beta [aw0] = 0.5,
b_beta [bw0] = 10, burst, burst_discount [ad] = 0.5 (the manual's -Sad=0.5), burst_concentration
[bdk] = 100, sample_hyper_every = 3, sample_discount_every = 11, sample_hyper_after = 0, fix, phi_average = 0 (the
snapshot averages the last N sweeps' estimates, hca's -lphi). As in hca, a discount that starts
at 0 is held at 0 (the process is then a Dirichlet process); others are sampled.
"""

from .model import HcaGibbs, family_defaults


class NpldaGibbs(HcaGibbs):
    name = "nplda-gibbs"
    pyp_words = True
    defaults = family_defaults(a_theta=0.0, a_alpha=0.0, a_phi=0.5, b_phi=100.0, a_beta=0.5, b_beta=10.0)
