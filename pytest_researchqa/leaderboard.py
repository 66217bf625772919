"""Aggregate per-row records into the leaderboard, and evaluate gates.

Records are plain dicts (they cross xdist): ``system``, ``row_id``,
``paper_id``, ``question_type``, ``domain``, ``metrics`` (name -> float or
None), ``latency_s``, ``error`` (text or None), ``defect`` (text or None),
``expected_found``/``expected_total`` (the dataset's self-check).
A row that errored or is a dataset defect is counted but not averaged.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean
from typing import Iterable, Optional, Sequence

from .options import METRIC_NAMES, Gate

JUDGE_COLUMNS = ("factual", "complete")
JUDGE_DIMENSIONS = ("factual_accuracy", "completeness")
# A judge metric whose spread across systems (rescaled from 1-5 to 0-1) is under this share of
# the deterministic metrics' spread is reported as saturated.
SATURATION_RATIO = 0.5
_SHORT = {
    "citation_precision": "cite prec",
    "section_coverage": "sect cov",
    "citation_accuracy": "cite acc",
    "refusal_correctness": "refusal",
    "premise_flagged": "flagged",
}
SCOPE_NOTE = ("cite prec, sect cov, cite acc: means over answerable rows; refusal, flagged: over false-premise "
              "rows (adversarial, unless expected_refusal is false)")


@dataclass(frozen=True)
class Summary:
    system: str
    rows: int
    errors: int
    defects: int
    means: dict[str, Optional[float]]
    latency_s: Optional[float]
    cost_usd: Optional[float] = None
    judge_means: dict = None  # dimension -> mean consensus score (1-5) or None
    judge_spread: dict = None  # dimension -> mean per-row spread between judges, or None
    judge_errors: int = 0

    def composite(self, measured: Iterable[str]) -> Optional[float]:
        """The sort key: mean of the deterministic metric means over the metrics the run measured.

        A metric this system left undefined while others were measured on it (it never
        cited, so it has no accuracy) counts 0: citing nothing cannot outrank citing.
        """
        metrics = [m for m in measured]
        if not metrics or all(self.means.get(m) is None for m in metrics):
            return None
        return fmean(self.means.get(m) or 0.0 for m in metrics)


def graded(record: dict) -> bool:
    return not record.get("error") and not record.get("defect")


def summarize(system: str, records: Sequence[dict]) -> Summary:
    usable = [r for r in records if graded(r)]
    means = {}
    for metric in METRIC_NAMES:
        values = [r["metrics"][metric] for r in usable if r["metrics"].get(metric) is not None]
        means[metric] = fmean(values) if values else None
    latencies = [r["latency_s"] for r in usable if r.get("latency_s") is not None]
    priced = [r for r in records if "cost_usd" in r]
    # Unknown prices stay unknown: one unpriced row makes the total "—", never $0.
    cost = sum(r["cost_usd"] for r in priced) if priced and all(r["cost_usd"] is not None for r in priced) else None
    judged = [r["judge"] for r in usable if r.get("judge")]
    judge_means, judge_spread = {}, {}
    for dimension in JUDGE_DIMENSIONS:
        values = [j["consensus"][dimension] for j in judged if j["consensus"].get(dimension) is not None]
        spreads = [j["spread"][dimension] for j in judged if j["spread"].get(dimension) is not None]
        judge_means[dimension] = fmean(values) if values else None
        judge_spread[dimension] = fmean(spreads) if spreads else None
    return Summary(
        judge_means=judge_means,
        judge_spread=judge_spread,
        judge_errors=sum(1 for r in records if r.get("judge") and any(
            "error" in s for s in r["judge"]["by_judge"].values())),
        system=system,
        rows=len(records),
        errors=sum(1 for r in records if r.get("error")),
        defects=sum(1 for r in records if r.get("defect") and not r.get("error")),
        means=means,
        latency_s=fmean(latencies) if latencies else None,
        cost_usd=cost,
    )


def by_system(records: Iterable[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for record in records:
        grouped.setdefault(record.get("system") or "(dataset)", []).append(record)
    return grouped


def _cell(value: Optional[float], digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _judge_cell(summary: Summary, dimension: str) -> str:
    mean = (summary.judge_means or {}).get(dimension)
    if mean is None:
        return "error" if summary.judge_errors and summary.rows == summary.judge_errors else "—"
    spread = (summary.judge_spread or {}).get(dimension)
    return f"{mean:.2f}" + (f" ±{spread:.2f}" if spread is not None else "")


def leaderboard_rows(records: Sequence[dict]) -> list[Summary]:
    summaries = [summarize(system, rows) for system, rows in by_system(records).items()]
    measured = [m for m in METRIC_NAMES if any(s.means[m] is not None for s in summaries)]

    def rank(summary: Summary) -> tuple[float, str]:
        composite = summary.composite(measured)
        return (-(composite if composite is not None else -1.0), summary.system)

    return sorted(summaries, key=rank)


def render(records: Sequence[dict]) -> str:
    """The leaderboard, then the same metrics per question type and per domain."""
    from tabulate import tabulate

    summaries = leaderboard_rows(records)
    headers = ["system", *(_SHORT[m] for m in METRIC_NAMES), *JUDGE_COLUMNS, "rows", "errors", "latency s", "cost $"]
    judging = any(r.get("judge") for r in records)
    position = headers.index("latency s")
    if judging:
        headers.insert(position, "judge err")
    table = []
    for s in summaries:
        cells = [s.system, *(_cell(s.means[m]) for m in METRIC_NAMES), *(_judge_cell(s, d) for d in JUDGE_DIMENSIONS),
                 s.rows, s.errors, _cell(s.latency_s, 2), _cell(s.cost_usd, 4)]
        if judging:
            cells.insert(position, s.judge_errors)
        table.append(cells)
    parts = [tabulate(table, headers=headers, tablefmt="github", disable_numparse=True), SCOPE_NOTE]
    defects = sum(s.defects for s in summaries)
    if defects:
        parts.append(f"{defects} row(s) not graded: a required section is not in the paper (dataset defect)")
    for title, field in (("question type", "question_type"), ("domain", "domain")):
        breakdown = []
        order = {system.system: n for n, system in enumerate(summaries)}
        groups: dict[tuple[str, str], list[dict]] = {}
        for record in records:
            groups.setdefault((record.get("system") or "(dataset)", record.get(field) or "?"), []).append(record)
        for (system, value), rows in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 0), kv[0][1])):
            s = summarize(system, rows)
            breakdown.append([system, value, *(_cell(s.means[m]) for m in METRIC_NAMES), s.rows, s.errors])
        parts.append(f"by {title}:")
        parts.append(
            tabulate(breakdown, headers=["system", title, *(_SHORT[m] for m in METRIC_NAMES), "rows", "errors"],
                     tablefmt="github", disable_numparse=True)
        )
    return "\n".join(parts)


def render_guards(records: Sequence[dict]) -> list[str]:
    """The judges' reliability guards: same family, flip rate, saturation, contradictions."""
    from .llm_params import model_family

    judged = [r for r in records if r.get("judge") and graded(r)]
    if not judged:
        return []
    lines = []
    pairs = sorted({(r["system"], judge) for r in judged for judge in r["judge"]["by_judge"]})
    for system, judge in pairs:
        if model_family(system) == model_family(judge):
            lines.append(f"warning: judge {judge} grades {system}, a model of the same family "
                         f"({model_family(judge)}): same-family judges tend to over-rate their own")
    probes = [(r, name, scores) for r in judged for name, scores in (r["judge"].get("repeats") or {}).items()]
    if probes:
        flips = sum(1 for _, _, scores in probes for d in JUDGE_DIMENSIONS if len({s[d] for s in scores}) > 1)
        total = len(probes) * len(JUDGE_DIMENSIONS)
        repeats = len(probes[0][2]) - 1
        lines.append(f"flip rate: {flips}/{total} judge scores ({flips / total:.1%}) changed when "
                     f"{len(probes)} sampled verdicts were re-judged {repeats} more time(s)")
    summaries = leaderboard_rows(records)
    if len(summaries) >= 2:
        spreads = {m: _spread([s.means[m] for s in summaries]) for m in METRIC_NAMES}
        deterministic = max((v for v in spreads.values() if v is not None), default=None)
        for dimension, label in zip(JUDGE_DIMENSIONS, JUDGE_COLUMNS):
            judge_spread = _spread([(s.judge_means or {}).get(dimension) for s in summaries])
            if judge_spread is None or deterministic is None:
                continue
            if judge_spread / 4 < SATURATION_RATIO * deterministic:
                lines.append(f"saturation: the judges' {label} separates the systems by {judge_spread:.3f} on 1-5 "
                             f"({judge_spread / 4:.3f} rescaled to 0-1), the citation metrics by {deterministic:.3f}: "
                             "read the deterministic columns first")
    contradictions = [r for r in judged if (r["judge"]["consensus"].get("factual_accuracy") or 0) >= 4
                      and r["metrics"].get("citation_accuracy") is not None and r["metrics"]["citation_accuracy"] < 1]
    for r in contradictions:
        lines.append(f"contradiction: {r.get('nodeid') or r['row_id']}: judged factual "
                     f"{r['judge']['consensus']['factual_accuracy']:.1f} although a citation is fabricated "
                     f"(citation accuracy {r['metrics']['citation_accuracy']:.2f})")
    return lines


