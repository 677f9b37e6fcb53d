"""A filter that dies loses no mail.

The compiled tokeniser reads untrusted mail; if it ever crashed, the process would
die by a signal, with no chance to pass the message through as the pipe filter does
on an error.  What saves the mail then is the caller: procmail's `:0 fw` sees the
failure and keeps the original (README, "Filtering with procmail").  Here the real
console script is made to die inside the tokeniser, by a real SIGSEGV or by SIGKILL,
through a sitecustomize module on PYTHONPATH; nothing in spamnb is changed for it.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import HAM_WORDS, SPAM_WORDS, fake_corpus, make_mail
from tests.test_pipe import SPAMNB, build_model

# Dies the moment the tokeniser is asked for a text's words, compiled or pure path.
CRASH = """
import faulthandler, os, signal
from spamnb.text import tokens

def crash(*args, **kwargs):
    if os.environ["CRASH_BY"] == "SIGSEGV":
        faulthandler.disable()
        faulthandler._sigsegv()  # a real invalid memory access in C
    os.kill(os.getpid(), signal.SIGKILL)

tokens.Tokenizer.words = tokens.Tokenizer.compiled_words = crash
"""

SIGNALS = ["SIGSEGV", "SIGKILL"]
MAIL = make_mail("cheap pills", "a winner of the lottery, cheap casino bonus\n")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("model")
    return build_model(folder / "model.npz", fake_corpus(SPAM_WORDS, 12, seed=1), fake_corpus(HAM_WORDS, 12, seed=2))


@pytest.fixture
def crashing(tmp_path: Path) -> Path:
    """A PYTHONPATH folder whose sitecustomize makes spamnb die in its tokeniser."""
    if not SPAMNB.exists():
        pytest.skip(f"no console script at {SPAMNB}")
    folder = tmp_path / "crash"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(CRASH)
    return folder


def crash_env(crashing: Path, how: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(crashing), "CRASH_BY": how}


@pytest.mark.parametrize("how", SIGNALS)
def test_a_filter_killed_in_the_tokeniser_dies_by_the_signal_having_written_nothing(model: Path, crashing: Path, how: str) -> None:
    """What a caller sees: death by the signal (a failure to procmail, not a verdict),
    and no byte of a half-made message on stdout, since the output is written only once scored."""
    done = subprocess.run(
        [str(SPAMNB), "classify", "--pipe", "-m", str(model)], input=MAIL, capture_output=True, env=crash_env(crashing, how), timeout=60, check=False
    )
    assert done.returncode == -getattr(signal, how)
    assert done.stdout == b""


# procmail clears the environment it was started with: the crash is set up in the rcfile.
PROCMAILRC = """SHELL=/bin/sh
PYTHONPATH={crashing}
CRASH_BY="{how}"
LOGFILE={folder}/procmail.log
VERBOSE=on
{recipe}
:0:
{folder}/inbox.mbox
"""
# The README's two recipes, and the one it warns against.
BY_EXIT_STATUS = ":0 fw\n| {spamnb} classify --pipe -m {model}\n:0 a:\n{folder}/spam.mbox"
STAMP_ALL = ":0 fw\n| {spamnb} classify --pipe -m {model}; [ $? -le 3 ]"
NO_WAIT = ":0 f\n| {spamnb} classify --pipe -m {model}"
HAM = make_mail("meeting agenda", "the project review and the budget draft for tuesday\n")


def procmail(tmp_path: Path, model: Path, recipe: str, crashing: Path | None, how: str, mail: bytes) -> tuple[bytes, str]:
    """The message procmail filed in inbox.mbox (b"" for none), and its log."""
    rc = tmp_path / "procmailrc"
    text = PROCMAILRC.format(recipe=recipe, folder=tmp_path, crashing=crashing or "", how=how)
    rc.write_text(text.format(spamnb=SPAMNB, model=model, folder=tmp_path))
    done = subprocess.run(["procmail", "-m", str(rc)], input=mail, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    inbox = tmp_path / "inbox.mbox"
    return (inbox.read_bytes() if inbox.exists() else b""), (tmp_path / "procmail.log").read_text()


needs_procmail = pytest.mark.skipif(shutil.which("procmail") is None, reason="procmail not installed")


@needs_procmail
@pytest.mark.parametrize("recipe", [BY_EXIT_STATUS, STAMP_ALL], ids=["by exit status", "stamp all"])
@pytest.mark.parametrize("how", SIGNALS)
def test_procmail_keeps_the_original_when_the_filter_dies(model: Path, crashing: Path, tmp_path: Path, recipe: str, how: str) -> None:
    """The README's recipes under the real procmail: a filter that dies leaves the
    message as it came (and the blank line that ends a message in an mbox), filed by
    the recipe after it, and no spam folder."""
    filed, log = procmail(tmp_path, model, recipe, crashing, how, MAIL)
    assert "Program failure" in log and "Rescue of unfiltered data succeeded" in log, log
    assert filed == MAIL + b"\n"
    assert not (tmp_path / "spam.mbox").exists()


@needs_procmail
def test_procmail_recipes_file_and_stamp_when_the_filter_lives(model: Path, tmp_path: Path) -> None:
    filed, _ = procmail(tmp_path, model, BY_EXIT_STATUS, None, "", MAIL)
    assert filed == b"" and b"X-Spamnb: spam, score=" in (tmp_path / "spam.mbox").read_bytes()
    filed, _ = procmail(tmp_path, model, BY_EXIT_STATUS, None, "", HAM)
    assert filed == HAM + b"\n"  # exit 1: procmail keeps the unstamped original
    filed, _ = procmail(tmp_path, model, STAMP_ALL, None, "", HAM)
    assert filed.startswith(HAM.split(b"\n\n")[0]) and b"X-Spamnb: ham, score=" in filed


@needs_procmail
def test_without_w_procmail_takes_what_a_dead_filter_wrote(model: Path, crashing: Path, tmp_path: Path) -> None:
    """Why the README's recipes all say `fw`: with `f` alone the message is lost."""
    filed, _ = procmail(tmp_path, model, NO_WAIT, crashing, "SIGKILL", MAIL)
    assert MAIL not in filed and b"cheap casino" not in filed
