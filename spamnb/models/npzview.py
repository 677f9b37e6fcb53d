"""A model file's arrays read without numpy: the zip directory, each `.npy` header, and
views of the stored bytes through a memory map.

The one-message pipe starts once per mail, and `import numpy` alone was most of its
time; the model's members are plain arrays (unsigned counts, UTF-8 bytes, int64,
UCS-4 strings), so `struct`, `memoryview` and `mmap` read them as they lie.  Only
stored (uncompressed) members without ZIP64 records are read here: anything else
raises `NotPlain`, and the caller may hand the file to numpy's loader.
"""
from __future__ import annotations

import contextlib
import io  # loaded at start-up anyway (typing is not)
import mmap
import os
import stat
import struct
import sys
import zlib
from collections import namedtuple

from spamnb.models.modelfile import ModelError

FORMAT = "spamnb-model"
VERSION = 8  # the history of the format: docs/measurements.md
# Versions read: 7 is 8 without the calibration's history (read as empty).
READS = (7, 8)
REQUIRED = ("format", "version", "tokens", "tf", "df", "docs", "settings", "scoring", "learnt", "learnt_class")


class NotPlain(Exception):
    """The file is a zip this reader does not handle (compressed, ZIP64, a comment): not necessarily damaged.
    `data`: its bytes, where they were read whole (open_members' `hold`), for numpy's loader."""

    def __init__(self, path: str, data: bytes | None = None) -> None:
        super().__init__(path)
        self.data = data


# The zip records read here (importing zipfile, with shutil and threading, is no small
# part of the one-message pipe's start-up).
LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # a member's local header: 30 bytes, then name and extra
CENTRAL_ENTRY = struct.Struct("<4s4B4HL2L5H2L")  # a central directory entry: 46 bytes, then name, extra, comment
END_RECORD = struct.Struct("<4s4H2LH")  # end of central directory: 22 bytes, then the comment
STORED = 0
ZIP64_MARK = 0xFFFFFFFF


# stored: as it is, not compressed, not encrypted.  (Records here are collections' named
# tuples and plain classes: `typing` is off the pipe's start-up.)
Member = namedtuple("Member", ("header_offset", "size", "crc", "stored"))


def zip_directory(mm: mmap.mmap | bytes) -> dict[str, Member] | None:
    """The members of a zip archive without a comment, by name; None for any other file."""
    if len(mm) < END_RECORD.size:
        return None
    sig, disk, disk_of_start, here, entries, size, start, comment = END_RECORD.unpack_from(mm, len(mm) - END_RECORD.size)
    if sig != b"PK\x05\x06" or comment or start == ZIP64_MARK:
        return None
    if start + size != len(mm) - END_RECORD.size or disk or disk_of_start or here != entries:
        # zipfile reads the directory from its size: one that does not end at the end record is damage.
        raise ValueError("a zip directory that does not end where its end record begins")
    members = {}
    for _ in range(entries):
        fields = CENTRAL_ENTRY.unpack_from(mm, start)
        if fields[0] != b"PK\x01\x02":
            return None
        crc, packed, size, name_len, extra_len, comment_len = fields[9:15]
        offset = fields[18]
        if ZIP64_MARK in (packed, size, offset):
            return None
        name = bytes(mm[start + CENTRAL_ENTRY.size : start + CENTRAL_ENTRY.size + name_len]).decode("utf-8")
        encrypted = fields[5] & 1
        members[name] = Member(offset, size, crc, fields[6] == STORED and packed == size and not encrypted)
        start += CENTRAL_ENTRY.size + name_len + extra_len + comment_len
    return members


