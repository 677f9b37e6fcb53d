"""One message's bytes -> a list of token strings.

Everything that changes the tokens lives in `TokenSettings`, which is saved in the
model so that classification tokenises exactly as training did.  Parsing never
raises: broken MIME, lying charsets and undecodable payloads degrade to tokenising
whatever text can be recovered.
"""
from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Iterator
from functools import cache
from typing import Any, NamedTuple

from spamnb import headers as message_headers


class Lazy:
    """A regular expression compiled when first used.

    Compiling this module's patterns took 6 ms at import, a tenth of what the
    one-message pipe adds to `import numpy`, and most messages use half of them
    (CJK alone took 2.5 ms; only text in those scripts needs it).
    """

    METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "split")

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags

    def __getattr__(self, name: str) -> Any:
        # Reached only before the first use: the compiled pattern's methods then sit in
        # this object's __dict__, found as fast as on the pattern itself.
        compiled = re.compile(self.pattern, self.flags)
        for method in self.METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)


# Our own verdict header: never evidence, since anyone can forge it.
VERDICT_HEADER = "x-spamnb"


class TokenFields(NamedTuple):
    lowercase: bool = True
    # Off by measurement: Fisher 1-AUC 0.0404% with English stopwords dropped, 0.0373% kept.
    stopwords: bool = False
    ngram: int = 1
    header_tokens: bool = True
    min_len: int = 2
    max_len: int = 40
    max_bytes: int = 1 << 20


