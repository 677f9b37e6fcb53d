"""Generate the spamnb demo corpus in ``sample_corpus/``.

Every message text in this file was written for the spamnb project; none
is taken from a public corpus.  All domain names are reserved ones
(example.com, example.org, example.net and their subdomains, ``*.test``,
``*.invalid``) and every IPv4 address lies in a documentation range
(192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24).

The same messages are written in two forms:

* ``maildir/ham`` and ``maildir/spam``: Maildir folders, one message per
  file in ``cur/`` (``NAME:2,FLAGS``) or ``new/`` (no info suffix);
  ``tmp/`` holds only an empty ``.keep`` so that git tracks it;
* ``ham.mbox`` and ``spam.mbox``: mboxrd, messages in the same order as
  the sorted Maildir file names.

``index`` lists every Maildir message TREC style
(``spam maildir/spam/cur/NAME``), relative to the index file.

Output is deterministic.  Usage::

    python sample_corpus/make_corpus.py          # regenerate, then verify
    python sample_corpus/make_corpus.py --check  # verify only
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import email
import email.policy
import hashlib
import html
import ipaddress
import mailbox
import quopri
import re
import shutil
import struct
import sys
import zlib
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr
from pathlib import Path

HERE = Path(__file__).resolve().parent
USER = "robin@example.com"
WORK = "robin.alder@larkspur.example.org"
MX_HOST = "mx1.example.com"
MX_IP = "192.0.2.25"
STORE_HOST = "mail.example.com"

Header = tuple[str, str]


# --------------------------------------------------------------------------
# Message model
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """A ``text/*`` leaf part."""

    body: str
    subtype: str = "plain"
    charset: str = "us-ascii"
    cte: str = "7bit"
    params: tuple[Header, ...] = ()
    filename: str | None = None
    disposition: str = "attachment"


@dataclass(frozen=True)
class Blob:
    """A binary leaf part; always base64 encoded."""

    ctype: str
    data: bytes
    filename: str | None = None
    cid: str | None = None
    disposition: str = "attachment"


@dataclass(frozen=True)
class Multi:
    """A ``multipart/*`` container."""

    subtype: str
    parts: tuple[Part, ...]
    params: tuple[Header, ...] = ()
    preamble: bool = True


@dataclass(frozen=True)
class Forward:
    """A ``message/rfc822`` part holding a complete inner message."""

    headers: tuple[Header, ...]
    body: Part


Part = Text | Blob | Multi | Forward


@dataclass(frozen=True)
class Hop:
    """A mail server that relayed the message before it reached our MX.

    ``mta`` picks the style of the Received header that server writes:
    ``postfix``, ``sub`` (Postfix, authenticated submission), ``exim``,
    ``sendmail``, ``msft``, ``qmail`` or ``webmail``.
    """

    host: str
    ip: str
    mta: str = "postfix"


@dataclass(frozen=True)
class Mail:
    """One message of the corpus, before rendering."""

    kind: str
    when: str
    sender: str
    to: str
    subject: str
    body: Part
    client: tuple[str, str]
    hops: tuple[Hop, ...] = ()
    client_rdns: str | None = None
    envelope: str | None = None
    rcpt: str = USER
    extra: tuple[Header, ...] = ()
    subject_enc: str | None = None
    mailer: Header | None = None
    msgid: str | None = ""
    new: bool = False
    flags: str = "S"
    skew: int = 0


# --------------------------------------------------------------------------
# Small helpers used by the message definitions
# --------------------------------------------------------------------------


def _hash(*parts: object) -> str:
    """Return a stable hex digest of *parts* (used instead of randomness)."""
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


def _q_encode(raw: bytes) -> str:
    """Encode bytes for the payload of a ``Q`` encoded word (RFC 2047)."""
    out = []
    for byte in raw:
        char = chr(byte)
        if byte == 0x20:
            out.append("_")
        elif char.isascii() and (char.isalnum() or char in "!*+-/"):
            out.append(char)
        else:
            out.append(f"={byte:02X}")
    return "".join(out)


def _one_word(text: str, charset: str, enc: str) -> str:
    raw = text.encode(charset)
    if enc == "B":
        payload = base64.b64encode(raw).decode("ascii")
    else:
        payload = _q_encode(raw)
    return f"=?{charset}?{enc}?{payload}?="


def ew(text: str, spec: str = "utf-8:B") -> str:
    """Encode *text* as RFC 2047 encoded words, each at most 75 characters.

    *spec* is ``CHARSET:B`` or ``CHARSET:Q``.  Long text is split into
    several words joined by folding white space.
    """
    charset, enc = spec.split(":")
    words: list[str] = []
    chunk = ""
    for char in text:
        if chunk and len(_one_word(chunk + char, charset, enc)) > 75:
            words.append(_one_word(chunk, charset, enc))
            chunk = char
        else:
            chunk += char
    if chunk:
        words.append(_one_word(chunk, charset, enc))
    return "\n ".join(words)


def addr(name: str, mailbox_addr: str, spec: str = "utf-8:B") -> str:
    """Format a ``Name <addr>`` header value, encoding non-ASCII names."""
    if not name:
        return mailbox_addr
    if not name.isascii():
        return f"{ew(name, spec)} <{mailbox_addr}>"
    if re.search(r"[^\w \-']", name):
        return f'"{name}" <{mailbox_addr}>'
    return f"{name} <{mailbox_addr}>"


def text_of(markup: str) -> str:
    """Render simple HTML as plain text for a multipart/alternative twin."""
    out = re.sub(r"(?is)<(style|head|script)\b.*?</\1>", "", markup)
    out = re.sub(
        r'(?is)<a\s[^>]*href="([^"]+)"[^>]*>(.*?)</a>',
        lambda m: f"{m.group(2)} <{m.group(1)}>"
        if m.group(2).strip() and not m.group(2).lstrip().startswith("<img")
        else m.group(1),
        out,
    )
    out = re.sub(r"(?i)<br\s*/?>|</p>|</tr>|</h\d>|</li>|</div>|</table>", "\n", out)
    out = re.sub(r"(?i)<li[^>]*>", "* ", out)
    out = re.sub(r"<[^>]+>", " ", out)
    out = html.unescape(out)
    lines = [" ".join(line.split()) for line in out.splitlines()]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def html_of(text: str, style: str = "font-family:Arial,sans-serif") -> str:
    """Wrap plain text paragraphs in minimal HTML, as mail clients do."""
    paras = [p for p in text.strip().split("\n\n") if p.strip()]
    body = "\n".join(
        "<p>" + "<br>\n".join(html.escape(line) for line in p.splitlines()) + "</p>"
        for p in paras
    )
    return (
        '<html><head><meta http-equiv="Content-Type" '
        'content="text/html; charset=utf-8"></head>\n'
        f'<body><div style="{style}">\n{body}\n</div></body></html>\n'
    )


