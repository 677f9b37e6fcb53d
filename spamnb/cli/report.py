"""Rendering results for people (rich tables) and for machines (JSON, tab-separated)."""
from __future__ import annotations

import contextlib
import errno
import io
import json
import math
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from spamnb.bayes import meta, nb
from spamnb.models.calibration import HAM_LOSS
from spamnb.models.model import Explanation, Model, Scored, Scoring
from spamnb.run.metrics import Report
from spamnb.text.tokens import FEATURE_SCALE

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def new_table(*columns: str, **options: Any) -> Table:
    """A borderless table with bold headers.  rich is imported here, when a table is drawn:
    at module level it added to every batch command's start-up, output to a pipe included."""
    from rich.table import Table

    return Table(*columns, **{"box": None, "header_style": "bold", **options})


def json_line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=True)


def scored_json(s: Scored) -> str:
    """`classify --json`'s line; `ham_loss_floor` only where the floor decided the verdict."""
    floor = {} if s.floor is None else {"ham_loss_floor": s.floor}
    return json_line({"id": s.id, "verdict": s.verdict, "score": round(s.score, 6), "log_odds": s.log_odds, **floor})


def scored_tsv(s: Scored) -> str:
    """`id<TAB>verdict<TAB>score`, and `<TAB>floor=P` where the ham-loss floor decided the verdict."""
    return f"{s.id}\t{s.verdict}\t{s.score:.4f}" + ("" if s.floor is None else f"\tfloor={s.floor:.4f}")


