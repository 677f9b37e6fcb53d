"""The compiled word scanner (spamnb/text/_ctokens.c) against the pure-Python tokeniser.

It reads untrusted mail, so hypothesis feeds both the same arbitrary bytes, NULs,
invalid UTF-8, huge lines, broken and deep MIME and text in every charset the
tokeniser decodes, and the tokens must be the same.  `make fuzz` runs the same
comparison on far more inputs under AddressSanitizer (bench/fuzz_ctokens.py)."""
from __future__ import annotations

import base64
import html
import itertools
import os
import pickle
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spamnb.bayes import vocabulary
from spamnb.mail import headers, message, sources
from spamnb.text import tokens
from spamnb.text.tokens import Tokenizer, TokenSettings, stopword_set
from tests.conftest import raw_mail, use_scanner

REPO = Path(__file__).resolve().parent.parent

needs_scanner = pytest.mark.skipif(tokens.SCANNER is None, reason="compiled word scanner not built, or SPAMNB_PURE set")


def both(options: TokenSettings) -> tuple[Tokenizer, Tokenizer]:
    """A tokeniser with the compiled scanner and one on the pure path."""
    with use_scanner("compiled"):
        compiled = Tokenizer(options)
    with use_scanner("pure"):
        pure = Tokenizer(options)
    assert compiled._scan is not None and pure._scan is None
    return compiled, pure


def test_the_scanner_is_built_wherever_a_compiler_and_headers_are() -> None:
    """`pip install` builds the extension when it can: a silent fall-back to the pure path would hide here."""
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if os.environ.get("SPAMNB_PURE") or not (shutil.which("gcc") or shutil.which("cc")) or not headers.exists():
        pytest.skip("pure path chosen, or nothing to build the extension with")
    assert tokens.SCANNER is not None


def test_spamnb_pure_selects_the_pure_path() -> None:
    code = "from spamnb.text import tokens; print(tokens.SCANNER is None, tokens.Tokenizer()._scan is None)"
    env = {**os.environ, "SPAMNB_PURE": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    assert done.stdout.split() == ["True", "True"]


@needs_scanner
def test_bad_arguments_are_python_errors() -> None:
    with pytest.raises(TypeError):
        tokens.SCANNER(b"bytes", 2, 40, None)
    with pytest.raises(TypeError):
        tokens.SCANNER("text", 2, 40, ["a", "list"])
    with pytest.raises(ValueError):
        tokens.SCANNER("text", 0, 40, None)
    with pytest.raises(ValueError):
        tokens.SCANNER("text", 5, 4, None)
    with pytest.raises(ValueError):  # lowering is for one-byte text only
        tokens.SCANNER("\u0100", 1, 4, None, "", True)


# Characters of every kind: letters and digits of many scripts, the joiners, `_`, white
# space, NUL, surrogates (undecodable header bytes arrive as surrogate escapes), CJK.
ANY_CHAR = st.characters(exclude_categories=())
WORDISH = st.sampled_from(["a", "Z", "9", "é", "ß", "İ", "Σ", "ς", "ǅ", "٣", "²", "Ⅻ", "ﬁ", "中文", "ｶﾅ", "'", ".", "-", "_", " ", "\x00", "\n", "\udcff"])
TEXT = st.one_of(st.text(ANY_CHAR, max_size=200), st.lists(st.one_of(WORDISH, st.text(ANY_CHAR, max_size=3)), max_size=60).map("".join))
SETTINGS = st.builds(
    TokenSettings,
    lowercase=st.booleans(),
    stopwords=st.booleans(),
    min_len=st.integers(1, 4),
    max_len=st.integers(4, 45),
    ngram=st.integers(1, 3),
    header_tokens=st.booleans(),
    max_bytes=st.just(1 << 20),
)


@needs_scanner
@settings(max_examples=1500, deadline=None)
@given(TEXT, SETTINGS)
@example("don't e-mail me at x.example.com 192.0.2.1 -- a.b. 'quoted' " + "y" * 41, TokenSettings())
@example("ΣΑΣ İstanbul ﬁne Straße ǅemal", TokenSettings(lowercase=True))
@example("中文字符和日本語のテキスト abc", TokenSettings())
def test_words_of_any_text_are_the_pure_words(text: str, options: TokenSettings) -> None:
    compiled, pure = both(options)
    assert compiled.words(text) == pure.words(text)


@needs_scanner
@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(WORDISH, st.text(ANY_CHAR, max_size=3)), min_size=100, max_size=3000).map(" ".join), SETTINGS)
@example(" ".join(f"w{i}" for i in range(1000)) + " " + "y" * 41, TokenSettings())
def test_words_of_a_long_text_are_the_pure_words(text: str, options: TokenSettings) -> None:
    """More words than the scanner holds before it allocates (and grows) room for them."""
    compiled, pure = both(options)
    assert compiled.words(text) == pure.words(text)


@needs_scanner
@settings(max_examples=500, deadline=None)
@given(TEXT, st.text(ANY_CHAR, max_size=12), st.booleans(), st.integers(1, 3), st.integers(3, 12))
def test_a_prefix_goes_before_each_token(text: str, prefix: str, stop: bool, lo: int, hi: int) -> None:
    stops = stopword_set() if stop else None
    bare = tokens.SCANNER(text, lo, hi, stops)
    assert tokens.SCANNER(text, lo, hi, stops, prefix) == [prefix + w for w in bare]


# ASCII header text whose words recur in both cases, after prefixes that share words.
HEADER_WORDS = st.lists(st.sampled_from(["from", "By", "WITH", "esmtp", "mail.Example.com", "a", "id", "x" * 30, "abcdefgh", "ABCDEFGHIJKLMNOP", "abcdefghijklmnopq", "it's", "-", "'", ".", "2002"]), max_size=40).map(" ".join)
HEADER_PREFIXES = st.sampled_from(["received:", "subject:", "Subject:", "x-a:", "x-a-very-long-field-name:", "é:", ""])


