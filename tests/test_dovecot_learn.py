"""Learning on move, server side: Dovecot's IMAPSieve runs contrib/dovecot's scripts,
which pipe to contrib/dovecot/spamnb-learn, which runs the console script into the
mail user's own model.  A real Dovecot, real IMAP moves by a real client."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import dovecot
from tests.conftest import HAM_WORDS, SPAM_WORDS, fake_corpus

pytestmark = dovecot.needs_dovecot

SPAMNB = str(Path(sys.executable).with_name("spamnb"))
SETTLE = 60.0  # seconds a background learner gets before a test gives up on it


@pytest.fixture(scope="module")
def server() -> Iterator[dovecot.Dovecot]:
    with dovecot.running(("alice", "bob"), sieve=True) as d, dovecot.traversable(sys.executable, SPAMNB, __file__):
        dovecot.install_learner(d, SPAMNB)
        yield d


@pytest.fixture
def learner(server: dovecot.Dovecot) -> Iterator[Callable[..., None]]:
    """Set the command the wrapper runs (and its spool) for one test; spamnb again afterwards."""
    yield lambda command, spool=None: dovecot.set_learner(server, command, spool=spool)
    dovecot.set_learner(server, SPAMNB)


SERIAL = iter(range(10**6))


def spam() -> bytes:
    return fake_corpus(SPAM_WORDS, 1, seed=100 + next(SERIAL))[0]


def ham() -> bytes:
    return fake_corpus(HAM_WORDS, 1, seed=100 + next(SERIAL))[0]


def spool(user: dovecot.User) -> Path:
    return user.home / ".local/share/spamnb/learn"


def model(user: dovecot.User) -> Path:
    return user.home / ".local/share/spamnb/model.npz"


def settled(user: dovecot.User) -> None:
    """Wait until the user's spool is drained (the learner ran or failed)."""
    deadline = time.monotonic() + SETTLE
    while any(next((spool(user) / sub).glob("*"), None) for sub in ("tmp", "new")) or locked(user):
        assert time.monotonic() < deadline, f"spool of {user.name} not drained: {sorted(os.listdir(spool(user) / 'new'))}"
        time.sleep(0.05)


def locked(user: dovecot.User) -> bool:
    """Whether a drainer holds the spool's lock (flock -n fails)."""
    lock = spool(user) / "lock"
    return lock.exists() and subprocess.run(["flock", "-n", str(lock), "true"]).returncode != 0


def messages(user: dovecot.User) -> dict[str, int]:
    """The user's model's message counts ({} when there is no model)."""
    if not model(user).exists():
        return {"spam": 0, "ham": 0}
    out = subprocess.run([SPAMNB, "inspect", "--json", "-m", str(model(user))], capture_output=True, check=True)
    return json.loads(out.stdout)["messages"]


def deliver(d: dovecot.Dovecot, user: str, folder: str, message: bytes) -> None:
    with d.connect(user) as client:
        assert client.append(folder, None, None, message)[0] == "OK"


def uids(d: dovecot.Dovecot, user: str, folder: str) -> list[bytes]:
    with d.connect(user) as client:
        client.select(folder, readonly=True)
        return client.uid("SEARCH", "ALL")[1][0].split()


def move(d: dovecot.Dovecot, user: str, source: str, target: str, command: str = "MOVE") -> None:
    """The user moves (or copies) every message of `source` to `target`, as a mail client does."""
    with d.connect(user) as client:
        client.select(source)
        status, detail = client.uid(command, "1:*", target)
        assert status == "OK", detail


def fresh(d: dovecot.Dovecot, user: str) -> dovecot.User:
    """The user with empty folders (the server lives for the module)."""
    with d.connect(user) as client:
        for folder in ("INBOX", "Junk", "Archive", "Trash"):
            client.select(folder)
            client.uid("STORE", "1:*", "+FLAGS.SILENT", r"(\Deleted)")
            client.expunge()
    settled(d.users[user])
    return d.users[user]


@pytest.mark.parametrize("command", ["MOVE", "COPY"])
def test_moving_into_junk_learns_spam_and_out_of_it_ham_as_a_move(server: dovecot.Dovecot, command: str) -> None:
    alice = fresh(server, "alice")
    before = messages(alice)
    deliver(server, "alice", "INBOX", spam())
    move(server, "alice", "INBOX", "Junk", command)
    settled(alice)
    after_spam = messages(alice)
    assert after_spam == {"spam": before["spam"] + 1, "ham": before["ham"]}
    # Out of Junk: the same message is now ham, counted once (moved, not learnt twice).
    move(server, "alice", "Junk", "Archive", command)
    settled(alice)
    assert messages(alice) == {"spam": before["spam"], "ham": before["ham"] + 1}
    assert len(uids(server, "alice", "Archive")) == 1
    assert len(uids(server, "alice", "Junk")) == (0 if command == "MOVE" else 1)
    assert not list((spool(alice) / "failed").iterdir())


