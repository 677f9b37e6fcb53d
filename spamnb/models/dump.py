"""The model as text and back (`spamnb dump` / `spamnb restore`), as `bogoutil -d/-l` and
`sa-learn --backup/--restore` do it: for backups, and for moving a model between
machines or versions of spamnb, since the text names its fields and does not depend on
how the `.npz` lays out its arrays.

The dump is of the model as every command sees it, its journal's changes included
(`store.load`), and restoring it gives back the arrays a save of that model writes:

  line 1      a JSON object: format, version, the tokeniser settings, the scoring, the
              messages learnt per class, the numbers of token and digest lines, the token
              lines' columns, the numeric features' moments (with --meta), and the
              calibration's history, [log-odds, class] pairs (spamnb.models.calibration;
              a dump without it restores an empty one)
  then        one line per token, in the model's (sorted) order: the token, then its
              counts, tab-separated (`tf_ham tf_spam df_ham df_spam`, and the weighted
              sums where the scoring weights); in a token `\\`, tab and CR are escaped
  then        one line per learnt message: its digest in hex, a tab, `ham` or `spam`
  last        `end`, so that a cut-off dump is refused rather than half restored
"""
from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import BinaryIO

import numpy as np

from spamnb.models import store
from spamnb.models.model import Model
from spamnb.models.modelfile import ModelError

FORMAT = "spamnb-dump"
VERSION = 1
CLASSES = ("ham", "spam")
ESCAPES = {b"\\": b"\\\\", b"\t": b"\\t", b"\r": b"\\r"}
UNESCAPES = {v: k for k, v in ESCAPES.items()}
ESCAPED = re.compile(rb"[\\\t\r]")
UNESCAPED = re.compile(rb"\\[\\tr]")
DIGEST = re.compile(rb"[0-9a-f]{32}")


def columns(weighted: bool) -> list[str]:
    names = ["tf_ham", "tf_spam", "df_ham", "df_spam"]
    return names + (["weighted_ham", "weighted_spam"] if weighted else [])


def dump(model: Model, out: BinaryIO) -> None:
    """Write `model` as text (see the module's note)."""
    arrays = store.to_arrays(model)
    blob = arrays["tokens"].tobytes()
    tokens = blob.split(b"\n") if blob else []
    per_token = np.concatenate([arrays[k] for k in ("tf", "df", "weighted") if k in arrays]).T
    head = {
        "format": FORMAT,
        "version": VERSION,
        "settings": json.loads(str(arrays["settings"][()])),
        "scoring": json.loads(str(arrays["scoring"][()])),
        "messages": dict(zip(CLASSES, arrays["docs"].tolist(), strict=True)),
        "tokens": len(tokens),
        "learnt": len(arrays["learnt_class"]),
        "columns": ["token", *columns("weighted" in arrays)],
    }
    if "meta" in arrays:
        head["meta"] = arrays["meta"].tolist()
    if model.history:
        head["history"] = [[s, c] for s, c in model.history]
    out.write(json.dumps(head, sort_keys=True).encode() + b"\n")
    for token, counts in zip(tokens, per_token.tolist(), strict=True):
        out.write(b"\t".join([ESCAPED.sub(lambda m: ESCAPES[m.group()], token), *(str(c).encode() for c in counts)]) + b"\n")
    for digest, cls in zip(arrays["learnt"], arrays["learnt_class"].tolist(), strict=True):
        out.write(digest.tobytes().hex().encode() + b"\t" + CLASSES[cls].encode() + b"\n")
    out.write(b"end\n")


