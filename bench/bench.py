#!/usr/bin/env python3
"""`make bench`: spamnb's speed, memory and model size beside bogofilter's, in one run.

The machine is shared and noisy, so every figure is measured next to its reference
in the same run and printed with the ratio; absolute numbers vary from run to run.
Reads the SpamAssassin corpus from ../shared/corpora/spamassassin (or
$SPAMNB_BENCH_CORPUS, a `LABEL PATH` index file) at run time and skips what it
cannot find.  Nothing here asserts: benchmarks print figures.

Figures (the goals of issue 4 in brackets):
  batch classify msgs/s, default --jobs and --jobs 1    [>= 1.5x, >= 1.0x bogofilter (issue 30)]
  train msgs/s, best of 3 alternating with bogofilter   [>= 1.0x bogofilter (issue 30)]
  tokeniser CPU per message, compiled and source     [<= 0.12 ms (issue 30)], and what each compiled module buys
  one piped message, compiled vs source modules      [<= 1.0x (issue 30)]
  one piped message, wall                               [<= 0.4x python -c "import numpy" (issue 14)]
  one piped message, 1,000,000 vs 10,000 tokens         [<= 1.1x (issue 14)]
  the pipe's log-odds against batch classify's          [every message equal to 1e-9, same verdict]
  peak memory, 60,000- vs 6,000-message mbox            [<= 1.5x]
  model size on disk                                    [<= bogofilter's word list]
  model load time                                       [<= 0.05 s]
  learning one message into a 1,000,000-token model     [<= 0.6x python -c "import numpy" (issue 14)]
  eval --online (TREC protocol), msgs/s and accuracy    [>= 500 msg/s; beside bogofilter run the same way]
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BIN = os.path.dirname(sys.executable)
SPAMNB = os.path.join(BIN, "spamnb")
PYTHON = sys.executable
DEFAULT_INDEX = os.path.join(REPO, "..", "shared", "corpora", "spamassassin", "index")
INDEX = os.environ.get("SPAMNB_BENCH_CORPUS", DEFAULT_INDEX)
BOGOFILTER = shutil.which("bogofilter")
TRAIN_RUNS = 3
PIPE_RUNS = int(os.environ.get("SPAMNB_BENCH_PIPE_RUNS", "15"))


def say(text: str = "") -> None:
    print(text, flush=True)


def row(name: str, ours: str, peer: str, ratio: str, goal: str) -> None:
    say(f"{name:<44} {ours:>14} {peer:>14} {ratio:>8}   {goal}")


def run(cmd: list[str], stdin: bytes | str | None = None, ok: tuple[int, ...] = (0,), env: dict | None = None) -> tuple[float, bytes]:
    """Wall seconds and stdout of a command."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    start = time.perf_counter()
    done = subprocess.run(cmd, input=data, capture_output=True, env=env)
    took = time.perf_counter() - start
    if done.returncode not in ok:
        raise RuntimeError(f"{' '.join(cmd[:4])} exited {done.returncode}: {done.stderr.decode(errors='replace')[-400:]}")
    return took, done.stdout


def best(cmd: list[str], times: int, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)) -> float:
    return min(run(cmd, stdin, ok)[0] for _ in range(times))


def median_wall(cmd: list[str], times: int, stdin: bytes | None = None, ok: tuple[int, ...] = (0, 1, 2)) -> float:
    # Interleaving is done by the caller; the median resists the neighbours' bursts.
    return statistics.median(run(cmd, stdin, ok)[0] for _ in range(times))


def read_index(path: str) -> list[tuple[str, str]]:
    root = os.path.dirname(os.path.abspath(path))
    out = []
    with open(path) as lines:
        for line in lines:
            fields = line.split()
            if len(fields) == 2 and os.path.isfile(os.path.join(root, fields[1])):
                out.append((fields[0].lower(), os.path.join(root, fields[1])))
    return out


def process_tree_rss(pid: int) -> tuple[int, int]:
    """(summed, largest) resident kB of a process and all its descendants (Linux /proc)."""
    total = largest = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1])
                        total += rss
                        largest = max(largest, rss)
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as children:
                    todo.extend(int(c) for c in children.read().split())
        except (OSError, ValueError):
            continue
    return total, largest


