"""The model calls a run is about to make, and what they should cost: printed by
``--researchqa-dry-run`` and checked against ``--researchqa-max-cost`` before the first call.

Tokens are estimated from characters (4 to a token) and each call's output cap (or 500 tokens
for an answer, 300 for a verdict, when nothing caps it); prices are litellm's. A model litellm
cannot price makes the total unknown ("—"): a budget is then enforced only as calls report
their cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Optional

from .costs import Spend, no_provider_said, price_of, provider_unknown, spend_text

if TYPE_CHECKING:  # pragma: no cover
    from .answers import Answer
    from .case import Case
    from .dataset import FamilyRow
    from .llm.judges import ModelJudge
    from .state import RunState

JUDGE_OUTPUT_TOKENS = 300
JUDGE_PROMPT_OVERHEAD_TOKENS = 700  # the rubric and guidance around the question and the answer


@dataclass
class PlannedCalls:
    """One model in one role (answering or judging): calls to make, calls already on disk, estimates."""

    model: str
    role: str
    fresh: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    priced: bool = True  # False for a local server: its calls have no price
    no_provider: bool = False  # litellm cannot tell which provider serves it (costs.provider_unknown)

    @property
    def cost(self) -> Optional[float]:
        if self.fresh == 0:
            return 0.0
        if not self.priced:
            return None
        return price_of(self.model, self.prompt_tokens, self.completion_tokens)


def plan_calls(state: "RunState", cases: Iterable["Case"]) -> list[PlannedCalls]:
    """The answer calls of these cases' model rows, and the judge calls of every answered row (a judge grades
    bm25's or the user's own answers too, at a price; rows of other systems answer for nothing)."""
    from .llm.judges import in_flip_sample
    from .llm.system import UNCAPPED_ANSWER_TOKENS
    from .papers import PaperUnavailable

    plans: dict[tuple[str, str], PlannedCalls] = {}
    asked: set[str] = set()  # the verdicts on known answers planned so far: identical answers share one
    for case in cases:
        if case.kind != "row" or case.system is None:
            continue
        row = state.dataset.rows[case.position]
        answer_tokens = UNCAPPED_ANSWER_TOKENS  # what a judge reads of an answer not yet given
        cached: Optional[Any] = None  # the answer on disk already: its verdicts may be too
        if state.services.is_model(case.system):
            try:
                paper = state.papers.get(row.paper_id, row.paper_s3_url) if state.family.uses_papers else None
            except PaperUnavailable:
                continue  # the row errors on its own; it calls nothing
            system: Any = state.services.system(case.system)
            # The cached answer read once: it is the plan's "answered already" and what its verdicts grade.
            cached = system.cached_answer(row, paper, case.repeat) if hasattr(system, "cached_answer") else None
            planned = (system.planned_call(row, paper, case.repeat)
                       if cached is None and hasattr(system, "planned_call") else None)
            if (case.system, "answer") not in plans:  # litellm asked once a model, not once a row
                plans[case.system, "answer"] = PlannedCalls(
                    case.system, "answer", priced=not system.spec.local,
                    no_provider=provider_unknown(system.spec.name, system.spec.params))
            answer = plans[case.system, "answer"]
            if planned is None:
                answer.cached += 1
                answer_tokens = len(cached.text) // 4 + 1 if cached is not None else answer_tokens
            else:
                prompt_tokens, answer_tokens = planned
                answer.fresh += 1
                answer.prompt_tokens += prompt_tokens
                answer.completion_tokens += answer_tokens
        panel = state.services.judges_for(case.system) if state.settings.judges else []
        repeats = range(1 + (getattr(panel, "repeats", 0) if in_flip_sample(row.row_id) else 0))  # the flip probe's
        judges = [(judge, repeats) for judge in panel]
        premise = state.services.premise_judge()
        if premise is not None and premise.judges_row(row):
            # A verdict for each answer to a false-premise question, unless the answer refused (no subject).
            if cached is None or premise.subject(row, cached) is not None:
                judges.append((premise, range(1)))
        judged_chars = len(row.question) + len(getattr(row, "expected_answer", "") or "")
        for judge, verdicts_of in judges:
            calls = _verdicts_to_ask(judge, row, cached, verdicts_of, asked)
            if not calls:
                continue
            if (judge.name, "judge") not in plans:
                plans[judge.name, "judge"] = PlannedCalls(
                    judge.spec.name, "judge", priced=not judge.spec.local,
                    no_provider=provider_unknown(judge.spec.name, judge.spec.params))
            verdicts = plans[judge.name, "judge"]
            verdicts.fresh += calls
            verdicts.prompt_tokens += calls * (JUDGE_PROMPT_OVERHEAD_TOKENS + judged_chars // 4 + answer_tokens)
            verdicts.completion_tokens += calls * JUDGE_OUTPUT_TOKENS
    return sorted(plans.values(), key=lambda plan: plan.role != "answer")  # answers first, whichever row came first


def _verdicts_to_ask(judge: "ModelJudge", row: "FamilyRow", answer: "Optional[Answer]", repeats: range,
                     asked: set[str]) -> int:
    """How many verdicts of ``judge`` on ``answer`` the run will pay for: each repeat not on disk, and not planned
    already for another system's answer that is word for word the same (one call serves both). An answer not
    given yet is a call a verdict."""
    if answer is None:
        return len(repeats)
    subject = judge.subject(row, answer) or ()
    calls = 0
    for repeat in repeats:
        key = judge.key(*subject, repeat=repeat)
        if key not in asked and not judge.holds(*subject, repeat=repeat):
            asked.add(key)
            calls += 1
    return calls


def planned_spend(plans: Iterable[PlannedCalls]) -> Spend:
    """What the planned calls are estimated to cost: the priced ones' sum, and how many calls have no price (a
    local server, a model litellm does not list): the sum is then what a budget can count, a floor."""
    spend = Spend()
    for plan in plans:
        cost = plan.cost
        spend = spend.plus(Spend(cost, 0) if cost is not None else Spend(0.0, plan.fresh))
    return spend


def plan_lines(plans: list[PlannedCalls]) -> list[str]:
    """The plan as the terminal shows it: one line per model and role, then the total."""
    lines = []
    for plan in plans:
        line = (f"{plan.role:6} {plan.model}: {plan.fresh} call(s) to make, {plan.cached} answered already; "
                f"~{plan.prompt_tokens:,} tokens in, ~{plan.completion_tokens:,} out; "
                f"estimated {spend_text(plan.cost)}")
        if plan.no_provider:  # a misspelt name, or a local server's model named without its provider
            line += f" ({no_provider_said(plan.model)})"
        lines.append(line)
    calls = sum(p.fresh for p in plans)
    lines.append(f"total: {calls} model call(s), estimated {planned_spend(plans).text()} "
                 "(tokens from characters and output caps; prices from litellm; '—': no price known)")
    return lines
