"""One message scored without numpy: what `classify --pipe` runs once per mail.

The same log-odds as batch classify (`nb.EventModel.log_odds` over the whole model), to
rounding: the message's few hundred distinct tokens are looked up in the mapped model
file (`npzview`, `sortedtokens`) and scored in plain floats by the model's event model
(`spamnb.bayes.formulas`, the formulas batch runs over arrays).  A bare interpreter with
numpy imported was most of a piped message's time.
"""
from __future__ import annotations

import math
from collections import Counter, namedtuple

from spamnb.bayes import formulas, meta
from spamnb.bayes.formulas import HAM, SPAM
from spamnb.bayes.sortedtokens import SortedTokens, blob_offsets
from spamnb.models import calibration, journal, npzview, trust
from spamnb.models.modelfile import ModelError
from spamnb.models.scoring import Scoring
from spamnb.text.tokens import Tokenizer, TokenSettings

# `typing` and `collections.abc` are off the one-message pipe's start-up: names for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

CLASSES = ("ham", "spam")

def event_settings(scoring: Scoring) -> tuple[float, tuple[str, bool, str]]:
    """The scoring's alpha (its event model's default where None) and weighting (tf, idf,
    length norm, as nb.Weighting; `Scoring` checked it)."""
    alpha = formulas.event_class(scoring.event).default_alpha if scoring.alpha is None else float(scoring.alpha)
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, not {alpha}")
    return alpha, (scoring.tf, bool(scoring.idf), scoring.length_norm)


# One tokeniser per settings in a process: its memo of header fields outlives a model that
# a model of the same settings replaces (a resident server's switch), instead of filling
# again beside the old one's until the collector frees that (a cycle: its bound `words`).
_TOKENIZERS: dict[TokenSettings, Tokenizer] = {}
TOKENIZERS_KEPT = 16


def tokenizer_for(settings: TokenSettings) -> Tokenizer:
    """The process's tokeniser of these settings."""
    found = _TOKENIZERS.get(settings)
    if found is None:
        if len(_TOKENIZERS) >= TOKENIZERS_KEPT:
            _TOKENIZERS.clear()
        found = _TOKENIZERS[settings] = Tokenizer(settings)
    return found


class Counts2:
    """A (2, V) count array as stored, indexed [class][column] through `at`."""

    def __init__(self, array: npzview.Array) -> None:
        self.items = array.items()
        self.fortran, self.n = array.fortran, array.shape[1]

    def at(self, cls: int, col: int) -> int:
        return self.items[2 * col + cls] if self.fortran else self.items[cls * self.n + col]

    def row(self, cls: int) -> memoryview | list:
        """All of one class's counts (a strided view: no copy)."""
        return self.items[cls :: 2] if self.fortran else self.items[cls * self.n : (cls + 1) * self.n]


# make_resident builds its dicts this many tokens at a time: one call over a whole vocabulary
# holds the interpreter's lock for ~50 ms, while a server's other threads wait to answer requests.
SLICE = 1 << 13


