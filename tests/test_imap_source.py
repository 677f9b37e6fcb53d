"""IMAP folders as SRC: `spamnb train/classify/eval imaps://USER@HOST/FOLDER` (and imap://
with STARTTLS), run as the console script against a real Dovecot on loopback."""
from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spamnb.mail import imap
from spamnb.mail.headers import HEADROOM
from spamnb.mail.sources import Message, SourceError
from tests import dovecot
from tests.conftest import HAM_WORDS, SPAM_WORDS, fake_corpus, make_mail

needs_dovecot = dovecot.needs_dovecot
SPAMNB = str(Path(sys.executable).with_name("spamnb"))
SPAM = fake_corpus(SPAM_WORDS, 15, seed=11)
HAM = fake_corpus(HAM_WORDS, 15, seed=12)
# One message far over the tokeniser's cap, with CRLF line ends as a client may send it.
BIG = make_mail("big attachment", "lunch agenda " * 200_000).replace(b"\n", b"\r\n")


@pytest.fixture(scope="module")
def server() -> Iterator[dovecot.Dovecot]:
    with dovecot.running(("alice",)) as d:
        with d.connect("alice") as client:
            for folder, messages in (("Junk", SPAM), ("INBOX", [*HAM, BIG])):
                for message in messages:
                    assert client.append(folder, None, None, message)[0] == "OK"
        yield d


@pytest.fixture
def home(tmp_path: Path, server: dovecot.Dovecot) -> Path:
    """A HOME whose ~/.netrc holds alice's password."""
    netrc = tmp_path / ".netrc"
    netrc.write_text(f"machine 127.0.0.1 login alice password {server.users['alice'].password}\n")
    netrc.chmod(0o600)
    return tmp_path


def spamnb(home: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "SPAMNB_MODEL": str(home / "model.npz")}
    return subprocess.run([SPAMNB, *map(str, args)], env=env, capture_output=True, text=True, timeout=300)


def one_line_error(done: subprocess.CompletedProcess[str], needle: str) -> None:
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spamnb: error:") and needle in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@needs_dovecot
def test_train_from_imap_learns_what_the_same_maildir_holds(server: dovecot.Dovecot, home: Path) -> None:
    ca = ("--ca-file", server.ca_file)
    done = spamnb(home, "train", *ca, "--spam", server.url("alice", "Junk"), "--ham", server.url("alice", "INBOX"))
    assert done.returncode == 0, done.stderr
    assert "learnt 31, moved 0" in done.stderr
    # The maildirs where Dovecot keeps the same messages hold the same messages to the model (same digests).
    maildir = server.users["alice"].maildir
    again = spamnb(home, "train", "--dry-run", "--spam", maildir / ".Junk", "--ham", maildir / "cur", "--ham", maildir / "new")
    assert "would learn 0, move 0, already known 31" in again.stderr, again.stderr
    # Read-only: nothing was marked \Seen.
    with server.connect("alice") as client:
        client.select("INBOX", readonly=True)
        assert client.search(None, "SEEN")[1] == [b""]


