"""One message's bytes -> a list of token strings.

Everything that changes the tokens lives in `TokenSettings`, which is saved in the
model so that classification tokenises exactly as training did.  The message is
read by `spamnb.mail.message` (fields, text parts); this module makes tokens of them.
"""
from __future__ import annotations

import json
import math
import os
import re
from collections import namedtuple
from collections.abc import Iterator, Sequence
from functools import cache
from itertools import count, pairwise

from spamnb import compiled
from spamnb.mail import headers as message_headers
from spamnb.mail.lazy import Lazy
from spamnb.mail.message import decode_header_value, iter_text_parts, parse_bounded

# `typing` is off the one-message pipe's start-up: names for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    import numpy as np

# Our own verdict header: never evidence, since anyone can forge it.
VERDICT_HEADER = "x-spamnb"


# Each token's field is what its name holds up to its first colon ("subject:", "received:"):
# a body word holds none.  Link targets and over-long words are the body's, a Received
# field's networks and domains that field's (see `field_ids`).
FIELD_OF_PREFIX = {"": 0, "url:": 0, "skip:": 0, "received:": 1, "rcvd-ip:": 1, "rcvd-host:": 1}
# The fields a mailing list's server adds to every message it relays (RFC 2369's List-*,
# RFC 2919's List-Id, Mailman's X-BeenThere and X-Mailman-Version) name the list that
# carried a message, not its writer: spam posted to a list gets them as its ham does.
# Field NOT_EVIDENCE: Fisher leaves their tokens out (events.Fisher.by_field).  The linear
# models keep them: without them (5 folds, SpamAssassin) multinomial 1-AUC 0.053% -> 0.077%,
# Bernoulli 0.056% -> 0.067%, worse on all seven splits tried.
NOT_EVIDENCE = -1
LIST_FIELDS = ("list-", "x-beenthere:", "x-mailman-version:")


class FieldNumbers(dict):
    """Prefix -> field id, numbering each new prefix when first met (`__missing__`)."""

    def __init__(self) -> None:
        super().__init__(FIELD_OF_PREFIX)
        self.next = count(max(FIELD_OF_PREFIX.values()) + 1).__next__

    def __missing__(self, prefix: str) -> int:
        found = self[prefix] = NOT_EVIDENCE if prefix.startswith(LIST_FIELDS) else self.next()
        return found


def field_ids(tokens: Sequence[str]) -> np.ndarray:
    """A small int per token, equal for the tokens of one header field (or of the body);
    NOT_EVIDENCE for those of a list server's fields.

    Fisher counts each field's tokens as fewer independent tests (events.Fisher.tests) apart:
    a relay named on every Received line, an address's parts, a topic's words all repeat
    each other within their field, while the fields are witnesses of their own.
    """
    import numpy as np  # off the one-message pipe, which takes `field_numbers`

    if FIELD_NUMBERS is not None and type(tokens) is list:
        return np.frombuffer(FIELD_NUMBERS(tokens, FieldNumbers()), np.int64)
    return np.fromiter(field_numbers(tokens), dtype=np.int64, count=len(tokens))


def field_numbers(tokens: Sequence[str]) -> list[int]:
    """`field_ids` as a list of ints."""
    if FIELD_NUMBERS is not None and type(tokens) is list:
        return memoryview(FIELD_NUMBERS(tokens, FieldNumbers())).cast("q").tolist()
    # t[: t.find(":") + 1] is "" for a body word (find gives -1), else the name with its colon.
    return list(map(FieldNumbers().__getitem__, [t[: t.find(":") + 1] for t in tokens]))


# (lowercase: bool, stopwords: bool, ngram: int, header_tokens: bool, min_len: int, max_len: int,
# max_bytes: int).  Stopwords are off by measurement: Fisher 1-AUC 0.0404% with English
# stopwords dropped, 0.0373% kept.
TokenFields = namedtuple(  # collections', not typing's: see `typing` above
    "TokenFields",
    ("lowercase", "stopwords", "ngram", "header_tokens", "min_len", "max_len", "max_bytes"),
    defaults=(True, False, 1, True, 2, 40, 1 << 20),
)


