"""Measure lda-gibbs sweep speed (tokens/s) at 1 and 2 threads after warm-up.

    PYTHONPATH=. python scripts/bench/lda_speed_probe.py                  # movie reviews, K=100
    PYTHONPATH=. python scripts/bench/lda_speed_probe.py --corpus synthetic --K 1000
    PYTHONPATH=. python scripts/bench/lda_speed_probe.py --sampler dense  # the alternatives
                                                                          # weighed in kernels/sparse_lda.py

The movie-review corpus is read from the NLTK zip (lower-cased, regex words, English stop
words dropped, words seen fewer than 5 times dropped). The model is warmed up with one
thread for --warmup sweeps (topics form and the sparse buckets shrink, so early sweeps are
slower), then each thread count continues from that same state for --sweeps timed sweeps.
A measurement instrument, not a test: timings move with whatever else the machine runs,
so it reports the median and the best sweep.
"""

import argparse
import collections
import json
import re
import sys
import time
import zipfile
from pathlib import Path

import numba
import numpy as np

from topictool.corpus.corpus import from_triples
from topictool.kernels.rng import make_streams, uniform
from topictool.models.lda_gibbs.model import LdaGibbs

TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)*")
DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "nltk"
BASIC_STOP = set(
    """a about above after again against all am an and any are as at be because been before
being below between both but by can did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should so some
such than that the their theirs them themselves then there these they this those through to too under until
up very was we were what when where which while who whom why will with you your yours yourself yourselves
s t don""".split()
)


def movie_reviews(data_dir=DATA, min_count=5):
    """The NLTK movie-review corpus as a Corpus (2000 documents)."""
    stop = BASIC_STOP
    stop_zip = Path(data_dir) / "stopwords.zip"
    if stop_zip.exists():
        stop = set(zipfile.ZipFile(stop_zip).read("stopwords/english").decode().split())
    docs = []
    with zipfile.ZipFile(Path(data_dir) / "movie_reviews.zip") as z:
        for name in sorted(z.namelist()):
            if name.endswith(".txt"):
                text = z.read(name).decode("utf-8", "replace").lower()
                docs.append([t for t in TOKEN.findall(text) if t not in stop])
    freq = collections.Counter(t for d in docs for t in d)
    vocab = sorted(w for w, c in freq.items() if c >= min_count)
    index = {w: i for i, w in enumerate(vocab)}
    doc_ids, word_ids = [], []
    for d, toks in enumerate(docs):
        for t in toks:
            j = index.get(t)
            if j is not None:
                doc_ids.append(d)
                word_ids.append(j)
    return from_triples(doc_ids, word_ids, np.ones(len(doc_ids)), len(docs), vocab)


