"""`classify --pipe`: the message out byte for byte, plus exactly one verdict header.

Also home of the helpers test_safety.py and test_hostile.py share: a small trained
model, the console script, and running the filter in-process.
"""
from __future__ import annotations

import email
import io
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, NoReturn

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spamnb.mail import headers
from spamnb.mail.sources import Message
from spamnb.models import store
from spamnb.models.model import Model
from spamnb.pipe import filter as pipe
from spamnb.run import classifier
from spamnb.text.tokens import Tokenizer, TokenSettings
from tests.conftest import ENVELOPE, HAM_WORDS, SPAM_WORDS, crlf, fake_corpus, make_mail

SPAMNB = Path(sys.executable).with_name("spamnb")
SPAM_MAIL = make_mail("cheap pills", "viagra casino winner lottery prize bonus offer\n")
HAM_MAIL = make_mail("meeting agenda", "project review lunch tuesday report budget\n")
# No token the model knows: its score is the prior, 0.5 for a balanced model.
UNSURE_MAIL = b"Subject: zqxv\n\nqwzx blorfle\n"
VERDICT = re.compile(rb"X-Spamnb: (spam|ham|unsure), score=([01]\.\d{4})(?:, floor=[01]\.\d{4})?(\r\n|\n|\r)")
MARK = b"<<verdict>>"  # where a test expects the verdict header
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def build_model(path: Path, spam: list[bytes], ham: list[bytes], tokens: TokenSettings | None = None) -> Path:
    """A model file that has learnt these messages (through the library, not the CLI)."""
    model = store.empty_model(tokens or TokenSettings(), Model().scoring)
    items = [Message(f"spam{i}", m, "spam") for i, m in enumerate(spam)]
    items += [Message(f"ham{i}", m, "ham") for i, m in enumerate(ham)]
    classifier.learn(model, items)
    store.save(model, str(path))
    return path


def small_model(folder: Path) -> Path:
    """12 spam and 12 ham of the shared generated corpus: a balanced prior."""
    return build_model(folder / "model.npz", fake_corpus(SPAM_WORDS, 12, seed=1), fake_corpus(HAM_WORDS, 12, seed=2))


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_model(tmp_path_factory.mktemp("model"))


class Piped(NamedTuple):
    out: bytes
    status: int
    err: str


class FailingReader(io.RawIOBase):
    """stdin that yields `data`, then fails with `error` (an input that breaks mid-way)."""

    def __init__(self, data: bytes, error: BaseException) -> None:
        self.data, self.error = data, error

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if not self.data:
            raise self.error
        n = min(len(buffer), len(self.data))
        buffer[:n], self.data = self.data[:n], self.data[n:]
        return n


def run_pipe(model: Path, data: bytes = b"", stdin: io.RawIOBase | io.BufferedIOBase | None = None) -> Piped:
    """The filter in-process, as `classify --pipe -m MODEL` runs it."""
    out, err = io.BytesIO(), io.StringIO()
    status = pipe.run(str(model), stdin or io.BytesIO(data), out, err)  # type: ignore[arg-type]
    return Piped(out.getvalue(), status, err.getvalue())


