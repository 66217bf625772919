"""Intervals over papers, the paired sign-flip test, pairing rows of two runs and regression gates."""

from __future__ import annotations

import random

import pytest

from pytest_researchqa.families.citation import CITATION
from pytest_researchqa.records import RowRecord
from pytest_researchqa.reporting.compare import Baseline, compare, coverage_lines, name_rows, parse_mapping
from pytest_researchqa.reporting.gates import (
    GateSpecError,
    evaluate,
    evaluate_regressions,
    parse_gate,
    parse_regression_gate,
)
from pytest_researchqa.stats import EXACT_UP_TO, bootstrap_mean, paired_test


def test_the_interval_holds_the_mean_and_is_the_same_on_every_call():
    rng = random.Random(1)
    papers = [f"p{n // 5}" for n in range(100)]
    values = [rng.random() for _ in papers]
    first = bootstrap_mean(papers, values)
    assert bootstrap_mean(papers, values) == first, "a fixed seed"
    reordered = bootstrap_mean(list(reversed(papers)), list(reversed(values)))
    assert (reordered.low, reordered.high) == pytest.approx((first.low, first.high)), "row order does not matter"
    assert first.low < first.mean < first.high and first.papers == 20 and first.rows == 100


def test_rows_of_one_paper_move_together_so_correlated_rows_widen_the_interval():
    rng = random.Random(2)
    papers = [f"p{n // 10}" for n in range(200)]
    independent = [float(rng.random() < 0.5) for _ in papers]
    per_paper = {p: float(rng.random() < 0.5) for p in set(papers)}
    clustered = [per_paper[p] for p in papers]  # every row of a paper scores alike
    assert bootstrap_mean(papers, clustered).half_width > 2.5 * bootstrap_mean(papers, independent).half_width


def test_one_paper_gives_a_mean_without_an_interval():
    interval = bootstrap_mean(["p", "p"], [0.0, 1.0])
    assert interval.mean == 0.5 and interval.half_width is None
    assert bootstrap_mean([], []) is None


def test_five_papers_that_all_got_worse_give_the_smallest_exact_p_value():
    papers = [f"p{n}" for n in range(5) for _ in range(3)]
    test = paired_test(papers, [0.0] * 15, [1.0] * 15)
    assert test.exact and test.p_lower == pytest.approx(1 / 32) and test.p_higher == 1.0
    assert test.delta == -1.0 and test.low == test.high == -1.0
    assert test.worse_by(higher_is_better=True) == 1.0 and test.p_worse(higher_is_better=False) == 1.0


def test_identical_runs_are_not_different():
    papers = [f"p{n}" for n in range(40)]
    values = [random.Random(n).random() for n in range(40)]
    test = paired_test(papers, values, values)
    assert test.delta == 0 and test.p_lower == 1.0 and test.p_higher == 1.0


def test_many_papers_are_tested_by_a_seeded_monte_carlo_whose_p_value_is_never_zero():
    papers = [f"p{n}" for n in range(EXACT_UP_TO + 20)]
    test = paired_test(papers, [0.0] * len(papers), [1.0] * len(papers))
    assert not test.exact and 0 < test.p_lower < 0.001
    again = paired_test(papers, [0.0] * len(papers), [1.0] * len(papers))
    assert again == test


def test_a_mixed_change_is_not_significant():
    papers = [f"p{n}" for n in range(30)]
    new = [1.0 if n % 2 else 0.0 for n in range(30)]
    old = [0.0 if n % 2 else 1.0 for n in range(30)]
    test = paired_test(papers, new, old)
    assert test.p_lower > 0.4 and test.p_higher > 0.4


def test_the_paired_test_refuses_ragged_input():
    with pytest.raises(ValueError, match="one entry per row"):
        paired_test(["p"], [1.0, 0.0], [1.0])


def record(system, row_id, paper, precision, question_type="lookup", error=None):
    return RowRecord(row_id=row_id, system=system, paper_id=paper, question_type=question_type,
                     metrics={"citation_precision": precision}, error=error)


