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

# The corpus deliberately holds Cyrillic, CJK and typographic punctuation:
# ruff: noqa: RUF001
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
from collections import Counter
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
MAX_WORD = 75  # longest RFC 2047 encoded word
MAX_LINE = 998  # longest line RFC 5322 allows, CRLF excluded
MIN_PER_CLASS = 45

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
        if char == " ":
            out.append("_")
        elif char.isascii() and (char.isalnum() or char in "!*+-/"):
            out.append(char)
        else:
            out.append(f"={byte:02X}")
    return "".join(out)


def _one_word(text: str, charset: str, enc: str) -> str:
    raw = text.encode(charset)
    payload = base64.b64encode(raw).decode("ascii") if enc == "B" else _q_encode(raw)
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
        if chunk and len(_one_word(chunk + char, charset, enc)) > MAX_WORD:
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
        lambda m: (
            f"{m.group(2)} <{m.group(1)}>"
            if m.group(2).strip() and not m.group(2).lstrip().startswith("<img")
            else m.group(1)
        ),
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
    body = "\n".join("<p>" + "<br>\n".join(html.escape(line) for line in p.splitlines()) + "</p>" for p in paras)
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
    plain = text_of(markup)
    charset = "us-ascii" if markup.isascii() and plain.isascii() else "utf-8"
    plain_cte = "7bit" if charset == "us-ascii" else "quoted-printable"
    return Multi(
        "alternative",
        (Text(plain, "plain", charset, plain_cte), Text(markup, "html", charset, cte)),
    )


def png(width: int, height: int, seed: str) -> bytes:
    """Return a small, valid, deterministic PNG image (stored, not deflated)."""
    digest = bytes.fromhex(_hash("png", seed))
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")
        for x in range(width):
            band = (x // 4 + y // 4) % 8
            row += bytes((digest[band] ^ (x * 7), digest[band + 8] ^ (y * 5), digest[band + 16]))
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
        f"http://{host}/mailman/listinfo/{listname}\n"
    )


def list_headers(listname: str, host: str, title: str) -> tuple[Header, ...]:
    """Return the List-* headers a Mailman 2 list adds."""
    base = f"http://{host}/mailman"
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


# --------------------------------------------------------------------------
# Routes shared by several senders
# --------------------------------------------------------------------------

NET_OUT = (Hop("smtp.example.net", "198.51.100.10", "sub"), Hop("out2.example.net", "198.51.100.12"))
ORG_OUT = (Hop("smtp.example.org", "198.51.100.130", "sub"),)
LARK_OUT = (
    Hop("exch01.larkspur.example.org", "192.0.2.61", "msft"),
    Hop("edge1.larkspur.example.org", "192.0.2.62", "postfix"),
)
LISTS_ORG = Hop("lists.example.org", "198.51.100.40", "exim")
LISTS_NET = Hop("lists.example.net", "203.0.113.140", "postfix")
BULK_OUT = (Hop("mta7.sendwell.example.com", "198.51.100.207", "postfix"),)

THUNDERBIRD = (
    "User-Agent",
    "Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101\n Thunderbird/115.4.1",
)
OUTLOOK = ("X-Mailer", "Microsoft Outlook 16.0")
APPLE = ("X-Mailer", "Apple Mail (2.3731.700.6)")
IPHONE = ("X-Mailer", "iPhone Mail (21A351)")
MUTT = ("User-Agent", "Mutt/2.2.12 (2023-09-09)")
EVOLUTION = ("X-Mailer", "Evolution 3.50.1")
CLAWS = ("X-Mailer", "Claws Mail 4.1.1 (GTK 3.24.38; x86_64-pc-linux-gnu)")
ROUNDCUBE = ("User-Agent", "Roundcube Webmail/1.6.5")


# --------------------------------------------------------------------------
# Ham
# --------------------------------------------------------------------------


