"""Never lose an update: learning single messages, the lock, kill -9 during a save,
damaged or foreign model files, and model files that carry pickles."""
from __future__ import annotations

import io
import pickle
import random
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from click.testing import Result

from spamnb.models import lock, modelfile, store
from tests.conftest import ENVELOPE, make_mail, run_cli
from tests.test_pipe import HAM_MAIL, SPAM_MAIL, SPAMNB, assert_failed_open, run_console, run_pipe, small_model

Snapshot = dict[str, object]


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return small_model(tmp_path)


def train(model: Path, *args: str | Path, stdin: bytes | None = None) -> Result:
    return run_cli("train", "-m", str(model), *map(str, args), stdin=stdin)


def snapshot(path: Path) -> Snapshot:
    """What a model knows, independent of column order: counts per token, digests."""
    model = store.load(str(path), growable=True)
    vocab = model.growable()
    c = model.counts
    per_token = {
        token: (int(c.tf[0, i]), int(c.tf[1, i]), int(c.df[0, i]), int(c.df[1, i]))
        for i, token in enumerate(vocab.tokens)
        if c.tf[:, i].any() or c.df[:, i].any()
    }
    return {"docs": tuple(int(d) for d in c.docs), "tokens": per_token, "learnt": dict(model.learnt)}


def stderr_lines(result: Result) -> list[str]:
    return result.stderr.splitlines()


# --- learning single messages from stdin ----------------------------------------------------


def test_learning_the_same_message_twice_changes_nothing(model: Path) -> None:
    first = train(model, "--spam", "-", stdin=SPAM_MAIL)
    assert first.exit_code == 0 and "learnt 1" in first.stderr
    learnt = snapshot(model)
    again = train(model, "--spam", "-", stdin=SPAM_MAIL)
    assert again.exit_code == 0, again.stderr
    assert "already known 1" in again.stderr and "learnt 0" in again.stderr
    assert snapshot(model) == learnt


def test_forget_undoes_a_learn_exactly(model: Path) -> None:
    before = snapshot(model)
    for label in ("--spam", "--ham"):
        assert train(model, label, "-", stdin=SPAM_MAIL).exit_code == 0
        assert snapshot(model) != before
        forgot = train(model, "--forget", label, "-", stdin=SPAM_MAIL)
        assert forgot.exit_code == 0 and "forgot 1" in forgot.stderr
        assert snapshot(model) == before


def test_forgetting_a_message_never_learnt_is_refused(model: Path, tmp_path: Path) -> None:
    before = snapshot(model)
    stranger = tmp_path / "stranger.eml"
    stranger.write_bytes(make_mail("never seen", "not learnt at all"))
    for source, stdin in (("-", stranger.read_bytes()), (str(stranger), None)):
        refused = train(model, "--forget", "--spam", source, stdin=stdin)
        assert refused.exit_code == 1
        naming = [line for line in stderr_lines(refused) if "never learnt" in line]
        assert naming == [f"spamnb: {source}: never learnt, nothing to forget"]
        assert snapshot(model) == before


def test_forgetting_from_a_model_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "missing.npz"
    result = train(missing, "--forget", "--spam", "-", stdin=SPAM_MAIL)
    assert result.exit_code == 3 and str(missing) in result.stderr
    assert not missing.exists()


@pytest.mark.parametrize("first, then", [("--spam", "--ham"), ("--ham", "--spam")])
def test_relearning_as_the_other_class_moves_the_message(tmp_path: Path, first: str, then: str) -> None:
    moved, direct = small_model(tmp_path / "moved"), small_model(tmp_path / "direct")
    assert train(moved, first, "-", stdin=SPAM_MAIL).exit_code == 0
    result = train(moved, then, "-", stdin=SPAM_MAIL)
    assert result.exit_code == 0 and "moved 1" in result.stderr
    assert train(direct, then, "-", stdin=SPAM_MAIL).exit_code == 0
    assert snapshot(moved) == snapshot(direct)


