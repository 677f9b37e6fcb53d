"""Naive Bayes on sufficient statistics: count, then smooth, then score.

The counts (messages, token occurrences and message frequencies per class) are the
whole model; the Bernoulli and multinomial event models are two ways of smoothing
and scoring the same counts.  Scoring is linear: log-odds = x . w + b.

This module imports numpy only: the one-message pipe path uses it without scipy.
Matrices passed in may be numpy arrays or scipy sparse matrices alike.
"""
from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

import numpy as np

HAM, SPAM = 0, 1
CLASSES = ("ham", "spam")


class Counts:
    """Per-class statistics: `docs` (2,), `tf` and `df` (2, V), all int64."""

    # Records on the pipe path are plain classes and named tuples: building a dataclass
    # compiles generated code at import, about 1.3 ms each of the one-message start-up.
    __slots__ = ("df", "docs", "tf")

    def __init__(self, docs: np.ndarray, tf: np.ndarray, df: np.ndarray) -> None:
        self.docs, self.tf, self.df = docs, tf, df

    @classmethod
    def empty(cls, n_features: int = 0) -> Counts:
        return cls(np.zeros(2, np.int64), np.zeros((2, n_features), np.int64), np.zeros((2, n_features), np.int64))

    @property
    def n_features(self) -> int:
        return self.tf.shape[1]

    def grow(self, n_features: int) -> None:
        """Make room for new vocabulary columns: padded to exactly `n_features` (n_features
        is the arrays' width), a copy per call; train on the corpus grows 24 times, ~0.03 s."""
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


class Pruning(NamedTuple):
    """Bounds on the vocabulary: drop tokens seen fewer than `min_count` times (both
    classes together), then keep at most the `max_tokens` most frequent.  0: no bound
    (negative bounds are refused where they are read, by the command line)."""

    min_count: int = 0
    max_tokens: int = 0

    def __bool__(self) -> bool:
        return bool(self.min_count or self.max_tokens)

    def keep(self, counts: Counts) -> np.ndarray:
        """Columns to keep, in column order.  Ties at the cap go to the lower column (the
        earlier token in the model's sorted order), so the result is deterministic."""
        total = counts.tf.sum(axis=0)
        cols = np.flatnonzero(total >= max(self.min_count, 1))
        if self.max_tokens and cols.size > self.max_tokens:
            top = np.argsort(-total[cols], kind="stable")[: self.max_tokens]
            cols = np.sort(cols[top])
        return cols


# Tokens learnt from exactly the same numbers of ham and of spam messages, this many or
# more, are one piece of evidence where a message holds several of them: a mailing list's
# ten List-*, Sender and X-BeenThere words, a relay's name in Received, Return-Path and
# Message-ID, a bulk mailer's X-Mailer words and link hosts.  Counted once each, they
# stop outvoting the body.  Rarer tokens share their counts by chance (two words seen
# once in spam), so they stay apart.  5 folds on the SpamAssassin corpus, default
# tokens, 1-AUC / FP / spam missed at the spam cut-off: Fisher 0.0318% / 1 / 152 ->
# 0.0243% / 1 / 130 (recall at 0.5% ham lost 98.05% -> 99.10%); multinomial 0.0660% /
# 5 / 124 -> 0.0581% / 4 / 114; Bernoulli 0.0924% / 6 / 131 -> 0.0643% / 4 / 120.
# At least 3 messages: Fisher 0.0364%; 5: 0.0336%; 7 to 100: 0.0231-0.0248%.
# Each event model says its own (`duplicate_min`): Fisher's is 7 (see Fisher.combine).
# The linear models keep 10: at 7, 5 folds on the SpamAssassin corpus rank better
# (multinomial 1-AUC 0.0572% -> 0.0454%, Bernoulli 0.0602% -> 0.0494%) but flag 3 -> 4
# ham, sample_corpus ranks worse (3.21% -> 3.60%, 3.14% -> 3.51%), and a Bernoulli model
# of 16 messages groups its common words and passes all spam.
DUPLICATE_MIN = 10


def class_log_prior(counts: Counts) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(counts.docs) - np.log(counts.docs.sum())


