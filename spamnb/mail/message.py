"""One message's bytes -> its header fields and the decoded text of its text parts.

The header fields and payload of one-part mail and of multipart mail (of one-part
parts, or multipart ones in turn) are cut here by the email package's rules without
importing it; anything else goes to its parser, bounded (`spamnb.mail.mime`).  Nothing here
raises on broken MIME, lying charsets or undecodable payloads: they degrade to whatever
text can be recovered.
"""
from __future__ import annotations

import codecs
import re
from collections.abc import Iterator

from spamnb import compiled
from spamnb.mail.lazy import Lazy
from spamnb.mail.mimelimits import MAX_CONTENT_TYPE_CHARS, MAX_LINES, MAX_MESSAGES, capped

# `typing` is off the one-message pipe's start-up: names for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ENCODED_WORD = Lazy(r"=\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=")
# Adjacent encoded words, decoded together (RFC 2047 drops the space between them).
ENCODED_RUN = Lazy(rf"{ENCODED_WORD.pattern}(?:\s+{ENCODED_WORD.pattern})*")
# Pure-Python codecs, quadratic in their input (punycode: 5 s for 200 kB); no mail
# is written in them, so a part claiming one is decoded as undeclared 8-bit text.
SLOW_CODECS = frozenset({"punycode", "idna"})

# Deeper MIME trees than this are abuse, not mail; their text is tokenised raw.
MAX_PARTS = 200
# Line ends as the email package splits lines.
LINE_END = Lazy(rb"\r\n|\r|\n")


def parse_bounded(data: bytes) -> Any:
    """The message parsed from its first MAX_LINES lines: a SinglePart, or the email package's
    Message (raises mime.TooManyParts)."""
    # A line holds at least its line end, so a shorter message has too few lines to count.
    if len(data) > MAX_LINES and (LINE_END_BYTES or line_end_bytes)(data) > MAX_LINES:
        for number, end in enumerate(LINE_END.finditer(data), 1):
            if number == MAX_LINES:
                data = data[: end.end()]
                break
    text = data.decode("ascii", "surrogateescape")  # as BytesParser.parsebytes does
    top = read_part(text)
    simple = single_part_of(top) or multipart_of(top)
    if simple is not None:
        return simple
    from spamnb.mail import mime  # the email package: off the start-up of the pipe's single-part mail

    return mime.parse(text)


def line_end_bytes(data: bytes) -> int:
    """How many of `data`'s bytes are LF or CR: no fewer than its line ends."""
    # LF-only mail has no CR to count.
    return data.count(b"\n") + (data.count(b"\r") if b"\r" in data else 0)


# line_end_bytes in C, where it was built (spamnb/text/_ctokens.c): bytes.count of one byte
# compares every byte in turn; the C finds each LF (and CR) by memchr.
LINE_END_BYTES = compiled.scanner_function("line_end_bytes")


# The fast path of `parse_bounded`, for a message that is one part (most mail).  The
# email package's feed parser reads such a message line by line, through a generator
# per line, a quarter of the CPU of tokenising.  Here the header fields are cut by one regular
# expression and the rest becomes the payload in one piece.  It applies its
# rules exactly (email/feedparser.py, `_parsegen` and `_parse_headers`): lines end at
# CRLF, CR or LF; the header block is the run of lines matching its `headerRE` (a
# field name and colon, a continuation, or `From `); a blank line after it is
# dropped, any other line starts the body.  Whatever those rules treat specially
# (an envelope or stray `From ` line, a line starting with a colon, a first line that
# is a continuation) and any multipart or message/* type go to the parser instead.
# Both paths give the same tokens on every message of the SpamAssassin corpus
# (bench/tokens_identical.py) and on generated ones (tests/test_tokens.py).
LINE, NEWLINE = r"[^\r\n]*+", r"(?:\r\n|\r|\n)"
# In text without a CR the same lines are `.` up to an LF, which the regex engine scans
# faster than a class (few single-part messages hold a CR).
LINE_LF, NEWLINE_LF = r".*+", r"\n"


def header_pattern(line: str, newline: str) -> Lazy:
    """A field (its name and colon, the rest of its line and its continuation lines), or else
    what follows the fields: a blank line's line end, if any, and the rest of the text.

    The field's groups are its name and its value as compat32's header_source_parse
    makes it: without the blanks after the colon (lstrip) and the last line end (rstrip
    of CR and LF, which no line holds but at its end).  Cut by the pattern, not by a
    pass of lstrip and rstrip over every field, which is slower.  Its findall from the
    start of a text is the header block's fields back to back, then at most one match of
    the second kind (it matches wherever a field does not but at the end): the block's
    fields and where they end in one pass of the regex engine.
    """
    field = rf"([\041-\071\073-\176]++):[ \t]*+({line}(?:{newline}[\t ]{line})*+)(?:{newline}|\Z)"
    return Lazy(rf"{field}|(?s:(?=.)({newline})?+(.*))")


