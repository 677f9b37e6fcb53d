"""`spamnb serve` driven as mail systems drive spamd: Debian's real spamc against the console
script, started on a free loopback port (or a Unix socket) by each test's fixture.

What must hold: the verdict and X-Spamnb header are `classify --pipe`'s for the same model;
`spamc -c`'s exit status and X-Spam-Flag mean what SpamAssassin's mean (spam verdict only);
a server that is down, a malformed or slow request, or an oversized message loses no mail
and stops nothing; TELL learns only when allowed; a replaced model is picked up.
"""
from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spamnb.mail import headers
from spamnb.pipe import onemessage
from spamnb.serve import protocol
from tests.test_pipe import run_pipe

SPAMNB = Path(sys.executable).with_name("spamnb")
SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus"
SPAMC = shutil.which("spamc")
LISTENING = re.compile(r"listening on (\[[^\]]+\]|[^\s:]+):(\d+)")
SA_FIELD = re.compile(rb"^X-Spam-(?:Checker-Version|Flag|Level|Status):.*\n", re.M)

pytestmark = pytest.mark.skipif(SPAMC is None, reason="spamc not installed (apt-get install spamc; .ci/run installs it)")


def sample_messages() -> list[tuple[str, bytes]]:
    paths = sorted([*(SAMPLE / "maildir").glob("*/cur/*"), *(SAMPLE / "maildir").glob("*/new/*")])
    return [(f"{p.parent.parent.name}/{p.name}", p.read_bytes()) for p in paths if p.is_file()]


