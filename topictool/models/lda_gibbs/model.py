"""lda-gibbs: collapsed Gibbs sampling for LDA (Griffiths & Steyvers 2004) with
Mallet's SparseLDA sampler, threads on a vocabulary-partitioned schedule, and Mallet's
hyperparameter optimisation (asymmetric alpha, symmetric beta; Wallach 2008).

Symbols: alpha (K) the Dirichlet prior on a document's topic proportions theta_d;
beta the symmetric prior on each topic's word distribution phi_k; z the topic of
every token; n_kw, n_k, n_dk the counts of z by (topic, word), topic, (document, topic).
Option ``alpha`` is the per-topic value (Mallet's --alpha is the sum, K times it).

The sweep itself is `kernels.py` beside this file (its docstring has the bucket
decomposition, the count layout and the speed figures behind the choice of sampler);
this class owns the arrays, the threads, the schedule of hyperparameter updates and
saving.

Threads, ``schedule=partition`` (the default; Yan, Xu & Qi 2009, tomotopy's PARTITION): the
documents are cut into T blocks of about equal token counts and the vocabulary into T runs of
word ids of about equal sampling cost (before every sparse sweep, from the word-topic lists: a
word's tokens x (TOKEN_COST_SLOTS + its topics), kernels.cost_blocks; for dense sweeps, equal
token counts). A sweep is T rounds; in round r thread t samples the cell (document block
t, word block (t + r) mod T), so in a round no two threads touch the same word's counts, and
the one shared word-topic table n_kw needs no copy and no lock. Each document belongs to one
thread, so n_dk is exact too; only the topic totals n_k are shared: each thread samples
against its own copy, and the copies' changes are summed after every round (reconcile_totals).
So the only approximation is that, within one round, a thread does not see the other threads'
changes to n_k -- a few hundred tokens' worth against totals of N/K, a relative error far
below the sampler's own noise -- where AD-LDA's threads each miss a whole sweep of the other
threads' word counts, the staleness that grows with T. A document's tokens are sorted by word
id (the corpus stores them so), so its tokens in a word block are one run. Its n_dk must
survive between rounds. Where a dense int16 row per document weighs at most
ROW_BYTES_PER_TOKEN (``by_rows``: D K 2 <= 1.25 N, K <= ROWS_MAX_K, documents under 2^15
tokens), the rows hold them (kernels.row_cell: a visit restores and closes nothing; one chunk).
Otherwise the thread keeps its documents' counts packed in a cache of min(length, K) slots per
document; to bound that cache (about half a byte per token in all) a thread's documents are
processed in S chunks of T rounds each. With one chunk the cache outlives the sweep: the next
sweep restores the documents from it instead of counting them from z (kept in topic order, so
that a resumed run, which counts afresh, restores alike: kernels.round_flags).
The T cells of a round are the T lanes (a lane: a block of documents, its cache and cursors, its
copy of the totals and its own random stream), and the threads take them from a pool
(threads.RoundPool) inside the kernel, so that a sweep is one Workers.run (where the C library
lacks POSIX mutexes, one Workers.run per round, thread t running lane t); the thread that finishes
a round's last cell reconciles the totals and opens the next round. Which thread runs a lane never
changes a bit, so the same (seed, threads) gives the same model. With more threads than cores
only as many threads as there are cores take the T lanes' cells (RoundPool.runners): a barrier per
round would wake all T threads T times a sweep (at 64 threads on two cores, 4,000 context switches
a sweep), and threads that only sleep still cost their start and end every sweep.

Sampler (``sampler=auto``, the default): training starts with a dense sampler (kernels.py,
"The dense start") while the words still have most of the K topics, and switches to SparseLDA
once the average token's word has at most K/5 of them (both exact Gibbs; eq. (1) of kernels.py
either way). The choice is made before every sweep from the counts alone (so a resumed run
chooses as the straight one did), only in the first DENSE_SWEEPS sweeps, only in one process
with one thread or the partitioned schedule (whose cells then run kernels.dense_cell: the
word blocks keep the dense table's rows apart as they keep the slot lists apart), K <=
DENSE_MAX_K, and when the dense table (W x K rounded up to 16, 4 bytes each) costs at most
DENSE_BYTES_PER_TOKEN per token: a large corpus, whose first sweeps are where SparseLDA is
slow. ``sampler=sparse`` uses SparseLDA from the start.

``schedule=copy-merge`` is AD-LDA (Newman et al. 2009, Mallet's WorkerRunnable): every thread
samples its document block against its own copy of n_kw and n_k for a whole sweep, and the
copies' changes are summed after it.

Memory per token: 2 bytes of word id (4 when W > 65536) + 2 of topic (4 when K >= 32768), plus
at most one 4-byte word-topic slot per token (min(frequency, K) per word); the partition schedule adds its rows
(at most 1.25 bytes per token) or caches (at most about half a byte per token), copy-merge a copy of the slots
per thread.

MPI ranks (``train --engine mpi``): each rank owns a contiguous run of documents
(mpi.RankCorpus), cut into its thread blocks, holds a copy of the whole corpus's n_kw and n_k,
and draws from the random streams of its blocks (rank r, thread t: stream r*threads + t).
With ``schedule=partition`` (the default) the threads of all ranks are the lanes of one
partitioned schedule (rank r's thread t is lane r*threads + t; word blocks cut for all the
lanes, from the whole n_kw that every rank holds at a sweep's start): a rank samples its lanes'
cells of a round, then (``_share_round``) passes the block its
first lane sampled to the previous rank, whose last lane samples it next, and receives one from
the next rank (a ring step; blocks travel as their used slots, kernels.pack_blocks), and the
totals' changes are summed; after a sweep's last round every rank's blocks go to every rank.
A block is always sampled against the counts one process would have, so P ranks x T threads give
exactly the model of one process with P*T threads (with sampler=sparse: the dense start is a
one-process sampler; the rows or caches are chosen from the whole corpus). What moves is a
block's used slots per round and the whole table's once a sweep, not the tokens that changed
topic. With ``schedule=copy-merge`` the ranks run distributed AD-LDA: after its sweep every rank
learns every other rank's changes (``_exchange``: the tokens that changed topic, gathered, when
that moves fewer bytes than a dense W x K Allreduce of the changes, else the Allreduce) and
applies them; the counts' layout is canonical, so the result does not depend on the way chosen,
and P ranks x T threads give exactly the model of one process with P*T threads and
schedule=copy-merge on the same (one-file) corpus.
Hyperparameters are learnt from histograms summed over the ranks (the same on every rank).
Memory per rank: its tokens (6 bytes each), the whole n_kw (min(frequency, K) slots of 4 bytes
per word); with partition the caches (at most about 2 bytes per token of the corpus over the
ranks: fewer chunks, so fewer exchanges) and a round's send and receive buffers (the used
slots); with copy-merge the tokens' previous topics (2 bytes each) and 8 bytes per (word,
topic) while the dense exchange is in use.
"""

