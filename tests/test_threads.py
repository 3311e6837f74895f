"""threads.RoundPool: every part of every round is taken exactly once, and a round's parts are all
finished before any part of the next round is taken, with more threads than cores (the pool keeps
some asleep) or not (it wakes them all)."""

import numba
import numpy as np
import pytest

from topictool import threads
from topictool.threads import POOLS, RoundPool, Workers, finish_part, next_round, take_part


@numba.njit(nogil=True)
def _take_parts(memory, state, parts, taken, seen_closed, closed, busy):
    while True:
        r, p = take_part(memory, state, parts)
        if r < 0:
            return
        taken[r, p] += 1
        seen_closed[r, p] = closed[r - 1] if r > 0 else 1  # the previous round closed already?
        x = 0.0
        for i in range(busy):  # some work, so that the threads overlap
            x += np.sqrt(i + p)
        taken[r, p] += int(x < 0)
        if finish_part(memory, state, parts):
            closed[r] = 1
            next_round(memory, state)


@pytest.mark.skipif(not POOLS, reason="this C library has no POSIX mutexes and conditions")
@pytest.mark.parametrize("cores", [1, 2, 64])
@pytest.mark.parametrize("T", [1, 3, 8])
def test_round_pool_hands_out_every_part_once_round_after_round(monkeypatch, T, cores):
    monkeypatch.setattr(threads, "usable_cores", lambda: cores)
    rounds, parts = 40, 5
    pool = RoundPool(T)
    workers = Workers(T)
    for _ in range(2):  # the pool is reused sweep after sweep
        taken = np.zeros((rounds, parts), np.int64)
        seen_closed = np.zeros((rounds, parts), np.int64)
        closed = np.zeros(rounds, np.int64)
        pool.open(rounds)
        arrays = (taken, seen_closed, closed)
        workers.run(lambda t, arrays=arrays: _take_parts(pool.memory, pool.state, parts, *arrays, 2000))
        assert (taken == 1).all()
        assert (seen_closed == 1).all()
        assert (closed == 1).all()
    workers.close()