@needs_scanner
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(HEADER_WORDS, HEADER_PREFIXES, st.booleans()), min_size=1, max_size=30))
@example([(" ".join(f"w{i} W{i}" for i in range(5000)), "received:", lower) for lower in (True, False, True)])
def test_header_tokens_met_again_are_the_tokens_made_anew(calls: list[tuple[str, str, bool]]) -> None:
    """The scanner keeps a header field's recent tokens and gives one met again: the same as one
    made anew, whatever came before it (the same word after another prefix, in the other case)."""
    for text, prefix, lower in calls:
        bare = tokens.SCANNER(text.lower() if lower else text, 1, 40, None)
        assert tokens.SCANNER(text, 1, 40, None, prefix, lower) == [prefix + w for w in bare]


LATIN1 = st.characters(max_codepoint=255)


@needs_scanner
@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(LATIN1, max_size=200), st.lists(st.sampled_from(["É", "ß", "ÿ", "µ", "Ä" * 45, "A-B", "x.Y", " "]), max_size=30).map("".join)), st.text(ANY_CHAR, max_size=12), st.booleans(), st.integers(1, 3), st.integers(3, 45))
@example("".join(chr(c) + "a " for c in range(256)), "", False, 1, 40)  # every one-byte character
def test_the_scanner_lowers_one_byte_text_as_str_lower(text: str, prefix: str, stop: bool, lo: int, hi: int) -> None:
    stops = stopword_set() if stop else None
    lowered = tokens.SCANNER(text, lo, hi, stops, prefix, True)
    assert lowered == tokens.SCANNER(text.lower(), lo, hi, stops, prefix)
    assert [w.isascii() for w in lowered] == [w.isascii() for w in tokens.SCANNER(text.lower(), lo, hi, stops, prefix)]


# Text of tags half made: openers and closers alone, doubled, around characters of every kind.
TAGGED = st.lists(st.one_of(st.sampled_from(["<", ">", "<a href='x'>", "</p >", "<<", ">>", "<>", "é", "中", "\U0001f600", "\udcff", " "]), st.text(ANY_CHAR, max_size=3)), max_size=60).map("".join)


@needs_scanner
@settings(max_examples=1500, deadline=None)
@given(st.one_of(TEXT, TAGGED))
@example("<p>a < b > c <<i>> d</p")
@example("<b title='\U0001f600'>x")  # the text left is of a smaller kind than the page
def test_tags_are_cut_as_the_pattern_cuts_them(text: str) -> None:
    """tokens.CUT_TAGS (C) against TAG.sub: equal strs are of the same kind, so a result not in
    the smallest kind that holds it would differ here too."""
    assert tokens.CUT_TAGS(text) == tokens.TAG.sub(" ", text)


@needs_scanner
def test_the_tag_cutter_takes_a_str_only() -> None:
    with pytest.raises(TypeError):
        tokens.CUT_TAGS(b"<a>bytes")


# Received fields' pieces: dots inside words and out, `_`, `--`, characters of every kind.
FIELD = st.one_of(TEXT, st.lists(st.sampled_from(["a", "b.c", ".", "..", "-", "--", "_", " ", "[1.2]", "x9", "é.f", "中.文", "\U0001f600."]), max_size=40).map("".join))


@needs_scanner
@settings(max_examples=1000, deadline=None)
@given(FIELD, SETTINGS, st.lists(st.text(ANY_CHAR, max_size=8), max_size=6))
@example("from a.example.com (b.example.net [192.0.2.1]) by c.example.org", TokenSettings(), [])
@example("a.b--c.d", TokenSettings(), [])
@example("a_b.c", TokenSettings(), [])
def test_dotted_words_are_the_pure_ones(field: str, options: TokenSettings, more: list[str]) -> None:
    """tokens.DOTTED_WORDS (C) against dotted_words, on a field's own words (any settings) and on others."""
    words = Tokenizer(options).words(field, tokens.RECEIVED_PREFIX)
    for given_words in (words, words + more, more):
        assert tokens.DOTTED_WORDS(field, given_words) == tokens.dotted_words(field, given_words)


@needs_scanner
def test_dotted_words_take_a_str_and_a_list_of_strs_only() -> None:
    for bad in ((b"a.b", ["a.b"]), ("a.b", ("a.b",)), ("a.b", ["a.b", b"c.d"]), ("a.b",)):
        with pytest.raises(TypeError):
            tokens.DOTTED_WORDS(*bad)


# Received runs' pieces: addresses' digit runs of every length, dots, labels of letters and digits
# in either case, hyphens, `_` (a word character no label holds), brackets and blanks.
RUN = st.lists(st.sampled_from(["1", "12", "192", "1234", "0", ".", "..", "-", "--", "_", "a", "ab", "Mail", "COM", "x9", "9x", " ", "[", "]", "(", "@"]), max_size=40).map("".join)


@needs_scanner
@settings(max_examples=2000, deadline=None)
@given(st.one_of(RUN, st.text(st.characters(max_codepoint=127), max_size=60)))
@example("from mail.example.com ([192.0.2.1]) by mx.Example.CO.uk")
@example("1234.5.6.7.8 _1.2.3.4 1.2.3.4a 01.002.3.44")
@example("-.-a.bc x.ab_ x.ab- x.ab1 a.bc-d.e a.b.c.d.e.fg")
def test_received_parts_are_the_pure_ones(text: str) -> None:
    """tokens.RECEIVED_PARTS (C) against received_parts, the patterns' path, on ASCII text."""
    assert tokens.RECEIVED_PARTS(text) == tokens.received_parts(text)


@needs_scanner
def test_received_parts_take_an_ascii_str_only() -> None:
    for bad in (b"a.example.com", None, ["a.example.com"]):
        with pytest.raises(TypeError):
            tokens.RECEIVED_PARTS(bad)
    with pytest.raises(ValueError):
        tokens.RECEIVED_PARTS("a.\u00e9xample.com")


