"""The numeric features' term (spamnb.bayes.meta, `--meta`): scikit-learn's Gaussian naive Bayes
and linear discriminant on the same features, the same score on every path that scores a
message, and sums that add and subtract exactly (learn, forget, merge, journal)."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.naive_bayes import GaussianNB

from spamnb.bayes import meta
from spamnb.mail.sources import Message, read_source
from spamnb.models import journal, modelfile, store
from spamnb.models.model import Scoring, fit_meta_weight
from spamnb.pipe import onemessage
from spamnb.run import classifier
from spamnb.text.tokens import FEATURE_SCALE, Tokenizer, TokenSettings
from tests.conftest import make_mail, run_cli

SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus" / "maildir"


def sample_items() -> list[Message]:
    return [*read_source(str(SAMPLE / "spam"), "spam"), *read_source(str(SAMPLE / "ham"), "ham")]


def features(items: list[Message]) -> tuple[np.ndarray, np.ndarray]:
    """The sample's numeric features (fixed point) and classes, as the tokeniser reads them."""
    tokenize = Tokenizer()
    rows = []
    for item in items:
        rows.append(tokenize.read(item.data, True)[1])
    return np.array(rows, dtype=np.int64), np.array([classifier.LABEL_CLASS[i.label] for i in items])  # type: ignore[index]


def test_the_diagonal_gaussians_are_scikit_learns() -> None:
    q, y = features(sample_items())
    x = q / FEATURE_SCALE
    # With GaussianNB's own smoothing (and none of ours toward the pooled variances).
    gaussians = meta.Gaussians("gaussian", classifier.moments_of(q, y).tolist(), smoothing=1e-9, prior=0)
    sk = GaussianNB(var_smoothing=1e-9).fit(x, y)
    joint = sk.predict_joint_log_proba(x)
    prior = np.log(sk.class_prior_[1]) - np.log(sk.class_prior_[0])
    want = joint[:, 1] - joint[:, 0] - prior
    got = classifier.log_ratios(gaussians, q)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_gda_is_scikit_learns_linear_discriminant() -> None:
    q, y = features(sample_items())
    x = q / FEATURE_SCALE
    gaussians = meta.Gaussians("gda", classifier.moments_of(q, y).tolist(), smoothing=0, prior=0)
    lda = LinearDiscriminantAnalysis(solver="lsqr").fit(x, y)
    want = lda.decision_function(x) - (np.log(lda.priors_[1]) - np.log(lda.priors_[0]))
    np.testing.assert_allclose(classifier.log_ratios(gaussians, q), want, rtol=1e-9, atol=1e-9)


def test_the_smoothing_keeps_a_feature_one_class_shares_finite() -> None:
    # Every ham has one recipient: unsmoothed, a second would weigh without bound.
    rng = np.random.default_rng(0)
    q = rng.integers(0, 8 * FEATURE_SCALE, size=(200, meta.WIDTH - 1))
    y = np.arange(200) % 2
    q[y == 0, 2] = round(FEATURE_SCALE * np.log1p(1))
    moments = classifier.moments_of(q, y).tolist()
    odd = q[0].copy()
    odd[2] = round(FEATURE_SCALE * np.log1p(2))
    assert abs(meta.Gaussians("gaussian", moments, smoothing=1e-9, prior=0).contributions(odd.tolist())[2]) > 1000
    assert abs(meta.Gaussians("gaussian", moments).contributions(odd.tolist())[2]) < 10


@pytest.mark.parametrize("kind", ["gaussian", "gda"])
def test_features_all_alike_say_nothing(kind: str) -> None:
    moments = meta.empty_moments()
    for cls in (0, 1, 0, 1, 0, 1):
        meta.add_message(moments, cls, [100] * (meta.WIDTH - 1))
    assert meta.Gaussians(kind, moments).log_ratio([200] * (meta.WIDTH - 1)) == 0.0


