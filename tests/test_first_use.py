"""Mistakes a new user makes, said in one line (issue 19, item 5), and the help and
output a new user reads (items 9, 10, 11)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spamnb.models import store
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_corpus"
SPAMNB = Path(sys.executable).parent / "spamnb"


@pytest.fixture()
def mail(tmp_path: Path) -> Path:
    """~/Mail with INBOX and Spam maildirs, as the issue's user had it."""
    shutil.copytree(SAMPLE / "maildir" / "ham", tmp_path / "Mail" / "INBOX")
    shutil.copytree(SAMPLE / "maildir" / "spam", tmp_path / "Mail" / "Spam")
    return tmp_path / "Mail"


def test_a_folder_inside_the_other_class_is_refused(mail: Path, tmp_path: Path) -> None:
    model = tmp_path / "model.npz"
    done = run_cli("train", "-m", model, "--ham", mail, "--spam", mail / "Spam")
    assert done.exit_code == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("spamnb: error: ") and "Spam" in line and "both" in line
    assert not model.exists()


def test_no_library_warning_ever_leaks(mail: Path, tmp_path: Path) -> None:
    # the same messages learnt as spam and then, from a copy, as ham: the model ends with no spam
    shutil.copytree(mail / "Spam", tmp_path / "copy")
    done = subprocess.run(
        [str(SPAMNB), "train", "-m", str(tmp_path / "m.npz"), "--spam", str(mail / "Spam"), "--ham", str(tmp_path / "copy"), "--ham", str(mail / "INBOX")],
        capture_output=True, timeout=120, env={**os.environ, "PYTHONWARNINGS": "default"},
    )
    assert done.returncode == 0, done.stderr
    assert b"Warning" not in done.stderr and b"warn(" not in done.stderr
    assert b"spamnb: warning:" in done.stderr and b"no spam" in done.stderr


def test_an_empty_class_is_warned_of_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "Spam"
    for sub in ("cur", "new", "tmp"):
        (empty / sub).mkdir(parents=True)
    done = run_cli("train", "-q", "-m", tmp_path / "m.npz", "--spam", empty, "--ham", SAMPLE / "ham.mbox")
    assert done.exit_code == 0
    assert done.stderr.splitlines() == [
        f"spamnb: warning: {empty}: no mail in it",
        f"spamnb: warning: {tmp_path / 'm.npz'} holds no spam yet: classify needs mail of both classes",
    ]


def test_classifying_an_empty_folder_says_so(tmp_path: Path) -> None:
    model = tmp_path / "m.npz"
    assert run_cli("train", "-q", "-m", model, "--spam", SAMPLE / "spam.mbox", "--ham", SAMPLE / "ham.mbox").exit_code == 0
    (tmp_path / "empty").mkdir()
    done = run_cli("classify", "-m", model, tmp_path / "empty")
    assert (done.exit_code, done.stdout) == (0, "")
    assert done.stderr == f"spamnb: warning: {tmp_path / 'empty'}: no mail in it\n"