class Multinomial(NamedTuple):
    """Token occurrences: p(token | class) = (tf + alpha) / (tokens in class + alpha V).

    `boolean`: each distinct token counts once per message, in training (the message
    frequencies) and in scoring (Schneider 2004; Metsis et al. 2006, "which naive Bayes?":
    the best of their event models for spam).  A word repeated is mostly one sender's
    habit, not more evidence.  5 folds on the SpamAssassin corpus, alpha 0.01: 1-AUC
    0.180% (term counts) -> 0.066%, FP 10 -> 5, spam missed 182 -> 124, ECE 0.0089 -> 0.0058.
    """

    alpha: float = 1.0
    name: str = "multinomial"
    boolean: bool = True
    duplicate_min: int = DUPLICATE_MIN

    def _tf(self, counts: Counts) -> np.ndarray:
        return counts.df if self.boolean else counts.tf

    def feature_log_prob(self, counts: Counts, cols: np.ndarray | None = None) -> np.ndarray:
        every = self._tf(counts)
        tf = every if cols is None else every[:, cols]
        total = every.sum(axis=1, keepdims=True) + self.alpha * counts.n_features
        return np.log(tf + self.alpha) - np.log(total)

    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        flp = self.feature_log_prob(counts, cols)
        prior = class_log_prior(counts)
        return flp[SPAM] - flp[HAM], float(prior[SPAM] - prior[HAM])

    def prepare(self, X: Any) -> Any:
        return (X > 0).astype(np.float64) if self.boolean else X

    table = weights
    # A token's row of the table depends on the whole vocabulary's counts (the class
    # totals plus alpha V), not on its own counts alone (see Fisher.per_token).
    per_token = False
    by_field = False  # a sum of the tokens' weights: fields change nothing (see Fisher)

    def unknown_row(self) -> np.ndarray:
        """What a token without evidence adds to a row of the table: nothing (it is left out)."""
        return np.zeros(())

    @staticmethod
    def combine(Z: np.ndarray, b: float) -> np.ndarray:
        return np.asarray(Z, dtype=np.float64).ravel() + b


class Bernoulli(NamedTuple):
    """Token presence: p(token | class) = (df + alpha) / (messages in class + 2 alpha)."""

    alpha: float = 1.0
    name: str = "bernoulli"
    duplicate_min: int = DUPLICATE_MIN

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

    table = weights
    per_token = False  # the constant sums log(1 - p) over the whole vocabulary
    by_field = False
    unknown_row = Multinomial.unknown_row
    combine = staticmethod(Multinomial.combine)


class Complement(NamedTuple):
    """Complement naive Bayes (Rennie et al. 2003), as scikit-learn's ComplementNB: each
    class's weights from the counts of the *other* class, log((tf' + alpha) / (tokens' +
    alpha V)), which the skewed class (here ham) estimates from more mail.

    With two classes the complements' difference is the multinomial's own weight vector
    (the prior aside), so only Rennie's weight normalisation (`norm`: each class's
    weights divided by their sum over the vocabulary) makes it a model of its own; it is
    the default here, and scikit-learn's `norm=True`.  `boolean` as in `Multinomial`.
    """

    alpha: float = 1.0
    name: str = "complement"
    boolean: bool = True
    norm: bool = True
    duplicate_min: int = DUPLICATE_MIN

    def feature_log_prob(self, counts: Counts, cols: np.ndarray | None = None) -> np.ndarray:
        """scikit-learn's ComplementNB.feature_log_prob_ (rows ham, spam)."""
        every = counts.df if self.boolean else counts.tf
        other = every[::-1]  # row c: the counts of the class that is not c
        total = other.sum(axis=1, keepdims=True) + self.alpha * counts.n_features
        logged = np.log((other if cols is None else other[:, cols]) + self.alpha) - np.log(total)
        if not self.norm:
            return -logged
        return logged / (np.log(other + self.alpha) - np.log(total)).sum(axis=1, keepdims=True)

    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        flp = self.feature_log_prob(counts, cols)
        # No prior: scikit-learn adds it only when there is a single class.
        return flp[SPAM] - flp[HAM], 0.0

    prepare = Multinomial.prepare
    table = weights
    per_token = False  # the totals and the normalisation sum over the whole vocabulary
    by_field = False
    unknown_row = Multinomial.unknown_row
    combine = staticmethod(Multinomial.combine)


