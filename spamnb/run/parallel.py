"""An ordered map over worker processes, with a bounded number of tasks in flight.

The map step is a plain function `fn(state, task)`: `state` is what every task needs
(the tokeniser, the model's weights), passed once per worker process by the pool's
initializer and inherited through fork, never pickled; a task carries raw messages in
and compact arrays (or scores) out.  Results come back
in the order of the tasks, and at most `jobs * AHEAD` tasks (by default) are read ahead
of the one being waited for, so memory stays bounded however long the input is.
"""
from __future__ import annotations

import itertools
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")

AHEAD = 2

# In a worker process only: the map step and its state, set once by the pool's initializer.
_worker: tuple[Callable[[Any, Any], Any], Any] | None = None


def _start_worker(fn: Callable[[S, T], R], state: S) -> None:
    global _worker
    _worker = (fn, state)
    # Workers leave Ctrl-C to the parent, which ends them: no traceback from each worker.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _run(task: T) -> R:
    assert _worker is not None, "a task ran outside a worker started by ordered_map"
    fn, state = _worker
    return fn(state, task)


def available_cores() -> int:
    """The CPUs this process may run on (the default of --jobs)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


# glibc's malloc (`mallopt`'s parameters): a block this large or larger is mapped apart,
# and memory left free at the top of the heap past this much goes back to the system.
HEAP_MAP_BLOCK = 32 << 20
HEAP_KEPT_FREE = 64 << 20
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory() -> bool:
    """Let this process (and the workers it forks) keep memory it frees for what it makes
    next, up to HEAP_KEPT_FREE; whether the C library took it (glibc; elsewhere nothing changes).

    By default glibc gives freed memory back as soon as a little lies free at the heap's
    top, and maps a large block apart until blocks that large have been freed: the arrays
    a map step makes for each task, freed after it and made again for the next, then
    fault their pages in anew every time.
    """
    import ctypes  # numpy has loaded it already

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, HEAP_MAP_BLOCK)) and bool(mallopt(M_TRIM_THRESHOLD, HEAP_KEPT_FREE))


# The pools of maps that ran to their end, closed: their workers end on their own while this
# process goes on, instead of it waiting for each to free its memory.  Joined (by then at once)
# before a pool is forked again, so that no pool's threads run at a fork; at exit,
# multiprocessing's exit function ends them.
ending: list[Any] = []


def join_ended() -> None:
    while ending:
        ending.pop().join()


def ordered_map(
    fn: Callable[[S, T], R], state: S, tasks: Iterable[T], jobs: int, meanwhile: Callable[[], object] | None = None, ahead: int = AHEAD
) -> Iterator[R]:
    """`fn(state, task)` for each task over `jobs` processes; in order; at most `jobs *
    ahead` tasks read ahead (all of them, with `meanwhile`).

    With one job, or a single task, no process is started.  `meanwhile`: work of this
    process's own, done while the workers do theirs (`shared_map`); never where no process
    is started.  A map that runs to its end leaves its workers to end on their own
    (`ending`); one that does not (an error, a consumer that stops) ends them first.
    """
    tasks = iter(tasks)
    keep_freed_memory()
    if jobs <= 1:
        yield from (fn(state, task) for task in tasks)
        return
    head = list(itertools.islice(tasks, 2))
    if len(head) < 2:
        yield from (fn(state, task) for task in head)
        return
    if meanwhile is not None:
        yield from shared_map(fn, state, [*head, *tasks], jobs, meanwhile)
        return
    pool = started(jobs, fn, state)
    try:
        pending: deque = deque()
        for task in itertools.chain(head, tasks):
            pending.append(pool.apply_async(_run, (task,)))
            if len(pending) >= jobs * ahead:
                yield pending.popleft().get()
        # The last task is out: the workers are told to end as soon as the last result is in.
        pool.close()
        while pending:
            yield pending.popleft().get()
    except BaseException:
        pool.terminate()
        raise
    ending.append(pool)


def shared_map(fn: Callable[[S, T], R], state: S, tasks: list[T], jobs: int, meanwhile: Callable[[], object]) -> Iterator[R]:
    """`ordered_map` of a few `tasks` with this process's own work `meanwhile`: this
    process is one of the `jobs`, so `jobs - 1` workers are forked; each of them, and this
    process once `meanwhile` is done, takes the next task that none has taken, until none is
    left.  Handed out all at once, tasks would wait in a busy worker's queue while this
    process, its own work done, waited for them."""
    import multiprocessing

    taken = multiprocessing.get_context("fork").Value("q", 0)  # the number of tasks taken, shared

    def share(state: S, _: object = None) -> list[tuple[int, R]]:
        done = []
        while True:
            with taken.get_lock():
                i = taken.value
                taken.value = i + 1
            if i >= len(tasks):
                return done
            done.append((i, fn(state, tasks[i])))

    pool = started(jobs - 1, share, state)
    try:
        shares = [pool.apply_async(_run, (None,)) for _ in range(jobs - 1)]
        pool.close()
        meanwhile()
        results = dict(share(state))
        for part in shares:
            results.update(part.get())
    except BaseException:
        pool.terminate()
        raise
    ending.append(pool)
    yield from (results[i] for i in range(len(tasks)))


def started(jobs: int, fn: Callable[[S, T], R], state: S) -> Any:
    """A pool of `jobs` forked workers, each holding `fn` and `state` (`_start_worker`),
    its pipes widened (`widen_pipes`)."""
    import multiprocessing

    join_ended()
    # Ctrl-C is held while the workers are forked, so that each ignores it before it can
    # arrive (a worker killed by it mid-start left the pool to fork a deadlocked one).
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pool = multiprocessing.get_context("fork").Pool(jobs, initializer=_start_worker, initargs=(fn, state))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    widen_pipes(pool)
    return pool


# Linux's default fs.pipe-max-size: the most a process may ask without privilege.
PIPE_SIZE = 1 << 20


def widen_pipes(pool: Any) -> None:
    """The pool's task and result pipes made PIPE_SIZE, where the system lets them (Linux).

    A task of train's (a chunk's messages) and its result (their counts) are about a
    megabyte each.  Through a pipe's default 64 KiB, a worker writing its result waits for
    this process's result thread to read it piece by piece, each piece waiting for the
    interpreter lock this process's own loop holds, and the task thread waits for a worker
    still busy with its last task: both sides wait on each other's turns.
    """
    try:
        import fcntl

        for end in (pool._inqueue._writer, pool._outqueue._reader):
            fcntl.fcntl(end.fileno(), fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    except (ImportError, AttributeError, OSError):  # not Linux, or not allowed: the pipes stay as they were
        pass
