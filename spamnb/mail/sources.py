"""Finding and streaming messages: mbox, maildir, directories, files, stdin, index files,
and IMAP folders (`spamnb.mail.imap`, given as `imaps://USER@HOST/FOLDER`).

Every reader is a generator that holds one message at a time, so memory does not
grow with the size of a mailbox.  A file or message that cannot be read is yielded
as a `Problem` naming it, so that a batch run reports it and carries on.

Only regular files are read: a FIFO would block a run for ever and a device may
never end, so either is a `Problem` ("not a regular file") and the run goes on.
With `max_bytes` (the tokeniser's byte cap) each message is read to at most
`max_bytes + HEADROOM` bytes and the rest skipped, so one huge message costs no more
memory than the tokeniser would look at.
"""
from __future__ import annotations

import io
import itertools
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, NamedTuple, TypeVar

from spamnb import compiled
from spamnb.mail import headers
from spamnb.mail.items import Item, Message, Problem, SourceError, read_cap

LABELS = ("ham", "spam")
T = TypeVar("T")


class Located(NamedTuple):
    """A file found but not yet read (read by `read_located`, perhaps on another host);
    `regular`: its folder listed it as a regular file (`read_file`)."""

    path: str
    label: str | None = None
    regular: bool = False


# An mbox separator: `From ` at the start of a line, after a blank line (or at the
# start of the file), carrying a time of day as every envelope line does.  Requiring
# both keeps an unescaped "From here on..." paragraph inside a body from splitting it.
# (`From \S*.*` would match the same lines in time quadratic in their length.)
ENVELOPE = re.compile(rb"From .*\d{1,2}:\d\d")
# Lines that need a look: an envelope candidate, or an escaped `>From ` to unescape.
MARKED_LINE = re.compile(rb"^>*From ", re.M)
# marked_lines in C, where it was built (spamnb/text/_ctokens.c): the pattern's multi-line `^`
# has no fast skip, so the regex engine tries it at every byte of each message read.
MARKED = compiled.scanner_function("marked_lines")
BLOCK = 1 << 16
NOT_REGULAR = "not a regular file (FIFO, socket or device): skipped"
STDIN_NOTICE = "spamnb: reading one message from stdin; Ctrl-D to end"


def read_mbox(stream: BinaryIO, name: str, label: str | None = None, first: bytes = b"", cap: int | None = None) -> Iterator[Message]:
    """Messages of an mboxrd/mboxo stream that starts with an envelope line.

    `stream` yields the file's bytes in pieces of any size (lines or blocks).  The
    N-th message is named `name:N`; a stream holding one message keeps the plain
    name, so a message file saved with an envelope line is named like any other.
    One finished message is held back until the next one starts, to know which.
    `first`: bytes already read from the start of the stream.  `cap`: bytes kept of
    each message (the rest is scanned for the next envelope line, not kept).

    The stream is scanned in blocks, looking only at lines that start `From ` or
    `>From `: a line at a time, 10 MB of short lines took 3 s and 450 MB.
    """
    current: bytearray | None = None
    held: bytearray | None = None
    count = 0
    blank_before = True  # the line before is blank, or there is none
    for block in line_blocks(stream, first, cap):
        pos = 0
        for start in marked_lines(block):
            if block[start] == ord(">"):  # unescape one level
                current = append(current, block, pos, start, cap)
                pos = start + 1
                continue
            end = block.find(b"\n", start) + 1 or len(block)
            if not (blank_before if start == 0 else is_blank(block, last_line_start(block, start), start)):
                continue
            if not ENVELOPE.match(block, start, end):
                continue
            current = append(current, block, pos, start, cap)
            if current is not None:
                if held is not None:
                    count += 1
                    yield Message(f"{name}:{count}", finish(held), label)
                held = current
            current = bytearray()
            pos = end
        current = append(current, block, pos, len(block), cap)
        blank_before = is_blank(block, last_line_start(block, len(block)), len(block))
    rest = [message for message in (held, current) if message is not None]
    if count == 0 and len(rest) == 1:
        yield Message(name, finish(rest[0]), label)
        return
    for message in rest:
        count += 1
        yield Message(f"{name}:{count}", finish(message), label)


def marked_lines(block: bytes) -> list[int]:
    """Where each line of `block` that MARKED_LINE marks starts, in order."""
    if MARKED is not None:
        return MARKED(block)
    # Every marked line holds "From ": a plain search rules out most messages, far faster
    # than the multi-line regex.
    return [marked.start() for marked in MARKED_LINE.finditer(block)] if b"From " in block else []


