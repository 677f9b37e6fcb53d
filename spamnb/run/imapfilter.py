"""`spamnb imap-filter`: score the messages that arrived in an IMAP folder since the last
run and move spam (and, if asked, unsure mail) to other folders, as isbg does for a
hosted mailbox.

What a run has seen is kept in a state file beside the model: per folder, its
UIDVALIDITY and the last UID handled, so that a re-run fetches only new mail; a new
UIDVALIDITY (the folder was rebuilt) scans it again.  The state is saved after each
batch's moves, so a run cut short repeats at most one batch.

No mail is ever lost: MOVE where the server has it, else COPY, then \\Deleted and a UID
EXPUNGE of exactly those messages, each step only after the one before succeeded.  A
connection cut between COPY and EXPUNGE leaves the message in the folder (and a copy
at the target); the next run handles it again.  A message the server cannot give stays
where it is, reported.
"""
from __future__ import annotations

import contextlib
import fcntl
import imaplib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from spamnb.mail import imap
from spamnb.mail.sources import Message, Problem, SourceError, read_cap
from spamnb.models.model import Model, Scored
from spamnb.run import classifier

STATE_SUFFIX = ".imap-state.json"


def state_path(model_path: str) -> str:
    return model_path + STATE_SUFFIX


@dataclass
class Outcome:
    """What a run did (or, dry, would do): messages scored, moved per folder, left where
    they are, and those the server could not give."""

    scored: int = 0
    moved: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def stayed(self) -> int:
        return self.scored - sum(self.moved.values())


@contextlib.contextmanager
def state_locked(path: str) -> Iterator[dict]:
    """The state file's contents, under an exclusive lock beside it: two runs on one state
    (cron starting one while the last still runs) would move the same mail twice."""
    lock = os.open(path + ".lock", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SourceError(f"{path}: another imap-filter run holds this state; not starting a second") from None
        try:
            with open(path, encoding="utf-8") as f:
                state = json.load(f)
            if not isinstance(state, dict):
                raise ValueError("not a JSON object")
        except FileNotFoundError:
            state = {}
        except (OSError, ValueError) as err:
            raise SourceError(f"{path}: the imap-filter state cannot be read ({err}); remove it to scan the folders again") from err
        yield state
    finally:
        os.close(lock)


def save_state(path: str, state: dict) -> None:
    """Replace the state file at once (a new file renamed over it): never half written."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=".imap-state.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(state, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def targets_of(spam_folder: str, unsure_folder: str | None) -> dict[str, str]:
    return {"spam": spam_folder, **({"unsure": unsure_folder} if unsure_folder else {})}


def filter_folder(
    model: Model,
    url: str,
    spam_folder: str,
    unsure_folder: str | None = None,
    access: imap.Access | None = None,
    state_file: str | None = None,
    dry_run: bool = False,
    told: Callable[[Scored, str | None], None] | None = None,
) -> Outcome:
    """Score the folder's new messages and move them by verdict; `told(result, target)`
    for each message scored (target None: it stays).  A dry run changes nothing, on the
    server or in the state."""
    where = imap.parse_url(url)
    targets = {verdict: folder for verdict, folder in targets_of(spam_folder, unsure_folder).items() if folder != where.folder}
    outcome = Outcome()
    cap = read_cap(model.tokens.max_bytes)
    state_cm = state_locked(state_file) if state_file is not None else contextlib.nullcontext({})
    with state_cm as state, contextlib.closing(imap.Session(where, access or imap.Access(), readonly=dry_run)) as session:
        client, uidvalidity = session.client, session.uidvalidity
        for folder in set(targets.values()):
            imap.require_folder(client, where, folder)
        key = str(where)
        seen = state.get(key)
        last = seen["last_uid"] if isinstance(seen, dict) and seen.get("uidvalidity") == uidvalidity else 0
        offered = imap.capabilities(client)
        can_move = "MOVE" in offered
        if not can_move and "UIDPLUS" not in offered and not dry_run:
            # A plain EXPUNGE would also remove what the user marked \Deleted.
            raise SourceError(f"{where.server}: the server has neither MOVE nor UIDPLUS: imap-filter cannot move just its own messages")
        try:
            # Planned up front: a new login (`imap.fetch_surviving`) must not cut the plan short.
            for batch in list(imap.batches(client, imap.uids_after(client, last), cap)):
                moves: dict[str, list[int]] = {}
                for uid, result in zip(batch, scored(model, session, batch, cap), strict=True):
                    if isinstance(result, Problem):
                        outcome.problems.append(result)
                        continue
                    outcome.scored += 1
                    target = targets.get(result.verdict)
                    if target is not None:
                        moves.setdefault(target, []).append(uid)
                        outcome.moved[target] = outcome.moved.get(target, 0) + 1
                    if told is not None:
                        told(result, target)
                if dry_run:
                    continue
                for target, uids in moves.items():
                    move(session.client, uids, target, can_move)
                if state_file is not None:
                    state[key] = {"uidvalidity": uidvalidity, "last_uid": batch[-1]}
                    save_state(state_file, state)
        except (OSError, imaplib.IMAP4.error, EOFError) as err:
            raise SourceError(f"{where}: stopped, every message not yet moved left where it was: {imap.reason(err)}") from err
    return outcome


def scored(model: Model, session: imap.Session, batch: list[int], cap: int | None) -> list[Scored | Problem]:
    """The batch's messages scored, in order; one the server cannot give is a Problem."""
    found, failed = imap.fetch_surviving(session, batch, cap)
    folder = session.where.folder
    items = [
        Message(name, found[uid]) if uid in found else Problem(name, f"{failed.get(uid, 'the server did not give it')}; left in {folder}")
        for uid in batch
        for name in [imap.message_id(session.where, session.uidvalidity, uid)]
    ]
    return list(classifier.classify(model, items))


def move(client: imaplib.IMAP4, uids: list[int], target: str, can_move: bool) -> None:
    """Move `uids` to `target`: MOVE, or COPY then \\Deleted then UID EXPUNGE of just those."""
    numbers = imap.uid_set(uids)
    if can_move:
        imap.ok(client.uid("MOVE", numbers, imap.quote(target)))
        return
    imap.ok(client.uid("COPY", numbers, imap.quote(target)))
    imap.ok(client.uid("STORE", numbers, "+FLAGS.SILENT", r"(\Deleted)"))
    imap.ok(client.uid("EXPUNGE", numbers))