# Bounds of what a model file may set: a token's length costs memory per message
# ("max_len": 1e9 made a 1 GB string), and so does the part of a message read.
MAX_TOKEN = 1000
MAX_BYTES = 1 << 30


class TokenSettings(TokenFields):
    """How messages become tokens; stored in the model file.

    A named tuple checked when made, as the other settings records: a dataclass
    compiles generated code at import, on the pipe's start-up.
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> TokenSettings:
        self = super().__new__(cls, *args, **kwargs)
        wrong = [k for k, v in self._asdict().items() if type(v) is not type(TokenFields._field_defaults[k])]
        if wrong:
            raise ValueError(f"tokeniser settings of the wrong type: {', '.join(wrong)}")
        if not 1 <= self.ngram <= 5:
            raise ValueError(f"ngram must be 1..5, not {self.ngram}")
        if not 1 <= self.min_len <= self.max_len <= MAX_TOKEN:
            raise ValueError(f"need 1 <= min_len <= max_len <= {MAX_TOKEN}, got {self.min_len}, {self.max_len}")
        if not 1024 <= self.max_bytes <= MAX_BYTES:
            raise ValueError(f"max_bytes must be from 1024 to {MAX_BYTES:,}, not {self.max_bytes}")
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


# On ASCII text `[^\W_]` is `[a-zA-Z0-9]`, which the regex engine tests faster.
ASCII_LETTER = "[a-zA-Z0-9]"
UNICODE_LETTER = r"[^\W_]"
# Likewise on text all in the characters of an 8-bit charset, `[^\W_]` spelt out as
# those of its characters that are letters or digits (what isalnum() holds).  Most
# non-ASCII mail text is such (an HTML `&nbsp;`, Latin-1 mail, cp1252's typographic
# quotes and dashes), and holds no CJK either: the words of such texts are found in half
# the time.  Latin-1 first: cp1252 lacks the C1 controls that text decoded as Latin-1 holds.
EIGHT_BIT_CHARSETS = ("latin-1", "cp1252")


def charset_letter(charset: str) -> str:
    r"""The characters of an 8-bit charset that `[^\W_]` matches, as a class."""
    characters = bytes(range(256)).decode(charset, errors="ignore")
    return "[" + "".join(c for c in characters if c.isalnum()) + "]"


# For ASCII text's bytes: those that may be in a word (letters, digits, joiners) made
# `a`, the rest a space (see Tokenizer.words).
WORD_BYTES = bytes(ord("a") if chr(c).isalnum() or chr(c) in "'.-" else ord(" ") for c in range(128)) + b" " * 128


# Read once, at import: every Tokenizer made after uses it (tests swap them to run both paths).
SCANNER = compiled.scanner_function("words")
# `TAG.sub(" ", text)` in C, where it was built: the regex engine tries its class on every
# character of a page, a loop in C compares it with `<` and `>`.
CUT_TAGS = compiled.scanner_function("tags")
# field_numbers in C, where it was built: the heads' slices and look-ups once per run of
# tokens of one field, and the numbers written as int64s, not a list of ints made for numpy.
FIELD_NUMBERS = compiled.scanner_function("field_numbers")


# Scripts written without spaces between words: a run of them becomes character
# bigrams, the usual unit for Chinese and Japanese text.
CJK = Lazy(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]+")
# The lowest character of CJK's class.
CJK_FIRST = 0x3040
# max(map(ord, text), default=0) in C, for compiled_words: cp1252's encoding, the test it
# replaces, took a charmap look-up per character.
HIGHEST = compiled.scanner_function("highest")
# str.lower in C, for compiled_words: str.lower finds each character's lowercase by a call that
# may give several, into a buffer of three characters for each.
LOWERED = compiled.scanner_function("lowered")
# A tag may not hold `<`: with `<[^>]*>` a megabyte of unclosed `<` took quadratic time.
TAG = Lazy(r"<[^<>]*>")
# Openers and closers of the parts of a page nobody sees (see `strip_invisible`).  A tag's
# name is case-blind in ASCII only (`(?a:`): Unicode's case-blind letters would also take the
# long s and the dotted I, which no browser reads in a name.
INVISIBLE_OPEN = Lazy(r"<(?a:script|style)\b|<!--", re.I)
INVISIBLE_CLOSE = {
    "script": Lazy(r"</script\s*>", re.I),
    "style": Lazy(r"</style\s*>", re.I),
    "": Lazy(r"-->"),
}

@cache
def stopword_set() -> frozenset[str]:
    with open(os.path.join(os.path.dirname(__file__), "stopwords.txt"), encoding="utf-8") as f:
        text = f.read()
    lines = (line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return frozenset(w for line in lines for w in line.split())


def invisible_opener(markup: str, start: int) -> tuple[int, int] | None:
    """The span of INVISIBLE_OPEN's first match in `markup` from `start` on, or None."""
    found = INVISIBLE_OPEN.search(markup, start)
    return None if found is None else found.span()


