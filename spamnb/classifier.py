"""Learning and scoring streams of messages with one model: tokens -> features -> nb.

Messages are handled in chunks, so memory is bounded by the chunk size, not by the
number of messages.  Unreadable messages pass through as `Problem` items.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from spamnb import headers, nb
from spamnb.features import Vocabulary, count_rows
from spamnb.model import Model, Scoring, fit_platt
from spamnb.sources import Item, Message, Problem
from spamnb.tokens import Tokenizer, TokenSettings

CHUNK = 512
LABEL_CLASS = {"ham": nb.HAM, "spam": nb.SPAM}


def chunks(items: Iterable[Item], size: int = CHUNK) -> Iterator[list[Item]]:
    batch: list[Item] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class LearnReport:
    learnt: int = 0
    moved: int = 0
    already: int = 0
    forgotten: int = 0
    never_learnt: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.learnt or self.moved or self.forgotten)


def learn(
    model: Model,
    items: Iterable[Item],
    forget: bool = False,
    progress: Callable[[int], None] | None = None,
) -> LearnReport:
    """Learn each labelled message as its class, or forget it (`forget=True`).

    Learning a message already learnt as the same class changes nothing; learnt as
    the other class, it moves.  Forgetting a message never learnt is refused
    (reported in `never_learnt`).
    """
    report = LearnReport()
    vocab = model.growable()
    tokenize = Tokenizer(model.tokens)
    sample = Reservoir(CALIBRATION_SAMPLE)
    for batch in chunks(items):
        docs: list[list[int]] = []
        classes: list[int] = []
        signs: list[int] = []
        for item in batch:
            if isinstance(item, Problem):
                report.problems.append(item)
                continue
            if item.label not in LABEL_CLASS:
                raise ValueError(f"{item.id}: no class to learn it as")
            cls = LABEL_CLASS[item.label]
            key = headers.digest(item.data)
            before = model.learnt.get(key)
            changes: list[tuple[int, int]] = []  # (class, sign)
            if forget:
                if before is None:
                    report.never_learnt.append(item.id)
                else:
                    del model.learnt[key]
                    changes.append((before, -1))
                    report.forgotten += 1
            elif before == cls:
                report.already += 1
            else:
                if before is not None:
                    changes.append((before, -1))
                    report.moved += 1
                else:
                    report.learnt += 1
                model.learnt[key] = cls
                changes.append((cls, 1))
            if changes:
                cols = vocab.grow(tokenize(item.data))
                if not forget:
                    sample.offer((cols, cls))
                for c, sign in changes:
                    docs.append(cols)
                    classes.append(c)
                    signs.append(sign)
        apply_changes(model, vocab, docs, classes, signs)
        if progress:
            progress(len(batch))
    if sample.items:
        X = count_rows([cols for cols, _ in sample.items], len(vocab))
        y = np.array([cls for _, cls in sample.items], dtype=np.int64)
        model.scoring = calibrated(model.scoring, model.scoring.event_model(), model.counts, X, y)
    return report


# Calibration is fitted on at most this many of the messages learnt in one call.
CALIBRATION_SAMPLE = 10_000


class Reservoir:
    """A uniform sample of at most `size` of the items offered (Vitter's algorithm R), reproducible."""

    def __init__(self, size: int, seed: int = 0) -> None:
        self.size, self.seen, self.items = size, 0, []
        self._rng = np.random.default_rng(seed)

    def offer(self, item) -> None:
        self.seen += 1
        if len(self.items) < self.size:
            self.items.append(item)
        else:
            j = int(self._rng.integers(self.seen))
            if j < self.size:
                self.items[j] = item


def apply_changes(model: Model, vocab: Vocabulary, docs: list[list[int]], classes: list[int], signs: list[int]) -> None:
    if not docs:
        return
    X = count_rows(docs, len(vocab))
    y = np.asarray(classes)
    s = np.asarray(signs)
    for sign in (1, -1):
        rows = np.flatnonzero(s == sign)
        if rows.size:
            model.counts.add(X[rows], y[rows], sign)
    model.counts.grow(len(vocab))


class Scored(NamedTuple):
    id: str
    label: str | None
    log_odds: float
    score: float
    verdict: str


def classify(
    model: Model,
    items: Iterable[Item],
    progress: Callable[[int], None] | None = None,
) -> Iterator[Scored | Problem]:
    """Score every message: log-odds, P(spam) and the verdict under the model's cut-offs."""
    vocab = model.growable()
    table, b = model.table()
    event = model.scoring.event_model()
    tokenize = Tokenizer(model.tokens)
    for batch in chunks(items):
        messages = [m for m in batch if isinstance(m, Message)]
        rows = count_rows([vocab.lookup(tokenize(m.data)) for m in messages], len(vocab))
        odds = nb.batch_log_odds(event, table, b, rows)
        scored = iter(zip(messages, odds, model.scoring.probabilities(odds), strict=True))
        for item in batch:
            if isinstance(item, Problem):
                yield item
                continue
            m, lo, p = next(scored)
            yield Scored(m.id, m.label, float(lo), float(p), model.scoring.verdict(float(p)))
        if progress:
            progress(len(batch))


def fold_of(message_id: str, k: int) -> int:
    """The fold of a message: by the digest of its file name, so splits are reproducible."""
    return int(hashlib.md5(os.path.basename(message_id).encode("utf-8", "surrogateescape")).hexdigest()[:8], 16) % k


def cross_validate(
    items: Iterable[Item],
    k: int,
    tokens: TokenSettings,
    scoring: Scoring,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[Scored], list[Problem]]:
    """k-fold cross-validation: every labelled message scored by a model trained without its fold.

    Messages are tokenised once; each fold's model is the total counts less the fold's.
    """
    if k < 2:
        raise ValueError(f"--folds needs at least 2 folds, not {k}")
    vocab = Vocabulary()
    tokenize = Tokenizer(tokens)
    docs: list[list[int]] = []
    ids: list[str] = []
    labels: list[str] = []
    problems: list[Problem] = []
    for batch in chunks(items):
        for item in batch:
            if isinstance(item, Problem):
                problems.append(item)
                continue
            if item.label not in LABEL_CLASS:
                raise ValueError(f"{item.id}: no class to learn it as")
            docs.append(vocab.grow(tokenize(item.data)))
            ids.append(item.id)
            labels.append(item.label)
        if progress:
            progress(len(batch))
    X = count_rows(docs, len(vocab))
    y = np.array([LABEL_CLASS[label] for label in labels], dtype=np.int64)
    folds = np.array([fold_of(i, k) for i in ids], dtype=np.int64)
    total = nb.Counts.empty(len(vocab))
    total.add(X, y)
    event = scoring.event_model()
    odds = np.zeros(len(ids))
    probs = np.zeros(len(ids))
    for fold in range(k):
        test = np.flatnonzero(folds == fold)
        if test.size == 0:
            continue
        train_rows = np.flatnonzero(folds != fold)
        train = total - counts_of(X[test], y[test], len(vocab))
        nb.check_trained(train)
        odds[test] = fold_log_odds(event, train, X[test])
        # As `train` would: calibration fitted on the fold's own training messages only.
        fitted = calibrated(scoring, event, train, X[train_rows], y[train_rows])
        probs[test] = fitted.probabilities(odds[test])
    scored = [
        Scored(i, label, float(lo), float(p), scoring.verdict(float(p)))
        for i, label, lo, p in zip(ids, labels, odds, probs, strict=True)
    ]
    return scored, problems


def counts_of(X, y: np.ndarray, n_features: int) -> nb.Counts:
    out = nb.Counts.empty(n_features)
    out.add(X, y)
    return out


def fold_log_odds(event: nb.EventModel, train: nb.Counts, X) -> np.ndarray:
    """Log-odds of the rows X under a model of the counts `train`, which knows only its own tokens."""
    seen = np.flatnonzero(train.tf.sum(axis=0) > 0)
    table_seen, b = event.table(nb.Counts(train.docs, train.tf[:, seen], train.df[:, seen]))
    table = np.zeros((train.n_features, *table_seen.shape[1:]))
    table[seen] = table_seen
    return nb.batch_log_odds(event, table, b, X)


CALIBRATION_FOLDS = 5
# Fewer learnt messages of either class than this and the calibration is left as it was.
CALIBRATION_MIN = 20


def held_out_log_odds(event: nb.EventModel, counts: nb.Counts, X, y: np.ndarray, k: int = CALIBRATION_FOLDS) -> np.ndarray:
    """Log-odds of each learnt row X (already inside `counts`) by a model without its 1/k share of X."""
    odds = np.zeros(X.shape[0])
    part = np.arange(X.shape[0]) % k
    for fold in range(k):
        rows = np.flatnonzero(part == fold)
        if rows.size:
            odds[rows] = fold_log_odds(event, counts - counts_of(X[rows], y[rows], counts.n_features), X[rows])
    return odds


def calibrated(scoring: Scoring, event: nb.EventModel, counts: nb.Counts, X, y: np.ndarray) -> Scoring:
    """`scoring` with Platt scaling fitted on held-out log-odds of learnt messages X, y."""
    y = np.asarray(y)
    if min(int((y == nb.SPAM).sum()), int((y == nb.HAM).sum())) < CALIBRATION_MIN:
        return scoring
    odds = held_out_log_odds(event, counts, X, y)
    return dataclasses.replace(scoring, calibration=fit_platt(odds, y == nb.SPAM))
