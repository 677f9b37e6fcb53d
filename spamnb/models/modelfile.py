"""A model file's place and the one error about it, for everything that reads or writes
one (numpy-free: the pipe and the command line's definition import it)."""
from __future__ import annotations

import os


class ModelError(Exception):
    """The model file is missing, unreadable, foreign or damaged; the message names it."""


def default_path() -> str:
    """`-m`'s default: $SPAMNB_MODEL, else $XDG_DATA_HOME/spamnb/model.npz."""
    if os.environ.get("SPAMNB_MODEL"):
        return os.environ["SPAMNB_MODEL"]
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data_home, "spamnb", "model.npz")
