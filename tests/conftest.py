"""Shared builders of test mail: RFC 822 bytes made with the standard library, written
as message files, maildirs and mboxrd files.  Nothing here reads a real corpus."""
from __future__ import annotations

import contextlib
import io
import random
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse
from click.testing import CliRunner, Result
from hypothesis import settings

from spamnb import compiled
from spamnb.bayes import nb
from spamnb.bayes.events import Bernoulli, Linear
from spamnb.bayes.vocabulary import Rows
from spamnb.mail.sources import Message
from spamnb.run.classifier import counts_of as counts_of_rows

# No wall-clock asserts: hypothesis's 200 ms deadline per example failed a parser test
# on a machine busy with other work, a verdict on the machine, not the code.
settings.register_profile("spamnb", deadline=None)
settings.load_profile("spamnb")


def pytest_configure(config: pytest.Config) -> None:
    """No test runs a compiled module built from older source (Python imports the build
    first): an edit made since would go untested.  `make install` rebuilds."""
    import importlib
    import os

    for name in compiled.COMPILED:
        module = importlib.import_module(name)
        if compiled.is_compiled(module):
            stem = os.path.splitext(os.path.splitext(module.__file__)[0])[0]
            for source in (stem + ".py", stem + ".pxd"):  # a .pxd beside it is compiled with it
                if os.path.exists(source) and os.path.getmtime(source) > os.path.getmtime(module.__file__):
                    pytest.exit(f"{module.__file__} is older than {source}: run `make install` to rebuild it", returncode=4)


ENVELOPE = b"From sender@example.com Mon Jan  1 00:00:00 2024"
ESCAPE = re.compile(rb">*From ")

SPAM_WORDS = ("viagra", "pills", "cheap", "winner", "lottery", "prize", "casino", "bonus", "crypto", "offer")
HAM_WORDS = ("meeting", "agenda", "project", "review", "lunch", "tuesday", "report", "budget", "draft", "minutes")
SHARED_WORDS = ("please", "today", "email", "thanks", "friend")


# The fields a mailing list's server adds to each message it relays.
LIST_SERVER_FIELDS = [
    ("List-Id", "Discussion <talk.lists.example.org>"),
    ("List-Unsubscribe", "<mailto:talk-request@lists.example.org?subject=unsubscribe>"),
    ("List-Post", "<mailto:talk@lists.example.org>"),
    ("X-BeenThere", "talk@lists.example.org"),
    ("X-Mailman-Version", "2.0.11"),
]


def make_mail(
    subject: str = "hello",
    body: str = "hello world",
    *,
    sender: str = "alice@example.com",
    to: str = "bob@example.org",
    html: str | None = None,
    charset: str = "utf-8",
    cte: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
) -> bytes:
    """One message as bytes with LF line ends; `html` adds a text/html alternative."""
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    for name, value in headers:
        msg[name] = value
    msg.set_content(body, charset=charset, cte=cte)
    if html is not None:
        msg.add_alternative(html, subtype="html")
    return msg.as_bytes()


def raw_mail(head: str, body: bytes) -> bytes:
    """A message from literal header lines and body bytes, for encodings the email package will not produce."""
    return head.strip("\n").encode("ascii") + b"\n\n" + body


def lines_of(data: bytes) -> list[bytes]:
    """Lines split on LF only, each keeping its terminator (a CR stays part of its line)."""
    return list(io.BytesIO(data))


def mboxrd(messages: Iterable[bytes], newline: bytes = b"\n") -> bytes:
    """An mboxrd file: an envelope line before each message, `>*From ` escaped, a blank line after."""
    out = []
    for message in messages:
        out.append(ENVELOPE + newline)
        out.extend(b">" + line if ESCAPE.match(line) else line for line in lines_of(message))
        if message and not message.endswith(b"\n"):
            out.append(newline)
        out.append(newline)
    return b"".join(out)


