"""The run's report in the terminal: leaderboard, comparison, guards, rows below their bar and
the verdict, written through pytest's terminal reporter. Every line passes through
``for_terminal``: data never steers the terminal (escape sequences)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ..text_safety import for_terminal
from . import terminal

if TYPE_CHECKING:  # pragma: no cover
    from ..families import Family
    from ..runs import RunWriter
    from ..settings import Settings
    from .outcome import RunOutcome


def _writer(reporter: Any) -> Any:
    def write(line: str, **markup: bool) -> None:
        reporter.write_line(for_terminal(line), **markup)

    return write


def write_audit(reporter: Any, outcome: "RunOutcome", family: "Family") -> None:
    """--researchqa-audit: the dataset's own findings (no system ran)."""
    write = _writer(reporter)
    reporter.write_sep("=", "researchqa dataset audit")
    audit = (terminal.audit(outcome.records) if family.uses_papers
             else terminal.leaderboard(outcome.records, family))  # no papers to check
    for line in audit.splitlines():
        write(line)
    if outcome.invalid_rows:
        write(f"{len(outcome.invalid_rows)} invalid dataset row(s): each is an erroring test naming its file, "
              "row and field", red=True)
    for note in (*outcome.notes, outcome.ungated_why):
        if note:
            write(note, yellow=True)


def write_summary(reporter: Any, outcome: "RunOutcome", family: "Family", settings: "Settings", *,
                  writer: Optional["RunWriter"], unwritten: dict[str, str], plots: Sequence[Path]) -> None:
    """Everything after the tests: where results went, the leaderboard, and the verdict last."""
    from .summaries import short_list

    write = _writer(reporter)
    if writer is not None and writer.failed is None:
        write(f"researchqa: results saved in {writer.folder}")
    elif writer is not None:
        write(f"researchqa: results were not saved in {writer.folder}: {writer.failed}", red=True)
    for line in unwritten.values():
        write(line, red=True)
    reporter.write_sep("=", "researchqa leaderboard")
    for line in terminal.leaderboard(outcome.records, family, outcome.intervals, outcome.comparison,
                                     outcome.family_results).splitlines():
        write(line)
    write(outcome.coverage_line)
    if outcome.comparison is not None:
        reporter.write_sep("-", "researchqa comparison")
        for line in terminal.comparison_text(outcome.comparison, family).splitlines():
            write(line)
    if settings.html is not None and str(settings.html) not in unwritten:
        write(f"researchqa: HTML report in {settings.html}")
    if plots:
        figures = sorted({p.stem for p in plots})
        write(f"researchqa: figures (PNG and SVG) in {settings.plots}: {', '.join(figures)}")
    elif settings.plots is not None and str(settings.plots) not in unwritten:
        write(f"researchqa: no figure in {settings.plots}: no row of a system was measured")
    if outcome.guards:
        reporter.write_sep("-", "researchqa judge guards")
        for guard in outcome.guards:
            write(guard.message, yellow=guard.severity == "warning")
    below = short_list(list(outcome.records), saved=writer is not None and writer.failed is None)
    if below:
        reporter.write_sep("-", f"researchqa rows below their bar ({outcome.below_bar + outcome.failed_rows})")
        for line in below:
            write(line)
    write_verdict(reporter, outcome)


def write_verdict(reporter: Any, outcome: "RunOutcome", *, coverage: bool = False) -> None:
    """The checks and the verdict; ``coverage``: first how much was measured (where no leaderboard says it)."""
    write = _writer(reporter)
    reporter.write_sep("-", "researchqa verdict")
    if coverage:
        write(outcome.coverage_line)
    for check in outcome.checks:
        write(f"{check.mark} {check.message}", red=check.fails_run, green=check.state == "passed",
              yellow=check.state == "undecidable" and not check.fails_run)
    verdict = outcome.verdict
    write(f"researchqa: {outcome.headline}", bold=True, red=verdict == "failed", green=verdict == "passed",
          yellow=verdict == "undecidable")
    for note in outcome.notes:
        write(note, yellow=True)
