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

from spamnb.pipe import onemessage
from spamnb.serve import resident
from spamnb.serve.resident import Resident
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
