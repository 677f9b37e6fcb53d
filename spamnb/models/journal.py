"""The journal: messages learnt one at a time, appended beside the model.

Learning one message used to load and rewrite the whole model, which grows with the
vocabulary.  Now its count changes go to `MODEL.journal` as one record, written and
fsynced under the model's lock, and every reader of the model (`store.load`, the
pipe's `onemessage`) adds the journal's changes to the model's counts.  Any bulk
`train` (or `merge`) folds the journal in: it loads the model with it, saves the
model atomically and removes the journal; a learn that grows the journal past
`FOLD_SIZE` does the same.

File: a header (`MAGIC`, the identity of the model it applies to, a CRC of both),
then records (`REC`, payload length, CRC of the payload; the payload one line
`DIGEST BEFORE AFTER [FEATURES] [s=SCORE]` then `COUNT TOKEN` lines; FEATURES, the message's
numeric features joined by commas, where the model scores them: spamnb.bayes.meta; SCORE,
a message learnt anew, its log-odds before it was learnt, for the calibration's history:
spamnb.models.calibration), or a scoring record, one line `scoring A B FLOOR`: the
calibration and ham-loss floor refitted by a learn, which readers use instead of the model's.  The identity is a checksum of the
model's zip directory, which holds every member's CRC: once the model is rewritten
(a fold), the old journal no longer applies and is ignored, so a reader between the
fold's rename and the journal's removal never counts a message twice.  A record cut
short at the end is a learn still being written (or killed before it could succeed):
readers skip it, the next learner cuts it off.  Any other damage is a ModelError.
Nothing here imports numpy.
"""
from __future__ import annotations

import contextlib
import math
import os
import struct
import zlib

from spamnb.bayes import meta
from spamnb.models import trust
from spamnb.models.modelfile import ModelError
from spamnb.models.npzview import identity  # noqa: F401 - the journal's key, read by its users here

# `typing` and `collections.abc` are off the one-message pipe's start-up: names for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import TypeVar

    from spamnb.models.scoring import Scoring

    S = TypeVar("S", bound=Scoring)

MAGIC = b"SPAMNBJ1"
HEAD = struct.Struct("<8s8sI")  # magic, model identity, CRC of the two
REC = struct.Struct("<4sII")  # b"JREC", payload length, CRC of the payload
REC_TAG = b"JREC"
# Learns go to the journal until it is this large, then it is folded into the model
# (a fold rewrites the model, so not after every learn).  A message's record is ~3 KB.
FOLD_SIZE = 64 << 10
# A journal whose folds keep failing (no room for the model's new copy) grows: past this a
# learn fails instead of appending, and a reader refuses a larger file as not a journal.
MAX_SIZE = 64 * FOLD_SIZE
CLASS_CODES = {None: b"-", 0: b"0", 1: b"1"}
CODE_CLASSES = {v: k for k, v in CLASS_CODES.items()}


def journal_path(model_path: str) -> str:
    return os.path.realpath(model_path) + ".journal"