MESSAGES = sample_messages()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample corpus learnt by the console script, as a user trains."""
    path = tmp_path_factory.mktemp("serve") / "model.npz"
    subprocess.run([str(SPAMNB), "-q", "train", "-m", str(path), "--spam", str(SAMPLE / "maildir/spam"), "--ham", str(SAMPLE / "maildir/ham")], check=True, timeout=120)
    return path


class Server:
    """A `spamnb serve` process: its address for spamc, its stderr so far."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        self.watch(subprocess.Popen([str(SPAMNB), "serve", *args], stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env))
        self.host, self.port = "", 0
        self.unix = next((a[5:] for a in args if a.startswith("unix:")), None)
        self.log = Path(args[args.index("--log") + 1]) if "--log" in args else None
        line = self.wait_for(b"listening on ")
        if self.unix is None:
            match = LISTENING.search(line)
            assert match, line
            self.host, self.port = match.group(1).strip("[]"), int(match.group(2))

    def watch(self, proc: subprocess.Popen[bytes]) -> None:
        """Read `proc`'s stderr as it comes, in a thread: a server that logs a line per failed
        request must never block on a full pipe because the test is busy sending requests."""
        self.proc, self.err, self.stderr, self.log = proc, b"", bytearray(), None
        self.grew = threading.Condition()

        def drain() -> None:
            assert proc.stderr is not None
            while chunk := os.read(proc.stderr.fileno(), 1 << 16):
                with self.grew:
                    self.stderr += chunk
                    self.grew.notify_all()

        self.drainer = threading.Thread(target=drain, daemon=True)
        self.drainer.start()

    def output(self) -> bytes:
        """What the server wrote so far: its --log file if it has one, else its stderr."""
        if self.log is not None:
            return self.log.read_bytes() if self.log.exists() else b""
        with self.grew:
            return bytes(self.stderr)

    def wait_for(self, needle: bytes, seconds: float = 60.0) -> str:
        """The first line of stderr (or of the --log file) holding `needle`."""
        end = time.monotonic() + seconds
        while needle not in (text := self.output()):
            if time.monotonic() > end or (self.proc.poll() is not None and not self.drainer.is_alive()):
                raise AssertionError(f"no {needle!r} from the server: {text.decode(errors='replace')}")
            with self.grew:
                self.grew.wait(0.05)
        self.err = text
        at = text.index(needle)
        start = text.rfind(b"\n", 0, at) + 1
        end_at = text.find(b"\n", at)
        return text[start : end_at if end_at >= 0 else len(text)].decode()

    def spamc(self, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        where = ["-U", self.unix] if self.unix else ["-d", self.host, "-p", str(self.port)]
        return subprocess.run([SPAMC, *where, *args], input=stdin, capture_output=True, timeout=60, check=False)  # type: ignore[list-item]

    def raw(self, request: bytes, shut: bool = True, timeout: float = 30.0) -> bytes:
        """Send `request` bytes as they are, read the whole reply."""
        with socket.create_connection((self.host, self.port), timeout=timeout) as sock:
            sock.sendall(request)
            if shut:
                sock.shutdown(socket.SHUT_WR)
            return read_all(sock)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(60)
        if self.proc.poll() is None:
            self.proc.kill()
        self.drainer.join(60)
        with self.grew:
            self.err = (self.output() if self.log is not None else b"") + bytes(self.stderr)
        return self.proc.wait()


def read_all(sock: socket.socket) -> bytes:
    parts = []
    while chunk := sock.recv(1 << 16):
        parts.append(chunk)
    return b"".join(parts)


@contextlib.contextmanager
def serving(*args: str | Path, env: dict[str, str] | None = None) -> Iterator[Server]:
    server = Server([*map(str, args)], env)
    try:
        yield server
    finally:
        status = server.stop()
        assert status == 0, server.err.decode(errors="replace")
        assert b"Traceback" not in server.err, server.err.decode(errors="replace")


@pytest.fixture(scope="module")
def server(model: Path) -> Iterator[Server]:
    with serving("-m", model, "--listen", "127.0.0.1:0", "--workers", "2") as s:
        yield s


def check_line(score: float, threshold: float) -> bytes:
    return f"{headers.SA_POINTS * score:.1f}/{headers.SA_POINTS * threshold:.1f}\n".encode()


def threshold(model: Path) -> float:
    """The P a spam verdict needs under the model (its cut-off, or its ham-loss floor above it)."""
    return onemessage.spam_threshold(onemessage.open_model(str(model)))


def pipe_verdict(model: Path, data: bytes) -> tuple[bytes, str, float]:
    """`classify --pipe`'s output, verdict and score for one message."""
    piped = run_pipe(model, data)
    match = re.search(rb"X-Spamnb: (spam|ham|unsure), score=([01]\.\d{4})", piped.out)
    assert match, piped
    return piped.out, match.group(1).decode(), float(match.group(2))


# ---------------------------------------------------------------- same verdicts as the pipe


def test_spamc_check_exit_status_is_spam_exactly_when_the_pipe_says_spam(server: Server, model: Path) -> None:
    verdicts = set()
    for name, data in MESSAGES:
        _, verdict, score = pipe_verdict(model, data)
        done = server.spamc("-c", stdin=data)
        assert done.returncode == (1 if verdict == "spam" else 0), (name, verdict, done)
        points, required = done.stdout.decode().split("/")
        assert abs(float(points) - headers.SA_POINTS * score) <= 0.051, (name, done.stdout, score)
        assert float(required) == round(headers.SA_POINTS * threshold(model), 1)
        verdicts.add(verdict)
    assert verdicts >= {"spam", "ham"}


def test_the_server_says_it_listens_once_every_worker_has_read_the_model(server: Server) -> None:
    """Ready (the log line, systemd's READY=1) only after each worker read the model and scored a
    message: the first requests wait for none of that."""
    assert "2 worker(s) warmed" in server.wait_for(b"listening on ")


def test_process_is_the_pipe_output_plus_spamassassin_fields(server: Server, model: Path) -> None:
    for name, data in MESSAGES:
        piped, verdict, score = pipe_verdict(model, data)
        done = server.spamc(stdin=data)
        assert done.returncode == 0
        assert SA_FIELD.sub(b"", done.stdout) == piped, name
        fields = dict(re.findall(rb"^(X-Spam-[A-Za-z-]+): ?(.*)$", done.stdout, re.M))
        assert (fields.get(b"X-Spam-Flag") == b"YES") == (verdict == "spam"), name
        status = f"{'Yes' if verdict == 'spam' else 'No'}, score={headers.SA_POINTS * score:.1f} required={headers.SA_POINTS * threshold(model):.1f} tests=SPAMNB_{verdict.upper()}"
        assert fields[b"X-Spam-Status"].decode() == status


def test_headers_gives_the_same_message_as_process(server: Server) -> None:
    for name, data in MESSAGES[::7]:
        assert server.spamc("--headers", stdin=data).stdout == server.spamc(stdin=data).stdout, name


def test_the_exit_code_option_follows_the_verdict(server: Server, model: Path) -> None:
    for name, data in MESSAGES[::5]:
        _, verdict, _ = pipe_verdict(model, data)
        assert server.spamc("-E", stdin=data).returncode == (1 if verdict == "spam" else 0), name


def test_symbols_and_reports(server: Server, model: Path) -> None:
    spam = next(data for name, data in MESSAGES if pipe_verdict(model, data)[1] == "spam")
    ham = next(data for name, data in MESSAGES if pipe_verdict(model, data)[1] == "ham")
    assert server.spamc("-y", stdin=spam).stdout == b"SPAMNB_SPAM"
    assert server.spamc("-y", stdin=ham).stdout == b"SPAMNB_HAM"
    report = server.spamc("-R", stdin=spam).stdout.decode()
    first, rest = report.split("\n", 1)
    assert first == check_line(pipe_verdict(model, spam)[2], threshold(model)).decode().strip()
    assert "spamnb verdict: spam" in rest and "required)" in rest
    assert len(re.findall(r"^ *[+-]\d+\.\d\d \S", rest, re.M)) == 10  # the 10 strongest tokens
    assert server.spamc("-r", stdin=ham).stdout == b""  # REPORT_IFSPAM: nothing for ham
    assert server.spamc("-r", stdin=spam).stdout.startswith(first.encode())


def test_ping(server: Server) -> None:
    done = server.spamc("-K")
    assert done.returncode == 0 and done.stdout.startswith(b"SPAMD/1.5 0")
    assert server.raw(b"PING SPAMC/1.2\r\n") == b"SPAMD/1.5 0 PONG\r\n"  # before 1.5: no blank line


def test_a_compressed_message_gets_the_reply_of_the_plain_one(server: Server) -> None:
    # Debian's spamc is built without zlib (spamc -z: "support not available"): the bytes it would send.
    data = MESSAGES[0][1]
    packed = zlib.compress(data, 3)
    plain = server.raw(b"PROCESS SPAMC/1.5\r\nContent-length: %d\r\n\r\n" % len(data) + data)
    compressed = server.raw(b"PROCESS SPAMC/1.5\r\nCompress: zlib\r\nContent-length: %d\r\n\r\n" % len(packed) + packed)
    assert compressed == plain and plain.startswith(b"SPAMD/1.5 0 EX_OK\r\n")
    assert server.raw(b"CHECK SPAMC/1.5\r\nCompress: zlib\r\nContent-length: 5\r\n\r\nnot z").startswith(b"SPAMD/1.5 65 ")


# ---------------------------------------------------------------- no mail lost


def test_spamc_passes_mail_through_unchanged_when_the_server_is_down(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])  # nobody listens on it once closed
    data = MESSAGES[0][1]
    done = subprocess.run([SPAMC, "-d", "127.0.0.1", "-p", port, "--connect-retries=1"], input=data, capture_output=True, timeout=60, check=False)  # type: ignore[list-item]
    assert done.returncode == 0 and done.stdout == data
    checked = subprocess.run([SPAMC, "-d", "127.0.0.1", "-p", port, "--connect-retries=1", "-c"], input=data, capture_output=True, timeout=60, check=False)  # type: ignore[list-item]
    assert checked.returncode == 0 and checked.stdout == b"0/0\n"
    strict = subprocess.run([SPAMC, "-d", "127.0.0.1", "-p", port, "--connect-retries=1", "-x"], input=data, capture_output=True, timeout=60, check=False)  # type: ignore[list-item]
    assert strict.returncode == 69  # EX_UNAVAILABLE: the MTA keeps the mail and retries


