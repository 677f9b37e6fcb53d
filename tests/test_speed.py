"""Behaviour of the speed work: --jobs, the pipe fast path, the mapped model, pruning."""
from __future__ import annotations

import io
import json
import random

import numpy as np
import pytest

from spamnb.entry import main as entry_main
from spamnb.models import store
from spamnb.pipe import filter as pipe
from tests.conftest import run_cli, run_click

SPAM_WORDS = ["free", "money", "viagra", "winner", "click", "offer", "cash", "prize", "urgent", "loan", "casino"]
HAM_WORDS = ["meeting", "patch", "review", "lunch", "kernel", "build", "release", "notes", "agenda", "budget"]


def message(i: int, words: list[str], rng: random.Random) -> bytes:
    body = " ".join(rng.choice(words) for _ in range(40)) + f" unique{i}"
    return f"From: person{i}@example.com\nSubject: {rng.choice(words)} {i}\n\n{body}\n".encode()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    rng = random.Random(7)
    for label, words in (("spam", SPAM_WORDS), ("ham", HAM_WORDS)):
        (root / label).mkdir()
        for i in range(300):
            (root / label / f"{i:04d}").write_bytes(message(i, words + SPAM_WORDS[:2], rng))
    mixed = root / "mixed.mbox"
    with open(mixed, "wb") as out:
        for i in range(700):
            words = SPAM_WORDS if i % 3 else HAM_WORDS
            out.write(b"From x@y Sat Jan  3 01:05:34 1996\n" + message(1000 + i, words, rng) + b"\n")
    return root


def run(*args: str) -> tuple[int, str]:
    result = run_cli(*args)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def model(corpus, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("model") / "m.npz")
    code, out = run("train", "-m", path, "--spam", str(corpus / "spam"), "--ham", str(corpus / "ham"), "--jobs", "1")
    assert code == 0, out
    return path


def test_train_jobs_2_makes_the_same_model(corpus, model, tmp_path):
    other = str(tmp_path / "m2.npz")
    code, out = run("train", "-m", other, "--spam", str(corpus / "spam"), "--ham", str(corpus / "ham"), "--jobs", "2")
    assert code == 0, out
    with np.load(model) as a, np.load(other) as b:
        assert a.files == b.files
        for k in a.files:
            assert np.array_equal(a[k], b[k]), k


def test_classify_jobs_2_is_jobs_1_in_input_order(corpus, model):
    outs = {}
    for jobs in ("1", "2", "3"):
        code, out = run("classify", "-m", model, "--json", "--jobs", jobs, str(corpus / "mixed.mbox"), str(corpus / "spam"))
        assert code == 0, out
        outs[jobs] = out
    assert outs["1"] == outs["2"] == outs["3"]
    ids = [json.loads(line)["id"] for line in outs["1"].splitlines()]
    mbox = str(corpus / "mixed.mbox")
    assert ids[:700] == [f"{mbox}:{n}" for n in range(1, 701)]
    assert ids[700:] == sorted(ids[700:]) and len(ids) == 1000


def test_eval_jobs_2_is_jobs_1(corpus):
    outs = [run("eval", "--spam", str(corpus / "spam"), "--ham", str(corpus / "ham"), "--json", "--jobs", j)[1] for j in ("1", "2")]
    assert json.loads(outs[0]) == json.loads(outs[1])


def test_jobs_must_be_positive(model, corpus):
    code, _ = run("classify", "-m", model, "--jobs", "0", str(corpus / "spam"))
    assert code == 2


def pipe_through_entry(monkeypatch, capsysbinary, argv: list[str], data: bytes) -> tuple[int, bytes]:
    monkeypatch.setattr("sys.argv", ["spamnb", *argv])
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    with pytest.raises(SystemExit) as done:
        entry_main()
    return done.value.code, capsysbinary.readouterr().out


@pytest.mark.parametrize("which", ["spam/0003", "ham/0005"])
def test_pipe_fast_path_matches_click_path(corpus, model, which, monkeypatch, capsysbinary):
    data = (corpus / which).read_bytes()
    slow = run_click("classify", "--pipe", "-m", model, stdin=data)
    code, out = pipe_through_entry(monkeypatch, capsysbinary, ["classify", "--pipe", "-m", model], data)
    assert (code, out) == (slow.exit_code, slow.stdout_bytes)
    assert b"X-Spamnb: " in out and code in (0, 1, 2)


def test_pipe_fast_path_uses_default_model(corpus, model, monkeypatch, capsysbinary):
    monkeypatch.setenv("SPAMNB_MODEL", model)
    data = (corpus / "spam/0001").read_bytes()
    code, out = pipe_through_entry(monkeypatch, capsysbinary, ["-q", "classify", "--pipe"], data)
    assert code == 0 and out.startswith(data.split(b"\n\n")[0])


def test_pipe_fast_path_fails_open(tmp_path, monkeypatch, capsysbinary):
    data = b"Subject: hi\r\n\r\nbody\xff"
    code, out = pipe_through_entry(monkeypatch, capsysbinary, ["classify", "--pipe", "-m", str(tmp_path / "none.npz")], data)
    assert (code, out) == (3, data)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["classify", "--pipe"], (True, None)),
        (["classify", "--pipe", "-m", "a.npz"], (True, "a.npz")),
        (["--debug", "classify", "--model=b", "--pipe", "--jobs", "2"], (True, "b")),
        (["classify", "-mc", "--pipe"], (True, "c")),
        (["classify", "--pipe", "--json"], (False, None)),
        (["classify", "--pipe", "x.mbox"], (False, None)),
        (["classify", "--pipe", "--help"], (False, None)),
        (["train", "--pipe"], (False, None)),
    ],
)
def test_pipe_argument_recognition(argv, expected):
    parsed = pipe.parse_options(argv)
    assert (parsed is not None, parsed and parsed[0]) == expected


