"""The console script's pipe dispatch never loses a message, even on bad arguments or a broken install."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from spamnb import entry
from tests.test_pipe import SPAM_MAIL, small_model

SCRIPT = str(Path(sys.executable).parent / "spamnb")


@pytest.mark.parametrize(
    "args",
    [["classify", "--pipe", "--bogus"], ["classify", "--pipe", "--json"], ["classify", "--pipe", "-m"], ["classify", "--pipe", "extra-src"]],
    ids=["unknown-option", "option-not-for-pipe", "missing-value", "stray-source"],
)
def test_unreadable_pipe_arguments_pass_the_message_through(tmp_path: Path, args: list[str]) -> None:
    model = small_model(tmp_path)
    done = subprocess.run([SCRIPT, *args, "--model", str(model)], input=SPAM_MAIL, capture_output=True, timeout=60)
    assert done.returncode == 3
    assert done.stdout == SPAM_MAIL
    assert len(done.stderr.decode().splitlines()) == 1


@pytest.mark.parametrize("value", ["-1", "abc", "1.5"])
def test_a_bad_reasons_count_is_named_and_the_message_passed_through(tmp_path: Path, value: str) -> None:
    """The refusal says what --reasons takes: listing it as allowed, unqualified, read as a contradiction."""
    model = small_model(tmp_path)
    done = subprocess.run([SCRIPT, "classify", "--pipe", "--reasons", value, "--model", str(model)], input=SPAM_MAIL, capture_output=True, timeout=60)
    assert done.returncode == 3 and done.stdout == SPAM_MAIL
    (line,) = done.stderr.decode().splitlines()
    assert "--reasons N (a whole number, 0 or more)" in line and f"--reasons {value}" in line


def test_help_still_reaches_click() -> None:
    done = subprocess.run([SCRIPT, "classify", "--pipe", "--help"], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and b"--pipe" in done.stdout


def test_a_filter_that_cannot_be_imported_still_delivers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "spamnb.pipe.filter", None)  # makes `from spamnb.pipe import filter` raise
    stdin = io.TextIOWrapper(io.BytesIO(SPAM_MAIL))
    out = io.BytesIO()
    stdout = io.TextIOWrapper(out)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", err)
    assert entry.pipe_main(["classify", "--pipe"]) == 3
    assert out.getvalue() == SPAM_MAIL
    assert "passed through unchanged" in err.getvalue()
