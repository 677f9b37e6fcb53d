"""Vocabulary (token <-> column) and sparse count rows.

Two vocabularies share one `lookup` interface: `Vocabulary`, a dictionary that grows
while training and serves batch scoring, and `SortedTokens`, a binary search over
the model file's sorted token blob that scores one message without building a
dictionary of the whole vocabulary (the pipe path's start-up cost).
"""
from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse

SEPARATOR = "\n"  # tokens never hold whitespace, so a newline can join them


class Vocabulary:
    """Columns in order of first sight; `sorted_prefix` columns were loaded sorted."""

    def __init__(self, tokens: Iterable[str] = (), sorted_prefix: int = 0) -> None:
        self.tokens: list[str] = list(tokens)
        self.index: dict[str, int] = {t: i for i, t in enumerate(self.tokens)}
        self.sorted_prefix = sorted_prefix

    def __len__(self) -> int:
        return len(self.tokens)

    def lookup(self, tokens: Iterable[str]) -> list[int]:
        get = self.index.get
        return [get(t, -1) for t in tokens]

    def grow(self, tokens: Iterable[str]) -> list[int]:
        """Columns of tokens, adding the ones not seen before."""
        index, known = self.index, self.tokens
        out = []
        for t in tokens:
            col = index.get(t)
            if col is None:
                col = index[t] = len(known)
                known.append(t)
            out.append(col)
        return out

    def sorted_order(self) -> np.ndarray:
        """Column permutation that sorts the tokens, merging new ones into the sorted prefix."""
        n0 = self.sorted_prefix
        tail = sorted(range(n0, len(self.tokens)), key=self.tokens.__getitem__)
        if n0 == 0:
            return np.asarray(tail, dtype=np.int64)
        where = [bisect.bisect_left(self.tokens, self.tokens[i], 0, n0) for i in tail]
        return np.insert(np.arange(n0), where, tail).astype(np.int64)


class SortedTokens:
    """Read-only vocabulary over the newline-joined sorted UTF-8 token blob."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob
        if blob:
            raw = np.frombuffer(blob, dtype=np.uint8)
            ends = np.flatnonzero(raw == ord(SEPARATOR))
            self.starts = np.concatenate(([0], ends + 1))
            self.ends = np.concatenate((ends, [len(blob)]))
        else:
            self.starts = self.ends = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> bytes:
        return self.blob[self.starts[i] : self.ends[i]]

    def lookup(self, tokens: Iterable[str]) -> list[int]:
        n = len(self)
        out = []
        for t in tokens:
            key = t.encode("utf-8", "surrogatepass")
            i = bisect.bisect_left(self, key)  # type: ignore[call-overload]
            out.append(i if i < n and self[i] == key else -1)
        return out


class Rows(NamedTuple):
    """A chunk of messages as distinct tokens with counts, over a chunk-local vocabulary.

    Message i holds the columns `cols[offsets[i]:offsets[i+1]]` of `tokens`, each
    `counts` times.  Compact to send between processes: each token string once.
    """

    tokens: list[str]
    cols: np.ndarray
    counts: np.ndarray
    lengths: np.ndarray


def local_rows(token_lists: Iterable[Sequence[str]]) -> Rows:
    index: dict[str, int] = {}
    setdefault = index.setdefault
    cols: list[int] = []
    counts: list[int] = []
    lengths: list[int] = []
    for tokens in token_lists:
        seen = Counter(tokens)
        lengths.append(len(seen))
        cols.extend([setdefault(t, len(index)) for t in seen])
        counts.extend(seen.values())
    return Rows(list(index), np.asarray(cols, dtype=np.int32), np.asarray(counts, dtype=np.int32), np.asarray(lengths, dtype=np.int64))


def rows_matrix(cols: np.ndarray, counts: np.ndarray, lengths: np.ndarray, n_features: int) -> scipy.sparse.csr_matrix:
    """Sparse (len(lengths), n_features) count matrix; columns < 0 (unknown tokens) are dropped.

    Columns within a row are distinct (as `local_rows` makes them), so no summing is needed.
    """
    import scipy.sparse

    keep = cols >= 0
    row_of = np.repeat(np.arange(len(lengths)), lengths)
    if not keep.all():
        cols, counts, row_of = cols[keep], counts[keep], row_of[keep]
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_of, minlength=len(lengths)), out=indptr[1:])
    return scipy.sparse.csr_matrix((counts.astype(np.float64), cols.astype(np.int64), indptr), shape=(len(lengths), n_features))


def count_rows(docs: Sequence[Sequence[int]], n_features: int) -> scipy.sparse.csr_matrix:
    """Sparse (len(docs), n_features) matrix of column counts; negative columns are dropped."""
    import scipy.sparse  # the batch paths only: keeps the one-message pipe start-up small

    lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    cols = np.fromiter((c for d in docs for c in d), dtype=np.int64, count=int(lengths.sum()))
    rows = np.repeat(np.arange(len(docs)), lengths)
    keep = cols >= 0
    data = np.ones(int(keep.sum()), dtype=np.float64)
    matrix = scipy.sparse.coo_matrix((data, (rows[keep], cols[keep])), shape=(len(docs), n_features))
    return matrix.tocsr()
