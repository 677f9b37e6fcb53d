"""`--dask`: train and classify on a Dask cluster give what they give without it.

Most tests run on one in-process LocalCluster (threads, two workers) with shards of a
few files, so the tree of merges has several levels; those of the command line's own
`--dask local` and of lost workers run worker processes.
"""
from __future__ import annotations

import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from spamnb.bayes import nb
from spamnb.mail import headers, sources
from spamnb.models import store
from spamnb.models.model import Scoring
from spamnb.run import classifier
from spamnb.scale import cluster
from spamnb.text.tokens import TokenSettings
from tests.conftest import Corpus, run_cli, write_files
from tests.test_cli import assert_one_line_error, ok

pytest.importorskip("distributed")

SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus"
SPAM, HAM = str(SAMPLE / "maildir" / "spam"), str(SAMPLE / "maildir" / "ham")


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    with cluster.connect("local", 2, processes=False) as c:
        yield c


def fresh(event: str = "fisher") -> store.Model:
    return store.empty_model(TokenSettings(), Scoring(event=event))


def assert_same_model(a: store.Model, b: store.Model) -> None:
    left, right = store.to_arrays(a), store.to_arrays(b)
    assert left.keys() == right.keys()
    for k in left:
        assert np.array_equal(left[k], right[k]), k


def learn_both(client: object, spam: list[str], ham: list[str], index: str | None = None, base: tuple[store.Model, store.Model] | None = None, forget: bool = False, shard: int = 7, jobs: int = 1):
    local, remote = base or (fresh(), fresh())
    want = classifier.learn(local, sources.read_labelled(spam, ham, index), forget=forget, jobs=jobs)
    got = cluster.learn(client, remote, sources.locate_labelled(spam, ham, index), forget=forget, jobs=jobs, shard=shard)
    assert got == want
    assert_same_model(local, remote)
    return local, remote


@pytest.mark.parametrize("event", ["fisher", "multinomial", "bernoulli"])
def test_train_gives_the_same_model(client: object, event: str) -> None:
    local, remote = fresh(event), fresh(event)
    learn_both(client, [SPAM], [HAM], base=(local, remote), jobs=2)
    assert local.scoring.calibration != Scoring().calibration  # fitted, and fitted alike


