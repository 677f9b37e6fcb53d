"""`classify --pipe --reasons N`: the verdict header names the message's N strongest
tokens (issue 19), the same from the numpy-free scorer as from the full one, and never
at the cost of the message."""
from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spamnb.mail import headers
from spamnb.mail.sources import Message, read_source
from spamnb.models import store
from spamnb.models.model import Scoring
from spamnb.pipe import filter as pipe
from spamnb.pipe import onemessage
from spamnb.run import classifier
from spamnb.text.tokens import Tokenizer, TokenSettings
from tests.conftest import LIST_SERVER_FIELDS, make_mail, run_cli
from tests.test_pipe import MESSAGES, run_console

SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus" / "maildir"
FOREIGN = [
    make_mail("Prix réduit ½ €", "Gagnez un séjour à Zürich: réponse immédiate, naïve façade"),
    make_mail("日本語のお知らせ", "無料 プレゼント 当選 おめでとう 今すぐ"),
    make_mail("crème brûlée", "a=b, c%d; \"quoted\" tab\tand ünïcödé", headers=LIST_SERVER_FIELDS),
]
FIELD = re.compile(rb"^X-Spamnb: .*(?:(?:\r\n|\n|\r)[ \t].*)*", re.M)


def model_files(folder: Path, event: str, **weighting: object) -> tuple[str, str]:
    """A model of the sample corpus and the foreign mail, and the same model compressed
    (which the pipe hands to numpy's loader: the full scorer, Model.explain)."""
    model = store.empty_model(TokenSettings(), Scoring(event=event, **weighting))  # type: ignore[arg-type]
    items = [*read_source(str(SAMPLE / "spam"), "spam"), *read_source(str(SAMPLE / "ham"), "ham")]
    items += [Message(f"foreign{i}", m, "spam" if i % 2 else "ham") for i, m in enumerate(FOREIGN)]
    classifier.learn(model, items)
    plain, packed = folder / f"{event}.npz", folder / f"{event}-packed.npz"
    store.save(model, str(plain))
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as out:
        for name in src.namelist():
            out.writestr(name, src.read(name))
    return str(plain), str(packed)


