"""Seconds per hostile message (the cases of tests/test_hostile.py), read, tokenised and
scored as `spamnb classify` does, beside the bound each should stay well within.

The suite checks these messages' results and memory; their time is measured here, not
asserted there, since a wall-clock bound fails on a loaded machine.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spamnb.models import store
from tests.test_hostile import HOSTILE, classify_source
from tests.test_pipe import small_model

BOUND = 5.0  # seconds per message: the quadratic cases this guards against took minutes


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        model = store.load(str(small_model(Path(folder))))
        path = os.path.join(folder, "hostile.eml")
        timed = []
        for name, make in HOSTILE.items():
            with open(path, "wb") as out:
                out.write(make())
            start = time.perf_counter()
            classify_source(model, path)
            timed.append((time.perf_counter() - start, name))
    print(f"hostile messages, seconds each (bound {BOUND:g} s), slowest first; load average {os.getloadavg()[0]:.1f}")
    for seconds, name in sorted(timed, reverse=True):
        print(f"  {seconds:7.3f} s{'  OVER' if seconds > BOUND else ''}  {name}")
    return 1 if any(seconds > BOUND for seconds, _ in timed) else 0


if __name__ == "__main__":
    sys.exit(main())
