"""Streaming reader for MediaWiki XML dumps and a wikitext-to-plain-text stripper.

A dump (``enwiki-*-pages-articles*.xml.bz2``, also ``.gz`` or uncompressed) is
read in blocks of whole ``<page>...</page>`` elements and cut into pages as raw
bytes, without building a tree, so memory stays bounded however large the dump
is. Cutting on the literal tags is safe: inside a page's text every ``<`` is
escaped as ``&lt;``.

``parse_page`` reads one page's title, namespace, redirect flag and wikitext;
``article_text`` returns the plain text of a main-namespace (``<ns>0</ns>``)
page that is not a redirect, and None for every other page (talk, user, file,
template, category ... pages, and redirects). A page without an ``<ns>``
element (dumps older than export format 0.5) is taken as namespace 0.

``strip_markup`` turns wikitext into the text a reader sees, in this order:

1. HTML comments ``<!-- ... -->`` are removed.
2. Elements whose content is not prose are removed with their content:
   ``<ref>`` (footnotes, and self-closing ``<ref name=x/>``), ``<references/>``,
   ``<math>``, ``<chem>``, ``<ce>``, ``<gallery>``, ``<timeline>``, ``<graph>``,
   ``<hiero>``, ``<imagemap>``, ``<score>``, ``<syntaxhighlight>``, ``<source>``,
   ``<templatedata>``, ``<mapframe>``.
3. Templates ``{{...}}`` (infoboxes, citations, navigation boxes, pronunciation
   ...) are removed, nested to any depth (also template parameters ``{{{...}}}``).
4. Tables ``{| ... |}`` are removed, nested to any depth.
5. Internal links keep their shown text: ``[[target|shown]]`` -> ``shown``,
   ``[[target]]`` -> ``target``, ``[[cat]]s`` -> ``cats``. File, Image, Media
   and Category links are removed (with a file's caption), and so are
   interlanguage links (``[[de:...]]``). A leading colon (``[[:Category:X|x]]``)
   makes a link an ordinary link.
6. External links keep their label (``[http://x.org label]`` -> ``label``);
   unlabelled and bare URLs are removed.
7. Remaining HTML tags are removed, keeping their content.
8. Bold/italic quotes, heading ``=`` signs, list and indent markers at line
   starts, horizontal rules and behaviour switches (``__TOC__``) are removed.
9. Character entities (``&nbsp;``, ``&ndash;`` ...) are decoded, brackets left
   empty by the removals (``Albedo ()`` from a pronunciation template) are
   dropped, and runs of spaces are collapsed.

The result is then tokenized with the same Tokenizer as ``topictool prepare``.
Bytes that are not valid UTF-8 are replaced (U+FFFD) rather than stopping a
many-hour pass over a dump.
"""

import bz2
import gzip
import html
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, existing_file

CHUNK = 1 << 20

# ----------------------------------------------------------------------------
# dump files


def open_dump(path):
    """(decompressed binary stream, raw file) for a dump; the raw file's tell()
    is the compressed position (for progress)."""
    path = existing_file(path, "a MediaWiki XML dump")
    try:
        raw = open(path, "rb")
    except OSError as e:
        raise InputError(f"cannot open: {e.strerror or e}", path) from None
    from .sources import CheckedStream

    name = path.name.lower()
    if name.endswith(".bz2"):
        return CheckedStream(bz2.BZ2File(raw), path, "bzip2"), raw
    if name.endswith(".gz"):
        return CheckedStream(gzip.GzipFile(fileobj=raw), path, "gzip"), raw
    return raw, raw


def is_dump(path):
    """True if the file (possibly compressed) starts like a MediaWiki XML export."""
    path = Path(path)
    if not path.is_file():
        return False
    try:
        stream, raw = open_dump(path)
        with raw, stream:
            head = stream.read(4096)
    except (OSError, EOFError, InputError):
        return False
    return b"<mediawiki" in head


