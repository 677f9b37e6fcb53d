"""The event models: multinomial, Bernoulli and complement naive Bayes, and Robinson-Fisher, each an
`nb.EventModel` over a whole vocabulary of counts: the numpy side of `spamnb.bayes.formulas`'
classes, whose parameters and formulas they run over arrays (`ARRAYS`).  Their measurements:
docs/measurements.md."""
from __future__ import annotations

from abc import abstractmethod
from types import SimpleNamespace

import numpy as np

from spamnb.bayes import formulas
from spamnb.bayes.chi2 import log_chi2_tails
from spamnb.bayes.nb import (
    DENSE_GROUPS,
    HAM,
    SPAM,
    UNWEIGHTED,
    WEIGHT_SCALE,
    Counts,
    Entries,
    EventModel,
    Tail,
    Weighting,
    class_log_prior,
    placed,
    row_sums,
    token_totals,
    used_columns,
)
from spamnb.bayes.vocabulary import Rows

# numpy as the formulas' array library, with the chi-square tails vectorised (`chi2`).
ARRAYS = SimpleNamespace(log=np.log, log1p=np.log1p, logaddexp=np.logaddexp, maximum=np.maximum, rint=np.rint, log_chi2_tails=log_chi2_tails)

EVENT_MODELS: dict[str, type[EventModel]] = {}


def register(cls: type[EventModel]) -> type[EventModel]:
    """Make `formulas.EVENTS`' event model of this name scorable in batches."""
    if not issubclass(cls, formulas.event_class(cls.name)):
        raise TypeError(f"{cls.__name__} is not the batch side of formulas' {cls.name!r}")
    EVENT_MODELS[cls.name] = cls
    return cls


def event_model(name: str, alpha: float | None = None, weighting: Weighting = UNWEIGHTED) -> EventModel:
    """The registered event model `name`, with `alpha` (None: its measured default) and
    `weighting` (only the occurrence models take one)."""
    if name not in EVENT_MODELS:
        raise ValueError(f"unknown event model {name!r}; choose from {', '.join(EVENT_MODELS)}")
    cls = EVENT_MODELS[name]
    formulas.check_weighting(name, *weighting)
    return cls(alpha, weighting=weighting) if weighting else cls(alpha)


