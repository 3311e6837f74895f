"""Helpers of the vocabulary-partitioned schedule (Yan, Xu & Qi 2009), used by lda_gibbs and
lida: a thread's cell is a block of documents and a run of word ids, each document's tokens
being in ascending word order, so that its tokens of a run are found by bisection."""

import numba


@numba.njit(cache=True, nogil=True)
def words_ascending(token_ptr, words):
    """True when every document's tokens are in ascending word order (the cells' premise)."""
    for d in range(token_ptr.shape[0] - 1):
        for i in range(token_ptr[d] + 1, token_ptr[d + 1]):
            if words[i] < words[i - 1]:
                return False
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def first_at_least(words, a, b, w):
    """The first i in [a, b) with words[i] >= w (b if none); words[a:b] ascending."""
    while a < b:
        m = (a + b) >> 1
        if words[m] < w:
            a = m + 1
        else:
            b = m
    return a
