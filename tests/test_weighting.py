"""TF-IDF weighting and length normalisation (`nb.Weighting`, `--tf`, `--idf`, `--length-norm`):
scikit-learn's scores on the transformed counts, and every path a weighted model takes."""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.naive_bayes import ComplementNB, MultinomialNB
from sklearn.preprocessing import normalize

from spamnb.bayes import events, nb
from spamnb.mail.sources import read_labelled
from spamnb.models import journal, modelfile, store
from spamnb.models.model import Scoring
from spamnb.pipe import learnone, onemessage
from spamnb.run import classifier, merge, online
from spamnb.text.tokens import Tokenizer, TokenSettings
from tests.conftest import rows_of, run_cli
from tests.test_cli import assert_one_line_error, ok
from tests.test_nb import random_counts
from tests.test_onemessage import PIPE_MODULES

SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus"
SPAM, HAM = str(SAMPLE / "maildir" / "spam"), str(SAMPLE / "maildir" / "ham")
WEIGHTINGS = [nb.Weighting(tf, idf, norm) for tf, idf, norm in itertools.product(("presence", "log"), (False, True), ("none", "l2")) if (tf, idf, norm) != ("presence", False, "none")]
OPTIONS = ["--event", "complement", "--tf", "log", "--idf", "--length-norm", "l2"]


def transformed(X: np.ndarray, weighting: nb.Weighting, idf: np.ndarray, fixed: bool = False) -> np.ndarray:
    """The rows of X as the weighting takes them, by dense algebra: log(1 + tf) or presence,
    each row L2-normalised (`fixed`: rounded to multiples of 1 / nb.WEIGHT_SCALE, as learnt
    messages are counted), then times the idf."""
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    G = np.log1p(X) if weighting.tf == "log" else (X > 0).astype(np.float64)
    if weighting.norm == "l2":
        G = normalize(G, norm="l2")
    if fixed:
        G = np.rint(G * nb.WEIGHT_SCALE) / nb.WEIGHT_SCALE
    return G * idf if weighting.idf else G


