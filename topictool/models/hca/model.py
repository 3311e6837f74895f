"""The Model-protocol class shared by hdp-gibbs and nplda-gibbs (hdp.py, nplda.py).

It owns the corpus view, the state arrays, the Stirling tables and the hyper-parameter
schedule; the sweep itself is sampler.py, the node algebra pyp.py, burstiness burst.py,
hyper-parameter densities hyper.py. Options, the resume checks and state() are
models/base.py's.

State (``state_array_names()``): z (topic per token), t_dk (tables per document and topic),
hyper (the hyper-parameters, sampler.H_*), t_kw (tables per topic and word, NP-LDA only),
r (burst indicator per token) and burst_concentration (b_psi_k per topic), burst only;
phi_sum and alpha_sum with phi_average only (models/averaging.py); with base's seed, iteration and
RNG stream.
Everything else -- n_kw, n_k, the root counts -- is recomputed from these on resume (restored()).

Threads (parallel.py): with --threads T > 1 a sweep is T rounds of a vocabulary-partitioned
schedule: documents and words are each cut into T blocks, and in round r thread t samples the
tokens of document block (t + r) mod T with words in word block t, so no two threads touch the
same document's or word's counts; only the per-topic totals (n_k, TW_k, T_k) are copied per
thread and reconciled after each round. Initialisation and the hyper-parameters stay on one
thread. One random stream per thread; stream 0 is also the initialisation's and the
hyper-parameters', so T = 1 is unchanged.
"""

import math

import numpy as np

from ...corpus.corpus import token_blocks
from ...errors import InputError
from ...kernels.special import log_pochhammer, log_rising
from ...kernels.stirling import StirlingTable, sorted_pairs
from ...snapshot import Snapshot, doc_topic_csr
from ..averaging import AVERAGE_DEFAULT, AVERAGE_LIMITS, EstimateAverage, average_bytes
from ..base import DISCOUNT, NONNEGATIVE, PRIOR, Model, doc_topic_counts, effective_topics
from . import hyper as hp
from . import parallel as par
from . import sampler as smp
from .burst import burst_statistics, max_in_document_count, max_slots
from .pyp import log_binomial, node_log_factor, pyp_estimate, root_estimate, root_log_factor, topic_word_estimate

# option name -> index in the hyper array (sampler.H_*)
HYPER_INDEX = {
    "a_theta": smp.H_A_THETA,
    "b_theta": smp.H_B_THETA,
    "a_alpha": smp.H_A_ALPHA,
    "b_alpha": smp.H_B_ALPHA,
    "beta": smp.H_BETA,
    "a_phi": smp.H_A_PHI,
    "b_phi": smp.H_B_PHI,
    "a_beta": smp.H_A_BETA,
    "b_beta": smp.H_B_BETA,
    "burst_discount": smp.H_A_PSI,
}
DISCOUNTS = ("a_theta", "a_alpha", "a_phi", "a_beta", "burst_discount")
CONCENTRATIONS = ("b_theta", "b_alpha", "b_phi", "b_beta", "burst_concentration")

COMMON_DEFAULTS = {
    "burst": False,  # the burstiness front end (burst.py)
    "burst_discount": 0.5,  # a_psi (hca: ad; the manual's -Sad=0.5; 0 = Dirichlet process, held fixed)
    "burst_concentration": 100.0,  # initial b_psi_k for every topic (hca: bdk)
    "sample_hyper_every": 3,  # concentrations (and beta) every this many sweeps; 0 = never
    "sample_discount_every": 11,  # discounts every this many sweeps; 0 = never
    "sample_hyper_after": 0,  # no hyper-parameter is sampled through this sweep (a burn-in)
    "fix": "",  # comma-separated hyper-parameters to hold fixed (hca's -F)
    **AVERAGE_DEFAULT,  # the snapshot averages the estimates of the last N sweeps (hca's -lphi); 0 = off
}


def family_defaults(**own):
    """A family's options: K and the document side's concentrations as in hca (-K, b, b0), then
    the family's ``own``, then the burstiness and schedule options both share."""
    return {"K": 100, "b_theta": 10.0, "b_alpha": 10.0, **own, **COMMON_DEFAULTS}