def runs(new_value, old_value, papers=8, system="bm25", old_system="bm25"):
    new = [record(system, f"r{n}", f"p{n // 3}", new_value) for n in range(papers * 3)]
    old = [record(old_system, f"r{n}", f"p{n // 3}", old_value) for n in range(papers * 3)]
    return new, Baseline("20260101-000000-base", tuple(old))


def test_rows_are_paired_by_id_and_the_rows_of_one_run_only_are_named():
    new, baseline = runs(0.5, 0.5)
    new = new[2:] + [record("bm25", "fresh", "p9", 1.0)]
    comparison = compare(new, baseline, CITATION)
    [bm25] = comparison.systems
    assert len(bm25.pairs) == 22 and bm25.only_here == ("fresh",) and bm25.only_baseline == ("r0", "r1")
    assert name_rows([f"r{n}" for n in range(12)]) == "12 row(s): r0, r1, r2, r3, r4, r5, r6, r7, r8, r9 and 2 more"


def test_a_significant_drop_fails_the_gate_and_a_smaller_one_than_the_minimum_effect_does_not():
    new, baseline = runs(0.4, 0.6)
    comparison = compare(new, baseline, CITATION)
    [strict] = evaluate_regressions([parse_regression_gate("citation_precision", CITATION)], comparison)
    assert not strict.passed and "REGRESSED" in strict.describe() and "p(worse) 0.004" in strict.describe()
    [lenient] = evaluate_regressions([parse_regression_gate("citation_precision:0.25", CITATION)], comparison)
    assert lenient.passed and "within the minimum effect 0.25" in lenient.describe()


def test_an_improvement_never_fails_a_regression_gate():
    new, baseline = runs(0.9, 0.1)
    [result] = evaluate_regressions([parse_regression_gate("citation_precision", CITATION)],
                                    compare(new, baseline, CITATION))
    assert result.passed


def test_a_system_the_baseline_lacks_fails_its_gate_and_a_mapping_names_its_counterpart():
    new, baseline = runs(0.5, 0.5, system="bm25-v2")
    gate = parse_regression_gate("citation_precision", CITATION)
    [unmatched] = evaluate_regressions([gate], compare(new, baseline, CITATION))
    # The baseline's one system nothing was compared with is the map's target (tester41 T10: BASELINE_SYSTEM).
    assert not unmatched.passed and "--researchqa-compare-map=bm25-v2=bm25" in unmatched.describe()
    assert "or compare's or view's --map bm25-v2=bm25" in unmatched.describe(), "the command line's own option too"
    from pytest_researchqa.reporting.compare import missing_counterpart

    assert "--map new=BASELINE_SYSTEM" in missing_counterpart("new", None, "main", ("a", "b")), "two: no guess"
    [mapped] = evaluate_regressions([gate], compare(new, baseline, CITATION, parse_mapping(["bm25-v2=bm25"])))
    assert mapped.passed and mapped.baseline_system == "bm25"


def test_a_scoped_gate_compares_only_its_question_type():
    new, baseline = runs(0.5, 0.5)
    new.append(record("bm25", "mh", "p0", 0.0, "multi_hop"))
    baseline = Baseline(baseline.name, baseline.records + (record("bm25", "mh", "p0", 1.0, "multi_hop"),))
    [result] = evaluate_regressions([parse_regression_gate("multi_hop.citation_precision", CITATION)],
                                    compare(new, baseline, CITATION))
    assert result.test.rows == 1 and result.test.delta == -1.0
    assert result.state == "failed", "a drop of 1.0 is larger than any minimum effect, however few the papers"
    assert "too few papers (1)" in result.describe() and "decided on effect size alone" in result.describe()


def test_on_too_few_papers_a_small_drop_is_undecidable_and_no_drop_passes():
    new, baseline = runs(0.5, 0.5)
    new.append(record("bm25", "mh", "p0", 0.97, "multi_hop"))
    baseline = Baseline(baseline.name, baseline.records + (record("bm25", "mh", "p0", 1.0, "multi_hop"),))
    gate = parse_regression_gate("multi_hop.citation_precision", CITATION)
    [small] = evaluate_regressions([gate], compare(new, baseline, CITATION))
    assert small.state == "undecidable" and not small.passed
    assert "UNDECIDABLE" in small.describe() and "within the minimum effect 0.05" in small.describe()
    new[-1] = record("bm25", "mh", "p0", 1.0, "multi_hop")
    [same] = evaluate_regressions([gate], compare(new, baseline, CITATION))
    assert same.state == "passed" and "no drop on any paired row" in same.describe()


