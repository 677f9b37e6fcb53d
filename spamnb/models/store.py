"""The model file: an `.npz` of plain arrays, saved atomically under a lock.

Arrays (V tokens, M learnt messages):
  format, version   "spamnb-model", format version
  tokens            uint8: the tokens, UTF-8, sorted, joined by newlines
  offsets           (V+1,) uint32: where each token starts in `tokens` (last: its length + 1);
                    optional (computed when absent), so that opening a model reads no vocabulary
  tf, df            (2, V) the smallest of uint8/16/32/64 that holds them: token occurrences /
                    messages holding it; rows ham, spam
  docs              (2,) int64: messages learnt per class
  weighted          (2, V) as tf, only with a TF-IDF weighting or length norm (nb.Weighting): per
                    class and token the sum of the learnt messages' transformed frequencies, in
                    units of 1 / nb.WEIGHT_SCALE
  weighted_totals   (2, 2) float64 beside it: per class the sums over the vocabulary that the
                    one-message scorer needs (events.Occurrences.vocabulary_sums); not loaded
  settings          JSON of the tokeniser settings; scoring: JSON of the scoring defaults
  learnt            (M, 16) uint8 digests of the learnt messages; learnt_class (M,) uint8
  meta              (2, W, W) int64: the numeric features' moments per class (spamnb.bayes.meta);
                    only in a model that scores them (scoring's "meta")
  history           (H,) float64: the calibration's history (spamnb.models.calibration), each
                    learnt message's log-odds before it was learnt; history_class (H,) uint8
                    its class.  Only where there is one (version 7 has none: an empty history)
Nothing is pickled: loading never executes code.  Members are stored uncompressed,
so that `load(path, scoring_only=True)` maps the file and reads only the pages a
message's tokens touch: scoring one message costs nearly the same with 10,000 or
1,000,000 tokens.  Deflated, a model would be a third of the size but take longer to
load whole, and lose the mapping.
"""
from __future__ import annotations

import contextlib
import io
import math
import mmap
import os
import re
from collections.abc import Callable
from typing import BinaryIO

import numpy as np

from spamnb.bayes import events, nb
from spamnb.bayes.vocabulary import SortedTokens, Vocabulary, token_offsets
from spamnb.models import calibration, journal, modelcheck, npzview, ownership, trust
from spamnb.models.lock import temp_prefix
from spamnb.models.model import Model, Scoring
from spamnb.models.modelfile import ModelError
from spamnb.models.npzview import FORMAT, READS, REQUIRED, VERSION, open_model
from spamnb.text.tokens import TokenSettings

# A model file's members as `npzview.open_members` reads them: the file mapped, each member by name.
Members = tuple[mmap.mmap | bytes, dict[str, npzview.Array]]


def smallest_uint(a: np.ndarray) -> np.ndarray:
    top = int(a.max()) if a.size else 0
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return a.astype(dtype)
    return a.astype(np.uint64)


class Prepared:
    """The arrays of a model that its calibration leaves as they are (the vocabulary sorted,
    its counts in that order, the learnt digests, the numeric features' moments), made and
    checked by `trust.check_values` when called, once: `train` has this done while the
    calibration's folds are scored on the workers (classifier.finish_learning's
    `meanwhile`), and `save` adds the scoring and the calibration's history.  Nothing may
    change the model's vocabulary, counts, digests or moments after a call (a prune does:
    `train` prepares a model it prunes only in its save)."""

    def __init__(self, model: Model) -> None:
        if model.scoring_only:
            raise ValueError("a model opened for scoring only cannot be saved")
        self.model = model
        self.made: tuple[nb.Counts, dict[str, np.ndarray], bool] | None = None

    def __call__(self) -> tuple[nb.Counts, dict[str, np.ndarray], bool]:
        """The counts in token order, the arrays, and whether they passed."""
        if self.made is None:
            self.made = counted_arrays(self.model)
        return self.made


