"""The model's scoring defaults: Platt calibration, its round trip, and the ham-loss floor on P(spam)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from spamnb.models import scoring
from spamnb.models.calibration import HAM_LOSS, fit_platt, ham_loss_floor
from spamnb.models.model import Scoring, probabilities


def test_platt_fit_recovers_a_known_calibration():
    rng = np.random.default_rng(0)
    z = rng.normal(0, 20, 20000)
    y = rng.random(20000) < probabilities(0.25 * z - 1.0)
    a, b = fit_platt(z, y)
    assert a == pytest.approx(0.25, rel=0.1) and b == pytest.approx(-1.0, abs=0.15)


def test_platt_fit_is_set_by_the_messages_near_the_cut_off():
    """Log-odds spread far apart (as Fisher's are, +-80) with the labels from sigmoid(z - 1):
    plain Platt's smoothed targets let the surest messages, and one ham far on the spam side,
    flatten the curve; with each message's pull bounded (calibration.OUTLIER_SHARE) it stays."""
    rng = np.random.default_rng(1)
    z = np.concatenate([rng.normal(-30, 15, 4000), rng.normal(30, 15, 2000)])
    y = rng.random(len(z)) < probabilities(z - 1.0)
    a, b = fit_platt(z, y)
    assert a == pytest.approx(1.0, rel=0.25) and b == pytest.approx(-1.0, abs=0.6)
    z_odd, y_odd = np.append(z, 90.0), np.append(y, False)
    assert fit_platt(z_odd, y_odd)[0] == pytest.approx(a, rel=0.01)
    plain, plain_odd = fit_platt(z, y, outlier=0.0)[0], fit_platt(z_odd, y_odd, outlier=0.0)[0]
    assert plain < 0.7 * a and plain_odd < 0.8 * plain


def test_platt_fit_of_separable_scores_stays_finite():
    a, b = fit_platt(np.array([-50.0, -40, 40, 50]), np.array([False, False, True, True]))
    assert math.isfinite(a) and a > 0 and math.isfinite(b)


def test_scoring_calibration_round_trips_and_maps_log_odds():
    s = Scoring(calibration=(0.5, 1.0))
    assert Scoring.from_json(s.to_json()) == s
    assert s.probability(2.0) == pytest.approx(1 / (1 + math.exp(-2.0)))
    with pytest.raises(ValueError):
        Scoring(calibration=(0.0, 1.0))


def expected_ham_flagged(z: np.ndarray, positive: np.ndarray, calibration: tuple[float, float], floor: float) -> float:
    """The ham the held-out messages above `floor` are expected to hold (ham_loss_floor's estimate)."""
    p = calibrated(z, calibration)
    noise = 0.5 / (len(z) + 1)
    return float((noise + (1 - 2 * noise) * (1 - p))[p > floor].sum())


def calibrated(z: np.ndarray, calibration: tuple[float, float]) -> np.ndarray:
    """P(spam) of each log-odds as the fit computes it (scoring.probability)."""
    a, b = calibration
    return np.array([scoring.probability(a * v + b) for v in z.tolist()])


def scores(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    positive = rng.random(n) < 0.3
    return np.where(positive, rng.normal(12, 8, n), rng.normal(-25, 8, n)), positive


@pytest.mark.parametrize("n", [60, 300, 3000])
def test_ham_loss_floor_flags_as_many_as_the_budget_allows(n: int) -> None:
    z, positive = scores(np.random.default_rng(n), n)
    calibration = fit_platt(z, positive)
    floor = ham_loss_floor(z, positive, calibration)
    budget = HAM_LOSS * int((~positive).sum())
    assert expected_ham_flagged(z, positive, calibration, floor) <= budget
    # The next message down (the one at the floor) would have broken the budget.
    assert floor in calibrated(z, calibration)
    assert expected_ham_flagged(z, positive, calibration, np.nextafter(floor, 0.0)) > budget


def test_ham_loss_floor_falls_as_more_is_learnt() -> None:
    rng = np.random.default_rng(3)
    floors = []
    for n in (100, 5000):
        z, positive = scores(rng, n)
        floors.append(ham_loss_floor(z, positive, fit_platt(z, positive)))
    # The same two score distributions: from 100 messages the floor is above the 0.95
    # cut-off, from 5,000 below it.
    assert floors[0] > 0.95 > floors[1]


def test_ham_loss_floor_without_ham_or_over_budget() -> None:
    assert ham_loss_floor(np.array([5.0, 6.0]), np.array([True, True]), (1.0, 0.0)) == 0.0
    # All held-out messages within the budget: no floor.
    assert ham_loss_floor(np.array([5.0, -30.0]), np.array([True, False]), (1.0, 0.0), budget=2.0) == 0.0


def test_the_default_spam_verdict_needs_the_cut_off_and_the_floor() -> None:
    s = Scoring(spam_floor=0.99)
    assert [s.verdict(p) for p in (0.96, 0.99, 0.995, 0.05)] == ["unsure", "unsure", "spam", "ham"]
    # the floor, not the cut-off, held the first two back: each decision says so
    assert [s.decide(p).floor for p in (0.96, 0.99, 0.995, 0.05, 0.5)] == [0.99, 0.99, None, None, None]
    assert Scoring.from_json(s.to_json()) == s
    assert "spam_cutoff_set" not in s.to_json()  # a model's scoring as saved before the field was
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError):
            Scoring(spam_floor=bad)
        with pytest.raises(ValueError):
            scoring.Scoring.from_json(f'{{"spam_floor": {bad}}}')


def test_a_spam_cutoff_the_user_sets_is_the_cutoff() -> None:
    s = Scoring(spam_floor=0.99).with_cutoffs(0.95, None)
    assert s.spam_cutoff_set and (s.spam_cutoff, s.ham_cutoff) == (0.95, 0.1)
    assert [s.decide(p) for p in (0.96, 0.94)] == [("spam", None), ("unsure", None)]
    assert Scoring.from_json(s.to_json()) == s  # `train --spam-cutoff` stores it so
    # the ham cut-off alone leaves the spam side (and its floor) as it was
    assert Scoring(spam_floor=0.99).with_cutoffs(None, 0.2).verdict(0.96) == "unsure"
    assert s.spam_threshold() == (0.95, False) and Scoring(spam_floor=0.99).spam_threshold() == (0.99, True)


@pytest.mark.parametrize("spam, ham", [(0.4, 0.5), (1.5, None), (None, -0.1), (math.nan, None), (None, 0.99)])
def test_one_check_of_the_cutoffs(spam: float | None, ham: float | None) -> None:
    with pytest.raises(scoring.CutoffError):
        Scoring().with_cutoffs(spam, ham)
    with pytest.raises(ValueError):
        scoring.Scoring(spam_cutoff=0.95 if spam is None else spam, ham_cutoff=0.1 if ham is None else ham)


def test_equal_cutoffs_leave_no_message_unsure() -> None:
    s = Scoring().with_cutoffs(0.5, 0.5)
    assert [s.verdict(p) for p in (0.0, 0.49, 0.5, 1.0)] == ["ham", "ham", "spam", "spam"]
