#!/usr/bin/env python3
"""`make fuzz`: the compiled word scanner against the pure path, on many inputs, under a sanitizer.

Loads the scanner from the .so given with --module (make fuzz builds one with
-fsanitize=address,undefined and runs this under libasan), and compares it with the pure
path on:
  generated texts: letters of many scripts, joiners, NULs, surrogates, CJK, white space
    and lines up to 1 MiB, with random length bounds, stopwords and prefixes, given to
    the scanner itself (the pure result is Tokenizer.words on the pure path);
  corpus-derived messages: each message of the corpus, mutated (bytes flipped, cut,
    spliced with another, NULs and 8-bit bytes sprinkled, a line repeated into a huge
    one, charset and transfer encoding swapped), through the whole tokeniser both ways.
Any difference is printed and the exit status is 1; a memory error aborts the run
(ASAN_OPTIONS=abort_on_error=1).  Deterministic for a given --seed.

    python bench/fuzz_ctokens.py --module build/asan/spamnb/_ctokens....so [--texts N] [--mutations N] [--seed S]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from spamnb.mail.sources import Message, read_index  # noqa: E402
from spamnb.text import tokens  # noqa: E402

DEFAULT_INDEX = os.environ.get("SPAMNB_BENCH_CORPUS", os.path.join(REPO, "..", "shared", "corpora", "spamassassin", "index"))

PIECES = [
    "a", "Z", "q", "9", "0", "é", "ß", "İ", "\u0131", "Σ", "ς", "ǅ", "ﬁ", "٣", "²", "Ⅻ", "д", "Я", "ä", "\u00a0",
    "中", "文", "日本", "ｶ", "한", "'", ".", "-", "_", " ", "\t", "\n", "\r", "\x00", "\udcff", "\ud800",
    "\U0001f600", "\U00010400", "--", "..", "''", "http://x.example.com/", "=?utf-8?b?", "&amp;",
]
WORDS = ["the", "free", "money", "don't", "e-mail", "192.0.2.1", "example.com", "x" * 41, "y" * 200, "a.b-c'd"]
STOP = tokens.stopword_set()


def random_text(rng: random.Random) -> str:
    shape = rng.random()
    if shape < 0.4:
        return "".join(rng.choice(PIECES) for _ in range(rng.randrange(60)))
    if shape < 0.7:
        return " ".join(rng.choice(WORDS + PIECES) for _ in range(rng.randrange(40)))
    if shape < 0.997:
        return "".join(chr(rng.choice((rng.randrange(128), rng.randrange(256), rng.randrange(0x3000), rng.randrange(0x110000)))) for _ in range(rng.randrange(80)))
    # A huge line (one in 300): a character or piece repeated, up to 1 Mi characters.
    piece = rng.choice(PIECES + WORDS)
    return piece * rng.randrange(1, (1 << 20) // len(piece))


_tokenizers: dict[tuple, tuple[tokens.Tokenizer, tokens.Tokenizer]] = {}


def tokenizers(lo: int, hi: int, stop: bool, lowercase: bool) -> tuple[tokens.Tokenizer, tokens.Tokenizer]:
    """(compiled, pure) tokenisers of these settings, made once."""
    key = (lo, hi, stop, lowercase)
    if key not in _tokenizers:
        options = tokens.TokenSettings(min_len=lo, max_len=hi, stopwords=stop, lowercase=lowercase)
        saved = tokens.SCANNER
        compiled = tokens.Tokenizer(options)
        tokens.SCANNER = None
        _tokenizers[key] = compiled, tokens.Tokenizer(options)
        tokens.SCANNER = saved
    return _tokenizers[key]


def fuzz_texts(scan: object, rng: random.Random, n: int) -> int:
    """Tokenizer.words both ways; and the scanner's prefix, on the text as words gives it to the scanner."""
    bad = 0
    for i in range(n):
        text = random_text(rng)
        lo = rng.randint(1, 4)
        hi = rng.randint(lo, 45)
        stop, lowercase = rng.random() < 0.3, rng.random() < 0.7
        prefix = rng.choice(["subject:", "x-\u00e9:", "\udcff:", "中:"])
        compiled, pure = tokenizers(lo, hi, stop, lowercase)
        expected = pure.words(text)
        prepared = text.lower() if lowercase else text
        if not prepared.isascii() and tokens.CJK.search(prepared):
            prepared = tokens.CJK.sub(lambda m: " " + tokens.cjk_bigrams(m.group()) + " ", prepared)
        kept = [w for w in expected if not w.startswith("skip:")]
        prefixed = scan(prepared, lo, hi, STOP if stop else None, prefix)  # type: ignore[operator]
        if compiled.words(text) != expected or prefixed != [prefix + w for w in kept] + expected[len(kept) :]:
            bad += 1
            print(f"  DIFFERENT text #{i}: {text[:80]!r} lo={lo} hi={hi} stop={stop} lowercase={lowercase} prefix={prefix!r}")
    return bad


