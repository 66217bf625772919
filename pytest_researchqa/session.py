"""The controller's view of a run: records come in, one outcome comes out.

:class:`ResearchSession` receives every row record (from this process, or from
xdist workers through their reports) and, once the run is over, computes the
:class:`RunOutcome` exactly once: per-system summaries, gate results, guards,
how much of the selection was measured, and whether the gates let the run
pass. The exit status is set from it and the terminal summary renders it; no
rule is written twice. No pytest import: a command-line tool can use it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from .families import Family
from .records import RowRecord
from .reporting.compare import Baseline, Comparison, compare
from .reporting.gates import Gate, GateResult, RegressionGate, RegressionResult, evaluate, evaluate_regressions
from .reporting.guards import judge_guards
from .reporting.outcome import Check, RunOutcome, Selection
from .reporting.summaries import group, system_of
from .stats import Interval, bootstrap_mean

__all__ = ["ResearchSession", "RunOutcome", "Selection"]

AUDIT_UNGATED = "gates are not evaluated in an audit, which runs no system"
INTERRUPTED = "the run was interrupted"  # Ctrl-C (pytest's exit status 2): every medium says it in these words


@dataclass
class ResearchSession:
    family: Family
    gates: Sequence[Gate] = ()
    allow_partial: bool = False
    gates_apply: bool = True  # False in audit mode: no system runs, nothing to gate
    records: list[RowRecord] = field(default_factory=list)
    foreign_failures: int = 0
    crashed: tuple[str, ...] = ()  # node ids of tests whose xdist worker died running them
    systems: tuple[str, ...] = ()  # the systems the run was asked to measure (its gates' subjects)
    selection: Selection = field(default_factory=Selection)
    interrupted: bool = False
    unfinished: bool = False  # a saved run killed before its end (show, view): RunOutcome.unfinished
    regressions: Sequence[RegressionGate] = ()
    baseline: Optional[Baseline] = None  # --researchqa-compare's run
    compare_map: Mapping[str, str] = field(default_factory=dict)
    dataset_sha: Optional[str] = None
    judging: dict[str, Any] = field(default_factory=dict)  # runs.judging_of this run's manifest
    undecidable_fails: bool = False  # --researchqa-undecidable=fail
    missing_baseline: Optional[str] = None  # --researchqa-compare-missing=skip found no such run
    # The run's models served on this machine (llm_params.is_local): their family is unknown to the guards.
    local_models: frozenset[str] = frozenset()
    # What the family's end-of-run step found (the rubric family: battles, Elo), plain data for renderers.
    family_results: dict[str, Any] = field(default_factory=dict)
    family_step_error: Optional[str] = None  # that step raised: the run fails, saying so in every medium
    # What went wrong around the rows, once per process (the answer cache turned off by a full disk).
    run_notes: list[str] = field(default_factory=list)
    # A saved run replayed (show, view): whether its run was gated and the checks it decided.
    recorded: Optional[tuple[bool, tuple[Check, ...]]] = None
    _outcome: Optional[RunOutcome] = None

    @property
    def gates_decide(self) -> bool:
        """Aggregate gates will set the exit status (rows below their bar are then expected failures)."""
        return bool(self.gates or self.regressions) and self.gates_apply

    def add(self, record: RowRecord) -> None:
        self.records.append(record)

    @property
    def decided(self) -> bool:
        """Whether the run's outcome has been computed (the controller concluded it)."""
        return self._outcome is not None

    def outcome(self) -> RunOutcome:
        """Computed once, at the end; later calls return the same outcome."""
        if self._outcome is None:
            self._outcome = self._compute()
        return self._outcome

    def _compute(self) -> RunOutcome:
        # Invalid dataset rows are erroring tests, not rows of any system: counted apart, never averaged.
        records = tuple(r for r in self.records if not r.invalid_row)
        invalid = tuple(r for r in self.records if r.invalid_row)
        measured = len(records)
        errors = sum(1 for r in records if r.error)
        # Gates judge the benchmark's rows: a run that selected none of them (ini settings with
        # `pytest tests/test_x.py`) is not theirs to decide.
        # An interrupted run is theirs whatever it measured: xdist's stopped workers may not have said what
        # they selected, and a gated run stopped before any row must not read "no gate configured".
        gated = self.gates_decide and bool(records or self.selection.rows or self.interrupted or self.crashed)
        if self.recorded is not None:
            gated = self.recorded[0]
        notes: list[str] = list(dict.fromkeys(self.run_notes))
        answered = [r for r in records if r.system and not r.error]
        if answered and all(r.baseline for r in answered) and not any(r.judge for r in answered):
            notes.append("warning: this run measured no answer quality: baseline answers carry no citations to "
                         "grade and no judge is configured (add --researchqa-judge=MODEL)")
        unjudged = self._not_judged_for_the_budget()
        if unjudged and not gated:  # gated: said in the gates' checks
            notes.append(f"{unjudged} row(s) not judged: the run's budget (--researchqa-max-cost) was spent before "
                         "their verdicts")
        if self.missing_baseline is not None and not (gated and self.regressions):
            notes.append(f"no baseline: nothing compared (no saved run matches {self.missing_baseline!r})")
        comparison: Optional[Comparison] = None
        if self.baseline is not None and self.gates_apply:
            comparison = compare(records, self.baseline, self.family, self.compare_map, self.dataset_sha,
                                 self.judging)
        regressions = evaluate_regressions(self.regressions, comparison) if gated and comparison else []
        gates = evaluate(self.gates, records) if gated else []
        if gated and (self.crashed or self.interrupted):  # a system none of whose rows ran keeps its gates
            gates, regressions = self._unmeasured_systems(records, comparison, gates, regressions)
        return RunOutcome(
            records=records,
            gates=tuple(gates),
            guards=tuple(judge_guards(records, self.family, self.local_models)),
            measured=measured,
            errors=errors,
            foreign_failures=self.foreign_failures,
            crashed=self.crashed,
            selection=self.selection,
            partial_reasons=tuple(self._partial_reasons(measured, unjudged) if gated
                                  else self._cut_short(measured)),
            invalid_rows=invalid,
            gated=gated,
            notes=tuple(notes),
            intervals=intervals(records, self.family.metric_names) if self.gates_apply else {},
            comparison=comparison,
            regressions=tuple(regressions),
            family_results=self.family_results or None,
            family_step_error=self.family_step_error,
            undecidable_fails=self.undecidable_fails,
            # Only regression gates need the baseline: without them its absence is a note, not a check.
            missing_baseline=self.missing_baseline if gated and self.regressions else None,
            recorded_checks=self.recorded[1] if self.recorded is not None else None,
            interrupted=self.interrupted,
            unfinished=self.unfinished,
            ungated_why=self._ungated_why(gated),
        )

    def _ungated_why(self, gated: bool) -> Optional[str]:
        """Why the gates given decided nothing (None: they decided, or none was given)."""
        if gated or self.recorded is not None or not (self.gates or self.regressions):
            return None
        return AUDIT_UNGATED if not self.gates_apply else "no benchmark row selected for the gates"

    def _unmeasured_systems(self, records: Sequence[RowRecord], comparison: Optional[Comparison],
                            gates: list[GateResult], regressions: list[RegressionResult],
                            ) -> tuple[list[GateResult], list[RegressionResult]]:
        """Each gate of a system that measured no row because the run was cut short (crashed workers, Ctrl-C),
        undecidable, where it would otherwise be left out of the checks as if never configured."""
        measured = {r.system for r in records}
        missing = [system for system in self.systems if system not in measured]
        gates = gates + [GateResult(gate, system, None) for system in missing for gate in self.gates]
        if comparison is not None:
            regressions = regressions + [
                RegressionResult(gate, system, comparison.baseline, self.compare_map.get(system, system), None,
                                 unit=comparison.unit, no_pairs_why="this run measured none of its rows")
                for system in missing for gate in self.regressions]
        return gates, regressions

    def _cut_short(self, measured: int) -> list[str]:
        """Without gates, what a gated run would call partial and every medium still says: an interrupted run,
        or one whose crashed xdist workers left rows unrun."""
        selected = self.selection.rows
        if not self.interrupted and not (self.crashed and (selected is None or measured < selected)):
            return []
        of = f" of {selected} selected" if selected is not None else ""  # unknown when xdist's workers were stopped
        rows = "row" if (measured if selected is None else selected) == 1 else "rows"
        return [f"{measured}{of} {rows} measured: {self._stopped_why()}"]

    def _stopped_why(self) -> str:
        if self.unfinished:
            return "it was killed before its end"
        if self.interrupted:
            return INTERRUPTED
        if self.crashed:  # xdist gave up replacing them (--max-worker-restart), or their rows crashed them
            return f"{len(self.crashed)} test(s) crashed their xdist worker"
        return "the run stopped early (-x / --maxfail)"

    def _not_judged_for_the_budget(self) -> int:
        """Rows a judge did not grade because --researchqa-max-cost was spent before its verdict."""
        from .costs import BUDGET_STOP

        return sum(1 for r in self.records if not r.error and any(BUDGET_STOP in f for f in r.judge_failures))

    def _partial_reasons(self, measured: int, unjudged: int) -> list[str]:
        """Why a gated run is partial; ``unjudged``: rows whose verdicts the budget stopped."""
        from .costs import BUDGET_SPENT, BUDGET_STOP

        stopped = sum(1 for r in self.records if r.error and BUDGET_STOP in r.error)
        budget = [f"gate not decided: {count} row(s) {what} {BUDGET_SPENT}"
                  for count, what in ((stopped, "not run"), (unjudged, "not judged")) if count]
        if self.allow_partial:
            return budget  # a budget-stopped run is never a pass, partial runs allowed or not
        reasons = budget  # invalid rows fail the run on their own (run::valid_rows), allowed partial or not
        selected = self.selection.rows
        if selected is not None and measured < selected:
            reasons.append(f"gate evaluated on {measured} of {selected} rows: {self._stopped_why()}")
        elif selected is None and (self.interrupted or self.crashed):  # stopped xdist workers never said
            reasons.append(f"gate evaluated on {measured} row{'' if measured == 1 else 's'}: {self._stopped_why()}")
        if self.selection.rerun_subset:
            reasons.append(f"gate evaluated on the subset {self.selection.rerun_subset} selected, "
                           "not on the whole selection")
        return reasons


def intervals(records: Sequence[RowRecord], metrics: Sequence[str]) -> dict[str, dict[str, Optional[Interval]]]:
    """Per system and metric: the graded rows' mean with its paper-clustered bootstrap interval."""
    found: dict[str, dict[str, Optional[Interval]]] = {}
    for system, rows in group(records, system_of).items():
        graded = [r for r in rows if r.graded]
        found[system] = {}
        for metric in metrics:
            measured = [(r.paper_id or r.row_id or "?", v) for r in graded if (v := r.metrics.get(metric)) is not None]
            found[system][metric] = bootstrap_mean([p for p, _ in measured], [v for _, v in measured])
    return found
