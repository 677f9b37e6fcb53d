"""The block-wise mbox splitter gives exactly the messages of the line-by-line reference."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from spamnb import sources

ENVELOPE = re.compile(rb"From \S*.*\d{1,2}:\d\d")
ESCAPED_FROM = re.compile(rb">+From ")


def reference(lines, name):
    """The original line-by-line reader, kept here as the specification."""
    current = held = None
    count = 0
    blank_before = True
    out = []

    def join(ls):
        if ls and not ls[-1].rstrip(b"\r\n"):
            ls = ls[:-1]
        return b"".join(line[1:] if ESCAPED_FROM.match(line) else line for line in ls)

    for line in lines:
        stripped = line.rstrip(b"\r\n")
        if blank_before and stripped.startswith(b"From ") and ENVELOPE.match(stripped):
            if current is not None:
                if held is not None:
                    count += 1
                    out.append((f"{name}:{count}", join(held)))
                held = current
            current = []
            blank_before = False
            continue
        blank_before = not stripped
        if current is None:
            current = []
        current.append(line)
    rest = [x for x in (held, current) if x is not None]
    if count == 0 and len(rest) == 1:
        return [(name, join(rest[0]))]
    for x in rest:
        count += 1
        out.append((f"{name}:{count}", join(x)))
    return out


LINES = st.sampled_from(
    [b"From a@b Sat Jan  3 01:05:34 1996", b"From here on", b"From x 1:00", b">From me", b">>From you",
     b"", b"\r", b"body text", b"Subject: hi", b"From  12:34", b"From", b" From x 1:00", b"\r\r"]
)


def split_lines(data):
    """Lines as a binary file yields them: split after each LF only."""
    return [line for line in re.split(rb"(?<=\n)", data) if line]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(LINES, st.sampled_from([b"\n", b"\r\n", b""])), max_size=30), st.integers(1, 17))
def test_block_reader_matches_line_reader(parts, size):
    data = b"".join(line + (end if end or i == len(parts) - 1 else b"\n") for i, (line, end) in enumerate(parts))
    expected = reference(split_lines(data), "box")
    by_lines = [(m.id, m.data) for m in sources.read_mbox(split_lines(data), "box")]
    by_blocks = [(m.id, m.data) for m in sources.read_mbox((data[i : i + size] for i in range(0, len(data), size)), "box")]
    whole = [(m.id, m.data) for m in sources.read_mbox([data], "box")]
    assert by_lines == expected
    assert by_blocks == expected
    assert whole == expected


def test_corpus_style_file(tmp_path):
    path = tmp_path / "one"
    path.write_bytes(b"From a@b Sat Jan  3 01:05:34 1996\nSubject: x\n\nFrom here on\n\n>From y\n")
    (msg,) = sources.read_file(str(path))
    assert msg.id == str(path)
    assert msg.data == b"Subject: x\n\nFrom here on\n\nFrom y\n"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"\n", b"\r", b"\r\n", b"a", b"From x", b": "]), max_size=20))
def test_header_split_is_the_blank_line_regex(parts):
    from spamnb import headers

    data = b"".join(parts)
    envelope, head, rest = headers.split_message(data)
    assert envelope + head + rest == data
    body = data[len(envelope) :]
    if body.startswith((b"\n", b"\r\n")):
        assert head == b""
        return
    blank = headers.BLANK_LINE.search(body)
    if blank is None:
        assert (head, rest) == (body, b"")
    else:
        cut = body.index(b"\n", blank.start()) + 1
        assert (head, rest) == (body[:cut], body[cut:])
