"""Readers: mbox, maildir, directories, files, stdin and index files."""
from __future__ import annotations

import io
import os
import tracemalloc
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spamnb.mail import sources
from spamnb.mail.items import read_cap
from spamnb.mail.sources import Message, Problem, SourceError
from tests.conftest import ENVELOPE, crlf, make_mail, mboxrd, write_files, write_maildir, write_mbox


def read(path: Path | str, label: str | None = None) -> list[sources.Item]:
    return list(sources.read_source(str(path), label))


def messages_of(items: list[sources.Item]) -> list[Message]:
    assert all(isinstance(i, Message) for i in items), items
    return [i for i in items if isinstance(i, Message)]


# --- mbox -------------------------------------------------------------------------


def test_mbox_splits_on_envelope_lines_and_numbers_from_one(tmp_path: Path) -> None:
    mails = [make_mail(f"message {i}", f"body {i}") for i in range(3)]
    path = write_mbox(tmp_path / "box.mbox", mails)
    got = messages_of(read(path, "spam"))
    assert [m.id for m in got] == [f"{path}:1", f"{path}:2", f"{path}:3"]
    assert [m.data for m in got] == mails
    assert {m.label for m in got} == {"spam"}


def test_mboxrd_from_escapes_are_undone_one_level(tmp_path: Path) -> None:
    body = "From the desk of the director\n>From quoted\n>>From twice quoted\nFrom: not a header\n"
    mail = make_mail("escapes", body)
    path = write_mbox(tmp_path / "box", [mail, make_mail("second", "x")])
    assert b">From the desk" in path.read_bytes()  # the writer really escaped it
    first = messages_of(read(path))[0]
    assert first.data == mail


def test_crlf_mbox(tmp_path: Path) -> None:
    mails = [crlf(make_mail(f"crlf {i}", f"line one\n\nFrom here on, 10:30 sharp\nend {i}")) for i in range(2)]
    path = tmp_path / "crlf.mbox"
    path.write_bytes(mboxrd(mails, newline=b"\r\n"))
    got = messages_of(read(path))
    assert [m.data for m in got] == mails


def test_last_message_without_trailing_newline(tmp_path: Path) -> None:
    path = tmp_path / "box"
    path.write_bytes(ENVELOPE + b"\nSubject: one\n\nfirst\n\n" + ENVELOPE + b"\nSubject: two\n\nno newline at the end")
    got = messages_of(read(path))
    assert [m.data for m in got] == [b"Subject: one\n\nfirst\n", b"Subject: two\n\nno newline at the end"]


def test_from_inside_a_body_is_not_a_separator(tmp_path: Path) -> None:
    # An unescaped envelope-like line not preceded by a blank line, and `From` mid-line.
    body = b"Subject: s\n\nA paragraph\nFrom me@example.com Mon Jan  1 10:30:00 2024\nand a line saying From x 10:30\n"
    path = tmp_path / "box"
    path.write_bytes(ENVELOPE + b"\n" + body + b"\n" + ENVELOPE + b"\nSubject: t\n\nsecond\n")
    got = messages_of(read(path))
    assert len(got) == 2
    assert got[0].data == body


def test_blank_line_then_from_without_a_time_is_body_text(tmp_path: Path) -> None:
    body = b"Subject: s\n\nIntro\n\nFrom here on we talk about money\n"
    path = tmp_path / "box"
    path.write_bytes(ENVELOPE + b"\n" + body)
    assert messages_of(read(path)) == [Message(str(path), body, None)]


def test_one_message_mbox_keeps_the_plain_path(tmp_path: Path) -> None:
    mail = make_mail("alone", "only one")
    path = write_mbox(tmp_path / "single.eml", [mail])
    assert messages_of(read(path)) == [Message(str(path), mail, None)]


def test_plain_message_file_is_one_message(tmp_path: Path) -> None:
    mail = make_mail("plain", "Hello\n\nFrom the team 10:30\n")
    [path] = write_files(tmp_path, [mail])
    assert messages_of(read(path, "ham")) == [Message(str(path), mail, "ham")]


