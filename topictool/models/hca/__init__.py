"""The hca family: non-parametric topic models by collapsed Gibbs sampling over table counts
(Buntine & Mishra, KDD 2014; the hca suite), with the burstiness front end.

    hdp.py      hdp-gibbs    HDP-LDA: DP documents over a GEM root, Dirichlet topics
    nplda.py    nplda-gibbs  NP-LDA: PYP documents and topics, GEM roots on both sides
    model.py    the Model-protocol class both share (state, snapshot, schedule)
    sampler.py  the sweep kernel
    parallel.py --threads: document blocks against private copies of the shared counts, merged
    pyp.py      Pitman-Yor nodes with table counts (posterior factors, a customer's seat, eq. 3-5)
    burst.py    the burstiness front end (eq. 6-7)
    hyper.py    hyper-parameter densities for slice sampling

Stirling numbers: topictool/kernels/stirling.py; slice sampler: topictool/kernels/slice.py;
burst-aware document completion: topictool/evaluate/burst_completion.py.
"""
