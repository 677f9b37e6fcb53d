"""A request's answer: the message scored as `classify --pipe` scores it, the verdict put as spamd puts it.

spamnb's verdict maps onto SpamAssassin's yes/no: `Spam: True` (and `X-Spam-Flag:
YES`) exactly when the verdict is spam, so `spamc -c`'s exit status 1 means what it
means with SpamAssassin.  The score and threshold are SpamAssassin-style points,
`headers.SA_POINTS` times P(spam) and times the P a spam verdict needs; an unsure
message is not spam to spamc (its `X-Spamnb` header still says unsure).
"""
from __future__ import annotations

import os
from typing import NamedTuple

from spamnb.mail import headers
from spamnb.pipe import filter as pipe_filter
from spamnb.pipe import learnone, onemessage
from spamnb.serve import protocol
from spamnb.serve.resident import Resident

# Tokens a REPORT names (`spamc -R`): the strongest, as `inspect --explain` ranks them.
REPORT_TOKENS = 10


class Settings(NamedTuple):
    """What every request is answered with: the model (None: only per-user ones), the
    folder of per-user models, whether TELL may learn, the cut-offs (spam, ham; None for
    the model's), how many tokens the X-Spamnb header names, and how long a TELL waits
    for the model's lock."""

    model: str | None
    models_dir: str | None = None
    allow_tell: bool = False
    cutoffs: tuple[float | None, float | None] = (None, None)
    reasons: int = 0
    tell_wait: float = 10.0


def model_path(settings: Settings, user: str | None) -> str:
    """The model a request is answered with: `DIR/USER.npz` where there is one, else `--model`."""
    if settings.models_dir and user:
        path = os.path.join(settings.models_dir, f"{user}.npz")  # protocol.USER keeps it inside DIR
        if os.path.exists(path):
            return path
    if settings.model is None:
        raise protocol.ProtocolError(f"no model for user {user or '(none)'}", protocol.EX_NOUSER)
    return settings.model


def check(settings: Settings, resident: Resident) -> None:
    """Open the model and try the cut-offs on it (ModelError, CutoffError), before serving."""
    if settings.model is not None:
        onemessage.scoring_of(resident.get(settings.model)).with_cutoffs(*settings.cutoffs)


def answer(request: protocol.Request, data: bytes, settings: Settings, resident: Resident) -> bytes:
    """The reply to a scanning command or TELL whose message is `data` (whole, decompressed)."""
    if not data:
        raise protocol.ProtocolError("empty message", protocol.EX_DATAERR)
    path = model_path(settings, request.user)
    if request.command == "TELL":
        return tell(request, data, path, settings)
    model = resident.get(path)
    command = request.command
    reasons = REPORT_TOKENS if command.startswith("REPORT") else settings.reasons
    verdict = onemessage.verdict_of(model, data, settings.cutoffs, reasons)
    threshold = verdict.threshold
    is_spam = verdict.verdict == "spam"
    spam = protocol.spam_line(is_spam, headers.SA_POINTS * verdict.score, headers.SA_POINTS * threshold)
    if command == "CHECK":
        return protocol.result_reply(command, spam)
    if command == "SYMBOLS":
        return protocol.result_reply(command, spam, headers.spamassassin_tests(verdict.verdict).encode("ascii"))
    if command in ("REPORT", "REPORT_IFSPAM"):
        body = report(verdict, threshold) if is_spam or command == "REPORT" else b""
        return protocol.result_reply(command, spam, body)
    shown = verdict if settings.reasons else verdict._replace(reasons=())
    out = pipe_filter.stamped(data, shown, headers.spamassassin_fields(verdict.verdict, verdict.score, threshold))
    if command == "HEADERS":
        envelope, head, rest = headers.split_message(out)
        blank = rest[:2] if rest.startswith(b"\r\n") else rest[:1]
        out = envelope + head + blank
    return protocol.result_reply(command, spam, out)


def report(verdict: onemessage.Verdict, threshold: float) -> bytes:
    """REPORT's text (`spamc -R`): the verdict, the points, and the strongest tokens with their shares of the log-odds."""
    points, required = headers.SA_POINTS * verdict.score, headers.SA_POINTS * threshold
    lines = [
        f"spamnb verdict: {verdict.verdict}, P(spam) = {verdict.score:.4f}; spam needs P >= {threshold:.4f}",
        "",
        f"Content analysis details:   ({points:.1f} points, {required:.1f} required)",
        "",
        " share token (its share of ln(P / (1 - P)))",
        " ----- ------------------------------------",
    ]
    lines += [f"{share:+6.2f} {pipe_filter.header_token(token)}" for token, share in verdict.reasons]
    return ("\n".join(lines) + "\n").encode("ascii")


def tell(request: protocol.Request, data: bytes, path: str, settings: Settings) -> bytes:
    """TELL (`spamc -L spam|ham|forget`): learn or forget the message through the model's journal,
    as `spamnb train --spam|--ham [--forget] -` does; DidSet/DidRemove say whether anything changed."""
    if not settings.allow_tell:
        raise protocol.ProtocolError("TELL commands are not enabled (serve --allow-tell)", protocol.EX_UNAVAILABLE)
    if request.remove_local:
        outcome = learnone.learn_data(path, data, None, settings.tell_wait)
        return protocol.tell_reply(False, outcome == "forgotten")
    if request.set_local:
        outcome = learnone.learn_data(path, data, request.message_class, settings.tell_wait)
        return protocol.tell_reply(outcome in ("learnt", "moved"), False)
    return protocol.tell_reply(False, False)  # remote reports: no such thing here