class Entry:
    """One learn: the message's digest, its class before and after (None: not learnt),
    its distinct tokens with their counts, its numeric features (None: not scored), and
    `score`: its log-odds before this learn (0 while the model lacked a class), where it is
    learnt anew (None otherwise), a held-out score for the calibration's history."""

    __slots__ = ("after", "before", "digest", "numeric", "score", "tokens")

    def __init__(
        self, digest: bytes, before: int | None, after: int | None, tokens: dict[str, int], numeric: list[int] | None = None, score: float | None = None
    ) -> None:
        self.digest, self.before, self.after, self.tokens, self.numeric, self.score = digest, before, after, tokens, numeric, score

    def payload(self) -> bytes:
        first = b"%s %s %s" % (self.digest.hex().encode(), CLASS_CODES[self.before], CLASS_CODES[self.after])
        if self.numeric is not None:
            first += b" " + b",".join(b"%d" % v for v in self.numeric)
        if self.score is not None:
            first += b" s=" + repr(self.score).encode()
        lines = [first, *(b"%d %s" % (n, t.encode("utf-8", "surrogatepass")) for t, n in self.tokens.items())]
        return b"\n".join(lines)

    @classmethod
    def parse(cls, payload: bytes) -> Entry:
        first, *rest = payload.split(b"\n")
        digest, before, after, *numbers = first.split(b" ")
        score = None
        if numbers and numbers[-1].startswith(b"s="):
            score = float(numbers.pop()[2:])
            if not math.isfinite(score):
                raise ValueError("a score that is not a number")
        numeric = [int(v) for v in numbers[0].split(b",")] if numbers else None
        if numeric is not None and max(map(abs, numeric)) > trust.MAX_COUNT:
            raise ValueError("numeric features out of range")
        if len(numbers) > 1 or (numeric is not None and len(numeric) != meta.WIDTH - 1):
            raise ValueError("a record of the wrong form")
        tokens = {}
        for line in rest:
            count, token = line.split(b" ", 1)
            tokens[token.decode("utf-8", "surrogatepass")] = int(count)
        if len(digest) != 32 or before not in CODE_CLASSES or after not in CODE_CLASSES or not 1 <= min(tokens.values(), default=1) <= max(tokens.values(), default=1) <= trust.MAX_COUNT:
            raise ValueError("a record of the wrong form")
        return cls(bytes.fromhex(digest.decode("ascii")), CODE_CLASSES[before], CODE_CLASSES[after], tokens, numeric, score)

    def changes(self) -> list[tuple[int, int]]:
        return changes(self.before, self.after)


SCORING_TAG = b"scoring "


class Fitted:
    """A scoring record: the calibration (a, b) and ham-loss floor a learn refitted."""

    __slots__ = ("calibration", "spam_floor")

    def __init__(self, calibration: tuple[float, float], spam_floor: float) -> None:
        self.calibration, self.spam_floor = calibration, spam_floor

    def applied_to(self, scoring: S) -> S:
        """`scoring` as this record leaves it: its calibration and floor, the rest as it was."""
        return scoring.replace(calibration=self.calibration, spam_floor=self.spam_floor)

    def payload(self) -> bytes:
        a, b = self.calibration
        return SCORING_TAG + b" ".join(repr(v).encode() for v in (a, b, self.spam_floor))

    @classmethod
    def parse(cls, payload: bytes) -> Fitted:
        a, b, floor = (float(v) for v in payload[len(SCORING_TAG) :].split(b" "))
        if not (math.isfinite(a) and a > 0 and math.isfinite(b) and 0.0 <= floor <= 1.0):
            raise ValueError("a scoring record of the wrong form")
        return cls((a, b), floor)


def decided(before: int | None, cls: int, forget: bool) -> tuple[str, int | None]:
    """The one decision of every learn (train, on Dask too, single learns, eval --online):
    learning a message known as `before` (None: never learnt) as `cls`, or forgetting it
    (`forget`).  What that does ("learnt", "moved", "already", "forgotten", or "never":
    never learnt, nothing to forget) and the message's class after it (None: not learnt);
    the counts change only where that is not `before`."""
    if forget:
        return ("never", None) if before is None else ("forgotten", None)
    if before == cls:
        return "already", before
    return ("learnt" if before is None else "moved"), cls


def tally(report: object, done: str, message_id: str) -> None:
    """One message's `decided` outcome counted in a learn's report (fields learnt, moved,
    already, forgotten, and the list never_learnt)."""
    if done == "never":
        report.never_learnt.append(message_id)  # type: ignore[attr-defined]
    else:
        setattr(report, done, getattr(report, done) + 1)


def changes(before: int | None, after: int | None) -> list[tuple[int, int]]:
    """(class, sign) of each count change: out of the class before, into the class after."""
    out = [] if before is None else [(before, -1)]
    return out + ([] if after is None else [(after, 1)])


