"""IMAP folders: `imaps://USER@HOST[:PORT]/FOLDER` (TLS) and `imap://` (STARTTLS).

Read-only for sources: the folder is EXAMINEd and messages fetched with BODY.PEEK, so
no flag changes; streamed in batches bounded in bytes, each message fetched to at
most the local readers' cap (`items.read_cap`).  The server sends CRLF line ends;
they become LF, as Dovecot stores a maildir, so a message's digest is the same read
either way.

Credentials never come from the command line: `~/.netrc` (`machine HOST login USER
password PASS`, as fetchmail, curl and isync read it) or a password command (isync's
PassCmd) whose first line of output is the password.  Certificates are verified
against the system's CAs or `ca_file`; plain IMAP without STARTTLS is refused.
"""
from __future__ import annotations

import contextlib
import imaplib
import netrc
import os
import re
import socket
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from spamnb.mail.items import Item, Message, Problem, SourceError, read_cap

SCHEMES = {"imaps": 993, "imap": 143}
TIMEOUT = 60.0  # seconds a server may take to answer one command
PASSWORD_COMMAND_TIMEOUT = 30.0
# A FETCH asks for at most this many messages and bytes (a message counted at its size
# up to the cap): what one batch can hold in memory.
BATCH_MESSAGES = 200
BATCH_BYTES = 8 << 20
FETCH_UID = re.compile(rb"\bUID (\d+)")
FETCH_SIZE = re.compile(rb"\bRFC822\.SIZE (\d+)")


