"""evaluate's and infer's scorers on real threads (evaluate/blocks.py): --threads N runs N
threads at once even on a 2-core machine, and the figures are identical for any N."""

import json
import threading

import numpy as np
import pytest

from topictool.evaluate import burst, left_to_right, plain
from topictool.evaluate.blocks import document_blocks
from topictool.evaluate.completion import document_completion, fold_in
from topictool.snapshot import Snapshot

from .conftest import make_corpus, run


def lda_corpus(seed=3, K=4, W=50, D=30, length=50):
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(W, 0.1), K)
    phi = (phi + 1e-6) / (phi + 1e-6).sum(axis=1, keepdims=True)
    docs = []
    for d in range(D):
        theta = rng.dirichlet(np.full(K, 0.3))
        bag = {}
        for _ in range(length + 7 * (d % 5)):  # documents of unequal length
            w = int(rng.choice(W, p=phi[rng.choice(K, p=theta)]))
            bag[w] = bag.get(w, 0) + 1
        docs.append(bag)
    vocab = tuple(f"w{i}" for i in range(W))
    return make_corpus(docs, vocab), phi, np.full(K, 0.3), vocab


@pytest.fixture(scope="module")
def model():
    corpus, phi, alpha, vocab = lda_corpus()
    K = phi.shape[0]
    snap = Snapshot(phi=phi, alpha=alpha, topic_weight=np.full(K, 1.0 / K), vocab=vocab, meta={})
    bursty = Snapshot(
        phi=phi,
        alpha=alpha,
        topic_weight=np.full(K, 1.0 / K),
        vocab=vocab,
        meta={},
        burst_concentration=np.linspace(0.5, 3.0, K),
        burst_discount=0.3,
    )
    return corpus, snap, bursty


def everything(corpus, snap, bursty, threads):
    """Every scorer's output with ``threads`` threads, as exact bytes."""
    out = {}
    for method in ("gibbs", "vb"):
        r = document_completion(snap, corpus, method=method, seed=7, threads=threads, return_theta=True)
        out[f"completion-{method}"] = (r["log_likelihood"], r["theta"].tobytes(), r.get("vb_mean_iterations"))
    out["completion-burst"] = document_completion(bursty, corpus, samples=5, seed=7, threads=threads)["log_likelihood"]
    for kw in ({}, {"resample": True}, {"weighted": True}):
        r = left_to_right.left_to_right(snap, corpus, particles=3, seed=9, threads=threads, return_documents=True, **kw)
        out[f"l2r-{sorted(kw)}"] = (r["log_likelihood"], r["document_log_likelihoods"].tobytes())
    for s, method in ((snap, "gibbs"), (snap, "vb"), (bursty, None)):
        theta, counts, used = fold_in(s, corpus, method, 3, 5, 11, threads)
        out[f"fold-in-{used}"] = (theta.tobytes(), None if counts is None else counts.tobytes())
    return out


def test_identical_for_threads_1_2_and_5(model):
    corpus, snap, bursty = model
    one = everything(corpus, snap, bursty, 1)
    assert everything(corpus, snap, bursty, 2) == one
    assert everything(corpus, snap, bursty, 5) == one
    # more threads than documents: the extra blocks are empty, the figures the same
    few = corpus.subset(np.arange(3))
    assert everything(few, snap, bursty, 5) == everything(few, snap, bursty, 1)
    # and the seed does matter
    other = document_completion(snap, corpus, seed=8, threads=2)["log_likelihood"]
    assert other != one["completion-gibbs"][0]


def test_blocks_cover_the_documents_in_order_by_tokens():
    ptr = np.array([0, 10, 10, 30, 35, 60, 100])
    for threads in (1, 2, 3, 5, 9):
        cuts = document_blocks((ptr,), threads)
        assert len(cuts) == threads + 1 and cuts[0] == 0 and cuts[-1] == 6
        assert all(a <= b for a, b in zip(cuts, cuts[1:]))
    # observed and held-out tokens together decide the cut
    assert document_blocks((np.array([0, 0, 0, 0]), np.array([0, 10, 20, 30])), 3) == [0, 1, 2, 3]


class Recorder:
    """Wraps a scorer kernel: records each call's thread and block and waits on a barrier of
    ``threads`` parties, which only breaks (BrokenBarrierError after the timeout) if fewer than
    ``threads`` calls ever run at the same time: a non-timed proof of N concurrent threads."""

    def __init__(self, kernel, threads, lo_arg):
        self.kernel, self.lo_arg = kernel, lo_arg
        self.barrier = threading.Barrier(threads, timeout=120)
        self.calls = []
        self.lock = threading.Lock()

    def __call__(self, *args):
        with self.lock:
            self.calls.append((threading.current_thread().name, int(args[self.lo_arg]), int(args[self.lo_arg + 1])))
        self.barrier.wait()
        return self.kernel(*args)

    def check(self, threads, D):
        names = {name for name, _, _ in self.calls}
        assert len(self.calls) == threads and len(names) == threads
        assert names == {"MainThread"} | {f"topictool-{t}" for t in range(1, threads)}
        blocks = sorted((lo, hi) for _, lo, hi in self.calls)
        assert blocks[0][0] == 0 and blocks[-1][1] == D
        assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))


KERNELS = {
    "gibbs": (plain, "_fold_in_and_score", 3),
    "vb": (plain, "_fold_in_and_score", 3),
    "burst": (burst, "_all_documents", 6),
    "left-to-right": (left_to_right, "_left_to_right", 4),
}


@pytest.mark.parametrize("which", sorted(KERNELS))
def test_n_threads_really_run_at_once(model, monkeypatch, which):
    corpus, snap, bursty = model
    module, name, lo_arg = KERNELS[which]
    threads = 5  # more than this machine's cores: numba's pool would have run 2
    rec = Recorder(getattr(module, name), threads, lo_arg)
    monkeypatch.setattr(module, name, rec)
    before = set(threading.enumerate())  # (models of other tests may still hold theirs)
    if which == "left-to-right":
        r = left_to_right.left_to_right(snap, corpus, particles=2, threads=threads)
    elif which == "burst":
        r = document_completion(bursty, corpus, samples=3, threads=threads)
    else:
        r = document_completion(snap, corpus, method=which, samples=3, threads=threads)
    assert r["threads"] == threads
    rec.check(threads, corpus.D)
    # the helper threads are closed after the call
    assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("topictool-")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("scoring-threads")
    r = run("synth", "lda", "-o", d / "syn", "-K", 3, "-V", 60, "--documents", 40, "--length", 30, "--seed", 2)
    assert r.exit_code == 0, r.stderr
    r = run("train", d / "syn", "-m", "lda-gibbs", "-K", 3, "-n", 3, "-o", d / "run")
    assert r.exit_code == 0, r.stderr
    return d


@pytest.mark.parametrize("command", ["evaluate", "left-to-right", "infer"])
def test_cli_threads_reach_the_kernels(trained, monkeypatch, command):
    d = trained
    module, name, lo_arg = KERNELS["left-to-right" if command == "left-to-right" else "gibbs"]
    rec = Recorder(getattr(module, name), 3, lo_arg)
    monkeypatch.setattr(module, name, rec)
    if command == "infer":
        args = ["infer", d / "run", d / "syn", "-o", d / "theta.npz", "--force"]
    else:
        args = ["evaluate", d / "run", d / "syn"]
        args += ["--method", "left-to-right", "--particles", 2] if command == "left-to-right" else []
    r = run(*args, "--threads", 3, "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["threads"] == 3
    rec.check(3, out["documents_total" if command != "infer" else "documents"])
