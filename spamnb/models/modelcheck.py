"""What the arrays of a model file must be, checked in two steps on every load path.

Before any data is read: each member's `.npy` header (kind of dtype, dimensions) and
its declared size against the archive entry that holds it, the shapes against each
other, and the memory a full load would take against the file's size (`check_headers`).
A crafted file therefore cannot make a load inflate or widen more than it declares.
After: the values that scoring trusts, such as the token offsets (`trust.check_values`).
Both raise ValueError; the loaders name the file.
"""
from __future__ import annotations

import math
from typing import BinaryIO, NamedTuple

import numpy as np

from spamnb.bayes import meta
from spamnb.models.trust import SPEC

# Settings and scoring are a few hundred bytes of JSON; format and version a word.
MAX_TEXT_BYTES = 1 << 16
# A full load may hold this many times the file's size (counts widened to int64 take 8x
# a uint8 file's; a model saved by spamnb takes 2-3x its size), or MIN_BUDGET.
LOAD_FACTOR = 32
MIN_BUDGET = 1 << 26


class Header(NamedTuple):
    """One member's `.npy` header and where its data lies."""

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran: bool
    data_at: int  # bytes of the member before its data: magic and header
    size: int  # the member's whole size, inflated, as the archive records it

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def read_header(file: BinaryIO, size: int) -> Header:
    """The header of the `.npy` member `file` is at the start of (its size `size`)."""
    start = file.tell()
    version = np.lib.format.read_magic(file)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(file)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(file)
    else:
        raise ValueError(f"npy format version {version[0]}.{version[1]}")
    return Header(tuple(shape), dtype, bool(fortran), file.tell() - start, size)


def check_member(name: str, h: Header) -> None:
    kinds, ndim, itemsize = SPEC[name]
    kind = h.dtype.kind
    if h.dtype.hasobject or h.dtype.fields is not None or kind not in kinds or len(h.shape) != ndim or (itemsize and h.dtype.itemsize != itemsize):
        raise ValueError(f"{name} is {h.dtype.str} of {len(h.shape)} dimensions")
    if any(d < 0 for d in h.shape):
        raise ValueError(f"{name} of shape {h.shape}")
    if kind in "US" and h.dtype.itemsize > MAX_TEXT_BYTES * (4 if kind == "U" else 1):
        raise ValueError(f"{name} of {h.dtype.itemsize:,} bytes")
    if h.data_at + h.nbytes != h.size:
        raise ValueError(f"{name} declares {h.nbytes:,} bytes of data in a member of {h.size:,}")


def check_headers(headers: dict[str, Header]) -> None:
    """Every member's header alone, then the shapes against each other (V tokens, M digests)."""
    for name, h in headers.items():
        check_member(name, h)
    tf, df, docs = headers["tf"].shape, headers["df"].shape, headers["docs"].shape
    n_tokens = tf[1]
    if tf[0] != 2 or df != tf or docs != (2,):
        raise ValueError(f"count arrays of shapes {tf}, {df}, {docs}")
    if "weighted" in headers and headers["weighted"].shape != tf:
        raise ValueError(f"weighted sums of shape {headers['weighted'].shape} for counts of {tf}")
    if "offsets" in headers and headers["offsets"].shape != (n_tokens + 1,):
        raise ValueError(f"{headers['offsets'].shape[0]:,} token offsets for {n_tokens:,} tokens")
    # Each token but the last ends with a separator: n bytes hold n + 1 tokens at most.
    if n_tokens > headers["tokens"].shape[0] + 1:
        raise ValueError(f"{n_tokens:,} tokens in {headers['tokens'].shape[0]:,} bytes")
    learnt, learnt_class = headers["learnt"].shape, headers["learnt_class"].shape
    if learnt[1] != 16 or learnt_class != learnt[:1]:
        raise ValueError("learnt digests of the wrong shape")
    if "meta" in headers and headers["meta"].shape != (2, meta.WIDTH, meta.WIDTH):
        raise ValueError(f"numeric features' moments of shape {headers['meta'].shape}")


def load_bytes(headers: dict[str, Header]) -> int:
    """The memory a full load holds for these arrays: each as stored, and the counts widened to int64."""
    widened = sum(2 * headers[k].shape[1] * 8 for k in ("tf", "df", "weighted") if k in headers)
    derived = 0 if "offsets" in headers else (headers["tf"].shape[1] + 1) * 8  # computed from the blob when absent
    return sum(h.nbytes for h in headers.values()) + widened + derived


def check_budget(headers: dict[str, Header], file_size: int) -> None:
    need, budget = load_bytes(headers), max(LOAD_FACTOR * file_size, MIN_BUDGET)
    if need > budget:
        raise ValueError(f"its arrays would take {need:,} bytes of memory, from a file of {file_size:,}")
