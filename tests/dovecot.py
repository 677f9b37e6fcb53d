"""A real Dovecot for the tests: started on loopback from a throwaway configuration in a
temporary folder (its own base_dir, no system configuration), users from a passwd-file,
maildirs in the folder, TLS with a certificate made for the run by the openssl command.

As root (CI) Dovecot runs as it does installed: login and internal processes as its
system users, each mail user under a uid of its own (from the passwd-file) so that two
users' files stay apart.  As anyone else it runs rootless, everything under that user.
"""
from __future__ import annotations

import contextlib
import fcntl
import imaplib
import json
import os
import pwd
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

DOVECOT = shutil.which("dovecot") or "/usr/sbin/dovecot"
OPENSSL = shutil.which("openssl")
# Mail users' uids when the tests run as root: above any system account's, and fixed so
# that the files a test checks have a known owner.
FIRST_UID = 61000
PASSWORD = "secret-{name}"
START_WAIT = 30.0  # seconds for Dovecot to listen; it takes well under one


def unavailable() -> str | None:
    """Why a Dovecot cannot be run here (None: it can)."""
    if not os.path.exists(DOVECOT):
        return "Dovecot is not installed (.ci/run installs dovecot-imapd and dovecot-sieve)"
    if shutil.which("sievec") is None:
        return "Dovecot's Sieve plugin is not installed (.ci/run installs dovecot-sieve)"
    if OPENSSL is None:
        return "the openssl command is not installed (needed to make the test certificate)"
    if os.geteuid() == 0:
        for user in ("dovecot", "dovenull"):
            try:
                pwd.getpwnam(user)
            except KeyError:
                return f"Dovecot's system user {user!r} is missing (install dovecot-core)"
    return None