class Journal:
    """What a model's journal changes: `docs` per class, per token (tf ham, tf spam,
    df ham, df spam), the numeric features' `moments` (spamnb.bayes.meta), and per digest its
    class now (None: forgotten); `history`, the scores its learns carry ((log-odds, class),
    in order), and `fitted`, its last scoring record (None: none)."""

    def __init__(self, path: str, size: int = 0) -> None:
        self.path, self.size, self.good_size = path, size, size
        self.docs = [0, 0]
        self.moments = meta.empty_moments()
        self.tokens: dict[str, list[int]] = {}
        self.learnt: dict[bytes, int | None] = {}
        self.history: list[tuple[float, int]] = []
        self.fitted: Fitted | None = None
        self.entries = 0

    def __bool__(self) -> bool:
        return self.entries > 0 or self.fitted is not None

    def add(self, entry: Entry) -> None:
        tokens = self.tokens
        for cls, sign in entry.changes():
            self.docs[cls] += sign
            if entry.numeric is not None:
                meta.add_message(self.moments, cls, entry.numeric, sign)
            df = 2 + cls
            for token, n in entry.tokens.items():
                delta = tokens.get(token)
                if delta is None:
                    tokens[token] = delta = [0, 0, 0, 0]
                delta[cls] += sign * n
                delta[df] += sign
        self.learnt[entry.digest] = entry.after
        if entry.score is not None and entry.after is not None:
            self.history.append((entry.score, entry.after))
        self.entries += 1

    # What every reader of the model (store.load's arrays, the pipe's OneModel) takes its
    # counts from: the model's, the journal's changes added by `applied`.

    def now(self, names: list[str], bases: Iterable[list[int] | None]) -> tuple[list[list[int]], set[str]]:
        """The counts (tf ham, tf spam, df ham, df spam) of the journal's tokens `names`, from
        `bases`, theirs in the model (None: a token it lacks); and those that went below zero."""
        out, clamped, tokens = [], set(), self.tokens
        for name, base in zip(names, bases, strict=True):
            counts, below = applied(base or [0, 0, 0, 0], tokens[name])
            out.append(counts)
            if below:
                clamped.add(name)
        return out, clamped

    def docs_now(self, base: list[int]) -> list[int]:
        """Messages per class, the model's `base` and the journal's."""
        return applied(base, self.docs)[0]

    def moments_now(self, base: list[list[list[int]]]) -> list[list[list[int]]]:
        """The numeric features' moments, the model's `base` and the journal's."""
        return [[[b + j for b, j in zip(*rows, strict=True)] for rows in zip(*cls, strict=True)] for cls in zip(base, self.moments, strict=True)]

    def learnt_into(self, learnt: dict[bytes, int]) -> None:
        """The model's digests (`learnt`, changed in place) as the journal left them."""
        for digest, cls in self.learnt.items():
            if cls is None:
                learnt.pop(digest, None)
            else:
                learnt[digest] = cls


def applied(base: list[int], change: list[int]) -> tuple[list[int], bool]:
    """Counts with a journal's changes added, for every reader (`store.load`, the pipe's
    `onemessage`), and whether any went below zero: forgetting after pruning can, and
    zero is the truth (as a train's `nb.Counts.clamp`)."""
    raw = [b + c for b, c in zip(base, change, strict=True)]
    return ([max(c, 0) for c in raw], True) if min(raw, default=0) < 0 else (raw, False)


def cut_short(data: bytes, at: int) -> bool:
    """Whether the record at `at`, which says it runs past the end, is one cut short (being
    written, or killed part way) rather than a damaged length: its bytes are not whole
    under its checksum, and no whole record lies after its header."""
    _, _, crc = REC.unpack_from(data, at)
    if zlib.crc32(data[at + REC.size :]) == crc:
        return False
    start = at + REC.size
    while (found := data.find(REC_TAG, start)) >= 0 and found + REC.size <= len(data):
        _, size, crc = REC.unpack_from(data, found)
        end = found + REC.size + size
        if end <= len(data) and zlib.crc32(data[found + REC.size : end]) == crc:
            return False
        start = found + 1
    return True


def damaged(path: str, why: str) -> ModelError:
    return ModelError(f"{path}: damaged spamnb journal ({why}); move it aside to use the model without the messages learnt since it was last folded in")