def restore(stream: BinaryIO, name: str) -> Model:
    """The model a dump holds, checked as a model file is; ModelError names `name` and the line."""
    lines = iter(stream)
    number = 0

    def line() -> bytes:
        nonlocal number
        number += 1
        try:
            return next(lines).rstrip(b"\n")
        except StopIteration:
            raise ModelError(f"{name}: the dump ends early, at line {number} (cut off?)") from None

    def refuse(why: str) -> ModelError:
        return ModelError(f"{name}:{number}: not a spamnb dump ({why})")

    try:
        head = json.loads(line())
    except (ValueError, UnicodeDecodeError) as err:
        raise refuse("its first line is no JSON object") from err
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise refuse(f"format {str(head.get('format') if isinstance(head, dict) else head)[:40]!r}")
    if head.get("version") != VERSION:
        raise refuse(f"dump version {head.get('version')!r}; this spamnb reads version {VERSION}")
    try:
        weighted = head["columns"] == ["token", *columns(True)]
        if not weighted and head["columns"] != ["token", *columns(False)]:
            raise refuse(f"unknown columns {head['columns']!r}")
        n_tokens, n_learnt = int(head["tokens"]), int(head["learnt"])
        docs = [int(head["messages"][c]) for c in CLASSES]
        settings, scoring = json.dumps(head["settings"], sort_keys=True), json.dumps(head["scoring"], sort_keys=True)
    except (KeyError, TypeError, ValueError) as err:
        raise refuse(f"its first line lacks {err}") from err
    width = len(columns(weighted))
    tokens, counts = read_tokens(line, refuse, n_tokens, width)
    learnt, learnt_class = read_learnt(line, refuse, n_learnt)
    if line() != b"end":
        raise refuse("expected `end` after the learnt messages")
    if any(a >= b for a, b in itertools.pairwise(tokens)):
        raise ModelError(f"{name}: not a spamnb dump (its tokens are not sorted, or one is there twice)")
    per_token = np.array(counts, dtype=np.int64).reshape(n_tokens, width).T if n_tokens else np.zeros((width, 0), np.int64)
    arrays = {
        "tokens": np.frombuffer(b"\n".join(tokens), dtype=np.uint8),
        "tf": per_token[0:2],
        "df": per_token[2:4],
        "docs": np.array(docs, dtype=np.int64),
        "settings": np.array(settings),
        "scoring": np.array(scoring),
        "learnt": np.frombuffer(b"".join(learnt), dtype=np.uint8).reshape(-1, 16),
        "learnt_class": np.array(learnt_class, dtype=np.uint8),
    }
    if weighted:
        arrays["weighted"] = per_token[4:6]
    if "meta" in head:
        try:
            arrays["meta"] = np.array(head["meta"], dtype=np.int64)
        except (TypeError, ValueError, OverflowError) as err:
            raise ModelError(f"{name}: not a spamnb dump (the numeric features' moments: {err})") from err
        if arrays["meta"].ndim != 3:
            raise ModelError(f"{name}: not a spamnb dump (the numeric features' moments are not (2, W, W))")
    if "history" in head:
        try:
            pairs = [(float(s), int(c)) for s, c in head["history"]]
            if any(c not in (0, 1) for _, c in pairs):
                raise ValueError("a class other than 0 (ham) or 1 (spam)")
        except (TypeError, ValueError, OverflowError) as err:
            raise ModelError(f"{name}: not a spamnb dump (the calibration's history: {err})") from err
        arrays["history"] = np.array([s for s, _ in pairs], dtype=np.float64)
        arrays["history_class"] = np.array([c for _, c in pairs], dtype=np.uint8)
    return store.from_arrays(arrays, name, growable=False)


def read_tokens(line: Callable[[], bytes], refuse: Callable[[str], ModelError], n: int, width: int) -> tuple[list[bytes], list[int]]:
    """The token lines: (tokens, their counts flattened)."""
    tokens, counts = [], []
    for _ in range(n):
        fields = line().split(b"\t")
        if len(fields) != 1 + width:
            raise refuse(f"a token line of {len(fields)} fields, not {1 + width}")
        tokens.append(UNESCAPED.sub(lambda m: UNESCAPES[m.group()], fields[0]))
        try:
            values = [int(f) for f in fields[1:]]
        except ValueError as err:
            raise refuse("a count that is not a whole number") from err
        if min(values) < 0 or max(values) >= 1 << 63:
            raise refuse("a count out of range")
        counts.extend(values)
    return tokens, counts


def read_learnt(line: Callable[[], bytes], refuse: Callable[[str], ModelError], n: int) -> tuple[list[bytes], list[int]]:
    """The learnt messages' lines: (digests, classes)."""
    digests, classes = [], []
    for _ in range(n):
        digest, _, cls = line().partition(b"\t")
        if not DIGEST.fullmatch(digest) or cls.decode("ascii", "replace") not in CLASSES:
            raise refuse("expected a learnt message: 32 hex digits, a tab, ham or spam")
        digests.append(bytes.fromhex(digest.decode()))
        classes.append(CLASSES.index(cls.decode()))
    return digests, classes