def test_malformed_requests_get_a_protocol_error_and_the_server_goes_on(server: Server) -> None:
    for bad in (
        b"HELLO SPAMC/1.5\r\n\r\n",
        b"CHECK\r\n\r\n",
        b"CHECK SPAMC/1.5\r\nContent-length: many\r\n\r\n",
        b"CHECK SPAMC/1.5\r\nno colon here\r\n\r\n",
        b"CHECK SPAMC/1.5\r\nContent-length: 100\r\n\r\nshort",
        b"CHECK SPAMC/1.5\r\nUser: ../../etc/passwd\r\nContent-length: 1\r\n\r\nx",
        b"TELL SPAMC/1.5\r\nSet: local\r\nRemove: local\r\nContent-length: 1\r\n\r\nx",
        b"\xff\xfe\r\n\r\n",
        b"X" * (protocol.MAX_HEAD + 10),
        b"",
    ):
        reply = server.raw(bad)
        assert re.fullmatch(rb"SPAMD/1\.5 (6[4-9]|7\d) [ -~]*\r\n", reply), (bad[:60], reply)
    assert server.spamc("-K").returncode == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300) | st.builds(lambda cmd, rest: cmd + rest, st.sampled_from([b"CHECK SPAMC/1.5\r\n", b"PROCESS SPAMC/1.5\r\nContent-length: 3\r\n", b"TELL SPAMC/1.5\r\n"]), st.binary(max_size=200)))
