"""The rubric family's call count before a run (families/rubric/calls.py): pure, on plain rows."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_researchqa.families.rubric.calls import ModelUse, count_calls, price
from pytest_researchqa.families.rubric.tournament import paper_schedule, schedule


def row(row_id: str, items: int, domain: str = "Economics") -> SimpleNamespace:
    return SimpleNamespace(row_id=row_id, query=f"query {row_id}", domain=domain, rubric=("item",) * items)


ROWS = [row("a", 3), row("b", 2), row("c", 0), row("d", 4, "Humanities")]
SYSTEMS = ("m1", "m2", "oracle")


def counted(**changes):
    arguments = dict(is_model=lambda s: s.startswith("m"), coverage_judges=lambda s: ["j1", "j2"],
                     graded=lambda r: len(r.rubric), repeats=lambda r: 0,
                     schedule=lambda by_row: schedule(by_row, None), pairwise_judge=lambda a, b: "j1",
                     prompt_tokens=lambda kind, model, r: 100, answer_tokens=400)
    arguments.update(changes)
    return count_calls([(s, r) for s in SYSTEMS for r in ROWS], **arguments)


def test_calls_are_answers_per_model_coverage_per_graded_answer_and_judge_and_two_per_battle():
    plan = counted()
    assert plan.answer_calls == 2 * 4, "two model systems, four queries; the oracle calls nobody"
    assert plan.coverage_calls == 3 * 3 * 2, "three systems x three rows with items x two judges"
    assert plan.battles == 3 * 3 and plan.pairwise_calls == 18, "three pairs x three judged rows, both orders"
    assert plan.judge_calls == 36 and plan.calls == 44
    assert plan.by_model["j1"].calls == 9 + 18 and plan.by_model["j2"].calls == 9
    assert plan.by_model["m1"].completion_tokens == 4 * 400


def test_what_the_cache_holds_is_not_counted_and_a_verdict_on_an_answer_still_to_come_is():
    """tester47: the estimate assumed an empty cache, so a budget refused a warm rerun that would call nobody."""
    from pytest_researchqa.families.rubric.calls import CacheLookups

    answered = {("m1", "a"), ("m1", "b"), ("m2", "a")}  # m1's answers to a and b, m2's to a, are on disk
    on_disk = CacheLookups(
        answer=lambda system, r: f"{system}:{r.row_id}" if (system, r.row_id) in answered else None,
        coverage=lambda judge, r, answer, repeat: judge == "j1",  # j1's verdicts on those answers too
        battle=lambda judge, query, first, second: first.startswith("m1"),  # one order of the m1-m2 battle
        battle_text=str)
    plan = counted(on_disk=on_disk)
    assert plan.answer_calls == 8 - 3 and plan.coverage_calls == 18 - 3, "j2's verdicts on them are still asked"
    assert plan.pairwise_calls == 18 - 1, "m1 v m2 on row a: one order on disk; battles with the oracle unknown"
    assert plan.cached == 3 + 3 + 1 and plan.calls == 44 - plan.cached
    assert plan.by_model["m1"].calls == 2 and plan.by_model["j2"].calls == 9


def test_re_judgements_battle_caps_and_the_papers_schedule_change_the_count():
    assert counted(repeats=lambda r: 2 if r.row_id == "a" else 0).coverage_calls == 18 + 3 * 2 * 2
    assert counted(schedule=lambda by_row: schedule(by_row, 1)).battles == 3
    by_domain = counted(schedule=paper_schedule)
    assert by_domain.battles == 9, "every battle a domain offers when it has fewer than the paper's minimum"
    assert counted(pairwise_judge=None).pairwise_calls == 0
    assert counted(coverage_judges=lambda s: []).judge_calls == 0, "no judge: no coverage, no battles"


@pytest.mark.usefixtures("litellm_loaded")
def test_a_model_without_a_price_has_none_never_zero():
    use = ModelUse(calls=1, prompt_tokens=1000, completion_tokens=100)
    assert price("openai/no-such-model-here", use) is None
    assert price("gpt-4o-mini", use) > 0