HEADER_BLOCK = header_pattern(LINE, NEWLINE)
HEADER_BLOCK_LF = header_pattern(LINE_LF, NEWLINE_LF)


def header_fields(text: str) -> tuple[list[tuple[str, str]], str, str]:
    """The header block at the start of `text`: each field's (name, value) as compat32's
    header_source_parse makes it from the field's lines, then the line end of a blank line
    after the fields ('' if none), then the rest of the text."""
    found = (HEADER_BLOCK if "\r" in text else HEADER_BLOCK_LF).findall(text)
    # A field's name is never empty: a last match without one is what follows the fields.
    blank, payload = found.pop()[2:] if found and not found[-1][0] else ("", "")
    return [(name, value) for name, value, _, _ in found], blank, payload


# header_fields in C, where it was built (spamnb/text/_ctokens.c): the regex engine tries the
# line's class at every character of the block and makes four groups a field; the C finds
# each line's end by memchr and makes only the names' and values' strs.
FIELDS = compiled.scanner_function("fields")


def single_part_of(msg: Any) -> Any:
    """The message `read_part` made, as the email package parses it, if it is one part; else None."""
    if msg is None or msg.get_content_type().split("/")[0] in ("multipart", "message"):
        return None
    return msg


def read_part(text: str) -> Any:
    """The fields and payload of a message or part as the email package cuts them; None
    where its rules need its parser (see above).  A SinglePart where that reads its
    Content-Type and Content-Transfer-Encoding plainly, else the email package's
    Message (mime.single_part)."""
    if text.startswith((" ", "\t")):  # a first line that is a continuation
        return None
    headers, blank, payload = (FIELDS or header_fields)(text)
    # The first line that is not a field.  headerRE would also take these two (and
    # a continuation, but each field took its own): an envelope line, a nameless field.
    if not blank and payload.startswith(("From ", ":")):
        return None
    # Only a value longer than this can be cut (calling `capped` on each is not free).  A loop,
    # not any() of a generator: compiled, the generator is an object made for every part.
    for _, value in headers:
        if len(value) > MAX_CONTENT_TYPE_CHARS:
            headers = [(name, value if len(value) <= MAX_CONTENT_TYPE_CHARS else capped(name, value)) for name, value in headers]
            break
    msg = SinglePart(headers, payload)
    if not msg.plain():
        from spamnb.mail import mime

        msg = mime.single_part(headers, payload)
    return msg


# What may follow the separator on a boundary line (feedparser's `boundaryre`): the
# closing `--`, blanks, the line's end.
BOUNDARY_REST = Lazy(r"(--)?[ \t]*+(?:\r\n|\r|\n|\Z)")


def without_line_end(text: str) -> str:
    """`text` less the line end (CRLF, CR or LF) it ends with, if any: `(?:\\r\\n|\\r|\\n)\\Z`
    replaced, without the regex engine's try at every character of the part."""
    return text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith(("\r", "\n")) else text


class MultiPart:
    """A multipart message of one-part parts (SinglePart or Message) and multipart ones (MultiPart), as `iter_text_parts` walks it."""

    def __init__(self, headers: list[tuple[str, str]], parts: list[Any]) -> None:
        self.headers, self.parts = headers, parts

    def raw_items(self) -> Iterator[tuple[str, str]]:
        return iter(self.headers)

    def is_multipart(self) -> bool:
        return True

    def get_payload(self) -> list[Any]:
        return self.parts


# How deep below the top a multipart part is read here (multipart/alternative in
# multipart/mixed is 1); deeper goes to the parser.  Far inside MAX_DEPTH, from which
# the parser's parts read as text/plain.
MAX_NESTING = 3


