"""The model file: an `.npz` of plain arrays, saved atomically under a lock.

Arrays (V tokens, M learnt messages):
  format, version   "spamnb-model", format version
  tokens            uint8: the tokens, UTF-8, sorted, joined by newlines
  offsets           (V+1,) uint32: where each token starts in `tokens` (last: its length + 1);
                    optional (computed when absent), so that opening a model reads no vocabulary
  tf, df            (2, V) the smallest of uint8/16/32/64 that holds them: token occurrences /
                    messages holding it; rows ham, spam
  docs              (2,) int64: messages learnt per class
  settings          JSON of the tokeniser settings; scoring: JSON of the scoring defaults
  learnt            (M, 16) uint8 digests of the learnt messages; learnt_class (M,) uint8
Nothing is pickled: loading never executes code.  Members are stored uncompressed,
so that `load(path, scoring_only=True)` maps the file and reads only the pages a
message's tokens touch: scoring one message costs nearly the same with 10,000 or
1,000,000 tokens.  Measured on the SpamAssassin corpus: 4.3 MB, compressed (zlib) it
would be 2.4 MB but take 4x longer to open and lose the mapping.
"""
from __future__ import annotations

import contextlib
import mmap
import os
import re
import zlib
from typing import BinaryIO

import numpy as np

from spamnb import journal, nb
from spamnb.features import SortedTokens, Vocabulary, token_offsets
from spamnb.journal import locked, remove_stale_temporaries, temp_prefix  # noqa: F401 - store's names before they moved
from spamnb.model import Model, Scoring
from spamnb.npzview import (  # Member and default_path: this module's names before they moved
    FORMAT,
    LOCAL_HEADER,
    REQUIRED,
    VERSION,
    Member,  # noqa: F401
    ModelError,
    default_path,  # noqa: F401
    zip_directory,
)
from spamnb.tokens import TokenSettings


def smallest_uint(a: np.ndarray) -> np.ndarray:
    top = int(a.max()) if a.size else 0
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return a.astype(dtype)
    return a.astype(np.uint64)


def to_arrays(model: Model) -> dict[str, np.ndarray]:
    vocab = model.vocab
    counts = model.counts
    if model.scoring_only:
        raise ValueError("a model opened for scoring only cannot be saved")
    if isinstance(vocab, SortedTokens):
        blob = vocab.data()
        tf, df = counts.tf, counts.df
    else:
        blob, order = vocab.sorted_blob()
        tf, df = counts.tf[:, order], counts.df[:, order]
    digests = sorted(model.learnt.items())
    return {
        "format": np.array(FORMAT),
        "version": np.array(VERSION),
        "tokens": np.frombuffer(blob, dtype=np.uint8),
        "offsets": token_offsets(blob),
        "tf": smallest_uint(tf),
        "df": smallest_uint(df),
        "docs": counts.docs.astype(np.int64),
        "settings": np.array(model.tokens.to_json()),
        "scoring": np.array(model.scoring.to_json()),
        "learnt": np.frombuffer(b"".join(d for d, _ in digests), dtype=np.uint8).reshape(-1, 16),
        "learnt_class": np.array([c for _, c in digests], dtype=np.uint8),
    }


def save(model: Model, path: str) -> None:
    """Write to a temporary file beside `path`, fsync it, rename it over, fsync the folder."""
    path = os.path.realpath(path)  # a symlinked model is updated, not replaced by a file
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            write_npz(out, to_arrays(model))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
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


def load(path: str, growable: bool = False, scoring_only: bool = False) -> Model:
    """Read and validate a model file.

    Without `growable` the vocabulary stays a sorted blob (fast to open, for scoring);
    with it the vocabulary becomes a dictionary that training can extend.  With
    `scoring_only` the file is mapped, not read: counts are read-only views, the
    learnt digests are left unread, and the model cannot be saved (the pipe path).
    """
    if scoring_only and not growable:
        try:
            mapped = load_mapped(path)
        except ModelError:
            raise
        except Exception:  # noqa: BLE001 - anything unusual: the full loader decides (and names the error)
            mapped = None
        if mapped is not None:
            return mapped
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError as err:
        raise ModelError(f"{path}: no such model file; create it with `spamnb train`") from err
    except IsADirectoryError as err:
        raise ModelError(f"{path}: a folder, not a spamnb model file") from err
    except OSError as err:
        raise ModelError(f"{path}: not a readable spamnb model ({type(err).__name__}: {err})") from err
    with file:
        ident = file_identity(file)
        arrays = read_arrays(path, file)
    return with_journal(from_arrays(arrays, path, growable), path, ident)


def file_identity(file: BinaryIO) -> bytes:
    """journal.identity of an open model file (b"" for one that cannot be mapped, e.g. empty)."""
    try:
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return journal.identity(mm)
    except (OSError, ValueError):
        return b""