# invisible_opener in C, where it was built: the regex engine tried its alternatives at every
# `<` of a page; the C finds each `<` by memchr and compares the names there.
OPENER = compiled.scanner_function("opener")


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
    while opener := (OPENER or invisible_opener)(markup, start):
        begin, end = opener
        kind = "" if markup.startswith("<!--", begin) else markup[begin + 1 : end].lower()
        closer = None if kind in unclosed else INVISIBLE_CLOSE[kind].search(markup, end)
        if closer is None:
            unclosed.add(kind)
            start = begin + 1
            continue
        out.append(markup[pos:begin])
        out.append(" ")
        pos = start = closer.end()
    out.append(markup[pos:])
    return "".join(out)


# html.unescape in C, where it was built: the regex engine's sub called a Python function for
# each character reference; the C finds each `&` by memchr and looks the names up in html's own tables.
UNESCAPE = compiled.scanner_function("unescaped")


@cache
def html_module() -> Any:
    import html  # only HTML mail needs it: off the start-up of the one-message pipe

    return html


@cache
def html_tables() -> tuple[Any, ...] | None:
    """The tables html.unescape replaces references by, for UNESCAPE: private names in the
    standard library, so a Python without them (None) has its pages unescaped by html itself."""
    html = html_module()
    try:
        return html.entities.html5, html._invalid_charrefs, html._invalid_codepoints
    except AttributeError:
        return None


def unescape(text: str) -> str:
    """html.unescape(text), by UNESCAPE where it was built."""
    tables = None if UNESCAPE is None else html_tables()
    if tables is None:
        return html_module().unescape(text)
    return UNESCAPE(text, *tables)


def html_to_text(markup: str) -> str:
    text = strip_invisible(markup)
    text = TAG.sub(" ", text) if CUT_TAGS is None else CUT_TAGS(text)
    return unescape(text)


# Header tokens are remembered by (name, value): 53% of the header fields of the
# SpamAssassin corpus repeat one seen before (mailing lists, mailers, servers), and
# the tokens of fields other than Received were a sixth of the tokeniser's CPU.  Bounded
# as the memos below (`remember`): at most MEMO_SIZE fields of at most HEADER_CACHE_CHARS
# each.  Received fields are all but unique (32,427 distinct of 32,585) and never kept.
HEADER_CACHE_CHARS = 1024


