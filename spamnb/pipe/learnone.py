"""`spamnb train` of a few single messages into an existing model, without numpy: the
mail reader's "teach it this one" key (`| spamnb train --ham -`).

The model is mapped, not loaded (`onemessage.OneModel`); each message's count changes
go to the model's journal (`spamnb.models.journal`) under the model's lock, and are
folded into the model once the journal passes `journal.FOLD_SIZE`.  Each message learnt
anew carries its log-odds before the learn (a held-out score) into the calibration's
history, and where that passes a refit point the calibration and ham-loss floor are
refitted on it, as `eval --online` refits them (spamnb.models.calibration): a scoring
record in the journal.  Learning stays
idempotent and `--forget` refuses what was never learnt, across model and journal:
the same checks as `classifier.learn`, on the digests of both.  Output and exit
statuses are `spamnb train`'s.

Anything else a `train` command line may ask (an index, a folder or mbox, settings,
pruning, --jobs, a model not yet made) returns None: the full command line takes it,
before any message has been read.
"""
from __future__ import annotations

import os
import sys
from collections import Counter

from spamnb.models import journal, lock, modelfile, npzview
from spamnb.pipe.argv import options_of

# `typing` is off a learn's start-up: names for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from spamnb.mail.sources import Item

LABEL_CLASS = {"ham": 0, "spam": 1}
EXIT_PARTIAL, EXIT_ERROR = 1, 3


def parse_args(argv: list[str]) -> tuple[str | None, list[tuple[str, str]], bool, float | None] | None:
    """(MODEL or None for the default, [(label, SRC)], forget, wait) of `[flags] train -m MODEL
    --spam|--ham SRC... [--forget] [--wait SECONDS]`; None for any other command line."""
    parsed = options_of(argv, "train", ("--forget",), ("-m", "--model", "--spam", "--ham", "--wait"))
    if parsed is None:
        return None
    model, sources, wait = None, [], None
    for name, value in parsed[0]:
        if name == "--model":
            model = value
        elif name in ("--spam", "--ham"):
            sources.append((name[2:], value))
        else:
            try:
                wait = float(value)
            except ValueError:
                return None  # the command line says what is wrong with it
            if not wait >= 0:
                return None
    if not sources or model == "" or sum(src == "-" for _, src in sources) > 1:
        return None
    return model, sources, "--forget" in parsed[1], wait


def single_message_file(src: str) -> bool:
    """A regular file that is no mbox (no envelope line first): one message."""
    if src == "-":
        return True
    if not os.path.isfile(src):  # before opening it: a FIFO would block the open
        return False
    try:
        with open(src, "rb") as f:
            return not f.read(5).startswith(b"From ")
    except OSError:
        return False