def run_console(*args: str | Path, stdin: bytes, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """The installed console script, as procmail or cron would run it."""
    if not SPAMNB.exists():
        pytest.skip(f"no console script at {SPAMNB}")
    return subprocess.run([str(SPAMNB), *map(str, args)], input=stdin, capture_output=True, timeout=60, env=env, check=False)


def assert_failed_open(piped: Piped, original: bytes, *needles: str) -> None:
    """The original bytes, exit 3, exactly one line on stderr (holding each needle)."""
    assert piped.out == original
    assert piped.status == pipe.EXIT_ERROR
    assert piped.err.endswith("\n") and piped.err.count("\n") == 1, piped.err
    assert piped.err.startswith("spamnb: ")
    for needle in needles:
        assert needle in piped.err


def assert_stamped(out: bytes, template: bytes, newline: bytes = b"\n") -> re.Match[bytes]:
    """`out` is `template` with the verdict header where MARK stands, and nothing else changed."""
    data = template.replace(MARK, b"")
    at = template.index(MARK)
    line = out[at : at + len(out) - len(data)]
    match = VERDICT.fullmatch(line)
    assert match, (line, out[:200])
    assert out == data[:at] + line + data[at:]
    assert match.group(3) == newline
    return match


def verdict_of(out: bytes) -> tuple[str, str]:
    """(verdict, score) of the one verdict header in the header block of `out`."""
    found = VERDICT.findall(headers.split_message(out)[1])
    assert len(found) == 1, found
    return found[0][0].decode(), found[0][1].decode()


# --- byte for byte -------------------------------------------------------------------------


def at_blank(message: bytes, newline: bytes = b"\n") -> bytes:
    """MARK at the end of the header block of a generated message."""
    return message.replace(newline * 2, newline + MARK + newline, 1)


SHAPES = {
    "lf": (at_blank(SPAM_MAIL), b"\n"),
    "crlf": (at_blank(crlf(SPAM_MAIL), b"\r\n"), b"\r\n"),
    "8-bit bytes": (b"Subject: caf\xe9 \xff cheap\n" + MARK + b"\nviagra \x80\x81\xfe casino\n", b"\n"),
    "no final newline": (b"Subject: cheap pills\n" + MARK + b"\nviagra casino winner", b"\n"),
    "odd folding": (
        b"Subject: cheap\n\tpills\n    viagra\nX-Empty:\nX-Blank-Continuation: a\n \t\nTo:bob@example.org\n" + MARK + b"\nbody\n",
        b"\n",
    ),
    "envelope": (ENVELOPE + b"\n" + at_blank(SPAM_MAIL), b"\n"),
    "envelope crlf": (ENVELOPE + b"\r\n" + at_blank(crlf(SPAM_MAIL), b"\r\n"), b"\r\n"),
    "only an envelope": (ENVELOPE + b"\n" + MARK, b"\n"),
    "header only": (b"Subject: cheap pills\nFrom: a@example.com\n" + MARK, b"\n"),
    "header only crlf": (b"Subject: cheap pills\r\nFrom: a@example.com\r\n" + MARK, b"\r\n"),
    "body only": (MARK + b"\nviagra casino\n", b"\n"),
    "body only crlf": (MARK + b"\r\nviagra casino\r\n", b"\r\n"),
    "envelope and body only": (ENVELOPE + b"\n" + MARK + b"\nviagra\n", b"\n"),
    "mixed line ends": (b"A: 1\r\nB: 2\n" + MARK + b"\nbody\r\n", b"\n"),
    "NUL bytes": (b"Subject: a\x00b\n" + MARK + b"\nbo\x00dy\x00\n", b"\n"),
    "long header line": (b"Subject: " + b"x" * 100_000 + b"\n" + MARK + b"\nbody\n", b"\n"),
    "junk line ends the fields": (b"Subject: x\n" + MARK + b"this line is no header\nTo: y\n\nbody\n", b"\n"),
    "junk first line": (MARK + b"no header here\n\nbody\n", b"\n"),
    "binary body": (b"Content-Type: application/octet-stream\n" + MARK + b"\n" + bytes(range(256)) * 4, b"\n"),
}


@pytest.mark.parametrize("template, newline", SHAPES.values(), ids=SHAPES.keys())
def test_output_is_input_plus_one_verdict_header(model: Path, template: bytes, newline: bytes) -> None:
    data = template.replace(MARK, b"")
    piped = run_pipe(model, data)
    match = assert_stamped(piped.out, template, newline)
    assert piped.status == pipe.EXIT[match.group(1).decode()]
    assert piped.err == ""
    # Where the header went, Python's email package reads it as a header too.
    parsed = email.message_from_bytes(piped.out)
    assert parsed.get_all("X-Spamnb") == [match.group().split(b": ", 1)[1].strip().decode()]


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"Subject: cheap pills", b"Subject: cheap pills\n"),
        (b"Subject: a\r\nTo: b", b"Subject: a\r\nTo: b\r\n"),
        (ENVELOPE, ENVELOPE + b"\n"),
    ],
    ids=["header only, no final newline", "crlf header only, no final newline", "envelope only, no newline"],
)
def test_a_missing_final_newline_of_a_header_only_message_is_the_one_added_byte(
    model: Path, data: bytes, expected: bytes
) -> None:
    newline = b"\r\n" if b"\r\n" in data else b"\n"
    assert_stamped(run_pipe(model, data).out, expected + MARK, newline)


