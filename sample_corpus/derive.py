"""Derive a corpus's mbox copies and index from its Maildir message files.

The message files under ROOT/maildir/ are the source (ROOT is this folder unless given;
generate.py calls ``write`` on the corpus it generates).  From them:

* ``ham.mbox``, ``spam.mbox``: mboxrd, messages in Maildir file-name order, each after a
  ``From SENDER DATE`` line (the Return-Path address, ``MAILER-DAEMON`` for ``<>``; the
  delivery time, the seconds that start the file name) and followed by a blank line;
* ``index``: ``LABEL PATH`` per message, in delivery order.

Usage: ``python sample_corpus/derive.py [ROOT]`` rewrites them; ``--check`` exits 1,
naming the stale files, if they differ from what the message files give.  Standard
library only.
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


def message_files(root: Path, kind: str) -> list[Path]:
    """The Maildir's message files (cur/ and new/, dotfiles skipped), sorted by file name."""
    folder = root / "maildir" / kind
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


def derived(root: Path = HERE) -> dict[str, bytes]:
    """File name (relative to ROOT) -> the bytes it should hold."""
    out = {f"{kind}.mbox": b"".join(mboxrd_entry(path) for path in message_files(root, kind)) for kind in CLASSES}
    every = sorted(((path, kind) for kind in CLASSES for path in message_files(root, kind)), key=lambda pk: (delivered(pk[0]), pk[0].name))
    out["index"] = "".join(f"{kind} {path.relative_to(root).as_posix()}\n" for path, kind in every).encode("ascii")
    return out


def write(root: Path) -> None:
    for name, data in derived(root).items():
        (root / name).write_bytes(data)


def main(argv: list[str]) -> int:
    roots = [arg for arg in argv if not arg.startswith("--")]
    root = Path(roots[0]) if roots else HERE
    if "--check" in argv:
        stale = [name for name, data in derived(root).items() if not (root / name).is_file() or (root / name).read_bytes() != data]
        again = "python sample_corpus/derive.py" + ("" if root == HERE else f" {root}")
        for name in stale:
            print(f"{root.name}/{name} is stale: run {again}", file=sys.stderr)
        return 1 if stale else 0
    write(root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
