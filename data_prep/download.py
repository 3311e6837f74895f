"""Resumable HTTPS downloads with the standard library, checked against known digests.

``download(url, dest)`` fetches ``url`` into ``dest.part`` beside ``dest`` and renames it
to ``dest`` only when it is complete and its digests match, so ``dest`` is either absent
or a complete, verified file:

* an interrupted transfer (a dropped connection, a timeout, Ctrl-C, a killed job) leaves
  ``dest.part``; the next call asks only for the rest with ``Range: bytes=N-``, guarded by
  ``If-Range`` with the validator (strong ETag, else Last-Modified) the server gave for the
  partial file, which ``dest.part.json`` records. A server that ignores the range (200)
  or says the file changed gets the whole file again; one that answers 416 for a part
  that is already complete is taken at its word and the part is verified.
* a transfer that ends short of the announced length is resumed at once, up to
  ``retries`` times with exponential back-off; 5xx, 408 and 429 answers are retried too,
  other 4xx answers are final.
* when complete, the file's sha256 (and sha1, when a sha1 is expected) is computed; a
  mismatch with the expected digest deletes the part and raises ChecksumError. The sha256
  is written to ``dest.sha256`` (sha256sum format) so a recipe without a recorded
  checksum can be pinned from it.
"""

import contextlib
import hashlib
import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from topictool import store
from topictool.errors import InputError, TopicToolError

USER_AGENT = "topictool-data_prep/1 (Python urllib; research data fetcher)"
CHUNK = 1 << 20


class DownloadError(TopicToolError):
    """The server or the network failed (exit code 1): running again resumes."""


class ChecksumError(InputError):
    """A file's digest or size is not the recorded one (exit code 2)."""


class _Retry(Exception):
    """A transient failure: try again (resuming from the part file)."""


def _stderr(message):
    print(message, file=sys.stderr, flush=True)


def file_digests(path, algorithms=("sha256",)):
    """{algorithm: hex digest} of the file, read once."""
    hashes = {a: hashlib.new(a) for a in algorithms}
    with open(path, "rb") as f:
        while True:
            buf = f.read(CHUNK)
            if not buf:
                break
            for h in hashes.values():
                h.update(buf)
    return {a: h.hexdigest() for a, h in hashes.items()}


def verify_file(path, sha256=None, size=None, sha1=None):
    """Check a complete file against what is known of it; returns its digests (may be {})."""
    path = Path(path)
    actual_size = path.stat().st_size
    if size is not None and actual_size != size:
        raise ChecksumError(f"size is {actual_size:,} bytes, expected {size:,}", path)
    wanted = {a: v.lower() for a, v in (("sha256", sha256), ("sha1", sha1)) if v}
    if not wanted:
        return {}
    digests = file_digests(path, tuple(wanted))
    for algorithm, expected in wanted.items():
        if digests[algorithm] != expected:
            raise ChecksumError(
                f"{algorithm} is {digests[algorithm]}, expected {expected} (a different or damaged copy)", path
            )
    return digests


