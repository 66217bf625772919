"""This run against a saved one: rows paired by id, per-metric deltas with their tests. Pure.

Each system of this run is compared with the baseline's system of the same name,
or the one ``--researchqa-compare-map=NEW=OLD`` names. Rows are paired by row id;
a metric is compared on the rows both runs graded and measured. Rows that only
one run has are kept, counted and named (:attr:`SystemComparison.only_here`,
:attr:`SystemComparison.only_baseline`), never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from ..families import Family
from ..records import RowRecord
from ..stats import PairedTest, paired_test
from .summaries import group, system_of

NAMED_ROWS = 10  # row ids named before "and N more"


@dataclass(frozen=True)
class Baseline:
    """A saved run to compare with: its name, records and dataset fingerprint."""

    name: str
    records: tuple[RowRecord, ...]
    dataset_sha: Optional[str] = None
    family: str = "citation"
    judging: Mapping[str, Any] = field(default_factory=dict)  # runs.judging_of its manifest


@dataclass(frozen=True)
class SystemComparison:
    system: str
    baseline_system: Optional[str]  # None: the baseline has no such system
    pairs: tuple[tuple[RowRecord, RowRecord], ...]  # (this run's record, the baseline's), by row id
    only_here: tuple[str, ...]  # row ids this run has and the baseline does not
    only_baseline: tuple[str, ...]
    deltas: dict[str, Optional[PairedTest]] = field(default_factory=dict)  # per family metric
    wanted: Optional[str] = None  # the baseline system looked for (a --researchqa-compare-map target)

    def scoped_pairs(self, question_type: Optional[str]) -> list[tuple[RowRecord, RowRecord]]:
        return [(new, old) for new, old in self.pairs if question_type in (None, new.question_type)]


@dataclass(frozen=True)
class Comparison:
    baseline: str  # the baseline run's name
    systems: tuple[SystemComparison, ...]
    unmatched_baseline_systems: tuple[str, ...] = ()  # baseline systems nothing here was compared with
    notes: tuple[str, ...] = ()
    unit: str = "papers"  # what the paired test resamples together (the family's cluster unit)
    # metric -> how the baseline measured it differently (MetricSpec.measured_by): its gates cannot decide
    measured_differently: Mapping[str, str] = field(default_factory=dict)

    def of(self, system: str) -> Optional[SystemComparison]:
        return next((s for s in self.systems if s.system == system), None)


def parse_mapping(items: Sequence[str]) -> dict[str, str]:
    """``NEW=OLD`` pairs: this run's system NEW is compared with the baseline's OLD."""
    mapping = {}
    for item in items:
        new, equals, old = item.partition("=")
        if not equals or not new.strip() or not old.strip():
            raise ValueError(f"{item!r}: expected NEW=OLD (this run's system = the baseline's system)")
        mapping[new.strip()] = old.strip()
    return mapping


def metric_pairs(pairs: Sequence[tuple[RowRecord, RowRecord]], metric: str) -> tuple[list[str], list[float],
                                                                                     list[float]]:
    """Papers, new values and old values of the pairs that both runs graded and measured on ``metric``."""
    papers, new, old = [], [], []
    for a, b in pairs:
        if not (a.graded and b.graded):
            continue
        x, y = a.metrics.get(metric), b.metrics.get(metric)
        if x is None or y is None:
            continue
        papers.append(a.paper_id or b.paper_id or a.row_id or "?")
        new.append(float(x))
        old.append(float(y))
    return papers, new, old


def paired_metric_test(pairs: Sequence[tuple[RowRecord, RowRecord]], metric: str) -> Optional[PairedTest]:
    papers, new, old = metric_pairs(pairs, metric)
    return paired_test(papers, new, old)


def compare(records: Sequence[RowRecord], baseline: Baseline, family: Family,
            mapping: Optional[Mapping[str, str]] = None, dataset_sha: Optional[str] = None,
            judging: Optional[Mapping[str, Any]] = None) -> Comparison:
    from .repeats import per_row_means

    mapping = dict(mapping or {})
    # A row answered several times (--researchqa-repeats) is paired once, as the mean of its answers.
    ours = group(per_row_means(records), system_of)
    theirs = group(per_row_means(baseline.records), system_of)
    systems = []
    for system in sorted(ours):
        counterpart = mapping.get(system, system)
        old_rows = theirs.get(counterpart)
        new_by_id = {r.row_id or r.nodeid or "?": r for r in ours[system]}
        if old_rows is None:
            systems.append(SystemComparison(system, None, (), tuple(sorted(new_by_id)), (), wanted=counterpart))
            continue
        old_by_id = {r.row_id or r.nodeid or "?": r for r in old_rows}
        shared = sorted(new_by_id.keys() & old_by_id.keys())
        pairs = tuple((new_by_id[k], old_by_id[k]) for k in shared)
        deltas = {m: paired_metric_test(pairs, m) for m in family.metric_names}
        systems.append(SystemComparison(system, counterpart, pairs, tuple(sorted(new_by_id.keys() - old_by_id.keys())),
                                        tuple(sorted(old_by_id.keys() - new_by_id.keys())), deltas))
    used = {s.baseline_system for s in systems}
    unmatched = tuple(sorted(name for name in theirs if name not in used))
    notes = [f"the map {new}={old} names no system of this run (its systems: {', '.join(sorted(ours))})"
             for new, old in sorted(mapping.items()) if new not in ours]
    if dataset_sha and baseline.dataset_sha and dataset_sha != baseline.dataset_sha:
        notes.append(f"the baseline {baseline.name} was measured on a different version of the dataset file "
                     "(rows are paired by id: a changed row compares different questions)")
    differs = judging_differs(judging or {}, baseline.judging)
    if differs:
        notes.append(f"the baseline {baseline.name} was judged differently ({differs}): what a judge decides "
                     "compares two different measurements")
    measured_differently = {m.name: why for m in family.metrics
                            if (why := judging_differs(judging or {}, baseline.judging, m.measured_by))}
    return Comparison(baseline.name, tuple(systems), unmatched, tuple(notes), family.cluster_unit,
                      measured_differently)


_JUDGES_OWN_KEYS = ("judges", "judge_mode", "protocol")  # said of a run's judges: alike when either ran none


def judging_differs(mine: Mapping[str, Any], theirs: Mapping[str, Any], keys: Optional[Sequence[str]] = None) -> str:
    """How two runs' judging (``runs.judging_of``) differs in ``keys`` (all it says by default) where both said
    it ("" when alike); the judges' own keys count only when both runs were judged."""
    keys = list(mine) if keys is None else keys
    both_judged = bool(mine.get("judges")) and bool(theirs.get("judges"))
    return "; ".join(f"{key} {_said(mine[key])} here, {_said(theirs[key])} there" for key in keys
                     if key in mine and key in theirs and mine[key] != theirs[key]
                     and (both_judged or key not in _JUDGES_OWN_KEYS))


