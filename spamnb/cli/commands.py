"""The command line: parse arguments, wire the stages, render.  No logic of its own.

Exit statuses: 0 done; 1 some messages unreadable, a forget refused or a
`--fail-under`/`--fail-over` bar missed; 2 usage error; 3 the model or a source
cannot be used; 130 interrupted (Ctrl-C).
"""
from __future__ import annotations

import contextlib
import functools
import json
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import click

from spamnb import __version__

if TYPE_CHECKING:
    from spamnb.mail.sources import Item
    from spamnb.scale.executor import Mail

F = TypeVar("F", bound=Callable[..., Any])
QUIET_HELP = "No progress bar and no summary line (warnings and errors still print)."
EXIT_PARTIAL = 1
EXIT_USAGE = 2
EXIT_ERROR = 3
EXIT_INTERRUPTED = 130
# A reader of stdout that left (`spamnb classify DIR | head -1`) ends the command quietly,
# with the status a shell reports for `cat` in `cat FILE | head -1`: 128 + SIGPIPE.
EXIT_STDOUT_CLOSED = 141


class StdoutClosed(Exception):
    """The reader of stdout has gone: nothing more to say, to anyone."""


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (poll flags an error on its end)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's capture)
        return False


def end_quietly() -> None:
    """Point stdout at /dev/null (the exit's flush of it would complain) and exit."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
    sys.exit(EXIT_STDOUT_CLOSED)


class Failure(click.ClickException):
    """One-line error with an exit status."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = code

    def show(self, file: Any = None) -> None:
        click.echo(f"spamnb: error: {self.message}", err=True)


