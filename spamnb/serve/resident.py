"""Model files kept open by a server, and reopened when they change.

`train` and `merge` replace a model by renaming a new file over it, and a learn
appends to its journal: either changes what `os.stat` says of the model or of its
journal, so each request compares those stats with the ones the open model was read
at and reopens the model when they differ.  A request holds the model it started
with to its end, so none ever sees half of one.  The first request to see a change
reads the new model and is answered with it; requests that come while it reads are
answered with the model read before (the read is 0.2-0.3 s of CPU), and every request
after the read with the new one.  Where only the journal changed (a learn), the file is
not read again: the model takes the journal as it now is (`OneModel.journal_reread`).  Models are read whole, not mapped
(`onemessage.open_model(resident=True)`): a copy written over the file by hand (`cp`,
not a rename) would cut a mapping short under the requests, and a worker reading it
would die of SIGBUS.  A file read while it is being written is damaged: an error for
the requests that meet it; the next good file is picked up as any change is.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict

from spamnb.models import journal
from spamnb.models.modelfile import ModelError
from spamnb.pipe import onemessage

# Per-user models kept open at once (`--models DIR`); the least recently used is closed.
USER_MODELS = 16


def stamp_of(path: str, journal_file: str) -> tuple[tuple, tuple]:
    """What changes when the model file or its journal does, apart: (the file's, the journal's)
    (FileNotFoundError: no model)."""
    st = os.stat(path)
    try:
        js = os.stat(journal_file)
        jour: tuple = (js.st_ino, js.st_size, js.st_mtime_ns)
    except FileNotFoundError:
        jour = ()
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns), jour


class Resident:
    """The open models by path: `get(path)` gives the model as the file is now."""

    def __init__(self, limit: int = USER_MODELS) -> None:
        self.limit = limit
        self.lock = threading.Lock()
        # path -> (stamp, model, its journal's path: found once per opening, a real path costs a stat per folder)
        self.open: OrderedDict[str, tuple[tuple, object, str]] = OrderedDict()
        self.readers: dict[str, threading.Lock] = {}  # path -> held by the thread reading that model

    def get(self, path: str) -> object:
        """The model at `path` (onemessage.open_model's), reopened if the file or its journal changed;
        while another thread reopens it, the model open before."""
        held = self.open.get(path)
        try:
            if held is not None and held[0] == stamp_of(path, held[2]):
                if len(self.open) > 1:
                    with self.lock:
                        if path in self.open:
                            self.open.move_to_end(path)
                return held[1]
            with self.lock:
                reader = self.readers.setdefault(path, threading.Lock())
            # One thread reads a changed model; the others go on with the one they had rather
            # than wait for the read, and wait only where none is open.
            if not reader.acquire(blocking=held is None):
                return held[1]  # type: ignore[index]
            try:
                held = self.open.get(path)
                journal_file = held[2] if held is not None else journal.journal_path(path)
                stamp = stamp_of(path, journal_file)
                if held is not None and held[0] == stamp:  # read by the thread this one waited for
                    return held[1]
                model = None
                if held is not None and held[0][0] == stamp[0] and isinstance(held[1], onemessage.OneModel):
                    model = held[1].journal_reread()  # a learn: the file itself is as it was read
                if model is None:
                    model = onemessage.open_model(path, resident=True)
                with self.lock:
                    self.open[path] = (stamp, model, journal_file)
                    self.open.move_to_end(path)
                    while len(self.open) > self.limit:
                        self.readers.pop(self.open.popitem(last=False)[0], None)
                return model
            finally:
                reader.release()
        except FileNotFoundError:
            raise ModelError(f"{path}: no such model file") from None

    def forget(self) -> None:
        """Close every model (SIGHUP): the next request opens each afresh."""
        with self.lock:
            self.open.clear()
