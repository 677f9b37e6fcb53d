"""train, classify and eval on a Dask cluster (`--dask ADDRESS`): the only module that imports dask.

The client lists the files and the workers read them, a shard of files at a time, so
paths must be the same on every host (shared storage).  Each shard goes through the
same map step as the local process pool (classifier's worker functions).  Training's
partial counts come back up a tree of pairwise merges in shard order, so the columns
are numbered as a local train numbers them and every array of the model, calibration
included, comes out identical; the client saves the model once, after all of it.
"""
from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from spamnb.bayes import nb
from spamnb.bayes.vocabulary import Chunk, Vocabulary
from spamnb.mail import headers
from spamnb.mail.sources import Item, Located, Message, Problem, read_located
from spamnb.models.model import Model
from spamnb.run import classifier
from spamnb.text.tokens import TokenSettings

if TYPE_CHECKING:
    from distributed import Client, Future

INSTALL = "pip install 'spamnb[dask]'"
# Files per task: long enough that the scheduler's cost per task does not count, short
# enough to spread (under a second of a worker's CPU for mail of ordinary size).
SHARD = 1000


class ClusterError(ValueError):
    """The cluster cannot be used as asked; one line says why."""


def refuse_stdin(sources: Iterable[str]) -> None:
    """The workers read the mail, and cannot read the client's stdin."""
    if "-" in sources:
        raise ClusterError("--dask: the workers read the mail, so stdin (-) cannot be given; save the message to a file they can read")


def require() -> None:
    """Dask is an optional extra: say how to install it rather than fail on an import."""
    try:
        import distributed  # noqa: F401
    except ImportError as err:
        raise ClusterError(f"--dask needs Dask, which is not installed: {INSTALL}") from err


@contextlib.contextmanager
def connect(address: str, workers: int, processes: bool = True) -> Iterator[Client]:
    """A client of the scheduler at `address`, or of a LocalCluster of `workers` processes (`local`)."""
    require()
    # Here, not at the top: every batch command imports this module, and one without --dask
    # needs neither (they were a large part of its start-up).
    import concurrent.futures

    import dask
    from distributed import KilledWorker

    # The shards' file lists are the graph's data: with 200,000 files Dask warned on stderr
    # of a "large graph" (its threshold is 10 MB).
    with dask.config.set({"distributed.admin.large-graph-warning-threshold": "4GiB"}), quiet_dask():
        try:
            yield from _connected(address, workers, processes)
        except KilledWorker as err:
            # Dask reruns a lost worker's tasks elsewhere, up to its allowed-failures; past
            # that one task keeps killing its workers (out of memory, say): not a bug of ours.
            died = err.allowed_failures + 1
            raise ClusterError(f"--dask {address}: {died} worker{'s' * (died > 1)} died running task {err.task}; see the workers' logs") from err
        except concurrent.futures.CancelledError as err:
            # Dask cancels every pending future when the client loses its scheduler.
            reason = getattr(err, "reason", None) or "unknown"
            raise ClusterError(
                f"--dask {address}: the work was cancelled, the scheduler or its workers lost (Dask's reason: {reason}); the run stopped and nothing was saved"
            ) from err


@contextlib.contextmanager
def quiet_dask() -> Iterator[None]:
    """Dask's client logs its reconnection attempts with tracebacks on stderr; the one-line
    error raised above says what happened (and --debug shows the chain)."""
    # Dask sets its loggers' levels one by one (distributed.client's among them), so no
    # parent's level covers them all; spamnb itself does not log.
    import logging

    logging.disable(logging.ERROR)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def _connected(address: str, workers: int, processes: bool) -> Iterator[Client]:
    import logging

    from distributed import Client, LocalCluster

    if address == "local":
        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=processes, silence_logs=logging.ERROR,
                # No dashboard; its HTTP server (health checks) on a free port, not 8787.
                dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client
        return
    try:
        client = answering_client(address)
    except (OSError, TimeoutError, ValueError) as err:
        raise ClusterError(f"--dask {address}: no Dask scheduler answers there ({err})") from err
    except Exception as err:  # an HTTP server's reply read as a frame length (MemoryError), ucx:// without ucx (TypeError)
        raise ClusterError(f"--dask {address}: no Dask scheduler answers there ({type(err).__name__}: {err})") from err
    with client:
        yield client


