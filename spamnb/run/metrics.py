"""Measures of a labelled scoring: confusion counts, ROC AUC, calibration, threshold sweep.

Spam is the positive class.  A verdict of `unsure` is not a positive: it counts as a
miss for spam and as a pass for ham, and the share of unsure verdicts is reported.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np


def roc_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve by the rank-sum formula, ties counted half."""
    scores = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(len(scores))
    # average rank over each run of tied scores
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], len(scores)]
    avg = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(avg, ends - starts)
    rank_sum = ranks[positive].sum()
    return float((rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def expected_calibration_error(probs: np.ndarray, positive: np.ndarray, bins: int = 10) -> float:
    """Mean |observed spam share - mean P(spam)| over equal-width bins, weighted by size."""
    probs = np.asarray(probs, dtype=np.float64)
    positive = np.asarray(positive, dtype=np.float64)
    which = np.minimum((probs * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        inside = which == b
        if inside.any():
            total += inside.sum() * abs(positive[inside].mean() - probs[inside].mean())
    return total / max(len(probs), 1)


def recall_at_ham_loss(scores: np.ndarray, positive: np.ndarray, loss: float = 0.005) -> float:
    """Share of spam scored above every ham but the worst `loss` share of ham."""
    scores = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    hams = np.sort(scores[~positive])[::-1]
    spams = scores[positive]
    if len(spams) == 0:
        return float("nan")
    allowed = int(loss * len(hams))
    bar = hams[allowed] if allowed < len(hams) else -np.inf
    return float((spams > bar).mean())


@dataclass(frozen=True)
class Report:
    """Everything `eval` reports; `as_dict` is the `--json` object."""

    messages: int
    spam: int
    ham: int
    true_positives: int
    false_positives: int
    true_negatives: int
    false_negatives: int
    unsure: int
    unsure_errors: int
    auc: float
    brier: float
    ece: float
    recall_at_half_percent_ham_loss: float

    @property
    def accuracy(self) -> float:
        return (self.true_positives + self.true_negatives) / self.messages if self.messages else float("nan")

    @property
    def precision(self) -> float:
        flagged = self.true_positives + self.false_positives
        return self.true_positives / flagged if flagged else float("nan")

    @property
    def recall(self) -> float:
        return self.true_positives / self.spam if self.spam else float("nan")

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else float("nan")

    @property
    def false_positive_rate(self) -> float:
        return self.false_positives / self.ham if self.ham else float("nan")

    @property
    def false_negative_rate(self) -> float:
        return self.false_negatives / self.spam if self.spam else float("nan")

    @property
    def one_minus_roca_percent(self) -> float:
        """TREC's 1-ROCA %: the area above the ROC curve, in percent."""
        return 100.0 * (1.0 - self.auc)

    @property
    def unsure_rate(self) -> float:
        return self.unsure / self.messages if self.messages else float("nan")

    @property
    def lam_percent(self) -> float:
        return lam_percent(self.false_positives, self.ham, self.false_negatives, self.spam)

    def as_dict(self) -> dict[str, float | int | None]:
        """Every metric by name; an undefined one (e.g. AUC without ham) is None, JSON's null,
        since NaN is not JSON and strict parsers (JSON.parse, Go's encoding/json) refuse it."""
        out: dict[str, float | int | None] = dict(self.__dict__)
        for name in DERIVED:
            out[name] = getattr(self, name)
        return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in out.items()}


def lam_percent(ham_lost: int, ham: int, spam_missed: int, spam: int) -> float:
    """TREC's logistic average misclassification, in percent: the mean in log-odds of the
    share of ham flagged and the share of spam not flagged (a share of 0 or of all taken
    half a message from it, so that the mean stays finite)."""
    if not ham or not spam:
        return math.nan

    def logit(x: float) -> float:
        return math.log(x / (1 - x))

    lost, missed = min(max(ham_lost, 0.5), ham - 0.5), min(max(spam_missed, 0.5), spam - 0.5)
    return 100.0 / (1.0 + math.exp(-(logit(lost / ham) + logit(missed / spam)) / 2))


# The metrics computed from the counts (Report's properties), after its fields in `as_dict`.
DERIVED = ("accuracy", "precision", "recall", "f1", "false_positive_rate", "false_negative_rate", "one_minus_roca_percent", "unsure_rate", "lam_percent")


def metric_names() -> list[str]:
    """Every name `--fail-under` and `--fail-over` take: the keys of `Report.as_dict`."""
    return [f.name for f in fields(Report)] + list(DERIVED)


def evaluate(labels: Sequence[str], log_odds: np.ndarray, probs: np.ndarray, verdicts: Sequence[str]) -> Report:
    positive = np.array([label == "spam" for label in labels], dtype=bool)
    flagged = np.array([v == "spam" for v in verdicts], dtype=bool)
    unsure = np.array([v == "unsure" for v in verdicts], dtype=bool)
    # An unsure verdict is an error when it stands beside the wrong side of 0.5.
    unsure_errors = unsure & ((np.asarray(probs) >= 0.5) != positive)
    return Report(
        messages=len(labels),
        spam=int(positive.sum()),
        ham=int((~positive).sum()),
        true_positives=int((flagged & positive).sum()),
        false_positives=int((flagged & ~positive).sum()),
        true_negatives=int((~flagged & ~positive).sum()),
        false_negatives=int((~flagged & positive).sum()),
        unsure=int(unsure.sum()),
        unsure_errors=int(unsure_errors.sum()),
        auc=roc_auc(log_odds, positive),
        brier=float(np.mean((np.asarray(probs) - positive) ** 2)) if len(labels) else float("nan"),
        ece=expected_calibration_error(probs, positive),
        recall_at_half_percent_ham_loss=recall_at_ham_loss(log_odds, positive),
    )


SPAM_CUTOFFS = (0.5, 0.8, 0.9, 0.95, 0.99, 0.999)
HAM_CUTOFFS = (0.01, 0.05, 0.1, 0.2, 0.3, 0.5)


def threshold_sweep(
    labels: Sequence[str], probs: np.ndarray, cutoffs: Sequence[float] = SPAM_CUTOFFS
) -> list[tuple[float, int, int]]:
    """(cut-off, ham flagged as spam, spam missed) at each spam cut-off on P(spam)."""
    positive = np.array([label == "spam" for label in labels], dtype=bool)
    probs = np.asarray(probs)
    return [(c, int(((probs >= c) & ~positive).sum()), int(((probs < c) & positive).sum())) for c in cutoffs]


def ham_sweep(labels: Sequence[str], probs: np.ndarray, cutoffs: Sequence[float] = HAM_CUTOFFS) -> list[tuple[float, int, int]]:
    """(cut-off, spam passed as ham, ham not passed as ham) at each ham cut-off on P(spam)."""
    positive = np.array([label == "spam" for label in labels], dtype=bool)
    probs = np.asarray(probs)
    return [(c, int(((probs <= c) & positive).sum()), int(((probs > c) & ~positive).sum())) for c in cutoffs]


def with_cutoff(cutoffs: Sequence[float], cutoff: float) -> list[float]:
    """The sweep's cut-offs and the one in use, in order."""
    return sorted({*cutoffs, cutoff})


def parse_bar(text: str, option: str = "--fail-under") -> tuple[str, float]:
    """`METRIC=VALUE` of `--fail-under` or `--fail-over`; an unknown METRIC is an error."""
    name, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"{option} wants METRIC=VALUE, got {text!r}")
    name = name.strip()
    if name not in metric_names():
        raise ValueError(f"{option}: unknown metric {name!r}; known: {', '.join(sorted(metric_names()))}")
    try:
        return name, float(value)
    except ValueError as err:
        raise ValueError(f"{option} {text!r}: {value!r} is not a number") from err


def failed_bars(report: Report, bars: Sequence[tuple[str, float]], ceilings: Sequence[tuple[str, float]] = ()) -> list[str]:
    """One line per metric below its bar (`--fail-under`) or above its ceiling (`--fail-over`);
    unknown metric names are an error."""
    values = report.as_dict()
    failures = []
    for (name, limit), under in [*((b, True) for b in bars), *((c, False) for c in ceilings)]:
        if name not in values:
            raise ValueError(f"{'--fail-under' if under else '--fail-over'}: unknown metric {name!r}; known: {', '.join(sorted(values))}")
        value = values[name]
        word = "bar" if under else "ceiling"
        if value is None:
            failures.append(f"{name} is undefined on this mail, so it cannot be held to the {word} {limit:g}")
        elif under and not value >= limit:
            failures.append(f"{name} = {value:.6g} is under the bar {limit:g}")
        elif not under and not value <= limit:
            failures.append(f"{name} = {value:.6g} is over the ceiling {limit:g}")
    return failures
