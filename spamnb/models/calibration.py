"""Platt's calibration and the ham-loss floor, fitted on held-out log-odds: the one fit of
`train`, `eval` (5 folds and `--online`) and single learns (`train --spam|--ham -`,
`spamnb serve`'s TELL).

Plain Python (no numpy), so that the one-message learner refits as `eval --online` does;
setup.py compiles this source with the C types of calibration.pxd, to the same bits.
"""
from __future__ import annotations

import math

# `typing` is off a learn's start-up: names for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, Protocol, TypeVar

    S = TypeVar("S", bound="Refittable")

    class Refittable(Protocol):
        """A scoring as `refitted` changes it (`scoring.Scoring`, which imports this module)."""

        def replace(self: S, **changes: Any) -> S: ...

# Platt's fit made robust: each message's label is taken to come from the sigmoid only
# with probability 1 - 2 OUTLIER_SHARE, so that no message pulls the curve by more than
# log(1 / OUTLIER_SHARE) nats and the messages near the cut-off, not the surest ones, set
# it (spam missed at 0.95: 97 -> 73, 1 FP; docs/measurements.md).
OUTLIER_SHARE = 1e-6

# The share of ham a spam verdict may lose, by the model's own estimate: one in 1,000.
# The 0.95 cut-off alone is a cost rule ("a lost ham is 20x a missed spam"); it holds
# the ham lost to that share only when the ranking is good.  Learnt from 300 messages
# it is not: at P >= 0.95 flagged mail was 99.6% spam, as promised, yet 6 of 4,150 ham
# were lost (hard ham newsletters that carry words and relays seen in 1-3 spam and no
# ham).  5 folds on the SpamAssassin corpus, five splits (the md5 fold salted four
# ways), ham lost / spam missed at 0.95 alone -> with the budget: 100 learnt 6 / 56% ->
# 2 / 74%; 300 18 / 27% -> 9 / 42%; 1,000 17 / 12.5% -> 15 / 17%; all (~4,840) 5 / 4.4%
# -> the same verdicts (the floor stays under 0.95).  0.002: 300 14 / 32%; 0.0005: all
# 5.1% missed.
HAM_LOSS = 0.001
# A C double where compiled (calibration.pxd): `log_add` looks up no math.inf.
NEG_INF = -math.inf


def probability(logit: float) -> float:
    """P from its logit, without overflow at either end."""
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    e = math.exp(logit)
    return e / (1.0 + e)


def log_sigmoids(s: float) -> tuple[float, float]:
    """log sigmoid(s) and log sigmoid(-s) (log P and log(1 - P)) without overflow, from one
    exp and one log1p."""
    soft = math.log1p(math.exp(-abs(s)))  # log(1 + e^-|s|)
    return (-soft, -(s + soft)) if s >= 0 else (s - soft, -soft)


def log_add(u: float, v: float) -> float:
    """log(e^u + e^v) without overflow; -inf terms allowed."""
    if u < v:
        u, v = v, u
    if v == NEG_INF:
        return u
    return u + math.log1p(math.exp(v - u))


def fit_platt(log_odds: Sequence[float], positive: Sequence[bool], iterations: int = 100, outlier: float = OUTLIER_SHARE) -> tuple[float, float]:
    """Platt's (a, b) for P = sigmoid(a z + b), fitted as if each message's label came from
    outlier + (1 - 2 outlier) P (see OUTLIER_SHARE), by Fisher scoring on the log-loss.

    Targets are Platt's smoothed labels, (N+ + 1) / (N+ + 2) and 1 / (N- + 2), so a
    perfectly separated training set still gets a finite slope.
    """
    z = [float(v) for v in log_odds]
    pos = [bool(v) for v in positive]
    n_pos = sum(pos)
    n_neg = len(pos) - n_pos
    if n_pos == 0 or n_neg == 0:
        return 1.0, 0.0
    t_pos, t_neg = (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0)
    t = [t_pos if p else t_neg for p in pos]
    # Start from a scale that puts the scores in a sane range.
    mean = math.fsum(z) / len(z)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in z) / len(z))
    a, b = 1.0 / max(std, 1e-6), 0.0
    if not outlier < 0.5:
        raise ValueError(f"an outlier share of {outlier} leaves the sigmoid no part in the labels")
    log_outlier = math.log(outlier) if outlier > 0 else -math.inf  # -inf for no outliers: then plain Platt
    log_keep = math.log1p(-2.0 * outlier)
    if len(t) != len(z):  # the loops below go by index
        raise ValueError(f"{len(z):,} log-odds and {len(t):,} labels")
    loss = log_loss(z, t, a, b, log_outlier, log_keep)
    for _ in range(iterations):
        step_a, step_b = fisher_step(z, t, a, b, log_outlier, log_keep)
        # Halve the step while it does not lower the loss; the loss where the step lands is the
        # next step's (one pass over the scores fewer per step).
        scale = 1.0
        while (trial := log_loss(z, t, a - scale * step_a, b - scale * step_b, log_outlier, log_keep)) > loss and scale > 1e-6:
            scale /= 2
        a, b, loss = a - scale * step_a, b - scale * step_b, trial
        if max(abs(scale * step_a), abs(scale * step_b)) < 1e-10:
            break
    if not (math.isfinite(a) and math.isfinite(b) and a > 0):
        return 1.0, 0.0
    return a, b