def answering_client(address: str) -> Client:
    """Client(address), or TimeoutError when the scheduler has not answered within Dask's
    connect timeout (`distributed.comm.timeouts.connect`, 30 s unless set, e.g. by
    DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s): against an endpoint that accepts TCP
    and never answers, Client waited for ever.  The client is made in a thread given up on."""
    import threading

    import dask
    from dask.utils import parse_timedelta
    from distributed import Client

    within = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="s")
    made: dict[str, Any] = {}

    def make() -> None:
        try:
            made["client"] = Client(address, timeout=within)
        except BaseException as err:  # noqa: BLE001 - raised again in the caller's thread
            made["error"] = err

    thread = threading.Thread(target=make, name="spamnb-dask-connect", daemon=True)
    thread.start()
    thread.join(within + 1)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {within:g} s; DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT sets how long to wait")
    if "error" in made:
        raise made["error"]
    return made["client"]


Shard = list[tuple[Located, str] | Problem]


def shards(located: Iterable[Located | Problem], size: int = SHARD) -> list[Shard]:
    """Consecutive runs of `size` files (a file may be an mbox of many messages), each
    file by its absolute path (the workers' folder is not the client's) and as named."""
    placed = (p if isinstance(p, Problem) else (p._replace(path=os.path.abspath(p.path)), p.path) for p in located)
    return list(classifier.chunks(placed, size))  # type: ignore[arg-type]


def read_shard(shard: Shard, max_bytes: int) -> list[Item]:
    """On a worker: the shard's messages (and Problems) in order, named as the client names them."""
    items: list[Item] = []
    for place in shard:
        if isinstance(place, Problem):
            items.append(place)
            continue
        located, shown = place
        cut = len(located.path)
        items.extend(item._replace(id=shown + item.id[cut:]) for item in read_located([located], max_bytes))
    return items


class TreeReduce:
    """Pairwise merges of results submitted in order, as they come: a binary counter of
    partial results, so no process ever receives more than two and the order is kept."""

    def __init__(self, client: Client, merge: Callable[[Any, Any], Any]) -> None:
        self.client, self.merge = client, merge
        self.stack: list[tuple[int, Future]] = []

    def push(self, future: Future) -> None:
        self.stack.append((1, future))
        while len(self.stack) >= 2 and self.stack[-1][0] == self.stack[-2][0]:
            (size, right), (_, left) = self.stack.pop(), self.stack.pop()
            self.stack.append((2 * size, self.client.submit(self.merge, left, right)))

    def result(self) -> Any:
        """The merge of everything pushed (None for nothing)."""
        if not self.stack:
            return None
        _, right = self.stack.pop()
        while self.stack:
            _, left = self.stack.pop()
            right = self.client.submit(self.merge, left, right)
        return right.result()


# --- the map steps' state, sent once to every worker ---


class Work(NamedTuple):
    """A map step's state (`classifier.Tokenise` or `classifier.Score`) and the messages per call."""

    step: Any
    chunk: int
    max_bytes: int  # of each message read (the tokeniser's cap)


def send(client: Client, work: Work) -> Future:
    """`work` on every worker, once (in a list: a tuple would be scattered item by item)."""
    return client.scatter([work], broadcast=True)[0]


# --- train ---


class Plan(NamedTuple):
    """One shard's learning, decided by the client from the digests: the messages (by
    their place among the shard's items) whose counts change, and how (`change.which`:
    each change's message's index in picks)."""

    picks: list[int]
    keys: list[bytes]
    change: classifier.Changes


