"""`spamnb merge`: model files add up to the model of all their mail, each message once."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spamnb.bayes import nb
from spamnb.models.model import Model, Scoring
from spamnb.run.merge import mean_calibration
from tests.conftest import Corpus, fake_corpus, make_mail, run_cli, write_files
from tests.test_cli import assert_one_line_error, json_lines, ok

ARRAYS = ("tokens", "tf", "df", "docs", "learnt", "learnt_class", "settings")


def arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as npz:
        return {k: npz[k] for k in ARRAYS}


def assert_same_counts(a: Path, b: Path) -> None:
    left, right = arrays(a), arrays(b)
    for k in ARRAYS:
        assert np.array_equal(left[k].astype(np.int64) if left[k].dtype.kind == "u" else left[k], right[k].astype(np.int64) if right[k].dtype.kind == "u" else right[k]), k


def scores(model: Path, *sources: Path) -> list[dict[str, object]]:
    return json_lines(ok("classify", "--json", "-m", model, *sources))


def split_corpus(corpus: Corpus, tmp_path: Path, cut: slice, name: str) -> tuple[Path, Path]:
    spam = write_files(tmp_path / name / "spam", corpus.spam[cut])
    ham = write_files(tmp_path / name / "ham", corpus.ham[cut])
    return spam[0].parent, ham[0].parent


def train(path: Path, spam: Path, ham: Path, *options: str) -> Path:
    ok("train", "-m", path, "--spam", spam, "--ham", ham, *options)
    return path


@pytest.fixture
def whole(corpus: Corpus, tmp_path: Path) -> Path:
    return train(tmp_path / "whole.npz", corpus.spam_mbox, corpus.ham_mbox)


def test_two_halves_merge_to_the_model_of_the_whole(corpus: Corpus, tmp_path: Path, whole: Path) -> None:
    a = train(tmp_path / "a.npz", *split_corpus(corpus, tmp_path, slice(0, 6), "a"))
    b = train(tmp_path / "b.npz", *split_corpus(corpus, tmp_path, slice(6, None), "b"))
    merged = tmp_path / "merged.npz"
    result = ok("merge", "-m", merged, a, b)
    assert "added 24 messages" in result.stderr
    assert_same_counts(merged, whole)
    got, want = scores(merged, corpus.spam_mbox, corpus.ham_mbox), scores(whole, corpus.spam_mbox, corpus.ham_mbox)
    assert [g["log_odds"] for g in got] == [w["log_odds"] for w in want]
    # The calibration is the halves' mean, not a refit on the whole: close, not equal.
    assert max(abs(float(g["score"]) - float(w["score"])) for g, w in zip(got, want, strict=True)) < 0.05
    # Merging into an existing model adds to it: the same result.
    ok("merge", "-m", a, b)
    assert_same_counts(a, whole)


def test_overlap_is_refused_without_the_mail_and_counted_once_with_it(corpus: Corpus, tmp_path: Path, whole: Path) -> None:
    a = train(tmp_path / "a.npz", *split_corpus(corpus, tmp_path, slice(0, 8), "a"))
    b = train(tmp_path / "b.npz", *split_corpus(corpus, tmp_path, slice(4, None), "b"))
    before = a.read_bytes()
    refused = run_cli("merge", "-m", a, b)
    assert_one_line_error(refused, "8 messages were learnt in more than one model", "give it with --messages SRC")
    assert "were given" not in refused.stderr  # no mail was given: the error must not say so
    assert a.read_bytes() == before  # nothing written
    # Mail lacking some of them is refused too.
    part = write_files(tmp_path / "part", corpus.spam[4:6])[0].parent
    assert_one_line_error(run_cli("merge", "-m", a, b, "--messages", part), "6 of them are not among the --messages")
    assert a.read_bytes() == before
    result = ok("merge", "-m", a, b, "--messages", corpus.spam_mbox, "--messages", corpus.ham_maildir)
    assert "added 8 messages" in result.stderr and "8 learnt in more than one counted once" in result.stderr
    assert_same_counts(a, whole)
    assert [s["log_odds"] for s in scores(a, corpus.spam_mbox)] == [s["log_odds"] for s in scores(whole, corpus.spam_mbox)]


def test_a_copy_learnt_under_the_older_digest_counts_once(tmp_path: Path) -> None:
    from spamnb.mail import headers
    from spamnb.models import store

    mails = [b"Received: from relay%d.example.net by mx.example.org\n" % i + make_mail(f"note {i}", f"words {i} and more words") for i in range(6)]
    folder = write_files(tmp_path / "mail", mails)[0].parent
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    for model in (a, b):
        ok("train", "-q", "-m", model, "--ham", folder)
    # a as a model trained before the digest left out the transport fields holds them
    old = store.load(str(a), growable=True)
    old.learnt = {headers.legacy_digests(m, old.tokens.max_bytes)[1]: nb.HAM for m in mails}
    assert not old.learnt.keys() & store.load(str(b)).learnt.keys()
    store.save(old, str(a))
    result = ok("merge", "-m", a, b, "--messages", folder)
    assert "6 learnt in more than one counted once" in result.stderr
    merged = store.load(str(a))
    assert merged.counts.docs.tolist() == [6, 0] and len(merged.learnt) == 6
    assert "already known 6" in ok("train", "-m", a, "--ham", folder).stderr


def test_a_message_learnt_as_both_classes_is_a_conflict_until_a_side_is_chosen(corpus: Corpus, tmp_path: Path) -> None:
    spam, ham = split_corpus(corpus, tmp_path, slice(None), "all")
    turncoat = next(spam.iterdir())
    a = train(tmp_path / "a.npz", spam, ham)
    b = tmp_path / "b.npz"
    ok("train", "-m", b, "--ham", turncoat)
    extra = write_files(tmp_path / "extra", fake_corpus(("meeting", "agenda"), 3, seed=9))[0].parent
    ok("train", "-m", b, "--ham", extra)
    assert_one_line_error(run_cli("merge", "-m", a, b, "--messages", turncoat), "1 messages were learnt as different classes", "as spam in", str(a), str(b), "--prefer")
    # As ham: the same as learning it as ham beside the rest.
    want = train(tmp_path / "want.npz", spam, ham)
    ok("train", "-m", want, "--ham", turncoat)  # moves it
    ok("train", "-m", want, "--ham", extra)
    result = ok("merge", "-m", a, b, "--prefer", "ham", "--messages", turncoat)
    assert "(1 kept as ham)" in result.stderr
    assert_same_counts(a, want)


def test_models_of_different_tokenisers_are_refused(corpus: Corpus, tmp_path: Path, whole: Path) -> None:
    pairs = train(tmp_path / "pairs.npz", corpus.spam_mbox, corpus.ham_mbox, "--ngram", "2")
    before = whole.read_bytes()
    result = run_cli("merge", "-m", whole, pairs)
    assert result.exit_code == 3
    assert_one_line_error(result, "tokeniser settings", "cannot be added")
    assert whole.read_bytes() == before


@pytest.mark.parametrize("case", ["twice", "self", "missing", "no-other"])
def test_bad_merges_are_one_line_errors(case: str, whole: Path, tmp_path: Path) -> None:
    args = {
        "twice": ("merge", "-m", tmp_path / "new.npz", whole, whole),
        "self": ("merge", "-m", whole, whole),
        "missing": ("merge", "-m", whole, tmp_path / "nowhere.npz"),
        "no-other": ("merge", "-m", whole),
    }[case]
    result = run_cli(*args)
    assert_one_line_error(result)
    assert result.exit_code == (3 if case == "missing" else 2)
    assert not (tmp_path / "new.npz").exists()


def test_merge_into_a_new_model_copies_settings_and_scoring(whole: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.npz"
    ok("merge", "-m", fresh, whole)
    assert_same_counts(fresh, whole)
    with np.load(fresh) as a, np.load(whole) as b:
        assert json.loads(str(a["scoring"])) == json.loads(str(b["scoring"]))


def part(docs: tuple[int, int], calibration: tuple[float, float], event: str = "fisher", floor: float = 0.0) -> Model:
    counts = nb.Counts(np.array(docs, np.int64), np.zeros((2, 0), np.int64), np.zeros((2, 0), np.int64))
    return Model(scoring=Scoring(event=event, calibration=calibration, spam_floor=floor), counts=counts)


def test_calibration_is_the_mean_weighted_by_messages_of_the_parts_that_fitted_one() -> None:
    from spamnb.run.merge import MergeReport

    report = MergeReport()
    parts = [
        part((0, 0), (1.0, 0.0)),
        part((30, 10), (9.0, 9.0), floor=0.9),
        part((30, 30), (2.0, -1.0), floor=0.99),
        part((60, 60), (0.5, 2.0), floor=0.3),
        part((100, 100), (7.0, 7.0), "multinomial", floor=0.5),
    ]
    fitted = mean_calibration(parts, parts[0], report)
    # Too few spam (10) in the second part to have fitted; the last scores otherwise.
    assert report.calibrations == 2
    assert fitted["calibration"] == pytest.approx(((60 * 2.0 + 120 * 0.5) / 180, (60 * -1.0 + 120 * 2.0) / 180))
    assert fitted["spam_floor"] == pytest.approx((60 * 0.99 + 120 * 0.3) / 180)
    assert mean_calibration(parts[:2], parts[0], report) == {"calibration": (1.0, 0.0), "spam_floor": 0.0}

