"""Issue 18's fault injection: hostile sources, crafted models, the lock, saves, signals.

Each test here failed on main before its fix (the issue lists the reproductions)."""
from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from spamnb import headers, sources
from spamnb.cli import cli
from spamnb.sources import Message, Problem
from spamnb.tokens import Tokenizer, TokenSettings
from tests.conftest import ENVELOPE, make_mail
from tests.test_pipe import HAM_MAIL, SPAM_MAIL, SPAMNB, run_pipe, small_model


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_model(tmp_path_factory.mktemp("model"))


def spamnb(*args: str | Path, memory: int | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """The console script; `memory` caps its address space (bytes), as a small machine would."""
    if not SPAMNB.exists():
        pytest.skip(f"no console script at {SPAMNB}")

    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run([str(SPAMNB), "-q", *map(str, args)], stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, preexec_fn=limit)


# --- item 3: only regular files, reads bounded by the tokeniser's cap ---------------------


def test_a_fifo_given_as_src_or_in_an_index_is_named_once_and_skipped(model: Path, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "good.eml").write_bytes(HAM_MAIL)
    (tmp_path / "index").write_text("ham fifo\nham good.eml\n")
    # On main both blocked for ever opening the FIFO (no writer ever comes).
    for args in (["classify", "-m", model, tmp_path / "fifo", tmp_path / "good.eml"], ["eval", "-m", model, "--index", tmp_path / "index", "--json"]):
        done = spamnb(*args, timeout=30)
        assert done.returncode == 1, done.stderr
        lines = done.stderr.decode().splitlines()
        assert lines == [f"spamnb: {tmp_path / 'fifo'}: {sources.NOT_REGULAR}"]
    done = spamnb("classify", "-m", model, tmp_path / "fifo", tmp_path / "good.eml", timeout=30)
    assert done.stdout.decode().startswith(f"{tmp_path / 'good.eml'}\tham")


# The console script with numpy and scipy loaded maps about 1 GB; reading /dev/zero or a
# 3 GB file whole needs far more.
SMALL_MACHINE = 2 << 30


def test_a_device_in_an_index_is_skipped_and_a_huge_file_read_only_to_the_cap(model: Path, tmp_path: Path) -> None:
    huge = tmp_path / "huge.eml"
    with open(huge, "wb") as out:  # a sparse 3 GB message: headers, then zeros
        out.write(SPAM_MAIL)
        out.truncate(3 << 30)
    (tmp_path / "good.eml").write_bytes(HAM_MAIL)
    (tmp_path / "index").write_text("ham /dev/zero\nspam huge.eml\nham good.eml\n")
    # On main: `internal error: MemoryError`, exit 3, the whole batch lost.
    done = spamnb("eval", "-m", model, "--index", tmp_path / "index", "--json", memory=SMALL_MACHINE)
    assert done.returncode == 1, done.stderr
    assert done.stderr.decode().splitlines() == [f"spamnb: /dev/zero: {sources.NOT_REGULAR}"]
    result = json.loads(done.stdout)
    assert (result["messages"], result["true_positives"], result["true_negatives"]) == (2, 1, 1)


def test_a_capped_read_gives_the_tokeniser_what_a_whole_read_gives(tmp_path: Path) -> None:
    settings = TokenSettings(max_bytes=4096)
    tokenize = Tokenizer(settings)
    long_line = b"word " * 40_000  # 200 kB, over several read blocks, no line end
    big = make_mail("big", "x") + long_line + b"\n"
    small = make_mail("small", "after the big one")
    cases = {
        "message.eml": big,
        "one.mbox": ENVELOPE + b"\n" + big,
        "two.mbox": ENVELOPE + b"\n" + big + b"\n" + ENVELOPE + b"\n" + small,
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        whole = list(sources.read_file(str(path)))
        capped = list(sources.read_file(str(path), max_bytes=settings.max_bytes))
        assert [m.id for m in capped] == [m.id for m in whole]
        for c, w in zip(capped, whole, strict=True):
            assert isinstance(c, Message) and isinstance(w, Message)
            assert len(c.data) <= sources.read_cap(settings.max_bytes) < len(w.data) or c.data == w.data
            assert tokenize(c.data) == tokenize(w.data)
            assert headers.digest(c.data, settings.max_bytes) == headers.digest(w.data, settings.max_bytes)
    [stdin] = sources.read_stdin(stream=open(tmp_path / "message.eml", "rb"), max_bytes=settings.max_bytes)  # noqa: SIM115
    assert isinstance(stdin, Message) and len(stdin.data) == sources.read_cap(settings.max_bytes)


def test_a_huge_message_and_its_piped_copy_are_learnt_once(model: Path, tmp_path: Path) -> None:
    """The digest covers what is learnt, so a read capped above it still knows the message."""
    huge = make_mail("huge", "cheap pills " * 200_000)  # 2.4 MB: over the 1 MiB cap
    piped = run_pipe(model, huge).out
    assert piped != huge and len(piped) > len(huge)
    path = tmp_path / "m.npz"
    for data in (huge, piped):
        done = CliRunner().invoke(cli, ["train", "-m", str(path), "--spam", "-"], input=data)
        assert done.exit_code == 0, done.stderr
    assert "learnt 0, moved 0, already known 1" in done.stderr


# --- item 8: a symlink loop in a maildir ---------------------------------------------------


def test_a_symlink_loop_in_a_maildir_reads_each_message_once(tmp_path: Path) -> None:
    box = tmp_path / "md"
    for sub in ("cur", "new", "tmp"):
        (box / sub).mkdir(parents=True)
    (box / "cur" / "1.eml").write_bytes(SPAM_MAIL)
    (box / "new" / "2.eml").write_bytes(HAM_MAIL)
    (box / "new" / "loop").symlink_to("../cur")  # on main: every message of cur/ twice
    got = list(sources.read_source(str(box)))
    assert [i.id for i in got if isinstance(i, Message)] == [str(box / "cur" / "1.eml"), str(box / "new" / "2.eml")]
    assert not [i for i in got if isinstance(i, Problem)]
