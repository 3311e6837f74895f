"""--engine mpi: training and evaluation on MPI ranks, run as `mpiexec -n 2 python -m topictool ...`
in subprocesses (the mpi extra, which `make test` installs, brings mpi4py and MPICH's mpiexec).

What is checked: lda-gibbs, lda-svi and hdp-online on 2 ranks recover a planted truth as well as one
process; the same seed, ranks and threads give the same model bit for bit (lda-gibbs on 2 ranks x 1
thread even equals one process with 2 threads); an interrupted run resumed equals an uninterrupted
one; evaluate --engine mpi equals the one-process figure; a rank killed mid-sweep ends the job
promptly and the run resumes from its last complete checkpoint; a rank that hangs is found by the
watchdog; the refusals are one line; each rank of a sharded corpus reads only its own shards."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest

from topictool import store

from .conftest import run

try:
    import mpi4py  # noqa: F401

    HAVE_MPI = True
except ImportError:  # only outside `make test`, which installs the mpi extra
    HAVE_MPI = False

MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
needs_mpi = pytest.mark.skipif(
    not HAVE_MPI or MPIEXEC is None,
    reason="mpi4py and mpiexec are not installed (pip install 'topictool[mpi]'; `make test` installs them)",
)
MODEL_ARRAYS = ("phi", "alpha", "topic_weight")


def mpi(*args, n=2, env=None, timeout=240, check=True):
    """`mpiexec -n N python -m topictool ARGS` -> CompletedProcess (text)."""
    cmd = [MPIEXEC, "-n", str(n), sys.executable, "-m", "topictool", *map(str, args)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(env))
    if check:
        assert r.returncode == 0, r.stderr
    return r


def _env(extra=None):
    env = dict(os.environ)
    env.update(extra or {})
    return env


def ok(*args):
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    return r


def same_models(a, b):
    ma, mb = np.load(Path(a) / "model.npz"), np.load(Path(b) / "model.npz")
    return all(np.array_equal(ma[k], mb[k]) for k in MODEL_ARRAYS)


def mean_best_hellinger(truth_phi, run_dir):
    phi = np.load(Path(run_dir) / "model.npz")["phi"]
    H = np.sqrt(0.5 * ((np.sqrt(truth_phi)[:, None, :] - np.sqrt(phi)[None, :, :]) ** 2).sum(axis=-1))
    return float(H.min(axis=1).mean())


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpi") / "planted"
    ok("synth", "lda", "-o", d, "-K", "6", "-V", "150", "--documents", "300", "--length", "60", "--format", "ldac")
    return d


# -- refusals (no MPI needed for the first) ----------------------------------------------------------


def test_engine_mpi_outside_a_launcher_is_one_line(planted, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "PMIX_", "OMPI_", "SLURM_"))}
    cmd = [sys.executable, "-m", "topictool", "train", str(planted), "-m", "lda-gibbs", "-K", "3", "-n", "2"]
    r = subprocess.run([*cmd, "-o", str(tmp_path / "r"), "--engine", "mpi"], capture_output=True, text=True, env=env)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "MPI launcher" in r.stderr and "mpiexec -n P" in r.stderr
    assert not (tmp_path / "r").exists()


def test_no_mpi4py_import_without_engine_mpi(planted, tmp_path):
    code = (
        "import sys; from topictool.cli.main import main\n"
        f"sys.argv = ['topictool', 'train', {str(planted)!r}, '-m', 'lda-gibbs', '-K', '3', '-n', '2', "
        f"'-o', {str(tmp_path / 'r')!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'mpi4py' not in sys.modules, 'mpi4py imported'\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_rank_corpus_reads_only_its_shards(planted, tmp_path, monkeypatch):
    """prepare --shards 4 and two ranks: rank r reads shards 2r, 2r+1 only, and the ranks' documents
    are the corpus's, in order."""
    from topictool import mpi as tmpi
    from topictool.corpus import load_corpus
    from topictool.corpus import prepared as prep

    ok(
        "prepare", planted / "train.ldac", "--vocab", planted / "vocab.txt", "--min-count", "1", "-o", tmp_path / "s",
        "--shards", "4", "--test-fraction", "0",
    )  # fmt: skip
    manifest = json.loads((tmp_path / "s" / "corpus.json").read_text())
    assert [s["file"] for s in manifest["train"]["shards"]] == [f"train.shard-{i:04d}.npz" for i in range(4)]
    assert not (tmp_path / "s" / "train.npz").exists()
    whole = load_corpus(tmp_path / "s")  # one process reads the shards joined
    read = []
    real = prep._load_shard
    monkeypatch.setattr(prep, "_load_shard", lambda d, s, v: read.append(s["file"]) or real(d, s, v))

    class Fake:
        size = 2

        def __init__(self, rank):
            self.rank = rank

    parts = []
    for r in range(2):
        read.clear()
        part = tmpi.rank_corpus(tmp_path / "s", Fake(r), threads=1)
        assert read == [f"train.shard-{i:04d}.npz" for i in (2 * r, 2 * r + 1)]
        assert part.D_total == whole.D and part.N_total == whole.N and part.sha256() == whole.sha256()
        parts.append(part)
    assert parts[1].first_doc == parts[0].D
    joined = prep.concat(parts, whole.vocab)
    assert np.array_equal(joined.word_ids, whole.word_ids) and np.array_equal(joined.doc_ptr, whole.doc_ptr)