def test_calibration_sample_drawn_alike(client: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # Fewer sample places than messages: the reservoir replaces, and the cluster keeps the same ones.
    monkeypatch.setattr(classifier, "CALIBRATION_SAMPLE", 70)
    local, _ = learn_both(client, [SPAM], [HAM], shard=3)
    monkeypatch.setattr(classifier, "CALIBRATION_SAMPLE", 10_000)
    assert local.scoring.calibration != learn_both(client, [SPAM], [HAM])[0].scoring.calibration


def test_a_move_within_one_run_is_calibrated_alike(client: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # 15 spam learnt as spam, then from a copy as ham in the same run: only their last offers are sampled.
    copies = tmp_path / "copies"
    copies.mkdir()
    for path in sorted(Path(SPAM).rglob("*"))[:15]:
        if path.is_file():
            (copies / path.name).write_bytes(path.read_bytes())
    monkeypatch.setattr(classifier, "CALIBRATION_SAMPLE", 90)
    local, _ = learn_both(client, [SPAM], [copies, HAM], shard=3)
    assert local.counts.docs.min() >= 30
    assert local.scoring.calibration != Scoring().calibration


def test_learn_again_moves_and_forgets_alike(client: object, tmp_path: Path) -> None:
    models = learn_both(client, [SPAM], [])
    # The ham folder, and the spam again learnt as ham: already known, then moved.
    learn_both(client, [], [HAM, SPAM], base=models)
    stray = write_files(tmp_path / "stray", [b"Subject: never learnt\n\nnothing here\n"])[0]
    report = learn_both(client, [SPAM, str(stray)], [], base=models, forget=True)
    assert report[0].counts.docs.tolist() == [56, 0]


def test_messages_known_by_their_legacy_digest_move_alike(client: object) -> None:
    # An older model knows the spam by its legacy digest: pass 2 must find that key again.
    models = learn_both(client, [], [SPAM])
    by_legacy = {headers.digest(m.data): headers.legacy_digests(m.data)[1] for m in sources.read_all([SPAM]) if isinstance(m, sources.Message)}
    assert any(new != old for new, old in by_legacy.items())
    for model in models:
        model.learnt = {by_legacy.get(key, key): cls for key, cls in model.learnt.items()}
    local, _ = learn_both(client, [SPAM], [], base=models)
    assert local.counts.docs.tolist() == [0, len(by_legacy)]


def test_problems_reported_once_in_place(client: object, corpus: Corpus, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    write_files(folder, corpus.spam[:5])
    (folder / "m_empty").write_bytes(b"")
    os.mkfifo(folder / "m_fifo")
    local, _ = learn_both(client, [str(folder), str(corpus.spam_mbox)], [str(corpus.ham_mbox)], shard=2)
    want = list(classifier.classify(local, sources.read_all([str(folder), str(corpus.ham_mbox)])))
    got = list(cluster.classify(client, local, sources.locate_all([str(folder), str(corpus.ham_mbox)]), shard=2))
    assert got == want
    assert [p.reason for p in got if isinstance(p, sources.Problem)] == ["empty file", sources.NOT_REGULAR]


def test_classify_same_results_in_order(client: object) -> None:
    model, _ = learn_both(client, [SPAM], [HAM])
    srcs = [str(SAMPLE / "spam.mbox"), str(SAMPLE / "ham.mbox"), HAM]
    want = list(classifier.classify(model, sources.read_all(srcs)))
    got = list(cluster.classify(client, model, sources.locate_all(srcs), shard=1))
    assert got == want
    assert got[0].id == f"{SAMPLE / 'spam.mbox'}:1"


def test_tree_reduce_keeps_order_and_merges_pairs(client: object) -> None:
    seen: list[int] = []

    def merge(a: list[int], b: list[int]) -> list[int]:
        seen.append(2)
        return a + b

    for n in range(0, 10):
        reduce = cluster.TreeReduce(client, merge)
        for i in range(n):
            reduce.push(client.submit(lambda i=i: [i]))
        assert reduce.result() == (list(range(n)) if n else None)


def test_cli_dask_local_writes_the_same_file(tmp_path: Path) -> None:
    plain, dask = tmp_path / "plain.npz", tmp_path / "dask.npz"
    ok("train", "-m", plain, "--spam", SPAM, "--ham", HAM, "--jobs", "2")
    ok("train", "-m", dask, "--spam", SPAM, "--ham", HAM, "--jobs", "2", "--dask", "local")
    assert plain.read_bytes() == dask.read_bytes()


@pytest.mark.parametrize("args", [["train", "--spam", "-"], ["classify"], ["classify", SPAM, "-"]])
def test_stdin_refused(tmp_path: Path, args: list[str]) -> None:
    result = run_cli(args[0], "-m", tmp_path / "m.npz", *args[1:], "--dask", "local", stdin=b"Subject: x\n\nx\n")
    assert_one_line_error(result, "stdin")


def test_pipe_does_not_go_with_dask_and_passes_the_mail(tmp_path: Path) -> None:
    mail = b"Subject: x\n\nx\n"
    result = run_cli("classify", "-m", tmp_path / "m.npz", "--pipe", "--dask", "local", stdin=mail)
    assert result.exit_code == 3 and result.stdout_bytes == mail
    assert "--dask" in result.stderr


def test_without_dask_one_line_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    result = run_cli("train", "-m", tmp_path / "m.npz", "--spam", SPAM, "--dask", "local")
    assert_one_line_error(result, "pip install 'spamnb[dask]'")
    assert not (tmp_path / "m.npz").exists()


def test_unreachable_scheduler_one_line(tmp_path: Path) -> None:
    import dask

    ok("train", "-m", tmp_path / "m.npz", "--spam", SPAM, "--jobs", "1")
    with dask.config.set({"distributed.comm.timeouts.connect": "0.5s"}):
        result = run_cli("classify", "-m", tmp_path / "m.npz", SPAM, "--dask", "tcp://127.0.0.1:9")
    assert_one_line_error(result, "tcp://127.0.0.1:9")


def test_7_an_endpoint_that_accepts_and_never_answers_is_an_error_within_the_timeout(tmp_path: Path) -> None:
    """Issue 27 item 7: on main `classify --dask` to it waited for ever (1,124 s before it was killed)."""
    ok("train", "-m", tmp_path / "m.npz", "--spam", SPAM, "--ham", HAM, "--jobs", "1")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
        spamnb = Path(sys.executable).with_name("spamnb")
        done = subprocess.run([str(spamnb), "-q", "classify", "-m", str(tmp_path / "m.npz"), SPAM, "--dask", address], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines() == [f"spamnb: error: --dask {address}: no Dask scheduler answers there (no answer within 2 s; DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT sets how long to wait)"]


def console(*args: str, timeout: float = 120, **popen: object) -> subprocess.CompletedProcess[str]:
    spamnb = Path(sys.executable).with_name("spamnb")
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"}
    return subprocess.run([str(spamnb), "-q", *args], capture_output=True, text=True, env=env, timeout=timeout, **popen)


@pytest.mark.parametrize("scheme", ["http", "ucx"])
def test_12_an_address_that_is_no_scheduler_is_one_line(tmp_path: Path, scheme: str) -> None:
    """Issue 27 item 12: an HTTP server's reply was read as a frame length ("internal error:
    MemoryError: Unable to allocate 3.07 EiB"); ucx:// without ucx was an internal TypeError."""
    ok("train", "-m", tmp_path / "m.npz", "--spam", SPAM, "--ham", HAM, "--jobs", "1")
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler) as web:
        threading.Thread(target=web.serve_forever, daemon=True).start()
        address = f"{'tcp' if scheme == 'http' else 'ucx'}://127.0.0.1:{web.server_address[1]}"
        try:
            done = console("classify", "-m", str(tmp_path / "m.npz"), SPAM, "--dask", address)
        finally:
            web.shutdown()
    assert done.returncode == 3, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"spamnb: error: --dask {address}: no Dask scheduler answers there ("), done.stderr


def test_12_a_scheduler_lost_mid_train_is_one_line_and_saves_nothing(tmp_path: Path) -> None:
    """Issue 27 item 12: the scheduler going away was an internal FutureCancelledError, with
    Dask's reconnection traceback logged on stderr before it."""
    info = tmp_path / "scheduler.json"
    log = tmp_path / "scheduler.log"
    dask_cli = Path(sys.executable).with_name("dask")
    with log.open("w") as out:
        scheduler = subprocess.Popen(
            [str(dask_cli), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(info)],
            stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        waited = wait_for(lambda: info.exists() and info.stat().st_size > 0)
        assert waited, log.read_text()
        address = json.loads(info.read_text())["address"]
        # No worker: the work waits at the scheduler until the scheduler is stopped.
        model = tmp_path / "m.npz"
        train = subprocess.Popen(
            [str(Path(sys.executable).with_name("spamnb")), "-q", "train", "-m", str(model), "--spam", SPAM, "--ham", HAM, "--dask", address],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert wait_for(lambda: "Receive client connection" in log.read_text()), log.read_text()
    finally:
        scheduler.terminate()
        scheduler.wait(timeout=60)
    out, err = train.communicate(timeout=120)
    assert train.returncode == 3, err
    # Dask's reason depends on when the client notices: scheduler-connection-lost or unknown.
    assert re.fullmatch(
        rf"spamnb: error: --dask {re.escape(address)}: the work was cancelled, the scheduler or its workers lost "
        r"\(Dask's reason: [a-z -]+\); the run stopped and nothing was saved\n",
        err,
    ), err
    assert not model.exists()


def wait_for(ready: Callable[[], bool], within: float = 60) -> bool:
    end = time.monotonic() + within
    while not ready():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def test_nothing_imports_dask_unless_asked(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom spamnb.entry import main\n"
        f"sys.argv = ['spamnb', '-q', 'train', '-m', {str(tmp_path / 'm.npz')!r}, '--spam', {SPAM!r}, '--ham', {HAM!r}, '--jobs', '1']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_message_scores_the_same_in_any_chunk() -> None:
    # The cluster cuts the mail into other chunks than the local pool: each message's
    # floats must not depend on its neighbours (Fisher's chi-square sums; unknown tokens).
    model = fresh()
    classifier.learn(model, list(sources.read_labelled([SPAM], [HAM]))[::3])
    step = classifier.Score.of(model)
    datas = [m.data for m in sources.read_all([SPAM, HAM]) if isinstance(m, sources.Message)]
    together = classifier.score_chunk(step, datas)
    reversed_ = classifier.score_chunk(step, datas[::-1])[::-1]
    alone = np.concatenate([classifier.score_chunk(step, [d]) for d in datas])
    assert together.tolist() == alone.tolist() == reversed_.tolist()


@pytest.mark.parametrize("train_size", [None, 40])
def test_eval_folds_score_alike(client: object, train_size: int | None) -> None:
    index = str(SAMPLE / "index")
    want = classifier.cross_validate(sources.read_labelled([], [], index), 5, TokenSettings(), Scoring(), jobs=2, train_size=train_size)
    data = cluster.tokenise_labelled(client, sources.locate_labelled([], [], index), TokenSettings(), jobs=2, shard=9)
    assert classifier.folds_scored(data, 5, Scoring(), train_size=train_size) == want


def test_cli_eval_with_a_model_same_figures(tmp_path: Path) -> None:
    model = tmp_path / "m.npz"
    ok("train", "-m", model, "--spam", SPAM, "--ham", HAM, "--jobs", "1")
    args = ["eval", "-m", model, "--index", SAMPLE / "index", "--json", "--jobs", "1"]
    assert ok(*args, "--dask", "local").stdout == ok(*args).stdout


def test_mail_changed_between_the_passes_is_an_error(tmp_path: Path, corpus: Corpus) -> None:
    files = write_files(tmp_path / "m", corpus.spam[:2])
    [part] = cluster.shards(sources.locate_source(str(tmp_path / "m"), "spam"))
    keyed = cluster.shard_keys(part, 1 << 20)
    plan = cluster.Plan([0, 1], [k for _, k, _, _ in keyed], classifier.Changes(0, [0, 1], [1, 1], [1, 1]))
    model = fresh()
    work = cluster.Work(classifier.Tokenise.of(model.tokens, model.scoring), 256, model.tokens.max_bytes)
    assert len(cluster.shard_counts(part, plan, 0, [], work).tokens) > 0
    files[1].write_bytes(corpus.spam[1] + b"\nedited\n")
    with pytest.raises(cluster.ClusterError, match="changed while training"):
        cluster.shard_counts(part, plan, 0, [], work)


# --- failures: a worker lost, a train that cannot finish ---
#
# A test replaces a worker task (cluster.shard_keys, cluster.shard_counts) by a closure.
# cloudpickle sends a closure by value, so it reaches the worker processes, which Dask
# spawns; there `cluster` is the worker's own, unpatched module, so the closure calls the
# real task.


@pytest.fixture(scope="module")
def processes() -> Iterator[object]:
    with cluster.connect("local", 2) as c:
        yield c


def holds(shard: cluster.Shard, target: str) -> bool:
    return any(not isinstance(place, sources.Problem) and place[1] == target for place in shard)


def dies_once_on(task: str, target: str, marker: Path) -> Callable[..., object]:
    """cluster.<task>, but the worker process dies the first time it is given the shard
    holding `target` (the marker file says it happened)."""

    def step(shard: cluster.Shard, *args: object, **kwargs: object) -> object:
        if holds(shard, target) and not marker.exists():
            marker.touch()
            os._exit(1)
        return getattr(cluster, task)(shard, *args, **kwargs)

    return step


def labelled_with_problems(tmp_path: Path, corpus: Corpus) -> tuple[list[str], list[str], str]:
    """The sample maildirs and a folder with an empty file and a FIFO among spam: (spam, ham, a file in the middle)."""
    folder = tmp_path / "mixed"
    files = write_files(folder, corpus.spam[:6])
    (folder / "msg002.empty").write_bytes(b"")
    os.mkfifo(folder / "msg004.fifo")
    return [SPAM, str(folder)], [HAM], str(files[3])


@pytest.mark.parametrize("task", ["shard_keys", "shard_counts"])
def test_a_worker_lost_mid_train_changes_nothing(processes: object, task: str, tmp_path: Path, corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    # Dask reruns the lost worker's task, and the partials it held, on a live one: the
    # model is the local train's, array for array, and each Problem is reported once.
    spam, ham, target = labelled_with_problems(tmp_path, corpus)
    marker = tmp_path / "died"
    monkeypatch.setattr(cluster, task, dies_once_on(task, target, marker))
    learn_both(processes, spam, ham, shard=4, jobs=2)
    assert marker.exists()
    report = classifier.learn(fresh(), sources.read_labelled(spam, ham))
    assert [p.reason for p in report.problems] == ["empty file", sources.NOT_REGULAR]


def test_the_only_worker_lost_mid_count_changes_nothing(tmp_path: Path, corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    # The work sent to the workers died with the only one holding it: every count then
    # fails for "lost dependencies" (on main before this test, for ever: the model was not
    # written); learn sends it anew and counts again once the nanny has restarted it.
    spam, ham, target = labelled_with_problems(tmp_path, corpus)
    marker = tmp_path / "died"
    monkeypatch.setattr(cluster, "shard_counts", dies_once_on("shard_counts", target, marker))
    with cluster.connect("local", 1) as single:
        learn_both(single, spam, ham, shard=4, jobs=2)
    assert marker.exists()


def dies_every_time_on(target: str) -> Callable[..., object]:
    def step(shard: cluster.Shard, *args: object, **kwargs: object) -> object:
        if holds(shard, target):
            os._exit(1)
        return cluster.shard_counts(shard, *args, **kwargs)

    return step


def edits_after_reading(target: str) -> Callable[..., object]:
    """cluster.shard_keys, then the target file is written to, as if new mail were saved over it between the passes."""

    def step(shard: cluster.Shard, *args: object, **kwargs: object) -> object:
        keys = cluster.shard_keys(shard, *args, **kwargs)
        if holds(shard, target):
            with open(target, "ab") as out:
                out.write(b"\nedited\n")
        return keys

    return step


@pytest.mark.parametrize(("task", "replace", "says"), [
    ("shard_counts", dies_every_time_on, "1 worker died running task"),
    ("shard_keys", edits_after_reading, "the mail changed while training"),
])
def test_a_failed_train_leaves_the_model_as_it_was(
    task: str, replace: Callable[[str], Callable[..., object]], says: str, tmp_path: Path, corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dask

    model = tmp_path / "model" / "m.npz"
    model.parent.mkdir()
    ok("-q", "train", "-m", model, "--spam", SPAM, "--ham", HAM, "--jobs", "1")
    before, files = model.read_bytes(), sorted(model.parent.iterdir())
    spam, ham, target = labelled_with_problems(tmp_path, corpus)
    monkeypatch.setattr(cluster, task, replace(target))
    # A task that kills its worker fails the train at once, not after Dask's 3 retries.
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        result = run_cli("-q", "train", "-m", model, "--spam", spam[0], "--spam", spam[1], "--ham", ham[0], "--jobs", "2", "--dask", "local")
    assert_one_line_error(result, says)
    assert model.read_bytes() == before
    assert sorted(model.parent.iterdir()) == files


@pytest.mark.parametrize("scoring", [Scoring(), Scoring(event="multinomial", tf="log", idf=True, length_norm="l2")], ids=["fisher", "weighted"])
def test_moves_and_forgets_after_pruning_agree(client: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scoring: Scoring) -> None:
    # Pruned tokens have lost their counts, so moving or forgetting a message takes them
    # below zero. A train adds all its changes, then sets what is below zero to zero, once:
    # the model then depends neither on the chunks (--jobs) nor on the cluster's shards.
    monkeypatch.setattr(classifier, "CHUNK", 4)  # chunks of 4 messages with --jobs 1, of 2 with --jobs 2
    spam = sorted(str(p) for p in Path(SPAM).rglob("*") if p.is_file())
    old, new = spam[: len(spam) // 2], spam[len(spam) // 2 :]
    models = [store.empty_model(TokenSettings(), scoring) for _ in range(3)]
    for model in models:
        classifier.learn(model, sources.read_labelled(old, [HAM]))
        model.prune(nb.Pruning(min_count=2, max_tokens=40))
    index = tmp_path / "index"
    # Moves (spam taken off) between new spam (spam added), one after the other.
    index.write_text("".join(f"ham {a}\nspam {b}\n" for a, b in zip(old, new, strict=False)))
    forget = new[::3] + [str(p) for p in sorted(Path(HAM).rglob("*")) if p.is_file()][::4]
    for labelled in ([], [], str(index)), (forget, [], None):
        spam_srcs, ham_srcs, idx = labelled
        for model, jobs in zip(models[:2], (1, 2), strict=True):
            classifier.learn(model, sources.read_labelled(spam_srcs, ham_srcs, idx), forget=spam_srcs is forget, jobs=jobs)
        cluster.learn(client, models[2], sources.locate_labelled(spam_srcs, ham_srcs, idx), forget=spam_srcs is forget, jobs=2, shard=3)
        assert_same_model(models[0], models[1])
        assert_same_model(models[0], models[2])
    assert (models[0].counts.tf >= 0).all()


def test_train_weighted_gives_the_same_model(client: object) -> None:
    """A TF-IDF weighted model: the workers' weighted sums (fixed point) add up to the local ones exactly."""
    scoring = Scoring(event="complement", tf="log", idf=True, length_norm="l2")
    learn_both(client, [SPAM], [HAM], base=(store.empty_model(TokenSettings(), scoring), store.empty_model(TokenSettings(), scoring)), jobs=2)


@pytest.mark.parametrize("kind", ["gaussian", "gda"])
def test_the_numeric_features_learn_score_and_cross_validate_alike(client: object, kind: str) -> None:
    scoring = Scoring(meta=kind)
    models = learn_both(client, [SPAM], [HAM], base=(store.empty_model(TokenSettings(), scoring), store.empty_model(TokenSettings(), scoring)), jobs=2)
    assert models[0].moments[:, 0, 0].tolist() == [56, 54]
    srcs = [HAM, SPAM]
    assert list(cluster.classify(client, models[0], sources.locate_all(srcs), shard=3)) == list(classifier.classify(models[0], sources.read_all(srcs)))
    learn_both(client, [SPAM], [], base=models, forget=True)
    index = str(SAMPLE / "index")
    want = classifier.cross_validate(sources.read_labelled([], [], index), 5, TokenSettings(), scoring, jobs=2)
    data = cluster.tokenise_labelled(client, sources.locate_labelled([], [], index), TokenSettings(), jobs=2, shard=9, numeric=True)
    assert classifier.folds_scored(data, 5, scoring) == want
