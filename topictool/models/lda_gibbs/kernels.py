"""Collapsed Gibbs sweeps for LDA with Mallet's SparseLDA bucket decomposition.

The collapsed conditional of token i (word w, document d), counts without token i:

    p(z_i = k | rest)  ∝  (alpha_k + n_dk) (beta + n_kw) / (beta W + n_k)                 (1)

SparseLDA (Yao, Mimno & McCallum 2009) splits (1) into three buckets

    s_k = alpha_k beta / (beta W + n_k)            smoothing only: changes only with n_k
    r_k = n_dk beta / (beta W + n_k)               document-topic: non-zero for the document's topics
    q_k = (alpha_k + n_dk) n_kw / (beta W + n_k)   topic-word: non-zero for the word's topics

and keeps s = sum s_k up to date incrementally, r = sum r_k per document, and the
coefficient c_k = (alpha_k + n_dk) / (beta W + n_k) cached for every topic, so
q = sum over the word's non-zero topics of c_k n_kw. A uniform draw u (s + r + q)
falls in q most of the time (it holds almost all the mass once topics have formed),
and q is walked from the word's largest count down. (The partitioned schedule's short row visits
keep neither r nor c_k: `_sample_row_tokens`, below.)

Layout (Mallet's `typeTopicCounts`): word w owns the slots tw[tw_ptr[w] : tw_ptr[w+1]],
as many as min(frequency of w, K). Each used slot packs ``count << TB | topic``
(TB = topic bits); used slots come first, sorted by packed value descending, i.e. by
count and then by topic, and empty slots are 0. Because packed values of a word are
distinct, the order is canonical: rebuilding the lists from the assignments gives the
same arrays bit for bit, which is what makes resume exact. Document-topic counts are
not stored as a D x K table by one thread: its sweep rebuilds each document's counts from its
assignments when it reaches it (as Mallet does); the partitioned schedule's cells keep them
between rounds in dense int16 rows per document where those are small against the tokens, else
packed in per-thread caches (below).

Why this sampler (measured on the movie-review corpus, D=2000, W=14753, N=662825,
K=100, alpha=0.1, beta=0.01, one core of a 2-core AMD EPYC VM, numba 0.68; whole
sweeps from the same state after 100 warm-up sweeps, median of 15):

    SparseLDA, this module (Mallet's layout)          13.4-13.6 M tokens/s
      (slower while topics form: 6.8 M at sweep 2, 10.4 M at 10, 12 M at 25)
    dense SIMD: c_k (beta + n_kw) over all K, float32,
      blocked prefix sums, W x K table                 3.8-5.4 M
    alias-table Metropolis-Hastings (LightLDA cycle:
      word proposal from a stale alias table,
      then a doc proposal)                             6.2 M with 1 MH cycle per token,
                                                       4.6 M with 2; and it mixes worse:
                                                       log p(w,z)/N after 200 sweeps -9.59
                                                       against -9.33 for exact Gibbs
The sparse sampler wins at K=100 because, once topics form, a word has few topics
(11 on average per token here) and 98% of draws land in q after ~2.7 steps of the
walk; its advantage grows with K. Variants measured and dropped: four partial sums
for q (to break the add chain; no gain), a table of 1/(beta W + n) instead of the two
divisions per token (no gain), fastmath / error_model="numpy" (within noise).
The figures come from scripts/bench/lda_speed_probe.py (``--sampler dense|alias``
runs the alternatives).

Since then (2026-11-25, same VM; the 10M-token `synth lda` corpus of docs/benchmarks.md,
W=20,000, and the movie reviews as prepared there; one thread, K=100):
- the next token's slots are prefetched (kernels/prefetch.py) while the current token is
  sampled: the lists of a large vocabulary do not stay in the core's caches, and the
  branchy loops keep the CPU from running ahead to them. Steady state on the 10M corpus
  12.2 -> 15.5 M tokens/s; the first 20 sweeps from the random start 6.0 -> 7.5 M.
- q is summed with the token's own slot discounted in place, as running sums: the slots
  move only when the topic changes (one moves down, one up), and the draw is found by
  comparing against the running sums (bisection over long lists) instead of subtracting
  along them. Movie reviews steady state 14.1 -> 15.4 M tokens/s.
Tried and dropped on the way: summing q two slots at a time, a branch-free bisection,
swap-removal from the document's topic list (each within noise). Where the first sweeps
of a large corpus still go: a word has most of the K topics (93 slots per token at sweep
1, 47 at sweep 8, 23 at sweep 20), and the pass over its slots costs about 1 ns a slot
even in cache; tomotopy's dense AVX-512 sampler costs the same per token at any sweep.

Threads: the partitioned schedule's kernels (`sample_cell`, `dense_cell`,
`sweep_partitioned_thread`) are below, and model.py's docstring explains the schedule. The
AD-LDA schedule (``schedule=copy-merge``; Newman et al. 2009, as Mallet's WorkerRunnable)
cuts the documents into contiguous blocks of about equal token counts; `sample_block` samples
block t against its own copy of the word lists and topic totals with RNG row t, and
`merge_words` then adds the copies' changes to the global counts and hands every thread the
merged, canonical lists. Nothing depends on thread scheduling, so the
same (seed, threads) gives the same result. Two threads on the same machine and
state: 22.7 M tokens/s (1.79x one thread's 12.7 M in that run; sweep 26.5 ms + merge
2.7 ms), measured with the four-partial-sums q loop mentioned above. Each thread draws
from a private copy of its RNG row: the rows of the (threads, 4) state array share a
cache line, and writing them on every draw held two threads to 15.8 M. The price of AD-LDA is staleness: a block
sees the other blocks' counts as of the start of the sweep. On the movie corpus (K=100)
two threads reach a training log p(w,z)/N about 0.1 nats below one thread at the same
sweep (-9.44 against -9.33 after 200 sweeps; four threads 0.17 below after 100);
running the same two blocks one after the other on shared counts closes the gap, so
it is the staleness and not the merge.
"""

import math

import numba
import numpy as np

from ...kernels.jit import no_nrt, no_nrt_fastmath, no_nrt_inline  # the document loops: no reference counts
from ...kernels.partition import first_at_least as _first_at_least
from ...kernels.prefetch import prefetch
from ...kernels.rng import uniform
from ...kernels.sums import sum8
from ...threads import finish_part, next_round, take_part

RUN_SCAN = 32  # _run_end: tokens scanned in order before bisecting


def topic_bits(K):
    """Bits needed for a topic index 0..K-1 (at least 1)."""
    return max(1, int(K - 1).bit_length())


def packed_dtype(K, max_word_frequency):
    """int32 when a count of ``max_word_frequency`` fits beside the topic bits, else int64."""
    if max_word_frequency < (1 << (31 - topic_bits(K))):
        return np.int32
    return np.int64


@numba.njit(cache=True, nogil=True)
def word_frequencies(words, W):
    """Tokens of every word, int64 (W); np.bincount would first copy the ids to 8 bytes each."""
    freq = np.zeros(W, np.int64)
    for i in range(words.shape[0]):
        freq[words[i]] += 1
    return freq


def word_slots(freq, K):
    """tw_ptr int64 (W+1): word w gets min(frequency, K) slots."""
    ptr = np.zeros(len(freq) + 1, dtype=np.int64)
    np.cumsum(np.minimum(freq, K), out=ptr[1:])
    return ptr


