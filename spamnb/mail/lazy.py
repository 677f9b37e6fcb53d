"""Regular expressions compiled when first used."""
from __future__ import annotations

import re

# `typing` is off the one-message pipe's start-up: names for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Lazy:
    """A regular expression compiled when first used.

    Compiling the tokeniser's patterns at import was a tenth of what the one-message
    pipe added to `import numpy`, and most messages use half of them (CJK, the costliest,
    only for text in those scripts).
    """

    METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "split")

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags

    def __reduce__(self) -> tuple[type, tuple[str | bytes, int]]:
        # Sent to a Dask worker with the tokeniser: unpickled by its pattern, since before
        # `pattern` is set __getattr__ would recurse looking for it.
        return Lazy, (self.pattern, self.flags)

    def __getattr__(self, name: str) -> Any:
        # Reached only before the first use: the compiled pattern's methods then sit in
        # this object's __dict__, found as fast as on the pattern itself.
        compiled = re.compile(self.pattern, self.flags)
        for method in self.METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)
