"""`spamnb imap-filter` against a real Dovecot on loopback: spam moved to Junk, the state
file, --dry-run, a server without MOVE, and a connection cut between COPY and EXPUNGE."""
from __future__ import annotations

import fcntl
import imaplib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import dovecot
from tests.conftest import run_cli

pytestmark = dovecot.needs_dovecot

SPAMNB = str(Path(sys.executable).with_name("spamnb"))
SAMPLE = Path(__file__).resolve().parents[1] / "sample_corpus" / "maildir"
# Mail the model learnt (the sample corpus): what is under test is the moving, not the verdicts.
SPAM = [p.read_bytes() for p in sorted((SAMPLE / "spam" / "cur").iterdir())[:8]]
HAM = [p.read_bytes() for p in sorted((SAMPLE / "ham" / "cur").iterdir())[:8]]
JUNK_BYTES = bytes(range(256)) * 4


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "model.npz"
    subprocess.run([SPAMNB, "-q", "train", "-m", path, "--spam", SAMPLE / "spam", "--ham", SAMPLE / "ham"], check=True)
    return path


@pytest.fixture(scope="module")
def server() -> Iterator[dovecot.Dovecot]:
    with dovecot.running(("alice", "bob", "carol", "dave", "erin", "frank")) as d:
        yield d


@pytest.fixture(scope="module")
def no_move_server() -> Iterator[dovecot.Dovecot]:
    """A Dovecot that offers no MOVE (UIDPLUS yes): imap-filter copies, flags and expunges."""
    with dovecot.running(("alice",), capabilities="IMAP4rev1 LITERAL+ UIDPLUS") as d:
        yield d


@pytest.fixture
def home(tmp_path: Path, server: dovecot.Dovecot, no_move_server: dovecot.Dovecot, model: Path) -> Path:
    (tmp_path / ".netrc").write_text(f"machine 127.0.0.1 login alice password {server.users['alice'].password}\n")
    (tmp_path / ".netrc").chmod(0o600)
    (tmp_path / "model.npz").write_bytes(model.read_bytes())
    return tmp_path


def spamnb(home: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "SPAMNB_MODEL": str(home / "model.npz")}
    return subprocess.run([SPAMNB, *map(str, args)], env=env, capture_output=True, text=True, timeout=300)


def login(d: dovecot.Dovecot, user: str) -> tuple[str, ...]:
    """Options to log in as `user` without ~/.netrc (it holds alice's password only: one login per machine)."""
    return ("--ca-file", str(d.ca_file), "--password-command", f"echo {d.users[user].password}")


def fill(d: dovecot.Dovecot, user: str, messages: list[bytes]) -> None:
    with d.connect(user) as client:
        for message in messages:
            assert client.append("INBOX", None, None, message)[0] == "OK"


def subjects(d: dovecot.Dovecot, user: str, folder: str) -> list[bytes]:
    """The Subject lines in a folder (messages flagged \\Deleted but not expunged too)."""
    with d.connect(user) as client:
        if client.select(folder, readonly=True)[1] == [b"0"]:
            return []
        data = client.fetch("1:*", "(BODY.PEEK[HEADER.FIELDS (SUBJECT)])")[1]
        return sorted(part[1].strip() for part in data if isinstance(part, tuple))


def subject(message: bytes) -> bytes:
    return next(line for line in message.splitlines() if line.startswith(b"Subject:"))


