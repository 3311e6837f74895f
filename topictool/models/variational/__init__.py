"""The variational family (docs/models/variational.md):

    lda-svi      svi.LdaSvi        stochastic variational inference for LDA (Hoffman et al. 2013)
    lda-scvb0    scvb0.LdaScvb0    stochastic collapsed VB (CVB0) for LDA (Foulds et al. 2013)
    hdp-pcvb0    pcvb0.HdpPcvb0    batch practical collapsed VB for the HDP (Sato et al. 2012)
    hdp-pcsvb0   pcsvb0.HdpPcsvb0  practical collapsed stochastic VB for the HDP (Bleier 2013)

Shared pieces: ``kernels`` (step sizes, lazily decayed count tables, random soft
initialisation, exp-digamma), ``sticks`` (stick-breaking weights and the HDP
hyper-parameter updates), ``common`` (the Model-protocol plumbing).

Importing this package compiles nothing; each model's kernels compile (or load
from numba's cache) on first use.
"""
