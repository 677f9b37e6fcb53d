"""`spamnb eval --online`: the TREC spam track's online protocol, in one process.

Messages come in the order given; each is scored by the model learnt from the
messages before it, then learnt as its class (with `train_on_error`, only when the
verdict was wrong or unsure).  The model is the one-message scorer's
(`onemessage.OneModel`) over the starting model's file, each learn added to its
journal in memory (`OneModel.learn`), so a message is scored exactly as `classify`
would score it with a model trained on the messages before it, and nothing is written.

P(spam) and the spam floor follow the one learn plan of single learns (`train --spam|--ham
-`, `spamnb.pipe.learnone`): each message learnt anew adds its score (taken before it was
learnt, so held out) to the calibration's history, which starts as the starting model's,
and at the history's refit points Platt's calibration and the ham-loss floor are refitted
on it (spamnb.models.calibration).  So a user who pipes each message to `classify --pipe`
and then to `train --spam|--ham -` gets the verdicts measured here.  The numeric features'
weight (`--meta`) stays the starting model's, as single learns leave it.
"""
from __future__ import annotations

import math
import os
import tempfile
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import numpy as np

from spamnb.bayes import meta
from spamnb.bayes.vocabulary import Rows
from spamnb.mail import headers
from spamnb.mail.sources import Item, Problem
from spamnb.models import calibration, journal
from spamnb.models.model import Model, Scoring
from spamnb.pipe import onemessage
from spamnb.run.classifier import Scored, chunks, class_of
from spamnb.run.parallel import ordered_map
from spamnb.text.tokens import Tokenizer, TokenSettings


class Online(NamedTuple):
    scored: list[Scored]
    problems: list[Problem]
    learnt: int  # messages learnt (all of them, or with train_on_error the mistakes)


def evaluate(
    items: Iterable[Item],
    model_path: str | None,
    tokens: TokenSettings,
    scoring: Scoring,
    train_on_error: bool = False,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
) -> Online:
    """Score then learn each labelled message in turn; `model_path` None starts empty.

    With `jobs` > 1 the messages are tokenised by that many processes ahead of the one
    that scores and learns them in order (the learning itself cannot be split).
    """
    with tempfile.TemporaryDirectory(prefix="spamnb-online-") as folder:
        if model_path is None:
            from spamnb.models import store

            model_path = os.path.join(folder, "empty.npz")
            store.save(store.empty_model(tokens, scoring), model_path)
        if scoring.weighting():
            from spamnb.models import store

            return run(Loaded(store.load(model_path), scoring), items, train_on_error, progress, jobs)
        return run(onemessage.OneModel(model_path, scoring=scoring), items, train_on_error, progress, jobs)


class Loaded:
    """`onemessage.OneModel`'s online interface over a loaded model, for the scoring the
    one-message scorer leaves to numpy (a TF-IDF weighting or length norm)."""

    def __init__(self, model: Model, scoring: Scoring) -> None:
        """`model` is Loaded's from here on: learns go into it, and it scores with `scoring`."""
        model.scoring = scoring
        self.model, self.tokens, self.scoring = model, model.tokens, scoring
        self._gaussians: meta.Gaussians | None = None

    @property
    def docs(self) -> list[int]:
        return [int(d) for d in self.model.counts.docs]

    def log_odds_of(self, distinct: dict[str, int]) -> float:
        return self.model.explain(Counter(distinct)).log_odds

    def log_ratio(self, numeric: list[int]) -> float:
        """The numeric features' log-ratio (spamnb.bayes.meta), unweighted, as the one-message scorer's."""
        if self._gaussians is None:
            self._gaussians = meta.Gaussians(self.scoring.meta, self.model.moments.tolist())
        return self._gaussians.log_ratio(numeric)

    def learnt_class(self, digest: bytes) -> int | None:
        return self.model.learnt.get(digest)

    def history(self) -> list[tuple[float, int]]:
        return list(self.model.history)

    def learn(self, entry: journal.Entry) -> None:
        vocab = self.model.growable()
        cols = vocab.grow(list(entry.tokens))
        rows = Rows(cols, np.fromiter(entry.tokens.values(), np.int64, len(cols)), np.array([len(cols)]))
        for cls, sign in entry.changes():
            self.model.counts.add(rows, np.array([cls]), np.array([sign]))
        self.model.counts.grow(len(vocab))
        if entry.numeric is not None:
            moments = self.model.moments.tolist()
            for cls, sign in entry.changes():
                meta.add_message(moments, cls, entry.numeric, sign)
            self.model.moments, self._gaussians = np.array(moments, np.int64), None
        if entry.after is None:
            self.model.learnt.pop(entry.digest, None)
        else:
            self.model.learnt[entry.digest] = entry.after