class Partial(NamedTuple):
    """The count changes of a run of shards (learnt minus forgotten) over its own
    vocabulary (columns by first sight); the client adds the root's into the model.

    `sample`: the calibration's messages among them, (offer number, sample), as
    `classifier.Reservoir` would hold them.
    `moments`: the numeric features' (spamnb.bayes.meta), signed: exact, so never below zero."""

    tokens: list[str]
    counts: nb.Counts
    sample: list[tuple[int, classifier.Sampled]]
    moments: np.ndarray


def shard_keys(shard: Shard, max_bytes: int) -> list[tuple[str, bytes, tuple[bytes, ...], int] | Problem]:
    """Worker task, train's first pass: each message's id, digest, legacy digests and class (or its Problem)."""
    return [
        item if isinstance(item, Problem) else (item.id, *digests(item.data, max_bytes), classifier.class_of(item))
        for item in read_shard(shard, max_bytes)
    ]


def digests(data: bytes, max_bytes: int) -> tuple[bytes, tuple[bytes, ...]]:
    """A message's digest and its legacy ones: which is learnt by is for the client to say
    (`headers.learnt_digest`, from what the model holds)."""
    return headers.digest(data, max_bytes), headers.legacy_digests(data, max_bytes)


def same_digest(data: bytes, key: bytes, max_bytes: int) -> bool:
    """Whether `key` is one of the message's digests, the legacy ones made only if
    needed: pass 1 made both already, and digests are no small part of a worker's CPU."""
    return key == headers.digest(data, max_bytes) or key in headers.legacy_digests(data, max_bytes)


def shard_counts(shard: Shard, plan: Plan, first_offer: int, wanted: list[int], work: Work) -> Partial:
    """Worker task, train's second pass: the shard's changed messages tokenised by the map
    step, in chunks as the local pool has them, and counted; the `wanted` offers kept."""
    items = list(read_shard(shard, work.max_bytes))
    datas = []
    for pos, key in zip(plan.picks, plan.keys, strict=True):
        item = items[pos] if pos < len(items) else None
        if not isinstance(item, Message) or not same_digest(item.data, key, work.max_bytes):
            where = f"{item.id}: " if item is not None else ""
            raise ClusterError(f"{where}the mail changed while training (read twice, not the same); nothing saved")
        datas.append(item.data)
    vocab = Vocabulary()
    model = Model(vocab=vocab, counts=nb.Counts.empty(weighting=work.step.weighting))
    sample = []
    offer, keep = first_offer, set(wanted)
    which, classes, signs = (np.asarray(a, dtype=np.int64) for a in plan.change[1:])
    for start in range(0, len(datas), work.chunk):
        chunk = classifier.tokenise_chunk(work.step, datas[start : start + work.chunk])
        here = (which >= start) & (which < start + work.chunk)
        change = classifier.Changes(0, (which[here] - start).tolist(), classes[here].tolist(), signs[here].tolist())
        changed = classifier.apply_changes(model, vocab, chunk, change)
        for learnt in classifier.learnt_in(changed, change, chunk.numeric):
            if offer in keep:
                sample.append((offer, learnt.copy()))
            offer += 1
    model.counts.resize(len(vocab))
    return Partial(vocab.tokens, model.counts, sample, model.moments)


def added(a: nb.Counts, b: nb.Counts, cols: np.ndarray, width: int) -> nb.Counts:
    """a + b, where b's column j is column cols[j] of the result, `width` columns wide."""
    out = a.copy()
    out.grow(width)
    out.add_at(b, cols)
    return out


def merge_partials(a: Partial, b: Partial) -> Partial:
    """Worker task, the reduce: b's counts added into a's, b's new tokens after a's."""
    vocab = Vocabulary(a.tokens)
    cols = vocab.grow(b.tokens)
    width = len(vocab)
    sample = a.sample + [(offer, s._replace(cols=cols[s.cols])) for offer, s in b.sample]
    return Partial(vocab.tokens, added(a.counts, b.counts, cols, width), sample, a.moments + b.moments)