# The .npy header: magic, version, header length, then a Python dict literal.
NPY_MAGIC = b"\x93NUMPY"
# Element kinds and sizes read here -> memoryview formats (native order; see `Array.items`).
FORMATS = {("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q", ("i", 8): "q", ("i", 4): "i", ("f", 8): "d"}


class Array:
    """One `.npy` member as it lies in the file: element kind ('u', 'i', 'f', 'U'), size, order and
    shape; `data` its bytes, starting at `offset` in the file."""

    __slots__ = ("data", "fortran", "itemsize", "kind", "little", "offset", "shape")

    def __init__(self, kind: str, itemsize: int, little: bool, shape: tuple[int, ...], fortran: bool, data: memoryview, offset: int) -> None:
        self.kind, self.itemsize, self.little, self.shape = kind, itemsize, little, shape
        self.fortran, self.data, self.offset = fortran, data, offset

    @property
    def count(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def items(self) -> memoryview | list:
        """The elements in stored order, as plain ints or floats (numbers only)."""
        fmt = FORMATS.get((self.kind, self.itemsize))
        if fmt is None:
            raise ValueError(f"elements of kind {self.kind}{self.itemsize}")
        if self.little == (sys.byteorder == "little") or self.itemsize == 1:
            return self.data.cast(fmt)
        import array

        swapped = array.array(fmt, self.data.tobytes())  # a model from a machine of the other byte order
        swapped.byteswap()
        return swapped

    def text(self) -> str:
        """A 0-d string array's value (numpy stores str as UCS-4, padded with NULs)."""
        if self.kind != "U" or self.shape != ():
            raise ValueError("not a string")
        return self.data.tobytes().decode("utf-32-le" if self.little else "utf-32-be").rstrip("\0")

    def scalar(self) -> int:
        if self.shape != () or self.kind not in "ui":
            raise ValueError("not an integer")
        return int(self.items()[0])


def read_npy(mm: mmap.mmap, start: int, size: int) -> Array:
    """The array a `.npy` member of `size` bytes at `start` holds; ValueError when it is none we read."""
    view = memoryview(mm)[start : start + size]
    if bytes(view[:6]) != NPY_MAGIC or size < 10:
        raise ValueError("a member that is no .npy array")
    major = view[6]
    if major == 1:
        (length,), at = struct.unpack_from("<H", view, 8), 10
    elif major in (2, 3):
        (length,), at = struct.unpack_from("<I", view, 8), 12
    else:
        raise ValueError(f".npy version {major}")
    order, kind, itemsize, fortran, shape = npy_header(bytes(view[at : at + length]).decode("latin-1"))
    body = view[at + length :]
    array = Array(kind, itemsize, order != ">", shape, fortran, body, start + at + length)
    if array.count * itemsize != len(body):
        raise ValueError(f"an array of shape {shape} in {len(body):,} bytes")
    return array


def npy_header(text: str) -> tuple[str, str, int, bool, tuple[int, ...]]:
    """Byte order, kind, item size, Fortran order and shape from a header as numpy writes it:
    `{'descr': '<u2', 'fortran_order': False, 'shape': (2, 10), }` (keys sorted)."""
    # Parsed by hand: a regular expression's compilation would be on the pipe's start-up.
    head, _, rest = text.strip().partition("'descr': '")
    descr, _, rest = rest.partition("', 'fortran_order': ")
    fortran, _, rest = rest.partition(", 'shape': (")
    dims, _, tail = rest.partition(")")
    if head != "{" or tail.replace(",", "").strip() != "}" or fortran not in ("True", "False"):
        raise ValueError("an .npy header this reader does not take")
    order, kind, width = (descr[0], descr[1], descr[2:]) if descr[:1] in "<>|=" else ("=", descr[:1], descr[1:])
    if kind not in ("u", "i", "f", "U") or not width.isdigit():
        raise ValueError(f"elements of type {descr!r}")
    try:
        shape = tuple(int(d) for d in dims.replace(",", " ").split())
    except ValueError:
        raise ValueError(f"an .npy shape ({dims})") from None
    if order == "=":
        order = "<" if sys.byteorder == "little" else ">"
    return order, kind, int(width) * (4 if kind == "U" else 1), fortran == "True", shape


def open_model(path: str) -> io.BufferedReader:
    """The model file open for reading; a FIFO or device is refused without blocking on it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as err:
        raise ModelError(f"{path}: no such model file; create it with `spamnb train`") from err
    except OSError as err:
        raise ModelError(f"{path}: cannot read the model ({err.strerror or err})") from err
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ModelError(f"{path}: not a spamnb model (not a regular file)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_members(path: str, names: tuple[str, ...], optional: tuple[str, ...] = (), check=None, hold: bool = False, whole: bool = False) -> tuple[mmap.mmap | bytes, dict[str, Array]]:
    """The file mapped, and its members `names` and those of `optional` it has (without `.npy`) as arrays.

    `check` (`trust.ModelCheck`): `check(arrays)` validates the values, run with the
    checksums of every member unless this version of the file passed both before
    (`check.verified`, noted by `check.remember`): the pipe pays a pass over a big model
    once, not per message.  Without `check`, only the checksums.  ModelError for a file that is
    missing, not a model, or damaged; NotPlain for a zip this reader does not handle.

    A mapped file cut short while it is read (`cp other.npz model.npz` onto it) kills the
    reader with SIGBUS, which no handler turns into an exception.  With `hold` (one
    message: the pipe) the file is held under a read lease until `release`: a writer's
    open waits for it (the kernel's lease-break-time at most).  Where no lease can be
    had (the file is another's or open for writing, or its filesystem has none), it is
    read whole instead of mapped.  With `whole` (a process that keeps models open: spamnb
    serve) it is always read whole: a copy written over the file later cannot reach what was
    read, and no lease makes the copy wait; a read during the copy finds a damaged file.
    """
    file = open_model(path)
    held = hold and lease(file.fileno())
    if held:
        HELD.append(file)
    with contextlib.nullcontext() if held else file:
        try:
            mm = file.read() if whole or (hold and not held) else mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as err:  # an empty file, a folder
            raise ModelError(f"{path}: not a readable spamnb model ({type(err).__name__}: {err})") from err
        try:
            directory = zip_directory(mm)
        except (struct.error, UnicodeDecodeError, ValueError) as err:
            raise ModelError(f"{path}: not a readable spamnb model (a damaged zip directory)") from err
        if directory is None:
            raise NotPlain(path, mm if isinstance(mm, bytes) else None)
        missing = [k for k in names if f"{k}.npy" not in directory]
        if missing:
            raise ModelError(f"{path}: not a spamnb model (no {', '.join(missing)})")
        if not all(member.stored for member in directory.values()):
            raise NotPlain(path, mm if isinstance(mm, bytes) else None)
        names = (*names, *(k for k in optional if f"{k}.npy" in directory))
        spans = {}
        for name, info in directory.items():
            try:
                fields = LOCAL_HEADER.unpack_from(mm, info.header_offset)
            except struct.error as err:
                raise ModelError(f"{path}: damaged spamnb model ({name} lies outside the file)") from err
            start = info.header_offset + LOCAL_HEADER.size + fields[-2] + fields[-1]
            if fields[0] != b"PK\x03\x04" or start + info.size > len(mm):
                raise ModelError(f"{path}: damaged spamnb model ({name} lies outside the file)")
            at = info.header_offset + LOCAL_HEADER.size
            # What zipfile checks of a member's own header: its name, no patched or strongly encrypted data.
            if mm[at : at + fields[-2]] != name.encode("utf-8") or fields[2] & 0x60:
                raise ModelError(f"{path}: damaged spamnb model (the header of {name} is not the directory's)")
            spans[name] = start
        arrays = {}
        for k in names:
            try:
                arrays[k] = read_npy(mm, spans[f"{k}.npy"], directory[f"{k}.npy"].size)
            except (ValueError, struct.error) as err:
                raise ModelError(f"{path}: damaged spamnb model ({k}: {err})") from err
        st = os.fstat(file.fileno())
        ident = identity(mm)
        if check is None or not check.verified(file.fileno(), st, ident):
            for name, info in directory.items():
                if zlib.crc32(memoryview(mm)[spans[name] : spans[name] + info.size]) != info.crc:
                    raise ModelError(f"{path}: damaged spamnb model (checksum of {name.removesuffix('.npy')} does not match)")
            if check is not None:
                check(arrays)
                check.remember(file.fileno(), st, ident)
    return mm, arrays


# Model files held under a read lease (`open_members`' `hold`) until `release`.
HELD: list = []


def lease(fd: int) -> bool:
    """Whether a read lease on the open file was had: a writer's open of it then waits
    until it is released, and the kernel's SIGIO that tells of the wait is not fatal."""
    import fcntl
    import signal

    try:
        signal.signal(signal.SIGIO, signal.SIG_IGN)  # main thread only: ValueError elsewhere
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except (OSError, ValueError, AttributeError):
        return False
    return True


def release() -> None:
    """Let go of the model files held (`open_members`' `hold`): writers waiting go on."""
    while HELD:
        with contextlib.suppress(OSError):
            HELD.pop().close()


def identity(mm: bytes) -> bytes:
    """8 bytes that change whenever the model file does: checksums of its zip directory
    (which holds each member's CRC and size), found from the end-of-directory record."""
    if len(mm) < 22:
        return b""
    start = struct.unpack_from("<L", mm, len(mm) - 6)[0]  # the directory's offset, in the last 22 bytes
    directory = memoryview(mm)[min(start, len(mm)) :]
    return struct.pack("<II", zlib.crc32(directory), zlib.adler32(directory))
