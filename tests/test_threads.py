"""threads.RoundPool: every part of every round is taken exactly once, and a round's parts are all
finished before any part of the next round is taken, by min(threads, cores) threads, whether they
check for the next round for a while or sleep at once. threads.Barrier: no thread leaves a wait
before every thread has arrived, whether the waiting threads check for a while first (no more threads than
cores) or sleep at once."""

import numba
import numpy as np
import pytest

from topictool import threads
from topictool.threads import POOLS, Barrier, RoundPool, Workers, barrier_wait, finish_part, next_round, take_part


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
@pytest.mark.parametrize("checks", [0, threads.POOL_CHECKS])
@pytest.mark.parametrize("cores", [1, 2, 64])
@pytest.mark.parametrize("T", [1, 3, 8])
def test_round_pool_hands_out_every_part_once_round_after_round(monkeypatch, T, cores, checks):
    monkeypatch.setattr(threads, "usable_cores", lambda: cores)
    rounds, parts = 40, 5
    pool = RoundPool(T)
    assert pool.runners == min(T, cores)
    workers = Workers(T)
    for _ in range(2):  # the pool is reused sweep after sweep
        taken = np.zeros((rounds, parts), np.int64)
        seen_closed = np.zeros((rounds, parts), np.int64)
        closed = np.zeros(rounds, np.int64)
        pool.open(rounds)
        pool.state[threads._POOL_CHECKS] = checks
        arrays = (taken, seen_closed, closed)
        workers.run(lambda t, arrays=arrays: _take_parts(pool.memory, pool.state, parts, *arrays, 2000), pool.runners)
        assert (taken == 1).all()
        assert (seen_closed == 1).all()
        assert (closed == 1).all()
    workers.close()


def test_workers_run_the_first_parts_threads_only():
    workers = Workers(4)
    for parts in (1, 2, 4):
        seen = []
        workers.run(seen.append, parts)
        assert sorted(seen) == list(range(parts))
    with pytest.raises(ValueError, match="parts must be in 1..4"):
        workers.run(seen.append, 5)
    workers.close()


@numba.njit(nogil=True)
def _phases(t, memory, reached, behind, phases, busy):
    """Thread t's phases: some work of a length that differs by thread and phase, its phase count
    published, the barrier; then every thread must have published this phase (none is behind)."""
    T = reached.shape[0]
    for phase in range(1, phases + 1):
        x = 0.0
        for i in range(busy * (1 + (t * 7 + phase * 3) % 5)):
            x += np.sqrt(i + t)
        reached[t, 0] = phase + int(x < 0)
        barrier_wait(memory)
        for u in range(T):
            if reached[u, 0] < phase:
                behind[t] += 1
        barrier_wait(memory)  # nobody starts the next phase before everybody has looked


@pytest.mark.skipif(not POOLS, reason="this C library has no POSIX mutexes and conditions")
@pytest.mark.parametrize("cores", [1, 64])
@pytest.mark.parametrize("T", [2, 5])
def test_barrier_lets_no_thread_through_before_all_arrive(monkeypatch, T, cores):
    monkeypatch.setattr(threads, "usable_cores", lambda: cores)
    barrier = Barrier(T)
    assert barrier.memory[2 * threads._SYNC_BYTES :].view(np.int64)[threads._CHECKS] == (
        threads.SPIN_CHECKS if T <= cores else 0
    )
    workers = Workers(T)
    reached = threads.padded(T, 1, np.int64)  # a cache line a thread
    behind = np.zeros(T, np.int64)
    for _ in range(2):  # reused pass after pass
        workers.run(lambda t: _phases(t, barrier.memory, reached, behind, 200, 300))
    workers.close()
    assert (reached[:, 0] == 200).all()
    assert (behind == 0).all()


def _cgroup_files(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_cgroup_quota_v2_takes_the_lowest_limit_of_the_group_and_its_ancestors(tmp_path):
    _cgroup_files(
        tmp_path,
        {
            "proc": "0::/job/step\n",
            "fs/cpu.max": "max 100000\n",
            "fs/job/cpu.max": "250000 100000\n",
            "fs/job/step/cpu.max": "max 100000\n",
        },
    )
    assert threads.cgroup_cpu_quota(str(tmp_path / "proc"), str(tmp_path / "fs")) == 2.5
    (tmp_path / "fs/job/step/cpu.max").write_text("50000 100000\n")
    assert threads.cgroup_cpu_quota(str(tmp_path / "proc"), str(tmp_path / "fs")) == 0.5


def test_cgroup_quota_v1_and_none(tmp_path):
    _cgroup_files(
        tmp_path,
        {
            "proc": "4:memory:/x\n2:cpu,cpuacct:/x\n",
            "fs/cpu,cpuacct/x/cpu.cfs_quota_us": "300000\n",
            "fs/cpu,cpuacct/x/cpu.cfs_period_us": "100000\n",
        },
    )
    assert threads.cgroup_cpu_quota(str(tmp_path / "proc"), str(tmp_path / "fs")) == 3.0
    (tmp_path / "fs/cpu,cpuacct/x/cpu.cfs_quota_us").write_text("-1\n")  # no quota
    assert threads.cgroup_cpu_quota(str(tmp_path / "proc"), str(tmp_path / "fs")) is None
    assert threads.cgroup_cpu_quota(str(tmp_path / "missing"), str(tmp_path / "fs")) is None


def test_usable_cores_is_the_affinity_lowered_to_the_quota(monkeypatch):
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setattr(threads, "cgroup_cpu_quota", lambda: 1.5)
    assert threads.usable_cores() == 2
    monkeypatch.setattr(threads, "cgroup_cpu_quota", lambda: None)
    assert threads.usable_cores() == 64
    monkeypatch.setattr(threads, "cgroup_cpu_quota", lambda: 0.2)
    assert threads.usable_cores() == 1