def test_deleting_from_junk_or_moving_to_trash_learns_nothing(server: dovecot.Dovecot) -> None:
    alice = fresh(server, "alice")
    deliver(server, "alice", "Junk", spam())  # delivered there (APPEND): not the user's verdict
    deliver(server, "alice", "Junk", spam())
    settled(alice)
    before = messages(alice)
    with server.connect("alice") as client:
        client.select("Junk")
        client.store("1", "+FLAGS.SILENT", r"(\Deleted)")
        client.expunge()
    move(server, "alice", "Junk", "Trash")
    settled(alice)
    assert messages(alice) == before
    assert len(uids(server, "alice", "Trash")) == 1


def test_a_failing_learner_keeps_the_move_and_the_message(server: dovecot.Dovecot, learner: Callable[..., None]) -> None:
    alice = fresh(server, "alice")
    learner("/bin/false")
    before = messages(alice)
    deliver(server, "alice", "INBOX", spam())
    move(server, "alice", "INBOX", "Junk")
    settled(alice)
    assert len(uids(server, "alice", "Junk")) == 1 and not uids(server, "alice", "INBOX")
    assert messages(alice) == before
    failed = list((spool(alice) / "failed").iterdir())
    assert len(failed) == 1 and failed[0].name.endswith(".spam")
    for path in failed:
        path.unlink()


def test_a_wrapper_that_cannot_spool_keeps_the_move(server: dovecot.Dovecot, learner: Callable[..., None]) -> None:
    """The wrapper itself fails (its spool cannot be made: exit 75 to Dovecot): the user's
    MOVE still succeeds and the message is where the user put it, once."""
    alice = fresh(server, "alice")
    learner(SPAMNB, spool="/proc/no-spool-here")
    before = messages(alice)
    deliver(server, "alice", "INBOX", spam())
    move(server, "alice", "INBOX", "Junk")
    assert len(uids(server, "alice", "Junk")) == 1 and not uids(server, "alice", "INBOX")
    assert messages(alice) == before


def test_a_hung_learner_does_not_hold_up_the_move(server: dovecot.Dovecot, learner: Callable[..., None]) -> None:
    """The learner waits for the test's word: the MOVE has returned, the message is in
    Junk, while the learner is still running."""
    alice = fresh(server, "alice")
    gate = server.root / "gate"  # where the mail user can write
    gate.mkdir()
    os.chmod(gate, 0o777)
    hung = gate / "hung-learner"
    hung.write_text(f"#!/bin/sh\ntouch {gate}/started\nfor i in $(seq 600); do [ -e {gate}/go ] && exit 0; sleep 0.1; done\nexit 1\n")
    os.chmod(hung, 0o755)
    learner(str(hung))
    deliver(server, "alice", "INBOX", spam())
    move(server, "alice", "INBOX", "Junk")
    assert len(uids(server, "alice", "Junk")) == 1
    deadline = time.monotonic() + SETTLE
    while not (gate / "started").exists():
        assert time.monotonic() < deadline, "the learner never started"
        time.sleep(0.05)
    assert not (gate / "go").exists()  # still waiting: the move did not wait for it
    (gate / "go").touch()
    settled(alice)
    assert not list((spool(alice) / "new").iterdir())


def test_two_users_models_stay_apart(server: dovecot.Dovecot) -> None:
    alice, bob = fresh(server, "alice"), fresh(server, "bob")
    a, b = messages(alice), messages(bob)
    deliver(server, "alice", "INBOX", spam())
    deliver(server, "bob", "Junk", ham())
    move(server, "alice", "INBOX", "Junk")
    move(server, "bob", "Junk", "INBOX")
    settled(alice)
    settled(bob)
    assert messages(alice) == {"spam": a["spam"] + 1, "ham": a["ham"]}
    assert messages(bob) == {"spam": b["spam"], "ham": b["ham"] + 1}
    if os.geteuid() == 0:  # each model is its user's alone
        assert model(alice).stat().st_uid == alice.uid and model(bob).stat().st_uid == bob.uid