def ham_messages() -> list[Mail]:
    """Return the legitimate messages of the corpus."""
    h: list[Mail] = []

    h.append(
        Mail(
            "ham",
            "2023-09-03 18:22:41 +0100",
            addr("Margaret Alder", "maggie.alder@example.net"),
            "Robin <robin@example.com>",
            "Sunday lunch - are you coming?",
            Text("""\
Hi love,

Are you and Milo still coming on Sunday? Dad is doing the roast, so lunch
will be about half one. Your aunt Carol might pop in for pudding if her
knee is behaving itself.

Could you bring the big serving dish back? The blue one with the chip in
the rim. I've been looking for it since Easter and your father swears he
never lent it to anyone.

Let me know either way so I know how many potatoes to peel.

Love, Mum
xx
"""),
            client=("maggies-ipad.home", "198.51.100.77"),
            hops=NET_OUT,
            mailer=IPHONE,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-09-05 20:47:03 +0100",
            addr("Jess Alder", "jess.alder@example.net"),
            "Robin Alder <robin@example.com>",
            "Ruby made you a dragon",
            Multi(
                "mixed",
                (
                    Text("""\
Hiya,

Ruby spent the whole of yesterday afternoon on this and made me promise to
email it to "Uncle Robin" straight away, so here it is. Apparently the
dragon is called Biscuit and he only breathes fire on Tuesdays.

She'd like a reply. A drawing back would be ideal but she says a dragon
fact will do.

Are you around the weekend of the 16th? We might come up.

J x
"""),
                    Blob("image/png", png(24, 16, "biscuit"), "biscuit-the-dragon.png"),
                ),
            ),
            client=("jess-mbp.home", "198.51.100.78"),
            hops=NET_OUT,
            mailer=APPLE,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-09-08 07:12:55 +0100",
            addr("Tom Okafor", "tom.okafor@example.org"),
            "Robin Alder <robin@example.com>",
            "Re: Saturday ride?",
            Text(
                """\
Sounds good. I'll meet you at the bridge at 8:30, not 8 -- I'm not doing
the climb before coffee again.

Route idea: out along the canal, up through Hollins Wood, lunch at the
cafe by the reservoir, back over the top. Roughly 70 km and 900 m of
climbing. If the wind is as bad as last time we can cut it short at the
reservoir and drop down the valley road.

Bring a spare tube, my pump has finally died.

Tom

On Thu, 7 Sep 2023 at 21:04, Robin Alder <robin@example.com> wrote:
> Fancy a proper ride on Saturday? Forecast says dry until about 3.
> I could do 8 at the bridge and be back by 2.
""",
                params=(("format", "flowed"),),
            ),
            client=("[192.0.2.201]", "192.0.2.201"),
            hops=ORG_OUT,
            extra=(
                ("In-Reply-To", "<ZPpV3k0a9b@example.com>"),
                ("References", "<ZPpV3k0a9b@example.com>"),
            ),
            mailer=THUNDERBIRD,
            flags="RS",
        )
    )

    sync_text = """\
Hi all,

Agenda for Tuesday's platform sync (10:00, Room 3 / video link in the
invite):

1. Ingest pipeline: status of the cache eviction fix (Hannah)
2. Retry policy for the upload service -- Marco has a patch up
3. On-call rota for October; please check your dates
4. Q4 planning: bring your top two items, no more
5. AOB

If you have something for AOB, reply to me before Monday evening so we
don't run over again.

Thanks,
Sam

--
Sam Whitfield | Engineering Manager, Platform
Larkspur Systems
"""
    h.append(
        Mail(
            "ham",
            "2023-09-15 16:05:19 +0100",
            addr("Sam Whitfield", "sam.whitfield@larkspur.example.org"),
            "Platform Team <platform@larkspur.example.org>",
            "Platform team sync - agenda for Tuesday",
            alt(sync_text, html_of(sync_text, "font-family:Calibri,sans-serif;font-size:11pt")),
            client=("SW-LAPTOP-07", "192.0.2.97"),
            hops=LARK_OUT,
            rcpt=WORK,
            mailer=OUTLOOK,
            extra=(("Thread-Topic", "Platform team sync - agenda for Tuesday"),),
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-09-19 11:41:27 +0100",
            addr("Marco Bianchi", "marco.bianchi@larkspur.example.org"),
            WORK,
            "Could you look at my retry patch before Friday?",
            Text("""\
Hey Robin,

The upload retry change is up as #418. It replaces the fixed 5 s sleep
with exponential backoff plus jitter, capped at 60 s, and stops retrying
on 4xx responses other than 429.

Two things I'm not sure about:

- whether the cap should be configurable or just a constant
- the test uses a fake clock; I copied the pattern from the ingest
  tests but it feels heavy for what it does

No rush today, but I'd like to merge before Friday so it goes out with
the next release. Happy to pair on it if that's quicker.

Cheers,
Marco
"""),
            client=("marco-dev.larkspur.example.org", "192.0.2.104"),
            hops=(Hop("smtp.larkspur.example.org", "192.0.2.60", "sub"), LARK_OUT[1]),
            rcpt=WORK,
            mailer=EVOLUTION,
        )
    )

    quill = list_headers("libquill-dev", "lists.example.org", "libquill development")
    h.append(
        Mail(
            "ham",
            "2023-09-21 09:30:12 +0200",
            addr("Lena Hoffmann", "lena@hoffmann.example.net"),
            "libquill-dev@lists.example.org",
            "[libquill-dev] Proposal: drop Python 3.8 support in 3.0",
            Text(
                """\
Hi everyone,

I'd like to propose that libquill 3.0 requires Python 3.9 or newer.

Reasons:

* 3.8 reaches end of life next year and we'd be supporting it for the
  whole 3.x series otherwise.
* We could finally use the standard library's zoneinfo instead of the
  vendored tz shim, which is about 600 lines we keep forgetting to
  update.
* Type hints: dict[str, int] and friends without the typing imports.
* The CI matrix shrinks by a quarter.

What it would cost: distributions that still ship 3.8 as their default
would need to stay on 2.x. 2.x will keep getting security fixes for
twelve months after 3.0, as we agreed at the last sprint.

If nobody objects strongly by the end of the month I'll open the PR
and add a note to the changelog.

Lena
"""
                + mailman_footer("libquill-dev", "lists.example.org")
            ),
            client=("[192.0.2.150]", "192.0.2.150"),
            hops=(Hop("mail.hoffmann.example.net", "203.0.113.61", "postfix"), LISTS_ORG),
            envelope=list_envelope("libquill-dev", "lists.example.org"),
            extra=(*quill, ("Message-ID", "<8d2c1f0e-quill-38@hoffmann.example.net>")),
            mailer=THUNDERBIRD,
            msgid=None,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-09-21 14:02:48 +0530",
            addr("Arjun Mehta", "arjun@mehta.example.com"),
            "libquill-dev@lists.example.org",
            "Re: [libquill-dev] Proposal: drop Python 3.8 support in 3.0",
            Text(
                """\
Lena Hoffmann <lena@hoffmann.example.net> writes:

>I'd like to propose that libquill 3.0 requires Python 3.9 or newer.

+1 from me, with one caveat below.

From the download stats I pulled last week, 3.8 is about 6% of installs
of the 2.x line, and almost all of those come from one long-term-support
distribution. Those users are exactly the ones who won't move to 3.0
quickly anyway, so I don't think we lose much.

>* We could finally use the standard library's zoneinfo instead of the
>  vendored tz shim
>From memory the shim also has the 2038 bug, so that alone is worth it.

Caveat: please let's write the 2.x support window into the README, not
just the sprint notes. People ask about it every few months.

Arjun
"""
                + mailman_footer("libquill-dev", "lists.example.org")
            ),
            client=("arjun-desktop", "203.0.113.88"),
            hops=(Hop("smtp.mehta.example.com", "203.0.113.90", "sendmail"), LISTS_ORG),
            envelope=list_envelope("libquill-dev", "lists.example.org"),
            extra=(
                ("In-Reply-To", "<8d2c1f0e-quill-38@hoffmann.example.net>"),
                ("References", "<8d2c1f0e-quill-38@hoffmann.example.net>"),
                *quill,
            ),
            mailer=("User-Agent", "Gnus/5.13 (Gnus v5.13)"),
        )
    )

    ortho = list_headers("ortho-users", "lists.example.net", "Users of the ortho tile server")
    h.append(
        Mail(
            "ham",
            "2023-09-26 22:18:30 -0400",
            addr("Beatriz Costa", "bia.costa@example.org"),
            "ortho-users@lists.example.net",
            "[ortho-users] Segfault when loading tiles larger than 2 GB",
            Text(
                """\
Hello list,

I'm running ortho 1.9.2 on a 64-bit Linux box with 32 GB of RAM. Small
tile sets work fine, but as soon as a single tile file goes over 2 GB
the server dies during startup:

  INFO  loading tileset 'coast-2023' (2.3 GB)
  INFO  mapping index...
  Segmentation fault (core dumped)

The backtrace from the core file ends in:

  #0  tile_index_read (idx=0x55d1c2a0, off=-2147483136) at index.c:212
  #1  tileset_open (path=0x55d1c110 "/srv/tiles/coast-2023.otl") at set.c:88

The negative offset makes me think something is still a 32-bit int.
Building with -fsanitize=address gives the same location.

Is this a known limit? Splitting the tileset is possible but painful
for us. Happy to test a patch.

Thanks,
Beatriz
"""
                + mailman_footer("ortho-users", "lists.example.net")
            ),
            client=("bia-workstation", "198.51.100.160"),
            hops=(*ORG_OUT, LISTS_NET),
            envelope=list_envelope("ortho-users", "lists.example.net"),
            extra=(*ortho, ("Message-ID", "<20230926221830.GA4412@bia-workstation>")),
            mailer=MUTT,
            msgid=None,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-09-28 08:55:02 +0000",
            addr("Yusuf Demir", "yusuf@ortho.example.net"),
            "ortho-users@lists.example.net",
            "Re: [ortho-users] Segfault when loading tiles larger than 2 GB",
            Text(
                """\
Hi Beatriz,

Thanks for the excellent report -- the backtrace made this a five minute
fix. You're right: tile_index_read() took the offset as an int. It has
been like that since the very first index format, when nobody imagined
a tile larger than a few hundred megabytes.

The fix is on the main branch now (commit 4e1a9c0) and will be in 1.9.3,
which I hope to tag this weekend. If you can build from source before
then, please give it a try with your coast tileset and let us know.

As a workaround on 1.9.2 you can set "index_mode = stream" in the
tileset section of ortho.conf. Startup is slower but it avoids the
mapped index code path entirely.

Yusuf

On 27/09/2023 03:18, Beatriz Costa wrote:
> The negative offset makes me think something is still a 32-bit int.
> Building with -fsanitize=address gives the same location.
"""
                + mailman_footer("ortho-users", "lists.example.net")
            ),
            client=("yusuf-x1", "203.0.113.150"),
            hops=(Hop("mail.ortho.example.net", "203.0.113.141", "postfix"), LISTS_NET),
            envelope=list_envelope("ortho-users", "lists.example.net"),
            extra=(
                ("In-Reply-To", "<20230926221830.GA4412@bia-workstation>"),
                ("References", "<20230926221830.GA4412@bia-workstation>"),
                *ortho,
            ),
            mailer=THUNDERBIRD,
        )
    )

    tarmac = list_headers("tarmac-announce", "lists.example.org", "tarmac release announcements")
    h.append(
        Mail(
            "ham",
            "2023-10-02 17:00:00 +0000",
            addr("Tarmac Release Bot", "release@tarmac.example.org"),
            "tarmac-announce@lists.example.org",
            "[ANN] tarmac 2.4.0 released",
            Text(
                """\
tarmac 2.4.0 is out.

tarmac is a small build tool for projects that have outgrown a Makefile
but don't want a build system that needs its own build system.

Highlights
----------

* Parallel builds now respect the job server of a parent make.
* New "tarmac why TARGET" explains why a target was rebuilt.
* Content hashing is 3x faster on large trees (mtime pre-check).
* Config files may include other config files.

Fixes
-----

* Targets with spaces in their names no longer break the dependency
  graph printer.
* "tarmac clean" no longer follows symlinks out of the build directory.
* Windows: long path support.

Upgrading
---------

No config changes are needed. The on-disk cache format changed, so the
first build after upgrading will be a full one.

Full changelog: https://tarmac.example.org/changes/2.4.0
Download:       http://tarmac.example.org/download/

Thanks to the 14 people who contributed to this release.
"""
                + mailman_footer("tarmac-announce", "lists.example.org")
            ),
            client=("ci-runner-3.tarmac.example.org", "198.51.100.141"),
            hops=(Hop("mail.tarmac.example.org", "198.51.100.142", "postfix"), LISTS_ORG),
            envelope=list_envelope("tarmac-announce", "lists.example.org"),
            extra=tarmac,
            mailer=("X-Mailer", "tarmac-release 1.2"),
        )
    )

    pr_text = """\
@hlee commented on this pull request.

In ingest/cache.py:

> -        if entry.expires < now:
> -            del self._entries[key]
> +        with self._lock:
> +            if entry.expires < now:
> +                self._entries.pop(key, None)

Using pop() with a default here is right, but we still read `entry`
outside the lock two lines up. If another thread refreshes the entry in
between we'll evict a fresh value. Can we move the lookup inside the
`with` block too?

Otherwise looks good to me; the new stress test reproduces the original
failure on main about one run in five.

--
Reply to this email directly or view it on CodeHub:
https://codehub.example.com/larkspur/ingest/pull/412#discussion_r1288
You are receiving this because your review was requested.
"""
    pr_html = (
        "<p><b>@hlee</b> commented on this pull request.</p>\n"
        '<p>In <a href="https://codehub.example.com/larkspur/ingest/pull/412'
        '#discussion_r1288">ingest/cache.py</a>:</p>\n<pre>'
        + html.escape(pr_text.split("In ingest/cache.py:\n\n", 1)[1].split("\n\nUsing", 1)[0])
        + "</pre>\n<p>Using <code>pop()</code> with a default here is right, but we "
        "still read <code>entry</code> outside the lock two lines up. If another "
        "thread refreshes the entry in between we'll evict a fresh value. Can we "
        "move the lookup inside the <code>with</code> block too?</p>\n"
        "<p>Otherwise looks good to me; the new stress test reproduces the original "
        "failure on main about one run in five.</p>\n"
        '<p style="font-size:small;color:#666">Reply to this email directly or '
        '<a href="https://codehub.example.com/larkspur/ingest/pull/412#discussion_r1288">'
        "view it on CodeHub</a>.<br>You are receiving this because your review was "
        "requested.</p>\n"
    )
    h.append(
        Mail(
            "ham",
            "2023-10-04 13:27:51 +0000",
            addr("Hannah Lee", "notifications@codehub.example.com"),
            "larkspur/ingest <ingest@noreply.codehub.example.com>",
            "Re: [larkspur/ingest] Fix race in cache eviction (#412)",
            Multi("alternative", (Text(pr_text), Text(pr_html, "html", "utf-8", "quoted-printable"))),
            client=("worker-12.codehub.example.com", "203.0.113.20"),
            hops=(Hop("out-3.smtp.codehub.example.com", "203.0.113.23", "postfix"),),
            envelope="noreply@codehub.example.com",
            rcpt=WORK,
            extra=(
                ("Reply-To", "larkspur/ingest <reply+AAB3X9@reply.codehub.example.com>"),
                ("In-Reply-To", "<larkspur/ingest/pull/412@codehub.example.com>"),
                ("References", "<larkspur/ingest/pull/412@codehub.example.com>"),
                ("List-Id", "larkspur/ingest <ingest.larkspur.codehub.example.com>"),
                ("List-Unsubscribe", "<https://codehub.example.com/notifications/unsubscribe/AAB3X9>"),
                ("X-CodeHub-Reason", "review_requested"),
            ),
        )
    )

    books_html = """\
<html><head><style>td{padding:6px 10px;font-family:Georgia,serif}</style></head>
<body style="background:#f6f1e7">
<table width="600" align="center" style="background:#ffffff;border:1px solid #d8cfc0">
<tr><td><h2 style="color:#5a3e1b">Bramble Books</h2>
<p>Hello Robin,</p>
<p>Thank you for your order. We've received it and will let you know as soon
as it's on its way.</p></td></tr>
<tr><td><b>Order BB-20931</b> &middot; placed 9 October 2023</td></tr>
<tr><td>
<table width="100%">
<tr><td>A Field Guide to Northern Moths (paperback)</td><td align="right">&pound;14.99</td></tr>
<tr><td>Cooking with Cast Iron, 2nd edition</td><td align="right">&pound;22.50</td></tr>
<tr><td>The Patient Gardener</td><td align="right">&pound;9.99</td></tr>
<tr><td>Standard delivery</td><td align="right">&pound;0.00</td></tr>
<tr><td><b>Total paid</b></td><td align="right"><b>&pound;47.48</b></td></tr>
</table></td></tr>
<tr><td>Paid with card ending 4417. Delivering to: R. Alder, 7 Mill Lane.</td></tr>
<tr><td style="font-size:12px;color:#777">Questions about your order? Just reply to
this email or visit <a href="https://shop.bramble.example.com/account/orders">your
orders page</a>. Bramble Books, 22 Castle Street.</td></tr>
</table></body></html>
"""
    h.append(
        Mail(
            "ham",
            "2023-10-09 19:44:10 +0100",
            addr("Bramble Books", "orders@bramble.example.com"),
            "robin@example.com",
            "Your Bramble Books order BB-20931",
            html_alt(books_html),
            client=("shop-app-2.bramble.example.com", "198.51.100.55"),
            hops=BULK_OUT,
            envelope="bounce-bb20931@mta7.sendwell.example.com",
            mailer=("X-Mailer", "Sendwell Transactional 4.2"),
        )
    )

    compiler_html = """\
<html><body style="margin:0;background:#eeeeee">
<table width="640" align="center" cellpadding="0" cellspacing="0" style="background:#fff">
<tr><td style="background:#1d2b3a;color:#fff;padding:18px;font:bold 24px Helvetica">
The Sunday Compiler &mdash; issue 87</td></tr>
<tr><td style="padding:18px;font:15px/1.5 Helvetica">
<p>Good morning! This week: a gentle tour of register allocation, why your
parser is slow (it's probably not the parser), and a reader question about
error recovery.</p>
<h3>Reading</h3>
<ul>
<li><a href="https://blog.example.org/linear-scan">Linear scan allocation in 300 lines</a>
&mdash; a readable walk-through with diagrams.</li>
<li><a href="https://notes.example.net/parsers-and-io">Your parser is waiting on I/O</a>
&mdash; profiling a language server, with flame graphs.</li>
<li><a href="https://blog.example.org/pratt">Pratt parsing, again</a> &mdash; the
best explanation we've linked so far, and we've linked a few.</li>
</ul>
<h3>Reader question</h3>
<p>&ldquo;How do I keep reporting errors after the first one without
producing a cascade of nonsense?&rdquo; Short answer: synchronise on
statement boundaries and suppress errors until you've consumed a token
successfully. Longer answer next week.</p>
<p style="background:#fff7d6;padding:10px"><b>Sponsored:</b> Need fast CI for your
compiler project? Gridrun gives open source projects 2,000 free build minutes
a month. <a href="https://gridrun.example.com/oss?ref=tsc87">Claim yours</a>.</p>
</td></tr>
<tr><td style="padding:12px;font:12px Helvetica;color:#888">You're getting this
because you subscribed at sundaycompiler.example.net.
<a href="https://sundaycompiler.example.net/unsubscribe?u=ra71">Unsubscribe</a>
&middot; <a href="https://sundaycompiler.example.net/archive">Archive</a></td></tr>
</table></body></html>
"""
    h.append(
        Mail(
            "ham",
            "2023-10-15 07:00:04 +0000",
            addr("The Sunday Compiler", "hello@sundaycompiler.example.net"),
            "robin@example.com",
            "Sunday Compiler #87: register allocation, slow parsers",
            html_alt(compiler_html),
            client=("app.sundaycompiler.example.net", "203.0.113.71"),
            hops=BULK_OUT,
            envelope="bounces+87-ra71@mta7.sendwell.example.com",
            extra=(
                ("List-Unsubscribe", "<https://sundaycompiler.example.net/unsubscribe?u=ra71>"),
                ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
                ("Precedence", "bulk"),
            ),
            mailer=("X-Mailer", "Sendwell Campaigns"),
            new=True,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-10-17 10:15:00 +0100",
            addr("Skylark Air", "news@skylark-air.example.com"),
            "robin@example.com",
            "Robin, autumn fares from \u00a339 are here",
            Text(
                """\
<html><body style="font-family:Verdana,sans-serif;background:#e8f1fb">
<center>
<table width="600" style="background:#ffffff">
<tr><td style="background:#0b4f8a;padding:20px;color:#fff;font-size:26px">
SKYLARK AIR &nbsp; | &nbsp; Skylark Club</td></tr>
<tr><td style="padding:20px">
<p>Hi Robin,</p>
<p>As a Skylark Club member you get first pick of our autumn sale. Fares
start at <b>&pound;39 one way</b> including a cabin bag, on all routes from
Northfield for travel between 1 November and 14 December.</p>
<p>Your balance: <b>12,480 points</b> &mdash; enough for a return trip to
the coast, or a seat upgrade on any flight under three hours.</p>
<p style="text-align:center"><a href="https://www.skylark-air.example.com/sale?m=club"
style="background:#f5a623;color:#000;padding:12px 24px;text-decoration:none">
See sale fares</a></p>
<p style="font-size:11px;color:#666">Sale ends 23:59 on 24 October. Limited seats at
each price. Fares are per person, one way. Skylark Air will never ask for your
password by email.</p>
</td></tr>
<tr><td style="font-size:11px;color:#999;padding:10px">You are receiving this because
you opted in to Skylark Club offers.
<a href="https://www.skylark-air.example.com/prefs?m=club">Manage preferences or
unsubscribe</a>.</td></tr>
</table></center></body></html>
""",
                "html",
                "utf-8",
                "quoted-printable",
            ),
            client=("campaign-01.skylark-air.example.com", "198.51.100.90"),
            hops=BULK_OUT,
            envelope="b.4419.club@mta7.sendwell.example.com",
            extra=(("List-Unsubscribe", "<https://www.skylark-air.example.com/prefs?m=club>"),),
            mailer=("X-Mailer", "Sendwell Campaigns"),
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-10-20 06:30:00 +0100",
            addr("Fresh & Co Rewards", "rewards@freshandco.example.com"),
            "robin@example.com",
            "Your personalised offers for this week",
            Text(
                """\
<!DOCTYPE html>
<html><body style="font-family:Helvetica,Arial;margin:0">
<div style="max-width:580px;margin:auto">
<div style="background:#2e7d32;color:#fff;padding:16px;font-size:22px">Fresh &amp; Co</div>
<p>Hello Robin, here are this week's offers picked for you, based on what
you usually buy. They're already loaded onto your Rewards card &mdash; just
scan it at the till.</p>
<table width="100%" cellpadding="8">
<tr><td><b>20% off</b><br>Any bag of coffee beans</td>
<td><b>2 for &pound;3</b><br>Greek-style yoghurt 500g</td></tr>
<tr><td><b>Save &pound;1</b><br>Sourdough loaf</td>
<td><b>Double points</b><br>Fruit &amp; veg over &pound;10</td></tr>
</table>
<p>You have <b>1,240 points</b>, worth &pound;12.40 off your next shop.</p>
<p style="font-size:11px;color:#777">Offers valid until Thursday 26 October in
stores only. One use per offer. To stop receiving personalised offers,
<a href="https://www.freshandco.example.com/rewards/preferences">update your
preferences</a>.</p>
</div></body></html>
""",
                "html",
                "us-ascii",
                "quoted-printable",
            ),
            client=("mailer.freshandco.example.com", "203.0.113.30"),
            hops=(Hop("relay.freshandco.example.com", "203.0.113.31", "exim"),),
            envelope="rewards-bounce@freshandco.example.com",
            extra=(("List-Unsubscribe", "<https://www.freshandco.example.com/rewards/preferences>"),),
            new=True,
        )
    )

    statement = """\
Dear Robin Alder,

Your October statement for your Everyday Saver account ending 2210 is
now ready to view in online banking and in the Harbour Savings app.

To see it, log in as you normally do and choose Documents > Statements.
For your security, we never include links to log in in our emails, and
we will never ask for your password, PIN or one-time codes by email,
text or phone.

Interest this month: 18.42 GBP. Your current rate is 3.10% AER
(variable).

If you have questions, call us on the number on the back of your card.

Harbour Savings
"""
    h.append(
        Mail(
            "ham",
            "2023-11-02 05:12:33 +0000",
            addr("Harbour Savings", "statements@harbour-savings.example.com"),
            "robin@example.com",
            "Your statement is ready",
            alt(statement, html_of(statement, "font-family:Georgia;color:#123")),
            client=("notify-01.harbour-savings.example.com", "198.51.100.170"),
            hops=(Hop("mx-out.harbour-savings.example.com", "198.51.100.171", "sendmail"),),
            mailer=("X-Mailer", "HS Notify"),
        )
    )

    ics = crlf("""\
BEGIN:VCALENDAR
PRODID:-//Example Calendar//EN
VERSION:2.0
CALSCALE:GREGORIAN
METHOD:REQUEST
BEGIN:VEVENT
DTSTART:20231109T100000Z
DTEND:20231109T113000Z
DTSTAMP:20231103T141502Z
ORGANIZER;CN=Sam Whitfield:mailto:sam.whitfield@larkspur.example.org
UID:q1-planning-2024-platform@larkspur.example.org
ATTENDEE;CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=
 TRUE;CN=Robin Alder:mailto:robin.alder@larkspur.example.org
ATTENDEE;CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;PARTSTAT=ACCEPTED;CN=Hanna
 h Lee:mailto:hannah.lee@larkspur.example.org
DESCRIPTION:Q1 planning for the platform team. Bring your top two items.
LOCATION:Room 3 (second floor)
SEQUENCE:0
STATUS:CONFIRMED
SUMMARY:Q1 planning - platform
TRANSP:OPAQUE
END:VEVENT
END:VCALENDAR
""")
    invite_text = """\
You have been invited to the following event.

Q1 planning - platform
When: Thu 9 Nov 2023 10:00 - 11:30 (GMT)
Where: Room 3 (second floor)
Organizer: Sam Whitfield

Q1 planning for the platform team. Bring your top two items.

Going? Yes - Maybe - No
"""
    h.append(
        Mail(
            "ham",
            "2023-11-03 14:15:02 +0000",
            addr("Sam Whitfield", "sam.whitfield@larkspur.example.org"),
            WORK,
            "Invitation: Q1 planning - platform @ Thu 9 Nov 2023 10:00 - 11:30 (GMT)",
            Multi(
                "mixed",
                (
                    Multi(
                        "alternative",
                        (
                            Text(invite_text),
                            Text(html_of(invite_text), "html", "utf-8", "quoted-printable"),
                            Text(ics, "calendar", "utf-8", "base64", (("method", "REQUEST"),)),
                        ),
                    ),
                    Blob("application/ics", ics.encode(), "invite.ics"),
                ),
            ),
            client=("calendar.larkspur.example.org", "192.0.2.70"),
            hops=(LARK_OUT[1],),
            rcpt=WORK,
        )
    )

    dentist_ics = crlf("""\
BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//Brookside Dental//Appointments//EN
METHOD:PUBLISH
BEGIN:VEVENT
UID:appt-77120@brookside-dental.example.com
DTSTAMP:20231106T090000Z
DTSTART:20231114T153000Z
DTEND:20231114T160000Z
SUMMARY:Dental check-up (Milo Alder)
LOCATION:Brookside Dental Practice, 3 Brook Road
END:VEVENT
END:VCALENDAR
""")
    h.append(
        Mail(
            "ham",
            "2023-11-06 09:00:41 +0000",
            addr("Brookside Dental", "appointments@brookside-dental.example.com"),
            "robin@example.com",
            "Appointment reminder: Milo, Tuesday 14 November at 3:30pm",
            Multi(
                "mixed",
                (
                    Text("""\
Dear Robin,

This is a reminder that Milo has a check-up at Brookside Dental on
Tuesday 14 November at 3:30pm with Dr Patel.

Please arrive five minutes early. If you need to change the appointment,
call the practice at least 24 hours before so we can offer the slot to
someone on our waiting list.

We've attached a calendar file you can add to your phone.

Brookside Dental Practice
3 Brook Road
"""),
                    Text(dentist_ics, "calendar", "utf-8", "7bit", filename="appointment.ics"),
                ),
            ),
            client=("pms.brookside-dental.example.com", "198.51.100.210"),
            hops=(Hop("smtp.example.net", "198.51.100.10", "sub"),),
            envelope="appointments@brookside-dental.example.com",
            new=True,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-11-08 21:33:15 +0000",
            addr("Ortho Community Forum", "noreply@forum.ortho.example.net"),
            "robin@example.com",
            "Reset your password",
            Text("""\
Hi robin_a,

Someone (hopefully you) asked to reset the password for your account on
the Ortho community forum.

To choose a new password, open this link within the next 60 minutes:

https://forum.ortho.example.net/u/password-reset/5f0c2a7be1d94c3a

If you didn't ask for this, you can ignore this email. Your password
won't change and nobody else can use the link.

-- The Ortho forum (run by volunteers, please be kind)
"""),
            client=("forum-web-1.ortho.example.net", "203.0.113.145"),
            hops=(Hop("mail.ortho.example.net", "203.0.113.141", "postfix"),),
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-10-11 12:02:09 +0100",
            addr("Bramble Books", "orders@bramble.example.com"),
            "robin@example.com",
            "Your order BB-20931 is on its way",
            Text("""\
Hello Robin,

Good news: your order BB-20931 left our warehouse this morning.

Courier: Parcelpath Standard
Tracking number: PP 4471 0093 2215
Expected delivery: Friday 13 October

You can follow it at https://track.parcelpath.example.net/PP447100932215

If nobody is in, the courier will try a neighbour first and then leave a
card. You don't need to pay anything on delivery.

Happy reading,
Bramble Books
"""),
            client=("shop-app-1.bramble.example.com", "198.51.100.54"),
            hops=BULK_OUT,
            envelope="bounce-bb20931-2@mta7.sendwell.example.com",
            mailer=("X-Mailer", "Sendwell Transactional 4.2"),
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-11-12 16:48:27 +0100",
            addr("Jürgen Alder", "juergen.alder@example.net"),
            "Robin <robin@example.com>",
            "Geburtstag von Tante Hilde – kommst du?",
            Text(
                """\
Hallo Robin,

wie geht es euch? Hier ist alles gut, nur das Wetter ist seit Wochen grau.

Tante Hilde wird im Januar 80, und wir wollen am Samstag, den 20. Januar,
im Gasthaus „Zur Linde“ feiern. Sie weiß noch nichts davon – bitte nichts
verraten! Es gibt Mittagessen ab 12 Uhr und danach Kaffee und Kuchen.

Kommst du mit Milo? Ihr könnt gerne bei uns übernachten, das Gästezimmer
ist frei. Sag mir bitte bis Ende November Bescheid, damit ich dem Wirt die
Zahl der Gäste nennen kann.

Viele Grüße, auch von Gisela
Jürgen
""",
                charset="utf-8",
                cte="quoted-printable",
            ),
            client=("[192.0.2.177]", "192.0.2.177"),
            hops=NET_OUT,
            subject_enc="utf-8:Q",
            mailer=THUNDERBIRD,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-08-28 11:20:45 +0200",
            addr("Claire Dubois", "claire.dubois@example.net", "iso-8859-1:Q"),
            "Robin Alder <robin@example.com>",
            "Vacances en Bretagne : les photos arrivent !",
            Text(
                """\
Salut Robin,

On est rentrés hier soir de Bretagne, bronzés et un peu fatigués. Il a
fait beau presque tous les jours, sauf le mercredi où on a passé l'après-
midi dans un musée de la marine très sympa à Concarneau.

Les enfants ont adoré la plage et les crêpes (surtout les crêpes). J'ai
trié les photos ce matin, je t'envoie un lien vers l'album dès que c'est
en ligne.

Et toi, ça va le travail ? Vous venez toujours à Lyon en octobre ? On
serait ravis de vous recevoir, il y a de la place pour Milo aussi.

Bises,
Claire
""",
                charset="iso-8859-1",
                cte="quoted-printable",
            ),
            client=("portable-claire", "203.0.113.102"),
            hops=NET_OUT,
            subject_enc="iso-8859-1:Q",
            mailer=THUNDERBIRD,
            flags="RS",
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-11-14 09:07:36 +0100",
            addr("Ana García", "ana.garcia@larkspur.example.org"),
            WORK,
            "Reunión del jueves con el equipo de Madrid",
            Text(
                """\
Hola Robin:

Te escribo para confirmar la reunión del jueves a las 15:00 (hora de
Madrid, las 14:00 para vosotros). Vamos a revisar la migración del
servicio de facturación y el calendario para diciembre.

Ya he compartido el documento con los puntos pendientes. Si puedes,
échale un vistazo antes, sobre todo la parte de las colas de reintentos,
que es donde tenemos más dudas.

¿Te va bien que la hagamos en inglés? Hay dos compañeros nuevos que
todavía no hablan español.

Un saludo,
Ana
""",
                charset="utf-8",
                cte="8bit",
            ),
            client=("ANA-PC", "192.0.2.112"),
            hops=LARK_OUT,
            rcpt=WORK,
            mailer=OUTLOOK,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-11-19 20:12:04 +0700",
            addr("Дмитрий Волков", "dmitri.volkov@example.org", "koi8-r:B"),
            "Robin Alder <robin@example.com>",
            "Привет из Новосибирска",
            Text(
                """\
Привет, Робин!

Давно не писал, извини. У нас уже настоящая зима: минус двадцать, снег
по колено, но солнечно и красиво. Я наконец закончил тот проект с
датчиками для теплиц, о котором рассказывал летом. Работает уже месяц
без единого сбоя, чему я сам удивляюсь.

Весной, может быть, приеду в Англию на конференцию. Если получится,
обязательно встретимся, и ты покажешь мне свои велосипедные маршруты.

Передавай привет Мило!

Дима
""",
                charset="koi8-r",
                cte="8bit",
            ),
            client=("dima-laptop", "203.0.113.177"),
            hops=ORG_OUT,
            subject_enc="koi8-r:B",
            mailer=CLAWS,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-11-21 18:40:22 +0900",
            addr("佐藤 健二", "kenji.sato@larkspur.example.org", "ISO-2022-JP:B"),
            WORK,
            "会議の資料について",
            Text(
                """\
ロビンさん

お疲れさまです。佐藤です。

来週の設計レビューの資料を共有フォルダに置きました。
キャッシュの削除ポリシーについて二つの案を比較しています。
事前に目を通していただけると助かります。

時差があるので、質問はメールでも大丈夫です。
よろしくお願いします。

佐藤 健二
""",
                charset="ISO-2022-JP",
                cte="7bit",
            ),
            client=("sato-note.larkspur.example.org", "192.0.2.121"),
            hops=(Hop("smtp.larkspur.example.org", "192.0.2.60", "sub"), LARK_OUT[1]),
            subject_enc="ISO-2022-JP:B",
            rcpt=WORK,
            mailer=("X-Mailer", "Becky! ver. 2.81.04"),
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-11-25 10:02:51 +0800",
            addr("张伟", "wei.zhang@example.com"),
            "Robin <robin@example.com>",
            "下周末一起吃饭吗？",
            Text(
                """\
Robin，你好！

我下周五到伦敦出差，周六下午有空。要不要一起吃个饭？
我知道唐人街有一家很好吃的面馆，上次我们说要去但是没去成。

你看周六中午或者晚上哪个方便？我都可以。

伟
""",
                charset="utf-8",
                cte="base64",
            ),
            client=("wei-phone", "198.51.100.199"),
            hops=(Hop("smtp.example.com", "192.0.2.30", "sub"),),
            subject_enc="utf-8:B",
            mailer=IPHONE,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-11-27 15:22:08 +0000",
            addr("ExpenseDesk", "noreply@expenses.larkspur.example.org"),
            WORK,
            "Expense report EXP-3391 approved",
            Text("""\
Hello Robin,

Your expense report has been approved and sent to payroll.

Report:     EXP-3391 "Platform offsite, November"
Approved by: Sam Whitfield
Amount:     GBP 184.60 (train 96.40, hotel 75.00, meals 13.20)
Payment:    with your December salary

No action is needed.

This is an automated message from ExpenseDesk. Replies to this address
are not read.
"""),
            client=("expdesk-app-02.larkspur.example.org", "192.0.2.75"),
            hops=(LARK_OUT[1],),
            rcpt=WORK,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-11-29 17:55:40 +0000",
            addr("Hannah Lee", "hannah.lee@larkspur.example.org"),
            "Platform Team <platform@larkspur.example.org>",
            "Re: Postmortem: ingest outage on 24 November",
            Text("""\
Thanks everyone for the comments on the draft. I've folded most of them
in; the updated doc is in the usual place. Summary for those who skipped
it:

What happened: a config push set the ingest worker pool to 0 in one
region. Traffic shifted to the other region, which then hit its
connection limit about 40 minutes later. Total impact was 1 h 52 min of
delayed processing, no data loss.

Why it wasn't caught: the config validator checks types, not ranges,
and the canary region was the one that was already quiet that day.

Actions (owners in the doc):
1. Range checks for pool sizes in the validator.
2. Canary on a region with real traffic.
3. Alert on queue age, not just queue depth.
4. Runbook entry for shifting traffic back manually.

Robin -- you asked about the alert thresholds. I've suggested 10 minutes
for page and 3 for ticket, but happy to argue about it on Tuesday.

Hannah

> Can we also add a dashboard link to the alert itself? At 3am nobody
> remembers where the ingest dashboards live.

Yes, added as action 3b.
"""),
            client=("HLEE-MBP", "192.0.2.99"),
            hops=LARK_OUT,
            rcpt=WORK,
            mailer=OUTLOOK,
            extra=(
                ("In-Reply-To", "<DB9PR01MB7731A2@exch01.larkspur.example.org>"),
                ("References", "<DB9PR01MB7731A2@exch01.larkspur.example.org>"),
            ),
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-12-01 08:13:29 +0000",
            addr("Pete Granger", "pete.granger@example.net"),
            "Robin Alder <robin@example.com>",
            "Boiler service on Wednesday",
            Text("""\
Hi Robin,

Just to let you know the gas engineer is booked to do the annual boiler
service on Wednesday 6th, some time between 8 and 12. He has his own key
but he'll knock first. It takes about an hour.

While he's there I've asked him to look at the radiator in the back
bedroom you mentioned. If it needs a new valve I'll sort that out, no
charge to you obviously.

Any problems just text me.

Thanks,
Pete
"""),
            client=("[198.51.100.66]", "198.51.100.66"),
            hops=(Hop("webmail.example.net", "198.51.100.11", "webmail"), NET_OUT[1]),
            mailer=ROUNDCUBE,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-12-05 13:47:02 +0000",
            addr("Linda Marsh", "linda.marsh@example.org"),
            "robin@example.com",
            "Parcel for you at number 14",
            Text("""\
Hello Robin, it's Linda from number 14. The courier left a fairly heavy
box with us this morning, addressed to you. It's in our hall, no rush,
I'm in all afternoon and evening. Just knock.
Linda
"""),
            client=("lindas-phone", "203.0.113.8"),
            hops=ORG_OUT,
            mailer=IPHONE,
            flags="RS",
        )
    )

    consent = crlf("""\
ST MARY'S PRIMARY SCHOOL - YEAR 4 TRIP CONSENT FORM

Trip:      Museum of Science and Industry
Date:      Thursday 18 January 2024
Leave:     9:00am by coach, back by 3:15pm
Cost:      GBP 8.50 (voluntary contribution)

Child's name: ______________________   Class: ______

[ ] I give permission for my child to go on the trip.
[ ] My child will need a packed lunch from school.
[ ] I am able to help as a parent volunteer.

Medical needs or allergies we should know about:

_______________________________________________________

Parent/carer signature: ____________________  Date: __________
""")
    h.append(
        Mail(
            "ham",
            "2023-12-07 15:30:00 +0000",
            addr("St Mary's Primary Office", "office@stmarys-primary.example.org"),
            "Year 4 Parents <year4-parents@stmarys-primary.example.org>",
            "Year 4 trip to the science museum - consent form",
            Multi(
                "mixed",
                (
                    Text("""\
Dear Parents and Carers,

Year 4 will be visiting the Museum of Science and Industry on Thursday
18 January as part of our topic on electricity. The children will take
part in a workshop on circuits and explore the galleries.

Please complete the attached consent form and return it to the class
teacher by Friday 12 January. Contributions can be paid through the
usual school payments app.

We are looking for four parent volunteers; please tick the box on the
form if you can help.

Kind regards,
Mrs J. Holloway
Year 4 Team Leader
"""),
                    Text(consent, "plain", "us-ascii", "base64", filename="Y4-trip-consent.txt"),
                ),
            ),
            client=("OFFICE-PC2", "198.51.100.222"),
            hops=(Hop("smtp.stmarys-primary.example.org", "198.51.100.220", "msft"),),
            mailer=OUTLOOK,
        )
    )

    fw = list_headers("fernweh-users", "lists.example.org", "fernweh users")
    h.append(
        Mail(
            "ham",
            "2023-12-09 12:00:03 +0000",
            "fernweh-users-request@lists.example.org",
            "fernweh-users@lists.example.org",
            "fernweh-users Digest, Vol 14, Issue 6",
            Text(
                """\
Send fernweh-users mailing list submissions to
\tfernweh-users@lists.example.org

When replying, please edit your Subject line so it is more specific
than "Re: Contents of fernweh-users digest..."

Today's Topics:

   1. Offline maps on a Raspberry-class board (Oskar Lind)
   2. Re: Offline maps on a Raspberry-class board (Mei Tan)


----------------------------------------------------------------------

Message: 1
Date: Fri, 8 Dec 2023 19:21:44 +0100
From: Oskar Lind <oskar@lind.example.net>
Subject: Offline maps on a Raspberry-class board

Has anyone run fernweh with the offline map pack on a small ARM board?
It starts, but rendering the overview map takes almost a minute and the
fan never stops. Is there a setting to pre-render the low zoom levels?

Oskar

------------------------------

Message: 2
Date: Fri, 8 Dec 2023 22:05:10 +0000
From: Mei Tan <mei@tan.example.com>
Subject: Re: Offline maps on a Raspberry-class board

From the FAQ: run "fernweh tiles --prerender 0-9 PACK" once on a faster
machine and copy the cache directory across. Levels 0-9 are only a few
hundred megabytes. After that the board only renders the detailed levels
on demand, which it handles fine.

Also check you're on 0.14 or newer; older versions re-rendered the
whole viewport on every pan.

Mei

------------------------------

End of fernweh-users Digest, Vol 14, Issue 6
********************************************
"""
                + mailman_footer("fernweh-users", "lists.example.org")
            ),
            client=("lists.example.org", "198.51.100.40"),
            client_rdns="lists.example.org",
            envelope=list_envelope("fernweh-users", "lists.example.org"),
            extra=fw,
            mailer=("X-Mailer", "Mailman digester"),
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-12-12 19:26:11 +0000",
            addr("Priya Raman", "priya.raman@example.com"),
            "Book club <bookclub@example.com>",
            "Book club: January pick and a venue change",
            Text("""\
Hi all,

Thanks for a lovely evening last week, and sorry again about the cat.

The vote for January was close, but the winner is the old one: we're
reading From the Earth to the Moon. I found three copies at the library
and there are cheap editions everywhere, so nobody has an excuse.

Venue change: Dev's flat is being painted, so January is at mine. Same
time, 7:30 on the last Thursday of the month. Bring snacks, I'll do the
drinks.

For February, suggestions by email please, and no more than two each
this time (looking at you, Robin).

Priya
"""),
            client=("priya-laptop", "192.0.2.190"),
            hops=(Hop("smtp.example.com", "192.0.2.30", "sub"),),
            mailer=THUNDERBIRD,
            flags="RS",
        )
    )

    ticket_html = """\
<html><body style="font-family:Arial;color:#222">
<div style="border-top:6px solid #7a1f5c;padding:16px;max-width:560px">
<h2 style="margin:0">Your e-ticket</h2>
<p>Booking reference: <b>NL7Q2KX</b></p>
<table cellpadding="6" style="border-collapse:collapse">
<tr><td><b>Out</b></td><td>Fri 22 Dec 2023, 16:04 Northfield &rarr; Kingsport,
arrives 18:41. Coach C, seat 42 (window)</td></tr>
<tr><td><b>Return</b></td><td>Wed 27 Dec 2023, 11:15 Kingsport &rarr; Northfield,
arrives 13:50. Coach B, seat 17</td></tr>
<tr><td><b>Passengers</b></td><td>1 adult, 1 child (railcard applied)</td></tr>
<tr><td><b>Total</b></td><td>&pound;63.20, paid by card</td></tr>
</table>
<p>Show the barcode in the app or print the attached PDF. You don't need to
collect anything from a machine.</p>
<p style="font-size:12px;color:#666">Changed your plans? You can change times up to
6pm the day before travel in
<a href="https://www.northline.example.com/manage">Manage my booking</a>.</p>
</div></body></html>
"""
    h.append(
        Mail(
            "ham",
            "2023-12-14 21:09:37 +0000",
            addr("Northline Rail", "tickets@northline.example.com"),
            "robin@example.com",
            "Your e-ticket for 22 December (booking NL7Q2KX)",
            Multi(
                "alternative",
                (
                    Text(text_of(ticket_html), "plain", "utf-8", "quoted-printable"),
                    Text(ticket_html, "html", "utf-8", "base64"),
                ),
            ),
            client=("booking-7.northline.example.com", "203.0.113.40"),
            hops=(Hop("mta-a.northline.example.com", "203.0.113.41", "postfix"),),
            mailer=("X-Mailer", "NL-Booking/3.9"),
        )
    )

    licence_csv = crlf("""\
invoice,date,item,seats,unit_price,vat,total,currency
QW-2023-11872,2023-12-16,Quillworks Editor Personal (1 year),1,49.00,9.80,58.80,GBP
""")
    h.append(
        Mail(
            "ham",
            "2023-12-16 10:31:54 +0000",
            addr("Quillworks Billing", "billing@quillworks.example.com"),
            "robin@example.com",
            "Receipt for your Quillworks purchase (QW-2023-11872)",
            Multi(
                "mixed",
                (
                    Text("""\
Hi Robin,

Thanks for renewing Quillworks Editor Personal. Your licence now runs
until 16 December 2024.

Invoice:  QW-2023-11872
Amount:   GBP 58.80 (including VAT 9.80)
Card:     ending 4417

Your licence key hasn't changed, so there's nothing to do in the app.
A machine-readable copy of the invoice is attached for your records.

Thanks for supporting independent software!
The Quillworks team
"""),
                    Text(licence_csv, "csv", "us-ascii", "base64", filename="QW-2023-11872.csv"),
                ),
            ),
            client=("billing-1.quillworks.example.com", "198.51.100.185"),
            hops=(Hop("smtp.quillworks.example.com", "198.51.100.186", "exim"),),
        )
    )

    gym = """\
CRUX CLIMBING CENTRE - JANUARY NEWS

Happy new year, climbers!

Winter bouldering league
Starts Monday 8 January. Six rounds, one every fortnight, new problems
for every round. Teams of three, all grades welcome. Entry is free for
members, £5 per round for everyone else. Sign up at the front desk.

Route reset
The lead wall is closed on 15 and 16 January while we reset it. The
bouldering area stays open.

Kids' club
Saturday mornings are back from the 13th. Places go fast, so book early.

See you on the wall,
The Crux team

You're receiving this because you ticked "keep me posted" when you
joined. Unsubscribe: https://crux-climbing.example.com/news/unsub?id=ra
"""
    h.append(
        Mail(
            "ham",
            "2024-01-03 12:00:00 +0000",
            addr("Crux Climbing Centre", "news@crux-climbing.example.com"),
            "robin@example.com",
            "Winter bouldering league starts 8 January",
            alt(gym, html_of(gym, "font-family:Trebuchet MS;color:#222"), "utf-8", "quoted-printable"),
            client=("www.crux-climbing.example.com", "203.0.113.55"),
            hops=BULK_OUT,
            envelope="crux-news@mta7.sendwell.example.com",
            extra=(("List-Unsubscribe", "<https://crux-climbing.example.com/news/unsub?id=ra>"),),
            mailer=("X-Mailer", "Sendwell Campaigns"),
            new=True,
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-01-08 22:41:17 +0100",
            addr("Lena Hoffmann", "lena@hoffmann.example.net"),
            "libquill-dev@lists.example.org",
            "[libquill-dev] [PATCH v2 3/5] parser: accept folded header lines",
            Text(
                """\
Header lines folded with a tab instead of a space were rejected by the
strict parser. RFC 5322 allows any WSP, so accept both.

Reported-by: Beatriz Costa <bia.costa@example.org>
Signed-off-by: Lena Hoffmann <lena@hoffmann.example.net>
---
Changes since v1:
 - also handle folding inside quoted strings
 - test for a tab at the very start of a continuation

 libquill/parser.py       |  4 ++--
 tests/test_parser.py     | 12 ++++++++++++
 2 files changed, 14 insertions(+), 2 deletions(-)

diff --git a/libquill/parser.py b/libquill/parser.py
index 3f1c2aa..9b0e7d1 100644
--- a/libquill/parser.py
+++ b/libquill/parser.py
@@ -88,8 +88,8 @@ def _unfold(lines):
     out = []
     for line in lines:
-        if line.startswith(" "):
-            out[-1] += line[1:]
+        if line[:1] in (" ", "\\t"):
+            out[-1] += " " + line.lstrip(" \\t")
         else:
             out.append(line)
     return out
diff --git a/tests/test_parser.py b/tests/test_parser.py
index 51d0b3e..c84a2f6 100644
--- a/tests/test_parser.py
+++ b/tests/test_parser.py
@@ -140,3 +140,15 @@ def test_unfold_space():
     assert _unfold(["A: b", " c"]) == ["A: b c"]
+
+
+def test_unfold_tab():
+    assert _unfold(["A: b", "\\tc"]) == ["A: b c"]
+
+
+def test_unfold_quoted():
+    assert _unfold(['A: "b', '\\t c"']) == ['A: "b c"']
+
+
+def test_unfold_many():
+    assert _unfold(["A: b", " c", "\\td"]) == ["A: b c d"]
--
2.43.0
"""
                + mailman_footer("libquill-dev", "lists.example.org")
            ),
            client=("lena-thinkpad", "192.0.2.151"),
            hops=(Hop("mail.hoffmann.example.net", "203.0.113.61", "postfix"), LISTS_ORG),
            envelope=list_envelope("libquill-dev", "lists.example.org"),
            extra=(
                ("In-Reply-To", "<20240108214100.2215-1-lena@hoffmann.example.net>"),
                ("References", "<20240108214100.2215-1-lena@hoffmann.example.net>"),
                *quill,
            ),
            mailer=("X-Mailer", "git-send-email 2.43.0"),
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-01-10 04:12:55 +0000",
            addr("", "bugs@tracker.ortho.example.net"),
            "robin@example.com",
            "[Bug 2231] Crash on empty config file",
            Text("""\
https://tracker.ortho.example.net/show_bug.cgi?id=2231

Yusuf Demir <yusuf@ortho.example.net> changed:

           What    |Removed                     |Added
----------------------------------------------------------------------------
             Status|NEW                         |RESOLVED
         Resolution|---                         |FIXED
   Target Milestone|---                         |1.9.4

--- Comment #3 from Yusuf Demir <yusuf@ortho.example.net> ---
Fixed on main: an empty ortho.conf is now treated the same as a missing
one, and the server starts with defaults plus a warning. Thanks Robin
for the reproducer, it went straight into the test suite.

--
You are receiving this mail because:
You reported the bug.
"""),
            client=("tracker.ortho.example.net", "203.0.113.146"),
            hops=(Hop("mail.ortho.example.net", "203.0.113.141", "postfix"),),
            extra=(
                ("X-Bugzilla-Product", "ortho"),
                ("X-Bugzilla-Status", "RESOLVED"),
                ("Auto-Submitted", "auto-generated"),
            ),
        )
    )

    hr = """\
Hi everyone,

A reminder that open enrolment for 2024 benefits closes this Friday,
19 January, at 5pm.

This is the only time of year you can change your health plan, add or
remove dependants, or join the cycle-to-work scheme without a life event.
If you don't do anything, your current choices roll over.

What's new this year:
- The dental plan now covers orthodontics for children under 16.
- You can buy up to five extra days of holiday.
- The pension match goes up to 6% if you contribute 6% or more.

To make changes, open the People portal from the intranet home page and
choose Benefits > Enrol. It takes about ten minutes.

Questions? Drop into the People team's office hours on Wednesday, or
reply to this email.

Thanks,
Nadia
People Team
"""
    h.append(
        Mail(
            "ham",
            "2024-01-15 09:30:00 +0000",
            addr("Nadia Rahman (People Team)", "people@larkspur.example.org"),
            "All Staff <all@larkspur.example.org>",
            "Reminder: benefits enrolment closes Friday",
            alt(hr, html_of(hr, "font-family:Calibri;font-size:11pt")),
            client=("PEOPLE-LT-03", "192.0.2.88"),
            hops=LARK_OUT,
            rcpt=WORK,
            mailer=OUTLOOK,
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-01-20 10:48:05 +0000",
            addr("Sophie Grant", "sophie.grant@example.com"),
            "robin@example.com",
            "Save the date!! (well, RSVP actually)",
            Text(
                """\
<html><body><div dir="ltr">Robin!!<br><br>It's official, the wedding is on
Saturday 15 June at the old boathouse. Ceremony at 2, food after, dancing
until they throw us out.<br><br>Can you let us know by the end of March
whether you're coming, and if Milo is too? We're doing a kids' table with
crayons and a bouncy castle, so he'd be very welcome.<br><br>Also: any
food allergies, tell me now or forever eat the salmon.<br><br>Love,<br>
Sophie &amp; Dan<br><br>Sent from my phone</div></body></html>
""",
                "html",
                "utf-8",
                "quoted-printable",
            ),
            client=("[203.0.113.15]", "203.0.113.15"),
            hops=(Hop("smtp.example.com", "192.0.2.30", "sub"),),
            mailer=("X-Mailer", "Mobile Mail 6.2"),
            flags="FS",
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-01-24 14:02:13 +0000",
            addr("Riverside Health Centre", "no-reply@riverside-health.example.org"),
            "robin@example.com",
            "New message in your patient account",
            Text("""\
Dear Robin Alder,

You have a new message from Riverside Health Centre in your patient
account. It may contain test results or information about your care.

For your privacy we don't include the message in this email. Please log
in through the patient app or the website you normally use to read it.

If you were not expecting this, or you think someone else has access to
your account, please call the surgery reception.

Riverside Health Centre
This mailbox is not monitored.
"""),
            client=("portal-02.riverside-health.example.org", "198.51.100.231"),
            hops=(Hop("smtp-gw.riverside-health.example.org", "198.51.100.230", "msft"),),
        )
    )

    signin = """\
Hi Robin,

We noticed a new sign-in to your Quillworks account.

When:    Sunday 28 January 2024, 21:17 GMT
Device:  Linux, desktop browser
Where:   near Northfield (approximate, based on IP address)

If this was you, you don't need to do anything.

If this wasn't you, change your password from the account page in the
app and turn on two-step verification. We'll never ask you to reply to
this email with your password or a code.

The Quillworks team
"""
    h.append(
        Mail(
            "ham",
            "2024-01-28 21:18:40 +0000",
            addr("Quillworks", "security@quillworks.example.com"),
            "robin@example.com",
            "New sign-in to your Quillworks account",
            alt(signin),
            client=("auth-2.quillworks.example.com", "198.51.100.188"),
            hops=(Hop("smtp.quillworks.example.com", "198.51.100.186", "exim"),),
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-02-02 23:05:44 +0000",
            addr("Tom Okafor", "tom.okafor@example.org"),
            "Robin Alder <robin@example.com>",
            "did you ever sell that bitcoin?",
            Text("""\
Random question, but did you ever sell the bit of bitcoin you bought
back in 2017 for that conference hotel thing? It's gone up again and my
brother is now convinced he's going to get rich on some new token his
mate at work told him about. I keep telling him that anyone promising
"guaranteed returns" is lying, but he won't listen to me.

If you still have yours, I'd be curious how you actually store it. He's
got his on an exchange app and I have a feeling that's not great.

Also, ride on Sunday? Looks dry.

T
"""),
            client=("[192.0.2.201]", "192.0.2.201"),
            hops=ORG_OUT,
            mailer=THUNDERBIRD,
            flags="RS",
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-02-06 12:21:09 +0000",
            addr("Marco Bianchi", "marco.bianchi@larkspur.example.org"),
            WORK,
            "lunch?",
            Text("""\
noodle place at 12:45? Hannah's coming too
"""),
            client=("marco-dev.larkspur.example.org", "192.0.2.104"),
            hops=(Hop("smtp.larkspur.example.org", "192.0.2.60", "sub"), LARK_OUT[1]),
            rcpt=WORK,
            mailer=EVOLUTION,
            new=True,
        )
    )

    pyug = list_headers("pyug", "lists.example.net", "Northfield Python user group")
    h.append(
        Mail(
            "ham",
            "2024-02-12 18:30:26 +0000",
            addr("Grace Whitlock", "grace@whitlock.example.com"),
            "pyug@lists.example.net",
            "[pyug] February meetup: asyncio in practice + lightning talks",
            Text(
                """\
Hi all,

Our February meetup is on Wednesday 21st at the Old Library, doors
6:30, talks from 7.

Main talk: "asyncio in practice: what we got wrong in two years of
production services" by Mateo Ruiz. Cancellation, back-pressure,
and why you probably want a TaskGroup.

Then lightning talks: five minutes each, any topic vaguely related to
Python. Two slots are still free, reply to me to grab one.

Pizza is sponsored by Larkspur Systems this month -- thank you! Please
RSVP on the group page so we order the right amount.

Code of conduct: http://pyug.example.net/conduct

Grace
"""
                + mailman_footer("pyug", "lists.example.net")
            ),
            client=("grace-air", "198.51.100.101"),
            hops=(Hop("smtp.example.com", "192.0.2.30", "sub"), LISTS_NET),
            envelope=list_envelope("pyug", "lists.example.net"),
            extra=pyug,
            mailer=APPLE,
        )
    )

    food = """\
<html><body style="font-family:Georgia,serif;color:#333;background:#fafafa">
<div style="max-width:560px;margin:auto;background:#fff;padding:24px">
<h1 style="color:#c0392b;font-size:22px">Thank you, Robin</h1>
<p>Your gift of <b>&pound;30.00</b> to the Riverside Food Bank on 14 February
2024 has been received.</p>
<p>This month your donation helps us stock the shelves for about 70 family
food parcels. Last year volunteers like you helped us give out over 9,000
parcels across the town.</p>
<p>Because you ticked Gift Aid, we can claim an extra &pound;7.50 at no cost
to you.</p>
<p>Donation reference: RFB-24-00813</p>
<p style="font-size:12px;color:#888">Riverside Food Bank is a registered charity.
You can <a href="https://riversidefoodbank.example.org/email-prefs">change your
email preferences</a> at any time.</p>
</div></body></html>
"""
    h.append(
        Mail(
            "ham",
            "2024-02-14 08:02:47 +0000",
            addr("Riverside Food Bank", "thanks@riversidefoodbank.example.org"),
            "robin@example.com",
            "Thank you for your donation",
            Text(food, "html", "us-ascii", "7bit"),
            client=("crm.riversidefoodbank.example.org", "203.0.113.121"),
            hops=(Hop("relay.example.net", "198.51.100.14", "postfix"),),
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-02-19 16:44:31 +0000",
            addr("Olivia Brandt", "olivia.brandt@talentbridge.example.com"),
            "robin@example.com",
            "Re: Senior platform engineer role - next steps",
            Text("""\
Hi Robin,

Thanks for getting back to me, and no problem at all that you want to
take it slowly -- I completely understand, you're happy where you are.

As promised, a bit more detail: it's a 12-person platform team at a
logistics company, mostly Python and Go, hybrid with two office days.
The salary band is a little above what we discussed on the phone.

If you'd like to hear more, the hiring manager is happy to have an
informal chat, no interview, no prep. If not, I won't chase you.

Best wishes,
Olivia

On Fri, 16 Feb 2024 at 12:05, Robin Alder <robin@example.com> wrote:
> Hi Olivia, thanks for reaching out. I'm not actively looking, but I'd
> be happy to hear a bit more about the team before deciding.
"""),
            client=("OB-SURFACE", "203.0.113.130"),
            hops=(Hop("mail.talentbridge.example.com", "203.0.113.131", "msft"),),
            extra=(("In-Reply-To", "<CAF3x0Robin77@example.com>"),),
            mailer=OUTLOOK,
        )
    )

    inner = Text("""\
Hello everyone,

The spring quiz night is on Friday 15 March at 7:30pm in the village
hall. Teams of up to six, GBP 3 per person, with all money going to the
roof fund. There will be a raffle and the famous cheese round.

Bring your own drinks and nibbles. Tables can be booked with Sheila.

Village Hall Committee
""")
    h.append(
        Mail(
            "ham",
            "2024-02-25 10:12:33 +0000",
            addr("Peter Alder", "peter.alder@example.net"),
            "robin@example.com",
            "Fwd: Spring quiz night",
            Multi(
                "mixed",
                (
                    Text("""\
Thought you might fancy this. We're getting a team together, your mum
says you're the only one who knows anything about football.

From your old dad, who still can't work out how to forward things
properly.

Dad
"""),
                    Forward(
                        (
                            ("From", "Village Hall Committee <committee@villagehall.example.org>"),
                            ("To", "peter.alder@example.net"),
                            ("Subject", "Spring quiz night"),
                            ("Date", "Sat, 24 Feb 2024 17:45:02 +0000"),
                            ("Message-ID", "<quiz-2024-spring@villagehall.example.org>"),
                            ("MIME-Version", "1.0"),
                        ),
                        inner,
                    ),
                ),
            ),
            client=("peters-pc", "198.51.100.80"),
            hops=NET_OUT,
            mailer=THUNDERBIRD,
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-03-01 11:00:12 +0000",
            addr("PyNorth 2024 Programme Committee", "cfp@pynorth.example.org"),
            "robin@example.com",
            "Your PyNorth 2024 proposal has been accepted",
            Text("""\
Dear Robin Alder,

We're delighted to tell you that your talk proposal

    "Boring retries: making background jobs survive the real world"

has been accepted for PyNorth 2024 (Northfield, 14-16 June). There were
212 proposals for 48 slots this year, so congratulations!

Next steps:
1. Confirm you can attend by 15 March using the speaker page.
2. Add a short bio and a photo.
3. Let us know about any accessibility needs.

Speakers get a free conference ticket, one night's hotel and travel
support up to GBP 150. Details are on the speaker page.

We look forward to seeing you in June.

The PyNorth programme committee
"""),
            client=("cfp-app.pynorth.example.org", "198.51.100.152"),
            hops=(Hop("smtp.example.org", "198.51.100.130", "postfix"),),
            flags="FS",
        )
    )

    bill = """\
Hi Robin,

Your electricity bill for 1 February - 29 February 2024 is ready.

Amount: GBP 71.36
Paid by Direct Debit on or around 18 March. You don't need to do
anything.

Usage this period: 248 kWh, about 9% less than the same time last
year. Nice work.

You can see the full bill in your online account.

Thanks,
Brightwatt Energy
"""
    h.append(
        Mail(
            "ham",
            "2024-03-06 07:45:19 +0000",
            addr("Brightwatt Energy", "bills@brightwatt.example.com"),
            "robin@example.com",
            "Your electricity bill is ready",
            alt(bill, html_of(bill, "font-family:Verdana;color:#063")),
            client=("billing-out.brightwatt.example.com", "203.0.113.180"),
            hops=BULK_OUT,
            envelope="bw-bills@mta7.sendwell.example.com",
            new=True,
        )
    )

    h.append(
        Mail(
            "ham",
            "2023-09-19 10:00:01 +0100",
            addr("Kate Morrow", "kate.morrow@larkspur.example.org"),
            WORK,
            "Automatic reply: Platform team sync - agenda for Tuesday",
            Text("""\
Hi,

I'm on leave until Monday 25 September with no access to email. For
anything urgent about the billing service please contact Ana Garcia.

Thanks,
Kate
"""),
            client=("exch01.larkspur.example.org", "192.0.2.61"),
            client_rdns="exch01.larkspur.example.org",
            hops=(LARK_OUT[1],),
            rcpt=WORK,
            envelope="",
            extra=(("Auto-Submitted", "auto-replied"), ("X-Auto-Response-Suppress", "All")),
            mailer=OUTLOOK,
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-03-10 19:58:22 +0000",
            addr("Jess Alder", "jess.alder@example.net"),
            "Robin Alder <robin@example.com>",
            "Mum's 70th - ideas?",
            Text("""\
Right, Mum's 70th is in May and I think we need a plan before Dad
"organises" something at the golf club again.

Ideas so far:
- weekend in a cottage by the sea, all of us, she keeps hinting
- that cookery course she mentioned, we could both go with her
- a proper photo book of the last 70 years (I have a LOT of scans)

I'm leaning towards the cottage plus a small photo book. If we split it
three ways with Dad it's not too bad. I found a place that takes dogs,
which matters because she will not leave Pickle behind.

Can you ring me this week? Evenings are best.

J
"""),
            client=("jess-mbp.home", "198.51.100.78"),
            hops=NET_OUT,
            mailer=APPLE,
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-03-13 08:20:41 +0000",
            addr("Sam Whitfield", "sam.whitfield@larkspur.example.org"),
            WORK,
            "Your promotion - congratulations",
            Text("""\
Robin,

I wanted to put this in writing as well as saying it in person: the
promotion committee approved you for Senior Engineer, effective 1 April.
The new salary will show in your April payslip and HR will send the
formal letter this week.

The retry work, the ingest postmortem actions and the time you've put
into mentoring Marco all came up in the discussion. Well deserved.

Drinks on Friday are on me.

Sam
"""),
            client=("SW-LAPTOP-07", "192.0.2.97"),
            hops=LARK_OUT,
            rcpt=WORK,
            mailer=OUTLOOK,
            flags="FS",
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-03-18 13:14:15 +0000",
            addr("Tom Okafor", "tom.okafor@example.org"),
            "Robin Alder <robin@example.com>",
            "Spring sportive - entries open",
            Text("""\
The Dales spring sportive opened entries this morning, and the early
price is only 28 quid until the end of March. 110 km route or the 65 km
one. I'm doing the long one this year, no excuses. Free photos at the
finish and a hot meal, which is the main attraction honestly.

Link: http://sportive.example.org/dales-spring

Want to enter as a pair? Same start group that way.

T
"""),
            client=("[192.0.2.201]", "192.0.2.201"),
            hops=ORG_OUT,
            mailer=THUNDERBIRD,
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-03-22 09:41:52 +0000",
            addr("Margaret Alder", "maggie.alder@example.net"),
            "Robin <robin@example.com>",
            "Re: loan for the new car",
            Text("""\
Hello love,

Thank you for looking at those loan offers for us, your father would
have signed the first thing the garage gave him. We went to the bank
in the end like you said. 5.9% over three years, and they were very
patient with all his questions.

The car is blue. He's already washed it twice.

Love, Mum

> Don't take the dealer finance without comparing it first. Your own
> bank will probably beat it and there are no hidden fees.
"""),
            client=("maggies-ipad.home", "198.51.100.77"),
            hops=NET_OUT,
            mailer=IPHONE,
            new=True,
        )
    )

    h.append(
        Mail(
            "ham",
            "2024-03-25 17:36:08 +0000",
            addr("Vivid Photo Lab", "orders@vividphoto.example.com"),
            "robin@example.com",
            "=?utf-8?Q?Your_photo_book_is_ready_=E2=80=93_order_VP-55120?=",
            Text(
                """\
<html><body style="font-family:Helvetica;background:#fff">
<table width="100%" cellpadding="0" cellspacing="0"><tr><td align="center">
<table width="560">
<tr><td style="padding:20px 0;font-size:20px;color:#e0457b">Vivid Photo Lab</td></tr>
<tr><td style="font-size:15px;line-height:1.5">
<p>Hi Robin,</p>
<p>Great news &ndash; your photo book <b>"Seventy Years"</b> (40 pages, A4
landscape, matt) has been printed and checked by hand. It will be posted
today by tracked delivery.</p>
<p>Order: VP-55120 &middot; Total paid: &pound;42.99</p>
<p>Loved making it? Your next book is <b>30% off</b> with code SPRING30 until
30 April.</p>
<p><a href="https://vividphoto.example.com/orders/VP-55120">View your order</a></p>
</td></tr>
<tr><td style="font-size:11px;color:#999;padding-top:16px">Vivid Photo Lab Ltd.
<a href="https://vividphoto.example.com/unsubscribe">Unsubscribe from offers</a>
</td></tr></table></td></tr></table></body></html>
""",
                "html",
                "utf-8",
                "base64",
            ),
            client=("app-3.vividphoto.example.com", "198.51.100.240"),
            hops=BULK_OUT,
            envelope="vp-orders@mta7.sendwell.example.com",
            mailer=("X-Mailer", "Sendwell Transactional 4.2"),
        )
    )

    return h


