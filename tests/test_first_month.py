"""A user's first month (issue 31): recipes that learn only reviewed mail, a light
install with spamnb on PATH, input that is not mail, a terminal on stdin, -q, dump and
restore, SpamAssassin's headers, a systemd timer and a system-wide procmail recipe.

Each takes the road a user takes: the console script, the README's recipes as printed,
the real procmail and systemd-analyze."""
from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import select
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spamnb.mail import headers
from spamnb.models import store
from tests.conftest import make_mail
from tests.test_readme import (
    CORPUS,
    PROCMAIL,
    README_SPAMNB,
    ROOT,
    SPAMNB,
    STAMP,
    as_printed,
    blocks,
    commands,
    deliver,
    delivered,
    mailhome,  # noqa: F401 - a fixture
    needs_procmail,
    section,
)

SAMPLE_SPAM = sorted(p for p in (CORPUS / "maildir" / "spam").rglob("*") if p.is_file() and not p.name.startswith("."))
SAMPLE_HAM = sorted(p for p in (CORPUS / "maildir" / "ham").rglob("*") if p.is_file() and not p.name.startswith("."))


def spamnb(*args: str | Path, stdin: bytes | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([SPAMNB, *map(str, args)], input=stdin, capture_output=True, timeout=120, env=env)


def learnt(model: Path) -> dict[str, int]:
    done = spamnb("inspect", "--json", "-m", model)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)["messages"]


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.npz"
    done = spamnb("-q", "train", "-m", path, "--spam", CORPUS / "maildir" / "spam", "--ham", CORPUS / "maildir" / "ham")
    assert done.returncode == 0, done.stderr.decode()
    return path


# --- 1. the cron line learns only the mail the user has reviewed ----------------------------


def cron(command: str, home: Path) -> subprocess.CompletedProcess[bytes]:
    """As cron runs a job: /bin/sh, PATH=/usr/bin:/bin (no venv), HOME set."""
    return subprocess.run(["/bin/sh", "-c", command], env={"PATH": "/usr/bin:/bin", "HOME": str(home)}, capture_output=True, timeout=120)


def cron_command() -> str:
    line = blocks("crontab")[0].strip().splitlines()[-1]
    return as_printed(line.split(None, 5)[5])


def review(home: Path, folder: str) -> list[Path]:
    """What a mail reader does to the messages it has shown: new/ to cur/, flagged seen."""
    moved = []
    for path in sorted((home / "Mail" / folder / "new").glob("*")):
        target = home / "Mail" / folder / "cur" / f"{path.name}:2,S"
        target.parent.mkdir(parents=True, exist_ok=True)
        path.rename(target)
        moved.append(target)
    return moved


@needs_procmail
def test_a_month_of_mail_learns_only_what_was_reviewed(mailhome: tuple[Path, list[bytes]]) -> None:  # noqa: F811
    """Delivery through the README's procmail recipe, a review in the mail reader (Unsure/
    judged with the README's keys and moved), the README's cron line: the mail nobody has
    looked at is not learnt, a verdict the user corrected is learnt as corrected."""
    home, new = mailhome
    model = home / ".local/share/spamnb/model.npz"
    spam = {p.read_bytes() for p in SAMPLE_SPAM}
    labels = {m: "spam" if m in spam else "ham" for m in new}
    arrived, later = new[:-4], new[-4:]
    for message in arrived:
        assert deliver(home, message).returncode == 0
    before = learnt(model)
    # The review: INBOX and Spam are read; each unsure message is judged with the reader's
    # keys (the README's mutt macros) and then moved where it belongs.
    keys = dict(zip(("spam", "ham"), (as_printed(m) for m in re.findall(r"<pipe-message>(.*?)<enter>", blocks("muttrc")[0])[:2]), strict=True))
    true_label = {m.rstrip(b"\n"): labels[m] for m in new}
    reviewed = {"spam": 0, "ham": 0}
    for folder in ("INBOX", "Spam", "Unsure"):
        for path in review(home, folder):
            data = path.read_bytes()
            label = true_label[STAMP.sub(b"", data, count=1).rstrip(b"\n")]
            reviewed[label] += 1
            if folder == "Unsure":
                done = subprocess.run(["/bin/sh", "-c", keys[label]], input=data, env={"PATH": "/usr/bin:/bin", "HOME": str(home)}, capture_output=True, timeout=120)
                assert done.returncode == 0, done.stderr.decode()
                path.rename(home / "Mail" / ("Spam" if label == "spam" else "INBOX") / "cur" / path.name)
            elif (folder == "Spam") != (label == "spam"):  # a verdict the user corrects by moving the message
                path.rename(home / "Mail" / ("Spam" if label == "spam" else "INBOX") / "cur" / path.name)
    # Mail that came after the review waits in new/ (the filter's verdict only).
    for message in later:
        assert deliver(home, message).returncode == 0
    waiting = sum(len(list((home / "Mail" / f / "new").glob("*"))) for f in ("INBOX", "Spam", "Unsure") if (home / "Mail" / f).is_dir())
    assert waiting == len(later)
    done = cron(cron_command(), home)
    assert (done.returncode, done.stderr) == (0, b""), done.stderr.decode()
    # Each reviewed message is learnt once, as its true class; nothing still in new/ is.
    # (The mailhome model learnt the other half of the sample; `new` is disjoint from it.)
    assert learnt(model) == {k: before[k] + reviewed[k] for k in before}
    for message in later:
        check = spamnb("train", "--dry-run", "-m", model, f"--{labels[message]}", "-", stdin=message)
        assert b"would learn 1, move 0" in check.stderr, check.stderr.decode()


