"""The leaderboard's ranking and scoping rules, on plain records."""

from __future__ import annotations

import pytest

from pytest_researchqa.families import MetricSpec
from pytest_researchqa.families.citation import CITATION
from pytest_researchqa.records import RowRecord
from pytest_researchqa.reporting.summaries import by_system, short_list, summarize

METRICS = CITATION.metric_names


def record(system: str, question_type: str = "lookup", **metrics) -> RowRecord:
    return RowRecord(system=system, row_id=f"{system}-{question_type}", paper_id="p", question_type=question_type,
                     domain="d", metrics=metrics)


def leaderboard_rows(records):
    return by_system(records, CITATION.metrics)


def test_a_system_that_never_cites_cannot_outrank_one_that_cites_a_few_altered_quotes():
    silent = [record("silent", section_coverage=0.0, citation_precision=None, citation_accuracy=None),
              record("silent", "adversarial", refusal_correctness=1.0, premise_flagged=0.0)]
    citing = [record("citing", section_coverage=0.5, citation_precision=0.4, citation_accuracy=0.6),
              record("citing", "adversarial", refusal_correctness=0.0, premise_flagged=1.0)]
    assert [s.label for s in leaderboard_rows(silent + citing)] == ["citing", "silent"]


def test_the_answerable_means_leave_false_premise_rows_out():
    records = [record("s", section_coverage=1.0, citation_precision=1.0, citation_accuracy=1.0),
               record("s", "adversarial", refusal_correctness=1.0, premise_flagged=1.0)]
    means = summarize("s", records, METRICS).means
    assert means == {"citation_precision": 1.0, "section_coverage": 1.0, "citation_accuracy": 1.0,
                     "refusal_correctness": 1.0, "premise_flagged": 1.0}


def test_a_system_that_errors_on_hard_rows_does_not_outrank_the_same_system_answering_them():
    from pytest_researchqa.records import RowRecord
    from pytest_researchqa.reporting.summaries import by_system

    def rec(system, row, value, error=None):
        return RowRecord(row_id=row, system=system, metrics={} if error else {"citation_accuracy": value}, error=error)

    steady = [rec("steady", "easy", 0.9), rec("steady", "hard", 0.3)]
    crashy = [rec("crashy", "easy", 0.9), rec("crashy", "hard", None, error="crashed")]
    ranked = by_system(steady + crashy, [CITATION.metric("citation_accuracy")])
    assert [s.label for s in ranked] == ["steady", "crashy"]
    assert ranked[1].means["citation_accuracy"] == 0.9, "the means still leave errored rows out"


def test_the_ranking_reads_each_metric_on_its_own_range_and_direction():
    """A tester's family: an exact-match share (0-1) and a word count (0-100, fewer is better). Its system
    worse on both ranked first, its word count averaged in as if a larger count were better."""
    exact = MetricSpec("exact", "exact")
    words = MetricSpec("words", "words", low=0, high=100, higher_is_better=False)

    def rec(system, **metrics):
        return RowRecord(row_id="r", system=system, metrics=metrics)

    ranked = by_system([rec("atlas", exact=0.5, words=2.0), rec("perfect", exact=1.0, words=1.0),
                        rec("chatty", exact=0.0, words=58.0)], [exact, words])
    assert [s.label for s in ranked] == ["perfect", "atlas", "chatty"]
    assert ranked[0].composite([exact, words]) == (1.0 + 0.99) / 2


ALTERED_NUMBER_MESSAGE = """citation accuracy 0.00 < 1.00: 2 of 2 citations not grounded in the paper
  [1] "Across two semesters, 999 students in 18 course sections took part."
      altered: a real passage with words or numbers changed
      departs from the paper (page 1) after: 'Across two semesters,'
        the quote goes on: '999 students in 18 course sections took part.'
        the paper goes on: '412 students in 18 course sections took part.'
  [2] "Across two semesters, 999 students in 18"
      altered: a real passage with words or numbers changed
      departs from the paper (page 1) after: 'Across two semesters,'
section coverage 0.00 < 1.00: missed 1 of 1 required sections
  missed 'Abstract', e.g. "Across two semesters, 412 students in 18 course sections took part."
  cited instead:
  [1] "Across two semesters, 999 students in 18 course sections took part." (not in the paper)"""


def test_a_short_diagnosis_keeps_how_quote_and_paper_differ_and_every_checks_headline():
    from pytest_researchqa.row_reports import diagnosis_of, saved_diagnosis

    short = diagnosis_of(ALTERED_NUMBER_MESSAGE).splitlines()
    assert len(short) == 8 and short[-1].startswith("... 6 more line(s)")
    assert short[0].startswith("citation accuracy") and short[5].startswith("section coverage")
    assert any("the quote goes on: '999" in line for line in short)
    assert any("the paper goes on: '412" in line for line in short)
    assert any(line.strip().startswith("missed 'Abstract'") for line in short)
    assert saved_diagnosis(ALTERED_NUMBER_MESSAGE) == ALTERED_NUMBER_MESSAGE, "a saved row keeps every line"


