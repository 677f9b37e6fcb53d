"""The model file: round trip, incremental training through the file, and refusing bad files."""
from __future__ import annotations

import contextlib
import io
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spamnb.mail.sources import Message
from spamnb.models import lock, modelfile, npzview, store
from spamnb.models.model import Model, Scoring
from spamnb.models.modelfile import ModelError
from spamnb.pipe import onemessage
from spamnb.run import classifier
from spamnb.text.tokens import TokenSettings
from tests.conftest import HAM_WORDS, SPAM_WORDS, fake_corpus, labelled_messages, make_mail

SETTINGS = TokenSettings(ngram=2, stopwords=False, max_len=30)
SCORING = Scoring(event="bernoulli", alpha=0.5, spam_cutoff=0.95, ham_cutoff=0.2)


def train(items: list[Message], model: Model | None = None) -> Model:
    model = model or store.empty_model(SETTINGS, SCORING)
    classifier.learn(model, items)
    return model


def arrays_of(path: str) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def assert_same_file_contents(a: str, b: str, but: tuple[str, ...] = ()) -> None:
    left, right = arrays_of(a), arrays_of(b)
    assert left.keys() == right.keys()
    for key in set(left) - set(but):
        np.testing.assert_array_equal(left[key], right[key], err_msg=key)


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Model, str]:
    model = train(labelled_messages(8, seed=1))
    path = str(tmp_path / "model.npz")
    store.save(model, path)
    return model, path


def test_round_trip_keeps_everything(saved: tuple[Model, str]) -> None:
    model, path = saved
    vocab = model.growable()
    loaded = store.load(path, growable=True)
    assert loaded.tokens == SETTINGS
    assert loaded.scoring == SCORING
    assert loaded.learnt == model.learnt and len(loaded.learnt) == 16
    np.testing.assert_array_equal(loaded.counts.docs, [8, 8])
    # The same token has the same counts, whatever the column order.
    theirs = dict(zip(vocab.tokens, zip(model.counts.tf.T.tolist(), model.counts.df.T.tolist(), strict=True), strict=True))
    loaded_vocab = loaded.growable()
    ours = dict(zip(loaded_vocab.tokens, zip(loaded.counts.tf.T.tolist(), loaded.counts.df.T.tolist(), strict=True), strict=True))
    assert ours == theirs
    assert loaded_vocab.tokens == sorted(vocab.tokens)


def test_scores_identical_after_round_trip(saved: tuple[Model, str]) -> None:
    model, path = saved
    tests = [Message(str(i), m) for i, m in enumerate(fake_corpus(SPAM_WORDS + HAM_WORDS, 6, seed=99))]
    before = list(classifier.classify(model, tests))
    after = list(classifier.classify(store.load(path), tests))
    assert [(s.id, s.verdict) for s in before] == [(s.id, s.verdict) for s in after]  # type: ignore[union-attr]
    # Equal up to the order of summation (columns are sorted in the file).
    np.testing.assert_allclose([s.log_odds for s in before], [s.log_odds for s in after], rtol=0, atol=1e-9)  # type: ignore[union-attr]
    assert {s.verdict for s in before} == {"spam", "ham"}  # type: ignore[union-attr]


def test_training_in_two_sittings_through_the_file_equals_training_once(tmp_path: Path) -> None:
    first, second = labelled_messages(8, seed=1), labelled_messages(8, seed=3)
    once = str(tmp_path / "once.npz")
    store.save(train(first + second), once)
    twice = str(tmp_path / "twice.npz")
    store.save(train(first), twice)
    store.save(train(second, store.load(twice, growable=True)), twice)
    # The calibration's history holds each message's held-out score, by the model of its sitting.
    assert_same_file_contents(once, twice, but=("history",))
    assert len(arrays_of(once)["history"]) == len(arrays_of(twice)["history"]) == 32


def test_learning_again_is_a_no_op_and_forgetting_restores(tmp_path: Path) -> None:
    first, second = labelled_messages(8, seed=1), labelled_messages(8, seed=3)
    before = str(tmp_path / "before.npz")
    store.save(train(first), before)
    model = train(first + second)
    report = classifier.learn(model, first)
    assert (report.learnt, report.already) == (0, len(first))
    report = classifier.learn(model, second, forget=True)
    assert report.forgotten == len(second)
    after = str(tmp_path / "after.npz")
    store.save(model, after)
    # Forgetting zeroes the counts of tokens only `second` had; they stay in the vocabulary.
    kept, restored = store.load(before, growable=True), store.load(after, growable=True)
    assert kept.learnt == restored.learnt
    np.testing.assert_array_equal(kept.counts.docs, restored.counts.docs)
    cols = restored.growable().lookup(kept.growable().tokens)
    np.testing.assert_array_equal(kept.counts.tf, restored.counts.tf[:, cols])
    np.testing.assert_array_equal(kept.counts.df, restored.counts.df[:, cols])
    others = np.setdiff1d(np.arange(len(restored.growable())), cols)
    assert not restored.counts.tf[:, others].any() and not restored.counts.df[:, others].any()