# Links' hosts: labels in either case, dots leading, trailing and doubled, addresses' digit runs.
HOST = st.lists(st.sampled_from(["1", "12", "192", "1234", ".", "..", "-", "_", "a", "Ab", "COM", "x9", "\u00e9", "\u0663"]), max_size=20).map("".join)


@needs_scanner
@settings(max_examples=2000, deadline=None)
@given(st.one_of(HOST, st.text(ANY_CHAR, max_size=30)))
@example("..WWW.Example.co.UK.")
@example("192.0.2.1")
@example("192.0.2.1234")
def test_url_host_tokens_are_the_pure_ones(host: str) -> None:
    """tokens.URL_HOST_TOKENS (C) against url_host_tokens on an ASCII host; None (the pure path's to make) on any other."""
    assert tokens.URL_HOST_TOKENS(host) == (tokens.url_host_tokens(host) if host.isascii() else None)


@needs_scanner
def test_url_host_tokens_take_a_str_only() -> None:
    for bad in (b"example.com", None):
        with pytest.raises(TypeError):
            tokens.URL_HOST_TOKENS(bad)


# Links' pieces: the schemes in either case, their letters' case-blind partner beyond ASCII
# (the long s) and a look-alike (the Kelvin sign), separators, hosts, ports in any decimal digits.
LINK_PIECES = ["http", "HTTPS", "fTp", "s", "p", "\u017f", "\u212a", "://", ":", "/", ":80", ":\u0663", "a.b", "\u00e9", " ", "\n", "?", "\u4e2d"]
LINK_TEXT = st.one_of(TEXT, st.lists(st.sampled_from(LINK_PIECES), max_size=16).map("".join))


@needs_scanner
@settings(max_examples=1000, deadline=None)
@given(LINK_TEXT)
@example('<a href="HTTP://www.Example.co.uk:8080/x?y">http://ahttp://b ftp://c:1https://d')
def test_links_are_the_patterns_hosts(text: str) -> None:
    """tokens.LINKS (C) against url_hosts and the pattern's own finditer."""
    assert tokens.LINKS(text) == tokens.url_hosts(text) == [m.group(1) for m in tokens.URL.finditer(text)]


@needs_scanner
def test_links_take_a_str_only() -> None:
    for bad in (b"http://x", None, ["http://x"]):
        with pytest.raises(TypeError):
            tokens.LINKS(bad)


@needs_scanner
@settings(max_examples=500, deadline=None)
@given(TEXT)
@example("")
@example("\u303f\u3040\uffff")
def test_highest_is_the_highest_code_point(text: str) -> None:
    assert tokens.HIGHEST(text) == max(map(ord, text), default=0)
    with pytest.raises(TypeError):
        tokens.HIGHEST(text.encode("utf-8", "surrogatepass"))


@needs_scanner
def test_lowering_is_str_lower_for_every_code_point() -> None:
    """Each character alone, and all but the two str.lower is left with in one text (the C's own loop)."""
    every = [chr(c) for c in range(0x110000)]
    assert [tokens.LOWERED(c) for c in every] == [c.lower() for c in every]
    text = "".join(c for c in every if c not in "\u0130\u03a3")
    assert tokens.LOWERED(text) == text.lower()


@needs_scanner
@settings(max_examples=1500, deadline=None)
@given(TEXT)
@example("ΣΑΣ \u03c3 İstanbul Straße ǅemal \U00010400")
@example("\u0178\u00c0")  # two bytes a character, lowered all Latin-1: the str made is of one
def test_a_lowered_text_is_str_lower(text: str) -> None:
    assert tokens.LOWERED(text) == text.lower()


@needs_scanner
def test_lowering_takes_a_str_only() -> None:
    for bad in (b"A", None):
        with pytest.raises(TypeError):
            tokens.LOWERED(bad)


# Pages' pieces: the openers in either case and with the characters that Unicode's case-blind
# letters (not the pattern's) would take for theirs (the long s, the dotted and dotless I),
# what may follow a name.
PAGE_PIECES = ["<", "script", "SCRIPT", "style", "StYlE", "\u017fcript", "scr\u0130pt", "scr\u0131pt", "<!--", "!-", "-", ">", " ", "_", "a", "\u0663", "\u00e9", "\U0001f600", "</script>", "-->"]
PAGE = st.one_of(TEXT, st.lists(st.sampled_from(PAGE_PIECES), max_size=30).map("".join))


@needs_scanner
@settings(max_examples=1500, deadline=None)
@given(PAGE, st.integers(-2, 40))
@example("<scripts><script_><script1><script>", 0)
@example("<STYLE\u0663><style", 1)
def test_openers_are_the_patterns(text: str, start: int) -> None:
    """tokens.OPENER (C) against invisible_opener, the pattern's search."""
    assert tokens.OPENER(text, start) == tokens.invisible_opener(text, start)


@needs_scanner
@pytest.mark.parametrize("name", ["script", "style"])
def test_openers_match_each_letter_as_the_pattern_does(name: str) -> None:
    """Every character of the Basic Multilingual Plane in each letter's place and after the name:
    the C's case-blind letters and word end are the pattern's."""
    chars = [chr(c) for c in range(0x10000) if not 0xD800 <= c < 0xE000]
    for k in range(len(name) + 1):
        text = "".join("<" + name[:k] + c + name[k + 1 :] + " " for c in chars)
        spans = []
        for find in (tokens.OPENER, tokens.invisible_opener):
            found, start = [], 0
            while (span := find(text, start)) is not None:
                found.append(span)
                start = span[0] + 1
            spans.append(found)
        assert spans[0] == spans[1] and spans[0], (name, k)


@needs_scanner
def test_openers_take_a_str_and_an_int_only() -> None:
    for bad in ((b"<script", 0), ("<script", "0"), ("<script",)):
        with pytest.raises(TypeError):
            tokens.OPENER(*bad)