def line_blocks(stream: BinaryIO, first: bytes = b"", cap: int | None = None) -> Iterator[bytes]:
    """The stream in blocks of about BLOCK bytes, each ending at a line end (or the end).

    A line longer than `cap` keeps its first `cap` bytes: no message keeps more.
    """
    pending = [first] if first else []
    held = len(first)
    while chunk := stream.read(BLOCK):
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:  # inside a long line: gather it (up to the cap)
            if cap is None or held < cap:
                pending.append(chunk)
                held += len(chunk)
            continue
        held = len(chunk) - cut
        yield b"".join([*pending, chunk[:cut]])
        pending = [chunk[cut:]] if cut < len(chunk) else []
    if pending:
        yield b"".join(pending)


def last_line_start(block: bytes | bytearray, end: int) -> int:
    """Where the line ending just before `end` starts."""
    return block.rfind(b"\n", 0, max(end - 1, 0)) + 1


def is_blank(block: bytes | bytearray, start: int, end: int) -> bool:
    return start < end and not block[start:end].rstrip(b"\r\n")


def append(message: bytearray | None, block: bytes, start: int, end: int, cap: int | None = None) -> bytearray | None:
    """`message` with block[start:end] added, up to `cap` bytes; a message starts with its first byte."""
    if start < end:
        message = message if message is not None else bytearray()
        if cap is not None:
            end = min(end, start + max(cap - len(message), 0))
        message += memoryview(block)[start:end]
    return message


def finish(message: bytes | bytearray) -> bytes:
    """The message less the blank line that separated it from the next: copied once from a
    bytearray, and bytes not at all where they end without one."""
    last = last_line_start(message, len(message))
    end = last if is_blank(message, last, len(message)) else len(message)
    return message[:end] if isinstance(message, bytes) else bytes(memoryview(message)[:end])


def read_file(path: str, label: str | None = None, max_bytes: int | None = None, regular: bool = False) -> Iterator[Item]:
    """One message file, or every message of an mbox (a file whose first line is an envelope).

    Anything but a regular file is a Problem, never opened for reading: opening a FIFO
    blocks until a writer comes, and /dev/zero never ends.  `regular`: the file's folder
    listed it as a regular file, so it is opened without a stat first (the fstat after
    the open checks it again, as it does after a stat).
    """
    cap = read_cap(max_bytes)
    try:
        if not regular and not stat.S_ISREG(os.stat(path).st_mode):
            yield Problem(path, NOT_REGULAR, label)
            return
        # O_NONBLOCK: should the file become a FIFO after the stat, the open does not wait.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            stream = regular_stream(fd)
            if stream is None:
                yield Problem(path, NOT_REGULAR, label)
                return
            first = stream.readline(-1 if cap is None else cap)
            if not first:
                yield Problem(path, "empty file", label)
                return
            if first.startswith(b"From ") and ENVELOPE.match(first.rstrip(b"\r\n")):
                yield from read_mbox_file(stream, path, label, first, cap)
            else:
                yield Message(path, first + read_at_most(stream, None if cap is None else cap - len(first)), label)
        finally:
            os.close(fd)
    except (OSError, ValueError) as err:  # ValueError: a NUL byte in the path (an index line)
        yield Problem(path, os_reason(err), label)
    except MemoryError:
        yield Problem(path, "out of memory reading it: skipped", label)


def regular_stream(fd: int) -> BinaryIO | None:
    """The open file `fd` as a stream (None if it is not a regular file), left open.

    A file under a block, as most messages are, is read whole by the system calls
    themselves: a buffered reader's set-up (its own fstat, a seek, a terminal test) and
    its reads of the first line, the rest and the end cost more than the message does.
    """
    size = os.fstat(fd)
    if not stat.S_ISREG(size.st_mode):
        return None
    if size.st_size < BLOCK:
        whole = read_whole(fd, size.st_size)
        if whole is not None:
            return io.BytesIO(whole)
        os.lseek(fd, 0, os.SEEK_SET)
    return open(fd, "rb", closefd=False)


def read_whole(fd: int, size: int) -> bytes | None:
    """The bytes of a file that its fstat says holds `size`, read to its end; None if it
    holds more (it grew, or it is a /proc file of size 0): then it is read as a stream, capped.

    Each read asks for a byte more than is left: one that brings all `size` bytes has met
    the end, so a message takes one read, not a second to find nothing more."""
    pieces = []
    got = 0
    while piece := os.read(fd, size + 1 - got):
        pieces.append(piece)
        got += len(piece)
        if got >= size:
            break
    return None if got > size else b"".join(pieces)


def read_at_most(stream: BinaryIO, size: int | None) -> bytes:
    """The next `size` bytes of `stream` (all of it for None); the rest is left unread."""
    return stream.read() if size is None else stream.read(size)


