#!/usr/bin/env python3
"""Proof that a faster tokeniser produces the very same tokens as a reference one.

Tokenises every message of the corpus with the reference tokeniser (by default
`git show main:spamnb/tokens.py`, loaded as a module) and with the working tree's,
under the default settings and under TokenSettings(ngram=2, stopwords=True), and
prints every message whose token lists differ (order and multiplicity included).
Exits 1 on any difference.

    python bench/tokens_identical.py [--ref GIT_REV] [--index INDEX]

The corpus is read from ../shared/corpora/spamassassin/index (or $SPAMNB_BENCH_CORPUS).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from spamnb import tokens as new_tokens  # noqa: E402
from spamnb.sources import Message, read_index  # noqa: E402

DEFAULT_INDEX = os.environ.get("SPAMNB_BENCH_CORPUS", os.path.join(REPO, "..", "shared", "corpora", "spamassassin", "index"))


def reference_module(rev: str):
    """spamnb/tokens.py as of `rev`, imported under another name, beside its stopword list."""

    def show(name: str) -> bytes:
        return subprocess.run(["git", "-C", REPO, "show", f"{rev}:spamnb/{name}"], check=True, capture_output=True).stdout

    with tempfile.TemporaryDirectory() as folder:
        for name in ("tokens.py", "stopwords.txt"):
            with open(os.path.join(folder, name), "wb") as out:
                out.write(show(name))
        spec = importlib.util.spec_from_file_location("reference_tokens", os.path.join(folder, "tokens.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses looks its module up there
        spec.loader.exec_module(module)
        module.stopword_set()  # read the list while the folder exists (it is cached)
    return module


def corpus(index: str) -> list[tuple[str, bytes]]:
    """(path, bytes) of every readable message of an index, through spamnb's own reader."""
    return [(m.id, m.data) for m in read_index(index) if isinstance(m, Message)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="git revision of the reference tokeniser")
    parser.add_argument("--index", default=DEFAULT_INDEX)
    args = parser.parse_args()
    old = reference_module(args.ref)
    messages = corpus(args.index)
    settings = [{}, {"ngram": 2, "stopwords": True}]
    differences = 0
    for options in settings:
        ref = old.Tokenizer(old.TokenSettings(**options))
        new = new_tokens.Tokenizer(new_tokens.TokenSettings(**options))
        t_ref = t_new = 0.0
        n_tokens = bad = 0
        for name, data in messages:
            start = time.process_time()
            expected = ref(data)
            t_ref += time.process_time() - start
            start = time.process_time()
            got = new(data)
            t_new += time.process_time() - start
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
            f"{args.ref} {t_ref:.2f} s, working tree {t_new:.2f} s of CPU ({t_ref / t_new:.2f}x)"
        )
    print(f"{differences} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
