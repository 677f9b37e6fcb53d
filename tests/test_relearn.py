"""Hard examples learnt again (spamnb.models.journal.learn_weight): a single learn of a message
scored within the margin of the wrong side counts it more than once, and every path that
takes a message out again (forget, a move, merge's copies), or carries the model (the
journal's fold, dump and restore, a version-8 file), takes out or keeps exactly that."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spamnb.mail import headers
from spamnb.models import journal, npzview, store
from tests.conftest import HAM_WORDS, SPAM_WORDS, fake_corpus, make_mail, run_cli
from tests.test_pipe import SPAMNB, build_model

# Spam learnt as ham scores far on the wrong side: learnt 1 + EXTRA times.
HARD = make_mail("zebra offer", "quokka flamingo viagra casino narwhal\n")


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    return build_model(tmp_path / "model.npz", fake_corpus(SPAM_WORDS, 12, seed=1), fake_corpus(HAM_WORDS, 12, seed=2))


def spamnb(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run([SPAMNB, "-q", *map(str, args)], input=stdin, capture_output=True)
    assert done.returncode == 0, done.stderr
    return done


def counts(path: Path) -> dict:
    """What the model knows, independent of column order: docs, each token's counts, the learnt messages."""
    m = store.load(str(path), growable=True)
    vocab, c = m.growable(), m.counts
    tokens = {t: tuple(int(v) for v in (c.tf[0, i], c.tf[1, i], c.df[0, i], c.df[1, i])) for i, t in enumerate(vocab.tokens)}
    return {"docs": c.docs.tolist(), "tokens": {t: v for t, v in tokens.items() if any(v)}, "learnt": dict(m.learnt)}


def weight_of(path: Path, data: bytes) -> int:
    m = store.load(str(path))
    return m.learnt[headers.digest(data, m.tokens.max_bytes)][1]


def test_a_hard_message_learnt_again_is_forgotten_exactly(model: Path) -> None:
    before = counts(model)
    spamnb("train", "-m", model, "--ham", "-", stdin=HARD)
    assert weight_of(model, HARD) == 1 + journal.EXTRA
    assert counts(model)["docs"] == [before["docs"][0] + 1 + journal.EXTRA, before["docs"][1]]
    store.save(store.load(str(model)), str(model))  # the journal folded into the model: the weight kept
    assert weight_of(model, HARD) == 1 + journal.EXTRA
    spamnb("train", "-m", model, "--ham", "-", "--forget", stdin=HARD)
    assert counts(model) == before


def test_a_message_learnt_again_counts_once_among_the_messages_held(model: Path) -> None:
    """The scoring's `docs` count the learn weight; the messages a model is said to hold do not."""
    held = json.loads(spamnb("inspect", "--json", "-m", model).stdout)["messages"]
    learn = subprocess.run([SPAMNB, "train", "-m", model, "--ham", "-"], input=HARD, capture_output=True)
    assert learn.returncode == 0 and weight_of(model, HARD) == 1 + journal.EXTRA, learn.stderr
    said = f"model holds {held['spam']} spam and {held['ham'] + 1} ham"
    assert said in learn.stderr.decode()
    for folded in (False, True):  # from the journal, then from the model file
        if folded:
            store.save(store.load(str(model)), str(model))
        assert json.loads(spamnb("inspect", "--json", "-m", model).stdout)["messages"] == {"spam": held["spam"], "ham": held["ham"] + 1}
        assert counts(model)["docs"][0] == held["ham"] + 1 + journal.EXTRA
    again = subprocess.run([SPAMNB, "train", "-m", model, "--spam", "-"], input=make_mail("quokka again", "casino narwhal viagra\n"), capture_output=True)
    assert f"model holds {held['spam'] + 1} spam and {held['ham'] + 1} ham" in again.stderr.decode(), again.stderr


def test_moving_a_hard_message_takes_out_what_its_learn_added(model: Path, tmp_path: Path) -> None:
    direct = tmp_path / "direct.npz"
    shutil.copy(model, direct)
    spamnb("train", "-m", model, "--ham", "-", stdin=HARD)
    spamnb("train", "-m", model, "--spam", "-", stdin=HARD)  # moved: its score was not held out, learnt once
    assert weight_of(model, HARD) == 1
    message = tmp_path / "hard.eml"
    message.write_bytes(HARD)
    spamnb("train", "-m", direct, "--spam", message, "--jobs", "1")  # a bulk train learns it once as spam
    assert counts(model) == counts(direct)


