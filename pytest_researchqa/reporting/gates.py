"""Threshold gates: ``METRIC=VALUE`` or ``TYPE.METRIC=VALUE`` over a run's records. Pure.

A gate holds for a system when the mean of its graded rows (of that question
type, when scoped) reaches the threshold in the metric's direction. Parsing
is validated against the benchmark family's declared metrics.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Optional, Sequence

from ..families import Family, MetricSpec
from ..records import RowRecord
from .summaries import group, summarize, system_of

if TYPE_CHECKING:  # pragma: no cover
    from ..stats import PairedTest
    from .compare import Comparison


class GateSpecError(ValueError):
    """A gate that cannot be parsed; the message names the valid choices."""


# What a gate found: it held, it failed, or the data could not decide either way (too few
# papers for the test to reach alpha, a metric undefined or NaN, no row both runs measured).
GateState = Literal["passed", "failed", "undecidable"]


@dataclass(frozen=True)
class Gate:
    metric: str
    threshold: float
    question_type: Optional[str] = None
    higher_is_better: bool = True
    measured_on: str = "all rows"  # the metric's MetricSpec.rows: which rows can have a value
    board_label: str = ""  # the metric's MetricSpec.board_label: a percent column is named so the line reads against it

    @property
    def label(self) -> str:
        prefix = f"{self.question_type}." if self.question_type else ""
        sign = ">=" if self.higher_is_better else "<="
        return f"{prefix}{self.metric}{sign}{self.threshold:g}"


def scoped_metric(text: str, name: str, family: Family) -> tuple[Optional[str], MetricSpec]:
    """``METRIC`` or ``TYPE.METRIC`` of a gate, checked against the family's declarations."""
    question_type, _, metric = name.strip().rpartition(".")
    spec = family.metric(metric)
    if spec is None:
        raise GateSpecError(f"{text!r}: unknown metric {metric!r}; choose from {', '.join(family.metric_names)}")
    if question_type and question_type not in family.question_types:
        raise GateSpecError(
            f"{text!r}: unknown question type {question_type!r}; choose from {', '.join(family.question_types)}")
    if question_type and spec.question_types and question_type not in spec.question_types:
        raise GateSpecError(f"{text!r}: {metric} is not measured on {question_type} rows (only on "
                            f"{', '.join(spec.question_types)}): such a gate could never decide")
    return question_type or None, spec


def parse_gate(text: str, family: Family) -> Gate:
    name, equals, value = text.partition("=")
    if not equals:
        raise GateSpecError(f"{text!r}: expected METRIC=VALUE, e.g. section_coverage=0.8")
    question_type, spec = scoped_metric(text, name, family)
    metric = spec.name
    try:
        threshold = float(value)
    except ValueError:
        raise GateSpecError(f"{text!r}: {value!r} is not a number") from None
    if not spec.low <= threshold <= spec.high:
        raise GateSpecError(f"{text!r}: thresholds for {metric} are between {spec.low:g} and {spec.high:g}")
    return Gate(metric, threshold, question_type, spec.higher_is_better, spec.rows, spec.board_label)


