"""The ordered map's worker processes (spamnb.run.parallel)."""
from __future__ import annotations

import ctypes
import fcntl
import subprocess
import sys

import pytest

# Each task makes and frees a block under HEAP_MAP_BLOCK, then reports how much memory the
# heap of its process holds free (glibc's mallinfo2): what the next task can take without
# faulting pages in anew.
SCRIPT = """
import ctypes, sys
from spamnb.run import parallel

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2

def step(state, size):
    del state
    block = bytearray(size)
    del block
    return mallinfo2().fordblks

print(min(parallel.ordered_map(step, None, [20 << 20] * int(sys.argv[1]), int(sys.argv[1]))))
"""


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="glibc's malloc")
@pytest.mark.parametrize("jobs", [1, 2])
def test_memory_a_task_frees_stays_for_the_next(jobs: int) -> None:
    # glibc's default maps the first 20 MB block apart and gives it back when freed (0 MB free after it).
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(jobs)], capture_output=True, text=True, check=True)
    assert int(done.stdout) >= 20 << 20


# Each worker, as it ends, waits for the file that the parent makes once the map has returned
# (or gives up after 30 s): the map's end must not wait for its workers to end.
ENDING = """
import os, signal, sys, time
from multiprocessing import util
from spamnb.run import parallel

released = sys.argv[1]

def wait_for_release():
    for _ in range(300):
        if os.path.exists(released):
            return
        time.sleep(0.1)
    open(released + ".not-released", "w").close()

def ended_by_a_signal(signum, frame):
    wait_for_release()
    os._exit(0)

def step(state, n):
    if state == []:  # first task of this worker: wait however it is made to end
        state.append(util.Finalize(None, wait_for_release, exitpriority=0))
        signal.signal(signal.SIGTERM, ended_by_a_signal)
    return n * n

print(sum(parallel.ordered_map(step, [], range(6), 2)))
open(released, "w").close()
parallel.join_ended()
print(os.path.exists(released + ".not-released"))
"""


def test_a_map_that_ran_to_its_end_does_not_wait_for_its_workers_to_end(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-c", ENDING, str(tmp_path / "released")], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["55", "False"]


# Every fork of a pool's workers, and the process's own end, counted with the threads then running.
FORKS = """
import os, threading
from spamnb.run import parallel

forks = []
os.register_at_fork(before=lambda: forks.append(threading.active_count()))

def step(state, n):
    return n + state

for i in range(3):
    assert list(parallel.ordered_map(step, i, range(4), 2)) == [n + i for n in range(4)]
print(forks)
"""


def test_no_pool_thread_runs_when_the_next_map_forks_its_workers() -> None:
    done = subprocess.run([sys.executable, "-c", FORKS], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[0] == str([1] * 6)


# With work of its own (`meanwhile`), the parent is one of the jobs: it takes tasks too once
# that work is done.  A worker's task waits (30 s at most) until the parent has taken one.
SHARED = """
import os, sys, time
from spamnb.run import parallel

parent, flag, jobs = os.getpid(), sys.argv[1], int(sys.argv[2])
calls = []

def step(state, n):
    if os.getpid() == parent:
        open(flag, "a").close()
    else:
        for _ in range(300):
            if os.path.exists(flag):
                break
            time.sleep(0.1)
    return n * state, os.getpid()

done = list(parallel.ordered_map(step, 3, range(7), jobs, meanwhile=lambda: calls.append(os.getpid())))
print([n for n, _ in done] == [3 * n for n in range(7)], calls == [parent], parent in {pid for _, pid in done}, len({pid for _, pid in done} - {parent}) <= jobs - 1)
"""


@pytest.mark.parametrize("jobs", [2, 3])
def test_a_map_with_work_of_its_own_is_one_of_the_jobs_and_takes_tasks_once_it_is_done(tmp_path, jobs: int) -> None:
    done = subprocess.run([sys.executable, "-c", SHARED, str(tmp_path / "flag"), str(jobs)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True"] * 4


# Each task reports the sizes of the pipes its worker holds open.
PIPES = """
import fcntl, os, stat
from spamnb.run import parallel

def step(state, n):
    sizes = []
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                sizes.append(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
        except OSError:
            pass
    return sizes

print(min(sizes.count(parallel.PIPE_SIZE) for sizes in parallel.ordered_map(step, None, range(4), 2)))
"""


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="Linux's pipe sizes")
def test_a_workers_task_and_result_pipes_each_hold_a_megabyte() -> None:
    # A chunk's messages, and their counts, pass without either side waiting for the other to read.
    done = subprocess.run([sys.executable, "-c", PIPES], capture_output=True, text=True, check=True)
    assert int(done.stdout) >= 2