@pytest.mark.parametrize(
    "data, verdict, status",
    [(SPAM_MAIL, "spam", 0), (HAM_MAIL, "ham", 1), (UNSURE_MAIL, "unsure", 2)],
    ids=["spam", "ham", "unsure"],
)
def test_exit_status_is_the_verdict(model: Path, data: bytes, verdict: str, status: int) -> None:
    piped = run_pipe(model, data)
    assert piped.status == status == pipe.EXIT[verdict]
    got, score = verdict_of(piped.out)
    assert got == verdict
    if verdict == "unsure":
        assert score == "0.5000"


def test_the_verdict_header_is_documented_format(model: Path) -> None:
    assert pipe.verdict_header("spam", 0.99731) == "spam, score=0.9973"
    assert pipe.verdict_header("ham", 0.0) == "ham, score=0.0000"
    assert verdict_of(run_pipe(model, SPAM_MAIL).out)[0] == "spam"


# --- forged verdicts -----------------------------------------------------------------------

# The fixture model learnt 12 spams of 10 words; "viagra" and "winner" are in 11 each and
# so count once together (nb.DUPLICATE_MIN): the forgeries carry three separate spam words.
FORGED = {
    "in the middle": (
        b"Subject: cheap pills\nX-Spamnb: ham, score=0.0000\nTo: b@example.org\n\nviagra casino prize\n",
        b"Subject: cheap pills\nTo: b@example.org\n" + MARK + b"\nviagra casino prize\n",
    ),
    "lower case": (
        b"x-spamnb: ham, score=0.0000\nSubject: cheap pills\n\nviagra casino\n",
        b"Subject: cheap pills\n" + MARK + b"\nviagra casino\n",
    ),
    "upper case, folded": (
        b"Subject: cheap pills\nX-SPAMNB: ham,\n\tscore=0.0000\n  lottery\nTo: b\n\nviagra\n",
        b"Subject: cheap pills\nTo: b\n" + MARK + b"\nviagra\n",
    ),
    "space before the colon": (b"X-Spamnb : ham\nSubject: cheap\n\nviagra\n", b"Subject: cheap\n" + MARK + b"\nviagra\n"),
    "two of them, crlf": (
        b"X-Spamnb: ham\r\nSubject: cheap\r\nX-Spamnb: unsure, score=0.5\r\n\r\nviagra\r\n",
        b"Subject: cheap\r\n" + MARK + b"\r\nviagra\r\n",
    ),
    "the only header": (b"X-Spamnb: ham\n\nviagra casino\n", MARK + b"\nviagra casino\n"),
    "last line, no newline": (b"Subject: cheap pills casino winner\nX-Spamnb: ham", b"Subject: cheap pills casino winner\n" + MARK),
    # (enough spam words that the junk line's two unknown tokens, neutral evidence, leave it spam)
    "after a junk line": (
        b"Subject: cheap pills\njunk line\nX-Spamnb: ham\n\nviagra casino winner\n",
        b"Subject: cheap pills\n" + MARK + b"junk line\n\nviagra casino winner\n",
    ),
    "behind an envelope": (
        ENVELOPE + b"\nX-Spamnb: ham\nSubject: cheap\n\nviagra\n",
        ENVELOPE + b"\nSubject: cheap\n" + MARK + b"\nviagra\n",
    ),
    "look-alikes are kept": (
        b"X-Spamnb-Trained: yes\nSubject: cheap\n\nX-Spamnb: ham, viagra casino prize in the body\n",
        b"X-Spamnb-Trained: yes\nSubject: cheap\n" + MARK + b"\nX-Spamnb: ham, viagra casino prize in the body\n",
    ),
}


