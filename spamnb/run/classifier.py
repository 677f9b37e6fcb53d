"""Learning and scoring streams of messages with one model: tokens -> features -> nb.

Messages are handled in chunks, so memory is bounded by the chunk size, not by the
number of messages.  Unreadable messages pass through as `Problem` items.
"""
from __future__ import annotations

import gc
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from spamnb.bayes import meta, nb
from spamnb.bayes.vocabulary import Chunk, Indexed, ModelVocabulary, Rows, Vocabulary, local_rows
from spamnb.mail import headers
from spamnb.mail.sources import Item, Message, Problem
from spamnb.models import calibration, journal, trust
from spamnb.models.model import Model, Scored, Scoring, fit_meta_weight
from spamnb.models.scoring import Decision
from spamnb.run.parallel import ordered_map
from spamnb.text.tokens import Tokenizer, TokenSettings, field_ids

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


class Tokenise(NamedTuple):
    """What the tokenising map step needs: the model's tokeniser, and whether its event
    model scores header fields apart (then each chunk carries its tokens' fields); the
    weighting of what a Dask worker counts; and whether the model scores the messages'
    numeric features (then each chunk carries those)."""

    tokenizer: Tokenizer
    by_field: bool
    weighting: nb.Weighting = nb.UNWEIGHTED
    numeric: bool = False

    @classmethod
    def of(cls, tokens: TokenSettings, scoring: Scoring) -> Tokenise:
        event = scoring.event_model()
        return cls(Tokenizer(tokens), event.by_field, event.weighting, scoring.meta != "none")

    @classmethod
    def for_folds(cls, tokens: TokenSettings, numeric: bool) -> Tokenise:
        """Cross-validation's step: fields come from the whole vocabulary (in `folds_scored`), not from each chunk."""
        return cls(Tokenizer(tokens), by_field=False, numeric=numeric)