import numpy as np

from ...corpus.corpus import token_blocks
from ...errors import InputError
from ...kernels.dirichlet_opt import doc_topic_histograms, learn_parameters, learn_symmetric_concentration
from ...kernels.partition import words_ascending
from ...kernels.rng import make_streams
from ...snapshot import Snapshot, doc_topic_csr
from ...threads import POOLS, RoundPool, padded
from ..averaging import AVERAGE_DEFAULT, AVERAGE_LIMITS, EstimateAverage, average_bytes
from ..base import NONNEGATIVE, PRIOR, Model, doc_topic_counts
from . import kernels as kern

# Mallet's Gamma hyperprior on each alpha_k (ParallelTopicModel.optimizeAlpha).
ALPHA_PRIOR_SHAPE = 1.001
ALPHA_PRIOR_SCALE = 1.0
# learnSymmetricConcentration: at most this many fixed-point steps per beta update.
BETA_ITERATIONS = 200
BETA_TOLERANCE = 1e-12
# Learned hyperparameters are kept at least this large so that no division by zero
# or log(0) can follow from a topic that lost all of its documents.
HYPER_FLOOR = 1e-12
# How threads share the sweep (module docstring).
SCHEDULES = ("partition", "copy-merge")
SAMPLERS = ("auto", "sparse")
NO_TABLE = np.zeros((0, 0), dtype=np.int32)  # the partitioned kernel's "no dense table"
NO_SMOOTHING = np.zeros(0)  # nor a round's smoothing (kernels.round_smoothing)
NO_ROWS = np.zeros((0, 0), dtype=np.int16)  # its "no dense rows of n_dk" (the caches instead)
# the dense start (module docstring, "Sampler")
DENSE_SWEEPS = 100  # never after this many sweeps
DENSE_MAX_K = 256  # its cost grows with K; SparseLDA's with the topics a word has
DENSE_BYTES_PER_TOKEN = 1.0  # the dense table's size against the training tokens
DENSE_TOPICS_FRACTION = 1 / 5  # dense while the mean topics per token's word exceed K times this
# The partition schedule's caches of n_dk hold at most about this many bytes per token
# (and at least CACHE_FLOOR bytes in all), which sets the number of chunks.
CACHE_BYTES_PER_TOKEN = 0.5
# MPI ranks: every chunk costs G exchanges of word blocks between processes (microseconds between
# threads, a few hundred between ranks), so a rank's caches may take 2 bytes per token: on the
# movie reviews one chunk (2 rounds a sweep at 2 ranks) instead of 3
RANK_CACHE_BYTES_PER_TOKEN = 2.0
CACHE_FLOOR = 256 << 10
# The partition schedule keeps a dense row of n_dk per document (int16, D x K) instead of the
# caches when the rows weigh at most this many bytes per token, K is at most ROWS_MAX_K (a visit
# costs O(K)) and no document reaches 2^15 tokens: a visit then restores and closes nothing.
ROW_BYTES_PER_TOKEN = 1.25
ROWS_MAX_K = 256
# The partitioned schedule's word blocks during sparse sweeps balance tokens x (this + the
# word's topics): a token's fixed cost in units of one slot of the q walk (kernels.cost_blocks)
TOKEN_COST_SLOTS = 60


def _dense_start(K, W, N, threads, sampler, schedule):
    """Whether one process of lda-gibbs starts with dense sweeps (module docstring, "Sampler")."""
    return (
        sampler == "auto"
        and (int(threads) == 1 or schedule == "partition")
        and K <= DENSE_MAX_K
        and 4 * W * kern.dense_width(K) <= DENSE_BYTES_PER_TOKEN * N
    )


def _parse_alpha_vector(text, K):
    parts = [p for p in text.replace(" ", "").split(",") if p]
    try:
        values = np.array([float(p) for p in parts], dtype=np.float64)
    except ValueError:
        raise InputError(f"option alpha_vector={text!r}: expected {K} comma-separated numbers") from None
    if values.shape != (K,):
        raise InputError(f"option alpha_vector has {len(values)} values but K={K}")
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        bad = values[~(np.isfinite(values) & (values > 0))][0]
        raise InputError(f"option alpha_vector: every value must be > 0, got {bad!r}")
    return values