class Fisher(NamedTuple):
    """Robinson's per-token spam probability f(w), combined by Fisher's chi-square method.

    From message frequencies (the Bernoulli counts): p(w) = b / (b + g) with b, g the
    shares of spam and of ham holding w; f(w) = (s x + n p(w)) / (s + n), n the messages
    holding w, x = 1/2 the belief about a token never seen, `alpha` the strength s.
    Each message's distinct tokens are combined as in SpamBayes and bogofilter, those
    the counts say nothing about (unknown to the model, or learnt and forgotten) as
    neutral evidence f = x (`unknown_row`):
    S = 1 - Q(-2 sum ln(1-f), 2n), H = 1 - Q(-2 sum ln f, 2n), indicator (1 + S - H) / 2,
    with n (and the sums) shrunk to `independence` * n ** `power` tests.
    Not linear in x; `log_odds` is the logit of that indicator, computed in logs so that
    it keeps ranking where the indicator itself has rounded to 0 or 1, plus `mean_weight`
    times the tokens' mean ln(f / (1 - f)): Robinson's geometric-mean rule on the same f,
    ln(G(f) / G(1 - f)), which keeps ranking where the chi-square tests both saturate.
    """

    alpha: float = 0.01
    name: str = "fisher"
    x: float = 0.5
    independence: float = 1.0  # n distinct tokens are independence * n ** power tests (see `combine`)
    power: float = 0.8
    mean_weight: float = 5.0  # the geometric-mean rule's share (see `combine`)
    duplicate_min: int = 7  # (see `combine`)

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

    # A token's row of the table depends only on its own counts and the class totals
    # `docs`, so a table of some columns needs only their counts (classifier.held_out_table).
    per_token = True
    # Each header field's tokens (and the body's) count as tests apart (`tests`, `fisher_by_field`),
    # the tokens of a list server's fields not at all (tokens.LIST_FIELDS).  `spamnb eval
    # --index ../shared/corpora/spamassassin/index --folds 5`, Platt calibration: 1-AUC
    # 0.0182% -> 0.0157%, 1 FP, recall at 0.5% ham lost 99.05% -> 99.26%, ECE 0.0025 ->
    # 0.0022, spam ranked under the second ham 72 -> 50 (but 90 -> 97 missed at 0.95: see
    # model.OUTLIER_SHARE).  1-AUC / under the second ham on six other splits (10 and 2
    # folds, four re-salted 5-fold): 0.0171 / 0.0322 / 0.0171 / 0.0177 / 0.0169 / 0.0187% ->
    # 0.0140 / 0.0285 / 0.0139 / 0.0146 / 0.0142 / 0.0158%; 79 / 140 / 81 / 82 / 91 / 95 ->
    # 55 / 111 / 64 / 68 / 70 / 75.  Each alone: list fields left out 0.0173% (66 under
    # the second ham); fields counted apart with the list's kept 0.0180% (61), since each
    # List-* field then weighs as a witness of its own (as one field together: 0.0172%).
    by_field = True

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
        new words is less sure than one of the same known words alone.  5 folds on the
        SpamAssassin corpus: 1-AUC 0.0366% -> 0.0324%, ECE 0.0050 -> 0.0038 (dropping them)."""
        return np.array([np.log(self.x), np.log1p(-self.x), 1.0])

    def prepare(self, X: Any) -> Any:
        return (X > 0).astype(np.float64)

    def tests(self, tokens: np.ndarray) -> np.ndarray:
        """How many independent tests `tokens` distinct tokens of one field count as (see `combine`)."""
        # Fisher's method assumes independent tests; a message's tokens are not (headers
        # repeat the body, words come in phrases), so n tokens count as fewer tests (at
        # least one), each sum scaled alike.  5 folds on the SpamAssassin corpus, unknown
        # tokens neutral, at the 0.95 cut-off, c n tests: c = 1.0 gives 1-AUC 0.0324%, 1 FP,
        # 187 spam missed, 267 unsure; 0.5 gives 0.0318%, 1 FP, 152 missed, 227 unsure; 0.25
        # 0.0309%, 2 FP, 132 missed; 0.1 0.0301%, 4 FP.  With duplicate evidence counted once
        # (DUPLICATE_MIN) still a plateau: 0.4, 0.5, 0.6, 0.75 give 1-AUC 0.0241%, 0.0243%,
        # 0.0245%, 0.0248% (121, 130, 140, 148 missed).
        # A long message repeats itself more than a short one (a template, a topic's words),
        # so the tests grow slower than n: n ** 0.8 (as many as 0.5 n at n = 32, 0.3 n at
        # 400).  `spamnb eval --index ../shared/corpora/spamassassin/index --folds 5`,
        # duplicates within a tenth, 0.5 n -> n ** 0.8: 1-AUC 0.0221% -> 0.0212%, 1 FP,
        # 119 -> 104 spam missed, recall at 0.5% ham lost 98.95% -> 98.89%, ECE 0.0022 ->
        # 0.0027.  10 folds 0.0207% -> 0.0196% (1 FP, 118 -> 109 missed); four other 5-fold
        # splits 0.0200% -> 0.0192% on average, 1 FP in each, 123 -> 107 missed; 2 folds
        # 0.0361% -> 0.0355%, 161 -> 144 missed but 2 -> 4 FP (two hard ham at P 0.947 and
        # 0.944 go to 0.960 and 0.954: a surer calibration, the same ham ranked highest).
        # n ** 0.7: 0.0202%, 94 missed, but 2-3 FP on two of the other splits; ** 0.9: 0.0217%.
        tokens = np.asarray(tokens, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.where(tokens > 0, np.maximum(np.rint(self.independence * tokens**self.power), 1.0), 0.0)

    def combine(self, Z: np.ndarray, b: float = 0.0, scaled: np.ndarray | None = None) -> np.ndarray:
        """Log-odds from each row's sums Z of (ln f, ln(1 - f), 1) over its tokens.

        `scaled`: the same sums with each field's tokens weighted by `tests` / their number
        (`fisher_by_field`), so its last column is the row's tests; None: the row is one field.
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
        # near 1 and the indicator near 1/2 whatever the balance of its words; their mean
        # log-odds still ranks it.  With unknown tokens neutral (log-odds 0, counted in the
        # mean) and duplicates counted once, as in the sums.  `spamnb eval --index
        # ../shared/corpora/spamassassin/index --folds 5`, n ** 0.8 tests, `duplicate_min` 7,
        # 1-AUC / FP / FN at 0.95 / recall at 0.5% ham lost / ECE: weight 0: 0.0217% / 1 / 108
        # / 99.10% / 0.0023; 3: 0.0200%; 5: 0.0197% / 1 / 91 / 99.05% / 0.0025; 10: 0.0194%, 83
        # missed, but 2 FP at the cut-off on one of the other splits below (`duplicate_min`
        # 10, weight 0: 0.0212% / 1 / 104 / 98.89% / 0.0027).  Weight 5 against 0, `duplicate_min`
        # 7 against 10: 10 folds 0.0196% -> 0.0188% (1 FP, 109 -> 94 missed); 2 folds 0.0355%
        # -> 0.0334% (4 -> 3 FP, 144 -> 124 missed); four other 5-fold splits 0.0192% -> 0.0190%
        # on average, 1 FP in each, spam missed 98-120 -> 96-105.  At `duplicate_min` 10 the
        # mean is misled by a list's words seen only in its spam (7-9 messages each, so not
        # yet one vote): 2 folds 0.0379% at weight 10 (0.0355% without).  The mean alone,
        # without the chi-square: 0.0193%, but 595 spam under the second ham on one split.
        # 7 without the mean: 0.0217% / 1 / 108 / 99.10%.  sample_corpus: 3.44% -> 3.34%.
        if self.mean_weight:
            out += self.mean_weight * (Z[:, 0] - Z[:, 1]) / np.maximum(Z[:, 2], 1.0)
        out[n == 0] = b
        return out