@pytest.mark.parametrize(
    "incoming",
    [SPAM_MAIL, ENVELOPE + b"\n" + SPAM_MAIL, b"X-Spamnb: ham, score=0.0000\n" + SPAM_MAIL, b"Subject: header only"],
    ids=["plain", "with an envelope", "with a forged verdict", "header only, no final newline"],
)
def test_a_piped_message_is_the_same_message_to_learn(model: Path, incoming: bytes) -> None:
    before = snapshot(model)
    piped = run_pipe(model, incoming)
    assert piped.status in (0, 1, 2) and piped.out != incoming
    assert train(model, "--spam", "-", stdin=incoming).exit_code == 0
    learnt = snapshot(model)
    again = train(model, "--spam", "-", stdin=piped.out)
    assert again.exit_code == 0 and "already known 1" in again.stderr
    assert snapshot(model) == learnt
    assert train(model, "--forget", "--spam", "-", stdin=piped.out).exit_code == 0
    assert snapshot(model) == before


# --- concurrent learners --------------------------------------------------------------------

LEARNERS = 20


def test_concurrent_learners_serialise_and_lose_no_update(tmp_path: Path) -> None:
    if not SPAMNB.exists():
        pytest.skip(f"no console script at {SPAMNB}")
    model = tmp_path / "model.npz"
    files = []
    for i in range(LEARNERS):
        path = tmp_path / f"m{i:02d}.eml"
        path.write_bytes(make_mail(f"note {i}", f"shared words everywhere learner{i:02d}only\n"))
        files.append(path)
    # Every learner starts with no model file: the first save races with 19 others.
    learners = [
        subprocess.Popen(
            [str(SPAMNB), "-q", "train", "-m", str(model), "--spam" if i % 2 else "--ham", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i, path in enumerate(files)
    ]
    for learner in learners:
        _, err = learner.communicate(timeout=120)
        assert learner.returncode == 0, err
    known = snapshot(model)
    half = LEARNERS // 2
    assert known["docs"] == (half, half)
    assert len(known["learnt"]) == LEARNERS  # type: ignore[arg-type]
    tokens = known["tokens"]
    assert isinstance(tokens, dict)
    for i in range(LEARNERS):
        assert tokens[f"learner{i:02d}only"] == ((0, 1, 0, 1) if i % 2 else (1, 0, 1, 0))
    assert tokens["shared"] == (half, half, half, half)
    assert not list(tmp_path.glob(".*.spamnb-*.tmp")), "a finished save leaves no temporary file"


# --- kill -9 during a save ------------------------------------------------------------------

# Saves two large models in turn, for ever, printing a line after each save.
SAVER = """
import sys
import numpy as np
from spamnb.bayes import nb
from spamnb.models import store
from spamnb.bayes.vocabulary import SortedTokens
from spamnb.models.model import Model

path, n = sys.argv[1], int(sys.argv[2])
vocab = SortedTokens(b"\\n".join(b"token%07d" % i for i in range(n)))
states = [Model(vocab=vocab, counts=nb.Counts(np.full(2, k), np.full((2, n), k), np.full((2, n), k))) for k in (1, 2)]
saves = 0
while True:
    store.save(states[saves % 2], path)
    saves += 1
    print(saves, flush=True)
"""
SAVER_TOKENS = 300_000  # about 8 MB a file


def test_kill_9_during_a_save_leaves_a_loadable_model(tmp_path: Path) -> None:
    path = tmp_path / "model.npz"
    rng = random.Random(5)
    for _ in range(5):
        saver = subprocess.Popen([sys.executable, "-c", SAVER, str(path), str(SAVER_TOKENS)], stdout=subprocess.PIPE)
        assert saver.stdout is not None
        assert saver.stdout.readline(), "the saver never saved"
        time.sleep(rng.uniform(0.0, 0.3))
        saver.kill()
        saver.wait()
        model = store.load(str(path))  # must not raise
        k = int(model.counts.docs[0])
        assert k in (1, 2), "one of the two saved states"
        assert len(model.vocab) == SAVER_TOKENS
        assert (model.counts.tf == k).all() and (model.counts.df == k).all() and (model.counts.docs == k).all()
    # What a killed save leaves behind is a hidden temporary file, never the model ...
    assert all(p.name.startswith(".model.npz.spamnb-") for p in tmp_path.iterdir() if p != path)
    # ... and the next learner, holding the lock, clears this model's leftovers away,
    # never another model's save in progress.
    (tmp_path / ".model.npz.spamnb-stale.tmp").write_bytes(b"half a model")
    (tmp_path / ".other.npz.spamnb-busy.tmp").write_bytes(b"another model's save")
    with lock.locked(str(path)):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.npz.spamnb-busy.tmp", "model.npz", "model.npz.lock"]


# --- damaged and foreign model files --------------------------------------------------------


def model_arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def write_npz(path: Path, arrays: dict[str, np.ndarray | bytes], allow_pickle: bool = False) -> None:
    """An .npz of these arrays; a `bytes` value is written as the member's raw content."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in arrays.items():
            with archive.open(name + ".npy", "w") as member:
                if isinstance(array, bytes):
                    member.write(array)
                else:
                    np.lib.format.write_array(member, array, allow_pickle=allow_pickle)


def npy_claiming(shape: tuple[int, ...]) -> bytes:
    """An .npy member whose header promises an enormous array and which holds 100 bytes."""
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": "<u4", "fortran_order": False, "shape": shape})
    return out.getvalue() + bytes(100)


def zip_bomb(good: Path, path: Path) -> None:
    """The model with its counts replaced by 64 MB of zeros, deflated to 64 kB."""
    arrays = model_arrays(good)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<u4", "fortran_order": False, "shape": (2, 2**23)})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            with archive.open(name + ".npy", "w", force_zip64=True) as member:
                if name != "tf":
                    np.lib.format.write_array(member, array, allow_pickle=False)
                    continue
                member.write(header.getvalue())
                for _ in range(2**26 // 2**22):
                    member.write(bytes(2**22))


def altered(**changes: np.ndarray | bytes) -> Callable[[Path, Path], None]:
    def make(good: Path, path: Path) -> None:
        write_npz(path, {**model_arrays(good), **changes})

    return make


def with_bytes(change: Callable[[bytes], bytes]) -> Callable[[Path, Path], None]:
    def make(good: Path, path: Path) -> None:
        path.write_bytes(change(good.read_bytes()))

    return make


def flipped(data: bytes) -> bytes:
    middle = bytearray(data)
    for i in range(len(data) // 2, len(data) // 2 + 64):
        middle[i] ^= 0xFF
    return bytes(middle)


def directory_field(data: bytes, offset: int, value: bytes) -> bytes:
    """The archive with `value` written at `offset` into each of its central directory entries."""
    out = bytearray(data)
    start = out.find(b"PK\x01\x02")
    while start >= 0:
        out[start + offset : start + offset + len(value)] = value
        start = out.find(b"PK\x01\x02", start + 4)
    return bytes(out)


def foreign_npz(good: Path, path: Path) -> None:
    write_npz(path, {"weights": np.arange(10.0)})


def lone_npy(good: Path, path: Path) -> None:
    with open(path, "wb") as out:
        np.save(out, np.arange(10))


def folder(good: Path, path: Path) -> None:
    path.mkdir()


def symlink_loop(good: Path, path: Path) -> None:
    path.symlink_to(path.name)


DAMAGED = {
    "empty file": with_bytes(lambda b: b""),
    "truncated to half": with_bytes(lambda b: b[: len(b) // 2]),
    "truncated by 10 bytes": with_bytes(lambda b: b[:-10]),
    "the first 100 bytes": with_bytes(lambda b: b[:100]),
    "flipped bytes mid-file": with_bytes(flipped),
    "text": with_bytes(lambda b: b"this is not a model\n"),
    "an mbox": with_bytes(lambda b: ENVELOPE + b"\n" + SPAM_MAIL),
    "random bytes": with_bytes(lambda b: random.Random(1).randbytes(len(b))),
    "foreign npz": foreign_npz,
    "lone npy": lone_npy,
    "a folder": folder,
    "a symlink loop": symlink_loop,
    "wrong format": altered(format=np.array("other-model")),
    "future version": altered(version=np.array(99)),
    "version of two numbers": altered(version=np.array([1, 1])),
    "version not a number": altered(version=np.array("one")),
    "counts of the wrong shape": altered(tf=np.zeros((3, 3), np.uint32)),
    "counts as strings": altered(docs=np.array(["a", "b"])),
    "negative counts": altered(docs=np.array([-5, 3])),
    "settings not JSON": altered(settings=np.array("{nope")),
    "unknown settings": altered(settings=np.array('{"evil": 1}')),
    "scoring out of range": altered(scoring=np.array('{"spam_cutoff": 7}')),
    "digests of the wrong shape": altered(learnt=np.zeros((3, 5), np.uint8)),
    "tokens not UTF-8": altered(tokens=np.frombuffer(b"\xff\xfe\nzz", np.uint8)),
    "an array claiming 8 TB": altered(tf=npy_claiming((2, 10**12))),
    "a member that is no npy": altered(df=b"just text"),
    "a zip bomb": zip_bomb,
    "an unknown compression method": with_bytes(lambda b: directory_field(b, 10, b"\x63\x00")),
    "encrypted members": with_bytes(lambda b: directory_field(b, 8, b"\x01\x00")),
}


@pytest.fixture(scope="module")
def good_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_model(tmp_path_factory.mktemp("good"))


@pytest.mark.parametrize("make", DAMAGED.values(), ids=DAMAGED.keys())
def test_a_damaged_or_foreign_model_is_a_clear_error_naming_it(good_model: Path, tmp_path: Path, make: Callable[[Path, Path], None]) -> None:
    path = tmp_path / "model.npz"
    make(good_model, path)
    for growable in (False, True):
        with pytest.raises(modelfile.ModelError, match=str(path)):
            store.load(str(path), growable=growable)
    message = tmp_path / "message.eml"
    message.write_bytes(SPAM_MAIL)
    before = path.read_bytes() if path.is_file() else None
    commands = [["classify", "-m", path, message]]
    if path.exists():  # else (a symlink loop) train makes a new model, as for any missing one
        commands.append(["train", "-m", path, "--spam", message])
    for args in commands:
        result = run_cli("-q", *map(str, args))
        assert result.exit_code == 3, (result.stderr, result.exception)
        lines = stderr_lines(result)
        assert len(lines) == 1 and str(path) in lines[0], lines
        assert "internal error" not in result.stderr and "Traceback" not in result.output
    assert (path.read_bytes() if path.is_file() else None) == before, "a failed train leaves the file alone"
    assert_failed_open(run_pipe(path, SPAM_MAIL), SPAM_MAIL, str(path))


def test_a_damaged_model_through_the_console_script(good_model: Path, tmp_path: Path) -> None:
    path = tmp_path / "model.npz"
    path.write_bytes(good_model.read_bytes()[:-10])
    done = run_console("classify", "-m", path, "-", stdin=SPAM_MAIL)
    assert done.returncode == 3 and done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and str(path) in lines[0]


# --- pickles never run ----------------------------------------------------------------------


class Plant:
    """Unpickling it creates `marker`: proof that loading ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def planted(marker: Path) -> np.ndarray:
    array = np.empty(1, dtype=object)
    array[0] = Plant(marker)
    return array


@pytest.mark.parametrize("member", ["format", "tokens", "tf", "learnt", "settings", "an extra one"])
def test_a_model_carrying_a_pickled_object_array_runs_no_code(good_model: Path, tmp_path: Path, member: str) -> None:
    path, marker = tmp_path / "model.npz", tmp_path / "pwned"
    write_npz(path, {**model_arrays(good_model), member: planted(marker)}, allow_pickle=True)
    # The trap is live: a loader that allows pickles springs it.
    control = tmp_path / "control"
    write_npz(tmp_path / "control.npz", {member: planted(control)}, allow_pickle=True)
    with np.load(tmp_path / "control.npz", allow_pickle=True) as npz:
        npz[member]
    assert control.exists()

    if member in store.REQUIRED:
        for growable in (False, True):
            with pytest.raises(modelfile.ModelError, match=str(path)):
                store.load(str(path), growable=growable)
        assert_failed_open(run_pipe(path, HAM_MAIL), HAM_MAIL, str(path))
        result = run_cli("train", "-m", str(path), "--ham", "-", stdin=HAM_MAIL)
        assert result.exit_code == 3 and str(path) in result.stderr
    else:
        store.load(str(path))  # the extra member is never read
    assert not marker.exists()


def test_a_plain_pickle_as_the_model_runs_no_code(tmp_path: Path) -> None:
    path, marker = tmp_path / "model.npz", tmp_path / "pwned"
    path.write_bytes(pickle.dumps(Plant(marker)))
    with pytest.raises(modelfile.ModelError, match=str(path)):
        store.load(str(path))
    assert_failed_open(run_pipe(path, SPAM_MAIL), SPAM_MAIL, str(path))
    assert not marker.exists()



def test_a_zip_bomb_is_refused_before_it_is_inflated(good_model: Path, tmp_path: Path) -> None:
    path = tmp_path / "bomb.npz"
    zip_bomb(good_model, path)
    assert path.stat().st_size < 2**21
    with pytest.raises(modelfile.ModelError, match=r"tf\.npy would inflate [\d,]+ bytes to 67,108,992"):
        store.load(str(path))
