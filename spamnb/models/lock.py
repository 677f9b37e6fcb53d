"""The model's lock, which every change to the model is made under, and the temporary
files of its saves.  Nothing here imports numpy (a single learn takes the lock)."""
from __future__ import annotations

import contextlib
import os

from spamnb.models.modelfile import ModelError


def temp_prefix(path: str) -> str:
    """Temporary files of one model's saves: `.MODEL.spamnb-XXXX.tmp` beside it."""
    return f".{os.path.basename(path)}.spamnb-"


def remove_stale_temporaries(path: str) -> None:
    """Delete what saves of this model killed part way (kill -9, power loss) left behind.

    Called under the model's lock: no save of this model is under way, so every one
    of its temporary files is stale.  Other models' files have other prefixes.
    """
    folder, prefix = os.path.dirname(path), temp_prefix(path)
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


# A learner that has waited this long for the lock says so, once, and names the holder.
TELL_AFTER = 2.0


@contextlib.contextmanager
def locked(path: str, wait: float | None = None, notice=None):  # -> Iterator[None]; typing is off the learn's start-up
    """Hold an exclusive lock beside the model, so concurrent learners serialise.

    `wait`: give up (ModelError) after that many seconds; None waits as long as it
    takes.  `notice(text)` is told once when the lock has been busy for TELL_AFTER
    seconds.  Under the lock, a model that must not be replaced as it is (read-only,
    another owner: see `ownership`) is refused before any work is done.
    """
    from spamnb.models import ownership

    path = os.path.realpath(path)  # one lock for every symlink to a model
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd = open_lock(path, ownership.model_stat(path))
    try:
        acquire(fd, path, wait, notice)
        try:
            ownership.check_writable(path, ownership.model_stat(path))
            remove_stale_temporaries(path)
            yield
        finally:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def open_lock(path: str, model: os.stat_result | None) -> int:
    """`MODEL.lock`, opened without following a symlink (one planted there would have the
    lock made wherever it points), with the model's permissions (ownership.lock_mode)."""
    import stat

    from spamnb.models import ownership

    lock = path + ".lock"
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, ownership.lock_mode(model))
    except OSError as err:
        if os.path.islink(lock):
            raise ModelError(f"{lock}: the model's lock is a symbolic link; it is not followed (remove it)") from err
        raise ModelError(f"{lock}: cannot open the model's lock ({err.strerror or err})") from err
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ModelError(f"{lock}: the model's lock is not a regular file (remove it)")
        if model is not None and (st.st_uid, st.st_gid) != (model.st_uid, model.st_gid):
            # A lock root made for a user's model is the user's, or the user could not open it.
            with contextlib.suppress(OSError):
                os.fchown(fd, model.st_uid, model.st_gid)
        if stat.S_IMODE(st.st_mode) != ownership.lock_mode(model):  # the umask may have taken the group's
            with contextlib.suppress(OSError):
                os.fchmod(fd, ownership.lock_mode(model))
    except BaseException:
        os.close(fd)
        raise
    return fd


def acquire(fd: int, path: str, wait: float | None, notice) -> None:
    import fcntl
    import time

    start, delay, told = time.monotonic(), 0.005, False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        waited = time.monotonic() - start
        if wait is not None and waited >= wait:
            raise ModelError(f"{path}: the model is locked by {lock_holder(fd)}; gave up after waiting {wait:g} s (train --wait)")
        if not told and waited >= TELL_AFTER and notice is not None:
            notice(f"{path}: waiting for the model's lock, held by {lock_holder(fd)}")
            told = True
        time.sleep(delay if wait is None else min(delay, max(wait - waited, 0.0)))
        delay = min(delay * 2, 0.1)


def lock_holder(fd: int) -> str:
    """`process PID` holding the flock on `fd`'s file, from /proc/locks where there is one."""
    st = os.fstat(fd)
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/locks") as locks:
        for line in locks:
            fields = line.split()
            if fields[1] == "FLOCK" and fields[5] == inode and int(fields[4]) != os.getpid():
                return f"process {int(fields[4])}"
    return "another process"