def mutate(rng: random.Random, data: bytes, other: bytes) -> bytes:
    kind = rng.randrange(7)
    b = bytearray(data)
    if kind == 0 and b:  # flip bytes
        for _ in range(rng.randint(1, 20)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == 1 and b:  # cut
        del b[rng.randrange(len(b)) :]
    elif kind == 2:  # splice with another message
        b = b[: rng.randrange(len(b) + 1)] + other[rng.randrange(len(other) + 1) :]
    elif kind == 3:  # sprinkle NULs, 8-bit bytes and MIME pieces
        for _ in range(rng.randint(1, 30)):
            at = rng.randrange(len(b) + 1)
            b[at:at] = rng.choice([b"\x00", b"\xff", b"\xc3", b"\xe4\xb8", b"=?", b"?=", b"\n--", b"=E9", b"<", b"\r"])
    elif kind == 4:  # a line repeated into a huge one
        lines = bytes(b).split(b"\n")
        j = rng.randrange(len(lines))
        lines[j] = lines[j] * rng.randint(2, max(2, (1 << 20) // (len(lines[j]) + 1)))
        b = bytearray(b"\n".join(lines))
    elif kind == 5:  # another charset or transfer encoding declared
        swap = rng.choice([b"utf-16", b"shift_jis", b"iso-2022-jp", b"koi8-r", b"big5", b"x-bogus", b"utf-7"])
        b = bytearray(bytes(b).replace(b"charset=", b"charset=" + swap + b";x=", 1).replace(b"7bit", rng.choice([b"base64", b"quoted-printable"]), 1))
    else:  # the message as it is
        pass
    return bytes(b)


def fuzz_corpus(messages: list[bytes], rng: random.Random, per_message: int) -> tuple[int, int]:
    settings = [tokens.TokenSettings(), tokens.TokenSettings(ngram=2, stopwords=True), tokens.TokenSettings(min_len=1, max_len=8, lowercase=False)]
    saved = tokens.SCANNER
    compiled = [tokens.Tokenizer(s) for s in settings]
    tokens.SCANNER = None
    pure = [tokens.Tokenizer(s) for s in settings]
    tokens.SCANNER = saved
    bad = n = 0
    for i, data in enumerate(messages):
        for _ in range(per_message):
            mail = mutate(rng, data, rng.choice(messages))
            k = rng.randrange(len(settings))
            n += 1
            if compiled[k](mail) != pure[k](mail):
                bad += 1
                print(f"  DIFFERENT corpus message #{i} mutated, settings {settings[k]}")
    return n, bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", required=True, help="the _ctokens .so to test (built with a sanitizer)")
    parser.add_argument("--texts", type=int, default=100_000)
    parser.add_argument("--mutations", type=int, default=4, help="mutated copies of each corpus message")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--index", default=DEFAULT_INDEX)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("spamnb.text._ctokens", args.module)
    if spec is None or spec.loader is None or not os.path.isfile(args.module):
        print(f"fuzz: no module at {args.module}")
        return 1
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tokens.SCANNER = module.words
    rng = random.Random(args.seed)
    start = time.perf_counter()
    bad = fuzz_texts(module.words, rng, args.texts)
    print(f"generated texts: {args.texts:,}, {bad} differ ({time.perf_counter() - start:.0f} s)", flush=True)
    messages = [m.data for m in read_index(args.index) if isinstance(m, Message)] if os.path.isfile(args.index) else []
    if not messages:
        print(f"no corpus at {args.index}: corpus-derived inputs skipped")
    start = time.perf_counter()
    n, bad_corpus = fuzz_corpus(messages, rng, args.mutations)
    print(f"corpus-derived messages: {n:,} ({len(messages):,} messages x {args.mutations}), {bad_corpus} differ ({time.perf_counter() - start:.0f} s)")
    print(f"{args.texts + n:,} inputs, {bad + bad_corpus} differences, no sanitizer finding (a finding aborts the run)")
    return 1 if bad or bad_corpus else 0


if __name__ == "__main__":
    sys.exit(main())
