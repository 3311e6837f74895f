"""Models from other tools as Snapshots, and the plain text model format.

The importers read the files another tool writes and return a ``Snapshot``
(``topictool.snapshot.load_model`` opens topictool's own model files):

    import_hca(phi_path, tokens_path=None, par_path=None, alpha_path=None, vocab_path=None)
    import_mallet(weights_path, keys_path=None, vocab_path=None)
    import_text(prefix, vocab_path=None)          (the format of docs/formats-text-model.md)
    export_text(snapshot, prefix)                 (its writer)

What every importer does with the topics (so a snapshot's promises hold):

* Vocabulary alignment. With ``vocab_path`` (a file with one word per line, a
  prepared corpus directory, or a sequence of words) the topics are re-indexed
  by word onto that vocabulary; otherwise the tool's own word list is used.
  Words of the imported model outside the vocabulary are dropped (their mass
  reported); if no word overlaps, InputError.
* No zero probabilities. A vocabulary word that the imported model lacks, or
  that has probability 0 (or an underflowed float32), gets, in each topic, the
  smallest positive probability that topic gives any imported word
  ("smallest-mass smoothing"), before the row is renormalised. Every such
  repair is reported.
* Rows renormalised to sum to 1 (rows already summing to 1 within rounding are
  left bit-for-bit untouched, so export_text -> import_text is the identity).

The messages (one line each) are appended to the list passed as ``report=``
(for the command line to print) and kept in ``snapshot.meta["import_messages"]``;
``snapshot.meta["source"]`` records the files read. import_text keeps the meta
stored with the model (its .meta.json) unchanged.
"""

from .hca import import_hca
from .mallet import import_mallet
from .text import export_text, import_text, text_paths

__all__ = ["export_text", "import_hca", "import_mallet", "import_text", "text_paths"]
