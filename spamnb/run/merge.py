"""Adding model files together: the counts are a sum, the learnt messages a union.

A message learnt in several of the models must count once.  The model files keep
only its digest, not its counts, so taking the extra copies off needs the message
itself (`messages`): it is tokenised and forgotten from every model but the one whose
copy is kept, exactly as `train --forget` would forget it.  Without the messages an
overlap is refused rather than counted twice.  A model learnt before the digest left
out the transport fields holds an older digest (`headers.legacy_digests`): a message
given is brought to the current digest in every model, so that its copies learnt
under either count once; without the message the two digests cannot be matched.  A message learnt as spam in one model
and ham in another is a conflict, refused unless `prefer` names the class to keep.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spamnb.bayes import nb
from spamnb.bayes.vocabulary import ModelVocabulary, Vocabulary
from spamnb.mail import headers
from spamnb.mail.sources import Item, Message, Problem
from spamnb.models import calibration
from spamnb.models.model import Model, summed_with
from spamnb.run.classifier import CALIBRATION_MIN, learn

CLASS_NAMES = {nb.HAM: "ham", nb.SPAM: "spam"}


class MergeError(ValueError):
    """The models cannot be merged as asked; the message says why and what would do."""


@dataclass
class MergeReport:
    added: int = 0  # messages the merged models brought that MODEL lacked
    counted_once: int = 0  # messages learnt in more than one model
    resolved: int = 0  # of those, learnt as different classes and settled by `prefer`
    calibrations: int = 0  # parts whose calibration went into the mean
    dropped_tokens: int = 0  # tokens no message holds any more (their copies forgotten)
    problems: list[Problem] = field(default_factory=list)


def check_settings(names: Sequence[str], models: Sequence[Model]) -> None:
    """Every model's counts were summed as the first's (`model.summed_with`): others do not add."""
    first = summed_with(models[0].tokens, models[0].scoring)
    for name, model in zip(names[1:], models[1:], strict=True):
        for theirs, ours in zip(summed_with(model.tokens, model.scoring), first, strict=True):
            if theirs != ours:
                raise MergeError(f"{name} was trained with {theirs}, {names[0]} with {ours}: their counts cannot be added")


def copies_to_forget(names: Sequence[str], models: Sequence[Model], prefer: int | None) -> tuple[list[dict[bytes, int]], int, int]:
    """Per model, the digests (and classes) of its copies to forget; how many messages
    were learnt more than once, and how many of those as both classes.

    The copy kept is the first model's (in the order given) that learnt the class kept.
    """
    holders: dict[bytes, list[int]] = {}
    for i, model in enumerate(models):
        for key in model.learnt:
            holders.setdefault(key, []).append(i)
    forget: list[dict[bytes, int]] = [{} for _ in models]
    repeated = conflicts = 0
    first_conflict: tuple[bytes, list[int]] | None = None
    for key, where in holders.items():
        if len(where) < 2:
            continue
        repeated += 1
        classes = {models[i].learnt[key] for i in where}
        if len(classes) == 1:
            keep_class = classes.pop()
        else:
            conflicts += 1
            if prefer is None:
                first_conflict = first_conflict or (key, where)
                continue
            keep_class = prefer
        keeper = next(i for i in where if models[i].learnt[key] == keep_class)
        for i in where:
            if i != keeper:
                forget[i][key] = models[i].learnt[key]
    if first_conflict:
        key, where = first_conflict
        spam, ham = (next(names[i] for i in where if models[i].learnt[key] == c) for c in (nb.SPAM, nb.HAM))
        raise MergeError(
            f"{conflicts} messages were learnt as different classes, the first (digest {key.hex()}) as spam in {spam} "
            f"and as ham in {ham}; choose the class to keep with --prefer spam|ham"
        )
    return forget, repeated, conflicts


def shared_messages(models: Sequence[Model], items: Iterable[Item] | None, report: MergeReport, max_bytes: int) -> dict[bytes, bytes]:
    """The bytes of each message of `items` that more than one model learnt, by its digest
    (of its first `max_bytes`, as learnt).

    A model that holds a message of `items` by a legacy digest (the one it knows it by, as
    `headers.learnt_digest` finds it for every learner: `headers.first_known`) is brought to the
    current one first, so that a copy it learnt before the digest changed and one another
    model learnt since are seen as one message.
    """
    holders = Counter(key for model in models for key in model.learnt)
    found: dict[bytes, bytes] = {}
    for item in items or ():
        if isinstance(item, Problem):
            report.problems.append(item)
            continue
        key, olds = headers.digest(item.data, max_bytes), headers.legacy_digests(item.data, max_bytes)
        for model in models:
            known = headers.first_known(key, olds, model.learnt.__contains__)  # the learners' rule (headers.learnt_digest)
            if known != key:
                model.learnt[key] = model.learnt.pop(known)
                holders[known] -= 1
                holders[key] += 1
        if holders[key] > 1:
            found.setdefault(key, item.data)
    return found


def require_messages(wanted: set[bytes], found: dict[bytes, bytes], given: bool) -> None:
    """That each message learnt more than once (`wanted`) is `found` among the messages
    `given` (--messages)."""
    if not wanted <= found.keys():
        missing = len(wanted - found.keys())
        lacking = f"{missing} of them are not among the --messages given" if given else "give it with --messages SRC"
        raise MergeError(f"{len(wanted)} messages were learnt in more than one model; to count each once their mail is needed: {lacking}")


def mean_calibration(parts: Sequence[Model], target: Model, report: MergeReport) -> dict[str, Any]:
    """The parts' Platt calibrations, spam floors and numeric features' weights, each
    weighted by the messages the part learnt (scoring changes for the merged model).

    Only parts scored as the target is (same event model and smoothing), and trained
    on enough of both classes to have fitted one; else the target's stay.
    """
    weights, fits = [], []
    for part in parts:
        same = (part.scoring.event, part.scoring.alpha) == (target.scoring.event, target.scoring.alpha)
        if same and int(part.counts.docs.min()) >= CALIBRATION_MIN:
            weights.append(float(part.counts.docs.sum()))
            fits.append((*part.scoring.calibration, part.scoring.spam_floor, part.scoring.meta_weight))
    report.calibrations = len(fits)
    if not fits:
        return {"calibration": target.scoring.calibration, "spam_floor": target.scoring.spam_floor}
    a, b, floor, weight = np.average(np.asarray(fits), axis=0, weights=weights)
    numeric = {"meta_weight": float(weight)} if target.scoring.meta != "none" else {}
    return {"calibration": (float(a), float(b)), "spam_floor": float(floor), **numeric}


def add_into(target: Model, vocab: Vocabulary, other: Model) -> None:
    """Add `other`'s counts and learnt digests into `target` (whose vocabulary is `vocab`)."""
    other_vocab = other.growable()
    other.counts.grow(len(other_vocab))
    cols = vocab.grow(other_vocab.tokens)
    target.counts.grow(len(vocab))
    target.counts.add_at(other.counts, cols)
    target.moments = target.moments + other.moments
    target.learnt.update(other.learnt)


