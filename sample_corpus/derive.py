"""Derive the sample corpus's mbox copies and index from its Maildir message files.

The message files under maildir/ are the source.  From them:

* ``ham.mbox``, ``spam.mbox``: mboxrd, messages in Maildir file-name order, each after a
  ``From SENDER DATE`` line (the Return-Path address, ``MAILER-DAEMON`` for ``<>``; the
  delivery time, the seconds that start the file name) and followed by a blank line;
* ``index``: ``LABEL PATH`` per message, in delivery order.

Usage: ``python sample_corpus/derive.py`` rewrites them; ``--check`` exits 1, naming the
stale files, if they differ from what the message files give.  Standard library only.
"""
from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLASSES = ("ham", "spam")
FROM_LINE = re.compile(rb"^>*From ")
RETURN_PATH = re.compile(rb"^Return-Path:\s*<([^>]*)>", re.MULTILINE | re.IGNORECASE)


def message_files(kind: str) -> list[Path]:
    """The Maildir's message files (cur/ and new/, dotfiles skipped), sorted by file name."""
    folder = HERE / "maildir" / kind
    found = [path for sub in ("cur", "new") for path in (folder / sub).iterdir() if not path.name.startswith(".")]
    return sorted(found, key=lambda path: path.name)


def delivered(path: Path) -> dt.datetime:
    return dt.datetime.fromtimestamp(int(path.name.split(".", 1)[0]), dt.UTC)


def mboxrd_entry(path: Path) -> bytes:
    data = path.read_bytes()
    head = data.split(b"\n\n", 1)[0]
    sender = RETURN_PATH.search(head)
    envelope = (sender.group(1) if sender else b"").decode("ascii") or "MAILER-DAEMON"
    when = delivered(path)
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    escaped = [b">" + line if FROM_LINE.match(line) else line for line in lines]
    from_line = f"From {envelope} {when:%a %b} {when.day:2d} {when:%H:%M:%S %Y}".encode("ascii")
    return b"\n".join([from_line, *escaped]) + b"\n\n"


def derived() -> dict[str, bytes]:
    """File name (relative to this folder) -> the bytes it should hold."""
    out = {f"{kind}.mbox": b"".join(map(mboxrd_entry, message_files(kind))) for kind in CLASSES}
    every = sorted(((path, kind) for kind in CLASSES for path in message_files(kind)), key=lambda pk: (delivered(pk[0]), pk[0].name))
    out["index"] = "".join(f"{kind} {path.relative_to(HERE).as_posix()}\n" for path, kind in every).encode("ascii")
    return out


def main(argv: list[str]) -> int:
    wanted = derived()
    if "--check" in argv:
        stale = [name for name, data in wanted.items() if not (HERE / name).is_file() or (HERE / name).read_bytes() != data]
        for name in stale:
            print(f"sample_corpus/{name} is stale: run python sample_corpus/derive.py", file=sys.stderr)
        return 1 if stale else 0
    for name, data in wanted.items():
        (HERE / name).write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