def with_journal(model: Model, path: str, ident: bytes) -> Model:
    """The model with the changes of its journal (spamnb.journal) added: counts of the
    tokens it learnt or forgot (new ones join the vocabulary), messages, digests."""
    changes = journal.read(path, ident)
    if not changes:
        return model
    vocab = model.learnable()
    cols = np.asarray(vocab.grow(list(changes.tokens)), dtype=np.int64)
    counts = model.counts
    counts.grow(len(vocab))
    if cols.size:
        delta = np.array(list(changes.tokens.values()), dtype=np.int64).reshape(-1, 4)
        for cls in (nb.HAM, nb.SPAM):
            # Forgetting after pruning can take a count below zero; zero is the truth (as nb.Counts.add).
            counts.tf[cls, cols] = np.maximum(counts.tf[cls, cols] + delta[:, cls], 0)
            counts.df[cls, cols] = np.maximum(counts.df[cls, cols] + delta[:, 2 + cls], 0)
    counts.docs = np.maximum(counts.docs + np.asarray(changes.docs, dtype=np.int64), 0)
    for digest, cls in changes.learnt.items():
        if cls is None:
            model.learnt.pop(digest, None)
        else:
            model.learnt[digest] = cls
    return model


def read_arrays(path: str, file: BinaryIO) -> dict[str, np.ndarray]:
    """The model's arrays from an open file, checked to be what a model file holds."""
    import zipfile  # np.load imports it anyway; here for BadZipFile

    try:
        check_magic(path, file)
        npz = np.load(file, allow_pickle=False)
        if not isinstance(npz, np.lib.npyio.NpzFile):  # a lone .npy array
            raise ModelError(f"{path}: not a spamnb model (a single array, not an .npz archive)")
        with npz:
            check_expansion(path, npz.zip.infolist())
            missing = [k for k in REQUIRED if k not in npz.files]
            if missing:
                raise ModelError(f"{path}: not a spamnb model (no {', '.join(missing)})")
            check_identity(path, npz["format"], npz["version"])
            arrays = {k: npz[k] for k in (*REQUIRED, "offsets") if k in npz.files}
            strays = [k for k, v in arrays.items() if not isinstance(v, np.ndarray)]  # raw bytes: no .npy
            if strays:
                raise ModelError(f"{path}: not a spamnb model ({', '.join(strays)} not arrays)")
    except ModelError:
        raise
    except FileNotFoundError as err:
        raise ModelError(f"{path}: no such model file; create it with `spamnb train`") from err
    # zipfile raises NotImplementedError for an unknown compression method, RuntimeError for encryption.
    except (OSError, ValueError, TypeError, KeyError, EOFError, MemoryError, NotImplementedError, RuntimeError, zipfile.BadZipFile) as err:
        raise ModelError(f"{path}: not a readable spamnb model ({type(err).__name__}: {err})") from err
    return arrays


def check_magic(path: str, file: BinaryIO) -> None:
    """Refuse what is neither a zip archive nor a .npy array by its first bytes, naming
    what it seems to be (`-m ~/Mail/archive.mbox`): numpy would suggest `allow_pickle`."""
    head = file.read(64)
    file.seek(0)
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06", b"\x93NUMPY")):
        return
    if not head:
        raise ModelError(f"{path}: not a spamnb model (an empty file)")
    mail = head.startswith(b"From ") or re.match(rb"[!-9;-~]+:", head)
    raise ModelError(f"{path}: not a spamnb model ({'it holds mail' if mail else 'not an .npz archive'}; -m names the model file)")


# We store members uncompressed; a foreign file may compress them, but one that would
# inflate past this size at more than this ratio is a zip bomb, refused unread.
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
    if int(version[()]) != VERSION:
        raise ModelError(f"{path}: model format version {int(version[()])}, this spamnb reads version {VERSION}; retrain")


def check_offsets(offsets: np.ndarray, blob_size: int) -> None:
    if offsets.ndim != 1 or offsets.size < 1 or int(offsets[-1]) != blob_size + 1:
        raise ValueError("token offsets do not fit the token blob")


def check_shapes(n_tokens: int, tf: tuple[int, ...], df: tuple[int, ...], docs: tuple[int, ...], learnt: tuple[int, ...], learnt_class: tuple[int, ...]) -> None:
    """Counts for every token of both classes, and one class for each 16-byte digest."""
    if tf != (2, n_tokens) or df != tf or docs != (2,):
        raise ValueError(f"count arrays of shapes {tf}, {df}, {docs} for {n_tokens} tokens")
    if len(learnt) != 2 or learnt[1:] != (16,) or learnt_class != learnt[:1]:
        raise ValueError("learnt digests of the wrong shape")


