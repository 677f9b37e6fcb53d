"""Vocabulary (token <-> column) and sparse count rows.

Two vocabularies share one `lookup` interface: `Vocabulary`, a dictionary that grows
while training and serves batch scoring, and `SortedTokens`, a binary search over
the model file's sorted token blob that scores one message without building a
dictionary of the whole vocabulary (the pipe path's start-up cost).  A model holds
either as one type, `ModelVocabulary`, whose state says which.
"""
from __future__ import annotations

import bisect
import itertools
import operator
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from spamnb import compiled
from spamnb.bayes import sortedtokens
from spamnb.text.tokens import FieldNumbers, field_ids

SEPARATOR = "\n"  # tokens never hold whitespace, so a newline can join them
# A Vocabulary's index in C where it was built (spamnb/text/_ctokens.c): a hash table of its
# columns over its token list, which train's parent grows by each chunk's distinct tokens
# (GROWN) and batch scoring looks tokens up in (LOOKED_UP), in a fraction of a dict's time:
# no siphash of each fresh str, no int per column.  Else (SPAMNB_PURE) a dict.
TOKEN_INDEX = compiled.scanner_function("token_index")
LOOKED_UP = compiled.scanner_function("looked_up")
GROWN = compiled.scanner_function("grown")


class Vocabulary:
    """Columns in order of first sight; `sorted_prefix` columns were loaded sorted."""

    def __init__(self, tokens: Iterable[str] = (), sorted_prefix: int = 0) -> None:
        self.tokens: list[str] = list(tokens)
        self.index: bytearray | defaultdict[str, int]
        if TOKEN_INDEX is not None:
            self.index = TOKEN_INDEX(self.tokens)
        else:  # 3x a dict comprehension; a defaultdict for `grow` (no default outside it)
            self.index = defaultdict(None, zip(self.tokens, range(len(self.tokens)), strict=True))
        self.sorted_prefix = sorted_prefix

    def __reduce__(self) -> tuple[type[Vocabulary], tuple[list[str], int]]:
        # Sent as its tokens, indexed where it lands: a process there may run the pure path.
        return Vocabulary, (self.tokens, self.sorted_prefix)

    def __len__(self) -> int:
        return len(self.tokens)

    def lookup(self, tokens: Iterable[str]) -> list[int]:
        index = self.index
        if type(index) is bytearray:
            return LOOKED_UP(index, self.tokens, tokens if type(tokens) is list else list(tokens))  # type: ignore[misc]
        # map over get and a repeated default runs in C, faster than a comprehension.
        return list(map(index.get, tokens, itertools.repeat(-1)))

    def grow(self, tokens: Iterable[str]) -> np.ndarray:
        """Columns of tokens (int64), adding the ones not seen before."""
        index, known = self.index, self.tokens
        if type(index) is bytearray:
            return np.frombuffer(GROWN(index, known, tokens if type(tokens) is list else list(tokens)), np.int64)  # type: ignore[misc]
        # New tokens are numbered in C as they are met: while growing, the dictionary's
        # default is the next column, and its last keys are then the new tokens in column
        # order (read from the end, not by skipping the old keys): a third less of train's
        # serial CPU than a Python loop over a chunk's tokens.
        had = len(index)
        index.default_factory = itertools.count(len(known)).__next__
        try:
            return np.array(columns(index, tokens), dtype=np.int64)
        finally:
            index.default_factory = None
            new = list(itertools.islice(reversed(index), len(index) - had))
            known.extend(reversed(new))

    def sorted_blob(self) -> tuple[bytes, np.ndarray]:
        """The sorted token blob (newline-joined UTF-8) and the column order that matches it."""
        utf8 = encoded(self.tokens)
        order = self.sorted_order(utf8)
        return joined(utf8, order), order

    def sorted_order(self, utf8: Encoded | None = None) -> np.ndarray:
        """Column permutation that sorts the tokens (`utf8`: them `encoded`), merging new ones
        into the sorted prefix."""
        n0 = self.sorted_prefix
        cols = code_point_order(encoded(self.tokens) if utf8 is None else utf8, n0)
        if n0 == 0:
            return cols
        where = [bisect.bisect_left(self.tokens, self.tokens[c], 0, n0) for c in cols.tolist()]
        return np.insert(np.arange(n0), where, cols).astype(np.int64)


class Encoded(NamedTuple):
    """Tokens as one newline-joined UTF-8 blob, and where each starts in it and how long it is."""

    padded: np.ndarray  # the blob, a newline and 7 zero bytes: each place starts 8 readable bytes
    starts: np.ndarray
    lengths: np.ndarray


