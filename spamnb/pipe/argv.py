"""The command line of the console script's fast paths (`classify --pipe`, `train` of single
messages), read without click: importing click is most of what those paths would add
to their start-up.  Only the forms click gives the same meaning are read; for anything
else the full command line takes over, errors and all."""
from __future__ import annotations

# Options click takes before the command (`spamnb -q classify ...`).
GLOBAL_FLAGS = ("--debug", "-q", "--quiet")


def options_of(argv: list[str], command: str, flags: tuple[str, ...], valued: tuple[str, ...]) -> tuple[list[tuple[str, str]], set[str]] | None:
    """`[GLOBAL FLAG]... COMMAND [OPTION]...`: the valued options given, in order, as
    (long name, value) (`-m` is `--model`), and the flags given.

    A valued option is `--name VALUE`, `--name=VALUE`, or for `-m` also `-mVALUE`.  None for
    another command, or for anything but those options (--help, a stray argument).
    """
    args = list(argv)
    while args and args[0] in GLOBAL_FLAGS:
        args.pop(0)
    if not args or args[0] != command:
        return None
    values: list[tuple[str, str]] = []
    given: set[str] = set()
    rest, i = args[1:], 0
    while i < len(rest):
        arg = rest[i]
        name, eq, value = arg.partition("=")
        if arg in flags:
            given.add(arg)
            i += 1
            continue
        if arg in valued and i + 1 < len(rest):
            name, value, i = arg, rest[i + 1], i + 2
        elif eq and name in valued and name.startswith("--"):
            i += 1
        elif arg.startswith("-m") and len(arg) > 2 and "-m" in valued:
            name, value, i = "-m", arg[2:], i + 1
        else:
            return None
        values.append(("--model" if name == "-m" else name, value))
    return values, given