def download(
    url, dest, *, sha256=None, size=None, sha1=None, retries=5, backoff=2.0, timeout=60.0, log=_stderr, chunk_size=CHUNK
):
    """Fetch ``url`` into ``dest`` (resumable, verified); returns ``dest``.

    An existing ``dest`` is verified and kept. ``sha256``/``sha1``: expected hex digests,
    None when not known; ``size``: expected length in bytes, None when not known.
    """
    dest = Path(dest)
    if dest.exists():
        verify_file(dest, sha256, size, sha1)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    state_path = dest.with_name(dest.name + ".part.json")
    state = _load_state(state_path)
    if part.exists() and state.get("url") not in (None, url):
        log(f"{part.name}: a partial download of another URL ({state['url']}); starting over")
        _discard(part, state_path)
        state = {}
    transfer = _Transfer(url, part, state_path, state, timeout, chunk_size, log)
    attempt = 0
    while True:
        try:
            transfer.run()
            break
        except _Retry as e:
            attempt += 1
            if attempt > retries:
                raise DownloadError(
                    f"{url}: {e}; gave up after {attempt} attempts (run again to resume from {part})"
                ) from None
            wait = backoff * 2 ** (attempt - 1)
            log(f"{dest.name}: {e}; retrying in {wait:g} s (attempt {attempt + 1} of {retries + 1})")
            time.sleep(wait)
    have = part.stat().st_size
    if size is not None and have != size:
        _discard(part, state_path)
        raise ChecksumError(f"downloaded {have:,} bytes, expected {size:,} (the part file was deleted)", url)
    digests = file_digests(part, ("sha256", "sha1") if sha1 else ("sha256",))
    for algorithm, expected in (("sha256", sha256), ("sha1", sha1)):
        if expected and digests[algorithm] != expected.lower():
            _discard(part, state_path)
            raise ChecksumError(
                f"{algorithm} of the download is {digests[algorithm]}, expected {expected} "
                f"(the part file was deleted; a changed or damaged file on the server?)",
                url,
            )
    with open(part, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(part, dest)
    with contextlib.suppress(OSError):
        state_path.unlink()
    store.write_text(dest.with_name(dest.name + ".sha256"), f"{digests['sha256']}  {dest.name}\n")
    log(
        f"{dest.name}: {have:,} bytes, sha256 {digests['sha256']}"
        + (" (matches the recorded checksum)" if sha256 else " (no checksum recorded to compare with)")
    )
    return dest


class _Transfer:
    """One download's requests; ``run`` makes one request and appends to the part file."""

    def __init__(self, url, part, state_path, state, timeout, chunk_size, log):
        self.url, self.part, self.state_path, self.state = url, part, state_path, state
        self.timeout, self.chunk_size, self.log = timeout, chunk_size, log

    def run(self):
        have = self.part.stat().st_size if self.part.exists() else 0
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
        if have:
            headers["Range"] = f"bytes={have}-"
            if self.state.get("validator"):
                headers["If-Range"] = self.state["validator"]
        try:
            response = urllib.request.urlopen(urllib.request.Request(self.url, headers=headers), timeout=self.timeout)
        except urllib.error.HTTPError as e:
            self._http_error(e, have)
            return
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            raise _Retry(f"cannot connect: {getattr(e, 'reason', e)}") from None
        with response:
            if response.status == 206:
                start, total = _content_range(response.headers.get("Content-Range"))
                if start != have or (self.state.get("total") not in (None, total)):
                    _discard(self.part, self.state_path)
                    self.state = {}
                    raise _Retry("the server's range does not continue the partial file; starting over")
                mode = "ab"
                if have:
                    self.log(f"{self.part.name}: resuming at {have:,} of {total:,} bytes")
            elif response.status == 200:
                if have:
                    self.log(f"{self.part.name}: the server sent the whole file; starting over")
                have = 0
                length = response.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else None
                mode = "wb"
            else:
                raise DownloadError(f"{self.url}: unexpected HTTP status {response.status}")
            self.state = {"url": self.url, "validator": _validator(response.headers), "total": total}
            store.write_json(self.state_path, self.state)
            self._copy(response, mode, have, total)

    def _copy(self, response, mode, have, total):
        progress = _Progress(self.part.name.removesuffix(".part"), have, total, self.log)
        with open(self.part, mode) as f:
            try:
                while True:
                    buf = response.read(self.chunk_size)
                    if not buf:
                        break
                    f.write(buf)
                    have += len(buf)
                    progress.update(have)
            except (OSError, http.client.HTTPException) as e:
                raise _Retry(f"transfer interrupted at {have:,} bytes ({e.__class__.__name__})") from None
            finally:
                f.flush()
                os.fsync(f.fileno())
        if total is not None and have < total:
            raise _Retry(f"connection closed at {have:,} of {total:,} bytes")
        if total is not None and have > total:
            _discard(self.part, self.state_path)
            self.state = {}
            raise _Retry(f"received {have:,} bytes, more than the announced {total:,}; starting over")
        progress.done(have)

    def _http_error(self, e, have):
        try:
            if e.code == 416 and have:
                _, total = _content_range(e.headers.get("Content-Range"), unsatisfied=True)
                if total == have:
                    return  # the part is complete already; it is verified next
                _discard(self.part, self.state_path)
                self.state = {}
                raise _Retry("the server refused the range of the partial file; starting over")
            if e.code in (408, 429) or e.code >= 500:
                raise _Retry(f"HTTP {e.code} {e.reason}")
            raise DownloadError(f"{self.url}: HTTP {e.code} {e.reason}")
        finally:
            e.close()


class _Progress:
    """A line on stderr every few seconds (batch logs stay short)."""

    def __init__(self, name, have, total, log, every=10.0):
        self.name, self.start_bytes, self.total, self.log, self.every = name, have, total, log, every
        self.t0 = self.last = time.monotonic()

    def update(self, have):
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            self.log(f"{self.name}: {self._amount(have)}, {self._rate(have, now)}")

    def done(self, have):
        self.log(f"{self.name}: received {self._amount(have)}, {self._rate(have, time.monotonic())}")

    def _amount(self, have):
        if self.total:
            return f"{have / 1e6:,.1f} of {self.total / 1e6:,.1f} MB ({100 * have / self.total:.0f}%)"
        return f"{have / 1e6:,.1f} MB"

    def _rate(self, have, now):
        return f"{(have - self.start_bytes) / 1e6 / max(now - self.t0, 1e-3):.1f} MB/s"


def _content_range(value, unsatisfied=False):
    """'bytes 100-199/1000' -> (100, 1000); 'bytes */1000' -> (None, 1000)."""
    try:
        unit, spec = value.split(" ", 1)
        span, total = spec.split("/")
        if unit != "bytes":
            raise ValueError(unit)
        total = None if total == "*" else int(total)
        if span == "*":
            if not unsatisfied:
                raise ValueError(span)
            return None, total
        return int(span.split("-")[0]), total
    except (AttributeError, ValueError):
        if unsatisfied:
            return None, None
        raise _Retry(f"unreadable Content-Range {value!r}") from None


def _validator(headers):
    """A strong ETag, else Last-Modified: what If-Range may carry (RFC 9110 13.1.5)."""
    etag = headers.get("ETag")
    if etag and not etag.startswith("W/"):
        return etag
    return headers.get("Last-Modified")


def _load_state(path):
    try:
        state = json.loads(Path(path).read_text("utf-8"))
        return state if isinstance(state, dict) else {}
    except (OSError, ValueError):
        return {}


def _discard(*paths):
    for p in paths:
        with contextlib.suppress(OSError):
            Path(p).unlink()