class OneModel:
    """A model file opened to score single messages: mapped (or read whole: `hold`, `whole`, see
    npzview.open_members), validated.  `scoring`: scored with it instead of the file's
    (`eval --online`'s settings)."""

    def __init__(self, path: str, hold: bool = False, whole: bool = False, scoring: Scoring | None = None) -> None:
        self.path = path
        try:
            self._mm, a = npzview.open_members(path, npzview.REQUIRED, trust.OPTIONAL, check=trust.ModelCheck(path), hold=hold, whole=whole)
            blob = a["tokens"]
            if blob.kind != "u" or blob.itemsize != 1 or len(blob.shape) != 1:
                raise ValueError("tokens not bytes")
            offsets = a["offsets"].items() if "offsets" in a else blob_offsets(blob.data.tobytes())
            if len(offsets) < 1 or offsets[0] not in (0, 1) or offsets[-1] != blob.shape[0] + 1:
                raise ValueError("token offsets do not fit the token blob")
            self.vocab = SortedTokens(self._mm, offsets, base=blob.offset, size=blob.shape[0])  # type: ignore[arg-type]
            n = len(self.vocab)
            tf, df, docs = a["tf"], a["df"], a["docs"]
            if tf.shape != (2, n) or df.shape != tf.shape or docs.shape != (2,):
                raise ValueError(f"count arrays of shapes {tf.shape}, {df.shape}, {docs.shape} for {n} tokens")
            learnt, learnt_class = a["learnt"].shape, a["learnt_class"].shape
            if len(learnt) != 2 or learnt[1:] != (16,) or learnt_class != learnt[:1]:
                raise ValueError("learnt digests of the wrong shape")
            self.tf, self.df = Counts2(tf), Counts2(df)
            self.docs = [int(d) for d in docs.items()]
            if min(self.docs) < 0:
                raise ValueError("negative counts")
            self._learnt_at, self._learnt_class = a["learnt"].offset, a["learnt_class"].items()
            self.tokens = TokenSettings.from_json(a["settings"].text())
            self.scoring = Scoring.from_json(a["scoring"].text())  # checked, even where `scoring` is used
            if scoring is not None:
                self.scoring = scoring
            self.alpha, self.weighting = event_settings(self.scoring)
            self.event = formulas.event_class(self.scoring.event)(self.alpha)
            self.weighted = self.weighted_sums(a, n) if self.weighting != formulas.UNWEIGHTED else None
            trust.check_moments_saved(self.scoring.meta, "meta" in a)
            self.base_moments = trust.moments_lists(a["meta"]) if "meta" in a else meta.empty_moments()
            self._history = (a["history"], a["history_class"]) if "history" in a else None  # trust.validate checked them
        except ModelError:
            raise
        except RecursionError as err:
            raise ModelError(f"{path}: damaged spamnb model (settings nested too deeply)") from err
        except (ValueError, TypeError, UnicodeDecodeError, AttributeError) as err:
            raise ModelError(f"{path}: damaged spamnb model ({err})") from err
        self.identity = journal.identity(self._mm)
        self.base_docs = self.docs
        self.n_features = n
        self._given = scoring is not None
        self._base_scoring = self.scoring
        self._table: dict[str, tuple[int, ...]] | None = None  # make_resident's
        self._entries: dict[str, tuple] | None = None  # make_resident's, for a `per_token` event model
        # What make_resident's entries are made of: the file's tokens, the number of each one's pair
        # of message counts, and those pairs (a learn changes the docs, hence every entry).
        self._pairs_of: tuple[list[str], list[int], list[tuple[int, int]]] | None = None
        self._tokenizer: Tokenizer | None = None
        # Messages learnt since the model was last written (spamnb.models.journal): their counts are added.
        self._take_journal(journal.read(path, self.identity))

    def _take_journal(self, jour: journal.Journal) -> None:
        """What the journal changes, from the model file's counts and scoring."""
        self.journal = jour
        if self.weighted is not None and jour:
            raise npzview.NotPlain(self.path)  # the journal holds no weighted sums (learnone leaves such a model to numpy)
        fitted = jour.fitted
        # A learn's refit (spamnb.models.calibration), unless scored with a scoring given.
        self.scoring = fitted.applied_to(self._base_scoring) if fitted is not None and not self._given else self._base_scoring
        self.docs = jour.docs_now(self.base_docs)
        self._gaussians: meta.Gaussians | None = None
        self._linear: VocabularySums | None = None
        # The journal's tokens' counts, the model's and the journal's together (kept by `learn`).
        self._now: dict[str, list[int]] = {}
        self._clamped: set[str] = set()  # tokens whose counts the journal would take below zero
        self._update_now(list(jour.tokens))
        # An empty model: the journal's counts are the counts (learns only add to them), read
        # where the journal keeps them (`now`), not copied.
        self._only_journal = not self.n_features and not self._clamped
        if self._only_journal:
            self._now = {}
        if self._entries is not None:
            self._entries_now()

    def _entries_now(self) -> None:
        """make_resident's entries under the docs now, each computed once per distinct pair of counts; the
        journal's tokens' from their counts now.  Built a slice at a time (SLICE)."""
        names, numbers, pairs = self._pairs_of  # type: ignore[misc]
        entry, docs = self.event.entry, self.docs
        kept = [entry(*pair, docs) for pair in pairs]
        entries: dict[str, tuple] = {}
        for i in range(0, len(names), SLICE):
            entries.update(zip(names[i : i + SLICE], map(kept.__getitem__, numbers[i : i + SLICE]), strict=True))
        for name, counts in self.now().items():  # the journal's tokens: the model's counts and the journal's
            entries[name] = entry(counts[2], counts[3], docs)
        self._entries = entries

    def journal_reread(self) -> OneModel | None:
        """This model with its journal as the file is now (learns appended to it since), the model
        file's part shared, not read again: a resident server's answer to a learn, where reading
        the file again cost 0.2-0.3 s.  None where the journal cannot be taken so (read the file)."""
        again = object.__new__(OneModel)
        again.__dict__.update(self.__dict__)
        try:
            again._take_journal(journal.read(self.path, self.identity))
        except npzview.NotPlain:
            return None
        return again

    def history(self) -> list[tuple[float, int]]:
        """The calibration's history (spamnb.models.calibration): the model file's scores, then its journal's."""
        base = list(zip(self._history[0].items(), self._history[1].items(), strict=True)) if self._history is not None else []
        return calibration.trimmed(base + self.journal.history)

    def now(self) -> dict[str, list[int]]:
        """The journal's tokens' counts, the model's and the journal's together."""
        return self.journal.tokens if self._only_journal else self._now

    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = tokenizer_for(self.tokens)
        return self._tokenizer

    def make_resident(self) -> None:
        """Every token's counts in a dict, for a model that scores many messages (`spamnb serve`):
        the binary search of the mapped vocabulary, in Python, was most of a message's time.
        For a `per_token` event model, every token's entry instead (`entries_of`), each computed
        once per distinct pair of message counts.  The blob splits into the tokens the offsets
        say: `trust.check_values` checked that of this version of the file."""
        if not len(self.vocab):
            return
        names = self.vocab.data().decode("utf-8", "surrogatepass").split("\n")
        n = len(names)
        if self.event.per_token:
            hams, spams = self.df.row(HAM), self.df.row(SPAM)
            pairs: set[tuple[int, int]] = set()
            for i in range(0, n, SLICE):
                pairs.update(zip(hams[i : i + SLICE], spams[i : i + SLICE], strict=True))
            numbered = {pair: k for k, pair in enumerate(pairs)}
            numbers: list[int] = []
            for i in range(0, n, SLICE):
                numbers += map(numbered.__getitem__, zip(hams[i : i + SLICE], spams[i : i + SLICE], strict=True))
            self._pairs_of = names, numbers, list(numbered)
            self._entries_now()
            return
        rows = [self.tf.row(HAM), self.tf.row(SPAM), self.df.row(HAM), self.df.row(SPAM)]
        if self.weighted is not None:
            rows += [self.weighted[0].row(HAM), self.weighted[0].row(SPAM)]
        table: dict[str, tuple[int, ...]] = {}
        for i in range(0, n, SLICE):
            table.update(zip(names[i : i + SLICE], zip(*(row[i : i + SLICE] for row in rows), strict=True), strict=True))
        self._table = table

    def weighted_sums(self, a: dict[str, npzview.Array], n: int) -> tuple[Counts2, list[list[float]]]:
        """A weighted model's per-token sums (store.to_arrays' `weighted`) and their sums over the
        vocabulary ([total, sum of log(sum + alpha)] per class, `weighted_totals`)."""
        if "weighted" not in a or "weighted_totals" not in a:
            raise npzview.NotPlain(self.path)  # numpy's loader says what is missing
        weighted, totals = a["weighted"], a["weighted_totals"]
        if weighted.shape != (2, n) or totals.shape != (2, 2):
            raise ValueError(f"weighted sums of shapes {weighted.shape}, {totals.shape}")
        if weighted.kind != "u" or totals.kind != "f":
            raise ValueError(f"weighted sums stored as {'signed numbers' if weighted.kind == 'i' else 'the wrong kind'}")
        t = list(totals.items())
        if not all(math.isfinite(v) for v in t):
            raise ValueError("weighted sums not finite")
        rows = [t[0:2], t[2:4]] if not totals.fortran else [t[0::2], t[1::2]]
        if min(rows[HAM][0], rows[SPAM][0]) < 0:
            raise ValueError("negative weighted sums")  # sums of counts: scoring would take a log of one
        return Counts2(weighted), rows

    def base_counts(self, names: list[str]) -> list[list[int] | None]:
        """Each token's counts in the model file (tf ham, tf spam, df ham, df spam, and for a
        weighted model its weighted sums ham, spam); None for one it lacks."""
        if not self.n_features:
            return [None] * len(names)
        if self._table is not None:  # tuples: a resident model is not learnt into (`learn` changes lists)
            return list(map(self._table.get, names))  # type: ignore[arg-type]
        tf, df = self.tf, self.df
        try:
            cols = self.vocab.lookup(names)
        except ValueError as err:  # sortedtokens.OffsetError
            raise ModelError(f"{self.path}: damaged spamnb model ({err})") from err
        if self.weighted is not None:
            w = self.weighted[0]
            return [[tf.at(HAM, col), tf.at(SPAM, col), df.at(HAM, col), df.at(SPAM, col), w.at(HAM, col), w.at(SPAM, col)] if col >= 0 else None for col in cols]
        return [[tf.at(HAM, col), tf.at(SPAM, col), df.at(HAM, col), df.at(SPAM, col)] if col >= 0 else None for col in cols]

    def _update_now(self, names: list[str]) -> None:
        counts, clamped = self.journal.now(names, self.base_counts(names))
        self._now.update(zip(names, counts, strict=True))
        self._clamped |= clamped

    def counts_of(self, names: list[str]) -> list[list[int] | None]:
        """Each token's counts (tf ham, tf spam, df ham, df spam), the journal's added;
        None for a token neither the model nor its journal knows."""
        now = self.now()
        if not now:
            return self.base_counts(names)
        if not self.n_features:
            return list(map(now.get, names))  # the journal's counts are all there is
        rest = [name for name in names if name not in now]
        found = dict(zip(rest, self.base_counts(rest), strict=True))
        return [now[name] if name in now else found[name] for name in names]

    def entries_of(self, names: list[str]) -> list[tuple | None]:
        """Each token's entry (`formulas.Event.entry` of its counts, for a `per_token` event
        model), the journal's counts added; None for a token neither the model nor its journal knows."""
        if self._entries is not None:
            return list(map(self._entries.get, names))
        entry, docs, kept = self.event.entry, self.docs, {}
        found = []
        for counts in self.counts_of(names):
            if counts is None:
                found.append(None)
                continue
            pair = (counts[2], counts[3])
            e = kept.get(pair)
            found.append(e if e is not None else kept.setdefault(pair, entry(*pair, docs)))
        return found

    def learnt_class(self, digest: bytes) -> int | None:
        """The class a message of this digest was learnt as (None: never), journal first."""
        if digest in self.journal.learnt:
            return self.journal.learnt[digest]
        mm, at, lo, hi = self._mm, self._learnt_at, 0, len(self._learnt_class)
        while lo < hi:  # the digests are saved sorted
            mid = (lo + hi) >> 1
            if mm[at + 16 * mid : at + 16 * mid + 16] < digest:
                lo = mid + 1
            else:
                hi = mid
        return int(self._learnt_class[lo]) if lo < len(self._learnt_class) and mm[at + 16 * lo : at + 16 * lo + 16] == digest else None

    def check_trained(self) -> None:
        missing = [CLASSES[c] for c in (HAM, SPAM) if self.docs[c] == 0]
        if missing:
            raise ModelError(f"{self.path}: the model has no {' and no '.join(missing)} messages yet: train it on both classes")

    def log_odds_of(self, distinct: Counter[str], shares: list[float] | None = None, numeric: list[int] | None = None) -> float:
        """The log-odds of a message of these distinct tokens (with their counts) under the
        model, as batch classify scores it; `shares` (zeros, one per distinct token): filled
        with each token's share of it (nb.EventModel.explain); `numeric`: the message's
        numeric features, where the model scores them (spamnb.bayes.meta)."""
        self.check_trained()
        names = list(distinct)
        event = self.event
        found = self.entries_of(names) if event.per_token else self.counts_of(names)
        text = event.one_message(self, names, found, list(distinct.values()), shares)
        return text if numeric is None else text + self.scoring.meta_weight * self.log_ratio(numeric)

    def log_ratio(self, numeric: list[int]) -> float:
        """The numeric features' log-ratio (spamnb.bayes.meta), unweighted, the journal's moments added."""
        if self._gaussians is None:
            self._gaussians = meta.Gaussians(self.scoring.meta, self.journal.moments_now(self.base_moments))
        return self._gaussians.log_ratio(numeric)

    def learn(self, entry: journal.Entry) -> None:
        """Add one learn to the journal in memory (`eval --online`); nothing is written."""
        names = list(entry.tokens)
        self._entries = None  # kept for the counts before this learn
        before = [c and list(c) for c in self.counts_of(names)] if self._linear is not None else []
        self.journal.add(entry)
        self._gaussians = None
        changes = entry.changes()
        if self._only_journal:
            pass  # the journal's counts, just added to
        elif self._clamped or any(sign < 0 for _, sign in changes):
            self._update_now(names)
        else:  # counts only grow: added in place (`eval --online` learns thousands)
            now = self._now
            missing = [name for name in names if name not in now]
            for name, base in zip(missing, self.base_counts(missing), strict=True):
                now[name] = base or [0, 0, 0, 0]
            for cls, _ in changes:
                for name, k in entry.tokens.items():
                    counts = now[name]
                    counts[cls] += k
                    counts[2 + cls] += 1
        self.docs = self.journal.docs_now(self.base_docs)
        if self._linear is not None:
            self._linear.update(before, self.counts_of(names))

    def linear_sums(self) -> VocabularySums:
        """What the linear models sum over the whole vocabulary, the journal's counts in."""
        if self._linear is None:
            names = list(self.journal.tokens)
            cols = self.vocab.lookup(names)
            rows = [self.df.row(c) for c in (HAM, SPAM)], [self.tf.row(c) for c in (HAM, SPAM)]
            self._linear = VocabularySums(self.n_features, *rows)
            tf, df = self.tf, self.df
            base = [[tf.at(HAM, col), tf.at(SPAM, col), df.at(HAM, col), df.at(SPAM, col)] if col >= 0 else None for col in cols]
            self._linear.update(base, self.counts_of(names))
        return self._linear

    def vocabulary_size(self) -> int:
        """Tokens of the model and its journal: what a loaded model's vocabulary holds."""
        return self.linear_sums().n_features if self.journal else self.n_features


