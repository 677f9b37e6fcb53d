"""What the email package's parser is given at the most: shared by the fast reader
(`spamnb.mail.message`) and the bounded parser (`spamnb.mail.mime`), which imports the email package."""
from __future__ import annotations

# Bounds on what the email package is given.  Its parser costs microseconds per
# line and per part, times the nesting depth, and its header code is quadratic in a
# header's length: 1 MiB of hostile mail (deep nesting, empty parts, long parameter
# lists) took seconds to minutes (docs/measurements.md).  Real mail
# stays far inside these; beyond them the rest of a header is dropped, a part nested
# deeper is read as plain text, and a message of more parts is tokenised raw.
MAX_LINES = 20_000
MAX_MESSAGES = 1_000  # parts, all levels
MAX_DEPTH = 10
MAX_HEADER_CHARS = 16_384  # per header value, folded lines included
# Content-Type parameters are parsed again on every look-up, in time quadratic in
# the value; real ones are short.
MAX_CONTENT_TYPE_CHARS = 1_024


def capped(name: str, value: str) -> str:
    """A header value cut to what the email package may be given (see MAX_HEADER_CHARS)."""
    return value[: MAX_CONTENT_TYPE_CHARS if name.lower() == "content-type" else MAX_HEADER_CHARS]