def counted_arrays(model: Model) -> tuple[nb.Counts, dict[str, np.ndarray], bool]:
    """`Prepared`'s: the counts in token order, the arrays, and whether `trust.check_values` passes them."""
    vocab = model.vocab
    counts = model.counts
    blob, order = vocab.sorted_blob()
    if order is not None:
        counts = counts.take(order)
    tf, df = counts.tf, counts.df
    digests = sorted(model.learnt.items())
    numeric = {"meta": model.moments.astype(np.int64)} if model.scoring.meta != "none" else {}
    weighted = {"weighted": smallest_uint(counts.weighted)} if counts.weighted is not None else {}
    arrays = {
        **weighted,
        "format": np.array(FORMAT),
        "version": np.array(VERSION),
        "tokens": np.frombuffer(blob, dtype=np.uint8),
        "offsets": token_offsets(blob),
        "tf": smallest_uint(tf),
        "df": smallest_uint(df),
        "docs": counts.docs.astype(np.int64),
        "settings": np.array(model.tokens.to_json()),
        "learnt": np.frombuffer(b"".join(d for d, _ in digests), dtype=np.uint8).reshape(-1, 16),
        "learnt_class": np.array([c for _, c in digests], dtype=np.uint8),
        **numeric,
    }
    return counts, arrays, passes(trust.check_values, arrays)


def passes(check: Callable[[dict], None], arrays: dict[str, np.ndarray]) -> bool:
    """Whether `check` (trust's) passes `arrays`."""
    try:
        check(trust.of_numpy(arrays))
    except ValueError:
        return False
    return True


# The members of a model file in the order `save` writes them (every member is listed:
# `to_arrays` orders by this and refuses one missing here rather than drop it).
MEMBERS = (
    "weighted", "weighted_totals", "format", "version", "tokens", "offsets", "tf", "df", "docs", "settings", "scoring",
    "learnt", "learnt_class", "meta", "history", "history_class",
)


def to_arrays(model: Model, prepared: Prepared | None = None) -> dict[str, np.ndarray]:
    """The model's arrays as `save` writes them: the `prepared` ones (made now where not
    given) and those of its scoring and calibration."""
    counts, arrays, _ = (prepared or Prepared(model))()
    scores = model.history
    history = {"history": np.array([s for s, _ in scores], np.float64), "history_class": np.array([c for _, c in scores], np.uint8)} if scores else {}
    totals = {}
    if counts.weighted is not None:
        event = model.scoring.event_model()
        assert isinstance(event, events.Occurrences)  # model.Scoring lets only these weight
        totals = {"weighted_totals": event.vocabulary_sums(counts)}
    every = {**arrays, **totals, "scoring": np.array(model.scoring.to_json()), **history}
    return {name: every[name] for name in sorted(every, key=MEMBERS.index)}


def checked(path: str, arrays: dict[str, np.ndarray], prepared: Prepared) -> None:
    """`trust.check_values` of the model's `arrays` (`to_arrays`): the prepared ones passed
    already, the rest are checked now; where either part fails, all of them are checked,
    so that the error is the one every reader's check names first.  A ModelError for a
    model that would be damaged (a merge's sums past trust.MAX_COUNT): it is never written."""
    _, before, passed = prepared()
    try:
        if not (passed and passes(uncounted, {k: v for k, v in arrays.items() if k not in before})):
            trust.check_values(trust.of_numpy(arrays))
    except ValueError as err:
        raise ModelError(f"{path}: cannot save the model: it would be damaged ({err}); the model is as it was") from err


def uncounted(a: dict) -> None:
    """All `trust.check_values` asks of arrays that hold no counts (the scoring's and the calibration's)."""
    trust.check_kinds(a)
    trust.check_history(a)


def save(model: Model, path: str, prepared: Prepared | None = None) -> None:
    """Write to a temporary file beside `path`, fsync it, rename it over, fsync the folder.
    `prepared`: the model's `Prepared` arrays, made already or not."""
    path = os.path.realpath(path)  # a symlinked model is updated, not replaced by a file
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    import tempfile

    old = ownership.model_stat(path)
    ownership.check_writable(path, old)
    prepared = prepared or Prepared(model)
    arrays = to_arrays(model, prepared)
    checked(path, arrays, prepared)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            ownership.adopt(out.fileno(), path, old)  # before the data: a refusal costs no write
            write_npz(out, arrays)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        # ENOSPC says no file: name both.
        raise ModelError(f"{path}: cannot save the model ({err.strerror or err}, writing {tmp}); the model is as it was") from err
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    journal.remove(path)  # its changes are in the model now, renamed into place for good (saves are under the lock)