def fisher_step(z: list[float], t: list[float], a: float, b: float, log_outlier: float, log_keep: float) -> tuple[float, float]:
    """Fisher scoring's step (a, b) -> (a - step_a, b - step_b) on `fit_platt`'s loss over
    scores z with targets t."""
    gz = g1 = hzz = hz = h1 = 0.0
    for i in range(len(z)):  # by index: compiled, a C loop over the lists (zip makes a tuple a score)
        zi, ti = z[i], t[i]
        s = a * zi + b
        p = probability(s)
        log_p, log_not_p = log_sigmoids(s)
        # With q = outlier + keep p, the sigmoid's share of q and of 1 - q, in logs so that
        # no p or 1 - p that rounds to 0 divides: dq/q = (1 - p) in_q, dq/(1 - q) = p in_not_q.
        in_q = probability(log_keep + log_p - log_outlier)
        in_not_q = probability(log_keep + log_not_p - log_outlier)
        g = (1 - ti) * p * in_not_q - ti * (1 - p) * in_q  # d loss / d s; plain Platt: p - t
        # Fisher scoring: the expected Hessian dq^2 / (q (1 - q)) is never negative (with
        # no outliers it is Newton's p (1 - p), as in Platt's fit).
        w = max(p * (1 - p) * in_q * in_not_q, 1e-12)
        gz += g * zi
        g1 += g
        hzz += w * zi * zi
        hz += w * zi
        h1 += w
    hzz += 1e-9
    h1 += 1e-9
    det = hzz * h1 - hz * hz
    return (h1 * gz - hz * g1) / det, (hzz * g1 - hz * gz) / det


def log_loss(z: list[float], t: list[float], a: float, b: float, log_outlier: float, log_keep: float) -> float:
    # -(t log q + (1 - t) log(1 - q)) with q = outlier + (1 - 2 outlier) sigmoid(a z + b), in
    # logs: stable at both ends, and plain Platt's loss for no outliers.
    total = 0.0
    for i in range(len(z)):
        zi, ti = z[i], t[i]
        s = a * zi + b
        log_p, log_not_p = log_sigmoids(s)
        log_q = log_add(log_outlier, log_keep + log_p)
        log_not_q = log_add(log_outlier, log_keep + log_not_p)
        total += ti * log_q + (1 - ti) * log_not_q
    return -total


def ham_loss_floor(log_odds: Sequence[float], positive: Sequence[bool], calibration: tuple[float, float], budget: float = HAM_LOSS) -> float:
    """The P a spam verdict must exceed so that the ham it loses stays within `budget` of
    the ham, estimated on held-out log-odds of learnt messages.

    Each message above the floor may be ham with its calibrated P(ham), and at least
    with a label-noise share 1 / (2 (n + 1)), the Jeffreys estimate of a rate never seen
    in n messages: the fewer messages learnt, the fewer may be flagged before the
    expected ham among them exceeds the budget.  0 when all fit within it.
    """
    z = [float(v) for v in log_odds]
    n_ham = sum(not p for p in positive)
    if n_ham == 0 or not z:
        return 0.0
    noise = 0.5 / (len(z) + 1)
    a, b = calibration
    total, limit = 0.0, budget * n_ham
    for zi in sorted(z, reverse=True):  # ties' order does not change the sum where it first exceeds
        s = a * zi + b
        total += noise + (1.0 - 2.0 * noise) * probability(-s)
        if total > limit:
            return probability(s)
    return 0.0


# The learn plan's refits (`eval --online`, single learns, a `train` too small to fit on
# its own messages): before the n-th message's score joins the history, at 100, 200, 400,
# 800 and 1,600 scores, then every 1,600.
FIT_EVERY = 1600
# The history keeps the latest scores only: past this many, the oldest FIT_EVERY go (so a
# refit still comes every FIT_EVERY learns).  A model carries it (16 bytes a score).
HISTORY_MAX = 10 * FIT_EVERY


def fit_points(n: int) -> bool:
    """Whether the calibration is refitted on a history of n scores."""
    return n in (100, 200, 400, 800, FIT_EVERY) or (n > FIT_EVERY and n % FIT_EVERY == 0)


def added(history: list[tuple[float, int]], scores: Iterable[tuple[float, int]]) -> bool:
    """Add (log-odds, class) pairs to `history` in turn, each a learnt message's score before
    it was learnt (held out), trimmed to HISTORY_MAX; whether a refit point was passed."""
    due = False
    for score in scores:
        history.append(score)
        if len(history) > HISTORY_MAX:
            del history[:FIT_EVERY]
        due = due or fit_points(len(history))
    return due


def trimmed(history: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """A history read back (the model's and its journal's scores) as `added` would have kept it."""
    drop = 0
    while len(history) - drop > HISTORY_MAX:
        drop += FIT_EVERY
    return history[drop:]


def refitted(scoring: S, history: Sequence[tuple[float, int]]) -> S:
    """`scoring` with Platt's calibration and the ham-loss floor fitted on a history of
    held-out scores; as it was while the history lacks a class.  Nothing else changes: a
    cut-off the user set stays the cut-off, and the numeric features' weight (`--meta`)
    stays as `train` fitted it."""
    z = [s for s, _ in history]
    positive = [c == 1 for _, c in history]
    if all(positive) or not any(positive):
        return scoring
    calibration = fit_platt(z, positive)
    return scoring.replace(calibration=calibration, spam_floor=ham_loss_floor(z, positive, calibration))
