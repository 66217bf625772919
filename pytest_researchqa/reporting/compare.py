"""This run against a saved one: rows paired by id, per-metric deltas with their tests. Pure.

Each system of this run is compared with the baseline's system of the same name,
or the one ``--researchqa-compare-map=NEW=OLD`` names. Rows are paired by row id;
a metric is compared on the rows both runs graded and measured; a metric the row's judges score (its
``MetricSpec.measured_by`` names ``judges``) only on the rows the same judges gave a verdict in both runs
(a judge error in one run makes its value another measurement): those left out are counted and the judges
named (:class:`JudgeGaps`). Rows that only one run has are kept, counted and named
(:attr:`SystemComparison.only_here`, :attr:`SystemComparison.only_baseline`), never silently dropped.
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
    # per judged metric: the paired rows its deltas leave out, judged by other judges in one run (JudgeGaps)
    judge_gaps: dict[str, "JudgeGaps"] = field(default_factory=dict)

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
    # the metrics the row's judges score (measured_by names "judges"): compared on rows alike judged only
    judged_metrics: tuple[str, ...] = ()

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
        if not both_measured(a, b, metric):
            continue
        papers.append(a.paper_id or b.paper_id or a.row_id or "?")
        new.append(float(a.metrics[metric]))  # type: ignore[arg-type]  # both_measured: not None
        old.append(float(b.metrics[metric]))  # type: ignore[arg-type]
    return papers, new, old


def both_measured(a: RowRecord, b: RowRecord, metric: str) -> bool:
    """Both runs graded the row and have a value of ``metric`` on it: a pair its comparison can read."""
    return a.graded and b.graded and a.metrics.get(metric) is not None and b.metrics.get(metric) is not None


def side_means(pairs: Sequence[tuple[RowRecord, RowRecord]], metric: str) -> tuple[Optional[float], Optional[float]]:
    """Each run's mean of ``metric`` over the paired rows it graded and measured it on (None: on none)."""
    means: list[Optional[float]] = []
    for side in (0, 1):
        values = [float(v) for pair in pairs if pair[side].graded and (v := pair[side].metrics.get(metric)) is not None]
        means.append(sum(values) / len(values) if values else None)
    return means[0], means[1]


def paired_metric_test(pairs: Sequence[tuple[RowRecord, RowRecord]], metric: str) -> Optional[PairedTest]:
    papers, new, old = metric_pairs(pairs, metric)
    return paired_test(papers, new, old)


def verdicts(record: RowRecord) -> frozenset[str]:
    """The judges that gave the row a verdict (its judge errors left out)."""
    by_judge = record.judge.by_judge if record.judge is not None else {}
    return frozenset(name for name, scores in by_judge.items() if not scores.error)


@dataclass(frozen=True)
class JudgeGaps:
    """The paired rows a judged metric's comparison leaves out: both runs measured the metric on them, but
    not with the same judges (a judge error in one run, as a provider outage), so their difference compares
    one judge's score with several judges' mean. Per run, each judge with no verdict on some of them: how
    many, and its first error."""

    rows: int = 0  # paired rows left out
    measured: int = 0  # paired rows both runs graded and measured (those left out among them)
    here: tuple[tuple[str, int, str], ...] = ()  # (judge, rows, first error or "" if not a judge of it) of this run
    there: tuple[tuple[str, int, str], ...] = ()  # of the baseline

    def describe(self, baseline: str) -> str:
        """``left out 3 of 12 paired row(s), not judged by the same judges in both runs (judge errors in this
        run: openai/b on 3 (its first error))`` ("" when none was left out)."""
        if not self.rows:
            return ""
        return (f"left out {self.rows} of {self.measured} paired row(s), not judged by the same judges in both runs "
                f"({self.errors(baseline)})")

    def none_left(self, baseline: str) -> str:
        """Why a test had no row: every one both runs measured was left out ("" when some were not)."""
        if not self.rows or self.rows < self.measured:
            return ""
        return (f"its {self.rows} measured paired row(s) were left out, not judged by the same judges in both runs: "
                f"{self.errors(baseline)}")

    def errors(self, baseline: str) -> str:
        """Per run, the judges that gave no verdict on rows left out: on how many, and the first error; a judge
        the run never asked (runs judged by different judges) is named as such, not as an error (tester43
        LOW-5)."""
        failed, absent = [], []
        for run, judges in (("this run", self.here), (f"the baseline {baseline}", self.there)):
            errors = [f"{name} on {n} ({_tail(error)})" for name, n, error in judges if error]
            if errors:
                failed.append(f"in {run}: " + ", ".join(errors))
            absent += [f"{name} is not a judge of {run} ({n} row(s))" for name, n, error in judges if not error]
        return "; ".join(([f"judge errors {'; '.join(failed)}"] if failed else []) + absent)


