"""SPAMC/SPAMD protocol 1.5 (SpamAssassin's spamd/PROTOCOL): requests read, replies written.

No sockets here: `parse_head` turns a request's head (the request line and header
lines, up to the blank line) into a `Request` or raises `ProtocolError`, and the
`*_reply` functions build the bytes a server sends back.  Replies look as spamd's do:
a status line `SPAMD/1.5 CODE TEXT` (CODE from sysexits.h), header lines, a blank line,
then the body that Content-length counts.  spamc reads a reply without a `Spam:` or
`Content-length:` header as a failure and passes the mail through unchanged, which is
what every error reply here relies on.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# sysexits.h, as spamd names them in its replies.
EX_OK, EX_USAGE, EX_DATAERR, EX_NOUSER = 0, 64, 65, 67
EX_UNAVAILABLE, EX_SOFTWARE, EX_IOERR, EX_TEMPFAIL = 69, 70, 74, 75
EX_PROTOCOL, EX_NOPERM, EX_TIMEOUT = 76, 77, 79

VERSION = "1.5"
COMMANDS = frozenset({"CHECK", "SYMBOLS", "REPORT", "REPORT_IFSPAM", "PROCESS", "HEADERS", "PING", "SKIP", "TELL"})
# Commands that carry no message (PING before protocol 1.5 sent not even the blank line).
BODILESS = frozenset({"PING", "SKIP"})
MAX_HEAD = 16 << 10  # bytes of request line and headers together (spamc sends ~100)
MAX_HEADERS = 255  # header lines, as spamd counts them
REQUEST_LINE = re.compile(r"([A-Z_]+) SPAMC/(\d{1,3})\.(\d{1,3})")
# spamd/PROTOCOL: "format is that of a traditional UNIX username"; the server also takes
# the characters of virtual users (`first.last@example.org`).  Never `/`, never a leading
# dot, so a user's model `DIR/USER.npz` cannot lie outside DIR.
USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+=-]{0,63}")


class ProtocolError(Exception):
    """A request that breaks the protocol: the reply is this code and line, then the connection closes."""

    def __init__(self, text: str, code: int = EX_PROTOCOL) -> None:
        super().__init__(text)
        self.code = code


@dataclass(frozen=True)
class Request:
    """What a request's head asks: the command, the protocol version (major, minor), the
    message's length as sent (None: until the client's end of writing), `User`, whether
    the message is zlib-compressed, and TELL's `Message-class`, `Set` and `Remove`."""

    command: str
    version: tuple[int, int]
    length: int | None = None
    user: str | None = None
    compressed: bool = False
    message_class: str | None = None
    set_local: bool = False
    remove_local: bool = False
    set_remote: bool = False
    remove_remote: bool = False


def head_end(buffer: bytes) -> int:
    """Where the head ends in `buffer` (just after its blank line), or -1 while it has not.
    spamc ends lines with CR LF; a bare LF is taken too."""
    ends = [i + n for i, n in ((buffer.find(b"\r\n\r\n"), 4), (buffer.find(b"\n\n"), 2)) if i >= 0]
    return min(ends) if ends else -1


def parse_head(head: bytes) -> Request:
    """The request that `head` (request line and headers, with or without the blank line) makes."""
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        raise ProtocolError("request head is not ASCII") from None
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise ProtocolError("empty request")
    match = REQUEST_LINE.fullmatch(lines[0])
    if match is None or match.group(1) not in COMMANDS:
        raise ProtocolError(f"bad request line {printable(lines[0])!r}")
    command, version = match.group(1), (int(match.group(2)), int(match.group(3)))
    if len(lines) - 1 > MAX_HEADERS:
        raise ProtocolError("too many headers")
    fields: dict[str, object] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise ProtocolError(f"header not in 'Name: value' form: {printable(line)!r}")
        header(fields, name.lower(), value.strip())
    if fields.get("set_local") and fields.get("remove_local"):
        raise ProtocolError("cannot set local and remove local in the same request")
    if command == "TELL" and fields.get("set_local") and "message_class" not in fields:
        raise ProtocolError("TELL with Set: local needs a Message-class")
    if fields.get("compressed") and "length" not in fields:
        raise ProtocolError("Compress needs a Content-length")
    return Request(command, version, **fields)  # type: ignore[arg-type]


def header(fields: dict[str, object], name: str, value: str) -> None:
    """Record one header line of a request; unknown ones are ignored, as the protocol asks."""
    if name == "content-length":
        if not value.isdigit() or len(value) > 12:
            raise ProtocolError(f"Content-length not a number: {printable(value)!r}")
        fields["length"] = int(value)
    elif name == "user":
        if USER.fullmatch(value) is None:
            raise ProtocolError(f"User not a user name: {printable(value)!r}", EX_NOUSER)
        fields["user"] = value
    elif name == "compress":
        if value.lower() != "zlib":
            raise ProtocolError(f"compression {printable(value)!r} not supported (only zlib)")
        fields["compressed"] = True
    elif name == "message-class":
        if value.lower() not in ("spam", "ham"):
            raise ProtocolError(f"Message-class neither spam nor ham: {printable(value)!r}")
        fields["message_class"] = value.lower()
    elif name in ("set", "remove"):
        places = {part.strip().lower() for part in value.split(",")}
        fields[f"{name}_local"] = "local" in places
        fields[f"{name}_remote"] = "remote" in places


def printable(text: str, limit: int = 80) -> str:
    """A piece of a request, safe to quote in a reply line or a log line."""
    return "".join(ch if " " <= ch <= "~" else "?" for ch in text[:limit])


def status_line(code: int, text: str) -> bytes:
    return f"SPAMD/{VERSION} {code} {printable(text, 200)}\r\n".encode("ascii")


def error_reply(code: int, text: str) -> bytes:
    """A failure: the status line alone, as spamd sends it (spamc then passes the mail through)."""
    return status_line(code, text)


def pong() -> bytes:
    return status_line(EX_OK, "PONG")


def spam_line(is_spam: bool, score: float, threshold: float) -> str:
    """`Spam: True ; 9.9 / 9.5`.  spamd says Yes/No to REPORT_IFSPAM, which spamc reads as not
    spam (it compares with "true"): True/False here for every command, as the protocol's text says."""
    return f"Spam: {'True' if is_spam else 'False'} ; {score:.1f} / {threshold:.1f}"


def result_head(command: str, spam: str, length: int = 0) -> bytes:
    """The head of a scanning command's reply: CHECK's has no body; SYMBOLS, REPORT,
    REPORT_IFSPAM, PROCESS and HEADERS have one of `length` bytes (possibly 0)."""
    head = status_line(EX_OK, "EX_OK")
    if command == "CHECK":
        return head + f"{spam}\r\n\r\n".encode("ascii")
    return head + f"Content-length: {length}\r\n{spam}\r\n\r\n".encode("ascii")


def result_reply(command: str, spam: str, body: bytes = b"") -> bytes:
    return result_head(command, spam, len(body)) + body


def tell_reply(did_set: bool, did_remove: bool) -> bytes:
    """TELL's reply: DidSet/DidRemove name what changed (nothing: the message was already so)."""
    lines = (["DidSet: local"] if did_set else []) + (["DidRemove: local"] if did_remove else [])
    return status_line(EX_OK, "EX_OK") + "".join(f"{line}\r\n" for line in lines).encode("ascii") + b"\r\n"
