"""The model in memory: tokeniser settings, scoring defaults, vocabulary, counts, digests."""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, NamedTuple

import numpy as np

from spamnb.bayes import events, meta, nb
from spamnb.bayes.vocabulary import ModelVocabulary, Rows, SortedTokens, Vocabulary
from spamnb.models import scoring
from spamnb.text.tokens import TokenSettings, field_ids


class Scoring(scoring.Scoring):
    """`scoring.Scoring` (the one verdict rule) checked against the event models, with
    what needs numpy: the event model itself and P(spam) of many log-odds at once."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Scoring:
        self = super().__new__(cls, *args, **kwargs)
        events.event_model(self.event, self.alpha, self.weighting())  # validates all three
        return self

    def weighting(self) -> nb.Weighting:
        return nb.Weighting(self.tf, bool(self.idf), self.length_norm)

    def event_model(self) -> nb.EventModel:
        return events.event_model(self.event, self.alpha, self.weighting())

    def probabilities(self, log_odds: np.ndarray) -> np.ndarray:
        a, b = self.calibration
        return probabilities(a * np.asarray(log_odds, dtype=np.float64) + b)


def fit_meta_weight(log_odds: np.ndarray, ratios: np.ndarray, positive: np.ndarray, iterations: int = 100) -> float:
    """The weight w of the numeric features' log-ratios m (spamnb.bayes.meta) beside the text's
    log-odds z, both held out: c / a of the logistic regression P = sigmoid(a z + c m + b)
    (Platt's smoothed targets, by Newton's method); 0 when m adds nothing (c <= 0).

    Naive Bayes would add m as it is (w = 1), as if the words said nothing about size,
    links or HTML; they do, and the text's log-odds are not in nats (Fisher's are not
    log-odds at all), so the weight is measured instead.
    """
    z, m = np.asarray(log_odds, dtype=np.float64), np.asarray(ratios, dtype=np.float64)
    pos = np.asarray(positive, dtype=bool)
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return 1.0
    t = np.where(pos, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    x = np.column_stack([z, m, np.ones_like(z)])
    beta = np.array([1.0 / max(float(np.std(z)), 1e-6), 0.0, 0.0])

    def loss(beta: np.ndarray) -> float:
        s = x @ beta
        return float(np.sum(t * np.logaddexp(0.0, -s) + (1 - t) * np.logaddexp(0.0, s)))

    for _ in range(iterations):
        p = probabilities(x @ beta)
        w = np.maximum(p * (1 - p), 1e-12)
        step = np.linalg.solve((x * w[:, None]).T @ x + 1e-9 * np.eye(3), x.T @ (p - t))
        scale, before = 1.0, loss(beta)
        while scale > 1e-6 and loss(beta - scale * step) > before:
            scale /= 2
        beta = beta - scale * step
        if np.abs(scale * step).max() < 1e-10:
            break
    a, c, _ = beta
    if not (np.isfinite(a) and np.isfinite(c) and a > 0):
        return 1.0
    return max(float(c / a), 0.0)


def probabilities(log_odds: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -log_odds))


def summed_with(tokens: TokenSettings, scoring: Scoring) -> tuple[str, str, str]:
    """What a model's counts were summed with, as train's options say it: counts summed
    otherwise do not add (`merge`), and a trained model cannot change it (the messages
    it learnt are not kept, to be summed again)."""
    return f"tokeniser settings {tokens.to_json()}", scoring.weighting().as_options(), f"--meta {scoring.meta}"


class Scored(NamedTuple):
    """One message's result: its id and label (if any), log-odds, P(spam) and verdict;
    `floor`: the ham-loss floor's P where the floor, not the spam cut-off, decided it
    (scoring.Decision)."""

    id: str
    label: str | None
    log_odds: float
    score: float
    verdict: str
    floor: float | None = None


class Model:
    """Tokeniser settings, scoring defaults, vocabulary and counts: what a model file holds.

    `vocab`: a `ModelVocabulary`, whatever the model was opened for (its `state` says how far
    it was read: the file's sorted tokens, growing on them, a dictionary).
    `learnt` maps the digest of every message learnt to its class (nb.HAM / nb.SPAM).
    `moments`: the numeric features' moments per class (spamnb.bayes.meta), int64 (2, WIDTH, WIDTH).
    `history`: the calibration's history (spamnb.models.calibration), (log-odds, class) pairs.
    `scoring_only`: opened for scoring only (learnt digests not read, arrays mapped
    read-only), never saved.  (A plain class: see nb.Counts.)
    """

    def __init__(
        self,
        tokens: TokenSettings | None = None,
        scoring: Scoring | None = None,
        vocab: ModelVocabulary | Vocabulary | SortedTokens | None = None,
        counts: nb.Counts | None = None,
        learnt: dict[bytes, int] | None = None,
        scoring_only: bool = False,
        moments: np.ndarray | None = None,
        history: list[tuple[float, int]] | None = None,
    ) -> None:
        self.tokens = tokens if tokens is not None else TokenSettings()
        self.scoring = scoring if scoring is not None else Scoring()
        self.vocab = ModelVocabulary.of(vocab) if vocab is not None else ModelVocabulary()
        self.counts = counts if counts is not None else nb.Counts.empty(weighting=self.scoring.weighting())
        self.learnt = learnt if learnt is not None else {}
        self.scoring_only = scoring_only
        self.moments = moments if moments is not None else np.zeros((2, meta.WIDTH, meta.WIDTH), np.int64)
        self.history = history if history is not None else []

    def gaussians(self) -> meta.Gaussians:
        """The numeric features' term as the model's scoring sets it."""
        return meta.Gaussians(self.scoring.meta, self.moments.tolist(), self.scoring.meta_weight)

    def growable(self) -> Vocabulary:
        """The vocabulary as a dictionary (`ModelVocabulary.dictionary`): batch scoring, training."""
        return self.vocab.dictionary()

    def learnable(self) -> ModelVocabulary:
        """The vocabulary to learn into: grows on the sorted tokens without reading them all."""
        return self.vocab

    def prune(self, pruning: nb.Pruning) -> int:
        """Drop the tokens `pruning` does not keep; returns how many were dropped."""
        if not pruning:
            return 0
        vocab = self.growable()
        self.counts.grow(len(vocab))
        order = vocab.sorted_order()  # columns in token order: ties at the cap break the same way on every path
        counts = self.counts.take(order)
        keep = pruning.keep(counts)
        dropped = counts.n_features - keep.size
        if dropped:
            tokens = [vocab.tokens[i] for i in order[keep]]
            self.vocab = ModelVocabulary(full=Vocabulary(tokens, sorted_prefix=len(tokens)))
            self.counts = counts.take(keep)
        return dropped

    def weights(self, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """Each token's own evidence for spam (for listing and explaining)."""
        nb.check_trained(self.counts)
        return self.scoring.event_model().weights(self.counts, cols)

    def table(self, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """What scoring sums per token, and its constant (nb.EventModel.table)."""
        nb.check_trained(self.counts)
        return self.scoring.event_model().table(self.counts, cols)

    def duplicate_keys(self, cols: np.ndarray | None = None) -> np.ndarray:
        """The tokens' duplicate-evidence keys (nb.duplicate_keys) from the event model's own minimum."""
        return nb.duplicate_keys(self.counts, cols, self.scoring.event_model().duplicate_min)

    def counted(self, tokens: list[str]) -> np.ndarray:
        """Which of `tokens` scoring counts (nb.EventModel.counted)."""
        event = self.scoring.event_model()
        return event.counted(field_ids(tokens)) if event.by_field else np.ones(len(tokens), bool)

    def explain(self, tokens: list[str] | Counter[str], numeric: list[int] | None = None) -> Explanation:
        """One message's verdict token by token (nb.EventModel.explain), on the scale of its
        calibrated P(spam): each share times the calibration's slope a, and the rest with
        its offset b added, sum to a log-odds + b = ln(P / (1 - P)).  Reads only the
        message's own tokens of the vocabulary.  With its numeric features `numeric`
        (tokens.message_features), their shares too, where the model scores them."""
        distinct = Counter(tokens)
        every = np.asarray(self.vocab.lookup(distinct), dtype=np.int64)
        known = every >= 0
        names = [t for t, k in zip(distinct, known, strict=True) if k]
        cols = every[known]
        counts = np.fromiter(distinct.values(), dtype=np.int64, count=len(distinct))
        event = self.scoring.event_model()
        table, b = self.table(cols)
        keys = self.duplicate_keys(cols)
        # As batch scoring scores it: the table covers the message's known tokens only.
        local = np.where(known, np.cumsum(known) - 1, -1)
        fields = field_ids(list(distinct)) if event.by_field else None
        rows = Rows(local, counts, np.array([len(distinct)]), fields)
        terms = self.gaussians().contributions(numeric) if numeric is not None else []
        log_odds = float(event.log_odds(table, b, rows, keys)[0]) + math.fsum(terms)
        shares, rest = event.explain(table, b, rows, keys)
        a, offset = self.scoring.calibration
        return Explanation(
            names, cols, counts[known], a * shares[known], a * rest + offset, log_odds, int((~known).sum()), numeric, tuple(a * t for t in terms)
        )


class Explanation(NamedTuple):
    """One message's verdict on the scale of its calibrated P(spam), the logit
    ln(P / (1 - P)): per known token, its column, its count in the message and its share
    of the logit (0 for one scoring does not count); the rest, which no token carries
    (the prior, absent tokens, the calibration's offset); the raw log-odds (as
    `classify --json` gives them); how many distinct tokens were unknown."""

    tokens: list[str]
    cols: np.ndarray
    counts: np.ndarray
    contributions: np.ndarray
    rest: float
    log_odds: float
    unknown: int = 0  # distinct tokens the model has never seen (Fisher: neutral evidence)
    numeric: list[int] | None = None  # the message's numeric features (fixed point), where scored
    numeric_terms: tuple[float, ...] = ()  # their shares of the logit (spamnb.bayes.meta), in meta.NAMES' order

    @property
    def logit(self) -> float:
        return float(self.contributions.sum() + self.rest) + math.fsum(self.numeric_terms)