def test_too_few_messages_say_nothing() -> None:
    moments = meta.empty_moments()
    meta.add_message(moments, 1, [1] * (meta.WIDTH - 1))
    meta.add_message(moments, 0, [2] * (meta.WIDTH - 1))
    assert meta.Gaussians("gaussian", moments).log_ratio([5] * (meta.WIDTH - 1)) == 0.0


def test_the_weight_is_what_the_features_add_to_the_words() -> None:
    rng = np.random.default_rng(3)
    y = np.arange(2000) % 2 == 1
    # Log-odds in which a unit is worth 4/9 of a nat, and a feature whose unit is worth 8/9: w = 2.
    words = np.where(y, 2.0, -2.0) + rng.normal(0, 3, 2000)
    informative = np.where(y, 1.0, -1.0) + rng.normal(0, 1.5, 2000)
    noise = rng.normal(0, 1.5, 2000)
    assert fit_meta_weight(words, informative, y) == pytest.approx(2.0, abs=0.3)
    assert fit_meta_weight(words, noise, y) < 0.3
    assert fit_meta_weight(words, -informative, y) == 0.0


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=4000))
def test_features_of_any_bytes(data: bytes) -> None:
    _, q = Tokenizer().read(data, True)
    assert q is not None and len(q) == meta.WIDTH - 1 and all(isinstance(v, int) and v >= 0 for v in q)


def test_the_features_say_what_they_measure() -> None:
    mail = make_mail(
        body="BUY NOW http://a.example/x and https://b.example/y",
        to="a@example.org, b@example.org",
        headers=[("Cc", "c@example.org")],
        html="<p>BUY</p>",
    )
    _, q = Tokenizer().read(mail, True)
    assert q is not None
    value = dict(zip(meta.NAMES, (v / FEATURE_SCALE for v in q), strict=True))
    assert value["recipients"] == pytest.approx(np.log1p(3), abs=1e-3)
    assert value["links"] == pytest.approx(np.log1p(2), abs=1e-3)
    assert 0 < value["html share"] < 0.5
    assert value["capitals share"] == pytest.approx(9 / 39, abs=1e-3)  # BUY NOW, BUY; the links' letters count


