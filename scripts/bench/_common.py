"""What the benchmark scripts share: loading a prepared corpus, saving any system's phi and
alpha as a topictool snapshot (so that one evaluator judges every system), peak memory, the
one-core environment for peers, and the LDA arguments every comparison takes.

The scripts run as `python scripts/bench/NAME.py`, which puts this folder on sys.path."""

import json
import resource
import sys
import time

import numpy as np

#: the environment that holds numerical libraries to one thread (a fair one-core comparison)
ONE_CORE = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
}


def status_mb(field, pid="self"):
    """A memory field of /proc/PID/status (VmRSS, VmHWM, ...) in MB; None where it cannot be read
    (no /proc, or the process has exited)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":")) / 1024.0
    except (OSError, StopIteration):
        return None


def peak_rss_mb(pid="self"):
    """Peak resident memory of a process so far (this one by default), in MB: its own VmHWM.

    Not getrusage's ru_maxrss: Linux carries the hiwater mark of the memory a process had before
    it exec'd into ru_maxrss, so a worker started by a large Python process reports at least that
    process's size (a child of 9 MB under a parent of 500 MB reports 514 MB). VmHWM is the
    process's own memory only. Elsewhere (no /proc) ru_maxrss of this process is the fallback."""
    mb = status_mb("VmHWM", pid)
    if mb is not None:
        return mb
    if pid != "self":
        return float("nan")
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024.0 if sys.platform != "darwin" else kb / 2**20


def model_options(items, **given):
    """The model options of repeated ``--set KEY=VALUE`` arguments over ``given``: a value as JSON
    (numbers, true, false), else as the string written."""
    options = dict(given)
    for item in items or ():
        key, _, value = item.partition("=")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def timed_step(model):
    """(wall, CPU) seconds of one model.step(); CPU of the whole process, every thread's."""
    wall, cpu = time.perf_counter(), time.process_time()
    model.step()
    return time.perf_counter() - wall, time.process_time() - cpu


def alternated(models, warmup, steps, block=1):
    """Every model of the dict trained ``warmup`` steps, then ``steps`` steps alternating between
    them, ``block`` steps of one and then of the next, so that the machine's drifting speed hits all
    of them alike. Returns {key: [(wall, CPU) seconds a step, the mean over its block], ...}."""
    for m in models.values():
        for _ in range(warmup):
            m.step()
    times = {key: [] for key in models}
    for _ in range(steps // block):
        for key, m in models.items():
            runs = [timed_step(m) for _ in range(block)]
            times[key].append(tuple(sum(r[i] for r in runs) / block for i in (0, 1)))
    return times


def load(corpus_dir, part="train"):
    from topictool.corpus import load_corpus

    return load_corpus(corpus_dir, part=part)


def save_snapshot(path, phi, alpha, vocab, name):
    """A peer's topics (rows normalised here) and alpha (a number or K numbers) as model.npz."""
    from topictool.snapshot import Snapshot

    phi = np.asarray(phi, dtype=np.float64)
    phi = phi / phi.sum(axis=1, keepdims=True)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (phi.shape[0],)).copy()
    Snapshot(
        phi=phi,
        alpha=alpha,
        topic_weight=np.full(phi.shape[0], 1.0 / phi.shape[0]),
        vocab=tuple(vocab),
        meta={"model": name},
    ).save(path)


def doc_term(c):
    """The corpus as a scipy CSR document-term matrix (for gensim and scikit-learn)."""
    import scipy.sparse as sp

    rows = np.repeat(np.arange(c.D), np.diff(c.doc_ptr))
    return sp.csr_matrix((c.counts.astype(np.float64), (rows, c.word_ids)), shape=(c.D, c.W))


def gensim_corpus(c):
    """(bag of words, id2word) in gensim's layout."""
    bow = [
        list(
            zip(
                c.word_ids[c.doc_ptr[d] : c.doc_ptr[d + 1]].tolist(), c.counts[c.doc_ptr[d] : c.doc_ptr[d + 1]].tolist()
            )
        )
        for d in range(c.D)
    ]
    return bow, dict(enumerate(c.vocab))


def tomotopy_lda(c, K, alpha, beta, seed):
    """tomotopy's LDAModel (fixed priors) holding the corpus's documents as lists of words."""
    import tomotopy as tp

    mdl = tp.LDAModel(k=K, alpha=alpha, eta=beta, seed=seed)
    mdl.optim_interval = 0  # fixed priors, as for the others
    for d in range(c.D):
        lo, hi = c.doc_ptr[d], c.doc_ptr[d + 1]
        words = [c.vocab[w] for w, n in zip(c.word_ids[lo:hi], c.counts[lo:hi]) for _ in range(int(n))]
        if words:
            mdl.add_doc(words)
    return mdl


def tomotopy_phi(mdl, vocab, K):
    """tomotopy's topics over ``vocab``: it reports (n_kw + eta) / (n_k + V eta) over the words
    it saw in training; a word it never saw (seen only in test documents) gets the topic's
    smallest value, eta's share."""
    index = {w: i for i, w in enumerate(mdl.used_vocabs)}
    cols = np.array([index.get(w, -1) for w in vocab])
    phi_t = np.array([mdl.get_topic_word_dist(k) for k in range(K)])
    phi = np.where(cols >= 0, phi_t[:, np.maximum(cols, 0)], 0.0)
    phi[:, cols < 0] = phi[:, cols >= 0].min(axis=1, keepdims=True)
    return phi


def lda_arguments(parser, K=100, alpha=0.1, beta=0.01):
    """CORPUS, --K, --alpha, --beta and --seed, as every LDA comparison takes them."""
    parser.add_argument("corpus")
    parser.add_argument("--K", type=int, default=K)
    parser.add_argument("--alpha", type=float, default=alpha)
    parser.add_argument("--beta", type=float, default=beta)
    parser.add_argument("--seed", type=int, default=1)
    return parser