class Linear(formulas.Linear, EventModel):
    """`formulas.Linear`: the table is the weights."""

    def table(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        return self.weights(counts, cols)

    @abstractmethod
    def feature_log_prob(self, counts: Counts, cols: np.ndarray | None = None) -> np.ndarray:
        """log p(token | class), (2, V): rows ham, spam (scikit-learn's `feature_log_prob_`)."""

    def combine(self, sums: np.ndarray, b: float, unknown: np.ndarray) -> np.ndarray:
        return np.asarray(sums, dtype=np.float64).ravel() + b

    def explain(self, table: np.ndarray, b: float, rows: Rows, keys: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """Each token's weight times its weight in the message; the rest is b (the prior, and
        for Bernoulli the absent tokens)."""
        e = self.entries(table, rows, keys)
        return placed(rows, np.ones(len(rows.cols), bool), e.x * e.per_entry.reshape(len(e.x))), b


class Occurrences(formulas.Occurrences, Linear):
    """`formulas.Occurrences`, with the `weighting` its counts were learnt with."""

    def __init__(self, alpha: float | None = None, boolean: bool = True, weighting: Weighting = UNWEIGHTED) -> None:
        super().__init__(alpha, boolean)
        self.weighting = weighting

    def occurrences(self, counts: Counts) -> np.ndarray:
        """Per class and token: the messages holding it (boolean) or its occurrences; with a
        weighting, the sums of its transformed frequencies, times its idf."""
        if not self.weighting:
            return counts.df if self.boolean else counts.tf
        if counts.weighted is None:
            raise ValueError("the model holds no weighted counts: train it with the weighting it scores with")
        weighted = counts.weighted / WEIGHT_SCALE
        return weighted * self.weighting.idf_of(counts) if self.weighting.idf else weighted

    def query_idf(self, counts: Counts, cols: np.ndarray | None) -> np.ndarray | float:
        """What a scored message's transformed frequencies are multiplied by: the tokens' idf, or 1."""
        if not self.weighting.idf:
            return 1.0
        idf = self.weighting.idf_of(counts)
        return idf if cols is None else idf[cols]

    def prepare(self, counts: np.ndarray) -> np.ndarray:
        return super().prepare(counts) if self.boolean else np.asarray(counts)

    def vocabulary_sums(self, counts: Counts) -> np.ndarray:
        """(2, 2): per class the sum over the vocabulary of what it counts, and of log(that +
        alpha): what the one-message scorer cannot sum for itself per message."""
        every = self.occurrences(counts)
        return np.column_stack((every.sum(axis=1), np.log(every + self.alpha).sum(axis=1)))

    def message_weights(self, counts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        if not self.weighting:
            return super().message_weights(counts, lengths)
        return self.weighting.entry_weights(counts, lengths)


@register
class Multinomial(formulas.Multinomial, Occurrences):
    """`formulas.Multinomial` over a vocabulary of counts."""

    def feature_log_prob(self, counts: Counts, cols: np.ndarray | None = None) -> np.ndarray:
        every = self.occurrences(counts)
        tf = every if cols is None else every[:, cols]
        total = every.sum(axis=1, keepdims=True) + self.alpha * counts.n_features
        return self.log_share(ARRAYS, tf, total)

    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        flp = self.feature_log_prob(counts, cols)
        prior = class_log_prior(counts)
        return (flp[SPAM] - flp[HAM]) * self.query_idf(counts, cols), float(prior[SPAM] - prior[HAM])


@register
class Bernoulli(formulas.Bernoulli, Linear):
    """`formulas.Bernoulli` over a vocabulary of counts."""

    def feature_log_prob(self, counts: Counts, cols: np.ndarray | None = None) -> np.ndarray:
        df = counts.df if cols is None else counts.df[:, cols]
        return self.log_p(ARRAYS, df, counts.docs[:, None] + 2 * self.alpha)

    def absent_log_prob(self, counts: Counts) -> np.ndarray:
        """Sum over the whole vocabulary of log(1 - p): the score of an empty message."""
        return self.absent(ARRAYS, counts.df, counts.docs[:, None] + 2 * self.alpha).sum(axis=1)

    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        df = counts.df if cols is None else counts.df[:, cols]
        per_class = self.presence_log_odds(ARRAYS, df, counts.docs[:, None] + 2 * self.alpha)
        const = self.absent_log_prob(counts) + class_log_prior(counts)
        return per_class[SPAM] - per_class[HAM], float(const[SPAM] - const[HAM])


@register
class Complement(formulas.Complement, Occurrences):
    """`formulas.Complement` over a vocabulary of counts."""

    def feature_log_prob(self, counts: Counts, cols: np.ndarray | None = None) -> np.ndarray:
        """scikit-learn's ComplementNB.feature_log_prob_ (rows ham, spam)."""
        every = self.occurrences(counts)
        other = every[::-1]  # row c: the counts of the class that is not c
        total = other.sum(axis=1, keepdims=True) + self.alpha * counts.n_features
        norm_sum = self.log_share(ARRAYS, other, total).sum(axis=1, keepdims=True) if self.norm else None
        return self.class_log_prob(ARRAYS, other if cols is None else other[:, cols], total, norm_sum)

    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        flp = self.feature_log_prob(counts, cols)
        return (flp[SPAM] - flp[HAM]) * self.query_idf(counts, cols), 0.0


@register
class Fisher(formulas.Fisher, EventModel):
    """`formulas.Fisher` over a batch: unseen tokens (unknown to the model, or learnt and
    forgotten) are `unknown_row`s of the table."""

    def token_prob(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """f(w) per token, and whether the token was ever seen (only those are evidence)."""
        df = (counts.df if cols is None else counts.df[:, cols]).astype(np.float64)
        docs = np.maximum(counts.docs, 1)
        seen = token_totals(df) > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            f = self.robinson(df[HAM], df[SPAM], docs[HAM], docs[SPAM])
        return np.where(seen, f, self.x), seen

    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """Each token's own evidence, log(f / (1 - f)): for listing and explaining, not scoring."""
        f, seen = self.token_prob(counts, cols)
        ln_f, ln_not_f = self.evidence(ARRAYS, f)
        return np.where(seen, ln_f - ln_not_f, 0.0), 0.0

    def table(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """(V, 3) columns ln f, ln(1 - f), 1; unseen tokens get `unknown_row`."""
        f, seen = self.token_prob(counts, cols)
        out = np.empty((f.shape[0], 3))
        for column, value in enumerate(self.unknown_row()):
            out[:, column] = value  # a column at a time: the whole row at once is a loop per token
        out[seen, 0], out[seen, 1] = self.evidence(ARRAYS, f[seen])
        out[seen, 2] = 1.0
        return out, 0.0

    def unknown_row(self) -> np.ndarray:
        """A token never seen counts as neutral evidence f = x, so that a message of mostly
        new words is less sure than one of the same known words alone (1-AUC 0.0366% ->
        0.0324% against dropping them)."""
        return np.array([*self.evidence(ARRAYS, self.x), 1.0])

    def tests(self, tokens: np.ndarray) -> np.ndarray:
        """`test_count` of each field's tokens, 0 for none."""
        tokens = np.asarray(tokens, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.where(tokens > 0, self.test_count(ARRAYS, tokens), 0.0)

    def counted(self, fields: np.ndarray) -> np.ndarray:
        """All but the tokens of a list server's fields (tokens.NOT_EVIDENCE): they say which
        list, not whether spam, and one list's many fields outvoted the body."""
        return np.asarray(fields) >= 0

    def log_odds(self, table: np.ndarray, b: float, rows: Rows, keys: np.ndarray | None = None) -> np.ndarray:
        """As `EventModel.log_odds`; where `rows` carry fields, each field's tokens are
        tests apart and only the `counted` fields' tokens count."""
        if rows.fields is None:
            return super().log_odds(table, b, rows, keys)
        counted = self.counted(rows.fields)
        e = self.entries(table, rows, keys, None if counted.all() else counted)
        return self.by_fields(e, b, len(rows.lengths))

    def explain(self, table: np.ndarray, b: float, rows: Rows, keys: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """Fisher's combining is not a sum, so its chi-square part is shared out: each token
        pulls the two sums it combines (of ln f and of ln(1 - f), scaled by its field's
        tests) away from neutral evidence f = x; each sum's part is its Shapley value
        (`shapley_parts`), shared among the tokens in proportion to their pulls on it
        (`token_shares`).  The combining grows with the first sum and falls
        with the second, so each token's share has the sign of its own evidence.  The mean
        part (`mean_weight`) is a sum already.  The rest: a message of neutral tokens (b)."""
        log_odds = float(self.log_odds(table, b, rows, keys)[0])
        kept = np.ones(len(rows.cols), bool) if rows.fields is None else self.counted(rows.fields)
        e = self.entries(table, rows, keys, kept)
        fields = np.zeros(len(e.x), np.int64) if e.fields is None else e.fields
        unknown = np.zeros(len(e.unknown_rows), np.int64) if e.unknown_fields is None else e.unknown_fields
        width = int(max(fields.max(initial=0), unknown.max(initial=0))) + 1
        tokens = np.bincount(fields, weights=e.x, minlength=width) + np.bincount(unknown, minlength=width)
        tests = self.tests(tokens)
        n = float(tests.sum())
        if n == 0:
            return np.zeros(len(rows.cols)), log_odds
        with np.errstate(invalid="ignore", divide="ignore"):
            factor = np.where(tokens > 0, tests / tokens, 0.0)
        neutral = self.unknown_row()[:2]
        pulls = (e.x * factor[fields])[:, None] * (e.per_entry[:, :2] - neutral)  # (tokens, 2)
        pulled = pulls.sum(axis=0)
        at = n * neutral
        corners = np.array([[s0, s1, n] for s0, s1 in self.corners(at, pulled)])
        parts = self.shapley_parts(*self.chi_square(np.zeros((4, 3)), 0.0, corners))
        own = (e.per_entry[:, 0] - e.per_entry[:, 1]) - (neutral[0] - neutral[1])
        shares = self.token_shares(np.zeros(len(e.x)), parts, (pulls[:, 0], pulls[:, 1]), pulled, e.x, own, e.x.sum() + len(unknown))
        return placed(rows, kept, shares), log_odds - float(shares.sum())

    def by_fields(self, e: Entries, b: float, n: int) -> np.ndarray:
        """Log-odds of n rows from their entries, each field's t tokens counted as `tests(t)`:
        its entries' sums scaled by tests(t) / t.  Unknown tokens are neutral evidence in
        their own fields, summed after the known ones, by weight (so the floats do not
        depend on the chunking either)."""
        assert e.fields is not None and e.unknown_fields is not None
        k = e.unknown_rows.size
        rows = np.concatenate((e.rows, e.unknown_rows))
        x = np.concatenate((e.x, np.ones(k)))
        fields = np.concatenate((e.fields, e.unknown_fields))
        unknown = self.unknown_row()
        plain = row_sums(e.rows, n, e.x, e.per_entry, Tail(e.unknown_rows, x[len(e.x):], unknown))
        width = int(fields.max()) + 1 if len(fields) else 1
        slots = rows.astype(np.int64) * width + fields  # (row, field)
        if n * width <= DENSE_GROUPS * max(len(slots), 1):
            # The (row, field)s used, in order, by a mask (no sort): the tests after it are
            # taken of those alone, not of every field of every row.
            found, slot_of = used_columns(slots, n * width)
        else:
            found, slot_of = np.unique(slots, return_inverse=True)
            slot_of = slot_of.ravel()
        tokens = np.bincount(slot_of, weights=x, minlength=len(found))
        tests = self.tests(tokens)
        with np.errstate(invalid="ignore", divide="ignore"):
            factor = np.where(tokens > 0, tests / tokens, 0.0)
        weights = x * factor[slot_of]
        head = len(e.rows)
        tail = Tail(e.unknown_rows, weights[head:], unknown[:2])
        if k:
            # The unknown tokens come in the chunk's order of first sight: summed by weight
            # within each message, their floats do not depend on the chunking either.
            order = np.lexsort((tail.weights, tail.rows))
            tail = tail._replace(rows=tail.rows[order], weights=tail.weights[order])
        scaled = row_sums(e.rows, n, weights[:head], e.per_entry[:, :2], tail)
        row_tests = np.bincount(found // width, weights=tests, minlength=n)
        return self.chi_square(plain, b, np.column_stack((scaled, row_tests)))

    def combine(self, sums: np.ndarray, b: float, unknown: np.ndarray) -> np.ndarray:
        """Log-odds of messages taken as one field each: their sums plus `unknown` neutral tokens each."""
        sums = sums + np.multiply.outer(np.asarray(unknown, dtype=np.float64), self.unknown_row())
        return self.chi_square(sums, b)

    def chi_square(self, Z: np.ndarray, b: float = 0.0, scaled: np.ndarray | None = None) -> np.ndarray:
        """Log-odds from each row's sums Z of (ln f, ln(1 - f), 1) over its tokens.

        `scaled`: the same sums with each field's tokens weighted by `tests` / their number
        (`by_fields`), so its last column is the row's tests; None: the row is one field.
        """
        Z = np.atleast_2d(np.asarray(Z, dtype=np.float64))
        if scaled is None:
            tokens = Z[:, 2]
            scaled = Z * np.where(tokens > 0, self.tests(tokens) / np.maximum(tokens, 1e-300), 0.0)[:, None]
        scaled = np.atleast_2d(np.asarray(scaled, dtype=np.float64))
        n = np.rint(scaled[:, 2]).astype(np.int64)
        out = self.combined(ARRAYS, scaled[:, 0], scaled[:, 1], n, Z[:, 0], Z[:, 1], Z[:, 2], b)
        out[n == 0] = b
        return out
