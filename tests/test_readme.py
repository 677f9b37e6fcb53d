"""The README's examples, run as a user would run them, on the shipped sample corpus."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CORPUS = ROOT / "sample_corpus"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def section(title: str) -> str:
    """The text of one `### title` section."""
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^##)", README, flags=re.S | re.M)
    assert match, f"README has no section {title!r}"
    return match.group(1)


def commands(text: str) -> list[str]:
    code = "".join(re.findall(r"```sh\n(.*?)```", text, flags=re.S))
    return [line.split("  #")[0].strip() for line in code.splitlines() if line.strip().startswith("spamnb")]


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    """A home with ~/Mail/Spam and ~/Mail/INBOX maildirs and a corpus/ copy of the sample."""
    shutil.copytree(CORPUS / "maildir" / "spam", tmp_path / "Mail" / "Spam")
    shutil.copytree(CORPUS / "maildir" / "ham", tmp_path / "Mail" / "INBOX")
    shutil.copytree(CORPUS, tmp_path / "corpus")
    return tmp_path


def run(line: str, home: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, HOME=str(home), PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("SPAMNB_MODEL", None)
    env.pop("XDG_DATA_HOME", None)
    return subprocess.run(["bash", "-c", line], cwd=home, env=env, input=stdin, capture_output=True, timeout=120)


def test_setup_is_make_demo_then_make_test() -> None:
    code = re.search(r"## Set-up.*?```sh\n(.*?)```", README, flags=re.S).group(1)  # type: ignore[union-attr]
    assert [line.split("#")[0].strip() for line in code.strip().splitlines()] == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_quick_start_runs(home: Path) -> None:
    lines = commands(section("Quick start"))
    assert lines[0].startswith("spamnb train")
    outputs = {}
    for line in lines:
        done = run(line, home)
        assert done.returncode == 0, (line, done.stderr.decode())
        outputs[line] = done.stdout.decode()
    model = home / ".local" / "share" / "spamnb" / "model.npz"
    assert model.exists()
    # piped: id<TAB>verdict<TAB>score
    tsv = [row.split("\t") for row in outputs["spamnb classify ~/Mail/INBOX/new"].splitlines()]
    assert tsv and all(len(r) == 3 and r[1] in {"spam", "ham", "unsure"} and 0 <= float(r[2]) <= 1 for r in tsv)
    verdicts = [json.loads(row) for row in (home / "verdicts.jsonl").read_text().splitlines()]
    assert len(verdicts) == len(tsv) == len(os.listdir(home / "Mail" / "INBOX" / "new"))
    assert {"id", "verdict", "score", "log_odds"} <= set(verdicts[0])
    assert "tokens pointing to spam" in outputs["spamnb inspect --top 10"]
    assert "tokens that moved the verdict most" in outputs["spamnb inspect --explain ~/Mail/INBOX/new --top 5"]


def test_procmail_recipe_commands_behave_as_described(home: Path) -> None:
    recipe = blocks("procmail")[0]
    pipe_lines = [line.lstrip("| ").strip() for line in recipe.splitlines() if line.startswith("|")]
    assert pipe_lines == ["spamnb classify --pipe", "spamnb classify --pipe; [ $? -le 3 ]"]
    assert run("spamnb -q train --spam ~/Mail/Spam --ham ~/Mail/INBOX", home).returncode == 0
    for folder, verdicts in (("Spam", {0: "spam", 2: "unsure"}), ("INBOX", {1: "ham", 2: "unsure"})):
        for message in sorted((home / "Mail" / folder / "cur").iterdir())[:5]:
            data = message.read_bytes()
            done = run(pipe_lines[0], home, stdin=data)
            header = re.search(rb"^X-Spamnb: (\w+), score=(\d\.\d{4})$", done.stdout, re.M)
            assert header, done.stdout[:200]
            if done.returncode in verdicts:
                assert header.group(1).decode() == verdicts[done.returncode]
            # everything but the added header is the message as it came
            assert done.stdout.replace(header.group(0) + b"\n", b"", 1) == data
            # stamping every message: any verdict is a success to procmail (a dead filter, test_crash)
            stamped = run(pipe_lines[1], home, stdin=data)
            assert (stamped.returncode, stamped.stdout) == (0, done.stdout)


def test_cron_line_is_idempotent(home: Path) -> None:
    line = blocks("crontab")[0].strip().splitlines()[-1]
    command = line.split(None, 5)[5]
    first = run(command, home)
    again = run(command, home)
    assert first.returncode == again.returncode == 0, first.stderr.decode()
    assert b"already known 0" in first.stderr
    assert re.search(rb"learnt 0, moved 0, already known \d+", again.stderr)


def test_mail_reader_keys_teach_and_forget_the_message_shown(home: Path) -> None:
    macros = re.findall(r'<pipe-message>(.*?)<enter>', blocks("muttrc")[0])
    assert macros == ["spamnb -q train --spam -", "spamnb -q train --ham -", "spamnb -q train --forget --ham -"]
    assert run("spamnb -q train --spam ~/Mail/Spam --ham ~/Mail/INBOX", home).returncode == 0
    message = sorted((home / "Mail" / "INBOX" / "cur").iterdir())[0].read_bytes()
    piped = run("spamnb classify --pipe", home, stdin=message).stdout  # as the reader shows it: stamped
    spam, ham, forget = (run(m, home, stdin=piped) for m in macros)
    assert spam.returncode == ham.returncode == forget.returncode == 0, spam.stderr.decode()
    assert b"learnt 0, moved 1, already known 0" in spam.stderr  # it was learnt as ham by the folder
    assert b"learnt 0, moved 1, already known 0" in ham.stderr
    assert b"forgot 1" in forget.stderr
    again = run(macros[2], home, stdin=piped)
    assert again.returncode == 1 and b"never learnt, nothing to forget" in again.stderr


def test_online_evaluation_commands_run(home: Path) -> None:
    plain, on_error = commands(section("Online evaluation (the TREC protocol)"))
    shown = run(plain, home)
    assert shown.returncode == 0 and b"lam%" in shown.stdout, shown.stderr.decode()
    found = run(on_error, home)
    assert found.returncode == 0, found.stderr.decode()
    result = json.loads(found.stdout)
    assert result["online"]["train_on_error"] is True and 0 < result["online"]["learnt"] < result["messages"]
    assert result["lam_percent"] > 0


def test_ci_example_passes_and_fails_as_described(home: Path) -> None:
    line = commands(section("An accuracy check in CI"))[0]
    assert run(line, home).returncode == 0
    failing = run(line.replace("auc=0.95", "auc=1.01"), home)
    assert failing.returncode == 1
    assert b"auc" in failing.stderr
