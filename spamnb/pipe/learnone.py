"""`spamnb train` of a few single messages into an existing model, without numpy: the
mail reader's "teach it this one" key (`| spamnb train --ham -`).

The model is mapped, not loaded (`onemessage.OneModel`); each message's count changes
go to the model's journal (`spamnb.models.journal`) under the model's lock, and are
folded into the model once the journal passes `journal.FOLD_SIZE`.  Learning stays
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

from spamnb.models import journal, lock, npzview
from spamnb.pipe.argv import options_of

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
    model_path = model_path or npzview.default_path()
    if not os.path.isfile(model_path) or not all(single_message_file(src) for _, src in sources):
        return None
    # -q (before `train`: parse_args takes no other place for it) drops the summary line.
    quiet = any(a in ("-q", "--quiet") for a in argv[: argv.index("train")])
    try:
        return learn(model_path, sources, forget, wait, quiet)
    except npzview.NotPlain:
        return None
    except (npzview.ModelError, OSError) as err:
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


def learn(model_path: str, sources: list[tuple[str, str]], forget: bool, wait: float | None = None, quiet: bool = False) -> int:
    from spamnb.mail import headers
    from spamnb.mail.sources import NOT_LEARNT, Problem, read_source, screened
    from spamnb.pipe import onemessage
    from spamnb.text.tokens import Tokenizer

    problems, never, entries = [], [], []
    learnt = moved = already = forgotten = 0
    with lock.locked(model_path, wait, notice):
        model = onemessage.OneModel(model_path)
        if model.weighted is not None:
            raise npzview.NotPlain(model_path)  # the journal holds no weighted sums: the full command line learns
        tokenize = Tokenizer(model.tokens)
        now: dict[bytes, int | None] = {}  # this run's changes, on top of model and journal
        for label, src in sources:
            for item in screened(read_source(src, label, model.tokens.max_bytes), lambda m: Problem(m.id, NOT_LEARNT, m.label)):
                if isinstance(item, Problem):
                    problems.append(item)
                    continue
                cls = LABEL_CLASS[label]
                key = headers.learnt_digest(item.data, model.tokens.max_bytes, lambda k: k in now or model.learnt_class(k) is not None)
                before = now[key] if key in now else model.learnt_class(key)
                if forget:
                    if before is None:
                        never.append(item.id)
                        continue
                    after, forgotten = None, forgotten + 1
                elif before == cls:
                    already += 1
                    continue
                else:
                    after = cls
                    moved, learnt = (moved + 1, learnt) if before is not None else (moved, learnt + 1)
                now[key] = after
                numeric: list[int] | None = [] if model.scoring.meta != "none" else None
                entries.append(journal.Entry(key, before, after, dict(Counter(tokenize(item.data, numeric))), numeric))
        size = journal.append(model_path, model.identity, model.journal, entries)
        docs = model.docs
        for entry in entries:
            for c, sign in entry.changes():
                docs[c] = max(docs[c] + sign, 0)
        postponed = ""
        if size > journal.FOLD_SIZE:
            try:
                fold(model_path)
            except npzview.ModelError as err:  # learnt all the same: the journal holds it, a later learn folds
                postponed = str(err)
    for p in problems:
        print(f"spamnb: {p.id}: {p.reason}", file=sys.stderr)
    for message_id in never:
        print(f"spamnb: {message_id}: never learnt, nothing to forget", file=sys.stderr)
    if postponed:
        print(f"spamnb: the messages are learnt (in the model's journal), but folding the journal into the model was postponed: {postponed}", file=sys.stderr)
    done = f"forgot {forgotten}" if forget else f"learnt {learnt}, moved {moved}"
    if not quiet or problems or never:  # as `train -q`: quiet unless something needs a look
        print(f"{model_path}: {done}, already known {already}; model holds {docs[1]} spam and {docs[0]} ham", file=sys.stderr)
    return EXIT_PARTIAL if problems or never else 0


def fold(model_path: str) -> None:
    """The journal into the model: loaded with it, saved atomically, the journal removed (under the lock)."""
    from spamnb.models import store

    store.save(store.load(model_path), model_path)