def test_a_large_drop_on_four_of_ten_papers_fails_on_effect_size_since_no_p_value_could_reach_alpha():
    """A tester's case: ten papers, four of them worse by 1.0. The sign-flip test's smallest p is 1/2**4: it
    could never pass alpha, and the gate read "no significant drop, ok" for a drop of 0.4."""
    new, baseline = runs(1.0, 1.0, papers=10)
    new = [record("bm25", r.row_id, r.paper_id, 0.0) if r.paper_id in {"p0", "p1", "p2", "p3"} else r for r in new]
    gate = parse_regression_gate("citation_precision", CITATION)
    [result] = evaluate_regressions([gate], compare(new, baseline, CITATION))
    assert result.test.papers == 10 and result.test.changed == 4
    assert result.state == "failed" and not result.can_reach_alpha
    assert "too few papers changed (4 of 10)" in result.describe()
    assert "decided on effect size alone" in result.describe()
    # One paper more that got worse: the test can decide, and does.
    new = [record("bm25", r.row_id, r.paper_id, 0.0) if r.paper_id == "p4" else r for r in new]
    [decided] = evaluate_regressions([gate], compare(new, baseline, CITATION))
    assert decided.can_reach_alpha and decided.state == "failed" and "significant at alpha 0.05" in decided.describe()


def test_a_small_drop_on_few_of_many_papers_is_undecidable_and_an_identical_rerun_passes_as_before():
    new, baseline = runs(0.5, 0.5, papers=20)
    gate = parse_regression_gate("citation_precision", CITATION)
    [same] = evaluate_regressions([gate], compare(new, baseline, CITATION))
    assert same.state == "passed" and same.test.changed == 0 and same.describe().endswith("no significant drop, ok")
    new[0] = record("bm25", "r0", "p0", 0.4)
    [small] = evaluate_regressions([gate], compare(new, baseline, CITATION))
    assert small.state == "undecidable" and "too few papers changed (1 of 20)" in small.describe()
    new[0] = record("bm25", "r0", "p0", 0.6)
    [better] = evaluate_regressions([gate], compare(new, baseline, CITATION))
    assert better.state == "passed" and "no drop overall (too few papers changed (1 of 20)" in better.describe()


def test_a_threshold_gate_on_a_metric_no_graded_row_has_says_how_many_rows_went_without_it():
    """A system that stops citing: citation precision is undefined on every row. The gate cannot decide,
    and says so with the rows it graded rather than as if nothing had been graded."""
    silent = [record("empty", f"r{n}", f"p{n}", None) for n in range(4)]
    crashed = [record("crash", "r0", "p0", None, error="boom")]
    gate = parse_gate("citation_precision=0.8", CITATION)
    empty, crash = evaluate([gate], silent + crashed)
    assert empty.state == "undecidable" and crash.state == "undecidable"
    assert empty.describe().endswith("UNDECIDABLE: none of its 4 row(s) without an error has a value for citation_precision "
                                     "(it is measured on answerable rows)"), "false-premise rows never have one"
    assert crash.describe().endswith("UNDECIDABLE: no graded row measured it")


def test_rows_that_errored_in_either_run_are_paired_but_not_compared():
    new, baseline = runs(0.5, 0.5)
    new[0] = record("bm25", "r0", "p0", None, error="boom")
    comparison = compare(new, baseline, CITATION)
    assert len(comparison.systems[0].pairs) == 24 and comparison.systems[0].deltas["citation_precision"].rows == 23


def test_a_changed_dataset_file_is_said():
    new, baseline = runs(0.5, 0.5)
    baseline = Baseline(baseline.name, baseline.records, dataset_sha="aaa")
    assert "different version of the dataset" in compare(new, baseline, CITATION, dataset_sha="bbb").notes[0]


