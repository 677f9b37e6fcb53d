"""The one-message scorer without numpy (spamnb.pipe.onemessage, spamnb.models.npzview): the same
log-odds and verdict as batch classify, and no numpy on the pipe's path."""
from __future__ import annotations

import io
import itertools
import math
import os
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spamnb.bayes import events, formulas, nb
from spamnb.bayes.chi2 import log_chi2_tails
from spamnb.bayes.sortedtokens import blob_offsets
from spamnb.bayes.vocabulary import token_offsets
from spamnb.mail.sources import Message, read_source
from spamnb.models import modelfile, npzview, store
from spamnb.models.model import Model, Scoring
from spamnb.pipe import onemessage
from spamnb.run import classifier
from spamnb.text.tokens import Tokenizer, TokenSettings
from tests.test_pipe import HAM_MAIL, MESSAGES, SPAM_MAIL, SPAMNB, build_model, small_model

SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus" / "maildir"
# Summed in another order than numpy sums them: equal to rounding.
RELATIVE = 1e-9


def test_batch_and_the_pipe_have_the_same_event_models() -> None:
    """One registry: each batch event model is the formulas' class of its name, which the pipe scores with."""
    assert set(events.EVENT_MODELS) == set(formulas.EVENTS)
    for name, cls in events.EVENT_MODELS.items():
        assert issubclass(cls, formulas.EVENTS[name])
    assert nb.bucket_edges().tolist() == formulas.EDGES


def test_an_event_model_without_its_formulas_is_refused() -> None:
    class Other(events.Linear):
        name = "other"

    with pytest.raises(ValueError, match="unknown event model 'other'"):
        events.register(Other)
    assert "other" not in events.EVENT_MODELS


def learnt(folder: Path, event: str, tokens: TokenSettings | None = None) -> tuple[Model, str]:
    model = store.empty_model(tokens or TokenSettings(), Scoring(event=event))
    items = [*read_source(str(SAMPLE / "spam"), "spam"), *read_source(str(SAMPLE / "ham"), "ham")]
    classifier.learn(model, items)
    path = str(folder / f"{event}.npz")
    store.save(model, path)
    return store.load(path), path


@pytest.mark.parametrize(
    "event, tokens",
    [("fisher", None), ("multinomial", None), ("bernoulli", None), ("fisher", TokenSettings(ngram=2, stopwords=True))],
    ids=["fisher", "multinomial", "bernoulli", "fisher-bigrams-stopwords"],
)
def test_every_sample_message_scores_as_batch_classify_scores_it(tmp_path: Path, event: str, tokens: TokenSettings | None) -> None:
    model, path = learnt(tmp_path, event, tokens)
    one = onemessage.OneModel(path)
    resident = onemessage.open_model(path, resident=True)
    tokenize = Tokenizer(model.tokens)
    items = [*read_source(str(SAMPLE / "spam")), *read_source(str(SAMPLE / "ham"))]
    batch = list(classifier.classify(model, items))
    assert len(batch) == len(items) > 100
    for item, scored in zip(items, batch, strict=True):
        log_odds = one.log_odds_of(Counter(tokenize(item.data)))
        assert log_odds == pytest.approx(scored.log_odds, rel=RELATIVE, abs=1e-12), item.id
        verdict = onemessage.score_message(path, item.data)
        assert (verdict.score, verdict.verdict) == (pytest.approx(scored.score, rel=RELATIVE, abs=1e-15), scored.verdict)
        # A resident model (`spamnb serve`: each token's entry kept) is the same scorer, bit for bit.
        assert onemessage.verdict_of(resident, item.data, reasons=5) == onemessage.verdict_of(one, item.data, reasons=5), item.id


