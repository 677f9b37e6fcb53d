"""`spamnb eval --online` (spamnb.run.online): TREC's online protocol, each message scored by
the model of the messages before it, then learnt."""
from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from spamnb.mail.sources import Message, read_index
from spamnb.models import store
from spamnb.models.model import Scoring
from spamnb.run import classifier, metrics, online
from spamnb.run.classifier import Scored
from spamnb.text.tokens import TokenSettings
from tests.conftest import run_cli
from tests.test_pipe import SPAMNB, verdict_of

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_INDEX = ROOT / "sample_corpus" / "index"


@pytest.fixture(scope="module")
def shuffled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample's index in the order of its file names' digests (it is grouped by class)."""
    lines = [line.split() for line in SAMPLE_INDEX.read_text().splitlines() if line.strip()]
    lines.sort(key=lambda f: hashlib.md5(os.path.basename(f[1]).encode()).hexdigest())
    path = tmp_path_factory.mktemp("online") / "index"
    path.write_text("".join(f"{label} {SAMPLE_INDEX.parent / name}\n" for label, name in lines))
    return path


@pytest.mark.parametrize("event", ["fisher", "multinomial", "bernoulli"])
def test_each_message_is_scored_by_the_model_of_the_messages_before_it(shuffled: Path, event: str) -> None:
    items = list(read_index(str(shuffled)))
    scoring = Scoring(event=event)
    result = online.evaluate(items, None, TokenSettings(), scoring)
    assert [s.id for s in result.scored] == [m.id for m in items]
    assert result.learnt == len(items)
    first_trained = next(i for i in range(len(items)) if {m.label for m in items[:i]} == {"spam", "ham"})
    assert all(s.log_odds == 0.0 for s in result.scored[:first_trained])
    for k in (first_trained, 17, 40, 77, len(items) - 1):
        model = store.empty_model(TokenSettings(), scoring)
        classifier.learn(model, items[:k])
        (scored,) = classifier.classify(model, [Message(items[k].id, items[k].data)])
        assert result.scored[k].log_odds == pytest.approx(scored.log_odds, rel=1e-9, abs=1e-12), k


def test_train_on_error_learns_only_what_it_got_wrong_or_was_unsure_of(shuffled: Path) -> None:
    items = list(read_index(str(shuffled)))
    result = online.evaluate(items, None, TokenSettings(), Scoring(), train_on_error=True)
    assert result.learnt == sum(s.verdict != s.label for s in result.scored) < len(items)
    everything = online.evaluate(items, None, TokenSettings(), Scoring())
    assert [s.id for s in result.scored] == [s.id for s in everything.scored]


def test_tokenising_processes_change_nothing(shuffled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = list(read_index(str(shuffled)))
    monkeypatch.setattr(online, "CHUNK", 7)  # many tasks in flight
    for on_error in (False, True):
        alone = online.evaluate(items, None, TokenSettings(), Scoring(), train_on_error=on_error)
        assert online.evaluate(items, None, TokenSettings(), Scoring(), train_on_error=on_error, jobs=2) == alone


def test_starting_from_a_model(shuffled: Path, tmp_path: Path) -> None:
    items = list(read_index(str(shuffled)))
    model = store.empty_model(TokenSettings(), Scoring())
    classifier.learn(model, items[:60])
    path = tmp_path / "model.npz"
    store.save(model, str(path))
    result = online.evaluate(items[60:], str(path), model.tokens, model.scoring)
    (scored,) = classifier.classify(store.load(str(path)), [Message(items[60].id, items[60].data)])
    assert result.scored[0].log_odds == pytest.approx(scored.log_odds, rel=1e-9)
    assert not os.path.exists(str(path) + ".journal"), "nothing is written"
    # A message the model learnt already is not learnt again.
    again = online.evaluate(items[:5], str(path), model.tokens, model.scoring)
    assert again.learnt == 0


def scored(label: str, verdict: str) -> Scored:
    return Scored("m", label, 0.0, 0.5, verdict)


def lam_percent(stream: list[Scored]) -> float:
    """eval's lam% (metrics.Report.lam_percent) of a stream's verdicts."""
    return metrics.evaluate([s.label for s in stream], np.zeros(len(stream)), np.array([s.score for s in stream]), [s.verdict for s in stream]).lam_percent


def test_lam_is_the_logistic_mean_of_the_two_error_rates() -> None:
    # 1 of 4 ham flagged, 1 of 2 spam missed: logit 1/4 and logit 1/2 averaged.
    stream = [scored("ham", "spam"), *[scored("ham", "ham")] * 3, scored("spam", "spam"), scored("spam", "unsure")]
    mean = (math.log(1 / 3) + 0.0) / 2
    assert lam_percent(stream) == pytest.approx(100 / (1 + math.exp(-mean)))
    # No errors at all: each rate taken as half a message, so lam% stays finite.
    perfect = [scored("ham", "ham")] * 9 + [scored("spam", "spam")] * 9
    assert lam_percent(perfect) == pytest.approx(100 * 0.5 / 9)  # both rates 0.5 / 9
    assert math.isnan(lam_percent([scored("ham", "ham")]))
    # Every spam missed (a new model that flags nothing): half a message caught, not a ZeroDivisionError.
    none_caught = [scored("ham", "ham"), scored("ham", "ham"), scored("spam", "unsure"), scored("spam", "ham")]
    mean = (math.log(0.5 / 1.5) + math.log(1.5 / 0.5)) / 2
    assert lam_percent(none_caught) == pytest.approx(100 / (1 + math.exp(-mean)))
    assert online.running_errors([scored("ham", "spam"), scored("ham", "ham")], windows=2) == [1.0, 0.0]


def test_eval_online_on_the_command_line(shuffled: Path) -> None:
    done = run_cli("-q", "eval", "--online", "--index", shuffled, "--json")
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    assert found["messages"] == 110 and found["online"]["learnt"] == 110 and found["online"]["train_on_error"] is False
    assert 0 < found["lam_percent"] < 50 and 0.5 < found["auc"] <= 1
    assert len(found["online"]["running_error"]) > 10
    shown = run_cli("-q", "eval", "--online", "--train-on-error", "--index", shuffled)
    assert shown.exit_code == 0 and "lam%" in shown.stdout and "learnt (on error)" in shown.stdout
    assert "error rate along the stream" in shown.stdout
    for bad in (["--train-on-error"], ["--online", "--folds", "3"], ["--online", "--train-size", "20"]):
        refused = run_cli("-q", "eval", "--index", shuffled, *bad)
        assert refused.exit_code == 2 and refused.stderr.count("\n") == 1, refused.output


def test_a_piped_user_gets_what_eval_online_measures(shuffled: Path, tmp_path: Path) -> None:
    """One learn plan: `spamnb train` on the first 60 messages, then each later one through
    `classify --pipe` and `train --spam|--ham -` (the console script, as a mail reader's
    keys run it) gives the verdicts `eval --online` gives from the same trained model; the
    calibration is refitted when the history reaches 100 scores (60 held out by train, 40
    learnt one at a time), not before, and the journal's folds keep it."""
    items = list(read_index(str(shuffled)))
    first = tmp_path / "first"
    first.write_text("".join(f"{m.label} {m.id}\n" for m in items[:60]))
    model = tmp_path / "model.npz"
    assert subprocess.run([SPAMNB, "-q", "train", "-m", model, "--index", first], capture_output=True).returncode == 0
    start = tmp_path / "start.npz"
    start.write_bytes(model.read_bytes())
    trained = store.load(str(start))
    assert len(trained.history) == 60
    verdicts, fits = [], []
    for m in items[60:]:
        piped = subprocess.run([SPAMNB, "classify", "-m", model, "--pipe"], input=m.data, capture_output=True)
        verdicts.append(verdict_of(piped.stdout)[0])
        learnt = subprocess.run([SPAMNB, "-q", "train", "-m", model, f"--{m.label}", "-"], input=m.data, capture_output=True)
        assert learnt.returncode == 0, learnt.stderr
        fits.append(store.load(str(model)).scoring)
    result = online.evaluate(items[60:], str(start), trained.tokens, trained.scoring)
    assert [s.verdict for s in result.scored] == verdicts
    assert all(f == trained.scoring for f in fits[:39])
    assert fits[39].calibration != trained.scoring.calibration and fits[39].spam_cutoff == trained.scoring.spam_cutoff
    assert all(f == fits[39] for f in fits[40:])
    assert len(store.load(str(model)).history) == 110