@pytest.mark.parametrize("text, message", [
    ("citation_precisoin", "unknown metric 'citation_precisoin'"),
    ("multihop.citation_precision", "unknown question type 'multihop'"),
    ("citation_precision:big", "MIN_EFFECT 'big' is not a number"),
    ("citation_precision:2", "between 0 and 1"),
])
def test_a_regression_gate_that_cannot_be_read_says_why(text, message):
    with pytest.raises(GateSpecError, match=message):
        parse_regression_gate(text, CITATION)


def test_a_mapping_needs_both_names():
    with pytest.raises(ValueError, match="expected NEW=OLD"):
        parse_mapping(["bm25"])


def test_a_map_to_a_system_the_baseline_lacks_names_the_target_and_a_map_of_no_system_is_reported():
    from pytest_researchqa.reporting.compare import coverage_lines

    ours = [record("bm25", f"r{i}", f"p{i}", 0.5) for i in range(6)]
    baseline = Baseline("base", tuple(record("bm25", f"r{i}", f"p{i}", 0.5) for i in range(6)))
    comparison = compare(ours, baseline, CITATION, {"bm25": "oracle", "bm2": "bm25"})
    lines = coverage_lines(comparison)
    assert any("the baseline base has no system 'oracle' (the --researchqa-compare-map target)" in line for line in lines)
    assert any("the map bm2=bm25 names no system of this run" in line for line in lines)
    [result] = evaluate_regressions([parse_regression_gate("citation_precision", CITATION)], comparison)
    assert "has no system 'oracle'" in result.describe() and not result.passed


def test_a_baseline_judged_under_another_protocol_or_by_other_judges_is_noted_not_silently_paired():
    """A tester's rubric run judged with the paper's prompts was compared with one judged with the project's,
    and the regression gate read "no significant drop, ok" with nothing said."""
    from pytest_researchqa.runs import judging_of

    new = [record("bm25", f"r{n}", f"p{n}", 0.5) for n in range(6)]
    baseline = Baseline("main", tuple(record("bm25", f"r{n}", f"p{n}", 0.5) for n in range(6)),
                        judging=judging_of({"judges": ["openai/j"], "judge_mode": "rubric", "protocol": "paper"}))
    here = {"judges": ["openai/j"], "judge_mode": "rubric", "protocol": "project"}
    notes = compare(new, baseline, CITATION, judging=here).notes
    assert notes == ("the baseline main was judged differently (protocol project here, paper there): what a judge "
                     "decides compares two different measurements",)
    assert compare(new, baseline, CITATION, judging={**here, "protocol": "paper"}).notes == ()
    older = Baseline("old", baseline.records, judging=judging_of({"judges": ["openai/j"]}))  # saved no protocol
    assert compare(new, older, CITATION, judging=here).notes == ()
    unjudged = {"judges": [], "protocol": "project"}  # nothing judged here: nothing to say
    assert compare(new, baseline, CITATION, judging=unjudged).notes == ()


def test_a_regression_gate_on_a_metric_the_baseline_measured_differently_is_undecidable_and_says_why():
    """A tester's baseline decided premise_flagged with the heuristic and the new run with a judge: the gate
    compared the two and passed. A metric names what of the judging it depends on (MetricSpec.measured_by);
    a deterministic metric's gate still decides."""
    from dataclasses import replace

    from pytest_researchqa.runs import judging_of

    def flagged(system, n, value):
        return replace(record(system, f"r{n}", f"p{n}", 0.5, "adversarial"),
                       metrics={"citation_precision": 0.5, "premise_flagged": value})

    new = [flagged("bm25", n, 0.0) for n in range(12)]
    baseline = Baseline("main", tuple(flagged("bm25", n, 1.0) for n in range(12)),
                        judging=judging_of({"judges": [], "flagged_judge": "openai/j"}))
    here = judging_of({"judges": [], "flagged_judge": None})  # this run's heuristic decided
    comparison = compare(new, baseline, CITATION, judging=here)
    assert comparison.notes == ("the baseline main was judged differently (flagged_judge heuristic here, openai/j "
                                "there): what a judge decides compares two different measurements",)
    gates = [parse_regression_gate("premise_flagged", CITATION), parse_regression_gate("citation_precision", CITATION)]
    flagged_gate, precision_gate = evaluate_regressions(gates, comparison)
    assert flagged_gate.state == "undecidable"
    assert flagged_gate.describe() == (
        "bm25: premise_flagged UNDECIDABLE: the baseline main measured it differently (flagged_judge heuristic "
        "here, openai/j there), so a difference would not be a regression")
    assert precision_gate.state == "passed"
    same = compare(new, baseline, CITATION, judging=judging_of({"flagged_judge": "openai/j"}))
    assert evaluate_regressions(gates[:1], same)[0].state == "failed"  # alike: the drop decides
    older = Baseline("old", baseline.records, judging=judging_of({"judges": []}))  # saved no flagged_judge
    assert evaluate_regressions(gates[:1], compare(new, older, CITATION, judging=here))[0].state == "failed"


