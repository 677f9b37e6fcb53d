"""Learning one message without rewriting the model (spamnb.models.journal, spamnb.pipe.learnone):
every reader sees a learn at once, learning stays idempotent and forgetting checked,
a learn that exited 0 survives kill -9, concurrent learners give exact counts, and a
damaged journal is a clear error."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from spamnb.bayes import events
from spamnb.mail import headers
from spamnb.mail.sources import Message
from spamnb.models import journal, modelfile, store
from spamnb.pipe import learnone, onemessage
from spamnb.run import classifier
from tests.conftest import HAM_WORDS, SPAM_WORDS, fake_corpus, make_mail, run_cli, run_click
from tests.test_pipe import SPAMNB, build_model, run_pipe

NEW_SPAM = make_mail("zebra offer", "quokka flamingo viagra casino narwhal\n")
NEW_HAM = make_mail("quarterly agenda", "project axolotl budget review\n")


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    return build_model(tmp_path / "model.npz", fake_corpus(SPAM_WORDS, 12, seed=1), fake_corpus(HAM_WORDS, 12, seed=2))


def message_file(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def learn(model: Path, label: str, path: Path, *more: str) -> int | None:
    return learnone.main(["train", "-m", str(model), f"--{label}", str(path), *more])


def bulk(model: Path, *args: str) -> None:
    """The full command line's train (the path that rewrites the model)."""
    result = run_cli("-q", "train", "-m", str(model), "--jobs", "1", *args)
    assert result.exit_code == 0, result.output


def arrays(path: Path) -> dict[str, np.ndarray]:
    return store.to_arrays(store.load(str(path)))


def assert_same_model(a: Path, b: Path) -> None:
    left, right = arrays(a), arrays(b)
    assert left.keys() == right.keys()
    for name in left:
        if name == "history":  # a learn's score before it and train's held-out one: the same model, summed in another order
            assert left[name] == pytest.approx(right[name], rel=1e-9), name
        else:
            assert np.array_equal(left[name], right[name]), name


def test_a_learn_goes_to_the_journal_and_every_reader_sees_it(model: Path, tmp_path: Path) -> None:
    direct = tmp_path / "direct.npz"
    direct.write_bytes(model.read_bytes())
    spam = message_file(tmp_path, "new-spam.eml", NEW_SPAM)
    bulk(direct, "--spam", str(spam))
    before = model.read_bytes()

    assert learn(model, "spam", spam) == 0
    assert model.read_bytes() == before, "the model file is not rewritten"
    assert Path(journal.journal_path(str(model))).stat().st_size < 2000
    # store.load (classify, inspect, eval -m, train) reads the model with its journal ...
    assert_same_model(model, direct)
    loaded, reference = store.load(str(model)), store.load(str(direct))
    items = [Message("s", NEW_SPAM), Message("h", NEW_HAM)]
    ours, theirs = list(classifier.classify(loaded, items)), list(classifier.classify(reference, items))
    assert [s.log_odds for s in ours] == pytest.approx([s.log_odds for s in theirs], rel=1e-12)
    # ... and so does the pipe's one-message scorer.
    for item, scored in zip(items, theirs, strict=True):
        assert onemessage.score_message(str(model), item.data).log_odds == pytest.approx(scored.log_odds, rel=1e-9)
    for args in (["inspect", "--json"], ["eval", "--json", "--spam", str(spam), "--ham", str(message_file(tmp_path, "h.eml", NEW_HAM))]):
        outs = [run_cli("-q", args[0], "-m", m, *args[1:]) for m in (model, direct)]
        assert outs[0].exit_code == outs[1].exit_code == 0, outs[0].output
        # the files themselves differ (one has a journal): their size and time are not compared
        ours_info, theirs_info = (
            without_ties({k: v for k, v in json.loads(o.stdout.replace(str(m), "M")).items() if k not in ("file_bytes", "last_trained")})
            for o, m in zip(outs, (model, direct), strict=True)
        )
        assert_close(ours_info, theirs_info)


def assert_close(a: object, b: object) -> None:
    """Equal, but for floats summed in another order (rounding)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_close(a[k], b[k])
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_close(x, y)
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-15)
    else:
        assert a == b


def without_ties(info: dict) -> dict:
    """inspect's top tokens as their weights: tokens of equal weight come in column order,
    and the journal's new tokens have the last columns until it is folded in."""
    if "top" in info:
        info["top"] = {k: [t["weight"] for t in v] for k, v in info["top"].items()}
    return info


