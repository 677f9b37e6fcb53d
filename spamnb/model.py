"""The model in memory: tokeniser settings, scoring defaults, vocabulary, counts, digests."""
from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from spamnb import nb
from spamnb.features import GrowingSorted, SortedTokens, Vocabulary
from spamnb.tokens import TokenSettings

VERDICTS = ("ham", "unsure", "spam")


@dataclass(frozen=True)
class Scoring:
    """How counts become a verdict; stored in the model as its defaults."""

    event: str = "multinomial"
    alpha: float = 1.0
    spam_cutoff: float = 0.9
    ham_cutoff: float = 0.1

    def __post_init__(self) -> None:
        nb.event_model(self.event, self.alpha)  # validates both
        if not 0.0 <= self.ham_cutoff <= self.spam_cutoff <= 1.0:
            raise ValueError(f"need 0 <= ham cut-off <= spam cut-off <= 1, got {self.ham_cutoff}, {self.spam_cutoff}")

    def event_model(self) -> nb.EventModel:
        return nb.event_model(self.event, self.alpha)

    def verdict(self, score: float) -> str:
        if score >= self.spam_cutoff:
            return "spam"
        if score <= self.ham_cutoff:
            return "ham"
        return "unsure"

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Scoring:
        return cls(**json.loads(text))


def probability(log_odds: float) -> float:
    """P(spam) from log-odds, without overflow at either end."""
    if log_odds >= 0:
        return 1.0 / (1.0 + math.exp(-log_odds))
    e = math.exp(log_odds)
    return e / (1.0 + e)


def probabilities(log_odds: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -log_odds))


@dataclass
class Model:
    tokens: TokenSettings = field(default_factory=TokenSettings)
    scoring: Scoring = field(default_factory=Scoring)
    vocab: Vocabulary | SortedTokens | GrowingSorted = field(default_factory=Vocabulary)
    counts: nb.Counts = field(default_factory=nb.Counts.empty)
    # message digest -> class (nb.HAM / nb.SPAM) of every message learnt
    learnt: dict[bytes, int] = field(default_factory=dict)
    # Opened for scoring only (learnt digests not read, arrays mapped read-only): never saved.
    scoring_only: bool = False

    def growable(self) -> Vocabulary:
        if isinstance(self.vocab, GrowingSorted):
            self.vocab = self.vocab.materialize()
        if isinstance(self.vocab, SortedTokens):
            text = self.vocab.data().decode("utf-8", "surrogatepass")
            self.vocab = Vocabulary(text.split("\n") if text else [], sorted_prefix=len(self.vocab))
        return self.vocab

    def learnable(self) -> Vocabulary | GrowingSorted:
        """A vocabulary to learn into: grows on the sorted tokens without reading them all."""
        if isinstance(self.vocab, SortedTokens):
            self.vocab = GrowingSorted(self.vocab)
        return self.vocab

    def weights(self, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        nb.check_trained(self.counts)
        return self.scoring.event_model().weights(self.counts, cols)

    def explain(self, tokens: list[str]) -> Explanation:
        """One message's log-odds, token by token, without touching the rest of the vocabulary."""
        distinct = Counter(tokens)
        cols = np.asarray(self.vocab.lookup(distinct), dtype=np.int64)
        known = cols >= 0
        names = [t for t, k in zip(distinct, known, strict=True) if k]
        cols = cols[known]
        x = np.fromiter(distinct.values(), dtype=np.float64, count=len(distinct))[known]
        w, b = self.weights(cols)
        x = np.asarray(self.scoring.event_model().prepare(x), dtype=np.float64)
        return Explanation(names, cols, x, w * x, b)


@dataclass(frozen=True)
class Explanation:
    """Per known token: its column, its count in the message and its share of the log-odds."""

    tokens: list[str]
    cols: np.ndarray
    counts: np.ndarray
    contributions: np.ndarray
    bias: float

    @property
    def log_odds(self) -> float:
        return float(self.contributions.sum() + self.bias)