def test_the_readme_says_what_to_do_with_unsure_mail() -> None:
    text = section("Retraining from folders with cron")
    assert "Unsure/" in text and "cur/" in text
    assert "--spam ~/Mail/Spam/cur" in cron_command() and "--ham ~/Mail/INBOX/cur" in cron_command()


# --- 2. make demo installs the runtime; spamnb on PATH ---------------------------------------


def make_dry_run(target: str, venv: Path) -> str:
    done = subprocess.run(["make", "-n", "-B", target, f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def pip_installs(script: str) -> list[str]:
    return [line for line in script.splitlines() if re.search(r"\bpip\b.* install\b", line)]


def test_make_demo_installs_the_runtime_only_and_make_test_adds_the_test_tools(tmp_path: Path) -> None:
    demo = pip_installs(make_dry_run("demo", tmp_path / "venv"))
    assert demo, "make demo installs spamnb"
    # no extras: pip installs the runtime that pyproject.toml declares (click numpy scipy rich)
    assert not any("[" in line for line in demo), demo
    test = pip_installs(make_dry_run("test", tmp_path / "venv"))
    assert any(re.search(r"\.\[[^]]*test", line) for line in test), test


# The README's way onto PATH is run as printed by the interpreter the venvs were made from.
BASE_PYTHON = Path(getattr(sys, "_base_executable", sys.executable))


def local_indexes() -> list[str]:
    """The package indexes in pip's configuration that are folders (file:// URLs): pip
    installing from those alone makes no network request."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False).stdout
    return re.findall(r"file://[^\s']+", "\n".join(line for line in listed.splitlines() if "index-url" in line))


def test_spamnb_goes_on_path_as_the_readme_says(tmp_path: Path) -> None:
    """`pip install --user .` in a clone, then `spamnb` as cron and procmail find it."""
    indexes = local_indexes()
    if not indexes:
        pytest.skip("pip is configured with no local package index: installing would need the network")
    home = tmp_path / "home"
    clone = home / "spamnb"
    shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(".git", ".venv*", "build", "*.so", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", "demo-out"))
    lines = commands(section("spamnb on your PATH"))
    setup = [line for line in re.findall(r"```sh\n(.*?)```", section("spamnb on your PATH"), flags=re.S)[0].splitlines() if line.strip()]
    env = {
        "HOME": str(home),
        "PATH": f"{BASE_PYTHON.parent}:/usr/bin:/bin",
        "PIP_INDEX_URL": indexes[0],
        "PIP_EXTRA_INDEX_URL": " ".join(indexes[1:]),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    for line in setup:
        if line.lstrip().startswith("spamnb"):
            break
        done = subprocess.run(["bash", "-c", line.split("  #")[0]], cwd=clone, env=env, capture_output=True, timeout=600)
        assert done.returncode == 0, (line, done.stderr.decode()[-2000:])
    installed = home / ".local" / "bin" / "spamnb"
    assert installed.is_file()
    # with the README's full path, from cron's environment, away from the clone and its venv
    shutil.rmtree(clone)
    assert README_SPAMNB == "$HOME/.local/bin/spamnb"
    version = cron(f"{README_SPAMNB} --version", home)
    assert version.returncode == 0 and b"spamnb" in version.stdout, version.stderr.decode()
    (home / "Mail").mkdir()
    shutil.copytree(CORPUS / "maildir" / "spam", home / "Mail" / "Spam")
    shutil.copytree(CORPUS / "maildir" / "ham", home / "Mail" / "INBOX")
    done = cron(cron_command().replace(SPAMNB, README_SPAMNB), home)
    assert done.returncode == 0, done.stderr.decode()
    # and on a login shell's PATH, as the Quick start uses it
    assert lines and all(line.startswith("spamnb") for line in lines)
    shown = subprocess.run(["bash", "-c", lines[0]], env={"HOME": str(home), "PATH": f"{home}/.local/bin:/usr/bin:/bin"}, capture_output=True, timeout=120)
    assert shown.returncode == 0, shown.stderr.decode()


# --- 3. input that is not mail --------------------------------------------------------------


NOT_MAIL = re.compile(rb"^spamnb: warning: (.*): not mail \(no header block\)", re.M)


def test_classifying_a_program_warns_that_it_is_not_mail(model: Path) -> None:
    done = spamnb("classify", "-m", model, "/bin/ls", CORPUS / "spam.mbox")
    assert done.returncode == 0, done.stderr.decode()
    assert NOT_MAIL.findall(done.stderr) == [b"/bin/ls"], done.stderr.decode()
    assert len(done.stdout.splitlines()) == 1 + len(SAMPLE_SPAM)  # still scored, as asked


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_a_file_with_no_header_block_is_not_learnt_unless_forced(model: Path, tmp_path: Path, how: str) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"remember to buy milk\nand eggs: a dozen\n")
    before = learnt(model)
    for junk in (Path("/bin/ls"), notes):
        args, stdin = (["--spam", junk], None) if how == "file" else (["--spam", "-"], junk.read_bytes())
        done = spamnb("train", "-m", model, *args, stdin=stdin)
        assert done.returncode == 1, done.stderr.decode()
        name = str(junk) if how == "file" else "-"
        assert f"spamnb: {name}: not mail (no header block): not learnt (--force learns it)".encode() in done.stderr, done.stderr.decode()
        assert learnt(model) == before
    forced = spamnb("train", "--force", "-m", model, "--spam", notes)
    assert forced.returncode == 0, forced.stderr.decode()
    assert learnt(model) == {**before, "spam": before["spam"] + 1}


def test_mail_and_mboxes_are_mail(model: Path) -> None:
    before = learnt(model)
    for args in (["--spam", CORPUS / "spam.mbox"], ["--ham", SAMPLE_HAM[0]]):
        done = spamnb("train", "-m", model, *args)
        assert done.returncode == 0 and b"not mail" not in done.stderr, done.stderr.decode()
    assert learnt(model) == before  # all known already: nothing refused, nothing new


FIELD_NAME = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters=":"), min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(
    fields=st.lists(st.tuples(FIELD_NAME, st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)), min_size=1, max_size=5),
    body=st.binary(max_size=200),
    newline=st.sampled_from([b"\n", b"\r\n"]),
    envelope=st.booleans(),
)
def test_any_header_block_is_mail(fields: list[tuple[str, str]], body: bytes, newline: bytes, envelope: bool) -> None:
    head = newline.join(f"{name}: {value}".encode() for name, value in fields)
    data = (b"From a@b Mon Jan  1 00:00:00 2024" + newline if envelope else b"") + head + newline + newline + body
    assert headers.has_header_block(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_bytes_whose_first_line_is_no_field_are_not_mail(data: bytes) -> None:
    first = data.split(b"\n", 1)[0]
    if re.match(rb"(From |[\x21-\x39\x3b-\x7e]+[ \t]*:)", first):
        return
    assert not headers.has_header_block(data)


def test_mail_the_email_package_writes_is_mail() -> None:
    assert headers.has_header_block(make_mail("hi", "body"))
    assert headers.has_header_block(make_mail("hi", "body").replace(b"\n", b"\r\n"))
    assert not headers.has_header_block(Path("/bin/ls").read_bytes())
    assert not headers.has_header_block(b"Dear friend,\nBuy now: cheap\n")


# --- 4, 5. a terminal: stdin, -q, progress ---------------------------------------------------


class Terminal:
    """A command with some of its streams on a pseudo-terminal (the others pipes)."""

    def __init__(self, args: list[str], stdin: bool = False, stdout: bool = False, stderr: bool = False) -> None:
        self.master, slave = pty.openpty()
        pipe = subprocess.PIPE
        self.proc = subprocess.Popen(
            args,
            stdin=slave if stdin else subprocess.DEVNULL,
            stdout=slave if stdout else pipe,
            stderr=slave if stderr else pipe,
            env={**os.environ, "COLUMNS": "200", "TERM": "xterm"},
        )
        os.close(slave)
        self.screen = b""

    def read(self, timeout: float = 0.2) -> bytes:
        """What the terminal shows next (also appended to `screen`), waiting up to `timeout`;
        b"" when nothing came or the command has closed its end."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        chunk = b""
        if ready:
            with contextlib.suppress(OSError):  # EIO: the command closed its end
                chunk = os.read(self.master, 1 << 16)
        self.screen += chunk
        return chunk

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self, limit: float = 120) -> tuple[int, bytes, bytes]:
        """Wait for the command (killed after `limit` seconds): its status, stdout and stderr."""
        end = time.monotonic() + limit
        while self.proc.poll() is None and time.monotonic() < end:
            self.read()
        if self.proc.poll() is None:
            self.proc.kill()
        out = self.proc.stdout.read() if self.proc.stdout else b""
        err = self.proc.stderr.read() if self.proc.stderr else b""
        while self.read(0.05):
            pass
        os.close(self.master)
        return self.proc.wait(), out, err


@contextlib.contextmanager
def terminal(args: list[str], **streams: bool) -> Iterator[Terminal]:
    term = Terminal(args, **streams)
    try:
        yield term
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
            term.proc.wait()


def test_classify_says_it_reads_stdin_when_that_is_a_terminal(model: Path) -> None:
    with terminal([SPAMNB, "classify", "-m", str(model)], stdin=True) as term:
        assert term.proc.stderr is not None
        # the line comes before any input: wait for it (bounded), then type a message and Ctrl-D
        ready, _, _ = select.select([term.proc.stderr], [], [], 60)
        assert ready, "nothing said on stderr while waiting for a message on the terminal"
        line = term.proc.stderr.readline()
        assert line == b"spamnb: reading one message from stdin; Ctrl-D to end\n"
        term.type(b"Subject: lunch\n\nsee you at noon\n\x04")
        status, out, err = term.finish()
    assert status == 0, err.decode()
    [row] = out.decode().splitlines()
    assert row.split("\t")[0] == "-"


def test_stdin_from_a_pipe_is_read_without_a_word(model: Path) -> None:
    done = spamnb("classify", "-m", model, stdin=SAMPLE_HAM[0].read_bytes())
    assert done.returncode == 0 and done.stderr == b""


def test_quiet_classify_on_a_terminal_prints_the_table_alone(model: Path) -> None:
    shown = {}
    for quiet in ([], ["-q"]):
        with terminal([SPAMNB, *quiet, "classify", "-m", str(model), str(CORPUS / "spam.mbox")], stdout=True) as term:
            status, _, err = term.finish()
            assert status == 0, err.decode()
            shown[bool(quiet)] = term.screen
    counts = re.compile(rb"\d+ messages: \d+ spam, \d+ ham, \d+ unsure")
    assert counts.search(shown[False])
    assert not counts.search(shown[True])
    assert b"spam.mbox:1" in shown[True]  # the table is the output


def test_eval_help_says_its_tables_are_its_output() -> None:
    done = spamnb("eval", "--help")
    text = " ".join(done.stdout.decode().split())
    assert "tables are its output" in text and "-q" in text


def test_progress_of_an_index_knows_its_length(tmp_path: Path) -> None:
    index = CORPUS / "index"
    total = sum(1 for line in index.read_text().splitlines() if line.strip())
    with terminal([SPAMNB, "train", "-m", str(tmp_path / "m.npz"), "--index", str(index)], stderr=True) as term:
        status, _, _ = term.finish()
    assert status == 0, term.screen.decode(errors="replace")
    assert re.search(rb"\b\d+/%d\b" % total, term.screen), term.screen[-500:]
    assert b"/?" not in term.screen


# --- 7. dump and restore ---------------------------------------------------------------------


def arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def assert_same_arrays(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape, name
        assert np.array_equal(a[name], b[name]), name


MODEL_KINDS = {
    "fisher": [],
    "weighted": ["--event", "multinomial", "--tf", "log", "--idf", "--length-norm", "l2"],
    "meta": ["--meta", "gaussian", "--spam-cutoff", "0.9"],
}


@pytest.mark.parametrize("kind", sorted(MODEL_KINDS))
def test_dump_and_restore_give_back_the_same_arrays(tmp_path: Path, kind: str) -> None:
    original = tmp_path / "original.npz"
    done = spamnb("-q", "train", "-m", original, *MODEL_KINDS[kind], "--spam", CORPUS / "maildir" / "spam", "--ham", CORPUS / "maildir" / "ham")
    assert done.returncode == 0, done.stderr.decode()
    text = tmp_path / "model.txt"
    restored = tmp_path / "moved" / "restored.npz"
    assert spamnb("dump", "-m", original, text).returncode == 0
    done = spamnb("restore", "-m", restored, text)
    assert done.returncode == 0, done.stderr.decode()
    assert_same_arrays(arrays(original), arrays(restored))
    # the text is the model: dumping the restored model gives it again
    again = spamnb("dump", "-m", restored)
    assert again.returncode == 0 and again.stdout == text.read_bytes()


def test_a_dump_covers_the_journal(model: Path, tmp_path: Path) -> None:
    one = make_mail("zebra quokka offer", "narwhal flamingo casino axolotl\n")
    done = spamnb("train", "-m", model, "--spam", "-", stdin=one)  # a mail reader's key: into the journal
    assert done.returncode == 0, done.stderr.decode()
    assert Path(f"{model}.journal").exists()
    dumped = spamnb("dump", "-m", model)
    assert dumped.returncode == 0
    restored = tmp_path / "restored.npz"
    done = spamnb("restore", "-m", restored, "-", stdin=dumped.stdout)
    assert done.returncode == 0, done.stderr.decode()
    assert_same_arrays(store.to_arrays(store.load(str(model))), arrays(restored))
    assert not Path(f"{restored}.journal").exists()
    assert learnt(restored) == learnt(model)
    again = spamnb("train", "--dry-run", "-m", restored, "--spam", "-", stdin=one)
    assert b"already known 1" in again.stderr
    # and it scores as the model with its journal does
    scored = [spamnb("classify", "-m", m, CORPUS / "spam.mbox").stdout for m in (model, restored)]
    assert scored[0] == scored[1]


def test_the_dump_is_text_a_person_can_read(model: Path) -> None:
    dumped = spamnb("dump", "-m", model).stdout.decode("utf-8")
    lines = dumped.splitlines()
    head = json.loads(lines[0])
    assert head["format"] == "spamnb-dump"
    assert head["messages"] == learnt(model)
    assert any(re.fullmatch(r"subject:\S+\t\d+\t\d+\t\d+\t\d+", line) for line in lines)


def test_restore_refuses_a_damaged_dump_and_an_existing_model(model: Path, tmp_path: Path) -> None:
    text = spamnb("dump", "-m", model).stdout
    target = tmp_path / "new.npz"
    for damaged in (text[: len(text) // 2], text.replace(b"\t", b" ", 1), b"not a dump\n", b""):
        done = spamnb("restore", "-m", target, "-", stdin=damaged)
        assert done.returncode == 3, done.stderr.decode()
        [line] = done.stderr.decode().splitlines()
        assert line.startswith("spamnb: error: ") and "Traceback" not in line
        assert not target.exists()
    before = model.read_bytes()
    done = spamnb("restore", "-m", model, "-", stdin=text)
    assert done.returncode == 3 and b"exists" in done.stderr
    assert model.read_bytes() == before


# --- 7. a systemd user timer and a system-wide procmail recipe --------------------------------


def unit_files() -> dict[str, str]:
    """The README's systemd units, each block headed by a comment naming its file."""
    found = {}
    for block in blocks("ini"):
        first, _, rest = block.partition("\n")
        match = re.fullmatch(r"# ~/\.config/systemd/user/(\S+)", first.strip())
        if match:
            found[match.group(1)] = rest
    return found


SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


def test_the_systemd_timer_runs_the_cron_lines_command(tmp_path: Path) -> None:
    units = unit_files()
    assert set(units) == {"spamnb-train.service", "spamnb-train.timer"}
    home = tmp_path / "home"
    shutil.copytree(CORPUS / "maildir" / "spam", home / "Mail" / "Spam")
    shutil.copytree(CORPUS / "maildir" / "ham", home / "Mail" / "INBOX")
    exec_start = re.search(r"^ExecStart=(.*)$", units["spamnb-train.service"], re.M).group(1)  # type: ignore[union-attr]
    # the cron line's command, with systemd's %h for the home
    printed = blocks("crontab")[0].strip().splitlines()[-1].split(None, 5)[5]
    assert exec_start.replace("%h", "~") == printed.replace("$HOME", "~")
    if SYSTEMD_ANALYZE:
        folder = home / ".config" / "systemd" / "user"
        folder.mkdir(parents=True)
        for name, text in units.items():
            (folder / name).write_text(text)
        (home / ".local" / "bin").mkdir(parents=True)
        os.symlink(SPAMNB, home / ".local" / "bin" / "spamnb")
        runtime = tmp_path / "run"
        runtime.mkdir(mode=0o700)
        env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": str(runtime)}
        done = subprocess.run([SYSTEMD_ANALYZE, "verify", "--user", *(str(folder / n) for n in units)], env=env, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr.decode()
    # run as the service manager runs it: no shell, %h the home, a minimal environment, twice
    argv = [arg.replace("%h", str(home)) for arg in shlex.split(exec_start)]
    argv[0] = SPAMNB
    for _ in range(2):
        done = subprocess.run(argv, env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done.stderr.decode()
    assert learnt(home / ".local/share/spamnb/model.npz") == {
        "spam": len(list((home / "Mail/Spam/cur").iterdir())),
        "ham": len(list((home / "Mail/INBOX/cur").iterdir())),
    }


@needs_procmail
def test_the_system_wide_procmail_recipe_gives_each_user_their_own_model(tmp_path: Path) -> None:
    """/etc/procmailrc as the README prints it: every user's mail through that user's model
    (one model per $LOGNAME), filed in their inbox stamped by it."""
    recipe = next(b for b in blocks("procmail") if b.startswith("# /etc/procmailrc")).replace("/usr/local/bin/spamnb", SPAMNB)
    models = tmp_path / "var" / "lib" / "spamnb"
    recipe = recipe.replace("/var/lib/spamnb", str(models))
    rcfile = tmp_path / "procmailrc"
    rcfile.write_text(recipe)
    message = SAMPLE_SPAM[0].read_bytes()
    # alice has learnt this message as spam, bob as ham
    for user, label in (("alice", "spam"), ("bob", "ham")):
        path = models / user / "model.npz"
        rest = [arg for cls, files in (("spam", SAMPLE_SPAM[1::2]), ("ham", SAMPLE_HAM[1::2])) for f in files for arg in (f"--{cls}", f)]
        done = spamnb("-q", "train", "-m", path, f"--{label}", SAMPLE_SPAM[0], *rest)
        assert done.returncode == 0, done.stderr.decode()
    scores = {}
    for user in ("alice", "bob"):
        user_home = tmp_path / user
        user_home.mkdir()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(user_home), "LOGNAME": user}
        done = subprocess.run([PROCMAIL, f"HOME={user_home}", f"LOGNAME={user}", f"DEFAULT={user_home}/Maildir/", str(rcfile)], input=message, env=env, capture_output=True, timeout=120)
        assert (done.returncode, done.stderr) == (0, b""), done.stderr.decode()
        [filed] = list((user_home / "Maildir" / "new").iterdir())
        stamp = re.search(rb"^X-Spamnb: \w+, score=(\d\.\d{4})$", filed.read_bytes(), re.M)
        assert stamp, filed.read_bytes()[:300]
        scores[user] = float(stamp.group(1))
    assert scores["alice"] > 0.5 > scores["bob"], scores


# --- 7. SpamAssassin's headers and a subject tag, on request ---------------------------------


SA_FIELD = re.compile(rb"^X-Spam-[A-Za-z-]+: .*\n", re.M)


def head_of(data: bytes) -> bytes:
    return data.split(b"\n\n", 1)[0] + b"\n"


def test_the_pipe_writes_spamassassins_headers_and_tags_spam_on_request(model: Path) -> None:
    """What SpamAssassin users' filters look for: X-Spam-Flag: YES and X-Spam-Status: Yes on
    spam (No on the rest), and `[SPAM] ` before a spam's Subject; every other byte as it came."""
    seen = set()
    for path in [*SAMPLE_SPAM[:12], *SAMPLE_HAM[:12]]:
        data = path.read_bytes()
        plain = spamnb("classify", "--pipe", "-m", model, stdin=data)
        tagged = spamnb("classify", "--pipe", "--sa-headers", "--tag-subject", "[SPAM] ", "-m", model, stdin=data)
        assert tagged.returncode == plain.returncode, tagged.stderr.decode()
        assert not SA_FIELD.search(head_of(plain.stdout))  # nothing changes without the options
        verdict = STAMP.search(tagged.stdout).group(1).decode()  # type: ignore[union-attr]
        seen.add(verdict)
        head = head_of(tagged.stdout)
        status = re.search(rb"^X-Spam-Status: (Yes|No), score=(\d+\.\d) required=(\d+\.\d)", head, re.M)
        assert status, head.decode(errors="replace")
        assert (status.group(1) == b"Yes") == (verdict == "spam") == (b"X-Spam-Flag: YES\n" in head)
        assert float(status.group(2)) >= float(status.group(3)) if verdict == "spam" else True
        subject = re.search(rb"^Subject:[ \t]*", data, re.M | re.I)
        if verdict == "spam" and subject:
            assert re.search(rb"^Subject:[ \t]*\[SPAM\] ", tagged.stdout, re.M | re.I)
        # less the fields and the tag, the message is the one the plain pipe wrote
        back = SA_FIELD.sub(b"", tagged.stdout).replace(b"[SPAM] ", b"", 1 if verdict == "spam" else 0)
        assert back == plain.stdout
        # filtered again (a second filter on the way), still one tag and one of each field
        again = spamnb("classify", "--pipe", "--sa-headers", "--tag-subject", "[SPAM] ", "-m", model, stdin=tagged.stdout).stdout
        assert again.count(b"[SPAM] ") == tagged.stdout.count(b"[SPAM] ") and again.count(b"X-Spam-Status:") == 1
    assert "spam" in seen and len(seen) > 1, seen


def test_an_upstream_spam_flag_does_not_survive_a_ham_verdict(model: Path) -> None:
    """SpamAssassin's fields are replaced as a set: a flag already in the message (an upstream
    filter's, or a forgery) must not stand beside our "No"."""
    for path in SAMPLE_HAM[:12]:
        data = path.read_bytes()
        forged = b"X-Spam-Flag: YES\nX-Spam-Level: **********\n" + data
        out = spamnb("classify", "--pipe", "--sa-headers", "-m", model, stdin=forged)
        if STAMP.search(out.stdout).group(1) != b"spam":  # type: ignore[union-attr]
            head = head_of(out.stdout)
            assert b"X-Spam-Flag" not in head and head.count(b"X-Spam-Level:") == 1, head.decode(errors="replace")
            return
    raise AssertionError("no sample ham was called ham")


def test_a_tag_must_be_printable_ascii(model: Path) -> None:
    data = SAMPLE_SPAM[0].read_bytes()
    done = spamnb("classify", "--pipe", "--tag-subject", "[СПАМ]\n", "-m", model, stdin=data)
    assert done.returncode == 3 and done.stdout == data  # the mail passes through, unchanged
    assert done.stderr.decode().count("\n") == 1


@needs_procmail
def test_the_spamassassin_recipe_files_by_its_flag(mailhome: tuple[Path, list[bytes]]) -> None:  # noqa: F811
    home, new = mailhome
    recipe = next(b for b in blocks("procmail") if "--sa-headers" in b)
    (home / ".procmailrc").write_text(as_printed(recipe))
    for message in new:
        done = deliver(home, message)
        assert (done.returncode, done.stderr) == (0, b""), done.stderr.decode()
    folders = delivered(home)
    assert folders.get("Spam") and folders.get("INBOX")
    for data in folders["Spam"]:
        assert STAMP.search(data).group(1) == b"spam"  # type: ignore[union-attr]
        assert b"\nX-Spam-Flag: YES\n" in data and re.search(rb"^Subject: \[SPAM\] ", data, re.M)
    for data in folders["INBOX"]:
        assert STAMP.search(data).group(1) != b"spam"  # type: ignore[union-attr]
        assert b"X-Spam-Flag" not in data and b"\nX-Spam-Status: No, " in data and b"[SPAM]" not in data
