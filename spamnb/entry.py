"""The `spamnb` console script: `classify --pipe` goes straight to the pipe filter.

A procmail pipe starts spamnb once per message, so its start-up is the cost: the
pipe path never imports click, rich or scipy.  Everything else goes to the click
command line in `spamnb.cli`.
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if "--pipe" in args:
        from spamnb import pipe

        matched, model_path = pipe.parse_args(args)
        if matched:
            sys.exit(pipe.main(model_path))
    from spamnb.cli import main as cli_main

    cli_main()