# Pages' character references: whole, cut short, run together, with names of html5's that are
# heads of others, numbers in either base of every size (past 0x10FFFF, surrogates, those html
# replaces), and the characters a name may not hold.
REFERENCE_PIECES = ["&", "#", "x", "X", ";", "amp", "amp;", "lt", "notin", "not", "nbsp;", "AElig", "eacute;", "copy", "zz", "&#", "&#x", "65", "0", "x41", "X1f600", "d800", "110000", "9" * 12, "0" * 9 + "65", "128", "150", "65279", "fdd0", "\t", "\n", "\x0c", " ", "<", "\r", "\x0b", "\u00e9", "\u4e2d", "\U0001f600", "\udcff", "a" * 33]
PAGE = st.one_of(TEXT, st.lists(st.sampled_from(REFERENCE_PIECES), max_size=40).map("".join))


@needs_scanner
@settings(max_examples=2000, deadline=None)
@given(PAGE)
@example("&amp; &lt;&gt &notit; &notin &#65;&#x41;&#X41 &#;&#x; &#0; &#128; &#55296; &#1114112; &#xffffffffff; &#65279;")
@example("&" + "a" * 40 + ";&abcdefghijklmnopqrstuvwxyzabcdef;&ampxyz&AEligz")
def test_character_references_are_replaced_as_html_unescape_replaces_them(text: str) -> None:
    """tokens.UNESCAPE (C) against html.unescape."""
    assert tokens.unescape(text) == html.unescape(text)


@needs_scanner
def test_a_decimal_reference_too_long_for_int_fails_as_html_unescape_does() -> None:
    text = "a &#" + "1" * 5000 + "; b"
    with pytest.raises(ValueError) as pure:
        html.unescape(text)
    with pytest.raises(ValueError) as compiled:
        tokens.unescape(text)
    assert str(compiled.value) == str(pure.value)
    assert tokens.unescape("&#x" + "f" * 5000 + ";") == html.unescape("&#x" + "f" * 5000 + ";") == "\ufffd"