def from_arrays(a: dict[str, np.ndarray], path: str, growable: bool) -> Model:
    try:
        blob = a["tokens"].tobytes()
        offsets = a.get("offsets")
        if offsets is not None:
            check_offsets(offsets, len(blob))
        vocab = SortedTokens(blob, offsets)
        tf = a["tf"].astype(np.int64)
        df = a["df"].astype(np.int64)
        docs = a["docs"].astype(np.int64)
        learnt, learnt_class = a["learnt"], a["learnt_class"]
        check_shapes(len(vocab), tf.shape, df.shape, docs.shape, learnt.shape, learnt_class.shape)
        if (docs < 0).any() or (tf < 0).any() or (df < 0).any():
            raise ValueError("negative counts")
        model = Model(
            tokens=TokenSettings.from_json(str(a["settings"])),
            scoring=Scoring.from_json(str(a["scoring"])),
            vocab=vocab,
            counts=nb.Counts(docs, tf, df),
            learnt=dict(zip((bytes(row) for row in learnt), (int(c) for c in learnt_class), strict=True)),
        )
    except (ValueError, TypeError, UnicodeDecodeError) as err:
        raise ModelError(f"{path}: damaged spamnb model ({err})") from err
    if growable:
        model.growable()
    return model


def load_mapped(path: str) -> Model | None:
    """The model for scoring, from a memory map of the file; None when the file is not plain.

    Reads the zip directory and the small arrays; the token blob, offsets and counts
    stay in the page cache and are touched only where a lookup goes.  Validation of
    shapes and format is the same as `load`'s; anything unexpected (a compressed
    member, an old file without offsets) returns None for the full loader.
    """
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below; the map outlives it
    except FileNotFoundError as err:
        raise ModelError(f"{path}: no such model file; create it with `spamnb train`") from err
    with file:
        mm = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        directory = zip_directory(mm)
        if journal.read(path, journal.identity(mm)):
            return None  # the full loader adds the journal's changes to copies of the counts
        names = [*REQUIRED, "offsets"]
        if directory is None or any(f"{k}.npy" not in directory or not directory[f"{k}.npy"].stored for k in names):
            return None
        spans = {}
        for k in names:
            info = directory[f"{k}.npy"]
            fields = LOCAL_HEADER.unpack_from(mm, info.header_offset)
            if fields[0] != b"PK\x03\x04":
                return None
            start = info.header_offset + LOCAL_HEADER.size + fields[-2] + fields[-1]
            # A damaged file must fail, not score: the members' checksums cost ~1 ms per MB.
            if zlib.crc32(memoryview(mm)[start : start + info.size]) != info.crc:
                raise ModelError(f"{path}: damaged spamnb model (checksum of {k} does not match)")
            file.seek(start)
            version = np.lib.format.read_magic(file)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(file)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(file)
            else:
                return None
            if dtype.hasobject:
                return None
            spans[k] = (file.tell(), shape, dtype, fortran)

    def array(k: str) -> np.ndarray:
        offset, shape, dtype, fortran = spans[k]
        count = int(np.prod(shape)) if shape else 1
        if count == 0:
            return np.zeros(shape, dtype=dtype)
        # (2, V) counts come out of a column gather in Fortran order: both classes of a token side by side.
        return np.frombuffer(mm, dtype=dtype, count=count, offset=offset).reshape(shape, order="F" if fortran else "C")

    check_identity(path, array("format"), array("version"))
    try:
        offsets = array("offsets")
        blob_at, blob_shape, _, _ = spans["tokens"]
        check_offsets(offsets, blob_shape[0])
        vocab = SortedTokens(mm, offsets, base=blob_at, size=blob_shape[0])  # type: ignore[arg-type]
        tf, df = array("tf"), array("df")
        docs = array("docs").astype(np.int64)
        check_shapes(len(vocab), tf.shape, df.shape, docs.shape, spans["learnt"][1], spans["learnt_class"][1])
        # Counts are saved unsigned; signed ones could be negative: the full loader checks them.
        if tf.dtype.kind != "u" or df.dtype.kind != "u" or (docs < 0).any():
            raise ValueError("negative or signed counts")
        return Model(
            tokens=TokenSettings.from_json(str(array("settings")[()])),
            scoring=Scoring.from_json(str(array("scoring")[()])),
            vocab=vocab,
            counts=nb.Counts(docs, tf, df),
            scoring_only=True,
        )
    except (ValueError, TypeError, UnicodeDecodeError) as err:
        raise ModelError(f"{path}: damaged spamnb model ({err})") from err


def empty_model(tokens: TokenSettings, scoring: Scoring) -> Model:
    return Model(tokens=tokens, scoring=scoring, vocab=Vocabulary())