def test_merge_dump_and_restore_carry_the_weights(model: Path, tmp_path: Path) -> None:
    other = build_model(tmp_path / "other.npz", fake_corpus(SPAM_WORDS, 5, seed=7), fake_corpus(HAM_WORDS, 5, seed=8))
    spamnb("train", "-m", other, "--ham", "-", stdin=HARD)
    merged = tmp_path / "merged.npz"
    shutil.copy(model, merged)
    spamnb("merge", "-m", merged, other)
    assert weight_of(merged, HARD) == 1 + journal.EXTRA
    text = spamnb("dump", "-m", merged).stdout
    assert b"\tham\t%d\n" % (1 + journal.EXTRA) in text
    restored = tmp_path / "restored.npz"
    spamnb("restore", "-m", restored, stdin=text)
    assert counts(restored) == counts(merged)
    spamnb("train", "-m", restored, "--ham", "-", "--forget", stdin=HARD)
    spamnb("train", "-m", other, "--ham", "-", "--forget", stdin=HARD)
    again = tmp_path / "again.npz"
    shutil.copy(model, again)
    spamnb("merge", "-m", again, other)
    assert counts(restored) == counts(again)


def test_a_bulk_train_writes_no_weights_and_a_version_8_model_still_loads(model: Path, tmp_path: Path) -> None:
    arrays = store.to_arrays(store.load(str(model)))
    assert "learnt_weight" not in arrays and int(arrays["version"]) == npzview.VERSION == 9
    arrays["version"] = np.array(8)
    old = tmp_path / "old.npz"
    with open(old, "wb") as out:
        store.write_npz(out, arrays)
    before = counts(old)
    assert set(before["learnt"].values()) <= {(0, 1), (1, 1)}
    spam = fake_corpus(SPAM_WORDS, 12, seed=1)[0]
    spamnb("train", "-m", old, "--spam", "-", "--forget", stdin=spam)  # learnt once: taken out once
    assert counts(old)["docs"] == [before["docs"][0], before["docs"][1] - 1]
    spamnb("classify", "-m", old, "--pipe", stdin=HARD)


def test_a_damaged_weight_is_refused(model: Path, tmp_path: Path) -> None:
    spamnb("train", "-m", model, "--ham", "-", stdin=HARD)
    store.save(store.load(str(model)), str(model))
    arrays = store.to_arrays(store.load(str(model)))
    arrays["learnt_weight"] = np.zeros_like(arrays["learnt_weight"])
    with open(model, "wb") as out:
        store.write_npz(out, arrays)
    for args in (["classify", "-m", model, "--pipe"], ["train", "-m", model, "--ham", "-"]):
        done = subprocess.run([SPAMNB, *map(str, args)], input=HARD, capture_output=True)
        assert done.returncode == 3 and b"learnt 0 times" in done.stderr, done.stderr
    assert run_cli("inspect", "-m", model).exit_code == 3


learnt_codes = st.none() | st.tuples(st.integers(0, 1), st.integers(1, journal.MAX_LEARN_WEIGHT))


@given(learnt_codes, learnt_codes)
def test_a_record_carries_how_the_message_was_learnt(before: tuple[int, int] | None, after: tuple[int, int] | None) -> None:
    entry = journal.Entry(b"\x07" * 16, before, after, {"word": 2})
    again = journal.Entry.parse(entry.payload())
    assert (again.before, again.after) == (before, after)
    assert again.changes() == journal.changes(before, after)


@given(st.binary(max_size=8))
def test_a_class_code_is_read_or_refused(code: bytes) -> None:
    try:
        learnt = journal.code_class(code)
    except ValueError:
        return
    assert learnt is None or (learnt[0] in (0, 1) and 1 <= learnt[1] <= journal.MAX_LEARN_WEIGHT)
    assert journal.code_class(journal.class_code(learnt)) == learnt