def _spread(values: list) -> Optional[float]:
    present = [v for v in values if v is not None]
    return max(present) - min(present) if len(present) >= 2 else None


def render_audit(records: Sequence[dict]) -> str:
    """Per paper: the share of expected passages its extracted text contains."""
    from tabulate import tabulate

    papers: dict[str, list[int]] = {}
    for record in records:
        if record.get("expected_total") is None:
            continue
        counts = papers.setdefault(record["paper_id"], [0, 0, 0])
        counts[0] += record["expected_found"]
        counts[1] += record["expected_total"]
        counts[2] += 1 if record.get("defect") else 0
    table = [
        [paper, f"{found}/{total}", _cell(found / total if total else None), defects]
        for paper, (found, total, defects) in sorted(papers.items())
    ]
    found = sum(c[0] for c in papers.values())
    total = sum(c[1] for c in papers.values())
    table.append(["(all)", f"{found}/{total}", _cell(found / total if total else None),
                  sum(c[2] for c in papers.values())])
    return tabulate(table, headers=["paper", "passages found", "share", "defect rows"], tablefmt="github",
                    disable_numparse=True)


@dataclass(frozen=True)
class GateResult:
    gate: Gate
    system: str
    value: Optional[float]

    @property
    def passed(self) -> bool:
        return self.value is not None and self.value >= self.gate.threshold

    def describe(self) -> str:
        if self.value is None:
            return f"{self.system}: {self.gate.label} FAILED: no graded row measured it"
        verdict = "ok" if self.passed else f"FAILED by {self.gate.threshold - self.value:.3f}"
        return f"{self.system}: {self.gate.label}: {self.value:.3f} {verdict}"


def evaluate_gates(gates: Sequence[Gate], records: Sequence[dict]) -> list[GateResult]:
    results = []
    for system, rows in by_system(records).items():
        for gate in gates:
            scoped = [r for r in rows if gate.question_type in (None, r.get("question_type"))]
            results.append(GateResult(gate, system, summarize(system, scoped).means[gate.metric]))
    return results