class VocabularySums:
    """Vocabulary-wide sums of a model with a journal, kept up to date as tokens' counts change:
    how many tokens, per class the totals of tf and df, and how many tokens hold each df."""

    def __init__(self, n_features: int, df_rows: list, tf_rows: list) -> None:
        self.n_features = n_features
        self.df_totals = [sum(row) for row in df_rows]
        self.tf_totals = [sum(row) for row in tf_rows]
        # One log1p per distinct count, not per token: a Counter of the row runs in C.
        self.df_values = [Counter(row) for row in df_rows]

    def update(self, before: list[list[int] | None], after: list[list[int] | None]) -> None:
        """Tokens' counts (tf ham, tf spam, df ham, df spam) went from `before` (None: no such token) to `after`."""
        for old, new in zip(before, after, strict=True):
            if new is None:
                continue
            if old is None:
                self.n_features += 1
            for c in (HAM, SPAM):
                self.tf_totals[c] += new[c] - (old[c] if old else 0)
                self.df_totals[c] += new[2 + c] - (old[2 + c] if old else 0)
                if old is not None:
                    self.df_values[c][old[2 + c]] -= 1
                self.df_values[c][new[2 + c]] += 1


# `reasons`: the strongest tokens, (token, share of ln(P / (1 - P))) (see `strongest`);
# `floor`: the ham-loss floor's P where the floor decided the verdict (scoring.Decision).
# `threshold`: the P(spam) a spam verdict needs (Scoring.spam_threshold), SpamAssassin's `required`.
Verdict = namedtuple("Verdict", ("log_odds", "score", "verdict", "reasons", "floor", "threshold"), defaults=((), None, 1.0))


