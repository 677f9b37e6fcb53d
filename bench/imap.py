"""IMAP throughput: `spamnb train` from an IMAP folder against the same messages in the
server's maildir, and `spamnb imap-filter` on one folder of N messages (default 5,000),
on a throwaway Dovecot on loopback (tests/dovecot.py).  bogofilter learning the same
maildir stands beside them (it reads no IMAP).

The messages are the SpamAssassin corpus's (../shared/corpora/spamassassin, by its
index), copied for the run into the throwaway server's maildir and removed with it;
the model that imap-filter uses learns the corpus's other messages.

    python bench/imap.py [--messages N] [--index PATH]
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import dovecot  # noqa: E402 - the repository's root first

SPAMNB = str(Path(sys.executable).with_name("spamnb"))


def server_cpu(d: dovecot.Dovecot) -> float:
    """CPU seconds of Dovecot's master and the processes it has reaped (each IMAP session's
    process is reaped when its client logs out)."""
    assert d.process is not None
    fields = Path(f"/proc/{d.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime


def timed(args: list[str | Path], env: dict[str, str], d: dovecot.Dovecot) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds of the child (user + system) and of Dovecot, and the child's stderr."""
    before, server = resource.getrusage(resource.RUSAGE_CHILDREN), server_cpu(d)
    start = time.perf_counter()
    done = subprocess.run([str(a) for a in args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    time.sleep(0.5)  # the session's process ends after the logout: let the master reap it
    after, server = resource.getrusage(resource.RUSAGE_CHILDREN), server_cpu(d) - server
    if done.returncode not in (0, 1):
        raise SystemExit(f"{args[0]} failed ({done.returncode}): {done.stderr}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, server, done.stderr.strip()


def fill_maildir(user: dovecot.User, folder: str, files: list[Path]) -> None:
    """The messages as files of the user's maildir folder, as delivery leaves them."""
    base = user.maildir if folder == "INBOX" else user.maildir / f".{folder}"
    for sub in ("cur", "new", "tmp"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    for i, path in enumerate(files):
        shutil.copyfile(path, base / "cur" / f"{1700000000 + i}.M{i}P1.bench:2,")
    if os.geteuid() == 0:
        for dirpath, dirnames, filenames in os.walk(user.home):
            for name in [*dirnames, *filenames, "."]:
                os.chown(os.path.join(dirpath, name), user.uid, user.gid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--index", default="../shared/corpora/spamassassin/index")
    args = parser.parse_args()
    if (why := dovecot.unavailable()) is not None:
        raise SystemExit(why)
    corpus = Path(args.index).parent
    entries = [line.split(None, 1) for line in Path(args.index).read_text().splitlines() if line.strip()]
    random.Random(29).shuffle(entries)
    folder, rest = entries[: args.messages], entries[args.messages :]
    work = Path(tempfile.mkdtemp(prefix="spamnb-imap-bench-"))
    try:
        rest_index = work / "rest.index"
        rest_index.write_text("".join(f"{label} {corpus / path.strip()}\n" for label, path in rest))
        model = work / "model.npz"
        subprocess.run([SPAMNB, "-q", "train", "-m", model, "--index", rest_index], check=True)
        with dovecot.running(("alice",)) as d:
            alice = d.users["alice"]
            fill_maildir(alice, "INBOX", [corpus / path.strip() for _, path in folder])
            (work / ".netrc").write_text(f"machine 127.0.0.1 login alice password {alice.password}\n")
            (work / ".netrc").chmod(0o600)
            env = {**os.environ, "HOME": str(work)}
            ca = ["--ca-file", d.ca_file]
            print(f"{len(folder)} messages in one folder; load before: {os.getloadavg()}")
            # Dovecot indexes the folder on its first SELECT: once, before any timing.
            subprocess.run([SPAMNB, "-q", "train", "--dry-run", *ca, "--ham", d.url("alice")], env=env, capture_output=True, check=False)
            for name, args_ in [
                ("train from the maildir", [SPAMNB, "-q", "train", "-m", work / "m1.npz", "--jobs", "1", "--ham", alice.maildir / "cur"]),
                ("train from imaps://", [SPAMNB, "-q", "train", "-m", work / "m2.npz", "--jobs", "1", *ca, "--ham", d.url("alice")]),
                ("train from imap:// STARTTLS", [SPAMNB, "-q", "train", "-m", work / "m3.npz", "--jobs", "1", *ca, "--ham", d.url("alice", tls="imap")]),
                ("bogofilter -n -B the maildir", ["bogofilter", "-d", work / "bogo", "-n", "-B", alice.maildir / "cur"]),
                ("imap-filter, all new", [SPAMNB, "-q", "imap-filter", "-m", model, *ca, d.url("alice"), "--spam-folder", "Junk"]),
                ("imap-filter again, none new", [SPAMNB, "-q", "imap-filter", "-m", model, *ca, d.url("alice"), "--spam-folder", "Junk"]),
            ]:
                if name.startswith("bogofilter"):
                    (work / "bogo").mkdir()
                    if shutil.which("bogofilter") is None:
                        continue
                wall, cpu, server, said = timed(args_, env, d)
                print(f"{name:30s} {wall:7.2f} s wall {cpu:6.2f} s CPU {server:6.2f} s Dovecot's CPU {len(folder) / wall:6.0f} msg/s {said[:80]}")
            junk = len(list((alice.maildir / ".Junk" / "cur").iterdir())) + len(list((alice.maildir / ".Junk" / "new").iterdir()))
            print(f"moved to Junk: {junk}; load after: {os.getloadavg()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