def _log_factorials(n: int) -> np.ndarray:
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, max(n, 1) + 1, dtype=np.float64)))))


def _logsumexp_rows(terms: np.ndarray) -> np.ndarray:
    top = terms.max(axis=1)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return top + np.log(np.exp(terms - top[:, None]).sum(axis=1))


# Terms per block of rows.  A block is as wide as its largest n, and the rows' n are
# spread (median 129, largest 5,859 on the corpus), so large blocks are mostly padding:
# 2^21 took 0.106 s for the corpus's 6,046 rows, 2^17 0.037 s (log values within 6e-14).
CHI2_BLOCK = 1 << 17


def log_chi2_tails(chi: np.ndarray, n: np.ndarray, block: int = CHI2_BLOCK) -> tuple[np.ndarray, np.ndarray]:
    """(log Q, log P) of the chi-square distribution with 2n degrees of freedom at chi.

    For even degrees of freedom Q = e^-m sum_{i<n} m^i / i! with m = chi / 2 (exact, a
    finite sum, here in logs); P = 1 - Q, or where Q > 1/2 and so P may be tiny, the
    series e^-m sum_{i>=n} m^i / i!, whose terms shrink once i > m.  numpy only.
    """
    chi = np.asarray(chi, dtype=np.float64)
    n = np.asarray(n, dtype=np.int64)
    log_q = np.zeros(chi.shape)
    log_p = np.full(chi.shape, -np.inf)
    if chi.size == 0:
        return log_q, log_p
    m = np.maximum(chi / 2.0, 0.0)
    with np.errstate(divide="ignore"):
        log_m = np.log(m)
    order = np.argsort(n, kind="stable")
    start = 0
    while start < len(order):
        # rows of similar n together, so that the (rows x terms) block stays small
        width = int(n[order[start]]) + 1
        stop = start + 1
        while stop < len(order) and (stop - start + 1) * (int(n[order[stop]]) + 1) <= block:
            stop += 1
        rows = order[start:stop]
        start = stop
        nr, mr, lm = n[rows], m[rows], log_m[rows]
        width = int(nr.max())
        if width == 0:
            continue
        i = np.arange(width)
        lf = _log_factorials(width)
        with np.errstate(invalid="ignore"):
            terms = np.where(i[None, :] < nr[:, None], i[None, :] * lm[:, None] - lf[:width][None, :], -np.inf)
        terms[:, 0] = 0.0  # m^0 / 0! = 1, even when m = 0
        lq = np.minimum(-mr + _logsumexp_rows(terms), 0.0)
        lq[nr == 0] = 0.0
        log_q[rows] = lq
        with np.errstate(divide="ignore"):
            lp = np.log(-np.expm1(lq))
        small = (lq > np.log(0.5)) & (nr > 0)
        if small.any():
            ns, ms, lms = nr[small], mr[small], lm[small]
            extra = int(60 + 12 * np.sqrt(ms.max() + ns.max()))
            j = ns[:, None] + np.arange(extra)[None, :]
            lfj = _log_factorials(int(j.max()))
            with np.errstate(invalid="ignore"):
                tail = np.where(np.isfinite(lms)[:, None], j * lms[:, None] - lfj[j], -np.inf)
            lp[small] = -ms + _logsumexp_rows(tail)
        log_p[rows] = lp
    return log_q, log_p


