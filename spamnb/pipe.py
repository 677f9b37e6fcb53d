"""The pass-through filter: one message in, the same message plus a verdict header out.

Fails open: on any error the original bytes go out unchanged, one line goes to
stderr, and the exit status is 3.  Imports only numpy and the standard library, so
a message is scored in about the time it takes Python to import numpy.  The console
script reaches `main` without click (see `spamnb.entry`), and the model is mapped,
not read (`store.load(scoring_only=True)`).
"""
from __future__ import annotations

import sys
from typing import BinaryIO, TextIO

from spamnb import headers

EXIT = {"spam": 0, "ham": 1, "unsure": 2}
EXIT_ERROR = 3


def verdict_header(verdict: str, score: float) -> str:
    """The value of `X-Spamnb`: `spam, score=0.9973` (score is P(spam), 4 decimals)."""
    return f"{verdict}, score={score:.4f}"


def run(model_path: str | None, stdin: BinaryIO, stdout: BinaryIO, stderr: TextIO) -> int:
    """Filter one message; `model_path` None means the default model."""
    data = b""
    try:
        data = stdin.read()
        # Imported here so that even a broken installation passes mail through.
        from spamnb import store
        from spamnb.tokens import Tokenizer

        if model_path is None:
            model_path = store.default_path()

        model = store.load(model_path, scoring_only=True)
        explanation = model.explain(Tokenizer(model.tokens)(data))
        score = model.scoring.probability(explanation.log_odds)
        verdict = model.scoring.verdict(score)
        out = headers.stamp(data, verdict_header(verdict, score))
        status = EXIT[verdict]
    except Exception as err:  # noqa: BLE001 - fail open, whatever went wrong (MemoryError too)
        out, status = data, EXIT_ERROR
        stderr.write(f"spamnb: {type(err).__name__ if not str(err) else err}; message passed through unchanged\n")
    stdout.write(out)
    stdout.flush()
    return status


def parse_args(argv: list[str]) -> tuple[bool, str | None]:
    """Whether argv is `[--debug|-q|--quiet]... classify --pipe [-m MODEL|--model MODEL|--jobs N]...`, and its MODEL.

    (False, None) for anything else (including --help or a stray SRC), which the full
    command line then handles, errors and all.  MODEL None: the default model.
    """
    no = (False, None)
    args = list(argv)
    while args and args[0] in ("--debug", "-q", "--quiet"):
        args.pop(0)
    if not args or args[0] != "classify" or "--pipe" not in args:
        return no
    model = None
    rest = args[1:]
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--pipe":
            i += 1
        elif arg in ("-m", "--model", "--jobs") and i + 1 < len(rest):
            if arg != "--jobs":
                model = rest[i + 1]
            i += 2
        elif arg.startswith("--model="):
            model = arg[len("--model=") :]
            i += 1
        elif arg.startswith("--jobs="):
            i += 1
        elif arg.startswith("-m") and len(arg) > 2:
            model = arg[2:]
            i += 1
        else:
            return no
    if model == "":
        return no
    return True, model


def main(model_path: str | None) -> int:
    return run(model_path, sys.stdin.buffer, sys.stdout.buffer, sys.stderr)