def crlf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def write_mbox(path: Path, messages: Iterable[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(mboxrd(messages))
    return path


def write_maildir(root: Path, messages: Sequence[bytes]) -> list[Path]:
    """A maildir: even messages in cur/, odd ones in new/, and decoys in tmp/ and dotfiles."""
    for sub in ("cur", "new", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    paths = []
    for i, message in enumerate(messages):
        sub, suffix = ("cur", ":2,S") if i % 2 == 0 else ("new", "")
        path = root / sub / f"{1700000000 + i}.M{i}P1.host{suffix}"
        path.write_bytes(message)
        paths.append(path)
    (root / "tmp" / "1700000000.inprogress").write_bytes(make_mail("half-written", "never read"))
    (root / "cur" / ".hidden").write_bytes(make_mail("hidden", "never read"))
    return sorted(paths, key=lambda p: p.name)


def write_files(root: Path, messages: Sequence[bytes], prefix: str = "msg") -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, message in enumerate(messages):
        path = root / f"{prefix}{i:03d}.eml"
        path.write_bytes(message)
        paths.append(path)
    return paths


def fake_mail(rng: random.Random, words: Sequence[str], serial: int) -> bytes:
    """A message mostly of `words`, with some words every class uses."""
    pool = list(words) + list(SHARED_WORDS)
    subject = " ".join(rng.choice(words) for _ in range(2))
    body = " ".join(rng.choice(pool) for _ in range(25))
    return make_mail(subject, f"{body}\nserial {serial}\n", sender=f"user{serial}@example.com")


def fake_corpus(words: Sequence[str], n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [fake_mail(rng, words, seed * 1000 + i) for i in range(n)]


def labelled_messages(n: int, seed: int) -> list[Message]:
    """n spam then n ham messages, labelled, with ids unique to the seed."""
    spam = [Message(f"spam{seed}.{i}", m, "spam") for i, m in enumerate(fake_corpus(SPAM_WORDS, n, seed))]
    ham = [Message(f"ham{seed}.{i}", m, "ham") for i, m in enumerate(fake_corpus(HAM_WORDS, n, seed + 1))]
    return spam + ham


@dataclass(frozen=True)
class Corpus:
    """Labelled generated mail written every way the readers accept."""

    spam: list[bytes]
    ham: list[bytes]
    spam_maildir: Path
    ham_maildir: Path
    spam_mbox: Path
    ham_mbox: Path
    index: Path


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    spam = fake_corpus(SPAM_WORDS, 12, seed=1)
    ham = fake_corpus(HAM_WORDS, 12, seed=2)
    spam_files = write_files(tmp_path / "labelled" / "spam", spam)
    ham_files = write_files(tmp_path / "labelled" / "ham", ham)
    index = tmp_path / "labelled" / "index"
    lines = [f"spam spam/{p.name}" for p in spam_files] + [f"ham ham/{p.name}" for p in ham_files]
    index.write_text("\n".join(lines) + "\n")
    write_maildir(tmp_path / "maildir" / "spam", spam)
    write_maildir(tmp_path / "maildir" / "ham", ham)
    return Corpus(
        spam=spam,
        ham=ham,
        spam_maildir=tmp_path / "maildir" / "spam",
        ham_maildir=tmp_path / "maildir" / "ham",
        spam_mbox=write_mbox(tmp_path / "spam.mbox", spam),
        ham_mbox=write_mbox(tmp_path / "ham.mbox", ham),
        index=index,
    )


def count_rows(docs: Sequence[Sequence[int]], n_features: int) -> scipy.sparse.csr_matrix:
    """Sparse (len(docs), n_features) matrix of column counts; negative columns are dropped."""
    lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    cols = np.fromiter((c for d in docs for c in d), dtype=np.int64, count=int(lengths.sum()))
    rows = np.repeat(np.arange(len(docs)), lengths)
    keep = cols >= 0
    data = np.ones(int(keep.sum()), dtype=np.float64)
    return scipy.sparse.coo_matrix((data, (rows[keep], cols[keep])), shape=(len(docs), n_features)).tocsr()


def rows_of(X: Any, fields: np.ndarray | None = None) -> Rows:
    """The rows of a scipy sparse or numpy count matrix as flat Rows; `fields` per column."""
    X = scipy.sparse.csr_matrix(np.atleast_2d(X.toarray() if hasattr(X, "toarray") else np.asarray(X)))
    X.sort_indices()
    return Rows(X.indices.astype(np.int64), X.data.astype(np.int64), np.diff(X.indptr), None if fields is None else fields[X.indices])


def counts_of(X: Any, y: np.ndarray) -> nb.Counts:
    """The counts of the rows of a count matrix X with classes y."""
    return counts_of_rows(rows_of(X), y, X.shape[1])


def log_odds(model: nb.EventModel, counts: nb.Counts, X: Any, least: int | None = None) -> np.ndarray:
    """Log-odds of the rows of a count matrix X under a model of `counts`, tokens learnt
    from the same `least` (default the model's `duplicate_min`) or more messages counted once."""
    least = model.duplicate_min if least is None else least
    table, b = model.table(counts)
    return model.log_odds(table, b, rows_of(X), nb.duplicate_keys(counts, least=least))


def joint_log_likelihood(model: Linear, counts: nb.Counts, X: Any) -> np.ndarray:
    """log P(class) + log P(x | class) for each row of X, (n, 2), by dense algebra from the
    model's `feature_log_prob`: what scikit-learn's predict_joint_log_proba gives."""
    flp = model.feature_log_prob(counts)
    prior = nb.class_log_prior(counts)
    Xp = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    Xp = np.atleast_2d(model.prepare(Xp))
    if isinstance(model, Bernoulli):
        neg = np.log1p(-np.exp(flp))
        return Xp @ (flp - neg).T + neg.sum(axis=1) + prior
    return Xp @ flp.T + prior


@contextlib.contextmanager
def use_scanner(name: str) -> Iterator[str]:
    """Tokenizers made inside use the compiled word scanner, tag cutter, field numbers and links ("compiled",
    skipped where they were not built or SPAMNB_PURE is set) or the pure-Python path ("pure")."""
    from spamnb.text import tokens

    if name == "compiled" and tokens.SCANNER is None:
        pytest.skip("compiled word scanner not built, or SPAMNB_PURE set")
    saved = tokens.SCANNER, tokens.CUT_TAGS, tokens.FIELD_NUMBERS, tokens.LINKS
    if name != "compiled":
        tokens.SCANNER = tokens.CUT_TAGS = tokens.FIELD_NUMBERS = tokens.LINKS = None
    try:
        yield name
    finally:
        tokens.SCANNER, tokens.CUT_TAGS, tokens.FIELD_NUMBERS, tokens.LINKS = saved


class ConsoleScript:
    """The `spamnb` console script (`spamnb.entry.main`) as click's runner calls a command:
    `classify --pipe` and `train` of single messages take the fast paths (`spamnb.pipe`)
    that a procmail recipe or a mail reader's button takes, the rest goes on to click."""

    name = "spamnb"

    def main(self, args: Sequence[str] = (), prog_name: str | None = None, **extra: Any) -> None:
        import sys

        from spamnb import entry

        saved, sys.argv = sys.argv, ["spamnb", *args]
        try:
            entry.main()
        finally:
            sys.argv = saved


def run_cli(*args: str | Path, stdin: bytes | None = None, **options: Any) -> Result:
    """The one way tests run the command line in process: the console script over `spamnb
    ARGS`, in click's runner (pass -q where the summary lines are not asserted), stdin as given."""
    return CliRunner().invoke(ConsoleScript(), [*map(str, args)], input=stdin, **options)  # type: ignore[arg-type]


def run_click(*args: str | Path, stdin: bytes | None = None) -> Result:
    """`run_cli` by click's command line alone, for a test that holds a fast path equal to it."""
    from spamnb.cli.commands import cli

    return CliRunner().invoke(cli, [*map(str, args)], input=stdin)
