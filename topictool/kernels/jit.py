"""``no_nrt``: the decorator of kernels whose loops must not pay numba's reference counts.

numba's runtime (NRT) counts the references to every array a jitted function binds: an atomic
increment and decrement for each array argument of a helper each time it is entered, and for
each row view (``A[w]``) taken. In a loop over tokens or documents that can be a large part of
the work: at one thread, 5-19 % of lda-scvb0, hdp-gibbs, lida-gibbs, nplda-gibbs and
hdp-pcsvb0's training time on the movie reviews, and a fifth of a 64-lane lda-gibbs sweep
(docs/benchmarks.md, "Reference counts"). On several threads the counts of a shared array also
bounce its cache line between the cores.

A ``no_nrt`` kernel does none of it. It must not allocate (no ``np.empty``, no ``.copy()``: numba
refuses to compile one that does): its caller hands it its scratch and keeps every array alive
while it runs. ``_nrt`` is numba's own switch for this (a private option, set on every kernel it
compiles without the runtime).
"""

import numba

no_nrt = numba.njit(cache=True, nogil=True, _nrt=False)
no_nrt_fastmath = numba.njit(cache=True, nogil=True, fastmath=True, _nrt=False)
#: a helper inlined into no_nrt loops (one that called it instead would pass its arrays field by field)
no_nrt_inline = numba.njit(cache=True, nogil=True, _nrt=False, inline="always")