def main(argv: list[str]) -> int | None:
    """Learn (or forget) the messages of the command line into the journal; None if this is
    not such a command line (see the module's note)."""
    parsed = parse_args(argv)
    if parsed is None:
        return None
    model_path, sources, forget, wait = parsed
    model_path = model_path or modelfile.default_path()
    if not os.path.isfile(model_path) or not all(single_message_file(src) for _, src in sources):
        return None
    # -q (before `train`: parse_args takes no other place for it) drops the summary line.
    quiet = any(a in ("-q", "--quiet") for a in argv[: argv.index("train")])
    try:
        return learn(model_path, sources, forget, wait, quiet)
    except npzview.NotPlain:
        return None
    except (modelfile.ModelError, OSError) as err:
        print(f"spamnb: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as err:  # noqa: BLE001 - as the command line's `guarded`: one line, exit 3
        if "--debug" in argv:
            import traceback

            traceback.print_exc()
        print(f"spamnb: error: internal error: {type(err).__name__}: {err} (run with --debug for the traceback)", file=sys.stderr)
        return EXIT_ERROR


def notice(text: str) -> None:
    print(f"spamnb: {text}", file=sys.stderr, flush=True)


class Outcome:
    """What a learn did: counts of messages learnt, moved, already known and forgotten, the ids
    of those never learnt (nothing to forget), the sources' problems, and the model's docs after."""

    def __init__(self) -> None:
        self.learnt = self.moved = self.already = self.forgotten = 0
        self.never_learnt: list[str] = []
        self.problems: list = []
        self.docs = [0, 0]
        self.postponed = ""  # why folding the journal into the model waits for a later learn


def learn(model_path: str, sources: list[tuple[str, str]], forget: bool, wait: float | None = None, quiet: bool = False) -> int:
    from spamnb.mail.sources import read_source

    def items(max_bytes: int) -> Iterator[tuple[str, Item]]:
        return ((label, item) for label, src in sources for item in not_mail_skipped(read_source(src, label, max_bytes)))

    out = learn_items(model_path, items, forget, wait, notice)
    for p in out.problems:
        print(f"spamnb: {p.id}: {p.reason}", file=sys.stderr)
    for message_id in out.never_learnt:
        print(f"spamnb: {message_id}: never learnt, nothing to forget", file=sys.stderr)
    if out.postponed:
        print(f"spamnb: the messages are learnt (in the model's journal), but folding the journal into the model was postponed: {out.postponed}", file=sys.stderr)
    done = f"forgot {out.forgotten}" if forget else f"learnt {out.learnt}, moved {out.moved}"
    if not quiet or out.problems or out.never_learnt:  # as `train -q`: quiet unless something needs a look
        print(f"{model_path}: {done}, already known {out.already}; model holds {out.docs[1]} spam and {out.docs[0]} ham", file=sys.stderr)
    return EXIT_PARTIAL if out.problems or out.never_learnt else 0


def learn_data(model_path: str, data: bytes, label: str | None, wait: float | None = None) -> str:
    """One message in memory learnt as `label` (None: forgotten) as `train --LABEL -` [--forget] learns
    it from stdin (`spamnb serve`'s TELL): 'learnt', 'moved', 'already', 'forgotten' or 'never'."""
    from spamnb.mail.sources import Message, read_cap

    def items(max_bytes: int) -> list[tuple[str, Item]]:
        return [(label or "spam", item) for item in not_mail_skipped([Message("-", data[: read_cap(max_bytes)], label)])]

    out = learn_items(model_path, items, label is None, wait)
    if out.problems:
        raise ValueError(out.problems[0].reason)
    for name, n in (("learnt", out.learnt), ("moved", out.moved), ("forgotten", out.forgotten), ("never", len(out.never_learnt))):
        if n:
            return name
    return "already"


def not_mail_skipped(items: Iterable[Item]) -> Iterator[Item]:
    """A message without a header block is no mail: a Problem, not learnt (`sources.screened`)."""
    from spamnb.mail.sources import NOT_LEARNT, Problem, screened

    return screened(items, lambda m: Problem(m.id, NOT_LEARNT, m.label))


def learn_items(model_path: str, items: Callable[[int], Iterable[tuple[str, Item]]], forget: bool, wait: float | None = None, told: Callable[[str], None] | None = None) -> Outcome:
    """Learn (or forget) `items(max_bytes)`, (label, message) pairs, into the model's journal under its lock."""
    from spamnb.mail import headers
    from spamnb.mail.sources import Problem
    from spamnb.models import calibration
    from spamnb.pipe import onemessage
    from spamnb.text.tokens import Tokenizer

    out, entries = Outcome(), []
    history, due = None, False  # the calibration's history, read once a learn adds to it
    with lock.locked(model_path, wait, told):
        model = onemessage.OneModel(model_path)
        if model.weighted is not None:
            raise npzview.NotPlain(model_path)  # the journal holds no weighted sums: the full command line learns
        tokenize = Tokenizer(model.tokens)
        now: dict[bytes, int | None] = {}  # this run's changes, on top of model and journal
        for label, item in items(model.tokens.max_bytes):
            if isinstance(item, Problem):
                out.problems.append(item)
                continue
            cls = LABEL_CLASS[label]
            key = headers.learnt_digest(item.data, model.tokens.max_bytes, lambda k: k in now or model.learnt_class(k) is not None)
            before = now[key] if key in now else model.learnt_class(key)
            done, after = journal.decided(before, cls, forget)
            journal.tally(out, done, item.id)
            if after == before:
                continue
            now[key] = after
            tokens, numeric = tokenize.read(item.data, model.scoring.meta != "none")
            distinct = Counter(tokens)
            # Its score before the learn: 0 (no evidence) while the model lacks a class, as eval --online scores it.
            score = (model.log_odds_of(distinct, numeric=numeric) if min(model.docs) > 0 else 0.0) if done == "learnt" else None
            entry = journal.Entry(key, before, after, dict(distinct), numeric, score)
            if score is not None:
                history = model.history() if history is None else history
                due = calibration.added(history, [(score, after)]) or due
            model.learn(entry)  # in memory: the next message is scored after this one
            entries.append(entry)
        if due:
            fitted = calibration.refitted(model.scoring, history)
            if fitted != model.scoring:
                entries.append(journal.Fitted(fitted.calibration, fitted.spam_floor))
        size = journal.append(model_path, model.identity, model.journal, entries)
        out.docs = list(model.docs)
        if size > journal.FOLD_SIZE:
            try:
                fold(model_path)
            except modelfile.ModelError as err:  # learnt all the same: the journal holds it, a later learn folds
                out.postponed = str(err)
    return out


def fold(model_path: str) -> None:
    """The journal into the model: loaded with it, saved atomically, the journal removed (under the lock)."""
    from spamnb.models import store

    store.save(store.load(model_path), model_path)