def test_spam_moves_to_junk_and_a_rerun_scores_only_new_mail(server: dovecot.Dovecot, home: Path) -> None:
    fill(server, "alice", [*SPAM, *HAM, JUNK_BYTES])
    url = server.url("alice")
    done = spamnb(home, "imap-filter", "--ca-file", server.ca_file, url, "--spam-folder", "Junk")
    assert done.returncode == 0, done.stderr
    moved = [line.split("\t") for line in done.stdout.splitlines()]
    assert len(moved) >= len(SPAM) and all(m[1] == "spam" and m[-1] == "to=Junk" and m[0].startswith(url + ";UIDVALIDITY=") for m in moved)
    assert f"{len(SPAM) + len(HAM) + 1} new scored; moved {len(moved)} to Junk" in done.stderr
    assert set(map(subject, SPAM)) <= set(subjects(server, "alice", "Junk"))
    assert set(map(subject, HAM)) <= set(subjects(server, "alice", "INBOX"))
    state = json.loads((home / "model.npz.imap-state.json").read_text())
    assert list(state) == [f"imaps://alice@127.0.0.1:{server.imaps_port}/INBOX"]
    again = spamnb(home, "imap-filter", "--ca-file", server.ca_file, url, "--spam-folder", "Junk")
    assert again.returncode == 0 and "0 new scored" in again.stderr, again.stderr
    fill(server, "alice", SPAM[:1])
    third = spamnb(home, "imap-filter", "--ca-file", server.ca_file, url, "--spam-folder", "Junk")
    assert "1 new scored; moved 1 to Junk" in third.stderr, third.stderr


def test_dry_run_says_what_would_move_and_changes_nothing(server: dovecot.Dovecot, home: Path) -> None:
    fill(server, "bob", [*SPAM, *HAM])
    url = server.url("bob", tls="imap")  # STARTTLS
    done = spamnb(home, "imap-filter", "--dry-run", *login(server, "bob"), url, "--spam-folder", "Junk")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == len(SPAM)
    assert f"would move {len(SPAM)} to Junk" in done.stderr and "dry run" in done.stderr
    assert subjects(server, "bob", "Junk") == []
    assert not (home / "model.npz.imap-state.json").exists()
    with server.connect("bob") as client:  # nothing was even marked \Seen
        client.select("INBOX", readonly=True)
        assert client.search(None, "SEEN")[1] == [b""]


def test_unsure_mail_goes_to_its_folder_when_asked(server: dovecot.Dovecot, home: Path) -> None:
    """Cut-offs that most of the model's scores fall between: unsure mail moves too, each
    message to its verdict's folder."""
    fill(server, "erin", [*SPAM[:2], *HAM[:2]])
    with server.connect("erin") as client:
        assert client.create("Unsure")[0] == "OK"
    cutoffs = ("--spam-cutoff", "0.9999999", "--ham-cutoff", "0.0000001")
    done = spamnb(home, "imap-filter", *login(server, "erin"), *cutoffs, server.url("erin"), "--spam-folder", "Junk", "--unsure-folder", "Unsure")
    assert done.returncode == 0, done.stderr
    moved = [line.split("\t") for line in done.stdout.splitlines()]
    assert all({"spam": "to=Junk", "unsure": "to=Unsure"}[m[1]] == m[-1] for m in moved)
    unsure = sum(m[1] == "unsure" for m in moved)
    assert unsure >= 1 and len(subjects(server, "erin", "Unsure")) == unsure
    assert len(subjects(server, "erin", "INBOX")) == 4 - len(moved)


def test_a_new_uidvalidity_scans_the_folder_again(server: dovecot.Dovecot, home: Path) -> None:
    fill(server, "carol", HAM)
    url = server.url("carol")
    assert spamnb(home, "imap-filter", *login(server, "carol"), url, "--spam-folder", "Junk").returncode == 0
    path = home / "model.npz.imap-state.json"
    state = json.loads(path.read_text())
    state[next(iter(state))]["uidvalidity"] += 1
    path.write_text(json.dumps(state))
    done = spamnb(home, "imap-filter", *login(server, "carol"), url, "--spam-folder", "Junk")
    assert f"{len(HAM)} new scored" in done.stderr, done.stderr


def test_errors_are_one_line_and_move_nothing(server: dovecot.Dovecot, home: Path) -> None:
    fill(server, "dave", SPAM[:2])
    url = server.url("dave")
    for args, needle in [
        (("--spam-folder", "Nowhere"), "Nowhere: no such folder"),
        (("--spam-folder", "Junk", "-m", home / "missing.npz"), "missing.npz"),
    ]:
        done = spamnb(home, "imap-filter", *login(server, "dave"), url, *args)
        assert done.returncode == 3 and len(done.stderr.splitlines()) == 1 and needle in done.stderr, done.stderr
    (home / "model.npz.imap-state.json").write_text("{broken")
    done = spamnb(home, "imap-filter", *login(server, "dave"), url, "--spam-folder", "Junk")
    assert done.returncode == 3 and "state cannot be read" in done.stderr, done.stderr
    (home / "model.npz.imap-state.json").unlink()
    with open(home / "model.npz.imap-state.json.lock", "w") as lock:  # a run in progress holds it
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = spamnb(home, "imap-filter", *login(server, "dave"), url, "--spam-folder", "Junk")
    assert done.returncode == 3 and "another imap-filter run" in done.stderr, done.stderr
    assert subjects(server, "dave", "Junk") == []


