"""The pass-through filter: one message in, the same message plus a verdict header out.

The header is `X-Spamnb: VERDICT, score=P`: VERDICT is spam, ham or unsure, P is
P(spam) to 4 decimals.  It goes after the last header; one already there (ours or a
forgery, in any case, folded or not) is removed first.  Every other byte passes
through unchanged (see `headers.stamp`).  Exit status: 0 spam, 1 ham, 2 unsure, 3
error.

A message longer than the model's `TokenSettings.max_bytes` (1 MiB by default) is
scored on its first `max_bytes` and passed through whole.

Fails open: on any error (missing or damaged model, unreadable or empty input, a bug,
MemoryError) the bytes read go out unchanged, one line goes to stderr, and the exit
status is 3.  SIGINT, SIGTERM and SIGHUP do not stop it part way: the rest of the
input is read and the message goes out unchanged (whole, if it was being written),
with one line and exit 3.  A verdict is reported only when the whole message was
written: a short or failed write (the reader gone) is exit 3 and one line.  Imports only the standard library: the model is mapped, not read, and
the message scored without numpy (`spamnb.pipe.onemessage`).  The console script reaches
`main` without click (see `spamnb.entry`).
"""
from __future__ import annotations

import contextlib
import sys
from collections import namedtuple

from spamnb.mail import headers
from spamnb.pipe.argv import options_of

# `typing` is off the one-message pipe's start-up: names for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import BinaryIO, TextIO

    from spamnb.pipe.onemessage import Verdict

EXIT = {"spam": 0, "ham": 1, "unsure": 2}
EXIT_ERROR = 3
READ_SIZE = 1 << 16
AFTERWORD = "; message passed through unchanged"


# `--spam-cutoff` / `--ham-cutoff` for this message: (spam, ham), None for the model's.
MODEL_CUTOFFS: tuple[float | None, float | None] = (None, None)


# What the pipe writes beside X-Spamnb on request: SpamAssassin's fields (`--sa-headers`,
# `headers.spamassassin_fields`) and a tag before a spam's Subject (`--tag-subject`), so
# that filters and mail-reader rules written for SpamAssassin keep working.
Markup = namedtuple("Markup", ("sa_headers", "subject_tag"), defaults=(False, ""))
NO_MARKUP = Markup()


def tag_problem(tag: str) -> str:
    """Why `tag` cannot go before a Subject ("" when it can): it must be printable ASCII,
    since a header holds no other bytes unencoded."""
    if not tag or not all(" " <= ch <= "~" for ch in tag):
        return f"--tag-subject takes printable ASCII text, not {tag!r}"
    return ""


class InputError(Exception):
    """Nothing to filter."""


def verdict_header(verdict: str, score: float, reasons: Sequence[tuple[str, float]] = (), floor: float | None = None) -> str:
    """The value of `X-Spamnb`: `spam, score=0.9973` (score is P(spam), 4 decimals); with
    `floor`, where the ham-loss floor decided the verdict, `, floor=0.9975` (P must exceed it).

    With `reasons` (`--reasons N`: tokens and their shares of ln(P / (1 - P)), as `inspect
    --explain` shows them), `, tokens=` and `TOKEN=+1.23` for each, separated by `, `,
    folded before a space (a newline there, for `headers.stamp`; unfolded, the same value)
    so that lines stay within 78
    columns where the tokens allow (never over 998).  A token is written in ASCII:
    `header_token`.
    """
    value = f"{verdict}, score={score:.4f}" + ("" if floor is None else f", floor={floor:.4f}")
    if not reasons:
        return value
    pieces = value.split(" ")
    items = [f"{header_token(token)}={share:+.2f}" for token, share in reasons]
    pieces[-1] += ","
    pieces += [f"tokens={items[0]}", *items[1:]]
    pieces[-len(items) : -1] = [item + "," for item in pieces[-len(items) : -1]]
    lines = [VERDICT_FIELD + pieces[0]]
    for piece in pieces[1:]:
        if len(lines[-1]) + 1 + len(piece) > FOLD_AT:
            lines.append(" " + piece)
        else:
            lines[-1] += " " + piece
    return "\n".join(lines)[len(VERDICT_FIELD) :]


VERDICT_FIELD = "X-Spamnb: "
FOLD_AT = 78
# Characters a token keeps in the header; any other byte of its UTF-8 is %XX.
PLAIN = frozenset(map(chr, range(0x21, 0x7F))) - set("%,=")
TOKEN_CHARS = 60  # of a token, at most, in the header: a long one is cut, with "..."