def test_the_rubric_coverage_gate_is_undecidable_against_a_baseline_judged_by_other_judges():
    from dataclasses import replace

    from pytest_researchqa.families.rubric import RUBRIC
    from pytest_researchqa.runs import judging_of

    def covered(n, value):
        return replace(record("bm25", f"q{n}", None, 0.0, "rubric"), metrics={"coverage": value})

    new = [covered(n, 0.2) for n in range(12)]
    baseline = Baseline("main", tuple(covered(n, 0.9) for n in range(12)),
                        judging=judging_of({"judges": ["openai/a"], "protocol": "project"}))
    [gate] = evaluate_regressions([parse_regression_gate("coverage", RUBRIC)],
                                  compare(new, baseline, RUBRIC, judging={"judges": ["openai/b"], "protocol": "project"}))
    assert gate.state == "undecidable" and "judges openai/b here, openai/a there" in gate.describe()


def test_an_undecidable_regression_gate_says_when_the_baseline_graded_no_row_or_shares_none():
    """tester38 F12/F10: a main push whose every row errored became the baseline, and a collapsed pull request
    read only "no row both runs graded measured it"."""
    new = [record("bm25", f"r{n}", f"p{n}", 0.0) for n in range(6)]
    errored = Baseline("main", tuple(record("bm25", f"r{n}", f"p{n}", None, error="boom") for n in range(6)))
    [gate] = evaluate_regressions([parse_regression_gate("citation_precision", CITATION)],
                                  compare(new, errored, CITATION))
    assert gate.state == "undecidable"
    assert gate.describe().endswith("no row both runs graded measured it (the baseline main graded none of the 6 "
                                    "paired rows: 6 errored)")
    other = Baseline("main", tuple(record("bm25", f"x{n}", f"p{n}", 0.5) for n in range(6)))
    [gate] = evaluate_regressions([parse_regression_gate("citation_precision", CITATION)], compare(new, other, CITATION))
    assert "(no row it covers is in both this run and the baseline main" in gate.describe()


def test_an_undecidable_regression_gate_says_this_run_measured_the_metric_on_none_of_its_rows():
    """tester39 G12: a pull request whose rows all errored but its refusals (graded, no precision) read only
    "no row both runs graded measured it"; the baseline's side said why, this run's did not."""
    new = [record("bm25", f"r{n}", f"p{n}", None, error="boom") for n in range(4)]
    new += [record("bm25", f"r{n}", f"p{n}", None, "adversarial") for n in range(4, 6)]
    baseline = Baseline("main", tuple(record("bm25", f"r{n}", f"p{n}", 0.5) for n in range(6)))
    [gate] = evaluate_regressions([parse_regression_gate("citation_precision", CITATION)],
                                  compare(new, baseline, CITATION))
    assert gate.state == "undecidable"
    assert gate.describe().endswith("no row both runs graded measured it (this run measured citation_precision on "
                                    "none of the 6 paired rows: 4 errored, 2 graded without a citation_precision "
                                    "value)")
    apart = [record("bm25", f"r{n}", f"p{n}", 0.5 if n < 3 else None) for n in range(6)]
    shifted = Baseline("main", tuple(record("bm25", f"r{n}", f"p{n}", None if n < 3 else 0.5) for n in range(6)))
    [gate] = evaluate_regressions([parse_regression_gate("citation_precision", CITATION)],
                                  compare(apart, shifted, CITATION))
    assert gate.describe().endswith("(this run and the baseline main measured citation_precision on different rows)")