@needs_dovecot
def test_classify_and_eval_read_imap_folders_with_starttls(server: dovecot.Dovecot, home: Path) -> None:
    ca = ("--ca-file", server.ca_file)
    assert spamnb(home, "train", *ca, "--spam", server.url("alice", "Junk"), "--ham", server.url("alice", "INBOX")).returncode == 0
    done = spamnb(home, "classify", "--json", *ca, server.url("alice", "Junk", tls="imap"))
    assert done.returncode == 0, done.stderr
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == len(SPAM)
    assert all(v["id"].startswith(server.url("alice", "Junk", tls="imap") + ";UIDVALIDITY=") for v in verdicts)
    assert all(v["verdict"] == "spam" for v in verdicts)
    done = spamnb(home, "eval", "--json", "--folds", "3", *ca, "--spam", server.url("alice", "Junk"), "--ham", server.url("alice", "INBOX"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["auc"] > 0.9


@needs_dovecot
def test_a_password_command_stands_in_for_netrc(server: dovecot.Dovecot, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text(server.users["alice"].password + "\n")
    done = spamnb(tmp_path, "train", "--ca-file", server.ca_file, "--password-command", f"cat {secret}", "--spam", server.url("alice", "Junk"))
    assert done.returncode == 0, done.stderr
    assert f"learnt {len(SPAM)}, moved 0" in done.stderr


@needs_dovecot
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--password-command", "echo wrong"), "login refused"),
        (("--password-command", "exit 4"), "the password command exited 4"),
        ((), "no password: add 'machine 127.0.0.1 login alice password ...'"),
    ],
)
def test_login_problems_are_one_line(server: dovecot.Dovecot, tmp_path: Path, args: tuple[str, ...], needle: str) -> None:
    one_line_error(spamnb(tmp_path, "train", "--dry-run", "--ca-file", server.ca_file, *args, "--spam", server.url("alice", "Junk")), needle)


@needs_dovecot
def test_an_untrusted_certificate_and_a_missing_folder_are_one_line(server: dovecot.Dovecot, home: Path) -> None:
    one_line_error(spamnb(home, "train", "--dry-run", "--spam", server.url("alice", "Junk")), "certificate not trusted")
    one_line_error(spamnb(home, "train", "--dry-run", "--ca-file", server.ca_file, "--spam", server.url("alice", "Nowhere")), "Nowhere: no such folder")
    url = server.url("alice", "Junk").replace("alice@", "alice:pw@")
    one_line_error(spamnb(home, "train", "--dry-run", "--spam", url), "a password in the URL is refused")


@needs_dovecot
def test_messages_are_read_to_the_cap_only(server: dovecot.Dovecot, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(home))
    access = imap.Access(ca_file=str(server.ca_file))
    read = list(imap.read_folder(server.url("alice", "INBOX"), "ham", 1000, access))
    assert len(read) == len(HAM) + 1 and all(isinstance(m, Message) for m in read)
    assert max(len(m.data) for m in read) == 1000 + HEADROOM
    assert b"\r" not in b"".join(m.data for m in read)


def test_imap_folders_are_not_for_dask_workers() -> None:
    from spamnb.mail import sources

    with pytest.raises(SourceError, match="read by this process only"):
        sources.locate_source("imaps://alice@127.0.0.1/INBOX")


@given(
    user=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20),
    folder=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30),
    port=st.integers(1, 65535),
)
def test_a_url_gives_back_the_user_and_folder_it_was_made_of(user: str, folder: str, port: int) -> None:
    url = f"imaps://{quote(user, safe='')}@mail.example.org:{port}/{quote(folder, safe='')}"
    where = imap.parse_url(url)
    assert (where.user, where.host, where.port, where.folder) == (user, "mail.example.org", port, folder)


@pytest.mark.parametrize("url", ["imaps://", "imaps://host/INBOX", "imaps://u@host:99999/x", "imaps://u@host/x?q", "imap://u@[::1/x"])
def test_bad_urls_are_one_line_source_errors(url: str) -> None:
    with pytest.raises(SourceError):
        imap.parse_url(url)


@given(st.lists(st.integers(1, 500), min_size=1, unique=True))
def test_a_uid_set_names_exactly_its_uids(uids: list[int]) -> None:
    named: set[int] = set()
    for part in imap.uid_set(sorted(uids)).split(","):
        low, _, high = part.partition(":")
        named.update(range(int(low), int(high or low) + 1))
    assert named == set(uids)


FOLDERS = itertools.count()


@needs_dovecot
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(min_size=1, max_size=3000).filter(lambda b: b"\0" not in b))
def test_any_message_reads_back_as_the_server_stores_it(server: dovecot.Dovecot, home: Path, monkeypatch: pytest.MonkeyPatch, body: bytes) -> None:
    """Whatever the bytes (a literal holding `)`, `UID 7`, `{5}`, bare CRs, 8-bit), the
    message read back is the one appended, with LF line ends as the maildir holds it."""
    message = b"Subject: hypothesis\n\n" + body
    folder = f"Fuzz{next(FOLDERS)}"
    with server.connect("alice") as client:
        assert client.create(folder)[0] == "OK"
        assert client.append(folder, None, None, message)[0] == "OK"
    monkeypatch.setenv("HOME", str(home))
    read = list(imap.read_folder(server.url("alice", folder), None, None, imap.Access(ca_file=str(server.ca_file))))
    assert [m.data for m in read] == [re.sub(rb"\r\n|\r|\n", b"\n", message)]


@needs_dovecot
def test_a_message_the_server_cannot_give_is_named_and_the_rest_are_read(server: dovecot.Dovecot, home: Path) -> None:
    """Its file cut short on the server's disk, Dovecot hangs up sending it: the reader logs
    in again, names that one (exit 1) and reads the others."""
    with server.connect("alice") as client:
        assert client.create("Broken")[0] == "OK"
        for message in HAM[:3]:
            assert client.append("Broken", None, None, message)[0] == "OK"
    folder = server.users["alice"].maildir / ".Broken"
    victim = next(p for sub in ("cur", "new") for p in (folder / sub).iterdir() if b"user12001@" in p.read_bytes())
    with open(victim, "r+b") as f:
        f.truncate(10)
    done = spamnb(home, "train", "--dry-run", "--ca-file", server.ca_file, "--ham", server.url("alice", "Broken"))
    assert done.returncode == 1, done.stderr
    assert "/Broken;UIDVALIDITY=" in done.stderr and "hung up sending it" in done.stderr
    assert "would learn 2" in done.stderr and "Traceback" not in done.stderr