class LdaGibbs(EstimateAverage, Model):
    name = "lda-gibbs"
    defaults = {
        "K": 100,
        "alpha": 0.1,
        "alpha_vector": "",
        "beta": 0.01,
        "optimize_alpha": False,
        "optimize_interval": 10,
        "optimize_burn_in": 50,
        "optimize_beta": True,
        "schedule": "partition",
        "sampler": "auto",
        **AVERAGE_DEFAULT,  # the snapshot averages the estimates of the last N sweeps; 0 = off
    }
    limits = {
        **Model.limits,
        "alpha": PRIOR,
        "beta": PRIOR,
        "optimize_interval": NONNEGATIVE,
        "optimize_burn_in": NONNEGATIVE,
        **AVERAGE_LIMITS,
    }

    step_unit = "sweep"
    supports_threads = True  # the partitioned schedule (module docstring)
    supports_mpi = True  # AD-LDA across ranks (module docstring)
    rank_state = ("z", "rng")
    eval_method = "gibbs"
    state_arrays = ("z", "alpha")
    state_scalars = {"beta": float}

    @classmethod
    def memory_estimate(cls, D, W, N, options, threads=1):
        """Base's bound; schedule=copy-merge adds each thread's copy of the word-topic slots, and
        phi_average its two K x W sums."""
        K = int(options.get("K", 1))
        copies = int(threads) * 4 * min(N, K * W) if int(threads) > 1 and options.get("schedule") == "copy-merge" else 0
        dense = (
            4 * W * kern.dense_width(K)
            if _dense_start(K, W, N, threads, options.get("sampler", "auto"), options.get("schedule", "partition"))
            else 0
        )
        return super().memory_estimate(D, W, N, options, threads) + copies + dense + average_bytes(options, W)

    def state_array_names(self):
        return self.state_arrays + self._average_names()

    def check_options(self, opts):
        if opts["K"] >= 2**30:
            raise InputError(f"option K={opts['K']}: too many topics")
        if opts["alpha_vector"]:
            _parse_alpha_vector(opts["alpha_vector"], opts["K"])
        if opts["schedule"] not in SCHEDULES:
            raise InputError(f"option schedule={opts['schedule']!r}: expected one of {', '.join(SCHEDULES)}")
        if opts["sampler"] not in SAMPLERS:
            raise InputError(f"option sampler={opts['sampler']!r}: expected one of {', '.join(SAMPLERS)}")

    def rng_streams(self):
        return self.threads  # one stream per thread's document block

    def allocate(self):
        # word ids in 2 bytes when the vocabulary allows: a third of the per-token memory
        self.token_ptr, self.words = self.corpus.tokens(np.uint16 if self.W <= 1 << 16 else np.int32)
        threads = self.threads
        self.engine = getattr(self.corpus, "engine", None)  # MPI ranks (module docstring)
        self.z = np.zeros(self.N, dtype=np.int16 if self.K < 32768 else np.int32)
        self.TB = kern.topic_bits(self.K)
        local_freq = kern.word_frequencies(self.words, self.W)
        # lanes: the threads of every rank (rank r's thread t is lane r*threads + t)
        self.lanes = threads * (self.engine.size if self.engine is not None else 1)
        self.partitioned = self.lanes > 1 and self.opts["schedule"] == "partition"
        if self.engine is None:
            self.block_ptr = token_blocks(self.token_ptr, threads)
            freq = local_freq
        else:
            self.block_ptr = np.asarray(self.corpus.block_ptr, dtype=np.int64)
            self.N_total = int(self.corpus.N_total)
            freq = self.engine.sum(local_freq)  # n_kw covers every rank's tokens
            if not self.partitioned:  # AD-LDA's exchange compares z before and after a sweep
                self.z_prev = np.zeros_like(self.z)
                self._dense = None
        self.tw_ptr = kern.word_slots(freq, self.K)
        self.tw = np.zeros(self.tw_ptr[-1], dtype=kern.packed_dtype(self.K, int(freq.max())))
        self.n_k = np.zeros(self.K, dtype=np.int32)
        if threads > 1 or self.partitioned:
            self.n_k_local = np.zeros((threads, self.K), dtype=np.int32)
        self._pool = None  # the partitioned sweep's threads.RoundPool, made on first use
        self._rounds = None  # under MPI, the partitioned sweep's exchanges (_plan_rounds)
        self._send = self._recv = None
        if self.partitioned:
            self._allocate_cells(freq)
        elif threads > 1:
            self.tw_local = np.zeros((threads, len(self.tw)), dtype=self.tw.dtype)
        self.dense_start = self.engine is None and _dense_start(
            self.K, self.W, self.N, threads, self.opts["sampler"], self.opts["schedule"]
        )
        self.freq = local_freq if self.dense_start else None  # for the mean topics per token
        self.n_wk = None  # the dense table while the dense start runs, made at its first sweep
        self.tw_stale = False  # tw and n_k behind the dense table (rebuilt when read)
        if self.opts["alpha_vector"]:
            self.alpha = _parse_alpha_vector(self.opts["alpha_vector"], self.K)
        else:
            self.alpha = np.full(self.K, self.opts["alpha"], dtype=np.float64)
        self.beta = float(self.opts["beta"])
        self._allocate_average()

    def _allocate_cells(self, freq):
        """The partition schedule's word blocks (from the whole corpus's word frequencies
        ``freq``), chunks and n_dk caches (module docstring)."""
        T, K = self.threads, self.K
        if not words_ascending(self.token_ptr, self.words):
            raise RuntimeError("lda-gibbs partition schedule: a document's tokens are not in word order")
        # word blocks: runs of word ids of about N/lanes tokens each (a frequent word cannot be
        # split), cut as documents are: by the running total of tokens (cumsum into one array:
        # W-sized temporaries here had set the allocation peak of 2 threads on the movie reviews)
        running = np.zeros(len(freq) + 1, dtype=np.int64)
        np.cumsum(freq, out=running[1:])
        self.word_ptr = self.token_word_ptr = token_blocks(running, self.lanes)
        del running
        # chunks: each thread's documents cut into S runs of about equal tokens, S the same for
        # every lane (the rounds are common, on every rank) and large enough to bound the caches
        # (the cache slots of a run of documents, min(length, K) each, summed by a kernel: with
        # short documents a per-document array would weigh more than the tokens themselves)
        sums, longest = kern.capped_sums(self.token_ptr, K, np.array([0, self.D]))
        total, longest = int(sums[0]), int(longest)
        budget = max(CACHE_FLOOR, CACHE_BYTES_PER_TOKEN * self.N)
        if self.engine is not None:  # S from the whole corpus: the same on every rank
            total = int(self.engine.sum(np.array([total], dtype=np.int64))[0])
            longest = int(self.engine.max(np.array([longest], dtype=np.int64))[0])
            budget = max(CACHE_FLOOR, RANK_CACHE_BYTES_PER_TOKEN * self.N_total)
        dtype = kern.packed_dtype(K, longest)
        S = max(1, int(np.ceil(total * np.dtype(dtype).itemsize / budget)))
        D_total, N_total = self.D, self.N
        if self.engine is not None:  # the choice of the whole corpus: the same on every rank
            D_total = int(self.engine.sum(np.array([self.D], dtype=np.int64))[0])
            N_total = self.N_total
        self.by_rows = K <= ROWS_MAX_K and longest < 2**15 and 2 * D_total * K <= ROW_BYTES_PER_TOKEN * N_total
        self.rows = NO_ROWS  # made at the first sweep, like the caches
        if self.by_rows:  # no cache to bound: one chunk, and the cache a placeholder
            S = 1
        self.chunk_ptr = np.zeros((T, S + 1), dtype=np.int64)
        need = 1
        for t in range(T):
            d0, d1 = int(self.block_ptr[t]), int(self.block_ptr[t + 1])
            cuts = token_blocks(self.token_ptr[d0 : d1 + 1] - self.token_ptr[d0], S) + d0
            self.chunk_ptr[t] = cuts
            if not self.by_rows:
                need = max(need, int(kern.capped_sums(self.token_ptr, K, cuts)[0].max(initial=1)))
        docs = int(np.max(self.chunk_ptr[:, 1:] - self.chunk_ptr[:, :-1], initial=1))
        cursor = np.int32 if longest < 2**31 else np.int64
        # made at the first sweep, after the count rebuild's scratch is gone (a lower peak)
        self._cells = ((T, need), dtype, (T, docs), cursor)
        self.cache = self.cursor = None
        self._cached = False  # the caches hold the documents' counts from the last sweep

    def initialise(self):
        if self.engine is not None:  # this rank's blocks draw from their streams of the whole run
            first = int(self.corpus.first_block)
            self.rng = make_streams(self.seed, first + self.threads)[first:].copy()
        kern.init_assignments(self.token_ptr, self.block_ptr, self.z, self.rng, self.K)
        self._rebuild_counts()

    def restored(self):
        if int(self.z.min()) < 0 or int(self.z.max()) >= self.K:
            raise InputError(f"state has topic assignments outside 0..{self.K - 1} (K={self.K})")
        if np.any(self.alpha <= 0):
            raise InputError(f"state alpha must be {self.K} positive numbers")
        if not self.beta > 0:
            raise InputError(f"state beta={self.beta!r} must be positive")
        self._rebuild_counts()

    def _rebuild_counts(self):
        """n_kw and n_k from z (and the threads' copies of them); under MPI from every rank's z."""
        self._cached = False  # z is new (a start or a resumed state): the cells count afresh
        self.n_wk = None
        self.tw_stale = False
        if self.engine is not None:
            self._global_counts(self.tw, self.n_k)
        else:
            kern.build_counts(self.words, self.z, self.tw_ptr, self.tw, self.n_k, self.TB, self._count_budget())
        self._share_counts()

    def _count_budget(self):
        """Bytes of dense scratch for build_counts: half a byte per token, within 256 KiB .. 64 MiB
        (it sets the peak of memory: at a byte per token the movie reviews peaked at 8.0 bytes per
        token, at half a byte 7.5; a smaller table only means more passes over the tokens)."""
        return int(min(64 << 20, max(256 << 10, self.N // 2)))

    def _share_counts(self):
        """Every thread's copies of the counts (the totals; under copy-merge n_kw too) := the counts."""
        if self.threads > 1 or self.partitioned:
            self.n_k_local[:] = self.n_k
            if not self.partitioned:
                self.tw_local[:] = self.tw

    # -- the Model protocol ---------------------------------------------------------

    def step(self):
        """One Gibbs sweep over every token, then the hyperparameter update when due."""
        ranks = self.engine is not None
        if ranks and not self.partitioned:
            np.copyto(self.z_prev, self.z)
        dense = self._dense_sweep_due()
        if dense and self.n_wk is None:
            self.n_wk = np.zeros((self.W, kern.dense_width(self.K)), dtype=np.int32)
            kern.dense_counts(self.words, self.z, self.n_wk.shape[1], self.n_wk.reshape(-1))
        elif not dense:
            self._sparse_counts()
            self.n_wk = None
        if self.partitioned:
            self._cut_words(dense)
        if ranks and self.partitioned:
            self._sweep_ranks()
        elif self.threads == 1 and dense:
            kern.dense_sweep(
                self.token_ptr, self.words, self.z, self.n_wk, self.n_k, self.alpha, self.beta, self.rng, 0
            )
        elif self.threads == 1:
            kern.sample_block(
                self.token_ptr,
                self.words,
                self.z,
                self.tw_ptr,
                self.tw,
                self.n_k,
                self.alpha,
                self.beta,
                self.rng,
                0,
                0,
                self.D,
                self.TB,
            )
        elif self.partitioned:
            self._sweep_partitioned(self.n_wk if dense else NO_TABLE)
        else:
            self._sweep_copy_merge()
        self.tw_stale = dense
        self.iteration += 1
        exchange = {}
        if ranks:
            exchange = {"exchange": "partition"} if self.partitioned else self._exchange()
        o = self.opts
        optimized = False
        if (
            o["optimize_alpha"]
            and o["optimize_interval"] > 0
            and self.iteration > o["optimize_burn_in"]
            and self.iteration % o["optimize_interval"] == 0
        ):
            self._optimize_hyperparameters()
            optimized = True
        averaged = self._average_step()  # from the global counts: the same sums on every rank
        return {
            "alpha_sum": float(self.alpha.sum()),
            "beta": float(self.beta),
            "active_topics": int(np.count_nonzero(self.n_k)),
            "hyper_optimized": optimized,
            **exchange,
            **averaged,
        }

    def _dense_sweep_due(self):
        """Whether this sweep is a dense one (module docstring, "Sampler"): a function of z and the
        iteration, so that a resumed run decides as the straight one did."""
        if not self.dense_start or self.iteration >= DENSE_SWEEPS:
            return False
        if self.n_wk is not None:
            topics = kern.dense_topics(self.freq, self.n_wk)
        else:  # (tw is stale only while the dense table is kept)
            topics = kern.sparse_topics(self.freq, self.tw_ptr, self.tw)
        return topics > DENSE_TOPICS_FRACTION * self.K * self.N

    def _sparse_counts(self):
        """tw and n_k up to date with z (after dense sweeps they are rebuilt when read)."""
        if self.tw_stale:
            kern.build_counts(self.words, self.z, self.tw_ptr, self.tw, self.n_k, self.TB, self._count_budget())
            self.tw_stale = False

    def _cut_words(self, dense):
        """The sweep's word blocks: equal in tokens for dense cells (every token costs alike),
        equal in cost for sparse ones (kernels.cost_blocks), cut from the whole n_kw, which every
        rank holds at a sweep's start and a resumed run rebuilds: the same cut everywhere."""
        if dense:
            ptr = self.token_word_ptr
        else:
            ptr = kern.cost_blocks(self.tw_ptr, self.tw, self.TB, TOKEN_COST_SLOTS, self.lanes)
        if not np.array_equal(ptr, self.word_ptr):
            self.word_ptr = ptr
            self._rounds = None  # the ranks' exchanges follow the blocks

    def _sweep_partitioned(self, n_wk):
        """T rounds per chunk; round r: lane t samples (its chunk, word block (t + r) mod T).
        With the round pool each thread takes cells in one kernel call until the sweep is over;
        else one Workers.run per round. The cells are dense with a dense table n_wk, sparse with
        NO_TABLE."""
        T = self.threads
        self._make_caches()
        if POOLS:
            if self._pool is None:
                self._pool = RoundPool(T)
                self._totals = padded(T, self.K, np.int32, full=True)  # rows apart: written at every token
            self._totals[:, : self.K] = self.n_k
            # the row cells' inv_k and s for a round, made once a round instead of once a cell
            smooth = np.empty(self.K + 1) if self.by_rows and not n_wk.shape[1] else NO_SMOOTHING
            if smooth.shape[0]:
                kern.round_smoothing(self.n_k, self.alpha, self.beta, (self.tw_ptr.shape[0] - 1) * self.beta, smooth)
            self._pool.open(T * (self.chunk_ptr.shape[1] - 1))  # T rounds a chunk

            def thread(t):
                kern.sweep_partitioned_thread(
                    self.token_ptr,
                    self.words,
                    self.z,
                    self.tw_ptr,
                    self.tw,
                    n_wk,
                    self._totals,
                    self.n_k,
                    self.alpha,
                    self.beta,
                    self.rng,
                    self.chunk_ptr,
                    self.word_ptr,
                    self.cache,
                    self.rows,
                    self.cursor,
                    self._cached,
                    self._pool.memory,
                    self._pool.state,
                    self.TB,
                    smooth,
                )

            self.workers.run(thread, self._pool.runners)  # min(T, cores) threads take the T lanes' cells
            self.n_k_local[:] = self.n_k
        else:
            for c in range(self.chunk_ptr.shape[1] - 1):
                for r in range(T):
                    self._round_cells(c, r, n_wk)
                    kern.reconcile_totals(self.n_k, self.n_k_local)
        self._cached = True

    def _round_cells(self, c, r, n_wk=NO_TABLE, first_lane=0):
        """Round r of chunk c, one cell per thread: thread t (lane first_lane + t) samples its
        documents of chunk c whose word is in block (first_lane + t + r) mod lanes, densely with a
        dense table n_wk. Called from Python, a round at a time (without POSIX mutexes; MPI ranks)."""
        T, G = self.threads, self.lanes
        common = (self.alpha, self.beta, self.rng)
        flags = kern.round_flags(r, G, self.chunk_ptr.shape[1] - 1, self._cached)

        def cell(t):
            b = (first_lane + t + r) % G
            where = (self.chunk_ptr[t, c], self.chunk_ptr[t, c + 1], self.word_ptr[b], self.word_ptr[b + 1])
            tables = (self.tw_ptr, self.tw, self.n_k_local[t])
            if n_wk.shape[1]:
                rest = (*where, *flags, self.cache[t], self.rows, self.cursor[t], self.TB)
                kern.dense_cell(self.token_ptr, self.words, self.z, n_wk, self.n_k_local[t], *common, t, *rest)
            elif self.by_rows:
                rest = (*where, flags[0], self.rows, self.cursor[t], self.TB)
                kern.row_cell(self.token_ptr, self.words, self.z, *tables, *common, t, *rest)
            else:
                rest = (*where, *flags, self.cache[t], self.cursor[t], self.TB)
                kern.sample_cell(self.token_ptr, self.words, self.z, *tables, *common, t, *rest)

        if T == 1:
            cell(0)
        else:
            self.workers.run(cell)

    def _make_caches(self):
        """The cells' n_dk caches or dense rows, and cursors (made at the first sweep: a lower peak
        of memory); the rows counted from z when z is new (a start or a resumed state)."""
        if self.cache is None:
            cache_shape, cache_dtype, cursor_shape, cursor_dtype = self._cells
            self.cache = np.zeros(cache_shape, dtype=cache_dtype)
            self.cursor = np.zeros(cursor_shape, dtype=cursor_dtype)
            if self.by_rows:
                self.rows = np.zeros((self.D, self.K), dtype=np.int16)
        if self.by_rows and not self._cached:
            kern.fill_rows(self.token_ptr, self.z, self.rows)

    def _sweep_copy_merge(self):
        """AD-LDA: every block against its own copy of the counts, then the copies merged."""
        T = self.threads

        def block(t):
            kern.sample_block(
                self.token_ptr,
                self.words,
                self.z,
                self.tw_ptr,
                self.tw_local[t],
                self.n_k_local[t],
                self.alpha,
                self.beta,
                self.rng,
                t,
                self.block_ptr[t],
                self.block_ptr[t + 1],
                self.TB,
            )

        self.workers.run(block)
        cuts = np.linspace(0, self.W, T + 1).astype(np.int64)
        self.workers.run(lambda t: kern.merge_words(self.tw_ptr, self.tw, self.tw_local, cuts[t], cuts[t + 1], self.TB))
        kern.reconcile_totals(self.n_k, self.n_k_local)

    # -- MPI ranks (module docstring) --------------------------------------------------

    def _sweep_ranks(self):
        """The partitioned schedule over every rank's threads (lanes): in round r lane g samples
        (its chunk, word block (g + r) mod lanes). After each round the blocks move where the
        next round samples them (_share_round; the blocks are disjoint, so a copy, not a merge)
        and the totals' changes are summed: each block is sampled against the counts one process
        with all the lanes as threads would have."""
        T, G, p = self.threads, self.lanes, self.engine.rank
        self._make_caches()
        S = self.chunk_ptr.shape[1] - 1
        for c in range(S):
            for r in range(G):
                self._round_cells(c, r, first_lane=p * T)
                self._share_round(r, last=c == S - 1 and r == G - 1)
        self._cached = True

    def _share_round(self, r, last):
        """After round r: the word blocks of tw where the next round needs them, and n_k += every
        lane's changes. Within a sweep a ring step: lane g samples next the block lane g + 1 has
        just sampled, so each rank needs one block, from the next rank (whose first lane sampled
        it), and sends the block of its own first lane to the previous one. After the sweep's last
        round (``last``) every rank's blocks go to every rank: the readers of the counts
        (likelihood, hyperparameters, snapshots) see the whole table. Blocks travel as their used
        slots (kernels.pack_blocks)."""
        T, P, p = self.threads, self.engine.size, self.engine.rank
        if self._rounds is None:
            self._plan_rounds()
        if P > 1 and last:
            w_lo, w_hi = self._rounds["last"]
            used = kern.pack_blocks(self.tw_ptr, self.tw, w_lo[p], w_hi[p], self._send)
            every, offsets = self.engine.allgatherv(self._send[:used])
            for q in range(P):
                if q != p:
                    kern.unpack_blocks(self.tw_ptr, self.tw, w_lo[q], w_hi[q], every[offsets[q] : offsets[q + 1]])
        elif P > 1:
            mine_lo, mine_hi, their_lo, their_hi = self._rounds["ring"][r]
            used = kern.pack_blocks(self.tw_ptr, self.tw, mine_lo, mine_hi, self._send)
            self.engine.shift(self._send[:used], self._recv, (p - 1) % P, (p + 1) % P)
            kern.unpack_blocks(self.tw_ptr, self.tw, their_lo, their_hi, self._recv)
        change = self.n_k_local.sum(axis=0, dtype=np.int64) - T * self.n_k.astype(np.int64)
        self.n_k += self.engine.sum(change).astype(self.n_k.dtype)
        self.n_k_local[:] = self.n_k

    def _plan_rounds(self):
        """The word blocks of each round's ring step (this rank's first lane's, the next rank's)
        and of every rank's lanes in the last round (a sweep's gather); send and receive buffers
        large enough for any of them (counts + slots)."""
        T, G, P, p = self.threads, self.lanes, self.engine.size, self.engine.rank
        ptr, tw_ptr = self.word_ptr, self.tw_ptr

        def room(lo, hi):
            return int((hi - lo).sum() + (tw_ptr[hi] - tw_ptr[lo]).sum())

        # rank q's blocks in round r: (q T + t + r) mod G, t < T
        blocks = (np.arange(P)[:, None] * T + np.arange(T)[None, :] + G - 1) % G
        last = (ptr[blocks], ptr[blocks + 1])
        send = room(*(x[p] for x in last))
        ring, recv = [], 1
        for r in range(G):
            mine, theirs = (p * T + r) % G, (((p + 1) % P) * T + r) % G
            ring.append((ptr[[mine]], ptr[[mine + 1]], ptr[[theirs]], ptr[[theirs + 1]]))
            send = max(send, room(ptr[[mine]], ptr[[mine + 1]]))
            recv = max(recv, room(ptr[[theirs]], ptr[[theirs + 1]]))
        self._rounds = {"ring": ring, "last": last}
        if self._send is None or len(self._send) < send:
            self._send = np.empty(send, dtype=self.tw.dtype)
        if self._recv is None or len(self._recv) < recv:
            self._recv = np.empty(recv, dtype=self.tw.dtype)

    def _exchange(self):
        """Every other rank's changes of this sweep into this rank's n_kw and n_k: as records of
        the tokens that changed topic (Allgatherv) when they are fewer than the W x K cells of a
        dense table, else the dense table of changes (Allreduce). Returns the step's metrics."""
        engine, K = self.engine, self.K
        changed = kern.count_changed(self.z_prev, self.z)
        total = int(engine.sum(np.array([changed], dtype=np.int64))[0])
        if total < K * self.W and self.W * K * K < 2**62:
            records = np.empty(changed, dtype=np.int64)
            kern.change_records(self.words, self.z_prev, self.z, K, records)
            every, offsets = engine.allgatherv(records)
            r = engine.rank
            kern.apply_records(self.tw_ptr, self.tw, self.n_k, every, offsets[r], offsets[r + 1], self.TB)
            how = "sparse"
        else:
            if self._dense is None:
                self._dense = np.zeros(self.W * K, dtype=np.int32)
            kern.dense_changes(self.words, self.z_prev, self.z, K, self._dense)
            every = engine.sum(self._dense)
            kern.apply_dense(self.tw_ptr, self.tw, self.n_k, every, self._dense, self.TB)
            how = "dense"
        self._share_counts()
        return {"exchange": how, "tokens_moved": total, "tokens": self.N_total}

    def _global_counts(self, tw, n_k):
        """n_kw and n_k of every rank's tokens (a dense W x K Allreduce, in slices of words)."""
        K, W = self.K, self.W
        step = max(1, min(W, (64 << 20) // (4 * K)))  # at most 64 MB of counts at a time
        order = np.argsort(self.words, kind="stable")
        bounds = np.searchsorted(self.words[order], np.arange(0, W + step, step))
        tw[:] = 0
        n_k[:] = 0
        part_nk = np.zeros(K, dtype=n_k.dtype)
        for i, w0 in enumerate(range(0, W, step)):
            w1 = min(W, w0 + step)
            idx = order[bounds[i] : bounds[i + 1]]
            local = np.zeros((w1 - w0) * K, dtype=np.int32)
            kern.dense_counts(self.words[idx] - w0, self.z[idx], K, local)
            counts = self.engine.sum(local)
            lo, hi = self.tw_ptr[w0], self.tw_ptr[w1]
            kern.pack_dense(self.tw_ptr[w0 : w1 + 1] - lo, tw[lo:hi], part_nk, counts, self.TB)
            n_k += part_nk

    def _optimize_hyperparameters(self):
        """Mallet's optimizeAlpha (one fixed-point step) and optimizeBeta (to convergence); under
        MPI on the histograms of every rank's documents (summed: the same on every rank)."""
        self._sparse_counts()
        topic_doc_hist, doc_len_hist = doc_topic_histograms(self.token_ptr, self.z, self.K)
        if self.engine is not None:
            topic_doc_hist, doc_len_hist = self._summed_histograms(topic_doc_hist, doc_len_hist)
        learn_parameters(self.alpha, topic_doc_hist, doc_len_hist, ALPHA_PRIOR_SHAPE, ALPHA_PRIOR_SCALE, 1)
        np.maximum(self.alpha, HYPER_FLOOR, out=self.alpha)
        if self.opts["optimize_beta"]:
            count_hist, size_hist = kern.word_topic_histograms(self.tw, self.n_k, self.TB)
            beta_sum = learn_symmetric_concentration(
                count_hist, size_hist, self.W, self.beta * self.W, BETA_ITERATIONS, BETA_TOLERANCE
            )
            self.beta = max(float(beta_sum) / self.W, HYPER_FLOOR)
        if not (np.all(np.isfinite(self.alpha)) and np.isfinite(self.beta)):
            raise FloatingPointError("hyperparameter optimisation produced a non-finite value")

    def _summed_histograms(self, topic_doc_hist, doc_len_hist):
        """The ranks' histograms padded to the longest of them and summed (integers: exact)."""
        shape = self.engine.max(np.array([topic_doc_hist.shape[1], doc_len_hist.shape[0]], dtype=np.int64))
        tdh = np.zeros((self.K, int(shape[0])), dtype=np.int64)
        tdh[:, : topic_doc_hist.shape[1]] = topic_doc_hist
        dlh = np.zeros(int(shape[1]), dtype=np.int64)
        dlh[: doc_len_hist.shape[0]] = doc_len_hist
        return self.engine.sum(tdh), self.engine.sum(dlh)

    def log_likelihood(self):
        """Collapsed joint log p(w, z | alpha, beta), as Mallet's modelLogLikelihood (under MPI:
        the documents' terms summed over the ranks, plus the word-topic terms every rank has)."""
        self._sparse_counts()
        if self.engine is not None:
            args = (self.alpha, self.beta, self.W, self.TB)
            words = kern.log_likelihood(np.zeros(1, np.int64), self.z, self.tw, self.n_k, *args)
            docs = kern.log_likelihood(self.token_ptr, self.z, self.tw[:0], np.zeros_like(self.n_k), *args)
            return float(self.engine.sum(np.array([docs]))[0] + words)
        return float(
            kern.log_likelihood(self.token_ptr, self.z, self.tw, self.n_k, self.alpha, self.beta, self.W, self.TB)
        )

    def _estimates(self):
        """phi_kw = (n_kw + beta) / (n_k + W beta) and alpha, this sweep's."""
        self._sparse_counts()
        return kern.topic_word_mean(self.tw_ptr, self.tw, self.n_k, self.beta, self.TB), self.alpha

    def snapshot(self):
        phi, alpha = self._snapshot_estimates()
        meta = {
            "model": self.name,
            "options": dict(self.opts),
            "iteration": self.iteration,
            "alpha_sum": float(self.alpha.sum()),
            "beta": float(self.beta),
            "threads": self.threads,
            "tokens": self._N_total(),
            "phi_averaged_steps": self.averaged_steps(),
        }
        return Snapshot(
            phi=phi,
            alpha=alpha.copy(),
            topic_weight=self.n_k.astype(np.float64) / self._N_total(),
            vocab=self.corpus.vocab,
            meta=meta,
        )

    def check_invariants(self):
        """Raise AssertionError unless every count table agrees with z, recomputed from scratch."""

        def fail(msg):
            raise AssertionError(f"lda-gibbs invariant broken: {msg}")

        N = self._N_total()
        if self.n_wk is not None:
            n_wk = np.zeros_like(self.n_wk)
            kern.dense_counts(self.words, self.z, n_wk.shape[1], n_wk.reshape(-1))
            if not np.array_equal(n_wk, self.n_wk):
                fail("the dense n_kw disagrees with z")
        self._sparse_counts()
        if int(self.n_k.sum(dtype=np.int64)) != N:
            fail(f"n_k sums to {int(self.n_k.sum())}, not N={N}")
        tw = np.zeros_like(self.tw)
        n_k = np.zeros_like(self.n_k)
        if self.engine is not None:
            self._global_counts(tw, n_k)
        else:
            kern.build_counts(self.words, self.z, self.tw_ptr, tw, n_k, self.TB, self._count_budget())
        if not np.array_equal(n_k, self.n_k):
            fail("n_k disagrees with z")
        if not np.array_equal(tw, self.tw):
            fail("n_kw (word-topic slots) disagrees with z")
        if int((self.tw >> self.TB).sum(dtype=np.int64)) != N:
            fail("n_kw does not sum to N")
        n_dk = self.doc_topics()
        if not np.array_equal(n_dk.sum(axis=1, dtype=np.int64), np.diff(self.token_ptr)):
            fail("n_dk rows do not sum to the document lengths")
        columns = n_dk.sum(axis=0, dtype=np.int64)
        if self.engine is not None:
            columns = self.engine.sum(columns)
        if not np.array_equal(columns, self.n_k.astype(np.int64)):
            fail("n_dk columns disagree with n_k")
        if self.partitioned and self.by_rows and self.rows.size and self._cached:
            if not np.array_equal(self.rows, n_dk):
                fail("a document's dense row of n_dk disagrees with z")
        if self.threads > 1 or self.partitioned:
            if not np.all(self.n_k_local == self.n_k):
                fail("a thread's copy of the topic totals differs from the merged totals")
            if not self.partitioned and not np.all(self.tw_local == self.tw):
                fail("a thread's copy of the counts differs from the merged counts")
        if not (np.all(np.isfinite(self.alpha)) and np.all(self.alpha > 0) and self.beta > 0):
            fail("hyperparameters are not positive and finite")

    # -- extras ---------------------------------------------------------------------

    def _N_total(self):
        """Tokens of the whole corpus (under MPI: of every rank)."""
        return self.N_total if self.engine is not None else self.N

    def doc_topics(self):
        """n_dk (D x K int32), computed from z."""
        return doc_topic_counts(self.token_ptr, self.z, self.K)

    def doc_topic_table(self):
        return doc_topic_csr(token_ptr=self.token_ptr, z=self.z, K=self.K)  # without the dense table
