"""A progress bar with messages per second on stderr, only when stderr is a terminal."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


@contextlib.contextmanager
def progress_bar(what: str, quiet: bool = False, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """Yield `advance(n)`; draws nothing when quiet or when stderr is not a terminal.
    `total`: the messages expected, when known (an index's files), else the bar counts up."""
    if quiet or not stderr_is_terminal():
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (
        SpinnerColumn(),
        TextColumn(f"{what}"),
        MofNCompleteColumn(),
        TextColumn("messages"),
        TextColumn("[progress.data.speed]{task.fields[rate]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True, force_terminal=True), transient=True) as progress:
        task = progress.add_task(what, total=total, rate="")

        def advance(n: int) -> None:
            progress.advance(task, n)
            speed = progress.tasks[task].speed
            progress.update(task, rate=f"{speed:,.0f}/s" if speed else "")

        yield advance