@dataclass(frozen=True)
class Location:
    """Where a folder is: parsed from its URL (percent-escapes decoded)."""

    scheme: str
    user: str
    host: str
    port: int
    folder: str

    @property
    def server(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{self.user}@{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.server}/{self.folder}"


def parse_url(url: str) -> Location:
    """`imaps://USER@HOST[:PORT]/FOLDER`; an empty FOLDER is INBOX.  A password in the URL
    is refused: it would be on the command line, in shell history and `ps`."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as err:
        raise SourceError(f"{url}: not an IMAP URL ({err})") from err
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise SourceError(f"{url}: not an IMAP URL (imaps://USER@HOST[:PORT]/FOLDER)")
    if parts.password is not None:
        raise SourceError(f"{parts.scheme}://{parts.hostname}: a password in the URL is refused; put it in ~/.netrc or give --password-command")
    if not parts.username:
        raise SourceError(f"{url}: no user (imaps://USER@HOST/FOLDER)")
    if parts.query or parts.fragment:
        raise SourceError(f"{url}: a query or fragment is not part of a folder's URL")
    folder = unquote(parts.path.lstrip("/")) or "INBOX"
    return Location(parts.scheme, unquote(parts.username), parts.hostname, port or SCHEMES[parts.scheme], folder)


@dataclass(frozen=True)
class Access:
    """How to log in: a password command (else ~/.netrc) and a CA file (else the system's)."""

    password_command: str | None = None
    ca_file: str | None = None


def password(where: Location, access: Access) -> str:
    if access.password_command is not None:
        try:
            done = subprocess.run(
                access.password_command, shell=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=PASSWORD_COMMAND_TIMEOUT
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise SourceError(f"{where.server}: the password command failed: {err}") from err
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            raise SourceError(f"{where.server}: the password command exited {done.returncode}" + (f": {said[-1]}" if said else ""))
        lines = done.stdout.decode(errors="surrogateescape").splitlines()
        if not lines or not lines[0]:
            raise SourceError(f"{where.server}: the password command printed no password")
        return lines[0]
    path = os.path.join(os.path.expanduser("~"), ".netrc")
    try:
        entry = netrc.netrc(path).authenticators(where.host)
    except FileNotFoundError:
        entry = None
    except (OSError, netrc.NetrcParseError) as err:
        raise SourceError(f"{path}: {err}") from err
    if entry is None or entry[0] != where.user or not entry[2]:
        raise SourceError(
            f"{where.server}: no password: add 'machine {where.host} login {where.user} password ...' to {path} or give --password-command"
        )
    return entry[2]


@contextlib.contextmanager
def connected(where: Location, access: Access, readonly: bool = True) -> Iterator[tuple[imaplib.IMAP4, int]]:
    """A client logged in with the folder selected (EXAMINEd when `readonly`), and the
    folder's UIDVALIDITY.  Every failure to get there is a one-line SourceError."""
    secret = password(where, access)
    try:
        context = ssl.create_default_context(cafile=access.ca_file)
    except (OSError, ssl.SSLError) as err:
        raise SourceError(f"{access.ca_file}: cannot read the CA file ({getattr(err, 'strerror', None) or err})") from err
    client: imaplib.IMAP4 | None = None
    try:
        if where.scheme == "imaps":
            client = imaplib.IMAP4_SSL(where.host, where.port, ssl_context=context, timeout=TIMEOUT)
        else:
            client = imaplib.IMAP4(where.host, where.port, timeout=TIMEOUT)
            if "STARTTLS" not in client.capabilities:
                raise SourceError(f"{where.server}: the server offers no STARTTLS; refusing to send the password in clear (use imaps://)")
            client.starttls(context)
        client.login(where.user, secret)
        status, detail = client.select(quote(where.folder), readonly=readonly)
        if status != "OK":
            raise SourceError(f"{where}: no such folder ({said(detail)})")
        uidvalidity = int(client.response("UIDVALIDITY")[1][0])
    except BaseException as err:
        if client is not None:
            close(client)
        if isinstance(err, ssl.SSLCertVerificationError):
            raise SourceError(f"{where.server}: certificate not trusted ({err.verify_message}; --ca-file for a private CA)") from err
        if isinstance(err, (OSError, imaplib.IMAP4.error, EOFError, ValueError, TypeError)):
            raise SourceError(f"{where.server}: {reason(err)}") from err
        raise
    try:
        yield client, uidvalidity
    finally:
        close(client)


def capabilities(client: imaplib.IMAP4) -> set[str]:
    """The server's capabilities once logged in (they may grow at login: MOVE, UIDPLUS)."""
    detail = ok(client.capability())
    return set(b" ".join(d for d in detail if isinstance(d, bytes)).decode(errors="replace").upper().split())


def require_folder(client: imaplib.IMAP4, where: Location, folder: str) -> None:
    """SourceError unless `folder` exists on the server (checked before anything moves)."""
    status, detail = client.list('""', quote(folder))
    if status != "OK" or not [d for d in detail if d]:
        raise SourceError(f"{where.server}/{folder}: no such folder")


def ok(response: tuple[str, list]) -> list:
    """A command's response data, or IMAP4.error with the server's words if it was not OK."""
    status, detail = response
    if status != "OK":
        raise imaplib.IMAP4.error(f"{status} {said(detail)}")
    return detail


def close(client: imaplib.IMAP4) -> None:
    with contextlib.suppress(OSError, imaplib.IMAP4.error, EOFError):
        client.logout()
    with contextlib.suppress(OSError):
        client.shutdown()


def reason(err: BaseException) -> str:
    if isinstance(err, imaplib.IMAP4.error) and "AUTHENTICATIONFAILED" in str(err):
        return "login refused (user or password wrong)"
    if isinstance(err, socket.timeout):
        return f"no answer within {TIMEOUT:g} s"
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err) or type(err).__name__


def said(detail: list) -> str:
    """A server's response text, for a message."""
    return b" ".join(d for d in detail if isinstance(d, bytes)).decode(errors="replace")


def quote(folder: str) -> str:
    """A folder name as an IMAP quoted string (imaplib sends arguments as given)."""
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def message_id(where: Location, uidvalidity: int, uid: int) -> str:
    """RFC 5092's URL of one message."""
    return f"{where};UIDVALIDITY={uidvalidity}/;UID={uid}"


def uids_after(client: imaplib.IMAP4, last: int = 0) -> list[int]:
    """The folder's UIDs above `last`, ascending."""
    detail = ok(client.uid("SEARCH", f"UID {last + 1}:*"))
    # `N:*` always holds the highest UID, even one below N.
    return sorted(u for u in map(int, b" ".join(detail).split()) if u > last)


def sizes(client: imaplib.IMAP4, uids: list[int]) -> dict[int, int]:
    detail = ok(client.uid("FETCH", uid_set(uids), "(UID RFC822.SIZE)"))
    found = {}
    for line in detail:
        text = line[0] if isinstance(line, tuple) else line
        if isinstance(text, bytes) and (uid := FETCH_UID.search(text)) and (size := FETCH_SIZE.search(text)):
            found[int(uid[1])] = int(size[1])
    return found


def uid_set(uids: list[int]) -> str:
    """`1:3,7` for [1, 2, 3, 7]."""
    ranges: list[str] = []
    start = prev = None
    for uid in [*uids, None]:
        if prev is not None and uid == prev + 1:
            prev = uid
            continue
        if start is not None:
            ranges.append(str(start) if start == prev else f"{start}:{prev}")
        start = prev = uid
    return ",".join(ranges)


def batches(client: imaplib.IMAP4, uids: list[int], cap: int | None) -> Iterator[list[int]]:
    """`uids` in runs whose fetch holds at most BATCH_MESSAGES messages and about
    BATCH_BYTES bytes (one message may pass that alone: no more than its cap)."""
    for start in range(0, len(uids), 1000):
        chunk = uids[start : start + 1000]
        size = sizes(client, chunk)
        batch: list[int] = []
        held = 0
        for uid in chunk:
            cost = min(size.get(uid, 0), 2 * cap) if cap is not None else size.get(uid, 0)
            if batch and (len(batch) >= BATCH_MESSAGES or held + cost > BATCH_BYTES):
                yield batch
                batch, held = [], 0
            batch.append(uid)
            held += cost
        if batch:
            yield batch


def fetch(client: imaplib.IMAP4, uids: list[int], cap: int | None) -> dict[int, bytes]:
    """The messages of `uids` (to at most `cap` bytes each), LF line ends; read-only.

    The server counts CRLF line ends: twice the cap in its octets holds at least `cap`
    bytes with LF ends, all that a local read of the same message keeps."""
    part = "BODY.PEEK[]" if cap is None else f"BODY.PEEK[]<0.{2 * cap}>"
    detail = ok(client.uid("FETCH", uid_set(uids), f"(UID {part})"))
    found: dict[int, bytes] = {}
    for i, line in enumerate(detail):
        if not isinstance(line, tuple):
            continue
        # The UID is in the response's text before the literal, or in the line after it.
        after = detail[i + 1] if i + 1 < len(detail) and isinstance(detail[i + 1], bytes) else b""
        uid = FETCH_UID.search(line[0]) or FETCH_UID.search(after)
        if uid is not None:
            found[int(uid[1])] = line[1].replace(b"\r\n", b"\n")[:cap]
    return found


# The server hung up (Dovecot does when a message's file is broken mid-FETCH).
DROPPED = (OSError, imaplib.IMAP4.abort, EOFError)
# Logins again after the server hung up, in one run: a server that hangs up on every
# message stops the run instead of being asked for ever.
MAX_RECONNECTS = 20


class Session:
    """The folder's login, made again when the server hangs up on a broken message."""

    def __init__(self, where: Location, access: Access, readonly: bool) -> None:
        self.where, self.access, self.readonly = where, access, readonly
        self.reconnects = 0
        self.stack = contextlib.ExitStack()
        self.client, self.uidvalidity = self.stack.enter_context(connected(where, access, readonly))

    def reconnect(self) -> None:
        self.stack.close()
        if self.reconnects >= MAX_RECONNECTS:
            raise SourceError(f"{self.where}: the server hung up {MAX_RECONNECTS} times; stopped")
        self.reconnects += 1
        self.stack = contextlib.ExitStack()
        self.client, uidvalidity = self.stack.enter_context(connected(self.where, self.access, self.readonly))
        if uidvalidity != self.uidvalidity:
            raise SourceError(f"{self.where}: the folder's UIDVALIDITY changed during the run; run again")

    def close(self) -> None:
        self.stack.close()


def fetch_surviving(session: Session, batch: list[int], cap: int | None) -> tuple[dict[int, bytes], dict[int, str]]:
    """The batch's messages, and why each one the server would not give failed.  One
    broken message fails the whole FETCH (a NO, or the server hangs up): then each is
    asked for alone, so the rest are still read."""
    try:
        return fetch(session.client, batch, cap), {}
    except DROPPED:
        session.reconnect()
    except imaplib.IMAP4.error:
        pass
    found: dict[int, bytes] = {}
    failed: dict[int, str] = {}
    for uid in batch:
        try:
            found.update(fetch(session.client, [uid], cap))
        except DROPPED:
            failed[uid] = "the server hung up sending it (a broken message file?)"
            session.reconnect()
        except imaplib.IMAP4.error as err:
            failed[uid] = f"the server refused it ({err})"
    return found, failed


def read_folder(url: str, label: str | None = None, max_bytes: int | None = None, access: Access | None = None) -> Iterator[Item]:
    """Every message of an IMAP folder, in UID order; the connection is made (and a bad
    URL, login or folder raised as SourceError) before the first message is asked for."""
    session = Session(parse_url(url), access or Access(), readonly=True)
    return stream(session, label, read_cap(max_bytes))


def stream(session: Session, label: str | None, cap: int | None) -> Iterator[Item]:
    with contextlib.closing(session):
        try:
            # Planned up front: a new login (`fetch_surviving`) must not cut the plan short.
            for batch in list(batches(session.client, uids_after(session.client), cap)):
                found, failed = fetch_surviving(session, batch, cap)
                for uid in batch:
                    name = message_id(session.where, session.uidvalidity, uid)
                    if uid in found:
                        yield Message(name, found[uid], label)
                    else:
                        yield Problem(name, failed.get(uid, "gone from the server while reading (expunged?)"), label)
        except (OSError, imaplib.IMAP4.error, EOFError, SourceError) as err:
            yield Problem(str(session.where), f"reading stopped: {reason(err) if not isinstance(err, SourceError) else err}", label)