def header_token(token: str) -> str:
    """A token as the header writes it: printable ASCII but for `%`, `,` and `=`, each other
    byte of its UTF-8 (surrogates passed) as %XX; its first TOKEN_CHARS characters and "..."
    if longer.  Never a space, a control character or a non-ASCII byte, so the header
    cannot be broken or forged by what a message holds."""
    cut = token[:TOKEN_CHARS]
    text = "".join(ch if ch in PLAIN else "".join(f"%{byte:02X}" for byte in ch.encode("utf-8", "surrogatepass")) for ch in cut)
    return text + ("..." if len(token) > TOKEN_CHARS else "")


def read_into(stdin: BinaryIO, chunks: list[bytes]) -> None:
    """Read to the end in pieces, so that what was read before an error is kept.

    `read1` makes one system call at most: a buffered `read` that fails part way
    drops what it had gathered in that call.
    """
    read = getattr(stdin, "read1", stdin.read)
    while chunk := read(READ_SIZE):
        chunks.append(chunk)


def one_line(err: BaseException) -> str:
    try:
        return " ".join(str(err).split())
    except Exception:  # noqa: BLE001 - a broken __str__ must not stop the mail
        return ""


def describe(err: BaseException) -> str:
    """One line: the message of an expected error, the type too of any other."""
    text = one_line(err)
    if isinstance(err, (InputError, Stopped)) or type(err).__name__ in ("ModelError", "CutoffError"):
        return text
    return f"internal error ({type(err).__name__}{': ' + text if text else ''})"


def filter_message(
    model_path: str | None, data: bytes, cutoffs: tuple[float | None, float | None] = MODEL_CUTOFFS, reasons: int = 0, markup: Markup = NO_MARKUP
) -> tuple[bytes, int]:
    """The stamped message and its exit status; `reasons`: how many tokens the header names;
    `markup`: SpamAssassin's fields and a spam's Subject tag, as asked."""
    if not data:
        raise InputError("empty input: no message on stdin")
    # Imported here so that even a broken installation passes mail through.
    from spamnb.models import modelfile, npzview
    from spamnb.pipe import onemessage

    try:  # the model held against a rewrite in place while it is read (npzview.open_members' `hold`)
        verdict = onemessage.score_message(model_path or modelfile.default_path(), data, cutoffs, reasons, hold=True)
    finally:
        npzview.release()
    more = headers.spamassassin_fields(verdict.verdict, verdict.score, verdict.threshold) if markup.sa_headers else ()
    out = stamped(data, verdict, more)
    if markup.subject_tag and verdict.verdict == "spam":
        out = headers.tag_subject(out, markup.subject_tag)
    return out, EXIT[verdict.verdict]


def stamped(data: bytes, verdict: Verdict, more: Sequence[tuple[bytes, str]] = ()) -> bytes:
    """The message with its X-Spamnb header (and `more` fields: `headers.stamp`)."""
    return headers.stamp(data, verdict_header(verdict.verdict, verdict.score, verdict.reasons, verdict.floor), more)


class Stopped(Exception):
    """A stop signal came before the verdict: the message goes out unchanged."""


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP, recorded instead of obeyed while the mail is in hand.

    The handler only notes the signal: a read it interrupts is resumed (PEP 475), so no
    byte read is dropped and the rest of the input still comes; the filter checks the
    note between its steps.  The previous handlers come back on leaving.
    """

    NAMES = ("SIGINT", "SIGTERM", "SIGHUP")

    def __init__(self) -> None:
        self.caught: list[int] = []
        self.previous: dict[int, object] = {}

    def __enter__(self) -> StopSignals:
        import signal

        def note(signum: int, frame: object) -> None:
            self.caught.append(signum)

        with contextlib.suppress(ValueError, OSError):  # not the main thread: nothing to catch
            for name in self.NAMES:
                number = getattr(signal, name)
                self.previous[number] = signal.signal(number, note)
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        for number, handler in self.previous.items():
            signal.signal(number, handler)

    def name(self) -> str:
        import signal

        return signal.Signals(self.caught[0]).name

    def check(self) -> None:
        if self.caught:
            raise Stopped(f"stopped by {self.name()}")


def run(
    model_path: str | None,
    stdin: BinaryIO,
    stdout: BinaryIO,
    stderr: TextIO,
    refuse: str = "",
    cutoffs: tuple[float | None, float | None] = MODEL_CUTOFFS,
    exit_zero: bool = False,
    reasons: int = 0,
    markup: Markup = NO_MARKUP,
) -> int:
    """Filter one message; `model_path` None means the default model; `refuse` (a usage
    error) passes the message through unscored with that reason.  `exit_zero`: exit 0
    for every verdict, so that procmail's `:0 fw` takes the stamped message without
    logging a failure (3 stays 3: procmail then keeps its own copy).  `reasons`: the
    header names the message's that many strongest tokens (0: none).  `markup`: see Markup."""
    with StopSignals() as stop:
        status, complaint = filter_stream(model_path, stdin, stdout, refuse, stop, cutoffs, exit_zero, reasons, markup)
    if complaint:
        with contextlib.suppress(Exception):
            stderr.write(f"spamnb: {complaint}\n")
            stderr.flush()
    return status


