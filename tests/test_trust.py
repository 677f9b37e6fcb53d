"""Issue 27: the pipe is never more trusting than batch, and the thirteen edges of an
independent fault-injection probe.  Each test here failed on main 58d24a1.

The pipe (`classify --pipe`, no numpy) and batch (`classify`) must agree on every model
file: the same verdict, or the same one-line damaged-model error, the pipe passing the
mail through unchanged with exit 3."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spamnb.mail import headers
from spamnb.mail.sources import Message
from spamnb.models import journal, modelfile, store, trust
from spamnb.models.model import Scoring
from spamnb.pipe import filter as pipe
from spamnb.run import classifier
from spamnb.text.tokens import TokenSettings
from tests.conftest import HAM_WORDS, SPAM_WORDS, fake_corpus, run_cli

SPAMNB = Path(sys.executable).with_name("spamnb")
VERDICT = re.compile(rb"X-Spamnb: (spam|ham|unsure), score=([01]\.\d{4})")
SPAM = fake_corpus(SPAM_WORDS, 12, seed=1)
HAM = fake_corpus(HAM_WORDS, 12, seed=2)
PROBES = fake_corpus(SPAM_WORDS, 3, seed=5) + fake_corpus(HAM_WORDS, 3, seed=6)


def build(path: Path, scoring: Scoring | None = None, spam: list[bytes] = SPAM, ham: list[bytes] = HAM) -> Path:
    model = store.empty_model(TokenSettings(), scoring or Scoring())
    items = [Message(f"spam{i}", m, "spam") for i, m in enumerate(spam)] + [Message(f"ham{i}", m, "ham") for i, m in enumerate(ham)]
    classifier.learn(model, items)
    store.save(model, str(path))
    return path


def big_model(path: Path) -> Path:
    """A model whose tf and df members pass 256 KiB (140,000 tokens)."""
    words = [f"w{i:06d}" for i in range(140_000)]
    spam = [b"Subject: offer\n\n" + " ".join(words[i::20]).encode() + b" viagra casino\n" for i in range(0, 20, 2)]
    ham = [b"Subject: agenda\n\n" + " ".join(words[i::20]).encode() + b" meeting budget\n" for i in range(1, 20, 2)]
    return build(path, spam=spam + SPAM, ham=ham + HAM)


def arrays_of(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k[: -len(".npy")] if k.endswith(".npy") else k: z[k] for k in z.files}


def rewrite(path: Path, **changes: np.ndarray) -> Path:
    """The model file written again (checksums right) with some members changed."""
    arrays = arrays_of(path)
    arrays.update(changes)
    with open(path, "wb") as out:
        store.write_npz(out, arrays)
    return path


def data_span(path: Path, member: str) -> tuple[int, int]:
    """Where a stored member's array data lies in the file: (start, length)."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member + ".npy")
    with open(path, "rb") as f:
        f.seek(info.header_offset + 26)
        name_len, extra_len = np.frombuffer(f.read(4), dtype="<u2")
        start = info.header_offset + 30 + int(name_len) + int(extra_len)
        f.seek(start)
        head = f.read(12)
        length = int.from_bytes(head[8:10], "little") + 10 if head[6] == 1 else int.from_bytes(head[8:12], "little") + 12
    return start + length, info.file_size - length


def scoring_json(path: Path, **changes: object) -> Path:
    data = json.loads(str(arrays_of(path)["scoring"][()]))
    data.update(changes)
    return rewrite(path, scoring=np.array(json.dumps(data)))


def piped(model: Path, data: bytes) -> tuple[bytes, int, str]:
    out, err = io.BytesIO(), io.StringIO()
    status = pipe.run(str(model), io.BytesIO(data), out, err)  # type: ignore[arg-type]
    return out.getvalue(), status, err.getvalue()


def batch(model: Path, message: Path) -> tuple[int, str, str]:
    done = run_cli("-q", "classify", "-m", model, message)
    return done.exit_code, done.stdout, done.stderr


def error_of(line: str) -> str:
    """The damaged-model error of a line of either path."""
    return line.strip().removeprefix("spamnb: error: ").removeprefix("spamnb: ").removesuffix(pipe.AFTERWORD)