def write_npz(out: BinaryIO, arrays: dict[str, np.ndarray]) -> None:
    """An uncompressed `.npz` that refuses object arrays.

    `np.savez` of older NumPy releases that pyproject allows (1.25's, for one) has no
    `allow_pickle`: it would store the flag as one more array and pickle objects.
    """
    import zipfile  # off the pipe's start-up (see zip_directory)

    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


def load(path: str, growable: bool = False, scoring_only: bool = False, data: bytes | None = None) -> Model:
    """Read and validate a model file, its journal's changes added.

    Without `growable` the vocabulary stays a sorted blob (fast to open, for scoring);
    with it the vocabulary becomes a dictionary that training can extend.  With
    `scoring_only` the file is mapped, not read: counts are read-only views, the
    learnt digests are left unread, and the model cannot be saved (the pipe path).
    Either way every header is checked before any data is read (see modelcheck).
    A plain file (what `save` writes) is read one way, by `npzview`, as the pipe reads it,
    numpy's arrays viewing its members (`of_members`); only a zip of another kind
    (compressed members, ZIP64) goes to zipfile (`read_arrays`).
    `data`: the file's bytes, read already (the pipe's, npzview.NotPlain.data): nothing
    is mapped, so nothing is lost to a file cut short meanwhile.
    """
    members = validated(path) if data is None else None
    if members is not None:
        mm, a = members
        changes = journal.read(path, journal.identity(mm))
        # The mapped loader views the counts where they lie; a journal's changes go to copies.
        # Signed counts (no file spamnb writes has them) and an old file without offsets are copied too.
        mapped = scoring_only and not growable and not changes and "offsets" in a and all(a[k].kind == "u" for k in ("tf", "df", "weighted") if k in a)
        model = of_members(path, members, mapped)
    else:
        model, changes = read_foreign(path, data)
    if growable:
        model.growable()
    return with_journal(model, changes)


def read_foreign(path: str, data: bytes | None) -> tuple[Model, journal.Journal]:
    """The model in a zip that `npzview` does not read (compressed members, ZIP64), by zipfile,
    and its journal."""
    import zipfile  # off the pipe's start-up (see zip_directory)

    try:
        with open_model(path) if data is None else io.BytesIO(data) as file:
            ident = file_identity(file) if data is None else journal.identity(data)
            arrays = read_arrays(path, file)
    except ModelError:
        raise
    except (ValueError, TypeError, KeyError, EOFError, MemoryError, RecursionError, NotImplementedError, RuntimeError, zipfile.BadZipFile) as err:
        # zipfile raises NotImplementedError for an unknown compression method, RuntimeError for encryption.
        raise ModelError(f"{path}: not a readable spamnb model ({type(err).__name__}: {err})") from err
    except OSError as err:
        raise ModelError(f"{path}: cannot read the model ({err.strerror or err})") from err
    return from_arrays(arrays, path, growable=False), journal.read(path, ident)


def validated(path: str) -> Members | None:
    """The file's members, mapped (`npzview.open_members`), once it passed the one
    validation every reader of a model runs (checksums and `trust.validate`, as the pipe's
    `onemessage.OneModel` runs it); None for a zip the pipe does not read (`from_arrays`
    checks its arrays).  A ModelError for a model that fails."""
    try:
        return npzview.open_members(path, REQUIRED, trust.OPTIONAL, check=trust.ModelCheck(path))
    except npzview.NotPlain:
        return None
    except RecursionError as err:
        raise ModelError(f"{path}: damaged spamnb model (settings nested too deeply)") from err
    except (ValueError, TypeError, UnicodeDecodeError, AttributeError) as err:
        raise ModelError(f"{path}: damaged spamnb model ({err})") from err