# .ci/run sets SPAMNB_NEED_DOVECOT=1 (and installs Dovecot): there a missing Dovecot fails.
needs_dovecot = pytest.mark.skipif(
    unavailable() is not None and not os.environ.get("SPAMNB_NEED_DOVECOT"), reason=f"{unavailable()} (SPAMNB_NEED_DOVECOT unset)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class User:
    name: str
    password: str
    home: Path
    uid: int
    gid: int

    @property
    def maildir(self) -> Path:
        return self.home / "Maildir"


@dataclass
class Dovecot:
    root: Path
    imap_port: int
    imaps_port: int
    ca_file: Path
    users: dict[str, User] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def config(self) -> Path:
        return self.root / "dovecot.conf"

    def url(self, user: str, folder: str = "INBOX", tls: str = "imaps") -> str:
        port = self.imaps_port if tls == "imaps" else self.imap_port
        return f"{tls}://{user}@127.0.0.1:{port}/{folder}"

    def connect(self, user: str) -> imaplib.IMAP4_SSL:
        """A logged-in client of the test's own (not the code's under test)."""
        context = ssl.create_default_context(cafile=str(self.ca_file))
        client = imaplib.IMAP4_SSL("127.0.0.1", self.imaps_port, ssl_context=context, timeout=30)
        client.login(user, self.users[user].password)
        return client

    def log(self) -> str:
        path = self.root / "log" / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: it is its own CA."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def config_text(d: Dovecot, cert: Path, key: Path, extra: str) -> str:
    root = os.geteuid() == 0
    me = pwd.getpwuid(os.geteuid()).pw_name
    internal = ("dovecot", "dovenull") if root else (me, me)
    return f"""\
base_dir = {d.root}/run
state_dir = {d.root}/state
log_path = {d.root}/log/dovecot.log
protocols = imap
listen = 127.0.0.1
default_internal_user = {internal[0]}
default_login_user = {internal[1]}
first_valid_uid = {FIRST_UID if root else os.geteuid()}
mail_location = maildir:~/Maildir
ssl = yes
ssl_cert = <{cert}
ssl_key = <{key}
auth_mechanisms = plain login
passdb {{
  driver = passwd-file
  args = scheme=PLAIN {d.root}/users
}}
userdb {{
  driver = passwd-file
  args = {d.root}/users
}}
namespace inbox {{
  inbox = yes
  separator = /
  mailbox Junk {{
    special_use = \\Junk
    auto = create
  }}
  mailbox Trash {{
    special_use = \\Trash
    auto = create
  }}
  mailbox Archive {{
    special_use = \\Archive
    auto = create
  }}
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {d.imap_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {d.imaps_port}
    ssl = yes
  }}
}}
service stats {{
  unix_listener stats-writer {{
    mode = 0666
  }}
}}
{extra}
"""


def add_user(d: Dovecot, name: str) -> User:
    root = os.geteuid() == 0
    uid = FIRST_UID + len(d.users) if root else os.geteuid()
    gid = uid if root else os.getegid()
    home = d.root / "home" / name
    home.mkdir(parents=True)
    if root:
        os.chown(home, uid, gid)
    user = User(name, PASSWORD.format(name=name), home, uid, gid)
    d.users[name] = user
    lines = [f"{u.name}:{{PLAIN}}{u.password}:{u.uid}:{u.gid}::{u.home}::" for u in d.users.values()]
    (d.root / "users").write_text("\n".join(lines) + "\n")
    return user


@contextlib.contextmanager
def running(users: tuple[str, ...] = ("alice", "bob"), sieve: bool = False, capabilities: str | None = None) -> Iterator[Dovecot]:
    """A Dovecot with `users` (password PASSWORD), stopped and removed on leaving; with
    `sieve`, configured for the learning scripts (`install_learner` puts them in place);
    `capabilities`: what the server says it can do (not what it can)."""
    assert unavailable() is None, unavailable()
    top = Path(tempfile.mkdtemp(prefix="spamnb-dovecot-"))
    os.chmod(top, 0o755)  # the mail users' processes go through it to their homes
    try:
        for sub in ("run", "state", "log", "tls", "home"):
            (top / sub).mkdir()
        os.chmod(top / "home", 0o755)
        cert, key = make_certificate(top / "tls")
        d = Dovecot(top, free_port(), free_port(), cert)
        for name in users:
            add_user(d, name)
        extra = (sieve_config(top) if sieve else "") + (f"imap_capability = {capabilities}\n" if capabilities else "")
        d.config.write_text(config_text(d, cert, key, extra))
        d.process = subprocess.Popen([DOVECOT, "-F", "-c", str(d.config)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            wait_listening(d)
            yield d
        finally:
            d.stop()
    finally:
        shutil.rmtree(top, ignore_errors=True)


def wait_listening(d: Dovecot) -> None:
    deadline = time.monotonic() + START_WAIT
    while True:
        assert d.process is not None
        if d.process.poll() is not None:
            out = d.process.stdout.read().decode(errors="replace") if d.process.stdout else ""
            raise RuntimeError(f"dovecot exited {d.process.returncode}: {out}{d.log()}")
        try:
            with socket.create_connection(("127.0.0.1", d.imaps_port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"dovecot did not listen within {START_WAIT:.0f} s: {d.log()}") from None
            time.sleep(0.05)


CONTRIB = Path(__file__).resolve().parents[1] / "contrib" / "dovecot"


def sieve_config(root: Path) -> str:
    """The README's IMAPSieve configuration (the recipe under test), its paths moved under
    `root` where `install_learner` copies (and compiles) contrib/dovecot's scripts."""
    readme = (CONTRIB.parents[1] / "README.md").read_text(encoding="utf-8")
    recipe = readme.split("### IMAP: learning when you move mail (Dovecot)", 1)[1]
    config = re.search(r"\n```\n(protocol imap \{.*?)```", recipe, flags=re.S)
    assert config, "README: no Dovecot configuration under 'IMAP: learning when you move mail'"
    return config.group(1).replace("/etc/dovecot/sieve", f"{root}/sieve").replace("/usr/lib/dovecot/sieve-pipe", f"{root}/sieve-pipe")


def install_learner(d: Dovecot, spamnb: str) -> None:
    """contrib/dovecot's scripts where `sieve_config` names them, compiled by sievec (the
    mail users cannot write the compiled scripts beside them); the wrapper runs `spamnb`."""
    for sub, mode in (("sieve", 0o755), ("sieve-pipe", 0o755)):
        (d.root / sub).mkdir(exist_ok=True)
        os.chmod(d.root / sub, mode)
    for script in ("report-spam.sieve", "report-ham.sieve"):
        shutil.copy(CONTRIB / script, d.root / "sieve" / script)
        subprocess.run(["sievec", "-c", str(d.config), str(d.root / "sieve" / script)], check=True, capture_output=True)
    shutil.copy(CONTRIB / "spamnb-learn", d.root / "sieve-pipe" / "spamnb-learn")
    set_learner(d, spamnb)
    for path in (d.root / "sieve").iterdir():
        os.chmod(path, 0o644)


def set_learner(d: Dovecot, spamnb: str, timeout: int = 60, spool: str | None = None) -> None:
    """The wrapper's spamnb-learn.conf: the command it runs, how long it may take, and
    where it spools (None: its default)."""
    conf = d.root / "sieve-pipe" / "spamnb-learn.conf"
    conf.write_text(f"SPAMNB='{spamnb}'\nSPAMNB_LEARN_TIMEOUT={timeout}\n" + (f"SPAMNB_SPOOL='{spool}'\n" if spool else ""))
    os.chmod(conf, 0o644)


# Test runs on one machine (several checkouts' suites at once) share the folders they open:
# each holds this lock shared while inside, the last one out puts the modes back from the
# record the first one in wrote.
TRAVERSE_LOCK = Path(tempfile.gettempdir()) / "spamnb-dovecot-traverse.lock"
TRAVERSE_RECORD = Path(tempfile.gettempdir()) / "spamnb-dovecot-traverse.json"


@contextlib.contextmanager
def traversable(*paths: str) -> Iterator[None]:
    """The folders on the way to `paths` searchable by other users while inside: Dovecot
    runs the learner as the mail user, who must reach the interpreter (under root's 0700
    home where pyenv put it) and the repository.  Search only (o+x, no listing); the modes
    are put back when the last test run on the machine that needed them leaves."""
    with open(TRAVERSE_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = json.loads(TRAVERSE_RECORD.read_text()) if TRAVERSE_RECORD.exists() else {}
        for path in paths:
            for folder in Path(os.path.realpath(path)).parents:
                mode = folder.stat().st_mode
                if not mode & 0o001:
                    os.chmod(folder, mode | 0o001)
                    record[str(folder)] = mode & 0o7777
        TRAVERSE_RECORD.write_text(json.dumps(record))
        fcntl.flock(lock, fcntl.LOCK_SH)  # a downgrade: others may come in, none may restore
        try:
            yield
        finally:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the last one out
            except BlockingIOError:
                return
            record = json.loads(TRAVERSE_RECORD.read_text()) if TRAVERSE_RECORD.exists() else {}
            for folder, mode in record.items():
                with contextlib.suppress(OSError):
                    os.chmod(folder, mode)
            TRAVERSE_RECORD.unlink(missing_ok=True)