def test_a_python_without_htmls_private_tables_unescapes_by_html_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C takes html's tables by their private names; where a Python has none of that
    name, pages are still read (html.unescape's named references need no such table)."""
    monkeypatch.delattr(html, "_invalid_codepoints")
    tokens.html_tables.cache_clear()
    try:
        assert tokens.unescape("caf&eacute; &amp; &notit; &lt;b&gt;") == "café & ¬it; <b>"
    finally:
        monkeypatch.undo()
        tokens.html_tables.cache_clear()
    assert tokens.html_tables() is not None or tokens.UNESCAPE is None


@needs_scanner
def test_character_references_take_a_str_and_html_s_tables_only() -> None:
    tables = (html._html5, html._invalid_charrefs, html._invalid_codepoints)
    for bad in ((b"&amp;", *tables), ("&amp;", *tables[:2]), ("&amp;", tables[0], tables[1], list(tables[2])), ("&amp;", list(tables[0]), *tables[1:])):
        with pytest.raises(TypeError):
            tokens.UNESCAPE(*bad)


# Header blocks' pieces: names, colons, blanks, every line end, an envelope line, 8-bit bytes as
# surrogate escapes, characters of every kind and the line ends regexes must not take for one.
BLOCK_PIECES = ["Subject", "x-y", "A b", ":", " ", "\t", "\r", "\n", "\r\n", "From ", "v", "\udcff", "\u00e9", "\u4e2d", "\U0001f600", "\x0b", "\x85", "\u2028", "~", "!"]
BLOCK = st.one_of(TEXT, st.lists(st.sampled_from(BLOCK_PIECES), max_size=40).map("".join))


@needs_scanner
@settings(max_examples=1500, deadline=None)
@given(BLOCK)
@example("Subject: a\r\n\tb\r\nX:  c\r\n\r\nbody")
@example("A: b\r\r\n c\n\n")
@example("A b: c\n")
def test_header_fields_are_the_patterns(text: str) -> None:
    """message.FIELDS (C) against header_fields, the pattern's findall."""
    assert message.FIELDS(text) == message.header_fields(text)


@needs_scanner
def test_header_fields_take_a_str_only() -> None:
    for bad in (b"A: b\n", None):
        with pytest.raises(TypeError):
            message.FIELDS(bad)


# Header blocks as bytes, for the fields' removal: the transport names in every case, one cut
# short, one run on, blanks and colons, every line end, continuation lines, 8-bit bytes.
CUT_PIECES = [*headers.TRANSPORT_NAMES, b"RECEIVED", b"Return-Path", b"X-Original-TO", b"receive", b"receivedx", b"x-original", b"Subject",
              b":", b" ", b"\t", b"\r", b"\n", b"\r\n", b"\n ", b"\n\t", b"\n\n", b"v", b"\xff", b"\x00", b"-"]
CUT_BLOCK = st.one_of(st.binary(max_size=200), st.lists(st.sampled_from(CUT_PIECES), max_size=40).map(b"".join))
# Names given to the C: the transport fields', one that is a prefix of another, any bytes.
CUT_NAMES = st.one_of(st.just(headers.TRANSPORT_NAMES), st.lists(st.one_of(st.sampled_from(CUT_PIECES[:9]), st.binary(max_size=4)), min_size=1, max_size=5).map(tuple))


@needs_scanner
@settings(max_examples=1500, deadline=None)
@given(CUT_BLOCK, CUT_NAMES)
@example(b"Received: a\r\n\tb\r\nX: y\nreturn-PATH \t: z\n\n w\nDelivered-To:", headers.TRANSPORT_NAMES)
@example(b"x-original-to\t:\nX-Original :\n", (b"x-original", b"x-original-to"))
@example(b":a\n :b\n", (b"",))
@example(b"\n:", (b"\n",))
def test_fields_are_removed_as_the_pattern_removes_them(head: bytes, names: tuple[bytes, ...]) -> None:
    """headers.WITHOUT_FIELDS (C) against the pattern it stands for, field_lines(names).sub."""
    assert headers.WITHOUT_FIELDS(head, names) == headers.field_lines(names).sub(b"", head)


@needs_scanner
def test_the_fields_removal_takes_bytes_and_names() -> None:
    for bad in (("Received: a\n", (b"received",)), (b"Received: a\n", [b"received"]), (b"Received: a\n", ("received",)), (b"a",)):
        with pytest.raises(TypeError):
            headers.WITHOUT_FIELDS(*bad)
    with pytest.raises(ValueError):
        headers.WITHOUT_FIELDS(b"Received: a\n", ())


# Mail's first lines for the header block's end and the verdict's hint: every line end, blank
# lines, envelope lines, the verdict fields' names cut short and in either case.
BLOCK_PIECES = [b"\n", b"\r", b"\r\n", b"\n\n", b"\n\r\n", b"a", b":", b" ", b"From ", b"-", b"-spam", b"-SPAM", b"nb", b"NB", b"n",
                b"-spamnb", b"-Spam-Checker-Version", b"-spam-checker-versio", b"X-Spamnb:", b"\xff", b"\x00"]
HEAD_BYTES = st.one_of(st.binary(max_size=200), st.lists(st.sampled_from(BLOCK_PIECES), max_size=30).map(b"".join))


@needs_scanner
@settings(max_examples=1500, deadline=None)
@given(HEAD_BYTES, st.one_of(st.integers(-40, 220), st.sampled_from([-(1 << 70), 1 << 70, -(1 << 63), (1 << 63) - 1])))
@example(b"a\n\r\n", 0)
@example(b"\n\n", -1)
@example(b"From a\nb\n\nc", 7)
def test_the_blank_lines_end_is_the_pure_paths(data: bytes, start: int) -> None:
    """headers.BLANK_LINE_END (C) against blank_line_end, any start bytes.find takes."""
    assert headers.BLANK_LINE_END(data, start) == headers.blank_line_end(data, start)


@needs_scanner
@settings(max_examples=1500, deadline=None)
@given(HEAD_BYTES)
@example(b"X-Spam-Checker-Version: x\n")
@example(b"-sPaMnB")
@example(b"-spam-checker-versioN")
@example(b"-spam-checker-versio")
def test_the_verdicts_hint_is_the_patterns(head: bytes) -> None:
    """headers.VERDICT_HINTED (C) against VERDICT_HINT's search."""
    assert headers.VERDICT_HINTED(head) == headers.verdict_hinted(head)


@needs_scanner
def test_the_blank_lines_end_and_the_verdicts_hint_take_bytes_only() -> None:
    for bad in (("a\n\n", 0), (bytearray(b"a\n\n"), 0), (b"a\n\n", None), (b"a\n\n", 1.0), (b"a\n\n",), (b"a\n\n", 0, 1)):
        with pytest.raises(TypeError):
            headers.BLANK_LINE_END(*bad)
    for bad in ("X-Spamnb: a\n", bytearray(b"X-Spamnb: a\n"), memoryview(b"X-Spamnb: a\n"), None):
        with pytest.raises(TypeError):
            headers.VERDICT_HINTED(bad)


@needs_scanner
@settings(max_examples=1500, deadline=None)
@given(HEAD_BYTES)
@example(b"\r\n\r\r\n\n")
def test_the_line_ends_bytes_are_counted_as_the_pure_path_counts_them(data: bytes) -> None:
    """message.LINE_END_BYTES (C) against line_end_bytes."""
    assert message.LINE_END_BYTES(data) == message.line_end_bytes(data)


@needs_scanner
def test_the_line_ends_count_takes_bytes_only() -> None:
    for bad in ("a\n", bytearray(b"a\n"), None):
        with pytest.raises(TypeError):
            message.LINE_END_BYTES(bad)


# Messages' lines as an mbox reader meets them: envelope lines, escaped ones, `From` cut short.
MARKED_PIECES = [b"From ", b"From", b"rom ", b"F", b">", b">>", b"\n", b"\r\n", b"\r", b" ", b"x", b"\xff", b"\nFrom x 10:00\n"]
MARKED_BLOCK = st.one_of(st.binary(max_size=200), st.lists(st.sampled_from(MARKED_PIECES), max_size=40).map(b"".join))


@needs_scanner
@settings(max_examples=1500, deadline=None)
@given(MARKED_BLOCK)
@example(b"From a\n>From b\n>>From c\n x>From d\nFrom")
@example(b">>>From From >From ")
def test_marked_lines_are_the_patterns(block: bytes) -> None:
    """sources.MARKED (C) against the starts of MARKED_LINE's matches."""
    assert sources.MARKED(block) == [m.start() for m in sources.MARKED_LINE.finditer(block)]


@needs_scanner
def test_marked_lines_take_bytes_only() -> None:
    for bad in ("From a\n", bytearray(b"From a\n"), None):
        with pytest.raises(TypeError):
            sources.MARKED(bad)


def test_no_character_below_cjk_first_is_cjk() -> None:
    """compiled_words searches a text for CJK only where it holds a character from CJK_FIRST up."""
    assert tokens.CJK.search(chr(tokens.CJK_FIRST))
    assert not tokens.CJK.search("".join(map(chr, range(tokens.CJK_FIRST))))


@needs_scanner
def test_the_token_counter_takes_lists_of_strs_only() -> None:
    """A str subclass could run Python code (its own __eq__ or __hash__) inside the counting loop."""

    class Word(str):
        pass

    for bad in ((["a"],), [("a",)], [["a", b"b"]], [["a", Word("b")]], [[1]]):
        with pytest.raises(TypeError):
            vocabulary.COUNTED(bad, None)


@needs_scanner
def test_the_token_counter_counts_past_its_first_allocations() -> None:
    """More distinct tokens than the counter's first room, messages of one token repeated, empty ones."""
    lists = [[f"t{i % 9000}" for i in range(m * 700, m * 700 + 700)] * 3 for m in range(40)] + [[], ["x"] * 100_000, []]
    chunk = vocabulary.local_rows(lists)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vocabulary, "COUNTED", None)
        pure = vocabulary.local_rows(lists)
    assert chunk.tokens == pure.tokens and len(chunk.tokens) == 9001
    assert chunk.rows.lengths.tolist() == pure.rows.lengths.tolist()

    def entries(rows: vocabulary.Rows) -> list[tuple[int, int, int]]:
        messages = [m for m, length in enumerate(rows.lengths.tolist()) for _ in range(length)]
        return sorted(zip(messages, rows.cols.tolist(), rows.counts.tolist(), strict=True))

    assert entries(chunk.rows) == entries(pure.rows)


