"""The command line contract of DESIGN.md, driven through click's test runner."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result

from spamnb.models import store
from spamnb.text.tokens import Tokenizer
from tests.conftest import HAM_WORDS, SPAM_WORDS, Corpus, make_mail, run_cli, write_files, write_maildir, write_mbox

SCRIPT = str(Path(sys.executable).parent / "spamnb")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes a model outside its own folder."""
    monkeypatch.delenv("SPAMNB_MODEL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def ok(*args: str | Path, stdin: bytes | None = None) -> Result:
    result = run_cli(*args, stdin=stdin)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result


def assert_one_line_error(result: Result, *needles: str) -> None:
    """Non-zero exit, exactly one line on stderr saying `spamnb: error: ...`, no traceback."""
    assert result.exit_code != 0
    assert isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("spamnb: error: "), result.stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0]


def json_lines(result: Result) -> list[dict[str, object]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture
def model(corpus: Corpus, tmp_path: Path) -> Path:
    path = tmp_path / "model.npz"
    result = ok("train", "-m", path, "--spam", corpus.spam_maildir, "--ham", corpus.ham_maildir)
    assert "learnt 24" in result.stderr
    return path


def inspect_json(model: Path) -> dict[str, object]:
    """What inspect says of the model's contents (not of its file: size, time last trained)."""
    info = json.loads(ok("inspect", "-m", model, "--json").stdout)
    assert isinstance(info, dict)
    return {k: v for k, v in info.items() if k not in ("file_bytes", "last_trained")}


# --- train and inspect ---------------------------------------------------------------


def test_inspect_reports_messages_and_vocabulary(model: Path, corpus: Corpus) -> None:
    info = inspect_json(model)
    assert info["messages"] == {"spam": 12, "ham": 12}
    tokenize = Tokenizer()
    assert info["vocabulary"] == len({t for m in corpus.spam + corpus.ham for t in tokenize(m)})
    top = info["top"]
    assert isinstance(top, dict)
    assert top["spam"][0]["token"].split(":")[-1] in SPAM_WORDS
    assert top["ham"][0]["token"].split(":")[-1] in HAM_WORDS


def test_inspect_table_output(model: Path) -> None:
    out = ok("inspect", "-m", model, "--top", "3").stdout
    assert "12 spam, 12 ham" in out and "tokens pointing to spam" in out
    assert "not calibrated yet" in out


def test_inspect_places_the_cut_offs_in_log_odds(model: Path) -> None:
    verdicts = inspect_json(model)["verdicts"]
    # 12 of each class learnt: too few for a calibration, so P is the sigmoid of the log-odds.
    assert verdicts["calibrated"] is False
    assert verdicts["spam_from_log_odds"] == pytest.approx(math.log(0.95 / 0.05))
    assert verdicts["ham_to_log_odds"] == pytest.approx(math.log(0.1 / 0.9))
    scoring = store.load(str(model)).scoring.replace(calibration=(0.5, 1.0))
    for cutoff in (scoring.spam_cutoff, scoring.ham_cutoff):
        assert scoring.probability(scoring.log_odds_at(cutoff)) == pytest.approx(cutoff)
    assert scoring.log_odds_at(1.0) == math.inf and scoring.log_odds_at(0.0) == -math.inf


def test_inspect_says_when_the_ham_loss_floor_sets_the_spam_verdict(model: Path) -> None:
    from spamnb.cli import report

    young = store.load(str(model))
    young.scoring = young.scoring.replace(calibration=(0.5, 1.0), spam_floor=0.99)
    verdicts = report.verdict_summary(young)
    assert verdicts["floor_sets_spam"] is True
    assert verdicts["spam_from_log_odds"] == pytest.approx(young.scoring.log_odds_at(0.99))
    line = report.verdicts_line(young.scoring._asdict(), verdicts)
    assert line.startswith("spam at P > 0.99 ") and "at most 0.1% of ham lost" in line
    young.scoring = young.scoring.replace(spam_floor=0.5)
    assert report.verdict_summary(young)["floor_sets_spam"] is False


def test_mbox_index_and_maildir_training_give_the_same_model(model: Path, corpus: Corpus, tmp_path: Path) -> None:
    from_mbox = tmp_path / "mbox.npz"
    ok("train", "-m", from_mbox, "--spam", corpus.spam_mbox, "--ham", corpus.ham_mbox)
    from_index = tmp_path / "index.npz"
    ok("train", "-m", from_index, "--index", corpus.index)
    expected = {k: v for k, v in inspect_json(model).items() if k != "model"}
    for other in (from_mbox, from_index):
        assert {k: v for k, v in inspect_json(other).items() if k != "model"} == expected


def test_training_again_changes_nothing_and_forget_undoes(model: Path, corpus: Corpus) -> None:
    before = inspect_json(model)
    result = ok("train", "-m", model, "--spam", corpus.spam_mbox)
    assert "already known 12" in result.stderr
    assert inspect_json(model) == before
    ok("train", "-m", model, "--forget", "--ham", corpus.ham_maildir)
    assert store.load(str(model)).counts.docs.tolist() == [0, 12]
    ok("train", "-m", model, "--ham", corpus.ham_mbox)
    assert inspect_json(model) == before


def test_inspect_a_model_of_one_class(tmp_path: Path, corpus: Corpus) -> None:
    one = tmp_path / "one.npz"
    ok("train", "-m", one, "--spam", corpus.spam_mbox)
    assert inspect_json(one)["messages"] == {"spam": 12, "ham": 0}


def test_forgetting_what_was_never_learnt_exits_1(model: Path) -> None:
    [path] = write_files(model.parent / "new", [make_mail("never", "seen before")])
    result = run_cli("train", "-m", model, "--forget", "--spam", path)
    assert result.exit_code == 1
    assert f"{path}: never learnt" in result.stderr


# --- classify ------------------------------------------------------------------------


def test_classify_json_lines_for_an_mbox(model: Path, corpus: Corpus) -> None:
    rows = json_lines(ok("classify", "-m", model, "--json", corpus.spam_mbox, corpus.ham_mbox))
    assert [r["id"] for r in rows] == [f"{corpus.spam_mbox}:{i}" for i in range(1, 13)] + [f"{corpus.ham_mbox}:{i}" for i in range(1, 13)]
    assert [r["verdict"] for r in rows] == ["spam"] * 12 + ["ham"] * 12
    for r in rows:
        assert {"id", "verdict", "score", "log_odds"} <= r.keys()
        lo, score = r["log_odds"], r["score"]
        assert isinstance(lo, float) and isinstance(score, float)
        assert 0.0 <= score <= 1.0
        assert score == pytest.approx(1 / (1 + math.exp(-lo)), abs=1e-6)


def test_classify_tsv_when_not_a_terminal(model: Path, corpus: Corpus) -> None:
    lines = ok("classify", "-m", model, corpus.ham_maildir).stdout.splitlines()
    files = sorted((p for sub in ("cur", "new") for p in (corpus.ham_maildir / sub).iterdir() if not p.name.startswith(".")), key=lambda p: p.name)
    assert [line.split("\t")[0] for line in lines] == [str(p) for p in files]
    for line in lines:
        _, verdict, score = line.split("\t")
        assert verdict == "ham" and len(score.split(".")[1]) == 4 and 0 <= float(score) <= 0.1


def test_classify_one_file_and_stdin(model: Path) -> None:
    mail = make_mail("cheap pills", "viagra casino winner bonus offer")
    [path] = write_files(model.parent / "one", [mail])
    [from_file] = json_lines(ok("classify", "-m", model, "--json", path))
    [from_dash] = json_lines(ok("classify", "-m", model, "--json", "-", stdin=mail))
    [no_src] = json_lines(ok("classify", "-m", model, "--json", stdin=mail))
    assert from_file["id"] == str(path) and from_dash["id"] == no_src["id"] == "-"
    assert from_file["log_odds"] == from_dash["log_odds"] == no_src["log_odds"]
    assert from_file["verdict"] == "spam"


def test_classify_reports_unreadable_messages_and_goes_on(model: Path, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    [good] = write_files(folder, [make_mail("lunch", "meeting agenda")])
    (folder / "empty.eml").write_bytes(b"")
    result = run_cli("classify", "-m", model, "--json", folder)
    assert result.exit_code == 1
    assert [r["id"] for r in json_lines(result)] == [str(good)]
    assert result.stderr == f"spamnb: {folder / 'empty.eml'}: empty file\n"


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_classify_problems_keep_their_place_among_the_lines(model: Path, tmp_path: Path, jobs: str, unbuffered: str) -> None:
    """stdout and stderr into one file (`> log 2>&1`): each Problem right after the line of the
    message before it, whether Python buffers stdout or not (PYTHONUNBUFFERED, as cron may set)."""
    folder = tmp_path / "mixed"
    paths = write_files(folder, [make_mail(f"lunch {i}", "meeting agenda " * 40) for i in range(300)])
    for i in (0, 7, 150, 299):
        paths[i].write_bytes(b"")
    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
    done = subprocess.run([SCRIPT, "classify", "-q", "-m", str(model), "--jobs", jobs, str(folder)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert done.returncode == 1
    said = [line.split("\t")[0] if "\t" in line else line for line in done.stdout.decode().splitlines()]
    assert said == [f"spamnb: {p}: empty file" if i in (0, 7, 150, 299) else str(p) for i, p in enumerate(paths)]


def test_explain_agrees_with_classify(model: Path, corpus: Corpus) -> None:
    mail = make_mail("agenda for tuesday", "cheap project review, winner of the budget draft zzneverseen")
    [path] = write_files(model.parent / "explain", [mail])
    [scored] = json_lines(ok("classify", "-m", model, "--json", path))
    explained = json.loads(ok("inspect", "-m", model, "--explain", path, "--json").stdout)
    assert explained["id"] == str(path) and explained["verdict"] == scored["verdict"]
    assert explained["log_odds"] == pytest.approx(scored["log_odds"], abs=1e-9)
    assert explained["tokens"] and explained["unknown_tokens"] >= 1


# --- the default model path ----------------------------------------------------------


def test_model_defaults_to_spamnb_model_then_xdg(corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = tmp_path / "chosen" / "m.npz"
    monkeypatch.setenv("SPAMNB_MODEL", str(chosen))
    ok("train", "--spam", corpus.spam_mbox, "--ham", corpus.ham_mbox)
    assert chosen.exists() and not (tmp_path / "xdg").exists()
    assert len(json_lines(ok("classify", "--json", corpus.spam_mbox))) == 12
    monkeypatch.delenv("SPAMNB_MODEL")
    ok("train", "--spam", corpus.spam_mbox, "--ham", corpus.ham_mbox)
    assert (tmp_path / "xdg" / "spamnb" / "model.npz").exists()
    assert inspect_json(tmp_path / "xdg" / "spamnb" / "model.npz")["messages"] == {"spam": 12, "ham": 12}


# --- eval ----------------------------------------------------------------------------


EVAL_KEYS = {
    "auc",
    "accuracy",
    "precision",
    "recall",
    "f1",
    "false_positive_rate",
    "false_negative_rate",
    "true_positives",
    "false_positives",
    "true_negatives",
    "false_negatives",
}


def test_eval_of_a_model_on_a_hand_computed_case(tmp_path: Path) -> None:
    model = tmp_path / "m.npz"
    spam = [make_mail("offer", f"viagra pills casino winner bonus {w}") for w in ("lottery", "prize", "crypto")]
    ham = [make_mail("agenda", f"meeting agenda budget review minutes {w}") for w in ("lunch", "draft", "report")]
    ok("train", "-m", model, "--spam", write_mbox(tmp_path / "s.mbox", spam), "--ham", write_mbox(tmp_path / "h.mbox", ham))
    spammy = make_mail("offer", "viagra pills casino winner bonus prize")
    hammy = make_mail("agenda", "meeting agenda budget review minutes lunch")
    # spam: 2 caught, 1 missed; ham: 2 passed, 1 flagged.  Identical messages tie.
    spam_dir = write_files(tmp_path / "test-spam", [spammy, spammy, hammy])[0].parent
    ham_dir = write_files(tmp_path / "test-ham", [hammy, hammy, spammy])[0].parent
    verdicts = [r["verdict"] for r in json_lines(ok("classify", "-m", model, "--json", spam_dir, ham_dir))]
    assert verdicts == ["spam", "spam", "ham", "ham", "ham", "spam"]
    d = json.loads(ok("eval", "-m", model, "--spam", spam_dir, "--ham", ham_dir, "--json").stdout)
    assert d.keys() >= EVAL_KEYS
    assert (d["true_positives"], d["false_negatives"], d["true_negatives"], d["false_positives"]) == (2, 1, 2, 1)
    assert d["accuracy"] == pytest.approx(4 / 6)
    assert d["precision"] == pytest.approx(2 / 3)
    assert d["recall"] == pytest.approx(2 / 3)
    assert d["f1"] == pytest.approx(2 / 3)
    assert d["false_positive_rate"] == pytest.approx(1 / 3)
    assert d["false_negative_rate"] == pytest.approx(1 / 3)
    # spam-vs-ham pairs: 4 won, 2 + 2 tied (half each), 1 lost -> 6 of 9
    assert d["auc"] == pytest.approx(6 / 9)


def test_eval_cross_validation_on_an_index(corpus: Corpus) -> None:
    d = json.loads(ok("eval", "--index", corpus.index, "--folds", "3", "--json").stdout)
    assert d.keys() >= EVAL_KEYS
    assert d["messages"] == 24 and d["spam"] == 12 and d["ham"] == 12
    assert d["true_positives"] + d["false_negatives"] == 12 and d["true_negatives"] + d["false_positives"] == 12
    assert d["auc"] > 0.95 and d["accuracy"] > 0.85


def test_eval_with_a_train_size_learns_that_many_per_fold(corpus: Corpus) -> None:
    """Every message is still scored, by fold models that learnt 6 messages each instead of the other 16."""
    d = json.loads(ok("eval", "--index", corpus.index, "--folds", "3", "--train-size", "6", "--json").stdout)
    assert d["messages"] == 24 and d["spam"] == 12 and d["ham"] == 12
    whole = json.loads(ok("eval", "--index", corpus.index, "--folds", "3", "--json").stdout)
    assert d != whole


def test_eval_table_output(corpus: Corpus) -> None:
    out = ok("eval", "--spam", corpus.spam_maildir, "--ham", corpus.ham_mbox, "--folds", "2").stdout
    assert "ROC AUC" in out and "confusion" in out


def test_fail_under_names_the_metric_it_misses(corpus: Corpus) -> None:
    args = ("eval", "--index", corpus.index, "--folds", "3", "--json")
    ok(*args, "--fail-under", "auc=0.5", "--fail-under", "accuracy=0.5")
    result = run_cli(*args, "--fail-under", "auc=1.01", "--fail-under", "accuracy=0.5")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["auc"] <= 1.0
    [line] = result.stderr.splitlines()
    assert "auc" in line and "1.01" in line


def test_fail_under_unknown_metric_is_one_line(corpus: Corpus) -> None:
    assert_one_line_error(run_cli("eval", "--index", corpus.index, "--folds", "2", "--fail-under", "foo=1"), "foo")


# --- errors --------------------------------------------------------------------------


def test_missing_model(tmp_path: Path, corpus: Corpus) -> None:
    missing = tmp_path / "none.npz"
    assert_one_line_error(run_cli("classify", "-m", missing, corpus.spam_mbox), str(missing))
    assert_one_line_error(run_cli("inspect", "-m", missing), str(missing))
    assert_one_line_error(run_cli("eval", "-m", missing, "--spam", corpus.spam_mbox), str(missing))
    assert_one_line_error(run_cli("train", "-m", missing, "--forget", "--spam", corpus.spam_mbox), str(missing))


def test_damaged_model(tmp_path: Path, corpus: Corpus) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a model at all")
    assert_one_line_error(run_cli("classify", "-m", bad, corpus.spam_mbox), str(bad))
    assert_one_line_error(run_cli("train", "-m", bad, "--spam", corpus.spam_mbox), str(bad))


def test_missing_source(model: Path, tmp_path: Path, corpus: Corpus) -> None:
    missing = tmp_path / "nowhere"
    assert_one_line_error(run_cli("classify", "-m", model, corpus.spam_mbox, missing), str(missing))
    assert_one_line_error(run_cli("train", "-m", model, "--spam", missing), str(missing))
    assert_one_line_error(run_cli("eval", "--ham", corpus.ham_mbox, "--spam", missing), str(missing))
    assert_one_line_error(run_cli("eval", "--index", missing), str(missing))


def test_bad_index_line(model: Path, tmp_path: Path, corpus: Corpus) -> None:
    index = tmp_path / "labelled" / "bad-index"
    index.write_text("spam spam/msg000.eml\nmaybe spam/msg001.eml\n")
    before = inspect_json(model)
    assert_one_line_error(run_cli("train", "-m", model, "--index", index), f"{index}:2")
    assert inspect_json(model) == before  # nothing half-learnt was saved
    assert_one_line_error(run_cli("eval", "--index", index), f"{index}:2")


def test_model_trained_on_one_class(tmp_path: Path, corpus: Corpus) -> None:
    one = tmp_path / "one.npz"
    ok("train", "-m", one, "--spam", corpus.spam_mbox)
    assert_one_line_error(run_cli("classify", "-m", one, corpus.ham_mbox), "no ham")
    assert_one_line_error(run_cli("eval", "--spam", corpus.spam_mbox, "--folds", "2"), "no ham")


@pytest.mark.parametrize(
    ("option", "named"),
    [(("--ngram", "2"), "tokeniser settings"), (("--stopwords",), "tokeniser settings"), (("--meta", "gaussian"), "--meta none"), (("--event", "multinomial", "--idf"), "--tf presence --no-idf --length-norm none")],
)
def test_what_a_trained_model_summed_its_counts_with_cannot_change(model: Path, corpus: Corpus, option: tuple[str, ...], named: str) -> None:
    before = model.read_bytes()
    result = run_cli("train", "-m", model, *option, "--spam", corpus.spam_mbox)
    assert_one_line_error(result, f"trained with {named}", "cannot change now")
    assert result.exit_code == 2
    assert model.read_bytes() == before


def test_nothing_to_evaluate(tmp_path: Path) -> None:
    empty = tmp_path / "empty-dir"
    empty.mkdir()
    assert_one_line_error(run_cli("eval", "--spam", empty, "--folds", "2"))


@pytest.mark.parametrize(
    "args",
    [
        ("train", "--bogus"),
        ("classify", "--folds", "3"),
        ("eval", "--folds", "three"),
        ("eval", "-m", "m.npz", "--train-size", "5", "--spam", "x"),
        ("eval", "--train-size", "1", "--spam", "x"),
        ("eval", "--fail-under", "auc", "--spam", "x"),
        ("train", "-m", "m.npz"),
        ("inspect", "--top", "0"),
    ],
    ids=["unknown-option", "option-of-another-command", "bad-int", "train-size-with-model", "train-size-below-two", "bar-without-value", "no-labelled-mail", "top-zero"],
)
def test_bad_options_are_one_line_errors(args: tuple[str, ...]) -> None:
    assert_one_line_error(run_cli(*args))


def test_maildir_tmp_is_never_classified(model: Path, tmp_path: Path) -> None:
    maildir = tmp_path / "inbox"
    [only] = write_maildir(maildir, [make_mail("hi", "meeting")])
    assert [r["id"] for r in json_lines(ok("classify", "-m", model, "--json", maildir))] == [str(only)]


@pytest.mark.parametrize("command", ["train", "eval"])
def test_help_shows_the_tokeniser_defaults_a_new_model_gets(command: str) -> None:
    from spamnb.text.tokens import TokenSettings

    default = TokenSettings()
    text = " ".join(ok(command, "--help").output.split())
    assert f"Drop English stopwords (new models only). [default: {'on' if default.stopwords else 'off'}]" in text
    assert f"Word n-gram order (new models only). [default: {default.ngram}]" in text