# --------------------------------------------------------------------------
# Spam
# --------------------------------------------------------------------------

OE = ("X-Mailer", "Microsoft Outlook Express 6.00.2900.5512")
THE_BAT = ("X-Mailer", "The Bat! (v3.62.14) Professional")
PHPMAIL = ("X-Mailer", "PHPMailer 6.8.0")
BULKMAIL = ("X-Mailer", "Mass Mail Pro 7.1")

POISON = (
    "harbour kettle lantern meadow orbit pebble quiver ribbon saddle thimble "
    "umbrella velvet walnut yonder zephyr almond bramble cobalt dapple ember "
    "fennel gravel hollow inkwell juniper kestrel lichen marigold nutmeg "
    "oyster parsnip quartz rhubarb sorrel tundra"
)


def spam_messages() -> list[Mail]:
    """Return the unsolicited messages of the corpus."""
    s: list[Mail] = []

    s.append(
        Mail(
            "spam",
            "2023-09-04 03:17:22 +0300",
            addr("RX Direct", "sales@rx-discount.test"),
            "robin@example.com",
            "Discreet online pharmacy - no prescription needed",
            html_alt("""\
<html><body bgcolor="#ffffff">
<table width="520" border="0"><tr><td align="center">
<font face="Arial" size="5" color="#006600"><b>RX DIRECT ONLINE PHARMACY</b></font><br>
<font face="Arial" size="3">Top quality generics &bull; Discreet packaging &bull;
No prescription</font></td></tr>
<tr><td><font face="Arial" size="2">
<b>S1ldenafil 100mg</b> &nbsp; from $0.89 per pill<br>
<b>T@dalafil 20mg</b> &nbsp; from $1.15 per pill<br>
<b>Men's health pack</b> &nbsp; 30 + 10 FREE pills<br><br>
&#10004; Worldwide shipping in 7-14 days<br>
&#10004; 100% satisfaction or your money back<br>
&#10004; We accept all major cards
</font></td></tr>
<tr><td align="center"><a href="https://rx-discount.test/shop/?ref=k83"><font face="Arial"
size="4" color="#cc0000"><b>ORDER NOW AND SAVE 80%</b></font></a></td></tr>
</table></body></html>
"""),
            client=("user-pc", "203.0.113.77"),
            mailer=OE,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-09-09 14:02:11 -0500",
            addr("Daniel", "daniel.k@mailbox.example.net"),
            "robin@example.com",
            "Re: your order",
            Text("""\
hi,

men's health products at 80% off, shipped from our partner pharmacy.
no doctor visit, no questions, no waiting room.

http://meds-now.test/?id=robin

sorry for the late reply
d.
"""),
            client=("DESKTOP-4KQ1T9", "198.51.100.233"),
            client_rdns="unknown",
            hops=(Hop("relay-04.mailbox.example.net", "198.51.100.234", "exim"),),
            envelope="bounce-7731@meds-now.test",
            mailer=THE_BAT,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-09-12 01:44:09 +0000",
            addr("Health Outlet", "noreply@health-outlet.test"),
            "robin@example.com",
            "Top-rated online drugstore - up to 85% off",
            Text(
                """\
<html><body>
<div style="font-family:Tahoma;font-size:14px;width:500px">
<p><b>Dear Customer,</b></p>
<p>Why pay full price at your local chemist? Our licensed online drugstore
sells the same generic medicines for a fraction of the cost.</p>
<ul>
<li>Pain relief, sleep aids, weight control</li>
<li>Anti-anxiety and mood support</li>
<li>Men's and women's health</li>
</ul>
<p style="color:red"><b>This week only: extra 15% off plus free express delivery on
orders over $99!</b></p>
<p><a href="https://health-outlet.test/catalog?c=9921">Browse the full catalogue &gt;&gt;</a></p>
<p style="font-size:10px;color:#999">You received this message because you are
registered with one of our partners. To be removed reply with REMOVE.</p>
</div></body></html>
""",
                "html",
                "utf-8",
                "base64",
            ),
            client=("mail.health-outlet.test", "203.0.113.201"),
            client_rdns="mail.health-outlet.test",
            subject_enc="utf-8:B",
            mailer=PHPMAIL,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-09-15 09:30:00 -0700",
            addr("Approval Desk", "approvals@fastfund-loans.test"),
            "robin@example.com",
            "Robin, you are pre-approved for $25,000",
            html_alt("""\
<html><body style="font-family:Arial">
<table width="600" cellpadding="10" style="border:2px solid #2a6">
<tr><td style="background:#2a6;color:#fff;font-size:22px"><b>FastFund Personal Loans</b></td></tr>
<tr><td>
<p>Congratulations! Based on a soft check, you have been <b>PRE-APPROVED</b> for a
personal loan of up to <b>$25,000</b>.</p>
<p>&bull; No credit check required<br>&bull; Money in your account within 24 hours<br>
&bull; Low fixed monthly payments<br>&bull; Bad credit OK</p>
<p align="center"><a href="https://fastfund-loans.test/claim?uid=55120"
style="background:#f90;color:#000;padding:14px 30px;font-size:18px">CLAIM MY FUNDS</a></p>
<p style="font-size:10px">Offer expires in 48 hours. APR from 4.9% to 35.99%.
This is an advertisement. Unsubscribe <a href="https://fastfund-loans.test/u">here</a>.</p>
</td></tr></table></body></html>
"""),
            client=("vps-2231", "198.51.100.250"),
            client_rdns="unknown",
            mailer=PHPMAIL,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-09-18 11:08:47 +0100",
            addr("Debt Relief Advisors", "help@clearyourdebt.test"),
            "robin@example.com",
            "Cut your monthly debt payments in half",
            Text("""\
Struggling with credit card bills?

You may qualify for our government-backed debt consolidation programme.
Combine all your debts into ONE low monthly payment and stop the calls
from collectors today.

  - Reduce what you owe by up to 60%
  - One payment, one low rate
  - No upfront fees
  - Approval in minutes, even with bad credit

Find out in 60 seconds if you qualify:
http://clearyourdebt.test/check?src=em4

Act now: places on the programme are limited each month.

--
To stop receiving these messages visit http://clearyourdebt.test/optout
"""),
            client=("mx.clearyourdebt.test", "203.0.113.203"),
            client_rdns="mx.clearyourdebt.test",
            mailer=BULKMAIL,
            flags="",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-09-21 22:13:58 +0000",
            addr("Cash Express", "info@cash-express.test"),
            "robin@example.com",
            "Need $500 before payday? Get it TODAY",
            Text(
                """\
<html><body><center>
<font size="6" color="#003399" face="Verdana"><b>Need cash fast?</b></font><br><br>
<font size="4" face="Verdana">Get <b>$100 - $1,500</b> deposited directly into your
bank account <u>today</u>.</font><br><br>
<font size="3" face="Verdana">&#9733; No credit check &#9733; Instant decision &#9733;
Use it for anything &#9733;</font><br><br>
<a href="http://cash-express.test/apply?a=8812"><font size="5" color="#ff0000">
<b>&gt;&gt; APPLY IN 2 MINUTES &lt;&lt;</b></font></a><br><br>
<font size="1" color="#888888">Representative example: borrow $400 for 30 days,
repay $520. Late payment can cause serious money problems.</font>
</center></body></html>
""",
                "html",
                "iso-8859-1",
                "quoted-printable",
            ),
            client=("localhost", "203.0.113.99"),
            client_rdns="unknown",
            mailer=OE,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-09-25 06:41:12 +0200",
            addr("International Lottery Board", "claims@intl-lotto.test"),
            "undisclosed-recipients:;",
            "Congratulations! Your email address has won EUR 850,000",
            Text("""\
INTERNATIONAL E-MAIL LOTTERY PROMOTION
Ref: ILB/2023/0917/EU   Batch: 44/0012/MPL

Dear Winner,

We are pleased to inform you that your e-mail address was selected in
our annual computer ballot, held on 15 September 2023, from over
20,000,000 addresses worldwide. You have therefore been approved for a
lump sum payout of EUR 850,000.00 (Eight Hundred and Fifty Thousand
Euros).

To begin the claim of your prize, contact our claims agent with the
following details:

1. Full name
2. Address and country
3. Telephone number
4. Occupation
5. Ticket number (printed above)

Claims agent: Mr. Peter van Dijk
E-mail: claims.agent@lotto-payout.invalid

Keep this notification confidential until your claim has been processed,
to avoid double claiming and abuse of the programme.

Congratulations once again!

Mrs. Ingrid Mol
Lottery Coordinator
"""),
            client=("[198.51.100.251]", "198.51.100.251"),
            client_rdns="unknown",
            hops=(Hop("webmail.freemail.example.net", "198.51.100.5", "webmail"),),
            envelope="ingrid.mol2023@freemail.example.net",
            extra=(("Reply-To", "claims.agent@lotto-payout.invalid"),),
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-09-28 02:05:33 +0100",
            addr("Barrister Edward Lomax", "e.lomax.chambers@freemail.example.net"),
            "robin@example.com",
            "URGENT: next of kin",
            Text("""\
From the desk of Barrister Edward Lomax, Esq.
Lomax & Partners, Solicitors and Advocates

Dear Friend,

I am the personal attorney to the late Engr. Thomas Alder, a contractor
who lost his life together with his wife and only daughter in a road
accident three years ago. Since then I have made several enquiries to
locate any of my late client's relatives, without success.

My client left a deposit of US$7,500,000.00 (Seven Million Five Hundred
Thousand US Dollars) with a finance house here. The bank has issued me
a notice to provide the next of kin, or the account will be confiscated.

Since you share the same surname, I am contacting you to present you as
the next of kin so that the proceeds can be paid to you. We will share
the money 50/50 and I guarantee this will be executed under a
legitimate arrangement that will protect you from any breach of law.

Please reply with your full name, telephone number and address so that
we can proceed. Treat this as strictly confidential.

Yours faithfully,
Barrister Edward Lomax
"""),
            client=("[203.0.113.214]", "203.0.113.214"),
            hops=(Hop("webmail.freemail.example.net", "198.51.100.5", "webmail"),),
            extra=(("Reply-To", "edward.lomax@lomax-chambers.invalid"),),
            new=True,
            flags="",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-10-01 13:29:51 +0000",
            addr("Mrs. Helen Carter", "helencarter1948@freemail.example.net"),
            "robin@example.com",
            "Please I need your assistance",
            Text("""\
Dear Beloved,

I am Mrs. Helen Carter, a widow suffering from long-time cancer. My
doctor has told me that I may not survive the next few months. I have
no child to inherit what my late husband left behind, and I have
decided to donate the sum of $4.2 million to charity through a sincere
and God-fearing person.

I came across your email in my search and my spirit led me to contact
you. I want you to use this money for orphanages and widows, and keep
20% for yourself and your family for your effort.

Please reply me as soon as possible through my private email
helen.carter.private@charity-trust.invalid so I can give you more
details and the contact of the bank.

Remain blessed,
Mrs. Helen Carter
"""),
            client=("[203.0.113.219]", "203.0.113.219"),
            hops=(Hop("webmail.freemail.example.net", "198.51.100.5", "webmail"),),
            extra=(("Reply-To", "helen.carter.private@charity-trust.invalid"),),
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-10-05 08:55:10 +0000",
            addr("Dr. Victor Hale", "v.hale@freemail.example.net"),
            "robin@example.com",
            "Strictly confidential business proposal",
            Text("""\
Good day,

I am Dr. Victor Hale, the head of audit at a private investment bank.
In the course of our last audit I discovered a dormant account with a
balance of USD 12,400,000.00 belonging to a foreign customer who died
without a will.

I need a trustworthy foreign partner to stand as the beneficiary so the
funds can be released. All the legal documents will be handled by me
from this end. You will receive 40% of the total sum for your
assistance, 55% will be for me, and 5% for expenses.

This transaction is 100% risk free. If you are interested, send me your
full names, direct phone number and occupation, and I will give you the
full details.

Regards,
Dr. Victor Hale
"""),
            client=("[198.51.100.248]", "198.51.100.248"),
            hops=(Hop("webmail.freemail.example.net", "198.51.100.5", "webmail"),),
            extra=(("Reply-To", "victor.hale.audit@private-bank.invalid"),),
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-10-07 04:12:36 +0000",
            addr("Examplebank Security", "security@examplebank-alerts.test"),
            "robin@example.com",
            "Unusual sign-in activity on your account",
            html_alt("""\
<html><body style="font-family:Segoe UI,Arial;color:#333">
<div style="max-width:600px;border:1px solid #ccc">
<div style="background:#00338d;padding:14px;color:#fff;font-size:20px">Examplebank</div>
<div style="padding:18px">
<p>Dear Customer,</p>
<p>We detected an unusual sign-in attempt to your online banking account from an
unrecognised device. As a precaution, we have temporarily limited access to your
account.</p>
<p>To restore full access, please verify your identity within <b>24 hours</b>.
If you do not verify, your account will be suspended.</p>
<p style="text-align:center"><a href="http://203.0.113.47/examplebank/login.php?session=8f2a1c"
style="background:#00338d;color:#fff;padding:10px 26px;text-decoration:none">
https://secure.examplebank.example.com/verify</a></p>
<p>Thank you for helping us keep your account safe.</p>
<p>Examplebank Online Security Team</p>
</div>
<div style="font-size:10px;color:#888;padding:10px">Please do not reply to this
automated message. &copy; 2023 Examplebank. All rights reserved.</div>
</div></body></html>
"""),
            client=("mail.examplebank-alerts.test", "203.0.113.47"),
            client_rdns="mail.examplebank-alerts.test",
            mailer=PHPMAIL,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-10-10 10:10:10 +0000",
            addr("Mail Administrator", "admin@example.com"),
            "robin@example.com",
            "Your mailbox is 98% full - action required",
            Text(
                """\
<html><body style="font-family:Arial">
<p>Dear robin@example.com,</p>
<p>Your mailbox has reached <b>98%</b> of its storage limit (4.9 GB / 5 GB).
New messages may be rejected and some messages may be lost.</p>
<p>Upgrade your quota for free by confirming your account details below:</p>
<p><a href="http://198.51.100.203/webmail/upgrade/?u=robin@example.com">
UPGRADE MAILBOX</a></p>
<p>If you fail to upgrade within 48 hours your account will be deactivated.</p>
<p>Regards,<br>Webmail Support Team<br>example.com</p>
</body></html>
""",
                "html",
                "us-ascii",
                "7bit",
            ),
            client=("[198.51.100.203]", "198.51.100.203"),
            client_rdns="unknown",
            envelope="nobody@host-203.example.net",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-10-13 19:45:00 +0000",
            addr("Streamly", "billing@streamly-account.test"),
            "robin@example.com",
            "Action required: your payment was declined",
            html_alt("""\
<html><body style="background:#141414;font-family:Helvetica;color:#fff">
<div style="max-width:560px;margin:auto;padding:24px">
<div style="color:#e50914;font-size:32px;font-weight:bold">STREAMLY</div>
<h2>We couldn't process your payment</h2>
<p>Hi,</p>
<p>We were unable to charge your card for your Streamly Premium membership.
Your account is on hold and your profiles will be deleted in 3 days unless
you update your billing information.</p>
<p><a href="https://streamly-account.test/billing/update?id=a7712"
style="display:inline-block;background:#e50914;color:#fff;padding:12px 28px">
UPDATE PAYMENT</a></p>
<p>We're here to help if you need it.<br>The Streamly Team</p>
</div></body></html>
"""),
            client=("[203.0.113.236]", "203.0.113.236"),
            client_rdns="unknown",
            hops=(Hop("smtp-relay.cheaphost.example.net", "198.51.100.222", "exim"),),
            envelope="www-data@cheaphost.example.net",
            mailer=PHPMAIL,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-10-16 07:28:41 +0000",
            addr("National Revenue Service", "refunds@revenue-service.test"),
            "robin@example.com",
            "Tax refund notification - 412.50 GBP",
            Text("""\
NATIONAL REVENUE SERVICE
Tax Refund Notification

After the last annual calculation of your fiscal activity we have
determined that you are eligible to receive a tax refund of 412.50 GBP.

Please submit the tax refund request and allow us 3-5 working days to
process it. A refund can be delayed for a variety of reasons, for
example submitting invalid records or applying after the deadline.

To access the form for your tax refund, click here:
http://revenue-service.test/refund/claim.php?ref=NRS-88120

Note: for security reasons, we will record your IP address and date.
Deliberately wrong inputs are criminally pursued and indicted.

Regards,
National Revenue Service
"""),
            client=("[198.51.100.249]", "198.51.100.249"),
            client_rdns="unknown",
            envelope="apache@vps-991.example.net",
            msgid=None,
        )
    )

    fake_login = crlf("""\
<html><head><title>Secure Document Viewer</title></head>
<body style="font-family:Arial;background:#f3f3f3">
<div style="width:360px;margin:80px auto;background:#fff;padding:24px">
<h3>View your invoice</h3>
<p>This document is protected. Sign in with your email account to view it.</p>
<form action="http://198.51.100.204/doc/collect.php" method="post">
<input name="email" value="robin@example.com"><br>
<input name="password" type="password" placeholder="Email password"><br>
<button type="submit">View document</button>
</form>
</div></body></html>
""")
    s.append(
        Mail(
            "spam",
            "2023-10-19 15:04:27 +0000",
            addr("Accounts Payable", "accounts@invoices-portal.test"),
            "robin@example.com",
            "Invoice #8841 overdue - please review attached",
            Multi(
                "mixed",
                (
                    Text("""\
Hello,

Please find attached invoice #8841 for services rendered, which is now
14 days overdue. Kindly review the document and arrange payment at your
earliest convenience to avoid late charges.

Open the attachment in your browser to view it.

Best regards,
Accounts Payable
"""),
                    Blob("application/octet-stream", fake_login.encode(), "Invoice_8841.html"),
                ),
            ),
            client=("WIN-7Q2RM3", "203.0.113.244"),
            client_rdns="unknown",
            mailer=OE,
        )
    )

    parcel = """\
<html><body style="font-family:Arial">
<div style="max-width:520px;border-top:5px solid #ffcc00;padding:16px">
<h3>Your parcel is waiting</h3>
<p>Dear customer,</p>
<p>We tried to deliver your parcel today but nobody was available to sign for
it, and an unpaid customs fee of <b>1.99 GBP</b> is outstanding.</p>
<p>Tracking number: <b>PX-7720-1913-GB</b></p>
<p>Please pay the fee and choose a new delivery date within 48 hours, or your
parcel will be returned to the sender.</p>
<p><a href="https://parcel-redelivery.test/pay?t=PX77201913">Reschedule delivery</a></p>
<p>Thank you,<br>Delivery Services</p>
</div></body></html>
"""
    s.append(
        Mail(
            "spam",
            "2023-10-22 09:17:05 +0000",
            addr("Delivery Services", "no-reply@parcel-redelivery.test"),
            "robin@example.com",
            "Your package could not be delivered",
            html_alt(parcel),
            client=("ip-203-0-113-52", "203.0.113.52"),
            client_rdns="unknown",
            mailer=PHPMAIL,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-10-25 17:40:00 -0400",
            addr("Jason from QuantEdge", "jason@quantedge-ai.test"),
            "robin@example.com",
            "Turn $250 into $10,000 with our AI trading bot",
            Text("""\
Hi there,

What if you could let artificial intelligence trade for you while you
sleep?

Our QuantEdge AI bot analyses thousands of crypto and forex signals
every second and places winning trades automatically. Our members made
an average of 312% last quarter.

* Start with only $250
* Withdraw your profits any time
* No experience needed - the bot does everything
* Featured in major financial news

Spots are limited to 50 new members per day to protect performance.

Claim your spot: https://quantedge-ai.test/join?r=em22

To your success,
Jason Miller
Senior Account Manager

Trading involves risk. Past performance is not a guarantee of future
results.
"""),
            client=("sender-04.quantedge-ai.test", "198.51.100.241"),
            client_rdns="sender-04.quantedge-ai.test",
            mailer=BULKMAIL,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-10-28 12:00:00 +0000",
            addr("NEXA Token", "presale@nexa-token.test"),
            "robin@example.com",
            "\U0001f680 NEXA presale is LIVE - early buyers get 50x",
            Text(
                """\
<html><body style="background:#0d0221;color:#fff;font-family:Verdana">
<div style="text-align:center;padding:30px">
<h1 style="color:#00ffd5">NEXA PRESALE IS LIVE</h1>
<p style="font-size:18px">The next 100x gem is here. Get in before the exchange listing!</p>
<p>&#9989; Stage 1 price: $0.0021<br>&#9989; Listing price: $0.10<br>
&#9989; Audited smart contract<br>&#9989; Staking rewards up to 340% APY</p>
<p><a href="https://nexa-token.test/presale?ref=whale7" style="color:#0d0221;
background:#00ffd5;padding:14px 40px;font-size:20px">BUY NEXA NOW</a></p>
<p style="font-size:11px;color:#aaa">Stage 1 ends when 80% of tokens are sold.
Do not miss out!</p>
</div></body></html>
""",
                "html",
                "utf-8",
                "quoted-printable",
            ),
            client=("mta2.nexa-token.test", "203.0.113.240"),
            client_rdns="mta2.nexa-token.test",
            subject_enc="utf-8:B",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-11-01 20:22:31 +0000",
            addr("Crypto Recovery Experts", "cases@recover-funds.test"),
            "robin@example.com",
            "Lost money to a crypto scam? We can get it back",
            Text("""\
Have you lost money to a fake investment platform, a romance scammer or
a crypto exchange that suddenly disappeared?

Our team of certified blockchain investigators has recovered over $48
million for victims worldwide. Using advanced tracing tools, we follow
your funds across wallets and work with partners to freeze and return
them.

- Free case evaluation
- 97% success rate
- Pay only after recovery

Don't let the scammers win. Reply to this email with the amount lost and
the name of the platform and an investigator will contact you today.

Crypto Recovery Experts
"""),
            client=("[198.51.100.244]", "198.51.100.244"),
            hops=(Hop("out.bulkrelay.example.net", "198.51.100.245", "postfix"),),
            envelope="cases-bounces@bulkrelay.example.net",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-11-04 05:51:20 +0530",
            addr("Rahul | SEO Expert", "rahul.seo.expert@freemail.example.net"),
            "webmaster@example.com",
            "Get example.com on page 1 of search results",
            Text("""\
Hi Webmaster,

I was checking your website example.com and noticed it is not ranking
on the first page for many important keywords in your industry. This
means you are losing customers to your competitors every day.

We are a team of 40+ SEO professionals with 10 years of experience. We
can help you with:

1. On-page optimisation
2. High quality backlinks from high DA sites
3. Local listing and map ranking
4. Content writing and social media

We guarantee first page ranking within 90 days or your money back, at a
very affordable price.

If you are interested, reply to this email and I will send you a free
website audit report and our package details.

Thanks & Regards,
Rahul
SEO Consultant

P.S. If you are not interested, reply "NO" and I will not contact you
again.
"""),
            client=("[203.0.113.209]", "203.0.113.209"),
            hops=(Hop("webmail.freemail.example.net", "198.51.100.5", "webmail"),),
            rcpt="webmaster@example.com",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-11-07 11:11:11 +0000",
            addr("Linkbuilder Pro", "offers@linkbuilder-pro.test"),
            "robin@example.com",
            "500 permanent backlinks for $49 - limited offer",
            Text("""\
Hello,

Boost your Google ranking with 500 PERMANENT do-follow backlinks from
high authority blogs, forums and news sites.

PACKAGE         LINKS   PRICE
Starter          100    $19
Business         500    $49   <-- most popular
Agency          2000    $149

All links are manual, white hat and safe. Detailed report included.
Delivery in 5 days.

Order: https://linkbuilder-pro.test/order?pkg=business

Unsubscribe: https://linkbuilder-pro.test/remove
"""),
            client=("mailer.linkbuilder-pro.test", "198.51.100.246"),
            client_rdns="mailer.linkbuilder-pro.test",
            mailer=BULKMAIL,
            flags="",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-11-10 16:20:44 +0000",
            addr("Megan Cole", "megan.cole@brightweb-studio.test"),
            "robin@example.com",
            "Re: Website redesign quote",
            Text("""\
Hi,

Just following up on my previous email about your website. I haven't
heard back, so I wanted to make sure it didn't get lost in your inbox.

We're a small design studio and we'd love to give your site a modern,
mobile-friendly look. Right now your site loads slowly on phones, which
hurts both visitors and rankings.

We're offering a complete redesign this month for $499 (normally
$1,999), including hosting for one year.

Would you be open to a quick 10-minute call this week?

Best,
Megan Cole
Business Development, BrightWeb Studio

> Hi, I came across your website and had a few ideas to improve it...
"""),
            client=("DESKTOP-MEGAN", "203.0.113.221"),
            client_rdns="unknown",
            hops=(Hop("smtp.brightweb-studio.test", "203.0.113.222", "sub"),),
            extra=(("In-Reply-To", "<fake-thread-0018@brightweb-studio.test>"),),
            mailer=OUTLOOK,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-11-13 02:33:19 +0800",
            addr("Luxury Watches", "vip@swiss-time-outlet.test"),
            "robin@example.com",
            "Swiss-style luxury watches at 90% off",
            html_alt("""\
<html><body style="font-family:Georgia;background:#000;color:#d4af37">
<center>
<h1 style="letter-spacing:4px">PRESTIGE TIME</h1>
<p style="font-size:16px">Luxury replica watches indistinguishable from the originals.<br>
Swiss movement &bull; Sapphire crystal &bull; Same weight, same feel.</p>
<table cellpadding="12"><tr>
<td align="center">Submariner-style diver<br><b>$189</b> <s>$9,500</s></td>
<td align="center">Daytona-style chronograph<br><b>$229</b> <s>$14,000</s></td>
<td align="center">Royal Oak-style steel<br><b>$249</b> <s>$22,000</s></td>
</tr></table>
<p><a href="http://swiss-time-outlet.test/?c=gold" style="color:#fff">
VISIT OUR STORE - FREE SHIPPING WORLDWIDE</a></p>
<p style="font-size:10px;color:#777">Impress your friends. Nobody will know.</p>
</center></body></html>
"""),
            client=("unknown", "203.0.113.228"),
            client_rdns="unknown",
            mailer=THE_BAT,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-11-16 23:59:01 +0800",
            addr("Bags & Watches Outlet", "sales@designer-outlet.test"),
            "robin@example.com",
            "Designer handbags and watches - winter clearance",
            Text(
                """\
<html><body>
<table width="600" align="center" style="font-family:Arial">
<tr><td align="center" style="font-size:28px;color:#8b0000">WINTER CLEARANCE</td></tr>
<tr><td align="center">Top brand handbags, wallets &amp; watches &ndash; AAA quality<br>
<b>Up to 85% OFF</b> &ndash; buy 2 get 1 free</td></tr>
<tr><td align="center"><a href="http://designer-outlet.test/sale"><img
src="http://designer-outlet.test/img/winter-banner.jpg" width="600" height="300"
alt="Shop the sale" border="0"></a></td></tr>
<tr><td align="center" style="font-size:10px;color:#999">If you no longer wish to
receive our offers, <a href="http://designer-outlet.test/unsub">click here</a>.</td></tr>
</table></body></html>
""",
                "html",
                "us-ascii",
                "quoted-printable",
            ),
            client=("[198.51.100.247]", "198.51.100.247"),
            client_rdns="unknown",
            hops=(Hop("smtp-relay.cheaphost.example.net", "198.51.100.222", "exim"),),
            envelope="www-data@cheaphost.example.net",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-11-19 21:04:52 +0000",
            addr("Anna", "anna.27@meet-singles.test"),
            "robin@example.com",
            "Anna (27) sent you a private message",
            html_alt("""\
<html><body style="font-family:Arial;background:#fde8ef">
<div style="max-width:480px;margin:auto;background:#fff;padding:20px;border-radius:8px">
<p style="color:#d6336c;font-size:20px"><b>You have 1 new message!</b></p>
<p><b>Anna, 27</b> &ndash; 3 km away &ndash; online now</p>
<p style="font-style:italic">"Hi! I saw your profile and I think we have a lot in common.
I'm new in town and looking for someone to show me around... Write me back? ;)"</p>
<p><a href="https://meet-singles.test/inbox?m=88213" style="background:#d6336c;color:#fff;
padding:10px 24px">READ MESSAGE</a></p>
<p style="font-size:10px;color:#999">Membership is free. You received this because
someone near you viewed your profile.</p>
</div></body></html>
"""),
            client=("mta-3.meet-singles.test", "203.0.113.231"),
            client_rdns="mta-3.meet-singles.test",
            new=True,
            flags="",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-11-22 18:18:18 +0000",
            addr("Local Matches", "matches@lovenearby.test"),
            "robin@example.com",
            "12 singles near you want to meet this weekend",
            Text("""\
Hello,

12 singles in your area looked at your profile this week!

Don't keep them waiting. Our members are real people looking for real
connections - dates, friendship or something more.

- Free sign up in 30 seconds
- Verified profiles
- Chat now, meet this weekend

See who's interested: http://lovenearby.test/who?id=7c41

You're receiving this because you or someone using your email joined
one of our partner sites. Remove: http://lovenearby.test/r
"""),
            client=("[198.51.100.252]", "198.51.100.252"),
            client_rdns="unknown",
            hops=(Hop("out.bulkrelay.example.net", "198.51.100.245", "postfix"),),
            envelope="lovenearby-bounce@bulkrelay.example.net",
            mailer=BULKMAIL,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-11-25 04:04:04 +0000",
            addr("Special Offer", "offer@bestdeal-today.test"),
            "robin@example.com",
            "for you",
            Text(
                """\
<html><body>
<a href="http://bestdeal-today.test/c/9981"><img
src="http://img.bestdeal-today.test/promo/9981.gif" width="550" height="400"
border="0"></a>
<br><font size="1" color="#ffffff">If you cannot see the images click here</font>
</body></html>
""",
                "html",
                "us-ascii",
                "7bit",
            ),
            client=("[203.0.113.248]", "203.0.113.248"),
            client_rdns="unknown",
            mailer=OE,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-11-28 07:52:30 +0000",
            addr("Shop Alerts", "alerts@megasale.test"),
            "robin@example.com",
            "Your exclusive coupon inside",
            Multi(
                "related",
                (
                    Text(
                        """\
<html><body>
<center><a href="http://megasale.test/coupon?k=77"><img src="cid:banner77@megasale.test"
width="32" height="24" border="0" alt=""></a><br>
<font size="1">Click the picture to claim</font></center>
</body></html>
""",
                        "html",
                        "us-ascii",
                        "7bit",
                    ),
                    Blob("image/png", png(32, 24, "megasale"), "banner.png", "banner77@megasale.test", "inline"),
                ),
                params=(("type", "text/html"),),
            ),
            client=("ADMIN-PC", "198.51.100.253"),
            client_rdns="unknown",
            mailer=OE,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-12-01 10:47:15 +0000",
            addr("Karla Dunn", "karla.dunn@mailbox.example.net"),
            "robin@example.com",
            "hey you",
            Text(
                f"""\
<html><body>
<p><a href="http://xpress-offers.test/r/71"><img src="http://xpress-offers.test/i/71.jpg"
width="600" height="450" border="0"></a></p>
<p style="color:#ffffff;font-size:2px">{POISON}</p>
</body></html>
""",
                "html",
                "us-ascii",
                "7bit",
            ),
            client=("karla-pc", "203.0.113.249"),
            client_rdns="unknown",
            hops=(Hop("relay-04.mailbox.example.net", "198.51.100.234", "exim"),),
            envelope="karla.dunn@mailbox.example.net",
            new=True,
            flags="",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-12-04 14:25:39 +0100",
            addr("Kreditservice Plus", "info@kreditservice-plus.test"),
            "robin@example.com",
            "Kredit ohne Bonitätsprüfung - Sofortzusage!",
            Text(
                """\
Sehr geehrte Damen und Herren,

Sie brauchen schnell Geld? Mit unserem Sofortkredit erhalten Sie bis zu
10.000 Euro – ganz ohne Bonitätsprüfung und ohne lästigen Papierkram.

✔ Sofortzusage in wenigen Minuten
✔ Auszahlung innerhalb von 24 Stunden
✔ Auch für Selbstständige, Rentner und Arbeitslose
✔ Flexible Rückzahlung ab 49 € im Monat

Jetzt kostenlos und unverbindlich anfragen:
https://kreditservice-plus.test/antrag?id=de44

Mit freundlichen Grüßen
Ihr Kreditservice-Plus-Team

Wenn Sie keine weiteren E-Mails wünschen, klicken Sie hier:
https://kreditservice-plus.test/abmelden
""",
                charset="utf-8",
                cte="quoted-printable",
            ),
            client=("[198.51.100.238]", "198.51.100.238"),
            client_rdns="unknown",
            subject_enc="iso-8859-1:Q",
            mailer=BULKMAIL,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-12-07 09:00:13 +0100",
            addr("Service Clients", "jeux@grand-gagnant.test", "iso-8859-1:Q"),
            "robin@example.com",
            "Félicitations, vous êtes notre grand gagnant !",
            Text(
                """\
Bonjour,

Félicitations ! Votre adresse e-mail a été tirée au sort parmi des
milliers de participants : vous avez gagné un smartphone dernier modèle
d'une valeur de 1 299 € !

Pour recevoir votre cadeau, il vous suffit de confirmer vos coordonnées
et de régler les frais de livraison de 1,95 € seulement.

Attention : vous n'avez que 48 heures pour réclamer votre lot, après
quoi il sera attribué à un autre participant.

Réclamer mon cadeau : http://grand-gagnant.test/confirmer?ref=FR221

Cordialement,
Le service clients
""",
                charset="iso-8859-15",
                cte="quoted-printable",
            ),
            client=("[203.0.113.250]", "203.0.113.250"),
            client_rdns="unknown",
            subject_enc="iso-8859-1:Q",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-12-10 16:30:00 +0100",
            addr("Lotería Internacional", "premios@loteria-mundial.test"),
            "robin@example.com",
            "Notificación oficial de premio – Ref. LM/2023/7781",
            Text(
                """\
Estimado/a ganador/a:

Nos complace informarle de que su dirección de correo electrónico ha
resultado premiada en nuestro sorteo internacional celebrado el 1 de
diciembre de 2023. Le corresponde un premio de 615.000,00 € (seiscientos
quince mil euros).

Para iniciar el cobro de su premio, póngase en contacto con nuestro
agente de pagos y envíe los siguientes datos: nombre completo,
dirección, número de teléfono y copia de su documento de identidad.

Agente: Sr. Carlos Medina
Correo: pagos.medina@loteria-pagos.invalid

Le rogamos mantenga esta información en estricta confidencialidad hasta
que se realice el pago.

Atentamente,
Dña. Lucía Ferrer
Directora de Premios
""",
                charset="utf-8",
                cte="base64",
            ),
            client=("[198.51.100.239]", "198.51.100.239"),
            hops=(Hop("webmail.freemail.example.net", "198.51.100.5", "webmail"),),
            envelope="lucia.ferrer.premios@freemail.example.net",
            extra=(("Reply-To", "pagos.medina@loteria-pagos.invalid"),),
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-12-12 03:14:07 +0300",
            addr("Рассылка", "baza@rassylka.test", "koi8-r:B"),
            "robin@example.com",
            "Рассылка по базам e-mail - клиенты уже завтра",
            Text(
                """\
Здравствуйте!

Предлагаем услуги по рассылке вашей рекламы по электронной почте.

Базы адресов по всем регионам и отраслям: более 5 000 000 адресов.
Ваше предложение увидят тысячи потенциальных клиентов уже завтра.

Стоимость рассылки от 2 000 рублей. Скидка 20% на первый заказ.
Гарантия доставки, подробный отчет после каждой рассылки.

Звоните или пишите прямо сейчас: http://rassylka.test/zakaz

Если вы получили это письмо по ошибке, просто удалите его.
""",
                charset="koi8-r",
                cte="base64",
            ),
            client=("[203.0.113.251]", "203.0.113.251"),
            client_rdns="unknown",
            subject_enc="koi8-r:B",
            mailer=THE_BAT,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-12-15 11:05:45 +0300",
            addr("Учебный центр", "seminar@uchebny-centr.test"),
            "robin@example.com",
            "Семинар для бухгалтеров: изменения в отчетности 2024",
            Text(
                """\
<html><body style="font-family:Arial">
<h2 style="color:#1a4d8f">Семинар: все изменения в отчетности на 2024 год</h2>
<p>Уважаемые коллеги!</p>
<p>Приглашаем главных бухгалтеров и руководителей на практический семинар.
Разберем новые формы отчетности, типичные ошибки и ответим на ваши вопросы.</p>
<ul>
<li>Дата: 25 декабря, с 10:00 до 17:00</li>
<li>Формат: онлайн или очно</li>
<li>Стоимость: 9 900 руб. (при оплате до 20 декабря – 7 500 руб.)</li>
</ul>
<p>По окончании выдается сертификат.</p>
<p><a href="http://uchebny-centr.test/seminar-2024">Записаться на семинар</a></p>
<p style="font-size:10px;color:#888">Чтобы отписаться от рассылки, ответьте на это
письмо со словом «Отписаться».</p>
</body></html>
""",
                "html",
                "utf-8",
                "quoted-printable",
            ),
            client=("mail.uchebny-centr.test", "198.51.100.236"),
            client_rdns="mail.uchebny-centr.test",
            subject_enc="utf-8:B",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-12-18 15:33:20 +0800",
            addr("王经理", "fapiao88@kaipiao.test", "gb2312:B"),
            "robin@example.com",
            "代开各地正规发票",
            Text(
                """\
您好！

本公司长期代开各地正规发票，可上网查询验证后付款。

增值税专用发票、普通发票、服务业发票、运输发票、广告发票等。
税点低，信誉好，全国快递，保证真票。

联系人：王经理
电话：请回复邮件索取

如有打扰，敬请谅解！
""",
                charset="gb2312",
                cte="base64",
            ),
            client=("[203.0.113.252]", "203.0.113.252"),
            client_rdns="unknown",
            subject_enc="gb2312:B",
            mailer=("X-Mailer", "Foxmail 6, 15, 201, 21 [cn]"),
            msgid=None,
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-12-21 22:47:09 +0900",
            addr("出会いサポート", "info@deai-support.test", "ISO-2022-JP:B"),
            "robin@example.com",
            "未承諾広告※ 今夜会える女性が近くにいます",
            Text(
                """\
未承諾広告※

こんばんは！

あなたの近くに、今夜会える女性が登録しています。
登録は無料、メールアドレスだけで今すぐ始められます。

▼プロフィールを見る
http://deai-support.test/p/5521

※このメールは送信専用です。
配信停止をご希望の方は下記よりお手続きください。
http://deai-support.test/stop
""",
                charset="ISO-2022-JP",
                cte="7bit",
            ),
            client=("[198.51.100.237]", "198.51.100.237"),
            client_rdns="unknown",
            subject_enc="ISO-2022-JP:B",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-12-24 08:12:50 +0000",
            addr("Career Opportunities", "jobs@homeincome-now.test"),
            "robin@example.com",
            "Earn $500 a day working from home - no experience",
            Text("""\
Are you tired of your 9 to 5?

Thousands of ordinary people are now earning $300-$500 per day from
home using a simple system that takes only 2 hours a day. No selling,
no experience, no special skills. All you need is a phone or a laptop.

"I made $4,270 in my first week!" - Sarah T.
"Finally I could quit my job." - Mark D.

This is NOT a get rich quick scheme. It is a proven opportunity, but
only a few places are left in your area.

Watch the free video now: https://homeincome-now.test/video?src=mail

To your financial freedom!
"""),
            client=("[203.0.113.253]", "203.0.113.253"),
            client_rdns="unknown",
            hops=(Hop("out.bulkrelay.example.net", "198.51.100.245", "postfix"),),
            envelope="homeincome-bounce@bulkrelay.example.net",
        )
    )

    s.append(
        Mail(
            "spam",
            "2023-12-28 13:13:13 +0000",
            addr("Dr. Slim", "news@slimfast-keto.test"),
            "robin@example.com",
            "Lose 12 kg in 3 weeks without dieting",
            html_alt("""\
<html><body style="font-family:Arial">
<h2>Doctors hate this simple morning trick!</h2>
<p>Melt stubborn belly fat without dieting or exercise. Our all-natural keto
capsules switch your body into fat-burning mode in just days.</p>
<p><b>Real results:</b> Linda lost 12 kg in 3 weeks. James dropped 3 sizes before
his holiday.</p>
<p><a href="https://slimfast-keto.test/offer?bottle=free">Claim your FREE trial bottle</a>
&mdash; just pay shipping.</p>
<p style="font-size:9px">These statements have not been evaluated. Results vary.</p>
</body></html>
"""),
            client=("smtp.slimfast-keto.test", "198.51.100.235"),
            client_rdns="smtp.slimfast-keto.test",
            mailer=PHPMAIL,
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-01-02 10:22:36 +0000",
            addr("Billing Department", "billing@secure-invoicing.test"),
            "robin@example.com",
            "Your order #AMX-771023 has been processed",
            Text("""\
Dear Customer,

Thank you for your order. Your payment of $489.99 for "Premium Device
Protection Plan (3 years)" has been processed successfully and will
appear on your statement within 24 hours.

Order number:  AMX-771023
Date:          02 Jan 2024
Amount:        $489.99

If you did NOT authorise this purchase, please call our cancellation
desk immediately on +1 555 0143 to receive a full refund. Refund
requests must be made within 24 hours.

Billing Department
"""),
            client=("[198.51.100.243]", "198.51.100.243"),
            client_rdns="unknown",
            hops=(Hop("webmail.freemail.example.net", "198.51.100.5", "webmail"),),
            envelope="billing.dept.2024@freemail.example.net",
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-01-05 17:02:44 +0000",
            addr("Customer Survey", "survey@rewards-center.test"),
            "robin@example.com",
            "You've been selected for a $100 gift card",
            html_alt("""\
<html><body style="font-family:Arial;text-align:center">
<h2>Congratulations, you've been selected!</h2>
<p>Complete our 30-second customer survey and receive a <b>$100 gift card</b>
for your favourite store.</p>
<p>Only <b>3</b> gift cards left today.</p>
<p><a href="https://rewards-center.test/survey?uid=a81">START SURVEY</a></p>
<p style="font-size:9px;color:#999">Participation requires purchase of a trial
subscription. See terms.</p>
</body></html>
"""),
            client=("[203.0.113.254]", "203.0.113.254"),
            client_rdns="unknown",
            new=True,
            flags="",
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-01-08 06:48:27 +0000",
            addr("SecureShield Antivirus", "renewals@secureshield-av.test"),
            "robin@example.com",
            "Your SecureShield subscription has been renewed ($399.99)",
            Text("""\
Hello,

Your SecureShield Total Protection subscription was renewed today for
another 3 years. The amount of $399.99 will be charged to your account.

Invoice ID: SS-4419-2024
Product: Total Protection (5 devices)
Payment method: auto-debit

If you want to cancel the renewal and get a refund, call our support
team within 24 hours: +1 (555) 0187.

Thank you for choosing SecureShield.
"""),
            client=("[198.51.100.242]", "198.51.100.242"),
            client_rdns="unknown",
            hops=(Hop("webmail.freemail.example.net", "198.51.100.5", "webmail"),),
            envelope="secure.renewals44@freemail.example.net",
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-01-11 12:30:00 -0500",
            addr("Domain Registry Services", "notices@domain-registry-services.test"),
            "webmaster@example.com",
            "FINAL NOTICE: example.com domain listing expiration",
            Text("""\
DOMAIN NAME:  EXAMPLE.COM
ACTION:       Search engine submission renewal
NOTICE:       FINAL

Attn: Webmaster

Your search engine submission for example.com expires on 14 January 2024.
Failure to complete your submission by the expiration date may result in
the cancellation of this offer, making it difficult for customers to
locate your business online.

Submission includes listing on more than 200 search engines and
directories. Annual fee: $86.00

Complete your submission here:
http://domain-registry-services.test/renew?d=example.com

This notice is NOT an invoice. You are under no obligation to pay the
amount stated unless you accept this offer.
"""),
            client=("mail.domain-registry-services.test", "203.0.113.232"),
            client_rdns="mail.domain-registry-services.test",
            rcpt="webmaster@example.com",
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-01-14 21:10:59 +0000",
            addr("Market Insider Alert", "alerts@smallcap-insider.test"),
            "robin@example.com",
            "XMPL is about to explode - get in before Monday",
            Text("""\
URGENT MARKET ALERT

Company:  Example Minerals Corp.
Ticker:   XMPL
Price:    $0.14
Target:   $1.80 (short term)

Insiders are quietly buying. A major announcement is expected early
next week that could send XMPL up 1,000% or more. Our last alert
climbed 740% in five trading days.

This is your chance to get in at the bottom. Do your own research, but
do it FAST.

--
This newsletter is a paid advertisement. We may hold or sell shares of
the profiled company.
"""),
            client=("[203.0.113.233]", "203.0.113.233"),
            client_rdns="unknown",
            hops=(Hop("out.bulkrelay.example.net", "198.51.100.245", "postfix"),),
            envelope="smallcap-bounces@bulkrelay.example.net",
            mailer=BULKMAIL,
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-01-17 19:19:19 +0000",
            addr("Royal Spin Casino", "bonus@royalspin-casino.test"),
            "robin@example.com",
            "Your 200 free spins are waiting \U0001f3b0",
            html_alt(
                """\
<html><body style="background:#2b0040;color:#ffd700;font-family:Arial;text-align:center">
<h1>WELCOME BONUS</h1>
<p style="font-size:20px">100% up to $1,000 + <b>200 FREE SPINS</b></p>
<p>No wagering on your first 50 spins. Instant withdrawals.</p>
<p><a href="https://royalspin-casino.test/welcome?c=rs200" style="color:#2b0040;
background:#ffd700;padding:12px 30px">PLAY NOW</a></p>
<p style="font-size:9px;color:#bbb">18+ only. Gamble responsibly.</p>
</body></html>
""",
                cte="base64",
            ),
            client=("mx4.royalspin-casino.test", "198.51.100.254"),
            client_rdns="mx4.royalspin-casino.test",
            subject_enc="utf-8:B",
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-01-20 04:40:04 +0000",
            addr("University Diplomas", "registrar@fastdegree.test"),
            "robin@example.com",
            "Get a university degree in 2 weeks - no exams",
            Text("""\
UNIVERSITY DIPLOMAS

Obtain a prosperous future, money earning power, and the admiration of
all.

Diplomas from prestigious non-accredited universities based on your
present knowledge and life experience.

No required tests, classes, books, or interviews.

Bachelors, masters, MBA, and doctorate (PhD) diplomas available in the
field of your choice.

No one is turned down. Confidentiality assured.

Call now to receive your diploma within days: +1 555 0199
(24 hours a day, 7 days a week, including Sundays and holidays)
"""),
            client=("[198.51.100.229]", "198.51.100.229"),
            client_rdns="unknown",
            hops=(Hop("mail.fastdegree.test", "203.0.113.191", "qmail"),),
            envelope="registrar@fastdegree.test",
            msgid=None,
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-01-23 09:09:09 +0000",
            addr("Software Outlet", "store@oem-soft.test"),
            "robin@example.com",
            "Office suite 2024 for just $29 - instant download",
            Text("""\
Genuine software at OEM prices!

Office Suite 2024 Professional ..... $29 (retail $399)
Photo Editor CC 2024 ............... $49 (retail $699)
Operating System Pro 11 ............ $39 (retail $199)
PDF Studio Ultimate ................ $19 (retail $179)

- Instant download after payment
- Lifetime activation, free updates
- Works on Windows and Mac

Visit our shop: http://oem-soft.test/catalog

Offer valid while stocks last.
"""),
            client=("oem-soft", "203.0.113.234"),
            hops=(Hop("mail.oem-soft.test", "203.0.113.192", "qmail"),),
            mailer=THE_BAT,
            flags="",
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-01-26 15:00:00 +0000",
            addr("DealHub Weekly", "weekly@dealhub-offers.test"),
            "robin@example.com",
            "Robin, your exclusive subscriber deals this week",
            html_alt("""\
<html><body style="margin:0;background:#f4f4f4;font-family:Helvetica">
<table width="600" align="center" style="background:#fff">
<tr><td style="padding:16px;font-size:24px;color:#ff5a00"><b>DealHub</b> Weekly</td></tr>
<tr><td style="padding:16px">
<p>Hi Robin, here are this week's hand-picked deals for our subscribers:</p>
<p>&#128293; Wireless earbuds &ndash; <b>70% off</b><br>
&#128293; Smart watch &ndash; <b>$19.99</b> (was $129)<br>
&#128293; Robot vacuum &ndash; <b>$89</b> today only<br>
&#128293; Mystery box &ndash; worth up to $500</p>
<p><a href="https://dealhub-offers.test/week/3?u=robin">See all deals</a></p>
</td></tr>
<tr><td style="padding:12px;font-size:11px;color:#888">You are receiving this
because you signed up for DealHub Weekly.
<a href="https://dealhub-offers.test/unsubscribe?u=robin">Unsubscribe</a>.</td></tr>
</table></body></html>
"""),
            client=("send-02.dealhub-offers.test", "198.51.100.228"),
            client_rdns="send-02.dealhub-offers.test",
            extra=(
                ("List-Unsubscribe", "<https://dealhub-offers.test/unsubscribe?u=robin>"),
                ("Precedence", "bulk"),
            ),
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-01-29 03:21:58 +0000",
            addr("Editorial Office", "editor@ijaret-journal.test"),
            "robin@example.com",
            "Call for papers: publish in 7 days - International Journal (high impact)",
            Text("""\
Dear Researcher,

Greetings from the International Journal of Advanced Research in
Engineering and Technology (IJARET).

We invite you to submit your research papers for our upcoming issue.
Based on your previous publication, we believe your work would be a
great fit for our journal.

* Fast peer review: decision within 48 hours
* Publication within 7 days of acceptance
* Indexed in many international databases
* Certificate of publication for each author
* Publication fee: only USD 120

Submit your manuscript to editor@ijaret-journal.test with the subject
line "Submission - January 2024".

Kind regards,
Dr. A. Kumar
Editorial Board
"""),
            client=("[203.0.113.235]", "203.0.113.235"),
            client_rdns="unknown",
            hops=(Hop("out.bulkrelay.example.net", "198.51.100.245", "postfix"),),
            envelope="ijaret-bounces@bulkrelay.example.net",
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-02-01 12:12:12 +0000",
            addr("Carter Family Foundation", "grants@carterfoundation.test"),
            "robin@example.com",
            "A donation of $1,500,000 has been approved for you",
            Text("""\
Attention: Beneficiary,

The Carter Family Foundation has chosen you as one of five recipients
of our annual charity grant. A donation of $1,500,000.00 has been
approved in your name as part of our giving-back programme.

To receive your grant, please confirm the following to our fiduciary
agent:

Full name:
Home address:
Phone number:
Age:

Fiduciary agent: Mr. Daniel Brooks
Email: daniel.brooks.fiduciary@grant-office.invalid

Congratulations and God bless.

Mrs. Rebecca Carter
Chairperson
"""),
            client=("[198.51.100.227]", "198.51.100.227"),
            hops=(Hop("webmail.freemail.example.net", "198.51.100.5", "webmail"),),
            envelope="rebecca.carter.fdn@freemail.example.net",
            extra=(("Reply-To", "daniel.brooks.fiduciary@grant-office.invalid"),),
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-02-04 08:08:08 +0000",
            addr("Wallet Support", "support@coinvault-secure.test"),
            "robin@example.com",
            "Important: your wallet will be suspended",
            html_alt("""\
<html><body style="font-family:Arial">
<div style="max-width:520px;border:1px solid #ddd;padding:20px">
<h3 style="color:#f7931a">CoinVault</h3>
<p>Dear user,</p>
<p>Due to new regulations, all wallets must be re-verified. Our records show
that your wallet has not been verified. If you do not complete verification,
your wallet will be <b>suspended</b> and your funds frozen.</p>
<p>To verify, enter your 12 or 24 word recovery phrase on the secure page
below. This takes less than 2 minutes.</p>
<p><a href="https://coinvault-secure.test/verify-wallet">Verify my wallet</a></p>
<p>CoinVault Support</p>
</div></body></html>
"""),
            client=("[203.0.113.237]", "203.0.113.237"),
            client_rdns="unknown",
            mailer=PHPMAIL,
        )
    )

    quill = list_headers("libquill-dev", "lists.example.org", "libquill development")
    s.append(
        Mail(
            "spam",
            "2024-02-07 10:30:45 +0000",
            addr("Essay Helper", "helper.essays@freemail.example.net"),
            "libquill-dev@lists.example.org",
            "[libquill-dev] Professional academic writing and Python assignment help",
            Text(
                """\
Hello Developers,

Are you a student struggling with your Python assignments, dissertation
or thesis? Our team of expert writers and programmers can complete any
assignment on time, 100% plagiarism free, at a cheap price.

- Essays, reports, dissertations
- Python, Java and C++ homework
- Guaranteed top grades
- 24/7 support, urgent orders in 6 hours

WhatsApp or email us today for a 30% discount on your first order.

Regards,
Essay Helper Team
"""
                + mailman_footer("libquill-dev", "lists.example.org")
            ),
            client=("[198.51.100.226]", "198.51.100.226"),
            hops=(Hop("webmail.freemail.example.net", "198.51.100.5", "webmail"), LISTS_ORG),
            envelope=list_envelope("libquill-dev", "lists.example.org"),
            extra=quill,
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-02-10 01:01:40 +0000",
            addr("Meds Club", "club@pillsclub.test"),
            "robin@example.com",
            "Re: re: prescription refill",
            Text(
                """\
Forget the pharmacy queue.

Everything you need for men's health, sleep and pain relief, delivered
to your door in plain packaging. Prices cut by 75% this month. Reorders
ship free.

http://pillsclub.test/refill?m=robin

Best regards, Meds Club
""",
                charset="us-ascii",
                cte="quoted-printable",
            ),
            client=("host-198-51-100-225", "198.51.100.225"),
            client_rdns="unknown",
            extra=(("In-Reply-To", "<rx-refill-0042@pillsclub.test>"),),
            mailer=OE,
            new=True,
            flags="",
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-02-13 14:14:14 +0000",
            addr("Sofia", "sofia.lovely@freemail.example.net"),
            "robin@example.com",
            "hi, are you still single?",
            Text("""\
Hello dear,

My name is Sofia, I am 29 and I live in a small town by the sea. I
found your address on a dating website and you looked kind so I decided
to write to you. I am looking for a serious man for a relationship,
maybe marriage. I am honest and tender and I like cooking and walks
by the sea.

If you are interested, write me back and I will send you my photos.

Kisses,
Sofia
"""),
            client=("[203.0.113.238]", "203.0.113.238"),
            hops=(Hop("webmail.freemail.example.net", "198.51.100.5", "webmail"),),
            extra=(("Reply-To", "sofia29.sea@lovemail.invalid"),),
        )
    )

    s.append(
        Mail(
            "spam",
            "2024-02-16 11:42:30 +0000",
            addr("Account Services", "account-services@mail.examplebank.example.com.verify-id.test"),
            "robin@example.com",
            "Your account access has been limited",
            Text("""\
Dear valued customer,

We have noticed some unusual activity on your account and we have
limited your access to protect you. To restore your account you need to
confirm your personal details, including your card number and the
security code from your card reader.

Confirm your details now:
http://examplebank.example.com.verify-id.test/secure/login

If you do not confirm within 24 hours, your account will be permanently
closed and any remaining balance will be held for investigation.

Thank you,
Customer Account Services
"""),
            client=("[198.51.100.224]", "198.51.100.224"),
            client_rdns="unknown",
            envelope="nobody@verify-id.test",
            mailer=PHPMAIL,
        )
    )

    return s


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
UTC = dt.UTC


