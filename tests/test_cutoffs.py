"""Verdict cut-offs a user can set: stored by `train`, for one run by `classify`
(the pipe too), checked, and shown on both sides by `eval` (issue 19, item 1).  A cut-off
the user sets is the cut-off: the ham-loss floor holds back only the default's verdicts,
and every output says where it did (issue 26)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_corpus"
SPAMNB = Path(sys.executable).parent / "spamnb"


def verdict(score: float, spam: float, ham: float) -> str:
    """The verdict rule for cut-offs the user set."""
    return "spam" if score >= spam else "ham" if score <= ham else "unsure"


def floor_of(model: Path) -> float:
    return json.loads(run_cli("inspect", "-m", model, "--json").stdout)["scoring"]["spam_floor"]


def spamnb(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """The console script, as a user runs it."""
    return subprocess.run([str(SPAMNB), *map(str, args)], input=stdin, capture_output=True, timeout=120)


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
    assert all(r["verdict"] == verdict(r["score"], 0.7, 0.3) for r in rows)
    assert info["scoring"]["spam_cutoff_set"] is True and not any("ham_loss_floor" in r for r in rows)


def test_classify_cutoffs_hold_for_one_run_only(model: Path) -> None:
    rows = scored(model, "--spam-cutoff", "0.55", "--ham-cutoff", "0.45")
    assert all(r["verdict"] == verdict(r["score"], 0.55, 0.45) for r in rows)
    # a score between the two settings proves the options changed a verdict
    assert any(verdict(r["score"], 0.55, 0.45) != verdict(r["score"], 0.7, 0.3) for r in rows)
    info = json.loads(run_cli("inspect", "-m", model, "--json").stdout)
    assert (info["scoring"]["spam_cutoff"], info["scoring"]["ham_cutoff"]) == (0.7, 0.3)
    assert all(r["verdict"] == verdict(r["score"], 0.7, 0.3) for r in scored(model))


@pytest.mark.parametrize("click_path", [False, True])
def test_pipe_takes_the_cutoffs(model: Path, click_path: bool) -> None:
    # a message under the model's spam floor: a cut-off given decides all the same
    row = min((r for r in scored(model) if 0.02 < r["score"] < min(floor_of(model), 0.998)), key=lambda r: r["score"])
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
        ("--spam-cutoff", "1.5"),
        ("--ham-cutoff", "-0.1"),
        ("--spam-cutoff", "nan"),
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
    # the cut-off given is the cut-off: its row of the sweep is the verdicts' confusion
    [at] = [r for r in spam_side if r["cutoff"] == 0.85]
    assert (at["ham_lost"], at["spam_missed"], result["floor_decided"]) == (result["false_positives"], result["false_negatives"], 0)
    # more ham passes as the ham cut-off rises, and more spam slips through with it
    assert [r["ham_not_passed"] for r in ham_side] == sorted((r["ham_not_passed"] for r in ham_side), reverse=True)
    assert [r["spam_passed_as_ham"] for r in ham_side] == sorted(r["spam_passed_as_ham"] for r in ham_side)
    table = run_cli("eval", "--index", index, "--folds", "2", "--ham-cutoff", "0.15")
    assert "ham side" in table.stdout and "spam side" in table.stdout and "0.15 (in use)" in table.stdout


@pytest.fixture(scope="module")
def floored(halves: Path) -> tuple[Path, float, list[dict]]:
    """Half the sample learnt with the default cut-offs, its floor above 0.95 (so few messages
    learnt), and the held-out messages classified by the console script."""
    path = halves / "default.npz"
    done = spamnb("-q", "train", "-m", path, "--spam", halves / "spam", "--ham", halves / "ham")
    assert done.returncode == 0, done.stderr
    floor = floor_of(path)
    assert floor > 0.95  # else this sample cannot show the floor deciding
    done = spamnb("classify", "-m", path, "--json", halves / "test")
    assert done.returncode == 0, done.stderr
    return path, floor, [json.loads(line) for line in done.stdout.splitlines()]


def held(rows: list[dict], floor: float) -> list[dict]:
    return [r for r in rows if 0.95 <= r["score"] <= floor]


def test_the_floor_holds_back_only_the_default_and_says_so(floored: tuple[Path, float, list[dict]]) -> None:
    path, floor, rows = floored
    under = held(rows, floor)
    assert under, "no held-out message between the cut-off and the floor"
    for r in rows:
        assert r["verdict"] == ("unsure" if r in under else verdict(r["score"], max(0.95, floor + 1e-12), 0.1))
        assert r.get("ham_loss_floor") == (floor if r in under else None)
    done = spamnb("classify", "-m", path, "--json", "--spam-cutoff", "0.95", path.parent / "test")
    given = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and [r["score"] for r in given] == [r["score"] for r in rows]
    assert all(r["verdict"] == verdict(r["score"], 0.95, 0.1) and "ham_loss_floor" not in r for r in given)
    assert {r["id"] for r in given if r["verdict"] == "spam"} >= {r["id"] for r in under}
    piped = [line.split("\t") for line in spamnb("classify", "-m", path, path.parent / "test").stdout.decode().splitlines()]
    assert [f[3:] for f in piped] == [[f"floor={floor:.4f}"] if r in under else [] for r in rows]


def test_the_pipe_says_when_the_floor_decided(floored: tuple[Path, float, list[dict]]) -> None:
    path, floor, rows = floored
    row = held(rows, floor)[0]
    message = Path(row["id"]).read_bytes()
    done = spamnb("classify", "--pipe", "-m", path, "--reasons", "2", stdin=message)
    assert done.returncode == 2
    unfolded = done.stdout.replace(b"\n ", b" ")
    assert f"X-Spamnb: unsure, score={row['score']:.4f}, floor={floor:.4f}, tokens=".encode() in unfolded
    done = spamnb("classify", "--pipe", "-m", path, "--spam-cutoff", "0.95", stdin=message)
    assert done.returncode == 0 and f"X-Spamnb: spam, score={row['score']:.4f}\n".encode() in done.stdout


def test_explain_says_when_the_floor_decided(floored: tuple[Path, float, list[dict]]) -> None:
    path, floor, rows = floored
    row = held(rows, floor)[0]
    done = spamnb("inspect", "-m", path, "--explain", row["id"], "--json")
    shown = json.loads(done.stdout)
    assert (shown["verdict"], shown["ham_loss_floor"]) == ("unsure", floor)
    text = spamnb("inspect", "-m", path, "--explain", row["id"]).stdout.decode()
    assert "unsure" in text and "ham-loss floor" in text and "used as given" in text


def test_eval_sweep_agrees_with_the_verdicts() -> None:
    done = spamnb("eval", "--index", SAMPLE / "index", "--folds", "2", "--json")
    result = json.loads(done.stdout)
    spam_side = {r["cutoff"]: r for r in result["sweep"]["spam_cutoff"]}
    at = spam_side[result["spam_cutoff"]]
    # the 0.95 row is what --spam-cutoff 0.95 gives; the floor held back the difference
    assert result["floor_decided"] > 0
    assert at["ham_lost"] >= result["false_positives"]
    assert at["spam_missed"] + result["floor_decided"] >= result["false_negatives"] > at["spam_missed"]
    table = spamnb("eval", "--index", SAMPLE / "index", "--folds", "2").stdout.decode()
    assert re.search(rf"0\.95 and the ham-loss floor \(in use\)\W+{result['false_positives']}\W+{result['false_negatives']}\W", table)
    given = json.loads(spamnb("eval", "--index", SAMPLE / "index", "--folds", "2", "--json", "--spam-cutoff", "0.95").stdout)
    assert (given["false_positives"], given["false_negatives"], given["floor_decided"]) == (at["ham_lost"], at["spam_missed"], 0)
