"""Fisher scoring, calibration and the tokeniser rules added for accuracy."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2

from spamnb import classifier, events, nb
from spamnb.chi2 import log_chi2_tails
from spamnb.features import Rows
from spamnb.model import HAM_LOSS, Scoring, fit_platt, ham_loss_floor, probabilities
from spamnb.tokens import Tokenizer, domain_suffixes, received_tokens, url_tokens
from tests.conftest import count_rows, log_odds, rows_of


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


def test_platt_fit_recovers_a_known_calibration():
    rng = np.random.default_rng(0)
    z = rng.normal(0, 20, 20000)
    y = rng.random(20000) < probabilities(0.25 * z - 1.0)
    a, b = fit_platt(z, y)
    assert a == pytest.approx(0.25, rel=0.1) and b == pytest.approx(-1.0, abs=0.15)


def test_platt_fit_is_set_by_the_messages_near_the_cut_off():
    """Log-odds spread far apart (as Fisher's are, +-80) with the labels from sigmoid(z - 1):
    plain Platt's smoothed targets let the surest messages, and one ham far on the spam side,
    flatten the curve; with each message's pull bounded (model.OUTLIER_SHARE) it stays."""
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
    a, b = calibration
    p = probabilities(a * z + b)
    noise = 0.5 / (len(z) + 1)
    return float((noise + (1 - 2 * noise) * (1 - p))[p > floor].sum())


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
    p = probabilities(calibration[0] * z + calibration[1])
    assert floor in p
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


def test_a_spam_verdict_needs_the_cut_off_and_the_floor() -> None:
    from spamnb import onemessage

    s = Scoring(spam_floor=0.99)
    assert [s.verdict(p) for p in (0.96, 0.99, 0.995, 0.05)] == ["unsure", "unsure", "spam", "ham"]
    assert Scoring.from_json(s.to_json()) == s
    light = onemessage.Scoring.from_json(s.to_json())
    assert [light.verdict(p) for p in (0.96, 0.99, 0.995, 0.05)] == ["unsure", "unsure", "spam", "ham"]
    assert onemessage.Scoring.from_json(Scoring().to_json()).spam_floor == 0.0
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError):
            Scoring(spam_floor=bad)
        with pytest.raises(ValueError):
            onemessage.Scoring.from_json(f'{{"spam_floor": {bad}}}')


def test_calibrated_needs_enough_of_both_classes():
    counts = nb.Counts(docs=np.array([3, 3]), tf=np.ones((2, 2), np.int64), df=np.ones((2, 2), np.int64))
    X = count_rows([[0], [1]], 2)
    s = Scoring()
    assert classifier.calibrated(s, s.event_model(), counts, rows_of(X), np.array([0, 1])) is s


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

def test_used_columns_renumber_in_column_order() -> None:
    cols = np.array([9, 2, 9, 5, 0, 2])
    used, local = classifier.used_columns(cols, 12)
    assert used.tolist() == [0, 2, 5, 9]
    assert used[local].tolist() == cols.tolist()


def test_rows_take_picks_messages_in_order_with_repeats_and_empty_ones() -> None:
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 6, size=40)
    which = rng.integers(0, 40, size=70)
    starts = np.cumsum(lengths) - lengths
    want = [e for i in which for e in range(starts[i], starts[i] + lengths[i])]
    entries = np.arange(int(lengths.sum()))
    taken = Rows(entries, entries * 2, lengths, entries * 3).take(which)
    assert taken.cols.tolist() == want and taken.counts.tolist() == [2 * e for e in want] and taken.fields.tolist() == [3 * e for e in want]
    assert taken.lengths.tolist() == lengths[which].tolist()
    assert Rows(entries, entries, lengths).take(np.zeros(0, np.int64)).cols.tolist() == []


def test_calibration_is_fitted_when_learning(tmp_path):
    from spamnb.model import Model
    from spamnb.sources import Message

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


def test_url_tokens_hosts_and_parent_domains():
    assert url_tokens('<a href="HTTP://www.Example.co.uk:8080/x?y">') == [
        "url:www.example.co.uk",
        "url:example.co.uk",
        "url:co.uk",
    ]
    assert url_tokens("http://192.0.2.7/login") == ["url:ip-address", "url:192.0.2.7"]
    assert domain_suffixes("a.b.c.d.example.org", "") == ["c.d.example.org", "d.example.org", "example.org"]


def test_received_tokens_networks_and_domains():
    got = received_tokens("from relay.example.net (relay.example.net [192.0.2.33]) by mx.example.org")
    assert {"rcvd-ip:192.0.2", "rcvd-ip:192.0", "rcvd-host:example.net", "rcvd-host:mx.example.org"} <= set(got)


def test_html_links_become_tokens_and_long_words_a_bucket():
    msg = (
        b"Content-Type: text/html\n\n<a href='http://promo.example.com/'>click</a> "
        + b"x" * 60
        + b"\n"
    )
    tokens = Tokenizer()(msg)
    assert "url:example.com" in tokens and "click" in tokens and "skip:x60" in tokens