def assert_agree(model: Path, folder: Path, messages: list[bytes] = PROBES) -> list[str]:
    """Pipe and batch: the same verdict on each message, or the same one error (mail passed through)."""
    outcomes = []
    for i, data in enumerate(messages):
        path = folder / f"probe{i}.eml"
        path.write_bytes(data)
        out, status, err = piped(model, data)
        code, stdout, stderr = batch(model, path)
        if status == pipe.EXIT_ERROR:
            assert out == data, "the pipe lost or changed the mail"
            assert code == 3 and len(stderr.splitlines()) == 1 and len(err.splitlines()) == 1, (code, stderr, err)
            assert error_of(err) == error_of(stderr), (err, stderr)
            assert "internal error" not in err
            outcomes.append("error")
            continue
        found = VERDICT.search(out)
        assert found, out[:200]
        assert code == 0, (code, stderr, err)
        _, verdict, score = stdout.strip().split("\t")
        assert found.group(1).decode() == verdict and abs(float(found.group(2)) - float(score)) <= 1e-4, (found.group(0), stdout)
        assert 0.0 <= float(score) <= 1.0
        outcomes.append(verdict)
    return outcomes


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("small") / "model.npz")


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return big_model(tmp_path_factory.mktemp("big") / "model.npz")


@pytest.fixture
def copy_of(tmp_path: Path) -> Callable[[Path], Path]:
    def copy(path: Path) -> Path:
        target = tmp_path / "m.npz"
        target.write_bytes(path.read_bytes())
        return target

    return copy


# --- item 1: one validation on every path ------------------------------------------------


@pytest.mark.parametrize("member", ["tf", "df"])
def test_1_zeroed_data_in_a_large_member_is_damage_to_the_pipe_too(big: Path, copy_of: Callable[[Path], Path], tmp_path: Path, member: str) -> None:
    model = copy_of(big)
    start, length = data_span(model, member)
    assert length > 1 << 18
    with open(model, "r+b") as f:
        f.seek(start)
        f.write(bytes(length))
    assert assert_agree(model, tmp_path) == ["error"] * len(PROBES)
    _, _, err = piped(model, PROBES[0])
    assert f"checksum of {member}" in err


def test_1_offsets_shifted_by_one_agree(small: Path, copy_of: Callable[[Path], Path], tmp_path: Path) -> None:
    model = copy_of(small)
    offsets = arrays_of(model)["offsets"].copy()
    offsets[:-1] += 1  # still rising, within the blob
    rewrite(model, offsets=offsets)
    assert assert_agree(model, tmp_path) == ["error"] * len(PROBES)


def tfidf(folder: Path) -> Path:
    return build(folder / "tfidf.npz", Scoring(event="multinomial", tf="log", idf=True, length_norm="l2"))


@pytest.mark.parametrize("value", [0, 1 << 63, (1 << 64) - 1])
def test_1_weighted_sums_out_of_line_with_the_counts_agree(tmp_path: Path, value: int) -> None:
    model = tfidf(tmp_path)
    weighted = arrays_of(model)["weighted"]
    rewrite(model, weighted=np.full(weighted.shape, value, dtype=np.uint64))
    assert assert_agree(model, tmp_path) == ["error"] * len(PROBES)


@pytest.mark.parametrize(("key", "value"), [("meta_weight", 1e308), ("alpha", 1e308), ("alpha", float("inf")), ("spam_floor", float("nan"))])
def test_1_extreme_scoring_settings_are_damage_on_both_paths(small: Path, copy_of: Callable[[Path], Path], tmp_path: Path, key: str, value: float) -> None:
    model = build(tmp_path / "meta.npz", Scoring(meta="gaussian")) if key == "meta_weight" else copy_of(small)
    scoring_json(model, **{key: value})
    assert assert_agree(model, tmp_path) == ["error"] * len(PROBES)