# Messages per task sent to a tokenising process.
CHUNK = 64


def tokenise(state: tuple[Tokenizer, int, bool], datas: list[bytes]) -> list[tuple[bytes, dict[str, int], list[int] | None]]:
    """Map step: each message's digest (as learning takes it), its distinct tokens with
    their counts, and its numeric features (if the model scores them; else None)."""
    tokenize, cap, scored = state
    out = []
    for data in datas:
        tokens, numeric = tokenize.read(data, scored)
        out.append((headers.digest(data, cap), dict(Counter(tokens)), numeric))
    return out


def run(
    model: onemessage.OneModel, items: Iterable[Item], train_on_error: bool, progress: Callable[[int], None] | None, jobs: int = 1
) -> Online:
    scored: list[Scored] = []
    problems: list[Problem] = []
    learnt = 0
    batches: deque[list[Item]] = deque()
    scoring = model.scoring  # its calibration and floor refitted as the stream goes
    history = model.history()

    def tasks() -> Iterator[list[bytes]]:
        for batch in chunks(items, CHUNK):
            batches.append(batch)
            yield [m.data for m in batch if not isinstance(m, Problem)]

    for found in ordered_map(tokenise, (Tokenizer(model.tokens), model.tokens.max_bytes, model.scoring.meta != "none"), tasks(), jobs):
        batch, results = batches.popleft(), iter(found)
        for item in batch:
            if progress:
                progress(1)
            if isinstance(item, Problem):
                problems.append(item)
                continue
            key, counts, numeric = next(results)
            cls = class_of(item)
            trained = min(model.docs) > 0
            text = model.log_odds_of(counts) if trained else 0.0
            ratio = model.log_ratio(numeric) if trained and numeric is not None else 0.0
            log_odds = text + scoring.meta_weight * ratio
            p = scoring.probability(log_odds)
            verdict, floor = scoring.decide(p)
            scored.append(Scored(item.id, item.label, log_odds, p, verdict, floor))
            if train_on_error and verdict == item.label:
                continue
            before = model.learnt_class(key)
            if before is None:  # a model learnt before transport fields were left out (headers.learnt_digest)
                key = headers.first_known(key, headers.legacy_digests(item.data, model.tokens.max_bytes), lambda k: model.learnt_class(k) is not None)
                before = model.learnt_class(key)
            done, after = journal.decided(before, cls, forget=False)
            if after != before:
                score = log_odds if done == "learnt" else None  # as learnone scores a learn (0 before both classes are learnt)
                model.learn(journal.Entry(key, before, after, counts, numeric, score))
                learnt += 1
                if score is not None and calibration.added(history, [(score, cls)]):
                    scoring = calibration.refitted(scoring, history)
    return Online(scored, problems, learnt)


def running_errors(scored: list[Scored], windows: int = 60) -> list[float]:
    """The error rate (spam not flagged, ham flagged) over each of `windows` equal stretches of the stream."""
    wrong = [(s.verdict == "spam") != (s.label == "spam") for s in scored]
    size = max(1, -(-len(wrong) // windows))
    return [sum(wrong[i : i + size]) / len(wrong[i : i + size]) for i in range(0, len(wrong), size)]


BARS = " ▁▂▃▄▅▆▇█"


def sparkline(rates: list[float]) -> str:
    """Rates as bars, the tallest the largest rate."""
    top = max(rates, default=0.0)
    if top <= 0:
        return BARS[0] * len(rates)
    return "".join(BARS[min(len(BARS) - 1, math.ceil(r / top * (len(BARS) - 1)))] for r in rates)