def encoded(tokens: list[str]) -> Encoded:
    blob = SEPARATOR.join(tokens).encode("utf-8", "surrogatepass")
    padded = np.frombuffer(blob + SEPARATOR.encode() + bytes(7), np.uint8)
    starts = np.concatenate(([0], np.flatnonzero(padded[: len(blob)] == ord(SEPARATOR)) + 1)) if tokens else np.zeros(0, np.int64)
    return Encoded(padded, starts, np.diff(starts, append=len(blob) + 1) - 1)


# `joined` gathers this many tokens at a time: its index arrays take 8 bytes per byte.
JOIN_BLOCK = 1 << 16


def joined(utf8: Encoded, order: np.ndarray) -> bytes:
    """The blob of the tokens in `order`, gathered byte by byte: a join of the tokens picked
    in that order reads them from all over memory, at three times the cost."""
    pieces = []
    for at in range(0, len(order), JOIN_BLOCK):
        block = order[at : at + JOIN_BLOCK]
        sizes = utf8.lengths[block] + 1  # each with the newline after it
        starts = utf8.starts[block]
        # Each byte's place in the encoded blob, as running sums of steps: 1 within a
        # token, a jump to its start at a token's first byte (one pass, no repeat).
        steps = np.ones(int(sizes.sum()), np.int64)
        steps[np.cumsum(sizes) - sizes] = np.diff(starts, prepend=0) - np.concatenate(([0], sizes[:-1] - 1))
        pieces.append(utf8.padded.take(np.cumsum(steps, out=steps)).tobytes())
    return b"".join(pieces)[:-1]


# `code_point_order` compares tokens this many UTF-8 bytes at a time, as the high bytes of
# an integer whose low byte says how many bytes are left (8: more than these).
KEY_BYTES = 7
KEY_MASKS = np.array([((1 << (8 * k)) - 1) << (64 - 8 * k) for k in range(KEY_BYTES + 1)], dtype=np.uint64)


def code_point_order(utf8: Encoded, first: int = 0) -> np.ndarray:
    """The columns from `first` on in the order `sorted` gives their tokens (by code points,
    ties kept in order), found by numpy sorts of their UTF-8 bytes, whose order is the code
    points' (surrogates too): `sorted` compares str objects one call at a time, and their
    columns had then to be looked up again.

    The tokens are sorted by their first KEY_BYTES bytes, then each run of tokens that
    share them and go on by their next KEY_BYTES, and so on; a token that ends sorts before
    the longer ones it begins (the length in the key's low byte)."""
    n = len(utf8.starts)
    if first >= n:
        return np.zeros(0, np.int64)
    # The 8 bytes from each place, big-endian: integers that compare as the bytes do.
    words = np.ndarray((len(utf8.padded) - 7,), dtype=">u8", buffer=utf8.padded, strides=(1,))

    def keys(cols: np.ndarray, step: int) -> np.ndarray:
        left = utf8.lengths[cols] - KEY_BYTES * step
        word = words[utf8.starts[cols] + KEY_BYTES * step].astype(np.uint64)
        return (word & KEY_MASKS[np.minimum(left, KEY_BYTES)]) | np.minimum(left, 8).astype(np.uint64)

    key = keys(np.arange(first, n), 0)
    by = radix_order(digits(key, 64))
    order, key = by + first, key[by]
    at = np.arange(len(order))  # the places in `order` of the runs still tied
    new_run = np.zeros(len(order), bool)
    new_run[0] = True
    step = 0
    while True:
        tied = (key[1:] == key[:-1]) & (key[1:] & 0xFF == 8) & ~new_run[1:]
        if not tied.any():
            return order
        runs = np.cumsum(np.concatenate(([True], ~tied)))
        keep = np.concatenate((tied, [False])) | np.concatenate(([False], tied))
        at, runs = at[keep], runs[keep]
        step += 1
        cols = order[at]
        key = keys(cols, step)
        runs -= runs[0]
        by = radix_order([*digits(key, 64), *digits(runs, int(runs[-1]).bit_length())])  # by run, then key
        order[at], key = cols[by], key[by]
        new_run = np.concatenate(([True], runs[1:] != runs[:-1]))


def radix_order(keys: list[np.ndarray]) -> np.ndarray:
    """The stable order of rows by the 16-bit digits `keys`, the least significant first:
    numpy's radix sort of each in turn, where its sort of wider keys compares them."""
    order = np.argsort(keys[0], kind="stable")
    for key in keys[1:]:
        order = order[np.argsort(key[order], kind="stable")]
    return order


