"""`spamnb serve`: the sockets, processes and limits of a spamd-compatible server.

A master process binds the socket (or takes the one systemd passes), opens the model
once to check it, and forks `workers` processes (each reads the model and scores a message
before the master says it is ready); each accepts on the shared socket
and hands a connection to one of its threads (`connections` in all, the rest wait
in the kernel's queue).  A connection is one request: its head and message must
arrive within `timeout` seconds (a client sending a byte a minute is cut off), the
message may be `max_size` bytes (larger mail is passed back unscanned, as spamc
passes back what is over its own -s), and anything malformed gets a protocol
error and the connection's end; the server goes on.  Nothing a client sends can
stop a worker: every failure becomes an error reply and one log line.

Signals (to the master): SIGTERM and SIGINT stop accepting and let the workers
finish the requests in hand; SIGHUP reopens the log and has every worker close its
models, so the next request reads each afresh.  A worker that dies is replaced.
"""
from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import os
import queue
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
import zlib
from typing import NamedTuple

from spamnb.serve import protocol
from spamnb.serve.answer import Settings, answer, check
from spamnb.serve.resident import Resident

BLOCK = 1 << 16
# No request is read beyond this, whatever --max-size says: spamc sends at most 256 MB.
HARD_MAX = 256 << 20
# After its reply, a connection's unread bytes are read and dropped for at most this
# long (closing with bytes unread resets the connection, which can lose the reply).
DRAIN_SECONDS = 1.0
M_ARENA_MAX, M_MMAP_THRESHOLD = -8, -3  # glibc's mallopt parameters
MMAP_THRESHOLD = 128 << 10  # glibc's initial one
LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))


class ServeError(Exception):
    """The server cannot start (a bad --listen, an address in use, an unusable model)."""


class Options(NamedTuple):
    listen: str = "127.0.0.1:783"
    workers: int = 2
    # Few: connections a worker holds wait for its CPU while the other worker's may be idle; in
    # the kernel's queue they go to whichever is free (docs/measurements.md; spamd's own default is 5).
    connections: int = 8
    timeout: float = 30.0
    max_size: int = 4 << 20
    socket_mode: int = 0o600
    allow: tuple = LOOPBACK
    log: str | None = None


# ---------------------------------------------------------------- the log


