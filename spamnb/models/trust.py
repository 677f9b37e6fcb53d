"""The one validation of a model's values, on every path that reads a model file: the
pipe (`onemessage`), batch and training (`store.load`), `merge`, and every save.

A model passes these rules or is a damaged-model error everywhere, so no path scores
what another refuses.  They bound what scoring computes: counts far from int64's end
and exact in floats, the vocabulary sorted and cut where its separators are, no token
in more messages than were learnt, weighted sums that widen to int64.
Nothing here imports numpy: the arrays are `npzview.Array`s (numpy's are wrapped by
`of_numpy`).  The checks are a pass over every array; the pipe pays them once per
version of the file (`verified`, `remember`).  Each raises ValueError; callers name
the file.
"""
from __future__ import annotations

import contextlib
import os
from itertools import accumulate
from operator import lt

from spamnb.bayes import formulas
from spamnb.bayes.formulas import WEIGHT_SCALE
from spamnb.models.modelfile import ModelError
from spamnb.models.npzview import FORMAT, READS, VERSION, Array

# Counts and their sums per class stay below this: exact in a float, and a sum of two
# models' (merge) or a model's and its journal's still far from int64's end.
MAX_COUNT = 1 << 53
# The smoothing and the numeric features' weight: beyond these a score overflows to
# inf or nan (1e308 did), and no fit or option comes near them.
MAX_ALPHA = 1e6
MAX_WEIGHT = 1e6
# Weighted sums (nb.Weighting, in units of WEIGHT_SCALE) are widened to int64 by batch.
MAX_WEIGHTED = 1 << 62


def check_alpha(alpha: float) -> None:
    if not 0 < alpha <= MAX_ALPHA:
        raise ValueError(f"alpha must be positive and at most {MAX_ALPHA:g}, not {alpha}")


def check_weight(weight: float) -> None:
    if not 0 <= weight <= MAX_WEIGHT:
        raise ValueError(f"the numeric features' weight must be between 0 and {MAX_WEIGHT:g}, not {weight}")


# The members a reader of a model validates besides npzview.REQUIRED, where the file has them.
OPTIONAL = ("offsets", "weighted", "weighted_totals", "meta", "history", "history_class")


def validate(path: str, a: dict) -> None:
    """The one validation of a model file's arrays, whichever command reads it (and once per
    version of the file: npzview.open_members): a spamnb model of this version,
    `check_values`, and the weighted sums' totals that the one-message scorer reads
    (`weighted_totals`) those of the sums.  ModelError or ValueError."""
    import json
    import math

    floats = [k for k, member in a.items() if member.kind == "f" and k not in ("weighted_totals", "history")]
    if floats:
        raise ValueError(f"{floats[0]} holds floats")
    fmt = a["format"].text()
    if fmt != FORMAT:
        raise ModelError(f"{path}: not a spamnb model (format {fmt[:40]!r})")
    version = a["version"].scalar()
    if version not in READS:
        raise ModelError(f"{path}: model format version {version}, this spamnb reads version {VERSION}; retrain")
    check_values(a)
    if "weighted" not in a or "weighted_totals" not in a or a["weighted_totals"].shape != (2, 2):
        return  # the scorers refuse what is missing, each as it reads the file
    scoring = json.loads(a["scoring"].text())
    if not isinstance(scoring, dict):
        return  # the scoring's parser says what is wrong with it
    alpha = scoring.get("alpha")
    event = formulas.EVENTS.get(scoring.get("event", "fisher"))
    alpha = (event and event.default_alpha) if alpha is None else alpha
    if not isinstance(alpha, (int, float)) or not 0 < alpha <= MAX_ALPHA:
        return  # the scoring's parser says what is wrong with it
    n = sum(int(d) for d in a["docs"].items())
    df, weighted = rows(a["df"]), rows(a["weighted"])
    f = [formulas.idf(formulas.Scalar, n, h + s) for h, s in zip(*df, strict=True)] if scoring.get("idf") else None
    stored = rows(a["weighted_totals"])
    for c in (0, 1):
        every = [w / WEIGHT_SCALE for w in weighted[c]] if f is None else [fi * w / WEIGHT_SCALE for fi, w in zip(f, weighted[c], strict=True)]
        sums = (math.fsum(every), math.fsum(math.log(v + alpha) for v in every))
        if not all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-6) for x, y in zip(sums, stored[c], strict=True)):
            raise ValueError("weighted sums' totals that are not their sums")