@pytest.fixture(
    scope="module",
    params=[("fisher", {}), ("multinomial", {}), ("bernoulli", {}), ("complement", {}), ("multinomial", {"tf": "log", "idf": True, "length_norm": "l2"})],
    ids=["fisher", "multinomial", "bernoulli", "complement", "multinomial-tfidf"],
)
def models(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    event, weighting = request.param
    return model_files(tmp_path_factory.mktemp("reasons"), event, **weighting)


def unseen() -> list[bytes]:
    mail = [p.read_bytes() for kind in ("spam", "ham") for p in sorted((SAMPLE / kind / "cur").iterdir())[:6]]
    return [*mail, *FOREIGN, make_mail("zqxv unknown", "blorfle wibble ✓ novel words only")]


def tokens_of(field: bytes) -> list[tuple[str, float]]:
    """The (token as written, share) pairs of a stamped X-Spamnb field, unfolded."""
    value = re.sub(rb"\r\n|\n|\r", b"", field).decode("ascii")
    listed = value.split("tokens=", 1)[1].split(", ")
    return [(t, float(share)) for t, _, share in (item.rpartition("=") for item in listed)]


def test_both_scorers_stamp_the_same_reasons(models: tuple[str, str]) -> None:
    plain, packed = models
    full = store.load(plain)
    for data in unseen():
        fast = onemessage.score_message(plain, data, reasons=5)
        slow = onemessage.score_message(packed, data, reasons=5)
        assert [t for t, _ in fast.reasons] == [t for t, _ in slow.reasons]
        assert [s for _, s in fast.reasons] == pytest.approx([s for _, s in slow.reasons], rel=1e-9, abs=1e-12)
        assert pipe.filter_message(plain, data, reasons=5) == pipe.filter_message(packed, data, reasons=5)
        # the strongest of what `inspect --explain` shows, on its scale
        e = full.explain(Tokenizer(full.tokens)(data))
        by_size = sorted((abs(round(c, 2)) for c in e.contributions.tolist()), reverse=True)
        assert [abs(round(s, 2)) for _, s in fast.reasons] == [size for size in by_size if size][:5]


def test_the_header_lists_them_folded_and_readable(models: tuple[str, str]) -> None:
    plain, _ = models
    for data in unseen():
        out, status = pipe.filter_message(plain, data, reasons=4)
        verdict = onemessage.score_message(plain, data, reasons=4)
        [field] = FIELD.findall(out)
        lines = field.splitlines()
        assert lines[0].startswith(b"X-Spamnb: " + verdict.verdict.encode() + b", score=")
        assert all(line.isascii() and len(line) <= 78 for line in lines), field
        assert all(line.startswith(b" ") for line in lines[1:])
        assert [t for t, _ in tokens_of(field)] == [pipe.header_token(t) for t, _ in verdict.reasons]
        assert any(unquote(t, errors="surrogatepass") in {r for r, _ in verdict.reasons} for t, _ in tokens_of(field))
        assert [s for _, s in tokens_of(field)] == [round(s, 2) for _, s in verdict.reasons]
        assert headers.unstamped(out) == headers.unstamped(data) and headers.digest(out) == headers.digest(data)
        assert status == pipe.EXIT[verdict.verdict]


def test_off_by_default_and_only_with_the_pipe(models: tuple[str, str], tmp_path: Path) -> None:
    plain, _ = models
    data = unseen()[0]
    out, _ = pipe.filter_message(plain, data)
    assert b"tokens=" not in out and out == pipe.filter_message(plain, data, reasons=0)[0]
    path = tmp_path / "one.eml"
    path.write_bytes(data)
    done = run_cli("classify", "-m", plain, "--reasons", "3", path)
    assert done.exit_code == 2 and "--reasons goes with --pipe" in done.stderr


def test_the_console_script_takes_reasons(models: tuple[str, str]) -> None:
    plain, _ = models
    data = FOREIGN[1]
    done = run_console("classify", "--pipe", "-m", plain, "--reasons", "3", stdin=data)
    assert done.returncode in (0, 1, 2), done.stderr
    assert done.stdout == pipe.filter_message(plain, data, reasons=3)[0]
    assert len(tokens_of(FIELD.findall(done.stdout)[0])) == 3
    # a bad N: the message passes through unchanged, exit 3
    bad = run_console("classify", "--pipe", "-m", plain, "--reasons", "many", stdin=data)
    assert (bad.returncode, bad.stdout) == (3, data)


@given(st.text(max_size=60))
def test_a_token_is_written_in_plain_ascii(token: str) -> None:
    written = pipe.header_token(token)
    assert written.isascii() and written.isprintable() and not set(written) & set(" ,=\t")
    if len(token) <= pipe.TOKEN_CHARS:
        assert unquote(written, errors="surrogatepass") == token


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.one_of(MESSAGES, st.sampled_from(FOREIGN)), st.text(max_size=30), st.sampled_from([b"\n", b"\r\n"]))
def test_no_message_is_lost_with_reasons(models: tuple[str, str], data: bytes, words: str, newline: bytes) -> None:
    plain, _ = models
    data = data + newline + words.encode("utf-8", "surrogatepass") if data else words.encode("utf-8", "surrogatepass")
    out, err = io.BytesIO(), io.StringIO()
    status = pipe.run(plain, io.BytesIO(data), out, err, reasons=5)
    if not data:
        assert (status, out.getvalue()) == (3, b"")
        return
    assert status in (0, 1, 2) and err.getvalue() == ""
    stamped = out.getvalue()
    assert headers.digest(stamped) == headers.digest(data)
    assert headers.unstamped(stamped).rstrip(b"\r\n") == headers.unstamped(data).rstrip(b"\r\n")
    [field] = [m.group() for m in headers.VERDICT_LINE.finditer(headers.lf_view(headers.split_message(stamped)[1]))]
    assert field.isascii() and all(len(line) <= 998 for line in field.splitlines())
