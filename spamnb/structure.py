"""Tokens of a message's shape rather than its words: how its header fields are
formed and how its MIME parts are declared.

Mass mailers build mail by program, and the program shows: a Message-ID from another
domain than the sender's, a display name that is an address, a subject that ends in a
counter, an HTML part with no plain-text twin, an unusual transfer encoding.  Each
token names a generic property, never a host, address or phrase.  Everything here is
linear in the header values (capped by spamnb.message) and the number of parts
(at most MAX_PARTS), and never raises on malformed input.

SpamAssassin corpus, Fisher, on top of the subject word pairs: 1-AUC better on all
seven splits measured (5 folds 0.0182% -> 0.0166%, 10 folds 0.0171% -> 0.0162%,
2 folds 0.0322% -> 0.0300%, re-salted 5-fold 0.0171/0.0177/0.0169/0.0187% ->
0.0162/0.0165/0.0157/0.0173%), spam missed at 1 ham lost better on all seven (5 folds
72 -> 70, 2 folds 140 -> 129); spam missed at P(spam) >= 0.95 on the 5-fold split
90 -> 89, no split gaining a false positive.  Multinomial 1-AUC 0.0531% -> 0.0485%,
Bernoulli 0.0562% -> 0.0497%.  Each family alone was worse at 0.95 on the 5-fold
split (header shape FN 94, MIME structure FN 93, on main): together they help.
Tried and left out, as no better at 0.95 on that split (most worse): HTML tag and
attribute names, tag counts, attribute values, invisible-text markers, header names
present, header order, the Received count (a false positive more on 2 folds),
all-caps words, `$` amounts, digit runs.
"""
from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any

from spamnb.lazy import Lazy
from spamnb.message import MAX_PARTS, decode_header_value

# Longest piece of a header value that becomes part of a token (a charset, an
# encoding, an extension): real ones are short, anything longer is junk.
MAX_NAME = 30
# Characters of a Message-ID's local part whose shape is kept: "9a.9" for "20020827.1234".
MAX_SHAPE = 12


def piece(text: str) -> str:
    """A piece of a header value made part of a token: at most MAX_NAME characters, its
    white space runs made `_` (tokens hold no white space: features.SEPARATOR)."""
    return "_".join(text[: MAX_NAME * 4].split())[:MAX_NAME]


def structure_tokens(msg: Any, headers: list[tuple[str, str]]) -> list[str]:
    """The header-shape and MIME-structure tokens of a parsed message (`headers`: its top fields).

    All `shape:` + kind + `:` + property: two colons, which no header or body word
    token holds (words hold none, header tokens one), so none can be taken for one.
    """
    top = first_values(headers)
    return [PREFIX + t for t in (*header_shape_tokens(top), *mime_tokens(msg, top))]


PREFIX = "shape:"


def first_values(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Each field name (lower case) with its first value.

    A comprehension over the fields in reverse, the first value written last: a loop
    keeping the first was most of this module's CPU (0.34 of 0.40 s on the
    SpamAssassin corpus).
    """
    return {name.lower(): value for name, value in reversed(headers)}


def header_shape_tokens(values: dict[str, str]) -> list[str]:
    """From `values`, the message's fields (first_values)."""
    sender = decode_header_value(values.get("from", ""))
    out = message_id_tokens(values.get("message-id"), address_domain(sender))
    out += sender_tokens(sender)
    for field in ("to", "cc"):
        value = values.get(field)
        # Recipients counted by their `@`s, in buckets of powers of two.
        out.append(f"{field}:missing" if value is None else f"{field}:n{value.count('@').bit_length()}")
    out += subject_shape_tokens(decode_header_value(values.get("subject", "")))
    out.append(date_shape_token(values.get("date")))
    return out


def date_shape_token(value: str | None) -> str:
    """The Date field's shape: "Mon, 2 Sep 2002 10:00:00 +0100" -> "Aa,_9_Aa_9_9:9:9_+9".

    Mailers write dates each their own way (weekday or none, zone by number or name,
    extra comments), bulk-mail software its own: on top of the other shape tokens,
    SpamAssassin corpus, Fisher, 1-AUC better on six of seven splits and equal on one
    (5 folds 0.0166% -> 0.0163%, 2 folds 0.0300% -> 0.0298%), FN at P(spam) >= 0.95
    better on six (5 folds 89 -> 88, re-salted 96 -> 93) and equal on one, no false
    positive gained.
    """
    return "date:missing" if value is None else "date:shape:" + piece(character_shape(value.strip()))


def address_domain(value: str) -> str:
    """The domain of the (last) address in a From value, lower case; "" if none."""
    inside = value.rpartition("<")[2] if "<" in value else value
    domain = inside.rpartition("@")[2] if "@" in inside else ""
    return DOMAIN.match(domain).group().lower().strip(".")


DOMAIN = Lazy(r"[\w.-]*")