@pytest.fixture(scope="module", params=[("gaussian", {}), ("gda", {"event": "multinomial", "tf": "log", "idf": True, "length_norm": "l2"})], ids=["gaussian", "gda-tfidf"])
def trained(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    kind, scoring = request.param
    path = tmp_path_factory.mktemp("meta") / "model.npz"
    model = store.empty_model(TokenSettings(), Scoring(meta=kind, **scoring))
    classifier.learn(model, sample_items())
    # Whatever weight the sample's few messages fit, every path must apply the same one.
    model.scoring = model.scoring.replace(meta_weight=0.5)
    store.save(model, str(path))
    return str(path), kind


def test_a_saved_model_keeps_its_term(trained: tuple[str, str]) -> None:
    path, kind = trained
    model = store.load(path)
    q, y = features(sample_items())
    assert model.scoring.meta == kind
    assert (model.moments == classifier.moments_of(q, y)).all()
    assert (store.load(path, scoring_only=True).moments == model.moments).all()


def test_every_path_scores_the_term_alike(trained: tuple[str, str]) -> None:
    path, _ = trained
    model = store.load(path)
    items = sample_items()
    plain = store.load(path)
    plain.scoring = plain.scoring.replace(meta="none")
    batch = list(classifier.classify(model, items))
    without = list(classifier.classify(plain, items))
    assert any(abs(a.log_odds - b.log_odds) > 0.1 for a, b in zip(batch, without, strict=True))
    tokenize = Tokenizer(model.tokens)
    for item, scored in zip(items, batch, strict=True):
        verdict = onemessage.score_message(path, item.data)
        assert verdict.log_odds == pytest.approx(scored.log_odds, rel=1e-9, abs=1e-12), item.id
        assert verdict.verdict == scored.verdict
        explained = model.explain(*tokenize.read(item.data, True))
        assert explained.log_odds == pytest.approx(scored.log_odds, rel=1e-9, abs=1e-9)
        assert len(explained.numeric_terms) == meta.WIDTH - 1


def test_the_halves_merged_are_the_whole(trained: tuple[str, str], tmp_path: Path) -> None:
    path, kind = trained
    items = sample_items()
    for half, part in (("a", items[::2]), ("b", items[1::2])):
        model = store.empty_model(TokenSettings(), Scoring(meta=kind))
        classifier.learn(model, part)
        store.save(model, str(tmp_path / f"{half}.npz"))
    result = run_cli("merge", "-m", tmp_path / "a.npz", tmp_path / "b.npz")
    assert result.exit_code == 0, result.output
    merged, whole = store.load(str(tmp_path / "a.npz")), store.load(path)
    assert (merged.moments == whole.moments).all()
    q = [3000] * (meta.WIDTH - 1)
    assert meta.Gaussians(kind, merged.moments.tolist()).log_ratio(q) == meta.Gaussians(kind, whole.moments.tolist()).log_ratio(q)


def test_forgetting_takes_the_features_off_exactly(trained: tuple[str, str]) -> None:
    path, _ = trained
    model = store.load(path)
    items = sample_items()
    before = model.moments.copy()
    classifier.learn(model, items[:7], forget=True)
    classifier.learn(model, items[:7])
    assert (model.moments == before).all()


def test_a_journalled_learn_counts_the_features(trained: tuple[str, str], tmp_path: Path) -> None:
    from spamnb.pipe import learnone

    _, kind = trained
    items = sample_items()
    path = tmp_path / "model.npz"
    model = store.empty_model(TokenSettings(), Scoring(meta=kind))
    classifier.learn(model, items[1:])
    store.save(model, str(path))
    rest = model.moments.copy()
    message = tmp_path / "one.eml"
    message.write_bytes(items[0].data)
    assert learnone.learn(str(path), [(items[0].label, str(message))], forget=False, quiet=True) == 0  # type: ignore[arg-type]
    assert os.path.exists(journal.journal_path(str(path)))
    _, q0 = Tokenizer().read(items[0].data, True)
    assert (store.load(str(path)).moments == rest + classifier.moments_of(np.array([q0]), np.array([classifier.LABEL_CLASS[items[0].label]]))).all()  # type: ignore[index]
    one = onemessage.OneModel(str(path))
    tokens, q = Tokenizer().read(items[2].data, True)
    assert one.log_odds_of(Counter(tokens), numeric=q) == pytest.approx(store.load(str(path)).explain(tokens, q).log_odds, rel=1e-9)
    assert learnone.learn(str(path), [(items[0].label, str(message))], forget=True, quiet=True) == 0  # type: ignore[arg-type]
    assert (store.load(str(path)).moments == rest).all()


def test_eval_cross_validates_and_runs_online_with_the_term() -> None:
    index = SAMPLE.parent / "index"
    for extra in ((), ("--online",)):
        scored = {}
        for kind in ("none", "gda"):
            result = run_cli("eval", "-q", "--index", index, "--meta", kind, "--json", *extra)
            assert result.exit_code == 0, result.output
            scored[kind] = json.loads(result.output)["brier"]
        assert scored["gda"] != scored["none"]


def test_refusals(trained: tuple[str, str], tmp_path: Path) -> None:
    path, kind = trained
    other = "gda" if kind == "gaussian" else "gaussian"
    changed = run_cli("train", "-q", "-m", path, "--meta", other, "--ham", SAMPLE / "ham")
    assert changed.exit_code == 2 and "--meta" in changed.output
    plain = tmp_path / "plain.npz"
    model = store.empty_model(TokenSettings(), store.load(path).scoring.replace(meta="none"))
    classifier.learn(model, sample_items()[:40])
    store.save(model, str(plain))
    mixed = run_cli("merge", "-m", plain, path)
    assert mixed.exit_code == 3 and "--meta" in mixed.output


def test_a_model_without_the_term_is_saved_as_before(tmp_path: Path) -> None:
    model = store.empty_model(TokenSettings(), Scoring())
    classifier.learn(model, sample_items())
    arrays = store.to_arrays(model)
    assert "meta" not in arrays and "meta" not in json.loads(str(arrays["scoring"][()]))
    path = tmp_path / "plain.npz"
    store.save(model, str(path))
    assert store.load(str(path)).scoring.meta == "none"
    assert onemessage.OneModel(str(path)).scoring.meta == "none"


def test_inspect_shows_the_term(trained: tuple[str, str]) -> None:
    path, _ = trained
    info = json.loads(run_cli("inspect", "-m", path, "--json").output)
    assert list(info["numeric_features"]) == list(meta.NAMES)
    message = next(iter(sorted((SAMPLE / "spam" / "cur").iterdir())))
    result = run_cli("inspect", "-m", path, "--explain", message, "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert [r["feature"] for r in shown["numeric_features"]] == list(meta.NAMES)
    parts = [r["contribution"] for r in (*shown["tokens"], *shown["numeric_features"])]
    assert sum(parts) + shown["rest"] == pytest.approx(shown["logit"], abs=1e-9)


def test_negative_moments_are_damaged_on_the_pipe_too(trained: tuple[str, str], tmp_path: Path) -> None:
    """A class's moments of a negative message count: every command refuses the model, so the
    pipe (and the single-message learner, which opens it alike) must not stamp with it."""
    path, _ = trained
    arrays = store.to_arrays(store.load(path))
    arrays["meta"] = arrays["meta"].copy()
    arrays["meta"][0] = -arrays["meta"][0]
    damaged = tmp_path / "damaged.npz"
    with open(damaged, "wb") as out:
        store.write_npz(out, arrays)
    for load in (store.load, onemessage.OneModel):
        with pytest.raises(modelfile.ModelError, match="negative messages or squares"):
            load(str(damaged))


def test_moments_no_mail_could_have_are_a_damaged_model(trained: tuple[str, str], tmp_path: Path) -> None:
    path, _ = trained
    arrays = store.to_arrays(store.load(path))
    arrays["meta"] = arrays["meta"].copy()
    arrays["meta"][0, 1, 2] = arrays["meta"][0, 2, 1] = 10**15  # a covariance no mail gives
    damaged = tmp_path / "damaged.npz"
    with open(damaged, "wb") as out:
        store.write_npz(out, arrays)
    for load in (store.load, lambda p: store.load(p, scoring_only=True), onemessage.OneModel):
        with pytest.raises(modelfile.ModelError, match="damaged spamnb model"):
            load(str(damaged))


@pytest.mark.parametrize("settings", ["gda", "none"])
def test_moments_and_the_meta_setting_come_together(trained: tuple[str, str], tmp_path: Path, settings: str) -> None:
    """A model saved with --meta holds the moments and one without does not: either
    without the other is damage on every load path, not a model of nothing learnt."""
    path, _ = trained
    arrays = store.to_arrays(store.load(path))
    scoring = json.loads(str(arrays["scoring"][()]))
    if settings == "gda":
        del arrays["meta"]
        scoring["meta"] = "gda"
    else:
        scoring.pop("meta", None)
        scoring.pop("meta_weight", None)
    arrays["scoring"] = np.array(json.dumps(scoring))
    damaged = tmp_path / "damaged.npz"
    with open(damaged, "wb") as out:
        store.write_npz(out, arrays)
    for load in (store.load, lambda p: store.load(p, scoring_only=True), onemessage.OneModel):
        with pytest.raises(modelfile.ModelError, match=r"damaged spamnb model.*moments"):
            load(str(damaged))
