"""The pipeline's calibration: held-out log-odds, the reservoir sample, and calibration when learning."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spamnb.bayes import events, nb
from spamnb.bayes.vocabulary import Rows
from spamnb.models.model import Model, Scoring
from spamnb.run import classifier
from tests.conftest import count_rows, rows_of


def test_calibrated_needs_enough_of_both_classes():
    counts = nb.Counts(docs=np.array([3, 3]), tf=np.ones((2, 2), np.int64), df=np.ones((2, 2), np.int64))
    X = count_rows([[0], [1]], 2)
    s = Scoring()
    y = np.array([0, 1])
    assert classifier.calibrated(s, *classifier.held_out_scores(s, counts, rows_of(X), y), y) is s


@pytest.mark.parametrize("event", sorted(events.EVENT_MODELS))
def test_held_out_log_odds_are_those_of_a_model_without_the_fold(event: str) -> None:
    """train's calibration (each fold's table over its messages' columns only) gives each
    held-out message the log-odds of a model of the other folds (fold_log_odds)."""
    rng = np.random.default_rng(7)
    n, v = 60, 40
    X = count_rows([list(rng.choice(v, size=rng.integers(1, 12), replace=False)) for _ in range(n)], v)
    X.data[:] = rng.integers(1, 4, size=X.nnz)
    y = rng.integers(0, 2, size=n)
    model = events.event_model(event)
    total = classifier.counts_of(rows_of(X), y, v)
    flat = rows_of(X)
    got = classifier.held_out_log_odds(model, total, flat, y, k=3)
    part = np.arange(n) % 3
    for fold in range(3):
        rows = np.flatnonzero(part == fold)
        train = total - classifier.counts_of(rows_of(X[rows]), y[rows], v)
        want = classifier.fold_log_odds(model, train, rows_of(X[rows]))
        np.testing.assert_allclose(got[rows], want, rtol=1e-12, atol=1e-12)
    # take keeps each chosen message's entries whole and in order
    pick = part == 1
    chosen = flat.take(np.flatnonzero(pick))
    assert list(chosen.lengths) == list(np.diff(X.indptr)[pick])
    assert list(chosen.cols) == [c for i in np.flatnonzero(pick) for c in X.indices[X.indptr[i] : X.indptr[i + 1]]]


def whole_vocabulary_held_out(event: nb.EventModel, total: nb.Counts, flat: Rows, y: np.ndarray, k: int) -> np.ndarray:
    """held_out_log_odds as it was: each fold's table over every column of the vocabulary."""
    odds = np.zeros(len(y))
    part = np.arange(len(y)) % k
    for fold in range(k):
        rows = part == fold
        held = flat.take(np.flatnonzero(rows))
        out = nb.Counts.empty(total.n_features)
        out.add(held, y[rows])
        table, b, keys = classifier.fold_model(event, total - out)
        odds[rows] = event.log_odds(table, b, held, keys)
    return odds


@pytest.mark.parametrize("event", sorted(events.EVENT_MODELS))
@pytest.mark.parametrize("jobs", [1, 2])
def test_held_out_log_odds_over_the_folds_columns_equal_the_whole_vocabulary_ones(event: str, jobs: int) -> None:
    """Each fold's table covers only its messages' columns (and the folds run in `jobs`
    processes): the log-odds are the whole-vocabulary ones bit for bit.  Fails if an event
    model whose table needs the whole vocabulary (multinomial, Bernoulli) claims per_token."""
    rng = np.random.default_rng(3)
    n, v = 90, 600  # sparse enough that no fold uses every column, and some are seen in one fold only
    # Common columns so that some tokens reach the duplicate minimum and share keys.
    X = count_rows([sorted({*rng.choice(v, size=rng.integers(1, 15), replace=False), *rng.choice(8, size=3)}) for _ in range(n)], v)
    X.data[:] = rng.integers(1, 4, size=X.nnz)
    y = rng.integers(0, 2, size=n)
    model = events.event_model(event)
    total = classifier.counts_of(rows_of(X), y, v)
    flat = rows_of(X)
    want = whole_vocabulary_held_out(model, total, flat, y, k=5)
    assert np.array_equal(classifier.held_out_log_odds(model, total, flat, y, k=5, jobs=jobs), want)
    assert (nb.duplicate_keys(total, least=model.duplicate_min) >= 0).any()  # the grouping is exercised


def test_reservoir_keeps_the_first_items_then_samples_as_algorithm_r() -> None:
    items = [(np.array([i]), np.array([1]), i % 2) for i in range(50)]
    sample = classifier.Reservoir(5, seed=9)
    for item in items[:5]:
        sample.offer(item)
    assert sample.items == items[:5] and sample._rng is None  # no generator until one is needed
    for item in items[5:]:
        sample.offer(item)
    rng, want = np.random.default_rng(9), list(items[:5])
    for seen, item in enumerate(items[5:], 6):
        j = int(rng.integers(seen))
        if j < 5:
            want[j] = item
    assert [int(c[0]) for c, _, _ in sample.items] == [int(c[0]) for c, _, _ in want]


def test_calibration_is_fitted_when_learning(tmp_path):
    from spamnb.mail.sources import Message
    from spamnb.models.model import Model

    rng = np.random.default_rng(3)
    spam_words, ham_words = ["cheap", "offer", "winner", "pills"], ["meeting", "patch", "review", "lunch"]

    def message(words: list[str]) -> bytes:
        body = " ".join(rng.choice(words, 8)) + " " + " ".join(rng.choice(spam_words + ham_words, 3))
        return f"Subject: hi\n\n{body}\n".encode()

    items = [Message(f"s{i}", message(spam_words), "spam") for i in range(40)]
    items += [Message(f"h{i}", message(ham_words), "ham") for i in range(40)]
    model = Model()
    classifier.learn(model, items)
    assert model.scoring.calibration != (1.0, 0.0)


@pytest.mark.parametrize("event", ["fisher", "multinomial"])
def test_a_message_moved_within_one_run_is_calibrated_once_as_its_final_class(event: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    from spamnb.mail import sources


    root = Path(__file__).resolve().parent.parent / "sample_corpus"
    spam = [m for m in sources.read_source(str(root / "spam.mbox")) if isinstance(m, sources.Message)][:60]
    ham = [m for m in sources.read_source(str(root / "ham.mbox")) if isinstance(m, sources.Message)][:60]
    # The spam learnt first as ham (a copy in the wrong folder), then as spam: each moves.
    items = [m._replace(label="ham") for m in spam] + [m._replace(label="ham") for m in ham] + [m._replace(label="spam") for m in spam]
    seen: list[list[tuple[np.ndarray, np.ndarray, np.ndarray | None, int]]] = []
    calibrate_on = classifier.calibrate_on
    monkeypatch.setattr(classifier, "calibrate_on", lambda model, sample, *rest: (seen.append(sample), calibrate_on(model, sample, *rest)))
    model = Model(scoring=Scoring(event=event))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # held out as the class it left, its counts went below zero
        report = classifier.learn(model, items)
    moved = report.moved
    assert moved > 50 and report.learnt > 100  # the sample corpus repeats a few messages
    [sample] = seen
    assert sorted(int(s.cls) for s in sample) == [0] * (report.learnt - moved) + [1] * moved
    assert model.scoring.calibration != Scoring().calibration
