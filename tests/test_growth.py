"""The calibration's history weighted by the model's growth (calibration.refitted, issue 26):
each held-out score carries its class's learnt messages when it was scored, through the
model file (`history_count`), the journal (`h=`) and `dump`; the gate keeps a learner of
errors on the plain fit; files from before the counts still read and score as they did."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spamnb.mail.sources import read_index
from spamnb.models import calibration, journal, store
from spamnb.pipe import onemessage
from tests.test_online import shuffled  # noqa: F401 - the fixture
from tests.test_trust import spamnb

# Scores the model had right by more than the gate's margin, and near misses or mistakes.
SURE, NEAR = calibration.GATE_MARGIN + 5.0, calibration.GATE_MARGIN - 4.0


@pytest.fixture(scope="module")
def trained(shuffled: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:  # noqa: F811
    """`spamnb train` of the sample's first 60 messages (in digest order), and the 50 after."""
    items = list(read_index(str(shuffled)))
    folder = tmp_path_factory.mktemp("growth")
    first = folder / "first"
    first.write_text("".join(f"{m.label} {m.id}\n" for m in items[:60]))
    model = folder / "model.npz"
    done = spamnb("-q", "train", "-m", model, "--index", first)
    assert done.returncode == 0, done.stderr
    return model, items[60:]


def copy(model: Path, to: Path) -> Path:
    to.write_bytes(model.read_bytes())
    return to


def plain(history: list) -> tuple[tuple[float, float], float]:
    """The fit before the weights: every score alike, the floor with its label-noise share."""
    z, positive = [s for s, _, _ in history], [c == 1 for _, c, _ in history]
    fit = calibration.fit_platt(z, positive)
    return fit, calibration.ham_loss_floor(z, positive, fit)


def test_train_and_piped_learns_record_each_scores_class_count(trained: tuple[Path, list], tmp_path: Path) -> None:
    model, rest = trained
    model = copy(model, tmp_path / "model.npz")
    start = store.load(str(model))
    docs = start.counts.docs.tolist()
    # train's held-out scores come from models without one of 5 folds of its messages.
    assert all(0.7 * docs[c] <= n < docs[c] for _, c, n in start.history)
    for m in rest[:6]:
        done = spamnb("-q", "train", "-m", model, f"--{m.label}", "-", stdin=m.data)
        assert done.returncode == 0, done.stderr
    learnt = journal.read(str(model), onemessage.OneModel(str(model)).identity).history
    counts = []
    for m in rest[:6]:
        c = int(m.label == "spam")
        counts.append(docs[c])
        docs[c] += 1
    assert [n for _, _, n in learnt] == counts
    assert store.load(str(model)).history[-6:] == onemessage.OneModel(str(model)).history()[-6:] == learnt


