#!/usr/bin/env python3
"""`make bench`, the server's rows (issue 28): `spamnb serve` beside bogofilter, in one run.

Figures (goals in brackets):
  one message through the real spamc, median wall        [<= 1.5x bogofilter -p on the same message]
  messages/s from 16 concurrent connections (CHECK)      [>= 1,000 on 2 cores, this load client included]
  p50 / p99 latency of those requests                    [p99 <= 25 ms]
  requests over 250 ms, and the slowest                  [few: the switch's reads hold only their own requests]
  PROCESS against classify --pipe, byte for byte         [all equal, X-Spam-* fields apart]
  failed requests, a model switch (`train`) mid-soak     [0]
  server CPU per request over the soak (all its processes) [counted: what the machine's load does not change]
  RSS of the server's processes, first vs last second    [flat]

The load client is this process: 16 threads, each sending one spamd request per connection
(as spamc does) with messages of the SpamAssassin corpus in turn, for a bounded time
($SPAMNB_BENCH_SERVE_SECONDS, default 60) and at most 1,000,000 requests; loopback only.
The machine is shared: the load average is printed before and after.  Nothing here asserts.
"""
from __future__ import annotations

import io
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from bench import BOGOFILTER, INDEX, PYTHON, SPAMNB, process_tree_rss, read_index, row, run, say  # noqa: E402

SPAMC = shutil.which("spamc")
SECONDS = float(os.environ.get("SPAMNB_BENCH_SERVE_SECONDS", "60"))
CONNECTIONS = 16
MAX_REQUESTS = 1_000_000
ONE_RUNS = 31
# A request this slow waited for more than its turn: a model read (0.2-0.3 s of CPU) or the machine.
SLOW = 0.25


def start_server(model: str, workers: int) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([SPAMNB, "serve", "-m", model, "--listen", "127.0.0.1:0", "--workers", str(workers)], stderr=subprocess.PIPE)
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    if "listening on 127.0.0.1:" not in line:
        raise RuntimeError(f"spamnb serve did not start: {line}{proc.stderr.read().decode(errors='replace')}")
    return proc, int(line.split("listening on 127.0.0.1:")[1].split(":")[0])


def request(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"CHECK SPAMC/1.5\r\nContent-length: %d\r\n\r\n" % len(data) + data)
        sock.shutdown(socket.SHUT_WR)
        parts = []
        while chunk := sock.recv(4096):
            parts.append(chunk)
    return b"".join(parts)


