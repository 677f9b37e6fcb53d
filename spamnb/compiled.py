"""Which modules may run compiled, and SPAMNB_PURE, which runs their Python source instead.

setup.py compiles each of COMPILED from its own .py file (Cython) beside it, and the
word scanner from C; Python imports a built extension before the source.  SPAMNB_PURE=1
runs all of them interpreted, as an install without a compiler does; a comma-separated
list of their last names (`tokens,headers`) only those, which is how `make bench` tells
what each compiled module buys.
"""
from __future__ import annotations

import os
import sys

COMPILED = ("spamnb.text.tokens", "spamnb.mail.message", "spamnb.mail.headers", "spamnb.models.calibration")
SCANNER = "spamnb.text._ctokens"

# `typing` is off the one-message pipe's start-up: names for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from typing import Any


def interpreted() -> frozenset[str]:
    """The modules SPAMNB_PURE asks to run interpreted (or, for the scanner, not at all)."""
    asked = os.environ.get("SPAMNB_PURE", "")
    if not asked:
        return frozenset()
    by_name = {name.rpartition(".")[2]: name for name in (*COMPILED, SCANNER)}
    named = {name.strip() for name in asked.split(",")}
    if named <= by_name.keys():
        return frozenset(by_name[name] for name in named)
    return frozenset(by_name.values())


class SourceFinder:
    """Finds the modules it names as their Python source only, never as a built extension."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(self, name: str, path: Sequence[str] | None, target: object = None) -> ModuleSpec | None:
        if name not in self.names or not path:
            return None
        from importlib.machinery import SOURCE_SUFFIXES, FileFinder, SourceFileLoader

        for folder in path:
            spec = FileFinder(folder, (SourceFileLoader, SOURCE_SUFFIXES)).find_spec(name, target)
            if spec is not None:
                return spec
        return None


def run_source_if_asked() -> None:
    """With SPAMNB_PURE set, have the compiled modules it names imported from their source."""
    names = interpreted() - {SCANNER}  # the tokeniser asks for its scanner itself
    if names and not any(isinstance(finder, SourceFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, SourceFinder(names))


def scanner_function(name: str) -> Any:
    """A function of spamnb/text/_ctokens.c (the word scanner `words`, the tag cutter `tags`,
    a Received field's dotted words `dotted`, a Received run's networks and domains `received_parts`, links' hosts `links` and a link host's tokens `url_host_tokens`, a text's highest code point `highest`, a page's invisible parts' openers `opener`, a header block's fields `fields` (spamnb.mail.message), the token counter `counted`, the blob index `indexed`, the fields' numbers `field_numbers`, a vocabulary's index `token_index` and its look-ups `looked_up`, a header block less named fields `without_fields` (spamnb.mail.headers), an mbox's marked lines `marked_lines` (spamnb.mail.sources), a vocabulary's growth `grown`, a header block's end `blank_line_end` and the verdict's hint `verdict_hinted` (spamnb.mail.headers), the line ends' bytes `line_end_bytes` (spamnb.mail.message)), or None: where it was not built, or with SPAMNB_PURE set,
    the pure-Python path beside its use, which gives the same results."""
    if SCANNER in interpreted():
        return None
    try:
        from spamnb.text import _ctokens
    except ImportError:
        return None
    return getattr(_ctokens, name)


def is_compiled(module: object) -> bool:
    """Whether a module runs from a built extension rather than its Python source."""
    return not str(getattr(module, "__file__", "")).endswith((".py", ".pyc"))
