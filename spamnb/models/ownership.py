"""Files written for a model keep the model's owner and mode, or are refused, never changed.

A save replaces the model by renaming a new file over it.  Made by root (a cron job, a
helpdesk fixing a user's filter), that file would be root's and 0600, and the owner's
own filter could no longer read it.  So the new file takes the model's owner, group
and mode before it is renamed; where that is not permitted, the save is refused with
the reason.  A model without write permission for its owner (0444) is not replaced:
someone made it read-only.  Nothing here imports numpy (the one-message learner uses it).
"""
from __future__ import annotations

import os
import stat

from spamnb.models.modelfile import ModelError


def model_stat(path: str) -> os.stat_result | None:
    """The model file's status (through symlinks); None when there is no regular file to keep."""
    try:
        st = os.stat(path)
    except OSError:
        return None  # missing: a new model; anything stranger: the loader names it
    return st if stat.S_ISREG(st.st_mode) else None


def user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_writable(path: str, st: os.stat_result | None) -> None:
    """Refuse, before any work, a model that must not or cannot be replaced as it is."""
    if st is None:
        return
    if not st.st_mode & stat.S_IWUSR:
        raise ModelError(f"{path}: the model is read-only (mode {stat.S_IMODE(st.st_mode):04o}); it is left as it is (chmod u+w it to let spamnb learn)")
    if not os.access(path, os.W_OK):
        raise ModelError(f"{path}: cannot write the model (Permission denied)")
    uid = os.geteuid()
    if uid != 0 and st.st_uid != uid:
        raise ModelError(f"{path}: the model belongs to {user_name(st.st_uid)}; saved by {user_name(uid)} it would become theirs, so it is left as it is (train it as {user_name(st.st_uid)})")
    if uid != 0 and st.st_gid != os.getegid() and st.st_gid not in os.getgroups():
        raise ModelError(f"{path}: the model's group is gid {st.st_gid}, which {user_name(uid)} cannot give a file; it is left as it is")


def adopt(fd: int, path: str, st: os.stat_result | None) -> None:
    """Give the open file `fd` (to become `path`) the model's owner, group and mode."""
    if st is None:
        return
    have = os.fstat(fd)
    if (have.st_uid, have.st_gid) != (st.st_uid, st.st_gid):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError as err:
            raise ModelError(
                f"{path}: the model belongs to {user_name(st.st_uid)} (gid {st.st_gid}) and this process may not give it to them; "
                "it is left as it is (train it as its owner)"
            ) from err
    os.fchmod(fd, stat.S_IMODE(st.st_mode))  # after fchown, which may clear set-id bits


def lock_mode(st: os.stat_result | None) -> int:
    """The lock's mode: read and write for the owner, and for the group and others only
    where they may write the model (who cannot write it has no business holding its lock)."""
    if st is None:
        return 0o600
    mode = 0o600
    if st.st_mode & stat.S_IWGRP:
        mode |= 0o060
    if st.st_mode & stat.S_IWOTH:
        mode |= 0o006
    return mode