def scored_table(rows: Sequence[Scored], heads: dict[str, tuple[str, str]] | None = None, width: int = 80) -> Table:
    """One row per message on one line of `width`: its id shortened from the left (the
    end names the message: a maildir file, `PATH:N` of an mbox), From and Subject when
    known (cut at the end), the verdict."""
    heads = heads or {}
    style = {"spam": "red", "ham": "green", "unsure": "yellow"}
    fixed = len("verdict") + len("P(spam)") + len("log-odds") + 2 * 6  # each column has a space either side
    ids = [tail(s.id, max(16, width // 4)) for s in rows]
    id_width = max((len(i) for i in ids), default=7)
    senders = [heads.get(s.id, ("", ""))[0] for s in rows]
    from_width = min(max((len(f) for f in senders), default=4), max(12, width // 5))
    subject_width = max(width - fixed - id_width - from_width, 7)
    table = new_table("message", "from", "subject", "verdict", "P(spam)", "log-odds")
    for column, size in zip(table.columns, (id_width, from_width, subject_width, 7, 7, 8), strict=True):
        column.width, column.no_wrap = size, True
    for s, shown, sender in zip(rows, ids, senders, strict=True):
        subject = heads.get(s.id, ("", ""))[1]
        table.add_row(
            escape(shown), escape(head(sender, from_width)), escape(head(subject, subject_width)),
            f"[{style[s.verdict]}]{s.verdict}[/]", f"{s.score:.4f}", f"{s.log_odds:+.2f}",
        )
    return table


def head(text: str, limit: int) -> str:
    """`text` cut to `limit` characters by dropping its end."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tail(text: str, limit: int) -> str:
    """`text` cut to `limit` characters by dropping its start."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def verdict_counts(rows: Sequence[Scored]) -> str:
    """`N messages: a spam, b ham, c unsure`, the line under the table."""
    counts = {v: sum(s.verdict == v for s in rows) for v in ("spam", "ham", "unsure")}
    line = f"{len(rows)} messages: {counts['spam']} spam, {counts['ham']} ham, {counts['unsure']} unsure"
    held = sum(s.floor is not None for s in rows)
    return line + (f" ({held} held back from spam by the model's ham-loss floor: see inspect)" if held else "")


def from_and_subject(data: bytes) -> tuple[str, str]:
    """A message's From and Subject, decoded, on one line each (for the table)."""
    from email.parser import BytesHeaderParser

    from spamnb.mail.headers import split_message
    from spamnb.mail.message import decode_header_value

    _, head, _ = split_message(data[: 1 << 16])
    fields = BytesHeaderParser().parsebytes(head)
    return tuple(" ".join(decode_header_value(str(fields.get(name, ""))).split()) for name in ("From", "Subject"))  # type: ignore[return-value]


def noting_heads(items: Iterable[Any], heads: dict[str, tuple[str, str]]) -> Iterator[Any]:
    """`items` as they are, each message's From and Subject kept in `heads` by its id."""
    for item in items:
        data = getattr(item, "data", None)
        if data is not None:
            try:
                heads[item.id] = from_and_subject(data)
            except Exception:  # noqa: BLE001 - the table shows a blank, the message is still scored
                heads[item.id] = ("", "")
        yield item


def fmt(value: float, percent: bool = False) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    return f"{100 * value:.3f}%" if percent else f"{value:.6f}"


def eval_tables(
    report: Report, sweep: list[tuple[float, int, int]], ham_sweep: list[tuple[float, int, int]], scoring: Scoring, floored: int = 0
) -> list[Table]:
    """The confusion, the metrics and both sides' sweeps.  Each sweep row is what that
    cut-off given as --spam-cutoff (--ham-cutoff) gives; where the ham-loss floor held
    `floored` messages back from spam, the verdicts in use are a row of their own."""
    confusion = new_table("", "flagged spam", "passed (ham or unsure)", title="confusion")
    confusion.add_row("spam", str(report.true_positives), str(report.false_negatives))
    confusion.add_row("ham", str(report.false_positives), str(report.true_negatives))
    floor = f" and above the ham-loss floor ({floored} held back)" if floored else ""
    metrics = new_table("metric", "value", title=f"metrics (spam at P >= {scoring.spam_cutoff:g}{floor}, ham at P <= {scoring.ham_cutoff:g})")
    for name, value, pct in (
        ("messages", report.messages, False),
        ("spam / ham", f"{report.spam} / {report.ham}", False),
        ("accuracy", report.accuracy, True),
        ("precision", report.precision, True),
        ("recall", report.recall, True),
        ("f1", report.f1, False),
        ("false positive rate", report.false_positive_rate, True),
        ("false negative rate", report.false_negative_rate, True),
        ("ROC AUC", report.auc, False),
        ("1-ROCA %", report.one_minus_roca_percent / 100, True),
        ("recall at <=0.5% ham lost", report.recall_at_half_percent_ham_loss, True),
        ("Brier score", report.brier, False),
        ("calibration error (ECE)", report.ece, False),
        ("unsure", f"{report.unsure} ({fmt(report.unsure_rate, True)}), {report.unsure_errors} of them wrong", False),
    ):
        metrics.add_row(name, value if isinstance(value, str) else (str(value) if isinstance(value, int) else fmt(value, pct)))
    spam_table = new_table("spam cut-off P(spam) >=", "ham lost", "spam missed", title="threshold sweep: spam side (--spam-cutoff)")
    for cutoff, lost, missed in sweep:
        spam_table.add_row(in_use(cutoff, scoring.spam_cutoff) if not floored else f"{cutoff:g}", str(lost), str(missed))
        if floored and cutoff == scoring.spam_cutoff:
            spam_table.add_row(f"{cutoff:g} and the ham-loss floor (in use)", str(report.false_positives), str(report.false_negatives))
    ham_table = new_table("ham cut-off P(spam) <=", "spam passed as ham", "ham not passed", title="threshold sweep: ham side (--ham-cutoff)")
    for cutoff, passed, held in ham_sweep:
        ham_table.add_row(in_use(cutoff, scoring.ham_cutoff), str(passed), str(held))
    return [confusion, metrics, spam_table, ham_table]


def in_use(cutoff: float, current: float) -> str:
    return f"{cutoff:g} (in use)" if cutoff == current else f"{cutoff:g}"


def eval_json(
    report: Report, scoring: Scoring, sweep: list[tuple[float, int, int]], ham_sweep: list[tuple[float, int, int]], floored: int = 0
) -> dict[str, Any]:
    """`eval --json`: every metric, the cut-offs the verdicts used, how many the ham-loss floor
    held back from spam (`floor_decided`) and both sides' sweeps (as `eval_tables`)."""
    return {
        **report.as_dict(),
        "spam_cutoff": scoring.spam_cutoff,
        "ham_cutoff": scoring.ham_cutoff,
        "floor_decided": floored,
        "sweep": {
            "spam_cutoff": [{"cutoff": c, "ham_lost": lost, "spam_missed": missed} for c, lost, missed in sweep],
            "ham_cutoff": [{"cutoff": c, "spam_passed_as_ham": passed, "ham_not_passed": held} for c, passed, held in ham_sweep],
        },
    }


def score_histogram(labels: Sequence[str], log_odds: np.ndarray, bins: int = 16, width: int = 16) -> Table:
    """Ham and spam counts per log-odds bin, as bars on a log scale (so a lone error shows)."""
    odds = np.asarray(log_odds, dtype=np.float64)
    spam = np.array([label == "spam" for label in labels], dtype=bool)
    lo, hi = np.percentile(odds, [0.5, 99.5]) if len(odds) else (0.0, 0.0)
    if hi <= lo:
        lo, hi = lo - 1.0, hi + 1.0
    edges = np.linspace(lo, hi, bins + 1)
    which = np.clip(np.searchsorted(edges, odds, side="right") - 1, 0, bins - 1)
    ham_counts = np.bincount(which[~spam], minlength=bins)
    spam_counts = np.bincount(which[spam], minlength=bins)
    top = np.log1p(max(int(ham_counts.max(initial=0)), int(spam_counts.max(initial=0)), 1))

    def bar(count: int) -> str:
        return "█" * max(1 if count else 0, round(width * np.log1p(count) / top))

    table = new_table("log-odds", "ham", "", "spam", "", title="score distribution (bars on a log scale)")
    for b in range(bins):
        left = "≤" if b == 0 else " "
        right = "+" if b == bins - 1 else ""
        table.add_row(
            f"{left}{edges[b]:+7.1f}..{edges[b + 1]:+.1f}{right}",
            str(ham_counts[b]),
            f"[green]{bar(int(ham_counts[b]))}[/]",
            str(spam_counts[b]),
            f"[red]{bar(int(spam_counts[b]))}[/]",
        )
    return table


def top_tokens(model: Model, n: int) -> dict[str, list[dict[str, Any]]]:
    """The n tokens pulling hardest towards spam and towards ham, by their weight, of
    those scoring counts (model.Model.counted: Fisher leaves out a list server's fields).

    None until the model has learnt both classes: a weight compares the two."""
    vocab = model.growable()
    if len(vocab) == 0 or not model.counts.docs.all():
        return {"spam": [], "ham": []}
    w, _ = model.weights()
    counted = np.flatnonzero(model.counted(vocab.tokens))
    order = counted[np.argsort(w[counted], kind="mergesort")]
    pick = {"spam": order[::-1][:n], "ham": order[:n]}
    return {side: [token_row(model, vocab.tokens[c], int(c), float(w[c])) for c in cols] for side, cols in pick.items()}


def token_row(model: Model, token: str, col: int, weight: float) -> dict[str, Any]:
    c = model.counts
    return {
        "token": token,
        "weight": weight,
        "spam_messages": int(c.df[nb.SPAM, col]),
        "ham_messages": int(c.df[nb.HAM, col]),
        "spam_count": int(c.tf[nb.SPAM, col]),
        "ham_count": int(c.tf[nb.HAM, col]),
    }


def summary(model: Model, path: str) -> dict[str, Any]:
    return {
        "model": path,
        "messages": {"spam": int(model.counts.docs[nb.SPAM]), "ham": int(model.counts.docs[nb.HAM])},
        "vocabulary": model.counts.n_features,
        "tokens_seen": {"spam": int(model.counts.tf[nb.SPAM].sum()), "ham": int(model.counts.tf[nb.HAM].sum())},
        "learnt_digests": len(model.learnt),
        "tokeniser": json.loads(model.tokens.to_json()),
        "scoring": json.loads(model.scoring.to_json()),
        "verdicts": verdict_summary(model),
        **({"numeric_features": numeric_summary(model)} if model.scoring.meta != "none" else {}),
        **file_facts(path),
    }


def numeric_summary(model: Model) -> dict[str, dict[str, float]]:
    """Per numeric feature its mean in ham and in spam (spamnb.bayes.meta), where the model scores them."""
    gaussians = model.gaussians()
    if gaussians.kind == "none":
        return {}
    ham, spam = gaussians.means
    return {name: {"ham_mean": h, "spam_mean": s} for name, h, s in zip(meta.NAMES, ham, spam, strict=True)}


def numeric_rows(e: Explanation) -> list[dict[str, Any]]:
    """The message's numeric features (spamnb.bayes.meta) with their shares of the logit (none
    where the model does not score them, or has too few messages to)."""
    if e.numeric is None or not e.numeric_terms:
        return []
    return [{"feature": name, "value": v / FEATURE_SCALE, "contribution": c} for name, v, c in zip(meta.NAMES, e.numeric, e.numeric_terms, strict=True)]


def file_facts(path: str) -> dict[str, Any]:
    """The model file's size and when it was last trained: the later of its own and its
    journal's modification (a learnt single message goes to the journal), UTC, ISO 8601."""
    import datetime
    import os

    from spamnb.models.journal import journal_path

    times = [os.stat(p).st_mtime for p in (path, journal_path(path)) if os.path.exists(p)]
    sizes = [os.stat(p).st_size for p in (path, journal_path(path)) if os.path.exists(p)]
    when = datetime.datetime.fromtimestamp(max(times), datetime.UTC).isoformat(timespec="seconds") if times else None
    return {"file_bytes": sum(sizes), "last_trained": when}


def verdict_summary(model: Model) -> dict[str, Any]:
    """Where the cut-offs fall in log-odds, whether a calibration was fitted at all, and
    whether the ham-loss floor (calibration.ham_loss_floor) is what sets the spam verdict."""
    scoring = model.scoring

    def finite(x: float) -> float | None:
        return x if math.isfinite(x) else None

    threshold, floor_sets_spam = scoring.spam_threshold()
    return {
        # Train fits a calibration only with enough of each class (classifier.CALIBRATION_MIN).
        "calibrated": scoring.calibration != Scoring().calibration,
        "spam_from_log_odds": finite(scoring.log_odds_at(threshold)),
        "ham_to_log_odds": finite(scoring.log_odds_at(scoring.ham_cutoff)),
        "floor_sets_spam": floor_sets_spam,
        "ham_loss_budget": HAM_LOSS,
    }


def token_table(title: str, rows: list[dict[str, Any]], weight_name: str = "weight") -> Table:
    table = new_table("token", weight_name, "spam msgs", "ham msgs", title=title)
    for r in rows:
        table.add_row(r["token"], f"{r[weight_name]:+.3f}", str(r["spam_messages"]), str(r["ham_messages"]))
    return table


def summary_table(info: dict[str, Any]) -> Table:
    table = new_table("", "", title=f"model {info['model']}", show_header=False)
    table.add_row("messages", f"{info['messages']['spam']} spam, {info['messages']['ham']} ham")
    table.add_row("last trained", f"{info['last_trained']} (UTC)")
    table.add_row("size", f"{info['file_bytes'] / 1e6:.1f} MB ({info['file_bytes']:,} bytes, journal included)")
    table.add_row("vocabulary", f"{info['vocabulary']} tokens")
    table.add_row("tokeniser", ", ".join(f"{k}={v}" for k, v in info["tokeniser"].items()))
    table.add_row("scoring", ", ".join(f"{k}={v}" for k, v in info["scoring"].items()))
    table.add_row("verdicts", verdicts_line(info["scoring"], info["verdicts"]))
    if info.get("numeric_features"):
        means = (f"{name} {m['ham_mean']:.3g} / {m['spam_mean']:.3g}" for name, m in info["numeric_features"].items())
        table.add_row("numeric features", "mean in ham / spam: " + "; ".join(means))
    return table


def verdicts_line(scoring: dict[str, Any], verdicts: dict[str, Any]) -> str:
    def at(x: float | None) -> str:
        return "never" if x is None else f"log-odds {x:+.2f}"

    spam = f"P > {scoring['spam_floor']:.6g}" if verdicts["floor_sets_spam"] else f"P >= {scoring['spam_cutoff']}"
    line = f"spam at {spam} ({at(verdicts['spam_from_log_odds'])}), ham at P <= {scoring['ham_cutoff']} ({at(verdicts['ham_to_log_odds'])})"
    if verdicts["floor_sets_spam"]:
        budget = f"{100 * verdicts['ham_loss_budget']:g}%"
        line += (
            f"; spam needs more than P >= {scoring['spam_cutoff']} while so few messages are learnt: at most {budget} of ham lost, "
            "by the model's estimate (a --spam-cutoff given is used as given)"
        )
    if not verdicts["calibrated"]:
        line += "; P(spam) not calibrated yet (too few messages of a class learnt): raw log-odds"
    return line


def explanation(model: Model, e: Explanation, n: int) -> dict[str, Any]:
    """The n tokens that moved the verdict most and the rest: they sum to the logit of
    P(spam) (model.Explanation)."""
    order = np.argsort(-np.abs(e.contributions), kind="mergesort")[:n]
    rows = []
    for i in order:
        row = token_row(model, e.tokens[i], int(e.cols[i]), float(e.contributions[i]))
        row["contribution"] = row.pop("weight")
        row["in_message"] = int(e.counts[i])
        rows.append(row)
    shown = {"logit": e.logit, "tokens": rows, "other_tokens": len(e.tokens) - len(rows)}
    features = numeric_rows(e)
    if features:
        shown["numeric_features"] = features
    return {**shown, "rest": e.logit - math.fsum(r["contribution"] for r in (*rows, *features))}


def explanation_line(message_id: str, verdict: str, score: float, e: Explanation, floor: float | None) -> str:
    """`inspect --explain`'s first line: the verdict, P(spam), its logit (the scale the shares
    add up on) beside the raw log-odds it was calibrated from, and the floor where it decided."""
    line = (
        f"[bold]{escape(message_id)}[/]: {verdict}, P(spam) = {score:.4f}; logit ln(P / (1 - P)) = {e.logit:+.3f} "
        f"(calibrated from the raw log-odds {e.log_odds:+.3f}), the tokens' shares of the logit and the rest below "
        f"({e.unknown} distinct tokens unknown to the model)"
    )
    if floor is not None:
        line += f"; not spam: P must exceed the model's ham-loss floor {floor:.4f} while so few messages are learnt (a --spam-cutoff given is used as given)"
    return line


def explanation_table(shown: dict[str, Any]) -> Table:
    """`explanation` as a table whose printed numbers add up: the rest's is the printed
    total less the printed tokens' (so it takes their rounding)."""
    table = token_table("tokens that moved the verdict most", shown["tokens"], weight_name="contribution")
    features = shown.get("numeric_features", [])
    for r in features:
        table.add_row(f"{r['feature']} {r['value']:.3g} (numeric feature)", f"{r['contribution']:+.3f}", "", "")
    total = round(shown["logit"], 3)
    rest = total - sum(round(r["contribution"], 3) for r in (*shown["tokens"], *features))
    table.add_row(f"the rest ({shown['other_tokens']} more tokens, prior, calibration)", f"{rest:+.3f}", "", "")
    table.add_row("sum: the logit ln(P / (1 - P))", f"{total:+.3f}", "", "")
    return table


class StderrAfterLines:
    """sys.stderr while `lines_in_blocks` holds lines: what the printing thread says there
    (a warning, a Problem, the stdin notice) first writes out the lines before it.  Other
    threads (rich's refresh of a progress bar, on a terminal apart from the piped lines)
    and forked workers (a copy of the lines held) leave them to the printing thread."""

    def __init__(self, stderr: TextIO, before: Callable[[], None]) -> None:
        self.stderr, self.before, self.printer = stderr, before, (os.getpid(), threading.get_ident())

    def write(self, text: str) -> int:
        self.lines_first()
        return self.stderr.write(text)

    def flush(self) -> None:
        self.lines_first()
        self.stderr.flush()

    def lines_first(self) -> None:
        if (os.getpid(), threading.get_ident()) == self.printer:
            self.before()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stderr, name)


@contextlib.contextmanager
def lines_in_blocks(out: TextIO) -> Iterator[Callable[[str], None]]:
    """Yield `write(line)`: lines go to `out` a block at a time, not one system call each as
    an unbuffered stdout (PYTHONUNBUFFERED) makes them; stderr keeps its place among them,
    and the lines held are written out when the block ends, by an error too."""
    held: list[str] = []
    size = 0

    def flush() -> None:
        nonlocal size
        if held:
            text = "".join(held)
            held.clear()
            size = 0
            out.write(text)
        out.flush()

    def write(line: str) -> None:
        nonlocal size
        held.append(line)
        size += len(line)
        if size >= io.DEFAULT_BUFFER_SIZE:
            flush()

    stderr = sys.stderr
    sys.stderr = StderrAfterLines(stderr, flush)  # type: ignore[assignment]
    try:
        yield write
    finally:
        sys.stderr = stderr
        flush()


def stdout_is_terminal() -> bool:
    """Tables for a person at a terminal; plain lines for a pipe."""
    return sys.stdout.isatty()


def console(stderr: bool = False) -> Console:
    from rich.console import Console

    class Quiet(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1 here; the command line ends every closed stdout alike (cli.end_quietly).
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return Quiet(stderr=stderr, highlight=False)
