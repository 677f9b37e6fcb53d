"""Naive Bayes on sufficient statistics: count, then smooth, then score.

The counts (messages, token occurrences and message frequencies per class) are the
whole model; the Bernoulli and multinomial event models are two ways of smoothing
and scoring the same counts.  Scoring is linear: log-odds = x . w + b.

This module imports numpy only: the one-message pipe path uses it without scipy.
Matrices passed in may be numpy arrays or scipy sparse matrices alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

HAM, SPAM = 0, 1
CLASSES = ("ham", "spam")


@dataclass
class Counts:
    """Per-class statistics: `docs` (2,), `tf` and `df` (2, V), all int64."""

    docs: np.ndarray
    tf: np.ndarray
    df: np.ndarray

    @classmethod
    def empty(cls, n_features: int = 0) -> Counts:
        return cls(np.zeros(2, np.int64), np.zeros((2, n_features), np.int64), np.zeros((2, n_features), np.int64))

    @property
    def n_features(self) -> int:
        return self.tf.shape[1]

    def grow(self, n_features: int) -> None:
        """Make room for new vocabulary columns (amortised doubling)."""
        have = self.tf.shape[1]
        if n_features <= have:
            return
        pad = ((0, 0), (0, n_features - have))
        self.tf = np.pad(self.tf, pad)
        self.df = np.pad(self.df, pad)

    def add(self, X: Any, y: np.ndarray, sign: int = 1) -> None:
        """Add (sign=1) or subtract (sign=-1) the count rows X with labels y (0 ham, 1 spam)."""
        y = np.asarray(y)
        self.grow(X.shape[1])
        for cls in (HAM, SPAM):
            rows = X[y == cls]
            if rows.shape[0] == 0:
                continue
            width = rows.shape[1]
            self.docs[cls] += sign * rows.shape[0]
            self.tf[cls, :width] += sign * np.asarray(rows.sum(axis=0)).ravel().astype(np.int64)
            self.df[cls, :width] += sign * np.asarray((rows > 0).sum(axis=0)).ravel().astype(np.int64)
        if sign < 0:
            # Forgetting after pruning can take a count below zero; zero is the truth.
            np.maximum(self.tf, 0, out=self.tf)
            np.maximum(self.df, 0, out=self.df)
            np.maximum(self.docs, 0, out=self.docs)

    def add_flat(self, cols: np.ndarray, counts: np.ndarray, lengths: np.ndarray, classes: np.ndarray, signs: np.ndarray) -> None:
        """Add or subtract rows given flat: row i is `lengths[i]` distinct columns with their counts,
        learnt as `classes[i]` with sign `signs[i]`.  Same result as `add` on the matrix, without scipy."""
        self.grow(int(cols.max()) + 1 if cols.size else 0)
        V = self.n_features
        entry_class = np.repeat(classes, lengths)
        entry_sign = np.repeat(signs, lengths)
        for cls in (HAM, SPAM):
            pick = entry_class == cls
            rows = classes == cls
            if not rows.any():
                continue
            c, s = cols[pick], entry_sign[pick]
            self.docs[cls] += int(signs[rows].sum())
            self.tf[cls] += np.bincount(c, weights=s * counts[pick], minlength=V).astype(np.int64)
            self.df[cls] += np.bincount(c, weights=s, minlength=V).astype(np.int64)
        if (signs < 0).any():
            np.maximum(self.tf, 0, out=self.tf)
            np.maximum(self.df, 0, out=self.df)
            np.maximum(self.docs, 0, out=self.docs)

    def __sub__(self, other: Counts) -> Counts:
        return Counts(self.docs - other.docs, self.tf - other.tf, self.df - other.df)


def class_log_prior(counts: Counts) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(counts.docs) - np.log(counts.docs.sum())


@dataclass(frozen=True)
class Multinomial:
    """Token occurrences: p(token | class) = (tf + alpha) / (tokens in class + alpha V)."""

    alpha: float = 1.0
    name: str = "multinomial"

    def feature_log_prob(self, counts: Counts, cols: np.ndarray | None = None) -> np.ndarray:
        tf = counts.tf if cols is None else counts.tf[:, cols]
        total = counts.tf.sum(axis=1, keepdims=True) + self.alpha * counts.n_features
        return np.log(tf + self.alpha) - np.log(total)

    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        flp = self.feature_log_prob(counts, cols)
        prior = class_log_prior(counts)
        return flp[SPAM] - flp[HAM], float(prior[SPAM] - prior[HAM])

    def prepare(self, X: Any) -> Any:
        return X


@dataclass(frozen=True)
class Bernoulli:
    """Token presence: p(token | class) = (df + alpha) / (messages in class + 2 alpha)."""

    alpha: float = 1.0
    name: str = "bernoulli"

    def feature_log_prob(self, counts: Counts, cols: np.ndarray | None = None) -> np.ndarray:
        df = counts.df if cols is None else counts.df[:, cols]
        return np.log(df + self.alpha) - np.log(counts.docs[:, None] + 2 * self.alpha)

    def absent_log_prob(self, counts: Counts) -> np.ndarray:
        """Sum over the whole vocabulary of log(1 - p): the score of an empty message."""
        p = (counts.df + self.alpha) / (counts.docs[:, None] + 2 * self.alpha)
        return np.log1p(-p).sum(axis=1)

    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        df = counts.df if cols is None else counts.df[:, cols]
        denom = counts.docs[:, None] + 2 * self.alpha
        log_p = np.log(df + self.alpha) - np.log(denom)
        log_not_p = np.log(denom - df - self.alpha) - np.log(denom)
        per_class = log_p - log_not_p
        const = self.absent_log_prob(counts) + class_log_prior(counts)
        return per_class[SPAM] - per_class[HAM], float(const[SPAM] - const[HAM])

    def prepare(self, X: Any) -> Any:
        return (X > 0).astype(np.float64)


EventModel = Multinomial | Bernoulli
EVENT_MODELS: dict[str, type[EventModel]] = {"multinomial": Multinomial, "bernoulli": Bernoulli}


def event_model(name: str, alpha: float) -> EventModel:
    if name not in EVENT_MODELS:
        raise ValueError(f"unknown event model {name!r}; choose from {', '.join(EVENT_MODELS)}")
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, not {alpha}")
    return EVENT_MODELS[name](alpha)


def joint_log_likelihood(model: EventModel, counts: Counts, X: Any) -> np.ndarray:
    """log P(class) + log P(x | class) for each row of X: shape (n, 2), columns ham, spam."""
    flp = model.feature_log_prob(counts)
    prior = class_log_prior(counts)
    Xp = model.prepare(X)
    if isinstance(model, Bernoulli):
        neg = np.log1p(-np.exp(flp))
        return np.asarray(Xp @ (flp - neg).T) + neg.sum(axis=1) + prior
    return np.asarray(Xp @ flp.T) + prior


def log_odds(model: EventModel, counts: Counts, X: Any) -> np.ndarray:
    """log P(spam | x) - log P(ham | x) for each row of X."""
    w, b = model.weights(counts)
    return np.asarray(model.prepare(X) @ w).ravel() + b


def check_trained(counts: Counts) -> None:
    missing = [CLASSES[c] for c in (HAM, SPAM) if counts.docs[c] == 0]
    if missing:
        raise ValueError(f"the model has no {' and no '.join(missing)} messages yet: train it on both classes")
