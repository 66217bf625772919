"""Text for the terminal: the leaderboard, its breakdowns, the audit. Renders; decides nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from ..families import Family
from ..records import RowRecord
from .summaries import Summary, by_system, group, summarize, system_of


def cell(value: Optional[float], digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _judge_cell(summary: Summary, dimension: str) -> str:
    mean = summary.judge_means.get(dimension)
    if mean is None:
        return "error" if summary.judge_errors and summary.rows == summary.judge_errors else "—"
    spread = summary.judge_spread.get(dimension)
    return f"{mean:.2f}" + (f" ±{spread:.2f}" if spread is not None else "")


def _tokens(summary: Summary) -> str:
    if summary.prompt_tokens is None and summary.completion_tokens is None:
        return "—"
    return f"{summary.prompt_tokens or 0:,}/{summary.completion_tokens or 0:,}"


@dataclass(frozen=True)
class Table:
    title: str  # "" for the leaderboard itself
    headers: list[str]
    rows: list[list[object]]


def leaderboard_tables(records: Sequence[RowRecord], family: Family) -> list[Table]:
    """The leaderboard, then the same metrics per question type and per domain."""
    metrics = family.metric_names
    dimensions = [d.name for d in family.judge_dimensions]
    summaries = by_system(records, metrics, dimensions)
    judging = any(r.judge for r in records)
    modelled = any(r.model_system for r in records)
    headers = ["system", *(m.label for m in family.metrics), *(d.label for d in family.judge_dimensions),
               "rows", "errors"]
    if judging:
        headers.append("judge err")
    headers.append("latency s")
    if modelled:
        headers += ["queued s", "tokens in/out"]
    headers.append("cost $")
    table = []
    for s in summaries:
        cells: list[object] = [s.label, *(cell(s.means[m]) for m in metrics),
                               *(_judge_cell(s, d) for d in dimensions), s.rows, s.errors]
        if judging:
            cells.append(s.judge_errors)
        cells.append(cell(s.latency_s, 2))
        if modelled:
            cells += [cell(s.queue_s, 2), _tokens(s)]
        cells.append(cell(s.cost_usd, 4))
        table.append(cells)
    tables = [Table("", headers, table)]
    order = {s.label: n for n, s in enumerate(summaries)}
    breakdowns: tuple[tuple[str, Callable[[RowRecord], Optional[str]]], ...] = (
        ("question type", lambda r: r.question_type), ("domain", lambda r: r.domain))
    for title, field in breakdowns:
        rows = []

        def key_of(record: RowRecord, field: Callable[[RowRecord], Optional[str]] = field) -> str:
            return f"{system_of(record)}\0{field(record) or '?'}"

        groups = group(records, key_of)
        for key in sorted(groups, key=lambda k: (order.get(k.split("\0")[0], 0), k.split("\0")[1])):
            system, value = key.split("\0")
            s = summarize(system, groups[key], metrics)
            rows.append([system, value, *(cell(s.means[m]) for m in metrics), s.rows, s.errors])
        tables.append(Table(title, ["system", title, *(m.label for m in family.metrics), "rows", "errors"], rows))
    return tables


def defects_line(records: Sequence[RowRecord]) -> Optional[str]:
    defects = sum(1 for r in records if r.defect and not r.error)
    if not defects:
        return None
    return f"{defects} row(s) not graded: a required section is not in the paper (dataset defect)"


def leaderboard(records: Sequence[RowRecord], family: Family) -> str:
    """The leaderboard and its breakdowns as terminal text."""
    from tabulate import tabulate

    tables = leaderboard_tables(records, family)
    parts = [tabulate(tables[0].rows, headers=tables[0].headers, tablefmt="github", disable_numparse=True)]
    if family.scope_note:
        parts.append(family.scope_note)
    defects = defects_line(records)
    if defects:
        parts.append(defects)
    for table in tables[1:]:
        parts.append(f"by {table.title}:")
        parts.append(tabulate(table.rows, headers=table.headers, tablefmt="github", disable_numparse=True))
    return "\n".join(parts)


def audit(records: Sequence[RowRecord]) -> str:
    """Per paper: the share of expected passages its extracted text contains."""
    from tabulate import tabulate

    papers: dict[str, list[int]] = {}
    for record in records:
        if record.expected_total is None or record.paper_id is None:
            continue
        counts = papers.setdefault(record.paper_id, [0, 0, 0])
        counts[0] += record.expected_found or 0
        counts[1] += record.expected_total
        counts[2] += 1 if record.defect else 0
    table = [[paper, f"{found}/{total}", cell(found / total if total else None), defects]
             for paper, (found, total, defects) in sorted(papers.items())]
    found = sum(c[0] for c in papers.values())
    total = sum(c[1] for c in papers.values())
    table.append(["(all)", f"{found}/{total}", cell(found / total if total else None),
                  sum(c[2] for c in papers.values())])
    return tabulate(table, headers=["paper", "passages found", "share", "defect rows"], tablefmt="github",
                    disable_numparse=True)
