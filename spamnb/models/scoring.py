"""How a message's log-odds become P(spam) and a verdict: the one verdict rule.

Plain Python (no numpy), so that the one-message pipe and a server decide as batch
classify, eval and inspect do.  `model.Scoring` adds what needs the event models.
"""
from __future__ import annotations

import json
import math
from collections import namedtuple

from spamnb.bayes import formulas, meta
from spamnb.models import trust
from spamnb.models.calibration import probability

# `typing` is off the one-message pipe's start-up: names for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# (event, alpha, spam_cutoff, ham_cutoff, calibration, spam_floor, tf, idf, length_norm, meta,
# meta_weight, spam_cutoff_set).
# Calibrated P(spam) cut-offs: spam at >= 0.95 reads "flag when a lost ham is 20x costlier
# than a missed spam" (docs/measurements.md).  `spam_floor`, fitted with the calibration:
# the default's spam verdict also needs P above it, so that the ham it loses stays within
# calibration.HAM_LOSS of the ham.  `spam_cutoff_set`: the spam cut-off is one the user set
# (`--spam-cutoff`), which is the cut-off: the floor protects the default only.
# TF-IDF weighting and length normalisation (nb.Weighting): multinomial and complement only.
# `meta`: the numeric features' term (spamnb.meta), its weight fitted with the calibration.
ScoringFields = namedtuple(  # collections', not typing's: see TYPE_CHECKING
    "ScoringFields",
    ("event", "alpha", "spam_cutoff", "ham_cutoff", "calibration", "spam_floor", "tf", "idf", "length_norm", "meta", "meta_weight", "spam_cutoff_set"),
    defaults=("fisher", None, 0.95, 0.1, (1.0, 0.0), 0.0, "presence", False, "none", "none", 1.0, False),
)
# Saved only when not as here, so that a model without them is saved as before they were.
OPTIONAL = {"meta": "none", "spam_cutoff_set": False}


class CutoffError(ValueError):
    """Cut-offs that do not leave ham's at or below spam's, both P(spam)s."""


# One message's verdict; `floor`: the ham-loss floor's P where the floor, not the spam
# cut-off, kept it from spam (P at or above the cut-off, not above the floor), else None.
Decision = namedtuple("Decision", ("verdict", "floor"))


class Scoring(ScoringFields):
    """How counts become a verdict; stored in the model as its defaults.

    `alpha` None means the event model's measured default.  `calibration` (a, b) maps
    log-odds to P(spam) = 1 / (1 + exp(-(a log-odds + b))): Platt scaling, fitted when
    training on held-out log-odds, since raw naive Bayes and Fisher log-odds are far too
    sure of themselves.
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Scoring:
        self = super().__new__(cls, *args, **kwargs)
        if self.alpha is not None:
            trust.check_alpha(float(self.alpha))
        check_cutoffs(self.spam_cutoff, self.ham_cutoff)
        if not 0.0 <= self.spam_floor <= 1.0:
            raise ValueError(f"the spam floor is a probability, not {self.spam_floor}")
        if self.meta not in meta.KINDS:
            raise ValueError(f"unknown --meta {self.meta!r}; choose from {', '.join(meta.KINDS)}")
        trust.check_weight(self.meta_weight)
        a, b = self.calibration
        if not (math.isfinite(a) and math.isfinite(b) and a > 0):
            raise ValueError(f"calibration needs a positive finite slope and a finite offset, got {a}, {b}")
        if self.spam_cutoff_set not in (False, True):
            raise ValueError(f"spam_cutoff_set is true or false, not {self.spam_cutoff_set!r}")
        formulas.check_weighting(self.event, self.tf, self.idf, self.length_norm)
        return self._replace(calibration=(float(a), float(b)), spam_cutoff_set=bool(self.spam_cutoff_set))

    def replace(self, **changes: Any) -> Scoring:
        """This scoring with some settings changed, checked like a new one (`_replace` is not)."""
        return type(self)(**{**self._asdict(), **changes})

    def with_cutoffs(self, spam: float | None, ham: float | None) -> Scoring:
        """This scoring with the cut-offs a user gave (None: the model's).  A spam cut-off
        given is the cut-off: the ham-loss floor no longer applies (bogofilter's -o)."""
        if spam is None and ham is None:
            return self
        check_cutoffs(self.spam_cutoff if spam is None else spam, self.ham_cutoff if ham is None else ham)
        changes: dict[str, Any] = {} if spam is None else {"spam_cutoff": float(spam), "spam_cutoff_set": True}
        return self.replace(**changes, **({} if ham is None else {"ham_cutoff": float(ham)}))

    def probability(self, log_odds: float) -> float:
        """Calibrated P(spam), without overflow at either end."""
        a, b = self.calibration
        return probability(a * log_odds + b)

    def logit(self, log_odds: float) -> float:
        """ln(P / (1 - P)) of the calibrated P(spam): the scale `inspect --explain` shares out."""
        a, b = self.calibration
        return a * log_odds + b

    def log_odds_at(self, score: float) -> float:
        """The log-odds whose calibrated P(spam) is `score` (+-inf at 1 and 0)."""
        if score <= 0.0 or score >= 1.0:
            return math.inf if score >= 1.0 else -math.inf
        a, b = self.calibration
        return (math.log(score / (1.0 - score)) - b) / a

    def floor_applies(self) -> bool:
        """Whether the ham-loss floor is above the spam cut-off in use, and so sets the spam verdict."""
        return not self.spam_cutoff_set and self.spam_floor >= self.spam_cutoff

    def spam_threshold(self) -> tuple[float, bool]:
        """The P(spam) a spam verdict needs, and whether it is the floor's (then P must exceed it)."""
        return (self.spam_floor, True) if self.floor_applies() else (self.spam_cutoff, False)

    def decide(self, score: float) -> Decision:
        """The verdict on P(spam) `score`: spam at or above the spam cut-off (and, for the
        default cut-off, above the ham-loss floor), ham at or below the ham cut-off, else unsure."""
        floor = None
        if score >= self.spam_cutoff:
            if self.spam_cutoff_set or score > self.spam_floor:
                return Decision("spam", None)
            floor = self.spam_floor
        return Decision("ham" if score <= self.ham_cutoff else "unsure", floor)

    def verdict(self, score: float) -> str:
        return self.decide(score).verdict

    def to_json(self) -> str:
        data = self._asdict()
        for key, default in OPTIONAL.items():
            if data[key] == default:
                del data[key]
        if "meta" not in data:
            del data["meta_weight"]
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Scoring:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("scoring settings are not a JSON object")
        unknown = set(data) - set(cls._fields)
        if unknown:
            raise ValueError(f"unknown scoring settings: {', '.join(sorted(unknown))}")
        if "calibration" in data:
            data["calibration"] = tuple(data["calibration"])
        return cls(**data)


def check_cutoffs(spam: float, ham: float) -> None:
    """The one check of a pair of cut-offs, wherever they come from."""
    if not 0.0 <= ham <= spam <= 1.0:
        raise CutoffError(f"the ham cut-off ({ham:g}) must be at or below the spam cut-off ({spam:g}), both between 0 and 1")