def read_mbox_file(stream: BinaryIO, path: str, label: str | None, first: bytes, cap: int | None = None) -> Iterator[Message]:
    """`read_mbox` of a file whose envelope line `first` was read.

    A message saved with its envelope line (every file of the SpamAssassin corpus) has
    no other line to look at: read whole and checked by one scan, the file is the
    message that `read_mbox` would make of it.  Anything else goes to `read_mbox`, in blocks.
    """
    rest = stream.read(BLOCK)
    after = stream.read(1)  # empty at the end of the file
    if not after and not marked_lines(rest):
        yield Message(path, finish(rest if cap is None else rest[:cap]), label)
        return
    yield from read_mbox(stream, path, label, first + rest + after, cap)


def os_reason(err: OSError | ValueError) -> str:
    return getattr(err, "strerror", None) or str(err)


def is_maildir(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "cur")) or os.path.isdir(os.path.join(path, "new"))


def visible_entries(path: str) -> list[os.DirEntry[str]]:
    """A folder's entries, sorted by name, without dotfiles."""
    with os.scandir(path) as entries:
        return sorted((e for e in entries if not e.name.startswith(".")), key=lambda e: e.name)


def message_files(path: str, label: str | None = None) -> Iterator[Located | Problem]:
    """Every file below a folder, sorted, not yet read; maildirs give only `cur/` and `new/`.

    Linked folders are followed once each (a maildir's `cur/` and `new/` included), so
    a symlink loop ends and no message is read twice through one.
    """
    seen: set[tuple[int, int]] = set()

    def first_visit(folder: str) -> bool:
        st = os.stat(folder)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return False
        seen.add(key)
        return True

    def walk(folder: str) -> Iterator[Located | Problem]:
        try:
            if not first_visit(folder):
                return
            if is_maildir(folder):
                subs = [os.path.join(folder, sub) for sub in ("cur", "new") if os.path.isdir(os.path.join(folder, sub))]
                entries = [e for sub in subs if first_visit(sub) for e in visible_entries(sub)]
                entries.sort(key=lambda e: e.name)
            else:
                entries = visible_entries(folder)
        except OSError as err:
            yield Problem(folder, os_reason(err), label)
            return
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError as err:
                yield Problem(entry.path, os_reason(err), label)
                continue
            if is_dir:
                yield from walk(entry.path)
            else:
                yield Located(entry.path, label, is_regular(entry))

    yield from walk(path)


def is_regular(entry: os.DirEntry[str]) -> bool:
    """Whether a folder's entry is a regular file (by the listing's file type, no stat,
    unless it is a link); False when that cannot be told: `read_file` then stats it."""
    try:
        return entry.is_file()
    except OSError:
        return False


def read_located(located: Iterable[Located | Problem], max_bytes: int | None = None) -> Iterator[Item]:
    """The messages of files found but not yet read; Problems pass through in their place."""
    for place in located:
        if isinstance(place, Problem):
            yield place
        else:
            yield from read_file(place.path, place.label, max_bytes, place.regular)


def read_stdin(label: str | None = None, stream: BinaryIO | None = None, max_bytes: int | None = None) -> Iterator[Item]:
    """The one message on stdin; past the cap the rest is read and dropped, so the
    writer sees its whole message taken."""
    stream = stream or sys.stdin.buffer
    if stream.isatty():  # as `cat` users expect: a terminal waiting for input says so
        print(STDIN_NOTICE, file=sys.stderr, flush=True)
    try:
        cap = read_cap(max_bytes)
        data = read_at_most(stream, cap)
        # A short read met the end: reading on would wait for a second Ctrl-D on a terminal.
        while cap is not None and len(data) == cap and stream.read(BLOCK):
            pass
    except MemoryError:
        yield Problem("-", "out of memory reading it: skipped", label)
        return
    if not data:
        yield Problem("-", "empty input on stdin", label)
    else:
        yield Message("-", data, label)


def index_length(path: str) -> int | None:
    """How many files an index names (its lines that are not blank); None if it cannot be read."""
    try:
        with open(path, "rb") as lines:
            return sum(1 for line in lines if line.strip())
    except OSError:
        return None


def read_index(path: str, max_bytes: int | None = None) -> Iterator[Item]:
    """`LABEL PATH` lines (TREC style); paths are relative to the index file's folder."""
    return read_located(index_files(path), max_bytes)