def test_dry_run_reports_and_changes_nothing(mail: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.npz"
    assert run_cli("train", "-q", "-m", model, "--spam", mail / "Spam", "--ham", mail / "INBOX").exit_code == 0
    before = model.read_bytes()
    # the spam folder given as ham by mistake: what would move is said, nothing moves
    done = run_cli("train", "-q", "--dry-run", "-m", model, "--ham", mail / "Spam")
    assert done.exit_code == 0, done.stderr
    spam = store.load(str(model)).counts.docs[1]
    assert f"would learn 0, move {spam}, already known 0" in done.stderr and "dry run: nothing saved" in done.stderr
    assert model.read_bytes() == before
    forget = run_cli("train", "--dry-run", "--forget", "-m", model, "--ham", mail / "INBOX")
    assert "would forget" in forget.stderr and model.read_bytes() == before
    fresh = tmp_path / "new.npz"
    assert run_cli("train", "--dry-run", "-m", fresh, "--spam", mail / "Spam").exit_code == 0
    assert not fresh.exists() and not (tmp_path / "new.npz.lock").exists()  # not even a lock file


def test_a_usage_error_leaves_no_lock_file_for_a_model_never_made(mail: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "new.npz"
    for bad in (["--event", "fisher", "--idf"], ["--spam-cutoff", "0.1", "--ham-cutoff", "0.5"]):
        assert run_cli("train", "-m", fresh, *bad, "--spam", mail / "Spam").exit_code == 2
    assert list(tmp_path.glob("new.npz*")) == []


COMMANDS = ("train", "classify", "eval", "inspect", "merge")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_help_has_examples_and_exit_statuses(command: str) -> None:
    done = run_cli(command, "--help")
    assert done.exit_code == 0
    text = done.stdout
    assert "Examples:" in text and "Exit status:" in text
    examples = text.split("Examples:", 1)[1].split("Exit status:", 1)[0]
    lines = [line.strip() for line in examples.splitlines() if line.strip()]
    assert lines and all(line.startswith(f"spamnb {command}") for line in lines), lines
    statuses = text.split("Exit status:", 1)[1]
    for code in ("0", "2", "3", "130"):
        assert f"{code} " in statuses


def complete(words: str, tmp_path: Path) -> list[str]:
    env = {**os.environ, "_SPAMNB_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
    done = subprocess.run([str(SPAMNB)], env=env, capture_output=True, timeout=60, cwd=tmp_path)
    return done.stdout.decode().splitlines()


@pytest.mark.parametrize("words", ["spamnb classify Ma", "spamnb train --spam Ma", "spamnb train --ham Ma", "spamnb eval --index Ma", "spamnb inspect --explain Ma"])
def test_sources_complete_as_paths(words: str, tmp_path: Path) -> None:
    # bash's completion script reads `file,PREFIX` as "complete file names": the shell's own
    assert complete(words, tmp_path) == ["file,Ma"]


def test_the_table_keeps_the_end_of_the_path_and_shows_sender_and_subject(tmp_path: Path) -> None:
    from spamnb.cli import report
    from spamnb.models.model import Scored

    deep = "/home/someone/Mail/Archive/2024/lists/example/cur/" + "1699261250.M730716P26818.mail.example.com,S=2211:2,S"
    rows = [Scored(deep, None, 3.0, 0.99, "spam"), Scored("b", None, -3.0, 0.01, "ham"), Scored("c", None, 0.0, 0.5, "unsure")]
    heads = {deep: ("Alice <alice@example.com>", "Cheap pills"), "b": ("bob@example.org", "Agenda")}
    console = report.console()
    console.width = 100
    with console.capture() as captured:
        console.print(report.scored_table(rows, heads, width=100))
        console.print(report.verdict_counts(rows))
    text = captured.get()
    assert deep[-20:] in text and deep[:20] not in text  # the end, which names the message, is kept
    assert "Alice <alice@" in text and "Cheap pills" in text and "Agenda" in text
    assert text.rstrip().splitlines()[-1] == "3 messages: 1 spam, 1 ham, 1 unsure"


def test_inspect_says_when_the_model_was_last_trained_and_its_size(tmp_path: Path) -> None:
    import datetime

    model = tmp_path / "m.npz"
    assert run_cli("train", "-q", "-m", model, "--spam", SAMPLE / "spam.mbox", "--ham", SAMPLE / "ham.mbox").exit_code == 0
    os.utime(model, (1_700_000_000, 1_700_000_000))
    info = json.loads(run_cli("inspect", "-m", model, "--json").stdout)
    assert info["file_bytes"] == model.stat().st_size
    assert info["last_trained"] == datetime.datetime.fromtimestamp(1_700_000_000, datetime.UTC).isoformat(timespec="seconds")
    table = run_cli("inspect", "-m", model).stdout
    assert "last trained" in table and "2023-11-14T22:13:20+00:00" in table and f"{model.stat().st_size:,} bytes" in table
