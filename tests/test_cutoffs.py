"""Verdict cut-offs a user can set: stored by `train`, for one run by `classify`
(the pipe too), checked, and shown on both sides by `eval` (issue 19, item 1)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_corpus"
SPAMNB = Path(sys.executable).parent / "spamnb"


def verdict(score: float, spam: float, ham: float, floor: float = 0.0) -> str:
    """The verdict rule: spam also needs P above the model's fitted spam floor."""
    return "spam" if score >= spam and score > floor else "ham" if score <= ham else "unsure"


def floor_of(model: Path) -> float:
    return json.loads(run_cli("inspect", "-m", model, "--json").stdout)["scoring"]["spam_floor"]


@pytest.fixture(scope="module")
def halves(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample maildirs' messages, every other one to learn (spam/, ham/), the rest to score (test/)."""
    root = tmp_path_factory.mktemp("cutoffs")
    for label in ("spam", "ham"):
        files = sorted(p for p in (SAMPLE / "maildir" / label).rglob("*") if p.is_file() and not p.name.startswith("."))
        for i, path in enumerate(files):
            target = root / (label if i % 2 else "test") / f"{label}{i:03d}"
            target.parent.mkdir(exist_ok=True)
            target.write_bytes(path.read_bytes())
    return root


@pytest.fixture(scope="module")
def model(halves: Path) -> Path:
    """Half the sample learnt (calibrated: 20 or more of each) with cut-offs of its own."""
    path = halves / "model.npz"
    done = run_cli("train", "-m", path, "--spam", halves / "spam", "--ham", halves / "ham", "--spam-cutoff", "0.7", "--ham-cutoff", "0.3")
    assert done.exit_code == 0, done.stderr
    return path


def scored(model: Path, *options: str) -> list[dict]:
    done = run_cli("classify", "-m", model, "--json", *options, model.parent / "test")
    assert done.exit_code == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_train_stores_the_cutoffs_and_classify_uses_them(model: Path) -> None:
    info = json.loads(run_cli("inspect", "-m", model, "--json").stdout)
    assert (info["scoring"]["spam_cutoff"], info["scoring"]["ham_cutoff"]) == (0.7, 0.3)
    rows = scored(model)
    assert {r["verdict"] for r in rows} >= {"spam", "ham"}
    assert all(r["verdict"] == verdict(r["score"], 0.7, 0.3, floor_of(model)) for r in rows)


def test_classify_cutoffs_hold_for_one_run_only(model: Path) -> None:
    floor = floor_of(model)
    rows = scored(model, "--spam-cutoff", "0.55", "--ham-cutoff", "0.45")
    assert all(r["verdict"] == verdict(r["score"], 0.55, 0.45, floor) for r in rows)
    # a score between the two settings proves the options changed a verdict
    assert any(verdict(r["score"], 0.55, 0.45, floor) != verdict(r["score"], 0.7, 0.3, floor) for r in rows)
    info = json.loads(run_cli("inspect", "-m", model, "--json").stdout)
    assert (info["scoring"]["spam_cutoff"], info["scoring"]["ham_cutoff"]) == (0.7, 0.3)
    assert all(r["verdict"] == verdict(r["score"], 0.7, 0.3, floor) for r in scored(model))


@pytest.mark.parametrize("click_path", [False, True])
def test_pipe_takes_the_cutoffs(model: Path, click_path: bool) -> None:
    # a message above the spam floor, so that a cut-off either side of it decides
    floor = floor_of(model)
    row = min((r for r in scored(model) if floor + 0.001 < r["score"] < 0.998), key=lambda r: r["score"])
    message, score = Path(row["id"]).read_bytes(), row["score"]
    for spam_cutoff, expected in ((score - 0.001, "spam"), (score + 0.001, "unsure")):
        args = ["classify", "--pipe", "-m", str(model), "--spam-cutoff", f"{spam_cutoff:.6f}", "--ham-cutoff", "0.01"]
        if click_path:
            done = run_cli(*args, stdin=message)
            out, code = done.stdout_bytes, done.exit_code
        else:  # the console script's fast path, without click
            proc = subprocess.run([str(SPAMNB), *args], input=message, capture_output=True, timeout=60)
            out, code = proc.stdout, proc.returncode
        assert f"X-Spamnb: {expected}, ".encode() in out
        assert code == {"spam": 0, "unsure": 2}[expected]


@pytest.mark.parametrize(
    "options",
    [
        ("--spam-cutoff", "0.4", "--ham-cutoff", "0.5"),
        ("--spam-cutoff", "0.5", "--ham-cutoff", "0.5"),
        ("--spam-cutoff", "1"),
        ("--ham-cutoff", "0"),
        ("--spam-cutoff", "0.2"),  # below the model's ham cut-off, 0.3
        ("--spam-cutoff", "high"),
    ],
)
def test_bad_cutoffs_are_one_line_usage_errors(model: Path, options: tuple[str, ...]) -> None:
    for command in (["classify", "-m", str(model), str(model.parent / "test")], ["train", "-m", str(model), "--spam", str(model.parent / "test")]):
        before = model.read_bytes()
        done = run_cli(*command, *options)
        assert done.exit_code == 2, (command, done.stderr)
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("spamnb: error: "), done.stderr
        assert "cut" in lines[0] or "range" in lines[0] or "not a valid" in lines[0]
        assert model.read_bytes() == before


def test_bad_cutoffs_in_the_pipe_pass_the_message_through(model: Path) -> None:
    message = next((model.parent / "test").iterdir()).read_bytes()
    proc = subprocess.run(
        [str(SPAMNB), "classify", "--pipe", "-m", str(model), "--spam-cutoff", "0.2", "--ham-cutoff", "0.4"],
        input=message, capture_output=True, timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (3, message)
    assert b"cut-off" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_eval_shows_both_sides_of_the_sweep() -> None:
    index = SAMPLE / "index"
    done = run_cli("eval", "--index", index, "--folds", "2", "--json", "--spam-cutoff", "0.85", "--ham-cutoff", "0.15")
    assert done.exit_code == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["spam_cutoff"], result["ham_cutoff"]) == (0.85, 0.15)
    spam_side, ham_side = result["sweep"]["spam_cutoff"], result["sweep"]["ham_cutoff"]
    assert 0.85 in [r["cutoff"] for r in spam_side] and 0.15 in [r["cutoff"] for r in ham_side]
    # the verdicts flag no more than the cut-off in use alone would (each fold's spam floor may hold some back)
    [at] = [r for r in spam_side if r["cutoff"] == 0.85]
    assert at["ham_lost"] >= result["false_positives"] and at["spam_missed"] <= result["false_negatives"]
    # more ham passes as the ham cut-off rises, and more spam slips through with it
    assert [r["ham_not_passed"] for r in ham_side] == sorted((r["ham_not_passed"] for r in ham_side), reverse=True)
    assert [r["spam_passed_as_ham"] for r in ham_side] == sorted(r["spam_passed_as_ham"] for r in ham_side)
    table = run_cli("eval", "--index", index, "--folds", "2", "--ham-cutoff", "0.15")
    assert "ham side" in table.stdout and "spam side" in table.stdout and "0.15 (in use)" in table.stdout