def _tail(error: str, width: int = 80) -> str:
    """An error on one line, its end kept when long (where a provider's error says what went wrong)."""
    text = " ".join(error.split())
    return text if len(text) <= width else "…" + text[1 - width:]


def same_judges(pairs: Sequence[tuple[RowRecord, RowRecord]],
                metric: str) -> tuple[list[tuple[RowRecord, RowRecord]], JudgeGaps]:
    """The pairs to compare a judged metric on, and those left out: a pair both runs measured whose judges
    that gave a verdict differ between the runs (:class:`JudgeGaps`)."""
    kept, measured, left = [], 0, 0
    missing: tuple[dict[str, list[str]], dict[str, list[str]]] = ({}, {})
    for new, old in pairs:
        if not both_measured(new, old, metric):
            kept.append((new, old))  # metric_pairs leaves it out, as any unmeasured pair
            continue
        measured += 1
        gave = verdicts(new), verdicts(old)
        if gave[0] == gave[1]:
            kept.append((new, old))
            continue
        left += 1
        named = dict.fromkeys([*_judges_of(new), *_judges_of(old)])
        for record, gave_here, found in ((new, gave[0], missing[0]), (old, gave[1], missing[1])):
            for name in named:
                if name not in gave_here:
                    found.setdefault(name, []).append(_judge_error(record, name))
    here, there = (tuple((name, len(errors), errors[0]) for name, errors in sorted(found.items()))
                   for found in missing)
    return kept, JudgeGaps(left, measured, here, there)


def comparable(pairs: Sequence[tuple[RowRecord, RowRecord]], metric: str,
               judged: Sequence[str]) -> tuple[list[tuple[RowRecord, RowRecord]], JudgeGaps]:
    """The pairs a metric is compared on: for a judged metric (in ``judged``, Comparison.judged_metrics), those
    the same judges gave a verdict in both runs (:func:`same_judges`); for any other, all of them."""
    return same_judges(pairs, metric) if metric in judged else (list(pairs), JudgeGaps())


def _judges_of(record: RowRecord) -> list[str]:
    return list(record.judge.by_judge) if record.judge is not None else []


def _judge_error(record: RowRecord, name: str) -> str:
    """The judge's error on the row; "" when the run has no verdict of it at all (not one of its judges)."""
    scores = record.judge.by_judge.get(name) if record.judge is not None else None
    error = scores.error if scores is not None and scores.error else ""
    return error.removeprefix(f"judge {name}: ")


def judged_metrics(family: Family) -> tuple[str, ...]:
    """The metrics the row's judges score: a pair is compared on them only where the same judges gave a verdict
    in both runs (:func:`same_judges`)."""
    return tuple(m.name for m in family.metrics if "judges" in m.measured_by)


def compare(records: Sequence[RowRecord], baseline: Baseline, family: Family,
            mapping: Optional[Mapping[str, str]] = None, dataset_sha: Optional[str] = None,
            judging: Optional[Mapping[str, Any]] = None) -> Comparison:
    from .repeats import per_row_means

    mapping = dict(mapping or {})
    # A row answered several times (--researchqa-repeats) is paired once, as the mean of its answers.
    ours = group(per_row_means(records), system_of)
    judged = judged_metrics(family)
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
        deltas, gaps = {}, {}
        for m in family.metric_names:
            compared, gaps[m] = comparable(pairs, m, judged)
            deltas[m] = paired_metric_test(compared, m)
        systems.append(SystemComparison(system, counterpart, pairs, tuple(sorted(new_by_id.keys() - old_by_id.keys())),
                                        tuple(sorted(old_by_id.keys() - new_by_id.keys())), deltas,
                                        judge_gaps={m: g for m, g in gaps.items() if g.rows}))
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
                      measured_differently, judged)


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