def guarded(fn: F) -> F:
    """Turn every failure into one line on stderr (the traceback too with --debug)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from spamnb.mail.sources import SourceError
        from spamnb.models.modelfile import ModelError

        debug = click.get_current_context().find_root().params.get("debug", False)
        try:
            return fn(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except (ModelError, SourceError) as err:
            if debug:
                traceback.print_exc()
            raise Failure(str(err)) from err
        except BrokenPipeError as err:
            if stdout_closed():
                raise StdoutClosed from err
            if debug:
                traceback.print_exc()
            raise Failure(str(err)) from err
        except (ValueError, OSError) as err:
            if debug:
                traceback.print_exc()
            raise Failure(unnamed_write_error(err) or str(err)) from err
        except Exception as err:
            if debug:
                traceback.print_exc()
            raise Failure(f"internal error: {type(err).__name__}: {err} (run with --debug for the traceback)") from err

    return wrapper  # type: ignore[return-value]


def unnamed_write_error(err: BaseException) -> str:
    """A full disk (or quota, or I/O error) that names no file: every file spamnb writes
    (model, journal, lock) is named where it fails, so this was standard output."""
    import errno

    if isinstance(err, OSError) and err.filename is None and err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO):
        return f"cannot write to standard output ({err.strerror}); what was written of it is incomplete"
    return ""


def model_option(required_default: bool = True) -> Callable[[F], F]:
    from spamnb.models.modelfile import default_path

    return click.option(
        "-m",
        "--model",
        "model_path",
        # Not checked here (dir_okay, readable): a usage error (exit 2) would not pass `--pipe`
        # mail through, and a model that cannot be read is exit 3 (store names why).
        type=click.Path(readable=False),
        default=default_path if required_default else None,
        show_default="$SPAMNB_MODEL, else $XDG_DATA_HOME/spamnb/model.npz" if required_default else False,
        help="Model file.",
    )


class Finished(SystemExit):
    """The exit of a command that ran to its end having closed every file, lock, journal and
    pool it opened (`exits_at_once`): the console script (`spamnb.entry.console`) then ends
    the process without the interpreter's teardown, which frees every object one by one.
    `kept`: what the command returned (train's model), held to that end so that it is not
    freed either, an object at a time, as the command returns."""

    def __init__(self, code: int, kept: object = None) -> None:
        super().__init__(code)
        self.kept = kept


def exits_at_once(command: click.Command) -> click.Command:
    """Mark a command as one whose normal end is a `Finished`."""
    command.exits_at_once = True  # type: ignore[attr-defined]
    return command


class OneLineErrors(click.Group):
    """A group whose usage errors are one `spamnb: error:` line, like every other error."""

    ran: click.Command | None = None

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        self.ran = command
        return name, command, rest

    def main(self, *args: Any, **kwargs: Any) -> Any:
        import warnings

        # A library's warning (numpy's RuntimeWarning on a model of one class) is never
        # the user's business: what matters is said in spamnb's own one-line warnings.
        warnings.simplefilter("ignore")
        kwargs["standalone_mode"] = False
        try:
            status = super().main(*args, **kwargs)
            sys.stdout.flush()  # here, not at exit: a reader gone is then still ours to handle
            # A large write to a pipe whose reader left can come back short without an error.
            if stdout_closed():
                end_quietly()
        except StdoutClosed:
            end_quietly()
        except BrokenPipeError:
            if not stdout_closed():
                raise
            end_quietly()
        except click.UsageError as err:
            where = f"{err.ctx.command_path}: " if err.ctx is not None else ""
            click.echo(f"spamnb: error: {where}{err.format_message()} (see --help)", err=True)
            sys.exit(err.exit_code)
        except click.ClickException as err:
            err.show()
            sys.exit(err.exit_code)
        except click.Abort:
            # Ctrl-C (click turns KeyboardInterrupt into Abort): the shell's 128 + SIGINT.
            click.echo("spamnb: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        code = status if isinstance(status, int) else 0
        if getattr(self.ran, "exits_at_once", False):
            raise Finished(code, status)
        sys.exit(code)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Bare `spamnb` shows the help, as `spamnb --help` does (not as an error).
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(0)
        return super().parse_args(ctx, args)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="spamnb")
@click.option("--debug", is_flag=True, help="Show the traceback of an error.")
@click.option("-q", "--quiet", is_flag=True, help=QUIET_HELP)
@click.pass_context
def cli(ctx: click.Context, debug: bool, quiet: bool) -> None:
    """Naive Bayes spam filter for mbox, maildir and message files."""
    ctx.obj = {"quiet": quiet}


def set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(dict)["quiet"] = True


def quiet_option(fn: F) -> F:
    """`-q` after the subcommand too (`spamnb train -q ...`), as before it."""
    return click.option("-q", "--quiet", is_flag=True, expose_value=False, is_eager=True, callback=set_quiet, help=QUIET_HELP)(fn)


def cutoff_options(fn: F) -> F:
    # Plain floats: the one check of a pair of cut-offs is the Scoring's (`with_cutoffs`).
    fn = click.option(
        "--ham-cutoff", type=float, default=None, metavar="P",
        help="Ham when P(spam) <= P; between the cut-offs, unsure. [default: the model's, else 0.1]",
    )(fn)
    fn = click.option(
        "--spam-cutoff", type=float, default=None, metavar="P",
        help="Spam when P(spam) >= P, as given: the model's ham-loss floor (see inspect) holds back only its default cut-off. [default: the model's, else 0.95]",
    )(fn)
    return fn


def with_cutoffs(scoring: Any, spam_cutoff: float | None, ham_cutoff: float | None) -> Any:
    """`scoring` with the cut-offs given (Scoring.with_cutoffs); bad ones are a usage error."""
    from spamnb.models.scoring import CutoffError

    try:
        return scoring.with_cutoffs(spam_cutoff, ham_cutoff)
    except CutoffError as err:
        raise click.UsageError(str(err)) from None


def token_options(fn: F) -> F:
    # The defaults shown are read from TokenSettings, so the help cannot drift from them.
    from spamnb.text.tokens import TokenSettings

    default = TokenSettings()
    fn = click.option("--ngram", type=click.IntRange(1, 5), default=None, help=f"Word n-gram order (new models only). [default: {default.ngram}]")(fn)
    fn = click.option(
        "--stopwords/--no-stopwords", default=None,
        help=f"Drop English stopwords (new models only). [default: {'on' if default.stopwords else 'off'}]",
    )(fn)
    return fn


class EventChoice(click.Choice):
    """The event models `spamnb.bayes.events` registers, read when click needs them (help or a
    value to check): importing them imports numpy, which no other option needs."""

    def __init__(self) -> None:
        super().__init__([])

    @property  # type: ignore[override]
    def choices(self) -> list[str]:
        from spamnb.bayes.events import EVENT_MODELS

        return list(EVENT_MODELS)

    @choices.setter
    def choices(self, _: object) -> None:
        pass  # click.Choice sets it; the registry is the truth


def scoring_options(fn: F) -> F:
    fn = click.option(
        "--event",
        type=EventChoice(),
        default=None,
        help="Scoring: Robinson-Fisher combining, or a naive Bayes event model (spamnb.bayes.events registers them). [default: fisher]",
    )(fn)
    fn = click.option("--alpha", type=float, default=None, help="Smoothing: Lidstone alpha, or Robinson s for fisher. [default: 0.01 for each]")(fn)
    fn = click.option(
        "--tf", type=click.Choice(["presence", "log"]), default=None,
        help="Multinomial and complement: each learnt and scored message's term frequency, presence or log(1 + count). [default: presence]",
    )(fn)
    fn = click.option(
        "--idf/--no-idf", default=None,
        help="Multinomial and complement: weight each token by its inverse document frequency. [default: no]",
    )(fn)
    fn = click.option(
        "--length-norm", type=click.Choice(["none", "l2"]), default=None,
        help="Multinomial and complement: divide each message's term frequencies by their L2 norm. [default: none]",
    )(fn)
    fn = click.option(
        "--meta",
        type=click.Choice(["none", "gaussian", "gda"]),
        default=None,
        help="Also score numeric features (size, header fields, recipients, links, shares of HTML and capitals) "
        "as per-class Gaussians: independent (gaussian) or with one shared covariance (gda). [default: none]",
    )(fn)
    return fn


def pruning_options(fn: F) -> F:
    fn = click.option(
        "--max-tokens", type=click.IntRange(0), default=0, metavar="N",
        help="Keep at most the N most frequent tokens (bounds the model's growth). [default: 0, no cap]",
    )(fn)
    fn = click.option(
        "--min-count", type=click.IntRange(0), default=0, metavar="N",
        help="Drop tokens seen fewer than N times in all. [default: 0, keep all]",
    )(fn)
    return fn


def jobs_option(fn: F) -> F:
    from spamnb.run.parallel import available_cores

    return click.option(
        "--jobs",
        type=click.IntRange(1),
        default=available_cores,
        show_default="the available cores",
        help="Processes that tokenise in parallel (output order stays the input order).",
    )(fn)


def dask_option(fn: F) -> F:
    return click.option(
        "--dask", "dask_address", metavar="ADDRESS", default=None,
        help="Run on a Dask cluster: a scheduler's tcp://HOST:PORT, or `local` for a LocalCluster of --jobs "
        "worker processes.  The workers read the mail (paths must be the same there; no stdin).  "
        "Needs pip install 'spamnb[dask]'.",
    )(fn)


def labelled_options(fn: F) -> F:
    fn = click.option("--index", type=click.Path(), default=None, help="TREC-style index: lines `spam PATH` / `ham PATH`.")(fn)
    # type=click.Path: shell completion offers file names (the shell's own completion).
    fn = click.option("--ham", multiple=True, type=click.Path(), metavar="SRC", help="Ham: mbox, maildir, folder, file, imaps://USER@HOST/FOLDER or -.")(fn)
    fn = click.option("--spam", multiple=True, type=click.Path(), metavar="SRC", help="Spam: mbox, maildir, folder, file, imaps://USER@HOST/FOLDER or -.")(fn)
    return fn


def imap_options(fn: F) -> F:
    """How to log in to IMAP folders given as SRC; the command receives them as one
    `access` (None: ~/.netrc and the system's CAs)."""

    @functools.wraps(fn)
    def with_access(*args: Any, **kwargs: Any) -> Any:
        command, ca_file = kwargs.pop("password_command"), kwargs.pop("ca_file")
        access = None
        if command is not None or ca_file is not None:
            from spamnb.mail.imap import Access

            access = Access(command, ca_file)
        return fn(*args, access=access, **kwargs)

    with_ca = click.option(
        "--ca-file", type=click.Path(dir_okay=False), default=None, metavar="PEM",
        help="For imaps:// and imap:// SRC: trust this CA's certificates (a private CA) instead of the system's.",
    )(with_access)
    return click.option(
        "--password-command", default=None, metavar="COMMAND",
        help="For imaps:// and imap:// SRC: a shell command whose first line of output is the password (else ~/.netrc).",
    )(with_ca)  # type: ignore[return-value]


class ModelOptions(NamedTuple):
    """The tokeniser, scoring, cut-off and pruning options that `train` and `eval` share."""

    ngram: int | None
    stopwords: bool | None
    event: str | None
    alpha: float | None
    meta: str | None
    tf: str | None
    idf: bool | None
    length_norm: str | None
    spam_cutoff: float | None
    ham_cutoff: float | None
    min_count: int
    max_tokens: int

    def pruning(self) -> Any:
        from spamnb.bayes.nb import Pruning

        return Pruning(self.min_count, self.max_tokens)


def model_options(fn: F) -> F:
    """The `ModelOptions` options; the command receives them as one `options`."""

    @functools.wraps(fn)
    def with_options(*args: Any, **kwargs: Any) -> Any:
        options = ModelOptions(*(kwargs.pop(name) for name in ModelOptions._fields))
        return fn(*args, options=options, **kwargs)

    return token_options(scoring_options(cutoff_options(pruning_options(with_options))))  # type: ignore[return-value]


def settings_from(options: ModelOptions, base: Any = None) -> tuple[Any, Any]:
    """Tokeniser and scoring settings (cut-offs included): the options given, over a model's (or the defaults)."""
    from spamnb.models.model import Scoring, summed_with
    from spamnb.text.tokens import TokenSettings

    tokens = base.tokens if base is not None else TokenSettings()
    scoring = base.scoring if base is not None else Scoring()
    token_changes = {k: v for k, v in {"ngram": options.ngram, "stopwords": options.stopwords}.items() if v is not None}
    asked = {"event": options.event, "alpha": options.alpha, "tf": options.tf, "idf": options.idf, "length_norm": options.length_norm, "meta": options.meta}
    scoring_changes = {k: v for k, v in asked.items() if v is not None}
    weighting = scoring._replace(**scoring_changes).weighting()
    if base is not None:
        now = summed_with(tokens.replace(**token_changes), scoring._replace(**scoring_changes))
        for trained, asked_for in zip(summed_with(tokens, scoring), now, strict=True):
            if trained != asked_for:
                raise Failure(f"the model was trained with {trained}; this cannot change now (train a new model instead)", code=EXIT_USAGE)
    tokens = tokens.replace(**token_changes)
    try:
        changed = scoring.replace(**scoring_changes)
    except ValueError as err:
        if not weighting:
            raise
        raise Failure(str(err), code=EXIT_USAGE) from err
    if base is not None and (changed.event, changed.event_model().alpha) != (scoring.event, scoring.event_model().alpha):
        # Its calibration was fitted to the other scoring's log-odds, and refitting it needs
        # all the mail learnt, which the model does not keep.
        raise Failure(
            f"the model was trained with --event {scoring.event} --alpha {scoring.event_model().alpha:g}; "
            "its calibration fits only those, so they cannot change now (train a new model instead)",
            code=EXIT_USAGE,
        )
    return tokens, with_cutoffs(changed, options.spam_cutoff, options.ham_cutoff)


def labelled_mail(
    spam: tuple[str, ...],
    ham: tuple[str, ...],
    index: str | None,
    screen: Callable[[Iterable[Item]], Iterable[Item]],
    on_empty: Callable[[str], None],
    access: Any,
) -> Mail:
    """The labelled mail a command names (`executor.Mail`): read through `screen`, or located for a cluster's workers."""
    from spamnb.mail import sources
    from spamnb.scale import executor

    def read(max_bytes: int) -> Iterable[Item]:
        return screen(sources.read_labelled(spam, ham, index, max_bytes, on_empty=on_empty, access=access))

    return executor.Mail((*spam, *ham), read, lambda: sources.locate_labelled(spam, ham, index))


def need_labelled(spam: tuple[str, ...], ham: tuple[str, ...], index: str | None) -> None:
    import os

    if not spam and not ham and index is None:
        raise click.UsageError("give labelled mail with --spam, --ham or --index")
    if list(spam).count("-") + list(ham).count("-") > 1:
        raise click.UsageError("stdin (-) can be read only once")
    # `--ham ~/Mail --spam ~/Mail/Spam`: the spam would be learnt as spam, then moved to ham.
    for outer, outer_name, inner, inner_name in ((ham, "--ham", spam, "--spam"), (spam, "--spam", ham, "--ham")):
        for a in outer:
            for b in inner:
                if "-" in (a, b):
                    continue
                ra, rb = os.path.realpath(a), os.path.realpath(b)
                if ra == rb or rb.startswith(ra.rstrip(os.sep) + os.sep):
                    raise click.UsageError(f"{outer_name} {a} holds {inner_name} {b}: its mail would be learnt as both spam and ham")


def warn(message: str) -> None:
    """One line on stderr; printed with -q too."""
    click.echo(f"spamnb: warning: {message}", err=True)


def warn_empty(src: str) -> None:
    warn(f"{src}: no mail in it")


def not_mail_skipped(message: Any) -> Any:
    from spamnb.mail.sources import NOT_LEARNT, Problem

    return Problem(message.id, NOT_LEARNT, message.label)


def not_mail_learnt(message: Any) -> Any:
    from spamnb.mail.sources import NOT_MAIL

    warn(f"{message.id}: {NOT_MAIL}: learnt as it is (--force)")
    return message


def not_mail_scored(message: Any) -> Any:
    from spamnb.mail.sources import NOT_MAIL

    warn(f"{message.id}: {NOT_MAIL}: scored as it is")
    return message


def index_total(spam: tuple[str, ...], ham: tuple[str, ...], index: str | None) -> int | None:
    """The messages a progress bar expects: an index's files, when it is the only source."""
    from spamnb.mail.sources import index_length

    return index_length(index) if index is not None and not spam and not ham else None


def notice(text: str) -> None:
    click.echo(f"spamnb: {text}", err=True)


def report_problems(problems: Iterable[Any]) -> int:
    count = 0
    for p in problems:
        click.echo(f"spamnb: {p.id}: {p.reason}", err=True)
        count += 1
    return count


@exits_at_once
@cli.command(epilog="\b\nExamples:\n  spamnb train --spam ~/Mail/Spam --ham ~/Mail/INBOX/cur\n  spamnb train --dry-run --ham ~/Mail/Spam/cur/1700000000.M1P2.host\n  spamnb train --forget --spam -  < message.eml\n  spamnb train -m new.npz --spam-cutoff 0.9 --index corpus/index\n\n\b\nExit status:\n  0    done\n  1    some messages unreadable or a forget refused\n  2    usage error\n  3    the model or a source cannot be used\n  130  interrupted (Ctrl-C)")
@model_option()
@labelled_options
@click.option("--forget", is_flag=True, help="Undo the learning of these messages.")
@click.option("--dry-run", is_flag=True, help="Say what would be learnt, moved and forgotten; change nothing.")
@click.option("--force", is_flag=True, help="Learn files with no header block too (not mail: skipped without it, exit 1).")
@click.option(
    "--wait", type=click.FloatRange(0), default=None, metavar="SECONDS",
    help="Give up (exit 3) when another learner holds the model's lock this long. [default: wait as long as it takes, saying so after 2 s]",
)
@imap_options
@model_options
@jobs_option
@dask_option
@quiet_option
@click.pass_context
@guarded
def train(
    ctx: click.Context,
    model_path: str,
    spam: tuple[str, ...],
    ham: tuple[str, ...],
    index: str | None,
    forget: bool,
    dry_run: bool,
    force: bool,
    wait: float | None,
    options: ModelOptions,
    jobs: int,
    dask_address: str | None,
    access: Any,
) -> Any:
    """Learn labelled mail into MODEL (created when missing).

    --min-count and --max-tokens prune the model after learning; pruned counts are
    gone (a later train adds up its changes, then sets counts below zero to zero).
    """
    import os

    from spamnb.cli.progress import progress_bar
    from spamnb.mail import sources
    from spamnb.models import lock, store
    from spamnb.scale import executor

    need_labelled(spam, ham, index)
    screen = not_mail_learnt if force else not_mail_skipped
    mail = labelled_mail(spam, ham, index, lambda items: sources.screened(items, screen), warn_empty, access)
    where = executor.choose(dask_address, jobs, mail)
    if not os.path.exists(model_path):
        settings_from(options)  # a usage error first: no lock file is left for a model never made
    # A dry run saves nothing, so it takes no lock (and makes no lock file beside a new model).
    with contextlib.nullcontext() if dry_run else lock.locked(model_path, wait, notice):
        if os.path.exists(model_path):
            model = store.load(model_path)
            # The cut-offs given are stored in the model: every later classify and --pipe uses them.
            model.tokens, model.scoring = settings_from(options, model)
        else:
            if forget:
                raise Failure(f"{model_path}: no such model file; there is nothing to forget")
            model = store.empty_model(*settings_from(options))
        # The save's arrays are made while the calibration's folds are scored, unless nothing
        # is saved or a prune will change them.
        prepared = None if dry_run or options.pruning() else store.Prepared(model)
        with progress_bar("learning", ctx.obj["quiet"], index_total(spam, ham, index)) as advance, where.started(mail) as run:
            result = run.learn(model, forget, advance, prepared)
        pruned = model.prune(options.pruning())
        if not dry_run:
            store.save(model, model_path, prepared)
    bad = report_problems(result.problems)
    for message_id in result.never_learnt:
        click.echo(f"spamnb: {message_id}: never learnt, nothing to forget", err=True)
    if dry_run:
        done = f"would forget {result.forgotten}" if forget else f"would learn {result.learnt}, move {result.moved}"
        if pruned:
            done += f", prune {pruned} tokens"
        holds = "would hold"
    else:
        done = f"forgot {result.forgotten}" if forget else f"learnt {result.learnt}, moved {result.moved}"
        if pruned:
            done += f", pruned {pruned} tokens"
        holds = "model holds"
    if not ctx.obj["quiet"] or bad or result.never_learnt or dry_run:  # quiet unless something needs a look
        click.echo(
            f"{model_path}: {done}, already known {result.already}; "
            f"{holds} {model.counts.docs[1]} spam and {model.counts.docs[0]} ham" + ("; dry run: nothing saved" if dry_run else ""),
            err=True,
        )
    asked = {"spam": bool(spam) or index is not None, "ham": bool(ham) or index is not None}
    for cls, name in ((1, "spam"), (0, "ham")):
        if asked[name] and not model.counts.docs[cls] and not dry_run and not forget:
            warn(f"{model_path} holds no {name} yet: classify needs mail of both classes")
    if bad or result.never_learnt:
        ctx.exit(EXIT_PARTIAL)
    return model  # kept to the process's end (Finished)


@exits_at_once
@cli.command(epilog="\b\nExamples:\n  spamnb classify ~/Mail/INBOX/new\n  spamnb classify --json ~/Mail/INBOX/new > verdicts.jsonl\n  spamnb classify --spam-cutoff 0.8 archive.mbox\n  spamnb classify --pipe --exit-zero < message.eml\n\n\b\nExit status:\n  0    done\n  1    some messages unreadable\n  2    usage error\n  3    the model or a source cannot be used\n  130  interrupted (Ctrl-C)\n\n\b\nWith --pipe:\n  0    spam (any verdict with --exit-zero)\n  1    ham\n  2    unsure\n  3    error: the message passed through unchanged")
@model_option()
@click.argument("sources", nargs=-1, type=click.Path(), metavar="[SRC]...")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per message.")
@click.option("--pipe", is_flag=True, help="Filter one message from stdin to stdout with an X-Spamnb header; exit 0 spam, 1 ham, 2 unsure, 3 error.")
@click.option("--exit-zero", is_flag=True, help="With --pipe: exit 0 whatever the verdict (3 still on an error), for procmail's `:0 fw`.")
@click.option(
    "--reasons",
    type=click.IntRange(0),
    default=0,
    metavar="N",
    help="With --pipe: name the N strongest tokens in the header, each with its share of ln(P / (1 - P)) as inspect --explain shows it (0: none).",
)
@click.option(
    "--sa-headers", is_flag=True,
    help="With --pipe: SpamAssassin's X-Spam-Flag (spam only), X-Spam-Level and X-Spam-Status beside X-Spamnb, for filters written for it.",
)
@click.option("--tag-subject", metavar="TEXT", default=None, help="With --pipe: put TEXT (printable ASCII) before a spam's Subject, e.g. '[SPAM] '.")
@imap_options
@cutoff_options
@jobs_option
@dask_option
@quiet_option
@click.pass_context
def classify(
    ctx: click.Context,
    model_path: str,
    sources: tuple[str, ...],
    as_json: bool,
    pipe: bool,
    exit_zero: bool,
    reasons: int,
    sa_headers: bool,
    tag_subject: str | None,
    spam_cutoff: float | None,
    ham_cutoff: float | None,
    jobs: int,
    dask_address: str | None,
    access: Any,
) -> None:
    """Score messages (stdin when no SRC is given).

    --spam-cutoff and --ham-cutoff apply to this run only (`train` stores them).
    """
    if pipe:
        from spamnb.pipe import filter as pipe_filter

        # Even a usage error passes the message through: the caller may be procmail.
        refuse = "--pipe reads one message from stdin and takes no SRC" if sources else ""
        refuse = refuse or ("--pipe filters one message here and does not go with --dask" if dask_address else "")
        refuse = refuse or (pipe_filter.tag_problem(tag_subject) if tag_subject is not None else "")
        cutoffs = (spam_cutoff, ham_cutoff)
        markup = pipe_filter.Markup(sa_headers, tag_subject or "")
        ctx.exit(pipe_filter.run(model_path, sys.stdin.buffer, sys.stdout.buffer, sys.stderr, refuse, cutoffs, exit_zero, reasons, markup))
    for name, given in (("--exit-zero", exit_zero), ("--reasons", reasons), ("--sa-headers", sa_headers), ("--tag-subject", tag_subject is not None)):
        if given:
            raise click.UsageError(f"{name} goes with --pipe")
    classify_batch(ctx, model_path, sources or ("-",), as_json, jobs, (spam_cutoff, ham_cutoff), dask_address, access)


@guarded
def classify_batch(
    ctx: click.Context,
    model_path: str,
    sources: tuple[str, ...],
    as_json: bool,
    jobs: int,
    cutoffs: tuple[float | None, float | None],
    dask_address: str | None = None,
    access: Any = None,
) -> None:
    from spamnb.cli import report
    from spamnb.cli.progress import progress_bar
    from spamnb.mail import sources as src
    from spamnb.mail.sources import Problem
    from spamnb.models import store
    from spamnb.scale import executor

    to_terminal = report.stdout_is_terminal() and not as_json
    heads: dict[str, tuple[str, str]] = {}  # on a terminal, without --dask (the workers read the mail)

    def read(max_bytes: int) -> Iterable[Item]:
        items = src.screened(src.read_all(sources, max_bytes, on_empty=warn_empty, access=access), not_mail_scored)
        return report.noting_heads(items, heads) if to_terminal else items

    mail = executor.Mail(sources, read, lambda: src.locate_all(sources))
    where = executor.choose(dask_address, jobs, mail)
    model = store.load(model_path)
    model.scoring = with_cutoffs(model.scoring, *cutoffs)
    rows = []
    bad = 0
    stdout = sys.stdout  # the progress bar, on a terminal, stands in for sys.stdout
    with progress_bar("classifying", ctx.obj["quiet"]) as advance, where.started(mail) as run, report.lines_in_blocks(stdout) as write:
        for result in run.classify(model, advance):
            if isinstance(result, Problem):
                bad += report_problems([result])
            elif as_json:
                write(report.scored_json(result) + "\n")
            elif to_terminal:
                rows.append(result)
            else:
                write(report.scored_tsv(result) + "\n")
    if rows:
        out = report.console()
        out.print(report.scored_table(rows, heads, out.width))
        if not ctx.obj["quiet"]:
            out.print(report.verdict_counts(rows))
    if bad:
        ctx.exit(EXIT_PARTIAL)


@cli.command(name="eval", epilog="\b\nExamples:\n  spamnb eval --index corpus/index --folds 5\n  spamnb eval --spam ~/Mail/Spam --ham ~/Mail/INBOX/cur --json\n  spamnb eval -m model.npz --index corpus/index --fail-under auc=0.99 --fail-over false_positive_rate=0.001\n\n\b\nExit status:\n  0    done\n  1    some messages unreadable or a --fail-under/--fail-over bar missed\n  2    usage error\n  3    the model or a source cannot be used\n  130  interrupted (Ctrl-C)")
@click.option("-m", "--model", "model_path", type=click.Path(readable=False), default=None, help="Evaluate this model instead of cross-validating.")
@labelled_options
@click.option("--folds", type=click.IntRange(2), default=None, metavar="K", help="Cross-validation folds, 2 or more. [default: 5]")
@click.option(
    "--train-size", type=click.IntRange(2), default=None, metavar="N",
    help="Each fold learns only N of the other folds' messages (classes in their shares): a new user's first N.",
)
@click.option("--online", is_flag=True, help="TREC's online protocol: each message in the order given scored by the model so far, then learnt.")
@click.option("--train-on-error", is_flag=True, help="With --online: learn only the messages it got wrong or was unsure of.")
@click.option(
    "--order", type=click.Choice(["given", "date"]), default=None,
    help="With --online: the messages in the order given, or by their Date: headers (undated last, ties by path), as they arrived. [default: given]",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object with every metric.")
@click.option("--fail-under", "bars", multiple=True, metavar="METRIC=VALUE", help="Exit 1 when METRIC is below VALUE (repeatable).")
@click.option(
    "--fail-over", "ceilings", multiple=True, metavar="METRIC=VALUE",
    help="Exit 1 when METRIC is above VALUE, for the lower-is-better ones such as false_positive_rate (repeatable).",
)
@imap_options
@model_options
@jobs_option
@dask_option
@quiet_option
@click.pass_context
@guarded
def evaluate(
    ctx: click.Context,
    model_path: str | None,
    spam: tuple[str, ...],
    ham: tuple[str, ...],
    index: str | None,
    folds: int | None,
    train_size: int | None,
    online: bool,
    train_on_error: bool,
    order: str | None,
    as_json: bool,
    bars: tuple[str, ...],
    ceilings: tuple[str, ...],
    options: ModelOptions,
    jobs: int,
    dask_address: str | None,
    access: Any,
) -> None:
    """Measure accuracy: k-fold cross-validation, or a trained model (-m) against labelled mail.

    Its tables are its output (--json: one object), on stdout; -q turns off the
    progress bar only.
    """
    import numpy as np

    from spamnb.cli import report
    from spamnb.cli.progress import progress_bar
    from spamnb.mail.sources import Problem
    from spamnb.models import store
    from spamnb.run import classifier, metrics
    from spamnb.scale import executor

    need_labelled(spam, ham, index)
    empty: list[str] = []  # sources with no mail: a warning, or part of the error when there is none at all
    try:
        parsed_bars = [metrics.parse_bar(b) for b in bars]
        parsed_ceilings = [metrics.parse_bar(c, "--fail-over") for c in ceilings]
    except ValueError as err:
        raise click.UsageError(str(err)) from err
    if (train_on_error or order) and not online:
        raise click.UsageError(f"{'--train-on-error' if train_on_error else '--order'} goes with --online")
    if online and dask_address is not None:
        raise click.UsageError("--online scores and learns one message after the other; it does not go with --dask")
    if model_path is not None and not online:
        if folds is not None or train_size is not None:
            raise click.UsageError("--folds and --train-size cross-validate; they do not go with -m")
        if options.pruning():
            raise click.UsageError("--min-count/--max-tokens prune while cross-validating; prune a model with `train`")
    learnt = None
    mail = labelled_mail(spam, ham, index, lambda items: items, empty.append, access)
    with progress_bar("evaluating", ctx.obj["quiet"], index_total(spam, ham, index)) as advance, contextlib.ExitStack() as stack:
        run = stack.enter_context(executor.choose(dask_address, jobs, mail).started(mail))
        if online:
            if folds is not None or train_size is not None or options.pruning():
                raise click.UsageError("--online learns every message in turn; --folds, --train-size and pruning do not go with it")
            from spamnb.run import online as online_eval

            tokens, scoring = settings_from(options, store.load(model_path) if model_path else None)
            items = mail.read(tokens.max_bytes)
            if order == "date":
                from spamnb.mail import arrival

                items = iter(arrival.by_date(items))
            scored, problems, learnt = online_eval.evaluate(items, model_path, tokens, scoring, train_on_error, progress=advance, jobs=jobs)
        elif model_path is not None:
            model = store.load(model_path)
            model.tokens, model.scoring = settings_from(options, model)
            scoring = model.scoring
            results = list(run.classify(model, advance))
            scored = [r for r in results if not isinstance(r, Problem)]
            problems = [r for r in results if isinstance(r, Problem)]
        else:
            tokens, scoring = settings_from(options)
            data = run.tokenise_labelled(tokens, advance, numeric=scoring.meta != "none")
            scored, problems = classifier.folds_scored(data, folds or 5, scoring, pruning=options.pruning(), train_size=train_size)
    bad = report_problems(problems)
    if not scored:
        raise Failure("no messages to evaluate" + "".join(f"; {src}: no mail in it" for src in empty))
    for src in empty:
        warn_empty(src)
    labels = [s.label for s in scored]
    odds = np.array([s.log_odds for s in scored])
    probs = np.array([s.score for s in scored])
    result = metrics.evaluate(labels, odds, probs, [s.verdict for s in scored])
    failures = metrics.failed_bars(result, parsed_bars, parsed_ceilings)
    spam_sweep = metrics.threshold_sweep(labels, probs, metrics.with_cutoff(metrics.SPAM_CUTOFFS, scoring.spam_cutoff))
    ham_sweep = metrics.ham_sweep(labels, probs, metrics.with_cutoff(metrics.HAM_CUTOFFS, scoring.ham_cutoff))
    floored = sum(s.floor is not None for s in scored)
    if as_json:
        found = report.eval_json(result, scoring, spam_sweep, ham_sweep, floored)
        if learnt is not None:
            found["online"] = {"learnt": learnt, "train_on_error": train_on_error, "order": order or "given", "running_error": online_eval.running_errors(scored)}
        click.echo(json.dumps(found))
    else:
        out = report.console()
        for table in report.eval_tables(result, spam_sweep, ham_sweep, scoring, floored):
            out.print(table)
            out.print()
        out.print(report.score_histogram(labels, odds))
        if learnt is not None:
            rates = online_eval.running_errors(scored)
            out.print(f"online: {len(scored)} messages in {'Date: order' if order == 'date' else 'order'}, {learnt} learnt{' (on error)' if train_on_error else ''}; lam% {result.lam_percent:.3f}")
            out.print(f"error rate along the stream ({len(rates)} stretches): {online_eval.sparkline(rates)} {rates[0]:.1%} -> {rates[-1]:.1%}")
    for line in failures:
        click.echo(f"spamnb: fail: {line}", err=True)
    if failures or bad:
        ctx.exit(EXIT_PARTIAL)


@cli.command(epilog="\b\nExamples:\n  spamnb merge -m all.npz laptop.npz server.npz\n  spamnb merge -m all.npz other.npz --messages ~/Mail/Spam --messages ~/Mail/INBOX/cur\n\n\b\nExit status:\n  0    done\n  1    some messages unreadable\n  2    usage error\n  3    the model or a source cannot be used\n  130  interrupted (Ctrl-C)")
@model_option()
@click.argument("others", nargs=-1, required=True, type=click.Path(), metavar="OTHER_MODEL...")
@click.option("--prefer", type=click.Choice(["spam", "ham"]), default=None, help="The class to keep for a message learnt as spam in one model and ham in another.")
@click.option("--messages", multiple=True, type=click.Path(), metavar="SRC", help="Mail holding the messages learnt in more than one model, so that each counts once.")
@jobs_option
@quiet_option
@click.pass_context
@guarded
def merge(ctx: click.Context, model_path: str, others: tuple[str, ...], prefer: str | None, messages: tuple[str, ...], jobs: int) -> None:
    """Add the counts of each OTHER_MODEL into MODEL (created when missing).

    A message learnt in several models counts once: give its mail with --messages
    (the model files keep only its digest, so its counts must be read again).
    """
    import os

    from spamnb.mail import sources
    from spamnb.models import lock, store
    from spamnb.run import classifier
    from spamnb.run import merge as merging

    names = [model_path, *others]
    real = [os.path.realpath(p) for p in names]
    if len(set(real)) < len(real):
        raise click.UsageError("a model file is named twice; each can be merged once")
    parts = [store.load(p) for p in others]
    with lock.locked(model_path, notice=notice):
        if os.path.exists(model_path):
            target = store.load(model_path, growable=True)
        else:
            target = store.empty_model(parts[0].tokens, parts[0].scoring)
        items = sources.read_all(messages, target.tokens.max_bytes) if messages else None
        side = None if prefer is None else classifier.LABEL_CLASS[prefer]
        merged, result = merging.merge(names, [target, *parts], prefer=side, messages=items, jobs=jobs)
        store.save(merged, model_path)
    unreadable = report_problems(result.problems)
    if not ctx.obj["quiet"]:
        say_merged(model_path, merged, result, len(others), prefer)
    if unreadable:  # as train: the merge is saved, and the exit status says some mail was not read
        ctx.exit(EXIT_PARTIAL)


def say_merged(model_path: str, merged: Any, result: Any, others: int, prefer: str | None) -> None:
    done = f"added {result.added} messages from {others} models"
    if result.counted_once:
        done += f", {result.counted_once} learnt in more than one counted once"
    if result.resolved:
        done += f" ({result.resolved} kept as {prefer})"
    click.echo(
        f"{model_path}: {done}; calibration the mean of {result.calibrations} models'; "
        f"model holds {merged.counts.docs[1]} spam and {merged.counts.docs[0]} ham",
        err=True,
    )


@cli.command(epilog="\b\nExamples:\n  spamnb inspect --top 10\n  spamnb inspect --explain message.eml --top 5\n  spamnb inspect --json\n\n\b\nExit status:\n  0    done\n  1    the message to explain is unreadable\n  2    usage error\n  3    the model or a source cannot be used\n  130  interrupted (Ctrl-C)")
@model_option()
@click.option("--top", type=click.IntRange(1), default=20, show_default=True, help="How many tokens to list (of those scoring counts).")
@click.option("--explain", "explain_src", type=click.Path(), metavar="SRC", default=None, help="Show the tokens behind one message's verdict: each one's share of the logit ln(P / (1 - P)), P the calibrated P(spam) the verdict uses; the shares and the rest add up to it.")
@click.option("--json", "as_json", is_flag=True, help="JSON instead of tables.")
@quiet_option
@guarded
def inspect(model_path: str, top: int, explain_src: str | None, as_json: bool) -> None:
    """Summarise MODEL, or explain the verdict on a message."""
    from spamnb.cli import report
    from spamnb.mail import sources
    from spamnb.models import store
    from spamnb.text.tokens import Tokenizer

    model = store.load(model_path, growable=True)
    out = report.console()
    if explain_src is None:
        info = report.summary(model, model_path)
        info["top"] = report.top_tokens(model, top)
        if as_json:
            click.echo(json.dumps(info, ensure_ascii=False))
            return
        out.print(report.summary_table(info))
        out.print(report.token_table("tokens pointing to spam", info["top"]["spam"]))
        out.print(report.token_table("tokens pointing to ham", info["top"]["ham"]))
        return
    tokenize = Tokenizer(model.tokens)
    for item in sources.noting_empty(explain_src, sources.read_source(explain_src, max_bytes=model.tokens.max_bytes), warn_empty):
        if isinstance(item, sources.Problem):
            raise Failure(f"{item.id}: {item.reason}", code=EXIT_PARTIAL)
        e = model.explain(*tokenize.read(item.data, model.scoring.meta != "none"))
        score = model.scoring.probability(e.log_odds)
        shown = report.explanation(model, e, top)
        verdict, floor = model.scoring.decide(score)
        if as_json:
            held = {} if floor is None else {"ham_loss_floor": floor}
            click.echo(report.json_line({"id": item.id, "verdict": verdict, "score": score, "log_odds": e.log_odds, **held, "unknown_tokens": e.unknown, **shown}))
            continue
        out.print(report.explanation_line(item.id, verdict, score, e, floor))
        out.print(report.explanation_table(shown))


@cli.command(epilog="\b\nExamples:\n  spamnb serve -m ~/.local/share/spamnb/model.npz --listen 127.0.0.1:7830\n  spamnb serve --listen unix:/run/spamnb/spamd.sock --socket-mode 0660 --allow-tell\n  spamc -d 127.0.0.1 -p 7830 -c < message.eml\n\n\b\nExit status:\n  0    stopped by SIGTERM or SIGINT\n  2    usage error\n  3    the model or the address cannot be used")
@model_option()
@click.option("--listen", default="127.0.0.1:783", show_default=True, metavar="ADDRESS", help="HOST:PORT, [IPV6]:PORT or unix:PATH (PORT 0: any free port, logged).")
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True, help="Processes answering requests (one per core).")
@click.option("--connections", type=click.IntRange(1, 4096), default=8, show_default=True, help="Requests answered at once, in all; more wait in the kernel's queue for whichever worker is free.")
@click.option("--timeout", type=click.FloatRange(0.1, 3600), default=30.0, show_default=True, metavar="SECONDS", help="A request must arrive within this time (the reply too), or the connection is closed.")
@click.option("--max-size", type=click.IntRange(1, 256 << 20), default=4 << 20, show_default=True, metavar="BYTES", help="Larger messages are passed back unscanned.")
@click.option("--socket-mode", default="0600", show_default=True, metavar="OCTAL", help="Permissions of a unix:PATH socket.")
@click.option("--allow", "allow", multiple=True, metavar="NETWORK", help="Clients allowed over TCP (repeat). [default: 127.0.0.0/8 and ::1]")
@click.option("--allow-tell", is_flag=True, help="Let clients teach the model (spamc -L spam|ham|forget), as spamd's --allow-tell.")
@click.option("--models", "models_dir", type=click.Path(file_okay=False), default=None, metavar="DIR", help="Per-user models: a request's User: picks DIR/USER.npz where it exists, else --model.")
@click.option("--reasons", type=click.IntRange(0), default=0, show_default=True, metavar="N", help="X-Spamnb names the N strongest tokens, as classify --pipe --reasons.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), default=None, metavar="FILE", help="Log to FILE (reopened on SIGHUP). [default: stderr]")
@cutoff_options
@guarded
def serve(
    model_path: str, listen: str, workers: int, connections: int, timeout: float, max_size: int, socket_mode: str, allow: tuple[str, ...],
    allow_tell: bool, models_dir: str | None, reasons: int, log_path: str | None, spam_cutoff: float | None, ham_cutoff: float | None,
) -> None:
    """Answer spamc and every spamd client (SPAMC/SPAMD protocol 1.5) with the model resident.

    Spam: True (spamc -c exit 1, X-Spam-Flag: YES) exactly when the verdict is spam;
    scores are 10 x P(spam) against 10 x the spam cut-off.  SIGHUP rereads the models
    and reopens the log; SIGTERM finishes the requests in hand and stops.
    """
    import ipaddress

    from spamnb.serve import answer, server

    try:
        mode = int(socket_mode, 8)
        networks = tuple(ipaddress.ip_network(n, strict=False) for n in allow) or server.LOOPBACK
    except ValueError as err:
        raise click.UsageError(f"--socket-mode or --allow: {err}") from err
    if not 0 <= mode <= 0o777:
        raise click.UsageError(f"--socket-mode {socket_mode}: not a file mode")
    options = server.Options(listen, workers, connections, timeout, max_size, mode, networks, log_path)
    settings = answer.Settings(model_path, models_dir, allow_tell, (spam_cutoff, ham_cutoff), reasons)
    from spamnb.models.scoring import CutoffError

    try:
        status = server.main(options, settings)
    except CutoffError as err:
        raise click.UsageError(str(err)) from None
    if status:
        sys.exit(status)


@cli.command(epilog="\b\nExamples:\n  spamnb dump > model.txt\n  spamnb dump -m model.npz backup.txt\n\n\b\nExit status:\n  0    done\n  2    usage error\n  3    the model cannot be used, or FILE not written\n  130  interrupted (Ctrl-C)")
@model_option()
@click.argument("out", required=False, type=click.Path(), metavar="[FILE]")
@quiet_option
@guarded
def dump(model_path: str, out: str | None) -> None:
    """Write MODEL as text to FILE (or stdout): its counts, settings and learnt messages'
    digests, its journal's changes included.  `spamnb restore` makes the model again, on
    any machine and later versions of spamnb: for backups and moving a model."""
    from spamnb.models import dump as text
    from spamnb.models import store

    model = store.load(model_path)
    if out is None:
        text.dump(model, sys.stdout.buffer)
        return
    with open(out, "wb") as file:
        text.dump(model, file)


@cli.command(epilog="\b\nExamples:\n  spamnb restore < model.txt\n  spamnb restore -m model.npz backup.txt\n\n\b\nExit status:\n  0    done\n  2    usage error\n  3    FILE is no dump, or MODEL exists or cannot be written\n  130  interrupted (Ctrl-C)")
@model_option()
@click.argument("src", required=False, default="-", type=click.Path(), metavar="[FILE]")
@quiet_option
@click.pass_context
@guarded
def restore(ctx: click.Context, model_path: str, src: str) -> None:
    """Make MODEL from the text `spamnb dump` wrote, read from FILE (or stdin).  MODEL
    must not exist yet: move it aside first."""
    import os

    from spamnb.models import dump as text
    from spamnb.models import lock, store

    if src == "-":
        model = text.restore(sys.stdin.buffer, "stdin")
    else:
        with open(src, "rb") as file:
            model = text.restore(file, src)
    with lock.locked(model_path, notice=notice):
        if os.path.exists(model_path):
            raise Failure(f"{model_path} exists: restore makes a new model (move it aside first)")
        store.save(model, model_path)
    if not ctx.obj["quiet"]:
        click.echo(f"{model_path}: restored; model holds {model.counts.docs[1]} spam and {model.counts.docs[0]} ham", err=True)


@cli.command(
    name="imap-filter",
    epilog="\b\nExamples:\n  spamnb imap-filter imaps://me@mail.example.org/INBOX --spam-folder Junk\n"
    "  spamnb imap-filter --dry-run imaps://me@mail.example.org/INBOX --spam-folder Junk --unsure-folder Unsure\n"
    "  spamnb imap-filter --password-command 'pass show mail' imap://me@localhost/INBOX --spam-folder Junk\n\n"
    "\b\nExit status:\n  0    done\n  1    some messages could not be fetched (they stay where they are)\n"
    "  2    usage error\n  3    the model, the server or the state cannot be used\n  130  interrupted (Ctrl-C)",
)
@model_option()
@click.argument("url", metavar="URL")
@click.option("--spam-folder", required=True, metavar="FOLDER", help="Where spam goes (it must exist).")
@click.option("--unsure-folder", default=None, metavar="FOLDER", help="Where unsure mail goes. [default: it stays]")
@click.option("--dry-run", is_flag=True, help="Say what would move; move nothing and remember nothing.")
@cutoff_options
@imap_options
@quiet_option
@click.pass_context
@guarded
def imap_filter(
    ctx: click.Context,
    model_path: str,
    url: str,
    spam_folder: str,
    unsure_folder: str | None,
    dry_run: bool,
    spam_cutoff: float | None,
    ham_cutoff: float | None,
    access: Any,
) -> None:
    """Move the spam among the new messages of an IMAP folder, URL (imaps://USER@HOST/FOLDER
    or imap:// with STARTTLS), to --spam-folder.

    One line per message moved: classify's (ID, verdict, P(spam), and floor=P where the
    ham-loss floor decided), then to=FOLDER.  The last message seen per
    folder is kept in MODEL.imap-state.json: a re-run scores only mail that came since.
    """
    from spamnb.cli import report
    from spamnb.models import store
    from spamnb.run import imapfilter

    model = store.load(model_path)
    model.scoring = with_cutoffs(model.scoring, spam_cutoff, ham_cutoff)

    def told(result: Any, target: str | None) -> None:
        if target is not None:
            sys.stdout.write(f"{report.scored_tsv(result)}\tto={target}\n")

    state = None if dry_run else imapfilter.state_path(model_path)
    outcome = imapfilter.filter_folder(model, url, spam_folder, unsure_folder, access, state, dry_run, told)
    sys.stdout.flush()
    bad = report_problems(outcome.problems)
    if not ctx.obj["quiet"] or dry_run:
        moved = ", ".join(f"{n} to {folder}" for folder, n in sorted(outcome.moved.items())) or "none"
        verb = "would move" if dry_run else "moved"
        click.echo(f"{url}: {outcome.scored} new scored; {verb} {moved}; {outcome.stayed} stay" + ("; dry run: nothing moved" if dry_run else ""), err=True)
    if bad:
        ctx.exit(EXIT_PARTIAL)


def main() -> None:
    cli(prog_name="spamnb")
