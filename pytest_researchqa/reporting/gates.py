"""Threshold gates: ``METRIC=VALUE`` or ``TYPE.METRIC=VALUE`` over a run's records. Pure.

A gate holds for a system when the mean of its graded rows (of that question
type, when scoped) reaches the threshold in the metric's direction. Parsing
is validated against the benchmark family's declared metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..families import Family
from ..records import RowRecord
from .summaries import group, summarize, system_of


class GateSpecError(ValueError):
    """A gate that cannot be parsed; the message names the valid choices."""


@dataclass(frozen=True)
class Gate:
    metric: str
    threshold: float
    question_type: Optional[str] = None
    higher_is_better: bool = True

    @property
    def label(self) -> str:
        prefix = f"{self.question_type}." if self.question_type else ""
        sign = ">=" if self.higher_is_better else "<="
        return f"{prefix}{self.metric}{sign}{self.threshold:g}"


def parse_gate(text: str, family: Family) -> Gate:
    name, equals, value = text.partition("=")
    if not equals:
        raise GateSpecError(f"{text!r}: expected METRIC=VALUE, e.g. section_coverage=0.8")
    question_type, _, metric = name.strip().rpartition(".")
    spec = family.metric(metric)
    if spec is None:
        raise GateSpecError(f"{text!r}: unknown metric {metric!r}; choose from {', '.join(family.metric_names)}")
    if question_type and question_type not in family.question_types:
        raise GateSpecError(
            f"{text!r}: unknown question type {question_type!r}; choose from {', '.join(family.question_types)}")
    try:
        threshold = float(value)
    except ValueError:
        raise GateSpecError(f"{text!r}: {value!r} is not a number") from None
    if not spec.low <= threshold <= spec.high:
        raise GateSpecError(f"{text!r}: thresholds for {metric} are between {spec.low:g} and {spec.high:g}")
    return Gate(metric, threshold, question_type or None, spec.higher_is_better)


@dataclass(frozen=True)
class GateResult:
    gate: Gate
    system: str
    value: Optional[float]

    @property
    def passed(self) -> bool:
        if self.value is None:
            return False
        return self.value >= self.gate.threshold if self.gate.higher_is_better else self.value <= self.gate.threshold

    def describe(self) -> str:
        if self.value is None:
            return f"{self.system}: {self.gate.label} FAILED: no graded row measured it"
        verdict = "ok" if self.passed else f"FAILED by {abs(self.gate.threshold - self.value):.3f}"
        return f"{self.system}: {self.gate.label}: {self.value:.3f} {verdict}"


def evaluate(gates: Sequence[Gate], records: Sequence[RowRecord]) -> list[GateResult]:
    results = []
    for system, rows in group(records, system_of).items():
        for gate in gates:
            scoped = [r for r in rows if gate.question_type in (None, r.question_type)]
            results.append(GateResult(gate, system, summarize(system, scoped, [gate.metric]).means[gate.metric]))
    return results
