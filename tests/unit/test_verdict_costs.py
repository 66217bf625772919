"""What a row's verdicts cost: every verdict this run paid for is counted once (llm.judges.judge_all)."""

import concurrent.futures
from types import SimpleNamespace
from typing import Any

from pytest_researchqa.llm.engine import ProviderError
from pytest_researchqa.llm.judges import JudgePanel, in_flip_sample, judge_all


class ScriptedJudge:
    """A judge whose n-th verdict on the row is the n-th item of ``verdicts`` (an exception: that call failed)."""

    def __init__(self, name: str, verdicts: list[Any]) -> None:
        self.name = name
        self.verdicts = verdicts

    def subject(self, row: Any, answer: Any) -> tuple[Any, ...]:
        return (row, answer)

    def submit(self, *subject: Any, repeat: int = 0) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        verdict = self.verdicts[repeat]
        if isinstance(verdict, Exception):
            future.set_exception(verdict)
        else:
            future.set_result(verdict)
        return future

    @staticmethod
    def combine(by_judge: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return {"consensus": {}, "spread": {}}


def sampled_row() -> SimpleNamespace:
    row_id = next(f"row-{n}" for n in range(100) if in_flip_sample(f"row-{n}"))
    return SimpleNamespace(row_id=row_id)


def verdict(cost: float, from_cache: bool = False) -> dict[str, Any]:
    return {"scores": {"factual_accuracy": 4}, "cost_usd": cost, **({"from_cache": True} if from_cache else {})}


def test_a_probe_paid_for_counts_even_when_a_later_probe_of_the_same_judge_fails() -> None:
    judge = ScriptedJudge("j", [verdict(0.01), verdict(0.02), ProviderError("judge j: timed out")])
    result = judge_all(JudgePanel([judge], repeats=2), sampled_row(), "an answer")  # type: ignore[list-item, arg-type]
    assert result.costs.count == 2 and result.costs.spent_usd == 0.03
    assert result.repeats == {}, "a judge with a failed probe tells nothing about flips"


def test_a_verdict_taken_from_the_cache_costs_what_it_cost_when_made_and_nothing_this_run() -> None:
    judge = ScriptedJudge("j", [verdict(0.01, from_cache=True)])
    result = judge_all(JudgePanel([judge]), sampled_row(), "an answer")  # type: ignore[list-item, arg-type]
    assert (result.costs.count, result.costs.made_usd, result.costs.spent_usd) == (1, 0.01, 0.0)