class TokenSettings(TokenFields):
    """How messages become tokens; stored in the model file.

    A named tuple checked when made, as the other settings records: a dataclass
    compiles generated code at import, about 1.3 ms each of the pipe's start-up.
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> TokenSettings:
        self = super().__new__(cls, *args, **kwargs)
        if not 1 <= self.ngram <= 5:
            raise ValueError(f"ngram must be 1..5, not {self.ngram}")
        if not 1 <= self.min_len <= self.max_len:
            raise ValueError(f"need 1 <= min_len <= max_len, got {self.min_len}, {self.max_len}")
        if self.max_bytes < 1024:
            raise ValueError(f"max_bytes must be at least 1024, not {self.max_bytes}")
        return self

    def replace(self, **changes: Any) -> TokenSettings:
        """These settings with some changed, checked like new ones (`_replace` is not)."""
        return TokenSettings(**{**self._asdict(), **changes})

    def to_json(self) -> str:
        return json.dumps(self._asdict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TokenSettings:
        data = json.loads(text)
        unknown = set(data) - set(cls._fields)
        if unknown:
            raise ValueError(f"unknown tokeniser settings: {', '.join(sorted(unknown))}")
        return cls(**data)


def word_pattern(letter: str, at_least_two: bool) -> Lazy:
    """A word: runs of `letter` (`[^\\W_]`, letters and digits) joined by inner
    apostrophes, dots and hyphens, so that "don't", "e-mail", "192.0.2.1" and
    "example.com" stay whole; possessive (the same matches, nothing to backtrack into); with
    `at_least_two`, only its matches of two or more characters.

    A one-letter word is a letter followed by neither a letter nor a joiner and a
    letter; the search cannot then restart inside a longer word, since from the
    second letter on a word's letters are followed by the same as the first's.
    """
    if at_least_two:
        return Lazy(rf"{letter}(?:{letter}++|(?=['.\-]{letter}))(?:['.\-]{letter}++)*+")
    return Lazy(rf"{letter}++(?:['.\-]{letter}++)*+")


# On ASCII text `[^\W_]` is `[a-zA-Z0-9]`, which the regex engine tests faster (findall
# on the corpus's ASCII texts: 1.3 s of CPU against 1.9 s).
ASCII_LETTER = "[a-zA-Z0-9]"
UNICODE_LETTER = r"[^\W_]"
# Scripts written without spaces between words: a run of them becomes character
# bigrams, the usual unit for Chinese and Japanese text.
CJK = Lazy(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]+")
# A tag may not hold `<`: with `<[^>]*>` a megabyte of unclosed `<` took quadratic time.
TAG = Lazy(r"<[^<>]*>")
# Openers and closers of the parts of a page nobody sees (see `strip_invisible`).
INVISIBLE_OPEN = Lazy(r"<(script|style)\b|<!--", re.I)
INVISIBLE_CLOSE = {
    "script": Lazy(r"</script\s*>", re.I),
    "style": Lazy(r"</style\s*>", re.I),
    "": Lazy(r"-->"),
}
ENCODED_WORD = Lazy(r"=\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=")
# Adjacent encoded words, decoded together (RFC 2047 drops the space between them).
ENCODED_RUN = Lazy(rf"{ENCODED_WORD.pattern}(?:\s+{ENCODED_WORD.pattern})*")
# Pure-Python codecs, quadratic in their input (punycode: 5 s for 200 kB); no mail
# is written in them, so a part claiming one is decoded as undeclared 8-bit text.
SLOW_CODECS = frozenset({"punycode", "idna"})

# Deeper MIME trees than this are abuse, not mail; their text is tokenised raw.
MAX_PARTS = 200
# Bounds on what the email package is given.  Its parser costs microseconds per
# line and per part, times the nesting depth, and its header code is quadratic in a
# header's length: on 1 MiB of hostile mail a 1,000-deep multipart took 1 s,
# 130,000 empty parts 10 s, a Content-Type of `;a=b` parameters 39 s.  Real mail
# stays far inside these; beyond them the rest of a header is dropped, a part nested
# deeper is read as plain text, and a message of more parts is tokenised raw.
MAX_LINES = 20_000
MAX_MESSAGES = 1_000  # parts, all levels
MAX_DEPTH = 10
MAX_HEADER_CHARS = 16_384  # per header value, folded lines included
# Content-Type parameters are parsed again on every look-up, in time quadratic in
# the value (60 parts of 16 kB of `;` in quotes took 27 s); real ones are short.
MAX_CONTENT_TYPE_CHARS = 1_024
# Line ends as the email package splits lines.
LINE_END = Lazy(rb"\r\n|\r|\n")


def capped(name: str, value: str) -> str:
    """A header value cut to what the email package may be given (see MAX_HEADER_CHARS)."""
    return value[: MAX_CONTENT_TYPE_CHARS if name.lower() == "content-type" else MAX_HEADER_CHARS]


def parse_bounded(data: bytes) -> Any:
    """The message parsed from its first MAX_LINES lines: a SinglePart, or the email package's
    Message (raises mime.TooManyParts)."""
    if data.count(b"\n") + data.count(b"\r") > MAX_LINES:
        for number, end in enumerate(LINE_END.finditer(data), 1):
            if number == MAX_LINES:
                data = data[: end.end()]
                break
    text = data.decode("ascii", "surrogateescape")  # as BytesParser.parsebytes does
    simple = parse_single_part(text) or parse_multipart(text)
    if simple is not None:
        return simple
    from spamnb import mime  # the email package: off the start-up of the pipe's single-part mail

    return mime.parse(text)


# The fast path of `parse_bounded`, for a message that is one part (most mail).  The
# email package's feed parser reads such a message line by line, through a generator
# per line: 2.4 s of the 9.8 s of CPU tokenising the corpus (1.3 s now, most of it
# the 8% of messages still parsed).  Here the header fields are cut by one regular
# expression and the rest becomes the payload in one piece.  It applies its
# rules exactly (email/feedparser.py, `_parsegen` and `_parse_headers`): lines end at
# CRLF, CR or LF; the header block is the run of lines matching its `headerRE` (a
# field name and colon, a continuation, or `From `); a blank line after it is
# dropped, any other line starts the body.  Whatever those rules treat specially
# (an envelope or stray `From ` line, a line starting with a colon, a first line that
# is a continuation) and any multipart or message/* type go to the parser instead.
# Both paths give the same tokens on every message of the SpamAssassin corpus
# (bench/tokens_identical.py) and on generated ones (tests/test_tokens.py).
LINE_REST = r"[^\r\n]*+(?:\r\n|\r|\n|\Z)"
# In text without a CR the same lines are `.` up to an LF, which the regex engine scans
# 3x faster than a class (parse_single_part on the corpus: 0.59 s -> 0.40 s of CPU;
# 3 single-part messages of 5,540 hold a CR).
LINE_REST_LF = r".*+(?:\n|\Z)"


def field_patterns(line_rest: str) -> tuple[Lazy, Lazy]:
    """A field (its name and colon, the rest of its line and its continuation lines), and a run of them."""
    field = Lazy(rf"([\041-\071\073-\176]++):({line_rest}(?:[\t ]{line_rest})*+)")
    return field, Lazy(rf"(?:{field.pattern})*+")


HEADER_FIELD, HEADER_FIELDS = field_patterns(LINE_REST)
HEADER_FIELD_LF, HEADER_FIELDS_LF = field_patterns(LINE_REST_LF)
BLANK = Lazy(r"\r\n|\r|\n")


def parse_single_part(text: str) -> Any:
    """The message as the email package parses it, if it is one part; else None."""
    msg = read_part(text)
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
    field, fields = (HEADER_FIELD, HEADER_FIELDS) if "\r" in text else (HEADER_FIELD_LF, HEADER_FIELDS_LF)
    pos = fields.match(text).end()
    # Back to back, so each field in turn; compat32's header_source_parse on the field's
    # lines at once.
    values = [(name, rest.lstrip(" \t").rstrip("\r\n")) for name, rest in field.findall(text, 0, pos)]
    # No cap cuts a value this short (0.14 s of CPU on the corpus to call `capped` on each).
    headers = [(name, value if len(value) <= MAX_CONTENT_TYPE_CHARS else capped(name, value)) for name, value in values]
    # The first line that is not a field.  headerRE would also take these two (and
    # a continuation, but each field took its own): an envelope line, a nameless field.
    if text.startswith(("From ", ":"), pos):
        return None
    blank = BLANK.match(text, pos)
    payload = text[blank.end() if blank else pos :]
    msg = SinglePart(headers, payload)
    if not msg.plain():
        from spamnb import mime

        msg = mime.single_part(headers, payload)
    return msg


# What may follow the separator on a boundary line (feedparser's `boundaryre`): the
# closing `--`, blanks, the line's end.
BOUNDARY_REST = Lazy(r"(--)?[ \t]*+(?:\r\n|\r|\n|\Z)")
LAST_LINE_END = Lazy(r"(?:\r\n|\r|\n)\Z")


class MultiPart:
    """A multipart message of one-part parts (SinglePart or Message), as `iter_text_parts` walks it."""

    def __init__(self, headers: list[tuple[str, str]], parts: list[Any]) -> None:
        self.headers, self.parts = headers, parts

    def raw_items(self) -> Iterator[tuple[str, str]]:
        return iter(self.headers)

    def is_multipart(self) -> bool:
        return True

    def get_payload(self) -> list[Any]:
        return self.parts


def parse_multipart(text: str) -> MultiPart | None:
    """A multipart message whose parts are each one part, as the email package parses it
    (email/feedparser.py, `_parsegen`); None for anything else, or for what it reads
    specially: no boundary or no first boundary line, a digest, more than MAX_MESSAGES
    parts, a part that is itself multipart or message/*.

    The email package reads every line of such a message through generators, and
    compiles a pattern for each boundary; here the boundary lines are found by a plain
    search for their separator.  Parts run from one boundary line to the next (any
    kind) or to the end; boundary lines right after a separating one are skipped; the
    last line end before a boundary line belongs to it; the closing line ends the parts.
    """
    top = read_part(text)
    if not isinstance(top, SinglePart) or top.get_content_type().split("/")[0] != "multipart" or top.get_content_type() == "multipart/digest":
        return None
    boundary = top.boundary()
    if not boundary:
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
        stop = lines[i][0] if i < len(lines) else len(body)
        texts.append(LAST_LINE_END.sub("", body[end:stop]))
        if i < len(lines) and lines[i][2]:
            break
    if len(texts) >= MAX_MESSAGES:
        return None
    parts = [parse_single_part(part) for part in texts]
    if any(part is None for part in parts):
        return None
    return MultiPart(top.headers, parts)


# Transfer encodings whose decoding SinglePart leaves to the email package.
UUENCODE = frozenset({"x-uuencode", "uuencode", "uue", "x-uue"})


class SinglePart:
    """A one-part message, answering what the tokeniser asks of the email package's
    Message (`raw_items`, `is_multipart`, `get_content_type`, `get_content_charset`,
    `get_payload(decode=True)`) by its rules (compat32, email/message.py), for messages
    whose Content-Type and Content-Transfer-Encoding those rules read plainly (`plain`).

    Not importing the email package (email.message and what it imports) takes ~12 ms
    off the one-message pipe's start-up.  tests/test_tokens.py checks it against the
    email package on generated mail; bench/tokens_identical.py on the corpus.
    """

    def __init__(self, headers: list[tuple[str, str]], payload: str) -> None:
        self.headers, self.payload = headers, payload
        self.content_type: str | None = None
        self.encoding: str | None = None
        for name, value in headers:  # the first field of each name, as Message.get finds it
            low = name.lower()
            if low == "content-type" and self.content_type is None:
                self.content_type = value
            elif low == "content-transfer-encoding" and self.encoding is None:
                self.encoding = value

    def plain(self) -> bool:
        """Whether the email package would read these two fields as their text says: ASCII
        (8-bit bytes make it a Header object), no RFC 2231 `*`, no backslash escapes, no
        `;` inside quotes, and no uuencoding."""
        ctype, cte = self.content_type or "", self.encoding or ""
        if not (ctype.isascii() and cte.isascii()) or cte.lower() in UUENCODE:
            return False
        return "*" not in ctype and "\\" not in ctype and all(piece.count('"') % 2 == 0 for piece in ctype.split(";"))

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
            from email._encoded_words import decode_b  # lenient: bad padding and characters

            return decode_b(b"".join(data.splitlines()))[0]
        return data


def unquote(value: str) -> str:
    """email.utils.unquote: without one pair of surrounding quotes or angle brackets."""
    if len(value) > 1:
        if value.startswith('"') and value.endswith('"'):
            return value[1:-1].replace("\\\\", "\\").replace('\\"', '"')
        if value.startswith("<") and value.endswith(">"):
            return value[1:-1]
    return value


@cache
def stopword_set() -> frozenset[str]:
    with open(os.path.join(os.path.dirname(__file__), "stopwords.txt"), encoding="utf-8") as f:
        text = f.read()
    lines = (line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return frozenset(w for line in lines for w in line.split())


def decode_bytes(data: bytes, charset: str | None) -> str:
    """Decode with the declared charset, falling back when it is unknown or lies."""
    for candidate in (charset, "utf-8"):
        if not candidate:
            continue
        try:
            if codecs.lookup(candidate).name in SLOW_CODECS:
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


def strip_invisible(markup: str) -> str:
    """Blank out scripts, styles and comments, in one pass.

    A regular expression with `.*?` rescans to the end of the page from every
    unclosed opener: quadratic (minutes for a megabyte of `<!--`).  Here a closer
    searched for and not found is never searched for again.
    """
    out: list[str] = []
    pos = 0
    unclosed: set[str] = set()
    start = 0
    while opener := INVISIBLE_OPEN.search(markup, start):
        kind = (opener.group(1) or "").lower()
        closer = None if kind in unclosed else INVISIBLE_CLOSE[kind].search(markup, opener.end())
        if closer is None:
            unclosed.add(kind)
            start = opener.start() + 1
            continue
        out.append(markup[pos : opener.start()])
        out.append(" ")
        pos = start = closer.end()
    out.append(markup[pos:])
    return "".join(out)


def html_to_text(markup: str) -> str:
    text = strip_invisible(markup)
    text = TAG.sub(" ", text)
    import html  # only HTML mail needs it: off the start-up of the one-message pipe

    return html.unescape(text)


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


# Header tokens are remembered by (name, value): 53% of the header fields of the
# SpamAssassin corpus repeat one seen before (mailing lists, mailers, servers), and
# the tokens of fields other than Received took 1.3 s of 8.3 s of tokeniser CPU.  Bounded: at most HEADER_CACHE
# fields of at most HEADER_CACHE_CHARS each, forgotten all at once when full.
# Received fields are all but unique (32,427 distinct of 32,585) and never kept.
HEADER_CACHE = 8192
HEADER_CACHE_CHARS = 1024


class Tokenizer:
    """Callable turning raw message bytes into tokens under fixed settings."""

    def __init__(self, settings: TokenSettings | None = None) -> None:
        self.settings = settings or TokenSettings()
        self._stop = stopword_set() if self.settings.stopwords else frozenset()
        at_least_two = self.settings.min_len >= 2
        self._word_ascii = word_pattern(ASCII_LETTER, at_least_two)
        self._word_unicode = word_pattern(UNICODE_LETTER, at_least_two)
        # Words the pattern finds that may still be too short.
        self._min_checked = 2 if at_least_two else 1
        self._header_cache: dict[tuple[str, str], list[str]] = {}

    def __call__(self, data: bytes) -> list[str]:
        # As learnt: no envelope line, no verdict header (ours or a forgery), then capped.
        data = message_headers.unstamped(data, self.settings.max_bytes)
        try:
            msg = parse_bounded(data)
            # raw_items: items() would turn a value with 8-bit bytes into a Header
            # whose text has lost them (decode_header_value recovers them).
            headers = list(msg.raw_items()) if self.settings.header_tokens else []
            bodies = list(iter_text_parts(msg))
        except Exception:  # noqa: BLE001 - any parser failure (RecursionError, TooManyParts): raw text
            headers, bodies = [], [("plain", data.decode("latin-1"))]
        tokens: list[str] = []
        cache = self._header_cache
        for name, value in headers:
            found = cache.get((name, value))
            if found is None:
                found = self.header_tokens(name, value)
                if len(value) <= HEADER_CACHE_CHARS and name.lower() != "received":
                    if len(cache) >= HEADER_CACHE:
                        cache.clear()
                    cache[name, value] = found
            tokens.extend(found)
        for subtype, text in bodies:
            # Link targets, including those hidden in HTML attributes: Fisher 1-AUC
            # 0.0373% -> 0.0358%, multinomial 0.561% -> 0.408%.
            tokens.extend(url_tokens(text))
            if subtype == "html":
                text = html_to_text(text)
            tokens.extend(self.ngrams(self.words(text)))
        return tokens

    def header_tokens(self, name: str, value: str) -> list[str]:
        """The tokens of one header field."""
        name = name.lower()
        if name == VERDICT_HEADER:
            return []
        value = decode_header_value(value)
        tokens = []
        if name == "received":
            # Relay networks and domains, coarser than the words themselves: Fisher
            # 1-AUC 0.0373% -> 0.0335%, FN 160 -> 141 (5 folds, SpamAssassin corpus).
            tokens = received_tokens(value)
        prefix = name + ":"
        tokens.extend([prefix + w for w in self.words(value)])
        return tokens

    def words(self, text: str) -> list[str]:
        s = self.settings
        if s.lowercase:
            text = text.lower()
        # CJK letters are never ASCII; isascii() is O(1), the search a pass over the text (-6% tokeniser time).
        if text.isascii():
            found = self._word_ascii.findall(text)
        else:
            if CJK.search(text):
                text = CJK.sub(lambda m: " " + cjk_bigrams(m.group()) + " ", text)
            found = self._word_unicode.findall(text)
        lo, hi, stop = s.min_len, s.max_len, self._stop
        # The length filter was 10% of word time (0.3 s of 3.1 s); most texts need none.
        too_long = len(text) > hi and max(map(len, found), default=0) > hi
        if too_long or lo > self._min_checked:
            out = [w for w in found if lo <= len(w) <= hi and w not in stop]
        elif stop:
            out = [w for w in found if w not in stop]
        else:
            out = found
        if too_long:
            # Over-long words (encoded junk, hashes) as a bucket of first letter and length
            # in tens, SpamBayes's "skip" tokens: Fisher 1-AUC 0.0373% -> 0.0369%.
            out.extend(f"skip:{w[0]}{len(w) // 10 * 10}" for w in found if len(w) > hi)
        return out

    def ngrams(self, words: list[str]) -> list[str]:
        n = self.settings.ngram
        out = list(words)
        for order in range(2, n + 1):
            out.extend(" ".join(words[i : i + order]) for i in range(len(words) - order + 1))
        return out


URL = Lazy(r"(?:https?|ftp)://([^\s/\"'<>?#:]+)(?::\d+)?", re.I)
IPV4 = Lazy(r"\b(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.\d{1,3}\b")
# Host names, as `\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b` finds them, but in linear time: that
# regex backtracks and restarts label by label (60 Received headers of `a.a.a...`
# took 250 s).  A dotted run is taken whole, from its start only, then cut after
# its last label that can end a host name.  Same hosts on all 32,585 Received
# headers of the SpamAssassin corpus.
DOTTED = Lazy(r"(?<![\w-])[a-z0-9-]++(?:\.[a-z0-9-]++)++", re.I)
TOP_LABEL = Lazy(r"[a-z]{2,}(?=-|$)", re.I)
# On ASCII text (all but 3 of the corpus's Received fields) the same patterns without
# Unicode classes and case folding match the same, and IPV4 twice as fast.
IPV4_ASCII = Lazy(IPV4.pattern, re.A)
DOTTED_ASCII = Lazy(r"(?<![\w-])[a-zA-Z0-9-]++(?:\.[a-zA-Z0-9-]++)++", re.A)
# Received fields are all but unique, their hosts and dotted runs are not (5,138
# distinct hosts of 67,463, 10,553 runs of 130,313): each is worked out once.  Keys
# are at most a DNS name long, and the memos forgotten when full.
MEMO_SIZE = 8192
MEMO_KEY_CHARS = 255
_suffix_memo: dict[tuple[str, str], tuple[str, ...]] = {}
_run_memo: dict[tuple[str, bool], str | None] = {}
# An ASCII field's maximal runs of `[\w.-]` that hold a dot (linear: the look-behind
# lets a search start only at a run's start, and a run is scanned once from there).
# Every address and host of the field lies inside one, and matches inside a run are
# the same whether the run stands alone or in its field: the characters either side
# of a run are neither word characters nor `.` or `-`, nothing these patterns test
# for but the start and end of text.  So a field's tokens are its runs' tokens, each
# run worked out once: 10,609 distinct runs of 130,611 in the corpus, received_tokens
# 0.86 s -> 0.51 s of CPU.
DOTTED_CHUNK = Lazy(r"(?<![\w.-])[\w-]*+\.[\w.-]*+", re.A)
_chunk_memo: dict[tuple[str], tuple[list[str], list[str]]] = {}


def remember(memo: dict, key: tuple, value: object) -> None:
    if len(key[0]) <= MEMO_KEY_CHARS:
        if len(memo) >= MEMO_SIZE:
            memo.clear()
        memo[key] = value


def domain_suffixes(host: str, prefix: str) -> list[str]:
    """`prefix` + host and its parent domains, at most four labels: a.b.example.com -> itself, b.example.com, example.com."""
    found = _suffix_memo.get((host, prefix))
    if found is None:
        parts = host.lower().strip(".").split(".")
        found = tuple(prefix + ".".join(parts[i:]) for i in range(max(len(parts) - 4, 0), len(parts) - 1))
        remember(_suffix_memo, (host, prefix), found)
    return list(found)


def received_tokens(value: str) -> list[str]:
    """Networks (/24 and /16) of the IPv4 addresses and parent domains of the hosts in a Received header."""
    if not value.isascii():
        networks, domains = received_parts(value)
        return networks + domains
    networks, domains = [], []
    for chunk in DOTTED_CHUNK.findall(value):
        key = (chunk,)
        parts = _chunk_memo.get(key)
        if parts is None:
            parts = received_parts(chunk)
            remember(_chunk_memo, key, parts)
        networks += parts[0]
        domains += parts[1]
    return networks + domains


def received_parts(value: str) -> tuple[list[str], list[str]]:
    """The network tokens of the IPv4 addresses in `value`, and the domain tokens of its hosts."""
    networks = []
    for m in (IPV4_ASCII if value.isascii() else IPV4).finditer(value):
        a, b, c = m.groups()
        networks += [f"rcvd-ip:{a}.{b}.{c}", f"rcvd-ip:{a}.{b}"]
    domains = []
    for host in host_names(value):
        domains += domain_suffixes(host, "rcvd-host:")
    return networks, domains


def host_names(text: str) -> list[str]:
    """The host names in `text` (see DOTTED)."""
    hosts = []
    for run in (DOTTED_ASCII if text.isascii() else DOTTED).finditer(text):
        after = text[run.end() : run.end() + 1]
        key = (run.group(), not (after.isalnum() or after == "_"))
        if key in _run_memo:
            host = _run_memo[key]
        else:
            host = run_host(*key)
            remember(_run_memo, key, host)
        if host is not None:
            hosts.append(host)
    return hosts


def run_host(run: str, at_word_end: bool) -> str | None:
    """The host name a dotted run holds, if any: cut after its last label that can end one."""
    labels = run.lstrip("-.").split(".")
    for i in range(len(labels) - 1, 0, -1):
        top = TOP_LABEL.match(labels[i])
        if top and (at_word_end or i < len(labels) - 1 or top.end() < len(labels[i])):
            return ".".join([*labels[:i], top.group()])
    return None


def url_tokens(text: str) -> list[str]:
    """Each link's host, its parent domains, and whether it is a bare IP address."""
    out = []
    for m in url_matches_ascii(text) if text.isascii() else URL.finditer(text):
        host = m.group(1).lower()
        if IPV4.fullmatch(host):
            out += ["url:ip-address", "url:" + host]
        else:
            out += domain_suffixes(host, "url:")
    return out


def url_matches_ascii(text: str) -> Iterator[re.Match[str]]:
    """`URL.finditer(text)` for ASCII text, found from each `://` by a plain search.

    The case-blind pattern tried at every character was most of url_tokens' time.
    A match holds one `://`, its scheme right before it (`https`, `http` or `ftp`,
    so starting 5, 4 or 3 characters back), and its host and port hold no `://`:
    so each `://` is tried at those starts, leftmost first, none before the end of
    the previous match, exactly as finditer would.
    """
    end = 0
    i = text.find("://")
    while i >= 0:
        for start in (i - 5, i - 4, i - 3):
            if start >= end and (m := URL.match(text, start)):
                yield m
                end = m.end()
                break
        i = text.find("://", i + 3)


def cjk_bigrams(run: str) -> str:
    if len(run) == 1:
        return run
    return " ".join(run[i : i + 2] for i in range(len(run) - 1))