class Tokenizer:
    """Callable turning raw message bytes into tokens under fixed settings."""

    def __init__(self, settings: TokenSettings | None = None) -> None:
        self.settings = settings or TokenSettings()
        self._stop = stopword_set() if self.settings.stopwords else frozenset()
        at_least_two = self.settings.min_len >= 2
        self._word_ascii = word_pattern(ASCII_LETTER, at_least_two)
        self._word_8bit = [(charset, word_pattern(charset_letter(charset), at_least_two)) for charset in EIGHT_BIT_CHARSETS]
        self._word_unicode = word_pattern(UNICODE_LETTER, at_least_two)
        # Words the pattern finds that may still be too short.
        self._min_checked = 2 if at_least_two else 1
        self._long_run = b"a" * (self.settings.max_len + 1)  # see words
        self._header_cache: dict[tuple[str, str], tuple[str, ...]] = {}
        self._scan = SCANNER
        if self._scan is not None:
            # The scanner's settings as one attribute: each settings field read is an attribute
            # look-up on every call, and most calls scan a short header field.
            self._scan_settings = (self.settings.lowercase, self.settings.min_len, self.settings.max_len, self._stop or None)
            self.words = self.compiled_words  # type: ignore[method-assign]

    def __call__(self, data: bytes) -> list[str]:
        """The message's tokens."""
        return self.read(data, False)[0]

    def read(self, data: bytes, features: bool) -> tuple[list[str], list[int] | None]:
        """The message's tokens, and with `features` its numeric features (`message_features`; else None)."""
        # As learnt: no envelope line, no verdict header (ours or a forgery), then capped.
        data = message_headers.unstamped(data, self.settings.max_bytes)
        try:
            msg = parse_bounded(data)
            # raw_items: items() would turn a value with 8-bit bytes into a Header
            # whose text has lost them (decode_header_value recovers them).
            fields = list(msg.raw_items()) if self.settings.header_tokens or features else []
            bodies = list(iter_text_parts(msg))
            numeric = message_features(len(data), fields, bodies) if features else None
            return self.tokens_of(fields if self.settings.header_tokens else [], bodies), numeric
        except Exception:  # noqa: BLE001 - any failure (RecursionError, TooManyParts, a fault on mail no test met): its raw text
            # A message is never dropped from a batch, nor a run stopped, by one that cannot be read.
            raw = [("plain", data.decode("latin-1"))]
            return self.tokens_of([], raw), message_features(len(data), [], raw) if features else None

    def tokens_of(self, headers: list[tuple[str, str]], bodies: list[tuple[str, str]]) -> list[str]:
        """The tokens of a message's header fields and its (subtype, text) parts."""
        tokens: list[str] = []
        cache = self._header_cache
        for field in headers:
            name, value = field
            if name == "Received":
                # Never in the cache (below): no look-up of its (name, value), one
                # field in four.
                tokens += self.header_tokens(name, value)
                continue
            # The field's own (name, value) tuple is the key: no new one per field.
            found = cache.get(field)
            if found is None:
                # A tuple of strs, not a list: the garbage collector stops tracking it (see MEMO_SIZE).
                found = tuple(self.header_tokens(name, value))
                if name.lower() != "received":
                    remember(cache, field, found, len(value), HEADER_CACHE_CHARS)
            # `+=`, not extend(): compiled, a method call is looked up on the list each time.
            tokens += found
        for subtype, text in bodies:
            # Link targets, including those hidden in HTML attributes: Fisher 1-AUC
            # 0.0373% -> 0.0358%, multinomial 0.561% -> 0.408%.
            tokens += url_tokens(text)
            if subtype == "html":
                text = html_to_text(text)
            words = self.words(text)
            # Unigrams are the words themselves: no copy.
            tokens += self.ngrams(words) if self.settings.ngram > 1 else words
        return tokens

    def header_tokens(self, name: str, value: str) -> list[str]:
        """The tokens of one header field."""
        name = name.lower()
        if name == VERDICT_HEADER:
            return []
        if "=?" in value or not value.isascii():  # else decode_header_value returns it as it is
            value = decode_header_value(value)
        prefix = name + ":"
        tokens = self.words(value, prefix)
        if name == "received":
            # Relay networks and domains, coarser than the words themselves: Fisher
            # 1-AUC 0.0373% -> 0.0335%, FN 160 -> 141 (5 folds, SpamAssassin corpus).
            return [*received_tokens(value, tokens), *tokens]
        if name == "subject":
            tokens += subject_pairs([t[len(prefix) :] for t in tokens])
        return tokens

    def compiled_words(self, text: str, prefix: str = "") -> list[str]:
        """`words`, the scanning in C (SCANNER): the same rules, so the same words."""
        # A one-byte text (ASCII or Latin-1, as most mail is) the scanner lowers word by word
        # as it copies them out, sparing a lowered copy of the whole text; any other is
        # lowered here.
        lower, lo, hi, stop = self._scan_settings
        if text.isascii() or encodes(text, "latin-1"):
            return self._scan(text, lo, hi, stop, prefix, lower)
        if lower:
            text = LOWERED(text)
        # CJK letters are from CJK_FIRST up: a text with no character as high (most of the rest
        # of mail: typographic quotes and dashes, Greek, Cyrillic; told by a loop in C, built with
        # the scanner) holds none and needs no search, a pass of the regex engine over the whole text.
        if HIGHEST(text) >= CJK_FIRST and CJK.search(text):
            text = CJK.sub(lambda m: " " + cjk_bigrams(m.group()) + " ", text)
        return self._scan(text, lo, hi, stop, prefix, False)

    def words(self, text: str, prefix: str = "") -> list[str]:
        """The words of a text (see word_pattern) within the length bounds, less stopwords,
        then a skip token for each over-long one; each after `prefix` (the scanner makes
        a header field's tokens without making its bare words first)."""
        s = self.settings
        if s.lowercase:
            text = text.lower()
        # CJK letters are never ASCII (nor in EIGHT_BIT_CHARSETS); isascii() is O(1), the search a pass over the text (-6% tokeniser time).
        hi = s.max_len
        if text.isascii():
            found = self._word_ascii.findall(text)
            # A word longer than `hi` is a run of more than `hi` letters, digits and
            # joiners: looked for first in C, in the text's bytes with each of those made
            # an `a`; only texts holding such a run (a long word, a line of hyphens: 1,635
            # of the corpus's 68,555 ASCII texts over 40 characters) have their words'
            # lengths checked.
            may_be_long = len(text) > hi and self._long_run in text.encode("ascii").translate(WORD_BYTES)
        else:
            for charset, pattern in self._word_8bit:
                if encodes(text, charset):
                    found = pattern.findall(text)
                    break
            else:
                if CJK.search(text):
                    text = CJK.sub(lambda m: " " + cjk_bigrams(m.group()) + " ", text)
                found = self._word_unicode.findall(text)
            may_be_long = len(text) > hi
        lo, stop = s.min_len, self._stop
        # The length filter was a tenth of word time; most texts need none.  max with key=len
        # is faster than max(map(len, ...)) on header words.
        too_long = may_be_long and bool(found) and len(max(found, key=len)) > hi
        if lo > self._min_checked:
            out = [w for w in found if lo <= len(w) <= hi]
        elif too_long:
            # The pattern finds no word shorter than `lo` here: the upper bound alone.
            out = [w for w in found if len(w) <= hi]
        else:
            out = found
        if stop:
            out = [w for w in out if w not in stop]
        if too_long:
            # Over-long words (encoded junk, hashes) as a bucket of first letter and length
            # in tens, SpamBayes's "skip" tokens: Fisher 1-AUC 0.0373% -> 0.0369%.
            out.extend(f"skip:{w[0]}{len(w) // 10 * 10}" for w in found if len(w) > hi)
        return [prefix + w for w in out] if prefix else out

    def ngrams(self, words: list[str]) -> list[str]:
        n = self.settings.ngram
        out = list(words)
        for order in range(2, n + 1):
            out.extend(" ".join(words[i : i + order]) for i in range(len(words) - order + 1))
        return out


