"""Exit statuses and messages that agree (issue 19, items 4 and 8): usage errors exit 2
everywhere, Ctrl-C 130 without a traceback, `-q` after the subcommand too."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.conftest import make_mail, mboxrd, run_cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_corpus"
SPAMNB = Path(sys.executable).parent / "spamnb"


def one_line_error(done: Result, code: int, *needles: str) -> str:
    assert done.exit_code == code, (done.exit_code, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("spamnb: error: "), done.stderr
    for needle in needles:
        assert needle in lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exits") / "model.npz"
    done = run_cli("-q", "train", "-m", path, "--spam", SAMPLE / "maildir/spam", "--ham", SAMPLE / "maildir/ham")
    assert done.exit_code == 0, done.stderr
    return path


def test_quiet_after_the_subcommand_silences_train(tmp_path: Path) -> None:
    for args in (["-q", "train"], ["train", "-q"], ["train", "--quiet"]):
        path = tmp_path / f"{len(args[0])}.npz"
        done = run_cli(*args, "-m", path, "--spam", SAMPLE / "spam.mbox", "--ham", SAMPLE / "ham.mbox")
        assert (done.exit_code, done.stderr) == (0, ""), (args, done.stderr)
        assert path.exists()
    loud = run_cli("train", "-m", tmp_path / "loud.npz", "--spam", SAMPLE / "spam.mbox")
    assert re.search(r"learnt \d+, moved 0, already known 0; model holds \d+ spam", loud.stderr)


def test_quiet_goes_after_every_subcommand(model: Path) -> None:
    assert run_cli("classify", "-q", "-m", model, SAMPLE / "spam.mbox").exit_code == 0
    assert run_cli("inspect", "-m", model, "-q").exit_code == 0
    assert run_cli("eval", "-q", "--index", SAMPLE / "index", "--folds", "2", "--json").exit_code == 0
    # and the pipe's fast path reads it there too (the message is scored, not refused)
    message = (SAMPLE / "maildir/spam/cur").iterdir().__next__().read_bytes()
    proc = subprocess.run([str(SPAMNB), "classify", "-q", "--pipe", "-m", str(model)], input=message, capture_output=True, timeout=60)
    assert proc.returncode in (0, 1, 2) and b"X-Spamnb: " in proc.stdout, proc.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["eval", "--index", SAMPLE / "index", "--folds", "1"], "--folds"),
        (["eval", "--index", SAMPLE / "index", "--fail-under", "acc=0.9"], "'acc'"),
        (["eval", "--index", SAMPLE / "index", "--fail-over", "fpr=0.01"], "'fpr'"),
        (["eval", "--index", SAMPLE / "index", "--fail-over", "false_positive_rate"], "METRIC=VALUE"),
        (["inspect", "--top", "0"], "--top"),
    ],
)
def test_usage_errors_exit_2(args: list[str], needle: str) -> None:
    one_line_error(run_cli(*args), 2, needle)


def test_fail_over_bounds_a_lower_is_better_metric() -> None:
    base = ["eval", "--index", SAMPLE / "index", "--folds", "2", "--json"]
    result = json.loads(run_cli(*base).stdout)
    fnr = result["false_negative_rate"]
    assert fnr > 0  # the sample's small folds leave spam unsure
    assert run_cli(*base, "--fail-over", f"false_negative_rate={fnr}").exit_code == 0
    failing = run_cli(*base, "--fail-over", f"false_negative_rate={fnr / 2}", "--fail-under", "auc=0")
    assert failing.exit_code == 1
    assert failing.stderr.splitlines() == [f"spamnb: fail: false_negative_rate = {fnr:.6g} is over the ceiling {fnr / 2:g}"]


def test_bare_spamnb_prints_help() -> None:
    proc = subprocess.run([str(SPAMNB)], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0
    assert proc.stdout.startswith(b"Usage: spamnb") and b"classify" in proc.stdout
    assert proc.stderr == b""


def test_a_mailbox_given_as_the_model_is_named_for_what_it_is(tmp_path: Path) -> None:
    archive = tmp_path / "archive.mbox"  # a copy: train takes its lock beside the file it is given
    archive.write_bytes((SAMPLE / "spam.mbox").read_bytes())
    for command in (["classify", SAMPLE / "ham.mbox"], ["inspect"], ["train", "--spam", SAMPLE / "spam.mbox"]):
        line = one_line_error(run_cli(command[0], "-m", archive, *command[1:]), 3, "not a spamnb model", "it holds mail")
        assert "pickle" not in line
    one_line_error(run_cli("inspect", "-m", SAMPLE / "maildir/spam"), 3, "not a spamnb model (not a regular file)")
    # the pipe too: the message passes through, one line says why
    message = make_mail()
    proc = subprocess.run([str(SPAMNB), "classify", "--pipe", "-m", str(archive)], input=message, capture_output=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (3, message)
    assert b"it holds mail" in proc.stderr and b"pickle" not in proc.stderr


def test_switching_the_event_model_is_refused(model: Path, tmp_path: Path) -> None:
    copy = tmp_path / "model.npz"
    copy.write_bytes(model.read_bytes())
    for option in (["--event", "multinomial"], ["--alpha", "0.5"]):
        done = run_cli("train", "-m", copy, "--spam", SAMPLE / "spam.mbox", *option)
        one_line_error(done, 2, "--event fisher --alpha 0.01", "train a new model")
        assert copy.read_bytes() == model.read_bytes()
    # naming the settings it already has is no change
    assert run_cli("-q", "train", "-m", copy, "--spam", SAMPLE / "spam.mbox", "--event", "fisher", "--alpha", "0.01").exit_code == 0


# read(2)'s number, as /proc/PID/syscall gives it (the first field; the second is the fd).
READ_SYSCALL = {"x86_64": "0", "aarch64": "63"}


def reading_stdin(pid: int) -> bool:
    """Whether the process sits in read(2) on its stdin: ready to be interrupted there."""
    if os.uname().machine not in READ_SYSCALL:
        pytest.skip(f"read(2)'s number on {os.uname().machine} is not known here")
    fields = Path(f"/proc/{pid}/syscall").read_text().split()
    return fields[:2] == [READ_SYSCALL[os.uname().machine], "0x0"]


def has_workers(pid: int) -> bool:
    return bool(Path(f"/proc/{pid}/task/{pid}/children").read_text().split())


def ctrl_c_as_at_a_terminal() -> None:
    """SIGINT at its default in the child, as a terminal starts a program: a test run started
    in the background (`make test &`) hands its children SIGINT ignored, which Python keeps."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupted(args: list[str], ready: Callable[[int], bool]) -> subprocess.CompletedProcess[bytes]:
    """Run spamnb ARGS in a session of its own and, once `ready(pid)`, Ctrl-C it.

    The group is stopped (SIGSTOP) as soon as it is seen ready, so that it cannot finish
    or move on before the SIGINT: that waits while it is stopped and is the first thing it
    meets when it continues.  No timing: each wait is for what the child does or is.
    """
    proc = subprocess.Popen(
        [str(SPAMNB), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=ctrl_c_as_at_a_terminal
    )
    while not ready(proc.pid):
        assert proc.poll() is None, f"spamnb ended before it was ready: {proc.communicate()}"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGSTOP)
    while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        time.sleep(0.01)
    assert ready(proc.pid)  # still: stopped where it was seen
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    os.killpg(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def test_ctrl_c_exits_130_without_a_traceback(tmp_path: Path) -> None:
    done = interrupted(["train", "-m", str(tmp_path / "m.npz"), "--spam", "-"], reading_stdin)
    assert done.returncode == 130, done.stderr
    assert done.stderr.decode().strip() == "spamnb: interrupted"
    assert not (tmp_path / "m.npz").exists()


def test_ctrl_c_stops_the_workers_quietly_too(tmp_path: Path) -> None:
    mbox = tmp_path / "big.mbox"
    mbox.write_bytes(mboxrd(make_mail(subject=f"note {i}", body=f"words {i} more words {i * 7}") for i in range(20000)))
    done = interrupted(["train", "-m", str(tmp_path / "m.npz"), "--jobs", "2", "--ham", str(mbox)], has_workers)
    assert done.returncode == 130, done.stderr
    assert b"Traceback" not in done.stderr and b"KeyboardInterrupt" not in done.stderr
    assert done.stderr.decode().strip() == "spamnb: interrupted"


# Started by Python in every process of the tests below (PYTHONPATH): an atexit function and a
# thread that waits for the main thread's end, each leaving a file behind, as a library's would.
LAST_WORDS = """\
import atexit, os, threading, time
here = os.environ["SPAMNB_TEST_LAST_WORDS"]
atexit.register(lambda: open(os.path.join(here, "atexit"), "w").close())
def late():
    threading.main_thread().join()
    time.sleep(0.2)
    open(os.path.join(here, "thread"), "w").close()
threading.Thread(target=late).start()
"""


def last_words_run(args: list[str], how: list[str], where: Path) -> tuple[int, str, str, dict[str, bytes]]:
    """`how` + `args` run in the folder `where` with LAST_WORDS: its exit status, stdout and
    stderr, and the files it left behind there (a model, its lock, what LAST_WORDS made)."""
    site = where / "site"
    site.mkdir(parents=True)
    (site / "sitecustomize.py").write_text(LAST_WORDS)
    env = {**os.environ, "PYTHONPATH": str(site), "SPAMNB_TEST_LAST_WORDS": str(where)}
    done = subprocess.run([*how, *args], cwd=where, env=env, capture_output=True, timeout=120)
    left = {p.name: p.read_bytes() for p in where.iterdir() if p.is_file()}
    return done.returncode, done.stdout.decode(), done.stderr.decode(), left


@pytest.mark.parametrize(
    "args",
    [
        ["train", "-m", "model.npz", "--spam", str(SAMPLE / "maildir/spam"), "--ham", str(SAMPLE / "maildir/ham")],
        ["train", "-m", "model.npz", "--jobs", "2", "--index", str(SAMPLE / "index")],
        # a file that is not mail: skipped, said on stderr, exit 1
        ["train", "-m", "model.npz", "--spam", str(SAMPLE / "spam.mbox"), "--ham", str(ROOT / "README.md")],
        ["classify", "-m", "MODEL", str(SAMPLE / "spam.mbox")],
        ["classify", "-m", "MODEL", "--json", "--jobs", "2", str(SAMPLE / "maildir")],
        # a file that is not mail: scored, with a warning on stderr among the lines
        ["classify", "-m", "MODEL", str(SAMPLE / "ham.mbox"), str(ROOT / "README.md")],
    ],
)
def test_commands_end_as_the_interpreter_would(args: list[str], model: Path, tmp_path: Path) -> None:
    """The console script ends `train` and `classify` without the interpreter's teardown
    (entry.console): exit status, stdout, stderr and files are those of `python -m spamnb`'s
    ordinary exit, and what the exit does first still happens (atexit's functions, threads joined)."""
    args = [str(model) if a == "MODEL" else a for a in args]
    at_once = last_words_run(args, [str(SPAMNB)], tmp_path / "console")
    ordinary = last_words_run(args, [sys.executable, "-m", "spamnb"], tmp_path / "module")
    assert at_once == ordinary
    status, stdout, stderr, left = at_once
    assert status == (1 if args[0] == "train" and "README.md" in args[-1] else 0), stderr  # classify scores it, with a warning
    assert {"atexit", "thread"} <= set(left) and ("model.npz" in left or args[0] == "classify")
    assert args[0] == "train" or stdout.count("\n") >= 10


# At the exit's atexit functions: how many models the process still holds.
MODELS_AT_EXIT = """
import atexit, gc, os, sys

def count():
    model = sys.modules.get("spamnb.models.model")
    held = sum(isinstance(o, model.Model) for o in gc.get_objects()) if model else -1
    with open(os.path.join(os.environ["SPAMNB_TEST_MODELS_AT_EXIT"], "models-at-exit"), "w") as out:
        out.write(str(held))

atexit.register(count)
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_train_through_the_console_script_ends_holding_its_model(jobs: str, tmp_path: Path) -> None:
    """The console script's exit frees nothing (entry.console), so neither does train's end:
    its model (a vocabulary of every token learnt) is held to the exit, not freed an
    object at a time as the command returns."""
    (tmp_path / "sitecustomize.py").write_text(MODELS_AT_EXIT)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "SPAMNB_TEST_MODELS_AT_EXIT": str(tmp_path)}
    args = [str(SPAMNB), "-q", "train", "-m", str(tmp_path / "model.npz"), "--jobs", jobs, "--index", str(SAMPLE / "index")]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert (tmp_path / "models-at-exit").read_text() == "1"