def tokenise_chunk(step: Tokenise, datas: list[bytes], vocab: Vocabulary | Indexed | None = None) -> Chunk:
    """Map step: raw messages -> their distinct tokens and counts (and fields, if the event
    model uses them; and numeric features, if the model scores them; and the tokens' columns
    in `vocab`, if given)."""
    with collector_paused():
        if step.numeric:
            read = [step.tokenizer.read(data, True) for data in datas]
            chunk = local_rows([tokens for tokens, _ in read], vocab, step.by_field)
            return chunk._replace(numeric=np.array([numeric for _, numeric in read], dtype=np.int64).reshape(len(datas), meta.WIDTH - 1))
        return local_rows([step.tokenizer(data) for data in datas], vocab, step.by_field)


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: while a chunk is tokenised, the collector
    would walk its token lists, held and growing, again and again.  What the chunk leaves
    in cycles (the email package's parser makes some) is collected after it."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


class Score(NamedTuple):
    """What the scoring map step needs: a tokenising step and the model's vocabulary and weights."""

    tokenise: Tokenise
    vocab: Vocabulary | Indexed
    event: nb.EventModel
    table: np.ndarray
    b: float
    keys: np.ndarray
    gaussians: meta.Gaussians

    @classmethod
    def of(cls, model: Model) -> Score:
        table, b = model.table()
        event = model.scoring.event_model()
        return cls(Tokenise.of(model.tokens, model.scoring), model.vocab.for_scoring(), event, table, b, model.duplicate_keys(), model.gaussians())


def score_chunk(step: Score, datas: list[bytes]) -> np.ndarray:
    """Map step: raw messages -> log-odds under the model."""
    chunk = tokenise_chunk(step.tokenise, datas, step.vocab)
    odds = step.event.log_odds(step.table, step.b, chunk.rows._replace(cols=chunk.columns[chunk.rows.cols]), step.keys)  # type: ignore[index]
    return odds + log_ratios(step.gaussians, chunk.numeric)


def log_ratios(gaussians: meta.Gaussians, numeric: np.ndarray | None) -> np.ndarray | float:
    """The numeric features' term of each message (0 where the model has none)."""
    if numeric is None or gaussians.kind == "none":
        return 0.0
    return np.array([gaussians.log_ratio(q) for q in numeric.tolist()], dtype=np.float64).reshape(len(numeric))


def moments_of(numeric: np.ndarray, classes: np.ndarray, signs: np.ndarray | None = None) -> np.ndarray:
    """The moments (spamnb.bayes.meta) of messages' numeric features as their classes, each added
    (sign 1, the default) or taken away (-1): exact, in int64."""
    out = np.zeros((2, meta.WIDTH, meta.WIDTH), np.int64)
    v = np.column_stack([np.ones(len(numeric), np.int64), numeric]).astype(np.int64)
    signed = v if signs is None else v * np.asarray(signs, dtype=np.int64)[:, None]
    for cls in (nb.HAM, nb.SPAM):
        pick = np.asarray(classes) == cls
        out[cls] = signed[pick].T @ v[pick]
    return out


def class_of(message: Message) -> int:
    """nb.HAM or nb.SPAM for a labelled message; an unlabelled one cannot be learnt."""
    if message.label not in LABEL_CLASS:
        raise ValueError(f"{message.id}: no class to learn it as")
    return LABEL_CLASS[message.label]


def chunk_size(jobs: int) -> int:
    # Smaller tasks keep both workers busy to the end of a few thousand messages.
    return CHUNK if jobs <= 1 else CHUNK // 2


class Changes(NamedTuple):
    """One chunk's learning: which tokenised message each count change uses, its class and sign."""

    size: int
    which: list[int]
    classes: list[int]
    signs: list[int]

    def decide(self, model: Model, report: LearnReport, message_id: str, cls: int, key: bytes, forget: bool, at: int, offers: Offers) -> bool:
        """Learn (or forget) one message of digest `key` as `cls` (`changes_of`), as message
        `at` of the tokenised ones; whether its counts change.  Each learn is an offer to
        the calibration sample."""
        changes = changes_of(model, report, message_id, cls, key, forget)
        for c, sign in changes:
            self.which.append(at)
            self.classes.append(c)
            self.signs.append(sign)
            if sign > 0:
                offers.add(key)
        return bool(changes)


class Learning(NamedTuple):
    """Train's map step: `tokenise`'s, and with `keyed` each message's digest (of its first
    `limit` bytes) made beside its tokens (see `learn`)."""

    tokenise: Tokenise
    limit: int
    keyed: bool


def learn_chunk(step: Learning, datas: list[bytes]) -> tuple[list[bytes], Chunk]:
    """Map step: the messages' digests (none unless `step.keyed`) and `tokenise_chunk` of them."""
    keys = [headers.digest(data, step.limit) for data in datas] if step.keyed else []
    return keys, tokenise_chunk(step.tokenise, datas)


def learn(
    model: Model,
    items: Iterable[Item],
    forget: bool = False,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    meanwhile: Callable[[], object] | None = None,
) -> LearnReport:
    """Learn each labelled message as its class, or forget it (`forget=True`).

    Learning a message already learnt as the same class changes nothing; learnt as
    the other class, it moves.  Forgetting a message never learnt is refused
    (reported in `never_learnt`).  The digests are checked here, in order; only the
    messages whose counts change are learnt, tokenised by `jobs` processes.
    `meanwhile`: see `finish_learning`.
    """
    report = LearnReport()
    vocab = model.learnable()
    tokenise = Tokenise.of(model.tokens, model.scoring)
    # A model that held no message before the run learns every message but a repeat of one
    # met earlier in it: each chunk is tokenised whole before the decisions, its digests made
    # beside by the map step, off this process's loop.  A model that held messages has them
    # decided first and only those that change tokenised (and may know one by a legacy digest).
    keyed = not forget and not model.learnt
    limit = model.tokens.max_bytes
    pending: deque[tuple[int, list[Message], Changes | None]] = deque()
    sample = Reservoir(CALIBRATION_SAMPLE)
    offers = Offers()

    def decided(size: int, messages: list[Message], keys: Iterable[bytes]) -> tuple[Changes, list[int]]:
        """The chunk's count changes, decided in order, and which of `messages` they use."""
        change = Changes(size, [], [], [])
        picks: list[int] = []
        for i, (message, key) in enumerate(zip(messages, keys, strict=True)):
            if change.decide(model, report, message.id, class_of(message), key, forget, len(picks), offers):
                picks.append(i)
        return change, picks

    def tasks() -> Iterator[list[bytes]]:
        for batch in chunks(items, chunk_size(jobs)):
            messages: list[Message] = []
            for item in batch:
                if isinstance(item, Problem):
                    report.problems.append(item)
                else:
                    messages.append(item)
            if keyed:
                pending.append((len(batch), messages, None))
                yield [message.data for message in messages]
                continue
            keys = (headers.learnt_digest(m.data, limit, model.learnt.__contains__) for m in messages)
            change, picks = decided(len(batch), messages, keys)
            pending.append((len(batch), [], change))
            yield [messages[i].data for i in picks]

    for keys, chunk in ordered_map(learn_chunk, Learning(tokenise, limit, keyed), tasks(), jobs):
        size, messages, change = pending.popleft()
        if change is None:
            change, picks = decided(size, messages, keys)
            if len(picks) < len(messages):  # a repeat: the columns are numbered as if only the changed messages were tokenised
                chunk = tokenise_chunk(tokenise, [messages[i].data for i in picks])
        changed = apply_changes(model, vocab, chunk, change)
        if not forget:
            for learnt in learnt_in(changed, change, chunk.numeric):
                # Past the sample's size an offer may replace one: then what it keeps is its own
                # copy, not a view that holds its chunk's arrays (see `learnt_in`).
                sample.offer(learnt if sample.seen < sample.size else learnt.copy())
        if progress:
            progress(change.size)
    model.counts.resize(len(vocab))
    finish_learning(model, [item for number, item in zip(sample.numbers, sample.items, strict=True) if number not in offers.replaced], jobs, meanwhile)
    return report


def finish_learning(model: Model, sample: list[Sampled], jobs: int = 1, meanwhile: Callable[[], object] | None = None) -> None:
    """The end of a learn, once all its count changes are in: counts below zero set to zero
    (see nb.Counts.clamp), the calibration fitted on the `sample` of learnt messages.
    `meanwhile`: work of the caller's on the counts as they are now (the model's save
    prepared, store.Prepared), done in this process while the calibration's folds are
    scored on the workers (`calibrate_on`); not called where no worker scores them."""
    model.counts.clamp()
    if sample:
        calibrate_on(model, sample, jobs, meanwhile)


def changes_of(model: Model, report: LearnReport, message_id: str, cls: int, key: bytes, forget: bool) -> list[tuple[int, int]]:
    """The (class, sign) count changes of learning (or forgetting) one message of digest
    `key` as `cls` (`journal.decided`), in order; `model.learnt` and `report` are brought up to date."""
    before = model.learnt.get(key)
    done, after = journal.decided(before, cls, forget)
    journal.tally(report, done, message_id)
    if after == before:
        return []
    if after is None:
        del model.learnt[key]
    else:
        model.learnt[key] = after
    return journal.changes(before, after)


class Sampled(NamedTuple):
    """A learnt message as the calibration samples it."""

    cols: np.ndarray  # vocabulary columns
    counts: np.ndarray
    fields: np.ndarray | None  # each token's header field, where the event model scores them apart
    numeric: np.ndarray | None  # the numeric features, where the model scores them
    cls: int
    fresh: bool = True  # learnt anew, not moved from the other class

    def copy(self) -> Sampled:
        """With arrays of its own (`learnt_in`'s are views of its chunk's)."""
        return self._replace(cols=self.cols.copy(), counts=self.counts.copy(), fields=None if self.fields is None else self.fields.copy())


def calibrate_on(model: Model, sample: list[Sampled], jobs: int = 1, meanwhile: Callable[[], object] | None = None) -> None:
    """Fit the model's calibration on learnt messages (columns, counts, fields, numeric
    features, class), as `learn` samples them, and add their held-out scores to its
    history (spamnb.models.calibration).  Too few of a class to fit on (CALIBRATION_MIN),
    the calibration is refitted on the history where it passed a refit point, as single
    learns refit it."""
    cols, counts, fields, numeric, classes, fresh = zip(*sample, strict=True)
    learnt = Sample(cols, counts, fields)
    features = None if numeric[0] is None else Numeric(model.moments, np.array(numeric, dtype=np.int64))
    y = np.asarray(classes)
    if held_out_possible(model.counts, y):
        odds, ratios = held_out_scores(model.scoring, model.counts, learnt, y, jobs, features, meanwhile)
        model.scoring = calibrated(model.scoring, odds, ratios, y)
        z = odds if ratios is None else odds + model.scoring.meta_weight * ratios
    else:  # a fold's messages are all the model has of a class: 0 (no evidence), as a single learn scores them
        z = np.zeros(len(y))
    # Messages learnt anew only, as single learns score them (a moved one's score before its move was not held out).
    new = [(s, c) for s, c, f in zip(z.tolist(), y.tolist(), fresh, strict=True) if f]
    if calibration.added(model.history, new) and not enough_to_fit(y):
        model.scoring = calibration.refitted(model.scoring, model.history)


class Sample(NamedTuple):
    """Sampled messages' rows, each message's apart (`Sampled`): the calibration's folds
    join only their own (each on its worker), not all of them first in this process."""

    cols: tuple[np.ndarray, ...]
    counts: tuple[np.ndarray, ...]
    fields: tuple[np.ndarray | None, ...]

    def take(self, which: np.ndarray) -> Rows:
        """Messages `which` (indices, in that order, at least one), as `Rows.take` of them all joined."""
        picked = np.asarray(which, dtype=np.int64).tolist()
        lengths = np.array([len(self.cols[i]) for i in picked], dtype=np.int64)
        fields = None if self.fields[0] is None else np.concatenate([self.fields[i] for i in picked])
        return Rows(np.concatenate([self.cols[i] for i in picked]), np.concatenate([self.counts[i] for i in picked]), lengths, fields)


# Calibration is fitted on at most this many of the messages learnt in one call.
CALIBRATION_SAMPLE = 10_000


class Offers:
    """The messages offered to the calibration sample, numbered from 0 in order, and
    the offers that a later one of the same message (digest) replaces.

    A message that moves class within one run is offered as each class; only its last
    offer counts, since the counts hold it only as that class (held out as the class it
    left, its counts went below zero: numpy's RuntimeWarnings and a calibration fitted
    on a message labelled both ways)."""

    def __init__(self) -> None:
        self.count = 0
        self.last: dict[bytes, int] = {}
        self.replaced: set[int] = set()

    def add(self, key: bytes) -> None:
        before = self.last.get(key)
        if before is not None:
            self.replaced.add(before)
        self.last[key] = self.count
        self.count += 1


class Reservoir:
    """A uniform sample of at most `size` of the items offered (Vitter's algorithm R), reproducible;
    `numbers`: each item's place among the offers, from 0."""

    def __init__(self, size: int, seed: int = 0) -> None:
        self.size, self.seen, self.seed = size, 0, seed
        self.items: list[Sampled] = []
        self.numbers: list[int] = []
        self._rng: np.random.Generator | None = None

    def offer(self, item: Sampled) -> None:
        self.seen += 1
        if len(self.items) < self.size:
            self.items.append(item)
            self.numbers.append(self.seen - 1)
        else:
            j = int(self.rng().integers(self.seen))
            if j < self.size:
                self.items[j] = item
                self.numbers[j] = self.seen - 1

    def rng(self) -> np.random.Generator:
        # Made when first needed, so that train on fewer than `size` messages never imports
        # numpy.random, whose import comes before train's workers start.
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng


def learnt_in(changed: Rows, change: Changes, numeric: np.ndarray | None) -> Iterator[Sampled]:
    """Each message newly learnt (or moved) in a chunk, in order, as the calibration samples it:
    vocabulary columns, counts, fields, numeric features (`numeric`: the chunk's) and class.

    `changed`: the chunk's count changes as `apply_changes` made them, one message per
    change; each message's arrays are views of them (no copy per message)."""
    ends = np.cumsum(changed.lengths).tolist()
    moved = {i for i, sign in zip(change.which, change.signs, strict=True) if sign < 0}
    cols, counts, fields = changed.cols, changed.counts, changed.fields
    start = 0
    for i, cls, sign, end in zip(change.which, change.classes, change.signs, ends, strict=True):
        if sign > 0:
            yield Sampled(
                cols[start:end], counts[start:end], None if fields is None else fields[start:end], None if numeric is None else numeric[i], cls, i not in moved
            )
        start = end


def apply_changes(model: Model, vocab: ModelVocabulary, chunk: Chunk, change: Changes) -> Rows:
    """Add a chunk's count changes (`change`) into the model, its new tokens into `vocab`;
    the changes' messages over the vocabulary's columns, in the changes' order.  The counts
    may be left wider than the vocabulary (`nb.Counts.grow`'s spare columns): the learn
    `resize`s them once its last chunk is in."""
    if not change.which:
        return Rows(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    mapping = vocab.grow(chunk.tokens)
    rows = chunk.rows
    which = np.asarray(change.which)
    # A new model's train learns every message of a chunk, in order: nothing to pick.
    picked = rows if change.which == list(range(len(rows.lengths))) else rows.take(which)
    changed = Rows(mapping[picked.cols], picked.counts.astype(np.int64), picked.lengths, picked.fields)
    model.counts.grow(len(vocab), spare=True)
    model.counts.add(changed, np.asarray(change.classes), np.asarray(change.signs))
    if chunk.numeric is not None:
        model.moments += moments_of(chunk.numeric[which], np.asarray(change.classes), np.asarray(change.signs))
    return changed


def classify(
    model: Model,
    items: Iterable[Item],
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
) -> Iterator[Scored | Problem]:
    """Score every message: log-odds, P(spam) and the verdict under the model's cut-offs.

    Results come in the order of `items`, whatever `jobs`.
    """
    score = Score.of(model)
    batches: deque[list[Item]] = deque()

    def tasks() -> Iterator[list[bytes]]:
        for batch in chunks(items, chunk_size(jobs)):
            batches.append(batch)
            yield [m.data for m in batch if isinstance(m, Message)]

    for odds in ordered_map(score_chunk, score, tasks(), jobs):
        batch = batches.popleft()
        yield from scored_batch(model, batch, odds)
        if progress:
            progress(len(batch))


def scored_batch(model: Model, batch: list[Item], odds: np.ndarray) -> Iterator[Scored | Problem]:
    """A batch's results in its order: each message's log-odds `odds` (in order) with P(spam)
    and verdict; each Problem in its place."""
    scored = iter(zip(odds.tolist(), map(trust.check_score, model.scoring.probabilities(odds).tolist()), strict=True))
    for item in batch:
        if isinstance(item, Problem):
            yield item
            continue
        lo, p = next(scored)
        yield Scored(item.id, item.label, lo, p, *model.scoring.decide(p))


def name_digest(message_id: str) -> str:
    """The md5 of a message's file name, in hex: folds and samples by it are reproducible."""
    import hashlib  # here: classify needs no hash, and its start-up would pay the import

    return hashlib.md5(os.path.basename(message_id).encode("utf-8", "surrogateescape")).hexdigest()


def fold_of(message_id: str, k: int) -> int:
    """The fold of a message: by the digest of its file name, so splits are reproducible."""
    return int(name_digest(message_id)[:8], 16) % k


def first_by_digest(rows: np.ndarray, y: np.ndarray, digests: list[str], size: int) -> np.ndarray:
    """`size` of `rows`, each class in its share of them (rounded), the first of each by
    `name_digest`: spam, then ham (as ../shared/bench/peers.py --train-size lists them)."""
    n_spam = round(size * int((y[rows] == nb.SPAM).sum()) / max(len(rows), 1))
    pick = []
    for cls, k in ((nb.SPAM, n_spam), (nb.HAM, size - n_spam)):
        of_class = rows[y[rows] == cls]
        pick.append(of_class[sorted(range(len(of_class)), key=lambda i: digests[of_class[i]])[:k]])
    return np.concatenate(pick)


def cross_validate(
    items: Iterable[Item],
    k: int,
    tokens: TokenSettings,
    scoring: Scoring,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    pruning: nb.Pruning | None = None,
    train_size: int | None = None,
) -> tuple[list[Scored], list[Problem]]:
    """k-fold cross-validation: every labelled message scored by a model trained without its fold.

    Messages are tokenised once; each fold's model is the total counts less the fold's.
    `train_size`: each fold's model learns only that many of the other folds' messages
    (`first_by_digest`), a new user's first few hundred.
    """
    check_folds(k)
    return folds_scored(tokenise_labelled(items, tokens, progress, jobs, scoring.meta != "none"), k, scoring, pruning, train_size)


def check_folds(k: int) -> None:
    if k < 2:
        raise ValueError(f"--folds needs at least 2 folds, not {k}")


class Tokenised(NamedTuple):
    """Labelled mail tokenised once, for cross-validation: ids, labels, the Problems met,
    the vocabulary (columns by first sight) and the messages' rows over it."""

    ids: list[str]
    labels: list[str]
    problems: list[Problem]
    vocab: Vocabulary
    rows: Rows
    numeric: np.ndarray | None = None  # (messages, features), where asked for


class Gathered(NamedTuple):
    """A Tokenised as it is gathered, chunk by chunk, in order."""

    ids: list[str]
    labels: list[str]
    problems: list[Problem]
    vocab: Vocabulary
    parts: tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]
    numeric: list[np.ndarray]

    @classmethod
    def empty(cls) -> Gathered:
        return cls([], [], [], Vocabulary(), ([], [], []), [])

    def add_item(self, item: Item) -> None:
        """Note a message's id and label (or its Problem)."""
        if isinstance(item, Problem):
            self.problems.append(item)
            return
        class_of(item)
        self.ids.append(item.id)
        self.labels.append(item.label)  # type: ignore[arg-type]

    def add_chunk(self, chunk: Chunk) -> None:
        mapping = self.vocab.grow(chunk.tokens)
        self.parts[0].append(mapping[chunk.rows.cols])
        self.parts[1].append(chunk.rows.counts)
        self.parts[2].append(chunk.rows.lengths)
        if chunk.numeric is not None:
            self.numeric.append(chunk.numeric)

    def done(self) -> Tokenised:
        rows = Rows(*(np.concatenate(p) if p else np.zeros(0, np.int64) for p in self.parts))
        numeric = np.concatenate(self.numeric) if self.numeric else None
        return Tokenised(self.ids, self.labels, self.problems, self.vocab, rows, numeric)


def tokenise_labelled(
    items: Iterable[Item], tokens: TokenSettings, progress: Callable[[int], None] | None = None, jobs: int = 1, numeric: bool = False
) -> Tokenised:
    """Every labelled message tokenised by `jobs` processes, in order (with its numeric features, if asked)."""
    tokenise = Tokenise.for_folds(tokens, numeric)
    batches: deque[list[Item]] = deque()

    def tasks() -> Iterator[list[bytes]]:
        for batch in chunks(items, chunk_size(jobs)):
            batches.append(batch)
            yield [item.data for item in batch if not isinstance(item, Problem)]

    return gathered(((batches.popleft(), [chunk]) for chunk in ordered_map(tokenise_chunk, tokenise, tasks(), jobs)), progress)


def gathered(parts: Iterable[tuple[list[Item], list[Chunk]]], progress: Callable[[int], None] | None = None) -> Tokenised:
    """Labelled mail tokenised, from its parts in order: each a batch of items (messages and
    Problems) and the chunks of its messages' rows (`tokenise_labelled`, here or on Dask)."""
    got = Gathered.empty()
    for batch, batch_chunks in parts:
        for item in batch:
            got.add_item(item)
        for chunk in batch_chunks:
            got.add_chunk(chunk)
        if progress:
            progress(len(batch))
    return got.done()


def folds_scored(
    tokenised: Tokenised, k: int, scoring: Scoring, pruning: nb.Pruning | None = None, train_size: int | None = None
) -> tuple[list[Scored], list[Problem]]:
    """`cross_validate` of mail tokenised once."""
    check_folds(k)
    ids, labels, problems, vocab, data, numeric = tokenised
    if scoring.meta != "none" and numeric is None:
        raise ValueError("--meta scores the numeric features, which these messages were tokenised without")
    y = np.array([LABEL_CLASS[label] for label in labels], dtype=np.int64)
    folds = np.array([fold_of(i, k) for i in ids], dtype=np.int64)
    event = scoring.event_model()
    total = counts_of(data, y, len(vocab), event.weighting)
    digests = [name_digest(i) for i in ids] if train_size else []
    if event.by_field:
        data = data._replace(fields=field_ids(vocab.tokens)[data.cols])
    odds = np.zeros(len(ids))
    probs = np.zeros(len(ids))
    decisions: list[Decision] = [Decision("", None)] * len(ids)
    for fold in range(k):
        test = np.flatnonzero(folds == fold)
        if test.size == 0:
            continue
        train_rows = np.flatnonzero(folds != fold)
        held = data.take(test)
        if train_size:
            train_rows = first_by_digest(train_rows, y, digests, train_size)
            train = counts_of(data.take(train_rows), y[train_rows], len(vocab), event.weighting)
        else:
            train = total - counts_of(held, y[test], len(vocab), event.weighting)
        nb.check_trained(train)
        odds[test] = fold_log_odds(event, train, held, (pruning or nb.Pruning()).keep(train))
        features = None
        if scoring.meta != "none":
            features = Numeric(moments_of(numeric[train_rows], y[train_rows]), numeric[train_rows])  # type: ignore[index]
        # As `train` would: calibration (and the numeric features' weight) fitted on the fold's own training messages only.
        fitted = calibrated(scoring, *held_out_scores(scoring, train, data.take(train_rows), y[train_rows], numeric=features), y[train_rows])
        if features is not None:
            odds[test] += log_ratios(meta.Gaussians(scoring.meta, features.moments.tolist(), fitted.meta_weight), numeric[test])  # type: ignore[index]
        probs[test] = fitted.probabilities(odds[test])
        for row in test:
            decisions[row] = fitted.decide(float(probs[row]))
    scored = [
        Scored(i, label, float(lo), float(p), *decision)
        for i, label, lo, p, decision in zip(ids, labels, odds, probs, decisions, strict=True)
    ]
    return scored, problems


def counts_of(rows: Rows, y: np.ndarray, n_features: int, weighting: nb.Weighting = nb.UNWEIGHTED) -> nb.Counts:
    out = nb.Counts.empty(n_features, weighting)
    out.add(rows, y)
    return out


def fold_model(event: nb.EventModel, train: nb.Counts, seen: np.ndarray | None = None) -> tuple[np.ndarray, float, np.ndarray]:
    """(table, b, duplicate keys) over all columns of a model of the counts `train`, which
    knows only its own tokens (`seen`: those kept by pruning; by default every token with
    a count).  The other columns are tokens unknown to that model, scored as `classify`
    scores tokens missing from the vocabulary (the event model's `unknown_row`)."""
    if seen is None:
        seen = np.flatnonzero(nb.token_totals(train.tf) > 0)
    kept = train.take(seen)
    table_seen, b = event.table(kept)
    table = np.empty((train.n_features, *table_seen.shape[1:]))
    table[:] = event.unknown_row()
    table[seen] = table_seen
    keys = np.full(train.n_features, -1, np.int64)
    keys[seen] = nb.duplicate_keys(kept, least=event.duplicate_min)
    return table, b, keys


def fold_log_odds(event: nb.EventModel, train: nb.Counts, rows: Rows, seen: np.ndarray | None = None) -> np.ndarray:
    """Log-odds of `rows` under `fold_model(event, train, seen)`."""
    table, b, keys = fold_model(event, train, seen)
    return event.log_odds(table, b, rows, keys)


CALIBRATION_FOLDS = 5
# Fewer learnt messages of either class than this and the calibration is left as it was.
CALIBRATION_MIN = 20


def held_out_log_odds(
    event: nb.EventModel,
    counts: nb.Counts,
    learnt: Rows | Sample,
    y: np.ndarray,
    k: int = CALIBRATION_FOLDS,
    jobs: int = 1,
    meanwhile: Callable[[], object] | None = None,
) -> np.ndarray:
    """Log-odds of each learnt message (already inside `counts`) by a model without its 1/k share of them.

    The folds are independent, so `jobs` processes score them: they are train's serial
    tail after the last chunk.  All k go out to the workers at once, and this process
    does `meanwhile` (parallel.ordered_map) while they are scored.
    """
    part = np.arange(len(y)) % k
    folds = [fold for fold in range(k) if (part == fold).any()]
    odds = np.zeros(len(y))
    held_out = HeldOut(event, counts, learnt, y, part)
    for fold, fold_odds in zip(folds, ordered_map(held_out_fold, held_out, folds, jobs, meanwhile, ahead=k), strict=True):
        odds[part == fold] = fold_odds
    return odds


def held_out_possible(counts: nb.Counts, y: np.ndarray, k: int = CALIBRATION_FOLDS) -> bool:
    """Whether the model without each of `held_out_log_odds`' folds of messages (classes y,
    inside `counts`) still holds both classes."""
    part = np.arange(len(y)) % k
    return all(int(counts.docs[c]) > int(((part == fold) & (y == c)).sum()) for fold in range(k) for c in (nb.HAM, nb.SPAM))


class HeldOut(NamedTuple):
    """What the calibration's map step needs: the learnt messages, their classes and folds."""

    event: nb.EventModel
    counts: nb.Counts
    learnt: Rows | Sample
    y: np.ndarray
    part: np.ndarray


def held_out_fold(step: HeldOut, fold: int) -> np.ndarray:
    """Map step: the log-odds of calibration fold `fold`'s messages (see `held_out_log_odds`)."""
    event, counts, learnt, y, part = step
    rows = part == fold
    held = learnt.take(np.flatnonzero(rows))
    used, local = nb.used_columns(held.cols, counts.n_features)
    out = nb.Counts.empty(len(used), event.weighting)
    out.add(held._replace(cols=local), y[rows])
    table, b, keys = held_out_table(event, counts, out, used)
    # Scored a chunk at a time, as batch classify scores (a message's log-odds does not depend
    # on the others scored with it): the scorer's arrays are then reused from chunk to chunk,
    # where a whole fold's were new memory to a fresh worker, page by page.
    return np.concatenate([event.log_odds(table, b, rows, keys) for rows in held._replace(cols=local).pieces(CHUNK)])


def held_out_table(event: nb.EventModel, counts: nb.Counts, out: nb.Counts, used: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """`fold_model(event, counts - out)` at the columns `used` only; `out` counts only those.

    The duplicate keys group the same tokens (they are numbered apart).  A per-token
    event model (Fisher) needs only these columns' counts, so each fold's table covers
    only the columns its messages use, not the whole vocabulary.
    """
    if event.per_token:
        train = counts.take(used) - out
        train.clamp()  # a pruned model holds less than its messages' counts (see nb.Counts.clamp)
        return fold_model(event, train)
    train = counts.copy()
    train.add_at(out, used, -1)
    train.clamp()
    table, b, keys = fold_model(event, train)
    return table[used], b, keys[used]


class Numeric(NamedTuple):
    """The numeric features' moments of a model, and the features of some messages it learnt."""

    moments: np.ndarray
    rows: np.ndarray


def held_out_log_ratios(kind: str, numeric: Numeric, y: np.ndarray, k: int = CALIBRATION_FOLDS) -> np.ndarray:
    """The numeric features' term of each learnt message by the model without its 1/k share
    of them (the folds of `held_out_log_odds`)."""
    part = np.arange(len(y)) % k
    out = np.zeros(len(y))
    for fold in range(k):
        rows = part == fold
        if rows.any():
            without = numeric.moments - moments_of(numeric.rows[rows], y[rows])
            out[rows] = log_ratios(meta.Gaussians(kind, without.tolist()), numeric.rows[rows])
    return out


def held_out_scores(
    scoring: Scoring,
    counts: nb.Counts,
    learnt: Rows | Sample,
    y: np.ndarray,
    jobs: int = 1,
    numeric: Numeric | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Held-out log-odds of the `learnt` messages of classes y (by `jobs` processes, this
    one doing `meanwhile`: see `held_out_log_odds`) under `scoring`'s event model, and
    their numeric features' log-ratios where it has them."""
    odds = held_out_log_odds(scoring.event_model(), counts, learnt, np.asarray(y), jobs=jobs, meanwhile=meanwhile)
    return odds, None if numeric is None else held_out_log_ratios(scoring.meta, numeric, np.asarray(y))


def enough_to_fit(y: np.ndarray) -> bool:
    return min(int((y == nb.SPAM).sum()), int((y == nb.HAM).sum())) >= CALIBRATION_MIN


def calibrated(scoring: Scoring, odds: np.ndarray, ratios: np.ndarray | None, y: np.ndarray) -> Scoring:
    """`scoring` with Platt scaling and the ham-loss floor fitted on held-out log-odds of
    messages of classes y (`held_out_scores`), with the numeric features' weight where the
    scoring has one (`ratios`); as it was with too few of a class (CALIBRATION_MIN)."""
    y = np.asarray(y)
    if not enough_to_fit(y):
        return scoring
    weight = scoring.meta_weight
    if ratios is not None:
        weight = fit_meta_weight(odds, ratios, y == nb.SPAM)
        odds = odds + weight * ratios
    z, positive = odds.tolist(), (y == nb.SPAM).tolist()
    fit = calibration.fit_platt(z, positive)
    return scoring.replace(calibration=fit, spam_floor=calibration.ham_loss_floor(z, positive, fit), meta_weight=weight)
