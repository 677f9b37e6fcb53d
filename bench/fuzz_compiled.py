#!/usr/bin/env python3
"""`make fuzz`: every compiled module against its own Python source, on many inputs, under a sanitizer.

Imports spamnb from --build (make fuzz builds every extension of setup.py there with
-fsanitize=address,undefined and runs this under libasan): the word scanner and the
tokeniser, MIME reader, header rules and Platt's fit compiled by Cython.  What they make of each input
is compared with what their Python source makes of it in a process of its own
(tests.interpreted, SPAMNB_PURE=1), on:
  generated texts: letters of many scripts, joiners, NULs, surrogates, CJK, tags' `<` and
    `>`, white space and lines up to 1 MiB, with random length bounds, stopwords and case:
    their words; the scanner's prefix, on the text as the tokeniser gives it to the
    scanner; the tag cutter (tokens.CUT_TAGS) against the pattern it stands for; the
    token counter (vocabulary.COUNTED) on each batch's words against local_rows' numpy path,
    the look-ups (vocabulary.LOOKED_UP) of those words against dict.get, a vocabulary's growth by
    them (vocabulary.GROWN) against the pure path's, the counter with a
    vocabulary's blob (vocabulary.INDEXED) against both, and the field numbers
    (tokens.FIELD_NUMBERS) against the pure path's, the networks and domains of the text's ASCII
    characters (tokens.RECEIVED_PARTS) against received_parts' patterns, the tokens of the text and of its
    ASCII characters as a link's host (tokens.URL_HOST_TOKENS) against url_host_tokens, the links' hosts (tokens.LINKS) against
    the pattern's (tokens.URL), the highest code point (tokens.HIGHEST) against max(), the text
    lowered (tokens.LOWERED) against str.lower, the
    header block's fields (message.FIELDS) against the pattern's findall (header_fields), the
    invisible parts' openers (tokens.OPENER) against the pattern's search, the character
    references replaced (tokens.UNESCAPE) against html.unescape, the fields' removal
    (headers.WITHOUT_FIELDS) on the text's UTF-8 bytes against the pattern's sub (field_lines),
    the marked lines of an mbox (sources.MARKED) on those bytes against the pattern's finditer;
  corpus-derived messages: each message of the corpus, mutated (bytes flipped, cut,
    spliced with another, NULs and 8-bit bytes sprinkled, a line repeated into a huge
    one, charset and transfer encoding swapped): every output of tests.interpreted.observe
    (tokens and numeric features under four settings, unstamped, digest, stamp);
  the hostile mail of tests/test_hostile.py, the same way;
  generated held-out scores (spread as train's, and any float): Platt's fit and the
    ham-loss floor (tests.interpreted.calibrated), compared by repr, every bit.
Any difference is printed and the exit status is 1; a memory error aborts the run
(ASAN_OPTIONS=abort_on_error=1).  Deterministic for a given --seed.

    python bench/fuzz_compiled.py --build build/asan [--texts N] [--mutations N] [--fits N] [--seed S]
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from functools import partial

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_INDEX = os.environ.get("SPAMNB_BENCH_CORPUS", os.path.join(REPO, "..", "shared", "corpora", "spamassassin", "index"))

PIECES = [
    "a", "Z", "q", "9", "0", "é", "ß", "İ", "\u0131", "Σ", "ς", "ǅ", "ﬁ", "٣", "²", "Ⅻ", "д", "Я", "ä", "\u00a0",
    "中", "文", "日本", "ｶ", "한", "'", ".", "-", "_", " ", "\t", "\n", "\r", "\x00", "\udcff", "\ud800",
    "\U0001f600", "\U00010400", "--", "..", "''", "http://x.example.com/", "=?utf-8?b?", "&amp;",
    "<", ">", "<a href='x'>", "</p >", "HTTPS://", "fTp://", "\u017f://", ":8080", ":\u0663",
    "Subject: ", "\r\n\t", "\r\n\r\n", "<script", "<STYLE", "<!--", "\u017fcript",
    "&", "&#", "&#x", "&#65;", "&#X1F600", "&#1114112;", "&notin", "&notit;", "&nbsp", ";",
    "\nReceived: ", "\nreturn-PATH\t:", "Delivered-To:", "\n ", "x-original-to", "\nFrom ", ">>From ", "From",
    "\n\n", "\n\r\n", "X-Spamnb:", "-sPAMnb", "-spam-Checker-Version",
    "10.0.0.1", "1234.", "[192.0.2.1]", "mx-1.Example.ORG", "a.b.c.d.example.co.uk", "ab-",
]
# The names whose fields headers.WITHOUT_FIELDS removes: the transport fields', a prefix of another, a blank.
CUT_NAMES = [(b"received", b"delivered-to", b"return-path", b"x-original-to"), (b"x-original", b"x-original-to"), (b"subject",), (b"",)]
WORDS = ["the", "free", "money", "don't", "e-mail", "192.0.2.1", "example.com", "x" * 41, "y" * 200, "a.b-c'd"]
BATCH = 500


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


def batches(items: list, size: int = BATCH) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def fuzz_texts(reference: object, rng: random.Random, n: int) -> int:
    """Tokenizer.words compiled and interpreted; the scanner's prefix, on the text as words gives it to the scanner; the tag cutter;
    the dotted words of those prefixed words; the networks and domains of the text's ASCII (a Received run's); the tokens of the text and its ASCII as a link's host; the links' hosts; the highest code point; the text lowered; the header block's fields; the openers;
    the character references replaced; the fields' removal; the marked lines; the header block's end, the verdict's hint and the line ends' bytes; the token counter and the field numbers on each batch's words."""
    import html

    from spamnb.mail import headers, message, sources
    from spamnb.text import tokens
    from tests.interpreted import outcome, words

    stop = tokens.stopword_set()
    bad = done = 0
    while done < n:
        batch = []
        for _ in range(min(BATCH, n - done)):
            lo = rng.randint(1, 4)
            options = {"min_len": lo, "max_len": rng.randint(max(lo, 2), 45), "stopwords": rng.random() < 0.3, "lowercase": rng.random() < 0.7}
            batch.append((random_text(rng), options))
        expected = reference("words", batch)  # type: ignore[operator]
        counted: list[list[str]] = []
        for (text, options), want in zip(batch, expected, strict=True):
            got = words(text, options)
            prepared = text.lower() if options["lowercase"] else text
            if not prepared.isascii() and tokens.CJK.search(prepared):
                prepared = tokens.CJK.sub(lambda m: " " + tokens.cjk_bigrams(m.group()) + " ", prepared)
            found = want[1] if want[0] == "returned" else []
            prefix = rng.choice(["subject:", "x-\u00e9:", "\udcff:", "中:"])
            prefixed = tokens.SCANNER(prepared, options["min_len"], options["max_len"], stop if options["stopwords"] else None, prefix)
            cut = tokens.CUT_TAGS(text) == tokens.TAG.sub(" ", text)
            dotted = tokens.DOTTED_WORDS(text, prefixed) == tokens.dotted_words(text, prefixed)
            links = tokens.LINKS(text) == [m.group(1) for m in tokens.URL.finditer(text)]
            run = text.encode("ascii", "ignore").decode("ascii")
            received = tokens.RECEIVED_PARTS(run) == tokens.received_parts(run)
            host = tokens.URL_HOST_TOKENS(text) == (tokens.url_host_tokens(text) if text.isascii() else None)
            host = host and tokens.URL_HOST_TOKENS(run) == tokens.url_host_tokens(run)
            highest = tokens.HIGHEST(text) == max(map(ord, text), default=0)
            lowered = tokens.LOWERED(text) == text.lower()
            fields = message.FIELDS(text) == message.header_fields(text)
            at = rng.randrange(len(text) + 1)
            opener = tokens.OPENER(text, at) == tokens.invisible_opener(text, at)
            unescaped = outcome(partial(tokens.unescape, text)) == outcome(partial(html.unescape, text))
            raw, names = text.encode("utf-8", "surrogatepass"), rng.choice(CUT_NAMES)
            removed = headers.WITHOUT_FIELDS(raw, names) == headers.field_lines(names).sub(b"", raw)
            marked = sources.MARKED(raw) == [m.start() for m in sources.MARKED_LINE.finditer(raw)]
            start = rng.randrange(-2, len(raw) + 2)
            blank = headers.BLANK_LINE_END(raw, start) == headers.blank_line_end(raw, start)
            hinted = headers.VERDICT_HINTED(raw) == headers.verdict_hinted(raw)
            line_ends = message.LINE_END_BYTES(raw) == message.line_end_bytes(raw)
            if got != want or prefixed != [prefix + w for w in found] or not cut or not dotted or not received or not host or not links or not highest or not lowered or not fields or not opener or not unescaped or not removed or not marked or not blank or not hinted or not line_ends:
                bad += 1
                print(f"  DIFFERENT text #{done}: {text[:80]!r} {options} prefix={prefix!r}")
            done += 1
            counted += [got[1], prefixed] if got[0] == "returned" else [prefixed]
        every = [t for words in counted for t in words] + [text for text, _ in batch]
        if not counts_agree(counted) or not field_numbers_agree(every):
            bad += 1
            print(f"  DIFFERENT counts or field numbers of the words of texts #{done - len(batch)} to #{done - 1}")
    return bad