def message_id_tokens(value: str | None, sender_domain: str) -> list[str]:
    """Whether the Message-ID is there and well formed, whether its domain is the sender's,
    and the shape of its local part (digits 9, upper-case runs A, lower-case runs a)."""
    if not value:
        return ["msgid:missing"]
    start = value.find("<")
    end = value.find(">", start + 1)
    local, at, domain = value[start + 1 : end].partition("@")
    if start < 0 or end < 0 or not at:
        return ["msgid:malformed"]
    domain = domain.lower()
    same = bool(sender_domain) and (domain == sender_domain or domain.endswith("." + sender_domain) or sender_domain.endswith("." + domain))
    out = ["msgid:from-domain" if same else "msgid:other-domain"]
    if local.isdigit():
        out.append("msgid:digits")
    out.append("msgid:shape:" + piece(character_shape(local)[:MAX_SHAPE]))
    return out


def character_shape(text: str) -> str:
    """Runs of digits as 9, of upper-case ASCII letters as A, of lower-case as a; others kept."""
    text = DIGITS.sub("9", text[: MAX_SHAPE * 8])
    return LOWERS.sub("a", UPPERS.sub("A", text))


DIGITS = Lazy(r"\d+")
UPPERS = Lazy(r"[A-Z]+")
LOWERS = Lazy(r"[a-z]+")


def sender_tokens(sender: str) -> list[str]:
    """Whether From has a display name, and whether that name is itself an address."""
    if "<" not in sender:
        return ["from:bare-address"]
    name = sender.partition("<")[0].strip().strip('"')
    if not name:
        return ["from:empty-name"]
    return ["from:has-name", "from:name-is-address"] if "@" in name else ["from:has-name"]


def subject_shape_tokens(subject: str) -> list[str]:
    """All capitals, `!`, trailing white space, a last word holding a digit (an id or counter), empty."""
    if not subject:
        return ["subj:empty"]
    out = []
    letters = sum(map(str.isalpha, subject))
    if letters > 3 and sum(map(str.isupper, subject)) > 0.8 * letters:
        out.append("subj:allcaps")
    if "!" in subject:
        out.append("subj:bang")
    stripped = subject.rstrip()
    if stripped != subject:
        out.append("subj:trailing-space")
    words = stripped.rsplit(None, 1)
    if words and any(c.isdigit() for c in words[-1]):
        out.append("subj:trailing-id")
    return out


def walk(msg: Any) -> Iterator[Any]:
    """The message and all its parts, as iter_text_parts walks them (at most MAX_PARTS)."""
    stack = [msg]
    seen = 0
    while stack and seen < MAX_PARTS:
        part = stack.pop()
        seen += 1
        yield part
        if part.is_multipart():
            stack.extend(reversed(part.get_payload()))


def mime_tokens(msg: Any, top: dict[str, str]) -> list[str]:
    """Each part's content type, charset, transfer encoding, disposition and attachment
    extension; the number of parts in powers of two; HTML with no plain text.  `top`:
    the message's own fields (first_values), not looked through twice."""
    out: list[str] = []
    types: set[str] = set()
    count = 0
    for part in walk(msg):
        count += 1
        fields = top if part is msg else first_values(list(part.raw_items()))
        if part.is_multipart():
            ctype = piece(fields.get("content-type", "").partition(";")[0].lower()) or "multipart/mixed"
        else:
            ctype = piece(part.get_content_type())
            charset = part.get_content_charset()
            if charset:
                out.append("mime:charset:" + piece(charset))
        types.add(ctype)
        out.append("mime:type:" + ctype)
        encoding = fields.get("content-transfer-encoding")
        if encoding:
            out.append("mime:cte:" + piece(encoding.lower()))
        disposition = fields.get("content-disposition", "")
        if disposition:
            out.append("mime:disp:" + piece(disposition.partition(";")[0].lower()))
        filename = param(disposition, "filename") or param(fields.get("content-type", ""), "name")
        if "." in filename:
            out.append("mime:ext:" + piece(filename.rpartition(".")[2].lower()))
    out.append(f"mime:parts{count.bit_length()}")
    if "text/html" in types and "text/plain" not in types:
        out.append("mime:html-only")
    return out


def param(value: str, name: str) -> str:
    """A parameter of a Content-Type or Content-Disposition value, unquoted; "" if absent.

    Found by plain searches, not a regular expression, and each character looked at a
    bounded number of times: linear in the value.
    """
    lower = value.translate(ASCII_LOWER)  # str.lower() may change the length
    i = lower.find(name)
    while i >= 0:
        j = i + len(name)
        if i == 0 or not (lower[i - 1].isalnum() or lower[i - 1] == "-"):
            while j < len(lower) and (lower[j] == "*" or lower[j].isspace()):
                j += 1
            if j < len(lower) and lower[j] == "=":
                j += 1
                while j < len(value) and value[j].isspace():
                    j += 1
                if value.startswith('"', j):
                    close = value.find('"', j + 1)
                    return value[j + 1 : close if close >= 0 else len(value)].strip()
                end = j
                while end < len(value) and value[end] != ";" and not value[end].isspace():
                    end += 1
                return value[j:end]
        i = lower.find(name, max(j, i + 1))
    return ""


ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