class Log:
    """One line per event, to stderr or a file opened for appending (reopened on SIGHUP)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.fd = 2
        self.reopen()

    def reopen(self) -> None:
        if self.path is None:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)
        old, self.fd = self.fd, fd
        if old != 2:
            os.close(old)

    def __call__(self, text: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with contextlib.suppress(OSError):
            os.write(self.fd, f"{stamp} spamnb serve[{os.getpid()}]: {text}\n".encode("utf-8", "replace"))


# ---------------------------------------------------------------- the socket


def parse_listen(text: str) -> tuple[str, str, int]:
    """('unix', PATH, 0) or ('tcp', HOST, PORT) from `unix:PATH`, `HOST:PORT` or `[V6]:PORT`."""
    if text.startswith("unix:"):
        if not text[5:]:
            raise ServeError("--listen unix:PATH needs a path")
        return "unix", text[5:], 0
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ServeError(f"--listen {text!r}: give HOST:PORT, [IPV6]:PORT or unix:PATH")
    return "tcp", host.strip("[]") or "127.0.0.1", int(port)


def systemd_socket() -> socket.socket | None:
    """The listening socket systemd passed (socket activation: LISTEN_PID is us, LISTEN_FDS >= 1), or None."""
    if os.environ.get("LISTEN_PID") != str(os.getpid()) or int(os.environ.get("LISTEN_FDS", "0") or 0) < 1:
        return None
    return socket.socket(fileno=3)


def bind(options: Options) -> tuple[socket.socket, str, str | None]:
    """The listening socket, how to name it, and the Unix socket's path to remove at the end (None: TCP)."""
    passed = systemd_socket()
    if passed is not None:
        return passed, f"the socket systemd passed ({passed.getsockname()})", None
    kind, where, port = parse_listen(options.listen)
    if kind == "unix":
        return bind_unix(where, options.socket_mode), f"unix:{where}", where
    try:
        infos = socket.getaddrinfo(where, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, _, _, _, address = infos[0]
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(128)
    except OSError as err:
        raise ServeError(f"cannot listen on {options.listen}: {err.strerror or err}") from err
    host, bound_port = listener.getsockname()[:2]
    shown = f"[{host}]:{bound_port}" if ":" in host else f"{host}:{bound_port}"
    return listener, shown, None


def bind_unix(path: str, mode: int) -> socket.socket:
    """A Unix socket at `path` with `mode`; a stale socket there is replaced, any other file is not."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise ServeError(f"{path}: exists and is not a socket; not replaced")
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # no moment with wider permissions than asked
    try:
        listener.bind(path)
        os.chmod(path, mode)
        listener.listen(128)
    except OSError as err:
        listener.close()
        raise ServeError(f"cannot listen on unix:{path}: {err.strerror or err}") from err
    finally:
        os.umask(old)
    return listener


def notify(state: str) -> None:
    """Tell systemd (Type=notify) how the service is: READY=1, STOPPING=1, RELOADING=1."""
    where = os.environ.get("NOTIFY_SOCKET")
    if not where:
        return
    address = "\0" + where[1:] if where.startswith("@") else where
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.sendto(state.encode("ascii"), address)


# ---------------------------------------------------------------- one request


class Oversize(NamedTuple):
    """A message over --max-size: its bytes in a temporary file, passed back unscanned."""

    file: object
    size: int


class Sink:
    """A message's bytes as they come: in memory up to `max_size`, then in a temporary file."""

    def __init__(self, max_size: int) -> None:
        self.max_size, self.size = max_size, 0
        self.parts: list[bytes] = []
        self.file: tempfile._TemporaryFileWrapper | None = None  # type: ignore[name-defined]

    def add(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > HARD_MAX:
            raise protocol.ProtocolError(f"message over {HARD_MAX:,} bytes", protocol.EX_DATAERR)
        if self.file is None and self.size <= self.max_size:
            self.parts.append(data)
            return
        if self.file is None:
            self.file = tempfile.TemporaryFile()  # noqa: SIM115 - kept open while the reply is sent
            self.file.writelines(self.parts)
            self.parts = []
        self.file.write(data)

    def result(self) -> bytes | Oversize:
        if self.file is None:
            return b"".join(self.parts)
        self.file.seek(0)
        return Oversize(self.file, self.size)


class Connection:
    """One client's socket, read and written within one deadline."""

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self.sock = sock
        self.deadline = time.monotonic() + timeout

    def left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left

    def recv(self) -> bytes:
        self.sock.settimeout(self.left())
        return self.sock.recv(BLOCK)

    def send(self, data: bytes) -> None:
        self.sock.settimeout(self.left())
        self.sock.sendall(data)

    def read_request(self, max_size: int) -> tuple[protocol.Request, bytes | Oversize]:
        """The request's head parsed and its message read (and inflated), within the deadline."""
        buffer = b""
        while (end := protocol.head_end(buffer)) < 0:
            if len(buffer) > protocol.MAX_HEAD:
                raise protocol.ProtocolError("request head too long")
            chunk = self.recv()
            if not chunk:  # a PING of protocol 1.4 or older ends at its request line
                if not buffer:
                    raise protocol.ProtocolError("connection closed before any request")
                return protocol.parse_head(buffer), b""
            buffer += chunk
        request = protocol.parse_head(buffer[:end])
        if request.command in protocol.BODILESS:
            return request, b""
        return request, self.read_body(request, buffer[end:], max_size)

    def read_body(self, request: protocol.Request, first: bytes, max_size: int) -> bytes | Oversize:
        length = request.length
        if length is not None and length > HARD_MAX:
            raise protocol.ProtocolError(f"Content-length {length:,} over {HARD_MAX:,} bytes", protocol.EX_DATAERR)
        sink = Sink(max_size)
        inflate = zlib.decompressobj() if request.compressed else None
        got, chunk = 0, first
        while True:
            if length is not None:
                chunk = chunk[: length - got]
            got += len(chunk)
            if inflate is None:
                sink.add(chunk)
            else:
                inflated(inflate, chunk, sink)
            if length is not None and got >= length:
                break
            chunk = self.recv()
            if not chunk:
                if length is not None:
                    raise protocol.ProtocolError(f"Content-length mismatch: expected {length} bytes, got {got}")
                break
        if inflate is not None:
            sink.add(inflate.flush())
            if not inflate.eof:
                raise protocol.ProtocolError("the zlib stream ends early", protocol.EX_DATAERR)
        return sink.result()

    def close(self) -> None:
        """Shut down our side, read and drop what the client still sends (briefly), close."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)
            self.sock.settimeout(DRAIN_SECONDS)
            end, dropped = time.monotonic() + DRAIN_SECONDS, 0
            while time.monotonic() < end and dropped < HARD_MAX and (chunk := self.sock.recv(BLOCK)):
                dropped += len(chunk)
        self.sock.close()


def inflated(inflate: zlib._Decompress, data: bytes, sink: Sink) -> None:  # type: ignore[name-defined]
    """Inflate `data` into `sink` a block at a time (a small bomb cannot inflate at once)."""
    try:
        while data:
            sink.add(inflate.decompress(data, BLOCK))
            data = inflate.unconsumed_tail
    except zlib.error as err:
        raise protocol.ProtocolError(f"not a zlib stream ({err})", protocol.EX_DATAERR) from err


def unscanned(request: protocol.Request, body: Oversize, log: Log) -> list[bytes]:
    """The reply to a message over --max-size: passed back as it came, `Spam: False ; 0.0 / 0.0`
    (what spamc -c prints for a message it did not have checked)."""
    log(f"{request.command}: a message of {body.size:,} bytes is over --max-size: passed back unscanned")
    spam = protocol.spam_line(False, 0.0, 0.0)
    f = body.file
    if request.command == "HEADERS":
        first = f.read(BLOCK * 16)  # type: ignore[attr-defined]
        end = protocol.head_end(first)
        if end < 0:
            raise protocol.ProtocolError("message over --max-size with no end to its header", protocol.EX_DATAERR)
        return [protocol.result_reply(request.command, spam, first[:end])]
    if request.command != "PROCESS":
        return [protocol.result_reply(request.command, spam)]
    return [protocol.result_head(request.command, spam, body.size), *iter(lambda: f.read(BLOCK), b"")]  # type: ignore[attr-defined]


# ---------------------------------------------------------------- a worker


# Scored by each worker before it says it is ready: a few header fields, a link, plain and HTML parts.
WARM_UP = (
    b"Received: from mail.example.org (mail.example.org [192.0.2.1]) by mx.example.net\n"
    b"From: Warm Up <warm@example.org>\nSubject: warm up\nMIME-Version: 1.0\n"
    b'Content-Type: multipart/alternative; boundary="b"\n\n--b\nContent-Type: text/plain\n\n'
    b"warm up http://www.example.org/\n--b\nContent-Type: text/html\n\n"
    b'<p>warm <a href="http://www.example.org/">up</a></p>\n--b--\n'
)


class Worker:
    """One process's threads answering connections from the shared socket."""

    def __init__(self, listener: socket.socket, options: Options, settings: Settings, resident: Resident, log: Log, threads: int, ready: int | None = None) -> None:
        self.listener, self.options, self.settings, self.resident, self.log = listener, options, settings, resident, log
        self.ready = ready  # written to once warm (the first workers': the master says READY after them)
        self.threads = threads
        self.stopping = threading.Event()
        self.hangup = False
        self.free = threading.BoundedSemaphore(threads)
        self.queue: queue.SimpleQueue = queue.SimpleQueue()

    def run(self) -> int:
        def stop(signum: int, frame: object) -> None:
            self.stopping.set()

        def hangup(signum: int, frame: object) -> None:
            self.hangup = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGHUP, hangup)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        self.warm()
        if self.ready is not None:
            with contextlib.suppress(OSError):
                os.write(self.ready, b"1")
            os.close(self.ready)
        pool = [threading.Thread(target=self.answer_loop, daemon=True) for _ in range(self.threads)]
        acceptor = threading.Thread(target=self.accept_loop, daemon=True)
        for thread in [*pool, acceptor]:
            thread.start()
        while not self.stopping.wait(0.5):
            if self.hangup:
                self.hangup = False
                self.log.reopen()
                self.resident.forget()
        acceptor.join()
        for _ in pool:
            self.queue.put(None)
        for thread in pool:  # the requests in hand end within their deadline
            thread.join(self.options.timeout + 2 * DRAIN_SECONDS)
        return 0

    def warm(self) -> None:
        """Open the model and score a message with it before the first request: the model read, the
        tokeniser's patterns compiled and the modules a message needs imported (a failure is each request's)."""
        with contextlib.suppress(Exception):
            check(self.settings, self.resident)
            if self.settings.model is not None:
                answer(protocol.Request("CHECK", (1, 5)), WARM_UP, self.settings, self.resident)

    def accept_loop(self) -> None:
        self.listener.settimeout(0.5)
        while not self.stopping.is_set():
            if not self.free.acquire(timeout=0.5):
                continue
            try:
                sock, peer = self.listener.accept()
            except TimeoutError:
                self.free.release()
                continue
            except OSError as err:  # out of descriptors, say: wait and go on
                self.free.release()
                self.log(f"accept failed: {err.strerror or err}")
                time.sleep(0.1)
                continue
            self.queue.put((sock, peer))

    def answer_loop(self) -> None:
        while (item := self.queue.get()) is not None:
            sock, peer = item
            try:
                self.serve(sock, peer)
            except BaseException as err:  # noqa: BLE001 - no request may end a thread
                self.log(f"internal error ({type(err).__name__}: {protocol.printable(str(err))})")
            finally:
                self.free.release()

    def allowed(self, peer: object) -> bool:
        if not isinstance(peer, tuple):
            return True  # a Unix socket: its mode decides who connects
        try:
            address = ipaddress.ip_address(peer[0].split("%")[0])
        except ValueError:
            return False
        if address.version == 6 and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.options.allow)

    def serve(self, sock: socket.socket, peer: object) -> None:
        if not self.allowed(peer):
            self.log(f"connection from {peer[0]} refused: not in --allow")  # type: ignore[index]
            sock.close()
            return
        connection = Connection(sock, self.options.timeout)
        try:
            request, body = connection.read_request(self.options.max_size)
            if request.command == "PING":
                replies = [protocol.pong()]
            elif request.command == "SKIP":
                replies = []
            elif isinstance(body, Oversize) and request.command == "TELL":
                with body.file:  # type: ignore[attr-defined]
                    # Learnt as train learns a message: on its first bytes, to the tokeniser's cap.
                    replies = [answer(request, body.file.read(self.options.max_size), self.settings, self.resident)]  # type: ignore[attr-defined]
            elif isinstance(body, Oversize):
                with body.file:  # type: ignore[attr-defined]
                    replies = unscanned(request, body, self.log)
            else:
                replies = [answer(request, body, self.settings, self.resident)]
            for reply in replies:
                connection.send(reply)
        except protocol.ProtocolError as err:
            self.log(f"request refused: {err}")
            self.reply_error(connection, err.code, str(err))
        except TimeoutError:
            self.log(f"request not read within --timeout {self.options.timeout:g} s: connection closed")
            self.reply_error(connection, protocol.EX_TIMEOUT, "Timeout: request not read in time")
        except OSError as err:
            self.log(f"connection lost: {err.strerror or err}")
        except Exception as err:  # noqa: BLE001 - a bad model, a bug: this request fails, the server goes on
            text = protocol.printable(" ".join(str(err).split()), 300)
            known = type(err).__name__ in ("ModelError", "NotPlain", "CutoffError")
            self.log(f"request failed: {text if known else f'internal error ({type(err).__name__}: {text})'}")
            self.reply_error(connection, protocol.EX_UNAVAILABLE if known else protocol.EX_SOFTWARE, "Service Unavailable" if known else "internal error")
        finally:
            connection.close()

    @staticmethod
    def reply_error(connection: Connection, code: int, text: str) -> None:
        with contextlib.suppress(OSError, TimeoutError):
            connection.deadline = max(connection.deadline, time.monotonic() + DRAIN_SECONDS)
            connection.send(protocol.error_reply(code, text))


