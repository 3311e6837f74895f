"""Corpora: the Corpus type, readers and writers, vocabulary handling, splits."""

from .corpus import Corpus, from_triples
from .prepared import load_corpus, load_prepared

__all__ = ["Corpus", "from_triples", "load_corpus", "load_prepared"]