@dataclass(frozen=True)
class Rendered:
    """A message serialised to bytes, with its delivery metadata."""

    mail: Mail
    data: bytes
    delivered: dt.datetime
    envelope: str
    name: str

    @property
    def folder(self) -> str:
        """Return the Maildir subfolder (``cur`` or ``new``)."""
        return "new" if self.mail.new else "cur"

    @property
    def path(self) -> str:
        """Return the path relative to ``sample_corpus/``."""
        return f"maildir/{self.mail.kind}/{self.folder}/{self.name}"


def _b62(hexdigest: str, length: int) -> str:
    number = int(hexdigest, 16)
    out = []
    for _ in range(length):
        number, rem = divmod(number, 62)
        out.append(BASE62[rem])
    return "".join(out)


def _pick(key: str, salt: str, choices: int) -> int:
    return int(_hash(salt, key)[:8], 16) % choices


def _header_block(headers: list[Header]) -> bytes:
    lines = []
    for name, value in headers:
        if not value.isascii():
            msg = f"non-ASCII header {name}: {value!r}"
            raise ValueError(msg)
        for cont in value.split("\n")[1:]:
            if not cont[:1].isspace():
                msg = f"bad folding in {name}: {value!r}"
                raise ValueError(msg)
        lines.append(f"{name}: {value}\n")
    return "".join(lines).encode("ascii")