def test_a_field_of_more_unknown_words_than_kept_scores_as_batch_classify_scores_it(tmp_path: Path) -> None:
    """Fisher keeps the neutral sums of up to NEUTRAL_KEPT unknown tokens of a field; beyond, they are added on."""
    model, path = learnt(tmp_path, "fisher")
    words = ["q" + "".join(letters) for letters in itertools.product("bcdfghjklm", repeat=4)]
    for n in (formulas.NEUTRAL_KEPT - 1, formulas.NEUTRAL_KEPT + 700):
        data = ("Subject: offer\n\nfree money now " + " ".join(words[:n]) + "\n").encode()
        (scored,) = classifier.classify(model, [Message("m", data)])
        for opened in (onemessage.OneModel(path), onemessage.open_model(path, resident=True)):
            assert onemessage.verdict_of(opened, data).log_odds == pytest.approx(scored.log_odds, rel=RELATIVE, abs=1e-12), n


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60) | st.lists(st.sampled_from([b"", b"\n", b"a", b"\xc3\xa9"]), max_size=30).map(b"".join))
def test_the_offsets_found_in_a_token_blob_are_the_ones_store_writes(blob: bytes) -> None:
    """The pipe's reading of a model without an `offsets` member (and a resident model's check of it)."""
    assert blob_offsets(blob) == token_offsets(blob).tolist()


class Laplace(formulas.Multinomial):
    """An event model that is not spamnb's: the multinomial with Laplace's alpha."""

    name = "laplace"
    default_alpha = 1.0


class LaplaceBatch(Laplace, events.Multinomial):
    pass


def test_the_pipe_scores_a_new_event_model_as_batch_classify_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Registered once in formulas and once for batches, an event model is served by the pipe unchanged."""
    monkeypatch.setitem(formulas.EVENTS, "laplace", Laplace)
    monkeypatch.setitem(events.EVENT_MODELS, "laplace", LaplaceBatch)
    model, path = learnt(tmp_path, "laplace")
    assert model.scoring.event_model().alpha == 1.0
    items = [*read_source(str(SAMPLE / "spam")), *read_source(str(SAMPLE / "ham"))][::5]
    for item, scored in zip(items, classifier.classify(model, items), strict=True):
        verdict = onemessage.score_message(path, item.data)
        assert verdict.log_odds == pytest.approx(scored.log_odds, rel=RELATIVE, abs=1e-12), item.id
    multinomial = onemessage.score_message(learnt(tmp_path, "multinomial")[1], items[0].data)
    assert onemessage.score_message(path, items[0].data).log_odds != pytest.approx(multinomial.log_odds, rel=1e-3)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Model, str]]:
    """A small model of each event model, from the sample's first messages of each class."""
    folder = tmp_path_factory.mktemp("models")
    spam = [m.data for m in read_source(str(SAMPLE / "spam"))][:20]
    ham = [m.data for m in read_source(str(SAMPLE / "ham"))][:20]
    out = {}
    for event in events.EVENT_MODELS:
        path = build_model(folder / f"{event}.npz", spam, ham)
        model = store.load(str(path))
        model.scoring = Scoring(event=event)
        store.save(model, str(path))
        out[event] = (store.load(str(path)), str(path))
    return out


@settings(max_examples=60, deadline=None)
@given(data=MESSAGES, event=st.sampled_from(sorted(events.EVENT_MODELS)))
def test_any_message_scores_as_batch_classify_scores_it(models: dict[str, tuple[Model, str]], data: bytes, event: str) -> None:
    model, path = models[event]
    (scored,) = classifier.classify(model, [Message("m", data)])
    verdict = onemessage.score_message(path, data)
    assert verdict.log_odds == pytest.approx(scored.log_odds, rel=RELATIVE, abs=1e-12)
    assert verdict.verdict == scored.verdict