@needs_scanner
@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.text(ANY_CHAR, max_size=12), st.sampled_from(["subject:a", "subject:b", "subject:", ":", "a:b:c", "list-id:x", "\u00e9:x", "\u00e9:y", "中:z", "\U0001f600:w"])), max_size=40))
def test_field_numbers_are_the_pure_paths(tokens_: list[str]) -> None:
    """tokens.FIELD_NUMBERS (C) against the pure path's numbers of the slices up to the first colon."""
    got = tokens.field_numbers(tokens_), tokens.field_ids(tokens_)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokens, "FIELD_NUMBERS", None)
        want = tokens.field_numbers(tokens_), tokens.field_ids(tokens_)
    assert got[0] == want[0] == got[1].tolist() == want[1].tolist() and all(type(n) is int for n in got[0])
    assert got[1].dtype == want[1].dtype == np.int64


@needs_scanner
def test_field_numbers_take_a_list_of_strs_only() -> None:
    for bad in (("a:b",), ["a:b", b"c:d"], [1]):
        with pytest.raises(TypeError):
            tokens.FIELD_NUMBERS(bad, {"a:": 0})


@needs_scanner
def test_field_numbers_stop_where_the_list_changes_or_a_number_is_not_an_int() -> None:
    class Shrinking(dict):
        def __missing__(self, head: str) -> int:
            listed.pop()
            return 0

    listed = ["a:1", "b:2", "c:3"]
    with pytest.raises(RuntimeError):
        tokens.FIELD_NUMBERS(listed, Shrinking())
    with pytest.raises(KeyError):
        tokens.FIELD_NUMBERS(["a:1"], {})
    with pytest.raises(TypeError):
        tokens.FIELD_NUMBERS(["a:1"], {"a:": "one"})


def pure_vocabulary(tokens: list[str]) -> vocabulary.Vocabulary:
    """A Vocabulary indexed by the pure path's dict, as with SPAMNB_PURE set."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vocabulary, "TOKEN_INDEX", None)
        return vocabulary.Vocabulary(tokens)


@needs_scanner
@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(ANY_CHAR, max_size=6), max_size=30), st.lists(st.text(ANY_CHAR, max_size=6), max_size=30))
def test_look_ups_are_the_dictionarys_gets(known: list[str], queries: list[str]) -> None:
    """The index in C (vocabulary.TOKEN_INDEX, LOOKED_UP) against a dict made of the list: a
    token twice in it keeps its last column."""
    vocab = vocabulary.Vocabulary(known)
    assert type(vocab.index) is bytearray
    got = vocab.lookup(queries + known)
    want = {t: col for col, t in enumerate(known)}
    assert got == [want.get(t, -1) for t in queries + known] and all(type(c) is int for c in got)
    assert got == pure_vocabulary(known).lookup(queries + known)


@needs_scanner
@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(ANY_CHAR, max_size=6), max_size=30), st.lists(st.lists(st.text(ANY_CHAR, max_size=6), max_size=30), max_size=4))
def test_growth_is_the_pure_paths(known: list[str], chunks: list[list[str]]) -> None:
    """Vocabulary.grow by the index in C (vocabulary.GROWN, which widens it as it fills) and by
    the pure path's dict: the same columns, tokens and look-ups after."""
    grown, pure = vocabulary.Vocabulary(dict.fromkeys(known)), pure_vocabulary(list(dict.fromkeys(known)))
    want = [pure.grow(tokens) for tokens in chunks]
    got = [grown.grow(tokens) for tokens in chunks]
    assert [a.tolist() for a in got] == [a.tolist() for a in want] and all(a.dtype == b.dtype == np.int64 for a, b in zip(got, want, strict=True))
    every = [*known, *itertools.chain.from_iterable(chunks), "never"]
    assert grown.tokens == pure.tokens and grown.lookup(every) == pure.lookup(every) and pure.index.default_factory is None  # type: ignore[union-attr]


