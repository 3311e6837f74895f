"""MediaWiki dump reading and markup stripping (topictool.corpus.wikipedia)."""

import bz2
import functools
import xml.etree.ElementTree as ET

import pytest

from topictool.corpus.wikipedia import article_text, iter_articles, iter_raw_pages, parse_page, strip_markup
from topictool.errors import InputError

from .conftest import shared

SAMPLE = ("wikipedia", "enwiki-sample-206-articles.xml.bz2")


def test_templates_nested_and_tables_removed():
    text = (
        "{{Infobox person|name={{nowrap|A B}}|born={{birth date|1900|1|1}}}}'''Ada''' was a "
        '{{lang|fr|poet}} writer.\n{| class="wikitable"\n|-\n| cell {{x}} || {|\n| inner\n|}\n|}\nAfter.'
    )
    assert strip_markup(text) == "Ada was a writer.\n\nAfter."


def test_links_keep_shown_text():
    text = (
        "The [[cat]]s sat on [[Mat (object)|the mat]] near [[:Category:Animals|animals]].\n"
        "[[File:Cat.jpg|thumb|A [[cat]] on a [[mat]]]]\n[[Category:Cats]]\n[[de:Katze]]"
    )
    assert strip_markup(text) == "The cats sat on the mat near animals."


def test_references_comments_tags_and_external_links():
    text = (
        'Fact.<ref name="a">{{cite web|url=http://x.org}}</ref> More<ref name=b/>.<!-- hidden\nnote -->'
        " See [http://example.org the site] or [http://bare.example.org] or http://x.y/z .<br/>"
        "H<sub>2</sub>O &amp; &ndash; x<math>\\alpha</math>."
    )
    out = strip_markup(text)
    assert out == "Fact. More. See the site or or . H2O & \u2013 x."


def test_headings_lists_emphasis_and_empty_brackets():
    text = "'''Albedo''' ({{IPAc-en|æ|l}}) is ''light''.\n== History ==\n* one\n# two\n: three\n----\n__TOC__"
    assert strip_markup(text) == "Albedo is light.\nHistory\none\ntwo\nthree"


def test_page_parsing_namespace_and_redirect():
    page = (
        b'<page><title>A &amp; B</title><ns>0</ns><id>1</id><revision><text xml:space="preserve">'
        b"'''A''' &lt;ref&gt;x&lt;/ref&gt;is here.</text></revision></page>"
    )
    p = parse_page(page)
    assert (p.title, p.ns, p.redirect) == ("A & B", 0, False)
    assert p.wikitext == "'''A''' <ref>x</ref>is here."
    assert article_text(page) == "A is here."
    redirect = (
        b'<page><title>X</title><ns>0</ns><redirect title="Y" /><revision><text>#REDIRECT [[Y]]</text>'
        b"</revision></page>"
    )
    assert parse_page(redirect).redirect and article_text(redirect) is None
    talk = b"<page><title>Talk:X</title><ns>1</ns><revision><text>words</text></revision></page>"
    assert article_text(talk) is None
    empty = b'<page><title>E</title><ns>0</ns><revision><text xml:space="preserve" /></revision></page>'
    assert article_text(empty) == ""


def test_truncated_dump_is_an_input_error(tmp_path):
    p = tmp_path / "cut.xml"
    p.write_bytes(
        b"<mediawiki><page><title>A</title><ns>0</ns><revision><text>a b</text></revision></page>"
        b"<page><title>B</title><ns>0</ns><revision><text>c"
    )
    with pytest.raises(InputError, match="ends inside a <page>"):
        list(iter_raw_pages(p))


@functools.lru_cache(maxsize=4)
def _independent_article_titles(path):
    """Titles of ns-0 non-redirect pages, by xml.etree on the raw dump (not our reader)."""
    titles = []
    with bz2.open(path) as f:
        for _, el in ET.iterparse(f):
            if el.tag.rsplit("}", 1)[-1] == "page":
                ns = el.find("{*}ns").text
                if ns == "0" and el.find("{*}redirect") is None:
                    titles.append(el.find("{*}title").text)
                el.clear()
    return titles


@functools.lru_cache(maxsize=4)
def sample_articles(path):
    """{title: plain text} of the dump's articles, read once per test session."""
    return dict(iter_articles(path))


def test_sample_dump_articles():
    path = shared(*SAMPLE)
    articles = sample_articles(path)
    expected = _independent_article_titles(path)
    assert list(articles) == expected
    assert len(expected) == 106  # of 206 pages: 100 redirects, 1 in the Wikipedia: namespace
    assert "AccessibleComputing" not in articles  # a redirect
    assert "Wikipedia:Adding Wikipedia articles to Nupedia" not in articles
    # The opening sentence of "Albedo", checked by eye against the wikitext: the bold
    # markup, the pronunciation template and the links are gone, the shown text stays.
    assert articles["Albedo"].startswith(
        'Albedo or reflection coefficient, derived from Latin albedo "whiteness" (or reflected sunlight) '
        'in turn from albus "white", is the diffuse reflectivity or reflecting power of a surface.'
    )
    assert (
        "The term was introduced into optics by Johann Heinrich Lambert in his 1760 work Photometria."
        in articles["Albedo"]
    )
    for title, text in articles.items():
        for mark in ("{{", "}}", "[[", "]]", "<ref", "{|", "'''", "&lt;", "&amp;", "<!--"):
            assert mark not in text, (title, mark)