# Lines that start like separators or escapes, with text, CRs and CRLF/LF endings mixed.
LINE_START = st.sampled_from(["", "From ", ">From ", ">>From ", "From x@y Mon Jan  1 00:00:00 2024", " From ", "\r", "From"])
LINE = st.tuples(LINE_START, st.text(alphabet="aF m>\r:1\u00e9\u0416", max_size=8), st.sampled_from(["\n", "\r\n"]))
BODY = st.lists(LINE.map(lambda t: "".join(t).encode("utf-8")), max_size=6).map(b"".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(BODY, min_size=1, max_size=6))
def test_mboxrd_round_trip(bodies: list[bytes]) -> None:
    got = list(sources.read_mbox(io.BytesIO(mboxrd(bodies)), "box"))
    assert [m.data for m in got] == bodies
    expected_ids = ["box"] if len(bodies) == 1 else [f"box:{i}" for i in range(1, len(bodies) + 1)]
    assert [m.id for m in got] == expected_ids


@pytest.fixture(scope="module")
def big_mbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """About 50 MB of mbox: 10,000 messages of about 5 kB."""
    path = tmp_path_factory.mktemp("big") / "big.mbox"
    line = b"x" * 1000 + b"\n"
    count = 10_000
    with path.open("wb") as out:
        for i in range(count):
            out.write(ENVELOPE + b"\nSubject: %d\n\n" % i + line * 5 + b"\n")
    return path, count


def test_mbox_is_streamed(big_mbox: tuple[Path, int]) -> None:
    path, count = big_mbox
    size = path.stat().st_size
    assert size > 45_000_000
    seen = 0
    tracemalloc.start()
    try:
        for item in sources.read_file(str(path)):
            assert isinstance(item, Message)
            seen += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == count
    # block-wise reading holds a block or two (1 MiB each), never the file
    assert peak < size / 10, f"peak {peak} bytes while reading {size} bytes"


# --- maildir and directories ---------------------------------------------------------


def test_maildir_reads_cur_and_new_only(tmp_path: Path) -> None:
    mails = [make_mail(f"m{i}", f"body {i}") for i in range(5)]
    paths = write_maildir(tmp_path / "md", mails)
    got = messages_of(read(tmp_path / "md", "ham"))
    assert [m.id for m in got] == [str(p) for p in paths]
    assert sorted(m.data for m in got) == sorted(mails)
    assert all(Path(m.id).parent.name in ("cur", "new") and not Path(m.id).name.startswith(".") for m in got)


def test_directory_is_recursive_sorted_and_skips_dotfiles(tmp_path: Path) -> None:
    root = tmp_path / "mail"
    (root / "b" / "inner").mkdir(parents=True)
    (root / ".git").mkdir()
    for rel in ("c.eml", "a.eml", "b/inner/z.eml", "b/m.eml", ".dot.eml", ".git/config", "b/.hidden"):
        (root / rel).write_bytes(make_mail(rel, "body"))
    got = messages_of(read(root))
    assert [Path(m.id).relative_to(root).as_posix() for m in got] == ["a.eml", "b/inner/z.eml", "b/m.eml", "c.eml"]


def test_directory_of_maildirs_and_mboxes(tmp_path: Path) -> None:
    write_maildir(tmp_path / "root" / "inbox", [make_mail("a", "a"), make_mail("b", "b")])
    box = write_mbox(tmp_path / "root" / "saved.mbox", [make_mail("c", "c"), make_mail("d", "d")])
    got = messages_of(read(tmp_path / "root"))
    assert len(got) == 4
    assert [m.id for m in got][-2:] == [f"{box}:1", f"{box}:2"]


def test_symlink_loop_terminates(tmp_path: Path) -> None:
    root = tmp_path / "mail"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "m.eml").write_bytes(make_mail("m", "m"))
    (root / "sub" / "up").symlink_to(root)
    (root / "self").symlink_to(root / "self")
    items = read(root)
    assert [i.id for i in items if isinstance(i, Message)] == [str(root / "sub" / "m.eml")]
    assert [i.id for i in items if isinstance(i, Problem)] == [str(root / "self")]


def test_unreadable_entries_are_problems_and_the_walk_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "mail"
    root.mkdir()
    (root / "a-dangling").symlink_to(tmp_path / "nowhere")
    (root / "b-empty").write_bytes(b"")
    (root / "c-good").write_bytes(make_mail("good", "good"))
    items = read(root, "spam")
    assert [type(i) for i in items] == [Problem, Problem, Message]
    assert items[0].reason and items[1].reason == "empty file"
    assert {i.label for i in items} == {"spam"}


def test_fifo_in_a_folder_does_not_hang_the_walk(tmp_path: Path) -> None:
    root = tmp_path / "mail"
    root.mkdir()
    os.mkfifo(root / "a-fifo")
    (root / "b-good").write_bytes(make_mail("good", "good"))
    items = read(root)  # before the fix this blocked for ever opening the FIFO
    assert [type(i) for i in items] == [Problem, Message]
    assert "regular file" in items[0].reason