def history_of(a: dict) -> list[tuple[float, int]]:
    """The calibration's history (spamnb.models.calibration) a model file holds: (log-odds,
    class) pairs, finite, of ham or spam; ValueError for one that is not."""
    import math

    if "history" not in a or "history_class" not in a:
        raise ValueError("a calibration history without its classes" if "history" in a else "calibration history classes without their scores")
    scores, classes = a["history"], a["history_class"]
    if len(scores.shape) != 1 or scores.shape != classes.shape:
        raise ValueError(f"a calibration history of shapes {scores.shape}, {classes.shape}")
    pairs = list(zip(scores.items(), classes.items(), strict=True))
    if not all(math.isfinite(s) and c <= 1 for s, c in pairs):
        raise ValueError("a calibration history of other than finite scores of ham or spam")
    return pairs


def check_score(p: float) -> float:
    """P(spam) as every path reports it: a number in [0, 1], or the model is damaged."""
    if not 0.0 <= p <= 1.0:
        raise ModelError(f"damaged spamnb model (a score of {p}, not a probability)")
    return p


def rows(array: object) -> tuple:
    """A (2, V) array's two rows as sequences of ints (strided views, no copy)."""
    items, n = array.items(), array.shape[1]  # type: ignore[attr-defined]
    if array.fortran:  # type: ignore[attr-defined]
        return items[0::2], items[1::2]
    return items[:n], items[n : 2 * n]


# Each member: the dtype kinds it may have, its number of dimensions, its item size
# (0: any).  Counts are saved unsigned; a signed count array is read (and checked
# non-negative) for files written by other tools.
SPEC: dict[str, tuple[str, int, int]] = {
    "format": ("US", 0, 0),
    "version": ("iu", 0, 0),
    "settings": ("US", 0, 0),
    "scoring": ("US", 0, 0),
    "tokens": ("u", 1, 1),
    "offsets": ("iu", 1, 0),
    "tf": ("iu", 2, 0),
    "df": ("iu", 2, 0),
    "docs": ("iu", 1, 0),
    "learnt": ("u", 2, 1),
    "learnt_class": ("u", 1, 1),
    "weighted": ("iu", 2, 0),
    "meta": ("i", 3, 8),
    "history": ("f", 1, 8),
    "history_class": ("u", 1, 1),
}


def check_values(a: dict) -> None:
    """Every rule on the arrays `a` (name -> npzview.Array) that scoring relies on."""
    check_kinds(a)
    tf, df, docs = a["tf"], a["df"], a["docs"]
    n = tf.shape[1] if len(tf.shape) == 2 else -1
    if tf.shape != (2, n) or df.shape != (2, n) or docs.shape != (2,):
        raise ValueError(f"count arrays of shapes {tf.shape}, {df.shape}, {docs.shape}")
    raw = bytes(a["tokens"].data)
    # Counted before any list of them is made: a blob of newlines must not cost gigabytes.
    if raw.count(b"\n") != n - 1 if n else raw:
        raise ValueError(f"{n:,} tokens for a token blob of another number")
    if raw.startswith(b"\n") or raw.endswith(b"\n") or b"\n\n" in raw:
        raise ValueError("empty tokens")
    raw.decode("utf-8", "surrogatepass")  # UnicodeDecodeError: a ValueError
    tokens = raw.split(b"\n") if n else []
    if "offsets" in a:  # token i is raw[offsets[i] : offsets[i + 1] - 1]
        starts = list(accumulate(map((1).__add__, map(len, tokens)), initial=0)) if n else [1]
        if a["offsets"].items().tolist() != starts:
            raise ValueError("token offsets do not fit the token blob")
    if not all(map(lt, tokens, tokens[1:])) or b"" in tokens:
        raise ValueError("tokens not sorted")
    del tokens
    counts = [int(d) for d in docs.items()]
    if not all(0 <= d <= MAX_COUNT for d in counts):
        raise ValueError(f"message counts {counts[0]:,} and {counts[1]:,}")
    for c, (t, d) in enumerate(zip(rows(tf), rows(df), strict=True)):
        if negative(tf, t) or negative(df, d):
            raise ValueError("negative counts")
        if sum(t) > MAX_COUNT:
            raise ValueError(f"token counts past {MAX_COUNT:,}")
        if max(d, default=0) > counts[c]:
            raise ValueError(f"a token in more messages than the {counts[c]:,} learnt")
    if "weighted" in a:
        w = a["weighted"]
        if w.shape != tf.shape:
            raise ValueError(f"weighted sums of shape {w.shape} for counts of {tf.shape}")
        for s in rows(w):
            if negative(w, s) or sum(s) > MAX_WEIGHTED:
                raise ValueError(f"weighted sums past {MAX_WEIGHTED:,}")
    learnt, classes = a["learnt"], a["learnt_class"]
    if len(learnt.shape) != 2 or learnt.shape[1:] != (16,) or classes.shape != learnt.shape[:1]:
        raise ValueError("learnt digests of the wrong shape")
    if max(classes.items(), default=0) > 1:
        raise ValueError("a learnt digest of a class other than ham or spam")
    if "meta" in a:
        check_moments(a["meta"])
    check_history(a)
    digests = bytes(learnt.data)
    keys = [digests[i : i + 16] for i in range(0, len(digests), 16)]
    if not all(map(lt, keys, keys[1:])):
        raise ValueError("learnt digests not sorted")