def test_any_bytes_get_a_reply_and_the_server_goes_on(server: Server, request_bytes: bytes) -> None:
    reply = server.raw(request_bytes)
    assert reply == b"" or reply.startswith(b"SPAMD/1.5 ")  # SKIP and a lone PING line are answered so
    assert server.raw(b"PING SPAMC/1.5\r\n\r\n") == b"SPAMD/1.5 0 PONG\r\n"


def test_a_message_over_max_size_is_passed_back_unscanned(model: Path) -> None:
    data = MESSAGES[0][1] + b"x" * 4000
    with serving("-m", model, "--listen", "127.0.0.1:0", "--workers", "1", "--max-size", "3000") as server:
        processed = server.spamc(stdin=data)
        assert processed.returncode == 0 and processed.stdout == data
        checked = server.spamc("-c", stdin=data)
        assert checked.returncode == 0 and checked.stdout == b"0.0/0.0\n"
        assert server.spamc("--headers", stdin=data).stdout == data
        assert server.spamc("-c", stdin=MESSAGES[1][1][:2500]).stdout != b"0.0/0.0\n"


def test_a_slow_client_is_cut_off_and_others_are_answered(model: Path) -> None:
    with serving("-m", model, "--listen", "127.0.0.1:0", "--workers", "1", "--connections", "1", "--timeout", "1") as server:
        with socket.create_connection((server.host, server.port), timeout=30) as slow:
            start = time.monotonic()
            reply = b""
            for byte in b"CHECK SPAMC/1.5\r\nContent-length: 9000\r\n":
                try:
                    slow.sendall(bytes([byte]))
                    time.sleep(0.1)
                except OSError:
                    break
                if select.select([slow], [], [], 0)[0]:
                    reply = read_all(slow)
                    break
            if not reply:
                reply = read_all(slow)
            assert reply.startswith(b"SPAMD/1.5 79 Timeout")
            assert time.monotonic() - start < 30  # cut off, not served for ever (bound far above --timeout)
        assert server.spamc("-c", stdin=MESSAGES[0][1]).stdout.endswith(check_line(0, threshold(model))[3:])


# ---------------------------------------------------------------- TELL, models, users


def test_tell_learns_only_when_allowed_and_as_train_does(tmp_path: Path, model: Path) -> None:
    mine = tmp_path / "model.npz"
    shutil.copy(model, mine)
    ham = next(data for name, data in MESSAGES if name.startswith("ham/"))
    with serving("-m", mine, "--listen", "127.0.0.1:0", "--workers", "1") as server:
        refused = server.spamc("-L", "spam", stdin=ham)
        assert refused.returncode != 0 and not (tmp_path / "model.npz.journal").exists()
    twin = tmp_path / "twin.npz"
    shutil.copy(model, twin)
    with serving("-m", mine, "--listen", "127.0.0.1:0", "--workers", "2", "--allow-tell") as server:
        # The message was learnt as ham by `train`: as spam it moves, once.
        assert server.spamc("-L", "spam", stdin=ham).stdout == b"Message successfully un/learned\n"
        assert server.spamc("-L", "spam", stdin=ham).stdout == b"Message was already un/learned\n"
        # As spamc -L is often given it: as PROCESS stamped it (X-Spamnb, X-Spam-Status...), the same message.
        processed = server.spamc(stdin=ham).stdout
        assert b"\nX-Spam-Status: " in processed and b"\nX-Spamnb: " in processed
        assert server.spamc("-L", "spam", stdin=processed).stdout == b"Message was already un/learned\n"
        subprocess.run([str(SPAMNB), "-q", "train", "-m", str(twin), "--spam", "-"], input=ham, check=True, timeout=60)
        # Verdict and header afterwards: those of the pipe over a model `train --spam -` taught the same.
        for _, data in MESSAGES[::9]:
            piped, _, _ = pipe_verdict(twin, data)
            assert SA_FIELD.sub(b"", server.spamc(stdin=data).stdout) == piped
        assert server.spamc("-L", "forget", stdin=ham).stdout == b"Message successfully un/learned\n"
        assert server.spamc("-L", "forget", stdin=ham).stdout == b"Message was already un/learned\n"


