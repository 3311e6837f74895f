"""Reference co-occurrence counts for topic coherence (``topictool cooc``).

What is counted
---------------
Only the words of a given vocabulary W are counted, but every token of a
document occupies its position: the tokenizer of ``topictool prepare`` turns a
document into its token sequence t_0 .. t_{n-1}, and tokens outside the
vocabulary (stop words, rare words, numbers are not tokens at all) keep their
place in that sequence, as in Newman et al. (2010) and palmetto's "boolean
sliding window". A *unit* is a pseudo-document:

* ``--window w`` (default 10): every window position of w consecutive tokens,
  t_s .. t_{s+w-1} for s = 0 .. n-w. A document shorter than w tokens (but not
  empty) is one unit, so a document of n >= 1 tokens gives max(1, n-w+1) units;
  a document without tokens gives none.
* ``--window doc``: every document is one unit (also one without tokens).

Documents are: the articles of a MediaWiki dump (main namespace, not redirects;
see ``topictool.corpus.wikipedia``), the non-blank lines of a text file, the
non-blank files of a directory or zip.

Then, with U the number of units,

    word_counts[v]        = number of units containing word v at least once
    pair count of (v, u)  = number of units containing both v and u (v != u)
    p(v) = word_counts[v] / U,     p(v, u) = pair count / U

A word repeated inside a unit counts once for that unit.

How it is counted
-----------------
The window kernel slides incrementally: ``cnt[v]`` is the multiplicity of v in
the current window and ``enter[v]`` the first window of v's current stretch of
presence. When v leaves (its multiplicity drops to 0 on moving to window s) it
was present in windows enter[v] .. s-1, and every word u still present shared
windows max(enter[u], enter[v]) .. s-1 with it, so the pair count of (u, v)
grows by s - max(enter[u], enter[v]) in one step rather than one window at a
time. At the end of a document the words still present are closed the same
way. Pair counts are accumulated in an open-addressing hash table keyed by
``i * W + j`` (i < j), emptied into sorted (key, count) arrays when it fills.

Memory stays bounded on a reference of any size (a full English Wikipedia
dump: ~20 GB of bz2, ~90 GB of XML, 6 million articles): only pairs of
vocabulary words are kept; each worker's sorted arrays are spilled to "run"
files when they exceed its share of ``--memory``; runs are merged by key ranges
(streamed through memory maps) into larger runs and finally into the output.

Workers and the partial state
-----------------------------
The main process reads the inputs — reader threads, one input each, up to
``(N + 3) // 4`` at a time (bz2/gzip decompression releases the GIL, so several
input files, e.g. the 27 files of a split dump, decompress in parallel) — and
cuts them into batches of whole pages (dumps are cut at a ``</page>``, the
workers split the pages) or documents; ``--workers N`` processes (with N = 1:
the main process itself) parse pages, strip markup, tokenize and count. Every
``checkpoint_seconds`` (and when the run is interrupted by SIGINT/SIGTERM) all
batches sent so far are finished, each worker writes its counts as a run file,
and ``state.npz`` in the state directory (``OUT.state`` beside the output) is
replaced atomically: the runs that hold the counts, the word counts and totals,
and for each input the number of pages / lines / files consumed. A killed run
restarts from the last state: it skips that many units of each input and counts
the rest, so the final counts equal an uninterrupted run's. Run files not named
in the state (written after the last checkpoint) are deleted on restart.

Output (``REF.npz``, loads without pickle)
------------------------------------------
``vocab`` (W words), ``word_counts`` (int64, W), ``pair_keys`` (int64, sorted,
key = i*W + j with i < j), ``pair_counts`` (int64), ``units`` (0-d: windows, or
documents with ``--window doc``), ``documents`` (0-d), ``tokens`` (0-d, all
tokens, in and out of the vocabulary), ``window`` (0-d: w, or 0 for documents)
and ``meta``, a 0-d string holding JSON: format, sources, options, totals.
``pair_keys``/``pair_counts`` are stored uncompressed so ``load_reference`` can
memory-map them.

``topictool.cooc.prepared`` counts the same units among a few words (the
topics' top words) straight from a prepared corpus, for ``topictool pmi
--reference CORPUS_DIR``: documents from its bags of words, sliding windows
over token sequences rebuilt from its text sources.
"""

from .count import PairCounter
from .pipeline import CoocOptions, Interrupted, build_reference, parse_window, source_kind, state_dir_for
from .reference import Reference, load_reference, write_reference

__all__ = [
    "CoocOptions",
    "Interrupted",
    "PairCounter",
    "Reference",
    "build_reference",
    "load_reference",
    "parse_window",
    "source_kind",
    "state_dir_for",
    "write_reference",
]