def unmeasured_why(pairs: "Sequence[tuple[RowRecord, RowRecord]]", baseline: str, metric: str = "") -> str:
    """Why no paired row has the metric in both runs: no row id in both, one run graded none of them (a
    baseline whose every row errored), one run has no value of ``metric`` on any (its graded rows are those the
    metric does not apply to, a pull request whose other rows all errored), or the two sets do not meet; as far
    as the records tell."""
    if not pairs:
        return f"no row it covers is in both this run and the baseline {baseline}: another dataset or selection?"
    for run, records in (("this run", [new for new, _ in pairs]),
                         (f"the baseline {baseline}", [old for _, old in pairs])):
        if any(r.graded and (not metric or r.metrics.get(metric) is not None) for r in records):
            continue
        errored = sum(1 for r in records if r.error)
        defects = sum(1 for r in records if r.defect and not r.error)
        valueless = sum(1 for r in records if r.graded)
        parts = [f"{errored} errored" if errored else "", f"{defects} dataset defect(s)" if defects else "",
                 f"{valueless} graded without a {metric} value" if valueless else ""]
        done = f"measured {metric} on" if valueless else "graded"
        return f"{run} {done} none of the {len(pairs)} paired rows: {', '.join(p for p in parts if p)}"
    if metric:
        return f"this run and the baseline {baseline} measured {metric} on different rows"
    return ""


def coverage_lines(comparison: Comparison) -> list[str]:
    """What was paired and what was not, per system: never a silent drop."""
    lines = []
    for s in comparison.systems:
        if s.baseline_system is None:
            why = missing_counterpart(s.system, s.wanted, comparison.baseline, comparison.unmatched_baseline_systems)
            lines.append(f"{s.system}: {why}; {name_rows(s.only_here)} not compared")
            continue
        against = "" if s.baseline_system == s.system else f" (as {s.baseline_system})"
        line = f"{s.system}{against}: {len(s.pairs)} row(s) paired"
        if s.only_here:
            line += f"; only in this run: {name_rows(s.only_here)}"
        if s.only_baseline:
            line += f"; only in the baseline: {name_rows(s.only_baseline)}"
        for metric, gaps in s.judge_gaps.items():
            line += f"; {metric}: {gaps.describe(comparison.baseline)}"
        for metric, test in s.deltas.items():  # measured by one run only (a system that stopped citing): said
            if test is None and metric not in s.judge_gaps and side_means(s.pairs, metric) != (None, None):
                line += f"; {metric} not compared: {unmeasured_why(s.pairs, comparison.baseline, metric)}"
        lines.append(line)
    if comparison.unmatched_baseline_systems:
        lines.append(f"baseline systems nothing was compared with: {', '.join(comparison.unmatched_baseline_systems)}")
    return lines + list(comparison.notes)


def missing_counterpart(system: str, wanted: Optional[str], baseline: str, unmatched: Sequence[str] = ()) -> str:
    """Why a system has nothing to compare with: the baseline lacks it, or lacks the system it was mapped to
    (``wanted``). Said for a live run and for ``python -m pytest_researchqa compare``, each with its option;
    the map names the baseline's one system nothing was compared with when there is one (``unmatched``)."""
    if wanted is not None and wanted != system:
        return f"the baseline {baseline} has no system {wanted!r} (the --researchqa-compare-map target)"
    old = unmatched[0] if len(unmatched) == 1 else "BASELINE_SYSTEM"
    return (f"the baseline {baseline} has no system {system!r} (map it with "
            f"--researchqa-compare-map={system}={old}, or compare's or view's --map {system}={old})")