def iter_page_blocks(path, skip=0, stats=None, block_size=CHUNK):
    """Yield (block, pages): runs of whole ``<page>`` elements of about ``block_size`` bytes.

    The first ``skip`` pages are left out (for resuming). Cutting happens at the
    last ``</page>`` of what has been read, so this costs the main process
    little more than decompression; ``split_pages`` cuts a block into pages.
    ``stats`` (a dict), if given, is kept up to date with ``bytes`` (decompressed
    bytes read) and ``compressed_bytes`` (position in the file on disk).
    """
    stream, raw = open_dump(path)
    buf = b""
    started = False
    total = 0
    with raw, stream:
        while True:
            try:
                chunk = stream.read(block_size)
            except (OSError, EOFError, ValueError) as e:
                raise InputError(f"cannot read (damaged compressed data?): {e}", path) from None
            if not chunk:
                break
            total += len(chunk)
            if stats is not None:
                stats["bytes"] = total
                try:
                    stats["compressed_bytes"] = raw.tell()
                except (OSError, ValueError):
                    pass
            buf = buf + chunk if buf else chunk
            if not started:
                i = buf.find(b"<page>")
                if i < 0:
                    buf = buf[-8:]  # the header (siteinfo) is dropped; keep a possibly split "<page>"
                    continue
                buf = buf[i:]
                started = True
            end = buf.rfind(b"</page>")
            if end < 0:
                continue
            end += len(b"</page>")
            block, buf = buf[:end], buf[end:]
            n = block.count(b"<page>")
            if skip >= n:
                skip -= n
                continue
            if skip:
                pos = 0
                for _ in range(skip):
                    pos = block.find(b"</page>", pos) + len(b"</page>")
                block, n, skip = block[pos:], n - skip, 0
            yield block, n
    if b"<page>" in buf:
        raise InputError("dump ends inside a <page> element (truncated file?)", path)


def split_pages(block):
    """The ``<page>...</page>`` elements of a block, as bytes."""
    pos = 0
    while True:
        start = block.find(b"<page>", pos)
        if start < 0:
            return
        end = block.find(b"</page>", start)
        if end < 0:
            return
        pos = end + len(b"</page>")
        yield block[start:pos]


def iter_raw_pages(path, stats=None):
    """Yield the bytes of every ``<page>...</page>`` element of a dump, in order."""
    for block, _ in iter_page_blocks(path, 0, stats):
        yield from split_pages(block)


# ----------------------------------------------------------------------------
# one page

_TITLE = re.compile(rb"<title>(.*?)</title>", re.S)
_NS = re.compile(rb"<ns>\s*(-?\d+)\s*</ns>")
_REDIRECT = re.compile(rb"<redirect[\s/>]")
_REDIRECT_TEXT = re.compile(r"\s*#redirect\b", re.I)


@dataclass
class Page:
    title: str
    ns: int
    redirect: bool
    wikitext: str


def _page_header(raw):
    """(namespace, redirect flag) from the page's own elements."""
    m = _NS.search(raw, 0, 4096) or _NS.search(raw)
    ns = int(m.group(1)) if m else 0
    return ns, _REDIRECT.search(raw) is not None


def _page_wikitext(raw):
    """The XML-unescaped content of the page's last <text> element ('' if empty)."""
    start = raw.rfind(b"<text")
    if start < 0:
        return ""
    gt = raw.find(b">", start)
    if gt < 0 or raw[gt - 1 : gt] == b"/":
        return ""
    end = raw.rfind(b"</text>")
    if end < gt:
        return ""
    body = raw[gt + 1 : end].decode("utf-8", "replace")
    return html.unescape(body) if "&" in body else body


def parse_page(raw):
    """A Page from the bytes of one ``<page>`` element (wikitext XML-unescaped)."""
    m = _TITLE.search(raw)
    title = html.unescape(m.group(1).decode("utf-8", "replace")) if m else ""
    ns, redirect = _page_header(raw)
    text = _page_wikitext(raw)
    return Page(title, ns, redirect or _REDIRECT_TEXT.match(text) is not None, text)


def article_text(raw):
    """Plain text of a main-namespace, non-redirect page; None for any other page."""
    ns, redirect = _page_header(raw)
    if ns != 0 or redirect:
        return None
    text = _page_wikitext(raw)
    if _REDIRECT_TEXT.match(text):
        return None
    return strip_markup(text)


def iter_articles(path):
    """Yield (title, plain text) for every article (ns 0, not a redirect) of a dump."""
    for raw in iter_raw_pages(path):
        page = parse_page(raw)
        if page.ns == 0 and not page.redirect:
            yield page.title, strip_markup(page.wikitext)