def digits(a: np.ndarray, bits: int) -> list[np.ndarray]:
    """The 16-bit digits of `a`'s values (none negative, below 2 ** bits), the least
    significant first; at least one."""
    return [(a >> shift).astype(np.uint16) for shift in range(0, max(bits, 1), 16)]


class SortedTokens(sortedtokens.SortedTokens):
    """`sortedtokens.SortedTokens` that also takes its offsets as a numpy array."""

    def __init__(self, blob: bytes, offsets: Sequence[int] | np.ndarray | None = None, base: int = 0, size: int | None = None) -> None:
        if offsets is None:
            size = len(blob) - base if size is None else size
            offsets = token_offsets(bytes(blob[base : base + size]))
        if isinstance(offsets, np.ndarray):
            offsets = as_ints(offsets)
        super().__init__(blob, offsets, base, size)


def as_ints(a: np.ndarray) -> memoryview:
    """A view that indexes to plain ints (a bisect over numpy scalars is 3x slower)."""
    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))
    return memoryview(a).cast("B").cast(a.dtype.char)


def token_offsets(blob: bytes) -> np.ndarray:
    """Start of each token in a newline-joined blob, and one past the end plus one."""
    if not blob:
        return np.ones(1, dtype=np.uint32)
    raw = np.frombuffer(blob, dtype=np.uint8)
    ends = np.flatnonzero(raw == ord(SEPARATOR))
    dtype = np.uint32 if len(blob) < 2**32 - 1 else np.uint64
    return np.concatenate(([0], ends + 1, [len(blob) + 1])).astype(dtype)


class ModelVocabulary:
    """A model's vocabulary (`Model.vocab`): one type, in one of three states, `state`, that
    only go forward (columns never change):

    SORTED      the model file's sorted tokens (`SortedTokens`), searched one token at a
                time: scoring a message reads only its own tokens.
    GROWING     learning on top of them without reading them all: tokens found are
                remembered, new ones get the next columns.  Learning one message into a
                1,000,000-token model so costs a few hundred searches instead of a
                dictionary of the whole vocabulary.  After `LIMIT` searches the whole
                dictionary is cheaper: it is built once and used from then on.
    DICTIONARY  every token in a `Vocabulary` (`dictionary()`): batch scoring, training,
                pruning, merging.
    """

    SORTED, GROWING, DICTIONARY = "sorted", "growing", "dictionary"
    LIMIT = 20_000

    def __init__(self, base: SortedTokens | None = None, full: Vocabulary | None = None) -> None:
        """Of a model file's sorted tokens (`base`), or of a dictionary (`full`; neither: empty)."""
        self.base = base
        self.n_base = len(base) if base is not None else 0
        self.added: list[str] = []  # GROWING: new tokens, in column order
        self.found: dict[str, int] = {}  # GROWING: columns of the tokens searched for or added
        self.searches = 0
        self.full = Vocabulary() if base is None and full is None else full
        self.state = self.SORTED if self.full is None else self.DICTIONARY

    @classmethod
    def of(cls, vocab: ModelVocabulary | Vocabulary | SortedTokens) -> ModelVocabulary:
        if isinstance(vocab, ModelVocabulary):
            return vocab
        return cls(full=vocab) if isinstance(vocab, Vocabulary) else cls(base=vocab)

    def __len__(self) -> int:
        return len(self.full) if self.full is not None else self.n_base + len(self.added)

    def dictionary(self) -> Vocabulary:
        """Every token in a dictionary (the state becomes DICTIONARY)."""
        if self.full is None:
            text = self.base.data().decode("utf-8", "surrogatepass")  # type: ignore[union-attr]
            self.full = Vocabulary([*(text.split(SEPARATOR) if text else []), *self.added], sorted_prefix=self.n_base)
            self.state = self.DICTIONARY
        return self.full

    @property
    def tokens(self) -> list[str]:
        return self.dictionary().tokens

    def for_scoring(self) -> Vocabulary | Indexed:
        """What batch scoring counts chunks against (`local_rows`): the model file's sorted
        tokens hashed in C (`Indexed`), where that was built and they are the whole
        vocabulary; else the dictionary."""
        if INDEXED is not None and self.state == self.SORTED:
            blob = self.base.data()  # type: ignore[union-attr]
            return Indexed(blob, *INDEXED(blob))
        return self.dictionary()

    def lookup(self, tokens: Iterable[str]) -> list[int]:
        if self.full is not None:
            return self.full.lookup(tokens)
        if self.state == self.SORTED:
            return self.base.lookup(tokens)  # type: ignore[union-attr]
        tokens = list(tokens)
        self.remember(tokens)
        get = self.found.get
        return [get(t, -1) for t in tokens]

    def remember(self, tokens: list[str]) -> None:
        """Remember the base columns of tokens not yet searched for."""
        found = self.found
        missing = [t for t in dict.fromkeys(tokens) if t not in found]
        self.searches += len(missing)
        for t, col in zip(missing, self.base.lookup(missing), strict=True):  # type: ignore[union-attr]
            if col >= 0:
                found[t] = col

    def grow(self, tokens: Iterable[str]) -> np.ndarray:
        """Columns of tokens (int64), adding the ones not seen before."""
        if self.full is None:
            tokens = list(tokens)
            if self.searches + len(tokens) > self.LIMIT:
                self.dictionary()
        if self.full is not None:
            return self.full.grow(tokens)
        self.state = self.GROWING
        self.remember(tokens)  # type: ignore[arg-type]
        found, added = self.found, self.added
        out = []
        for t in tokens:
            col = found.get(t)
            if col is None:
                col = found[t] = self.n_base + len(added)
                added.append(t)
            out.append(col)
        return np.array(out, dtype=np.int64)

    def sorted_blob(self) -> tuple[bytes, np.ndarray | None]:
        """The sorted token blob and the column order that matches it (None: the columns are
        in order), splicing new tokens into the base blob."""
        if self.full is not None:
            return self.full.sorted_blob()
        base = self.base.data()  # type: ignore[union-attr]
        if self.state == self.SORTED:
            return base, None
        base = base + b"\n" if base else b""  # every token followed by a newline
        new = sorted(range(len(self.added)), key=self.added.__getitem__)
        keys = [self.added[i].encode("utf-8", "surrogatepass") for i in new]
        where = [bisect.bisect_left(self.base, k) for k in keys]  # type: ignore[call-overload]
        pieces = []
        at = 0
        for w, key in zip(where, keys, strict=True):
            cut = self.base.offsets[w] if w < self.n_base else len(base)  # type: ignore[union-attr]
            pieces.append(base[at:cut])
            pieces.append(key + b"\n")
            at = cut
        pieces.append(base[at:])
        blob = b"".join(pieces)
        if blob.endswith(b"\n"):
            blob = blob[:-1]
        order = np.insert(np.arange(self.n_base), where, [self.n_base + i for i in new]).astype(np.int64)
        return blob, order