@pytest.mark.parametrize("weighting", WEIGHTINGS, ids=str)
@pytest.mark.parametrize("alpha", [0.01, 1.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_scores_match_scikit_learn_on_the_transformed_counts(weighting: nb.Weighting, alpha: float, seed: int) -> None:
    X, y = random_counts(seed)
    X_test, _ = random_counts(seed + 100, n=30)
    counts = classifier.counts_of(rows_of(X), y, X.shape[1], weighting)
    # scikit-learn's smoothed idf, from the training messages' document frequencies.
    idf = TfidfTransformer(smooth_idf=True).fit(X).idf_
    np.testing.assert_allclose(weighting.idf_of(counts), idf, rtol=0, atol=1e-12)
    train = transformed(X, weighting, idf, fixed=True)
    for name, theirs in (("multinomial", MultinomialNB(alpha=alpha)), ("complement", ComplementNB(alpha=alpha, norm=True))):
        reference = theirs.fit(train, y)
        model = events.event_model(name, alpha, weighting)
        table, b = model.table(counts)
        for data in (X, X_test):
            jll = reference.predict_joint_log_proba(transformed(data, weighting, idf))
            ours = model.log_odds(table, b, rows_of(data))
            np.testing.assert_allclose(ours, jll[:, 1] - jll[:, 0], rtol=0, atol=1e-9)


def test_the_norm_takes_a_message_whole() -> None:
    """Tokens unknown to the model count in the scored message's norm (as in the learnt one's)."""
    weighting = nb.Weighting("log", False, "l2")
    X, y = random_counts(4)
    model = events.event_model("multinomial", 0.5, weighting)
    table, b = model.table(classifier.counts_of(rows_of(X), y, X.shape[1], weighting))
    known = nb.Rows(np.array([3, 7]), np.array([2, 1]), np.array([2]))
    with_unknown = nb.Rows(np.array([3, 7, -1]), np.array([2, 1, 4]), np.array([3]))
    g = np.log1p([2.0, 1.0])
    expected = b + (g / np.linalg.norm(g)) @ table[[3, 7]]
    assert model.log_odds(table, b, known)[0] == pytest.approx(expected, abs=1e-12)
    shrunk = b + (g / np.linalg.norm(np.log1p([2.0, 1.0, 4.0]))) @ table[[3, 7]]
    assert model.log_odds(table, b, with_unknown)[0] == pytest.approx(shrunk, abs=1e-12)


def weighted_scoring(event: str = "complement") -> Scoring:
    return Scoring(event=event, tf="log", idf=True, length_norm="l2")


def trained(path: Path, spam: list[str], ham: list[str], scoring: Scoring | None = None) -> store.Model:
    model = store.empty_model(TokenSettings(), scoring or weighted_scoring())
    classifier.learn(model, read_labelled(spam, ham, None))
    store.save(model, str(path))
    return model


def messages() -> list[bytes]:
    return [item.data for item in read_labelled([SPAM], [HAM], None)][::9]


def test_round_trip_and_every_scorer_agrees(tmp_path: Path) -> None:
    path = tmp_path / "m.npz"
    model = trained(path, [SPAM], [HAM])
    loaded, mapped = store.load(str(path)), store.load(str(path), scoring_only=True)
    assert mapped.scoring_only and loaded.scoring == mapped.scoring == model.scoring
    np.testing.assert_array_equal(loaded.counts.weighted, store.to_arrays(model)["weighted"])
    tokenize = Tokenizer(model.tokens)
    for data in messages():
        want = model.explain(tokenize(data)).log_odds
        assert loaded.explain(tokenize(data)).log_odds == pytest.approx(want, abs=1e-9)
        assert mapped.explain(tokenize(data)).log_odds == pytest.approx(want, abs=1e-9)
        # The pipe (classify --pipe): numpy's scorer takes a weighted model.
        assert onemessage.score_message(str(path), data).log_odds == pytest.approx(want, abs=1e-9)
    batch = [s.log_odds for s in classifier.classify(loaded, read_labelled([SPAM], [HAM], None))]
    assert batch[::9] == pytest.approx([model.explain(tokenize(d)).log_odds for d in messages()], abs=1e-9)


@pytest.mark.parametrize("event", ["multinomial", "complement"])
@pytest.mark.parametrize("weighting", [WEIGHTINGS[0], WEIGHTINGS[-1], nb.Weighting("log", True, "none")], ids=str)
def test_the_one_message_scorer_scores_as_numpy(tmp_path: Path, event: str, weighting: nb.Weighting) -> None:
    """`classify --pipe` without numpy: the weighted sums and the vocabulary's totals read from the file."""
    path = tmp_path / "m.npz"
    model = trained(path, [SPAM], [HAM], Scoring(event=event, tf=weighting.tf, idf=weighting.idf, length_norm=weighting.norm))
    one = onemessage.OneModel(str(path))
    assert one.weighted is not None
    tokenize = Tokenizer(model.tokens)
    for data in messages():
        assert one.log_odds_of(Counter(tokenize(data))) == pytest.approx(model.explain(tokenize(data)).log_odds, rel=1e-12, abs=1e-9)


def test_the_pipe_scores_a_weighted_model_without_numpy(tmp_path: Path) -> None:
    path = tmp_path / "m.npz"
    trained(path, [SPAM], [HAM])
    done = subprocess.run([sys.executable, "-c", PIPE_MODULES, str(path), messages()[0].decode()], capture_output=True, text=True, timeout=60, check=False)
    status, modules = done.stderr.split(" ", 1)
    assert status in ("0", "1", "2"), done.stderr
    assert "numpy" not in {m.split(".")[0] for m in modules.split()}


def test_single_message_train_leaves_a_weighted_model_to_the_full_learner(tmp_path: Path) -> None:
    """No journal (it holds no weighted sums): `learnone` hands the command line on."""
    path = tmp_path / "m.npz"
    one = tmp_path / "one.eml"
    one.write_bytes(messages()[0])
    trained(path, [SPAM], [HAM])
    assert learnone.main(["train", "-m", str(path), "--ham", str(one)]) is None
    assert not journal.read(str(path), onemessage.OneModel(str(path)).identity)


def test_a_model_without_its_weighted_sums_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "m.npz"
    arrays = store.to_arrays(trained(path, [SPAM], [HAM]))
    del arrays["weighted"]
    with open(path, "wb") as out:
        store.write_npz(out, arrays)
    with pytest.raises(modelfile.ModelError, match="a weighting without its weighted sums"):
        store.load(str(path))


@pytest.mark.parametrize("cls", [0, 1])
def test_negative_vocabulary_sums_are_a_damaged_model_on_the_pipe(tmp_path: Path, cls: int) -> None:
    """A vocabulary's weighted sum below zero (a damaged `weighted_totals`) is the pipe's one-line
    model error, not an internal error from a logarithm deep in scoring."""
    path = tmp_path / "m.npz"
    arrays = store.to_arrays(trained(path, [SPAM], [HAM]))
    arrays["weighted_totals"][cls, 0] = -arrays["weighted_totals"][cls, 0]
    with open(path, "wb") as out:
        store.write_npz(out, arrays)
    with pytest.raises(onemessage.ModelError, match="damaged spamnb model"):
        onemessage.score_message(str(path), messages()[0])


def test_signed_weighted_sums_are_named_as_such_on_the_pipe(tmp_path: Path) -> None:
    """The pipe refuses weighted sums stored signed (spamnb stores them unsigned) and says so,
    not that their shapes are wrong when they are right."""
    path = tmp_path / "m.npz"
    arrays = store.to_arrays(trained(path, [SPAM], [HAM]))
    arrays["weighted"] = arrays["weighted"].astype(np.int64)
    with open(path, "wb") as out:
        store.write_npz(out, arrays)
    with pytest.raises(onemessage.ModelError, match="weighted sums stored as signed numbers"):
        onemessage.OneModel(str(path))


def test_halves_merge_to_the_whole(tmp_path: Path) -> None:
    whole = trained(tmp_path / "whole.npz", [SPAM], [HAM])
    trained(tmp_path / "a.npz", [SPAM], [])
    trained(tmp_path / "b.npz", [], [HAM])
    ok("merge", "-q", "-m", tmp_path / "ab.npz", tmp_path / "a.npz", tmp_path / "b.npz")
    merged = store.load(str(tmp_path / "ab.npz"))
    left, right = store.to_arrays(merged), store.to_arrays(whole)
    for k in ("tokens", "tf", "df", "docs", "weighted", "weighted_totals"):
        np.testing.assert_array_equal(left[k], right[k])


def test_learning_one_at_a_time_and_forgetting_add_up(tmp_path: Path) -> None:
    """`train --ham FILE` into a weighted model (the full learner), then `--forget` it."""
    path = tmp_path / "m.npz"
    one = tmp_path / "one.eml"
    one.write_bytes(messages()[0])
    before = trained(path, [SPAM], [HAM])
    whole = store.to_arrays(trained(tmp_path / "whole.npz", [SPAM, str(one)], [HAM]))
    ok("train", "-q", "-m", path, "--spam", one)
    ok("train", "-q", "-m", path, "--spam", one, "--forget")
    ok("train", "-q", "-m", path, "--ham", one)
    ok("train", "-q", "-m", path, "--spam", one)  # moved back: as learnt with the rest
    got = store.to_arrays(store.load(str(path)))
    for k in ("tf", "df", "weighted", "weighted_totals"):
        np.testing.assert_array_equal(got[k], whole[k])
    assert got["docs"].sum() == before.counts.docs.sum()


@pytest.mark.parametrize("numeric", ["none", "gaussian"])
def test_online_over_a_loaded_model_scores_as_the_one_message_scorer(tmp_path: Path, numeric: str) -> None:
    """`eval --online` runs a weighted model on numpy (`online.Loaded`); unweighted, it gives
    what the one-message scorer gives on the same stream, numeric features (--meta) included."""
    items = list(read_labelled([SPAM], [HAM], None))[::3]
    items = items[::2] + items[1::2]
    scoring = Scoring(event="multinomial", meta=numeric)
    path = tmp_path / "empty.npz"
    store.save(store.empty_model(TokenSettings(), scoring), str(path))
    theirs = online.run(onemessage.OneModel(str(path)), items, False, None)
    ours = online.run(online.Loaded(store.load(str(path)), scoring), items, False, None)
    assert [s.log_odds for s in ours.scored] == pytest.approx([s.log_odds for s in theirs.scored], abs=1e-9)
    assert [s.verdict for s in ours.scored] == [s.verdict for s in theirs.scored]
    result = json.loads(ok("eval", "-q", "--online", "--spam", SPAM, "--ham", HAM, "--json", *OPTIONS).stdout)
    assert result["messages"] == 110 and result["auc"] > 0.9


@pytest.mark.parametrize("event", ["fisher", "bernoulli"])
@pytest.mark.parametrize("command", ["train", "eval"])
def test_other_event_models_refused(tmp_path: Path, event: str, command: str) -> None:
    result = run_cli(command, *(["-m", tmp_path / "m.npz"] if command == "train" else []), "--spam", SPAM, "--ham", HAM, "--event", event, "--tf", "log")
    assert_one_line_error(result, "multinomial, complement", event)
    assert result.exit_code == 2
    assert not (tmp_path / "m.npz").exists()


def test_a_weighting_does_not_change_on_a_trained_model(tmp_path: Path) -> None:
    path = tmp_path / "m.npz"
    ok("train", "-q", "-m", path, "--spam", SPAM, "--ham", HAM, *OPTIONS)
    result = run_cli("train", "-m", path, "--spam", SPAM, "--no-idf")
    assert_one_line_error(result, "--tf log --idf --length-norm l2", "train a new model")
    assert result.exit_code == 2


def test_merge_refuses_mixed_weightings(tmp_path: Path) -> None:
    ok("train", "-q", "-m", tmp_path / "a.npz", "--spam", SPAM, "--ham", HAM, *OPTIONS)
    ok("train", "-q", "-m", tmp_path / "b.npz", "--spam", SPAM, "--ham", HAM, "--event", "complement")
    result = run_cli("merge", "-m", tmp_path / "a.npz", tmp_path / "b.npz")
    assert_one_line_error(result, "--tf presence --no-idf --length-norm none", "cannot be added")
    assert result.exit_code == 3
    with pytest.raises(merge.MergeError):
        merge.check_settings(["a", "b"], [store.load(str(tmp_path / n)) for n in ("a.npz", "b.npz")])


def test_eval_folds_with_a_weighting() -> None:
    plain = json.loads(ok("eval", "-q", "--spam", SPAM, "--ham", HAM, "--json", "--event", "complement").stdout)
    weighted = json.loads(ok("eval", "-q", "--spam", SPAM, "--ham", HAM, "--json", *OPTIONS).stdout)
    assert weighted["messages"] == plain["messages"] == 110
    assert weighted["auc"] != plain["auc"]
