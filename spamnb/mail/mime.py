"""The email package's parser, bounded: for multipart mail, and for a single part whose
Content-Type or Content-Transfer-Encoding the fast reader (message.SinglePart)
leaves to it.  Imported only then: the email package is a large share of the pipe's start-up.
"""
from __future__ import annotations

import email.message
import email.parser
import functools
import itertools
from collections.abc import Iterator
from email.policy import Policy, compat32

from spamnb.mail.mimelimits import MAX_DEPTH, MAX_MESSAGES, capped


class TooManyParts(Exception):
    pass


class BoundedMessage(email.message.Message):
    """A parsed part that counts against a budget, knows its depth and keeps headers short.

    Header look-ups go through an index of the first field of each name: the email
    package lowers every field's name on each `get`, about 5 look-ups a message of 24
    fields.
    The index is rebuilt whenever the field list was replaced or changed length; the
    only in-place change the email package makes (`replace_header`) keeps a field's
    name and position.
    """

    depth = 0
    _indexed: list | None = None
    _indexed_len = 0
    _first: dict[str, int]

    def __init__(self, policy: Policy = compat32, parts: Iterator[int] | None = None) -> None:
        super().__init__(policy)
        if parts is not None and next(parts) > MAX_MESSAGES:
            raise TooManyParts

    def set_raw(self, name: str, value: str) -> None:
        self._headers.append((name, capped(name, value)))

    def first_fields(self) -> dict[str, int]:
        """Where the first field of each (lowered) name is in the field list."""
        fields = self._headers
        if self._indexed is not fields or self._indexed_len != len(fields):
            first: dict[str, int] = {}
            for i, (name, _) in enumerate(fields):
                first.setdefault(name.lower(), i)
            self._first, self._indexed, self._indexed_len = first, fields, len(fields)
        return self._first

    def get(self, name: str, failobj: object = None) -> object:
        i = self.first_fields().get(name.lower())
        if i is None:
            return failobj
        return self.policy.header_fetch_parse(*self._headers[i])

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self.first_fields()

    def attach(self, payload: email.message.Message) -> None:
        if isinstance(payload, BoundedMessage):
            payload.depth = self.depth + 1
        super().attach(payload)

    def get_content_type(self) -> str:
        return "text/plain" if self.depth >= MAX_DEPTH else super().get_content_type()


def parse(text: str) -> email.message.Message:
    """The message as the email package parses it, within MAX_MESSAGES parts (else TooManyParts)."""
    factory = functools.partial(BoundedMessage, parts=itertools.count())
    return email.parser.Parser(factory, policy=compat32).parsestr(text)


def single_part(headers: list[tuple[str, str]], payload: str) -> BoundedMessage:
    """A one-part message of these (capped) fields and payload, as the parser would make it."""
    msg = BoundedMessage()
    msg._headers = headers
    msg.set_payload(payload)
    return msg