def subject_pairs(words: list[str]) -> list[str]:
    """`subject:` + each pair of adjacent subject words as `a_b`, words holding a digit left out.

    An ad's subject is a phrase ("special offer") more than its words, each of which
    real mail uses too.  SpamAssassin corpus, Fisher, FN at P(spam) >= 0.95 and 1-AUC:
    5 folds 91 -> 90, 0.0197% -> 0.0182%; 10 folds 94 -> 90, 0.0188% -> 0.0171%;
    2 folds 124 -> 121, 0.0334% -> 0.0322% (and FP 3 -> 2); 1-AUC better on all four
    re-salted 5-fold splits too.  Pairs of all words gained a false positive on one of
    those (a reminder whose subject ends in its date): words with digits (dates,
    counters, ticket numbers) make one-off pairs.  Pairs of all body words (ngram=2)
    were worse: 1-AUC 0.0239%, FN 133.
    """
    digit = DIGIT.search  # once, not per word: each look-up on the Lazy pattern searches its type, then its dict
    # A word of letters alone holds no digit: isalpha() spares most words the search.
    plain = [w for w in words if w.isalpha() or not digit(w)]
    # Joined by `_`, which no word holds: tokens hold no white space (vocabulary.SEPARATOR).
    return [f"subject:{a}_{b}" for a, b in pairwise(plain)]


DIGIT = Lazy(r"\d")