def test_a_model_replaced_by_train_is_used_by_the_next_request(tmp_path: Path, model: Path) -> None:
    mine = tmp_path / "model.npz"
    shutil.copy(model, mine)
    with serving("-m", mine, "--listen", "127.0.0.1:0", "--workers", "2") as server:
        data = MESSAGES[3][1]
        before = server.spamc(stdin=data).stdout
        # Teach the opposite of everything: the bulk train rewrites the file and renames it over.
        subprocess.run([str(SPAMNB), "-q", "train", "-m", str(mine), "--spam", str(SAMPLE / "maildir/ham"), "--ham", str(SAMPLE / "maildir/spam")], check=True, timeout=120)
        after = server.spamc(stdin=data).stdout
        assert after != before
        assert SA_FIELD.sub(b"", after) == pipe_verdict(mine, data)[0]


def test_a_model_copied_over_in_place_kills_no_worker(tmp_path: Path, model: Path) -> None:
    """`cp` onto the served file truncates and rewrites it under the requests: none may find a worker
    dead (a mapped file cut short is SIGBUS), each is answered or refused in protocol, and once the copy
    is done the copied model answers."""
    mine, other = tmp_path / "model.npz", tmp_path / "other.npz"
    shutil.copy(model, mine)
    subprocess.run([str(SPAMNB), "-q", "train", "-m", str(other), "--spam", str(SAMPLE / "maildir/ham"), "--ham", str(SAMPLE / "maildir/spam")], check=True, timeout=120)
    data = MESSAGES[3][1]
    request = b"CHECK SPAMC/1.5\r\nContent-length: %d\r\n\r\n" % len(data) + data
    replies: list[bytes] = []
    done = threading.Event()
    with serving("-m", mine, "--listen", "127.0.0.1:0", "--workers", "2") as server:

        def client() -> None:
            while not done.is_set():
                replies.append(server.raw(request))

        clients = [threading.Thread(target=client) for _ in range(4)]
        for thread in clients:
            thread.start()
        try:
            # 40 copies at least, and on (400 at most) until 40 requests were answered, however loaded the machine.
            copy = 0
            while copy < 40 or (len(replies) < 40 and copy < 400):
                subprocess.run(["cp", str(other if copy % 2 == 0 else model), str(mine)], check=True, timeout=60)
                time.sleep(0.02)
                copy += 1
            subprocess.run(["cp", str(model), str(mine)], check=True, timeout=60)
        finally:
            done.set()
            for thread in clients:
                thread.join()
        last = server.spamc(stdin=data)
    assert b"ended (" not in server.err, server.err.decode(errors="replace")
    assert SA_FIELD.sub(b"", last.stdout) == pipe_verdict(model, data)[0], server.err.decode(errors="replace")
    assert len(replies) > 40
    for reply in replies:
        assert reply.startswith((b"SPAMD/1.5 0 EX_OK\r\nSpam: ", b"SPAMD/1.5 69 Service Unavailable")), reply


def test_user_picks_a_model_in_models_dir_and_no_name_leaves_it(tmp_path: Path, model: Path) -> None:
    users = tmp_path / "users"
    users.mkdir()
    alice = users / "alice.npz"
    subprocess.run([str(SPAMNB), "-q", "train", "-m", str(alice), "--spam", str(SAMPLE / "maildir/ham"), "--ham", str(SAMPLE / "maildir/spam")], check=True, timeout=120)
    shutil.copy(alice, tmp_path / "evil.npz")  # just outside DIR
    data = next(d for name, d in MESSAGES if name.startswith("spam/") and pipe_verdict(model, d)[1] == "spam")
    with serving("-m", model, "--models", users, "--listen", "127.0.0.1:0", "--workers", "1") as server:
        assert server.spamc("-c", "-u", "alice", stdin=data).returncode == 0  # alice's model: ham
        assert server.spamc("-c", "-u", "bob", stdin=data).returncode == 1  # no model of bob's: --model
        for name in ("../evil", "alice/../../evil", ".hidden", "a b"):
            reply = server.raw(b"CHECK SPAMC/1.5\r\nUser: %s\r\nContent-length: %d\r\n\r\n" % (name.encode(), len(data)) + data)
            assert reply.startswith(b"SPAMD/1.5 67 "), (name, reply)
            assert server.spamc("-u", name, stdin=data).stdout == data  # spamc passes the mail on unchanged