def check_kinds(a: dict) -> None:
    """Each array of `a` of the kind, dimensions and item size SPEC gives it."""
    for name, array in a.items():
        kinds, ndim, itemsize = SPEC.get(name, (array.kind, len(array.shape), 0))
        if array.kind not in kinds or len(array.shape) != ndim or (itemsize and array.itemsize != itemsize):
            raise ValueError(f"{name} is {array.kind}{array.itemsize} of {len(array.shape)} dimensions")


def check_history(a: dict) -> None:
    """The calibration history's rules (`history_of`), where `a` holds one.  With
    `check_kinds`, all `check_values` asks of arrays that hold no counts: a save checks
    its model's counts before the calibration is fitted, the history after (store.Prepared)."""
    if "history" in a or "history_class" in a:
        history_of(a)


def negative(array: Array, items: memoryview | list) -> bool:
    """Whether `items` (of `array`) holds a number below zero: only a signed array can (spamnb
    saves its counts unsigned; a file of another tool's may not)."""
    return array.kind == "i" and min(items, default=0) < 0


def check_moments_saved(kind: str, saved: bool) -> None:
    """The numeric features' moments are saved exactly when the scoring has the term
    (`--meta` other than none): either without the other is damage."""
    if (kind != "none") != saved:
        raise ValueError("numeric features' moments without --meta" if saved else "--meta without its numeric features' moments")


def moments_lists(array: object) -> list[list[list[int]]]:
    """The numeric features' moments (spamnb.meta) as nested lists, those of messages and
    squares not negative."""
    from spamnb.bayes import meta

    w = meta.WIDTH
    if array.kind != "i" or array.shape != (2, w, w) or array.fortran:  # type: ignore[attr-defined]
        raise ValueError(f"numeric features' moments of {array.kind}{8 * array.itemsize} and shape {array.shape}, not i64 and (2, {w}, {w})")  # type: ignore[attr-defined]
    flat = list(array.items())  # type: ignore[attr-defined]
    moments = [[flat[(c * w + i) * w : (c * w + i + 1) * w] for i in range(w)] for c in (0, 1)]
    if any(m[i][i] < 0 for m in moments for i in range(w)):
        raise ValueError("numeric features' moments of negative messages or squares")
    return moments


def check_moments(array: object) -> None:
    """Moments that some mail could have: a covariance (meta.Gaussians' ValueError else)."""
    from spamnb.bayes import meta

    meta.Gaussians("gda", moments_lists(array))


def of_numpy(arrays: dict) -> dict:
    """numpy arrays as the npzview.Arrays `check_values` takes (their bytes copied)."""
    import sys

    out = {}
    for k, v in arrays.items():
        if v.dtype.kind not in "uif":
            continue
        v = v.astype(v.dtype.newbyteorder("="), copy=False)
        data = memoryview(v.tobytes(order="C"))
        out[k] = Array(v.dtype.kind, v.dtype.itemsize, sys.byteorder == "little", tuple(v.shape), False, data, 0)
    return out


# The pipe's memory of a file it checked whole: an extended attribute on the model, set
# by its owner's reader (the only one trusted: a file of another's may carry any), keyed
# by what changes when the file does.  Where attributes are not kept, every open checks.
ATTRIBUTE = "user.spamnb.verified"
RULES = 1  # raise when the rules change: files checked by older ones are checked again


def key_of(st: os.stat_result, identity: bytes) -> bytes:
    return b"%d:%d:%d:%d:%s" % (RULES, st.st_ino, st.st_size, st.st_mtime_ns, identity.hex().encode())


def verified(fd: int, st: os.stat_result, identity: bytes) -> bool:
    """Whether this version of the file (its inode, size, mtime and directory) passed every check before."""
    if st.st_uid != os.geteuid():
        return False
    try:
        return os.getxattr(fd, ATTRIBUTE) == key_of(st, identity)
    except (OSError, AttributeError):  # no attributes there, or none set
        return False


def remember(fd: int, st: os.stat_result, identity: bytes) -> None:
    """Note that this version of the file passed (best effort: read-only, another's, no attributes)."""
    if st.st_uid != os.geteuid():
        return
    with contextlib.suppress(OSError, AttributeError):
        os.setxattr(fd, ATTRIBUTE, key_of(st, identity))


class ModelCheck:
    """`npzview.open_members`' `check` for the model file at `path`: `validate` its arrays,
    once per version of the file (`verified`, `remember`)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, arrays: dict) -> None:
        validate(self.path, arrays)

    verified = staticmethod(verified)
    remember = staticmethod(remember)
