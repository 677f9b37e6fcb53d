"""What the compiled modules make of a message, and a process saying what their Python source makes of it.

`observe` runs one message through everything spamnb.compiled.COMPILED does to mail: the
tokeniser (tokens and numeric features, under several settings, so the MIME reader
too) and the header rules (unstamped, digest, stamp); `calibrated` fits Platt's curve
and the ham-loss floor on scores, and takes each score's P.  `Interpreted` runs the same
in a process of its own with SPAMNB_PURE=1: their Python source, and the pure word path.
tests/test_compiled.py and `make fuzz` (bench/fuzz_compiled.py) compare the two.

    python -m tests.interpreted     # the reference process: pickled requests on stdin
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

# Settings each message is tokenised under: the defaults, n-grams with stopwords, short
# words kept case and all, and no header tokens (the numeric features still read the header).
OPTIONS = ({}, {"ngram": 2, "stopwords": True}, {"min_len": 1, "max_len": 8, "lowercase": False}, {"header_tokens": False})
VERDICT = "spam 0.99\n  (why)"

_tokenizers: dict[tuple, Any] = {}


def tokenizer(options: dict) -> Any:
    from spamnb.text.tokens import Tokenizer, TokenSettings

    key = tuple(sorted(options.items()))
    if key not in _tokenizers:
        _tokenizers[key] = Tokenizer(TokenSettings(**options))
    return _tokenizers[key]


def outcome(call: Callable[[], object]) -> tuple[str, object]:
    """What a call returned, or the type of what it raised: a failure must be the same failure."""
    try:
        return "returned", call()
    except Exception as error:  # noqa: BLE001 - any failure is an outcome to compare
        return "raised", type(error).__name__


def tokenised(data: bytes, options: dict) -> tuple[list[str], list[int] | None]:
    return tokenizer(options).read(data, True)


def observe(data: bytes) -> list[tuple[str, object]]:
    """Every output of the compiled modules for one message's bytes."""
    from spamnb.mail import headers

    calls: list[Callable[[], object]] = [lambda options=options: tokenised(data, options) for options in OPTIONS]
    calls += [
        lambda: headers.split_message(data),
        lambda: headers.unstamped(data, 4096),
        lambda: headers.digest(data),
        lambda: headers.digest(data, 4096, transport=True),
        lambda: headers.stamp(data, VERDICT),
    ]
    return [outcome(call) for call in calls]


def words(text: str, options: dict) -> tuple[str, object]:
    """The words a tokeniser finds in one text (a header value or a part's text)."""
    return outcome(lambda: tokenizer(options).words(text))


def calibrated(log_odds: list[float], positive: list[bool], outlier: float) -> tuple[str, object]:
    """Platt's fit on held-out scores and the ham-loss floor over it (spamnb.models.calibration),
    and each score's P (`probability`, as every scorer's `Scoring.probability` takes it)."""
    from spamnb.models import calibration

    def fit() -> tuple[tuple[float, float], float, list[float]]:
        fitted = calibration.fit_platt(log_odds, positive, outlier=outlier)
        return fitted, calibration.ham_loss_floor(log_odds, positive, fitted), [calibration.probability(s) for s in log_odds]

    return outcome(fit)


OPERATIONS: dict[str, Callable[..., object]] = {"observe": observe, "words": words, "calibrated": calibrated}


class Interpreted:
    """A process running the compiled modules' Python source (SPAMNB_PURE=1); called with an
    operation of OPERATIONS and a list of argument tuples, it answers a list of results."""

    def __init__(self) -> None:
        env = {key: value for key, value in os.environ.items() if key != "LD_PRELOAD"}  # no sanitizer there
        env["SPAMNB_PURE"] = "1"
        self.process = subprocess.Popen([sys.executable, "-m", "tests.interpreted"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=REPO)

    def __call__(self, operation: str, batch: Sequence[tuple]) -> list:
        assert self.process.stdin is not None and self.process.stdout is not None
        pickle.dump((operation, list(batch)), self.process.stdin)
        self.process.stdin.flush()
        return pickle.load(self.process.stdout)

    def __enter__(self) -> Interpreted:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def serve() -> int:
    from spamnb import compiled

    if any(compiled.is_compiled(sys.modules.get(name) or __import__(name, fromlist=["_"])) for name in compiled.COMPILED):
        print("tests.interpreted: a compiled module was imported: SPAMNB_PURE is not in effect", file=sys.stderr)
        return 1
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            operation, batch = pickle.load(requests)
        except EOFError:
            return 0
        pickle.dump([OPERATIONS[operation](*args) for args in batch], answers)
        answers.flush()


if __name__ == "__main__":
    sys.exit(serve())