def strongest(shares: Iterable[tuple[str, float]], n: int) -> list[tuple[str, float]]:
    """The n tokens of largest share (model.Explanation), ranked by the share as the header
    rounds it (2 decimals), then by token, so that both scorers rank alike; none that rounds to 0."""
    shown = [(token, share) for token, share in shares if round(share, 2) != 0]
    return sorted(shown, key=lambda pair: (-abs(round(pair[1], 2)), pair[0]))[:n]


def score_message(path: str, data: bytes, cutoffs: tuple[float | None, float | None] = (None, None), reasons: int = 0, hold: bool = False) -> Verdict:
    """One message's log-odds, P(spam) and verdict under the model at `path` (and `cutoffs`,
    (spam, ham), see `Scoring.with_cutoffs`), and its `reasons` strongest tokens."""
    return verdict_of(open_model(path, hold=hold), data, cutoffs, reasons)


# A model file numpy's loader read (`model`, a models.model.Model, and its `tokenize`): a zip of
# another kind than spamnb writes (compressed members, ZIP64), which `npzview` does not map.
Loaded = namedtuple("Loaded", ("model", "tokenize"))


def open_model(path: str, resident: bool = False, hold: bool = False) -> OneModel | Loaded:
    """The model at `path` opened for scoring single messages; `resident`: for many of them
    (`OneModel.make_resident`), read whole; `hold`: see npzview.open_members.  A model file that is a zip of
    another kind than spamnb writes (compressed members, ZIP64) goes to numpy's loader instead."""
    try:
        model = OneModel(path, hold, whole=resident)
    except npzview.NotPlain as err:
        from spamnb.models import store

        full = store.load(path, scoring_only=True, data=err.data)
        return Loaded(full, tokenizer_for(full.tokens))
    if resident:
        model.make_resident()
    return model