def _encode_text(text: str, charset: str, cte: str) -> bytes:
    text = text.replace("\r\n", "\n")
    if not text.endswith("\n"):
        text += "\n"
    if cte == "base64":
        return base64.encodebytes(crlf(text).encode(charset))
    raw = text.encode(charset)
    if cte == "quoted-printable":
        return quopri.encodestring(raw)
    if cte == "7bit" and not raw.isascii():
        msg = f"7bit part with 8-bit data in {charset}"
        raise ValueError(msg)
    return raw


def _boundary(key: str, path: str) -> tuple[str, bool]:
    """Return a boundary in the style of some mail client, and a preamble flag."""
    digest = _hash("boundary", key, path)
    styles = (
        ("0000000000000" + digest[:15], False),
        (
            f"----=_Part_{int(digest[:4], 16)}_{int(digest[4:12], 16)}.{int(digest[12:24], 16) % 10**13}",
            False,
        ),
        (f"_000_{digest[:24].upper()}_", True),
        (f"=-{_b62(digest, 22)}", False),
        (
            f"----=_NextPart_000_00{digest[:2].upper()}_01DA{digest[2:10].upper()}.{digest[10:18].upper()}",
            True,
        ),
    )
    return styles[_pick(key, "bstyle" + path, len(styles))]