def process_tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and its living descendants so far (Linux /proc)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as children:
                    todo.extend(int(c) for c in children.read().split())
        except (OSError, ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def soak(port: int, messages: list[bytes], seconds: float, during: object = None) -> dict:
    """CONNECTIONS threads sending CHECK requests for `seconds`; `during()` runs halfway."""
    latencies: list[list[float]] = [[] for _ in range(CONNECTIONS)]
    failures: list[str] = []
    stop = time.monotonic() + seconds
    count = [0]

    def client(k: int) -> None:
        i = k
        while time.monotonic() < stop and count[0] < MAX_REQUESTS:
            data = messages[i % len(messages)]
            i += CONNECTIONS
            start = time.perf_counter()
            try:
                reply = request(port, data)
            except OSError as err:
                failures.append(f"{type(err).__name__}: {err}")
                continue
            latencies[k].append(time.perf_counter() - start)
            count[0] += 1
            if not reply.startswith(b"SPAMD/1.5 0 EX_OK\r\nSpam: "):
                failures.append(reply[:80].decode(errors="replace"))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CONNECTIONS)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    if during is not None:
        time.sleep(seconds / 2)
        during()  # type: ignore[operator]
    for t in threads:
        t.join()
    took = time.perf_counter() - began
    flat = sorted(x for lat in latencies for x in lat)
    return {
        "n": len(flat), "seconds": took, "failures": failures, "p50": flat[len(flat) // 2] if flat else 0, "p99": flat[int(len(flat) * 0.99)] if flat else 0,
        "max": flat[-1] if flat else 0, "over": sum(1 for x in flat if x > SLOW),
    }


# A field of these names, its folded lines too: PROCESS replaces any the message came with (an
# upstream SpamAssassin's), as SpamAssassin does, where the pipe keeps them; both sides drop them.
SA_FIELD = re.compile(rb"^X-Spam-(?:Checker-Version|Flag|Level|Status):.*\r?\n(?:[ \t].*\r?\n)*", re.M)


def agreement(port: int, model: str, messages: list[bytes]) -> None:
    """PROCESS's message, SpamAssassin's fields apart, against `classify --pipe`'s, byte for byte."""
    from spamnb.pipe import filter as pipe_filter

    same = 0
    for data in messages:
        reply = process(port, data)
        out, err = io.BytesIO(), io.StringIO()
        pipe_filter.run(model, io.BytesIO(data), out, err)  # type: ignore[arg-type]
        same += SA_FIELD.sub(b"", reply) == SA_FIELD.sub(b"", out.getvalue())
    row("PROCESS = classify --pipe (X-Spam-* apart)", f"{same} of {len(messages)}", "", "", "all")


def process(port: int, data: bytes) -> bytes:
    """The message PROCESS sends back."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"PROCESS SPAMC/1.5\r\nContent-length: %d\r\n\r\n" % len(data) + data)
        sock.shutdown(socket.SHUT_WR)
        reply = b"".join(iter(lambda: sock.recv(1 << 16), b""))
    return reply.split(b"\r\n\r\n", 1)[1]


def main() -> int:
    if not os.path.isfile(INDEX):
        say(f"bench/serve.py: no corpus at {INDEX}: skipped")
        return 0
    if SPAMC is None:
        say("bench/serve.py: no spamc (apt-get install spamc): skipped")
        return 0
    mail = read_index(INDEX)
    work = tempfile.mkdtemp(prefix="spamnb-serve-bench-")
    try:
        return bench(work, mail)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench(work: str, mail: list[tuple[str, str]]) -> int:
    model = os.path.join(work, "model.npz")
    run([SPAMNB, "-q", "train", "-m", model, "--index", INDEX])
    bogo = os.path.join(work, "bogo")
    if BOGOFILTER:
        os.makedirs(bogo)
        run([BOGOFILTER, "-d", bogo, "-s", "-b"], "\n".join(p for label, p in mail if label == "spam") + "\n")
        run([BOGOFILTER, "-d", bogo, "-n", "-b"], "\n".join(p for label, p in mail if label == "ham") + "\n")
    files = [p for _, p in mail]
    one = open(files[len(files) // 2], "rb").read()  # noqa: SIM115 - small file
    messages = [open(p, "rb").read() for p in files[::3]]  # noqa: SIM115 - 2,000 small files
    say()
    say(f"spamnb serve (issue 28): load average before {os.getloadavg()[0]:.1f}; {len(os.sched_getaffinity(0))} cores; {CONNECTIONS} connections for {SECONDS:g} s")
    row("figure", "spamnb", "reference", "ratio", "goal")
    server, port = start_server(model, 2)
    try:
        spamc_runs, bogo_runs = [], []
        for _ in range(ONE_RUNS):  # interleaved, so that a burst of load hits both alike
            spamc_runs.append(run([SPAMC, "-d", "127.0.0.1", "-p", str(port), "-c"], one, ok=(0, 1))[0])
            if BOGOFILTER:
                bogo_runs.append(run([BOGOFILTER, "-d", bogo, "-p", "-e"], one, ok=(0, 1, 2))[0])
        med = statistics.median
        if BOGOFILTER:
            row("one message: spamc -c vs bogofilter -p", f"{med(spamc_runs) * 1000:.1f} ms", f"{med(bogo_runs) * 1000:.1f} ms", f"{med(spamc_runs) / med(bogo_runs):.2f}x", "<= 1.5x (medians)")
        else:
            row("one message: spamc -c (no bogofilter)", f"{med(spamc_runs) * 1000:.1f} ms", "", "", "<= 1.5x bogofilter -p")
        agreement(port, model, messages[::7])
        rss: list[tuple[float, int]] = []
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.wait(1.0):
                rss.append((time.monotonic(), process_tree_rss(server.pid)[0]))

        switch_file = os.path.join(work, "switch.eml")
        with open(switch_file, "wb") as f:
            f.write(b"Subject: a model switch\n\n" + one)

        def switch() -> None:
            # A bulk train rewrites the model and renames it over the old one.
            run([SPAMNB, "-q", "train", "-m", model, "--jobs", "1", "--spam", switch_file])

        sampler = threading.Thread(target=sample)
        sampler.start()
        cpu_before = process_tree_cpu(server.pid)
        result = soak(port, messages, SECONDS, switch)
        cpu = process_tree_cpu(server.pid) - cpu_before
        sampling.set()
        sampler.join()
        rate = result["n"] / result["seconds"]
        row(f"CHECK msgs/s, {CONNECTIONS} connections, 2 workers", f"{rate:,.0f}/s", "1,000/s", f"{rate / 1000:.2f}x", ">= 1,000/s, this client included")
        row("latency p50 / p99", f"{result['p50'] * 1000:.1f} ms", f"{result['p99'] * 1000:.1f} ms", "", "p99 <= 25 ms")
        row(f"requests over {SLOW * 1000:.0f} ms; the slowest", f"{result['over']:,}", f"{result['max'] * 1000:,.0f} ms", "", "few: a switch's read holds its own request")
        row("server CPU per request (soak, all processes)", f"{cpu / max(result['n'], 1) * 1000:.2f} ms", "", "", "counted")
        row("failed requests (model switched midway)", f"{len(result['failures'])} of {result['n']:,}", "", "", "0" + (f"  first: {result['failures'][0]}" if result["failures"] else ""))
        if len(rss) >= 4:
            first, last = rss[1][1], rss[-1][1]
            row("server RSS, 2nd vs last second of soak", f"{last / 1024:.0f} MiB", f"{first / 1024:.0f} MiB", f"{last / first:.2f}x", "flat (~1.0x; the switch reloads the model)")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    say(f"load average after: {os.getloadavg()[0]:.1f}; python {PYTHON}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