def sample_offers(offers: int, size: int) -> list[int]:
    """The offers (numbered from 0) that `classifier.Reservoir(size)` ends up holding, slot by slot:
    which messages it keeps depends only on how many are offered."""
    reservoir = classifier.Reservoir(size)
    for i in range(offers):
        reservoir.offer(i)  # type: ignore[arg-type]
    return reservoir.items  # type: ignore[return-value]


def learn(
    client: Client,
    model: Model,
    located: Iterable[Located | Problem],
    forget: bool = False,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    shard: int = SHARD,
    meanwhile: Callable[[], object] | None = None,
) -> classifier.LearnReport:
    """`classifier.learn` on the cluster: same report, same model.

    First pass: the workers read each shard and send back its digests; the client
    decides, in order, what each message changes (`classifier.Changes.decide`).  Second
    pass: the workers read again, tokenise only the messages that change and count;
    the counts come back by `TreeReduce`.
    """
    report = classifier.LearnReport()
    parts = shards(located, shard)
    max_bytes = model.tokens.max_bytes
    plans: list[Plan] = []
    first_offers: list[int] = []
    sizes: list[int] = []  # messages and Problems per shard
    offers = classifier.Offers()
    for fut in client.map(shard_keys, parts, max_bytes=max_bytes, pure=False):
        plan = Plan([], [], classifier.Changes(0, [], [], []))
        first_offers.append(offers.count)
        entries = fut.result()
        for pos, entry in enumerate(entries):
            if isinstance(entry, Problem):
                report.problems.append(entry)
                continue
            message_id, new, olds, cls = entry
            key = headers.first_known(new, olds, model.learnt.__contains__)
            if plan.change.decide(model, report, message_id, cls, key, forget, len(plan.picks), offers):
                plan.picks.append(pos)
                plan.keys.append(key)
        sizes.append(len(entries))
        fut.release()
        plans.append(plan)
    slots = [offer for offer in sample_offers(offers.count, classifier.CALIBRATION_SAMPLE) if offer not in offers.replaced]
    wanted: list[list[int]] = [[] for _ in parts]
    for offer in slots:
        wanted[int(np.searchsorted(first_offers, offer, side="right")) - 1].append(offer)
    work = Work(classifier.Tokenise.of(model.tokens, model.scoring), classifier.chunk_size(jobs), model.tokens.max_bytes)
    root = retried_if_lost(lambda shown: counted(client, parts, plans, first_offers, wanted, sizes, send(client, work), shown), progress)
    if root is None:
        return report
    vocab = model.learnable()
    cols = vocab.grow(root.tokens)
    model.counts.grow(len(vocab))
    model.counts.add_at(root.counts, cols)
    model.moments += root.moments
    by_offer = dict(root.sample)
    classifier.finish_learning(model, [by_offer[offer]._replace(cols=cols[by_offer[offer].cols]) for offer in slots], jobs, meanwhile)
    return report


def counted(
    client: Client, parts: list[Shard], plans: list[Plan], first_offers: list[int], wanted: list[list[int]], sizes: list[int],
    work: Work, progress: Callable[[int], None] | None,
) -> Partial | None:
    """The second pass of `learn`: the shards that change something counted on the workers and merged by `TreeReduce`."""
    reduce = TreeReduce(client, merge_partials)
    counting: list[Future] = []
    messages: dict[str, int] = {}  # by task key
    for part, plan, first, want, size in zip(parts, plans, first_offers, wanted, sizes, strict=True):
        if plan.picks:
            counting.append(client.submit(shard_counts, part, plan, first, want, work, pure=False))
            messages[counting[-1].key] = size
            reduce.push(counting[-1])
        elif progress:
            progress(size)
    if progress and counting:
        from distributed import as_completed

        done = as_completed(counting)
        counting.clear()  # each partial is then freed after its merge, not kept till the end
        for future in done:
            progress(messages[future.key])
    counting.clear()
    return reduce.result()