# ---------------------------------------------------------------- the master


def bounded_malloc() -> None:
    """glibc's malloc as a long-lived worker needs it (elsewhere: nothing).  One arena: it gives
    each thread that allocates its own (up to 8 per core), each keeping what the messages it read
    left it; the threads run Python under one lock anyway.  A fixed mmap threshold: freeing a
    block above it (a model read whole) raises glibc's own, and the next model's blocks then stay
    in the heap after a switch.  Figures: docs/measurements.md, "spamnb serve"."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(M_ARENA_MAX, 1)
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def run(options: Options, settings: Settings) -> int:
    """Serve until SIGTERM or SIGINT; exit status 0 (ServeError: cannot start)."""
    bounded_malloc()
    log = Log(options.log)
    resident = Resident()
    check(settings, resident)  # a missing or damaged model stops the start, not each request
    # Each worker opens its own: the master's would be copied into each page by page as it is
    # used (reference counts, the collector), and kept after the first switch.
    resident.forget()
    listener, shown, unix_path = bind(options)
    workers = max(1, options.workers)
    threads = max(1, -(-options.connections // workers))
    handled = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD}
    signal.pthread_sigmask(signal.SIG_BLOCK, handled)
    children: dict[int, int] = {}
    ready_r, ready_w = os.pipe()

    def spawn(slot: int, ready: int | None = None) -> None:
        pid = os.fork()
        if pid == 0:
            status = 70
            try:
                if ready is not None:
                    os.close(ready_r)
                status = Worker(listener, options, settings, resident, log, threads, ready).run()
            finally:
                os._exit(status)
        children[pid] = slot

    try:
        for slot in range(workers):
            spawn(slot, ready_w)
        os.close(ready_w)
        # Ready (systemd's READY=1, the log line) once every worker has read the model and scored
        # a message: the first requests wait for none of that.  A worker that dies first closes its end.
        warmed = 0
        while warmed < workers and (got := os.read(ready_r, workers)):
            warmed += len(got)
        os.close(ready_r)
        log(f"listening on {shown}: {workers} worker(s) of {threads} connection(s), model {settings.model or '(per user)'}; {warmed} worker(s) warmed")
        notify("READY=1")
        stopping = False
        while children:
            info = signal.sigtimedwait(handled, 1.0)
            if info is None:
                continue
            if info.si_signo == signal.SIGHUP:
                log.reopen()
                log("SIGHUP: log reopened, models reread")
                for pid in children:
                    os.kill(pid, signal.SIGHUP)
            elif info.si_signo in (signal.SIGTERM, signal.SIGINT) and not stopping:
                stopping = True
                notify("STOPPING=1")
                log(f"{signal.Signals(info.si_signo).name}: finishing the requests in hand")
                for pid in children:
                    os.kill(pid, signal.SIGTERM)
            while children and (done := os.waitpid(-1, os.WNOHANG))[0]:
                slot = children.pop(done[0])
                if not stopping:
                    log(f"worker {done[0]} ended ({os.waitstatus_to_exitcode(done[1])}); starting another")
                    time.sleep(0.2)  # a worker that dies at once must not make the master spin
                    spawn(slot)
    finally:
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        listener.close()
        if unix_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(unix_path)
    log("stopped")
    return 0


def main(options: Options, settings: Settings) -> int:
    try:
        return run(options, settings)
    except ServeError as err:
        print(f"spamnb: error: {err}", file=sys.stderr)
        return 3
