"""The one exception hierarchy. The command line turns InputError into
exit code 2 and a single line on stderr; anything else is exit code 1."""


class TopicToolError(Exception):
    """Base class of every error topictool raises on purpose."""

    exit_code = 1


class InputError(TopicToolError):
    """Bad input or usage: names the file and line when they are known."""

    exit_code = 2

    def __init__(self, message, path=None, line=None):
        super().__init__(message)
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line

    def __str__(self):
        where = ""
        if self.path is not None:
            where = self.path
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        return where + self.message


class DamagedFileError(InputError):
    """A file exists but fails its format or checksum checks."""


def existing_file(path, expected="a file"):
    """``path`` as a Path when it names an existing file; InputError naming it when it is
    missing or a directory (``expected`` says what it should have been)."""
    from pathlib import Path

    path = Path(path)
    if not path.exists():
        raise InputError(f"no such file (expected {expected})", path)
    if path.is_dir():
        raise InputError(f"is a directory, expected {expected}", path)
    return path