@dataclass(frozen=True)
class GateResult:
    gate: Gate
    system: str
    value: Optional[float]
    graded: int = 0  # the system's rows in the gate's scope that were graded (no error, no dataset defect)

    kind = "threshold"

    @property
    def state(self) -> GateState:
        if self.value is None or not math.isfinite(self.value):
            return "undecidable"
        held = self.value >= self.gate.threshold if self.gate.higher_is_better else self.value <= self.gate.threshold
        return "passed" if held else "failed"

    @property
    def passed(self) -> bool:
        return self.state == "passed"

    @property
    def name(self) -> str:
        """The gate's test name (a JUnit testcase): which kind of gate, which metric, which system."""
        return f"{self.kind}::{self.gate.label}[{self.system}]"

    def describe(self) -> str:
        if self.value is None:
            if self.graded:  # e.g. citation precision of a system that stopped citing: said, not hidden
                scope = f" (it is measured on {self.gate.measured_on})" if self.gate.measured_on != "all rows" else ""
                # "without an error", not "graded": a family's board may call only rows with a verdict graded
                # (the rubric family's rows without rubric items are answered, not graded; tester52).
                return (f"{self.system}: {self.gate.label} UNDECIDABLE: none of its {self.graded} row(s) without an "
                        f"error has a value for {self.gate.metric}{scope}")
            return f"{self.system}: {self.gate.label} UNDECIDABLE: no graded row measured it"
        if not math.isfinite(self.value):
            return f"{self.system}: {self.gate.label} UNDECIDABLE: the mean is {self.value}"
        verdict = "ok" if self.passed else f"FAILED by {abs(self.gate.threshold - self.value):.3f}"
        return f"{self.system}: {self.gate.label}: {self.value:.3f} {verdict}{self._as_on_the_board()}"

    def _as_on_the_board(self) -> str:
        """A gate takes a fraction; a board that shows the metric in percent (the rubric family's Coverage %)
        reads 100 times larger, so the line gives both (tester43 LOW-4: 0.008 here, 0.8 on the board)."""
        if not self.gate.board_label.endswith("%") or self.value is None:
            return ""
        return f" ({self.gate.board_label} {100 * self.value:.1f} against {100 * self.gate.threshold:g})"


_GATE_NAME = re.compile(r"(threshold|regression)::(?:(\w+)\.)?(\w+)(?:[<>]=[^\[]*)?\[(.*)\]")


def gate_of_check(check_name: str) -> Optional[tuple[str, Optional[str], str, str]]:
    """A gate's test name read back (a saved run keeps its checks by name): ``(kind, question type or None,
    metric, system)``; None for a run check."""
    found = _GATE_NAME.fullmatch(check_name)
    return None if found is None else (found[1], found[2], found[3], found[4])


def evaluate(gates: Sequence[Gate], records: Sequence[RowRecord]) -> list[GateResult]:
    results = []
    for system, rows in group(records, system_of).items():
        for gate in gates:
            scoped = [r for r in rows if gate.question_type in (None, r.question_type)]
            graded = sum(r.graded for r in scoped)
            results.append(GateResult(gate, system, summarize(system, scoped, [gate.metric]).means[gate.metric],
                                      graded))
    return results


# -- regression gates: this run against a saved baseline -------------------------------------

ALPHA = 0.05
# The smallest one-sided p-value a sign-flip test can give is 1 / 2**n, n the papers whose difference is
# not zero (a paper without one has no sign to flip): however many papers a run has, the test needs
# MIN_PAPERS that changed.
MIN_PAPERS = 5
# Below MIN_PAPERS changed papers no drop can be significant: the gate then decides on the size of the
# drop alone, failing a drop larger than MIN_EFFECT, or this when the gate names none. Above, a drop larger than
# it that the test does not call significant is undecidable (never passed).
SMALL_DATA_MIN_EFFECT = 0.05


@dataclass(frozen=True)
class RegressionGate:
    """``METRIC[:MIN_EFFECT]`` or ``TYPE.METRIC[:MIN_EFFECT]``: fail on a significant drop larger than MIN_EFFECT."""

    metric: str
    min_effect: float = 0.0
    question_type: Optional[str] = None
    higher_is_better: bool = True
    effect_given: bool = False  # MIN_EFFECT named (`:0` too): the small-data rule then uses it, not its default

    @property
    def label(self) -> str:
        prefix = f"{self.question_type}." if self.question_type else ""
        effect = f" by more than {self.min_effect:g}" if self.min_effect else ""
        return f"no regression in {prefix}{self.metric}{effect}"