def alt(
    text: str,
    markup: str | None = None,
    charset: str = "us-ascii",
    cte: str = "7bit",
    html_cte: str = "quoted-printable",
) -> Multi:
    """Build multipart/alternative of a text part and its HTML twin."""
    markup = markup if markup is not None else html_of(text)
    html_charset = "utf-8" if not markup.isascii() or charset != "us-ascii" else charset
    return Multi(
        "alternative",
        (
            Text(text, "plain", charset, cte),
            Text(markup, "html", html_charset, html_cte),
        ),
    )


def html_alt(markup: str, cte: str = "quoted-printable") -> Multi:
    """Build multipart/alternative from HTML, deriving the text part."""
    charset = "us-ascii" if markup.isascii() else "utf-8"
    plain_cte = "7bit" if charset == "us-ascii" else cte
    return Multi(
        "alternative",
        (Text(text_of(markup), "plain", charset, plain_cte), Text(markup, "html", charset, cte)),
    )


def png(width: int, height: int, seed: str) -> bytes:
    """Return a small, valid, deterministic PNG image (stored, not deflated)."""
    digest = bytes.fromhex(_hash("png", seed))
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")
        for x in range(width):
            band = (x // 4 + y // 4) % 8
            row += bytes(
                (digest[band] ^ (x * 7), digest[band + 8] ^ (y * 5), digest[band + 16])
            )
        rows.append(bytes(row))

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 0))
        + chunk(b"IEND", b"")
    )


def mailman_footer(listname: str, host: str) -> str:
    """Return the footer a Mailman 2 list appends to each post."""
    return (
        "\n_______________________________________________\n"
        f"{listname} mailing list\n"
        f"{listname}@{host}\n"
        f"https://{host}/mailman/listinfo/{listname}\n"
    )


def list_headers(listname: str, host: str, title: str) -> tuple[Header, ...]:
    """Return the List-* headers a Mailman 2 list adds."""
    base = f"https://{host}/mailman"
    return (
        ("List-Id", f"{title} <{listname}.{host}>"),
        (
            "List-Unsubscribe",
            f"<{base}/options/{listname}>,\n <mailto:{listname}-request@{host}?subject=unsubscribe>",
        ),
        ("List-Archive", f"<{base}/private/{listname}/>"),
        ("List-Post", f"<mailto:{listname}@{host}>"),
        ("List-Help", f"<mailto:{listname}-request@{host}?subject=help>"),
        ("Precedence", "list"),
        ("Errors-To", f"{listname}-bounces+robin=example.com@{host}"),
        ("Sender", f'"{listname}" <{listname}-bounces+robin=example.com@{host}>'),
    )


def list_envelope(listname: str, host: str) -> str:
    """Return the VERP envelope sender a Mailman list uses for us."""
    return f"{listname}-bounces+robin=example.com@{host}"


def crlf(text: str) -> str:
    """Return *text* with CRLF line ends (as iCalendar requires)."""
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


