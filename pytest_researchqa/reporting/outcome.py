"""What a run selected and what it came to: plain data the session fills and renderers read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..records import RowRecord
from ..stats import Interval
from .compare import Comparison
from .gates import GateResult, RegressionResult
from .guards import Guard


@dataclass(frozen=True)
class Selection:
    """What the run was asked to measure."""

    rows: Optional[int] = None  # selected (system, row) cases; None when unknown
    keyword: str = ""  # -k
    markexpr: str = ""  # -m
    sample: Optional[int] = None
    rerun_subset: Optional[str] = None  # "--lf" / "--sw": only a subset of the last run

    @property
    def slice_description(self) -> Optional[str]:
        parts = [f"-k {self.keyword!r}" if self.keyword else "", f"-m {self.markexpr!r}" if self.markexpr else "",
                 f"--researchqa-sample={self.sample}" if self.sample else ""]
        named = ", ".join(p for p in parts if p)
        return named or None


@dataclass(frozen=True)
class RunOutcome:
    records: tuple[RowRecord, ...]
    gates: tuple[GateResult, ...]
    guards: tuple[Guard, ...]
    measured: int
    errors: int
    foreign_failures: int
    selection: Selection
    partial_reasons: tuple[str, ...]
    gated: bool  # gates were given and evaluated
    notes: tuple[str, ...] = ()
    # system -> metric -> mean with its paper-clustered bootstrap interval
    intervals: dict[str, dict[str, Optional[Interval]]] = field(default_factory=dict)
    comparison: Optional[Comparison] = None  # against --researchqa-compare's run
    regressions: tuple[RegressionResult, ...] = ()
    invalid_rows: tuple[RowRecord, ...] = ()  # dataset rows that failed validation (erroring tests)
    family_results: Optional[dict[str, Any]] = None  # the family's end-of-run step (rubric: battles, Elo)

    @property
    def passed(self) -> Optional[bool]:
        """With gates: whether the run passes; without: None (pytest's own outcome stands)."""
        if not self.gated:
            return None
        return (bool(self.gates or self.regressions) and all(g.passed for g in self.gates)
                and all(r.passed for r in self.regressions) and self.errors == 0
                and self.foreign_failures == 0 and not self.partial_reasons)

    @property
    def below_bar(self) -> int:
        return sum(1 for r in self.records if r.outcome == "below_bar")

    @property
    def coverage_line(self) -> str:
        total = self.selection.rows
        of = f" of {total}" if total is not None else ""
        line = f"{self.measured}{of} selected rows measured ({self.errors} errors)"
        if self.invalid_rows:
            line += f"; {len(self.invalid_rows)} invalid dataset row(s) not run"
        if self.selection.slice_description:
            line += f"; slice: {self.selection.slice_description}"
        return line
