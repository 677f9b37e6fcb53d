"""The ordered map's worker processes (spamnb.run.parallel)."""
from __future__ import annotations

import ctypes
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