def file_identity(file: BinaryIO) -> bytes:
    """journal.identity of an open model file (b"" for one that cannot be mapped, e.g. empty)."""
    try:
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return journal.identity(mm)
    except (OSError, ValueError):
        return b""


def with_journal(model: Model, changes: journal.Journal) -> Model:
    """The model with the changes of its journal (spamnb.models.journal) added by the rule
    every reader applies them by (`journal.Journal.now`, as the pipe's OneModel): counts of
    the tokens it learnt or forgot (new ones join the vocabulary), messages, moments, digests."""
    if not changes:
        return model
    vocab = model.learnable()
    names = list(changes.tokens)
    cols = vocab.grow(names)
    counts = model.counts
    counts.grow(len(vocab))
    if cols.size:
        base = np.concatenate([counts.tf[:, cols], counts.df[:, cols]]).T.tolist()  # per token: tf ham, tf spam, df ham, df spam
        now = np.array(changes.now(names, base)[0], dtype=np.int64).T
        counts.tf[:, cols], counts.df[:, cols] = now[:2], now[2:]
    counts.docs = np.array(changes.docs_now(counts.docs.tolist()), dtype=np.int64)
    model.moments = np.array(changes.moments_now(model.moments.tolist()), dtype=np.int64)
    changes.learnt_into(model.learnt)
    model.history = calibration.trimmed(model.history + changes.history)
    if changes.fitted is not None:  # a learn's refit (spamnb.models.calibration)
        model.scoring = changes.fitted.applied_to(model.scoring)
    return model


ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a member first, or an empty archive
NPY_MAGIC = b"\x93NUMPY"


def read_arrays(path: str, file: BinaryIO) -> dict[str, np.ndarray]:
    """The model's arrays, each header checked before its data is read or inflated."""
    import zipfile

    head = file.read(64)
    if head.startswith(NPY_MAGIC):
        raise ModelError(f"{path}: not a spamnb model (a single array, not an .npz archive)")
    if head[:4] not in ZIP_MAGIC:
        # `-m ~/Mail/archive.mbox`: say what it seems to be
        mail = head.startswith(b"From ") or re.match(rb"[!-9;-~]+:", head)
        raise ModelError(f"{path}: not a spamnb model ({'it holds mail, ' if mail else ''}not a zip archive)")
    file.seek(0)
    file_size = file.seek(0, os.SEEK_END)
    file.seek(0)
    with zipfile.ZipFile(file) as archive:
        entries = {info.filename: info for info in archive.infolist()}
        check_expansion(path, list(entries.values()))
        missing = [k for k in REQUIRED if f"{k}.npy" not in entries]
        if missing:
            raise ModelError(f"{path}: not a spamnb model (no {', '.join(missing)})")
        names = [k for k in (*REQUIRED, *OPTIONAL) if f"{k}.npy" in entries]

        def member(name: str) -> tuple[BinaryIO, modelcheck.Header]:
            stream = archive.open(entries[f"{name}.npy"])
            try:
                return stream, modelcheck.read_header(stream, entries[f"{name}.npy"].file_size)
            except BaseException:
                stream.close()
                raise

        def read(name: str, header: modelcheck.Header, stream: BinaryIO) -> np.ndarray:
            data = stream.read(header.nbytes)
            if len(data) != header.nbytes or stream.read(1):
                raise ValueError(f"{name} holds other than the {header.nbytes:,} bytes it declares")
            count = math.prod(header.shape)
            flat = np.frombuffer(data, dtype=header.dtype, count=count) if count else np.zeros(0, header.dtype)
            return flat.reshape(header.shape, order="F" if header.fortran else "C")

        # Format and version first: another version's layout may differ, and deserves "retrain".
        identity = {}
        for name in ("format", "version"):
            stream, header = member(name)
            with stream:
                try:
                    modelcheck.check_member(name, header)
                except ValueError as err:
                    raise ModelError(f"{path}: damaged spamnb model ({err})") from err
                identity[name] = read(name, header, stream)
        check_identity(path, identity["format"], identity["version"])
        headers, streams = {}, {}
        try:
            for name in names:
                streams[name], headers[name] = member(name)
            try:
                modelcheck.check_headers(headers)
            except ValueError as err:
                raise ModelError(f"{path}: damaged spamnb model ({err})") from err
            try:
                modelcheck.check_budget(headers, file_size)
            except ValueError as err:
                raise ModelError(f"{path}: not a spamnb model ({err})") from err
            return {name: read(name, headers[name], streams[name]) for name in names}
        finally:
            for stream in streams.values():
                stream.close()


