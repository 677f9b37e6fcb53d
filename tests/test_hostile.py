"""Hostile input: whatever the bytes, no exception escapes, every message is classified
or reported, and each message costs bounded memory.

MEMORY_BOUND bytes of peak traced allocation (tracemalloc) is checked for every explicit
case; run with `-s` to print what each case measured.  Their time is measured by `make
bench` (bench/hostile.py), not asserted here: wall-clock bounds fail on a loaded machine.
"""
from __future__ import annotations

import base64
import io
import os
import random
import re
import signal
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from spamnb.mail import headers, sources
from spamnb.mail.sources import Problem
from spamnb.models import store
from spamnb.models.model import Model, Scored
from spamnb.run import classifier
from spamnb.text.tokens import (
    NOT_LETTERS,
    RECEIVED_PREFIX,
    Tokenizer,
    TokenSettings,
    host_names,
    received_parts,
    received_tokens,
)
from tests.conftest import ENVELOPE, make_mail, mboxrd, run_cli
from tests.test_pipe import FAST, HAM_MAIL, SPAM_MAIL, run_pipe, small_model, verdict_of

MEMORY_BOUND = 200 * 2**20  # bytes per message
MiB = 2**20
MEASURED: dict[str, float] = {}  # case -> peak MiB


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield small_model(tmp_path_factory.mktemp("model"))
    if MEASURED:
        print("\nper message: peak traced MiB")
        for name, peak in sorted(MEASURED.items(), key=lambda kv: -kv[1]):
            print(f"  {peak:7.1f} MiB  {name}")


@pytest.fixture(scope="module")
def model(model_path: Path) -> Model:
    return store.load(str(model_path))


def classify_source(model: Model, src: str) -> list[Scored | Problem]:
    """Read, tokenise and score: the whole per-message path of `spamnb classify SRC`."""
    return list(classifier.classify(model, sources.read_source(src)))


def within_bounds(name: str, work: Callable[[], object]) -> object:
    """Run `work` under tracemalloc, within the stated memory bound."""
    tracemalloc.start()
    try:
        result = work()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    MEASURED[name] = peak / MiB
    assert peak <= MEMORY_BOUND, f"{name}: {peak / MiB:.0f} MiB"
    return result


# --- hostile messages ----------------------------------------------------------------------


def mime(content_type: str, body: bytes, *extra: str) -> bytes:
    head = "\n".join(["From: x@example.com", "Subject: hostile", f"Content-Type: {content_type}", *extra])
    return head.encode() + b"\n\n" + body


def nested_multiparts(depth: int, inside: bytes = b"cheap pills deep inside") -> bytes:
    opening = b"".join(b'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n' % (i, i) for i in range(depth))
    closing = b"".join(b"\n--b%d--\n" % i for i in reversed(range(depth)))
    return opening + b"Content-Type: text/plain\n\n" + inside + closing


def multipart(parts: list[bytes], boundary: bytes = b"XYZ") -> bytes:
    body = b"".join(b"--" + boundary + b"\n" + part + b"\n" for part in parts) + b"--" + boundary + b"--\n"
    return mime(f'multipart/mixed; boundary="{boundary.decode()}"', body)


TEXT_PART = b"Content-Type: text/plain\n\ncheap pills viagra\n"
B64_PART = b"Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\n" + base64.encodebytes(b"casino winner " * 50)
WELL_FORMED = multipart([TEXT_PART, B64_PART, b"Content-Type: text/html\n\n<p>lottery <b>prize</b></p>\n"])

