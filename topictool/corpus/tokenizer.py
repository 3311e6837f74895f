"""Tokenizer and stop words."""

import re
from importlib import resources

from ..errors import InputError, existing_file

# Words of letters, with inner apostrophes or hyphens ("don't", "well-known").
DEFAULT_PATTERN = r"[^\W\d_]+(?:['\-][^\W\d_]+)*"


class Tokenizer:
    def __init__(self, pattern=DEFAULT_PATTERN, lowercase=True):
        if not isinstance(pattern, str) or not pattern:
            raise InputError("--token-pattern is empty")
        try:
            self._regex = re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as e:
            raise InputError(f"--token-pattern {pattern!r}: not a regular expression ({e})") from None
        if self._regex.groups:
            # findall would return the groups' text instead of the tokens
            raise InputError(f"--token-pattern {pattern!r} has capturing groups; write (?:...) instead of (...)")
        probe = "ab c1 d-e f'g \u00e9. h\n"
        if self._regex.fullmatch("") is not None or any(m.end() == m.start() for m in self._regex.finditer(probe)):
            raise InputError(
                f"--token-pattern {pattern!r} matches the empty string (every position would be a "
                f"token); use + instead of *"
            )
        self.pattern = pattern
        self.lowercase = lowercase

    def __call__(self, text):
        # typographic apostrophes count as "'" (str.replace is ~2x faster than translate here)
        if not text.isascii():
            text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'")
        if self.lowercase:
            text = text.lower()
        return self._regex.findall(text)


def load_stopwords(spec, encoding="utf-8"):
    """'english' (our list), 'none', or a file of words (whitespace separated, # comments)."""
    if spec is None or spec == "none":
        return frozenset()
    if spec == "english":
        text = resources.files("topictool.corpus").joinpath("data/english.txt").read_text("utf-8")
    else:
        path = existing_file(spec, "a stop word file (or english, none)")
        try:
            text = path.read_text(encoding)
        except UnicodeDecodeError as e:
            raise InputError(f"undecodable stop word file: {e.reason}", path) from None
        except OSError as e:
            raise InputError(f"cannot read the stop word file: {e.strerror or e}", path) from None
    words = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        words.update(w.lower() for w in line.split())
    return frozenset(words)