@pytest.mark.parametrize("member", ["tf", "df", "docs"])
def test_1_counts_past_2_63_are_damage_on_both_paths(small: Path, copy_of: Callable[[Path], Path], tmp_path: Path, member: str) -> None:
    model = copy_of(small)
    a = arrays_of(model)[member].astype(np.uint64)
    a[...] = a + (1 << 63)
    rewrite(model, **{member: a if member != "docs" else a.astype(np.int64, casting="unsafe")})
    assert assert_agree(model, tmp_path) == ["error"] * len(PROBES)


@pytest.mark.parametrize("member", ["tf", "df"])
def test_1_signed_counts_are_read_and_one_below_zero_is_damage(small: Path, copy_of: Callable[[Path], Path], tmp_path: Path, member: str) -> None:
    """spamnb saves counts unsigned (none can be below zero); another tool's signed ones are
    read alike, and checked."""
    model = copy_of(small)
    verdicts = assert_agree(model, tmp_path)
    signed = arrays_of(model)[member].astype(np.int64)
    rewrite(model, **{member: signed})
    assert assert_agree(model, tmp_path) == verdicts != ["error"] * len(PROBES)
    signed[1, int(np.argmax(signed[1]))] = -1
    rewrite(model, **{member: signed})
    assert assert_agree(model, tmp_path) == ["error"] * len(PROBES)


def test_1_a_token_in_more_messages_than_were_learnt_is_damage(small: Path, copy_of: Callable[[Path], Path], tmp_path: Path) -> None:
    model = copy_of(small)
    rewrite(model, docs=np.array([1, 1], dtype=np.int64))
    assert assert_agree(model, tmp_path) == ["error"] * len(PROBES)


# --- item 2: the digest is blind to the envelope and to trailing blank lines --------------

ENVELOPED = b"From c@x  Thu Aug 22 14:44:26 2002\nFrom: c@x\nSubject: n\n\nbody\n\n"


