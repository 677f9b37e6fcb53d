"""Mail in the order it arrived: by the time in each message's `Date:` header.

`eval --online --order date` replays an archive as it came, so that anyone can measure
the filter on their own mail the way it meets it (the TREC spam track's protocol).
"""
from __future__ import annotations

import datetime
import email.utils
import re
from collections.abc import Iterable

from spamnb.mail.headers import split_message
from spamnb.mail.sources import Item, Message

# The first Date field of a header block, with its folded lines.
DATE = re.compile(rb"^Date:[ \t]*(.*(?:\r?\n[ \t].*)*)", re.M | re.I)


def date_of(data: bytes) -> float | None:
    """Seconds since the epoch of the message's `Date:` (a date without a zone taken as UTC), or
    None: none, or none that parses, or one before the epoch (spam dated the year 0102 is undated)."""
    _, head, _ = split_message(data)
    found = DATE.search(head)
    if found is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(" ".join(found.group(1).decode("latin-1").split()))
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.UTC)
        seconds = when.timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return seconds if seconds > 0 else None


def by_date(items: Iterable[Item]) -> list[Item]:
    """`items` in the order of their `Date:` headers, those without one (and unreadable
    ones) last, ties by path (an mbox's messages by their number in it).  Reads them all
    first: the last message may be the oldest."""

    def key(item: Item) -> tuple[bool, float, str, int]:
        when = date_of(item.data) if isinstance(item, Message) else None
        path, colon, number = item.id.rpartition(":")
        place = (path, int(number)) if colon and number.isdigit() else (item.id, 0)
        return (when is None, when or 0.0, *place)

    return sorted(items, key=key)