def _said(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def name_rows(row_ids: Sequence[str]) -> str:
    """``3 row(s): a, b, c`` -- at most NAMED_ROWS named, then how many more."""
    named = ", ".join(row_ids[:NAMED_ROWS])
    more = f" and {len(row_ids) - NAMED_ROWS} more" if len(row_ids) > NAMED_ROWS else ""
    return f"{len(row_ids)} row(s): {named}{more}"


def coverage_lines(comparison: Comparison) -> list[str]:
    """What was paired and what was not, per system: never a silent drop."""
    lines = []
    for s in comparison.systems:
        if s.baseline_system is None:
            why = missing_counterpart(s.system, s.wanted, comparison.baseline)
            lines.append(f"{s.system}: {why}; {name_rows(s.only_here)} not compared")
            continue
        against = "" if s.baseline_system == s.system else f" (as {s.baseline_system})"
        line = f"{s.system}{against}: {len(s.pairs)} row(s) paired"
        if s.only_here:
            line += f"; only in this run: {name_rows(s.only_here)}"
        if s.only_baseline:
            line += f"; only in the baseline: {name_rows(s.only_baseline)}"
        lines.append(line)
    if comparison.unmatched_baseline_systems:
        lines.append(f"baseline systems nothing was compared with: {', '.join(comparison.unmatched_baseline_systems)}")
    return lines + list(comparison.notes)


def missing_counterpart(system: str, wanted: Optional[str], baseline: str) -> str:
    """Why a system has nothing to compare with: the baseline lacks it, or lacks the system it was mapped to
    (``wanted``). Said for a live run and for ``python -m pytest_researchqa compare``, each with its option."""
    if wanted is not None and wanted != system:
        return f"the baseline {baseline} has no system {wanted!r} (the --researchqa-compare-map target)"
    return (f"the baseline {baseline} has no system {system!r} (map it with "
            f"--researchqa-compare-map={system}=BASELINE_SYSTEM, or compare's --map {system}=BASELINE_SYSTEM)")