def synthetic(D=2000, W=15000, mean_length=330, K=100, alpha=0.1, beta=0.01, seed=0):
    """An LDA corpus of about the movie corpus's size, drawn with numpy."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(W, beta), size=K)
    docs, words, counts = [], [], []
    for d in range(D):
        L = max(1, int(rng.poisson(mean_length)))
        n_k = rng.multinomial(L, rng.dirichlet(np.full(K, alpha)))
        n_w = np.zeros(W, np.int64)
        for k in np.nonzero(n_k)[0]:
            n_w += rng.multinomial(n_k[k], phi[k])
        nz = np.nonzero(n_w)[0]
        docs.append(np.full(len(nz), d))
        words.append(nz)
        counts.append(n_w[nz])
    return from_triples(
        np.concatenate(docs), np.concatenate(words), np.concatenate(counts), D, [f"w{i}" for i in range(W)]
    )


def time_sweeps(sweep, n, tokens):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        sweep()
        times.append(time.perf_counter() - t0)
    times = np.array(times)
    return {"median_tokens_per_s": tokens / float(np.median(times)), "best_tokens_per_s": tokens / float(times.min())}


def probe_sparse(corpus, args):
    options = LdaGibbs.resolve_options({"K": args.K, "alpha": args.alpha, "beta": args.beta})
    t0 = time.perf_counter()
    model = LdaGibbs(corpus, options, rng_seed=args.seed)
    model.step()
    out = {"first_sweep_incl_compile_s": time.perf_counter() - t0}
    t0 = time.perf_counter()
    for _ in range(args.warmup - 1):
        model.step()
    out["warmup_s"] = time.perf_counter() - t0
    out["warmup_tokens_per_s"] = model.N * max(1, args.warmup - 1) / out["warmup_s"]
    out["log_likelihood_per_token"] = model.log_likelihood() / model.N
    state = model.state()
    for threads in args.threads:
        m = LdaGibbs.from_state(corpus, options, state, threads=threads)
        m.step()  # compiles the parallel kernels on first use
        r = time_sweeps(m.step, args.sweeps, m.N)
        per_token = m.z.nbytes + m.words.nbytes + m.tw.nbytes + (m.tw_local.nbytes if threads > 1 else 0)
        r["bytes_per_token"] = per_token / m.N
        out[f"threads_{threads}"] = r
    return out


# -- the alternatives weighed against SparseLDA (see kernels/sparse_lda.py) ----------------


# Eq. (1) of sparse_lda over all K topics at once: p_k = c_k (beta + n_kw), float32 SIMD,
# blocked prefix sums of 16 topics to find the sampled one.
@numba.njit(cache=True, nogil=True, fastmath=True)
def dense_sweep(token_ptr, words, z, n_wk, n_k, alpha, beta, wbeta, rng, K):
    Kp = n_wk.shape[1]
    B = 16
    nb = Kp // B
    inv = np.zeros(Kp, np.float32)
    coef = np.zeros(Kp, np.float32)
    p = np.zeros(Kp, np.float32)
    bs = np.zeros(nb, np.float32)
    ndk = np.zeros(Kp, np.int32)
    betaf = np.float32(beta)
    flat = n_wk.ravel()
    for k in range(K):
        inv[k] = 1.0 / (n_k[k] + wbeta)
    for d in range(token_ptr.shape[0] - 1):
        a, b = token_ptr[d], token_ptr[d + 1]
        for i in range(a, b):
            ndk[z[i]] += 1
        for k in range(K):
            coef[k] = (ndk[k] + alpha[k]) * inv[k]
        for i in range(a, b):
            w = words[i]
            t = z[i]
            ndk[t] -= 1
            n_wk[w, t] -= 1
            n_k[t] -= 1
            inv[t] = 1.0 / (n_k[t] + wbeta)
            coef[t] = (ndk[t] + alpha[t]) * inv[t]
            off = w * Kp
            for j in range(Kp):
                p[j] = coef[j] * (np.float32(flat[off + j]) + betaf)
            tot = np.float32(0.0)
            for bb in range(nb):
                s = np.float32(0.0)
                for j in range(B):
                    s += p[bb * B + j]
                bs[bb] = s
                tot += s
            u = np.float32(uniform(rng, 0)) * tot
            bb = 0
            while bb < nb - 1 and u >= bs[bb]:
                u -= bs[bb]
                bb += 1
            j = bb * B
            while j < bb * B + B - 1 and u >= p[j]:
                u -= p[j]
                j += 1
            t = min(j, K - 1)
            z[i] = t
            ndk[t] += 1
            n_wk[w, t] += 1
            n_k[t] += 1
            inv[t] = 1.0 / (n_k[t] + wbeta)
            coef[t] = (ndk[t] + alpha[t]) * inv[t]
        for i in range(a, b):
            ndk[z[i]] = 0


# Walker alias table of the stale word proposal q_w(k) ∝ (n_kw + beta) / (n_k + W beta).
@numba.njit(cache=True, nogil=True)
def build_alias(n_wk, n_k, beta, wbeta, K, prob, alias, qw, small, large):
    for w in range(n_wk.shape[0]):
        tot = 0.0
        for k in range(K):
            v = (n_wk[w, k] + beta) / (n_k[k] + wbeta)
            qw[w, k] = v
            tot += v
        ns = 0
        nl = 0
        for k in range(K):
            v = qw[w, k] * K / tot
            prob[w, k] = v
            if v < 1.0:
                small[ns] = k
                ns += 1
            else:
                large[nl] = k
                nl += 1
        while ns > 0 and nl > 0:
            ns -= 1
            s = small[ns]
            g = large[nl - 1]
            alias[w, s] = g
            prob[w, g] = prob[w, g] - (1.0 - prob[w, s])
            if prob[w, g] < 1.0:
                nl -= 1
                small[ns] = g
                ns += 1
        while nl > 0:
            nl -= 1
            prob[w, large[nl]] = 1.0
        while ns > 0:
            ns -= 1
            prob[w, small[ns]] = 1.0


# LightLDA's cycle: Metropolis-Hastings on eq. (1) with a word proposal (alias) then a doc proposal.
@numba.njit(cache=True, nogil=True)
def alias_mh_sweep(token_ptr, words, z, n_wk, n_k, alpha, alpha_sum, beta, wbeta, rng, K, prob, alias, qw, mh):
    ndk = np.zeros(K, np.int32)
    for d in range(token_ptr.shape[0] - 1):
        a, b = token_ptr[d], token_ptr[d + 1]
        L = b - a
        for i in range(a, b):
            ndk[z[i]] += 1
        for i in range(a, b):
            w = words[i]
            s = np.int64(z[i])
            for _ in range(mh):
                for proposal in range(2):
                    if proposal == 0:
                        u = uniform(rng, 0) * K
                        k = int(u)
                        t = k if (u - k) < prob[w, k] else alias[w, k]
                    else:
                        u = uniform(rng, 0) * (L + alpha_sum)
                        if u < L:
                            t = np.int64(z[a + int(u)]) if a + int(u) != i else s
                        else:
                            t = int(uniform(rng, 0) * K)
                    if t == s:
                        continue
                    pi_s = (ndk[s] - 1 + alpha[s]) * (n_wk[w, s] - 1 + beta) / (n_k[s] - 1 + wbeta)
                    pi_t = (ndk[t] + alpha[t]) * (n_wk[w, t] + beta) / (n_k[t] + wbeta)
                    if proposal == 0:
                        acc = pi_t * qw[w, s] / (pi_s * qw[w, t])
                    else:
                        acc = pi_t * (ndk[s] + alpha[s]) / (pi_s * (ndk[t] + alpha[t]))
                    if acc >= 1.0 or uniform(rng, 0) < acc:
                        ndk[s] -= 1
                        n_wk[w, s] -= 1
                        n_k[s] -= 1
                        ndk[t] += 1
                        n_wk[w, t] += 1
                        n_k[t] += 1
                        s = t
            z[i] = s
        for i in range(a, b):
            ndk[z[i]] = 0


def probe_alternative(corpus, args):
    token_ptr, words = corpus.tokens()
    K, W, N = args.K, corpus.W, len(words)
    rng = make_streams(args.seed, 1)
    z = (np.random.default_rng(args.seed).integers(0, K, N)).astype(np.int16)
    alpha = np.full(K, args.alpha)
    wbeta = W * args.beta
    if args.sampler == "dense":
        Kp = (K + 15) // 16 * 16
        n_wk = np.zeros((W, Kp), np.int32)
        np.add.at(n_wk, (words, z), 1)
        n_k = np.zeros(Kp, np.int32)
        n_k[:K] = np.bincount(z, minlength=K)
        alpha_p = np.zeros(Kp)
        alpha_p[:K] = alpha
        sweep = lambda: dense_sweep(token_ptr, words, z, n_wk, n_k, alpha_p, args.beta, wbeta, rng, K)  # noqa: E731
    else:
        n_wk = np.zeros((W, K), np.int32)
        np.add.at(n_wk, (words, z), 1)
        n_k = np.bincount(z, minlength=K).astype(np.int32)
        prob, qw = np.zeros((W, K)), np.zeros((W, K))
        alias = np.zeros((W, K), np.int32)
        small, large = np.zeros(K, np.int64), np.zeros(K, np.int64)

        def sweep():
            build_alias(n_wk, n_k, args.beta, wbeta, K, prob, alias, qw, small, large)
            alias_mh_sweep(
                token_ptr,
                words,
                z,
                n_wk,
                n_k,
                alpha,
                alpha.sum(),
                args.beta,
                wbeta,
                rng,
                K,
                prob,
                alias,
                qw,
                args.mh_steps,
            )

    for _ in range(args.warmup):
        sweep()
    out = {"threads_1": time_sweeps(sweep, args.sweeps, N)}
    # Score the state with the real model's log-likelihood.
    m = LdaGibbs.from_state(
        corpus,
        LdaGibbs.resolve_options({"K": K, "alpha": args.alpha, "beta": args.beta}),
        {"z": z, "rng": rng, "alpha": alpha, "beta": args.beta, "iteration": 0, "seed": 0},
    )
    out["log_likelihood_per_token"] = m.log_likelihood() / N
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=["movies", "synthetic"], default="movies")
    ap.add_argument("--data", default=str(DATA), help="directory holding movie_reviews.zip (and stopwords.zip)")
    ap.add_argument("--K", type=int, default=100)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--beta", type=float, default=0.01)
    ap.add_argument("--warmup", type=int, default=100, help="sweeps before timing")
    ap.add_argument("--sweeps", type=int, default=20, help="timed sweeps per thread count")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sampler", choices=["sparse", "dense", "alias"], default="sparse")
    ap.add_argument("--mh-steps", type=int, default=1, help="alias sampler: MH cycles per token")
    args = ap.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",")]
    t0 = time.perf_counter()
    corpus = movie_reviews(args.data) if args.corpus == "movies" else synthetic()
    report = {
        "corpus": args.corpus,
        "D": corpus.D,
        "W": corpus.W,
        "N": corpus.N,
        "K": args.K,
        "sampler": args.sampler,
        "warmup_sweeps": args.warmup,
        "corpus_build_s": time.perf_counter() - t0,
    }
    report.update(probe_sparse(corpus, args) if args.sampler == "sparse" else probe_alternative(corpus, args))
    if "threads_2" in report and "threads_1" in report:
        report["speedup_2_threads"] = (
            report["threads_2"]["median_tokens_per_s"] / report["threads_1"]["median_tokens_per_s"]
        )
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
