"""Means of per-row records, grouped by any key (system, question type, domain...). Pure.

A row that errored or is a dataset defect is counted but never averaged; a
metric a row left undefined (``None``) is skipped, never read as 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from statistics import fmean
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Sequence

from ..records import RowRecord, answers_cost, verdicts_cost

if TYPE_CHECKING:  # pragma: no cover
    from ..families import MetricSpec

NO_SYSTEM = "(dataset)"


@dataclass(frozen=True)
class Summary:
    label: str  # the group's name: a system, or "system / value" for a breakdown
    rows: int
    errors: int
    defects: int
    means: dict[str, Optional[float]]
    latency_s: Optional[float] = None
    queue_s: Optional[float] = None  # waiting for a slot or pacing before the request was sent
    cost_usd: Optional[float] = None  # the answers'
    judge_cost_usd: Optional[float] = None  # the model judges' verdicts'
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    judge_means: dict[str, Optional[float]] = field(default_factory=dict)
    judge_spread: dict[str, Optional[float]] = field(default_factory=dict)
    judge_errors: int = 0

    def composite(self, measured: Sequence["MetricSpec"]) -> Optional[float]:
        """The sort key, between 0 and 1: the mean over the metrics the run measured of each metric's
        mean on one scale (:meth:`MetricSpec.score`: its declared range, a lower-is-better metric
        turned around), so a count of words cannot outweigh a share and fewer errors rank higher.

        A metric this group left undefined while others were measured on it (it never
        cited, so it has no accuracy) counts 0, the worst: citing nothing cannot outrank citing. A
        row that errored counts 0 too (the means leave it out, as the seed's do, but the ranking
        may not: crashing on the hard rows cannot outrank answering them).
        """
        if not measured or all(self.means.get(m.name) is None for m in measured):
            return None
        gradable = self.rows - self.defects
        answered = (gradable - self.errors) / gradable if gradable > 0 else 1.0
        return fmean(0.0 if (mean := self.means.get(m.name)) is None else m.score(mean) for m in measured) * answered


def summarize(label: str, records: Sequence[RowRecord], metrics: Sequence[str],
              judge_dimensions: Sequence[str] = ()) -> Summary:
    usable = [r for r in records if r.graded]
    means: dict[str, Optional[float]] = {}
    for metric in metrics:
        values = [v for r in usable if (v := r.metrics.get(metric)) is not None]
        means[metric] = fmean(values) if values else None
    latencies = [r.usage.latency_s for r in usable if r.usage.latency_s is not None]
    queued = [r.usage.queue_s for r in usable if r.usage.queue_s is not None]
    priced = [r for r in records if r.model_system and not r.error]
    judged = [r.judge for r in usable if r.judge]
    judge_means: dict[str, Optional[float]] = {}
    judge_spread: dict[str, Optional[float]] = {}
    for dimension in judge_dimensions:
        values = [v for j in judged if (v := j.consensus.get(dimension)) is not None]
        spreads = [v for j in judged if (v := j.spread.get(dimension)) is not None]
        judge_means[dimension] = fmean(values) if values else None
        judge_spread[dimension] = fmean(spreads) if spreads else None
    return Summary(
        label=label,
        rows=len(records),
        errors=sum(1 for r in records if r.error),
        defects=sum(1 for r in records if r.defect and not r.error),
        means=means,
        latency_s=fmean(latencies) if latencies else None,
        queue_s=fmean(queued) if queued else None,
        cost_usd=answers_cost(records),  # one unpriced answer: unknown, never $0
        judge_cost_usd=verdicts_cost(records),
        prompt_tokens=_total(r.usage.prompt_tokens for r in priced),
        completion_tokens=_total(r.usage.completion_tokens for r in priced),
        judge_means=judge_means,
        judge_spread=judge_spread,
        judge_errors=sum(1 for r in records if r.judge_failures),
    )


def _total(values: Iterable[Optional[int]]) -> Optional[int]:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def group(records: Iterable[RowRecord], key: Callable[[RowRecord], str]) -> dict[str, list[RowRecord]]:
    """Records by key, in first-seen order (stable across serial and xdist runs once sorted by caller)."""
    grouped: dict[str, list[RowRecord]] = {}
    for record in records:
        grouped.setdefault(key(record), []).append(record)
    return grouped


def system_of(record: RowRecord) -> str:
    return record.system or NO_SYSTEM


def by_system(records: Sequence[RowRecord], metrics: Sequence["MetricSpec"],
              judge_dimensions: Sequence[str] = ()) -> list[Summary]:
    """One summary per system, best first (see :meth:`Summary.composite`), ties by name."""
    names = [m.name for m in metrics]
    summaries = [summarize(system, rows, names, judge_dimensions)
                 for system, rows in group(records, system_of).items()]
    measured = [m for m in metrics if any(s.means[m.name] is not None for s in summaries)]

    def rank(summary: Summary) -> tuple[float, str]:
        composite = summary.composite(measured)
        return (-(composite if composite is not None else -1.0), summary.label)

    return sorted(summaries, key=rank)


def spread(values: Iterable[Optional[float]]) -> Optional[float]:
    """Largest minus smallest of the values present (None with fewer than two)."""
    present = [v for v in values if v is not None]
    return max(present) - min(present) if len(present) >= 2 else None


def listing_order(record: RowRecord) -> tuple[str, list[tuple[int, str]], int]:
    """By system, then row id in natural order (``r2`` before ``r10``), then repeat."""
    parts = [(int(digits), "") if digits else (0, text)
             for digits, text in re.findall(r"(\d+)|(\D+)", record.row_id or "")]
    return (record.system or "", parts, record.repeat)


def _row_name(record: RowRecord, repeated: "set[Optional[str]]") -> str:
    """The row's id, and which answer of it when its system answered rows several times (--researchqa-repeats:
    model systems; ``repeated`` names them)."""
    return (record.row_id or "?") + (f" (answer {record.repeat + 1})" if record.system in repeated else "")


def error_list(records: Sequence[RowRecord], limit: int = 10, terminal: bool = True) -> list[str]:
    """``system · row_id: the error's first line`` for rows in error (invalid dataset rows included), at most
    ``limit`` and a count of the rest, in the same order as :func:`short_list` (``terminal``: the count names
    pytest's option that lists them; a PR comment's reader has no terminal)."""
    errored = sorted((r for r in records if r.error), key=listing_order)
    repeated = {r.system for r in records if r.repeat}
    lines = [" · ".join(p for p in (r.system, _row_name(r, repeated)) if p) + f": {r.error.splitlines()[0]}"
             for r in errored[:limit] if r.error]
    if len(errored) > limit:
        lines.append(f"... and {len(errored) - limit} more" + (" (-rE lists them)" if terminal else ""))
    return lines


def short_list(records: Sequence[RowRecord], limit: int = 10, saved: bool = True, terminal: bool = True) -> list[str]:
    """``system · row_id: first line`` for rows below their bar, at most ``limit`` and a count of the rest
    (``saved``: the run is saved, so the count points at its rows.jsonl; ``terminal``: as in :func:`error_list`)."""
    # Sorted, not in the order rows finished: under xdist that order changes from run to run, and a
    # PR comment must not change when nothing else did.
    below = sorted((r for r in records if r.outcome in ("below_bar", "failed") and r.diagnosis), key=listing_order)
    repeated = {r.system for r in records if r.repeat}
    lines = [f"{r.system} · {_row_name(r, repeated)}: {(r.diagnosis or '').splitlines()[0]}" for r in below[:limit]]
    if len(below) > limit:
        where = [*(["every diagnosis is in the saved run's rows.jsonl"] if saved else []),
                 *(["-rx lists them"] if terminal else [])]
        lines.append(f"... and {len(below) - limit} more" + (f" ({'; '.join(where)})" if where else ""))
    return lines