# ---------------------------------------------------------------- sockets, signals, systemd


def test_unix_socket_with_its_mode(tmp_path: Path, model: Path) -> None:
    path = tmp_path / "spamd.sock"
    with serving("-m", model, "--listen", f"unix:{path}", "--socket-mode", "0660", "--workers", "1") as server:
        assert oct(path.stat().st_mode & 0o777) == oct(0o660)
        done = server.spamc("-c", stdin=MESSAGES[0][1])
        assert done.stdout.endswith(check_line(0, threshold(model))[3:])
    assert not path.exists()


def test_sigterm_finishes_the_request_in_hand(model: Path) -> None:
    data = MESSAGES[0][1]
    server = Server(["-m", str(model), "--listen", "127.0.0.1:0", "--workers", "1"])
    with socket.create_connection((server.host, server.port), timeout=30) as sock:
        sock.sendall(b"CHECK SPAMC/1.5\r\nContent-length: %d\r\n\r\n" % len(data) + data[:100])
        time.sleep(0.5)  # the worker holds the request (no wall-clock assert: ordering only)
        server.proc.send_signal(signal.SIGTERM)
        server.wait_for(b"finishing the requests in hand")
        sock.sendall(data[100:])
        sock.shutdown(socket.SHUT_WR)
        assert read_all(sock).startswith(b"SPAMD/1.5 0 EX_OK\r\nSpam: ")
    assert server.stop() == 0


def test_sighup_reopens_the_log_and_notify_socket_hears_ready(tmp_path: Path, model: Path) -> None:
    log = tmp_path / "serve.log"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify"))
    env = {**os.environ, "NOTIFY_SOCKET": str(tmp_path / "notify")}
    server = Server(["-m", str(model), "--listen", "127.0.0.1:0", "--workers", "1", "--log", str(log)], env)
    try:
        notify.settimeout(30)
        assert notify.recv(100) == b"READY=1"
        os.rename(log, tmp_path / "serve.log.1")
        server.proc.send_signal(signal.SIGHUP)
        for _ in range(300):
            if log.exists() and b"SIGHUP" in log.read_bytes():
                break
            time.sleep(0.1)
        assert b"log reopened" in log.read_bytes()
        assert b"listening on" in (tmp_path / "serve.log.1").read_bytes()
    finally:
        assert server.stop() == 0
        assert notify.recv(100) == b"STOPPING=1"
        notify.close()


def test_socket_activation_takes_the_socket_systemd_passes(model: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def as_systemd() -> None:  # in the child: the socket as fd 3, LISTEN_PID its own pid
        os.dup2(listener.fileno(), 3)
        os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))

    proc = subprocess.Popen([str(SPAMNB), "serve", "-m", str(model), "--listen", "127.0.0.1:1", "--workers", "1"], preexec_fn=as_systemd, close_fds=False, stderr=subprocess.PIPE)
    listener.close()
    try:
        server = Server.__new__(Server)
        server.watch(proc)
        server.unix, server.host, server.port = None, "127.0.0.1", port
        assert "the socket systemd passed" in server.wait_for(b"listening on ")
        assert server.spamc("-K").returncode == 0
    finally:
        assert server.stop() == 0


def test_a_start_that_cannot_work_says_why_in_one_line(tmp_path: Path, model: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        for args in (["-m", str(tmp_path / "none.npz")], ["-m", str(model), "--listen", f"127.0.0.1:{port}"], ["-m", str(model), "--listen", "nonsense"]):
            done = subprocess.run([str(SPAMNB), "serve", *args], capture_output=True, timeout=60, check=False)
            assert done.returncode == 3, (args, done)
            assert done.stderr.count(b"\n") == 1 and done.stderr.startswith(b"spamnb: error: "), done.stderr


# ---------------------------------------------------------------- the request parser, in process


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=400))
def test_the_parser_gives_a_request_or_a_protocol_error(head: bytes) -> None:
    try:
        request = protocol.parse_head(head)
    except protocol.ProtocolError as err:
        assert 64 <= err.code <= 79
        return
    assert request.command in protocol.COMMANDS
    assert request.user is None or protocol.USER.fullmatch(request.user)