HOSTILE: dict[str, Callable[[], bytes]] = {
    "random bytes, 1 MiB": lambda: random.Random(0).randbytes(MiB),
    "truncated MIME, mid-header": lambda: WELL_FORMED[: WELL_FORMED.index(b"Content-Transfer")],
    "truncated MIME, mid-base64": lambda: WELL_FORMED[: WELL_FORMED.index(b"Content-Transfer") + 100],
    "multipart without a boundary": lambda: mime("multipart/mixed", TEXT_PART * 3),
    "multipart with the wrong boundary": lambda: multipart([TEXT_PART, TEXT_PART]).replace(b'boundary="XYZ"', b'boundary="ABC"'),
    "multipart never closed": lambda: multipart([TEXT_PART] * 3).rsplit(b"--XYZ--", 1)[0],
    "multipart of an empty boundary": lambda: multipart([TEXT_PART], b"").replace(b'boundary=""', b"boundary="),
    "multiparts nested 1,000 deep": lambda: nested_multiparts(1000),
    "multiparts nested 20,000 deep (1 MiB)": lambda: nested_multiparts(20_000),
    "multiparts nested 900 deep around 1 MiB of lines": lambda: nested_multiparts(900, b"cheap\n" * (MiB // 6)),
    "message/rfc822 nested 30,000 deep": lambda: b"Content-Type: message/rfc822\n\n" * 30_000 + b"cheap pills",
    "130,000 empty parts": lambda: multipart([b""] * 130_000),
    "10 MB single-line body": lambda: mime("text/plain", b"viagra casino " * (10 * MiB // 14)),
    "NUL bytes everywhere": lambda: b"Sub\x00ject: a\x00b\n\x00\n" + b"\x00" * MiB,
    "invalid base64": lambda: mime("text/plain", b"!!!!@@@@====cheap\n====A\nQQ=\n" * 1000, "Content-Transfer-Encoding: base64"),
    "invalid quoted-printable": lambda: mime("text/plain", b"=ZZ=\n=4=\n=\ncheap =C3=28 =\r\n" * 1000, "Content-Transfer-Encoding: quoted-printable"),
    "unknown transfer encoding": lambda: mime("text/plain", b"cheap pills", "Content-Transfer-Encoding: x-rot13"),
    "unknown charset": lambda: mime("text/plain; charset=x-no-such-charset", b"cheap \xe9\xff pills"),
    "lying charset (utf-8 declared, latin-1 sent)": lambda: mime("text/plain; charset=utf-8", "café crème".encode("latin-1")),
    "lying charset (utf-16 on ASCII)": lambda: mime("text/plain; charset=utf-16", b"cheap pills odd"),
    "charset with a NUL": lambda: mime('text/plain; charset="utf-8\x00"', b"cheap pills"),
    "charset that is no text codec (base64)": lambda: mime("text/plain; charset=base64", b"Y2hlYXA="),
    "punycode charset, 1 MiB": lambda: mime("text/plain; charset=punycode", b"a" * MiB),
    "idna charset, 1 MiB": lambda: mime("text/plain; charset=idna", b"xn--" + b"ab" * (MiB // 2)),
    "encoded words with unknown and lying charsets": lambda: (
        b"Subject: =?x-nope?q?cheap?= =?utf-8?b?/////w==?= =?utf-8?q?=FF?= =?punycode?q?" + b"a" * 5000 + b"?=\n\nbody\n"
    ),
    "malformed headers": lambda: b"no colon here\n: empty name\n\xff\xfe: 8-bit name\nSub ject: space\n\t\n\nbody\n",
    "1 MB header line": lambda: b"Subject: " + b"x" * MiB + b"\n\nbody\n",
    "100,000 headers": lambda: b"".join(b"X-H%d: value %d\n" % (i, i) for i in range(100_000)) + b"\nbody\n",
    "1 MiB of folded lines": lambda: b"Subject: cheap\n" + b" pills\n" * (MiB // 7) + b"\nbody\n",
    "Content-Type parameter bomb, 60 parts": lambda: multipart([b'Content-Type: text/plain; a="' + b";" * 16_000 + b"\n\nx"] * 60),
    "encoded-word bomb": lambda: b"Subject: =?utf-8?q?hi?= " + b"=?a?q?a " * (MiB // 8) + b"\n\nbody\n",
    "unclosed < in HTML, 1 MiB": lambda: mime("text/html", b"<" * MiB),
    "unclosed <script in HTML": lambda: mime("text/html", b"<script " * (MiB // 8)),
    "unclosed comments in HTML": lambda: mime("text/html", b"<!--" * (MiB // 4)),
    "CR-only line ends": lambda: b"Subject: cheap\rFrom: a\r\rviagra\r" * 30_000,
    "1 MiB of empty lines": lambda: b"Subject: x\n\n" + b"\n" * MiB,
    "envelope line of 1 MB": lambda: b"From " + b"x" * MiB + b"\nSubject: s\n\nbody\n",
    "mbox message of 10 MB in short lines": lambda: ENVELOPE + b"\nSubject: s\n\n" + b"ab\n" * (10 * MiB // 3),
    "60 Received headers of 8,000 dotted labels": lambda: (b"Received: from " + b"a." * 8000 + b"\n") * 60 + b"\nbody\n",
    "only a newline": lambda: b"\n",
    "one byte": lambda: b"x",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_message_is_classified_within_bounds(model: Model, model_path: Path, tmp_path: Path, name: str) -> None:
    data = HOSTILE[name]()
    path = tmp_path / "hostile.eml"
    path.write_bytes(data)
    results = within_bounds(name, lambda: classify_source(model, str(path)))
    assert isinstance(results, list) and results
    assert all(isinstance(r, Scored) for r in results), results[:3]
    # The pipe passes it through with one verdict header.
    piped = run_pipe(model_path, data)
    assert piped.status in (0, 1, 2), piped.err
    verdict, score = verdict_of(piped.out)
    assert piped.out == headers.stamp(data, f"{verdict}, score={score}")


def test_mime_bounds_keep_real_mail_whole() -> None:
    """The parser bounds cut abuse only: a well-formed message loses no token to them."""
    tokens = Tokenizer()(WELL_FORMED)
    for word in ("cheap", "pills", "viagra", "casino", "winner", "lottery", "prize"):
        assert word in tokens
    assert "deep" in Tokenizer()(nested_multiparts(8))


# --- property-based: the tokeniser and the readers on anything -----------------------------

HEADER_NAMES = st.sampled_from(["Content-Type", "Content-Transfer-Encoding", "Subject", "MIME-Version", "X-Spamnb", "From"])
CONTENT_TYPES = st.sampled_from(
    ["text/plain", "text/html", "multipart/mixed", "multipart/alternative", "message/rfc822", "application/octet-stream", "text/x-weird"]
)
CHARSETS = st.sampled_from(["utf-8", "latin-1", "utf-16", "x-unknown", "punycode", "idna", "base64", "", "us-ascii\x00", "utf-7"])
ENCODINGS = st.sampled_from(["base64", "quoted-printable", "7bit", "8bit", "x-uuencode", "bogus"])


@st.composite
def mime_tree(draw: st.DrawFn, depth: int = 0) -> bytes:
    """A message that is nearly MIME: random types, charsets, encodings, boundaries."""
    content_type = draw(CONTENT_TYPES)
    boundary = draw(st.sampled_from(["b1", "b2", "", "b1 b2", '"']))
    lines = [f'Content-Type: {content_type}; charset="{draw(CHARSETS)}"; boundary="{boundary}"']
    lines += [f"{draw(HEADER_NAMES)}: {draw(st.text(max_size=20))}" for _ in range(draw(st.integers(0, 3)))]
    if draw(st.booleans()):
        lines.append(f"Content-Transfer-Encoding: {draw(ENCODINGS)}")
    head = "\n".join(lines).encode("utf-8", "surrogatepass")
    if content_type.startswith("multipart") and depth < 4:
        used = draw(st.sampled_from([boundary, "b1", "zz"])).encode()
        parts = draw(st.lists(mime_tree(depth + 1), max_size=3))
        body = b"".join(b"--" + used + b"\n" + part + b"\n" for part in parts)
        if draw(st.booleans()):
            body += b"--" + used + b"--\n"
    else:
        body = draw(st.binary(max_size=300))
    message = head + draw(st.sampled_from([b"\n\n", b"\r\n\r\n", b"\n"])) + body
    cut = draw(st.integers(0, len(message)))
    return message[:cut] if draw(st.booleans()) else message


@FAST
@given(st.one_of(st.binary(max_size=2000), mime_tree()))
def test_tokeniser_never_raises(data: bytes) -> None:
    tokens = Tokenizer()(data)
    assert all(isinstance(t, str) and t for t in tokens)


def test_a_fault_after_parsing_falls_back_to_the_raw_text_and_the_batch_goes_on(model: Model) -> None:
    """A message whose parts the tokeniser fails on (here: a fault planted in the HTML
    reader) is tokenised as raw text, as unparseable mail is, and classified with the rest."""
    html = make_mail("offer", "see the offer", html="<p>Buy <b>now</b> http://example.com/x</p>")
    plain = make_mail("lunch", "see you at noon")

    def faulty(markup: str) -> str:
        raise ValueError("planted fault")

    with mock.patch("spamnb.text.tokens.html_to_text", faulty):
        tokens = Tokenizer()(html)
        scored = list(classifier.classify(model, [sources.Message("a", html), sources.Message("b", plain)]))
    raw = html.decode("latin-1")
    assert tokens == Tokenizer().tokens_of([], [("plain", raw)])
    assert "subject:offer" not in tokens and "offer" in tokens and "<b>now</b>" in raw and "now" in tokens
    assert [s.id for s in scored] == ["a", "b"] and all(isinstance(s, Scored) for s in scored)


@FAST
@given(st.lists(st.one_of(st.binary(max_size=300), mime_tree()), max_size=5), st.sampled_from([b"\n", b"\r\n"]), st.booleans())
def test_mbox_reader_on_anything(model: Model, tmp_path_factory: pytest.TempPathFactory, mails: list[bytes], newline: bytes, raw: bool) -> None:
    """An mbox of hostile messages (or its bytes run together) reads, then scores, whole."""
    path = tmp_path_factory.mktemp("mbox") / "box"
    path.write_bytes(b"".join(mails) if raw else mboxrd(mails, newline))
    results = classify_source(model, str(path))
    if path.stat().st_size == 0:
        assert results == [Problem(str(path), "empty file")]
    else:
        assert results and all(isinstance(r, Scored) for r in results)


# --- files that cannot be read ---------------------------------------------------------------


@pytest.fixture
def alarm() -> Iterator[None]:
    """Fail, not hang, if a reader blocks (opening a FIFO would)."""

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("a reader blocked")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def hostile_folder(root: Path, good: int) -> tuple[list[Path], list[str]]:
    """`good` messages and every kind of unreadable entry, interleaved; (good paths, bad names)."""
    root.mkdir()
    paths = []
    for i in range(good):
        path = root / f"m{i:05d}.eml"
        path.write_bytes((SPAM_MAIL if i % 2 else HAM_MAIL).replace(b"Subject: ", b"Subject: %d " % i, 1))
        paths.append(path)
    bad = {
        "m00000a-empty.eml": lambda p: p.write_bytes(b""),
        "m00001a-dangling.eml": lambda p: p.symlink_to(root / "nowhere"),
        "m00002a-fifo.eml": lambda p: os.mkfifo(p),
        "m00003a-self-loop.eml": lambda p: p.symlink_to(p.name),
        "m00004a-eio.eml": lambda p: p.symlink_to("/proc/self/mem"),
    }
    for name, make in bad.items():
        make(root / name)
    (root / "sub").mkdir()
    (root / "sub" / "loop").symlink_to(root)  # a folder that contains itself
    (root / "sub" / "up").symlink_to("..")
    return paths, [str(root / name) for name in bad]


def test_unreadable_entries_are_reported_once_and_the_walk_goes_on(model: Model, tmp_path: Path, alarm: None) -> None:
    if not Path("/proc/self/mem").exists():
        pytest.skip("needs /proc/self/mem for a file that fails on read")
    paths, bad = hostile_folder(tmp_path / "mail", 20)
    results = classify_source(model, str(tmp_path / "mail"))
    problems = [r.id for r in results if isinstance(r, Problem)]
    assert sorted(problems) == sorted(bad)
    scored = [r.id for r in results if isinstance(r, Scored)]
    assert sorted(scored) == sorted(map(str, paths)), "each good message once, despite the loops"


def test_an_entry_that_vanishes_mid_walk_is_reported(tmp_path: Path) -> None:
    paths = [tmp_path / f"{i}.eml" for i in range(5)]
    for path in paths:
        path.write_bytes(make_mail(f"n{path.stem}"))
    items = []
    for item in sources.read_source(str(tmp_path)):
        items.append(item)
        if len(items) == 1:
            paths[3].unlink()
    assert [type(i).__name__ for i in items] == ["Message"] * 3 + ["Problem", "Message"]
    assert items[3].id == str(paths[3])


def test_index_with_unreadable_and_strange_paths(model: Model, tmp_path: Path) -> None:
    good = tmp_path / "good.eml"
    good.write_bytes(make_mail("fine"))
    (tmp_path / "folder.eml").mkdir()
    index = tmp_path / "index"
    index.write_bytes(b"spam good.eml\nham folder.eml\nspam missing.eml\nham bad\x00name.eml\nspam \xff\xfe.eml\nham good.eml\n")
    items = list(sources.read_index(str(index)))
    assert [type(i).__name__ for i in items] == ["Message", "Problem", "Problem", "Problem", "Problem", "Message"]


def test_empty_input(model: Model, tmp_path: Path) -> None:
    empty = tmp_path / "empty.eml"
    empty.write_bytes(b"")
    assert classify_source(model, str(empty)) == [Problem(str(empty), "empty file")]
    assert list(sources.read_stdin(stream=io.BytesIO(b""))) == [Problem("-", "empty input on stdin")]


# --- batch robustness ------------------------------------------------------------------------

BATCH = 10_000


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], list[str]]:
    root = tmp_path_factory.mktemp("batch") / "mail"
    paths, bad = hostile_folder(root, BATCH)
    return root, paths, bad


def test_a_batch_with_bad_messages_reports_each_and_classifies_the_rest(
    model_path: Path, batch: tuple[Path, list[Path], list[str]], alarm: None
) -> None:
    root, paths, bad = batch
    result = run_cli("-q", "classify", "--json", "-m", str(model_path), str(root))
    assert result.exit_code == 1, result.stderr
    errors = result.stderr.splitlines()
    assert len(errors) == len(bad)
    for name in bad:
        assert sum(line.startswith(f"spamnb: {name}: ") for line in errors) == 1, (name, errors)
    assert len(result.stdout.splitlines()) == len(paths) == BATCH


def test_training_on_a_batch_with_bad_messages_learns_the_rest(
    tmp_path: Path, batch: tuple[Path, list[Path], list[str]], alarm: None
) -> None:
    root, paths, bad = batch
    model = tmp_path / "model.npz"
    result = run_cli("-q", "train", "-m", str(model), "--spam", str(root))
    assert result.exit_code == 1
    assert f"learnt {len(paths)}," in result.stderr
    assert sum(line.startswith("spamnb: ") and "learnt" not in line for line in result.stderr.splitlines()) == len(bad)
    assert int(store.load(str(model)).counts.docs[1]) == len(paths)


def test_hostile_cases_are_what_they_claim() -> None:
    assert len(HOSTILE["10 MB single-line body"]()) >= 10 * 10**6
    assert b"\n" not in HOSTILE["10 MB single-line body"]().split(b"\n\n", 1)[1]
    assert HOSTILE["multiparts nested 1,000 deep"]().count(b"multipart/mixed") == 1000
    assert HOSTILE["100,000 headers"]().count(b"\n") > 100_000


# --- the block-scanning mbox reader agrees with the plain line-by-line definition ------------


def mbox_by_lines(data: bytes) -> list[bytes]:
    """The mbox rules one line at a time: an envelope is a `From ` line with a time after a
    blank line (or first); a message loses its final blank line and one `>` of `>From `."""
    messages: list[list[bytes]] = []
    current: list[bytes] | None = None
    blank_before = True
    for line in io.BytesIO(data):
        stripped = line.rstrip(b"\r\n")
        if blank_before and sources.ENVELOPE.match(stripped):
            if current is not None:
                messages.append(current)
            current, blank_before = [], False
            continue
        blank_before = not stripped
        current = [] if current is None else current
        current.append(line[1:] if re.match(rb">+From ", line) else line)
    if current is not None:
        messages.append(current)
    return [b"".join(m[:-1] if m and not m[-1].rstrip(b"\r\n") else m) for m in messages]


MBOX_LINES = st.sampled_from(
    [ENVELOPE + b"\n", ENVELOPE + b"\r\n", b"\n", b"\r\n", b"\r\r\n", b"From nobody\n", b">From x 10:30\n", b">>From \n",
     b"text\n", b"From: header 10:30\n", b"x" * 30 + b"\n", b"no newline"]
)


@FAST
@given(st.lists(MBOX_LINES, max_size=30), st.sampled_from([1, 2, 7, 64, 1 << 16]))
def test_mbox_blocks_agree_with_lines(lines: list[bytes], block: int) -> None:
    data = ENVELOPE + b"\n" + b"".join(lines)
    with mock.patch.object(sources, "BLOCK", block):
        got = [m.data for m in sources.read_mbox(io.BytesIO(data), "box")]
    assert got == mbox_by_lines(data)


@FAST
@given(st.lists(MBOX_LINES, max_size=30), st.sampled_from([2, 64, 1 << 16]))
def test_a_file_with_an_envelope_reads_as_its_mbox(lines: list[bytes], block: int) -> None:
    """read_file's one-message shortcut against read_mbox, files over a block included."""
    data = ENVELOPE + b"\n" + b"".join(lines)
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(sources, "BLOCK", block):
        path = os.path.join(folder, "mail")
        with open(path, "wb") as f:
            f.write(data)
        assert list(sources.read_file(path)) == list(sources.read_mbox(io.BytesIO(data), path))


# --- host names in Received headers: the regex's answers in linear time ---------------------

HOST_REGEX = re.compile(r"\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b", re.I)


@FAST
@given(st.text(alphabet="ab1-. [(Z", max_size=40))
def test_host_names_are_those_of_the_backtracking_regex(text: str) -> None:
    assert host_names(text) == [m.group() for m in HOST_REGEX.finditer(text)]


@FAST
@given(st.lists(st.sampled_from(["1", "19", "192", ".", "a", "ab", "-", "_", " ", "[", "(", "Z", "mail", "com"]), max_size=30).map("".join))
def test_received_tokens_by_dotted_runs_are_those_of_the_whole_field(text: str) -> None:
    networks, domains = received_parts(text)
    assert received_tokens(text) == (*networks, *domains)


RECEIVED_PIECES = ["1", "192", ".", ".", "a", "ab", "Ab", "-", "--", "_", "'", " ", "[", "Z", "mail.", ".com", "x9", "a.bc"]
WORD_SETTINGS = [TokenSettings(), TokenSettings(lowercase=False), TokenSettings(min_len=1, max_len=6), TokenSettings(min_len=4), TokenSettings(stopwords=True)]


@FAST
@given(st.lists(st.sampled_from(RECEIVED_PIECES), max_size=30).map("".join), st.sampled_from(WORD_SETTINGS))
@example("a.bc--d.ef", TokenSettings())  # one run, its two words
@example("a_bc.de", TokenSettings())  # the run has no host, its word has
@example("a.bc-.de", TokenSettings())  # a dot in no word
def test_received_tokens_from_the_words_are_those_of_the_dotted_runs(text: str, settings: TokenSettings) -> None:
    """Where dotted_chunks takes the field's dotted words for its dotted runs, their tokens are the same."""
    words = Tokenizer(settings).words(text, RECEIVED_PREFIX)
    assert received_tokens(text, words) == received_tokens(text)


@FAST
@given(st.text(alphabet=NOT_LETTERS + " []();:"))
def test_ascii_without_letters_holds_no_host_name(text: str) -> None:
    assert host_names(text) == []