def field_numbers_agree(every: list[str]) -> bool:
    """tokens.FIELD_NUMBERS against the pure path's field numbers, of every word and text."""
    from spamnb.text import tokens

    got = tokens.field_numbers(every)
    saved, tokens.FIELD_NUMBERS = tokens.FIELD_NUMBERS, None
    try:
        return got == tokens.field_numbers(every)
    finally:
        tokens.FIELD_NUMBERS = saved


def counts_agree(token_lists: list[list[str]]) -> bool:
    """The token counter (vocabulary.COUNTED, C) against local_rows' numpy path: the same tokens,
    and each message the same (column, count, field) entries; the look-ups (vocabulary.LOOKED_UP)
    of those tokens in a vocabulary of every other one and a vocabulary's growth by them
    (vocabulary.GROWN), in its index (vocabulary.TOKEN_INDEX), against the pure path's dict's;
    and the counter with that vocabulary's blob (vocabulary.Indexed) against both."""
    import numpy as np

    from spamnb.bayes import vocabulary

    got = vocabulary.local_rows(token_lists, by_field=True)
    saved, vocabulary.COUNTED = vocabulary.COUNTED, None
    try:
        want = vocabulary.local_rows(token_lists, by_field=True)
    finally:
        vocabulary.COUNTED = saved

    def entries(rows: vocabulary.Rows) -> list[list[int]]:
        row = np.repeat(np.arange(len(rows.lengths)), rows.lengths)
        order = np.lexsort((rows.cols, row))
        return [row[order].tolist(), rows.cols[order].tolist(), rows.counts[order].tolist(), rows.fields[order].tolist()]  # type: ignore[index]

    vocab, grown = vocabulary.Vocabulary(got.tokens[::2]), vocabulary.Vocabulary(got.tokens[1::3])
    saved, vocabulary.TOKEN_INDEX = vocabulary.TOKEN_INDEX, None
    try:
        by_dict, pure = vocabulary.Vocabulary(vocab.tokens), vocabulary.Vocabulary(grown.tokens)
    finally:
        vocabulary.TOKEN_INDEX = saved
    looked_up = vocab.lookup(got.tokens) == by_dict.lookup(got.tokens)
    looked_up = looked_up and grown.grow(got.tokens).tolist() == pure.grow(got.tokens).tolist() and grown.tokens == pure.tokens
    blob = vocabulary.SEPARATOR.join(vocab.tokens).encode("utf-8", "surrogatepass")
    indexed = vocabulary.local_rows(token_lists, vocabulary.Indexed(blob, *vocabulary.INDEXED(blob)), by_field=True)
    found = indexed.tokens == got.tokens and indexed.columns.tolist() == vocab.lookup(got.tokens) and entries(indexed.rows) == entries(got.rows)
    return looked_up and found and got.tokens == want.tokens and got.rows.lengths.tolist() == want.rows.lengths.tolist() and entries(got.rows) == entries(want.rows)


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


