"""The event models: multinomial, Bernoulli and complement naive Bayes, and Robinson-Fisher, each an
`nb.EventModel`, registered by name.  Their measurements: docs/measurements.md."""
from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

import numpy as np

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
    Weighting,
    class_log_prior,
    placed,
    row_sums,
)
from spamnb.bayes.vocabulary import Rows

EVENT_MODELS: dict[str, type[EventModel]] = {}


def register(cls: type[EventModel]) -> type[EventModel]:
    """Make an event model available by its name (`--event`, the model file's setting)."""
    EVENT_MODELS[cls.name] = cls
    return cls


def event_model(name: str, alpha: float | None = None, weighting: Weighting = UNWEIGHTED) -> EventModel:
    """The registered event model `name`, with `alpha` (None: its measured default) and
    `weighting` (only the occurrence models take one)."""
    if name not in EVENT_MODELS:
        raise ValueError(f"unknown event model {name!r}; choose from {', '.join(EVENT_MODELS)}")
    cls = EVENT_MODELS[name]
    if not weighting:
        return cls(alpha)
    weighting.check()
    if not issubclass(cls, Occurrences):
        raise ValueError(f"--tf, --idf and --length-norm weight the occurrence models ({', '.join(occurrence_models())}), not {name}")
    return cls(alpha, weighting=weighting)


def occurrence_models() -> list[str]:
    return [name for name, cls in EVENT_MODELS.items() if issubclass(cls, Occurrences)]


class Linear(EventModel):
    """Naive Bayes proper: log-odds = x . w + b, a sum of the tokens' weights, so the table
    is the weights, an unknown token adds nothing and header fields change nothing."""

    # Alpha 0.01 for both: with ~195k tokens alpha 1 gives each class more pseudo-counts
    # than real ones for every rare token (multinomial 1-AUC 0.489% at 1, 0.180% at 0.01).
    default_alpha: ClassVar[float] = 0.01

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


class Occurrences(Linear):
    """A linear model of token occurrences (multinomial, complement).

    `boolean`: each distinct token counts once per message, in training (the message
    frequencies) and in scoring (Metsis et al. 2006, "which naive Bayes?": the best of
    their event models for spam); multinomial 1-AUC 0.180% -> 0.066% on the SpamAssassin corpus.
    """

    def __init__(self, alpha: float | None = None, boolean: bool = True, weighting: Weighting = UNWEIGHTED) -> None:
        super().__init__(alpha)
        self.boolean = boolean
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
class Multinomial(Occurrences):
    """Token occurrences: p(token | class) = (tf + alpha) / (tokens in class + alpha V)."""

    name = "multinomial"

    def feature_log_prob(self, counts: Counts, cols: np.ndarray | None = None) -> np.ndarray:
        every = self.occurrences(counts)
        tf = every if cols is None else every[:, cols]
        total = every.sum(axis=1, keepdims=True) + self.alpha * counts.n_features
        return np.log(tf + self.alpha) - np.log(total)

    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        flp = self.feature_log_prob(counts, cols)
        prior = class_log_prior(counts)
        return (flp[SPAM] - flp[HAM]) * self.query_idf(counts, cols), float(prior[SPAM] - prior[HAM])


@register
class Bernoulli(Linear):
    """Token presence: p(token | class) = (df + alpha) / (messages in class + 2 alpha)."""

    name = "bernoulli"

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
        log_p = self.feature_log_prob(counts, cols)
        log_not_p = np.log(denom - df - self.alpha) - np.log(denom)
        per_class = log_p - log_not_p
        const = self.absent_log_prob(counts) + class_log_prior(counts)
        return per_class[SPAM] - per_class[HAM], float(const[SPAM] - const[HAM])


@register
class Complement(Occurrences):
    """Complement naive Bayes (Rennie et al. 2003), as scikit-learn's ComplementNB: each
    class's weights from the counts of the *other* class, log((tf' + alpha) / (tokens' +
    alpha V)), which for the smaller class (here spam) comes from the larger one's mail.

    With two classes the complements' difference is the multinomial's own weight vector
    (the prior aside), so only Rennie's weight normalisation (`norm`: each class's
    weights divided by their sum over the vocabulary) makes it a model of its own: the
    default here, scikit-learn's `norm=True`.  No prior: scikit-learn adds it only for
    a single class.
    """

    name = "complement"

    def __init__(self, alpha: float | None = None, boolean: bool = True, norm: bool = True, weighting: Weighting = UNWEIGHTED) -> None:
        super().__init__(alpha, boolean, weighting)
        self.norm = norm

    def feature_log_prob(self, counts: Counts, cols: np.ndarray | None = None) -> np.ndarray:
        """scikit-learn's ComplementNB.feature_log_prob_ (rows ham, spam)."""
        every = self.occurrences(counts)
        other = every[::-1]  # row c: the counts of the class that is not c
        total = other.sum(axis=1, keepdims=True) + self.alpha * counts.n_features
        logged = np.log((other if cols is None else other[:, cols]) + self.alpha) - np.log(total)
        if not self.norm:
            return -logged
        return logged / (np.log(other + self.alpha) - np.log(total)).sum(axis=1, keepdims=True)

    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        flp = self.feature_log_prob(counts, cols)
        return (flp[SPAM] - flp[HAM]) * self.query_idf(counts, cols), 0.0