def judged_row(n, coverage, lenient="ok", judges=("strict", "lenient")):
    """A rubric row of bm25 judged by ``judges``: each judge's coverage, or ``lenient="error"`` for a lenient
    judge that gave no verdict (the row keeps the strict judge's value, as a run with one judge down)."""
    from pytest_researchqa.records import JudgeResult, JudgeScores

    by_judge = {"strict": JudgeScores({"coverage": coverage}),
                "lenient": JudgeScores({"error": "judge lenient: failed after 3 attempts; last: Connection error."}
                                       if lenient == "error" else {"coverage": coverage})}
    return RowRecord(row_id=f"q{n}", system="bm25", question_type="rubric", metrics={"coverage": coverage},
                     judge=JudgeResult(by_judge={name: by_judge[name] for name in judges}))


def test_rows_a_judge_gave_no_verdict_in_one_run_are_left_out_of_the_coverage_gate_instead_of_failing_it():
    """tester41 T3a: the lenient judge down on half the pull request's rows left them the strict judge's
    lower score, and the gate read a significant regression of an unchanged system."""
    from pytest_researchqa.families.rubric import RUBRIC

    baseline = Baseline("main", tuple(judged_row(n, 0.6) for n in range(12)))
    new = [judged_row(n, 0.4, "error") if n < 6 else judged_row(n, 0.6) for n in range(12)]
    comparison = compare(new, baseline, RUBRIC)
    [gate] = evaluate_regressions([parse_regression_gate("coverage", RUBRIC)], comparison)
    assert gate.passed and gate.test is not None and gate.test.rows == 6
    left_out = ("left out 6 of 12 paired row(s), not judged by the same judges in both runs (judge errors in this "
                "run: lenient on 6 (failed after 3 attempts; last: Connection error.))")
    assert gate.describe() == (f"bm25: coverage: 0.600 vs 0.600, delta +0.000, 95% CI +0.000 to +0.000, p(worse) "
                               f"1.000 over 6 queries / 6 rows ({left_out}): no significant drop, ok")
    [bm25] = comparison.systems
    assert bm25.deltas["coverage"].rows == 6, "the comparison table counts the rows its delta is over"
    assert f"bm25: 12 row(s) paired; coverage: {left_out}" in coverage_lines(comparison)


def test_a_coverage_gate_whose_every_row_lacks_a_judge_in_one_run_is_undecidable_and_names_the_judge_errors():
    from pytest_researchqa.families.rubric import RUBRIC

    baseline = Baseline("main", tuple(judged_row(n, 0.6, "error") for n in range(12)))
    [gate] = evaluate_regressions([parse_regression_gate("coverage", RUBRIC)],
                                  compare([judged_row(n, 0.2) for n in range(12)], baseline, RUBRIC))
    assert gate.state == "undecidable"
    assert gate.describe() == ("bm25: coverage UNDECIDABLE: no row both runs graded measured it (its 12 measured "
                               "paired row(s) were left out, not judged by the same judges in both runs: judge errors "
                               "in the baseline main: lenient on 12 (failed after 3 attempts; last: Connection error.))")


def test_a_judge_only_one_run_asked_is_named_as_not_a_judge_of_the_other_not_as_its_error():
    """tester43 LOW-5: runs judged by different judges read "judge errors in this run: ... (no verdict
    recorded)", though no judge of this run had failed."""
    from pytest_researchqa.families.rubric import RUBRIC

    baseline = Baseline("main", tuple(judged_row(n, 0.6) for n in range(4)))
    comparison = compare([judged_row(n, 0.6, judges=("strict",)) for n in range(4)], baseline, RUBRIC)
    [line] = [line for line in coverage_lines(comparison) if "left out" in line]
    assert line.endswith("not judged by the same judges in both runs (lenient is not a judge of this run (4 row(s)))"), line
    assert "judge errors" not in line and "no verdict recorded" not in line