def fuzz_messages(reference: object, named: list[tuple[str, bytes]]) -> int:
    """tests.interpreted.observe, compiled and interpreted, on each message."""
    from tests.interpreted import observe

    bad = 0
    for batch in batches(named, 50):
        expected = reference("observe", [(data,) for _, data in batch])  # type: ignore[operator]
        for (name, data), want in zip(batch, expected, strict=True):
            if observe(data) != want:
                bad += 1
                print(f"  DIFFERENT {name}")
    return bad


def random_scores(rng: random.Random) -> tuple[list[float], list[bool], float]:
    """Held-out log-odds of two classes (a spread and a gap as train's folds give, at times
    with any float among them) and an outlier share."""
    n = rng.randrange(1, 3000)
    spread, gap = rng.choice([1.0, 10.0, 40.0]), rng.choice([0.0, 5.0, 30.0])
    positive = [rng.random() < 0.4 for _ in range(n)]
    z = [rng.gauss(gap if p else -gap, spread) for p in positive]
    if rng.random() < 0.1:
        z[rng.randrange(n)] = rng.choice([float("inf"), float("-inf"), float("nan"), 1e308, -1e308, 5e-324, 0.0])
    return z, positive, rng.choice([1e-6, 0.0, 0.01])


def fuzz_fits(reference: object, rng: random.Random, n: int) -> int:
    """Platt's fit and the ham-loss floor, compiled and interpreted, by repr."""
    from tests.interpreted import calibrated

    bad = 0
    for batch in batches([random_scores(rng) for _ in range(n)], 20):
        expected = reference("calibrated", batch)  # type: ignore[operator]
        for i, (args, want) in enumerate(zip(batch, expected, strict=True)):
            if repr(calibrated(*args)) != repr(want):
                bad += 1
                print(f"  DIFFERENT fit #{i}: {len(args[0])} scores, outlier {args[2]}: {calibrated(*args)} against {want}")
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="a build of the package whose extensions to test (built with a sanitizer)")
    parser.add_argument("--texts", type=int, default=100_000)
    parser.add_argument("--mutations", type=int, default=4, help="mutated copies of each corpus message")
    parser.add_argument("--fits", type=int, default=1_000, help="generated sets of held-out scores for Platt's fit")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--index", default=DEFAULT_INDEX)
    args = parser.parse_args()
    sys.path[:0] = [os.path.abspath(args.build), REPO]
    from spamnb import compiled
    from spamnb.mail import headers, message, sources
    from spamnb.mail.sources import Message, read_index
    from spamnb.models import calibration
    from spamnb.text import tokens
    from tests.interpreted import Interpreted
    from tests.test_hostile import HOSTILE

    built = [m.__name__ for m in (tokens, message, headers, calibration) if compiled.is_compiled(m) and m.__file__.startswith(os.path.abspath(args.build))]
    from spamnb.bayes import vocabulary

    if len(built) < 4 or tokens.SCANNER is None or tokens.CUT_TAGS is None or tokens.FIELD_NUMBERS is None or vocabulary.COUNTED is None or vocabulary.LOOKED_UP is None or vocabulary.GROWN is None or headers.WITHOUT_FIELDS is None or headers.BLANK_LINE_END is None or headers.VERDICT_HINTED is None or message.LINE_END_BYTES is None or sources.MARKED is None:
        print(f"fuzz: the extensions in {args.build} were not all imported (compiled: {built}, scanner: {tokens.SCANNER is not None})")
        return 1
    rng = random.Random(args.seed)
    with Interpreted() as reference:
        start = time.perf_counter()
        bad = fuzz_texts(reference, rng, args.texts)
        print(f"generated texts: {args.texts:,}, {bad} differ ({time.perf_counter() - start:.0f} s)", flush=True)
        corpus = [m.data for m in read_index(args.index) if isinstance(m, Message)] if os.path.isfile(args.index) else []
        if not corpus:
            print(f"no corpus at {args.index}: corpus-derived inputs skipped")
        start = time.perf_counter()
        mutated = [(f"corpus message #{i} mutated", mutate(rng, data, rng.choice(corpus))) for i, data in enumerate(corpus) for _ in range(args.mutations)]
        bad_corpus = fuzz_messages(reference, mutated)
        print(f"corpus-derived messages: {len(mutated):,} ({len(corpus):,} messages x {args.mutations}), {bad_corpus} differ ({time.perf_counter() - start:.0f} s)", flush=True)
        start = time.perf_counter()
        bad_hostile = fuzz_messages(reference, [(name, make()) for name, make in HOSTILE.items()])
        print(f"hostile mail of the tests: {len(HOSTILE)}, {bad_hostile} differ ({time.perf_counter() - start:.0f} s)")
        start = time.perf_counter()
        bad_fits = fuzz_fits(reference, rng, args.fits)
        print(f"generated held-out scores (Platt's fit): {args.fits:,}, {bad_fits} differ ({time.perf_counter() - start:.0f} s)")
    n = args.texts + len(mutated) + len(HOSTILE) + args.fits
    bad += bad_corpus + bad_hostile + bad_fits
    print(f"{n:,} inputs, {bad} differences, no sanitizer finding (a finding aborts the run)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
