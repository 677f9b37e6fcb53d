#!/usr/bin/env python3
"""`make bench-scale`: train on a large generated corpus with and without `--dask local`.

The corpus is derived deterministically from the SpamAssassin corpus
(../shared/corpora/spamassassin, or $SPAMNB_BENCH_CORPUS, a `LABEL PATH` index): message
i of a class takes the header of one message of that class and the body (its first
BODY_CAP bytes) of another, so the pairs, hence the messages, are distinct; a pair whose
digest was already made is skipped.  Written to a temporary folder (never committed),
removed at the end.

Runs, one after the other on the same files: `train --jobs 2`, `train --dask local
--jobs 1` and `--jobs 2`, each sampled every 0.2 s for the resident memory of each
process of its tree (the client, the pool's or the cluster's workers).  Then the plain
per-shard costs of the map and reduce steps, in this process, for the paper estimate.
Nothing asserts but that the three models are the same bytes: benchmarks print figures.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from spamnb.mail import headers, sources  # noqa: E402
from spamnb.models import store  # noqa: E402
from spamnb.models.model import Scoring  # noqa: E402
from spamnb.run import classifier  # noqa: E402
from spamnb.scale import cluster  # noqa: E402
from spamnb.text.tokens import TokenSettings  # noqa: E402

SPAMNB = os.path.join(os.path.dirname(sys.executable), "spamnb")
INDEX = os.environ.get("SPAMNB_BENCH_CORPUS", os.path.join(REPO, "..", "shared", "corpora", "spamassassin", "index"))
BODY_CAP = 2048
PER_FOLDER = 1000


def split(data: bytes) -> tuple[bytes, bytes]:
    at = data.find(b"\n\n")
    return (data, b"") if at < 0 else (data[: at + 2], data[at + 2 :])


def generate(root: str, total: int) -> tuple[str, int]:
    """Write `total` distinct messages under root (spam and ham in the corpus's shares) and an index; their bytes."""
    by_class: dict[str, list[tuple[bytes, bytes]]] = {"spam": [], "ham": []}
    for item in sources.read_index(INDEX):
        if isinstance(item, sources.Message):
            by_class[item.label].append(split(item.data))  # type: ignore[index]
    n_all = sum(len(v) for v in by_class.values())
    lines, size, seen = [], 0, set()
    for label, parts in by_class.items():
        n = len(parts)
        want = round(total * n / n_all) if label == "spam" else total - len(lines)
        i = made = 0
        while made < want:
            head = parts[i % n][0]
            body = parts[(i % n + 1 + i // n) % n][1][:BODY_CAP]
            i += 1
            data = head + body
            key = headers.digest(data)
            if key in seen:
                continue
            seen.add(key)
            rel = os.path.join(label, f"{made // PER_FOLDER:04d}", f"{made:07d}")
            path = os.path.join(root, rel)
            if made % PER_FOLDER == 0:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as out:
                out.write(data)
            size += len(data)
            lines.append(f"{label} {rel}\n")
            made += 1
    index = os.path.join(root, "index")
    with open(index, "w") as out:
        out.writelines(lines)
    return index, size


def rss_of_tree(root_pid: int) -> dict[int, tuple[str, int]]:
    """{pid: (command, RSS bytes)} of root_pid and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(name))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = {}, [root_pid]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/status") as f:
                rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            out[pid] = (cmd, rss)
        except (OSError, StopIteration):
            pass
    return out


def run(args: list[str]) -> tuple[float, dict[int, tuple[str, int]], str]:
    """Wall time, peak RSS per process of its tree (sampled every 0.2 s), stderr."""
    peaks: dict[int, tuple[str, int]] = {}
    start = time.perf_counter()
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for pid, (cmd, rss) in rss_of_tree(proc.pid).items():
                if rss > peaks.get(pid, ("", 0))[1]:
                    peaks[pid] = (cmd, rss)
            done.wait(0.2)

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"{' '.join(args)}: exit {proc.returncode}\n{err}")
    return wall, peaks, err


def role(pid: int, cmd: str, client: int) -> str:
    if pid == client:
        return "client"
    if "resource_tracker" in cmd or "semaphore_tracker" in cmd:
        return "tracker"
    return "worker"


def mb(n: float) -> str:
    return f"{n / 1e6:,.0f} MB"


def timed(fn, *args):  # type: ignore[no-untyped-def]
    start = time.process_time()
    out = fn(*args)
    return time.process_time() - start, out


def shard_costs(index: str, model_path: str) -> None:
    """The map and reduce steps' CPU per shard, in this process (no Dask): what the paper estimate uses."""
    model = store.empty_model(TokenSettings(), Scoring())
    parts = cluster.shards(sources.locate_labelled([], [], index))[:4]
    work = cluster.Work(classifier.Tokenise.of(model.tokens, model.scoring), classifier.chunk_size(2), model.tokens.max_bytes)
    partials, keys_cpu, count_cpu = [], [], []
    for part in parts:
        cpu, keyed = timed(cluster.shard_keys, part, model.tokens.max_bytes)
        keys_cpu.append(cpu)
        plan = cluster.Plan(list(range(len(keyed))), [k for _, k, _, _ in keyed], classifier.Changes(0, list(range(len(keyed))), [c for *_, c in keyed], [1] * len(keyed)))
        cpu, partial = timed(cluster.shard_counts, part, plan, 0, [], work)
        count_cpu.append(cpu)
        partials.append(partial)
    merge_cpu, pair = timed(cluster.merge_partials, partials[0], partials[1])
    final = store.load(model_path, growable=True)
    vocab = final.growable()
    final.counts.grow(len(vocab))
    whole = cluster.Partial(vocab.tokens, final.counts, [], np.zeros_like(final.moments))
    root_cpu, _ = timed(cluster.merge_partials, whole, partials[2])
    save_start = time.perf_counter()
    store.save(final, model_path + ".again")
    save_wall = time.perf_counter() - save_start
    messages = sum(len(p) for p in parts)
    print(f"per shard of {cluster.SHARD} files (CPU seconds, mean of {len(parts)}): read + digest {sum(keys_cpu) / len(parts):.2f}, "
          f"read + tokenise + count {sum(count_cpu) / len(parts):.2f} ({messages / sum(count_cpu):,.0f} msgs/s); "
          f"merge of two shards' partials {merge_cpu:.2f} ({len(partials[0].tokens):,} + {len(partials[1].tokens):,} tokens -> {len(pair.tokens):,}); "
          f"merge of a shard into the whole vocabulary ({len(vocab):,} tokens) {root_cpu:.2f}; save {save_wall:.2f} s wall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--keep", action="store_true", help="keep the generated folder")
    args = parser.parse_args()
    if not os.path.exists(INDEX):
        print(f"no {INDEX}: bench-scale skipped")
        return
    root = tempfile.mkdtemp(prefix="spamnb-scale-")
    try:
        start = time.perf_counter()
        index, size = generate(root, args.messages)
        print(f"generated {args.messages:,} distinct messages, {mb(size)}, in {time.perf_counter() - start:.0f} s: {root}")
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        runs = [("train --jobs 2", ["--jobs", "2"]), ("--dask local, 1 worker", ["--jobs", "1", "--dask", "local"]), ("--dask local, 2 workers", ["--jobs", "2", "--dask", "local"])]
        models = []
        for name, extra in runs:
            model = os.path.join(root, f"model-{len(models)}.npz")
            wall, peaks, err = run([SPAMNB, "-q", "train", "-m", model, "--index", index, *extra])
            models.append(model)
            client = min(peaks)
            workers = sorted((rss for pid, (cmd, rss) in peaks.items() if role(pid, cmd, client) == "worker"), reverse=True)
            print(f"{name}: {wall:.0f} s wall, {args.messages / wall:,.0f} msgs/s; peak RSS client {mb(peaks[client][1])}, "
                  f"workers {', '.join(mb(w) for w in workers) or 'none'}; load average {os.getloadavg()[0]:.2f}")
            if err.strip():
                print("   ", err.strip().splitlines()[-1])
        same = all(filecmp.cmp(m, models[0], shallow=False) for m in models[1:])
        info = store.load(models[0])
        print(f"model: {os.path.getsize(models[0]):,} bytes, {len(info.vocab):,} tokens; the three model files identical: {same}")
        shard_costs(index, models[0])
        if not same:
            raise SystemExit("the models differ")
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