def peak_memory(cmd: list[str]) -> tuple[int, int, float]:
    """(peak summed RSS of the process tree, peak RSS of its largest process, seconds), sampled every 10 ms.

    (ru_maxrss would not do: a child forked from this big process inherits its high-water mark.)
    """
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = peak_one = 0
    while proc.poll() is None:
        total, largest = process_tree_rss(proc.pid)
        peak, peak_one = max(peak, total), max(peak_one, largest)
        time.sleep(0.01)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{cmd[:3]} exited {proc.returncode}")
    return peak, peak_one, time.perf_counter() - start


def fmt_rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}/s"


def synthetic_models(real_model: str, folder: str) -> tuple[str, str]:
    """A 10,000-token and a 1,000,000-token model: the real model's top tokens, plus filler."""
    sys.path.insert(0, REPO)
    import numpy as np

    from spamnb.bayes import nb
    from spamnb.bayes.vocabulary import Vocabulary
    from spamnb.models import store
    from spamnb.models.model import Model

    real = store.load(real_model, growable=True)
    tokens = real.vocab.tokens
    tf, df = real.counts.tf, real.counts.df
    order = np.argsort(-(tf.sum(axis=0)), kind="stable")
    paths = []
    rng = np.random.default_rng(1)
    for size in (10_000, 1_000_000):
        keep = order[: min(size, len(tokens))]
        filler = size - len(keep)
        names = [tokens[i] for i in keep] + [f"zzfiller{i:07d}" for i in range(filler)]
        extra_tf = rng.integers(0, 3, size=(2, filler))
        counts = nb.Counts(
            real.counts.docs.copy(),
            np.concatenate([tf[:, keep], extra_tf], axis=1),
            np.concatenate([df[:, keep], np.minimum(extra_tf, 1)], axis=1),
        )
        model = Model(tokens=real.tokens, scoring=real.scoring, vocab=Vocabulary(names), counts=counts, learnt=dict(real.learnt))
        path = os.path.join(folder, f"model-{size}.npz")
        store.save(model, path)
        paths.append(path)
    return paths[0], paths[1]


def write_mbox(path: str, files: list[str], count: int) -> None:
    with open(path, "wb") as out:
        written = 0
        while written < count:
            for name in files:
                with open(name, "rb") as f:
                    data = f.read()
                if not data.startswith(b"From "):
                    out.write(b"From bench@example.com Thu Jan  1 00:00:00 2004\n")
                out.write(data if data.endswith(b"\n") else data + b"\n")
                out.write(b"\n")
                written += 1
                if written >= count:
                    break


