"""Naive Bayes on sufficient statistics: count, then smooth, then score.

The counts (messages, token occurrences and message frequencies per class) are the
whole model.  An event model (`EventModel`, implemented in `spamnb.bayes.events`) is one way
of smoothing and scoring the same counts; `EventModel.log_odds` is the one scoring path,
for a batch of messages and for one alike.

numpy only: the one-message paths use it without scipy.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cache
from typing import NamedTuple

import numpy as np

from spamnb.bayes import formulas
from spamnb.bayes.formulas import DUPLICATE_MIN, DUPLICATE_STEP, HAM, SPAM, WEIGHT_SCALE
from spamnb.bayes.vocabulary import Rows

CLASSES = ("ham", "spam")


class Weighting(NamedTuple):
    """TF-IDF weighting and length normalisation for the occurrence models (Rennie et al.
    2003, section 4): each learnt message's token counts become `tf` (presence, or log(1 +
    count)), divided by the message's L2 norm of them (`norm` "l2"), and each token's sum of
    those is multiplied by its inverse document frequency (`idf`) when scoring.

    Rennie normalises after the idf; here the norm comes first, so that a token's sum over
    messages is idf times a sum that learning adds to one message at a time (`Counts.weighted`)
    while the idf, from the message frequencies, follows every learn.  A message scored is
    transformed alike (its norm over all its tokens, known or not).  Learnt messages' weights
    are counted in fixed point (`fixed`), so that their sums add and subtract exactly, in any
    order (chunks, workers, merges, a forget after a learn).
    """

    tf: str = "presence"
    idf: bool = False
    norm: str = "none"

    def __bool__(self) -> bool:
        return self != Weighting()

    def as_options(self) -> str:
        """The weighting as the command line sets it."""
        return f"--tf {self.tf} {'--idf' if self.idf else '--no-idf'} --length-norm {self.norm}"

    def entry_weights(self, counts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Each entry's transformed term frequency in its message (messages as `Rows` cut them)."""
        counts = np.asarray(counts, dtype=np.float64)
        x = np.log1p(counts) if self.tf == "log" else (counts > 0).astype(np.float64)
        if self.norm == "l2":
            row = np.repeat(np.arange(len(lengths)), lengths)
            squares = x * x
            # Summed in order of size within each message: the same floats however the
            # message's entries were ordered (chunks and workers number tokens apart).
            order = np.lexsort((squares, row))
            norms = np.sqrt(np.bincount(row[order], weights=squares[order], minlength=len(lengths)))
            x = x / np.where(norms > 0, norms, 1.0)[row]
        return x

    def fixed(self, counts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """`entry_weights` in units of 1 / WEIGHT_SCALE, int64: what learning counts."""
        return np.rint(self.entry_weights(counts, lengths) * WEIGHT_SCALE).astype(np.int64)

    def idf_of(self, counts: Counts) -> np.ndarray:
        """scikit-learn's smoothed idf, ln((1 + n) / (1 + df)) + 1, from both classes' message frequencies."""
        return formulas.idf(np, counts.docs.sum(), token_totals(counts.df))


UNWEIGHTED = Weighting(*formulas.UNWEIGHTED)


class Counts:
    """Per-class statistics: `docs` (2,), `tf` and `df` (2, V), all int64; with a `weighting`,
    `weighted` (2, V) int64, the sums of the learnt messages' `Weighting.fixed` weights."""

    # Records on the pipe path are plain classes and named tuples: building a dataclass
    # compiles generated code at import, on the one-message start-up.
    __slots__ = ("df", "docs", "tf", "weighted", "weighting")

    def __init__(
        self, docs: np.ndarray, tf: np.ndarray, df: np.ndarray, weighted: np.ndarray | None = None, weighting: Weighting = UNWEIGHTED
    ) -> None:
        self.docs, self.tf, self.df = docs, tf, df
        self.weighting = weighting
        if weighting and weighted is None:
            weighted = np.zeros(tf.shape, np.int64)
        self.weighted = weighted if weighting else None

    @classmethod
    def empty(cls, n_features: int = 0, weighting: Weighting = UNWEIGHTED) -> Counts:
        return cls(np.zeros(2, np.int64), np.zeros((2, n_features), np.int64), np.zeros((2, n_features), np.int64), weighting=weighting)

    @property
    def n_features(self) -> int:
        return self.tf.shape[1]

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The per-token arrays: tf, df and (with a weighting) weighted."""
        return (self.tf, self.df) if self.weighted is None else (self.tf, self.df, self.weighted)

    def with_arrays(self, docs: np.ndarray, arrays: tuple[np.ndarray, ...]) -> Counts:
        """Counts of the same weighting from `docs` and per-token `arrays` (as `arrays` gives them)."""
        return Counts(docs, arrays[0], arrays[1], arrays[2] if len(arrays) > 2 else None, self.weighting)

    def take(self, cols: np.ndarray) -> Counts:
        """Only the columns `cols` (indices), in that order."""
        return self.with_arrays(self.docs, tuple(taken_columns(a, cols) for a in self.arrays()))

    def copy(self) -> Counts:
        return self.with_arrays(self.docs.copy(), tuple(a.copy() for a in self.arrays()))

    def add_at(self, other: Counts, cols: np.ndarray, sign: int = 1) -> None:
        """Add (sign -1: subtract) `other`, whose column j is this one's column cols[j], in place."""
        self.docs += sign * other.docs
        for mine, theirs in zip(self.arrays(), other.arrays(), strict=True):
            mine[:, cols] += (sign * theirs).astype(mine.dtype)

    def clamp(self) -> None:
        """Counts below zero set to zero.  Forgetting (or moving) a message after pruning
        takes a pruned token's count below zero, and zero is the truth.  A train does it
        once, after adding all its changes, so that the model depends on neither their
        order nor how they were cut into chunks or shards."""
        for a in (*self.arrays(), self.docs):
            np.maximum(a, 0, out=a)

    def grow(self, n_features: int, spare: bool = False) -> None:
        """Make room for new vocabulary columns: padded to exactly `n_features`, a copy per
        call; `spare`: to twice the width at least, so that a learn growing the counts chunk
        by chunk copies them a few times, not once a chunk (then `resize` cuts them to width)."""
        have = self.tf.shape[1]
        if n_features <= have:
            return
        if spare:
            n_features = max(n_features, 2 * have)
        pad = ((0, 0), (0, n_features - have))
        self.tf = np.pad(self.tf, pad)
        self.df = np.pad(self.df, pad)
        if self.weighted is not None:
            self.weighted = np.pad(self.weighted, pad)

    def resize(self, n_features: int) -> None:
        """Exactly `n_features` columns: grown, or cut (the spare columns of `grow`, all zero)
        by a copy in the arrays' own order (C, or Fortran), as `grow` would have left them."""
        if n_features >= self.n_features:
            self.grow(n_features)
            return
        self.tf, self.df = (a[:, :n_features].copy(order="K") for a in (self.tf, self.df))
        if self.weighted is not None:
            self.weighted = self.weighted[:, :n_features].copy(order="K")

    def add(self, rows: Rows, classes: np.ndarray, signs: np.ndarray | None = None) -> None:
        """Add (sign 1, the default) or subtract (sign -1) each message of `rows` (known
        columns only) as its class (HAM or SPAM)."""
        classes = np.asarray(classes, dtype=np.int64)
        signs = np.ones(len(classes), np.int64) if signs is None else np.asarray(signs, dtype=np.int64)
        cols, counts, lengths = rows.cols, rows.counts, rows.lengths
        self.grow(int(cols.max()) + 1 if cols.size else 0)
        np.add.at(self.docs, classes, signs)
        # A learn's messages are all added (sign 1): then no sign per entry to multiply by.
        entry_sign = np.repeat(signs, lengths) if (signs != 1).any() else 1
        q = None if self.weighted is None else self.weighting.fixed(counts, lengths)
        added = [(self.tf, entry_sign * counts), (self.df, entry_sign)]
        if q is not None and self.weighted is not None:
            added.append((self.weighted, entry_sign * q))
        # In int64 at the entries' cells: a float bincount as long as the vocabulary, made for
        # every chunk learnt, cost more than the adding (and would round past 2**53).  One
        # add.at over each array's memory, not one per class of the entries picked apart.
        places: dict[bool, np.ndarray] = {}  # by memory order (C: True), for arrays alike
        for a, values in added:
            c_order = bool(a.flags.c_contiguous)
            if c_order not in places:
                places[c_order] = cells(a, classes, lengths, cols)
            np.add.at(a.reshape(-1, order="C" if c_order else "F"), places[c_order], values)

    def __sub__(self, other: Counts) -> Counts:
        return self.with_arrays(self.docs - other.docs, tuple(a - b for a, b in zip(self.arrays(), other.arrays(), strict=True)))


def cells(a: np.ndarray, classes: np.ndarray, lengths: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Where the entries of messages of `classes` (`lengths` entries each) at columns `cols`
    lie in a (2, V) array's memory, in its order.  Counts' arrays are contiguous in C
    order, or in Fortran order (`Counts.take`): their memory is then a flat view of them."""
    assert a.flags.c_contiguous or a.flags.f_contiguous, "a view of the array's memory, not a copy"
    if a.flags.c_contiguous:
        return np.repeat(classes * a.shape[1], lengths) + cols
    return np.repeat(classes, lengths) + cols * a.shape[0]


def taken_columns(a: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Columns `cols` of a (2, V) array, in the layout `a[:, cols]` gives (Fortran: a saved
    model's bytes), without its slow path over unsorted columns.  A loaded model's arrays
    (Fortran order) are taken as rows of their transpose; a learn's (C order) a row at a
    time into the columns of the transpose, where a take of the transpose strides across
    both rows at every column."""
    if not a.flags.c_contiguous:
        return a.T.take(cols, axis=0).T
    out = np.empty((len(cols), a.shape[0]), a.dtype)
    for i, row in enumerate(a):
        out[:, i] = row.take(cols)
    return out.T


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
        total = token_totals(counts.tf)
        cols = np.flatnonzero(total >= max(self.min_count, 1))
        if self.max_tokens and cols.size > self.max_tokens:
            top = np.argsort(-total[cols], kind="stable")[: self.max_tokens]
            cols = np.sort(cols[top])
        return cols


def token_totals(per_class: np.ndarray) -> np.ndarray:
    """Per token, the sum of a (2, V) array's two rows: `sum(axis=0)`'s numbers, but one
    addition of the rows, where numpy reduces a model's column-major arrays along that
    axis by a call per token."""
    return per_class[HAM] + per_class[SPAM]


def class_log_prior(counts: Counts) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return formulas.log_prior(np, counts.docs, counts.docs.sum())


def check_trained(counts: Counts) -> None:
    missing = [CLASSES[c] for c in (HAM, SPAM) if counts.docs[c] == 0]
    if missing:
        raise ValueError(f"the model has no {' and no '.join(missing)} messages yet: train it on both classes")


@cache
def bucket_edges(step: tuple[int, int] = DUPLICATE_STEP, top: int = 1 << 62) -> np.ndarray:
    """`formulas.bucket_edges` as an array."""
    return np.array(formulas.bucket_edges(step, top), dtype=np.int64)


def count_buckets(counts: np.ndarray) -> np.ndarray:
    """Each message count's `formulas.bucket`, over arrays."""
    return np.searchsorted(bucket_edges(), counts, side="right")


def duplicate_keys(counts: Counts, cols: np.ndarray | None = None, least: int = DUPLICATE_MIN) -> np.ndarray:
    """Per token, a key (0, 1, ...) that the tokens of the same buckets (`count_buckets`) of
    ham and of spam message counts share, if they are `least` or more in all; -1 (a token
    on its own) for the rest, or for all if `least` is 0 (`formulas.duplicate_shares` of one
    message, with `duplicate_shares`)."""
    df = counts.df if cols is None else counts.df[:, cols]
    keys = np.full(df.shape[1], -1, np.int64)
    keyed = (token_totals(df) >= least) & (least > 0)
    if keyed.any():
        buckets = count_buckets(df[:, keyed])
        _, found = np.unique(buckets[HAM] * (1 << 32) + buckets[SPAM], return_inverse=True)
        keys[keyed] = found.ravel()
    return keys


def duplicate_shares(rows: np.ndarray, cols: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Per entry (row, column), 1/k where k entries of its row share its column's key
    (`keys` per column, from `duplicate_keys`; key -1: always 1)."""
    entry_keys = keys[cols]
    if not len(entry_keys) or entry_keys.max() < 0:
        return np.ones(len(rows))
    # The (row, key) pairs, each as a single integer; the entries without a key are
    # counted too, as a group of their own in each row whose size goes unused: cheaper
    # than picking the keyed entries out and their shares back in.
    width = int(entry_keys.max()) + 2
    pairs = rows.astype(np.int64) * width + (entry_keys + 1)
    return np.where(entry_keys >= 0, 1.0 / group_sizes(pairs, (int(rows.max()) + 1) * width), 1.0)


# Group sizes by a count per possible value when there are at most this many values per
# input (so memory stays proportional to the input), else by a sort.
DENSE_GROUPS = 16


def group_sizes(pairs: np.ndarray, span: int) -> np.ndarray:
    """For each of `pairs` (integers in [0, span)), how many of them equal it."""
    if span <= DENSE_GROUPS * len(pairs):
        return np.bincount(pairs, minlength=span)[pairs]
    _, which, sizes = np.unique(pairs, return_inverse=True, return_counts=True)
    return sizes[which.ravel()]


def used_columns(cols: np.ndarray, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct columns of `cols` in order, and each entry's index among them.

    By a mask, not a sort: the renumbering keeps column order, so every row's entries
    sort and sum in the same order as with the whole vocabulary's columns."""
    mask = np.zeros(n_features, dtype=bool)
    mask[cols] = True
    return np.flatnonzero(mask), (np.cumsum(mask) - 1)[cols]


def column_order(rows: np.ndarray, cols: np.ndarray, n_features: int) -> np.ndarray | None:
    """An order of entries (`rows`, `cols` of `n_features`; a row's columns distinct) in
    which each row's entries come in column order; None where they do already (batch
    classify's counter gives them so).  Every sum over a row's entries adds them in their
    order in the arrays, whatever other rows' lie between, so an order by column alone
    serves: by a radix sort of their ranks among the columns used where those fit 16 bits
    (the calibration's sampled messages, in order of first sight), else of (row, column)."""
    key = rows * n_features + cols
    if (key[1:] > key[:-1]).all():
        return None
    used = np.zeros(n_features, bool)
    used[cols] = True
    if np.count_nonzero(used) < 1 << 16:
        return np.argsort(np.cumsum(used, dtype=np.uint16)[cols], kind="stable")
    return np.argsort(key, kind="stable")


def row_sums(rows: np.ndarray, n: int, weights: np.ndarray, per_entry: np.ndarray, then: Tail | None = None) -> np.ndarray:
    """(n, width): per row, the sum of its entries' table rows `per_entry` times `weights`,
    in the entries' order (a weighted bincount per column of the table); then, where given,
    the entries of `then`, whose table rows are all one, added in their order."""
    # A linear model's table is one column (its sums, (n, 1), ravel to the log-odds).
    per_entry = per_entry.reshape(len(weights), per_entry.shape[1] if per_entry.ndim == 2 else 1)
    out = [np.bincount(rows, weights=weights * column, minlength=n) for column in per_entry.T]
    if then is not None:
        # Added one by one in order (ufunc.at), as one bincount over both lists sums them:
        # the same floats, without a copy of the table rows of every entry.
        for column, value in zip(out, then.row.tolist(), strict=True):
            np.add.at(column, then.rows, then.weights * value)
    return np.column_stack(out)


class Tail(NamedTuple):
    """Entries summed after the others (`row_sums`): their messages, weights and common table row."""

    rows: np.ndarray
    weights: np.ndarray
    row: np.ndarray


def placed(rows: Rows, kept: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per entry of one message's `rows`, the value of `values` of its known entries where
    `kept`, in entry order (as `EventModel.entries` sorts them when the known columns
    increase along the entries, as `model.Model.explain` numbers them); 0 elsewhere."""
    at = np.flatnonzero(kept & (rows.cols >= 0))
    assert len(rows.lengths) == 1 and (np.diff(rows.cols[at]) > 0).all(), "one message, its known columns increasing"
    out = np.zeros(len(rows.cols))
    out[at] = values
    return out


class Entries(NamedTuple):
    """A batch's entries as an event model sums them: the known ones with each row's in
    column order (`column_order`), so the floats do not depend on how the messages were cut
    into chunks or their tokens numbered, then the unknown."""

    rows: np.ndarray  # each known entry's message
    x: np.ndarray  # its weight: `prepare`d count times its duplicate share
    per_entry: np.ndarray  # its row of the table
    fields: np.ndarray | None  # its field, where the rows carry fields
    unknown_rows: np.ndarray  # the message of each unknown token (column -1)
    unknown_fields: np.ndarray | None


class EventModel(formulas.Event, ABC):
    """The batch side of an event model (`formulas.Event`, whose parameters and formulas it
    runs over arrays), as scikit-learn's `_BaseDiscreteNB` names its hooks.

    Every event model smooths and scores the same `Counts`.  It implements:

    - `table(counts, cols)`: (table, b), the per-token rows scoring sums (shape (V,) or
      (V, width)) and a constant; `cols`: only those columns' rows;
    - `weights(counts, cols)`: each token's own evidence for spam, for listing and explaining;
    - `combine(sums, b, unknown)`: the log-odds from each message's sums of table rows
      (and its number of tokens unknown to the model);
    - `explain(table, b, rows, keys)`: one message's log-odds as each token's share of it
      plus the rest, which no token carries (what `inspect --explain` shows);
    - and may override `prepare` (an entry's weight from its count: by default presence),
      `counted` (which header fields' tokens scoring counts: by default all),
      `unknown_row` (what an unknown token adds to the sums: by default nothing) and
      `log_odds` (the template below, for a model that scores fields apart).

    A new event model is a class of `spamnb.bayes.formulas` (registered there: the pipe
    scores with it) and its batch side here, registered with `spamnb.bayes.events.register`.
    """

    # How learnt messages are transformed before they are counted (`Counts.weighted`): none
    # but for the occurrence models given one.
    weighting: Weighting = UNWEIGHTED

    @abstractmethod
    def table(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]: ...

    @abstractmethod
    def weights(self, counts: Counts, cols: np.ndarray | None = None) -> tuple[np.ndarray, float]: ...

    @abstractmethod
    def combine(self, sums: np.ndarray, b: float, unknown: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def explain(self, table: np.ndarray, b: float, rows: Rows, keys: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """One message's `log_odds` (`rows` holds one) as a sum: each entry's share (0 for a
        token unknown to the model or not `counted`) and the rest, which no token carries."""

    def counted(self, fields: np.ndarray) -> np.ndarray:
        """Which tokens scoring counts, by their header fields (`tokens.field_ids`): all."""
        return np.ones(len(fields), bool)

    def prepare(self, counts: np.ndarray) -> np.ndarray:
        """An entry's weight from the token's count in the message: presence."""
        return (np.asarray(counts) > 0).astype(np.float64)

    def message_weights(self, counts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Each entry's weight from the counts of its message's tokens (messages as `Rows`
        cut them, unknown tokens too): by default each count `prepare`d alone."""
        return np.asarray(self.prepare(np.asarray(counts, dtype=np.float64)), dtype=np.float64)

    def unknown_row(self) -> np.ndarray:
        """What a token the counts say nothing about adds to the sums (broadcast to a row of
        the table): nothing."""
        return np.zeros(())

    def log_odds(self, table: np.ndarray, b: float, rows: Rows, keys: np.ndarray | None = None) -> np.ndarray:
        """Log-odds of each message of `rows` from this model's `table` and `b`.

        `rows`' columns index `table` (-1: unknown to the model); `keys`: the columns'
        `duplicate_keys` (None: every token counts on its own).
        """
        n = len(rows.lengths)
        e = self.entries(table, rows, keys)
        sums = row_sums(e.rows, n, e.x, e.per_entry)
        return self.combine(sums, b, np.bincount(e.unknown_rows, minlength=n))

    def entries(self, table: np.ndarray, rows: Rows, keys: np.ndarray | None, counted: np.ndarray | None = None) -> Entries:
        """`counted`: which entries scoring counts (None: all), left out here, not by a copy of
        the messages' arrays first; an entry's weight is then that of its count in the whole
        message, which is its own (`prepare`) for the model that leaves any out (Fisher)."""
        row_of = np.repeat(np.arange(len(rows.lengths)), rows.lengths)
        known = rows.cols >= 0
        scored = known if counted is None else known & counted
        pick = np.flatnonzero(scored)
        order = column_order(row_of[pick], rows.cols[pick], len(table))
        if order is not None:  # each array is then taken once, by the ordered entries' places
            pick = pick[order]
        at, cols = row_of[pick], rows.cols[pick]
        x = self.message_weights(rows.counts, rows.lengths)[pick]
        if keys is not None:
            x = x * duplicate_shares(at, cols, keys)
        unknown = np.flatnonzero(~known if counted is None else ~known & counted)
        fields = None if rows.fields is None else rows.fields[pick]
        unknown_fields = None if rows.fields is None else rows.fields[unknown]
        # `take` of whole rows: indexing a 2-D table by an array takes twice as long.
        return Entries(at, x, table.take(cols, axis=0), fields, row_of[unknown], unknown_fields)
