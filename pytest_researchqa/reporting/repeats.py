"""How much a model's results move between answers of the same rows (--researchqa-repeats). Pure.

A run with N answers a row is N runs in one: each repeat's mean is what a run without repeats
would have reported, so their spread is the run-to-run spread of that number; the per-row
spread says how often a single answer changes its grade.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Optional, Sequence

from ..records import RowRecord
from .summaries import system_of


@dataclass(frozen=True)
class RepeatSpread:
    system: str
    metric: str
    run_means: tuple[Optional[float], ...]  # the mean of each repeat, in repeat order
    run_sd: Optional[float]  # standard deviation of those means
    row_sd: Optional[float]  # the mean over rows of each row's standard deviation across its answers


def repeat_spreads(records: Sequence[RowRecord], metrics: Sequence[str]) -> list[RepeatSpread]:
    """One entry per system answered more than once a row and metric it has values for."""
    by_system: dict[str, list[RowRecord]] = {}
    for record in records:
        if record.graded:
            by_system.setdefault(system_of(record), []).append(record)
    found = []
    for system, rows in by_system.items():
        repeats = sorted({r.repeat for r in rows})
        if len(repeats) < 2:
            continue
        for metric in metrics:
            per_repeat = [[v for r in rows if r.repeat == k and (v := r.metrics.get(metric)) is not None]
                          for k in repeats]
            if not any(per_repeat):
                continue
            run_means = tuple(statistics.fmean(values) if values else None for values in per_repeat)
            known = [m for m in run_means if m is not None]
            by_row: dict[str, list[float]] = {}
            for r in rows:
                value = r.metrics.get(metric)
                if value is not None:
                    by_row.setdefault(r.row_id or r.nodeid or "?", []).append(value)
            row_sds = [statistics.stdev(values) for values in by_row.values() if len(values) > 1]
            found.append(RepeatSpread(system, metric, run_means, statistics.stdev(known) if len(known) > 1 else None,
                                      statistics.fmean(row_sds) if row_sds else None))
    return found


def per_row_means(records: Sequence[RowRecord]) -> list[RowRecord]:
    """One record per (system, row): the repeats of a row merged, each metric their mean (for pairing a
    run with a baseline row by row). Records without repeats are returned as they are."""
    from dataclasses import replace

    groups: dict[tuple[str, str], list[RowRecord]] = {}
    order: list[tuple[str, str]] = []
    for record in records:
        key = (system_of(record), record.row_id or record.nodeid or "?")
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append(record)
    merged = []
    for key in order:
        group = groups[key]
        if len(group) == 1:
            merged.append(group[0])
            continue
        graded = [r for r in group if r.graded] or group
        names = {name for r in graded for name in r.metrics}
        metrics = {}
        for name in sorted(names):
            values = [v for r in graded if (v := r.metrics.get(name)) is not None]
            metrics[name] = statistics.fmean(values) if values else None
        # A mean over answers some judge gave no verdict on is not every judge's mean: the merged record keeps
        # the judges of such an answer (compare.same_judges then leaves the row out of a judged comparison).
        gapped = next((r for r in graded if r.judge_failures), graded[0])
        merged.append(replace(graded[0], metrics=metrics, repeat=0, judge=gapped.judge))
    return merged