# We store members uncompressed; a foreign file may compress them, but one that would
# inflate past this size at more than this ratio is a zip bomb, refused unread.
# (modelcheck.check_budget bounds the whole load by the file's size.)
MAX_INFLATED = 1 << 24
MAX_RATIO = 50


def check_expansion(path: str, members: list) -> None:
    """No member of the archive inflates to MAX_RATIO times its size and more than MAX_INFLATED bytes."""
    for info in members:
        if info.file_size > MAX_INFLATED and info.file_size > MAX_RATIO * info.compress_size:
            raise ModelError(f"{path}: not a spamnb model ({info.filename} would inflate {info.compress_size:,} bytes to {info.file_size:,})")


def check_identity(path: str, fmt: np.ndarray, version: np.ndarray) -> None:
    """The file says it is a spamnb model of the version this code reads."""
    if str(fmt[()]) != FORMAT:
        raise ModelError(f"{path}: not a spamnb model (format {str(fmt[()])[:40]!r})")
    if int(version[()]) not in READS:
        raise ModelError(f"{path}: model format version {int(version[()])}, this spamnb reads version {VERSION}; retrain")


def from_arrays(a: dict[str, np.ndarray], path: str, growable: bool, checked: bool = False) -> Model:
    """The model of arrays whose headers were checked (modelcheck.check_headers), and,
    unless `checked`, their values now (`trust.check_values`)."""
    try:
        if not checked:
            trust.check_values(trust.of_numpy(a))
        scoring = Scoring.from_json(str(a["scoring"][()]))
        model = copied(a, TokenSettings.from_json(str(a["settings"][()])), scoring)
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError) as err:
        raise ModelError(f"{path}: damaged spamnb model ({describe(err)})") from err
    if growable:
        model.growable()
    return model


def copied(a: dict[str, np.ndarray], tokens: TokenSettings, scoring: Scoring) -> Model:
    """The model of checked arrays, all it keeps copied out of them (counts widened to int64):
    nothing refers to the file's map after.  ValueError for arrays that do not agree."""
    offsets = np.array(a["offsets"]) if "offsets" in a else None
    vocab = SortedTokens(a["tokens"].tobytes(), offsets)
    if len(vocab) != a["tf"].shape[1]:
        raise ValueError(f"{len(vocab):,} tokens for counts of {a['tf'].shape[1]:,}")
    learnt, learnt_class = a["learnt"], a["learnt_class"]
    return Model(
        tokens=tokens,
        scoring=scoring,
        vocab=vocab,
        counts=counts_of(a, scoring, np.int64),
        learnt=dict(zip((bytes(row) for row in learnt), (int(c) for c in learnt_class), strict=True)),
        moments=saved_moments(a, scoring),
        history=saved_history(a),
    )


def saved_history(a: dict[str, np.ndarray]) -> list[tuple[float, int]]:
    """The calibration's history (spamnb.models.calibration); a model without one (version 7): empty."""
    if "history" not in a and "history_class" not in a:
        return []
    return trust.history_of(trust.of_numpy({k: a[k] for k in ("history", "history_class") if k in a}))


def saved_moments(a: dict[str, np.ndarray], scoring: Scoring) -> np.ndarray | None:
    """The numeric features' moments (a model without them: None, that is none learnt)."""
    trust.check_moments_saved(scoring.meta, "meta" in a)
    return a["meta"].astype(np.int64) if "meta" in a else None