def multipart_of(top: Any, depth: int = 0, budget: list[int] | None = None) -> MultiPart | None:
    """The message `read_part` made (`top`), if it is multipart, as the email package parses it
    (email/feedparser.py, `_parsegen`); None for anything else, or for what it reads
    specially: no boundary, a boundary holding a line end, no first boundary line, a
    digest, MAX_MESSAGES parts in all, a part that is message/* or multipart more than
    MAX_NESTING deep.

    The email package reads every line of such a message through generators, and
    compiles a pattern for each boundary; here the boundary lines are found by a plain
    search for their separator.  Parts run from one boundary line to the next (any
    kind) or to the end; boundary lines right after a separating one are skipped; the
    last line end before a boundary line belongs to it; the closing line ends the parts.

    A part that is itself multipart is read by the same rules (`depth` below the top;
    `budget`, the parts still allowed at all levels).  They compose: while the parser
    reads a part, its parent's boundary pattern (and each ancestor's) is an EOF matcher,
    checked on every line before the part's own boundary pattern, so a line that
    matches an ancestor's boundary ends the part whatever it is to the part's own, and
    no line inside it does: the part is exactly the text between its parent's boundary
    lines, as found here.  Only the line end before the next one is not the part's
    text the same way: the parser strips it from the payload of a one-part part but
    from the epilogue of a multipart one (from its last part when its closing line is
    missing, which the part's own reading strips already), so a multipart part is read
    unstripped.  On the SpamAssassin corpus only message/* parts and two messages with no
    first boundary line are still left to the email package.
    """
    if not isinstance(top, SinglePart):
        return None
    ctype = top.get_content_type()
    if not ctype.startswith("multipart/") or ctype == "multipart/digest":
        return None
    boundary = top.boundary()
    # A folded Content-Type can hold a line end: no line then matches the parser's pattern.
    if not boundary or "\n" in boundary or "\r" in boundary:
        return None
    body, separator = top.payload, "--" + boundary
    lines = []  # (start, end, closing) of each boundary line
    at = body.find(separator)
    while at >= 0:
        if at == 0 or body[at - 1] in "\r\n":
            rest = BOUNDARY_REST.match(body, at + len(separator))
            if rest:
                lines.append((at, rest.end(), rest.group(1) is not None))
        at = body.find(separator, at + 1)
    if not lines or lines[0][2]:  # no separating line before a closing one: not multipart
        return None
    texts = []
    i = 0
    while i < len(lines):
        end = lines[i][1]
        i += 1
        while i < len(lines) and lines[i][0] == end:  # boundary lines right after it: skipped
            end = lines[i][1]
            i += 1
        texts.append(body[end : lines[i][0] if i < len(lines) else len(body)])
        if i < len(lines) and lines[i][2]:
            break
    if budget is None:
        budget = [MAX_MESSAGES]
    budget[0] -= len(texts)
    if budget[0] <= 0:
        return None
    parts = []
    for text in texts:
        part = single_part_of(read_part(without_line_end(text)))
        if part is None:
            if depth >= MAX_NESTING:
                return None
            part = multipart_of(read_part(text), depth + 1, budget)
            if part is None:
                return None
        parts.append(part)
    return MultiPart(top.headers, parts)


# Transfer encodings whose decoding SinglePart leaves to the email package.
UUENCODE = frozenset({"x-uuencode", "uuencode", "uue", "x-uue"})


class SinglePart:
    """A one-part message, answering what the tokeniser asks of the email package's
    Message (`raw_items`, `is_multipart`, `get_content_type`, `get_content_charset`,
    `get_payload(decode=True)`) by its rules (compat32, email/message.py), for messages
    whose Content-Type and Content-Transfer-Encoding those rules read plainly (`plain`).

    Not importing the email package (email.message and what it imports) is a large share
    of the one-message pipe's start-up.  tests/test_tokens.py checks it against the
    email package on generated mail; bench/tokens_identical.py on the corpus.
    """

    def __init__(self, headers: list[tuple[str, str]], payload: str) -> None:
        self.headers, self.payload = headers, payload
        self.content_type: str | None = None
        self.encoding: str | None = None
        for name, value in headers:  # the first field of each name, as Message.get finds it
            # Only a name of either's length is lowered (lower keeps an ASCII name's length;
            # any other cannot lower to either).
            if len(name) == 12 and self.content_type is None and name.lower() == "content-type":
                self.content_type = value
            elif len(name) == 25 and self.encoding is None and name.lower() == "content-transfer-encoding":
                self.encoding = value

    def plain(self) -> bool:
        """Whether the email package would read these two fields as their text says: ASCII
        (8-bit bytes make it a Header object), no RFC 2231 `*`, no backslash escapes, no
        `;` inside quotes, and no uuencoding."""
        ctype, cte = self.content_type or "", self.encoding or ""
        if not (ctype.isascii() and cte.isascii()) or cte.lower() in UUENCODE:
            return False
        if "*" in ctype or "\\" in ctype:
            return False
        for piece in ctype.split(";"):  # noqa: SIM110 - compiled, all() of a generator made one per part
            if piece.count('"') % 2:
                return False
        return True

    def raw_items(self) -> Iterator[tuple[str, str]]:
        return iter(self.headers)

    def is_multipart(self) -> bool:
        return False

    def get_content_type(self) -> str:
        if self.content_type is None:
            return "text/plain"
        ctype = self.content_type.partition(";")[0].strip().lower()
        return ctype if ctype.count("/") == 1 else "text/plain"

    def param(self, wanted: str) -> str | None:
        """The first Content-Type parameter of that name (the type itself included, as
        _get_params_preserve lists it), unquoted as get_param unquotes it."""
        for piece in (self.content_type or "").split(";"):
            name, eq, value = piece.partition("=")
            if name.strip().lower() == wanted:
                return unquote(value.strip() if eq else "")
        return None

    def get_content_charset(self) -> str | None:
        charset = self.param("charset")
        return None if charset is None else charset.lower()

    def boundary(self) -> str | None:
        """get_boundary: the parameter unquoted once more (collapse_rfc2231_value), right-stripped."""
        boundary = self.param("boundary")
        return None if boundary is None else unquote(boundary).rstrip()

    def get_payload(self, decode: bool) -> bytes:
        """The payload's bytes, decoded from its transfer encoding (`decode` must be True)."""
        assert decode
        data = self.payload.encode("ascii", "surrogateescape")
        cte = (self.encoding or "").lower()
        if cte == "quoted-printable":
            import quopri

            return quopri.decodestring(data)
        if cte == "base64":
            return lenient_base64(b"".join(data.splitlines()))
        return data


