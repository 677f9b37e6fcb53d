"""What every reader of mail yields, local (`sources`) or IMAP (`imap`): a `Message`, or a
`Problem` naming what could not be read; and the one error of a source that cannot be
used at all."""
from __future__ import annotations

from typing import NamedTuple

from spamnb.mail.headers import HEADROOM


class Message(NamedTuple):
    id: str
    data: bytes
    label: str | None = None


class Problem(NamedTuple):
    """A message or file that could not be read; `reason` is one line."""

    id: str
    reason: str
    label: str | None = None


Item = Message | Problem


class SourceError(Exception):
    """A source named on the command line cannot be used at all."""


def read_cap(max_bytes: int | None) -> int | None:
    """Bytes kept of one message for a tokeniser capped at `max_bytes` (None: all)."""
    return None if max_bytes is None else max_bytes + HEADROOM
