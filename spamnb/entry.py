"""The `spamnb` console script: `classify --pipe` goes straight to the pipe filter.

A procmail pipe starts spamnb once per message, so its start-up is the cost: the
pipe path never imports click, rich, scipy or numpy, nor does learning a message
from a mail reader (`spamnb.pipe.learnone`).  Everything else goes to the click
command line in `spamnb.cli.commands`.

A pipe invocation must never lose the message: arguments the fast path cannot read
(a typo in a procmail recipe) pass the mail through with exit 3, and so does a
failure to import the filter itself.
"""
from __future__ import annotations

import os
import sys

HELP = ("-h", "--help", "--version")
EXIT_ERROR = 3
EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if "classify" in args and "--pipe" in args and not any(a in HELP for a in args):
        try:
            sys.exit(pipe_main(args))
        except KeyboardInterrupt:  # before the filter's own handlers are in place: not a verdict
            sys.exit(pass_through("spamnb: interrupted before the filter started; message passed through unchanged"))
    # numpy's OpenBLAS starts a thread per core at import, for products spamnb never makes
    # large enough to share; the user's own setting stands.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        if "train" in args and not any(a in HELP for a in args):
            from spamnb.pipe import learnone  # one message into the journal; None: the command line's work

            status = learnone.main(args)
            if status is not None:
                sys.exit(status)
        from spamnb.cli.commands import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        # Ctrl-C before click runs (while importing) or after: the shell's 128 + SIGINT, no traceback.
        print("spamnb: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)


def console() -> None:
    """The console script: `main`, and after a command that ran to its end having closed what
    it opened (`commands.Finished`), the interpreter's exit without its teardown: what the
    exit does first is done here (the main thread's end, the other threads joined, atexit's
    functions run, stdout and stderr flushed), then `os._exit`.  Freeing every object of the
    run and of each module one by one is all that is skipped."""
    try:
        main()
    except SystemExit as done:
        commands = sys.modules.get("spamnb.cli.commands")
        if commands is None or not isinstance(done, commands.Finished):
            raise
        leave(done.code)


def leave(status: int) -> None:
    import atexit
    import os
    import threading

    # What the interpreter's exit calls first: the main thread ends, the other threads are joined.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(status)  # the interpreter's own exit then says what it says of the stream
    os._exit(status)


def pipe_main(args: list[str]) -> int:
    if sys.stdin is None or sys.stdout is None:  # started with fd 0 or 1 closed: no mail to pass on
        if sys.stderr is not None:
            print(f"spamnb: standard {'input' if sys.stdin is None else 'output'} is closed: no message can be filtered", file=sys.stderr)
        return EXIT_ERROR
    try:
        from spamnb.pipe import filter as pipe
    except Exception as err:  # noqa: BLE001 - a broken install still delivers the mail
        return pass_through(f"spamnb: cannot load the filter ({err}); message passed through unchanged")
    options = pipe.parse_options(args)
    if options is not None:
        return pipe.main(*options)
    refuse = (
        "classify --pipe takes no SRC and no option but -m/--model MODEL, --spam-cutoff P, --ham-cutoff P, --exit-zero, "
        f"--reasons N (a whole number, 0 or more), --sa-headers, --tag-subject TEXT (printable ASCII), got {' '.join(args)!r}"
    )
    return pipe.run(None, sys.stdin.buffer, sys.stdout.buffer, sys.stderr, refuse)


def pass_through(reason: str) -> int:
    try:
        while chunk := sys.stdin.buffer.read(1 << 16):
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
    finally:
        print(reason, file=sys.stderr)
    return EXIT_ERROR