def _disposition(kind: str, filename: str) -> Header:
    return ("Content-Disposition", f'{kind};\n\tfilename="{filename}"')


def render_part(part: Part, key: str, path: str = "0") -> tuple[list[Header], bytes]:
    """Serialise one MIME part: its Content-* headers and its encoded body."""
    if isinstance(part, Text):
        quote = _pick(key, "csq" + path, 2) == 0
        charset = f'"{part.charset}"' if quote else part.charset
        ctype = f"text/{part.subtype}; charset={charset}"
        ctype += "".join(f"; {name}={value}" for name, value in part.params)
        if part.filename:
            ctype += f';\n\tname="{part.filename}"'
        headers: list[Header] = [
            ("Content-Type", ctype),
            ("Content-Transfer-Encoding", part.cte),
        ]
        if part.filename:
            headers.append(_disposition(part.disposition, part.filename))
        return headers, _encode_text(part.body, part.charset, part.cte)
    if isinstance(part, Blob):
        ctype = part.ctype + (f';\n\tname="{part.filename}"' if part.filename else "")
        headers = [("Content-Type", ctype), ("Content-Transfer-Encoding", "base64")]
        if part.cid:
            headers.append(("Content-ID", f"<{part.cid}>"))
        if part.filename:
            headers.append(_disposition(part.disposition, part.filename))
        return headers, base64.encodebytes(part.data)
    if isinstance(part, Forward):
        inner_headers, inner_body = render_part(part.body, key, path + ".m")
        inner = _header_block([*part.headers, *inner_headers]) + b"\n" + inner_body
        headers = [("Content-Type", "message/rfc822"), ("Content-Disposition", "inline")]
        return headers, inner
    boundary, preamble = _boundary(key, path)
    params = "".join(f'; {name}="{value}"' for name, value in part.params)
    ctype = f'multipart/{part.subtype}{params};\n\tboundary="{boundary}"'
    chunks = [b"This is a multi-part message in MIME format.\n\n"] if preamble else []
    for index, sub in enumerate(part.parts):
        sub_headers, sub_body = render_part(sub, key, f"{path}.{index}")
        delimiter = f"--{boundary}\n".encode()
        chunks.append(delimiter + _header_block(sub_headers) + b"\n" + sub_body)
    chunks.append(f"--{boundary}--\n".encode())
    return [("Content-Type", ctype)], b"".join(chunks)