# ----------------------------------------------------------------------------
# markup

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_DROP_ELEMENTS = (
    "ref|references|math|chem|ce|gallery|timeline|graph|hiero|imagemap|score|"
    "syntaxhighlight|source|templatedata|mapframe"
)
_DROPPED = re.compile(rf"<({_DROP_ELEMENTS})\b(?:[^>]*?/>|[^>]*>.*?(?:</\1\s*>|\Z))", re.S | re.I)
_TEMPLATE_BRACES = re.compile(r"\{\{|\}\}")
_TABLE_BRACES = re.compile(r"\{\||\|\}")
_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")
_DROP_NAMESPACES = frozenset({"file", "image", "media", "category"})
_LANGUAGE = re.compile(r"[a-z]{2,3}(?:-[a-z]{2,8})*$")
_EXTERNAL = re.compile(r"\[(?:https?:|ftp:|mailto:|news:|irc:|//)[^\s\]]*\s*([^\]]*)\]", re.I)
_URL_SEPARATOR = re.compile(r"://\S*")
_BLOCK_TAG = re.compile(r"</?(?:br|p|div|li|ul|ol|tr|td|th|table|blockquote|center|poem|hr|dd|dt|dl)\b[^>]*>", re.I)
_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*\b[^<>]*>")
_EMPHASIS = re.compile(r"''+")
# line-start patterns are anchored on "\n" (much faster than re.M); the text gets a leading "\n"
_HEADING = re.compile(r"\n=+[ \t]*([^\n]*?)[ \t]*=+[ \t]*(?=\n|\Z)")
_LINE_MARKERS = re.compile(r"\n[*#:;]+[ \t]*")
_RULE = re.compile(r"\n-{4,}")
_SWITCH = re.compile(r"__[A-Z]+__")
_EMPTY_BRACKETS = re.compile(r"\(\s*[,;:]?\s*\)")
_SPACES = re.compile(r"  +")
_BLANK_LINES = re.compile(r"\n\s*\n+")


def _remove_nested(text, pattern, opener):
    """Remove balanced regions delimited by the two tokens of ``pattern``.

    ``opener`` is the opening token. Unmatched closers are dropped; an unclosed
    opener removes the rest of the text.
    """
    if opener not in text:
        return text
    out = []
    depth = 0
    last = 0
    for m in pattern.finditer(text):
        if m.group() == opener:
            if depth == 0:
                out.append(text[last : m.start()])
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                last = m.end()
        else:  # a stray closer outside any region
            out.append(text[last : m.start()])
            last = m.end()
    if depth == 0:
        out.append(text[last:])
    return "".join(out)


def _remove_urls(text):
    """Remove bare URLs: a scheme's letters, "://", and what follows up to a space."""
    out = []
    last = 0
    for m in _URL_SEPARATOR.finditer(text):  # a literal search: much faster than a pattern with the scheme
        start = m.start()
        while start > 0 and text[start - 1].isascii() and text[start - 1].isalpha():
            start -= 1
        if start < last:
            continue
        out.append(text[last:start])
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def _link(m):
    inner = m.group(1)
    target, bar, shown = inner.partition("|")
    t = target.strip()
    if t.startswith(":"):  # [[:Category:X]] is an ordinary link to the category page
        return shown if bar else t[1:]
    prefix, colon, _ = t.partition(":")
    if colon:
        p = prefix.strip().lower()
        if p in _DROP_NAMESPACES:
            return ""
        if not bar and _LANGUAGE.match(p):  # interlanguage link, e.g. [[de:Albedo]]
            return ""
    return shown if bar else target


def strip_markup(text):
    """Plain text of wikitext (see the module docstring for what is removed)."""
    text = _COMMENT.sub("", text)
    text = _DROPPED.sub("", text)
    text = _remove_nested(text, _TEMPLATE_BRACES, "{{")
    text = _remove_nested(text, _TABLE_BRACES, "{|")
    for _ in range(8):  # innermost links first: a file's caption can hold links
        text, n = _LINK.subn(_link, text)
        if not n:
            break
    text = text.replace("[[", " ").replace("]]", " ")
    text = _EXTERNAL.sub(r"\1", text)
    if "://" in text:
        text = _remove_urls(text)
    text = _BLOCK_TAG.sub(" ", text)
    text = _TAG.sub("", text)
    text = _EMPHASIS.sub("", text)
    text = "\n" + text
    text = _HEADING.sub(r"\n\1", text)
    text = _LINE_MARKERS.sub("\n", text)
    text = _RULE.sub("\n", text)
    if "__" in text:
        text = _SWITCH.sub("", text)
    if "&" in text:
        text = html.unescape(text)
    text = _EMPTY_BRACKETS.sub("", text)
    text = _SPACES.sub(" ", text.replace("\t", " ").replace("\u00a0", " "))
    text = _BLANK_LINES.sub("\n\n", text)
    return text.strip()