def test_the_rows_below_their_bar_are_listed_in_the_same_order_whatever_order_they_finished_in():
    finished = [RowRecord(row_id=row_id, system=system, outcome="below_bar", diagnosis=f"{row_id} missed Methods")
                for system, row_id in [("bm25", "r10"), ("oracle", "r1"), ("bm25", "r2"), ("bm25", "r1")]]
    listed = short_list(finished)
    assert listed == ["bm25 · r1: r1 missed Methods", "bm25 · r2: r2 missed Methods",
                      "bm25 · r10: r10 missed Methods", "oracle · r1: r1 missed Methods"]
    assert short_list(list(reversed(finished))) == listed


def test_the_count_of_rows_left_unlisted_names_pytests_option_in_the_terminal_only():
    """tester64 LOW: the Markdown PR comment ended its list with '... -rx lists them', which its reader cannot use."""
    from pytest_researchqa.reporting.summaries import error_list

    below = [RowRecord(row_id=f"r{n}", system="bm25", outcome="below_bar", diagnosis="missed Methods") for n in range(12)]
    errored = [RowRecord(row_id=f"r{n}", system="bm25", error="boom") for n in range(12)]
    assert short_list(below)[-1] == "... and 2 more (every diagnosis is in the saved run's rows.jsonl; -rx lists them)"
    assert short_list(below, terminal=False)[-1] == "... and 2 more (every diagnosis is in the saved run's rows.jsonl)"
    assert short_list(below, saved=False, terminal=False)[-1] == "... and 2 more"
    assert (error_list(errored)[-1], error_list(errored, terminal=False)[-1]) == ("... and 2 more (-rE lists them)",
                                                                                  "... and 2 more")


def test_a_row_answered_several_times_is_listed_with_which_answer_fell_short():
    """tester66 LOW: under --researchqa-repeats=2 the same row was listed twice with nothing to tell them apart."""
    below = [RowRecord(row_id="edu-adv-3", system="m", outcome="below_bar", diagnosis="premise not flagged", repeat=n)
             for n in (1, 0)]
    assert short_list(below) == ["m · edu-adv-3 (answer 1): premise not flagged",
                                 "m · edu-adv-3 (answer 2): premise not flagged"]
    assert short_list(below[1:]) == ["m · edu-adv-3: premise not flagged"], "a run without repeats: the row alone"
    once = RowRecord(row_id="edu-adv-3", system="bm25", outcome="below_bar", diagnosis="premise not flagged")
    assert short_list([*below, once])[0] == "bm25 · edu-adv-3: premise not flagged", \
        "a system answered once in a run with repeats is named alone (tester67 LOW)"


def test_a_gate_on_a_question_type_its_metric_is_never_measured_on_is_refused_at_start():
    """adversarial.section_coverage was accepted, always undecidable, and exited 0 (a tester's CI typo)."""
    from pytest_researchqa.reporting.gates import GateSpecError, parse_gate, parse_regression_gate

    with pytest.raises(GateSpecError, match=r"section_coverage is not measured on adversarial rows \(only on "
                                            r"lookup, comprehension, multi_hop\): such a gate could never decide"):
        parse_gate("adversarial.section_coverage=0.5", CITATION)
    with pytest.raises(GateSpecError, match="refusal_correctness is not measured on lookup rows"):
        parse_regression_gate("lookup.refusal_correctness", CITATION)
    assert parse_gate("adversarial.refusal_correctness=0.5", CITATION).question_type == "adversarial"


def test_a_gates_test_name_reads_back_as_its_kind_question_type_metric_and_system():
    from pytest_researchqa.reporting.gates import Gate, GateResult, RegressionGate, RegressionResult, gate_of_check

    threshold = GateResult(Gate("citation_precision", 0.9), "my.pkg:answer[v2]", 0.5)
    regression = RegressionResult(RegressionGate("section_coverage", 0.02), "bm25", "main", "bm25", None)
    typed = GateResult(Gate("citation_precision", 1e-5, question_type="lookup"), "bm25", 0.5)
    assert gate_of_check(threshold.name) == ("threshold", None, "citation_precision", "my.pkg:answer[v2]")
    assert gate_of_check(regression.name) == ("regression", None, "section_coverage", "bm25")
    assert gate_of_check(typed.name) == ("threshold", "lookup", "citation_precision", "bm25")
    assert gate_of_check("run::no_errors") is None
