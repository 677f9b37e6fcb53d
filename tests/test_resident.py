"""The models a server keeps open (`spamnb.serve.resident`), in one process as a worker holds them.

What must hold when a model is replaced under the requests: every request gets a whole model
(the one open before, or the new one); the first request after the switch gets the new one, and
so does every request after it has been read; the others do not wait for that read; and one
switch is one read, however many requests raced it.
"""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from spamnb.mail.sources import Message
from spamnb.models import store
from spamnb.models.model import Model
from spamnb.pipe import learnone, onemessage
from spamnb.run import classifier
from spamnb.serve import resident
from spamnb.serve.resident import Resident
from spamnb.text.tokens import TokenSettings
from tests.conftest import HAM_WORDS, SPAM_WORDS, fake_corpus, make_mail
from tests.test_pipe import small_model

# Longest a thread of these tests may take before it counts as stuck (the tests assert
# behaviour: a thread that should not wait and does shows as stuck, not as slow).
STUCK = 60.0


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return small_model(tmp_path)


def replaced(path: Path) -> None:
    """A new version of the model renamed over it, as `train` and `merge` write one."""
    fresh = path.with_name("fresh.npz")
    shutil.copyfile(path, fresh)
    os.replace(fresh, path)


class Reads:
    """onemessage.open_model counted, and held at its start while `gate` is shut."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.started, self.gate = threading.Event(), threading.Event()
        self.gate.set()
        real = onemessage.open_model

        def open_model(path: str, resident: bool = False, hold: bool = False) -> object:
            self.count += 1
            self.started.set()
            assert self.gate.wait(STUCK)
            return real(path, resident=resident, hold=hold)

        monkeypatch.setattr(onemessage, "open_model", open_model)


def in_thread(call, *args) -> tuple[threading.Thread, list]:  # type: ignore[no-untyped-def]
    out: list = []
    thread = threading.Thread(target=lambda: out.append(call(*args)))
    thread.start()
    return thread, out


def test_requests_during_a_read_are_answered_by_the_model_open_before(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    models = Resident()
    before = models.get(str(model))
    reads = Reads(monkeypatch)
    replaced(model)
    reads.gate.clear()
    reader, got = in_thread(models.get, str(model))  # the first request after the switch reads it
    assert reads.started.wait(STUCK)
    # While it reads, another request is answered at once, by the whole model open before.
    other, other_got = in_thread(models.get, str(model))
    other.join(STUCK)
    assert not other.is_alive() and other_got == [before]
    reads.gate.set()
    reader.join(STUCK)
    assert got and got[0] is not before
    assert onemessage.verdict_of(got[0], b"Subject: cheap pills\n\nviagra casino\n") == onemessage.verdict_of(before, b"Subject: cheap pills\n\nviagra casino\n")
    # Read once: every request after it has the new model.
    assert models.get(str(model)) is got[0] and reads.count == 1


def test_with_no_model_open_a_request_waits_for_the_read(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    models = Resident()
    reads = Reads(monkeypatch)
    reads.gate.clear()
    first, got = in_thread(models.get, str(model))
    assert reads.started.wait(STUCK)
    second, second_got = in_thread(models.get, str(model))
    reads.gate.set()
    first.join(STUCK)
    second.join(STUCK)
    assert got and second_got == got and reads.count == 1


def test_a_request_that_saw_the_model_before_a_switch_does_not_read_it_again(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request that looked at the file before the switch, and got the CPU back only after another
    had read the new model, is answered without a second read (under load, every worker read each
    switch two or three times: 0.15-0.3 s of CPU each, while its other requests waited)."""
    models = Resident()
    before = models.get(str(model))
    reads = Reads(monkeypatch)
    looked, resume = threading.Event(), threading.Event()
    real_stamp = resident.stamp_of
    late = threading.current_thread

    def stamp_of(path: str, journal_file: str) -> tuple:
        stamp = real_stamp(path, journal_file)
        if late().name == "late":
            looked.set()
            assert resume.wait(STUCK)
        return stamp

    monkeypatch.setattr(resident, "stamp_of", stamp_of)
    out: list = []
    slow = threading.Thread(target=lambda: out.append(models.get(str(model))), name="late")
    slow.start()
    assert looked.wait(STUCK)  # it has looked at the model as it was
    replaced(model)
    after = models.get(str(model))
    assert after is not before and reads.count == 1
    resume.set()
    slow.join(STUCK)
    assert out and out[0] in (before, after) and reads.count == 1
    assert models.get(str(model)) is after and reads.count == 1


def trained(folder: Path, event: str) -> Path:
    """A model of the shared generated corpus scored by `event` (Fisher's entries per token, or counts)."""
    path = folder / f"{event}.npz"
    model = store.empty_model(TokenSettings(), Model().scoring.replace(event=event))
    items = [Message(f"spam{i}", m, "spam") for i, m in enumerate(fake_corpus(SPAM_WORDS, 12, seed=1))]
    items += [Message(f"ham{i}", m, "ham") for i, m in enumerate(fake_corpus(HAM_WORDS, 12, seed=2))]
    classifier.learn(model, items)
    store.save(model, str(path))
    return path


@pytest.mark.parametrize("event", ["fisher", "multinomial"])
def test_a_learn_is_taken_without_reading_the_model_file_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, event: str) -> None:
    """TELL appends to the journal: every worker takes the journal as it now is, the file's part
    of the model shared (a read of the file costs 0.2-0.3 s of CPU per worker), and scores as a
    model opened afresh does; a request holding the model from before still scores as before."""
    path = str(trained(tmp_path, event))
    mail = [*fake_corpus(SPAM_WORDS, 6, seed=7), *fake_corpus(HAM_WORDS, 6, seed=8), make_mail("new words", "zebra quokka viagra meeting\n")]
    fresh = onemessage.open_model
    models = Resident()
    first = models.get(path)
    scored_first = [onemessage.verdict_of(first, m, reasons=3) for m in mail]
    reads = Reads(monkeypatch)
    # Learnt anew, moved to the other class, forgotten (counts go down), a new token: each a TELL.
    for data, label in ((mail[0], "spam"), (mail[7], "ham"), (mail[-1], "spam"), (mail[7], "spam"), (mail[0], None), (mail[-1], "ham")):
        learnone.learn_data(path, data, label)
        now = models.get(path)
        assert reads.count == 0
        again = fresh(path, resident=True)
        assert [onemessage.verdict_of(now, m, reasons=3) for m in mail] == [onemessage.verdict_of(again, m, reasons=3) for m in mail]
        assert now.docs == again.docs and now.scoring == again.scoring
    assert [onemessage.verdict_of(first, m, reasons=3) for m in mail] == scored_first
    assert Path(path + ".journal").read_bytes().startswith(b"SPAMNBJ1")  # the learns went to the journal