@needs_scanner
def test_a_vocabulary_is_sent_as_its_tokens_and_indexed_where_it_lands() -> None:
    vocab = vocabulary.Vocabulary(["a", "b"])
    vocab.grow(["c", "a"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vocabulary, "TOKEN_INDEX", None)  # a pure process there
        there = pickle.loads(pickle.dumps(vocab))
    assert type(there.index) is not bytearray and there.tokens == ["a", "b", "c"] and there.lookup(["c", "z"]) == [2, -1]
    here = pickle.loads(pickle.dumps(vocab))
    assert type(here.index) is bytearray and here.grow(["z", "b"]).tolist() == [3, 1]


@needs_scanner
def test_growth_and_look_ups_take_an_index_and_lists_of_strs_only() -> None:
    class Word(str):
        pass

    index = vocabulary.TOKEN_INDEX([])
    for args in (({}, [], ["a"]), (index, (), ["a"]), (index, [], ("a",)), (index, [], ["a", b"b"]), (index, [], [Word("a")])):
        with pytest.raises(TypeError):
            vocabulary.GROWN(*args)
    for args in (({}, [], ["a"]), (index, (), ["a"]), (index, [], ("a",))):
        with pytest.raises(TypeError):
            vocabulary.LOOKED_UP(*args)
    for bad in (bytearray(), bytearray(24), bytearray(8 * 12)):
        with pytest.raises(ValueError):
            vocabulary.GROWN(bad, [], ["a"])
    for known in (("a",), ["a", 1]):
        with pytest.raises(TypeError):
            vocabulary.TOKEN_INDEX(known)
    assert vocabulary.LOOKED_UP(vocabulary.TOKEN_INDEX(["a"]), ["a"], ["a", 1, b"a", Word("a")]) == [0, -1, -1, -1]


@needs_scanner
def test_a_vocabulary_whose_list_python_code_cut_short_stays_safe() -> None:
    """The index holds places in the vocabulary's list, which is Python's: a place past its end
    matches nothing, and a full index stops the growth with an error, never a loop."""
    vocab = vocabulary.Vocabulary([f"t{i}" for i in range(8)])
    del vocab.tokens[2:]
    assert vocab.lookup(["t1", "t5"]) == [1, -1]
    vocab.tokens[1] = 7  # type: ignore[call-overload]
    assert vocab.lookup(["t1"]) == [-1]
    vocab.tokens[1] = "t1"
    vocab.grow([f"u{i}" for i in range(3)])
    del vocab.tokens[:]
    with pytest.raises(ValueError, match="cut short"):
        vocab.grow([f"v{i}" for i in range(40)])


@needs_scanner
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(ANY_CHAR, max_size=6), max_size=40),
    st.lists(st.lists(st.one_of(st.text(ANY_CHAR, max_size=6), st.sampled_from(["a", "\u00e9", "\udcff", "", "\U0001f600"])), max_size=30), max_size=6),
)
def test_a_chunk_counted_against_a_blob_is_counted_then_looked_up_in_its_dictionary(known: list[str], lists: list[list[str]]) -> None:
    """The C counter with a vocabulary's blob and its hash table (vocabulary.Indexed) against
    the chunk counted alone and its tokens looked up in the dictionary of the blob's tokens
    (a token twice in the blob: its last column, as that dictionary keeps it); each message's
    entries in order of those columns, the tokens without one after, in order of first sight."""
    blob = "\n".join(known).encode("utf-8", "surrogatepass")
    indexed = vocabulary.Indexed(blob, *vocabulary.INDEXED(blob))
    got = vocabulary.local_rows(lists, indexed)
    plain = vocabulary.local_rows(lists)
    want = vocabulary.Vocabulary(blob.decode("utf-8", "surrogatepass").split("\n") if blob else []).lookup(plain.tokens)
    assert got.tokens == plain.tokens and got.columns.tolist() == want  # type: ignore[union-attr]
    assert got.rows.lengths.tolist() == plain.rows.lengths.tolist()

    def messages(rows: vocabulary.Rows) -> list[list[tuple[int, int]]]:
        entries = list(zip(rows.cols.tolist(), rows.counts.tolist(), strict=True))
        lengths = rows.lengths.tolist()
        return [entries[end - length : end] for end, length in zip(itertools.accumulate(lengths), lengths, strict=True)]

    in_order = [sorted(message, key=lambda entry: (want[entry[0]] < 0, want[entry[0]])) for message in messages(plain.rows)]
    assert messages(got.rows) == in_order


@needs_scanner
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.one_of(st.text(ANY_CHAR, max_size=8), st.sampled_from(["subject:a", "subject:b", "a", ":", "list-id:x", "received:r", "\u00e9:x", "\udcff:y"])), max_size=30), max_size=6),
    st.booleans(),
)
def test_the_counter_gives_each_entry_its_tokens_field(lists: list[list[str]], against_blob: bool) -> None:
    """vocabulary.local_rows(by_field=True): the C counter's fields, each entry's (alone, and
    against a blob, whose entries it sorts), are the pure path's field_ids of the chunk's
    tokens at the entries' columns; and local_rows' pure path gives the same."""
    known = list(dict.fromkeys(t for tokens_ in lists for t in tokens_))[::3]
    blob = "\n".join(known).encode("utf-8", "surrogatepass")
    vocab = vocabulary.Indexed(blob, *vocabulary.INDEXED(blob)) if against_blob else None
    got = vocabulary.local_rows(lists, vocab, by_field=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokens, "FIELD_NUMBERS", None)
        patch.setattr(vocabulary, "COUNTED", None)
        want = tokens.field_ids(got.tokens)[got.rows.cols]
        pure = vocabulary.local_rows(lists, by_field=True)
    assert got.rows.fields.dtype == pure.rows.fields.dtype == np.int32  # type: ignore[union-attr]
    assert got.rows.fields.tolist() == want.tolist()  # type: ignore[union-attr]
    assert pure.rows.fields.tolist() == tokens.field_ids(pure.tokens)[pure.rows.cols].tolist() and pure.tokens == got.tokens  # type: ignore[union-attr]
    assert vocabulary.local_rows(lists, vocab).rows.fields is None


@needs_scanner
def test_the_counter_asks_for_each_heads_number_after_counting() -> None:
    """The heads' numbers are asked for in the order of the tokens, once per run of one head,
    and an error there or a number past int32 is the counter's."""
    asked = []

    class Numbers(dict):
        def __missing__(self, head: str) -> int:
            asked.append(head)
            return len(asked)

    *_, fields = vocabulary.COUNTED([["a:1", "a:2", "b", "a:1"], ["c", "a:3"]], Numbers())
    assert asked == ["a:", "", "a:"] and memoryview(fields).cast("i").tolist() == [1, 1, 2, 2, 3]
    with pytest.raises(KeyError):
        vocabulary.COUNTED([["a:1"]], {})
    with pytest.raises(OverflowError):
        vocabulary.COUNTED([["a:1"]], {"a:": 1 << 40})