# Dask's reasons for cancelling work whose inputs are gone (the second when a merge is
# submitted after its input was lost).
LOST = ("lost dependencies", "already forgotten")


def retried_if_lost(run: Callable[[Callable[[int], None] | None], Any], progress: Callable[[int], None] | None, times: int = 3) -> Any:
    """run(progress), run again (the progress bar left where it is) when Dask cancels it for
    lost inputs: data sent to the workers dies with the last worker holding it (one,
    when the others were restarting), and a merged partial whose worker died cannot be
    recomputed, since its inputs were released once merged (holding them would keep every
    shard's counts in memory).  The counting pass changes nothing before it returns and
    sends its data anew, so a rerun is safe."""
    from distributed.client import FutureCancelledError

    for attempt in range(times - 1):
        try:
            return run(progress if attempt == 0 else None)
        except FutureCancelledError as err:
            if err.reason not in LOST:
                raise
    return run(None)


# --- classify ---


def shard_scores(shard: Shard, work: Work) -> tuple[list[Message | Problem], np.ndarray]:
    """Worker task: the shard's items (messages without their bytes) and the log-odds of the messages, by the map step."""
    items = list(read_shard(shard, work.max_bytes))
    datas = [m.data for m in items if isinstance(m, Message)]
    odds = [classifier.score_chunk(work.step, datas[start : start + work.chunk]) for start in range(0, len(datas), work.chunk)]
    return [m._replace(data=b"") if isinstance(m, Message) else m for m in items], np.concatenate(odds) if odds else np.zeros(0)


def classify(
    client: Client,
    model: Model,
    located: Iterable[Located | Problem],
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    shard: int = SHARD,
) -> Iterator[classifier.Scored | Problem]:
    """`classifier.classify` on the cluster: the same results in the same order."""
    work = send(client, Work(classifier.Score.of(model), classifier.chunk_size(jobs), model.tokens.max_bytes))
    for batch, odds in in_order(client, shard_scores, shards(located, shard), work):
        yield from classifier.scored_batch(model, batch, odds)
        if progress:
            progress(len(batch))


# --- eval ---


def shard_rows(shard: Shard, work: Work) -> tuple[list[Message | Problem], list[Chunk]]:
    """Worker task: the shard's items (messages without their bytes) and their count rows, chunk by chunk, by the map step."""
    items = read_shard(shard, work.max_bytes)
    datas = [m.data for m in items if isinstance(m, Message)]
    chunks = [classifier.tokenise_chunk(work.step, datas[start : start + work.chunk]) for start in range(0, len(datas), work.chunk)]
    return [m._replace(data=b"") if isinstance(m, Message) else m for m in items], chunks


def tokenise_labelled(
    client: Client,
    located: Iterable[Located | Problem],
    tokens: TokenSettings,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    shard: int = SHARD,
    numeric: bool = False,
) -> classifier.Tokenised:
    """`classifier.tokenise_labelled` on the cluster.  Cross-validation then runs on the
    client, as without --dask: its folds need every message's rows (the client holds the
    count rows, as a local eval does, never the mail)."""
    work = send(client, Work(classifier.Tokenise.for_folds(tokens, numeric), classifier.chunk_size(jobs), tokens.max_bytes))
    return classifier.gathered(in_order(client, shard_rows, shards(located, shard), work), progress)


def in_order(client: Client, fn: Callable[..., Any], parts: Iterable[Shard], *args: Any) -> Iterator[Any]:
    """fn(part, *args) of each part on the cluster, results in order, a few per worker in flight."""
    ahead = 2 * max(1, len(client.scheduler_info()["workers"]))
    pending: deque[Future] = deque()
    for part in parts:
        pending.append(client.submit(fn, part, *args, pure=False))
        while len(pending) > ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()