@needs_mpi
def test_refusals_are_one_line(planted, tmp_path):
    r = mpi("train", planted, "-m", "hdp-gibbs", "-K", "3", "-o", tmp_path / "h", "--engine", "mpi", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "does not run on MPI ranks" in r.stderr
    r = mpi("train", planted, "-m", "lda-gibbs", "-K", "3", "-n", "2", "-o", tmp_path / "l", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "without --engine mpi" in r.stderr
    r = mpi(
        "train", planted, "-m", "lda-gibbs", "--set", "nope=1", "-o", tmp_path / "x", "--engine", "mpi", check=False
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown option 'nope'" in r.stderr
    assert not (tmp_path / "x").exists()


# -- training ------------------------------------------------------------------------------------


@needs_mpi
def test_lda_gibbs_two_ranks_equal_one_process_with_two_threads(planted, tmp_path):
    common = ["-m", "lda-gibbs", "-K", "6", "--seed", "5", "--checkpoint-every", "15", "--log-every", "10"]
    common += ["--set", "schedule=copy-merge"]  # AD-LDA: ranks exchange their count changes
    common += ["--set", "optimize_alpha=true", "--set", "optimize_burn_in=10", "--set", "optimize_interval=5"]
    ok("train", planted, *common, "-n", "40", "--threads", "2", "-o", tmp_path / "one")
    mpi("train", planted, *common, "-n", "40", "-o", tmp_path / "ranks", "--engine", "mpi")
    assert same_models(tmp_path / "one", tmp_path / "ranks")
    a, b = np.load(tmp_path / "one" / "model.npz"), np.load(tmp_path / "ranks" / "model.npz")
    for k in ("doc_topic_ptr", "doc_topic_topic", "doc_topic_count"):  # gathered from both ranks
        assert np.array_equal(a[k], b[k]), k
    info = json.loads((tmp_path / "ranks" / "run.json").read_text())
    assert info["engine"] == {"name": "mpi", "ranks": 2, "threads_per_rank": 1}
    assert info["corpus"]["D"] == 300
    parts = sorted(p.name for p in (tmp_path / "ranks" / "checkpoints").glob("iter-000040*"))
    assert parts == ["iter-000040.npz", "iter-000040.rank-0000-of-0002.npz", "iter-000040.rank-0001-of-0002.npz"]
    rows = store.read_jsonl(tmp_path / "ranks" / "metrics.jsonl")
    assert [r["iteration"] for r in rows] == list(range(1, 41))
    assert all(r["exchange"] in ("sparse", "dense") and r["comm_bytes"] > 0 for r in rows)
    # a one-process reader of the MPI run (snapshot RUN --iteration) joins the ranks' parts
    ok("snapshot", tmp_path / "ranks", "-o", tmp_path / "s30.npz", "--iteration", "30")
    ok("snapshot", tmp_path / "one", "-o", tmp_path / "o30.npz", "--iteration", "30")
    sa, sb = np.load(tmp_path / "s30.npz"), np.load(tmp_path / "o30.npz")
    assert all(np.array_equal(sa[k], sb[k]) for k in MODEL_ARRAYS)


@needs_mpi
@pytest.mark.parametrize("ranks,threads", [(2, 1), (2, 2), (3, 1)])
def test_lda_gibbs_partitioned_ranks_equal_one_process_with_every_lane(planted, tmp_path, ranks, threads):
    """schedule=partition (the default) over ranks: P ranks x T threads sample the cells that one
    process with P*T threads samples, so the model is the same bit for bit (the dense start is a
    one-process sampler: sparse here). 2 x 2: a rank's word blocks wrap around; 3 ranks: the ring
    steps between rounds go one way round (with 2 ranks both neighbours are the same rank)."""
    common = ["-m", "lda-gibbs", "-K", "6", "--seed", "4", "-n", "30", "--log-every", "0", "--set", "sampler=sparse"]
    common += ["--set", "optimize_alpha=true", "--set", "optimize_burn_in=10", "--set", "optimize_interval=5"]
    ok("train", planted, *common, "--threads", ranks * threads, "-o", tmp_path / "one")
    mpi("train", planted, *common, "--threads", threads, "-o", tmp_path / "ranks", "--engine", "mpi", n=ranks)
    assert same_models(tmp_path / "one", tmp_path / "ranks")
    rows = store.read_jsonl(tmp_path / "ranks" / "metrics.jsonl")
    assert all(r["exchange"] == "partition" and r["comm_bytes"] > 0 for r in rows)


@needs_mpi
def test_lda_gibbs_phi_average_on_ranks_equals_one_process_and_resumes(planted, tmp_path):
    """phi_average's sums come from the global counts, so two ranks average what one process with
    both lanes averages; rank 0 checkpoints them once, and a resumed run averages as the straight one."""
    common = ["-m", "lda-gibbs", "-K", "6", "--seed", "3", "--log-every", "0", "--checkpoint-every", "3"]
    common += ["--set", "sampler=sparse", "--set", "phi_average=4"]
    ok("train", planted, *common, "-n", "10", "--threads", "2", "-o", tmp_path / "one")
    mpi("train", planted, *common, "-n", "10", "-o", tmp_path / "ranks", "--engine", "mpi")
    assert same_models(tmp_path / "one", tmp_path / "ranks")
    meta = json.loads(str(np.load(tmp_path / "ranks" / "model.npz")["meta"]))
    assert meta["phi_averaged_steps"] == 6  # the last complete block of 4 and the 2 since
    mpi("train", planted, *common, "-n", "5", "-o", tmp_path / "half", "--engine", "mpi")
    mpi("train", "--resume", tmp_path / "half", "-n", "5", "--engine", "mpi")
    assert same_models(tmp_path / "ranks", tmp_path / "half")


MODELS = {
    # 200 sweeps: on this small corpus a Gibbs chain sits in a mode with two topics merged for a
    # while on some seeds (one thread and two alike; seed 2 on two lanes leaves it after ~180)
    "lda-gibbs": ["-K", "6", "-n", "200"],
    "lda-svi": ["-K", "6", "-n", "16", "--set", "minibatch=40"],
    "hdp-online": ["-K", "12", "-n", "80", "--set", "minibatch=40"],
}


@needs_mpi
@pytest.mark.parametrize("name", list(MODELS))
def test_two_ranks_recover_the_truth_reproducibly_and_resume_exactly(planted, tmp_path, name):
    common = ["-m", name, *MODELS[name], "--seed", "2", "--log-every", "0", "--checkpoint-every", "7"]
    ok("train", planted, *common, "-o", tmp_path / "one")
    mpi("train", planted, *common, "-o", tmp_path / "a", "--engine", "mpi")
    mpi("train", planted, *common, "-o", tmp_path / "b", "--engine", "mpi")
    assert same_models(tmp_path / "a", tmp_path / "b")  # the same seed, ranks and threads
    truth = np.load(planted / "truth.npz")["phi"]
    one, ranks = mean_best_hellinger(truth, tmp_path / "one"), mean_best_hellinger(truth, tmp_path / "a")
    assert ranks < 0.3 and ranks <= one + 0.03, (one, ranks)
    # interrupted after half the steps (-n), resumed: the uninterrupted model
    n = int(MODELS[name][MODELS[name].index("-n") + 1])
    half = [a if a != str(n) else str(n // 2) for a in common]
    mpi("train", planted, *half, "-o", tmp_path / "c", "--engine", "mpi")
    mpi("train", "--resume", tmp_path / "c", "-n", n - n // 2, "--engine", "mpi")
    assert same_models(tmp_path / "a", tmp_path / "c")


@needs_mpi
def test_hdp_online_sm_moves_on_ranks(tmp_path):
    ok("synth", "bars", "-o", tmp_path / "bars")
    common = ["-m", "hdp-online-sm", "-K", "4", "-n", "40", "--seed", "1", "--log-every", "0"]
    ok("train", tmp_path / "bars", *common, "-o", tmp_path / "one")
    mpi("train", tmp_path / "bars", *common, "-o", tmp_path / "ranks", "--engine", "mpi")
    a, b = np.load(tmp_path / "one" / "model.npz"), np.load(tmp_path / "ranks" / "model.npz")
    assert a["phi"].shape == b["phi"].shape and b["phi"].shape[0] > 4  # the same moves were made
    assert np.abs(a["phi"] - b["phi"]).max() < 1e-6  # only the sums' order differs


@needs_mpi
def test_evaluate_on_ranks_equals_one_process(planted, tmp_path):
    ok("train", planted, "-m", "lda-gibbs", "-K", "6", "-n", "30", "-o", tmp_path / "r")
    for method in ("gibbs", "vb"):
        one = json.loads(ok("evaluate", tmp_path / "r", planted, "--method", method, "--json").stdout)
        r = mpi("evaluate", tmp_path / "r", planted, "--method", method, "--json", "--engine", "mpi")
        ranks = json.loads(r.stdout)
        assert ranks["perplexity"] == one["perplexity"] and ranks["log_likelihood"] == one["log_likelihood"]
        assert ranks["ranks"] == 2


@needs_mpi
def test_allgatherv_gives_every_part_in_rank_order(tmp_path):
    """MpiEngine.allgatherv on 3 ranks, parts of unequal lengths (one empty), below and above
    RING_BYTES (MPI's Allgatherv, then the ring of Sendrecv steps): the same concatenation."""
    code = (
        "import numpy as np\n"
        "from topictool.mpi import RING_BYTES, MpiEngine\n"
        "e = MpiEngine()\n"
        "for n in (5, RING_BYTES // 4):\n"
        "    part = lambda r: np.arange(r * n, dtype=np.int32) + 7 * r  # rank 0's part is empty\n"
        "    out, offsets = e.allgatherv(part(e.rank))\n"
        "    expected = np.concatenate([part(r) for r in range(e.size)])\n"
        "    assert np.array_equal(out, expected) and offsets.tolist() == [0, 0, n, 3 * n], n\n"
        "e.close()\n"
        "print(f'ok{e.rank}', flush=True)\n"
    )
    cmd = [MPIEXEC, "-n", "3", sys.executable, "-c", code]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stderr
    assert sorted(re.findall(r"ok\d", r.stdout)) == ["ok0", "ok1", "ok2"]


# -- signals, a killed rank, a hung rank ----------------------------------------------------------


def _ranks_of(launcher_pid):
    """The pids of the processes below mpiexec that run topictool (its ranks): the first such on
    each line of descent. A rank's own child is not a rank: between its fork and its exec (a
    library lookup, say) it shows the rank's command line, and stopping it instead of a rank
    would hang the run with every rank alive."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [launcher_pid]
    while todo:
        pid = todo.pop()
        for c in children.get(pid, []):
            try:
                # "python -m topictool ...": matching "topictool" alone would also take the launcher's
                # proxy when the checkout's path holds the word (.../topictool/.venv/bin/hydra_pmi_proxy)
                rank = b"\0-m\0topictool\0" in Path(f"/proc/{c}/cmdline").read_bytes()
            except OSError:
                continue
            if rank:
                found.append(c)  # not below it: its children are its own
            else:
                todo.append(c)
    return sorted(found)


def _start_long_run(planted, out, env=None):
    cmd = [MPIEXEC, "-n", "2", sys.executable, "-m", "topictool", "train", str(planted), "-m", "lda-gibbs"]
    cmd += ["-K", "6", "-n", "100000", "--seed", "7", "--checkpoint-every", "200", "--log-every", "0"]
    cmd += ["-o", str(out), "--engine", "mpi"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(env))


def _wait_for_checkpoint(out, proc, at_least=1, limit=120):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.poll() is None:
        if len(store.list_checkpoints(out)) >= at_least:
            return
        time.sleep(0.05)
    raise AssertionError(f"no checkpoint appeared ({proc.poll()})")


@needs_mpi
def test_sigterm_stops_every_rank_at_one_iteration_and_resume_is_exact(planted, tmp_path):
    proc = _start_long_run(planted, tmp_path / "r")
    _wait_for_checkpoint(tmp_path / "r", proc)
    proc.send_signal(signal.SIGTERM)  # mpiexec passes it to every rank
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    done = json.loads((tmp_path / "r" / "run.json").read_text())["iterations_done"]
    assert 200 <= done < 100000
    mpi("train", "--resume", tmp_path / "r", "-n", 30, "--engine", "mpi")
    total = done + 30
    common = ["-m", "lda-gibbs", "-K", "6", "--seed", "7", "--log-every", "0", "--checkpoint-every", "200"]
    mpi("train", planted, *common, "-n", total, "-o", tmp_path / "straight", "--engine", "mpi")
    assert same_models(tmp_path / "r", tmp_path / "straight")


@needs_mpi
def test_a_rank_killed_mid_sweep_ends_the_job_and_the_run_resumes(planted, tmp_path):
    proc = _start_long_run(planted, tmp_path / "r")
    _wait_for_checkpoint(tmp_path / "r", proc, at_least=2)
    victim = _ranks_of(proc.pid)[-1]
    os.kill(victim, signal.SIGKILL)
    t0 = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 30 and proc.returncode != 0
    # MPICH's mpiexec ends the other rank at once and says why (on stdout); a launcher that does not
    # leaves it to the watchdog (test below)
    assert "Killed (signal 9)" in out + err or "stopped answering" in err, (out, err)
    last = store.list_checkpoints(tmp_path / "r")[-1]
    iteration = store.checkpoint_iteration(last)
    r = mpi("train", "--resume", tmp_path / "r", "-n", "10", "--engine", "mpi")
    assert json.loads((tmp_path / "r" / "run.json").read_text())["iterations_done"] == iteration + 10, r.stderr
    common = ["-m", "lda-gibbs", "-K", "6", "--seed", "7", "--log-every", "0", "--checkpoint-every", "200"]
    mpi("train", planted, *common, "-n", iteration + 10, "-o", tmp_path / "straight", "--engine", "mpi")
    assert same_models(tmp_path / "r", tmp_path / "straight")


@needs_mpi
def test_a_hung_rank_is_found_by_the_watchdog(planted, tmp_path):
    proc = _start_long_run(planted, tmp_path / "r", env={"TOPICTOOL_MPI_TIMEOUT": "3"})
    _wait_for_checkpoint(tmp_path / "r", proc)
    victim = _ranks_of(proc.pid)[-1]
    os.kill(victim, signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        with_victim = Path(f"/proc/{victim}").exists()
        if with_victim:
            os.kill(victim, signal.SIGKILL)
    assert time.monotonic() - t0 < 30 and proc.returncode != 0
    lines = [x for x in err.splitlines() if x.startswith("topictool:")]
    assert len(lines) == 1 and "stopped answering" in lines[0] and f"--resume {tmp_path / 'r'}" in lines[0], err


class _FakeComm:
    """A communicator of two ranks that never hears from the other; with ``block`` its sends wait
    until ``release`` is set, as an MPI call can while the library holds its lock."""

    def __init__(self, block):
        self.block = block
        self.release = threading.Event()

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 2

    def Isend(self, *args, **kwargs):
        if self.block:
            self.release.wait()
        return types.SimpleNamespace(Test=lambda: True)

    def Iprobe(self, **kwargs):
        return False


def test_a_watchdog_blocked_in_mpi_is_found_by_the_deadman(monkeypatch, capsys):
    """The watchdog's first heartbeat blocks inside MPI: the deadman, which makes no MPI call,
    sees no round of the watchdog for the timeout and ends the rank with one line (here _exit_now
    records the code and stops the threads instead of ending the process). A watchdog whose rounds
    go on is never ended by it."""
    from topictool import mpi as engine_mpi

    exits, dogs = [], []
    done = threading.Event()

    def record(code):  # in place of os._exit: the code, and the watchdog's threads told to stop
        exits.append(code)
        done.set()
        dogs[-1].stopping.set()

    monkeypatch.setattr(engine_mpi, "_exit_now", record)
    monkeypatch.setattr(engine_mpi, "_ENDING", threading.Lock())
    mpi_stub = types.SimpleNamespace(Status=lambda: None, ANY_SOURCE=-1, ANY_TAG=-1)
    hint = types.SimpleNamespace(hint="The run continues: mpiexec -n {P} topictool train --resume r")
    comm = _FakeComm(block=True)
    dog = engine_mpi._Watchdog(mpi_stub, comm, 0.5, hint)
    dogs.append(dog)
    t0 = time.monotonic()
    dog.start()
    assert done.wait(10), "the deadman did not end the rank"
    assert 0.5 < time.monotonic() - t0 < 5 and exits == [1]
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("topictool:")]
    assert len(lines) == 1 and "stopped answering" in lines[0] and "mpiexec -n 2 topictool train --resume r" in lines[0]
    dog.last = dict.fromkeys(dog.peers, time.monotonic() + 100.0)  # let its blocked round end quietly
    comm.release.set()
    dog.thread.join(5)
    assert not dog.thread.is_alive()

    exits.clear()
    healthy = engine_mpi._Watchdog(mpi_stub, _FakeComm(block=False), 100.0, hint)
    dogs.append(healthy)
    healthy.interval = 0.01
    healthy.timeout = 0.2  # the deadman's threshold: 20 of its wakes without a round
    healthy.last = dict.fromkeys(healthy.peers, time.monotonic() + 100.0)  # the peer is never lost
    healthy.start()
    time.sleep(1.0)
    healthy.stopping.set()
    healthy.thread.join(5)
    healthy.deadman.join(5)
    assert exits == [] and healthy.rounds > 20