def parse_regression_gate(text: str, family: Family) -> RegressionGate:
    name, colon, effect = text.partition(":")
    question_type, spec = scoped_metric(text, name, family)
    metric = spec.name
    min_effect = 0.0
    if colon:
        try:
            min_effect = float(effect)
        except ValueError:
            raise GateSpecError(f"{text!r}: MIN_EFFECT {effect!r} is not a number") from None
        if not 0 <= min_effect <= spec.high - spec.low:
            raise GateSpecError(f"{text!r}: MIN_EFFECT for {metric} is between 0 and {spec.high - spec.low:g}")
    return RegressionGate(metric, min_effect, question_type, spec.higher_is_better, effect_given=bool(colon))


@dataclass(frozen=True)
class RegressionResult:
    gate: RegressionGate
    system: str
    baseline: str  # the baseline run's name
    baseline_system: Optional[str]  # None: the baseline has no such system
    test: Optional["PairedTest"]
    wanted: Optional[str] = None  # the baseline system looked for, when a map named another
    unit: str = "papers"  # what the test resampled together
    incomparable: str = ""  # how the baseline measured the metric differently (compare.judging_differs)
    no_pairs_why: str = ""  # with no test: why no row both runs graded measured it (unmeasured_why)
    # the paired rows the test left out, not judged by the same judges in both runs (compare.JudgeGaps.describe)
    left_out: str = ""
    unmatched: tuple[str, ...] = ()  # the baseline's systems nothing was compared with (the map's candidates)

    @property
    def worse_by(self) -> Optional[float]:
        return None if self.test is None else self.test.worse_by(self.gate.higher_is_better)

    @property
    def significant(self) -> bool:
        return self.test is not None and self.test.p_worse(self.gate.higher_is_better) < ALPHA

    kind = "regression"

    @property
    def can_reach_alpha(self) -> bool:
        """Whether the sign-flip test can give a p-value below alpha at all: enough papers changed."""
        return self.test is not None and 0.5 ** self.test.changed < ALPHA

    @property
    def small_data_effect(self) -> float:
        return self.gate.min_effect if self.gate.effect_given else SMALL_DATA_MIN_EFFECT

    @property
    def state(self) -> GateState:
        if self.baseline_system is None:
            return "failed"  # a configuration error, named in the description
        if self.incomparable:
            return "undecidable"  # two different measurements: their difference is not a regression
        worse_by = self.worse_by
        if self.test is None or worse_by is None or not all(
                math.isfinite(x) for x in (self.test.delta, self.test.new_mean, self.test.old_mean)):
            return "undecidable"
        if not self.can_reach_alpha:
            if worse_by > self.small_data_effect:
                return "failed"  # decided on the size of the drop alone
            return "passed" if worse_by <= 0 else "undecidable"
        if self.significant:
            return "failed" if worse_by > self.gate.min_effect else "passed"
        # Not significant is not the same as no drop: a drop beyond the small-data effect that the test cannot tell
        # from noise (5 papers changed, 4 worse and 1 better: p 0.19) is never read as passed.
        return "undecidable" if worse_by > self.small_data_effect else "passed"

    @property
    def passed(self) -> bool:
        return self.state == "passed"

    @property
    def name(self) -> str:
        """The gate's test name (a JUnit testcase): which kind of gate, which metric, which system."""
        prefix = f"{self.gate.question_type}." if self.gate.question_type else ""
        return f"{self.kind}::{prefix}{self.gate.metric}[{self.system}]"

    def _too_few(self, t: "PairedTest") -> str:
        if t.papers < MIN_PAPERS or t.changed == t.papers:  # the dataset itself is too small
            return (f"too few {self.unit} ({t.papers}) for the clustered test to reach alpha {ALPHA:g} "
                    f"(it needs at least {MIN_PAPERS})")
        return (f"too few {self.unit} changed ({t.changed} of {t.papers}) for the clustered test to reach alpha "
                f"{ALPHA:g} (it needs at least {MIN_PAPERS} that changed)")

    def describe(self) -> str:
        from ..stats import describe_p

        prefix = f"{self.gate.question_type}." if self.gate.question_type else ""
        metric = f"{prefix}{self.gate.metric}"
        if self.baseline_system is None:
            from .compare import missing_counterpart

            why = missing_counterpart(self.system, self.wanted, self.baseline, self.unmatched)
            return f"{self.system}: {metric} FAILED: {why}"
        if self.incomparable:
            return (f"{self.system}: {metric} UNDECIDABLE: the baseline {self.baseline} measured it differently "
                    f"({self.incomparable}), so a difference would not be a regression")
        if self.test is None:
            why = f" ({self.no_pairs_why})" if self.no_pairs_why else ""
            return f"{self.system}: {metric} UNDECIDABLE: no row both runs graded measured it{why}"
        t = self.test
        state = self.state
        if state == "undecidable" and not all(math.isfinite(x) for x in (t.delta, t.new_mean, t.old_mean)):
            return (f"{self.system}: {metric} UNDECIDABLE: a mean is not a number "
                    f"({t.new_mean} vs {t.old_mean} over {t.rows} rows)")
        interval = f", 95% CI {t.low:+.3f} to {t.high:+.3f}" if t.low is not None and t.high is not None else ""
        p = describe_p(t.p_worse(self.gate.higher_is_better))
        left_out = f" ({self.left_out})" if self.left_out else ""
        facts = (f"{t.new_mean:.3f} vs {t.old_mean:.3f}, delta {t.delta:+.3f}{interval}, p(worse) {p} "
                 f"over {t.papers} {self.unit} / {t.rows} rows{left_out}")
        if not self.can_reach_alpha and not (t.changed == 0 and t.papers >= MIN_PAPERS):
            few = self._too_few(t)
            if state == "failed":
                return (f"{self.system}: {metric} REGRESSED: {facts}: {few}; decided on effect size alone: the drop "
                        f"is larger than the minimum effect {self.small_data_effect:g}: FAILED")
            if state == "passed":
                no_drop = "no drop on any paired row" if t.changed == 0 else "no drop overall"
                return f"{self.system}: {metric}: {facts}: {no_drop} ({few}), ok"
            return (f"{self.system}: {metric} UNDECIDABLE: {facts}: {few}, and the drop is within the minimum "
                    f"effect {self.small_data_effect:g}")
        if state == "failed":
            beyond = f" and beyond the minimum effect {self.gate.min_effect:g}" if self.gate.min_effect else ""
            return f"{self.system}: {metric} REGRESSED: {facts}: significant at alpha {ALPHA:g}{beyond}: FAILED"
        if self.significant:
            return (f"{self.system}: {metric}: {facts}: a significant drop within the minimum effect "
                    f"{self.gate.min_effect:g}, ok")
        if state == "undecidable":
            return (f"{self.system}: {metric} UNDECIDABLE: {facts}: a drop larger than the minimum effect "
                    f"{self.small_data_effect:g} that {t.changed} changed {self.unit} cannot tell from noise at alpha "
                    f"{ALPHA:g} (a threshold gate, --researchqa-fail-under, is the floor that decides)")
        return f"{self.system}: {metric}: {facts}: no significant drop, ok"


def evaluate_regressions(gates: Sequence[RegressionGate], comparison: "Comparison") -> list[RegressionResult]:
    from .compare import comparable, paired_metric_test, unmeasured_why

    results = []
    for system in comparison.systems:
        for gate in gates:
            pairs = system.scoped_pairs(gate.question_type)
            # A judged metric: only on the rows the same judges gave a verdict in both runs.
            compared, gaps = comparable(pairs, gate.metric, comparison.judged_metrics)
            test = paired_metric_test(compared, gate.metric) if system.baseline_system is not None else None
            why = "" if test is not None else (gaps.none_left(comparison.baseline)
                                               or unmeasured_why(pairs, comparison.baseline, gate.metric))
            results.append(RegressionResult(gate, system.system, comparison.baseline, system.baseline_system, test,
                                            wanted=system.wanted, unit=comparison.unit,
                                            incomparable=comparison.measured_differently.get(gate.metric, ""),
                                            no_pairs_why=why, left_out=gaps.describe(comparison.baseline),
                                            unmatched=comparison.unmatched_baseline_systems))
    return results