@pytest.mark.parametrize("learner", ["every message", "errors"])
def test_the_gate_keeps_a_learner_of_errors_on_the_plain_fit(trained: tuple[Path, list], tmp_path: Path, learner: str) -> None:
    """The learn that brings the history to 100 scores refits it.  A learner of errors, whose
    history holds no score the model had right by the gate's margin, refits as before the
    weights; a learner of every message weighs each score (n / N)^g and drops the floor's
    label-noise share."""
    model, rest = trained
    model = copy(model, tmp_path / "model.npz")
    loaded = store.load(str(model))
    docs = loaded.counts.docs.tolist()
    side = SURE if learner == "every message" else NEAR
    # Early scores (few messages learnt then) and later ones, ham a third of them.
    history = [((-side if i % 3 == 0 else side) * (1 if i % 4 else 0.3), int(i % 3 != 0), 1 + i * docs[int(i % 3 != 0)] // 120) for i in range(99)]
    history[5] = (12.0, 0, 2)  # an early ham that scored as spam
    loaded.history = history
    store.save(loaded, str(model))
    spam = next(m for m in rest if m.label == "spam")
    done = spamnb("-q", "train", "-m", model, "--spam", "-", stdin=spam.data)
    assert done.returncode == 0, done.stderr
    after = store.load(str(model))
    assert len(after.history) == 100
    fitted = (after.scoring.calibration, after.scoring.spam_floor)
    if learner == "errors":
        assert calibration.gate(after.history) == 0
        assert fitted == plain(after.history)
        return
    g = calibration.gate(after.history)
    assert 0 < g < 1
    now = after.counts.docs.tolist()
    z, positive = [s for s, _, _ in after.history], [c == 1 for _, c, _ in after.history]
    weights = [(max(n, 1) / now[c]) ** g for _, c, n in after.history]
    fit = calibration.fit_platt(z, positive, weights=weights)
    assert fitted == (fit, calibration.ham_loss_floor(z, positive, fit, weights=weights, noise=False))
    assert fitted != plain(after.history)


def test_a_model_and_journal_without_the_counts_read_and_score_as_before(trained: tuple[Path, list], tmp_path: Path) -> None:
    model, rest = trained
    new = copy(model, tmp_path / "new.npz")
    old = tmp_path / "old.npz"
    arrays = store.to_arrays(store.load(str(model)))
    assert "history_count" in arrays
    del arrays["history_count"]
    with open(old, "wb") as out:
        store.write_npz(out, arrays)
    docs = arrays["docs"].tolist()
    # Read as scored by the model as the file holds it (calibration.counted), on every path.
    assert [n for _, _, n in store.load(str(old)).history] == [docs[c] for c in arrays["history_class"].tolist()]
    assert onemessage.OneModel(str(old)).history() == store.load(str(old)).history
    mails = [m.data for m in rest[:8]]
    for data in mails:
        assert spamnb("classify", "-m", old, "--pipe", stdin=data).stdout == spamnb("classify", "-m", new, "--pipe", stdin=data).stdout
    # A journal record from before the counts: its score read as scored by the model file.
    ident = onemessage.OneModel(str(old)).identity
    journal.append(str(old), ident, journal.read(str(old), ident), [journal.Entry(b"\x05" * 16, None, 0, {"w": 1}, score=-3.0)])
    assert store.load(str(old)).history[-1] == (-3.0, 0, docs[0])
    ham = next(m for m in rest if m.label == "ham")
    done = spamnb("-q", "train", "-m", old, "--ham", "-", stdin=ham.data)
    assert done.returncode == 0, done.stderr
    assert [(c, n) for _, c, n in onemessage.OneModel(str(old)).history()[-2:]] == [(0, docs[0]), (0, docs[0] + 1)]
    store.save(store.load(str(old)), str(old))  # the journal folded in (learnone.fold): the file now holds every count
    folded = np.load(old)
    assert folded["history_count"].tolist() == [n for _, _, n in store.load(str(old)).history]


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (lambda n: n[:-1], "shapes"),
        (lambda n: np.where(np.arange(len(n)) == 3, -1, n), "out of range"),
        (lambda n: n.astype(np.float64), "holds floats"),
        (lambda n: n.reshape(1, -1), "history_count is"),
    ],
)
def test_a_damaged_count_column_is_a_one_line_damaged_model_error(trained: tuple[Path, list], tmp_path: Path, bad: object, why: str) -> None:
    model, rest = trained
    arrays = store.to_arrays(store.load(str(model)))
    arrays["history_count"] = bad(arrays["history_count"])  # type: ignore[operator]
    path = tmp_path / "damaged.npz"
    with open(path, "wb") as out:
        store.write_npz(out, arrays)
    for args, stdin in ((("classify", "-m", path, "--pipe"), rest[0].data), (("train", "-m", path, "--ham", "-"), rest[0].data), (("dump", "-m", path), None)):
        done = spamnb(*args, stdin=stdin)
        said = done.stderr.decode()
        assert done.returncode == 3 and said.count("\n") == 1, said
        assert f"{path}: damaged spamnb model (" in said and why in said and "Traceback" not in said


def test_dump_and_restore_keep_the_counts_and_read_a_dump_without_them(trained: tuple[Path, list], tmp_path: Path) -> None:
    model, _ = trained
    text = spamnb("dump", "-m", model).stdout
    head = json.loads(text.split(b"\n", 1)[0])
    assert all(len(s) == 3 for s in head["history"])
    restored = tmp_path / "restored.npz"
    assert spamnb("restore", "-m", restored, stdin=text).returncode == 0
    assert store.load(str(restored)).history == store.load(str(model)).history
    head["history"] = [s[:2] for s in head["history"]]
    older = json.dumps(head, sort_keys=True).encode() + b"\n" + text.split(b"\n", 1)[1]
    assert spamnb("restore", "-m", tmp_path / "older.npz", stdin=older).returncode == 0
    docs = store.load(str(model)).counts.docs.tolist()
    assert [n for _, _, n in store.load(str(tmp_path / "older.npz")).history] == [docs[c] for _, c in head["history"]]
    head["history"][0] = [*head["history"][0], 3]  # one score with its count, the others without
    mixed = json.dumps(head, sort_keys=True).encode() + b"\n" + text.split(b"\n", 1)[1]
    done = spamnb("restore", "-m", tmp_path / "mixed.npz", stdin=mixed)
    assert done.returncode == 3 and "not a spamnb dump (the calibration's history" in done.stderr.decode()
