"""The event models' scoring (Fisher's combining by hand, its tests and the geometric mean) and the chi-square tails."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2

from spamnb.bayes import events, nb
from spamnb.bayes.chi2 import log_chi2_tails
from spamnb.models.model import probabilities
from tests.conftest import log_odds


def test_chi2_tails_match_scipy_far_into_both_tails():
    rng = np.random.default_rng(1)
    n = rng.integers(1, 400, 500)
    chi = rng.uniform(0, 12, 500) * n
    log_q, log_p = log_chi2_tails(chi, n)
    q, p = chi2.logsf(chi, 2 * n), chi2.logcdf(chi, 2 * n)
    ok = q > -700
    assert np.allclose(log_q[ok], q[ok], atol=1e-9)
    ok = p > -700
    assert np.allclose(log_p[ok], p[ok], atol=1e-9)


def test_chi2_tails_of_no_tokens():
    log_q, log_p = log_chi2_tails(np.array([0.0]), np.array([0]))
    assert log_q[0] == 0.0 and log_p[0] == -np.inf


def hand_fisher(fs: list[float]) -> float:
    """SpamBayes's chi2_spamprob, written out plainly."""
    n = len(fs)

    def q(x2: float, v: int) -> float:
        m = x2 / 2.0
        term = total = math.exp(-m)
        for i in range(1, v // 2):
            term *= m / i
            total += term
        return min(total, 1.0)

    s = 1.0 - q(-2.0 * sum(math.log(1 - f) for f in fs), 2 * n)
    h = 1.0 - q(-2.0 * sum(math.log(f) for f in fs), 2 * n)
    return (s - h + 1.0) / 2.0


def test_fisher_matches_hand_computation():
    # 3 tokens; 10 ham, 5 spam messages
    counts = nb.Counts(
        docs=np.array([10, 5]),
        tf=np.array([[1, 9, 2], [4, 1, 2]]),
        df=np.array([[1, 8, 2], [4, 1, 2]]),
    )
    model = events.Fisher(alpha=0.45, independence=1.0, power=1.0, mean_weight=0.0)  # Robinson's combining as published
    f, seen = model.token_prob(counts)
    b, g = counts.df[1] / 5, counts.df[0] / 10
    n = counts.df.sum(axis=0)
    expect = (0.45 * 0.5 + n * b / (b + g)) / (0.45 + n)
    assert np.allclose(f, expect) and seen.all()
    X = np.array([[1, 0, 1], [0, 3, 0], [1, 1, 1]], dtype=float)
    odds = log_odds(model, counts, X)
    for row, lo in zip(X, odds, strict=True):
        indicator = hand_fisher([f[j] for j in np.flatnonzero(row)])
        assert probabilities(np.array([lo]))[0] == pytest.approx(indicator, abs=1e-12)


def test_fisher_tokens_never_seen_are_neutral_and_empty_messages_are_even():
    counts = nb.Counts(docs=np.array([2, 2]), tf=np.array([[1, 0], [0, 0]]), df=np.array([[1, 0], [0, 0]]))
    odds = log_odds(events.Fisher(), counts, np.array([[0.0, 5.0], [0.0, 0.0]]))
    assert list(odds) == [0.0, 0.0]


def test_fisher_log_odds_keep_ranking_where_the_indicator_rounds_to_one():
    # columns: sum ln f, sum ln(1 - f), tokens; both rows overwhelmingly spam
    z = np.array([[-1.0, -3000.0, 1000], [-1.0, -2000.0, 1000]])
    lo = events.Fisher().chi_square(z)
    assert np.all(np.isfinite(lo)) and lo[0] > lo[1] > 30


@pytest.mark.parametrize(("independence", "power"), [(0.5, 1.0), (0.25, 1.0), (1.0, 0.8), (1.0, 0.5), (0.5, 0.8)])
def test_fisher_counts_n_tokens_as_fewer_tests(independence: float, power: float) -> None:
    """n tokens at (c, p) score as round(c n^p) tokens with the same mean ln f, ln(1 - f)."""
    z = np.array([[-40.0, -300.0, 40], [-6.0, -2.0, 4], [-0.2, -2.5, 1], [-900.0, -40.0, 700]])
    n = np.maximum(np.rint(independence * z[:, 2] ** power), 1)
    shrunk = np.column_stack([z[:, 0] * n / z[:, 2], z[:, 1] * n / z[:, 2], n])
    published = events.Fisher(independence=1.0, power=1.0, mean_weight=0.0)
    ours = events.Fisher(independence=independence, power=power, mean_weight=0.0)
    np.testing.assert_allclose(ours.chi_square(z), published.chi_square(shrunk), rtol=1e-12)
    # fewer tests: less sure, same side
    full = published.chi_square(z)
    assert np.all(np.abs(ours.chi_square(z)) <= np.abs(full) + 1e-12)
    assert np.all(np.sign(ours.chi_square(z)) == np.sign(full))


def test_fisher_default_tests_grow_slower_than_the_tokens() -> None:
    """By default n tokens are n ** 0.8 tests: all of a short message's, a third of a long one's."""
    model = events.Fisher(mean_weight=0.0)
    # the same mean ln f, ln(1 - f) per token; only the number of tokens differs
    z = np.array([[-0.3, -1.5, 1.0]]) * np.array([[1], [2], [32], [400]])
    tests = np.array([1.0, 2.0, 16.0, 121.0])  # round(n ** 0.8) for n = 1, 2, 32, 400
    as_tests = events.Fisher(independence=1.0, power=1.0, mean_weight=0.0).chi_square(np.column_stack([-0.3 * tests, -1.5 * tests, tests]))
    np.testing.assert_allclose(model.chi_square(z), as_tests, rtol=1e-12)


def test_fisher_adds_the_geometric_mean_rule() -> None:
    """The default log-odds: the chi-square indicator's logit plus 5 times the mean ln(f / (1 - f))."""
    z = np.array([[-40.0, -300.0, 40], [-6.0, -2.0, 4], [-0.2, -2.5, 1], [-900.0, -40.0, 700], [-1.4, -1.4, 2]])
    chi_square = events.Fisher(mean_weight=0.0).chi_square(z)
    mean_logit = (z[:, 0] - z[:, 1]) / z[:, 2]
    np.testing.assert_allclose(events.Fisher().chi_square(z), chi_square + 5.0 * mean_logit, rtol=1e-12)
    np.testing.assert_allclose(events.Fisher().chi_square(z, 0.5) - events.Fisher().chi_square(z), 0.5, rtol=1e-12)
    # It ranks where both tests saturate: many strong words of both kinds, one side stronger.
    both = np.array([[-2000.0, -2100.0, 1000], [-2000.0, -2300.0, 1000]])
    assert events.Fisher(mean_weight=0.0).chi_square(both)[0] == pytest.approx(events.Fisher(mean_weight=0.0).chi_square(both)[1], abs=1e-9)
    assert events.Fisher().chi_square(both)[1] > events.Fisher().chi_square(both)[0]
    # Neutral evidence (f = 1/2) and an empty message stay exactly undecided.
    assert list(events.Fisher().chi_square(np.array([[2 * np.log(0.5), 2 * np.log(0.5), 2.0], [0.0, 0.0, 0.0]]))) == [0.0, 0.0]
