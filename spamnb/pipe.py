"""The pass-through filter: one message in, the same message plus a verdict header out.

Fails open: on any error the original bytes go out unchanged, one line goes to
stderr, and the exit status is 3.  Imports only numpy and the standard library, so
a message is scored in about the time it takes Python to import numpy.
"""
from __future__ import annotations

from typing import BinaryIO, TextIO

from spamnb import headers

EXIT = {"spam": 0, "ham": 1, "unsure": 2}
EXIT_ERROR = 3


def verdict_header(verdict: str, score: float) -> str:
    """The value of `X-Spamnb`: `spam, score=0.9973` (score is P(spam), 4 decimals)."""
    return f"{verdict}, score={score:.4f}"


def run(model_path: str, stdin: BinaryIO, stdout: BinaryIO, stderr: TextIO) -> int:
    data = b""
    try:
        data = stdin.read()
        # Imported here so that even a broken installation passes mail through.
        from spamnb import store
        from spamnb.tokens import Tokenizer

        model = store.load(model_path)
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