def spamnb(*args: str | Path, stdin: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    if not SPAMNB.exists():
        pytest.skip(f"no console script at {SPAMNB}")
    return subprocess.run([str(SPAMNB), *map(str, args)], input=stdin, capture_output=True, timeout=timeout, stdin=None if stdin is not None else subprocess.DEVNULL)


def holds(model: Path) -> str:
    return spamnb("inspect", "-m", model).stdout.decode()


def test_2_a_message_learnt_by_path_then_on_stdin_counts_once(small: Path, copy_of: Callable[[Path], Path], tmp_path: Path) -> None:
    model = copy_of(small)
    (tmp_path / "A.eml").write_bytes(ENVELOPED)
    first = spamnb("train", "-m", model, "--ham", tmp_path / "A.eml")
    assert first.returncode == 0, first.stderr
    second = spamnb("train", "-m", model, "--ham", "-", stdin=ENVELOPED)
    assert b"learnt 0, moved 0, already known 1" in second.stderr, second.stderr


@pytest.mark.parametrize("variant", [ENVELOPED + b"\n", ENVELOPED[:-1], ENVELOPED[:-2], ENVELOPED.split(b"\n", 1)[1]])
def test_2_a_newline_more_or_less_is_the_same_message(variant: bytes) -> None:
    assert headers.digest(variant) == headers.digest(ENVELOPED)


def test_2_messages_learnt_under_the_old_digest_are_still_known(small: Path, copy_of: Callable[[Path], Path]) -> None:
    model = copy_of(small)
    m = store.load(str(model), growable=True)
    old = headers.legacy_digests(ENVELOPED)[0]
    assert old != headers.digest(ENVELOPED)
    m.learnt[old] = 0
    m.counts.docs[0] += 1
    store.save(m, str(model))
    again = spamnb("train", "-m", model, "--spam", "-", stdin=ENVELOPED)
    assert b"learnt 0, moved 1" in again.stderr, again.stderr


# --- item 3: merge validates every OTHER and never writes a MODEL that does not validate ---


@pytest.mark.parametrize(
    "damage",
    [
        {"docs": np.array([(1 << 63) - 1, 5], dtype=np.int64)},
        {"tf": "max"},
        {"df": "docs+1"},
    ],
)
def test_3_merge_refuses_a_hostile_other_and_leaves_model_as_it_was(small: Path, tmp_path: Path, damage: dict[str, object]) -> None:
    model = tmp_path / "m.npz"
    model.write_bytes(small.read_bytes())
    other = build(tmp_path / "other.npz", spam=fake_corpus(SPAM_WORDS, 4, seed=11), ham=fake_corpus(HAM_WORDS, 4, seed=12))
    a = arrays_of(other)
    (name, value), = damage.items()
    if isinstance(value, str) and value == "max":
        value = np.full(a["tf"].shape, (1 << 64) - 1, dtype=np.uint64)
    elif isinstance(value, str):
        value = a["df"].astype(np.uint64)
        value[0, 0] = a["docs"][0] + 1
    rewrite(other, **{name: value})
    before = model.read_bytes()
    done = spamnb("merge", "-m", model, other)
    assert done.returncode == 3, done.stderr
    assert str(other) in done.stderr.decode() and len(done.stderr.decode().splitlines()) == 1
    assert model.read_bytes() == before
    assert b"X-Spamnb: " in spamnb("classify", "--pipe", "-m", model, stdin=PROBES[0]).stdout


def test_3_a_merge_whose_sum_overflows_is_refused(small: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.npz"
    other = tmp_path / "o.npz"
    for path in (model, other):
        path.write_bytes(small.read_bytes())
        tf = arrays_of(path)["tf"].astype(np.uint64)
        tf[0, 0] = 1 << 52
        rewrite(path, tf=tf)
    other_learnt = arrays_of(other)["learnt"].copy()
    other_learnt[:, 0] ^= 0xFF  # other messages
    rewrite(other, learnt=other_learnt)
    before = model.read_bytes()
    done = spamnb("merge", "-m", model, other)
    assert done.returncode == 3 and model.read_bytes() == before, done.stderr


# --- item 4: only a record cut short at the end of the journal may be dropped --------------


def learn_some(model: Path, tmp_path: Path, n: int, seed: int = 40) -> None:
    for data in fake_corpus(HAM_WORDS, n, seed=seed):
        done = spamnb("train", "-m", model, "--ham", "-", stdin=data)
        assert done.returncode == 0, done.stderr


def docs_of(model: Path) -> list[int]:
    return store.load(str(model)).counts.docs.tolist()


@pytest.mark.parametrize("which", [0, 1, 2])
def test_4_a_flipped_bit_in_a_record_length_is_damage_not_a_cut(small: Path, copy_of: Callable[[Path], Path], tmp_path: Path, which: int) -> None:
    model = copy_of(small)
    learn_some(model, tmp_path, 3)
    path = Path(journal.journal_path(str(model)))
    data = bytearray(path.read_bytes())
    at = [m.start() for m in re.finditer(re.escape(journal.REC_TAG), bytes(data))][which]
    data[at + 4 + 2] ^= 0x10  # the length's third byte: far past the end
    path.write_bytes(bytes(data))
    for args in (["classify", "-m", model, "-"], ["train", "-m", model, "--ham", "-"]):
        done = spamnb(*args, stdin=fake_corpus(SPAM_WORDS, 1, seed=77)[0])
        assert done.returncode == 3 and b"damaged spamnb journal" in done.stderr, done.stderr
    out = spamnb("classify", "--pipe", "-m", model, stdin=PROBES[0])
    assert out.returncode == 3 and out.stdout == PROBES[0] and b"damaged spamnb journal" in out.stderr
    assert path.read_bytes() == bytes(data), "the damaged journal was cut"


def test_4_a_record_cut_short_at_the_end_is_dropped_and_cut_by_the_next_learn(small: Path, copy_of: Callable[[Path], Path], tmp_path: Path) -> None:
    model = copy_of(small)
    learn_some(model, tmp_path, 2)
    path = Path(journal.journal_path(str(model)))
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    assert docs_of(model)[0] == docs_of(small)[0] + 1
    learn_some(model, tmp_path, 1, seed=41)
    assert docs_of(model)[0] == docs_of(small)[0] + 2


# --- item 5: a model overwritten in place under a running pipe -----------------------------


def test_5_a_model_written_over_in_place_under_running_pipes_passes_the_mail_through(big: Path, copy_of: Callable[[Path], Path], tmp_path: Path) -> None:
    """`cp other.npz model.npz` (truncate, then write) again and again while pipes read the model."""
    if not SPAMNB.exists():
        pytest.skip(f"no console script at {SPAMNB}")
    model = copy_of(big)
    versions = [model.read_bytes(), build(tmp_path / "s.npz").read_bytes()]
    stop = threading.Event()

    def overwrite() -> None:
        i = 0
        while not stop.is_set():
            with open(model, "r+b") as f:
                f.truncate(0)
                f.write(versions[i % 2])
            i += 1

    writer = threading.Thread(target=overwrite)
    writer.start()
    statuses = []
    try:
        for i in range(40):
            data = PROBES[i % len(PROBES)]
            done = subprocess.run([str(SPAMNB), "classify", "--pipe", "-m", str(model)], input=data, capture_output=True, timeout=60)
            statuses.append(done.returncode)
            assert done.returncode in (0, 1, 2, 3), (statuses, done.stderr)
            body = data.split(b"\n\n", 1)[1]
            assert done.stdout.endswith(body) and (done.returncode < 3 or done.stdout == data), done.stderr
            assert len(done.stderr.splitlines()) <= 1
    finally:
        stop.set()
        writer.join()


# --- item 6: the journal is a regular file of bounded size --------------------------------


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_6_a_fifo_or_a_device_at_the_journal_is_refused_without_blocking(small: Path, copy_of: Callable[[Path], Path], kind: str) -> None:
    model = copy_of(small)
    path = Path(journal.journal_path(str(model)))
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(kind)
    done = spamnb("classify", "--pipe", "-m", model, stdin=PROBES[0], timeout=30)
    assert done.returncode == 3 and done.stdout == PROBES[0], done.stderr
    assert str(path) in done.stderr.decode() and len(done.stderr.splitlines()) == 1


# --- item 8: settings are range-checked ----------------------------------------------------


@pytest.mark.parametrize(("key", "value"), [("max_len", 10**9), ("ngram", 2.0), ("min_len", 1.5), ("max_bytes", 1 << 40)])
def test_8_12_tokeniser_settings_out_of_range_or_of_the_wrong_type_are_damage(small: Path, copy_of: Callable[[Path], Path], tmp_path: Path, key: str, value: object) -> None:
    model = copy_of(small)
    settings_ = json.loads(str(arrays_of(model)["settings"][()]))
    settings_[key] = value
    rewrite(model, settings=np.array(json.dumps(settings_)))
    assert assert_agree(model, tmp_path) == ["error"] * len(PROBES)


@pytest.mark.parametrize("blob", ["newlines", "empty tokens"])
def test_8_a_token_blob_that_does_not_hold_the_vocabulary_is_damage_before_any_list_is_made(small: Path, tmp_path: Path, blob: str) -> None:
    a = arrays_of(small)
    n = a["tf"].shape[1]
    raw = b"\n" * (4 << 20) if blob == "newlines" else b"\n".join([b"a"] * (n - 2) + [b"", b"b"])
    path = tmp_path / "m.npz"
    with open(path, "wb") as out:
        store.write_npz(out, {**{k: v for k, v in a.items() if k != "offsets"}, "tokens": np.frombuffer(raw, dtype=np.uint8)})
    assert assert_agree(path, tmp_path) == ["error"] * len(PROBES)


# --- item 9: a journal that cannot be folded stops growing -----------------------------------


def test_9_past_its_bound_the_journal_refuses_a_learn(small: Path, copy_of: Callable[[Path], Path]) -> None:
    model = copy_of(small)
    learn_some(model, model.parent, 1)
    path = Path(journal.journal_path(str(model)))
    data = path.read_bytes()
    record = data[journal.HEAD.size :]
    with open(path, "ab") as out:  # the same record again and again: folds that kept failing
        out.write(record * ((journal.MAX_SIZE - journal.FOLD_SIZE) // len(record) + 1))
    size = path.stat().st_size
    done = spamnb("train", "-m", model, "--spam", "-", stdin=PROBES[0])
    assert done.returncode == 3 and b"journal is full" in done.stderr, done.stderr
    assert path.stat().st_size == size


# --- item 10: a closed stdout or stdin is exit 3, not a verdict -----------------------------


@pytest.mark.parametrize("closed", [0, 1])
def test_10_a_closed_stdin_or_stdout_is_exit_3_with_one_line(small: Path, closed: int) -> None:
    if not SPAMNB.exists():
        pytest.skip(f"no console script at {SPAMNB}")
    script = f"import os, subprocess, sys; os.close({closed}); sys.exit(subprocess.call([{str(SPAMNB)!r}, 'classify', '--pipe', '--exit-zero', '-m', {str(small)!r}], stdin={'None' if closed else 'subprocess.DEVNULL'}))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert len(done.stderr.splitlines()) == 1 and b"Traceback" not in done.stderr


# --- item 11: a learn whose fold fails is still a learn ---------------------------------------


def test_11_a_learn_whose_fold_fails_says_it_learnt(small: Path, copy_of: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from spamnb.pipe import learnone

    model = copy_of(small)
    monkeypatch.setattr(journal, "FOLD_SIZE", 1)  # every learn folds

    def full(*args: object) -> None:
        raise modelfile.ModelError(f"{model}: cannot save the model (No space left on device, writing x.tmp); the model is as it was")

    monkeypatch.setattr(store, "save", full)
    message = model.parent / "one.eml"
    message.write_bytes(PROBES[0])
    status = learnone.main(["train", "-m", str(model), "--spam", str(message)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "learnt (in the model's journal)" in err.replace("are learnt", "learnt") and "postponed" in err
    monkeypatch.undo()
    assert docs_of(model)[1] == docs_of(small)[1] + 1


# --- items 12 and 13: one rule for both paths ---------------------------------------------


def test_12_merge_with_an_unreadable_messages_source_exits_1(small: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.npz"
    model.write_bytes(small.read_bytes())
    other = build(tmp_path / "other.npz", spam=fake_corpus(SPAM_WORDS, 3, seed=21), ham=fake_corpus(HAM_WORDS, 3, seed=22))
    mail = tmp_path / "mail"
    mail.mkdir()
    (mail / "one.eml").write_bytes(PROBES[0])
    os.mkfifo(mail / "fifo")  # skipped with a warning: a message not read
    done = spamnb("-q", "merge", "-m", model, other, "--messages", mail)
    assert done.returncode == 1, done.stderr
    assert str(mail / "fifo") in done.stderr.decode()


def test_12_merging_an_other_with_invalid_utf8_tokens_names_it(small: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.npz"
    model.write_bytes(small.read_bytes())
    other = build(tmp_path / "other.npz", spam=fake_corpus(SPAM_WORDS, 3, seed=23), ham=fake_corpus(HAM_WORDS, 3, seed=24))
    raw = arrays_of(other)["tokens"].tobytes()
    cut = raw.rindex(b"\n") + 1
    blob = raw[:cut] + b"\xff\xfe"  # the last token, still sorted last, not UTF-8
    offsets = np.array([0, *[i + 1 for i, c in enumerate(blob) if c == 10], len(blob) + 1], dtype=np.uint32)
    rewrite(other, tokens=np.frombuffer(blob, dtype=np.uint8), offsets=offsets)
    before = model.read_bytes()
    done = spamnb("merge", "-m", model, other)
    assert done.returncode == 3 and model.read_bytes() == before, done.stderr
    assert done.stderr.decode().startswith(f"spamnb: error: {other}: damaged spamnb model (") and len(done.stderr.splitlines()) == 1


def test_12_a_full_stdout_is_named(small: Path, tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    (tmp_path / "one.eml").write_bytes(PROBES[0])
    with open("/dev/full", "wb") as full:
        done = subprocess.run([str(SPAMNB), "classify", "-m", str(small), str(tmp_path / "one.eml")], stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 3
    assert done.stderr.decode().splitlines() == ["spamnb: error: cannot write to standard output (No space left on device); what was written of it is incomplete"]


def test_12_a_journal_count_past_any_message_is_damage_on_both_paths(small: Path, copy_of: Callable[[Path], Path], tmp_path: Path) -> None:
    model = copy_of(small)
    learn_some(model, tmp_path, 1)
    path = Path(journal.journal_path(str(model)))
    data = path.read_bytes()
    head, rest = data[: journal.HEAD.size], data[journal.HEAD.size :]
    entry = journal.Entry.parse(rest[journal.REC.size :])
    first = next(iter(entry.tokens))
    entry.tokens[first] = 10**30
    payload = entry.payload()
    path.write_bytes(head + journal.REC.pack(journal.REC_TAG, len(payload), zlib.crc32(payload)) + payload)
    assert assert_agree(model, tmp_path) == ["error"] * len(PROBES)


def test_13_a_learnt_class_past_spam_is_refused_by_the_pipe_and_the_learner(small: Path, copy_of: Callable[[Path], Path], tmp_path: Path) -> None:
    model = copy_of(small)
    classes = arrays_of(model)["learnt_class"].copy()
    classes[0] = 7
    rewrite(model, learnt_class=classes)
    assert assert_agree(model, tmp_path) == ["error"] * len(PROBES)
    done = spamnb("train", "-m", model, "--spam", "-", stdin=PROBES[0])
    assert done.returncode == 3 and not Path(journal.journal_path(str(model))).exists(), done.stderr


def test_13_forged_verdict_headers_past_the_cap_are_read_alike(small: Path, tmp_path: Path) -> None:
    forged = b"".join(b"X-Spamnb: ham, score=0.0000 meeting agenda budget %d\n" % i for i in range(60_000))
    message = forged + PROBES[0]
    assert len(forged) > (1 << 20) + (1 << 16)
    assert assert_agree(small, tmp_path, [message]) != ["error"]


# --- pipe and batch agree on every damaged model and journal ------------------------------

EXTREMES = [0, 1, (1 << 53) + 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]


@st.composite
def damage(draw: st.DrawFn) -> tuple[str, object]:
    kind = draw(st.sampled_from(["flip", "truncate", "swap", "extreme", "setting", "journal flip", "journal truncate"]))
    if kind in ("flip", "journal flip"):
        return kind, (draw(st.floats(0, 1, exclude_max=True)), draw(st.integers(0, 7)))
    if kind in ("truncate", "journal truncate"):
        return kind, draw(st.floats(0, 1, exclude_max=True))
    if kind == "swap":
        return kind, tuple(draw(st.permutations(["tf", "df", "docs", "offsets", "learnt", "learnt_class", "tokens"]))[:2])
    if kind == "extreme":
        return kind, (draw(st.sampled_from(["tf", "df", "docs", "offsets", "learnt_class"])), draw(st.integers(0, 10_000)), draw(st.sampled_from(EXTREMES)))
    key = draw(st.sampled_from(["alpha", "spam_cutoff", "ham_cutoff", "calibration", "spam_floor", "event", "tf", "idf", "length_norm", "max_len", "ngram", "min_len", "max_bytes"]))
    return kind, (key, draw(st.sampled_from([0, -1, 0.5, 1e308, float("inf"), float("nan"), 10**9, [1e308, 0], "x", None])))


def damaged_copy(good: Path, folder: Path, what: tuple[str, object], serial: list[int]) -> Path:
    kind, how = what
    serial[0] += 1
    path = folder / f"m{serial[0]}.npz"  # a new file each time: a new inode for trust.verified
    path.write_bytes(good.read_bytes())
    good_journal = Path(journal.journal_path(str(good)))
    journal_file = Path(journal.journal_path(str(path)))
    if good_journal.exists():
        journal_file.write_bytes(good_journal.read_bytes())
    target = journal_file if kind.startswith("journal") else path
    data = bytearray(target.read_bytes())
    if kind.endswith("flip"):
        at, bit = how  # type: ignore[misc]
        data[int(at * len(data))] ^= 1 << bit
        target.write_bytes(bytes(data))
    elif kind.endswith("truncate"):
        target.write_bytes(bytes(data[: int(how * len(data))]))  # type: ignore[operator]
    elif kind == "swap":
        a = arrays_of(path)
        first, second = how  # type: ignore[misc]
        rewrite(path, **{first: a[second], second: a[first]})
    elif kind == "extreme":
        name, at, value = how  # type: ignore[misc]
        array = arrays_of(path)[name].astype(np.uint64)
        if array.size:
            array.flat[at % array.size] = value
        rewrite(path, **{name: array})
    else:
        key, value = how  # type: ignore[misc]
        member = "settings" if key in TokenSettings._fields else "scoring"
        fields = json.loads(str(arrays_of(path)[member][()]))
        fields[key] = value
        rewrite(path, **{member: np.array(json.dumps(fields))})
    return path


@pytest.fixture(scope="module")
def journalled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = build(tmp_path_factory.mktemp("journalled") / "model.npz")
    for data in fake_corpus(SPAM_WORDS, 2, seed=31):
        done = spamnb("train", "-m", model, "--spam", "-", stdin=data)
        assert done.returncode == 0, done.stderr
    assert Path(journal.journal_path(str(model))).exists()
    return model


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(what=damage(), which=st.integers(0, len(PROBES) - 1))
def test_pipe_and_batch_agree_on_any_damage(journalled: Path, tmp_path_factory: pytest.TempPathFactory, what: tuple[str, object], which: int) -> None:
    folder = tmp_path_factory.mktemp("damage")
    path = damaged_copy(journalled, folder, what, [0])
    assert_agree(path, folder, [PROBES[which]])


# --- a save checks the model's counts while the calibration's folds are scored -----------


def mail_folder(folder: Path, mail: list[bytes]) -> Path:
    folder.mkdir()
    for i, data in enumerate(mail):
        (folder / f"{i}.eml").write_bytes(data)
    return folder


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_train_that_would_damage_the_model_is_refused_and_nothing_written(tmp_path: Path, jobs: str) -> None:
    # Spam counted up to trust's cap: four more are past it, whichever process checks the counts.
    model = build(tmp_path / "model.npz")
    ham = int(arrays_of(model)["docs"][0])
    rewrite(model, docs=np.array([ham, trust.MAX_COUNT - 1], dtype=np.int64))
    good = model.read_bytes()
    spam = mail_folder(tmp_path / "spam", fake_corpus(SPAM_WORDS, 4, seed=41))
    done = spamnb("-q", "train", "-m", model, "--spam", spam, "--jobs", jobs)
    past = f"{trust.MAX_COUNT + 3:,}"
    assert done.returncode == 3
    assert done.stderr.decode() == f"spamnb: error: {model}: cannot save the model: it would be damaged (message counts {ham} and {past}); the model is as it was\n"
    assert model.read_bytes() == good
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


@pytest.mark.parametrize("prune", [[], ["--max-tokens", "40"], ["--min-count", "3"]])
def test_train_on_two_jobs_saves_the_bytes_of_one(tmp_path: Path, prune: list[str]) -> None:
    # On two jobs the save's arrays are made while the calibration's folds are scored: a new
    # model, the same trained again on more mail, and pruned ones are the same files as one job's.
    def folder(name: str, words: tuple[str, ...], seed: int) -> Path:
        return mail_folder(tmp_path / name, fake_corpus(words, 10, seed))

    runs = [["--spam", folder("spam1", SPAM_WORDS, 43), "--ham", folder("ham1", HAM_WORDS, 44)], ["--spam", folder("spam2", SPAM_WORDS, 45), "--ham", folder("ham2", HAM_WORDS, 46)]]
    files = {}
    for jobs in ("1", "2"):
        model = tmp_path / f"model{jobs}.npz"
        files[jobs] = []
        for args in runs:
            done = spamnb("train", "-m", model, *args, *prune, "--jobs", jobs)
            assert done.returncode == 0, done.stderr
            assert (b", pruned " in done.stderr) == bool(prune), done.stderr
            files[jobs].append(model.read_bytes())
    assert files["1"] == files["2"]