def index_files(path: str) -> Iterator[Located]:
    """The files an index names, with their labels, not yet read."""
    root = os.path.dirname(os.path.abspath(path))
    try:
        lines = open(path, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115 - closed below
    except OSError as err:
        raise SourceError(f"{path}: {os_reason(err)}") from err
    with lines:
        for number, line in enumerate(lines, 1):
            fields = line.split(None, 1)
            if not fields:
                continue
            label = fields[0].lower()
            if label not in LABELS or len(fields) < 2:
                raise SourceError(f"{path}:{number}: expected 'spam PATH' or 'ham PATH', got {line.strip()[:60]!r}")
            yield Located(os.path.join(root, fields[1].strip()), label)


def locate_source(src: str, label: str | None = None) -> Iterator[Located | Problem]:
    """The files of any SRC but `-` (stdin), not yet read: for readers elsewhere (a Dask worker)."""
    if src == "-":
        raise SourceError("stdin (-) cannot be read here: give the message as a file")
    if is_imap(src):
        raise SourceError(f"{src}: an IMAP folder is read by this process only: give its messages as files here")
    if not src:
        raise SourceError("empty path given as a source")
    if os.path.isdir(src):
        return message_files(src, label)
    if not os.path.exists(src):
        raise SourceError(f"{src}: no such file or directory")
    return iter([Located(src, label)])


def is_imap(src: str | os.PathLike[str]) -> bool:
    return isinstance(src, str) and src.startswith(("imap://", "imaps://"))


def read_source(src: str, label: str | None = None, max_bytes: int | None = None, access: Any = None) -> Iterator[Item]:
    """Any SRC of the command line: `-`, a maildir, a folder, an mbox, a message file or an
    IMAP folder (logged in by `access`, an `imap.Access`; None: ~/.netrc, the system's CAs)."""
    if src == "-":
        return read_stdin(label, max_bytes=max_bytes)
    if is_imap(src):
        from spamnb.mail import imap  # off the pipe's start-up

        return imap.read_folder(src, label, max_bytes, access)
    return read_located(locate_source(src, label), max_bytes)


def locate_labelled(spam: Iterable[str], ham: Iterable[str], index: str | None = None) -> Iterator[Located | Problem]:
    """The files of `--spam`, `--ham` and `--index`, in that order, not yet read (stdin refused)."""
    return labelled(spam, ham, index, locate_source, index_files)


def read_labelled(
    spam: Iterable[str],
    ham: Iterable[str],
    index: str | None = None,
    max_bytes: int | None = None,
    on_empty: Callable[[str], None] | None = None,
    access: Any = None,
) -> Iterator[Item]:
    """The labelled mail of `--spam`, `--ham` and `--index`, in that order; `on_empty(SRC)`
    once a SRC (or the index) turns out to hold no message (`access` as `read_source`'s)."""
    streams = [(src, read_source(src, label, max_bytes, access)) for label, srcs in (("spam", spam), ("ham", ham)) for src in srcs]
    if index is not None:
        if not os.path.isfile(index):
            raise SourceError(f"{index}: no such index file")
        streams.append((index, read_index(index, max_bytes)))
    return itertools.chain.from_iterable(noting_empty(src, items, on_empty) for src, items in streams)


def labelled(spam: Iterable[str], ham: Iterable[str], index: str | None, source: Callable[[str, str], Iterator[T]], listing: Callable[[str], Iterator[T]]) -> Iterator[T]:
    """`source(SRC, label)` of each --spam then --ham SRC (checked up front), then `listing(index)`."""
    streams = [source(src, "spam") for src in spam] + [source(src, "ham") for src in ham]
    if index is not None:
        if not os.path.isfile(index):
            raise SourceError(f"{index}: no such index file")
        streams.append(listing(index))
    return itertools.chain.from_iterable(streams)


def read_all(sources: Iterable[str], max_bytes: int | None = None, on_empty: Callable[[str], None] | None = None, access: Any = None) -> Iterator[Item]:
    """Unlabelled mail of several SRC arguments, checked up front (`on_empty`, `access` as `read_labelled`'s)."""
    streams = [(src, read_source(src, max_bytes=max_bytes, access=access)) for src in sources]
    return itertools.chain.from_iterable(noting_empty(src, items, on_empty) for src, items in streams)


def locate_all(sources: Iterable[str]) -> Iterator[Located | Problem]:
    """The files of several SRC arguments, checked up front, not yet read (stdin refused)."""
    return itertools.chain.from_iterable([locate_source(src) for src in sources])


NOT_MAIL = "not mail (no header block)"
NOT_LEARNT = f"{NOT_MAIL}: not learnt (--force learns it)"


def screened(items: Iterable[Item], on_not_mail: Callable[[Message], Item]) -> Iterator[Item]:
    """`items`, each message without a header block (`headers.has_header_block`: a program,
    a picture, a note) replaced by `on_not_mail(message)`: a Problem to skip it, or the
    message itself to go on with it (after a warning)."""
    for item in items:
        yield on_not_mail(item) if isinstance(item, Message) and not headers.has_header_block(item.data) else item


def noting_empty(src: str, items: Iterator[Item], on_empty: Callable[[str], None] | None) -> Iterator[Item]:
    """`items`, then `on_empty(src)` if there were none (an empty folder, a mistyped maildir;
    a source of unreadable files only has had each named already)."""
    if on_empty is None:
        yield from items
        return
    found = False
    for item in items:
        found = True
        yield item
    if not found:
        on_empty(src)
