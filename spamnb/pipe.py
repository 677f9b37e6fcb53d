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
status is 3.  Imports only numpy and the standard library, so a message is scored in
about the time it takes Python to import numpy.  The console script reaches `main`
without click (see `spamnb.entry`), and the model is mapped, not read
(`store.load(scoring_only=True)`).
"""
from __future__ import annotations

import contextlib
import sys
from typing import BinaryIO, NamedTuple, TextIO

from spamnb import headers

EXIT = {"spam": 0, "ham": 1, "unsure": 2}
EXIT_ERROR = 3
READ_SIZE = 1 << 16
AFTERWORD = "; message passed through unchanged"


class InputError(Exception):
    """Nothing to filter."""


class Cutoffs(NamedTuple):
    """`--spam-cutoff` / `--ham-cutoff` for this message; None: the model's."""

    spam: float | None = None
    ham: float | None = None


MODEL_CUTOFFS = Cutoffs()


class PipeArgs(NamedTuple):
    model: str | None = None  # None: the default model
    cutoffs: Cutoffs = MODEL_CUTOFFS
    exit_zero: bool = False  # exit 0 whatever the verdict (3 still on an error)


def verdict_header(verdict: str, score: float) -> str:
    """The value of `X-Spamnb`: `spam, score=0.9973` (score is P(spam), 4 decimals)."""
    return f"{verdict}, score={score:.4f}"


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
    if isinstance(err, InputError) or type(err).__name__ == "ModelError":
        return text
    return f"internal error ({type(err).__name__}{': ' + text if text else ''})"


def filter_message(model_path: str | None, data: bytes, cutoffs: Cutoffs = MODEL_CUTOFFS) -> tuple[bytes, int]:
    """The stamped message and its exit status."""
    if not data:
        raise InputError("empty input: no message on stdin")
    # Imported here so that even a broken installation passes mail through.
    from spamnb import store
    from spamnb.tokens import Tokenizer

    model = store.load(model_path or store.default_path(), scoring_only=True)
    if cutoffs != MODEL_CUTOFFS:
        spam = model.scoring.spam_cutoff if cutoffs.spam is None else cutoffs.spam
        ham = model.scoring.ham_cutoff if cutoffs.ham is None else cutoffs.ham
        if not 0 < ham < spam < 1:
            raise InputError(f"the ham cut-off ({ham:g}) must be below the spam cut-off ({spam:g}), both between 0 and 1")
        model.scoring = model.scoring.replace(spam_cutoff=spam, ham_cutoff=ham)
    explanation = model.explain(Tokenizer(model.tokens)(data))
    score = model.scoring.probability(explanation.log_odds)
    verdict = model.scoring.verdict(score)
    return headers.stamp(data, verdict_header(verdict, score)), EXIT[verdict]


def run(
    model_path: str | None,
    stdin: BinaryIO,
    stdout: BinaryIO,
    stderr: TextIO,
    refuse: str = "",
    cutoffs: Cutoffs = MODEL_CUTOFFS,
    exit_zero: bool = False,
) -> int:
    """Filter one message; `model_path` None means the default model; `refuse` (a usage
    error) passes the message through unscored with that reason.  `exit_zero`: exit 0
    for every verdict, so that procmail's `:0 fw` takes the stamped message without
    logging a failure (3 stays 3: procmail then keeps its own copy)."""
    chunks: list[bytes] = []
    complaint = ""
    try:
        read_into(stdin, chunks)
        if refuse:
            raise InputError(refuse)
        chunks[:] = [b"".join(chunks)]
        out, status = filter_message(model_path, chunks[0], cutoffs)
        chunks[:] = [out]
        if exit_zero:
            status = 0
    except Exception as err:  # noqa: BLE001 - fail open, whatever went wrong (MemoryError too)
        status, complaint = EXIT_ERROR, describe(err) + AFTERWORD
    try:
        for chunk in chunks:
            stdout.write(chunk)
        stdout.flush()
    except Exception as err:  # noqa: BLE001 - stdout is gone: nothing more can be done for the message
        status, complaint = EXIT_ERROR, f"cannot write the message to stdout: {one_line(err) or type(err).__name__}"
    if complaint:
        with contextlib.suppress(Exception):
            stderr.write(f"spamnb: {complaint}\n")
            stderr.flush()
    return status


def parse_args(argv: list[str]) -> tuple[bool, str | None]:
    """Whether argv is a pipe invocation `parse_options` reads, and its MODEL (None: the default)."""
    args = parse_options(argv)
    return (False, None) if args is None else (True, args.model)


VALUED = ("-m", "--model", "--jobs", "--spam-cutoff", "--ham-cutoff")


def parse_options(argv: list[str]) -> PipeArgs | None:
    """The options of `[--debug|-q|--quiet]... classify --pipe [OPTION]...`, OPTION one of
    -m/--model MODEL, --jobs N, --spam-cutoff P, --ham-cutoff P, --exit-zero, -q/--quiet.

    None for anything else (including --help or a stray SRC), which the full command
    line then handles, errors and all.
    """
    args = list(argv)
    while args and args[0] in ("--debug", "-q", "--quiet"):
        args.pop(0)
    if not args or args[0] != "classify" or "--pipe" not in args:
        return None
    values: dict[str, str] = {}
    exit_zero = False
    rest = args[1:]
    i = 0
    while i < len(rest):
        arg = rest[i]
        name, eq, value = arg.partition("=")
        if arg in ("--pipe", "-q", "--quiet", "--exit-zero"):
            exit_zero = exit_zero or arg == "--exit-zero"
            i += 1
        elif arg in VALUED and i + 1 < len(rest):
            values["--model" if arg == "-m" else arg] = rest[i + 1]
            i += 2
        elif eq and name in VALUED and name.startswith("--"):
            values[name] = value
            i += 1
        elif arg.startswith("-m") and len(arg) > 2:
            values["--model"] = arg[2:]
            i += 1
        else:
            return None
    try:
        cutoffs = Cutoffs(*(float(values[k]) if k in values else None for k in ("--spam-cutoff", "--ham-cutoff")))
    except ValueError:
        return None
    if values.get("--model") == "":
        return None
    return PipeArgs(values.get("--model"), cutoffs, exit_zero)


def main(model_path: str | None, cutoffs: Cutoffs = MODEL_CUTOFFS, exit_zero: bool = False) -> int:
    return run(model_path, sys.stdin.buffer, sys.stdout.buffer, sys.stderr, cutoffs=cutoffs, exit_zero=exit_zero)