def main() -> int:
    if not os.path.isfile(INDEX):
        say(f"bench: no corpus at {INDEX} (set $SPAMNB_BENCH_CORPUS to a LABEL PATH index): skipped")
        return 0
    if not os.path.exists(SPAMNB):
        say(f"bench: {SPAMNB} not found; run `make install`")
        return 1
    mail = read_index(INDEX)
    n = len(mail)
    if n == 0:
        say(f"bench: {INDEX} names no readable message: skipped")
        return 0
    cores = len(os.sched_getaffinity(0))
    say(f"corpus: {INDEX} ({n} messages); {cores} cores; bogofilter: {BOGOFILTER or 'not installed (bash ../shared/bench/setup-peers.sh)'}")
    say(f"load average at start: {os.getloadavg()[0]:.1f} (the machine is shared: compare ratios, not absolute figures)")
    say()
    row("figure", "spamnb", "reference", "ratio", "goal")
    row("-" * 44, "-" * 14, "-" * 14, "-" * 8, "----")
    # Every row starts from compiled bytecode, as a user's second run would (pip compiles
    # numpy's when it installs it; an editable install's own modules are compiled here,
    # which $PYTHONDONTWRITEBYTECODE forbids a run to do): compiling them from source is
    # much of a command's start-up (docs/measurements.md, issue 30 fifth round).
    run([PYTHON, "-m", "compileall", "-q", os.path.join(REPO, "spamnb")])
    work = tempfile.mkdtemp(prefix="spamnb-bench-")
    try:
        return bench(work, mail, n)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench(work: str, mail: list[tuple[str, str]], n: int) -> int:
    model = os.path.join(work, "model.npz")
    bogo = os.path.join(work, "bogo")
    spam_list = "\n".join(p for label, p in mail if label == "spam") + "\n"
    ham_list = "\n".join(p for label, p in mail if label == "ham") + "\n"
    all_list = "\n".join(p for _, p in mail) + "\n"
    files = [p for _, p in mail]
    listing = os.path.join(work, "files")
    with open(listing, "w") as f:
        f.write(all_list)

    # Training: the whole corpus into a new model, alternating with bogofilter, the best of each:
    # a single run of either swings by a tenth with whatever else the machine does.
    trains, bf_trains = [], []
    for _ in range(TRAIN_RUNS):
        for path in (model, bogo):
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
        trains.append(run([SPAMNB, "-q", "train", "-m", model, "--index", INDEX])[0])
        if BOGOFILTER:
            os.makedirs(bogo)
            start = time.perf_counter()
            run([BOGOFILTER, "-d", bogo, "-s", "-b"], spam_list)
            run([BOGOFILTER, "-d", bogo, "-n", "-b"], ham_list)
            bf_trains.append(time.perf_counter() - start)
    ratio_row(f"train (whole corpus, best of {TRAIN_RUNS})", n, min(trains), min(bf_trains) if bf_trains else None, ">= 1.0x")

    # Batch classification of the same files (a folder of message files each).
    folders = sorted({os.path.dirname(p) for p in files})
    t_default = best([SPAMNB, "-q", "classify", "-m", model, *folders], 2)
    t_one = best([SPAMNB, "-q", "classify", "-m", model, "--jobs", "1", *folders], 2)
    bf_classify = best([BOGOFILTER, "-d", bogo, "-T", "-b"], 2, all_list.encode(), ok=(0, 1, 2)) if BOGOFILTER else None
    ratio_row(f"classify (--jobs default = {len(os.sched_getaffinity(0))})", n, t_default, bf_classify, ">= 1.5x")
    ratio_row("classify --jobs 1", n, t_one, bf_classify, ">= 1.0x")

    tokeniser_rows()

    # Model size and load time.
    size = os.path.getsize(model)
    bf_size = sum(os.path.getsize(os.path.join(bogo, f)) for f in os.listdir(bogo)) if BOGOFILTER else None
    row("model size on disk", f"{size / 1e6:.2f} MB", f"{bf_size / 1e6:.2f} MB" if bf_size else "n/a", f"{size / bf_size:.2f}x" if bf_size else "", "<= 1.0x (bogofilter's word list)")
    load_code = (
        "import sys, time; from spamnb.models import store\n"
        "def t(**kw):\n"
        "    best = 9e9\n"
        "    for _ in range(7):\n"
        "        s = time.perf_counter(); store.load(sys.argv[1], **kw); best = min(best, time.perf_counter() - s)\n"
        "    return best\n"
        "print(t(), t(scoring_only=True), t(growable=True))\n"
    )
    _, out = run([PYTHON, "-c", load_code, model])
    full, mapped, growable = (float(x) for x in out.split())
    row("model load, store.load (batch scoring)", f"{full * 1000:.1f} ms", "50 ms", f"{full / 0.05:.2f}x", "<= 0.05 s")
    row("model load, mapped (the pipe path)", f"{mapped * 1000:.1f} ms", "50 ms", f"{mapped / 0.05:.2f}x", "<= 0.05 s")
    row("model load, growable (training)", f"{growable * 1000:.1f} ms", "", "", "(for reference)")

    # One piped message: against the interpreter importing numpy, and 1M vs 10k tokens
    # (spamnb's own bytecode compiled at the start of `bench`).
    small, big = synthetic_models(model, work)
    one = open(files[len(files) // 2], "rb").read()  # noqa: SIM115 - small file
    numpy_runs, pipe_runs, small_runs, big_runs, source_runs = [], [], [], [], []
    source = {**os.environ, "SPAMNB_PURE": "tokens,message,headers"}  # the compiled modules' source, the scanner still C
    for _ in range(PIPE_RUNS):  # interleaved, so that a burst of load hits all alike
        numpy_runs.append(run([PYTHON, "-c", "import numpy"])[0])
        pipe_runs.append(run([SPAMNB, "classify", "--pipe", "-m", model], one, ok=(0, 1, 2))[0])
        source_runs.append(run([SPAMNB, "classify", "--pipe", "-m", model], one, ok=(0, 1, 2), env=source)[0])
        small_runs.append(run([SPAMNB, "classify", "--pipe", "-m", small], one, ok=(0, 1, 2))[0])
        big_runs.append(run([SPAMNB, "classify", "--pipe", "-m", big], one, ok=(0, 1, 2))[0])
    med = statistics.median
    row("one piped message vs python -c 'import numpy'", f"{med(pipe_runs) * 1000:.0f} ms", f"{med(numpy_runs) * 1000:.0f} ms", f"{med(pipe_runs) / med(numpy_runs):.2f}x", "<= 0.4x (medians)")
    row("one piped message, compiled vs source modules", f"{med(pipe_runs) * 1000:.0f} ms", f"{med(source_runs) * 1000:.0f} ms", f"{med(pipe_runs) / med(source_runs):.2f}x", "<= 1.0x (medians; the scanner C in both)")
    row("one piped message, 1M- vs 10k-token model", f"{med(big_runs) * 1000:.0f} ms", f"{med(small_runs) * 1000:.0f} ms", f"{med(big_runs) / med(small_runs):.2f}x", "<= 1.1x (medians)")
    if BOGOFILTER:
        bf_one = med(run([BOGOFILTER, "-d", bogo, "-p", "-e"], one, ok=(0, 1, 2))[0] for _ in range(PIPE_RUNS))
        row("one piped message vs bogofilter -p", f"{med(pipe_runs) * 1000:.0f} ms", f"{bf_one * 1000:.1f} ms", f"{med(pipe_runs) / bf_one:.1f}x", "(for reference)")

    pipe_agreement(model, files)

    # Learning one message into a big model (the whole `spamnb train` command): into the
    # journal beside it, interleaved with the interpreter importing numpy.
    learn_numpy, learn_big, learn_small = [], [], []
    for i in range(max(PIPE_RUNS // 2, 7)):
        fresh = b"Subject: bench %d %r\n\n" % (i, random.random()) + one
        learn_numpy.append(run([PYTHON, "-c", "import numpy"])[0])
        learn_big.append(run([SPAMNB, "-q", "train", "-m", big, "--spam", "-"], fresh)[0])
        learn_small.append(run([SPAMNB, "-q", "train", "-m", small, "--spam", "-"], fresh)[0])
    t_big = med(learn_big)
    row("learn one message, 1M-token model", f"{t_big * 1000:.0f} ms", f"{med(learn_numpy) * 1000:.0f} ms", f"{t_big / med(learn_numpy):.2f}x", "<= 0.6x python -c 'import numpy' (medians)")
    row("learn one message, 10k-token model", f"{med(learn_small) * 1000:.0f} ms", "", "", "(for reference)")
    learn_file = os.path.join(work, "learn-one")
    with open(learn_file, "wb") as f:
        f.write(b"Subject: bench folded " + str(random.random()).encode() + b"\n\n" + one)
    t_fold = run([SPAMNB, "-q", "train", "-m", big, "--jobs", "1", "--spam", learn_file])[0]
    row("train rewriting the 1M-token model (folds)", f"{t_fold:.2f} s", "", "", "(for reference: any bulk train)")
    if BOGOFILTER:
        bf_learn = med(run([BOGOFILTER, "-d", bogo, "-s"], b"Subject: bench2 %d\n\n" % i + one)[0] for i in range(7))
        row("learn one message: spamnb 1M vs bogofilter", f"{t_big * 1000:.0f} ms", f"{bf_learn * 1000:.1f} ms", f"{t_big / bf_learn:.0f}x", "(for reference)")

    online_rows(work, mail)

    # Peak memory classifying a 60,000-message mbox against a 6,000-message one.
    small_box, big_box = os.path.join(work, "6k.mbox"), os.path.join(work, "60k.mbox")
    write_mbox(small_box, files, 6000)
    write_mbox(big_box, files, 60000)
    tree_6k, one_6k, _ = peak_memory([SPAMNB, "-q", "classify", "-m", model, small_box])
    tree_60k, one_60k, secs = peak_memory([SPAMNB, "-q", "classify", "-m", model, big_box])
    row("peak RSS classifying, all processes", f"{tree_60k / 1024:.0f} MB", f"{tree_6k / 1024:.0f} MB", f"{tree_60k / tree_6k:.2f}x", "<= 1.5x (60k- vs 6k-message mbox)")
    row("peak RSS classifying, largest process", f"{one_60k / 1024:.0f} MB", f"{one_6k / 1024:.0f} MB", f"{one_60k / one_6k:.2f}x", "<= 1.5x (60k- vs 6k-message mbox)")
    row("  (the 60k-message mbox classified at)", fmt_rate(60000, secs), "", "", "(for reference)")
    say()
    say(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


# Each message scored as `classify --pipe` scores it, in one process (spamnb.pipe.onemessage),
# against batch classify's log-odds and verdict.
AGREEMENT = """
import json, sys
from collections import Counter
from spamnb.pipe import onemessage
from spamnb.text.tokens import Tokenizer
model = onemessage.OneModel(sys.argv[1])
tokenize = Tokenizer(model.tokens)
worst, verdicts = 0.0, 0
for line in sys.stdin:
    batch = json.loads(line)
    with open(batch["id"], "rb") as f:
        lo = model.log_odds_of(Counter(tokenize(f.read())))
    worst = max(worst, abs(lo - batch["log_odds"]) / max(abs(batch["log_odds"]), 1e-12))
    p = model.scoring.probability(lo)
    verdicts += model.scoring.verdict(p) != batch["verdict"]
print(worst, verdicts)
"""


def pipe_agreement(model: str, files: list[str]) -> None:
    _, out = run([SPAMNB, "-q", "classify", "--json", "-m", model, *files])
    _, found = run([PYTHON, "-c", AGREEMENT, model], out)
    worst, verdicts = found.decode().split()
    row("pipe's log-odds vs batch classify's", f"{float(worst):.1e} rel", f"{len(files)} msgs", f"{verdicts} diff", "<= 1e-9, 0 verdicts differ")


TOKENISE = """
import sys, time
from spamnb import compiled
from spamnb.text import tokens
paths = sys.stdin.read().split()
messages = [open(p, "rb").read() for p in paths]
tokenize = tokens.Tokenizer()
start = time.process_time()
for data in messages:
    tokenize(data)
built = [name for name in compiled.COMPILED if name in sys.modules and compiled.is_compiled(sys.modules[name])] + [compiled.SCANNER] * (tokens.SCANNER is not None)
print(",".join(built), (time.process_time() - start) / len(messages) * 1000)
"""
# What runs interpreted in each tokeniser measurement (SPAMNB_PURE, see spamnb.compiled):
# nothing, everything, or one compiled module at a time, which tells what that one buys.
ALL_COMPILED = ("tokens", "message", "headers", "_ctokens")
ROUNDS = 3


def tokeniser_ms(pure: str) -> tuple[float, set[str]]:
    """Tokeniser CPU milliseconds per corpus message (process_time), with the modules SPAMNB_PURE names interpreted; and the modules that ran compiled."""
    env = {**os.environ, "SPAMNB_PURE": pure}
    _, out = run([PYTHON, "-c", TOKENISE], "\n".join(p for _, p in read_index(INDEX)), env=env)
    built, ms = out.decode().split(" ")
    return float(ms), {name.rpartition(".")[2] for name in built.split(",") if name}


def tokeniser_rows() -> None:
    """The tokeniser alone, each way in a process of its own (no memo warmed by another), alternating, best of ROUNDS."""
    ways = ["", "1", *ALL_COMPILED]
    best: dict[str, float] = {}
    built: set[str] = set()
    for _ in range(ROUNDS):
        for way in ways:
            ms, ran = tokeniser_ms(way)
            best[way] = min(best.get(way, ms), ms)
            if not way:
                built = ran
    if not built:
        row("tokeniser CPU per message (Python source only)", f"{best['1']:.3f} ms", "", "", "<= 0.12 ms (nothing compiled was built)")
        return
    row("tokeniser CPU per message, compiled vs source", f"{best['']:.3f} ms", f"{best['1']:.3f} ms", f"{best[''] / best['1']:.2f}x", f"<= 0.12 ms (best of {ROUNDS}, alternating)")
    for name in ALL_COMPILED:
        if name in built:
            what = "spamnb/text/_ctokens.c" if name == "_ctokens" else f"{name}.py compiled"
            row(f"  {what}: tokeniser without it vs all", f"{best[name]:.3f} ms", f"{best['']:.3f} ms", f"{best[name] / best['']:.2f}x", "what it buys")


def cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def online_rows(work: str, mail: list[tuple[str, str]]) -> None:
    """`spamnb eval --online` over the corpus in the order of its file names' digests (the
    index is grouped by class), all learnt and only the mistakes, beside bogofilter run the
    same way: each message classified (-T) then, by its true class, registered (-s / -n)."""
    order = sorted(mail, key=lambda m: hashlib.md5(os.path.basename(m[1]).encode()).hexdigest())
    index = os.path.join(work, "online.index")
    with open(index, "w") as f:
        f.writelines(f"{label} {path}\n" for label, path in order)
    for mode in ("", "--train-on-error"):
        cpu = cpu_seconds()
        took, out = run([SPAMNB, "-q", "eval", "--online", *([mode] if mode else []), "--index", index, "--json"])
        cpu = cpu_seconds() - cpu
        found = json.loads(out)
        name = f"eval --online{' ' + mode if mode else ''}"
        row(name, fmt_rate(len(order), took), f"{len(order) / cpu:,.0f}/s CPU", "", ">= 500 msg/s")
        row(f"  accuracy ({found['online']['learnt']} learnt)", accuracy_text(found["lam_percent"], found["one_minus_roca_percent"], found["false_positives"], found["false_negatives"]), "", "", "lam%, 1-ROCA%, FP, FN at its cut-off")
        if BOGOFILTER:
            took, found = bogofilter_online(work, order, bool(mode))
            row(f"  bogofilter, the same way{' (' + mode + ')' if mode else ''}", fmt_rate(len(order), took), "", "", "(processes per message)")
            row(f"  bogofilter accuracy ({found['learnt']} learnt)", accuracy_text(found["lam_percent"], found["one_minus_roca_percent"], found["false_positives"], found["false_negatives"]), "", "", "lam%, 1-ROCA%, FP, FN at S")


def accuracy_text(lam: float, one_minus_roca: float, fp: int, fn: int) -> str:
    return f"{lam:.3f} / {one_minus_roca:.3f} / {fp} / {fn}"


def bogofilter_online(work: str, order: list[tuple[str, str]], on_error: bool) -> tuple[float, dict]:
    import numpy as np

    sys.path.insert(0, REPO)
    from spamnb.run import metrics
    from spamnb.run.classifier import Scored

    db = os.path.join(work, "bogo-online" + ("-errors" if on_error else ""))
    os.makedirs(db)
    scored, learnt = [], 0
    start = time.perf_counter()
    for label, path in order:
        with open(path, "rb") as f:
            data = f.read()
        found = subprocess.run([BOGOFILTER, "-d", db, "-T"], input=data, capture_output=True).stdout.split()
        verdict, score = ({"S": "spam", "H": "ham", "U": "unsure"}[found[0].decode()], float(found[1])) if len(found) == 2 else ("unsure", 0.5)
        scored.append(Scored(path, label, score, score, verdict))
        if not on_error or verdict != label:
            subprocess.run([BOGOFILTER, "-d", db, "-s" if label == "spam" else "-n"], input=data, capture_output=True)
            learnt += 1
    took = time.perf_counter() - start
    positive = np.array([s.label == "spam" for s in scored])
    flagged = np.array([s.verdict == "spam" for s in scored])
    auc = metrics.roc_auc(np.array([s.score for s in scored]), positive)
    return took, {
        "learnt": learnt,
        "lam_percent": metrics.lam_percent(int((flagged & ~positive).sum()), int((~positive).sum()), int((~flagged & positive).sum()), int(positive.sum())),
        "one_minus_roca_percent": 100 * (1 - auc),
        "false_positives": int((flagged & ~positive).sum()),
        "false_negatives": int((~flagged & positive).sum()),
    }


def ratio_row(name: str, n: int, ours: float, peer: float | None, goal: str) -> None:
    """msgs/s for spamnb and the peer; ratio = spamnb's rate / the peer's."""
    if peer is None:
        row(name, fmt_rate(n, ours), "n/a", "", goal)
    else:
        row(name, fmt_rate(n, ours), fmt_rate(n, peer), f"{peer / ours:.2f}x", goal)


if __name__ == "__main__":
    sys.exit(main())
