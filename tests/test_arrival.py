"""`eval --online --order date` (spamnb.mail.arrival): mail replayed in the order of its
`Date:` headers, undated last, ties by path (issue 26)."""
from __future__ import annotations

import datetime
import email.utils
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spamnb.mail.arrival import by_date, date_of
from spamnb.mail.sources import Message, Problem
from tests.conftest import HAM_WORDS, SHARED_WORDS, SPAM_WORDS, make_mail

SPAMNB = Path(sys.executable).parent / "spamnb"


def dated(date: str | None, body: str = "hello") -> bytes:
    head = "" if date is None else f"Date: {date}\n"
    return f"From: a@example.com\n{head}Subject: s\n\n{body}\n".encode()


@pytest.mark.parametrize(
    "date, seconds",
    [
        ("Mon, 02 Sep 2002 10:00:00 +0200", 1030953600.0),
        ("Mon, 02 Sep 2002 08:00:00", 1030953600.0),  # no zone: taken as UTC
        ("Mon, 02 Sep 2002\n 08:00:00 +0000", 1030953600.0),  # folded
        ("Sat, 02 Feb 0102 11:39:51 +0200", None),  # before the epoch: a spammer's typo
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_date_of(date: str | None, seconds: float | None) -> None:
    assert date_of(dated(date)) == seconds


def test_only_the_header_block_is_read() -> None:
    assert date_of(b"From: a@example.com\n\nDate: Mon, 02 Sep 2002 08:00:00 +0000\n") is None


@given(st.datetimes(min_value=datetime.datetime(1971, 1, 1), max_value=datetime.datetime(2200, 1, 1), timezones=st.timezones()))
def test_any_date_as_mail_writes_it_is_read_back(when: datetime.datetime) -> None:
    written = email.utils.format_datetime(when.replace(microsecond=0))
    assert date_of(dated(written)) == when.replace(microsecond=0).timestamp()


@given(st.binary(max_size=300))
def test_any_bytes_give_a_date_or_none(data: bytes) -> None:
    found = date_of(b"Date: " + data + b"\n\nbody")
    assert found is None or found > 0


def test_by_date_puts_undated_last_and_breaks_ties_by_path() -> None:
    same = "Tue, 03 Sep 2002 08:00:00 +0000"
    items = [
        Message("b/2", dated(None)),
        Message("m.mbox:10", dated(same)),
        Problem("bad", "unreadable"),
        Message("m.mbox:9", dated(same)),
        Message("a/1", dated("Mon, 02 Sep 2002 08:00:00 +0000")),
        Message("a/0", dated(None)),
    ]
    assert [i.id for i in by_date(items)] == ["a/1", "m.mbox:9", "m.mbox:10", "a/0", "b/2", "bad"]


def test_eval_online_by_date_replays_the_mail_as_it_arrived(tmp_path: Path) -> None:
    """The same figures as an index written in that order, through the console script."""
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    rng = random.Random(26)
    messages = []
    for i in range(40):
        label = "spam" if i % 3 == 0 else "ham"
        words = " ".join(rng.choices((SPAM_WORDS if label == "spam" else HAM_WORDS) + SHARED_WORDS, k=12))
        day = (i * 17) % 38  # the days scrambled against the file names; the last two undated
        date = None if i >= 38 else email.utils.format_datetime(start + datetime.timedelta(days=day))
        data = make_mail(f"{label} {i}", words, headers=[] if date is None else [("Date", date)])
        messages.append((label, f"m{i:02d}", data, (date is None, 0 if date is None else day)))
    for _, name, data, _ in messages:
        (tmp_path / name).write_bytes(data)
    (tmp_path / "index").write_text("".join(f"{label} {name}\n" for label, name, *_ in messages))
    arrived = sorted(messages, key=lambda m: (m[3], m[1]))
    (tmp_path / "arrived").write_text("".join(f"{label} {name}\n" for label, name, *_ in arrived))

    def run(*args: str) -> dict:
        done = subprocess.run([str(SPAMNB), "-q", "eval", "--online", "--json", *args], capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    by_date_run = run("--order", "date", "--index", str(tmp_path / "index"))
    given_run = run("--index", str(tmp_path / "arrived"))
    assert by_date_run["online"].pop("order") == "date" and given_run["online"].pop("order") == "given"
    assert by_date_run == given_run
    assert run("--index", str(tmp_path / "index")) != given_run  # the order matters to these figures


def test_order_goes_with_online() -> None:
    done = subprocess.run([str(SPAMNB), "eval", "--order", "date", "--index", "x"], capture_output=True, timeout=60)
    assert done.returncode == 2 and b"--order goes with --online" in done.stderr