def test_rows_judged_by_the_same_judges_in_both_runs_are_compared_even_when_a_judge_failed_on_both():
    from pytest_researchqa.families.rubric import RUBRIC

    baseline = Baseline("main", tuple(judged_row(n, 0.6, "error") for n in range(12)))
    comparison = compare([judged_row(n, 0.2, "error") for n in range(12)], baseline, RUBRIC)
    [gate] = evaluate_regressions([parse_regression_gate("coverage", RUBRIC)], comparison)
    assert gate.state == "failed" and "left out" not in gate.describe() and not comparison.systems[0].judge_gaps


def test_a_judge_error_of_the_citation_familys_answer_judges_leaves_no_citation_metric_out():
    """Its judges score factual accuracy and completeness, which no regression gate reads; premise_flagged's
    own judge errors the row when it gives no verdict (an errored row is never compared)."""
    from dataclasses import replace

    new, baseline = runs(0.4, 0.6)
    new = [replace(r, judge=judged_row(0, 0.5, "error").judge) for r in new]
    comparison = compare(new, baseline, CITATION)
    [gate] = evaluate_regressions([parse_regression_gate("citation_precision", CITATION)], comparison)
    assert gate.state == "failed" and gate.test.rows == 24 and not comparison.systems[0].judge_gaps


def test_a_row_answered_several_times_with_a_judge_down_on_one_answer_is_left_out_of_a_judged_comparison():
    """--researchqa-repeats pairs a row once, as its answers' mean: a mean with one answer judged by fewer
    judges is not every judge's mean either."""
    from dataclasses import replace

    from pytest_researchqa.families.rubric import RUBRIC

    baseline = Baseline("main", tuple(judged_row(n, 0.6) for n in range(12)))
    new = [replace(judged_row(n, 0.6), repeat=0) for n in range(12)]
    new += [replace(judged_row(n, 0.4, "error") if n < 6 else judged_row(n, 0.6), repeat=1) for n in range(12)]
    [bm25] = compare(new, baseline, RUBRIC).systems
    assert bm25.deltas["coverage"].rows == 6 and bm25.judge_gaps["coverage"].rows == 6


def test_a_cut_short_run_keeps_the_gates_of_a_system_none_of_whose_rows_ran_as_undecidable():
    """tester41 T10: with every row of a system crashed, its configured gates vanished from the checks."""
    from pytest_researchqa.reporting.gates import Gate
    from pytest_researchqa.session import ResearchSession

    new, baseline = runs(0.5, 0.5)
    session = ResearchSession(CITATION, [Gate("citation_precision", 0.4)], regressions=[
        parse_regression_gate("citation_precision", CITATION)], baseline=baseline, interrupted=True,
        systems=("bm25", "never-ran"))
    for one in new:
        session.add(one)
    checks = {c.name: c for c in session.outcome().checks}
    assert checks["threshold::citation_precision>=0.4[never-ran]"].state == "undecidable"
    ran_none = checks["regression::citation_precision[never-ran]"]
    assert ran_none.state == "undecidable" and "this run measured none of its rows" in ran_none.message
    assert checks["regression::citation_precision[bm25]"].state == "passed"
    whole = ResearchSession(CITATION, [Gate("citation_precision", 0.4)], systems=("bm25", "never-ran"))
    for one in new:
        whole.add(one)
    assert [c.name for c in whole.outcome().checks] == ["threshold::citation_precision>=0.4[bm25]"], (
        "a run that was not cut short (a -k slice) gates only what it measured")