def drop_empty_tokens(model: Model) -> int:
    """Drop tokens no learnt message holds (left by forgetting copies); how many."""
    vocab = model.growable()
    model.counts.grow(len(vocab))
    keep = np.flatnonzero(nb.token_totals(model.counts.tf) > 0)
    dropped = len(vocab) - keep.size
    if dropped:
        model.vocab = ModelVocabulary(full=Vocabulary([vocab.tokens[i] for i in keep.tolist()]))
        model.counts = model.counts.take(keep)
    return dropped


def merge(
    names: Sequence[str],
    models: Sequence[Model],
    prefer: int | None = None,
    messages: Iterable[Item] | None = None,
    jobs: int = 1,
) -> tuple[Model, MergeReport]:
    """One model holding the counts of all `models` (named `names`), each message once.

    The first model's scoring defaults are kept; the calibration and spam floor are the parts' mean
    (`mean_calibration`): without the mail, the held-out scores that train fits it on
    cannot be made.  The models are changed in place (their copies forgotten).
    """
    report = MergeReport()
    had = len(models[0].learnt)
    check_settings(names, models)
    found = shared_messages(models, messages, report, models[0].tokens.max_bytes)
    forget, report.counted_once, report.resolved = copies_to_forget(names, models, prefer)
    wanted = set().union(*forget)
    if wanted:
        require_messages(wanted, found, messages is not None)
        for model, drop in zip(models, forget, strict=True):
            if drop:
                items = [Message(key.hex(), found[key], CLASS_NAMES[cls]) for key, cls in drop.items()]
                learn(model, items, forget=True, jobs=jobs)
    target = models[0]
    fitted = mean_calibration(models, target, report)
    vocab = target.growable()
    for other in models[1:]:
        add_into(target, vocab, other)
    report.added = len(target.learnt) - had
    report.dropped_tokens = drop_empty_tokens(target)
    target.scoring = target.scoring.replace(**fitted)
    # The parts' calibration histories, one after another: the scores single learns refit on next.
    target.history = calibration.trimmed([pair for model in models for pair in model.history])
    return target, report