# Members a model file may lack (trust.OPTIONAL) that this reader reads: all but the
# weighted sums' totals over the vocabulary, which only the pipe takes from the file (a save
# makes them anew from the counts).
OPTIONAL = tuple(k for k in trust.OPTIONAL if k != "weighted_totals")


def counts_of(a: dict[str, np.ndarray], scoring: Scoring, dtype: type | None = None) -> nb.Counts:
    """The counts of a model file's arrays (as stored, or widened to `dtype`), the weighted
    sums with them exactly when its scoring weights."""
    weighting = scoring.weighting()
    if bool(weighting) != ("weighted" in a):
        raise ValueError("weighted sums without a weighting" if "weighted" in a else "a weighting without its weighted sums")
    tf, df = (a[k] if dtype is None else a[k].astype(dtype) for k in ("tf", "df"))
    weighted = a.get("weighted")
    if weighted is not None and dtype is not None:
        weighted = weighted.astype(dtype)
    return nb.Counts(a["docs"].astype(np.int64), tf, df, weighted, weighting)


def describe(err: BaseException) -> str:
    if isinstance(err, RecursionError):
        return "settings nested too deeply"
    return str(err)


def of_members(path: str, members: Members, mapped: bool) -> Model:
    """The model of a plain file's members (`validated`), numpy's arrays viewing them where
    they lie: with `mapped`, for scoring only, the token blob, offsets and counts stay in the
    page cache and are touched only where a lookup goes; else what the model keeps is copied
    (counts widened to int64), and nothing holds the file's map after."""
    mm, a = members
    try:
        headers = {k: header_of(member) for k, member in a.items() if k != "weighted_totals"}
        modelcheck.check_headers(headers)
    except ValueError as err:
        raise ModelError(f"{path}: damaged spamnb model ({err})") from err
    try:
        modelcheck.check_budget(headers, len(mm))
    except ValueError as err:
        raise ModelError(f"{path}: not a spamnb model ({err})") from err
    try:
        arrays = {k: numpy_view(mm, a[k]) for k in ("offsets", "tf", "df", "docs", "weighted", "meta", "learnt", "learnt_class", "history", "history_class") if k in a}
        scoring = Scoring.from_json(a["scoring"].text())
        tokens = TokenSettings.from_json(a["settings"].text())
        if not mapped:
            return copied({**arrays, "tokens": numpy_view(mm, a["tokens"])}, tokens, scoring)
        return Model(
            tokens=tokens,
            scoring=scoring,
            vocab=SortedTokens(mm, arrays.get("offsets"), base=a["tokens"].offset, size=a["tokens"].shape[0]),  # type: ignore[arg-type]
            counts=counts_of(arrays, scoring),
            scoring_only=True,
            moments=saved_moments(arrays, scoring),
        )
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError) as err:
        raise ModelError(f"{path}: damaged spamnb model ({describe(err)})") from err


def header_of(member: npzview.Array) -> modelcheck.Header:
    """A member's `.npy` header as modelcheck takes it (npzview checked its size already)."""
    order = "<" if member.little else ">"
    dtype = np.dtype(f"{order}U{member.itemsize // 4}" if member.kind == "U" else f"{order}{member.kind}{member.itemsize}")
    nbytes = member.count * dtype.itemsize
    return modelcheck.Header(member.shape, dtype, member.fortran, 0, nbytes)


def numpy_view(mm: mmap.mmap | bytes, member: npzview.Array) -> np.ndarray:
    """A number array as it lies in the file, read-only."""
    dtype = np.dtype(f"{'<' if member.little else '>'}{member.kind}{member.itemsize}")
    if member.count == 0:
        return np.zeros(member.shape, dtype=dtype)
    # (2, V) counts come out of a column gather in Fortran order: both classes of a token side by side.
    return np.frombuffer(mm, dtype=dtype, count=member.count, offset=member.offset).reshape(member.shape, order="F" if member.fortran else "C")


def empty_model(tokens: TokenSettings, scoring: Scoring) -> Model:
    return Model(tokens=tokens, scoring=scoring, vocab=Vocabulary())