URL = Lazy(r"(?:https?|ftp)://([^\s/\"'<>?#:]+)(?::\d+)?", re.I)
IPV4 = Lazy(r"\b(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.\d{1,3}\b")
# Host names, as `\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b` finds them, but in linear time: that
# regex backtracks and restarts label by label (minutes on a few hostile Received
# headers of `a.a.a...`).  A dotted run is taken whole, from its start only, then cut after
# its last label that can end a host name.  Same hosts on all 32,585 Received
# headers of the SpamAssassin corpus.
DOTTED = Lazy(r"(?<![\w-])[a-z0-9-]++(?:\.[a-z0-9-]++)++", re.I)
TOP_LABEL = Lazy(r"[a-z]{2,}(?=-|$)", re.I)
# On ASCII text (all but 3 of the corpus's Received fields) the same patterns without
# Unicode classes and case folding match the same, and IPV4 twice as fast.
IPV4_ASCII = Lazy(IPV4.pattern, re.A)
DOTTED_ASCII = Lazy(r"(?<![\w-])[a-zA-Z0-9-]++(?:\.[a-zA-Z0-9-]++)++", re.A)
# Received fields are all but unique, their dotted runs are not (10,609 distinct
# of 130,611), nor links' hosts (5,778 of 42,945): the tokens of each are worked
# out once (received_tokens, url_tokens).  Keys are at most a DNS name long, and the
# memos forgotten when full.  The host names and parent domains inside were each
# remembered too, but behind these two memos they hit 48 times in 10,901 runs.
# Every memo keeps tuples of strs, which the garbage collector stops tracking once it has
# looked at them: lists stayed in each of its passes.
MEMO_SIZE = 8192
MEMO_KEY_CHARS = 255
# An ASCII field's maximal runs of `[\w.-]` that hold a dot (linear: the look-behind
# lets a search start only at a run's start, and a run is scanned once from there).
# Every address and host of the field lies inside one, and matches inside a run are
# the same whether the run stands alone or in its field: the characters either side
# of a run are neither word characters nor `.` or `-`, nothing these patterns test
# for but the start and end of text.  So a field's tokens are its runs' tokens, each
# run worked out once (a twelfth of a corpus's runs are distinct).
DOTTED_CHUNK = Lazy(r"(?<![\w.-])[\w-]*+\.[\w.-]*+", re.A)
_chunk_memo: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def remember(memo: dict, key: Any, value: object, size: int, limit: int = MEMO_KEY_CHARS) -> None:
    """Keep `value` under `key` if what the key stands for is at most `limit` characters
    (`size`); a memo of MEMO_SIZE entries is forgotten all at once."""
    if size <= limit:
        if len(memo) >= MEMO_SIZE:
            memo.clear()
        memo[key] = value


def domain_suffixes(host: str, prefix: str) -> list[str]:
    """`prefix` + host and its parent domains, at most four labels: a.b.example.com -> itself, b.example.com, example.com."""
    parts = host.lower().strip(".").split(".")
    return [prefix + ".".join(parts[i:]) for i in range(max(len(parts) - 4, 0), len(parts) - 1)]


def received_tokens(value: str, words: list[str] | None = None) -> tuple[str, ...]:
    """Networks (/24 and /16) of the IPv4 addresses and parent domains of the hosts in a Received header.

    `words`, if given, are those of Tokenizer.words(value, RECEIVED_PREFIX) (any settings).
    """
    if not value.isascii():
        networks, domains = received_parts(value)
        return (*networks, *domains)
    chunks = tuple(dotted_chunks(value, words))
    # The memos as local names: compiled, a method of a module's global is looked up as a bound
    # method made anew at each call, a local's is called without one.
    runs_memo, run_memo = _chunks_memo, _chunk_memo
    found = runs_memo.get(chunks)
    if found is None:
        networks, domains = [], []
        for chunk in chunks:
            parts = run_memo.get(chunk)
            if parts is None:
                parts = (RECEIVED_PARTS or received_parts)(chunk[len(RECEIVED_PREFIX) :])
                remember(run_memo, chunk, parts, len(chunk))
            networks += parts[0]
            domains += parts[1]
        found = (*networks, *domains)
        remember(runs_memo, chunks, found, len(value), HEADER_CACHE_CHARS)
    return found