EventModel = Multinomial | Bernoulli | Complement | Fisher
EVENT_MODELS: dict[str, type[EventModel]] = {"fisher": Fisher, "multinomial": Multinomial, "bernoulli": Bernoulli, "complement": Complement}
# Smoothing per event model, by `spamnb eval --folds 5` on the SpamAssassin corpus (see model.Scoring).
# With ~195k tokens, alpha 1 gives each class more pseudo-counts than real ones for every rare
# token: 1-AUC multinomial 0.489% (alpha 1), 0.230% (0.1), 0.180% (0.01), 0.182% (0.001);
# Bernoulli 0.406%, 0.123%, 0.092%, 0.092%.  0.01 is where both level off.
DEFAULT_ALPHA = {"fisher": 0.01, "multinomial": 0.01, "bernoulli": 0.01, "complement": 0.01}


def event_model(name: str, alpha: float | None = None) -> EventModel:
    if name not in EVENT_MODELS:
        raise ValueError(f"unknown event model {name!r}; choose from {', '.join(EVENT_MODELS)}")
    if alpha is None:
        alpha = DEFAULT_ALPHA[name]
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, not {alpha}")
    return EVENT_MODELS[name](alpha)


# Tokens of the same message counts (see DUPLICATE_MIN) need only agree to within about a
# tenth (`count_buckets`): a list's header words where a few of its messages lack one
# header, a relay named in most of a sender's mail, are still one source.  `spamnb eval --index
# ../shared/corpora/spamassassin/index --folds 5`, 1-AUC / FP / spam missed at the spam
# cut-off / recall at 0.5% ham lost / ECE, exact counts -> within a tenth: Fisher 0.0243% /
# 1 / 130 / 99.10% / 0.0029 -> 0.0221% / 1 / 119 / 98.95% / 0.0022; multinomial 0.0581% / 4
# / 114 / 99.05% -> 0.0572% / 3 / 110 / 98.89%; Bernoulli 0.0643% / 4 / 120 / 98.42% ->
# 0.0602% / 3 / 120 / 98.89%.  Fisher with 10 folds 0.0229% -> 0.0207%, 2 folds 0.0378% ->
# 0.0361%, four other 5-fold splits 0.0222% -> 0.0200% on average (1 FP in each, 140 ->
# 123 spam missed).  Buckets of a twentieth: Fisher 0.0233%; a fifth: 0.0227%.
DUPLICATE_STEP = (11, 10)  # bucket edges at ceil((11/10)^k)


