"""What an operator sees: explanations, the eval report, progress, errors, version."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from spamnb.cli import progress
from spamnb.models import store
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "sample_corpus"
INDEX = str(CORPUS / "index")
SPAM = str(CORPUS / "maildir" / "spam")
HAM = str(CORPUS / "maildir" / "ham")


def invoke(*args: str) -> tuple[int, str, str]:
    result = run_cli(*args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("model") / "model.npz")
    code, _, err = invoke("-q", "train", "-m", path, "--spam", SPAM, "--ham", HAM)
    assert code == 0, err
    return path


def a_spam_message() -> str:
    return str(sorted((CORPUS / "maildir" / "spam" / "cur").iterdir())[0])


def test_explain_json_adds_up_and_shows_true_counts(model: str) -> None:
    code, out, _ = invoke("inspect", "-m", model, "--explain", a_spam_message(), "--top", "1000", "--json")
    assert code == 0
    e = json.loads(out)
    rows = e["tokens"]
    assert e["logit"] == pytest.approx(sum(r["contribution"] for r in rows) + e["rest"], abs=1e-9)
    magnitudes = [abs(r["contribution"]) for r in rows]
    assert magnitudes == sorted(magnitudes, reverse=True)
    loaded = store.load(model, growable=True)
    (col,) = loaded.growable().lookup([rows[0]["token"]])
    assert rows[0]["spam_messages"] == loaded.counts.df[1, col]
    assert rows[0]["ham_count"] == loaded.counts.tf[0, col]
    # the same verdict as classify gives
    _, line, _ = invoke("classify", "-m", model, "--json", a_spam_message())
    assert json.loads(line)["log_odds"] == pytest.approx(e["log_odds"], abs=1e-9)


@pytest.fixture(
    scope="module",
    params=[["fisher"], ["multinomial"], ["bernoulli"], ["complement"], ["multinomial", "--tf", "log", "--idf", "--length-norm", "l2"]],
    ids=["fisher", "multinomial", "bernoulli", "complement", "multinomial-tfidf"],
)
def event_model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    path = str(tmp_path_factory.mktemp("event") / "model.npz")
    event, *options = request.param
    code, _, err = invoke("-q", "train", "-m", path, "--event", event, *options, "--spam", SPAM, "--ham", HAM)
    assert code == 0, err
    return event, path


def some_messages() -> list[str]:
    return [str(p) for kind in ("spam", "ham") for p in sorted((CORPUS / "maildir" / kind / "cur").iterdir())[:4]]


def test_explain_adds_up_to_the_logit_of_the_verdicts_probability(event_model: tuple[str, str]) -> None:
    event, model = event_model
    loaded = store.load(model, growable=True)
    a, b = loaded.scoring.calibration
    assert (a, b) != (1.0, 0.0)  # calibrated: the scale the verdict uses is not the raw log-odds
    for path in some_messages():
        _, line, _ = invoke("classify", "-m", model, "--json", path)
        scored = json.loads(line)
        shown = {}
        for top in (5, 1000):
            code, out, _ = invoke("inspect", "-m", model, "--explain", path, "--top", str(top), "--json")
            assert code == 0
            e = shown[top] = json.loads(out)
            parts = [r["contribution"] for r in e["tokens"]]
            # the parts shown and the rest add up to the total shown, the logit of P(spam) ...
            assert sum(parts) + e["rest"] == pytest.approx(e["logit"], abs=1e-9)
            assert e["logit"] == pytest.approx(a * scored["log_odds"] + b, abs=1e-9)
            # ... which is the verdict's probability, as classify gives it
            assert 1 / (1 + np.exp(-e["logit"])) == pytest.approx(loaded.scoring.probability(scored["log_odds"]), rel=1e-9)
            assert (round(e["score"], 6), e["verdict"]) == (scored["score"], scored["verdict"])
        assert shown[5]["tokens"] == e["tokens"][:5] and e["other_tokens"] == 0
        # every token shown: the rest is what no token carries, a message of no evidence (Fisher: b alone)
        if event in ("fisher", "complement"):
            assert e["rest"] == pytest.approx(b, abs=1e-9)
        # a token's share has the sign of its own evidence (its weight in `inspect --top`)
        weights, _ = loaded.weights()
        for r in e["tokens"]:
            own = weights[loaded.growable().lookup([r["token"]])[0]]
            assert r["contribution"] * own >= 0, r


def test_explain_table_adds_up_as_printed(event_model: tuple[str, str]) -> None:
    _, model = event_model
    for path in some_messages():
        code, out, _ = invoke("inspect", "-m", model, "--explain", path, "--top", "5")
        assert code == 0
        table = out[out.index("tokens that moved the verdict most") :]
        numbers = [float(m) for m in re.findall(r"\s([+-]\d+\.\d{3})(?=\s)", table)]
        *parts, total = numbers
        assert len(parts) == 6  # five tokens and the rest
        assert round(sum(parts), 3) == total
        # As read, whatever the width: a long message path wraps the line at a space.
        assert f"ln(P / (1 - P)) = {total:+.3f}" in " ".join(out.split())


@pytest.mark.parametrize("as_json", [False, True])
def test_explain_of_a_folder_without_mail_says_so(model: str, tmp_path: Path, as_json: bool) -> None:
    """An empty folder (a mistyped maildir) explains nothing: one warning, as classify gives, not silence."""
    code, out, err = invoke("inspect", "-m", model, "--explain", str(tmp_path), *(["--json"] if as_json else []))
    assert code == 0 and out == ""
    assert err == f"spamnb: warning: {tmp_path}: no mail in it\n"


def test_explain_table_names_the_strongest_token(model: str) -> None:
    _, out_json, _ = invoke("inspect", "-m", model, "--explain", a_spam_message(), "--json")
    strongest = json.loads(out_json)["tokens"][0]
    code, out, _ = invoke("inspect", "-m", model, "--explain", a_spam_message())
    assert code == 0
    assert "tokens that moved the verdict most" in out
    assert strongest["token"] in out and f"{strongest['contribution']:+.3f}" in out


def test_inspect_summary_counts(model: str) -> None:
    code, out, _ = invoke("inspect", "-m", model, "--json", "--top", "3")
    info = json.loads(out)
    assert code == 0
    assert info["messages"] == {"spam": 54, "ham": 56}
    assert info["vocabulary"] == len(store.load(model, growable=True).vocab)
    assert len(info["top"]["spam"]) == len(info["top"]["ham"]) == 3
    assert info["top"]["spam"][0]["weight"] > 0 > info["top"]["ham"][0]["weight"]


@pytest.mark.parametrize("event", ["fisher", "multinomial"])
def test_inspect_top_lists_only_what_scoring_counts(event: str, tmp_path: Path) -> None:
    from spamnb.mail.sources import Message
    from spamnb.models.model import Model, Scoring
    from spamnb.run import classifier
    from tests.conftest import LIST_SERVER_FIELDS, labelled_messages, make_mail

    model = Model(scoring=Scoring(event=event))
    # A list's ham, its fields in every message: under Fisher they are no evidence (tokens.NOT_EVIDENCE).
    listed = [Message(f"list{i}", make_mail("agenda", f"meeting notes {i}", headers=LIST_SERVER_FIELDS), "ham") for i in range(8)]
    classifier.learn(model, [*labelled_messages(30, seed=5), *listed])
    path = tmp_path / "m.npz"
    store.save(model, str(path))
    code, out, _ = invoke("inspect", "-m", str(path), "--json", "--top", "100000")
    assert code == 0
    top = json.loads(out)["top"]
    listed_tokens = [r["token"] for side in ("spam", "ham") for r in top[side] if r["token"].startswith(("list-", "x-beenthere:", "x-mailman-version:"))]
    if event == "fisher":
        assert listed_tokens == []
        assert len(top["ham"]) == len(top["spam"]) == int(model.counted(model.vocab.tokens).sum()) < len(model.vocab)
    else:
        assert listed_tokens  # a linear model counts them, and lists them


def test_eval_report_agrees_with_its_json() -> None:
    code, out, _ = invoke("-q", "eval", "--index", INDEX, "--folds", "5")
    _, js, _ = invoke("-q", "eval", "--index", INDEX, "--folds", "5", "--json")
    assert code == 0
    m = json.loads(js)
    spam_row = re.search(r"^\s*spam\s+(\d+)\s+(\d+)", out, re.M)
    ham_row = re.search(r"^\s*ham\s+(\d+)\s+(\d+)", out, re.M)
    assert spam_row and ham_row
    assert (int(spam_row[1]), int(spam_row[2])) == (m["true_positives"], m["false_negatives"])
    assert (int(ham_row[1]), int(ham_row[2])) == (m["false_positives"], m["true_negatives"])
    assert f"{100 * m['accuracy']:.3f}%" in out
    assert "threshold sweep" in out and "score distribution" in out
    # the distribution's bars account for every message
    rows = re.findall(r"^\s*≤?\s*[+-]\d+\.\d\.\.[+-]\d+\.\d\+?\s+(\d+)\s+█*\s+(\d+)", out, re.M)
    assert sum(int(h) for h, _ in rows) == m["ham"] and sum(int(s) for _, s in rows) == m["spam"]


def test_fail_under_names_each_failing_metric() -> None:
    code, _, err = invoke("-q", "eval", "--index", INDEX, "--fail-under", "auc=0.5", "--fail-under", "recall=1.01",
                          "--fail-under", "precision=1.01")
    assert code == 1
    failing = [line for line in err.splitlines() if line.startswith("spamnb: fail:")]
    assert len(failing) == 2 and "recall" in failing[0] and "precision" in failing[1]


def test_progress_bar_only_on_a_terminal(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, err = invoke("classify", "-m", model, HAM)
    assert err == ""
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    _, _, err = invoke("classify", "-m", model, HAM)
    assert "classifying" in err and "messages" in err
    _, _, err = invoke("-q", "classify", "-m", model, HAM)
    assert err == ""


def test_errors_are_one_line_and_debug_adds_the_traceback(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.npz")
    code, _, err = invoke("classify", "-m", missing, HAM)
    assert code == 3
    assert err.strip().count("\n") == 0 and err.startswith("spamnb: error:") and missing in err
    code, _, err = invoke("--debug", "classify", "-m", missing, HAM)
    assert code == 3 and "Traceback" in err


def test_version_and_completion() -> None:
    from spamnb import __version__

    code, out, _ = invoke("--version")
    assert code == 0 and __version__ in out
    result = run_cli(prog_name="spamnb", env={"_SPAMNB_COMPLETE": "bash_source"})
    assert "_SPAMNB_COMPLETE=bash_complete" in result.output


def test_classify_table_on_a_terminal(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from spamnb.cli import report

    monkeypatch.setattr(report, "stdout_is_terminal", lambda: True)
    _, out, _ = invoke("classify", "-m", model, HAM)
    lines = out.splitlines()
    assert "verdict" in lines[0] and "P(spam)" in lines[0]
    rows = [line.split() for line in lines if re.search(r" (spam|ham|unsure) +\d\.\d{4} ", line)]
    assert len(rows) == 56
    assert all(0 <= float(r[-2]) <= 1 and np.isfinite(float(r[-1])) for r in rows)
