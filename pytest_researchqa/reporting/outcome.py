"""What a run selected and what it came to: plain data the session fills and renderers read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from ..costs import BUDGET_SPENT
from ..records import RowRecord
from ..stats import Interval
from .compare import Comparison
from .gates import GateResult, GateState, RegressionResult
from .guards import Guard

# The run's verdict: "report" when nothing was asked to decide it (no gate configured).
Verdict = Literal["passed", "failed", "undecidable", "report"]


@dataclass(frozen=True)
class Check:
    """One thing that decides the exit status: a gate, or a condition of the run a gate needs.

    Every medium renders the same checks: a line in the terminal and in Markdown, a testcase
    in JUnit (``researchqa.gates.<kind>``, named by ``name``), an entry in the JSON summary.
    """

    kind: str  # "threshold", "regression", "run"
    name: str  # e.g. "regression::citation_precision[bm25]"
    state: GateState
    message: str
    fails_run: bool  # whether this check's state makes the run exit 1

    @property
    def mark(self) -> str:
        if self.fails_run:  # an undecidable gate under --researchqa-undecidable=fail fails like any other
            return "❌"
        return {"passed": "✅", "failed": "❌", "undecidable": "⚠️"}[self.state]


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
    family_step_error: Optional[str] = None  # that step raised (its results are missing)
    undecidable_fails: bool = False  # --researchqa-undecidable=fail
    missing_baseline: Optional[str] = None  # --researchqa-compare named a run that does not exist (yet)
    # Why gates that were given decided nothing: the run selected no benchmark row for them (a test file of one's
    # own run with the ini's gates; tester44 MED-3), or it was an audit. Said so, never "no gate configured".
    ungated_why: Optional[str] = None

    crashed: tuple[str, ...] = ()  # tests whose xdist worker died running them (a row's result may be missing)
    interrupted: bool = False  # stopped by Ctrl-C (exit status 2): `last` skips it, every medium says so
    # A saved run killed before its end (SIGTERM, a crash: show, view): it saved rows and decided no verdict.
    unfinished: bool = False
    # The checks a run saved (a replayed run shows what its own run decided, not a guess without its gates).
    recorded_checks: Optional[tuple[Check, ...]] = None

    @property
    def checks(self) -> tuple[Check, ...]:
        """Everything that decides the exit status, in the order every medium shows it: the gates,
        and what fails a run with or without them (rows in error, other tests failing)."""
        if self.recorded_checks is not None:
            return self.recorded_checks
        if not self.gated:
            return self._run_checks()
        found = [Check(g.kind, g.name, g.state, g.describe(), self._fails(g.state)) for g in self.gates]
        found += [Check(r.kind, r.name, r.state, r.describe(), self._fails(r.state)) for r in self.regressions]
        if self.missing_baseline is not None:
            found.append(Check("regression", "regression::baseline", "undecidable",
                               f"no baseline: nothing compared (no saved run matches {self.missing_baseline!r}); "
                               "the regression gates cannot decide", self._fails("undecidable")))
        for reason in self.partial_reasons:
            why = ("no gate passes a run the budget cut short, --researchqa-allow-partial or not"
                   if reason.endswith(BUDGET_SPENT)
                   else "the gates do not pass a partial run (--researchqa-allow-partial to allow)")
            found.append(Check("run", "run::whole", "failed", f"{reason}; {why}", True))
        return (*found, *self._run_checks())

    def _run_checks(self) -> tuple[Check, ...]:
        """Rows in error, invalid dataset rows (erroring tests) and other tests failing fail the run whether or
        not a gate is configured."""
        found: list[Check] = []
        if self.errors:
            why = ": the gates cannot pass while rows error" if self.gated else ""
            found.append(Check("run", "run::no_errors", "failed", f"{self.errors} row(s) errored{why}", True))
        if self.invalid_rows:  # erroring tests: no gate or --researchqa-allow-partial excuses them
            why = ": the gates do not excuse them (fix or remove the rows)" if self.gated else ""
            found.append(Check("run", "run::valid_rows", "failed",
                               f"{len(self.invalid_rows)} invalid dataset row(s) errored{why}", True))
        if self.family_step_error:
            found.append(Check("run", "run::family_step", "failed", self.family_step_error, True))
        if self.foreign_failures:
            why = ": the gates do not excuse them" if self.gated else ""
            found.append(Check("run", "run::other_tests", "failed",
                               f"{self.foreign_failures} other test(s) failed{why}", True))
        if self.crashed:  # not "other tests": a row's own test, often, whose worker was killed (out of memory)
            more = len(self.crashed) - 3
            named = ", ".join(self.crashed[:3]) + (f" and {more} more" if more > 0 else "")
            found.append(Check("run", "run::worker_crash", "failed",
                               f"{len(self.crashed)} test(s) crashed their xdist worker: {named}; what they were "
                               "running has no complete result", True))
        if self.failed_rows:  # asked for: a red test must not sit in a green run (its exit status and JUnit agree)
            found.append(Check("run", "run::rows_below_bar", "failed",
                               f"{self.failed_rows} row(s) below their bar failed as tests (--researchqa-fail-rows)",
                               True))
        return tuple(found)

    def _fails(self, state: GateState) -> bool:
        return state == "failed" or (state == "undecidable" and self.undecidable_fails)

    @property
    def verdict(self) -> Verdict:
        """The run's one verdict: every medium's headline and the exit status follow it."""
        checks = self.checks
        if not self.gated:
            return "failed" if any(c.fails_run for c in checks) else "report"
        if not checks or any(c.fails_run for c in checks):
            return "failed"
        if any(c.state == "undecidable" for c in checks):
            return "undecidable"
        return "passed"

    @property
    def passed(self) -> Optional[bool]:
        """False when the run fails (exit 1); True when its gates all held; None when nothing decided it:
        no gate (a report), or gates that could not decide (exit 0 unless --researchqa-undecidable=fail,
        which makes them fail). A dashboard reading ``passed`` never shows an undecided run as green."""
        if self.verdict in ("report", "undecidable"):
            return None
        return self.verdict == "passed"

    @property
    def headline(self) -> str:
        """The verdict in words, the same in every medium; an interrupted run says so first."""
        if not self.interrupted:
            return self._verdict_words
        of = f" of {self.selection.rows} selected" if self.selection.rows is not None else ""  # unknown: xdist's
        rows = "row" if (self.measured if self.selection.rows is None else self.selection.rows) == 1 else "rows"
        if self.unfinished:
            return f"run UNFINISHED: killed after {self.measured}{of} {rows}, it decided no verdict"
        return f"run INTERRUPTED after {self.measured}{of} {rows}; {self._verdict_words}"

    @property
    def _verdict_words(self) -> str:
        checks = self.checks
        failed = sum(c.fails_run for c in checks)
        undecided = sum(c.state == "undecidable" for c in checks)
        why = self.ungated_why or "no gate configured"
        if self.verdict == "report":
            return f"report only: {why} (rows below their bar do not fail the run)"
        if self.verdict == "failed" and not self.gated:
            return f"run FAILED: {'; '.join(c.message for c in checks if c.fails_run)} ({why})"
        if self.verdict == "failed":
            return f"gates FAILED: {failed} of {len(checks)} check(s) failed"
        if self.verdict == "undecidable":
            return (f"gates UNDECIDED: {undecided} of {len(checks)} check(s) could not decide "
                    "(--researchqa-undecidable=fail, or compare's --undecidable fail, to fail on them)")
        return f"gates passed: {len(checks)} of {len(checks)} check(s) held"

    @property
    def below_bar(self) -> int:
        """Rows below their per-row bar reported as xfailed (the default policy)."""
        return sum(1 for r in self.records if r.outcome == "below_bar")

    @property
    def failed_rows(self) -> int:
        """Rows below their per-row bar that failed as tests (--researchqa-fail-rows)."""
        return sum(1 for r in self.records if r.outcome == "failed")

    @property
    def coverage_line(self) -> str:
        total = self.selection.rows
        # Selection unknown (a killed run, stopped xdist workers): the rows measured are not "the selected" ones.
        rows = f" of {total} selected rows" if total is not None else f" row{'' if self.measured == 1 else 's'}"
        line = f"{self.measured}{rows} measured ({self.errors} error{'' if self.errors == 1 else 's'})"
        if self.invalid_rows:
            line += f"; {len(self.invalid_rows)} invalid dataset row(s) not run"
        if self.selection.slice_description:
            line += f"; slice: {self.selection.slice_description}"
            papers = {r.paper_id for r in self.records if r.paper_id}
            if self.selection.sample and papers:  # what the intervals over papers rest on
                line += f" (rows of {len(papers)} paper{'' if len(papers) == 1 else 's'})"
        return line