@cache
def bucket_edges(step: tuple[int, int] = DUPLICATE_STEP, top: int = 1 << 62) -> np.ndarray:
    """The distinct ceil((a/b)^k), k = 0, 1, ..., up to `top`, in exact integer arithmetic
    (so that a count's bucket never depends on a platform's logarithm)."""
    a, b = step
    num, den, edges = 1, 1, [1]  # (a/b)^k = num / den
    while edges[-1] < top:
        num, den = num * a, den * b
        edge = -(-num // den)
        if edge > edges[-1]:
            edges.append(edge)
    return np.array(edges, dtype=np.int64)


def count_buckets(counts: np.ndarray) -> np.ndarray:
    """Each message count's bucket: 0 for 0, and from 1 up one per edge of `bucket_edges`,
    so every count below about ten has a bucket of its own and larger ones share theirs
    with counts within about a tenth of them."""
    return np.searchsorted(bucket_edges(), counts, side="right")


def duplicate_keys(counts: Counts, cols: np.ndarray | None = None, least: int = DUPLICATE_MIN) -> np.ndarray:
    """Per token, a key (0, 1, ...) that the tokens of the same buckets (`count_buckets`) of
    ham and of spam message counts share, if they are `least` or more in all; -1 (a token
    on its own) for the rest, or for all if `least` is 0."""
    df = counts.df if cols is None else counts.df[:, cols]
    keys = np.full(df.shape[1], -1, np.int64)
    keyed = (df.sum(axis=0) >= least) & (least > 0)
    if keyed.any():
        buckets = count_buckets(df[:, keyed])
        _, found = np.unique(buckets[HAM] * (1 << 32) + buckets[SPAM], return_inverse=True)
        keys[keyed] = found.ravel()
    return keys


def entries(X: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row, column and value of each nonzero entry of a 2-d numpy array or scipy sparse matrix."""
    if hasattr(X, "tocoo"):
        coo = X.tocoo()
        return coo.row, coo.col, coo.data
    rows, cols = np.nonzero(X)
    return rows, cols, X[rows, cols]


def duplicate_shares(rows: np.ndarray, cols: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Per entry (row, column), 1/k where k entries of its row share its column's key
    (`keys` per column, from `duplicate_keys`; key -1: always 1)."""
    shares = np.ones(len(rows))
    entry_keys = keys[cols]
    grouped = np.flatnonzero(entry_keys >= 0)
    if grouped.size:
        # The (row, key) pairs, each as a single integer.
        width = int(entry_keys.max()) + 1
        pairs = rows[grouped].astype(np.int64) * width + entry_keys[grouped]
        shares[grouped] = 1.0 / group_sizes(pairs, (int(rows[grouped].max()) + 1) * width)
    return shares


# Group sizes by a count per possible value when there are at most this many values per
# input (so memory stays proportional to the input), else by a sort.
DENSE_GROUPS = 16


def group_sizes(pairs: np.ndarray, span: int) -> np.ndarray:
    """For each of `pairs` (integers in [0, span)), how many of them equal it."""
    # A calibration fold of the SpamAssassin corpus: 290k pairs of 1,210 rows x 1,744 keys;
    # one bincount instead of np.unique's sort and inverse: 21 ms -> 8 ms per fold (medians
    # of 7 alternating runs over the 5 folds: 0.107 s -> 0.040 s of CPU).
    if span <= DENSE_GROUPS * len(pairs):
        return np.bincount(pairs, minlength=span)[pairs]
    _, which, sizes = np.unique(pairs, return_inverse=True, return_counts=True)
    return sizes[which.ravel()]


def evidence(X: Any, table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """X @ table with the entries of tokens sharing a duplicate key in a row counted once:
    the product, less the surplus of each group of two or more."""
    if not hasattr(X, "tocoo"):
        X = np.atleast_2d(np.asarray(X))
    Z = np.asarray(X @ table, dtype=np.float64)
    rows, cols, values = entries(X)
    shares = duplicate_shares(rows, cols, keys)
    surplus = np.flatnonzero(shares < 1)
    if surplus.size:
        rows, weights = rows[surplus], values[surplus] * (1 - shares[surplus])
        per_entry = table[cols[surplus]]
        n = X.shape[0]
        if per_entry.ndim == 1:
            Z = Z - np.bincount(rows, weights=weights * per_entry, minlength=n)
        else:
            Z = Z - np.stack([np.bincount(rows, weights=weights * column, minlength=n) for column in per_entry.T], axis=1)
    return Z


def row_sums(rows: np.ndarray, n: int, weights: np.ndarray, per_entry: np.ndarray) -> np.ndarray:
    """(n, width): per row, the sum of its entries' table rows `per_entry` times `weights`."""
    # A linear model's table is one column (its Z, (n, 1), ravels to the log-odds).
    per_entry = per_entry.reshape(len(weights), per_entry.shape[1] if per_entry.ndim == 2 else 1)
    return np.column_stack([np.bincount(rows, weights=weights * column, minlength=n) for column in per_entry.T])


def batch_log_odds(
    model: EventModel, table: np.ndarray, b: float, X: Any, keys: np.ndarray | None = None, fields: np.ndarray | None = None
) -> np.ndarray:
    """Log-odds of each row of X from a model's `table` (linear for naive Bayes, not for Fisher).

    `keys`: the columns' `duplicate_keys` (None: every token counts on its own).
    `fields`: the columns' `tokens.field_ids` (None: a message is one field; Fisher only,
    which leaves out the tokens of a field numbered below 0).
    """
    Xp = model.prepare(X)
    if fields is not None and model.by_field:
        if not hasattr(Xp, "tocoo"):
            Xp = np.atleast_2d(np.asarray(Xp))
        rows, cols, x = entries(Xp)
        counted = fields[cols] >= 0
        rows, cols, x = rows[counted], cols[counted], np.asarray(x, dtype=np.float64)[counted]
        if keys is not None:
            x = x * duplicate_shares(rows, cols, keys)
        return fisher_by_field(model, table[cols], b, rows, Xp.shape[0], x, fields[cols])
    Z = np.asarray(Xp @ table if keys is None else evidence(Xp, table, keys), dtype=np.float64)
    return model.combine(Z, b)


def fisher_by_field(model: Fisher, per_entry: np.ndarray, b: float, rows: np.ndarray, n: int, x: np.ndarray, fields: np.ndarray) -> np.ndarray:
    """Fisher log-odds of n rows from entries (row, table row, weight, field), each field's
    t tokens counted as `tests(t)`: its entries' sums scaled by tests(t) / t (`combine`'s `scaled`)."""
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
    tests = model.tests(tokens)
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = np.where(tokens > 0, tests / tokens, 0.0)
    scaled = row_sums(rows, n, x * factor[slot_of], per_entry[:, :2])
    row_tests = np.bincount(found // width, weights=tests, minlength=n)
    return model.combine(plain, b, np.column_stack((scaled, row_tests)))


def flat_log_odds(
    model: EventModel,
    table: np.ndarray,
    b: float,
    cols: np.ndarray,
    counts: np.ndarray,
    lengths: np.ndarray,
    keys: np.ndarray | None = None,
    fields: np.ndarray | None = None,
) -> np.ndarray:
    """`batch_log_odds` of rows given flat, numpy only: row i is `lengths[i]` distinct columns
    with their counts, column -1 for a token the vocabulary lacks (it adds the event model's
    `unknown_row`); `keys` as there, `fields` per entry (tokens unknown included).

    The product `X @ table` becomes a weighted bincount per column of the table, summed in
    column order within each row as scipy's product sums: the same floats bit for bit,
    however the rows were cut into chunks (with `keys`, equal to the matrix path's to
    rounding: it takes each group's surplus off the product instead).  On the SpamAssassin corpus batch classify
    takes 0.15 s less CPU and no longer imports scipy.
    """
    n = len(lengths)
    row_of = np.repeat(np.arange(n), lengths)
    by_field = fields is not None and model.by_field
    if by_field and fields.min(initial=0) < 0:
        counted = fields >= 0  # tokens of fields that are no evidence (tokens.NOT_EVIDENCE) left out
        row_of, cols, counts, fields = row_of[counted], cols[counted], counts[counted], fields[counted]
    known = cols >= 0
    order = np.argsort(row_of[known] * len(table) + cols[known])
    rows, known_cols = row_of[known][order], cols[known][order]
    x = np.asarray(model.prepare(counts[known][order].astype(np.float64)), dtype=np.float64)
    if keys is not None:
        x = x * duplicate_shares(rows, known_cols, keys)
    per_entry = table[known_cols]
    unknown = np.flatnonzero(~known)
    if by_field:
        # Unknown tokens are neutral evidence within their own fields, summed after the
        # known ones (all alike), so the floats do not depend on the chunking either.
        rows = np.concatenate((rows, row_of[unknown]))
        x = np.concatenate((x, np.ones(unknown.size)))
        per_entry = np.concatenate((per_entry, np.broadcast_to(model.unknown_row(), (unknown.size, 3))))
        return fisher_by_field(model, per_entry, b, rows, n, x, np.concatenate((fields[known][order], fields[unknown])))
    Z = row_sums(rows, n, x, per_entry)
    return combined(model, Z, b, np.bincount(row_of[unknown], minlength=n))


def combined(model: EventModel, Z: np.ndarray, b: float, unknown: np.ndarray | None) -> np.ndarray:
    """Log-odds from the rows' sums Z of table rows, plus `unknown` unseen tokens each."""
    if unknown is not None:
        row = model.unknown_row()
        if row.any():
            Z = Z + np.multiply.outer(np.asarray(unknown, dtype=np.float64), row)
    return model.combine(Z, b)


def joint_log_likelihood(model: EventModel, counts: Counts, X: Any) -> np.ndarray:
    """log P(class) + log P(x | class) for each row of X: shape (n, 2), columns ham, spam."""
    flp = model.feature_log_prob(counts)
    prior = class_log_prior(counts)
    Xp = model.prepare(X)
    if isinstance(model, Bernoulli):
        neg = np.log1p(-np.exp(flp))
        return np.asarray(Xp @ (flp - neg).T) + neg.sum(axis=1) + prior
    if isinstance(model, Complement):
        return np.asarray(Xp @ flp.T)
    return np.asarray(Xp @ flp.T) + prior


def log_odds(model: EventModel, counts: Counts, X: Any, least: int | None = None) -> np.ndarray:
    """log P(spam | x) - log P(ham | x) for each row of X (Fisher: the logit of its indicator),
    tokens learnt from the same `least` (default the model's `duplicate_min`) or more
    messages counted once (0: each on its own)."""
    least = model.duplicate_min if least is None else least
    table, b = model.table(counts)
    return batch_log_odds(model, table, b, X, keys=duplicate_keys(counts, least=least))


def check_trained(counts: Counts) -> None:
    missing = [CLASSES[c] for c in (HAM, SPAM) if counts.docs[c] == 0]
    if missing:
        raise ValueError(f"the model has no {' and no '.join(missing)} messages yet: train it on both classes")
