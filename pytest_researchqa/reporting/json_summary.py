"""The run as one JSON document for dashboards: ``researchqa-summary/1`` (docs/json.md). Renders only.

Written by ``--researchqa-json=FILE``, kept in every saved run as ``summary.json`` and printed
by ``python -m pytest_researchqa show --json``. Its ``schema`` names the version: a reader
that finds a newer one should refuse it; fields are only ever added within a version.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..families import Family
from .compare import coverage_lines
from .repeats import repeat_spreads
from .summaries import by_system

if TYPE_CHECKING:  # pragma: no cover
    from .outcome import Check, RunOutcome

SCHEMA = "researchqa-summary/1"


def _number(value: Optional[float]) -> Optional[float]:
    """JSON has no NaN or infinity: those become null, as an undefined metric does."""
    return value if value is not None and math.isfinite(value) else None


def _dollars(value: Optional[float]) -> Optional[float]:
    """Rounded to a millionth of a dollar: a sum of prices is not exact in binary (0.3434999999999999)."""
    return None if (cost := _number(value)) is None else round(cost, 6)


def json_safe(data: Any) -> Any:
    """``data`` (plain lists, dicts and scalars) with each NaN or infinity made null (``_number``): what JSON
    readers (and the HTML page's script) accept."""
    if isinstance(data, float):
        return _number(data)
    if isinstance(data, dict):
        return {key: json_safe(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_safe(value) for value in data]
    return data


def summary(outcome: "RunOutcome", family: Family, run: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """Plain data: per system its metrics with intervals, counts, errors, cost; each gate's state."""
    systems = []
    dimensions = [d.name for d in family.judge_dimensions]
    for item in by_system(outcome.records, family.metrics, dimensions):
        intervals = outcome.intervals.get(item.label, {})
        metrics = {}
        for metric in family.metric_names:
            interval = intervals.get(metric)
            metrics[metric] = {
                "mean": _number(item.means.get(metric)),
                "low": _number(interval.low) if interval is not None else None,
                "high": _number(interval.high) if interval is not None else None,
                # The units the interval resampled (``unit``: papers, or queries for a family without papers);
                # "papers" is the name older readers know, the same number, kept for a release.
                "units": interval.papers if interval is not None else None,
                "papers": interval.papers if interval is not None else None,
                "rows": interval.rows if interval is not None else None,
            }
        systems.append({
            "system": item.label,
            "rows": item.rows,
            "errors": item.errors,
            "defects": item.defects,
            "below_bar": sum(1 for r in outcome.records if r.system == item.label
                             and r.outcome in ("below_bar", "failed")),
            "metrics": metrics,
            "judge": {k: _number(v) for k, v in item.judge_means.items()},
            "latency_s": _number(item.latency_s),
            "cost_usd": _dollars(item.cost_usd),
            "judge_cost_usd": _dollars(item.judge_cost_usd),
            "prompt_tokens": item.prompt_tokens,
            "completion_tokens": item.completion_tokens,
        })
    return {
        "schema": SCHEMA,
        "family": family.name,
        "unit": family.cluster_unit,
        "verdict": outcome.verdict,
        "gated": outcome.gated,
        "interrupted": outcome.interrupted,
        "headline": outcome.headline,
        "passed": outcome.passed,
        "measured": outcome.measured,
        "selected": outcome.selection.rows,
        "errors": outcome.errors,
        "invalid_rows": len(outcome.invalid_rows),
        "below_bar": outcome.below_bar + outcome.failed_rows,
        "compared_with": outcome.comparison.baseline if outcome.comparison else None,
        # What the comparison paired and what not (rows only one run has, a changed dataset file), as every
        # medium says it under the comparison.
        "comparison_notes": coverage_lines(outcome.comparison) if outcome.comparison else [],
        "missing_baseline": outcome.missing_baseline,
        "checks": [{"kind": c.kind, "name": c.name, "state": c.state, "fails_run": c.fails_run,
                    "message": c.message} for c in outcome.checks],
        "gates": [{"gate": g.gate.label, "metric": g.gate.metric, "question_type": g.gate.question_type,
                   "system": g.system, "threshold": g.gate.threshold, "value": _number(g.value), "state": g.state}
                  for g in outcome.gates],
        "regressions": [{"gate": r.gate.label, "metric": r.gate.metric, "question_type": r.gate.question_type,
                         "system": r.system, "baseline": r.baseline, "baseline_system": r.baseline_system,
                         # A gate that decided nothing has no rule it decided by (tester44 LOW-6): null both.
                         "min_effect": None if r.state == "undecidable" else (
                             r.gate.min_effect if r.can_reach_alpha else r.small_data_effect),
                         "decided_on": None if r.state == "undecidable" else (
                             "significance" if r.can_reach_alpha else "effect size"), "state": r.state,
                         "delta": _number(r.test.delta) if r.test else None,
                         "p_worse": _number(r.test.p_worse(r.gate.higher_is_better)) if r.test else None,
                         "units": r.test.papers if r.test else None, "unit": r.unit,
                         "units_changed": r.test.changed if r.test else None,
                         "rows": r.test.rows if r.test else None}
                        for r in outcome.regressions],
        "partial_reasons": list(outcome.partial_reasons),
        "notes": list(outcome.notes),
        "systems": systems,
        "repeats": [{"system": s.system, "metric": s.metric, "run_means": [_number(m) for m in s.run_means],
                     "run_sd": _number(s.run_sd), "row_sd": _number(s.row_sd)}
                    for s in repeat_spreads(outcome.records, family.metric_names)],
        # The family's end-of-run results as it keeps them (the rubric family: battles, Elo, win rates).
        "family_results": json_safe(outcome.family_results or {}),
        "run": {k: (run or {}).get(k) for k in ("name", "started", "ended", "git_commit", "dataset")},
    }


def recorded_checks(data: Any) -> Optional[tuple[bool, tuple["Check", ...]]]:
    """Whether a saved summary's run was gated, and the checks it decided (well-formed ones only);
    None when the summary carries no checks."""
    from .outcome import Check

    if not isinstance(data, dict) or not isinstance(data.get("checks"), list):
        return None
    checks = tuple(
        Check(c["kind"], c["name"], c["state"], c["message"], c["fails_run"]) for c in data["checks"]
        if isinstance(c, dict) and all(isinstance(c.get(k), str) for k in ("kind", "name", "message"))
        and c.get("state") in ("passed", "failed", "undecidable") and isinstance(c.get("fails_run"), bool))
    return bool(data.get("gated", data.get("verdict") != "report")), checks


def write_json(path: Path, data: dict[str, Any]) -> None:
    from ..papers import atomic_write
    from ..text_safety import utf8

    atomic_write(path, utf8(json.dumps(data, indent=2, ensure_ascii=False) + "\n"))