def verdict_of(model: OneModel | Loaded, data: bytes, cutoffs: tuple[float | None, float | None] = (None, None), reasons: int = 0) -> Verdict:
    """`score_message` under a model already open."""
    if isinstance(model, Loaded):
        full = model.model
        tokens, numeric = model.tokenize.read(data, full.scoring.meta != "none")  # type: ignore[attr-defined]
        e = full.explain(tokens, numeric)  # type: ignore[attr-defined]
        p = trust.check_score(full.scoring.probability(e.log_odds))  # type: ignore[attr-defined]
        scoring = full.scoring.with_cutoffs(*cutoffs)  # type: ignore[attr-defined]
        verdict, floor = scoring.decide(p)
        return Verdict(e.log_odds, p, verdict, strongest(zip(e.tokens, e.contributions.tolist(), strict=True), reasons), floor, scoring.spam_threshold()[0])
    tokens, numeric = model.tokenizer().read(data, model.scoring.meta != "none")
    distinct = Counter(tokens)
    shares = [0.0] * len(distinct) if reasons else None
    lo = model.log_odds_of(distinct, shares, numeric)
    p = trust.check_score(model.scoring.probability(lo))
    a, _ = model.scoring.calibration
    why = strongest(zip(distinct, (a * share for share in shares), strict=True), reasons) if shares is not None else []
    scoring = model.scoring.with_cutoffs(*cutoffs)
    verdict, floor = scoring.decide(p)
    return Verdict(lo, p, verdict, why, floor, scoring.spam_threshold()[0])


def spam_threshold(model: OneModel | Loaded, cutoffs: tuple[float | None, float | None] = (None, None)) -> float:
    """The P(spam) a spam verdict needs under the model and `cutoffs` (`Scoring.spam_threshold`;
    where the ham-loss floor sets it, P must exceed it)."""
    return scoring_of(model).with_cutoffs(*cutoffs).spam_threshold()[0]


def scoring_of(model: OneModel | Loaded) -> Scoring:
    """The scoring defaults of an open model."""
    return model.model.scoring if isinstance(model, Loaded) else model.scoring  # type: ignore[attr-defined]