def test_save_is_atomic_and_leaves_no_temporary_files(saved: tuple[Model, str], tmp_path: Path) -> None:
    model, path = saved
    store.save(model, path)  # over an existing file
    assert sorted(os.listdir(tmp_path)) == ["model.npz"]
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == sorted(f"{k}.npy" for k in (*store.REQUIRED, "offsets", "history", "history_class"))


def test_save_refuses_object_arrays_and_keeps_the_old_file(saved: tuple[Model, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, path = saved
    good = Path(path).read_bytes()
    real = store.to_arrays

    def with_object(m: Model, prepared: store.Prepared | None = None) -> dict[str, np.ndarray]:
        arrays = real(m, prepared)
        arrays["settings"] = np.array([{"not": "plain"}], dtype=object)
        return arrays

    monkeypatch.setattr(store, "to_arrays", with_object)
    with pytest.raises(ValueError, match=r"[Oo]bject arrays"):
        store.save(model, path)
    assert Path(path).read_bytes() == good
    assert sorted(os.listdir(tmp_path)) == ["model.npz"]


def test_empty_model_round_trip(tmp_path: Path) -> None:
    path = str(tmp_path / "sub" / "empty.npz")
    store.save(store.empty_model(SETTINGS, SCORING), path)
    model = store.load(path)
    assert len(model.vocab) == 0 and model.counts.tf.shape == (2, 0) and model.learnt == {}


def names(path: str | Path, text: str = "") -> str:
    """A pattern for an error message that starts with the path."""
    return f"^{re.escape(str(path))}: {re.escape(text)}"


def rewrite(path: str, **changes: np.ndarray) -> None:
    arrays = arrays_of(path)
    arrays.update(changes)
    np.savez(path, **arrays)


def test_version_mismatch_is_a_clear_error(saved: tuple[Model, str]) -> None:
    _, path = saved
    rewrite(path, version=np.array(store.VERSION + 1))
    with pytest.raises(ModelError, match=rf"^{re.escape(path)}: model format version {store.VERSION + 1}, this spamnb reads version {store.VERSION}; retrain$"):
        store.load(path)


def bad_files(tmp: Path, good: bytes) -> dict[str, bytes]:
    foreign = io.BytesIO()
    np.savez(foreign, weights=np.arange(3))
    npy = io.BytesIO()
    np.save(npy, np.arange(3))
    return {
        "truncated.npz": good[: len(good) // 2],
        "random.npz": np.random.default_rng(0).bytes(2000),
        "empty.npz": b"",
        "foreign.npz": foreign.getvalue(),
        "plain-npy.npz": npy.getvalue(),
        "text.npz": b"spam 0.99\nham 0.01\n",
    }


@pytest.mark.parametrize("name", ["truncated.npz", "random.npz", "empty.npz", "foreign.npz", "plain-npy.npz", "text.npz"])
def test_bad_files_are_model_errors_naming_the_path(saved: tuple[Model, str], tmp_path: Path, name: str) -> None:
    _, good = saved
    path = tmp_path / name
    path.write_bytes(bad_files(tmp_path, Path(good).read_bytes())[name])
    with pytest.raises(ModelError, match=names(path)):
        store.load(str(path))


@pytest.mark.parametrize(
    "change",
    [
        {"version": np.array([1, 1])},
        {"format": np.array("someone-else")},
        {"tf": np.zeros((2, 1), np.uint32)},
        {"docs": np.array([-3, 4])},
        {"settings": np.array('{"ngram": 9}')},
        {"settings": np.array("[1, 2]")},
        {"scoring": np.array('{"alpha": -1}')},
        {"learnt": np.zeros((3, 8), np.uint8)},
    ],
    ids=["version-shape", "format", "tf-shape", "negative-docs", "ngram", "settings-list", "alpha", "learnt-shape"],
)
def test_damaged_arrays_are_model_errors(saved: tuple[Model, str], change: dict[str, np.ndarray]) -> None:
    _, path = saved
    rewrite(path, **change)
    with pytest.raises(ModelError, match=names(path)):
        store.load(path)


def test_missing_file_and_folder_are_model_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=names(tmp_path / "nope.npz", "no such model file")):
        store.load(str(tmp_path / "nope.npz"))
    with pytest.raises(ModelError, match=names(tmp_path)):
        store.load(str(tmp_path))


class Boom:
    """Unpickling this runs code; a model file must never do that."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch pwned",))


def test_pickled_object_array_is_refused_without_running_it(saved: tuple[Model, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, path = saved
    monkeypatch.chdir(tmp_path)
    arrays = arrays_of(path)
    arrays["settings"] = np.array([Boom()], dtype=object)
    np.savez(path, allow_pickle=True, **arrays)
    with pytest.raises(ModelError, match=names(path)):
        store.load(path)
    assert not (tmp_path / "pwned").exists()


def test_default_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPAMNB_MODEL", "/x/model.npz")
    assert modelfile.default_path() == "/x/model.npz"
    monkeypatch.delenv("SPAMNB_MODEL")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert modelfile.default_path() == str(tmp_path / "spamnb" / "model.npz")
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert modelfile.default_path() == str(tmp_path / ".local" / "share" / "spamnb" / "model.npz")


def test_lock_serialises_learners(tmp_path: Path) -> None:
    import fcntl

    path = str(tmp_path / "model.npz")
    with lock.locked(path), open(path + ".lock") as other, pytest.raises(BlockingIOError):
        fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(path + ".lock") as other:
        fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_one_message_model_scores_like_make_mail(tmp_path: Path) -> None:
    model = train([Message("s", make_mail("cheap pills", "cheap pills"), "spam"), Message("h", make_mail("lunch", "lunch agenda"), "ham")])
    path = str(tmp_path / "m.npz")
    store.save(model, path)
    [result] = classifier.classify(store.load(path), [Message("x", make_mail("cheap", "cheap pills"))])
    assert result.log_odds > 0


def directory_of(path: str) -> dict[str, npzview.Member] | None:
    import mmap

    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return npzview.zip_directory(mm)


def test_zip_directory_reads_a_saved_model_as_zipfile_does(saved: tuple[Model, str]) -> None:
    _, path = saved
    with zipfile.ZipFile(path) as z:
        expected = {i.filename: npzview.Member(i.header_offset, i.file_size, i.CRC, i.compress_type == zipfile.ZIP_STORED and not i.flag_bits & 1) for i in z.infolist()}
    assert directory_of(path) == expected
    assert store.load(path, scoring_only=True).scoring_only  # the mapped loader took it


def rezip(path: str, out: Path, compression: int = zipfile.ZIP_STORED, comment: bytes = b"") -> str:
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w", compression) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
        dst.comment = comment
    return str(out)


@pytest.mark.parametrize("how", [{"compression": zipfile.ZIP_DEFLATED}, {"comment": b"made elsewhere"}], ids=["compressed", "comment"])
def test_a_zip_the_mapped_loader_does_not_expect_goes_to_the_full_loader(saved: tuple[Model, str], tmp_path: Path, how: dict) -> None:
    model, path = saved
    other = rezip(path, tmp_path / "other.npz", **how)
    loaded = store.load(other, scoring_only=True)
    assert not loaded.scoring_only  # read whole, not mapped
    assert loaded.vocab.lookup(["subject:free", "nothing"]) == model.vocab.lookup(["subject:free", "nothing"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0), flip=st.integers(min_value=0), byte=st.integers(0, 255))
def test_a_damaged_directory_is_a_model_error_or_a_model(saved: tuple[Model, str], tmp_path: Path, cut: int, flip: int, byte: int) -> None:
    """Whatever the bytes of the directory at the end of the file, loading gives a model or a ModelError."""
    _, path = saved
    data = bytearray(Path(path).read_bytes())
    tail = 400  # the central directory and end record of this small model
    data[len(data) - 1 - flip % tail] = byte
    bad = tmp_path / "bad.npz"
    bad.write_bytes(bytes(data[: len(data) - cut % 50]))
    with contextlib.suppress(ModelError):
        store.load(str(bad), scoring_only=True)


def test_a_version_7_model_reads_with_an_empty_calibration_history(saved: tuple[Model, str]) -> None:
    model, path = saved
    arrays = {k: v for k, v in store.to_arrays(model).items() if not k.startswith("history")}
    arrays["version"] = np.array(7)
    with open(path, "wb") as out:
        store.write_npz(out, arrays)
    old = store.load(path)
    assert old.history == [] and old.scoring == model.scoring
    assert onemessage.OneModel(path).history() == []
    store.save(old, path)
    assert int(arrays_of(path)["version"]) == store.VERSION == 8