# A Received field's runs, all together, recur where the field does not: the date
# and ids hold no dot (6,819 distinct run lists in the corpus's 32,582 ASCII fields).
# Their tokens, worked out once, are one look-up instead of one per run.  Keys hold
# no more than their field, at most HEADER_CACHE_CHARS.
_chunks_memo: dict[tuple[str, ...], tuple[str, ...]] = {}
# The memos' runs keep the prefix of the field's words: only a run not met before is
# cut out of its word (few of them: docs/measurements.md, issue 30), not every one.
RECEIVED_PREFIX = "received:"


def dotted_chunks(value: str, words: list[str] | None) -> list[str]:
    """The DOTTED_CHUNK runs of an ASCII field, or strings with the same tokens: its words
    (`received_tokens`' `words`) that hold a dot; each after RECEIVED_PREFIX.

    Where the field has no `_` nor `--`, and its words' dots are all its dots, each
    such run is the whole of a word's piece between apostrophes, with at most a `-`
    before the word and after it; and a word's tokens are its pieces' tokens in
    turn (`'` is a boundary to both patterns, as the field's characters either side
    of a run are), the hyphens change none (a word's letters and digits are joined
    by single dots and hyphens; its last label ends the same).  Picked out of the
    words already found in C, in half the time of the DOTTED_CHUNK findall on them.
    """
    found = None if words is None else (DOTTED_WORDS or dotted_words)(value, words)
    if found is not None:
        return found
    return [RECEIVED_PREFIX + run for run in DOTTED_CHUNK.findall(value)]


def dotted_words(value: str, words: list[str]) -> list[str] | None:
    """The `words` that hold a dot, where the field `value` holds no `_` nor `--` and those
    words' dots are all its dots (see dotted_chunks); else None."""
    dotted = [w for w in words if "." in w]
    if "_" not in value and "--" not in value and "".join(dotted).count(".") == value.count("."):
        return dotted
    return None


# dotted_words in C, where it was built: in Python the test of each word for a dot and the
# four passes over the field cost more than the memo look-ups they lead to.
DOTTED_WORDS = compiled.scanner_function("dotted")


# What an ASCII dotted run holds besides letters.
NOT_LETTERS = "0123456789.-_"