class Rows(NamedTuple):
    """Messages as flat entries, the one form every scorer and counter takes: message i is
    the next `lengths[i]` entries, each a distinct column (-1: a token the vocabulary lacks)
    with its count and, where the event model scores header fields apart, its field
    (`tokens.field_ids`).  numpy only: learning and classifying never import scipy."""

    cols: np.ndarray
    counts: np.ndarray
    lengths: np.ndarray
    fields: np.ndarray | None = None

    def take(self, which: np.ndarray) -> Rows:
        """Messages `which` (indices, in that order, repeats allowed)."""
        # One arange shifted per message, not an arange per message (a fifth of the CPU).
        which = np.asarray(which, dtype=np.int64)
        starts = np.cumsum(self.lengths) - self.lengths
        picked = self.lengths[which]
        at = np.cumsum(picked) - picked  # where each picked message starts in the result
        entries = np.arange(int(picked.sum()), dtype=np.int64) + np.repeat(starts[which] - at, picked)
        return Rows(self.cols[entries], self.counts[entries], picked, None if self.fields is None else self.fields[entries])

    def pieces(self, size: int) -> Iterator[Rows]:
        """The messages `size` at a time, in order (views of these arrays)."""
        ends = np.concatenate(([0], np.cumsum(self.lengths)))
        for at in range(0, len(self.lengths), size):
            a, b = ends[at], ends[min(at + size, len(self.lengths))]
            yield Rows(self.cols[a:b], self.counts[a:b], self.lengths[at : at + size], None if self.fields is None else self.fields[a:b])


class Chunk(NamedTuple):
    """A chunk of messages over a chunk-local vocabulary: `rows`' columns index `tokens`.
    Compact to send between processes: each token string once."""

    tokens: list[str]
    rows: Rows
    numeric: np.ndarray | None = None  # (messages, features) int64, where asked for (tokens.message_features)
    columns: np.ndarray | None = None  # each token's column in a model's vocabulary (-1: none), where counted against one

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # The tokens pickled as one newline-joined str, split where they land: a str each costs
        # pickle's opcode and memo entry both ways.  As a list where one holds a newline.
        text = SEPARATOR.join(self.tokens)
        if self.tokens and text.count(SEPARATOR) == len(self.tokens) - 1:
            return split_chunk, (text, *self[1:])
        return Chunk, tuple(self)