def test_learning_is_idempotent_and_forgetting_checked_across_model_and_journal(model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spam = message_file(tmp_path, "s.eml", NEW_SPAM)
    in_model = message_file(tmp_path, "m.eml", fake_corpus(SPAM_WORDS, 12, seed=1)[0])
    capsys.readouterr()
    assert learn(model, "spam", spam) == 0
    assert learn(model, "spam", spam) == 0
    assert learn(model, "spam", in_model) == 0  # learnt by the model itself, before the journal
    out = capsys.readouterr().err.splitlines()
    assert out[0].endswith("learnt 1, moved 0, already known 0; model holds 13 spam and 12 ham")
    assert out[1].endswith("learnt 0, moved 0, already known 1; model holds 13 spam and 12 ham")
    assert out[2].endswith("learnt 0, moved 0, already known 1; model holds 13 spam and 12 ham")
    assert learn(model, "ham", spam) == 0
    assert capsys.readouterr().err.endswith("learnt 0, moved 1, already known 0; model holds 12 spam and 13 ham\n")
    assert learn(model, "ham", in_model, "--forget") == 0  # forgets what the model learnt
    assert learn(model, "ham", spam, "--forget") == 0  # and what the journal did
    assert capsys.readouterr().err.splitlines()[1].endswith("forgot 1, already known 0; model holds 11 spam and 12 ham")
    assert learn(model, "spam", spam, "--forget") == 1
    assert capsys.readouterr().err.splitlines() == [
        f"spamnb: {spam}: never learnt, nothing to forget",
        f"{model}: forgot 0, already known 0; model holds 11 spam and 12 ham",
    ]
    # The same through the full command line (which folds the journal in) ...
    result = run_click("-q", "train", "-m", str(model), "--forget", "--spam", str(spam))
    assert result.exit_code == 1 and "never learnt" in result.stderr
    assert not os.path.exists(journal.journal_path(str(model)))
    assert store.load(str(model)).counts.docs.tolist() == [12, 11]


def test_a_bulk_train_or_a_full_journal_folds_it_into_the_model(model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    direct = tmp_path / "direct.npz"
    direct.write_bytes(model.read_bytes())
    spam, ham = message_file(tmp_path, "s.eml", NEW_SPAM), message_file(tmp_path, "h.eml", NEW_HAM)
    bulk(direct, "--spam", str(spam))
    bulk(direct, "--ham", str(ham))
    assert learn(model, "spam", spam) == 0
    bulk(model, "--ham", str(ham))  # any bulk train folds the journal in
    assert not os.path.exists(journal.journal_path(str(model)))
    assert_same_model(model, direct)

    again = tmp_path / "again.npz"
    again.write_bytes(direct.read_bytes())
    monkeypatch.setattr(journal, "FOLD_SIZE", 0)
    assert learn(again, "ham", spam) == 0  # past the size: folded at once
    assert not os.path.exists(journal.journal_path(str(again)))
    bulk(direct, "--ham", str(spam))
    assert_same_model(again, direct)


def corrupt_middle(path: str) -> None:
    data = bytearray(Path(path).read_bytes())
    data[journal.HEAD.size + journal.REC.size + 5] ^= 0x20  # inside the first of two records
    Path(path).write_bytes(bytes(data))


def test_a_damaged_journal_is_a_clear_error_and_the_pipe_still_delivers(model: Path, tmp_path: Path) -> None:
    spam, ham = message_file(tmp_path, "s.eml", NEW_SPAM), message_file(tmp_path, "h.eml", NEW_HAM)
    assert learn(model, "spam", spam) == 0
    assert learn(model, "ham", ham) == 0
    corrupt_middle(journal.journal_path(str(model)))
    needle = f"{model}.journal: damaged spamnb journal"
    with pytest.raises(modelfile.ModelError, match=needle):
        store.load(str(model))
    for args in (["classify", "-m", str(model), str(spam)], ["train", "-m", str(model), "--jobs", "1", "--spam", str(spam)], ["inspect", "-m", str(model)]):
        result = run_cli("-q", *args)
        assert result.exit_code == 3 and result.stderr.count("\n") == 1 and needle in result.stderr, result.output
    assert learn(model, "spam", spam) == 3
    piped = run_pipe(model, NEW_HAM)
    assert (piped.out, piped.status) == (NEW_HAM, 3) and needle in piped.err


def test_a_record_cut_short_is_skipped_and_then_cut_off(model: Path, tmp_path: Path) -> None:
    spam, ham = message_file(tmp_path, "s.eml", NEW_SPAM), message_file(tmp_path, "h.eml", NEW_HAM)
    assert learn(model, "spam", spam) == 0
    path = Path(journal.journal_path(str(model)))
    good = path.read_bytes()
    # A learner killed part way through its write: its message was never acknowledged.
    record = journal.Entry(b"\x01" * 16, None, 0, {"half": 1}).payload()
    path.write_bytes(good + journal.REC.pack(journal.REC_TAG, len(record), 0) + record[:5])
    assert store.load(str(model)).counts.docs.tolist() == [12, 13]
    assert learn(model, "ham", ham) == 0
    assert path.read_bytes().startswith(good) and store.load(str(model)).counts.docs.tolist() == [13, 13]


def test_a_journal_of_an_earlier_model_is_ignored(model: Path, tmp_path: Path) -> None:
    spam, ham = message_file(tmp_path, "s.eml", NEW_SPAM), message_file(tmp_path, "h.eml", NEW_HAM)
    assert learn(model, "spam", spam) == 0
    path = Path(journal.journal_path(str(model)))
    stale = path.read_bytes()
    bulk(model, "--ham", str(ham))  # folds (the journal is removed) ...
    path.write_bytes(stale)  # ... as if a crash came between the model's rename and the removal
    assert store.load(str(model)).counts.docs.tolist() == [13, 13]  # the spam counted once
    assert onemessage.OneModel(str(model)).docs == [13, 13]


# A learner that folds at every learn (FOLD_SIZE 0): killed at any moment, it must not
# lose what learns before it acknowledged.
FOLDING_LEARNER = """
import sys
from spamnb.models import journal
from spamnb.pipe import learnone
journal.FOLD_SIZE = int(sys.argv[1])
sys.exit(learnone.main(["-q", "train", "-m", sys.argv[2], "--" + sys.argv[3], sys.argv[4]]))
"""


def learner(model: Path, label: str, path: Path, fold_size: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", FOLDING_LEARNER, str(fold_size), str(model), label, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_learn_that_exited_0_survives_kill_9_of_later_learns_and_folds(model: Path, tmp_path: Path) -> None:
    mails = fake_corpus(SPAM_WORDS, 6, seed=7)
    acknowledged = []
    rng = random.Random(3)
    for i, mail in enumerate(mails):
        path = message_file(tmp_path, f"m{i}.eml", mail)
        proc = learner(model, "spam", path, fold_size=rng.choice([0, 1 << 20]))
        if i % 2:  # killed at some moment of its run: learning, appending or folding
            time.sleep(rng.uniform(0.0, 0.6))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if proc.returncode == 0:
                acknowledged.append(mail)
        else:
            assert proc.wait() == 0, proc.stderr.read() if proc.stderr else ""
            acknowledged.append(mail)
        loaded = store.load(str(model))  # never an error: a torn record is skipped
        for mail in acknowledged:
            assert headers.digest(mail, loaded.tokens.max_bytes) in loaded.learnt
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    loaded = store.load(str(model))
    assert loaded.counts.docs[1] >= 12 + len(acknowledged)


def test_twenty_concurrent_learners_give_exact_counts(model: Path, tmp_path: Path) -> None:
    if not SPAMNB.exists():
        pytest.skip(f"no console script at {SPAMNB}")
    direct = tmp_path / "direct.npz"
    direct.write_bytes(model.read_bytes())
    mails = fake_corpus(SPAM_WORDS, 10, seed=11) + fake_corpus(HAM_WORDS, 10, seed=12)
    paths = [message_file(tmp_path, f"c{i}.eml", m) for i, m in enumerate(mails)]
    labels = ["spam"] * 10 + ["ham"] * 10
    # Half fold the journal whenever it passes 1 kB, so learns and folds interleave.
    procs = [learner(model, label, path, fold_size=1000 if i % 2 else 1 << 20) for i, (label, path) in enumerate(zip(labels, paths, strict=True))]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    bulk(direct, *(a for label, path in zip(labels, paths, strict=True) for a in (f"--{label}", str(path))))
    loaded, reference = store.load(str(model)), store.load(str(direct))
    assert loaded.counts.docs.tolist() == reference.counts.docs.tolist() == [22, 22]
    assert loaded.learnt == reference.learnt
    ours = dict(zip(loaded.growable().tokens, zip(loaded.counts.tf.T.tolist(), loaded.counts.df.T.tolist(), strict=True), strict=True))
    theirs = dict(zip(reference.growable().tokens, zip(reference.counts.tf.T.tolist(), reference.counts.df.T.tolist(), strict=True), strict=True))
    assert ours == theirs


def learn_without_numpy(model: Path, label: str, data: bytes) -> str:
    """`train --LABEL -` of `data` as the console script's entry runs it; asserts it exited 0
    with none of numpy, scipy, click and rich imported, and returns what it said."""
    code = (
        "import io, sys\nfrom spamnb import entry\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[2].encode()))\n"
        "try:\n    entry.main(['train', '-m', sys.argv[1], '--' + sys.argv[3], '-'])\n"
        "except SystemExit as done:\n    print(done.code, ' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(model), data.decode(), label], capture_output=True, text=True, timeout=60, check=False)
    status, modules = done.stdout.split(" ", 1)
    assert status == "0", done.stderr
    assert not {m.split(".")[0] for m in modules.split()} & {"numpy", "scipy", "click", "rich"}
    return done.stderr


def test_the_console_script_learns_from_stdin_without_numpy(model: Path) -> None:
    if not SPAMNB.exists():
        pytest.skip(f"no console script at {SPAMNB}")
    assert "learnt 1, moved 0" in learn_without_numpy(model, "ham", NEW_HAM)
    assert store.load(str(model)).counts.docs.tolist() == [13, 12]


@pytest.mark.parametrize("event", sorted(events.EVENT_MODELS))
def test_the_pipe_scores_a_model_with_a_journal_as_batch_classify_does(model: Path, tmp_path: Path, event: str) -> None:
    loaded = store.load(str(model))
    loaded.scoring = loaded.scoring.replace(event=event)
    store.save(loaded, str(model))
    spam, ham = message_file(tmp_path, "s.eml", NEW_SPAM), message_file(tmp_path, "h.eml", NEW_HAM)
    old = message_file(tmp_path, "o.eml", fake_corpus(HAM_WORDS, 12, seed=2)[3])
    assert learn(model, "spam", spam) == 0
    assert learn(model, "spam", ham) == 0
    assert learn(model, "ham", ham) == 0  # moved
    assert learn(model, "ham", old, "--forget") == 0  # out of the model's own counts
    mails = [NEW_SPAM, NEW_HAM, make_mail("narwhal", "quokka axolotl lunch"), *fake_corpus(SPAM_WORDS, 3, seed=5)]
    batch = classifier.classify(store.load(str(model)), [Message(str(i), m) for i, m in enumerate(mails)])
    for mail, scored in zip(mails, batch, strict=True):
        assert onemessage.score_message(str(model), mail).log_odds == pytest.approx(scored.log_odds, rel=1e-9, abs=1e-12)


def test_scores_and_scoring_records_are_read_back_and_older_records_still_read(model: Path, tmp_path: Path) -> None:
    spam = message_file(tmp_path, "s.eml", NEW_SPAM)
    before = onemessage.score_message(str(model), NEW_SPAM).log_odds
    assert learn(model, "spam", spam) == 0
    path = Path(journal.journal_path(str(model)))
    # The learn's record carries the message's log-odds as the pipe gave them before the learn.
    assert journal.read(str(model), onemessage.OneModel(str(model)).identity).history == [(before, 1)]
    score = before
    older = journal.Entry(b"\x02" * 16, None, 0, {"old": 1}).payload()  # as spamnb wrote records before scores
    assert b"s=" not in older and journal.Entry.parse(older).score is None
    ident = onemessage.OneModel(str(model)).identity
    fitted = journal.Fitted((0.25, -1.5), 0.999)
    journal.append(str(model), ident, journal.read(str(model), ident), [journal.Entry(b"\x02" * 16, None, 0, {"old": 1}), fitted])
    loaded = store.load(str(model))
    assert (loaded.scoring.calibration, loaded.scoring.spam_floor) == ((0.25, -1.5), 0.999)
    assert onemessage.OneModel(str(model)).scoring == loaded.scoring
    assert [s for s, _ in loaded.history][-1] == score  # the older record carries none
    # A scoring record cut short (its learner killed while writing) is skipped, as any record.
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    assert store.load(str(model)).scoring.calibration != (0.25, -1.5)
    with pytest.raises(ValueError):
        journal.Fitted.parse(b"scoring 0 1 0.5")  # a slope of 0 is no calibration


def test_a_refit_on_the_learn_path_needs_no_numpy(model: Path) -> None:
    """The learn that brings the calibration's history to a refit point refits it, without numpy."""
    loaded = store.load(str(model))
    loaded.history = [(-20.0 + i % 7, 0) for i in range(60)] + [(20.0 - i % 5, 1) for i in range(39)]
    store.save(loaded, str(model))
    learn_without_numpy(model, "spam", NEW_SPAM)
    after = store.load(str(model))
    assert len(after.history) == 100 and after.scoring.calibration != loaded.scoring.calibration
    assert journal.read(str(model), onemessage.OneModel(str(model)).identity).fitted is not None