POSTFIX_RECEIVED = (
    "from {helo} ({rdns} [{ip}]){tls}\n\tby {host} (Postfix) with {proto} id {qid}\n\tfor <{rcpt}>; {stamp}"
)
RECEIVED_TEMPLATES = {
    "postfix": POSTFIX_RECEIVED,
    "ourmx": POSTFIX_RECEIVED,
    "sub": (
        "from {helo} ({rdns} [{ip}])\n\t(Authenticated sender: {user})\n\t"
        "by {host} (Postfix) with ESMTPSA id {qid};\n\t{stamp}"
    ),
    "exim": (
        "from {rdns} ([{ip}] helo={helo})\n\tby {host} with esmtps  (TLS1.3)"
        " tls TLS_AES_256_GCM_SHA384\n\t(Exim 4.96)\n\t(envelope-from <{env}>)\n\t"
        "id {exim_id}\n\tfor {rcpt}; {stamp}"
    ),
    "sendmail": (
        "from {helo} ({rdns} [{ip}])\n\tby {host} (8.17.1/8.17.1) with ESMTP id {sendmail_id}\n\tfor <{rcpt}>; {stamp}"
    ),
    "msft": (
        "from {helo} ({ip}) by {host}\n ({own_ip}) with Microsoft SMTP Server"
        " (version=TLS1_2,\n cipher=TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)"
        " id 15.20.7633; {stamp}"
    ),
    "webmail": "from [{ip}] by {host} with HTTP; {stamp}",
    "qmail": "from unknown (HELO {helo}) ({ip})\n  by {host} with SMTP; {stamp}",
}
TLS_NOTE = (
    "\n\t(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits)"
    "\n\t key-exchange X25519 server-signature RSA-PSS (2048 bits))"
)


