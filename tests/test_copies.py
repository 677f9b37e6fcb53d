"""What makes two copies the same message (issue 19, item 6): the digest that keeps
learning idempotent is blind to what delivery adds on the way."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from spamnb.mail import headers
from spamnb.models import store
from tests.conftest import make_mail, mboxrd, run_cli

DELIVERED = (
    b"From alice@example.com Mon Jan  1 00:00:00 2024\n"
    b"Return-Path: <alice@example.com>\n"
    b"X-Original-To: bob@example.org\n"
    b"Delivered-To: bob@example.org\n"
    b"Received: from mx.example.org (mx.example.org [192.0.2.1])\n\tby mail.example.org with ESMTP; Mon, 1 Jan 2024 00:00:00 +0000\n"
)


def test_a_delivered_copy_is_the_message_from_the_source_mbox(tmp_path: Path) -> None:
    message = make_mail("cheap pills", "buy cheap pills now", headers=[("Received", "from origin.example.com by relay.example.net")])
    (tmp_path / "source.mbox").write_bytes(mboxrd([message]))
    (tmp_path / "delivered.eml").write_bytes(DELIVERED + message)
    model = tmp_path / "m.npz"
    first = run_cli("train", "-m", model, "--spam", tmp_path / "source.mbox")
    assert "learnt 1," in first.stderr
    for again in (["--spam", tmp_path / "delivered.eml"], ["--spam", "-"]):
        done = run_cli("train", "-m", model, *again, stdin=DELIVERED + message)
        assert "learnt 0, moved 0, already known 1" in done.stderr, done.stderr
    assert store.load(str(model)).counts.docs.tolist() == [0, 1]


def test_digests_of_older_models_are_still_recognised(tmp_path: Path) -> None:
    message = DELIVERED + make_mail("agenda", "the meeting agenda for tuesday")
    (tmp_path / "m.eml").write_bytes(message)
    model_path = tmp_path / "m.npz"
    assert run_cli("train", "-q", "-m", model_path, "--ham", tmp_path / "m.eml").exit_code == 0
    # as a model trained before the transport fields were left out holds it
    model = store.load(str(model_path), growable=True)
    model.learnt = {headers.legacy_digests(message, model.tokens.max_bytes)[1]: 0}
    store.save(model, str(model_path))
    done = run_cli("train", "-m", model_path, "--ham", tmp_path / "m.eml")
    assert "learnt 0, moved 0, already known 1" in done.stderr, done.stderr
    moved = run_cli("train", "-m", model_path, "--spam", tmp_path / "m.eml")
    assert "learnt 0, moved 1" in moved.stderr
    assert run_cli("train", "-m", model_path, "--forget", "--spam", tmp_path / "m.eml").exit_code == 0
    assert store.load(str(model_path)).counts.docs.tolist() == [0, 0]


def test_a_copy_met_again_in_a_first_train_adds_nothing(tmp_path: Path) -> None:
    """A new model's train tokenises each chunk whole before it decides what to learn: a
    copy of a message learnt earlier in the same run (in a later chunk on two jobs), with
    delivery's fields of its own, leaves the model as it is without the copy."""
    folder = tmp_path / "ham"
    folder.mkdir()
    for i in range(300):
        (folder / f"{i:03d}").write_bytes(make_mail(f"note {i}", f"the words of note {i} word{i}"))
    without = tmp_path / "without.npz"
    assert run_cli("train", "-q", "-m", without, "--ham", folder, "--jobs", "1").exit_code == 0
    (folder / "280c").write_bytes(DELIVERED + make_mail("note 3", "the words of note 3 word3"))
    for jobs in ("1", "2"):
        model = tmp_path / f"with{jobs}.npz"
        done = run_cli("train", "-m", model, "--ham", folder, "--jobs", jobs)
        assert "learnt 300, moved 0, already known 1" in done.stderr, done.stderr
        assert arrays(model) == arrays(without)


def arrays(path: Path) -> dict[str, bytes]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k].tobytes() for k in z.files}


field = st.sampled_from([b"Received", b"Delivered-To", b"Return-Path", b"X-Original-To", b"received", b"DELIVERED-TO"])
value = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" ").replace(b"\r", b" "))


@given(st.lists(st.tuples(field, value), max_size=4), st.binary(max_size=200))
def test_transport_fields_do_not_change_the_digest(added: list[tuple[bytes, bytes]], body: bytes) -> None:
    message = b"From: a@example.com\nSubject: hi\n\n" + body
    copy = b"".join(name + b": " + v + b"\n" for name, v in added) + message
    assert headers.digest(copy) == headers.digest(message)


def test_other_fields_still_tell_messages_apart() -> None:
    a = b"From: a@example.com\nSubject: hi\n\nbody\n"
    b = b"From: a@example.com\nSubject: hi there\n\nbody\n"
    assert headers.digest(a) != headers.digest(b)
