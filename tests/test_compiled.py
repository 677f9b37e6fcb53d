"""The compiled modules (setup.py: the tokeniser, the MIME reader, the header rules and
Platt's fit, compiled by Cython from their own Python source) against that source, run
interpreted.

They read untrusted mail, so hypothesis feeds both the same arbitrary bytes, broken and
deep MIME, text in every charset, and the hostile mail of tests/test_hostile.py, and
every output must be the same, failures included.  The interpreted side runs in a
process of its own with SPAMNB_PURE=1 (tests.interpreted); `make fuzz` makes the same
comparison on far more inputs under AddressSanitizer, bench/tokens_identical.py on the
SpamAssassin corpus.
"""
from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spamnb import compiled
from spamnb.mail import headers, message
from spamnb.models import calibration
from spamnb.text import tokens
from tests.conftest import raw_mail
from tests.interpreted import OPTIONS, Interpreted, calibrated, observe, words
from tests.test_ctokens import ANY_CHAR, CHARSETS, MAIL_BYTES, TEXT
from tests.test_hostile import HOSTILE

REPO = Path(__file__).resolve().parent.parent
MODULES = (tokens, message, headers, calibration)

needs_compiled = pytest.mark.skipif(
    not all(map(compiled.is_compiled, MODULES)), reason="the compiled modules are not built, or SPAMNB_PURE is set"
)


@pytest.fixture(scope="module")
def interpreted() -> Iterator[Interpreted]:
    with Interpreted() as reference:
        yield reference


def test_the_modules_are_built_wherever_a_compiler_and_headers_are() -> None:
    """`pip install` compiles them when it can: a silent fall-back to the source would hide here."""
    python_h = Path(sysconfig.get_paths()["include"], "Python.h")
    if os.environ.get("SPAMNB_PURE") or not (shutil.which("gcc") or shutil.which("cc")) or not python_h.exists():
        pytest.skip("the source chosen, or nothing to build the extensions with")
    assert [module.__name__ for module in MODULES if not compiled.is_compiled(module)] == []


WHICH = "from spamnb import compiled; import spamnb.text.tokens as t, spamnb.mail.message, spamnb.mail.headers, spamnb.models.calibration, sys; " + (
    "print(*[compiled.is_compiled(sys.modules[name]) for name in compiled.COMPILED], t.SCANNER is not None)"
)


@needs_compiled
@pytest.mark.parametrize(
    ("pure", "expected"),
    [
        ("1", "False False False False False"),
        ("tokens", "False True True True True"),
        ("headers,message", "True False False True True"),
        ("calibration", "True True True False True"),
        ("_ctokens", "True True True True False"),
        ("", "True True True True True"),
    ],
)
def test_spamnb_pure_runs_the_source_of_the_modules_it_names(pure: str, expected: str) -> None:
    env = {**os.environ, "SPAMNB_PURE": pure}
    done = subprocess.run([sys.executable, "-c", WHICH], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    assert done.stdout.strip() == expected


@needs_compiled
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(MAIL_BYTES, min_size=1, max_size=5))
def test_any_bytes_read_as_the_source_reads_them(interpreted: Interpreted, mails: list[bytes]) -> None:
    assert [observe(data) for data in mails] == interpreted("observe", [(data,) for data in mails])


@needs_compiled
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(TEXT, st.sampled_from(OPTIONS)), min_size=1, max_size=20))
def test_any_text_has_the_words_the_source_finds(interpreted: Interpreted, texts: list[tuple[str, dict]]) -> None:
    assert [words(text, options) for text, options in texts] == interpreted("words", texts)


@needs_compiled
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.sampled_from(CHARSETS), st.text(ANY_CHAR, max_size=120), st.sampled_from(["8bit", "base64", "quoted-printable"]), st.booleans())
def test_text_in_every_charset_reads_as_the_source_reads_it(interpreted: Interpreted, charset: str, text: str, cte: str, html: bool) -> None:
    try:
        body = text.encode(charset, errors="replace")
    except (LookupError, UnicodeError):
        body = text.encode("utf-8", errors="surrogatepass")
    body = base64.encodebytes(body) if cte == "base64" else body
    subject = base64.b64encode(body[:60]).decode()
    mail = raw_mail(
        f"Subject: =?{charset}?b?{subject}?=\nContent-Type: text/{'html' if html else 'plain'}; charset={charset}\n"
        f"Content-Transfer-Encoding: {cte}",
        body,
    )
    assert [observe(mail)] == interpreted("observe", [(mail,)])


@needs_compiled
@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_mail_reads_as_the_source_reads_it(interpreted: Interpreted, name: str) -> None:
    data = HOSTILE[name]()
    assert [observe(data)] == interpreted("observe", [(data,)])


# Held-out log-odds as train's folds give them, and any float at all (infinities, NaN).
SCORE = st.one_of(st.floats(-300, 300), st.floats())


@needs_compiled
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(SCORE, st.booleans()), min_size=1, max_size=300), st.sampled_from([calibration.OUTLIER_SHARE, 0.0, 0.01, 0.5]))
def test_platts_fit_is_the_sources_to_the_bit(interpreted: Interpreted, scored: list[tuple[float, bool]], outlier: float) -> None:
    """C doubles and libm in the compiled loops (calibration.pxd), Python floats in the source:
    the same curve and floor, compared by repr (every bit of a float, NaN alike)."""
    z, positive = [s for s, _ in scored], [p for _, p in scored]
    assert repr(calibrated(z, positive, outlier)) == repr(interpreted("calibrated", [(z, positive, outlier)])[0])