@register
class Fisher(EventModel):
    """Robinson's per-token spam probability f(w), combined by Fisher's chi-square method.

    From message frequencies (the Bernoulli counts): p(w) = b / (b + g) with b, g the
    shares of spam and of ham holding w; f(w) = (s x + n p(w)) / (s + n), n the messages
    holding w, x = 1/2 the belief about a token never seen, `alpha` the strength s.
    Each message's distinct tokens are combined as in SpamBayes and bogofilter, those
    the counts say nothing about (unknown to the model, or learnt and forgotten) as
    neutral evidence f = x (`unknown_row`):
    S = 1 - Q(-2 sum ln(1-f), 2n), H = 1 - Q(-2 sum ln f, 2n), indicator (1 + S - H) / 2,
    with n (and the sums) shrunk to `independence` * n ** `power` tests per header field
    (`tests`), the tokens of a list server's fields left out (tokens.NOT_EVIDENCE).
    Not linear in x; the log-odds is the logit of that indicator, computed in logs so that
    it keeps ranking where the indicator itself has rounded to 0 or 1, plus `mean_weight`
    times the tokens' mean ln(f / (1 - f)): Robinson's geometric-mean rule on the same f,
    which keeps ranking where the chi-square tests both saturate.
    """

    name = "fisher"
    # A token's table row depends only on its own counts and the class totals.
    per_token = True
    # Each header field's tokens (and the body's) count as tests apart (1-AUC 0.0182% ->
    # 0.0157%, recall at 0.5% ham lost 99.05% -> 99.26%).
    by_field = True
    # Fisher's own: 7 ranks better than 10 with the geometric mean (see `combine`).
    duplicate_min = 7

    def __init__(
        self,
        alpha: float | None = None,
        x: float = 0.5,
        independence: float = 1.0,
        power: float = 0.8,
        mean_weight: float = 5.0,
    ) -> None:
        super().__init__(alpha)
        self.x, self.independence, self.power, self.mean_weight = x, independence, power, mean_weight

    def token_prob(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """f(w) per token, and whether the token was ever seen (only those are evidence)."""
        df = (counts.df if cols is None else counts.df[:, cols]).astype(np.float64)
        share = df / np.maximum(counts.docs, 1)[:, None]
        seen = df.sum(axis=0) > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(seen, share[SPAM] / (share[SPAM] + share[HAM]), self.x)
        n = df.sum(axis=0)
        return (self.alpha * self.x + n * p) / (self.alpha + n), seen

    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """Each token's own evidence, log(f / (1 - f)): for listing and explaining, not scoring."""
        f, seen = self.token_prob(counts, cols)
        return np.where(seen, np.log(f) - np.log1p(-f), 0.0), 0.0

    def table(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """(V, 3) columns ln f, ln(1 - f), 1; unseen tokens get `unknown_row`."""
        f, seen = self.token_prob(counts, cols)
        out = np.empty((f.shape[0], 3))
        out[:] = self.unknown_row()
        out[seen, 0] = np.log(f[seen])
        out[seen, 1] = np.log1p(-f[seen])
        out[seen, 2] = 1.0
        return out, 0.0

    def unknown_row(self) -> np.ndarray:
        """A token never seen counts as neutral evidence f = x, so that a message of mostly
        new words is less sure than one of the same known words alone (1-AUC 0.0366% ->
        0.0324% against dropping them)."""
        return np.array([np.log(self.x), np.log1p(-self.x), 1.0])

    def tests(self, tokens: np.ndarray) -> np.ndarray:
        """How many independent tests `tokens` distinct tokens of one field count as.

        Fisher's method assumes independent tests; a message's tokens are not (headers
        repeat the body, words come in phrases), and a long message repeats itself more
        than a short one, so n tokens count as n ** 0.8 (at least one): 0.5 n at n = 32,
        0.3 n at 400.  1-AUC 0.0221% -> 0.0212% against 0.5 n.
        """
        tokens = np.asarray(tokens, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.where(tokens > 0, np.maximum(np.rint(self.independence * tokens**self.power), 1.0), 0.0)

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
        if not counted.all():
            rows = rows.keep(counted)
        n = len(rows.lengths)
        e = self.entries(table, rows, keys)
        return self.by_fields(e, b, n)

    def explain(self, table: np.ndarray, b: float, rows: Rows, keys: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """Fisher's combining is not a sum, so its chi-square part is shared out: each token
        pulls the two sums it combines (of ln f and of ln(1 - f), scaled by its field's
        tests) away from neutral evidence f = x; each sum's part is its Shapley value (the
        mean of its effect with the other sum neutral and moved), shared among the tokens
        in proportion to their pulls on it.  The combining grows with the first sum and falls
        with the second, so each token's share has the sign of its own evidence.  The mean
        part (`mean_weight`) is a sum already.  The rest: a message of neutral tokens (b)."""
        log_odds = float(self.log_odds(table, b, rows, keys)[0])
        kept = np.ones(len(rows.cols), bool) if rows.fields is None else self.counted(rows.fields)
        e = self.entries(table, rows.keep(kept), keys)
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
        corners = np.array([[*(at + pulled), n], [at[0] + pulled[0], at[1], n], [at[0], at[1] + pulled[1], n], [*at, n]])
        both, first, second, neither = self.chi_square(np.zeros((4, 3)), 0.0, corners)
        parts = ((first - neither + both - second) / 2, (second - neither + both - first) / 2)
        shares = np.zeros(len(e.x))
        for j, part in enumerate(parts):
            if pulled[j] != 0:
                shares += part * pulls[:, j] / pulled[j]
        if self.mean_weight:
            own = (e.per_entry[:, 0] - e.per_entry[:, 1]) - (neutral[0] - neutral[1])
            shares += self.mean_weight * e.x * own / max(e.x.sum() + len(unknown), 1.0)
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
        per_entry = np.concatenate((e.per_entry, np.broadcast_to(self.unknown_row(), (k, e.per_entry.shape[1]))))
        fields = np.concatenate((e.fields, e.unknown_fields))
        plain = row_sums(rows, n, x, per_entry)
        width = int(fields.max()) + 1 if len(fields) else 1
        slots = rows.astype(np.int64) * width + fields  # (row, field)
        if n * width <= DENSE_GROUPS * max(len(slots), 1):
            found = np.arange(n * width)  # every (row, field), used or not
            slot_of = slots
        else:
            found, slot_of = np.unique(slots, return_inverse=True)
            slot_of = slot_of.ravel()
        tokens = np.bincount(slot_of, weights=x, minlength=len(found))
        tests = self.tests(tokens)
        with np.errstate(invalid="ignore", divide="ignore"):
            factor = np.where(tokens > 0, tests / tokens, 0.0)
        weights = x * factor[slot_of]
        if k:
            # The unknown tokens come in the chunk's order of first sight: summed by weight
            # within each message, their floats do not depend on the chunking either.
            head = len(rows) - k
            order = np.concatenate((np.arange(head), head + np.lexsort((weights[head:], rows[head:]))))
            rows, weights, per_entry = rows[order], weights[order], per_entry[order]
        scaled = row_sums(rows, n, weights, per_entry[:, :2])
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
        # H' = -2 sum ln f (large for spam), S' = -2 sum ln(1 - f) (large for ham).
        chi_h, chi_s = -2.0 * scaled[:, 0], -2.0 * scaled[:, 1]
        log_qh, log_ph = log_chi2_tails(chi_h, n)
        log_qs, log_ps = log_chi2_tails(chi_s, n)
        # indicator I = (1 + S - H) / 2 = (Q_H + P_S) / 2 and 1 - I = (Q_S + P_H) / 2
        out = np.logaddexp(log_qh, log_ps) - np.logaddexp(log_qs, log_ph) + b
        # Where a message holds both strong ham and strong spam words, H and S are both
        # near 1 and the indicator near 1/2 whatever their balance; their mean log-odds
        # still ranks it (weight 5: 1-AUC 0.0217% -> 0.0197%).
        if self.mean_weight:
            out += self.mean_weight * (Z[:, 0] - Z[:, 1]) / np.maximum(Z[:, 2], 1.0)
        out[n == 0] = b
        return out
