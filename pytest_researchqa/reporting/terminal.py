"""Text for the terminal: the leaderboard, its breakdowns, the audit. Renders; decides nothing."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from ..families import Family, Table
from ..records import RowRecord
from ..stats import CONFIDENCE, RESAMPLES, Interval, PairedTest, describe_p
from .compare import Comparison, coverage_lines, side_means
from .gates import ALPHA
from .repeats import repeat_spreads
from .summaries import Summary, by_system, summarize, system_of

Intervals = dict[str, dict[str, Optional[Interval]]]
# Fewer papers than this and a percentile bootstrap over papers is too narrow to trust as stated.
FEW_PAPERS = 10


# An interval whose shorter side is less than this share of its longer side is printed as [low–high].
LOPSIDED = 0.75


def cell(value: Optional[float], digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def mean_cell(value: Optional[float], interval: Optional[Interval]) -> str:
    """``0.812 ±0.031``: the mean and the half-width of its interval over papers, when there is one;
    ``0.111 [0.000–0.333]`` when the interval is lopsided (near a bound), where a ± would misstate it."""
    if value is None:
        return "—"
    if interval is None or interval.low is None or interval.high is None:
        return cell(value)
    below, above = value - interval.low, interval.high - value
    if max(below, above) > 0 and min(below, above) < LOPSIDED * max(below, above):
        return f"{cell(value)} [{cell(interval.low)}–{cell(interval.high)}]"
    return f"{cell(value)} ±{(interval.high - interval.low) / 2:.3f}"


def delta_cell(test: Optional[PairedTest], higher_is_better: bool) -> str:
    """``-0.052 ▼``: new minus old over the paired rows; ▼/▲ a significant drop/rise in quality."""
    if test is None:
        return "—"
    mark = ""
    if test.p_worse(higher_is_better) < ALPHA:
        mark = " ▼"
    elif test.p_better(higher_is_better) < ALPHA:
        mark = " ▲"
    return f"{test.delta:+.3f}{mark}"


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


def leaderboard_tables(records: Sequence[RowRecord], family: Family, intervals: Optional[Intervals] = None,
                       comparison: Optional[Comparison] = None) -> list[Table]:
    """The leaderboard (with intervals and, against a baseline, a delta per metric), then the same
    metrics per question type and per domain, then the spread across repeats."""
    summaries = by_system(records, family.metrics, [d.name for d in family.judge_dimensions])
    tables = [_leaderboard(records, family, summaries, intervals, comparison)]
    order = {s.label: n for n, s in enumerate(summaries)}
    breakdowns: tuple[tuple[str, Callable[[RowRecord], Optional[str]]], ...] = (
        ("question type", lambda r: r.question_type), ("domain", lambda r: r.domain))
    for title, field in breakdowns:
        table = _breakdown(records, family, title, field, order)
        if table is not None:
            tables.append(table)
    spreads = repeat_spreads(records, family.metric_names)
    if spreads:
        labels = {m.name: m.label for m in family.metrics}
        tables.append(Table("repeat", ["system", "metric", "mean of each repeat", "run-to-run SD", "per-row SD"], [
            [s.system, labels[s.metric], " / ".join(cell(m) for m in s.run_means), cell(s.run_sd), cell(s.row_sd)]
            for s in spreads]))
    return tables


def _leaderboard(records: Sequence[RowRecord], family: Family, summaries: Sequence[Summary],
                 intervals: Optional[Intervals], comparison: Optional[Comparison]) -> Table:
    """One line per system: its metrics (± and Δ), judge dimensions, counts, latency, tokens, and what its
    answers and (where judges graded them) its verdicts cost."""
    dimensions = [d.name for d in family.judge_dimensions]
    judging = any(r.judge for r in records)
    verdicts = judging or any(r.usage.verdicts for r in records)  # the premise judge's alone too: paid for
    modelled = any(r.model_system for r in records)
    metric_headers: list[str] = []
    for spec in family.metrics:
        metric_headers.append(spec.label)
        if comparison is not None:
            metric_headers.append(f"Δ {spec.label}")
    headers = ["system", *metric_headers, *(d.label for d in family.judge_dimensions), "rows", "errors",
               *(["judge err"] if judging else []), "latency s", *(["queued s", "tokens in/out"] if modelled else []),
               "cost $", *(["judge $"] if verdicts else [])]
    table = []
    for s in summaries:
        metric_cells: list[object] = []
        for spec in family.metrics:
            metric_cells.append(mean_cell(s.means[spec.name], ((intervals or {}).get(s.label) or {}).get(spec.name)))
            if comparison is not None:
                compared = comparison.of(s.label)
                if compared is None or compared.baseline_system is None:
                    metric_cells.append("new")
                else:
                    metric_cells.append(delta_cell(compared.deltas.get(spec.name), spec.higher_is_better))
        table.append([s.label, *metric_cells, *(_judge_cell(s, d) for d in dimensions), s.rows, s.errors,
                      *([s.judge_errors] if judging else []), cell(s.latency_s, 2),
                      *([cell(s.queue_s, 2), _tokens(s)] if modelled else []), cell(s.cost_usd, 4),
                      *([cell(s.judge_cost_usd, 4)] if verdicts else [])])
    return Table("", headers, table)


def _breakdown(records: Sequence[RowRecord], family: Family, title: str,
               field: Callable[[RowRecord], Optional[str]], order: dict[str, int]) -> Optional[Table]:
    """The metrics per system and value of ``field`` (None when no row has a value: a table of "?" says nothing)."""
    # Keyed by (system, value): data may hold any character, so no separator could be safe.
    groups: dict[tuple[str, str], list[RowRecord]] = {}
    for record in records:
        groups.setdefault((system_of(record), field(record) or "?"), []).append(record)
    if all(value == "?" for _, value in groups):
        return None
    rows = []
    for key in sorted(groups, key=lambda k: (order.get(k[0], 0), k[1])):
        system, value = key
        s = summarize(system, groups[key], family.metric_names)
        rows.append([system, value, *(cell(s.means[m]) for m in family.metric_names), s.rows, s.errors])
    return Table(title, ["system", title, *(m.label for m in family.metrics), "rows", "errors"], rows)


def defects_line(records: Sequence[RowRecord]) -> Optional[str]:
    """How many dataset rows are defects (as ``--researchqa-audit`` counts them), and under several systems
    how many (system, row) pairs that leaves ungraded."""
    pairs = {(r.system, r.row_id) for r in records if r.defect and not r.error}
    if not pairs:
        return None
    rows = len({row for _, row in pairs})
    each = f" ({len(pairs)} (system, row) pairs)" if len(pairs) != rows else ""
    return f"{rows} row(s) not graded{each}: a required section is not in the paper (dataset defect)"


def interval_note(intervals: Optional[Intervals], judged: bool = False, unit: str = "papers") -> Optional[str]:
    """What the ± in the leaderboard is; ``unit``: what is resampled together (the family's cluster unit)."""
    papers = [i.papers for per_metric in (intervals or {}).values() for i in per_metric.values() if i is not None]
    if not papers or max(papers) < 2:
        return None
    one = {"papers": "a paper's rows resampled together", "queries": "each query resampled"}.get(unit, unit)
    note = (f"±: half-width of a {CONFIDENCE:.0%} bootstrap interval over {unit} ({one}; {RESAMPLES:,} resamples, "
            "fixed seed); [low–high]: the interval itself where it is lopsided")
    if judged:
        note += "; in judge columns, the judges' mean disagreement"
    if max(papers) < FEW_PAPERS:
        note += f"; over only {max(papers)} {unit} the interval is rough and tends to be too narrow"
    return note


def leaderboard_notes(records: Sequence[RowRecord], family: Family, intervals: Optional[Intervals],
                      comparison: Optional[Comparison]) -> list[str]:
    """The lines under the default leaderboard, the same in every medium: what its means are over, what
    its ± and Δ are, and which rows were not graded."""
    notes = [family.scope_note, interval_note(intervals, any(r.judge for r in records), family.cluster_unit),
             delta_note(comparison) if comparison is not None else None, defects_line(records)]
    return [n for n in notes if n]


def delta_note(comparison: Comparison) -> str:
    return (f"Δ: this run minus {comparison.baseline} on the rows both measured (paired by row id); "
            f"▼/▲: a significant drop/rise in quality (one-sided paper-clustered sign-flip test, alpha {ALPHA:g})")


def comparison_table(comparison: Comparison, family: Family) -> Table:
    """Per system and metric: both runs' means on the paired rows, the delta, its interval and p-value."""
    rows: list[list[object]] = []
    for s in comparison.systems:
        if s.baseline_system is None:
            continue
        name = s.system if s.baseline_system == s.system else f"{s.system} vs {s.baseline_system}"
        for spec in family.metrics:
            test = s.deltas.get(spec.name)
            if test is None:  # one run alone measured it: its mean, the rest blank (coverage_lines says why)
                new_mean, old_mean = side_means(s.pairs, spec.name)
                if (new_mean, old_mean) != (None, None):
                    rows.append([name, spec.label, cell(new_mean), cell(old_mean), "—", "—", "—", "—"])
                continue
            interval = f"{test.low:+.3f} to {test.high:+.3f}" if test.low is not None and test.high is not None \
                else "—"
            rows.append([name, spec.label, cell(test.new_mean), cell(test.old_mean),
                         delta_cell(test, spec.higher_is_better), interval,
                         describe_p(test.p_worse(spec.higher_is_better)), f"{test.papers}/{test.rows}"])
    return Table("comparison", ["system", "metric", "this run", "baseline", "Δ", f"{CONFIDENCE:.0%} CI of Δ",
                                "p (worse)", f"{comparison.unit}/rows"], rows)


def comparison_text(comparison: Comparison, family: Family) -> str:
    """The comparison as terminal text: the table, then what was paired and what was not."""
    from tabulate import tabulate

    table = comparison_table(comparison, family)
    parts = [f"against {comparison.baseline}:"]
    if table.rows:
        parts.append(tabulate(table.rows, headers=table.headers, tablefmt="github", disable_numparse=True))
    parts += coverage_lines(comparison)
    return "\n".join(parts)


def leaderboard(records: Sequence[RowRecord], family: Family, intervals: Optional[Intervals] = None,
                comparison: Optional[Comparison] = None, results: Optional[dict[str, Any]] = None) -> str:
    """The leaderboard and its breakdowns as terminal text (a family with its own renderer renders it)."""
    from tabulate import tabulate

    rendered, failed = family.render(records, results)
    if rendered is not None:
        return rendered

    tables = leaderboard_tables(records, family, intervals, comparison)
    parts = [tabulate(tables[0].rows, headers=tables[0].headers, tablefmt="github", disable_numparse=True)]
    parts += leaderboard_notes(records, family, intervals, comparison) + ([failed] if failed else [])
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