def lenient_base64(data: bytes) -> bytes:
    """Base64 as the email package decodes a payload: padding added where it is missing,
    characters outside the alphabet skipped, and undecodable input (one character more
    than a multiple of 4) left as it is."""
    import base64
    import binascii

    missing = b"==="[: 4 - len(data) % 4] if len(data) % 4 else b""
    for attempt, validate in ((data + missing, True), (data, False), (data + b"==", False)):
        try:
            return base64.b64decode(attempt, validate=validate)
        except binascii.Error:
            pass
    return data


def unquote(value: str) -> str:
    """email.utils.unquote: without one pair of surrounding quotes or angle brackets."""
    if len(value) > 1:
        if value.startswith('"') and value.endswith('"'):
            return value[1:-1].replace("\\\\", "\\").replace('\\"', '"')
        if value.startswith("<") and value.endswith(">"):
            return value[1:-1]
    return value


# Each charset name's codec name (codecs.lookup normalises the name on every call); at most
# CODEC_MEMO names, forgotten all at once.
_codec_names: dict[str, str] = {}
CODEC_MEMO = 1024


def codec_name(charset: str) -> str:
    """codecs.lookup(charset).name (raises as that does)."""
    name = _codec_names.get(charset)
    if name is None:
        name = codecs.lookup(charset).name
        if len(_codec_names) >= CODEC_MEMO:
            _codec_names.clear()
        _codec_names[charset] = name
    return name


def decode_bytes(data: bytes, charset: str | None) -> str:
    """Decode with the declared charset, falling back when it is unknown or lies."""
    for candidate in (charset, "utf-8"):
        if not candidate:
            continue
        try:
            if codec_name(candidate) in SLOW_CODECS:
                continue
            return data.decode(candidate)
        except (LookupError, UnicodeDecodeError, ValueError):
            continue
    # cp1252 is what undeclared 8-bit Western mail nearly always is; latin-1 never fails.
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


SURROGATE = Lazy("[\udc80-\udcff]")


def decode_header_value(value: str) -> str:
    """RFC 2047 encoded words to text; anything malformed is kept as it stands.

    Each run of encoded words is decoded on its own: `email.header.decode_header`
    on a whole value is quadratic in the number of unclosed `=?` in it.
    """
    if not value.isascii() and SURROGATE.search(value):
        # Raw 8-bit header bytes reach us as surrogate escapes: they are text in an
        # undeclared charset, nearly always UTF-8 or cp1252 (decode_bytes tries both).
        value = decode_bytes(value.encode("ascii", "surrogateescape"), None)
    if "=?" not in value:
        return value
    return ENCODED_RUN.sub(decode_encoded_run, value)


def decode_encoded_run(match: re.Match[str]) -> str:
    import email.header  # only encoded headers need it: off the pipe's start-up

    try:
        pieces = email.header.decode_header(match.group())
    except Exception:  # noqa: BLE001 - the stdlib raises several types on bad input
        return match.group()
    out = [decode_bytes(chunk, charset) if isinstance(chunk, bytes) else chunk for chunk, charset in pieces]
    return " " + " ".join(out) + " "


def iter_text_parts(msg: Any) -> Iterator[tuple[str, str]]:
    """(subtype, text) for every text part (of a SinglePart or an email package Message),
    walking the MIME tree without recursion."""
    stack = [msg]
    seen = 0
    while stack and seen < MAX_PARTS:
        part = stack.pop()
        seen += 1
        # is_multipart, not get_payload(): without decode=True the email package decodes
        # 8-bit text with the declared charset, and raises for some (idna, NUL in a name).
        if part.is_multipart():
            stack.extend(reversed(part.get_payload()))
            continue
        # get_content_maintype and _subtype would each look the type up again.
        maintype, subtype = part.get_content_type().split("/")
        if maintype != "text":
            continue
        raw = part.get_payload(decode=True)
        if not isinstance(raw, bytes):
            continue
        text = decode_bytes(raw, part.get_content_charset())
        yield subtype, text