# n_kw and n_k from the assignments, in the packed sorted layout of the module docstring. The
# counts of a run of words are gathered in a dense table of at most ``budget`` bytes, one pass
# over the tokens per run: no per-token scratch (a sort order would cost 8 bytes a token, more
# than the model itself holds), and one pass in all while W x K x 4 fits the budget.
@numba.njit(cache=True, nogil=True)
def build_counts(words, z, tw_ptr, tw, n_k, TB, budget=1 << 24):
    """Fill tw (zeroed first) and n_k from (words, z)."""
    W = tw_ptr.shape[0] - 1
    K = n_k.shape[0]
    N = words.shape[0]
    n_k[:] = 0
    tw[:] = 0
    rows = max(1, min(W, budget // (4 * K)))
    dense = np.zeros(rows * K, np.int32)
    buf = np.empty(K, tw.dtype)
    for w0 in range(0, W, rows):
        w1 = min(W, w0 + rows)
        dense[:] = 0
        for i in range(N):
            w = np.int64(words[i])
            if w0 <= w < w1:
                dense[(w - w0) * K + z[i]] += 1
        for w in range(w0, w1):
            m = 0
            o = (w - w0) * K
            for k in range(K):
                c = dense[o + k]
                if c > 0:
                    buf[m] = (np.int64(c) << TB) | k
                    n_k[k] += c
                    m += 1
            _write_sorted(tw, tw_ptr[w], tw_ptr[w + 1], buf, m)


@numba.njit(cache=True, nogil=True, inline="always")
def _write_sorted(tw, lo, hi, buf, m):
    """Write buf[:m] into tw[lo:hi] sorted descending, zeros after."""
    b = buf[:m]
    b.sort()
    for j in range(m):
        tw[lo + j] = b[m - 1 - j]
    for j in range(lo + m, hi):
        tw[j] = 0


# A word's counts are rebuilt (merge, MPI exchange) in a scratch table: scratch[k] the count of
# topic k, seen[:m] the topics touched (mark[k] set), then packed back sorted by _flush_word.
@numba.njit(cache=True, nogil=True, inline="always")
def _accumulate(k, d, scratch, mark, seen, m):
    """scratch[k] += d, noting k in seen the first time; returns m."""
    scratch[k] += d
    if not mark[k]:
        mark[k] = True
        seen[m] = k
        m += 1
    return m


@numba.njit(cache=True, nogil=True, inline="always")
def _add_packed(slots, lo, hi, mask, TB, factor, scratch, mark, seen, m):
    """Add factor x the counts packed in slots[lo:hi] (up to the first empty one); returns m."""
    for j in range(lo, hi):
        e = slots[j]
        if e == 0:
            break
        m = _accumulate(e & mask, factor * (e >> TB), scratch, mark, seen, m)
    return m


@numba.njit(cache=True, nogil=True, inline="always")
def _flush_word(tw, lo, hi, buf, TB, scratch, mark, seen, m):
    """Pack the positive scratch counts of seen[:m] into tw[lo:hi], sorted; clear scratch and mark."""
    n = 0
    for j in range(m):
        k = seen[j]
        if scratch[k] > 0:
            buf[n] = (scratch[k] << TB) | k
            n += 1
        scratch[k] = 0
        mark[k] = False
    _write_sorted(tw, lo, hi, buf, n)


# The sweep's three steps for one document, shared by both schedules (sample_block: whole
# documents; sample_cell: a document's tokens of one word block at a time). The document's
# topic counts n_dk live in ndk (dense, K) and its topics with n_dk > 0 in nz[:nnz].


@numba.njit(cache=True, nogil=True, inline="always")
def _open_document(nz, nnz, ndk, inv, coef, alpha, beta):
    """Given ndk and nz[:nnz] of a document: c_k for its topics, and its r = sum r_k."""
    r = 0.0
    for j in range(nnz):
        k = nz[j]
        r += beta * ndk[k] * inv[k]
        coef[k] = (alpha[k] + ndk[k]) * inv[k]
    return r


@numba.njit(cache=True, nogil=True, inline="always")
def _close_document(nz, nnz, ndk, inv, coef, alpha):
    """Back to no document: ndk all zero, c_k = alpha_k / (beta W + n_k)."""
    for j in range(nnz):
        k = nz[j]
        ndk[k] = 0
        coef[k] = alpha[k] * inv[k]


@numba.njit(cache=True, nogil=True, inline="always")
def _count_document(z, a, b, ndk, nz):
    """ndk and nz (in order of first appearance) from the assignments z[a:b]; returns nnz."""
    for i in range(a, b):
        ndk[z[i]] += 1
    nnz = 0
    for i in range(a, b):
        k = z[i]
        if ndk[k] > 0:  # first token of topic k in this document: list it, flag by sign
            nz[nnz] = k
            nnz += 1
            ndk[k] = -ndk[k]
    for j in range(nnz):
        ndk[nz[j]] = -ndk[nz[j]]
    return nnz


@numba.njit(cache=True, nogil=True, inline="always")
def _prefetch_slots(tw_ptr, tw, w):
    """Start loading word w's slots: the lists of a large vocabulary are beyond the caches, and the
    branchy sampling loop keeps the CPU from running ahead to them."""
    nb = tw_ptr[w]
    ne = tw_ptr[w + 1]
    while nb < ne:
        prefetch(tw, nb)
        nb += 16


@numba.njit(cache=True, nogil=True, inline="always")
def _q_slot(qs, used, u):
    """The q bucket's slot for u < qs[used - 1]: the first whose running sum exceeds u (a slot of no
    mass is never chosen: its running sum equals the one before). Once topics have formed it is
    among the first few (largest counts first); while a word still has many topics, bisection
    saves a long walk."""
    if used <= 16:
        j = 0
        while j < used - 1 and qs[j] <= u:
            j += 1
        return j
    lo = 0
    hi = used - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if qs[mid] <= u:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True, inline="always")
def _q_sums(tw, base, cap, t, TB, coef, alpha, ndk, inv, qs, at_slots):
    """q as running sums over the word's slots, qs[j] the sum up to slot j, with the token being
    sampled (old topic t) taken out of its own slot's count in the sum only: the lists change only
    when the topic does, and then one slot moves down and another up (an unchanged topic, the
    common case once topics have formed, costs no list update at all). c_k is coef[k], or made at
    the slot (at_slots: the row cells, which keep no coef; a constant once inlined, so each caller
    compiles one loop). Returns (q, used slots, the old topic's slot)."""
    mask = (1 << TB) - 1
    q = 0.0
    j = 0
    jt = 0
    while j < cap:
        e = tw[base + j]
        if e == 0:
            break
        k = e & mask
        n = e >> TB
        if k == t:
            n -= 1
            jt = j
        if at_slots:
            q += (alpha[k] + ndk[k]) * inv[k] * n
        else:
            q += coef[k] * n
        qs[j] = q  # running sums: the search compares instead of subtracting
        j += 1
    return q, j, jt


@numba.njit(cache=True, nogil=True, inline="always")
def _s_topic(u, alpha, beta, inv):
    """The s bucket's topic for u < s: all topics, in order."""
    K = inv.shape[0]
    k = 0
    while k < K - 1:
        u -= alpha[k] * beta * inv[k]
        if u < 0.0:
            break
        k += 1
    return k


@numba.njit(cache=True, nogil=True, inline="always")
def _move_token(tw, base, cap, jt, j, k, mask, one):
    """A token of the word whose slots start at base leaves its old topic (slot jt) for topic k,
    in slot j if the q bucket drew it, else -1. n_tw -= 1 for the old topic: its slot moves down
    (or leaves, at zero), and the slots it passes move up by one, the new topic's perhaps among
    them; then n_kw += 1."""
    _slot_decrement_at(tw, base, cap, jt, one)
    if j > jt and (tw[base + j] == 0 or (tw[base + j] & mask) != k):
        j -= 1
    if j < 0:
        _slot_increment(tw, base, cap, k, mask, one)
    else:
        _slot_increment_at(tw, base, j, tw[base + j] + one)


# Eq. (1) by the s/r/q buckets of the module docstring for tokens a..b-1 of one document.
# Inlined into the no_nrt document loops (kernels/jit.py): a call instead passes its 15 arrays field
# by field at every visit (0.96-0.98x the CPU inlined).
@no_nrt_inline
def _sample_tokens(a, b, words, z, tw_ptr, tw, n_k, alpha, beta, wbeta, inv, coef, qs, ndk, nz, nnz, s, r, gen, TB):
    """Resample z[a:b], updating tw, n_k, ndk, nz, inv and coef; returns (s, r, nnz). With an
    empty nz (a long visit of a row cell, _row_visits) no list of the document's topics is kept:
    the r bucket walks its dense row instead."""
    mask = (1 << TB) - 1
    one = 1 << TB
    listed = nz.shape[0] > 0
    for i in range(a, b):
        w = words[i]
        t = np.int64(z[i])
        base = tw_ptr[w]
        cap = tw_ptr[w + 1] - base
        if i + 1 < b:  # the next token's list, while this one is sampled
            _prefetch_slots(tw_ptr, tw, words[i + 1])
        # Take token i out of s, r, c_t and n_k. (The same updates with the opposite sign
        # put it back below: written out twice on purpose, in the tool's hottest loop,
        # rather than behind a helper that would have to return s and r.)
        iv = inv[t]
        s -= alpha[t] * beta * iv
        r -= beta * ndk[t] * iv
        ndk[t] -= 1
        n_k[t] -= 1
        iv = 1.0 / (wbeta + n_k[t])
        inv[t] = iv
        s += alpha[t] * beta * iv
        r += beta * ndk[t] * iv
        coef[t] = (alpha[t] + ndk[t]) * iv
        if listed and ndk[t] == 0:
            j = 0
            while nz[j] != t:
                j += 1
            nnz -= 1
            while j < nnz:
                nz[j] = nz[j + 1]
                j += 1
        q, used, jt = _q_sums(tw, base, cap, t, TB, coef, alpha, ndk, inv, qs, False)
        u = uniform(gen, 0) * (s + r + q)
        if u < q:
            j = _q_slot(qs, used, u)
            k = tw[base + j] & mask
        else:
            u -= q
            j = -1  # the new topic's slot, found below if it changed
            if u < r and listed:
                # r bucket: the document's topics.
                jr = 0
                while jr < nnz - 1:
                    k = nz[jr]
                    u -= beta * ndk[k] * inv[k]
                    if u < 0.0:
                        break
                    jr += 1
                k = nz[jr]
            elif u < r:
                # r bucket, no list: the topics of the dense row, in topic order (r > 0 means
                # one has n_dk > 0; the old topic only stands in for a rounding residue of r)
                k = t
                for kk in range(n_k.shape[0]):
                    if ndk[kk] > 0:
                        k = kk
                        u -= beta * ndk[kk] * inv[kk]
                        if u < 0.0:
                            break
            else:
                k = _s_topic(u - r, alpha, beta, inv)
        if k != t:
            _move_token(tw, base, cap, jt, j, k, mask, one)
            t = k
        z[i] = t
        # Put token i back with its new topic.
        iv = inv[t]
        s -= alpha[t] * beta * iv
        r -= beta * ndk[t] * iv
        ndk[t] += 1
        n_k[t] += 1
        iv = 1.0 / (wbeta + n_k[t])
        inv[t] = iv
        s += alpha[t] * beta * iv
        r += beta * ndk[t] * iv
        coef[t] = (alpha[t] + ndk[t]) * iv
        if listed and ndk[t] == 1:
            nz[nnz] = t
            nnz += 1
    return s, r, nnz


@numba.njit(cache=True, nogil=True, inline="always")
def _inverse_totals(n_k, alpha, beta, wbeta, inv):
    """inv_k = 1 / (beta W + n_k), and returns the smoothing mass s = sum_k alpha_k beta inv_k."""
    s = 0.0
    for k in range(n_k.shape[0]):
        inv[k] = 1.0 / (wbeta + n_k[k])
        s += alpha[k] * beta * inv[k]
    return s


@numba.njit(cache=True, nogil=True, inline="always")
def _smoothing(n_k, alpha, beta, wbeta, inv, coef):
    """inv_k = 1 / (beta W + n_k), c_k = alpha_k inv_k (no document), and returns s."""
    s = _inverse_totals(n_k, alpha, beta, wbeta, inv)
    for k in range(n_k.shape[0]):
        coef[k] = alpha[k] * inv[k]
    return s


@numba.njit(cache=True, nogil=True)
def sample_block(token_ptr, words, z, tw_ptr, tw, n_k, alpha, beta, rng, row, d0, d1, TB):
    """One Gibbs sweep over documents [d0, d1), updating z, tw and n_k in place."""
    K = n_k.shape[0]
    # inv = 1 / (beta W + n_k), coef: c_k = (alpha_k + n_dk) / (beta W + n_k), qs: running sums of
    # the current word's q terms, in slot order
    scratch = np.empty((3, K))
    ndk = np.zeros(K, np.int32)  # the current document's topic counts
    nz = np.empty(K, np.int32)  # the current document's topics with n_dk > 0
    # A private copy of this thread's RNG row: rows of one array share a cache line,
    # and threads writing to it on every draw would slow each other down.
    gen = rng[row : row + 1].copy()
    _block_documents(token_ptr, words, z, tw_ptr, tw, n_k, alpha, beta, d0, d1, TB, scratch, ndk, nz, gen)
    rng[row, :] = gen[0, :]


@no_nrt
def _block_documents(token_ptr, words, z, tw_ptr, tw, n_k, alpha, beta, d0, d1, TB, scratch, ndk, nz, gen):
    """sample_block's documents, given its scratch."""
    wbeta = (tw_ptr.shape[0] - 1) * beta
    inv, coef, qs = scratch[0], scratch[1], scratch[2]
    s = _smoothing(n_k, alpha, beta, wbeta, inv, coef)
    for d in range(d0, d1):
        a = token_ptr[d]
        b = token_ptr[d + 1]
        nnz = _count_document(z, a, b, ndk, nz)
        r = _open_document(nz, nnz, ndk, inv, coef, alpha, beta)
        s, r, nnz = _sample_tokens(
            a, b, words, z, tw_ptr, tw, n_k, alpha, beta, wbeta, inv, coef, qs, ndk, nz, nnz, s, r, gen, TB
        )
        _close_document(nz, nnz, ndk, inv, coef, alpha)


# ---------------------------------------------------------------------------------------------
# The partitioned schedule (model.py's docstring): thread t samples the cell (its documents,
# word block (t + r) mod T) in round r. Tokens of a document are sorted by word id (the corpus
# stores rows in ascending word order), so a cell of a document is one run of its tokens,
# found by bisection. A document's topic counts are needed in every round, so between rounds
# they wait in the thread's cache, packed ``count << TB | topic`` in min(length, K) slots per
# document (the first empty slot ends the list): O(topics of the document) to restore instead
# of O(length) to recount.


@numba.njit(cache=True, nogil=True, inline="always")
def _sort_topics(nz, nnz):
    """nz[:nnz] in ascending order (insertion sort: the lists are short and mostly in order)."""
    for j in range(1, nnz):
        k = nz[j]
        i = j - 1
        while i >= 0 and nz[i] > k:
            nz[i + 1] = nz[i]
            i -= 1
        nz[i + 1] = k


@numba.njit(cache=True, nogil=True, inline="always")
def _cell_tokens(words, a, b, w0, w1, first, cursor, j):
    """The run [i0, i1) of document tokens a..b-1 whose word is in [w0, w1); cursor[j] keeps where
    the next word block's run starts (the blocks are visited in ascending order, wrapping once;
    the chunk's first round finds its runs by bisection)."""
    if first:
        i0 = _first_at_least(words, a, b, w0)
    elif w0 == 0:
        i0 = a
    else:
        i0 = a + cursor[j]
    i1 = _run_end(words, i0, b, w1)
    cursor[j] = i1 - a
    return i0, i1


@numba.njit(cache=True, nogil=True, inline="always")
def _run_end(words, i, b, w1):
    """The first j in [i, b) with words[j] >= w1 (b if none); words[i:b] ascending. A cell's run
    of a document is short when the lanes are many (a few tokens at 16 or 64), so its first
    RUN_SCAN tokens are scanned in order, the tokens the sampler reads next anyway; bisection
    only beyond them."""
    stop = min(i + RUN_SCAN, b)
    while i < stop:
        if words[i] >= w1:
            return i
        i += 1
    return _first_at_least(words, i, b, w1)


@numba.njit(cache=True, nogil=True)
def sample_cell(
    token_ptr, words, z, tw_ptr, tw, n_k, alpha, beta, rng, row, d0, d1, w0, w1, first, fresh, keep, sort,
    cache, cursor, TB,
):  # fmt: skip
    """Resample the tokens of documents [d0, d1) whose word is in [w0, w1), against n_k (this
    thread's copy of the topic totals) and the shared tw (no other thread touches these words'
    lists in this round). first: the chunk's first round. fresh: count the documents from z
    (a chunk's first round, unless the cache outlives the sweep), else restore them from
    ``cache``. keep: write the documents' counts back to the cache (not in a chunk's last round
    when nobody reads it then). sort: the documents' topics in topic order, both when counted
    and when written (a cache that outlives the sweep: a resumed run, which counts afresh, then
    walks a document's topics in the order the straight run restores them). cursor[d - d0]:
    where the document's tokens of the next word block start."""
    K = n_k.shape[0]
    scratch = np.empty((3, K))
    ndk = np.zeros(K, np.int32)
    nz = np.empty(K, np.int32)
    gen = rng[row : row + 1].copy()
    _cell_documents(
        token_ptr, words, z, tw_ptr, tw, n_k, alpha, beta, d0, d1, w0, w1, first, fresh, keep, sort, cache, cursor,
        TB, scratch, ndk, nz, gen,
    )  # fmt: skip
    rng[row, :] = gen[0, :]


@no_nrt
def _cell_documents(
    token_ptr, words, z, tw_ptr, tw, n_k, alpha, beta, d0, d1, w0, w1, first, fresh, keep, sort, cache, cursor, TB,
    scratch, ndk, nz, gen,
):  # fmt: skip
    """sample_cell's documents, given its scratch."""
    K = n_k.shape[0]
    wbeta = (tw_ptr.shape[0] - 1) * beta
    inv, coef, qs = scratch[0], scratch[1], scratch[2]
    s = _smoothing(n_k, alpha, beta, wbeta, inv, coef)
    mask = (1 << TB) - 1
    slot = 0
    for d in range(d0, d1):
        a = token_ptr[d]
        b = token_ptr[d + 1]
        cap = min(b - a, K)
        i0, i1 = _cell_tokens(words, a, b, w0, w1, first, cursor, d - d0)
        if i0 == i1 and not fresh:  # no token of the document in this word block
            slot += cap
            continue
        r = 0.0
        if fresh:
            nnz = _count_document(z, a, b, ndk, nz)
            if sort:
                _sort_topics(nz, nnz)
            r = _open_document(nz, nnz, ndk, inv, coef, alpha, beta)
        else:  # restore n_dk, nz and c_k from the cache (_open_document, fused)
            nnz = 0
            while nnz < cap and cache[slot + nnz] != 0:
                e = cache[slot + nnz]
                k = e & mask
                n = e >> TB
                ndk[k] = n
                nz[nnz] = k
                r += beta * n * inv[k]
                coef[k] = (alpha[k] + n) * inv[k]
                nnz += 1
        s, r, nnz = _sample_tokens(
            i0, i1, words, z, tw_ptr, tw, n_k, alpha, beta, wbeta, inv, coef, qs, ndk, nz, nnz, s, r, gen, TB
        )
        if keep:
            if sort:  # the restored order, with this visit's new topics at the end: few moves
                _sort_topics(nz, nnz)
            for j in range(nnz):
                k = nz[j]
                cache[slot + j] = (np.int64(ndk[k]) << TB) | k
            if nnz < cap:
                cache[slot + nnz] = 0
        _close_document(nz, nnz, ndk, inv, coef, alpha)
        slot += cap


LONG_VISIT = 64  # tokens: a row cell's visit from this many on opens the row (below)


# The products n_dk inv_k go through qs (free between tokens), so that both loops are elementwise
# (vectorised) and r is summed by sum8, eight independent chains in a fixed order: 36 ns a visit at
# K = 100 where four running sums over the row took 65. A fastmath sum was 29 ns but not the same
# bits from run to run (kernels/sums.py).
@numba.njit(cache=True, nogil=True, inline="always")
def _open_row(ndk, inv, coef, qs, alpha, beta):
    """c_k for all K topics of a document's dense row, and its r = sum_k r_k."""
    K = inv.shape[0]
    for k in range(K):
        coef[k] = (alpha[k] + ndk[k]) * inv[k]
        qs[k] = ndk[k] * inv[k]
    return beta * sum8(qs, K)


# The rows variant of the cells (model.py's docstring): where a dense row of n_dk per document
# (int16, D x K) weighs little against the tokens, it replaces the cache, so a visit restores
# nothing and closes nothing. A row is a function of z alone (fill_rows), so a resumed run has the
# rows of the straight one and the cells need no flags.
#
# A short visit computes nothing over the K topics either. A document is visited once per word
# block, 3 to 4.5 tokens a visit at 64 lanes, and computing c_k for all K topics and summing r over
# the row cost about 37 ns a visit, a quarter of one thread's sweep at 64 lanes. So a visit of
# fewer than LONG_VISIT tokens computes c_k at the slots the q walk reads and draws the r bucket by
# rejection against a bound that needs no sum; a longer one opens the row (_open_row) and samples
# as one thread does, with the row's r bucket walked in topic order (_sample_tokens without a
# list): the redraws and the c_k made at every slot cost a long visit more than the opening (with
# rejection everywhere, 1.067x the CPU a sweep at 2 threads on state_union, 1,200 tokens a visit).
#
# The rejection: with m = n_min + beta W for a lower bound n_min of the totals (inv_k <= 1 / m),
# r_k = beta n_dk inv_k <= beta n_dk / m, whose sum is R = beta (n_d - 1) / m. A draw over s + R + q
# that lands in R picks topic k with probability n_dk / (n_d - 1) (a walk of the row) and keeps it
# with probability inv_k m; a topic not kept redraws from scratch. Given a draw is kept, k has
# probability s_k + r_k + q_k over their sum: exactly eq. (1). r holds 3.1 % of the mass and R 4.7 %
# on the movie reviews after 100 sweeps (about 1.6 % of draws redrawn), 0.22 % and 0.26 % on the
# 10M-token synthetic corpus after 30, but R 12 % against r 4.9 % on state_union and 36 % against
# 6.2 % on webtext (a /tmp probe, K = 100): the bound is loose where some topic is small or a
# document's tokens sit in large ones, which is where visits are long.
@no_nrt_inline
def _sample_row_tokens(a, b, nd, words, z, tw_ptr, tw, n_k, alpha, beta, wbeta, inv, qs, ndk, s, low, gen, TB):
    """Resample z[a:b] of a document with nd + 1 tokens and dense row ndk, updating tw, n_k, ndk and
    inv; low: a lower bound of min_k n_k. Returns (s, low)."""
    mask = (1 << TB) - 1
    one = 1 << TB
    for i in range(a, b):
        w = words[i]
        t = np.int64(z[i])
        base = tw_ptr[w]
        cap = tw_ptr[w + 1] - base
        if i + 1 < b:
            _prefetch_slots(tw_ptr, tw, words[i + 1])
        iv = inv[t]  # token i out of s, n_dk and n_k
        s -= alpha[t] * beta * iv
        ndk[t] -= 1
        n_k[t] -= 1
        low = min(low, n_k[t])
        iv = 1.0 / (wbeta + n_k[t])
        inv[t] = iv
        s += alpha[t] * beta * iv
        q, used, jt = _q_sums(tw, base, cap, t, TB, inv, alpha, ndk, inv, qs, True)  # c_k made at each slot
        m = wbeta + low
        bound = beta * nd / m  # R
        while True:
            u = uniform(gen, 0) * (s + bound + q)
            j = -1  # the new topic's slot, if the q bucket draws it
            if u < q:
                j = _q_slot(qs, used, u)
                k = tw[base + j] & mask
                break
            u -= q
            if u >= bound:
                k = _s_topic(u - bound, alpha, beta, inv)
                break
            v = min(np.int64(u / bound * nd), nd - 1)  # the R bucket: k with probability n_dk / nd
            k = 0
            c = np.int64(ndk[0])
            while c <= v:
                k += 1
                c += ndk[k]
            if uniform(gen, 0) * (wbeta + n_k[k]) < m:  # kept with probability inv_k m
                break
        if k != t:
            _move_token(tw, base, cap, jt, j, k, mask, one)
            t = k
        z[i] = t
        iv = inv[t]  # token i back with its new topic
        s -= alpha[t] * beta * iv
        ndk[t] += 1
        n_k[t] += 1
        iv = 1.0 / (wbeta + n_k[t])
        inv[t] = iv
        s += alpha[t] * beta * iv
    return s, low


@numba.njit(cache=True, nogil=True)
def row_cell(token_ptr, words, z, tw_ptr, tw, n_k, alpha, beta, rng, row, d0, d1, w0, w1, first, rows, cursor, TB):
    """sample_cell with the documents' dense rows of n_dk (rows[d], updated in place) instead of
    the cache: the same cell and cursors, eq. (1) drawn with the R bucket's rejection."""
    K = n_k.shape[0]
    _row_cell_in(
        token_ptr, words, z, tw_ptr, tw, n_k, alpha, beta, rng, row, d0, d1, w0, w1, first, rows, cursor, TB,
        np.empty((3, K)), np.empty((1, 4), np.uint64), np.empty(0),
    )  # fmt: skip


@no_nrt
def _row_cell_in(
    token_ptr, words, z, tw_ptr, tw, n_k, alpha, beta, rng, row, d0, d1, w0, w1, first, rows, cursor, TB, scratch,
    gen, smooth,
):  # fmt: skip
    """row_cell in the caller's scratch (inv, coef, qs) and stream row: a thread of the partitioned sweep
    makes them once a sweep, not once a cell (three allocations a cell were 12,000 a sweep at 64
    threads). smooth: the round's inv_k and s (round_smoothing of n_k), or an empty array to
    compute them here."""
    for j in range(4):
        gen[0, j] = rng[row, j]
    _row_visits(
        token_ptr, words, z, tw_ptr, tw, n_k, alpha, beta, d0, d1, w0, w1, first, rows, cursor, TB, scratch, gen,
        smooth,
    )  # fmt: skip
    for j in range(4):
        rng[row, j] = gen[0, j]


@numba.njit(cache=True, nogil=True)
def round_smoothing(n_k, alpha, beta, wbeta, smooth):
    """smooth[:K] = inv_k and smooth[K] = s of _smoothing, for every cell of a round: all the
    lanes' copies of the totals start a round equal to n_k, so the cells need not each compute
    them (K divisions a cell: 4,096 cells a sweep at 64 lanes). The same code, so the same bits."""
    K = n_k.shape[0]
    smooth[K] = _inverse_totals(n_k, alpha, beta, wbeta, smooth[:K])


# A visit's row and run are prefetched VISITS_AHEAD visits before it: on a large corpus the rows
# (D x K) and the tokens are far beyond the caches, and a document's run is a jump from the last
# one's, which the hardware's prefetcher does not follow. A visit of a 64-lane sweep is short (3 to
# 4.5 tokens): one visit ahead cost 1.081x the CPU a sweep of four ahead, and 1.077x of two ahead,
# on the 10M-token synthetic corpus at 64 threads.
VISITS_AHEAD = 4


@numba.njit(cache=True, nogil=True, inline="always")
def _prefetch_visit(token_ptr, words, z, rows, cursor, d, j, first):
    """Start loading document d's row and, past a chunk's first round, its run (cursor[j])."""
    row = rows[d]
    for k in range(0, row.shape[0], 32):  # 64-byte lines of int16
        prefetch(row, k)
    if not first:
        run = token_ptr[d] + cursor[j]
        prefetch(words, run)
        prefetch(z, run)


@numba.njit(cache=True, nogil=True, inline="always")
def _lowest(low, n_k):
    """min(low, min_k n_k)."""
    for k in range(n_k.shape[0]):
        low = min(low, n_k[k])
    return low


@no_nrt
def _row_visits(
    token_ptr, words, z, tw_ptr, tw, n_k, alpha, beta, d0, d1, w0, w1, first, rows, cursor, TB, scratch, gen, smooth,
):  # fmt: skip
    """row_cell's documents, given its scratch (inv_k, c_k and the q walk's running sums)."""
    wbeta = (tw_ptr.shape[0] - 1) * beta
    inv, coef, qs = scratch[0], scratch[1], scratch[2]
    no_list = cursor[:0]  # a long visit walks the row, not a list of the document's topics
    K = n_k.shape[0]
    if smooth.shape[0] > 0:
        for k in range(K):
            inv[k] = smooth[k]
        s = smooth[K]
    else:
        s = _inverse_totals(n_k, alpha, beta, wbeta, inv)
    low = _lowest(n_k[0], n_k)  # min_k n_k, then lowered as tokens leave topics (the R bucket's bound)
    for d in range(d0, min(d0 + VISITS_AHEAD, d1)):
        _prefetch_visit(token_ptr, words, z, rows, cursor, d, d - d0, first)
    for d in range(d0, d1):
        a = token_ptr[d]
        b = token_ptr[d + 1]
        if d + VISITS_AHEAD < d1:
            _prefetch_visit(token_ptr, words, z, rows, cursor, d + VISITS_AHEAD, d - d0 + VISITS_AHEAD, first)
        i0, i1 = _cell_tokens(words, a, b, w0, w1, first, cursor, d - d0)
        if i0 == i1:  # no token of the document in this word block
            continue
        ndk = rows[d]
        if i1 - i0 < LONG_VISIT:
            s, low = _sample_row_tokens(
                i0, i1, b - a - 1, words, z, tw_ptr, tw, n_k, alpha, beta, wbeta, inv, qs, ndk, s, low, gen, TB
            )
        else:
            r = _open_row(ndk, inv, coef, qs, alpha, beta)
            s, r, _ = _sample_tokens(
                i0, i1, words, z, tw_ptr, tw, n_k, alpha, beta, wbeta, inv, coef, qs, ndk, no_list, 0, s, r, gen, TB
            )
            low = _lowest(low, n_k)  # the visit's tokens left topics: the short visits' bound follows


@numba.njit(cache=True, nogil=True)
def fill_rows(token_ptr, z, rows):
    """rows[d, k] = n_dk from the assignments, in place. (models.base.doc_topic_counts gives the
    same counts, but through two int64 arrays a token, a D x K int64 bincount and an int32 copy:
    16 bytes a token and 6 times the int16 rows' bytes at once, where the rows are allowed 1.25.)"""
    rows[:] = 0
    for d in range(token_ptr.shape[0] - 1):
        for i in range(token_ptr[d], token_ptr[d + 1]):
            rows[d, z[i]] += 1


@numba.njit(cache=True, nogil=True)
def round_flags(r, lanes, chunks, cached):
    """sample_cell's (first, fresh, keep, sort) in round r of a chunk. With one chunk a thread's
    cache holds all its documents and outlives the sweep: the next sweep restores the documents
    instead of counting them from z (their tokens' topics read twice), so it is always kept, in
    topic order, and counted afresh only when not ``cached`` (the first sweep; a resumed run,
    whose counting in topic order gives what the straight run restores). With several chunks the
    cache serves one chunk's rounds, and its last round's writes are never read."""
    first = r == 0
    persist = chunks == 1
    fresh = first and not (persist and cached)
    keep = persist or r < lanes - 1
    return first, fresh, keep, persist


# One thread's share of a whole partitioned sweep, so that the sweep is one Workers.run however
# many rounds it has: the thread takes cells (lanes) of the current round from the pool
# (topictool/threads.py, RoundPool) until the schedule is over. Lane t samples against its own copy
# of the topic totals, totals[t, :K], which starts the round equal to n_k; the thread that finishes
# a round's last cell reconciles the copies into n_k and back into every copy (every other thread is
# waiting in take_part) and opens the next round. A cell depends only on its lane, never on the
# thread that runs it.
@numba.njit(cache=True, nogil=True)
def sweep_partitioned_thread(
    token_ptr, words, z, tw_ptr, tw, n_wk, totals, n_k, alpha, beta, rng, chunk_ptr, word_ptr, cache, rows,
    cursor, cached, memory, state, TB, smooth,
):  # fmt: skip
    """Cells of every chunk and round, as the pool hands them out, until the sweep is over; n_k and
    every lane's copy (each equal to n_k at the start) end as the reconciled totals. With a dense
    table n_wk (W x KP; an empty one for the sparse sampler) the cells are dense_cell's; with the
    documents' dense rows (an empty array for the caches) the sparse cells are row_cell's. cached:
    the caches hold the documents' counts from the last sweep (round_flags). smooth: for row cells,
    round_smoothing of n_k (made by the caller for the first round, then at every round's close),
    else empty."""
    T = chunk_ptr.shape[0]
    S = chunk_ptr.shape[1] - 1
    K = n_k.shape[0]
    copies = totals[:, :K]  # (totals' rows are padded)
    scratch, gen = np.empty((3, K)), np.empty((1, 4), np.uint64)  # row cells
    while True:
        rr, t = take_part(memory, state, T)
        if rr < 0:
            break
        c, r = rr // T, rr % T
        own = copies[t]
        b = (t + r) % T
        d0, d1, w0, w1 = chunk_ptr[t, c], chunk_ptr[t, c + 1], word_ptr[b], word_ptr[b + 1]
        first, fresh, keep, sort = round_flags(r, T, S, cached)
        if n_wk.shape[1] > 0:
            dense_cell(
                token_ptr, words, z, n_wk, own, alpha, beta, rng, t, d0, d1, w0, w1, first, fresh, keep, sort,
                cache[t], rows, cursor[t], TB,
            )  # fmt: skip
        elif rows.shape[0] > 0:
            _row_cell_in(
                token_ptr, words, z, tw_ptr, tw, own, alpha, beta, rng, t, d0, d1, w0, w1, first, rows, cursor[t], TB,
                scratch, gen, smooth,
            )  # fmt: skip
        else:
            sample_cell(
                token_ptr, words, z, tw_ptr, tw, own, alpha, beta, rng, t, d0, d1, w0, w1, first, fresh, keep, sort,
                cache[t], cursor[t], TB,
            )  # fmt: skip
        if finish_part(memory, state, T):  # once a round, by one thread
            reconcile_totals(n_k, copies)
            if smooth.shape[0] > 0:
                round_smoothing(n_k, alpha, beta, (tw_ptr.shape[0] - 1) * beta, smooth)
            next_round(memory, state)


@numba.njit(cache=True, nogil=True)
def reconcile_totals(n_k, n_k_local):
    """n_k += sum_t (n_k_local[t] - n_k): every thread's changes of a round; then every copy
    gets the result. Integers, so the order of the sum does not matter: it runs copy by copy,
    along the topics, where the additions vectorise (T x K of them; strided, by topic, they cost
    64 threads on two cores a fifth of a sweep when every thread summed them)."""
    T, K = n_k_local.shape[0], n_k.shape[0]
    total = np.empty(K, np.int64)
    for k in range(K):
        total[k] = n_k[k] * (1 - T)
    for t in range(T):
        copy = n_k_local[t]
        for k in range(K):
            total[k] += copy[k]
    for k in range(K):
        n_k[k] = total[k]
    for t in range(T):
        for k in range(K):
            n_k_local[t, k] = total[k]


# ---------------------------------------------------------------------------------------------
# The copy-merge schedule (AD-LDA): block t sampled against its own copy of the word lists.


# AD-LDA merge for the words [w0, w1): n_kw <- n_kw + sum_t (n_kw^(t) - n_kw), and every copy
# gets the result. The topic totals are merged by reconcile_totals.
@numba.njit(cache=True, nogil=True)
def merge_words(tw_ptr, tw, tw_local, w0, w1, TB):
    T = tw_local.shape[0]
    K = 1 << TB
    mask = K - 1
    scratch = np.zeros(K, np.int64)
    mark = np.zeros(K, np.bool_)
    seen = np.empty(K, np.int64)
    buf = np.empty(K, tw.dtype)
    for w in range(w0, w1):
        lo = tw_ptr[w]
        hi = tw_ptr[w + 1]
        # n_kw = sum_t tw_local[t] - (T - 1) tw: every thread's counts less the T - 1 extra copies
        m = _add_packed(tw, lo, hi, mask, TB, -(T - 1), scratch, mark, seen, 0)
        for t in range(T):
            m = _add_packed(tw_local[t], lo, hi, mask, TB, 1, scratch, mark, seen, m)
        _flush_word(tw, lo, hi, buf, TB, scratch, mark, seen, m)
        for t in range(T):
            for j in range(lo, hi):
                tw_local[t, j] = tw[j]


# Random initial assignments: z_i ~ Uniform{0..K-1}, block t from RNG row t.
@numba.njit(cache=True, nogil=True)
def init_assignments(token_ptr, block_ptr, z, rng, K):
    T = block_ptr.shape[0] - 1
    for t in range(T):
        for i in range(token_ptr[block_ptr[t]], token_ptr[block_ptr[t + 1]]):
            z[i] = np.int64(uniform(rng, t) * K) % K


# Collapsed joint log p(w, z) (Mallet's modelLogLikelihood):
#   sum_d [sum_k lgamma(alpha_k + n_dk) - lgamma(alpha_k)] + lgamma(alpha_0) - lgamma(alpha_0 + n_d)
# + sum_k [sum_w lgamma(beta + n_kw) - lgamma(beta)] + lgamma(beta W) - lgamma(beta W + n_k).
@numba.njit(cache=True, nogil=True)
def log_likelihood(token_ptr, z, tw, n_k, alpha, beta, W, TB):
    K = n_k.shape[0]
    D = token_ptr.shape[0] - 1
    alpha_sum = 0.0
    lg_alpha = np.empty(K)
    for k in range(K):
        alpha_sum += alpha[k]
        lg_alpha[k] = math.lgamma(alpha[k])
    ll = D * math.lgamma(alpha_sum)
    ndk = np.zeros(K, np.int64)
    for d in range(D):
        a = token_ptr[d]
        b = token_ptr[d + 1]
        for i in range(a, b):
            ndk[z[i]] += 1
        for i in range(a, b):
            k = z[i]
            if ndk[k] > 0:
                ll += math.lgamma(alpha[k] + ndk[k]) - lg_alpha[k]
                ndk[k] = 0
        ll -= math.lgamma(alpha_sum + (b - a))
    lg_beta = math.lgamma(beta)
    nonzero = 0
    for j in range(tw.shape[0]):
        e = tw[j]
        if e != 0:
            ll += math.lgamma(beta + (e >> TB))
            nonzero += 1
    ll -= nonzero * lg_beta
    for k in range(K):
        ll -= math.lgamma(beta * W + n_k[k])
    ll += K * math.lgamma(beta * W)
    return ll


# phi_kw = (n_kw + beta) / (n_k + beta W), the posterior mean of the topic-word distributions.
@numba.njit(cache=True, nogil=True)
def topic_word_mean(tw_ptr, tw, n_k, beta, TB):
    K = n_k.shape[0]
    W = tw_ptr.shape[0] - 1
    mask = (1 << TB) - 1
    phi = np.empty((K, W))
    for k in range(K):
        v = beta / (n_k[k] + beta * W)
        for w in range(W):
            phi[k, w] = v
    for w in range(W):
        for j in range(tw_ptr[w], tw_ptr[w + 1]):
            e = tw[j]
            if e == 0:
                break
            k = e & mask
            phi[k, w] = ((e >> TB) + beta) / (n_k[k] + beta * W)
    return phi


# Histograms for Mallet's optimizeBeta: C(n) = #{(k, w): n_kw = n}, L(n) = #{k: n_k = n}.
@numba.njit(cache=True, nogil=True)
def word_topic_histograms(tw, n_k, TB):
    largest = 0
    for j in range(tw.shape[0]):
        c = tw[j] >> TB
        if c > largest:
            largest = c
    count_hist = np.zeros(largest + 1, np.int64)
    for j in range(tw.shape[0]):
        if tw[j] != 0:
            count_hist[tw[j] >> TB] += 1
    biggest = 0
    for k in range(n_k.shape[0]):
        if n_k[k] > biggest:
            biggest = n_k[k]
    length_hist = np.zeros(biggest + 1, np.int64)
    for k in range(n_k.shape[0]):
        length_hist[n_k[k]] += 1
    return count_hist, length_hist


# ---------------------------------------------------------------------------------------------
# MPI ranks on the partitioned schedule (model.py's _share_round): after a round each rank sends
# the word blocks its lanes sampled, and every other rank copies them over its own (the blocks are
# disjoint, so a copy is the merge). Only the used slots travel -- a word's slots are sorted with
# the zeros last, and in steady state about a sixth of the min(frequency, K) slots are in use
# (movie reviews, K = 100) -- as, per block, the used-slot count of each word, then the slots.


@numba.njit(cache=True, nogil=True)
def pack_blocks(tw_ptr, tw, w_lo, w_hi, out):
    """Blocks [w_lo[i], w_hi[i]) of words into out (counts, then slots, block after block);
    returns the length used."""
    pos = 0
    for i in range(w_lo.shape[0]):
        head = pos
        pos += w_hi[i] - w_lo[i]
        for w in range(w_lo[i], w_hi[i]):
            lo = tw_ptr[w]
            m = 0
            while lo + m < tw_ptr[w + 1] and tw[lo + m] != 0:
                out[pos] = tw[lo + m]
                pos += 1
                m += 1
            out[head + w - w_lo[i]] = m
    return pos


@numba.njit(cache=True, nogil=True)
def unpack_blocks(tw_ptr, tw, w_lo, w_hi, buf):
    """pack_blocks's inverse: the blocks' slots in tw := buf's (the old tails cleared)."""
    pos = 0
    for i in range(w_lo.shape[0]):
        head = pos
        pos += w_hi[i] - w_lo[i]
        for w in range(w_lo[i], w_hi[i]):
            lo = tw_ptr[w]
            m = np.int64(buf[head + w - w_lo[i]])
            for j in range(m):
                tw[lo + j] = buf[pos + j]
            pos += m
            j = lo + m
            while j < tw_ptr[w + 1] and tw[j] != 0:
                tw[j] = 0
                j += 1


# MPI ranks on schedule=copy-merge (AD-LDA across processes, model.py's _exchange): after a rank's sweep, the count
# changes of every rank are added to every rank's copy of n_kw and n_k. Two ways, the same result
# (the packed layout is canonical): the tokens that changed topic as records
# (w K + k_old) K + k_new, gathered from every rank and applied one by one (fewer bytes while few
# tokens move), or a dense word-major W x K table of changes summed by Allreduce.


@numba.njit(cache=True, nogil=True)
def count_changed(z_prev, z):
    n = 0
    for i in range(z.shape[0]):
        if z[i] != z_prev[i]:
            n += 1
    return n


@numba.njit(cache=True, nogil=True)
def change_records(words, z_prev, z, K, out):
    """out[j] = (w K + k_old) K + k_new for the j-th token that changed topic."""
    j = 0
    for i in range(z.shape[0]):
        if z[i] != z_prev[i]:
            out[j] = (np.int64(words[i]) * K + z_prev[i]) * K + z[i]
            j += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _slot_decrement_at(tw, base, cap, j, one):
    """n_kw -= 1 for the topic in slot j of a word's sorted slots, keeping the order."""
    e = tw[base + j] - one
    if e < one:  # the count fell to zero: close the gap
        while j + 1 < cap and tw[base + j + 1] != 0:
            tw[base + j] = tw[base + j + 1]
            j += 1
        tw[base + j] = 0
    else:
        while j + 1 < cap and tw[base + j + 1] > e:
            tw[base + j] = tw[base + j + 1]
            j += 1
        tw[base + j] = e


@numba.njit(cache=True, nogil=True, inline="always")
def _slot_decrement(tw, base, cap, k, mask, one):
    """n_kw -= 1 in word w's sorted slots (the slot of topic k must exist)."""
    j = 0
    while (tw[base + j] & mask) != k or tw[base + j] == 0:
        j += 1
    _slot_decrement_at(tw, base, cap, j, one)


@numba.njit(cache=True, nogil=True, inline="always")
def _slot_increment_at(tw, base, j, e):
    """Slot j of a word's sorted slots becomes e (its count raised): move it up to keep the order."""
    while j > 0 and tw[base + j - 1] < e:
        tw[base + j] = tw[base + j - 1]
        j -= 1
    tw[base + j] = e


@numba.njit(cache=True, nogil=True, inline="always")
def _slot_increment(tw, base, cap, k, mask, one):
    """n_kw += 1 in word w's sorted slots."""
    j = 0
    while j < cap and tw[base + j] != 0 and (tw[base + j] & mask) != k:
        j += 1
    if j < cap and tw[base + j] != 0:
        e = tw[base + j] + one
    else:
        e = one | k
    _slot_increment_at(tw, base, j, e)


@numba.njit(cache=True, nogil=True)
def apply_records(tw_ptr, tw, n_k, records, skip_lo, skip_hi, TB):
    """Apply every record outside [skip_lo, skip_hi) (this rank's own, already applied by its sweep)."""
    K = n_k.shape[0]
    mask = (1 << TB) - 1
    one = 1 << TB
    for j in range(records.shape[0]):
        if skip_lo <= j < skip_hi:
            continue
        r = records[j]
        k_new = r % K
        r //= K
        k_old = r % K
        w = r // K
        base = tw_ptr[w]
        cap = tw_ptr[w + 1] - base
        _slot_decrement(tw, base, cap, k_old, mask, one)
        _slot_increment(tw, base, cap, k_new, mask, one)
        n_k[k_old] -= 1
        n_k[k_new] += 1


@numba.njit(cache=True, nogil=True)
def dense_changes(words, z_prev, z, K, delta):
    """delta[w K + k] (zeroed here): this rank's change of n_kw in its sweep."""
    delta[:] = 0
    for i in range(z.shape[0]):
        if z[i] != z_prev[i]:
            w = np.int64(words[i]) * K
            delta[w + z_prev[i]] -= 1
            delta[w + z[i]] += 1


@numba.njit(cache=True, nogil=True)
def dense_counts(words, z, K, counts):
    """counts[w K + k] (zeroed here): n_kw of these tokens, word-major, rows of K (the dense
    start's table passes its padded width)."""
    counts[:] = 0
    for i in range(z.shape[0]):
        counts[np.int64(words[i]) * K + z[i]] += 1


@numba.njit(cache=True, nogil=True)
def apply_dense(tw_ptr, tw, n_k, total, own, TB):
    """n_kw += total - own (word-major tables: every rank's changes less this rank's, which its
    sweep applied already), rewriting only the words that changed, in the canonical layout."""
    W = tw_ptr.shape[0] - 1
    K = n_k.shape[0]
    mask = (1 << TB) - 1
    scratch = np.zeros(K, np.int64)
    seen = np.empty(K, np.int64)
    mark = np.zeros(K, np.bool_)
    buf = np.empty(K, tw.dtype)
    for w in range(W):
        o = w * K
        changed = False
        for k in range(K):
            if total[o + k] != own[o + k]:
                changed = True
                break
        if not changed:
            continue
        lo = tw_ptr[w]
        hi = tw_ptr[w + 1]
        m = _add_packed(tw, lo, hi, mask, TB, 1, scratch, mark, seen, 0)
        for k in range(K):
            d = total[o + k] - own[o + k]
            if d != 0:
                m = _accumulate(k, d, scratch, mark, seen, m)
                n_k[k] += d
        _flush_word(tw, lo, hi, buf, TB, scratch, mark, seen, m)


@numba.njit(cache=True, nogil=True)
def pack_dense(tw_ptr, tw, n_k, counts, TB):
    """tw and n_k (overwritten) from word-major dense counts."""
    W = tw_ptr.shape[0] - 1
    K = n_k.shape[0]
    n_k[:] = 0
    buf = np.empty(K, tw.dtype)
    for w in range(W):
        m = 0
        for k in range(K):
            c = counts[w * K + k]
            if c > 0:
                buf[m] = (np.int64(c) << TB) | k
                n_k[k] += c
                m += 1
        _write_sorted(tw, tw_ptr[w], tw_ptr[w + 1], buf, m)


# ---------------------------------------------------------------------------------------------
# The dense start (model.py's docstring, "Sampler"): while the words still have most of the K
# topics, as they do for the first sweeps from a random start, eq. (1) is computed for all K
# topics at once from a dense word-topic table n_wk (W x KP, KP = K rounded up to whole SIMD
# chunks, the padding topics of no mass), in float32 SIMD; the draw walks chunk sums of CHUNK
# topics and then one chunk. A count update is O(1). Measured on the 10M-token synthetic corpus
# (K=100): 82-98 ns a token at every one of the first 20 sweeps, where SparseLDA's walk over a
# word's slots takes 230 ns at sweep 1 and 90 at sweep 20 (and 70 once topics have formed).

CHUNK = 16  # topics per chunk: one AVX-512 vector of float32


def dense_width(K):
    """K rounded up to whole chunks: the row length of the dense table."""
    return -(-int(K) // CHUNK) * CHUNK


# Eq. (1) over all K topics for tokens a..b-1 of one document, whose counts are in ndk and
# coef. (fastmath lets the float32 sums use SIMD: the same machine gives the same draws; another
# vector width may order the additions differently.)
@numba.njit(cache=True, nogil=True, fastmath=True, inline="always")
def _dense_tokens(a, b, words, z, n_wk, flat, n_k, alpha, wbeta, betaf, inv, coef, p, ndk, gen):
    K = n_k.shape[0]
    KP = n_wk.shape[1]
    chunks = KP // CHUNK
    for i in range(a, b):
        if i + 2 < b:  # the row two tokens ahead, while this one is sampled
            o = np.int64(words[i + 2]) * KP
            for c in range(chunks):
                prefetch(flat, o + c * CHUNK)
        w = words[i]
        t = z[i]
        ndk[t] -= 1
        n_wk[w, t] -= 1
        n_k[t] -= 1
        inv[t] = 1.0 / (wbeta + n_k[t])
        coef[t] = (alpha[t] + ndk[t]) * inv[t]
        counts = n_wk[w]
        for k in range(KP):
            p[k] = coef[k] * (np.float32(counts[k]) + betaf)
        total = np.float32(0.0)
        for k in range(KP):
            total += p[k]
        u = np.float32(uniform(gen, 0)) * total
        c = 0
        while c < chunks - 1:
            part = np.float32(0.0)
            for j in range(CHUNK):
                part += p[c * CHUNK + j]
            if u < part:
                break
            u -= part
            c += 1
        t = c * CHUNK
        last = min(t + CHUNK, K) - 1
        while t < last and u >= p[t]:
            u -= p[t]
            t += 1
        z[i] = t
        ndk[t] += 1
        n_wk[w, t] += 1
        n_k[t] += 1
        inv[t] = 1.0 / (wbeta + n_k[t])
        coef[t] = (alpha[t] + ndk[t]) * inv[t]


@numba.njit(cache=True, nogil=True, inline="always")
def _dense_scratch(n_wk, n_k, alpha, beta):
    """inv_k = 1 / (beta W + n_k), coef_k = alpha_k inv_k (no document; 0 for the padding
    topics), and the p and ndk buffers."""
    K = n_k.shape[0]
    inv = np.empty(K)
    coef = np.zeros(n_wk.shape[1], np.float32)
    for k in range(K):
        inv[k] = 1.0 / (n_wk.shape[0] * beta + n_k[k])
        coef[k] = alpha[k] * inv[k]
    return inv, coef, np.empty(n_wk.shape[1], np.float32), np.zeros(K, np.int32)


@numba.njit(cache=True, nogil=True, fastmath=True)
def dense_sweep(token_ptr, words, z, n_wk, n_k, alpha, beta, rng, row):
    """One Gibbs sweep of eq. (1) over every document, on the dense table n_wk (W x KP) and the
    totals n_k, both updated in place with z."""
    inv, coef, p, ndk = _dense_scratch(n_wk, n_k, alpha, beta)
    gen = rng[row : row + 1].copy()
    _dense_documents(token_ptr, words, z, n_wk, n_wk.reshape(n_wk.size), n_k, alpha, beta, inv, coef, p, ndk, gen)
    rng[row, :] = gen[0, :]


@no_nrt_fastmath
def _dense_documents(token_ptr, words, z, n_wk, flat, n_k, alpha, beta, inv, coef, p, ndk, gen):
    """dense_sweep's documents, given its scratch."""
    K = n_k.shape[0]
    wbeta = n_wk.shape[0] * beta
    for d in range(token_ptr.shape[0] - 1):
        a = token_ptr[d]
        b = token_ptr[d + 1]
        for i in range(a, b):
            ndk[z[i]] += 1
        for k in range(K):
            coef[k] = (alpha[k] + ndk[k]) * inv[k]
        _dense_tokens(a, b, words, z, n_wk, flat, n_k, alpha, wbeta, np.float32(beta), inv, coef, p, ndk, gen)
        for i in range(a, b):
            k = z[i]
            ndk[k] = 0
            coef[k] = alpha[k] * inv[k]


@numba.njit(cache=True, nogil=True, fastmath=True)
def dense_cell(
    token_ptr, words, z, n_wk, n_k, alpha, beta, rng, row, d0, d1, w0, w1, first, fresh, keep, sort, cache, rows,
    cursor, TB,
):  # fmt: skip
    """sample_cell on the dense table: the same cell, cache and cursors, the dense sampler (which
    keeps no list of a document's topics: its cache is written in topic order, sort or not). With
    the documents' dense rows (not empty) a document's counts come from and go back to its row."""
    inv, coef, p, ndk = _dense_scratch(n_wk, n_k, alpha, beta)
    gen = rng[row : row + 1].copy()
    _dense_cell_documents(
        token_ptr, words, z, n_wk, n_wk.reshape(n_wk.size), n_k, alpha, beta, d0, d1, w0, w1, first, fresh, keep,
        cache, rows, cursor, TB, inv, coef, p, ndk, gen,
    )  # fmt: skip
    rng[row, :] = gen[0, :]


@no_nrt_fastmath
def _dense_cell_documents(
    token_ptr, words, z, n_wk, flat, n_k, alpha, beta, d0, d1, w0, w1, first, fresh, keep, cache, rows, cursor, TB,
    inv, coef, p, ndk, gen,
):  # fmt: skip
    """dense_cell's documents, given its scratch."""
    K = n_k.shape[0]
    wbeta = n_wk.shape[0] * beta
    mask = (1 << TB) - 1
    slot = 0
    by_rows = rows.shape[0] > 0
    for d in range(d0, d1):
        a = token_ptr[d]
        b = token_ptr[d + 1]
        cap = min(b - a, K)
        i0, i1 = _cell_tokens(words, a, b, w0, w1, first, cursor, d - d0)
        if i0 == i1 and (not fresh or by_rows):  # no token of the document in this word block
            slot += cap
            continue
        if by_rows:
            for k in range(K):
                ndk[k] = rows[d, k]
        elif fresh:
            for i in range(a, b):
                ndk[z[i]] += 1
        else:
            j = 0
            while j < cap and cache[slot + j] != 0:
                ndk[cache[slot + j] & mask] = cache[slot + j] >> TB
                j += 1
        for k in range(K):
            coef[k] = (alpha[k] + ndk[k]) * inv[k]
        _dense_tokens(i0, i1, words, z, n_wk, flat, n_k, alpha, wbeta, np.float32(beta), inv, coef, p, ndk, gen)
        j = 0
        if by_rows:
            for k in range(K):
                rows[d, k] = ndk[k]
                ndk[k] = 0
                coef[k] = alpha[k] * inv[k]
            slot += cap
            continue
        # to the cache, and back to no document: sample_cell's loop, but over all K topics (the
        # dense sampler keeps no list of the document's topics)
        for k in range(K):
            if ndk[k] != 0:
                if keep:
                    cache[slot + j] = (np.int64(ndk[k]) << TB) | k
                    j += 1
                ndk[k] = 0
                coef[k] = alpha[k] * inv[k]
        if keep and j < cap:
            cache[slot + j] = 0
        slot += cap


# The decision between the dense and the sparse sampler: the number of topics of each token's
# word, summed over the tokens (freq: the word frequencies), from either table. The same
# integer from both, so a resumed run (sparse tables rebuilt from z) decides as the straight one.
@numba.njit(cache=True, nogil=True)
def dense_topics(freq, n_wk):
    total = 0
    for w in range(n_wk.shape[0]):
        used = 0
        for k in range(n_wk.shape[1]):
            used += n_wk[w, k] != 0
        total += freq[w] * used
    return total


@numba.njit(cache=True, nogil=True)
def sparse_topics(freq, tw_ptr, tw):
    total = 0
    for w in range(tw_ptr.shape[0] - 1):
        j = tw_ptr[w]
        while j < tw_ptr[w + 1] and tw[j] != 0:
            j += 1
        total += freq[w] * (j - tw_ptr[w])
    return total


# The partitioned schedule's word blocks while the sweeps are sparse: of about equal sampling
# cost rather than equal tokens. A token of word w costs about ``per_token`` slots' worth of
# fixed work plus the walk over w's topics (its used slots); on the movie reviews after 100
# sweeps the most frequent words' tokens walk 21 slots and the rarest' 3, and their blocks
# cost 110 against 76 ns a token (a cell of 8 on one thread, all documents), so blocks equal
# in tokens kept the lanes of a round waiting for the costliest. Fitted there: about 1.9 ns a
# slot against 55 ns of the rest (per_token about 30), but rare words' lists are colder in the
# caches than that fit knows, and per_token = 60 (model.TOKEN_COST_SLOTS) balanced the rounds
# best, early and late (2 threads on the movie reviews: 1.90x one thread in steady state with
# 60, 1.85x with 30, 1.81x with the token cut). On a corpus whose words have alike numbers of
# topics (the 10M-token synthetic one: 11 slots a token in every block) the cut is the token cut.
@numba.njit(cache=True, nogil=True)
def cost_blocks(tw_ptr, tw, TB, per_token, parts):
    """Word-block boundaries (parts + 1) cutting the vocabulary into runs of about equal cost,
    a word's cost being its tokens (the sum of its slots' counts) x (per_token + its used
    slots): corpus.token_blocks's cut (first boundary where the running cost reaches i/parts
    of the total), without a W-sized running array."""
    W = tw_ptr.shape[0] - 1
    total = 0
    for w in range(W):
        total += _word_cost(tw_ptr, tw, TB, per_token, w)
    ptr = np.empty(parts + 1, np.int64)
    ptr[0] = 0
    ptr[parts] = W
    i = 1
    run = 0
    for w in range(W + 1):
        while i < parts and run >= (i * total) // parts:
            ptr[i] = w
            i += 1
        if i == parts:
            break
        if w < W:
            run += _word_cost(tw_ptr, tw, TB, per_token, w)
    return ptr


@numba.njit(cache=True, nogil=True, inline="always")
def _word_cost(tw_ptr, tw, TB, per_token, w):
    n = 0
    j = tw_ptr[w]
    while j < tw_ptr[w + 1] and tw[j] != 0:
        n += tw[j] >> TB
        j += 1
    return np.int64(n) * (per_token + j - tw_ptr[w])


@numba.njit(cache=True, nogil=True)
def capped_sums(token_ptr, cap, cuts):
    """(sums, longest): for each run of documents [cuts[i], cuts[i + 1]) the sum of min(length,
    cap) over its documents, and the longest document of all the runs (not capped)."""
    sums = np.zeros(cuts.shape[0] - 1, np.int64)
    longest = 0
    for i in range(cuts.shape[0] - 1):
        for d in range(cuts[i], cuts[i + 1]):
            n = token_ptr[d + 1] - token_ptr[d]
            sums[i] += min(n, cap)
            longest = max(longest, n)
    return sums, longest