class HcaGibbs(EstimateAverage, Model):
    """Base class; subclasses set name, defaults (family_defaults) and pyp_words."""

    pyp_words = False  # the word side: Dirichlet topics (hdp-gibbs), or PYP topics over a GEM root
    step_unit = "sweep"
    supports_threads = True
    eval_method = "gibbs"  # (a burst snapshot adds its document cache, evaluate/burst.py)
    limits = {
        **Model.limits,
        **{k: PRIOR for k in (*CONCENTRATIONS, "beta")},
        **{k: DISCOUNT for k in DISCOUNTS},
        "sample_hyper_every": NONNEGATIVE,
        "sample_discount_every": NONNEGATIVE,
        "sample_hyper_after": NONNEGATIVE,
        **AVERAGE_LIMITS,
    }
    doc_topic_bytes = 4
    STATE_VERSION = 1

    @classmethod
    def memory_estimate(cls, D, W, N, options, threads=1):
        """Base's lower bound, plus the two K x W float64 sums of ``phi_average``."""
        return super().memory_estimate(D, W, N, options, threads) + average_bytes(options, W)

    def rng_streams(self):
        return self.threads  # one per thread's document block; row 0 also initialises and samples hypers

    def state_array_names(self):
        names = ("z", "t_dk", "hyper")
        if self.pyp_words:
            names += ("t_kw",)
        if self.burst:
            names += ("r", "burst_concentration")
        return names + self._average_names()

    # -- construction -----------------------------------------------------------

    def check_options(self, o):
        known = [n for n in (*CONCENTRATIONS, *DISCOUNTS, "beta") if n in o]
        for name in (s.strip() for s in o["fix"].split(",")):
            if name and name not in known:
                raise InputError(f"option fix: unknown hyper-parameter {name!r} (known: {', '.join(known)})")

    def allocate(self):
        corpus, K, W, D = self.corpus, self.K, self.W, self.D
        self.token_ptr = np.zeros(D + 1, dtype=np.int64)
        np.cumsum(corpus.doc_lengths(), out=self.token_ptr[1:])
        self.doc_ptr = np.ascontiguousarray(corpus.doc_ptr, dtype=np.int64)
        self.word_ids = np.ascontiguousarray(corpus.word_ids, dtype=np.int32)
        self.counts = np.ascontiguousarray(corpus.counts, dtype=np.int32)
        self.burst = bool(self.opts["burst"])
        self.z = np.zeros(self.N, dtype=np.int16 if K < 32768 else np.int32)
        self.r = np.ones(self.N if self.burst else 0, dtype=np.uint8)
        self.t_dk = np.zeros((D, K), dtype=np.int32)
        self.n_kw = np.zeros((W, K), dtype=np.int32)
        self.n_k = np.zeros(K, dtype=np.int32)
        self.T_k = np.zeros(K, dtype=np.int64)
        wk = (W, K) if self.pyp_words else (0, 0)
        self.t_kw = np.zeros(wk, dtype=np.int32)
        self.TW_k = np.zeros(K if self.pyp_words else 0, dtype=np.int64)
        self.TwT = np.zeros(W if self.pyp_words else 0, dtype=np.int64)
        self.hyper = np.zeros(smp.N_HYPER, dtype=np.float64)
        for name, idx in HYPER_INDEX.items():
            if name in self.opts:
                self.hyper[idx] = float(self.opts[name])
        # b_psi_k, one per topic
        self.burst_concentration = np.full(K if self.burst else 0, float(self.opts["burst_concentration"]))
        self.fixed = {s.strip() for s in self.opts["fix"].split(",") if s.strip()}
        self.n_slots = max_slots(corpus) if self.burst else 0
        lengths = np.diff(self.token_ptr)
        # the largest counts a table can be asked for (rows beyond these are never needed)
        self.bounds = np.array(
            [int(lengths.max()) + 1, int(corpus.word_counts().max()) + 1, max_in_document_count(corpus) + 1],
            dtype=np.int64,
        )
        self.extent = np.zeros(6, dtype=np.int64)
        self.stats = np.zeros(2, dtype=np.int64)
        self.tables = {
            "theta": StirlingTable(self.hyper[smp.H_A_THETA], min(64, self.bounds[0]), t_cap=16),
            "phi": StirlingTable(self.hyper[smp.H_A_PHI], min(256, self.bounds[1]), t_cap=16),
            "psi": StirlingTable(self.hyper[smp.H_A_PSI], min(64, self.bounds[2]), t_cap=16),
        }
        self._empty_R = np.zeros((1, 1))
        self._no_totals = np.zeros(0, dtype=np.int64)
        self._no_tables, self._no_parent = np.zeros((0, 0), dtype=np.int32), np.zeros(0)
        self._allocate_average()

    def initialise(self):
        smp.random_topics(self.z, self.K, self.rng)
        self._run_sweep(adding=True)
        self._compute_extent()

    def restored(self):
        """Check what base cannot (values against the corpus and each other), then rebuild
        everything derived from (z, r, t_dk, t_kw, hyper): counts, root counts, Stirling tables."""
        if int(self.z.min()) < 0 or int(self.z.max()) >= self.K:
            raise InputError(f"state has topic assignments outside 0..{self.K - 1} (K={self.K})")
        if self.burst and not np.all(self.burst_concentration > 0):
            raise InputError("state burst_concentration must be positive")
        bad = self._indicator_violation()
        if bad:
            raise InputError(f"{self.name} state: {bad}")
        self._count_words()
        bad = self._table_violation()
        if bad:
            raise InputError(f"{self.name} state: {bad}")
        h = self.hyper
        self.T_k[:] = self.t_dk.sum(axis=0, dtype=np.int64)
        self.tables["theta"].set_discount(h[smp.H_A_THETA])
        self.tables["phi"].set_discount(h[smp.H_A_PHI])
        self.tables["psi"].set_discount(h[smp.H_A_PSI])
        if self.pyp_words:
            self.TW_k[:] = self.t_kw.sum(axis=0, dtype=np.int64)
            self.TwT[:] = self.t_kw.sum(axis=1, dtype=np.int64)
        self._compute_extent()

    def _count_words(self):
        """n_kw and n_k from z (and r)."""
        self.n_kw[:], self.n_k[:] = smp.word_topic_counts(
            self.doc_ptr, self.word_ids, self.counts, self.z, self.r, self.burst, self.W, self.K
        )

    def _indicator_violation(self):
        """What is wrong with the burst indicators r, or None (restored and check_invariants)."""
        if not self.burst:
            return None
        if np.any(self.r > 1):
            return "burst indicators must be 0 or 1"
        single = np.repeat(self.counts == 1, self.counts)
        if np.any(self.r[single] != 1):
            return "a word occurring once in its document must reach the topic model (r = 1)"
        return None

    def _table_violation(self):
        """What is wrong with the table counts t_dk (and t_kw) given n_dk (and n_kw), or None."""
        cells = [("document tables t_dk", self.t_dk, self.doc_topics())]
        if self.pyp_words:
            cells.append(("topic tables t_kw", self.t_kw, self.n_kw))
        for name, t, n in cells:
            if np.any(t > n) or np.any((n > 0) & (t < 1)) or np.any(t < 0):
                return f"{name} violate 1 <= t <= n (or t = 0 when n = 0)"
        return None

    def doc_topics(self):
        """n_dk (D x K int32) from z: every token, burst or not, is a customer of its document."""
        return doc_topic_counts(self.token_ptr, self.z, self.K)

    def doc_topic_table(self):
        return doc_topic_csr(token_ptr=self.token_ptr, z=self.z, K=self.K)  # without the dense table

    # -- the sweep ------------------------------------------------------------------

    def _R(self, name, active=True):
        return self.tables[name].R if active else self._empty_R

    def _compute_extent(self):
        """Largest counts in the state; the sweep keeps these running maxima up to date."""
        ext = self.extent
        ext[:] = 0
        n_dk = self.doc_topics()
        ext[smp.X_N_THETA] = int(n_dk.max())
        ext[smp.X_T_THETA] = int(self.t_dk.max())
        if self.pyp_words:
            ext[smp.X_N_PHI] = int(self.n_kw.max())
            ext[smp.X_T_PHI] = int(self.t_kw.max())
        if self.burst:
            _, _, _, _, pair_n, pair_s = self._burst_stats()
            ext[smp.X_N_PSI] = int(pair_n.max()) if len(pair_n) else 1
            ext[smp.X_T_PSI] = int(pair_s.max()) if len(pair_s) else 1
        self._grow_tables()

    def _grow_tables(self):
        ext = self.extent
        for name, xn, xt, bound in (
            ("theta", smp.X_N_THETA, smp.X_T_THETA, 0),
            ("phi", smp.X_N_PHI, smp.X_T_PHI, 1),
            ("psi", smp.X_N_PSI, smp.X_T_PSI, 2),
        ):
            if name == "phi" and not self.pyp_words or name == "psi" and not self.burst:
                continue
            self.tables[name].ensure(int(ext[xn]) + 2, int(ext[xt]) + 2, int(self.bounds[bound]))

    def _run_sweep(self, adding=False):
        if adding:
            self.extent[:] = 0
        self._grow_tables()
        d, i = 0, 0
        while True:
            status, d, i = smp.sweep(
                adding,
                d,
                i,
                self.token_ptr,
                self.doc_ptr,
                self.word_ids,
                self.counts,
                self.z,
                self.r,
                self.t_dk,
                self.n_kw,
                self.n_k,
                self.t_kw,
                self.TW_k,
                self.TwT,
                self.T_k,
                self._R("theta"),
                self._R("phi", self.pyp_words),
                self._R("psi", self.burst),
                self.hyper,
                self.burst_concentration,
                smp.WORD_PYP if self.pyp_words else smp.WORD_DIRICHLET,
                self.burst,
                self.n_slots,
                self.extent,
                self.bounds,
                self.rng,
                self.stats,
                0,
                self.W,
                self._no_totals,
            )
            if status == smp.STATUS_DONE:
                break
            self._grow_tables()

    def _run_sweep_threaded(self):
        """One sweep on T threads, in T rounds (parallel.py): in round r thread t samples the
        tokens of document block (t + r) mod T whose words lie in its word block t, on the
        shared arrays (no two threads touch the same document or word), against its own copy
        of the per-topic totals, which are reconciled after every round."""
        T = self.threads
        if getattr(self, "_schedule", None) is None:
            self._schedule = par.Schedule(self)
        sc = self._schedule
        sc.start_sweep(self)
        for rnd in range(T):
            self._grow_tables()
            sc.start_round(self)
            # pos, done: per document block; lane t takes block (t + rnd) mod T with word block t
            pos = [(sc.docs[a], int(self.token_ptr[sc.docs[a]])) for a in range(T)]
            done = [sc.docs[a] == sc.docs[a + 1] for a in range(T)]

            def sweep_part(t, rnd=rnd, pos=pos, done=done):
                a = (t + rnd) % T
                if done[a]:
                    return
                d, i = pos[a]
                b = t
                status, d, i = smp.sweep(
                    False, d, i, self.token_ptr,
                    self.doc_ptr[: sc.docs[a + 1] + 1],  # the prefix ends the loop at the block's end
                    self.word_ids, self.counts, self.z, self.r, self.t_dk,
                    self.n_kw, sc.n_k[t], self.t_kw, sc.TW_k[t], self.TwT, sc.T_k[t],
                    self._R("theta"), self._R("phi", self.pyp_words), self._R("psi", self.burst),
                    self.hyper, self.burst_concentration,
                    smp.WORD_PYP if self.pyp_words else smp.WORD_DIRICHLET,
                    self.burst, self.n_slots, sc.extent[t], self.bounds, sc.rng_of(t), sc.stats[t],
                    sc.words[b], sc.words[b + 1], sc.word_totals[t],
                )  # fmt: skip
                pos[a] = (d, i)
                done[a] = status == smp.STATUS_DONE

            while True:
                self.workers.run(sweep_part)
                if all(done):
                    break
                # a thread needs larger Stirling tables: grown while no thread runs, then the
                # unfinished ones resume at their token (no draw was made for it)
                np.max(sc.extent, axis=0, out=self.extent)
                self._grow_tables()
            sc.end_round(self)
        sc.end_sweep(self)

    def step(self):
        """One Gibbs sweep over every token, then the hyper-parameter updates that are due."""
        import time

        self.stats[:] = 0
        if self.threads > 1:
            self._run_sweep_threaded()
        else:
            self._run_sweep()
        self.iteration += 1
        t0 = time.perf_counter()
        sampled = self._sample_hyperparameters()
        metrics = {
            "effective_topics": self.effective_topics(),
            "active_topics": int(np.count_nonzero(self.T_k)),
            "tables": int(self.T_k.sum()),
            "blocked_fraction": float(self.stats[smp.S_BLOCKED]) / self.N,
            "hyper_sampled": sampled,
            "hyper_seconds": round(time.perf_counter() - t0, 6),
        }
        metrics.update(self.hyperparameters(summary=True))
        if self.burst:
            metrics["burst_table_fraction"] = float(self.r.sum()) / self.N
        metrics.update(self._average_step())
        return metrics

    # -- hyper-parameters -----------------------------------------------------------

    def _free(self, name):
        return name in self.opts and name not in self.fixed

    def _sample_hyperparameters(self):
        it = self.iteration
        o = self.opts
        sampled = []
        every, every_a = o["sample_hyper_every"], o["sample_discount_every"]
        start = max(1, o["sample_hyper_after"])
        if every and it > start and it % every == 0:
            sampled += self._sample_concentrations()
        if every_a and it > start and it % every_a == 0:
            sampled += self._sample_discounts()
        return sampled

    def _doc_side_stats(self):
        T_d = self.t_dk.sum(axis=1, dtype=np.int64)
        N_d = np.diff(self.token_ptr)
        return T_d, N_d

    def _sample_concentrations(self):
        h, rng = self.hyper, self.rng
        done = []
        if self._free("b_theta"):
            T_d, N_d = self._doc_side_stats()
            h[smp.H_B_THETA] = hp.sample_concentration(h[smp.H_B_THETA], h[smp.H_A_THETA], T_d, N_d, rng)
            done.append("b_theta")
        if self._free("b_alpha"):
            h[smp.H_B_ALPHA] = hp.sample_root_concentration(h[smp.H_B_ALPHA], h[smp.H_A_ALPHA], self.T_k, rng)
            done.append("b_alpha")
        if self.pyp_words:
            if self._free("b_phi"):
                h[smp.H_B_PHI] = hp.sample_concentration(h[smp.H_B_PHI], h[smp.H_A_PHI], self.TW_k, self.n_k, rng)
                done.append("b_phi")
            if self._free("b_beta"):
                h[smp.H_B_BETA] = hp.sample_root_concentration(h[smp.H_B_BETA], h[smp.H_A_BETA], self.TwT, rng)
                done.append("b_beta")
        elif self._free("beta"):
            h[smp.H_BETA] = hp.sample_dirichlet_beta(h[smp.H_BETA], self.n_kw, self.n_k, rng)
            done.append("beta")
        if self.burst and "burst_concentration" not in self.fixed:
            topic_k, topic_N, topic_S, _, _, _ = self._burst_stats()
            hp.sample_concentrations_by_group(self.burst_concentration, h[smp.H_A_PSI], topic_k, topic_S, topic_N, rng)
            done.append("burst_concentration")
        return done

    def _sample_discounts(self):
        h, rng = self.hyper, self.rng
        done = []
        if self._free("a_theta") and h[smp.H_A_THETA] > 0:
            T_d, _ = self._doc_side_stats()
            n_dk = self.doc_topics()
            pairs = sorted_pairs(n_dk, self.t_dk)
            h[smp.H_A_THETA] = hp.sample_discount(h[smp.H_A_THETA], h[smp.H_B_THETA], T_d, pairs, rng)
            self.tables["theta"].set_discount(h[smp.H_A_THETA])
            done.append("a_theta")
        if self._free("a_alpha") and h[smp.H_A_ALPHA] > 0:
            h[smp.H_A_ALPHA] = hp.sample_root_discount(h[smp.H_A_ALPHA], h[smp.H_B_ALPHA], self.T_k, rng)
            done.append("a_alpha")
        if self.pyp_words:
            if self._free("a_phi") and h[smp.H_A_PHI] > 0:
                pairs = sorted_pairs(self.n_kw, self.t_kw)
                h[smp.H_A_PHI] = hp.sample_discount(h[smp.H_A_PHI], h[smp.H_B_PHI], self.TW_k, pairs, rng)
                self.tables["phi"].set_discount(h[smp.H_A_PHI])
                done.append("a_phi")
            if self._free("a_beta") and h[smp.H_A_BETA] > 0:
                h[smp.H_A_BETA] = hp.sample_root_discount(h[smp.H_A_BETA], h[smp.H_B_BETA], self.TwT, rng)
                done.append("a_beta")
        if self.burst and self._free("burst_discount") and h[smp.H_A_PSI] > 0:
            topic_k, topic_N, topic_S, pair_k, pair_n, pair_s = self._burst_stats()
            pairs = sorted_pairs(pair_n, pair_s)
            b = self.burst_concentration
            h[smp.H_A_PSI] = hp.sample_discount_by_group(h[smp.H_A_PSI], b, topic_k, topic_S, pairs, rng)
            self.tables["psi"].set_discount(h[smp.H_A_PSI])
            done.append("burst_discount")
        return done

    def _burst_stats(self):
        """The burst nodes and multi-word pairs of every document (burst.burst_statistics), in
        document order: (topic_k, topic_N, topic_S, pair_k, pair_n, pair_s). On T threads each
        takes a block of documents (about equal tokens) and the blocks are joined in order: the
        same arrays."""
        T = self.threads
        docs = token_blocks(self.token_ptr, T)
        parts = [None] * T

        def part(t):
            d0, d1 = docs[t], docs[t + 1]
            i0, n = self.token_ptr[d0], self.token_ptr[d1] - self.token_ptr[d0]
            out = [np.empty(n, dtype=np.int64) for _ in range(6)]
            nt, npair = burst_statistics(
                self.doc_ptr, self.counts, self.z, self.r, self.K, self.n_slots, *out, d0, d1, i0
            )  # fmt: skip
            parts[t] = [a[:nt] for a in out[:3]] + [a[:npair] for a in out[3:]]

        self.workers.run(part)
        if T == 1:
            return tuple(parts[0])
        return tuple(np.concatenate([p[j] for p in parts]) for j in range(6))

    def hyperparameters(self, summary=False):
        out = {name: float(self.hyper[idx]) for name, idx in HYPER_INDEX.items() if name in self.opts}
        if not self.burst:
            out.pop("burst_discount", None)
        elif summary:
            out["burst_concentration_mean"] = float(self.burst_concentration.mean())
        else:
            out["burst_concentration"] = [float(x) for x in self.burst_concentration]
        return out

    # -- estimates (paper eq. 5) -------------------------------------------------------

    def alpha_estimate(self):
        """E[alpha | root counts]: the topic probabilities of the GEM root."""
        return root_estimate(self.T_k, self.hyper[smp.H_A_ALPHA], self.hyper[smp.H_B_ALPHA])

    def beta_estimate(self):
        return root_estimate(self.TwT, self.hyper[smp.H_A_BETA], self.hyper[smp.H_B_BETA])

    def phi_estimate(self):
        h = self.hyper
        if self.pyp_words:
            phi = topic_word_estimate(self.n_kw, self.t_kw, h[smp.H_A_PHI], h[smp.H_B_PHI], self.beta_estimate())
        else:  # the Dirichlet mean (n + beta) / (N + W beta)
            phi = topic_word_estimate(self.n_kw, self._no_tables, 0.0, h[smp.H_BETA], self._no_parent)
        phi /= phi.sum(axis=1, keepdims=True)
        return phi

    def theta_estimate(self):
        """E[theta_d | counts] for every training document (D x K)."""
        n_dk = self.doc_topics()
        h = self.hyper
        return pyp_estimate(n_dk, self.t_dk, h[smp.H_A_THETA], h[smp.H_B_THETA], self.alpha_estimate()[None, :])

    def topic_weight(self):
        return np.bincount(self.z, minlength=self.K).astype(np.float64) / self.N

    def effective_topics(self):
        return effective_topics(self.topic_weight())

    def _estimates(self):
        return self.phi_estimate(), self.hyper[smp.H_B_THETA] * self.alpha_estimate()

    def snapshot(self):
        h = self.hyper
        phi, alpha = self._snapshot_estimates()
        meta = {
            "model": self.name,
            "options": dict(self.opts),
            "iteration": self.iteration,
            "hyperparameters": self.hyperparameters(),
            "effective_topics": self.effective_topics(),
            "tokens": self.N,
            "threads_used": self.threads,
            "phi_averaged_steps": self.averaged_steps(),
        }
        return Snapshot(
            phi=phi,
            alpha=alpha,
            topic_weight=self.topic_weight(),
            vocab=self.corpus.vocab,
            meta=meta,
            burst_concentration=self.burst_concentration.copy() if self.burst else None,
            burst_discount=float(h[smp.H_A_PSI]) if self.burst else None,
        )

    # -- likelihood ---------------------------------------------------------------------

    def log_likelihood(self):
        """log of the collapsed posterior of (w, z, table counts, r): the product of every node's
        factor (pyp.py's eq. 3' at the document nodes, the alpha root, the topic nodes or the
        Dirichlet, the beta root; at the burst nodes, whose indicators r are part of the state,
        the paper's eq. 3), given the hyper-parameters."""
        h = self.hyper
        n_dk = self.doc_topics()
        R = self.tables["theta"].R
        ll = 0.0
        for d in range(self.D):
            ll += node_log_factor(n_dk[d], self.t_dk[d], h[smp.H_A_THETA], h[smp.H_B_THETA], R)
        ll += root_log_factor(self.T_k, h[smp.H_A_ALPHA], h[smp.H_B_ALPHA])
        if self.pyp_words:
            R = self.tables["phi"].R
            for k in range(self.K):
                ll += node_log_factor(self.n_kw[:, k], self.t_kw[:, k], h[smp.H_A_PHI], h[smp.H_B_PHI], R)
            ll += root_log_factor(self.TwT, h[smp.H_A_BETA], h[smp.H_B_BETA])
            used = int(np.count_nonzero(self.TwT))
            ll -= math.lgamma(self.W + 1) - math.lgamma(self.W - used + 1)  # labels of the used words
        else:
            from scipy.special import gammaln

            beta, W = h[smp.H_BETA], self.W
            nz = self.n_kw[self.n_kw > 0].astype(np.float64)
            ll += float(np.sum(gammaln(nz + beta) - gammaln(beta)))
            ll -= float(np.sum(gammaln(self.n_k + W * beta) - gammaln(W * beta)))
        if self.burst:
            topic_k, topic_N, topic_S, pair_k, pair_n, pair_s = self._burst_stats()
            a = h[smp.H_A_PSI]
            tab = self.tables["psi"]
            for k, N, S in zip(topic_k, topic_N, topic_S):
                ll += log_pochhammer(self.burst_concentration[k], a, S) - log_rising(self.burst_concentration[k], N)
            for n, s in zip(pair_n, pair_s):
                if n > 1:
                    ll += tab.log(n, s) - log_binomial(n, s)
        return float(ll)

    # -- resume and invariants ---------------------------------------------------------

    def check_invariants(self):
        def fail(msg):
            raise AssertionError(f"{self.name} invariant broken: {msg}")

        bad = self._indicator_violation()
        if bad:
            fail(bad)
        n_kw, n_k = smp.word_topic_counts(
            self.doc_ptr, self.word_ids, self.counts, self.z, self.r, self.burst, self.W, self.K
        )
        if not np.array_equal(n_kw, self.n_kw) or not np.array_equal(n_k, self.n_k):
            fail("n_kw / n_k disagree with the assignments")
        bad = self._table_violation()
        if bad:
            fail(bad)
        if not np.array_equal(self.T_k, self.t_dk.sum(axis=0, dtype=np.int64)):
            fail("alpha root counts T_k differ from the sum of t_dk over documents")
        if int(self.n_k.sum()) != (int(self.r.sum()) if self.burst else self.N):
            fail("n_k does not sum to the tokens that reach the topic model")
        if self.pyp_words:
            tw = self.t_kw
            if not np.array_equal(self.TW_k, tw.sum(axis=0, dtype=np.int64)):
                fail("TW_k differs from the sum of t_kw over words")
            if not np.array_equal(self.TwT, tw.sum(axis=1, dtype=np.int64)):
                fail("beta root counts differ from the sum of t_kw over topics")
        if self.burst:
            _, topic_N, topic_S, _, pair_n, pair_s = self._burst_stats()
            if np.any(topic_S > topic_N) or np.any(topic_S < 1):
                fail("burst tables S_dk violate 1 <= S <= N")
            if np.any(pair_s > pair_n) or np.any(pair_s < 1):
                fail("burst tables s_wk violate 1 <= s <= n for a word occurring more than once")
        if not np.all(np.isfinite(self.hyper)):
            fail("hyper-parameters are not finite")
