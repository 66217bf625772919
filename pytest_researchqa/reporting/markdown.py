"""The run as GitHub-flavoured Markdown: for a pull-request comment or a job summary. Renders only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

from ..families import Family, Table
from ..text_safety import for_markdown, printable
from .compare import coverage_lines
from .terminal import comparison_table, leaderboard_notes, leaderboard_tables

if TYPE_CHECKING:  # pragma: no cover
    from .outcome import RunOutcome


def _escape(value: object) -> str:
    return for_markdown(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(_escape(h) for h in headers) + " |",
             "|" + "|".join("---" if n == 0 else "---:" for n in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _paragraphs(text: str) -> str:
    """Text lines and tables as Markdown: each text line its own line, a blank line around each table."""
    out: list[str] = []
    for line in text.splitlines():
        in_table = line.startswith("|")
        if out and in_table != out[-1].startswith("|"):
            out.append("")
        # A family's own table: its cells keep their pipes, but no HTML, image or mention comes out of them.
        cells = printable(line).replace("<", "&lt;").replace(">", "&gt;").replace("![", "!\\[").replace("@", "@\u2060")
        out.append(cells if in_table else _escape(line.strip()) + "  ")
    return "\n".join(out)


def _section(t: Table) -> str:
    return f"<details><summary>By {t.title}</summary>\n\n{table(t.headers, t.rows)}\n\n</details>"


def render(outcome: "RunOutcome", family: Family, title: str = "researchqa") -> str:
    comparison = outcome.comparison
    tables = leaderboard_tables(outcome.records, family, outcome.intervals, comparison)
    verdict = {"passed": " — gates passed ✅", "failed": " — gates FAILED ❌" if outcome.gated else " — FAILED ❌",
               "undecidable": " — gates UNDECIDED ⚠️",
               "report": f" — report ({outcome.ungated_why or 'no gate'})"}[outcome.verdict]
    if outcome.interrupted:  # said first, gated or not: a PR comment must not read as a whole run's report
        verdict = " — UNFINISHED (killed): no verdict" if outcome.unfinished else f" — INTERRUPTED{verdict}"
    parts = [f"## {title}{verdict}", "", table(tables[0].headers, tables[0].rows), ""]
    notes: list[Optional[str]] = [*leaderboard_notes(outcome.records, family, outcome.intervals, comparison),
                                  outcome.coverage_line]
    text, failed = family.render(outcome.records, outcome.family_results)
    if text is not None:  # a family that renders its own leaderboard (GitHub tables and lines of text)
        parts = [f"## {title}{verdict}", "", _paragraphs(text), ""]
        notes, tables = [outcome.coverage_line], tables[:1]
    notes.append(failed)
    parts += [f"_{_escape(n)}_  " for n in notes if n] + [""]
    if outcome.gated or outcome.checks or outcome.interrupted:
        parts += ["### Gates" if outcome.gated else "### Verdict", "", f"**{_escape(outcome.headline)}**", ""]
        parts += [f"- {check.mark} {_escape(check.message)}" for check in outcome.checks]
        parts.append("")
    if comparison is not None:
        compared = comparison_table(comparison, family)
        parts += [f"### Against {_escape(comparison.baseline)}", ""]
        if compared.rows:
            parts += [table(compared.headers, compared.rows), ""]
        parts += [f"- {_escape(line)}" for line in coverage_lines(comparison)] + [""]
    if outcome.guards:
        parts.append("### Judge guards")
        parts.append("")
        parts += [f"- {_escape(g.message)}" for g in outcome.guards]
        parts.append("")
    parts += [_section(t) for t in tables[1:]]
    errored = [r for r in (*outcome.records, *outcome.invalid_rows) if r.error]
    if errored:  # the verdict names how many; a reader of the PR comment needs which, and why
        from .summaries import error_list

        listed = "\n".join(f"- {_escape(line)}" for line in error_list(errored, terminal=False))
        parts.append(f"<details><summary>Rows in error ({len(errored)})</summary>\n\n{listed}\n\n</details>")
    below = outcome.below_bar + outcome.failed_rows
    if below:
        from .summaries import short_list

        listed = "\n".join(f"- {_escape(line)}" for line in short_list(list(outcome.records), terminal=False))
        parts.append(f"<details><summary>Rows below their bar ({below})</summary>\n\n{listed}\n\n</details>")
    for note in outcome.notes:
        parts.append(f"\n> {_escape(note)}")
    return "\n".join(parts).rstrip() + "\n"