def _hop_text(hop: Hop, fields: dict[str, str]) -> str:
    """Return the Received header value *hop* writes, given the peer *fields*.

    *fields* holds ``helo``, ``ip``, ``rdns`` (of the connecting peer),
    ``stamp``, ``env``, ``rcpt`` and a hex ``seed`` for the queue ids.
    """
    if hop.mta not in RECEIVED_TEMPLATES:
        msg = f"unknown MTA style {hop.mta}"
        raise ValueError(msg)
    seed = fields["seed"]
    secure = int(seed[0], 16) % 3 != 0
    values = {
        **fields,
        "host": hop.host,
        "own_ip": hop.ip,
        "qid": seed[1:11].upper(),
        "exim_id": f"{_b62(seed[:12], 6)}-{_b62(seed[12:24], 6)}-{_b62(seed[24:30], 2)}",
        "sendmail_id": f"{_b62(seed[:12], 8)}{int(seed[12:20], 16) % 1000000:06d}",
        "user": fields["env"].split("@", 1)[0] or "user",
        "proto": "ESMTPS" if secure else "ESMTP",
        "tls": TLS_NOTE if secure else "",
    }
    return RECEIVED_TEMPLATES[hop.mta].format_map(values)


def _received(mail: Mail, key: str, sent: dt.datetime, env: str) -> tuple[list[str], dt.datetime]:
    """Return Received header values (newest first) and the delivery time."""
    chain = [*mail.hops, Hop(MX_HOST, MX_IP, "ourmx")]
    helo, ip = mail.client
    rdns = mail.client_rdns
    if rdns is None:
        rdns = helo if _reserved_host(helo) and mail.kind == "ham" else "unknown"
    peer = {"helo": helo, "ip": ip, "rdns": rdns}
    when = sent
    lines = []
    for index, hop in enumerate(chain):
        seed = _hash("hop", key, index)
        when += dt.timedelta(seconds=1 + int(seed[-2:], 16) % 6)
        local = hop.mta != "ourmx"
        stamp = format_datetime(when) if local else format_datetime(when.astimezone(UTC)) + " (UTC)"
        fields = {**peer, "stamp": stamp, "seed": seed, "env": env, "rcpt": mail.rcpt}
        lines.append(_hop_text(hop, fields))
        peer = {"helo": hop.host, "ip": hop.ip, "rdns": hop.host}
    when += dt.timedelta(seconds=1)
    lmtp_id = _b62(_hash("lmtp", key), 22)
    lines.append(
        f"from {MX_HOST} ({MX_HOST} [{MX_IP}])\n\tby {STORE_HOST} with LMTP\n\t"
        f"id {lmtp_id}\n\t(envelope-from <{env}>)\n\tfor <{mail.rcpt}>;"
        f" {format_datetime(when.astimezone(UTC))}"
    )
    lines.reverse()
    return lines, when.astimezone(UTC)


def _message_id(mail: Mail, key: str, sent: dt.datetime) -> str:
    digest = _hash("mid", key)
    domain = parseaddr(mail.sender)[1].rpartition("@")[2] or "localhost"
    uid = f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
    styles = (
        f"<{_b62(digest, 20)}@{domain}>",
        f"<{sent:%Y%m%d%H%M%S}.{digest[:8]}@{domain}>",
        f"<{uid}@{domain}>",
        f"<{digest[:12].upper()}${digest[12:18]}@{mail.client[0].strip('[]')}>",
    )
    return styles[_pick(key, "mid", len(styles))]


def render(mail: Mail, key: str) -> Rendered:
    """Serialise *mail* as a delivered message, as our MX would store it."""
    sent = dt.datetime.strptime(mail.when, "%Y-%m-%d %H:%M:%S %z")
    env = parseaddr(mail.sender)[1] if mail.envelope is None else mail.envelope
    received, delivered = _received(mail, key, sent, env)
    subject = mail.subject
    if mail.subject_enc or not subject.isascii():
        subject = ew(subject, mail.subject_enc or "utf-8:B")
    trace: list[Header] = [("Return-Path", f"<{env}>"), ("Delivered-To", mail.rcpt)]
    trace += [("Received", value) for value in received]
    core: list[Header] = [
        ("From", mail.sender),
        ("To", mail.to),
        ("Subject", subject),
        ("Date", format_datetime(sent)),
    ]
    if mail.msgid is not None:
        core.append(("Message-ID", mail.msgid or _message_id(mail, key, sent)))
    if _pick(key, "order", 3) == 0:
        core = core[3:] + core[:3]
    core += list(mail.extra)
    if mail.mailer:
        core.append(mail.mailer)
    mime_headers, body = render_part(mail.body, key)
    core += [("MIME-Version", "1.0"), *mime_headers]
    data = _header_block(trace + core) + b"\n" + body
    seed = _hash("name", key)
    name = (
        f"{int(delivered.timestamp())}.M{int(seed[:6], 16) % 1000000}"
        f"P{1000 + int(seed[6:10], 16) % 60000}.{STORE_HOST},S={len(data)}"
    )
    if not mail.new:
        name += f":2,{mail.flags}"
    return Rendered(mail, data, delivered, env, name)


FROM_LINE = re.compile(rb"^>*From ")


def mboxrd_entry(msg: Rendered) -> bytes:
    """Return *msg* as one mboxrd entry: From_ line, escaped body, blank line."""
    when = msg.delivered
    stamp = f"{when:%a %b} {when.day:2d} {when:%H:%M:%S %Y}"
    lines = msg.data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    escaped = [b">" + line if FROM_LINE.match(line) else line for line in lines]
    head = f"From {msg.envelope or 'MAILER-DAEMON'} {stamp}".encode("ascii")
    return b"\n".join([head, *escaped]) + b"\n\n"


def mboxrd_unescape(data: bytes) -> bytes:
    """Undo mboxrd escaping of one message's bytes."""
    lines = data.split(b"\n")
    return b"\n".join(line[1:] if re.match(rb"^>+From ", line) else line for line in lines)


def build() -> list[Rendered]:
    """Render every message of the corpus."""
    out = []
    for kind, mails in (("ham", ham_messages()), ("spam", spam_messages())):
        for index, mail in enumerate(mails):
            if mail.kind != kind:
                msg = f"{kind} list holds a {mail.kind} message: {mail.subject}"
                raise ValueError(msg)
            out.append(render(mail, f"{kind}-{index}"))
    names = [msg.name for msg in out]
    if len(set(names)) != len(names):
        msg = "duplicate Maildir file names"
        raise ValueError(msg)
    return sorted(out, key=lambda msg: (msg.delivered, msg.name))


def write(out_dir: Path, messages: list[Rendered]) -> None:
    """Write the Maildir folders, the two mbox files and the index."""
    maildir = out_dir / "maildir"
    if maildir.exists():
        shutil.rmtree(maildir)
    for kind in ("ham", "spam"):
        for sub in ("cur", "new", "tmp"):
            (maildir / kind / sub).mkdir(parents=True)
        (maildir / kind / "tmp" / ".keep").write_bytes(b"")
        entries = []
        for msg in messages:
            if msg.mail.kind == kind:
                (out_dir / msg.path).write_bytes(msg.data)
                entries.append(mboxrd_entry(msg))
        (out_dir / f"{kind}.mbox").write_bytes(b"".join(entries))
    index = "".join(f"{msg.mail.kind} {msg.path}\n" for msg in messages)
    (out_dir / "index").write_text(index, encoding="ascii")


# --------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------

ALLOWED_NETS = tuple(ipaddress.ip_network(net) for net in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
IP_RE = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])")
HOST_RE = re.compile(
    r"(?<![\w.-])((?:[a-z0-9-]+\.)+(?:com|org|net|test|invalid|io|ru|de|fr|es|cn|jp|uk"
    r"|info|biz|co|us|edu|gov|eu|ch|nl|in|xyz|site|online))(?![\w-])",
    re.IGNORECASE,
)
EMAIL_HOST_RE = re.compile(r"[\w.+=-]+@([\w-]+(?:\.[\w-]+)+)")
URL_HOST_RE = re.compile(r"https?://([^/\s\"'<>:?#]+)")


def _reserved_host(host: str) -> bool:
    host = host.lower().rstrip(".")
    for base in ("example.com", "example.org", "example.net"):
        if host == base or host.endswith("." + base):
            return True
    return host.endswith((".test", ".invalid"))


def _scan_names(text: str, where: str) -> list[str]:
    problems = []
    for match in IP_RE.finditer(text):
        try:
            ip = ipaddress.ip_address(match.group(1))
        except ValueError:
            continue
        if not any(ip in net for net in ALLOWED_NETS):
            problems.append(f"{where}: IP outside documentation ranges: {ip}")
    hosts = (
        [m.group(1) for m in EMAIL_HOST_RE.finditer(text)]
        + [m.group(1) for m in URL_HOST_RE.finditer(text)]
        + [m.group(1) for m in HOST_RE.finditer(text)]
    )
    problems.extend(
        f"{where}: non-reserved domain: {host}"
        for host in hosts
        if "." in host and not host.replace(".", "").isdigit() and not _reserved_host(host)
    )
    return problems


def _check_message(data: bytes, where: str, stats: Counter[str]) -> list[str]:
    """Parse one stored message and check it; count its features in *stats*."""
    problems: list[str] = []
    if b"\r" in data:
        problems.append(f"{where}: contains CR")
    if any(len(line) > MAX_LINE for line in data.split(b"\n")):
        problems.append(f"{where}: line longer than {MAX_LINE} octets")
    msg = email.message_from_bytes(data, policy=email.policy.default)
    if not isinstance(msg, EmailMessage):
        return [f"{where}: did not parse as EmailMessage"]
    texts = [str(value) for value in msg.values()]
    for name, value in msg.items():
        if getattr(value, "defects", ()):
            problems.append(f"{where}: header {name}: {value.defects}")
    if "=?" in str(msg.get("Subject", "")):
        problems.append(f"{where}: Subject not decoded")
    if msg["Date"].datetime is None:
        problems.append(f"{where}: bad Date")
    head = data.split(b"\n\n", 1)[0].decode("ascii").upper()
    for enc in ("B", "Q"):
        stats[f"headers with {enc} encoded words"] += f"?{enc}?" in head
    if msg.get_content_type() == "text/html":
        stats["HTML-only messages"] += 1
    for part in msg.walk():
        problems += _check_part(part, where, stats, texts)
    raw = data.decode("latin-1").replace("=\n", "")  # join QP soft line breaks
    problems += _scan_names("\n".join(texts) + "\n" + raw, where)
    return problems


def _check_part(part: EmailMessage, where: str, stats: Counter[str], texts: list[str]) -> list[str]:
    """Check that one MIME part decodes; append decoded text to *texts*."""
    ctype = part.get_content_type()
    problems = [f"{where}: {ctype}: {part.defects}"] if part.defects else []
    if part.is_multipart() or ctype == "message/rfc822":
        stats[ctype] += 1
        return problems
    stats["cte " + part.get("Content-Transfer-Encoding", "7bit").lower()] += 1
    content = part.get_content()
    if not content or (isinstance(content, str) and not content.strip()):
        problems.append(f"{where}: empty {ctype} part")
    if isinstance(content, str):
        if "\ufffd" in content:
            problems.append(f"{where}: undecodable {ctype} part")
        stats["charset " + part.get_content_charset("us-ascii")] += 1
        texts.append(content)
    return problems


def _read_index(out_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Return {path: label} from the index file, and problems found in it."""
    listed: dict[str, str] = {}
    problems = []
    for line in (out_dir / "index").read_text(encoding="ascii").splitlines():
        label, rel = line.split(" ", 1)
        listed[rel] = label
        if not (out_dir / rel).is_file():
            problems.append(f"index: missing file {rel}")
        if rel.split("/")[1] != label:
            problems.append(f"index: label {label} for {rel}")
    return listed, problems


def _check_maildir(
    out_dir: Path, kind: str, listed: dict[str, str], stats: Counter[str]
) -> tuple[list[Path], list[str]]:
    """Check one Maildir folder; return its message files (sorted) and problems."""
    problems = []
    base = out_dir / "maildir" / kind
    tmp = sorted(path.name for path in (base / "tmp").iterdir())
    if tmp != [".keep"] or (base / "tmp" / ".keep").stat().st_size:
        problems.append(f"{kind}/tmp should hold only an empty .keep: {tmp}")
    files = []
    for sub in ("cur", "new"):
        for path in sorted((base / sub).iterdir()):
            rel = path.relative_to(out_dir).as_posix()
            if path.name.startswith("."):
                continue
            if (sub == "cur") != (":2," in path.name):
                problems.append(f"{rel}: info suffix does not match {sub}/")
            if listed.get(rel) != kind:
                problems.append(f"{rel}: not in index as {kind}")
            files.append(path)
            stats[f"{kind} {sub}"] += 1
            problems += _check_message(path.read_bytes(), rel, stats)
    if len(files) < MIN_PER_CLASS:
        problems.append(f"only {len(files)} {kind} messages")
    return sorted(files, key=lambda path: path.name), problems


def _check_mbox(out_dir: Path, kind: str, files: list[Path], stats: Counter[str]) -> list[str]:
    """Check that KIND.mbox holds exactly the Maildir messages, in order."""
    problems = []
    box = mailbox.mbox(out_dir / f"{kind}.mbox", create=False)
    keys = list(box.keys())
    if len(keys) != len(files):
        problems.append(f"{kind}.mbox has {len(keys)} messages, Maildir {len(files)}")
    for key, path in zip(keys, files, strict=False):
        if not box.get_message(key).get_from():
            problems.append(f"{kind}.mbox message {key}: no From_ line")
        if mboxrd_unescape(box.get_bytes(key)) != path.read_bytes():
            problems.append(f"{kind}.mbox message {key} differs from {path.name}")
    box.close()
    raw = (out_dir / f"{kind}.mbox").read_bytes()
    stats[f"{kind}.mbox escaped From lines"] = len(re.findall(rb"\n>+From ", raw))
    return problems


def verify(out_dir: Path) -> list[str]:
    """Check the written corpus, print feature counts, and return problems."""
    stats: Counter[str] = Counter()
    listed, problems = _read_index(out_dir)
    total = 0
    for kind in ("ham", "spam"):
        files, found = _check_maildir(out_dir, kind, listed, stats)
        problems += found + _check_mbox(out_dir, kind, files, stats)
        total += len(files)
    if len(listed) != total:
        problems.append(f"index lists {len(listed)} messages, Maildir holds {total}")
    for name, value in sorted(stats.items()):
        print(f"  {name}: {value}")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Regenerate the corpus next to this script (unless --check), then verify it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="verify only, write nothing")
    args = parser.parse_args(argv)
    if not args.check:
        messages = build()
        write(HERE, messages)
        print(f"wrote {len(messages)} messages to {HERE}")
    problems = verify(HERE)
    for problem in problems:
        print("PROBLEM:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
