"""Metrics against scikit-learn and against small cases worked by hand."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from spamnb.run import metrics


@pytest.mark.parametrize("seed", range(5))
def test_roc_auc_matches_scikit_learn_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 200
    scores = rng.integers(0, 12, n).astype(float)  # many ties
    positive = rng.random(n) < 0.4
    assert metrics.roc_auc(scores, positive) == pytest.approx(roc_auc_score(positive, scores), abs=1e-12)
    continuous = rng.normal(size=n) + positive
    assert metrics.roc_auc(continuous, positive) == pytest.approx(roc_auc_score(positive, continuous), abs=1e-12)


def test_roc_auc_by_hand() -> None:
    # spam 3, 2, 1 against ham 2, 0: pairs won 2 + (1 + 0.5) + 1 = 4.5 of 6.
    assert metrics.roc_auc(np.array([3, 2, 1, 2, 0]), np.array([1, 1, 1, 0, 0], bool)) == 0.75
    assert metrics.roc_auc(np.array([1.0, 0.0]), np.array([True, False])) == 1.0
    assert math.isnan(metrics.roc_auc(np.array([1.0, 2.0]), np.array([True, True])))


def test_expected_calibration_error_by_hand() -> None:
    probs = np.array([0.05, 0.05, 0.95, 0.95, 0.55, 1.0])
    positive = np.array([0, 1, 1, 1, 0, 0])
    # bins: [0, .1): mean p .05, share .5 -> .45 x 2; [.5, .6): .55 vs 0 -> .55 x 1;
    # [.9, 1] (1.0 included): mean p 2.9/3, share 2/3 -> .3 x 3.
    expected = (0.45 * 2 + 0.55 * 1 + 0.3 * 3) / 6
    assert metrics.expected_calibration_error(probs, positive) == pytest.approx(expected, abs=1e-12)
    assert metrics.expected_calibration_error(np.array([0.0, 1.0]), np.array([0, 1])) == 0.0


def test_recall_at_ham_loss_by_hand() -> None:
    ham = np.arange(200, dtype=float)  # the worst ham scores 199, the next 198
    spam = np.array([199.5, 198.5, 198.0, 50.0])
    scores = np.concatenate([ham, spam])
    positive = np.r_[np.zeros(200, bool), np.ones(4, bool)]
    # 0.5% of 200 ham is 1 ham that may be lost, so the bar is the second-worst ham (198).
    assert metrics.recall_at_ham_loss(scores, positive, 0.005) == 0.5
    assert metrics.recall_at_ham_loss(scores, positive, 0.0) == 0.25
    assert metrics.recall_at_ham_loss(spam, np.ones(4, bool)) == 1.0


def test_evaluate_counts_and_rates_by_hand() -> None:
    labels = ["spam", "spam", "spam", "spam", "ham", "ham", "ham"]
    verdicts = ["spam", "spam", "unsure", "ham", "ham", "unsure", "spam"]
    probs = np.array([0.99, 0.95, 0.6, 0.05, 0.01, 0.7, 0.97])
    odds = np.log(probs / (1 - probs))
    report = metrics.evaluate(labels, odds, probs, verdicts)
    d = report.as_dict()
    assert (d["true_positives"], d["false_negatives"], d["true_negatives"], d["false_positives"]) == (2, 2, 2, 1)
    assert (d["unsure"], d["unsure_errors"]) == (2, 1)  # the unsure ham stands on the spam side of 0.5
    assert d["accuracy"] == pytest.approx(4 / 7)
    assert d["precision"] == pytest.approx(2 / 3)
    assert d["recall"] == pytest.approx(2 / 4)
    assert d["f1"] == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    assert d["false_positive_rate"] == pytest.approx(1 / 3)
    assert d["false_negative_rate"] == pytest.approx(2 / 4)
    # spam .99 .95 .6 .05 vs ham .01 .7 .97: pairs won 3 + 2 + 1 + 1 = 7 of 12
    assert d["auc"] == pytest.approx(7 / 12) == roc_auc_score([1, 1, 1, 1, 0, 0, 0], probs)
    assert d["brier"] == pytest.approx(np.mean((probs - np.array([1, 1, 1, 1, 0, 0, 0])) ** 2))


def test_undefined_metrics_are_json_null_and_fail_their_bars() -> None:
    probs = np.array([0.2, 0.3])
    report = metrics.evaluate(["spam", "spam"], np.log(probs / (1 - probs)), probs, ["unsure", "unsure"])
    d = report.as_dict()
    assert d["auc"] is None and d["precision"] is None and d["false_positive_rate"] is None
    json.loads(json.dumps(d), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    [line] = metrics.failed_bars(report, [("auc", 0.5)])
    assert "auc" in line and "undefined" in line


def test_fail_under_bars() -> None:
    probs = np.array([0.9, 0.1])
    report = metrics.evaluate(["spam", "ham"], np.array([2.0, -2.0]), probs, ["spam", "ham"])
    assert metrics.failed_bars(report, [("auc", 1.0), ("accuracy", 0.99)]) == []
    [line] = metrics.failed_bars(report, [("auc", 1.01), ("recall", 0.5)])
    assert line.startswith("auc = 1 is under the bar 1.01")
    with pytest.raises(ValueError, match="unknown metric 'foo'"):
        metrics.failed_bars(report, [("foo", 1.0)])


@pytest.mark.parametrize(("text", "expected"), [("auc=0.99", ("auc", 0.99)), (" f1 = 0.5", ("f1", 0.5))])
def test_parse_bar(text: str, expected: tuple[str, float]) -> None:
    assert metrics.parse_bar(text) == expected


@pytest.mark.parametrize("text", ["auc", "auc=high", "auc:0.9"])
def test_parse_bar_errors(text: str) -> None:
    with pytest.raises(ValueError, match="--fail-under"):
        metrics.parse_bar(text)


def test_threshold_sweep() -> None:
    labels = ["spam", "spam", "ham", "ham"]
    probs = np.array([0.95, 0.6, 0.85, 0.1])
    assert metrics.threshold_sweep(labels, probs, (0.5, 0.9)) == [(0.5, 1, 0), (0.9, 0, 1)]
