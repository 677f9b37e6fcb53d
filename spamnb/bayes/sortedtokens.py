"""The model file's sorted token blob searched one token at a time, without numpy.

The one-message pipe looks up a message's few hundred distinct tokens in a vocabulary
of up to millions: a binary search over the blob as it lies in the mapped file reads
only the pages it touches, and builds no dictionary of the whole vocabulary.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from itertools import accumulate


class SortedTokens:
    """Read-only vocabulary over the newline-joined sorted UTF-8 token blob.

    `offsets[i]` is where token i starts and `offsets[i+1] - 1` where it ends (the
    model file stores them, so opening a model is not a pass over its vocabulary).
    `blob` is anything that slices to bytes: bytes, or an mmap of the model file
    with the blob at `base`, so that a lookup touches only the pages it reads.
    """

    def __init__(self, blob: bytes, offsets: Sequence[int] | None = None, base: int = 0, size: int | None = None) -> None:
        self.blob = blob
        self.base = base
        self.size = len(blob) - base if size is None else size
        if offsets is None:
            offsets = blob_offsets(bytes(blob[base : base + self.size]))
        self.offsets = offsets
        self._landmarks: tuple[list[bytes], int] | None = None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> bytes:
        return self.blob[self.base + self.offsets[i] : self.base + self.offsets[i + 1] - 1]

    def data(self) -> bytes:
        """The whole blob as bytes."""
        return bytes(self.blob[self.base : self.base + self.size])

    # About this many evenly spaced tokens, read once: a bisect in C over them narrows
    # each search to the tokens between two of them, so the search written out below
    # takes 7 steps instead of 17 in a 140k-token model (a 1M-token model reads no more
    # of them).
    LANDMARKS = 1024

    def landmarks(self) -> tuple[list[bytes], int]:
        """The landmark tokens and the stride between them."""
        if self._landmarks is None:
            blob, base, off, end = self.blob, self.base, self.offsets, self.size + 1
            stride = max(1, -(-len(self) // self.LANDMARKS))
            marks = []
            for i in range(0, len(self), stride):
                a, b = off[i], off[i + 1]
                if not 0 <= a < b <= end:
                    raise OffsetError(i)
                marks.append(blob[base + a : base + b - 1])
            self._landmarks = marks, stride
        return self._landmarks

    def lookup(self, tokens: Iterable[str]) -> list[int]:
        # The binary search is written out: through bisect and __getitem__ it was a third of
        # a one-message pipe run.
        # Every offset read is checked (from 0, rising, to the blob's end): the pipe does not
        # read all of a big model's offsets, and crafted ones must not pick the verdict.
        blob, base, off, end = self.blob, self.base, self.offsets, self.size + 1
        n = len(off) - 1
        marks, stride = self.landmarks()
        out = []
        for t in tokens:
            key = t.encode("utf-8", "surrogatepass")
            # Landmark j-1 sorts before the key, landmark j not: the answer lies between them.
            j = bisect.bisect_left(marks, key)
            lo, hi = max(j - 1, 0) * stride + (j > 0), min(j * stride, n)
            while lo < hi:
                mid = (lo + hi) >> 1
                a, b = off[mid], off[mid + 1]
                if not 0 <= a < b <= end:
                    raise OffsetError(mid)
                if blob[base + a : base + b - 1] < key:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < n:
                a, b = off[lo], off[lo + 1]
                if not 0 <= a < b <= end:
                    raise OffsetError(lo)
                out.append(lo if blob[base + a : base + b - 1] == key else -1)
            else:
                out.append(-1)
        return out


class OffsetError(ValueError):
    """A token's offsets do not lie rising within the token blob."""

    def __init__(self, i: int) -> None:
        super().__init__(f"token offsets do not rise within the token blob (token {i:,})")


def blob_offsets(blob: bytes) -> list[int]:
    """Start of each token in a newline-joined blob, and one past the end plus one (as store's `offsets`)."""
    if not blob:
        return [1]
    # Each token's length plus its newline, summed in C rather than a find per token
    # (docs/measurements.md, "blob_offsets").
    return [0, *accumulate([len(token) + 1 for token in blob.split(b"\n")])]