def split_chunk(text: str, *rest: object) -> Chunk:
    """A Chunk pickled with its tokens joined (`Chunk.__reduce__`)."""
    return Chunk(text.split(SEPARATOR), *rest)  # type: ignore[arg-type]


class Indexed(NamedTuple):
    """A model file's sorted token blob (newline-joined UTF-8, column order) and the hash table
    of its tokens that `_ctokens.indexed` makes of it: what the C counter looks each token up
    in as it counts a chunk.  Cheaper to build than a dictionary of the tokens, and the chunk
    needs no look-ups after."""

    blob: bytes
    starts: bytes
    table: bytes


# The blob's hash table in C, where it was built (else batch scoring takes the dictionary).
INDEXED = compiled.scanner_function("indexed")


def columns(index: dict[str, int], tokens: Iterable[str]) -> Sequence[int]:
    """`index[t]` for each token in turn, by one call that loops in C (an itemgetter), not one
    Python-level call per token."""
    tokens = tokens if isinstance(tokens, list | tuple) else list(tokens)
    if len(tokens) > 1:
        return operator.itemgetter(*tokens)(index)
    return [index[t] for t in tokens]  # itemgetter of one token gives its column bare


# The chunk counted in C where it was built (spamnb/text/_ctokens.c): one dictionary
# look-up per token and no sort, a message's entries in order of first sight in it (against
# a model's blob: in order of its columns, which batch scoring's sort then finds in order).
COUNTED = compiled.scanner_function("counted")


def local_rows(token_lists: list[list[str]], vocab: Vocabulary | Indexed | None = None, by_field: bool = False) -> Chunk:
    """Each message's distinct tokens, numbered by their first sight in the chunk, with counts
    (a message's entries in no set order: every scorer and counter sums them alike); with
    `vocab`, each distinct token's column in it too (`Chunk.columns`); `by_field`, each
    entry's field (`tokens.field_ids` of the chunk's tokens, in int32: fewer than the tokens,
    which the counter numbers in int32; half the bytes a worker sends back)."""
    if COUNTED is not None:  # with the fields (and against an Indexed blob, the columns) in one pass, in C
        tokens, cols, counts, lengths, columns, fields = COUNTED(token_lists, FieldNumbers() if by_field else None, *(vocab if isinstance(vocab, Indexed) else ()))
        rows = Rows(np.frombuffer(cols, np.int32), np.frombuffer(counts, np.int32), np.frombuffer(lengths, np.int64), None if fields is None else np.frombuffer(fields, np.int32))
        chunk = Chunk(tokens, rows, columns=None if columns is None else np.frombuffer(columns, np.int64))
    else:
        chunk = counted_chunk(token_lists)
        if by_field:
            chunk = chunk._replace(rows=chunk.rows._replace(fields=field_ids(chunk.tokens).astype(np.int32)[chunk.rows.cols]))
    if vocab is None or chunk.columns is not None:
        return chunk
    return chunk._replace(columns=np.asarray(vocab.lookup(chunk.tokens), dtype=np.int64))  # type: ignore[union-attr]


def counted_chunk(token_lists: list[list[str]]) -> Chunk:
    """`local_rows`' pure path, without a vocabulary or fields."""
    # Columns by first sight in one pass in C (a defaultdict whose default is its own size),
    # then each message's distinct columns and counts from one numpy sort of (message,
    # column) keys: two fifths less CPU than a Counter each.  The keys are int32 wherever
    # they fit (a column is less than the number of tokens), which sorts in half the time.
    index: defaultdict[str, int] = defaultdict()
    index.default_factory = index.__len__
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    total = int(lengths.sum())
    key = np.int32 if len(token_lists) * max(total, 1) <= np.iinfo(np.int32).max else np.int64
    ids = np.fromiter(map(index.__getitem__, itertools.chain.from_iterable(token_lists)), dtype=key, count=total)
    n = max(len(index), 1)
    keys = np.repeat(np.arange(len(token_lists), dtype=key) * n, lengths) + ids
    keys.sort()
    starts = np.flatnonzero(np.diff(keys, prepend=-1))
    distinct = keys[starts]
    row = distinct // n
    counts = np.diff(starts, append=len(keys))
    rows = Rows((distinct - row * n).astype(np.int32), counts.astype(np.int32), np.bincount(row, minlength=len(token_lists)))
    return Chunk(list(index), rows)