def test_the_json_of_a_regression_gate_that_could_not_decide_names_no_rule_it_decided_by():
    """tester44 LOW-6: an undecidable gate's JSON entry said `decided_on: effect size`, `min_effect: 0.05`."""
    from pytest_researchqa.families.rubric import RUBRIC
    from pytest_researchqa.reporting.json_summary import summary
    from pytest_researchqa.session import ResearchSession

    session = ResearchSession(RUBRIC, regressions=[parse_regression_gate("coverage", RUBRIC)],
                              baseline=Baseline("main", tuple(judged_row(n, 0.6, "error") for n in range(12))))
    for n in range(12):
        session.add(judged_row(n, 0.2))
    [entry] = summary(session.outcome(), RUBRIC)["regressions"]
    assert (entry["state"], entry["decided_on"], entry["min_effect"]) == ("undecidable", None, None)


def test_the_json_summary_gives_a_systems_cost_to_the_millionth_without_float_noise():
    """tester46: the JSON said "cost_usd": 0.3434999999999999 (a sum of prices is not exact in binary)."""
    from pytest_researchqa.families.citation import CITATION
    from pytest_researchqa.records import RowRecord, Usage
    from pytest_researchqa.reporting.json_summary import summary
    from pytest_researchqa.session import ResearchSession

    session = ResearchSession(CITATION)
    for n in range(3):
        session.add(RowRecord(row_id=f"r{n}", system="openai/x", model_system=True, metrics={"citation_accuracy": 1.0},
                              usage=Usage(cost_usd=0.1)))
    [system] = summary(session.outcome(), CITATION)["systems"]
    assert 0.1 + 0.1 + 0.1 != 0.3 and system["cost_usd"] == 0.3


def test_a_large_drop_the_test_cannot_call_significant_is_undecidable_never_passed():
    """tester64 MED: five papers, four worse by 1.0 and one better: five changed, so the sign-flip test decides,
    p(worse) 0.19, and the gate read "no significant drop, ok" with a delta of -0.6 (four worse alone failed)."""
    new, baseline = runs(1.0, 1.0, papers=5)
    baseline = Baseline(baseline.name, tuple(record("bm25", r.row_id, r.paper_id, 0.0) if r.paper_id == "p4" else r
                                             for r in baseline.records))
    new = [record("bm25", r.row_id, r.paper_id, 0.0) if r.paper_id != "p4" else r for r in new]
    gate = parse_regression_gate("citation_precision", CITATION)
    [result] = evaluate_regressions([gate], compare(new, baseline, CITATION))
    assert result.can_reach_alpha and not result.significant and result.test.changed == 5
    assert result.state == "undecidable" and not result.passed
    assert "UNDECIDABLE" in result.describe() and "p(worse) 0.188" in result.describe()
    assert "a drop larger than the minimum effect 0.05 that 5 changed papers cannot tell from noise" in result.describe()
    # An explicit :0 is the user's: any drop the test cannot tell from noise is undecidable, said as 0 (tester65 LOW).
    [strict] = evaluate_regressions([parse_regression_gate("citation_precision:0", CITATION)],
                                    compare(new, baseline, CITATION))
    assert strict.state == "undecidable" and "larger than the minimum effect 0 that" in strict.describe()
    # The gate's own minimum effect is the tolerance: a drop within it passes, as before.
    [tolerant] = evaluate_regressions([parse_regression_gate("citation_precision:0.7", CITATION)],
                                      compare(new, baseline, CITATION))
    assert tolerant.state == "passed" and tolerant.describe().endswith("no significant drop, ok")


def test_a_metric_only_the_baseline_measured_is_shown_with_why_it_was_not_compared():
    """tester64 MED: a pull request whose system stopped citing; citation precision vanished from the comparison
    table and its lines with no word, where the docs say nothing is silently dropped."""
    from pytest_researchqa.reporting.terminal import comparison_text

    new, baseline = runs(None, 0.5, papers=3)
    text = comparison_text(compare(new, baseline, CITATION), CITATION)
    assert "| bm25     | cite prec | —          | 0.500      | —   | —             | —           | —             |" in text, text
    assert ("bm25: 9 row(s) paired; citation_precision not compared: this run measured citation_precision on none "
            "of the 9 paired rows: 9 graded without a citation_precision value") in text, text
    # A metric neither run measured on the paired rows (section coverage here) is not a comparison to speak of.
    assert "sect cov" not in text and "section_coverage" not in text