@pytest.mark.parametrize("data, template", FORGED.values(), ids=FORGED.keys())
def test_an_incoming_verdict_header_is_replaced_and_never_trusted(model: Path, data: bytes, template: bytes) -> None:
    piped = run_pipe(model, data)
    newline = b"\r\n" if b"\r\n" in data else b"\n"
    match = assert_stamped(piped.out, template, newline)
    assert match.group(1) == b"spam" and piped.status == 0
    # The forgery is no evidence either: the score is that of the message without it.
    assert match.group() == VERDICT.search(run_pipe(model, template.replace(MARK, b"")).out).group()  # type: ignore[union-attr]


def test_piping_a_piped_message_again_gives_the_same_message(model: Path) -> None:
    for data in (SPAM_MAIL, HAM_MAIL, UNSURE_MAIL, crlf(SPAM_MAIL)):
        once = run_pipe(model, data)
        twice = run_pipe(model, once.out)
        assert twice == once


# --- failing open --------------------------------------------------------------------------


def test_missing_model(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.npz"
    assert_failed_open(run_pipe(missing, SPAM_MAIL), SPAM_MAIL, str(missing), "passed through unchanged")


@pytest.mark.parametrize(
    "content",
    [b"", b"not a model\n", b"PK\x03\x04" + b"\x00" * 100, None],
    ids=["empty file", "text", "broken zip", "a folder"],
)
def test_unusable_model(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "model.npz"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    assert_failed_open(run_pipe(path, SPAM_MAIL), SPAM_MAIL, str(path))


def test_truncated_model(model: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.npz"
    cut.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    assert_failed_open(run_pipe(cut, HAM_MAIL), HAM_MAIL, str(cut))


def test_unreadable_input_passes_on_what_was_read(model: Path) -> None:
    head = SPAM_MAIL * 3000  # more than one read
    piped = run_pipe(model, stdin=io.BufferedReader(FailingReader(head, OSError(5, "Input/output error"))))
    assert_failed_open(piped, head, "Input/output error")
    assert_failed_open(run_pipe(model, stdin=FailingReader(b"", OSError(9, "Bad file descriptor"))), b"")


def test_empty_input(model: Path) -> None:
    assert_failed_open(run_pipe(model, b""), b"", "empty input")


def fail_with(error: BaseException) -> Callable[..., NoReturn]:
    """A stand-in for any function or method that raises `error`."""

    def broken(*args: object, **kwargs: object) -> NoReturn:
        raise error

    return broken


@pytest.mark.parametrize(
    "target, error, needle",
    [
        ("spamnb.text.tokens.Tokenizer.read", MemoryError(), "MemoryError"),
        ("spamnb.models.npzview.open_members", MemoryError("Unable to allocate 8.00 TiB"), "MemoryError"),
        ("spamnb.mail.headers.stamp", MemoryError(), "MemoryError"),
        ("spamnb.pipe.onemessage.OneModel.log_odds_of", RuntimeError("line one\nline two\n\nline three"), "line one line two line three"),
        ("spamnb.text.tokens.Tokenizer.read", RecursionError("maximum recursion depth exceeded"), "RecursionError"),
        ("spamnb.pipe.onemessage.OneModel.log_odds_of", KeyError("tf"), "KeyError"),
    ],
    ids=["MemoryError tokenising", "MemoryError loading", "MemoryError stamping", "multi-line error", "RecursionError", "KeyError"],
)
def test_internal_errors_fail_open(
    model: Path, monkeypatch: pytest.MonkeyPatch, target: str, error: BaseException, needle: str
) -> None:
    monkeypatch.setattr(target, fail_with(error))
    assert_failed_open(run_pipe(model, SPAM_MAIL), SPAM_MAIL, needle, "passed through unchanged")


def test_an_error_that_cannot_even_be_described(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise ValueError("no words")

    monkeypatch.setattr("spamnb.pipe.onemessage.OneModel.log_odds_of", fail_with(Unprintable()))
    assert_failed_open(run_pipe(model, SPAM_MAIL), SPAM_MAIL, "Unprintable")


def test_a_broken_stderr_does_not_stop_the_mail(tmp_path: Path) -> None:
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError("stderr closed")

    out = io.BytesIO()
    status = pipe.run(str(tmp_path / "none.npz"), io.BytesIO(SPAM_MAIL), out, Closed())
    assert (out.getvalue(), status) == (SPAM_MAIL, 3)


def test_a_broken_stdout_is_exit_3_and_one_line(model: Path) -> None:
    class Gone(io.BytesIO):
        def write(self, data: bytes) -> int:  # type: ignore[override]
            raise BrokenPipeError(32, "Broken pipe")

    err = io.StringIO()
    assert pipe.run(str(model), io.BytesIO(HAM_MAIL), Gone(), err) == 3
    assert err.getvalue().count("\n") == 1 and "cannot write" in err.getvalue()


# --- over-size mail ------------------------------------------------------------------------


def test_oversize_mail_is_scored_on_its_first_part_and_passed_through_whole(model: Path) -> None:
    cap = TokenSettings().max_bytes
    assert cap == 1 << 20, "the documented default (pipe.py docstring) is 1 MiB"
    assert "1 MiB" in (pipe.__doc__ or "")
    spammy = b"Subject: cheap pills\n\n" + b"viagra casino lottery winner\n" * (cap // 29)
    data = spammy[: cap - 1000] + b"meeting agenda project review\n" * (4 * cap // 30)
    assert len(data) > 4 * cap
    piped = run_pipe(model, data)
    assert_stamped(piped.out, data.replace(b"\n\n", b"\n" + MARK + b"\n", 1))
    assert piped.status == 0, "the ham after the first MiB would have outweighed the spam"
    assert Tokenizer()(data) == Tokenizer()(data[:cap])


# --- through the console script, as procmail runs it ---------------------------------------


@pytest.mark.parametrize(
    "data, status",
    [(crlf(SPAM_MAIL).replace(b"viagra", b"viagra \xff\xfe"), 0), (ENVELOPE + b"\n" + HAM_MAIL.rstrip(b"\n"), 1)],
    ids=["spam, crlf, 8-bit", "ham, envelope, no final newline"],
)
def test_console_script_filters(model: Path, data: bytes, status: int) -> None:
    done = run_console("classify", "--pipe", "-m", model, stdin=data)
    assert done.returncode == status, done.stderr
    newline = b"\r\n" if status == 0 else b"\n"
    verdict = VERDICT.search(done.stdout)
    assert verdict and verdict.group(3) == newline
    assert done.stdout.replace(verdict.group(), b"", 1) == data
    assert done.stderr == b""


@pytest.mark.parametrize("problem", ["damaged model", "a SRC as well"])
def test_console_script_fails_open(model: Path, tmp_path: Path, problem: str) -> None:
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(model.read_bytes()[:-100])
    args = ["-m", damaged] if problem == "damaged model" else ["-m", model, str(tmp_path)]
    done = run_console("classify", "--pipe", *args, stdin=SPAM_MAIL)
    assert (done.stdout, done.returncode) == (SPAM_MAIL, 3)
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spamnb: "), lines
    assert (str(damaged) if problem == "damaged model" else "SRC") in lines[0]


# --- properties of the byte-level header editing -------------------------------------------

LINE_ENDS = st.sampled_from([b"\n", b"\r\n", b"\r"])
NAMES = st.sampled_from([b"Subject", b"From", b"To", b"X-Spamnb", b"x-spamnb", b"X-SPAMNB ", b"X-Spamnb-Other", b"X-Spam-Flag", b"x-spam-status", b""])
TEXT = st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b""))


@st.composite
def mailish(draw: st.DrawFn) -> bytes:
    """Header-shaped bytes: envelopes, forged verdicts, folding, junk, odd ends."""
    newline = draw(LINE_ENDS)
    lines = [ENVELOPE + newline] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["field", "fold", "junk"]))
        if kind == "field":
            lines.append(draw(NAMES) + b":" + draw(TEXT) + newline)
        elif kind == "fold":
            lines.append(draw(st.sampled_from([b" ", b"\t"])) + draw(TEXT) + newline)
        else:
            lines.append(draw(TEXT) + newline)
    if draw(st.booleans()):
        lines.append(newline + draw(st.binary(max_size=40)))
    data = b"".join(lines)
    return data.rstrip(b"\r\n") if draw(st.booleans()) else data


MESSAGES = st.one_of(st.binary(max_size=200), mailish())


@FAST
@given(MESSAGES, st.sampled_from(["spam, score=1.0000", "ham, score=0.0012"]), st.sampled_from(["unsure, score=0.5000"]))
@example(b"X-Spamnb:\nFrom ", "spam, score=1.0000", "unsure, score=0.5000")  # a forged verdict before a stray "From " line
def test_stamp_properties(data: bytes, first: str, second: str) -> None:
    once = headers.stamp(data, first)
    # Exactly one verdict header, ours, in the header block.
    head = headers.split_message(once)[1]
    assert [m.group().rstrip(b"\r\n") for m in headers.VERDICT_LINE.finditer(headers.lf_view(head))] == [b"X-Spamnb: " + first.encode()]
    # Stamping again replaces it; learning and scoring see the same message.
    assert headers.stamp(once, second) == headers.stamp(data, second)
    assert headers.digest(once) == headers.digest(data)
    assert headers.unstamped(once).rstrip(b"\r\n") == headers.unstamped(data).rstrip(b"\r\n")
    # Nothing else changes, but for the newline a header needs at the very end.
    if b"x-spamnb" not in data.lower():
        line = b"X-Spamnb: " + first.encode()
        at = once.index(line)
        end = at + len(line) + (2 if once[at + len(line) :].startswith(b"\r\n") else 1)
        rest = once[:at] + once[end:]
        assert rest == data or (rest == data + once[at + len(line) : end] and not data.endswith(b"\n"))


@FAST
@given(MESSAGES, st.sampled_from(["spam", "ham", "unsure"]), st.sampled_from(["spam", "ham"]))
def test_spamnbs_own_spamassassin_fields_are_a_verdict_no_path_learns(data: bytes, first: str, second: str) -> None:
    """A message as PROCESS or `--sa-headers` stamped it (X-Spamnb and SpamAssassin's fields naming
    spamnb) digests and tokenises the same whatever the verdict, and for mail that came without
    SpamAssassin's fields, as the message as it came."""

    def process(verdict: str) -> bytes:
        return headers.stamp(data, f"{verdict}, score=0.5000", headers.spamassassin_fields(verdict, 0.5, 0.95))

    tokenize = Tokenizer()
    stamped = process(first)
    assert headers.digest(stamped) == headers.digest(process(second))
    assert tokenize(stamped) == tokenize(process(second))
    if not any(name.lower() in data.lower() for name in headers.SA_NAMES):
        assert headers.digest(stamped) == headers.digest(data)
        assert tokenize(stamped) == tokenize(data)


def test_an_upstream_spamassassins_fields_are_the_messages_own() -> None:
    """Only spamnb's own are a verdict: SpamAssassin's, run before spamnb, are evidence like any field."""
    upstream = (("X-Spam-Checker-Version", "SpamAssassin 4.0.1"), ("X-Spam-Status", "Yes, score=12.0 required=5.0"))
    data, bare = make_mail("offer", "cheap pills now", headers=upstream), make_mail("offer", "cheap pills now")
    assert "x-spam-status:yes" in Tokenizer()(data)
    assert headers.digest(data) != headers.digest(bare)
    head = headers.split_message(data)[1]
    assert headers.without_verdict(head) == head


@pytest.mark.parametrize("verdict", [b"", b"X-Spamnb: spam\n\tfolded\n", b"x-SPAMNB: ham\n", b"X-sPaMnB : unsure\n"])
def test_verdict_fields_in_any_case_are_no_part_of_the_message(verdict: bytes) -> None:
    """Ours and spamnb's SpamAssassin fields, written in any case (a forgery, a mail reader's rewrite)."""
    head = b"Subject: a\n" + verdict + b"X-SPAM-checker-VERSION: spamnb 1.0\nx-spam-status: No\nTo: b\n"
    assert headers.without_verdict(head) == b"Subject: a\nTo: b\n"
    assert headers.unstamped(head + b"\nbody\n") == b"Subject: a\nTo: b\n\nbody\n"


def test_mail_stamped_with_sa_headers_is_known_to_every_learner(tmp_path: Path, model: Path) -> None:
    """Learnt by `train --spam -`, then filed as the pipe stamped it (`--sa-headers`) and learnt again
    from the folder (bulk train) and as a single file: the same message, already known, not counted twice."""
    mine = tmp_path / "model.npz"
    mine.write_bytes(model.read_bytes())
    data = make_mail("cheap pills", "viagra lottery winner claim now", sender="x@spam.example")
    assert run_console("train", "-m", mine, "--spam", "-", stdin=data).returncode == 0
    stamped = run_console("classify", "-m", mine, "--pipe", "--exit-zero", "--sa-headers", stdin=data).stdout
    assert b"\nX-Spam-Checker-Version: spamnb" in stamped and b"\nX-Spam-Status: " in stamped
    folder = tmp_path / "Spam"
    for sub in ("cur", "new", "tmp"):
        (folder / sub).mkdir(parents=True)
    (folder / "cur" / "1:2,S").write_bytes(stamped)
    for source in (folder, folder / "cur" / "1:2,S"):
        learnt = run_console("train", "-m", mine, "--spam", source, stdin=b"")
        assert learnt.returncode == 0 and "learnt 0, moved 0, already known 1" in learnt.stderr.decode(), learnt.stderr


@settings(max_examples=60, deadline=None)
@given(MESSAGES)
def test_tokens_do_not_see_the_verdict_header(data: bytes) -> None:
    tokenize = Tokenizer()
    assert tokenize(headers.stamp(data, "spam, score=0.9999")) == tokenize(data)


@settings(max_examples=40, deadline=None)
@given(MESSAGES.filter(bool))
def test_pipe_on_anything_is_a_verdict(model: Path, data: bytes) -> None:
    piped = run_pipe(model, data)
    assert piped.status in (0, 1, 2), piped.err
    assert piped.err == ""
    assert headers.digest(piped.out) == headers.digest(data)



def test_pipe_batch_and_explain_agree_on_messages_with_unknown_tokens(model: Path) -> None:
    """The pipe (one message, mapped model), `classify` (batch) and `inspect --explain`
    score a message the same, whatever share of its tokens the model has never seen."""
    loaded = store.load(str(model))
    mapped = store.load(str(model), scoring_only=True)
    tokenize = Tokenizer(loaded.tokens)
    mails = [
        SPAM_MAIL,
        HAM_MAIL,
        UNSURE_MAIL,
        make_mail("cheap pills", "viagra zzunknownone zzunknowntwo meeting\n"),
        make_mail("meeting agenda", "project " + " ".join(f"zzword{i}" for i in range(40)) + "\n"),
    ]
    batch = list(classifier.classify(loaded, [Message(str(i), m) for i, m in enumerate(mails)]))
    for mail, scored in zip(mails, batch, strict=True):
        explained = mapped.explain(tokenize(mail))
        assert explained.log_odds == pytest.approx(scored.log_odds, abs=1e-9)
        out, status = pipe.filter_message(str(model), mail)
        match = VERDICT.search(out)
        assert match is not None and match.group(1).decode() == scored.verdict
        assert float(match.group(2)) == pytest.approx(scored.score, abs=5e-5)
        assert status == pipe.EXIT[scored.verdict]
    assert explained.unknown > 30


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"\n", b"\r", b"\r\n", b"a", b":", b"From "]), max_size=16).map(b"".join))
def test_split_message_cuts_where_the_blank_line_pattern_finds(data: bytes) -> None:
    """split_message's two plain searches (the second bounded by the first) cut where BLANK_LINE.search does;
    a bare CR ends a line as an LF does (Python's parser reads it so)."""
    envelope, head, rest = headers.split_message(data)
    assert envelope + head + rest == data
    assert (len(envelope), len(envelope) + len(head)) == headers.lf_cuts(headers.lf_view(data))
    at, end = headers.lf_cuts(data)
    body = data[at:]
    if body.startswith((b"\n", b"\r\n")):
        assert end == at
        return
    blank = headers.BLANK_LINE.search(body)
    cut = body.index(b"\n", blank.start()) + 1 if blank else len(body)
    assert end == at + cut
