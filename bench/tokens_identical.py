#!/usr/bin/env python3
"""Proof that a faster tokeniser produces the very same tokens as a reference one.

Tokenises every message of the corpus with the reference tokeniser (by default the
spamnb package of `main`, from `git archive`, run in a process of its own) and with the working tree's,
under the default settings and under TokenSettings(ngram=2, stopwords=True), and
prints every message whose token lists differ (order and multiplicity included).
Exits 1 on any difference.

With --pure the reference is the working tree's own Python source, interpreted with the
pure word path (SPAMNB_PURE=1, in a process of its own), and the working tree's tokeniser
runs compiled (the modules of spamnb.compiled and the word scanner): the proof that
compiling changes no token.

    python bench/tokens_identical.py [--ref GIT_REV | --pure] [--index INDEX]

The corpus is read from ../shared/corpora/spamassassin/index (or $SPAMNB_BENCH_CORPUS).
"""
from __future__ import annotations

import argparse
import gc
import os
import pickle
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from spamnb import compiled  # noqa: E402
from spamnb.mail import headers, message  # noqa: E402, F401 - imported to tell whether compiled
from spamnb.mail.sources import Message, read_index  # noqa: E402
from spamnb.models import calibration  # noqa: E402, F401 - imported to tell whether compiled
from spamnb.text import tokens as new_tokens  # noqa: E402

DEFAULT_INDEX = os.environ.get("SPAMNB_BENCH_CORPUS", os.path.join(REPO, "..", "shared", "corpora", "spamassassin", "index"))


# Run in a process of its own with the reference package first on sys.path, so that
# every module the reference tokeniser imports is of the same revision.
REFERENCE_RUN = """
import pickle, sys, time
sys.path.insert(0, sys.argv[1])
from spamnb.text import tokens
assert tokens.__file__.startswith(sys.argv[1]), tokens.__file__
messages, settings = pickle.load(sys.stdin.buffer)
out = []
for options in settings:
    tokenize = tokens.Tokenizer(tokens.TokenSettings(**options))
    start = time.process_time()
    lists = [tokenize(data) for _, data in messages]
    out.append((lists, time.process_time() - start))
pickle.dump(out, sys.stdout.buffer)
"""


def reference_tokens(rev: str, messages: list[tuple[str, bytes]], settings: list[dict]) -> list[tuple[list[list[str]], float]]:
    """Per settings, the tokens of every message by the spamnb package as of `rev`, and the CPU seconds it took."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(["git", "-C", REPO, "archive", rev, "spamnb"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        return run_reference(folder, messages, settings, dict(os.environ))  # source only: nothing compiled there


def run_reference(folder: str, messages: list[tuple[str, bytes]], settings: list[dict], env: dict[str, str]) -> list[tuple[list[list[str]], float]]:
    done = subprocess.run(
        [sys.executable, "-c", REFERENCE_RUN, folder], input=pickle.dumps((messages, settings)), check=True, capture_output=True, env=env
    )
    return pickle.loads(done.stdout)


def forget_memos() -> None:
    """Empty the tokeniser's module-wide memos, so that no run is timed on another's."""
    for memo in (new_tokens._chunk_memo, new_tokens._chunks_memo, new_tokens._url_memo):
        memo.clear()


def pure_tokens(messages: list[tuple[str, bytes]], settings: list[dict]) -> list[tuple[list[list[str]], float]]:
    """As reference_tokens, by the working tree's Python source interpreted, on the pure word path."""
    return run_reference(REPO, messages, settings, {**os.environ, "SPAMNB_PURE": "1"})


def corpus(index: str) -> list[tuple[str, bytes]]:
    """(path, bytes) of every readable message of an index, through spamnb's own reader."""
    return [(m.id, m.data) for m in read_index(index) if isinstance(m, Message)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="git revision of the reference tokeniser")
    parser.add_argument("--pure", action="store_true", help="the reference is the working tree's pure-Python path")
    parser.add_argument("--index", default=DEFAULT_INDEX)
    args = parser.parse_args()
    running = [name for name in compiled.COMPILED if compiled.is_compiled(sys.modules[name])]
    if args.pure and (new_tokens.SCANNER is None or len(running) < len(compiled.COMPILED)):
        print(f"--pure: the compiled modules are not all built (or SPAMNB_PURE is set; compiled: {running}): nothing to compare")
        return 1
    messages = corpus(args.index)
    settings = [{}, {"ngram": 2, "stopwords": True}]
    differences = 0
    reference = pure_tokens(messages, settings) if args.pure else reference_tokens(args.ref, messages, settings)
    ref_name = "pure" if args.pure else args.ref
    gc.freeze()  # millions of reference tokens held: not for the collector to walk while timing ours
    for options, (expected_lists, t_ref) in zip(settings, reference, strict=True):
        forget_memos()
        new = new_tokens.Tokenizer(new_tokens.TokenSettings(**options))
        start = time.process_time()
        got_lists = [new(data) for _, data in messages]
        t_new = time.process_time() - start
        n_tokens = bad = 0
        for (name, _), expected, got in zip(messages, expected_lists, got_lists, strict=True):
            n_tokens += len(expected)
            if got != expected:
                bad += 1
                missing = sorted(set(expected) - set(got))[:5]
                extra = sorted(set(got) - set(expected))[:5]
                print(f"  DIFFERENT {name}: {len(expected)} vs {len(got)} tokens; missing {missing} extra {extra}")
        differences += bad
        label = ", ".join(f"{k}={v}" for k, v in options.items()) or "defaults"
        print(
            f"TokenSettings({label}): {len(messages)} messages, {n_tokens} tokens, {bad} differ; "
            f"{ref_name} {t_ref:.2f} s, working tree {t_new:.2f} s of CPU ({t_ref / t_new:.2f}x)"
        )
    print(f"{differences} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