def test_pipe_path_imports_only_what_it_needs(corpus, model):
    import subprocess
    import sys

    code = (
        "import sys; sys.argv=['spamnb','classify','--pipe','-m',sys.argv[1]]\n"
        "from spamnb.entry import main\n"
        "try:\n main()\nexcept SystemExit:\n pass\n"
        "bad=[m for m in ('click','scipy','rich','zipfile','email.parser','email.message','dataclasses') if m in sys.modules]\n"
        "sys.stderr.write('LOADED:'+','.join(bad))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, model], input=(corpus / "spam/0001").read_bytes(), capture_output=True)
    assert done.stderr.decode().endswith("LOADED:"), done.stderr


def test_mapped_model_scores_like_the_full_load(corpus, model):
    from spamnb.text.tokens import Tokenizer

    full = store.load(model)
    mapped = store.load(model, scoring_only=True)
    assert mapped.scoring_only and not full.scoring_only
    tokens = [*Tokenizer(full.tokens)((corpus / "spam/0002").read_bytes()), "never-seen-token"]
    a, b = full.explain(tokens), mapped.explain(tokens)
    assert a.tokens == b.tokens and a.log_odds == pytest.approx(b.log_odds, abs=1e-9)
    with pytest.raises(ValueError, match="scoring only"):
        store.save(mapped, model + ".copy")


def test_model_without_offsets_still_loads(model, tmp_path):
    with np.load(model) as npz:
        arrays = {k: npz[k] for k in npz.files if k != "offsets"}
    old = str(tmp_path / "old.npz")
    np.savez(old, allow_pickle=False, **arrays)
    a, b = store.load(model), store.load(old, scoring_only=True)
    assert len(a.vocab) == len(b.vocab) and a.vocab.lookup(["subject:free"]) == b.vocab.lookup(["subject:free"])


@pytest.mark.parametrize("limit", [0, 20_000])
def test_learning_a_few_messages_splices_the_vocabulary_like_a_full_rebuild(corpus, model, tmp_path, monkeypatch, limit):
    from spamnb.bayes.vocabulary import ModelVocabulary

    monkeypatch.setattr(ModelVocabulary, "LIMIT", limit)
    path = str(tmp_path / "m.npz")
    spam_dir = tmp_path / "new"
    spam_dir.mkdir()
    # New tokens that sort before, between and after the known ones, and known ones.
    (spam_dir / "a").write_bytes(b"Subject: aaaa zzzzzz free\n\nmoney 0000 mmmm-new yyyyyyyy\n")
    (spam_dir / "b").write_bytes(b"Subject: another\n\nfree free casino \xc3\xa9t\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87\n")
    import shutil

    shutil.copy(model, path)
    code, out = run("train", "-m", path, "--spam", str(spam_dir), "--jobs", "1")
    assert code == 0, out
    reference = str(tmp_path / "ref.npz")
    code, out = run(
        "train", "-m", reference, "--spam", str(corpus / "spam"), "--ham", str(corpus / "ham"), "--spam", str(spam_dir), "--jobs", "1"
    )
    assert code == 0, out
    with np.load(path) as a, np.load(reference) as b:
        for k in ("tokens", "offsets", "tf", "df", "docs"):
            assert np.array_equal(a[k], b[k]), k
    assert sorted(store.load(path).learnt.items()) == sorted(store.load(reference).learnt.items())


def test_max_tokens_keeps_the_most_frequent(corpus, model, tmp_path):
    path = str(tmp_path / "capped.npz")
    code, out = run("train", "-m", path, "--spam", str(corpus / "spam"), "--ham", str(corpus / "ham"), "--max-tokens", "15", "--jobs", "1")
    assert code == 0, out
    full, capped = store.load(model, growable=True), store.load(path, growable=True)
    assert len(capped.vocab) == 15
    totals = dict(zip(full.vocab.tokens, full.counts.tf.sum(axis=0).tolist(), strict=True))
    kept = set(capped.vocab.tokens)
    assert min(totals[t] for t in kept) >= max(v for t, v in totals.items() if t not in kept)
    for t, col in zip(capped.vocab.tokens, range(15), strict=True):  # counts travel with their tokens
        assert capped.counts.tf[:, col].tolist() == full.counts.tf[:, full.growable().lookup([t])[0]].tolist()
    assert capped.counts.docs.tolist() == full.counts.docs.tolist()
    assert store.load(path).learnt == full.learnt


def test_min_count_drops_the_rare(corpus, model, tmp_path):
    path = str(tmp_path / "pruned.npz")
    code, out = run("train", "-m", path, "--spam", str(corpus / "spam"), "--ham", str(corpus / "ham"), "--min-count", "3")
    assert code == 0 and "pruned" in out
    full, pruned = store.load(model, growable=True), store.load(path, growable=True)
    totals = dict(zip(full.vocab.tokens, full.counts.tf.sum(axis=0).tolist(), strict=True))
    assert set(pruned.vocab.tokens) == {t for t, v in totals.items() if v >= 3}
    assert not any(t.startswith("unique") for t in pruned.vocab.tokens)


def test_pruning_in_cross_validation(corpus):
    code, out = run("eval", "--spam", str(corpus / "spam"), "--ham", str(corpus / "ham"), "--json", "--max-tokens", "30")
    assert code == 0, out
    assert 0.5 <= json.loads(out)["auc"] <= 1
    code, _ = run("eval", "-m", "x.npz", "--spam", str(corpus / "spam"), "--max-tokens", "30")
    assert code == 2