def received_parts(value: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The network tokens of the IPv4 addresses in `value`, and the domain tokens of its hosts."""
    ascii = value.isascii()
    networks = []
    # An address holds three dots: most runs (host names) hold fewer, and need no search.
    for a, b, c in (IPV4_ASCII if ascii else IPV4).findall(value) if value.count(".") >= 3 else ():
        networks += [f"rcvd-ip:{a}.{b}.{c}", f"rcvd-ip:{a}.{b}"]
    domains: list[str] = []
    # A host name ends in two letters; ASCII without any (addresses, version numbers:
    # 5,114 of the corpus's 10,562 distinct runs) holds none.
    if ascii and not value.strip(NOT_LETTERS):
        return tuple(networks), ()
    for host in host_names(value):
        domains += domain_suffixes(host, "rcvd-host:")
    return tuple(networks), tuple(domains)


# received_parts of an ASCII text in C, where it was built: a run met first cost the search of its
# addresses and hosts by the regex engine, a match object a host and the list and str methods of
# run_host and domain_suffixes; the C makes only the tokens' strs.
RECEIVED_PARTS = compiled.scanner_function("received_parts")


def host_names(text: str) -> list[str]:
    """The host names in `text` (see DOTTED)."""
    hosts = []
    for run in (DOTTED_ASCII if text.isascii() else DOTTED).finditer(text):
        after = text[run.end() : run.end() + 1]
        host = run_host(run.group(), not (after.isalnum() or after == "_"))
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
    out: list[str] = []
    memo = _url_memo  # a local name: see received_tokens
    for host in (LINKS or url_hosts)(text):
        found = memo.get(host)
        if found is None:
            found = None if URL_HOST_TOKENS is None else URL_HOST_TOKENS(host)
            if found is None:
                found = url_host_tokens(host)
            remember(memo, host, found, len(host))
        out += found
    return out


# Links' hosts recur as the relays do (42,945 links in the corpus, 5,778 distinct
# hosts): each host's tokens are worked out once.
_url_memo: dict[str, tuple[str, ...]] = {}


# url_host_tokens of an ASCII host in C, where it was built (None for any other host).
URL_HOST_TOKENS = compiled.scanner_function("url_host_tokens")


def url_host_tokens(host: str) -> tuple[str, ...]:
    host = host.lower()
    if IPV4.fullmatch(host):
        return ("url:ip-address", "url:" + host)
    return tuple(domain_suffixes(host, "url:"))


def url_matches(text: str) -> Iterator[re.Match[str]]:
    """`URL.finditer(text)`, found from each `://` by a plain search.

    The case-blind pattern tried at every character was most of url_tokens' time.
    A match holds one `://`, its scheme right before it (`https`, `http` or `ftp`,
    so starting 5, 4 or 3 characters back), and its host and port hold no `://`:
    so each `://` is tried at those starts (SCHEME_STARTS), leftmost first, none before the end of
    the previous match, exactly as finditer would.  Case-blind matching pairs
    characters one to one, also beyond ASCII (the long s for `s`, the Kelvin sign for `k`),
    so the scheme is 3 to 5 characters long in any text (finditer was six times slower
    on non-ASCII texts).
    """
    end = 0
    i = text.find("://")
    while i >= 0:
        for back in SCHEME_STARTS.get(text[i - 1 : i], ()):
            start = i - back
            if start >= end and (m := URL.match(text, start)):
                yield m
                end = m.end()
                break
        i = text.find("://", i + 3)


def url_hosts(text: str) -> list[str]:
    """The host (URL's group 1) of each link in `text`, as `URL.finditer(text)` finds them."""
    return [m.group(1) for m in url_matches(text)]


# url_hosts in C, where it was built: a link cost the search of its scheme and host by the
# regex engine, a match object and a generator's step; the C makes only the host's str.
LINKS = compiled.scanner_function("links")


# How far before a `://` its scheme may start, by the character right before it: `http` and
# `ftp` end in `p`, `https` in `s`, and case-blind no other character matches those two but
# the long s (U+017F) matching `s`.  So the pattern is tried only where it can match, not
# at all three starts (half the attempts failed on the corpus's links).
SCHEME_STARTS = {"p": (4, 3), "P": (4, 3), "s": (5,), "S": (5,), "\u017f": (5,)}


# Fixed point of the numeric features: each held as round(FEATURE_SCALE * value), so
# that their sums and sums of products (spamnb.bayes.meta) are exact integers.
FEATURE_SCALE = 1024
RECIPIENT_FIELDS = frozenset({"to", "cc"})
UPPER = bytes(range(ord("A"), ord("Z") + 1))
NOT_UPPER = bytes(sorted(set(range(256)) - set(UPPER)))
NOT_LETTER = bytes(sorted(set(range(256)) - set(UPPER) - set(UPPER.lower())))


def message_features(size: int, fields: list[tuple[str, str]], bodies: list[tuple[str, str]]) -> list[int]:
    """The numeric features of a message (spamnb.bayes.meta.NAMES), in fixed point: log1p of its
    size in bytes, of its header fields, of its recipients (addresses in To and Cc) and of
    its links; the share of its text that is HTML, and of its letters that are capitals
    (ASCII, in the text as shown)."""
    recipients = sum(value.count("@") for name, value in fields if name.lower() in RECIPIENT_FIELDS)
    links = html = chars = upper = letters = 0
    for subtype, text in bodies:
        links += len((LINKS or url_hosts)(text))
        chars += len(text)
        if subtype == "html":
            html += len(text)
            text = html_to_text(text)
        ascii_text = text.encode("ascii", "ignore")
        upper += len(ascii_text.translate(None, NOT_UPPER))
        letters += len(ascii_text.translate(None, NOT_LETTER))
    values = (math.log1p(size), math.log1p(len(fields)), math.log1p(recipients), math.log1p(links), html / max(chars, 1), upper / max(letters, 1))
    return [round(FEATURE_SCALE * v) for v in values]


def encodes(text: str, charset: str) -> bool:
    """Whether every character of `text` is one of `charset`'s (in C: the text encoded,
    or up to its first character that is not)."""
    try:
        text.encode(charset)
    except UnicodeEncodeError:
        return False
    return True


def cjk_bigrams(run: str) -> str:
    if len(run) == 1:
        return run
    return " ".join(run[i : i + 2] for i in range(len(run) - 1))