@needs_scanner
def test_the_counter_refuses_a_table_or_starts_not_made_of_its_blob() -> None:
    blob = b"a\nb\nc"
    starts, table = vocabulary.INDEXED(blob)
    for bad in ((blob, starts, table[:-8]), (blob, starts, b""), (blob[:2], starts, table), (blob, bytes(starts[8:16]) + starts[8:], table)):
        with pytest.raises(ValueError):
            vocabulary.COUNTED([["a"]], None, *bad)
    for bad in ([["a", b"b"]], [["\udcff", "\u00e9", 1]], [["\udcff"], ["a", "\udcff", ("x",)]]):  # a token encoded before the bad one
        with pytest.raises(TypeError):
            vocabulary.COUNTED(bad, None, blob, starts, table)
    many = [f"t{i}" for i in range(9000)]
    big = "\n".join(many).encode()
    chunk = vocabulary.local_rows([[*many[::-1], "new", "t5"], ["t5", "t8999", "t5"]], vocabulary.Indexed(big, *vocabulary.INDEXED(big)))
    assert chunk.columns.tolist()[:3] == [8999, 8998, 8997] and chunk.tokens[9000] == "new" and chunk.columns[9000] == -1  # type: ignore[union-attr]
    assert chunk.rows.lengths.tolist() == [9001, 2] and chunk.rows.counts.tolist()[-2:] == [2, 1]


MIME_PIECES = st.sampled_from(
    [
        b"Subject: ",
        b"Received: from a.example.com (b.example.net [192.0.2.1]) by c.example.org\n",
        b"Content-Type: text/html; charset=",
        b"Content-Type: text/plain; charset=",
        b"Content-Type: multipart/mixed; boundary=b\n",
        b"Content-Transfer-Encoding: base64\n",
        b"Content-Transfer-Encoding: quoted-printable\n",
        b"--b\n",
        b"--b--\n",
        b"=?utf-8?b?",
        b"=?iso-2022-jp?b?GyRCJEskWyRzGyhC?=",
        b"=?x-bad?q?=E9",
        b"?=",
        b"\n",
        b"\r\n",
        b"\x00",
        b"<script>",
        b"<a href='http://x.example.com/p'>",
        b"&#x110000;&nbsp;",
        b"From ",
        b"\xff\xfe",
        b"\xc3\xa9\xe4\xb8\xad",
        b"\xe9\x80",
        b"=E9",
        b"\t",
        b"utf-8\n",
        b"koi8-r\n",
        b"shift_jis\n",
    ]
)
MAIL_BYTES = st.one_of(st.binary(max_size=400), st.lists(st.one_of(MIME_PIECES, st.binary(max_size=8)), max_size=40).map(b"".join))


@needs_scanner
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MAIL_BYTES, SETTINGS)
def test_any_bytes_tokenise_as_the_pure_path_does(data: bytes, options: TokenSettings) -> None:
    compiled, pure = both(options)
    assert compiled(data) == pure(data)


# Every charset family the tokeniser decodes: the 8-bit charsets it has patterns for,
# other 8-bit ones, multi-byte CJK ones, UTF-16/32, a stateful one, and names it
# does not know or cannot use (they fall back to UTF-8, cp1252, Latin-1).
CHARSETS = [
    "us-ascii", "utf-8", "iso-8859-1", "windows-1252", "iso-8859-2", "iso-8859-5", "iso-8859-7", "iso-8859-15",
    "koi8-r", "windows-1251", "windows-1256", "cp437", "gb2312", "gbk", "gb18030", "big5", "shift_jis", "euc-jp",
    "iso-2022-jp", "euc-kr", "utf-16", "utf-32", "utf-7", "idna", "x-unknown",
]


@needs_scanner
@settings(max_examples=600, deadline=None)
@given(st.sampled_from(CHARSETS), st.text(ANY_CHAR, max_size=120), st.sampled_from(["8bit", "base64", "quoted-printable"]), st.booleans())
def test_text_in_every_charset_tokenises_as_the_pure_path_does(charset: str, text: str, cte: str, html: bool) -> None:
    try:
        body = text.encode(charset, errors="replace")
    except (LookupError, UnicodeError):  # a name it does not know, a codec that takes no error handler
        body = text.encode("utf-8", errors="surrogatepass")
    if cte == "base64":
        body = base64.encodebytes(body)
    elif cte == "quoted-printable":
        import quopri

        body = quopri.encodestring(body)
    subtype = "html" if html else "plain"
    subject = base64.b64encode(body[:60]).decode()
    mail = raw_mail(
        f"Subject: =?{charset}?b?{subject}?=\nContent-Type: text/{subtype}; charset={charset}\nContent-Transfer-Encoding: {cte}",
        body,
    )
    compiled, pure = both(TokenSettings())
    assert compiled(mail) == pure(mail)


HUGE = 1 << 20


@needs_scanner
@pytest.mark.parametrize(
    "body",
    [
        b"a" * HUGE,  # one word a megabyte long: one skip token
        b"ab." * (HUGE // 3),  # one dotted word, joined all the way
        b"a-" * (HUGE // 2),
        b"'" * HUGE,  # joiners and nothing to join
        b"\x00" * HUGE,
        b"\xff\xfe" * (HUGE // 2),  # invalid UTF-8 all the way
        "é".encode() * (HUGE // 2),
        "中".encode() * (HUGE // 3),  # one CJK run: a megabyte of bigrams
        b"x " * (HUGE // 2),  # a word of one letter after another
        b"word " * (HUGE // 5),
    ],
    ids=["letters", "dotted", "hyphened", "apostrophes", "nuls", "bad-utf8", "latin", "cjk", "one-letter", "words"],
)
def test_huge_lines_tokenise_as_the_pure_path_does(body: bytes) -> None:
    mail = raw_mail("Subject: huge\nContent-Type: text/plain; charset=utf-8", body)
    for options in (TokenSettings(), TokenSettings(min_len=1, max_len=3, stopwords=True)):
        compiled, pure = both(options)
        assert compiled(mail) == pure(mail)


@needs_scanner
@pytest.mark.parametrize("depth", [3, 199, 500])
def test_deep_mime_tokenises_as_the_pure_path_does(depth: int) -> None:
    head = "".join(f"Content-Type: multipart/mixed; boundary=b{i}\n\n--b{i}\n" for i in range(depth))
    mail = head.encode() + b"Content-Type: text/plain\n\ndeep down w\xc3\xb6rds here\n" + b"".join(f"--b{i}--\n".encode() for i in reversed(range(depth)))
    compiled, pure = both(TokenSettings())
    assert compiled(mail) == pure(mail)