def read(model_path: str, model_identity: bytes) -> Journal:
    """The journal of the model whose identity is `model_identity`; empty when there is
    none or it belongs to an earlier version of the model file."""
    import stat

    path = journal_path(model_path)
    try:
        # Not followed if a symbolic link, never blocking on a FIFO, a regular file of bounded size.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return Journal(path)
    except OSError as err:
        raise ModelError(f"{path}: cannot read the journal ({err.strerror or err})") from err
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise damaged(path, "not a regular file")
        if st.st_size > MAX_SIZE:
            raise damaged(path, f"{st.st_size:,} bytes, more than a journal holds ({MAX_SIZE:,})")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_SIZE + 1)
    except OSError as err:
        raise ModelError(f"{path}: cannot read the journal ({err.strerror or err})") from err
    finally:
        os.close(fd)
    journal = Journal(path, len(data))
    if len(data) < HEAD.size:
        if not (MAGIC.startswith(data[:8]) or data[:8].startswith(MAGIC)):
            raise damaged(path, "not a journal")
        journal.good_size = 0  # a header still being written
        return journal
    magic, ident, crc = HEAD.unpack_from(data)
    if magic != MAGIC or zlib.crc32(data[:16]) != crc:
        raise damaged(path, "its header")
    if ident != model_identity:
        journal.good_size = 0  # the model was rewritten since: folded in already
        return journal
    at = HEAD.size
    while at < len(data):
        if len(data) - at < REC.size:
            break
        tag, size, crc = REC.unpack_from(data, at)
        if tag != REC_TAG:
            raise damaged(path, f"no record at byte {at}")
        end = at + REC.size + size
        if end > len(data):
            if not cut_short(data, at):
                raise damaged(path, f"the length of the record at byte {at}")
            break  # being written, or cut short by a crash: never acknowledged
        payload = data[at + REC.size : end]
        if zlib.crc32(payload) != crc:
            if end == len(data):
                break  # the last record, its bytes not all there yet (see above)
            raise damaged(path, f"checksum of the record at byte {at}")
        try:
            if payload.startswith(SCORING_TAG):
                journal.fitted = Fitted.parse(payload)
            else:
                journal.add(Entry.parse(payload))
        except (ValueError, UnicodeDecodeError) as err:
            raise damaged(path, f"the record at byte {at}: {err}") from err
        at = end
    journal.good_size = at
    return journal


def append(model_path: str, model_identity: bytes, journal: Journal, entries: list[Entry | Fitted]) -> int:
    """Write `entries` after the good records of `journal` (read under the lock just
    before), fsynced; returns the journal's size.  A journal of an earlier model, or a
    record cut short, is overwritten.  Call under `locked`."""
    path = journal_path(model_path)
    if not entries:
        return journal.good_size
    if journal.good_size > MAX_SIZE - FOLD_SIZE:
        raise ModelError(
            f"{path}: the journal is full ({journal.good_size:,} bytes: its changes could not be folded into the model, "
            "is its folder out of room?); nothing was learnt: the next bulk `spamnb train` folds it in once there is room"
        )
    head = b""
    if journal.good_size == 0:
        head = HEAD.pack(MAGIC, model_identity, zlib.crc32(MAGIC + model_identity))
    records = []
    for entry in entries:
        payload = entry.payload()
        records.append(REC.pack(REC_TAG, len(payload), zlib.crc32(payload)) + payload)
    from spamnb.models import ownership

    created = not os.path.exists(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        if created:  # the model's reader reads its journal too: the model's owner and mode
            ownership.adopt(fd, model_path, ownership.model_stat(model_path))
        os.ftruncate(fd, journal.good_size)
        os.lseek(fd, journal.good_size, os.SEEK_SET)
        data = head + b"".join(records)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException as err:
        os.close(fd)
        if created:  # nothing in it yet that counts: no journal (of the wrong owner, say) is left
            with contextlib.suppress(OSError):
                os.unlink(path)
        if isinstance(err, OSError):
            # Readers skip a record cut short, and the next learner cuts it off.
            raise ModelError(f"{path}: cannot write the model's journal ({err.strerror or err}); nothing was learnt") from err
        raise
    os.close(fd)
    if created:
        fsync_folder(path)
    return journal.good_size + len(data)


def remove(model_path: str) -> None:
    """After the model was saved with the journal in it (under the lock)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(journal_path(model_path))
        fsync_folder(journal_path(model_path))


def fsync_folder(path: str) -> None:
    dir_fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