def filter_stream(
    model_path: str | None,
    stdin: BinaryIO,
    stdout: BinaryIO,
    refuse: str,
    stop: StopSignals,
    cutoffs: tuple[float | None, float | None] = MODEL_CUTOFFS,
    exit_zero: bool = False,
    reasons: int = 0,
    markup: Markup = NO_MARKUP,
) -> tuple[int, str]:
    """Read, score and write one message: (exit status, a line for stderr or "")."""
    chunks: list[bytes] = []
    complaint = ""
    try:
        read_into(stdin, chunks)
        if refuse:
            raise InputError(refuse)
        chunks[:] = [b"".join(chunks)]
        stop.check()
        out, status = filter_message(model_path, chunks[0], cutoffs, reasons, markup)
        stop.check()  # the verdict came too late: the message goes out as it came
        chunks[:] = [out]
        if exit_zero:
            status = 0
    except Exception as err:  # noqa: BLE001 - fail open, whatever went wrong (MemoryError too)
        status, complaint = EXIT_ERROR, describe(err) + AFTERWORD
    total = sum(len(c) for c in chunks)
    written = [0]
    try:
        for chunk in chunks:
            write_all(stdout, chunk, written)
        stdout.flush()
    except Exception as err:  # noqa: BLE001 - stdout is gone: nothing more can be done for the message
        reason = one_line(err) or type(err).__name__
        status, complaint = EXIT_ERROR, f"cannot write the message to stdout: {reason} (after {written[0]:,} of {total:,} bytes)"
        silence(stdout)
        return status, complaint
    if stop.caught and not complaint:
        status, complaint = EXIT_ERROR, f"stopped by {stop.name()} while writing the message; it was written whole, with its verdict"
    return status, complaint


def write_all(stdout: BinaryIO, data: bytes, written: list[int]) -> None:
    """Write all of `data` (counting into `written[0]`) or raise: a buffered write to a
    pipe whose reader left may return short (65,536 of 200 MB) without an error."""
    view = memoryview(data)
    while view:
        n = stdout.write(view)
        if not n:
            raise OSError(f"a write of {len(view):,} bytes wrote none")
        written[0] += n
        view = view[n:]


def silence(stdout: BinaryIO) -> None:
    """Point the closed stdout at /dev/null, so that the exit's flush of it says nothing more."""
    import os

    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
        os.close(devnull)


VALUED = ("-m", "--model", "--jobs", "--spam-cutoff", "--ham-cutoff", "--reasons", "--tag-subject")


def parse_options(argv: list[str]) -> tuple[str | None, tuple[float | None, float | None], bool, int, Markup] | None:
    """(MODEL, cut-offs, --exit-zero, --reasons, Markup) of `[--debug|-q|--quiet]... classify --pipe
    [OPTION]...`, OPTION one of -m/--model MODEL, --jobs N, --spam-cutoff P, --ham-cutoff P,
    --exit-zero, --reasons N, --sa-headers, --tag-subject TEXT, -q/--quiet.  MODEL None: the default model.

    None for anything else (including --help or a stray SRC), which the full command
    line then handles, errors and all.
    """
    parsed = options_of(argv, "classify", ("--pipe", "-q", "--quiet", "--exit-zero", "--sa-headers"), VALUED)
    if parsed is None or "--pipe" not in parsed[1]:
        return None
    values = dict(parsed[0])  # the last of an option given twice, as click takes it
    try:
        spam, ham = (float(values[k]) if k in values else None for k in ("--spam-cutoff", "--ham-cutoff"))
        reasons = int(values.get("--reasons", "0"))
    except ValueError:
        return None
    tag = values.get("--tag-subject")
    if values.get("--model") == "" or reasons < 0 or (tag is not None and tag_problem(tag)):
        return None
    return values.get("--model"), (spam, ham), "--exit-zero" in parsed[1], reasons, Markup("--sa-headers" in parsed[1], tag or "")


def main(
    model_path: str | None, cutoffs: tuple[float | None, float | None] = MODEL_CUTOFFS, exit_zero: bool = False, reasons: int = 0, markup: Markup = NO_MARKUP
) -> int:
    return run(model_path, sys.stdin.buffer, sys.stdout.buffer, sys.stderr, cutoffs=cutoffs, exit_zero=exit_zero, reasons=reasons, markup=markup)