def test_a_message_the_server_cannot_give_stays_and_the_rest_are_filtered(server: dovecot.Dovecot, home: Path) -> None:
    """One message's file is broken on the server's disk (cut short in place): Dovecot hangs
    up on the client as it sends it.  imap-filter logs in again, leaves that one where it is,
    names it (exit 1), moves the rest, and does not trip over it on the next run."""
    fill(server, "frank", [*SPAM[:3], *HAM[:2]])
    broken = subject(SPAM[1])
    files = [p for sub in ("cur", "new") for p in (server.users["frank"].maildir / sub).iterdir()]
    victim = next(p for p in files if broken in p.read_bytes())
    with open(victim, "r+b") as f:  # the same file, shorter than Dovecot's index says
        f.truncate(10)
    url = server.url("frank")
    done = spamnb(home, "imap-filter", *login(server, "frank"), url, "--spam-folder", "Junk")
    assert done.returncode == 1, done.stderr
    assert "hung up sending it" in done.stderr and ";UID=2" in done.stderr and "left in INBOX" in done.stderr, done.stderr
    assert "moved 2 to Junk" in done.stderr and "Traceback" not in done.stderr
    assert set(subjects(server, "frank", "Junk")) == {subject(SPAM[0]), subject(SPAM[2])}
    with server.connect("frank") as client:  # the two ham and the broken one (whose text the server cannot give)
        assert client.select("INBOX", readonly=True)[1] == [b"3"]
    again = spamnb(home, "imap-filter", *login(server, "frank"), url, "--spam-folder", "Junk")
    assert again.returncode == 0 and "0 new scored" in again.stderr, again.stderr


def test_without_move_a_connection_cut_after_copy_loses_nothing(
    no_move_server: dovecot.Dovecot, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server offers no MOVE: COPY, \\Deleted, UID EXPUNGE.  The connection drops right
    after the COPY: the spam is still in INBOX (and copied to Junk), the run says it
    stopped, and the next run finishes the move."""
    d = no_move_server
    fill(d, "alice", [*SPAM[:3], *HAM[:3]])
    monkeypatch.setenv("HOME", str(home))
    real_uid = imaplib.IMAP4.uid

    def cut_after_copy(self: imaplib.IMAP4, command: str, *args: str) -> tuple[str, list]:
        response = real_uid(self, command, *args)
        if command.upper() == "COPY":
            self.sock.shutdown(socket.SHUT_RDWR)
        return response

    monkeypatch.setattr(imaplib.IMAP4, "uid", cut_after_copy)
    model = home / "model.npz"
    cut = run_cli("imap-filter", "-m", model, "--ca-file", d.ca_file, d.url("alice"), "--spam-folder", "Junk")
    assert cut.exit_code == 3 and "stopped, every message not yet moved left where it was" in cut.output, cut.output
    spam_subjects = set(map(subject, SPAM[:3]))
    assert spam_subjects <= set(subjects(d, "alice", "INBOX"))
    assert spam_subjects <= set(subjects(d, "alice", "Junk"))
    assert not (home / "model.npz.imap-state.json").exists()
    monkeypatch.setattr(imaplib.IMAP4, "uid", real_uid)
    done = run_cli("imap-filter", "-m", model, "--ca-file", d.ca_file, d.url("alice"), "--spam-folder", "Junk")
    assert done.exit_code == 0, done.output
    assert set(subjects(d, "alice", "INBOX")) == set(map(subject, HAM[:3]))
    assert spam_subjects <= set(subjects(d, "alice", "Junk"))