@settings(max_examples=300, deadline=None)
@given(chi=st.floats(0, 5000, allow_nan=False), n=st.integers(0, 600))
def test_the_vectorised_chi_square_tails_are_the_scalar_ones(chi: float, n: int) -> None:
    log_q, log_p = log_chi2_tails(np.array([chi]), np.array([n]))
    ours = formulas.log_chi2_tails(chi, n)
    for mine, theirs in zip(ours, (log_q[0], log_p[0]), strict=True):
        if math.isinf(theirs):
            assert mine == theirs
        else:
            assert mine == pytest.approx(theirs, rel=1e-10, abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(
    dtype=st.sampled_from(["<u1", "<u2", "<u4", "<u8", ">u2", ">u4", "<i8", ">i8", "<f8", ">f8"]),
    shape=st.sampled_from([(0,), (1,), (7,), (2, 5), (2, 1)]),
    fortran=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_arrays_read_without_numpy_are_numpys(tmp_path_factory: pytest.TempPathFactory, dtype: str, shape: tuple[int, ...], fortran: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":  # the weighted models' vocabulary sums
        values = (rng.standard_normal(shape) * 1e6).astype(dtype)
    else:
        top = np.iinfo(np.dtype(dtype)).max
        values = rng.integers(0, top, size=shape, dtype=np.dtype(dtype).newbyteorder("="), endpoint=True).astype(dtype)
    if fortran:
        values = np.asfortranarray(values)
    path = tmp_path_factory.mktemp("npz") / "a.npz"
    with zipfile.ZipFile(path, "w") as archive, archive.open("a.npy", "w") as member:
        np.lib.format.write_array(member, values, allow_pickle=False)
    _, arrays = npzview.open_members(str(path), ("a",))
    array = arrays["a"]
    assert array.shape == values.shape
    order = "F" if array.fortran else "C"
    assert list(array.items()) == values.ravel(order=order).tolist()


def test_a_compressed_model_is_scored_by_the_full_loader(model: Path, tmp_path: Path) -> None:
    packed = tmp_path / "packed.npz"
    with zipfile.ZipFile(model) as src, zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as out:
        for name in src.namelist():
            out.writestr(name, src.read(name))
    with pytest.raises(npzview.NotPlain):
        onemessage.OneModel(str(packed))
    assert onemessage.score_message(str(packed), SPAM_MAIL) == onemessage.score_message(str(model), SPAM_MAIL)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_model(tmp_path_factory.mktemp("model"))


def test_an_untrained_class_is_a_model_error(tmp_path: Path) -> None:
    path = build_model(tmp_path / "spam-only.npz", [SPAM_MAIL], [])
    with pytest.raises(modelfile.ModelError, match=r"spam-only\.npz: the model has no ham messages yet"):
        onemessage.score_message(str(path), HAM_MAIL)


# What the piped message leaves in sys.modules, printed by the process that filtered it.
PIPE_MODULES = """
import io, sys
from spamnb import entry
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[2].encode()))
sys.stdout = io.TextIOWrapper(io.BytesIO())
try:
    entry.main(["classify", "--pipe", "-m", sys.argv[1]])
except SystemExit as done:
    print(done.code, " ".join(sorted(sys.modules)), file=sys.stderr)
"""


def test_the_pipe_never_imports_numpy(model: Path) -> None:
    if not SPAMNB.exists():
        pytest.skip(f"no console script at {SPAMNB}")
    for mail in (SPAM_MAIL, HAM_MAIL):
        done = subprocess.run([sys.executable, "-c", PIPE_MODULES, str(model), mail.decode()], capture_output=True, text=True, timeout=60, check=False)
        status, modules = done.stderr.split(" ", 1)
        assert status in ("0", "1"), done.stderr
        imported = {m.split(".")[0] for m in modules.split()}
        assert not imported & {"numpy", "scipy", "click", "rich", "typing"}, sorted(imported & {"numpy", "scipy", "click", "rich", "typing"})
    # ... and the console script gives the verdict the library gives.
    piped = subprocess.run([str(SPAMNB), "classify", "--pipe", "-m", str(model)], input=SPAM_MAIL, capture_output=True, timeout=60, check=False)
    verdict = onemessage.score_message(str(model), SPAM_MAIL)
    assert piped.returncode == {"spam": 0, "ham": 1, "unsure": 2}[verdict.verdict]
    assert f"X-Spamnb: {verdict.verdict}, score={verdict.score:.4f}".encode() in piped.stdout
    assert os.path.getsize(model) > 0


def test_damage_in_a_small_member_is_found_without_numpy(model: Path, tmp_path: Path) -> None:
    data = bytearray(model.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("scoring.npy")
    at = info.header_offset + 30 + len(info.filename) + len(info.extra) + info.file_size - 3
    data[at] ^= 0x01
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(bytes(data))
    with pytest.raises(modelfile.ModelError, match=r"damaged\.npz: damaged spamnb model \(checksum of scoring"):
        onemessage.OneModel(str(damaged))
