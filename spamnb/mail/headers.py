"""Byte-level header editing: the verdict header and the digest of a message.

Works on raw bytes, never on a parsed message, so that everything but the verdict
header passes through byte for byte: line endings, 8-bit bytes, folding, a missing
final newline.

Two views of where the header block ends matter.  Procmail and most mail readers
end it at the first empty line, so a verdict header anywhere before that line is
removed (a forgery must not reach a recipe).  Python's email package (and so the
tokeniser) ends it earlier, at the first line that is neither a field nor a
continuation, so ours goes in before such a line, where every reader sees a header.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from spamnb import compiled

VERDICT_NAME = b"X-Spamnb"
# The header block ends at the first empty line (LF or CRLF).
BLANK_LINE = re.compile(rb"\r?\n\r?\n")
# What X-Spamnb and X-Spam-Checker-Version hold after their first letter, case-blind: its `-`
# is a literal the search skips to (a cased first letter would make it try every byte).
VERDICT_HINT = re.compile(rb"-spam(?:nb|-checker-version)", re.I)
VERDICT_LINE = re.compile(rb"^" + VERDICT_NAME + rb"[ \t]*:.*(?:\r?\n[ \t].*)*(?:\r?\n|$)", re.I | re.M)
# A line the email package reads as part of the header block: a field, a
# continuation or a stray envelope line (its `headerRE`).
HEADER_LINE = re.compile(rb"[\x21-\x39\x3b-\x7e]*:|[ \t]|From ")


# Where mail starts: an envelope line may come first, then a header field (a name of
# printable ASCII but the colon, then the colon).  A program, a picture or a note has none.
MAIL_START = re.compile(rb"(?:From [^\n]*\n)?[\x21-\x39\x3b-\x7e]+[ \t]*:")


def has_header_block(data: bytes) -> bool:
    """Whether `data` starts as mail does, with a header block (after any envelope line)."""
    return MAIL_START.match(data) is not None


# A CR not followed by LF: Python's email parser ends a line there too (its NLCRE), so
# mail written with CR line ends (old Macs, some gateways) has its header block end at
# CR CR.  The functions here read such mail through `lf_view`, where each bare CR is an
# LF: the same length, so every cut found in the view is the cut in the mail itself.
BARE_CR = re.compile(rb"\r(?!\n)")


def lf_view(data: bytes) -> bytes:
    """`data` with each bare CR as LF (the same object when it has none)."""
    if b"\r" not in data or not BARE_CR.search(data):
        return data
    return BARE_CR.sub(b"\n", data)


def split_message(data: bytes) -> tuple[bytes, bytes, bytes]:
    """(envelope line, header block with its final newline, the rest from the blank line on)."""
    at, cut = message_cuts(data)
    return data[:at], data[at:cut], data[cut:]


def message_cuts(data: bytes) -> tuple[int, int]:
    """Where `split_message` cuts: the end of the envelope line, and the end of the header block."""
    at, cut = lf_cuts(data)
    # Only a bare CR before the cut LF rules find can end the header block earlier.
    if data.find(b"\r", 0, cut) < 0 or not BARE_CR.search(data, 0, cut):
        return at, cut
    return lf_cuts(lf_view(data))


def lf_cuts(data: bytes) -> tuple[int, int]:
    """message_cuts of mail whose lines end in LF or CR LF."""
    at = 0
    if data.startswith(b"From "):
        at = data.find(b"\n") + 1 or len(data)
    if data.startswith((b"\n", b"\r\n"), at):
        return at, at
    cut = (BLANK_LINE_END or blank_line_end)(data, at)
    return at, len(data) if cut < 0 else cut


def blank_line_end(data: bytes, start: int) -> int:
    """Where the header block of mail in LF or CR LF lines ends, from `start` (as bytes.find
    takes it) on: after the first LF followed by an empty line, LF or CR LF; -1 if none."""
    # The same cut as BLANK_LINE.search, by two plain searches (a regex starting with an
    # optional byte scans 10x slower).  The second goes no further than the first's find,
    # not through the whole of LF-only mail.  (An LF CR LF before an LF LF at i starts at
    # most at i - 2, and so ends before i + 2.)
    lf = data.find(b"\n\n", start)
    end = len(data) if lf < 0 else lf + 2
    # An LF CR LF holds a CR: a search for one byte spares LF-only mail the three-byte one.
    crlf = data.find(b"\n\r\n", start, end) if data.find(b"\r", start, end) >= 0 else -1
    ends = [i for i in (lf, crlf) if i >= 0]
    return min(ends) + 1 if ends else -1


# blank_line_end in C, where it was built (spamnb/text/_ctokens.c): bytes.find of a two-byte
# needle compares at every byte of the block; the C finds each LF by memchr.
BLANK_LINE_END = compiled.scanner_function("blank_line_end")


def without_verdict(head: bytes, names: tuple[bytes, ...] | None = None) -> bytes:
    """The header block less its verdict fields with their folded lines: any X-Spamnb (ours or
    a forgery), and SpamAssassin's fields where spamnb wrote them (`OWN_CHECKER`); with `names`,
    less any field of those names (`stamp`'s `more`)."""
    # Most mail has none: one case-blind search for a piece of both names (VERDICT_HINT) says
    # so without a lowered copy of the block; else a plain search of the lowered block, in a
    # fifth of the time the pattern takes to scan it.
    if names is None and not (VERDICT_HINTED or verdict_hinted)(head):
        return head
    lowered = head.lower()
    if names is None:
        names = (VERDICT_NAME,)
        if b"x-spam-checker-version" in lowered and OWN_CHECKER.search(lf_view(head)):
            names += SA_NAMES
    if not any(name.lower() in lowered for name in names):
        return head
    pattern = VERDICT_LINE if names == (VERDICT_NAME,) else field_lines(names)
    view = lf_view(head)
    if view is head:
        return pattern.sub(b"", head) if WITHOUT_FIELDS is None else WITHOUT_FIELDS(head, names)
    kept, at = [], 0
    for match in pattern.finditer(view):
        kept.append(head[at : match.start()])
        at = match.end()
    return b"".join(kept) + head[at:]


def verdict_hinted(head: bytes) -> bool:
    """Whether VERDICT_HINT is found in `head`."""
    return VERDICT_HINT.search(head) is not None


# verdict_hinted in C, where it was built: the pattern's search stops at every `-` of the block
# and tries the rest there by the regex engine; the C finds each `-` by memchr and compares.
VERDICT_HINTED = compiled.scanner_function("verdict_hinted")


def field_lines(names: tuple[bytes, ...]) -> re.Pattern[bytes]:
    """VERDICT_LINE for fields of any of `names`."""
    alternatives = b"|".join(re.escape(name) for name in names)
    return re.compile(rb"^(?:" + alternatives + rb")[ \t]*:.*(?:\r?\n[ \t].*)*(?:\r?\n|$)", re.I | re.M)


# field_lines(names).sub(b"", head) in C, where it was built (spamnb/text/_ctokens.c): the
# pattern's multi-line `^` has no fast skip, so the regex engine tries it at every byte of the
# block; the C looks at each line's start only and finds the line ends by memchr.
WITHOUT_FIELDS = compiled.scanner_function("without_fields")


def fields_end(head: bytes) -> int:
    """Where the fields of a header block end: before its first line that is not one."""
    head = lf_view(head)
    pos = 0
    while pos < len(head) and HEADER_LINE.match(head, pos):
        pos = head.find(b"\n", pos) + 1 or len(head)
    return pos


def line_end(before: bytes, *others: bytes) -> bytes:
    """The line ending to write: that of the line `before` the header, else the first one met."""
    if before.endswith((b"\n", b"\r")):
        return b"\r\n" if before.endswith(b"\r\n") else before[-1:]
    for block in others:
        end = NEWLINE.search(block)
        if end:
            return end.group()
    return b"\n"


NEWLINE = re.compile(rb"\r\n|\r|\n")


def stamp(data: bytes, value: str, more: Sequence[tuple[bytes, str]] = ()) -> bytes:
    """The message with `X-Spamnb: value` after its last field, replacing any already there
    (`value`: ASCII, its continuation lines after "\n"); then each (name, value) of `more`
    (`spamassassin_fields`), likewise replacing any field of its name.

    Everything else passes through byte for byte, with one exception: a header-only
    message (or a lone envelope line) missing its final newline gets one, since the
    new header needs a line of its own.
    """
    envelope, head, rest = split_message(data)
    names = (VERDICT_NAME, *(name for name, _ in more))
    if set(names) & set(SA_NAMES):
        # SpamAssassin's fields go as a set: a ham verdict writes no X-Spam-Flag, and an
        # upstream (or forged) `X-Spam-Flag: YES` left beside its "No" would file it as spam.
        names += SA_NAMES
    head = without_verdict(head, names)
    cut = fields_end(head)
    fields, after = head[:cut], head[cut:]
    newline = line_end(fields, envelope, head, rest)
    if envelope and not envelope.endswith((b"\n", b"\r")):
        envelope += newline
    if fields and not fields.endswith((b"\n", b"\r")):
        fields += newline
    # A folded value (`pipe.verdict_header`) breaks its lines at "\n": the message's own newline.
    line = b"".join(name + b": " + text.encode("ascii").replace(b"\n", newline) + newline for name, text in ((VERDICT_NAME, value), *more))
    if not envelope and fields.startswith(b"From "):
        # Removing a verdict header bared a "From " line: after it, that line would read
        # as an envelope and the stamped message would digest differently.  Go first.
        return line + fields + after + rest
    return envelope + fields + line + after + rest


# Bytes read beyond the tokeniser's cap: the envelope line and verdict headers it strips
# before capping, so that what it sees does not depend on where the read stopped.
HEADROOM = 1 << 16


# SpamAssassin's fields, as spamd's PROCESS writes them (`spamnb serve`), beside X-Spamnb.
# Their score is SpamAssassin-style points: SA_POINTS times P(spam), 0 to 10, and
# `required` SA_POINTS times the P a spam verdict needs.
SA_POINTS = 10.0
SA_NAMES = (b"X-Spam-Checker-Version", b"X-Spam-Flag", b"X-Spam-Level", b"X-Spam-Status")
# `stamp` writes them as a set, naming spamnb the checker: then they are a verdict, like X-Spamnb,
# which no path learns or digests (a verdict learnt as the message's words would feed itself);
# an upstream SpamAssassin's fields are part of the message.
OWN_CHECKER = re.compile(rb"^X-Spam-Checker-Version[ \t]*:[ \t]*spamnb\b", re.I | re.M)


def spamassassin_tests(verdict: str) -> str:
    """The one "rule" a message hits, as SYMBOLS and X-Spam-Status name it: SPAMNB_SPAM, SPAMNB_HAM or SPAMNB_UNSURE."""
    return f"SPAMNB_{verdict.upper()}"


def spamassassin_fields(verdict: str, score: float, threshold: float) -> list[tuple[bytes, str]]:
    """X-Spam-Checker-Version, X-Spam-Flag (a spam verdict only), X-Spam-Level and X-Spam-Status
    for `stamp`'s `more`: `score` is P(spam), `threshold` the P a spam verdict needs.  "Yes" and
    the flag exactly when the verdict is spam (unsure is "No"), as SpamAssassin's mean."""
    from spamnb import __version__

    points, required = SA_POINTS * score, SA_POINTS * threshold
    yes = verdict == "spam"
    status = f"{'Yes' if yes else 'No'}, score={points:.1f} required={required:.1f} tests={spamassassin_tests(verdict)}"
    fields = [(b"X-Spam-Checker-Version", f"spamnb {__version__}")]
    fields += [(b"X-Spam-Flag", "YES")] if yes else []
    return [*fields, (b"X-Spam-Level", "*" * int(points)), (b"X-Spam-Status", status)]


SUBJECT_FIELD = re.compile(rb"^Subject[ \t]*:[ \t]*", re.I | re.M)


def tag_subject(data: bytes, tag: str) -> bytes:
    """The message with `tag` (printable ASCII) before its Subject's text, as SpamAssassin's
    `rewrite_header Subject` does: once (a Subject that starts with it already is left as it
    is, so a second filter on the way adds none); a message with no Subject gets one."""
    envelope, head, rest = split_message(data)
    cut = fields_end(head)
    text = tag.encode("ascii")
    match = SUBJECT_FIELD.search(lf_view(head), 0, cut)
    if match is None:
        fields, after = head[:cut], head[cut:]
        newline = line_end(fields, envelope, head, rest)
        if fields and not fields.endswith((b"\n", b"\r")):
            fields += newline
        return envelope + fields + b"Subject: " + text.rstrip() + newline + after + rest
    if head.startswith(text, match.end()):
        return data
    return envelope + head[: match.end()] + text + head[match.end() :] + rest


def unstamped(data: bytes, limit: int | None = None) -> bytes:
    """The message as it is learnt and scored: no envelope line, no verdict header, so
    that it reads the same before and after the pipe; at most `limit` bytes, of its first
    `limit` + HEADROOM as read (a file's read stops there, the pipe's stdin does not:
    megabytes of forged verdict headers must not hide the body from one and not the other)."""
    if limit is not None:
        data = data[: limit + HEADROOM]
    at, cut = message_cuts(data)
    head = data[at:cut]
    kept = without_verdict(head)
    if kept is head:
        # No verdict field (most mail): the message from its header block on, not a copy of its pieces.
        return data[at:] if limit is None else data[at : at + limit]
    rest = data[cut:]
    if limit is None:
        return kept + rest
    return (kept + rest[:limit])[:limit]


# The fields that delivery adds to a message on its way (an MTA's Received, the
# delivery agent's Return-Path, Delivered-To and X-Original-To): two copies that
# differ only in these, the envelope line and the verdict header are one message.
TRANSPORT_NAMES = (b"received", b"delivered-to", b"return-path", b"x-original-to")
TRANSPORT_LINE = field_lines(TRANSPORT_NAMES)


def without_transport(head: bytes) -> bytes:
    """The header block less the fields delivery adds (TRANSPORT_NAMES), folded lines too."""
    if WITHOUT_FIELDS is not None:
        return WITHOUT_FIELDS(head, TRANSPORT_NAMES)
    lowered = head.lower()
    if not any(name in lowered for name in TRANSPORT_NAMES):
        return head
    return TRANSPORT_LINE.sub(b"", head)


def digest(data: bytes, limit: int | None = None, transport: bool = False, trailing: bool = False) -> bytes:
    """16-byte fingerprint of a message, blind to the envelope, the verdict header,
    the fields delivery adds (TRANSPORT_NAMES) and the newlines it ends with (an mbox's
    separator, procmail's extra line).  With `transport` or `trailing`, not blind to
    those: the digests models learnt before, see `legacy_digests`.

    Blind too to the final newline of a header-only message, which `stamp` may add.
    With `limit`, of the first `limit` bytes that `unstamped` keeps: what is learnt of
    the message, and what a read capped a little above `limit` still holds whole.
    """
    head, rest = digested(data)
    return fingerprint(head if transport else without_transport(head), rest, limit, trailing)


def digested(data: bytes) -> tuple[bytes, bytes]:
    """What every digest of a message is of: its header block less any verdict header, and the rest."""
    _, head, rest = split_message(data)
    return without_verdict(head), rest


def fingerprint(head: bytes, rest: bytes, limit: int | None, trailing: bool) -> bytes:
    """`digest` of a message's header block (less what that digest is blind to) and rest."""
    if limit is not None:
        head, rest = head[:limit], rest[: max(limit - len(head), 0)]
    if not trailing:
        rest = rest.rstrip(b"\r\n")
    if not rest:
        head = head[:-2] if head.endswith(b"\r\n") else head[:-1] if head.endswith((b"\n", b"\r")) else head
    # Learning needs it, scoring does not: off the pipe's start-up.  hashlib's blake2b is
    # _blake2's, whose import leaves out hashlib's load of OpenSSL for its other digests.
    try:
        from _blake2 import blake2b
    except ImportError:  # a Python without the module
        from hashlib import blake2b

    found = blake2b(len(head).to_bytes(8, "big"), digest_size=16)
    found.update(head)
    found.update(rest)
    return found.digest()


def legacy_digests(data: bytes, limit: int | None = None) -> tuple[bytes, bytes]:
    """The digests of earlier releases, which models learnt with them keep: before the final
    newlines were left out, and before the transport fields were too."""
    head, rest = digested(data)
    return legacy_fingerprints(head, without_transport(head), rest, limit)


def legacy_fingerprints(head: bytes, bare: bytes, rest: bytes, limit: int | None) -> tuple[bytes, bytes]:
    """`legacy_digests` of a message's `digested` header block `head`, that block less the transport fields (`bare`), and rest."""
    return fingerprint(bare, rest, limit, trailing=True), fingerprint(head, rest, limit, trailing=True)


def learnt_digest(data: bytes, limit: int | None, known: Callable[[bytes], bool]) -> bytes:
    """The digest to learn, move or forget a message by: its `digest`, or the legacy one
    a model already knows it by, so that older models still recognise what they learnt
    (`known`: whether the model holds a digest).  The message is split and its header
    block cut once for all three."""
    head, rest = digested(data)
    bare = without_transport(head)
    key = fingerprint(bare, rest, limit, trailing=False)
    return key if known(key) else first_known(key, legacy_fingerprints(head, bare, rest, limit), known)


def first_known(key: bytes, olds: Sequence[bytes], known: Callable[[bytes], bool]) -> bytes:
    """A message's digest `key` if the model knows it, else the first of its legacy digests
    `olds` that the model knows, else `key`."""
    return key if known(key) else next((old for old in olds if old != key and known(old)), key)
