"""Numeric message features joined to the text model: the mixed naive Bayes.

A message's features (`tokens.message_features`, in the fixed point FEATURE_SCALE) are
modelled per class as Gaussians, independent (`gaussian`, as scikit-learn's GaussianNB)
or sharing one covariance (`gda`, as its LinearDiscriminantAnalysis); scoring adds
log N(x | spam) - log N(x | ham), times a weight fitted with the calibration
(`model.fit_meta_weight`: naive Bayes' plain sum outvotes the words), to the text
model's log-odds before calibration.

The model keeps per class the moments of [1, q]: messages, sums and sums of products, as
exact integers, so that learning, forgetting, merging and the journal add and subtract
them in any order with the same result.  No numpy: the one-message pipe scores with it.
"""
from __future__ import annotations

import math

from spamnb.text.tokens import FEATURE_SCALE

KINDS = ("none", "gaussian", "gda")
NAMES = ("size", "header fields", "recipients", "links", "html share", "capitals share")
WIDTH = len(NAMES) + 1  # the moments of [1, q]: (2, WIDTH, WIDTH)
# Each variance (and GDA's covariance) has VAR_SMOOTHING times the largest variance of a
# feature over all messages added, as GaussianNB's var_smoothing; and it is first shrunk
# toward that feature's variance over all messages, as if PRIOR_MESSAGES more messages had
# it: a feature that a few hundred messages of one class happen to share (one recipient
# each) must not make a second recipient worth dozens of nats.
VAR_SMOOTHING = 0.01
PRIOR_MESSAGES = 10
# Fewer messages of either class and the features say nothing (a log-ratio of 0).
MIN_MESSAGES = 2
# The smoothing where no feature varies at all (a few copies of one message): the
# variance of the rounding to fixed point.
MIN_VARIANCE = 1 / (12 * FEATURE_SCALE * FEATURE_SCALE)


def empty_moments() -> list[list[list[int]]]:
    return [[[0] * WIDTH for _ in range(WIDTH)] for _ in range(2)]


def add_message(moments: list[list[list[int]]], cls: int, q: list[int], sign: int = 1) -> None:
    """Add (sign 1) or take away (sign -1) one message's features `q` as class `cls`."""
    v = [1, *q]
    m = moments[cls]
    for i, vi in enumerate(v):
        row = m[i]
        for j, vj in enumerate(v):
            row[j] += sign * vi * vj


class Gaussians:
    """The class-conditional Gaussians of a model's feature moments, ready to score."""

    def __init__(
        self, kind: str, moments: list[list[list[int]]], weight: float = 1.0, smoothing: float = VAR_SMOOTHING, prior: float = PRIOR_MESSAGES
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown --meta {kind!r}; choose from {', '.join(KINDS)}")
        n = [moments[c][0][0] for c in (0, 1)]
        self.kind = "none" if min(n) < MIN_MESSAGES else kind
        self.weight = weight
        # Per feature: the term's constant, and the weights of (x - mean)^2 in ham and in spam
        # (gaussian), or of x itself (gda, whose squares cancel).
        self.terms: list[tuple[float, float, float, float]] = []
        self.means: list[list[float]] = [[], []]
        if self.kind == "none":
            return
        f = WIDTH - 1
        total = [[moments[0][i][j] + moments[1][i][j] for j in range(WIDTH)] for i in range(WIDTH)]
        var_all = [max(scatter(total, i, i), 0.0) for i in range(1, WIDTH)]
        top = max(var_all)
        eps = smoothing * top if top > 0 else MIN_VARIANCE
        self.means = [[moments[c][0][j] / (n[c] * FEATURE_SCALE) for j in range(1, WIDTH)] for c in (0, 1)]
        ham, spam = self.means
        if self.kind == "gaussian":
            var = [[(n[c] * max(scatter(moments[c], j + 1, j + 1), 0.0) + prior * var_all[j]) / (n[c] + prior) + eps for j in range(f)] for c in (0, 1)]
            self.terms = [(0.5 * (math.log(var[0][j]) - math.log(var[1][j])), 0.5 / var[0][j], 0.5 / var[1][j], 0.0) for j in range(f)]
            return
        # GDA: one covariance, the classes' scatter pooled over all messages.
        both = n[0] + n[1]
        cov = [
            [
                (n[0] * scatter(moments[0], i, j) + n[1] * scatter(moments[1], i, j) + (prior * var_all[i - 1] if i == j else 0.0)) / (both + prior)
                + (eps if i == j else 0.0)
                for j in range(1, WIDTH)
            ]
            for i in range(1, WIDTH)
        ]
        w = cholesky_solve(cov, [spam[j] - ham[j] for j in range(f)])
        self.terms = [(-w[j] * (ham[j] + spam[j]) / 2, 0.0, 0.0, w[j]) for j in range(f)]

    def contributions(self, q: list[int]) -> list[float]:
        """Per feature, its share of log N(x | spam) - log N(x | ham) for one message's
        features `q` (fixed point), times the term's weight; nothing when the term is off."""
        if self.kind == "none":
            return []
        out = []
        for v, (const, ih, is_, w), mh, ms in zip(q, self.terms, *self.means, strict=True):
            x = v / FEATURE_SCALE
            out.append(self.weight * (const + w * x + (x - mh) ** 2 * ih - (x - ms) ** 2 * is_))
        return out

    def log_ratio(self, q: list[int]) -> float:
        """log N(x | spam) - log N(x | ham) of one message's features `q` (fixed point), times the weight."""
        return math.fsum(self.contributions(q))


def scatter(m: list[list[int]], i: int, j: int) -> float:
    """The (biased) covariance of features i and j (1-based columns of the moments), exact
    until the one division."""
    n = m[0][0]
    return (n * m[i][j] - m[0][i] * m[0][j]) / (n * n * FEATURE_SCALE * FEATURE_SCALE)


def cholesky_solve(a: list[list[float]], b: list[float]) -> list[float]:
    """x with a x = b, for a symmetric positive definite `a`."""
    k = len(a)
    low = [[0.0] * k for _ in range(k)]
    for i in range(k):
        for j in range(i + 1):
            s = a[i][j] - math.fsum(low[i][t] * low[j][t] for t in range(j))
            if i == j and not s > 0:
                # Moments of real mail always give one; a damaged model file may not.
                raise ValueError("numeric features' moments that no mail could have")
            low[i][j] = math.sqrt(s) if i == j else s / low[j][j]
    y = [0.0] * k
    for i in range(k):
        y[i] = (b[i] - math.fsum(low[i][t] * y[t] for t in range(i))) / low[i][i]
    x = [0.0] * k
    for i in reversed(range(k)):
        x[i] = (y[i] - math.fsum(low[t][i] * x[t] for t in range(i + 1, k))) / low[i][i]
    return x