def test_unreadable_single_file_is_a_problem(tmp_path: Path) -> None:
    link = tmp_path / "loop.eml"
    link.symlink_to(link)  # fails with ELOOP even for root
    items = list(sources.read_file(str(link)))
    assert len(items) == 1 and isinstance(items[0], Problem) and items[0].id == str(link)


@pytest.mark.skipif(not os.path.isfile("/proc/version"), reason="Linux's /proc")
def test_a_file_holding_more_than_its_size_says_is_read_to_its_end(tmp_path: Path) -> None:
    """/proc/version's fstat says it holds 0 bytes: it is read whole all the same, named
    or listed in a folder (a regular file by the listing, opened without a stat)."""
    whole = Path("/proc/version").read_bytes()
    (tmp_path / "version").symlink_to("/proc/version")
    assert whole and os.stat("/proc/version").st_size == 0
    assert read("/proc/version") == [Message("/proc/version", whole)]
    assert read(tmp_path) == [Message(str(tmp_path / "version"), whole)]


def test_a_file_growing_past_its_size_is_read_to_the_cap(tmp_path: Path) -> None:
    """Read as a stream once it holds more than its fstat said: no more than the cap is kept."""
    path = tmp_path / "growing.eml"
    path.write_bytes(make_mail("grows", "x" * 5000))
    with mock.patch.object(sources, "read_whole", lambda fd, size: None):
        got = list(sources.read_file(str(path), max_bytes=1024))
    assert got == [Message(str(path), path.read_bytes()[: read_cap(1024)])]


def test_empty_file_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "empty.eml"
    path.write_bytes(b"")
    assert read(path) == [Problem(str(path), "empty file", None)]


def test_missing_source_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        sources.read_source(str(tmp_path / "missing"))
    with pytest.raises(SourceError):
        sources.read_all([str(tmp_path / "missing")])
    with pytest.raises(SourceError):
        sources.read_source("")


# --- stdin ---------------------------------------------------------------------------


def test_stdin() -> None:
    mail = make_mail("stdin", "piped")
    assert list(sources.read_stdin("ham", stream=io.BytesIO(mail))) == [Message("-", mail, "ham")]
    [empty] = sources.read_stdin(stream=io.BytesIO(b""))
    assert isinstance(empty, Problem) and empty.id == "-"


# --- index files ---------------------------------------------------------------------


def test_index_labels_and_relative_paths(tmp_path: Path) -> None:
    spam, ham = make_mail("spam", "buy"), make_mail("ham", "meet")
    write_files(tmp_path / "data" / "s", [spam])
    write_files(tmp_path / "data" / "h", [ham])
    index = tmp_path / "data" / "index"
    index.write_text("SPAM s/msg000.eml\n\nham h/msg000.eml  \n")
    got = messages_of(list(sources.read_labelled([], [], str(index))))
    assert [(m.label, m.data) for m in got] == [("spam", spam), ("ham", ham)]
    assert got[0].id == str(tmp_path / "data" / "s" / "msg000.eml")


def test_index_missing_entry_is_a_problem(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.write_text("spam gone.eml\n")
    [item] = sources.read_labelled([], [], str(index))
    assert isinstance(item, Problem) and item.label == "spam"


@pytest.mark.parametrize("line", ["junk path.eml", "spam", "spam-ish x.eml"])
def test_index_bad_line_is_a_source_error(tmp_path: Path, line: str) -> None:
    (tmp_path / "ok.eml").write_bytes(make_mail("ok", "ok"))
    index = tmp_path / "index"
    index.write_text(f"ham ok.eml\n{line}\n")
    with pytest.raises(SourceError, match=r"index:2: expected 'spam PATH' or 'ham PATH'"):
        list(sources.read_labelled([], [], str(index)))


def test_missing_index_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such index file"):
        sources.read_labelled([], [], str(tmp_path / "index"))


def test_read_labelled_order_and_labels(tmp_path: Path) -> None:
    [s] = write_files(tmp_path / "s", [make_mail("s", "s")])
    [h] = write_files(tmp_path / "h", [make_mail("h", "h")])
    got = messages_of(list(sources.read_labelled([str(s)], [str(h)])))
    assert [(m.id, m.label) for m in got] == [(str(s), "spam"), (str(h), "ham")]
