"""What a rubric run will ask of models before it asks anything: calls per kind and, where litellm's cost
map knows a model's prices, an estimated dollar figure.

``count_calls`` is pure: given the (system, row) answers a run will produce and the run's judge choices,
it returns the calls. Answers: one per model system and query. Coverage: one per answer and coverage judge
(rows with rubric items, or every row under ``--researchqa-generic-rubric``), plus the flip-rate
re-judgements of ``--researchqa-judge-repeats``. Pairwise: the battles the tournament will schedule if every
answer is judged (its own scheduling functions, on the planned answers) x 2 orders x 1 direct judge.
Cached verdicts are not asked again, and retries and repair turns add calls: the counts are those of a
run with no failure. What the cache holds is not asked again: an answer on disk is no call, and the
verdicts on it that are on disk are none either (a verdict on an answer still to be given is counted).
``plan`` builds the arguments from a run's services, settings and cache; ``estimate_lines`` is what the
plugin prints.

Tokens are estimated, not counted: a prompt is its characters / 4 as the run would render it, with each
answer assumed to be the task's length guidance in words (``ASSUMED_ANSWER_WORDS`` without one) plus
``ASSUMED_REFERENCES`` references; replies are assumed at ``REPLY_TOKENS`` (coverage: per rubric item).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from ...llm.system import CHARS_PER_TOKEN
from ..protocols import Estimate

if TYPE_CHECKING:  # pragma: no cover
    from .rows import ResearchRow

TOKENS_PER_WORD = 4 / 3
ASSUMED_ANSWER_WORDS = 250  # the seed's length guidance; used when the task sets none
ASSUMED_REFERENCES = 5
REPLY_TOKENS = {"coverage": 60, "pairwise": 150}  # coverage: per rubric item (a justification and a score)
_REFERENCE = "Author, A., Author, B. et al. (2020). A representative title of a cited work. Journal 12(3): 45-67."


@dataclass
class ModelUse:
    """One model's estimated calls and tokens."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, prompt_tokens: int, completion_tokens: int, times: int = 1) -> None:
        self.calls += times
        self.prompt_tokens += times * prompt_tokens
        self.completion_tokens += times * completion_tokens


@dataclass
class CallPlan:
    """The calls a run will make (no failure), by kind and by model; ``cached``: those the cache holds."""

    answer_calls: int = 0
    cached: int = 0
    coverage_calls: int = 0
    battles: int = 0
    pairwise_calls: int = 0
    answering_models: int = 0
    graded_answers: int = 0
    by_model: dict[str, ModelUse] = field(default_factory=dict)
    local: set[str] = field(default_factory=set)  # models on a local server: their calls have no price
    no_provider: set[str] = field(default_factory=set)  # models litellm cannot place (costs.provider_unknown)

    @property
    def judge_calls(self) -> int:
        return self.coverage_calls + self.pairwise_calls

    @property
    def calls(self) -> int:
        return self.answer_calls + self.judge_calls

    def use(self, model: str) -> ModelUse:
        return self.by_model.setdefault(model, ModelUse())


def count_calls(answers: Sequence[tuple[str, Any]], *, is_model: Callable[[str], bool],
                coverage_judges: Callable[[str], Sequence[str]], graded: Callable[[Any], Optional[int]],
                repeats: Callable[[Any], int],
                schedule: Callable[[dict[str, dict[str, Any]]], list[tuple[str, str, str]]],
                pairwise_judge: Optional[Callable[[str, str], str]],
                prompt_tokens: Callable[[str, str, Any], int] = lambda kind, model, row: 0,
                answer_tokens: int = 0,
                on_disk: Optional["CacheLookups"] = None) -> CallPlan:
    """The calls of a run whose answers are ``answers`` ((system, row) pairs).

    ``graded(row)``: how many rubric items a coverage judge scores on the row (None or 0: not graded);
    ``repeats(row)``: extra re-judgements per judge for the row; ``schedule(by_row)``: the tournament's
    battles given ``{row_id: {system: row}}``; ``pairwise_judge(first, second)``: the battle's judge (None:
    no battles); ``prompt_tokens(kind, model, row)``: a prompt's estimated size; ``on_disk``: what the
    cache holds (none: an empty cache).
    """
    from .tournament import Contender

    plan = CallPlan()
    by_row: dict[str, dict[str, Any]] = {}
    rows: dict[str, Any] = {}
    answering = set()
    unique = {(system, row.row_id): (system, row) for system, row in answers}
    for system, row in unique.values():
        known = on_disk.answer(system, row) if on_disk is not None and is_model(system) else None
        if is_model(system):
            answering.add(system)
            if known is not None:
                plan.cached += 1
            else:
                plan.answer_calls += 1
                plan.use(system).add(prompt_tokens("answer", system, row), answer_tokens)
        items = graded(row)
        judges = list(coverage_judges(system))
        if not items or not judges:
            continue
        plan.graded_answers += 1
        for judge in judges:
            times = 1 + repeats(row)
            held = sum(1 for repeat in range(times)
                       if known is not None and on_disk is not None and on_disk.coverage(judge, row, known, repeat))
            plan.cached += held
            plan.coverage_calls += times - held
            if times > held:
                plan.use(judge).add(prompt_tokens("coverage", judge, row), REPLY_TOKENS["coverage"] * items,
                                    times - held)
        rows[row.row_id] = row
        text = on_disk.battle_text(known) if known is not None and on_disk is not None else ""
        by_row.setdefault(row.row_id, {})[system] = Contender(system, row.row_id, row.query, text, (),
                                                               row.domain or "")
    plan.answering_models = len(answering)
    if pairwise_judge is None or len({s for answers_ in by_row.values() for s in answers_}) < 2:
        return plan
    for row_id, first, second in schedule(by_row):
        judge = pairwise_judge(first, second)
        plan.battles += 1
        a, b = by_row[row_id][first], by_row[row_id][second]
        held = (sum(on_disk.battle(judge, a.query, x, y) for x, y in ((a.text, b.text), (b.text, a.text)))
                if on_disk is not None and a.text and b.text else 0)  # only answers on disk have verdicts on disk
        plan.cached += held
        plan.pairwise_calls += 2 - held
        if held < 2:
            plan.use(judge).add(prompt_tokens("pairwise", judge, rows[row_id]), REPLY_TOKENS["pairwise"], 2 - held)
    return plan


@dataclass
class CacheLookups:
    """What a run's cache holds, as ``count_calls`` asks: a model's answer to a row (None: not on disk), a
    coverage judge's verdict on that answer (``repeat``: the flip-rate probe's re-judgements), a pairwise
    judge's verdict on two answers in one order, and an answer as the pairwise judge reads it."""

    answer: Callable[[str, Any], Optional[Any]]
    coverage: Callable[[str, Any, Any, int], bool]
    battle: Callable[[str, str, str, str], bool]
    battle_text: Callable[[Any], str]


def price(model: str, use: ModelUse) -> Optional[float]:
    """Dollars for a model's estimated tokens (litellm's local cost map); None when it has no price."""
    from ...costs import price_of
    from ...llm.system import _import_litellm

    _import_litellm()  # its settings: never fetch prices from the network
    return price_of(model, use.prompt_tokens, use.completion_tokens)


def plan(answers: Sequence[tuple[str, Any]], services: Any, settings: Any) -> CallPlan:
    """The calls of this run: ``count_calls`` with the run's own judges, schedule and prompts."""
    from ...answers import Answer
    from ...llm.judges import in_flip_sample
    from .judges import answer_with_references, generic_rubric
    from .task import TaskOptions, references, task_prompt
    from .tournament import Rules, battle_text, paper_schedule, schedule

    options = TaskOptions(settings.date_cutoff, settings.length_words)
    words = settings.length_words or ASSUMED_ANSWER_WORDS
    placeholder = Answer(text=" ".join(["word"] * words), citations=[_REFERENCE] * ASSUMED_REFERENCES)
    generic = len(generic_rubric()) if settings.generic_rubric else 0

    def graded(row: "ResearchRow") -> int:
        return len(row.rubric) or generic

    judges: dict[str, Any] = {}  # each judge the run uses, by name: the prompt it renders

    def coverage_judges(system: str) -> list[str]:
        panel = services.judges_for(system) if settings.judges else []
        judges.update((judge.name, judge) for judge in panel)
        return [judge.name for judge in panel]

    def pairwise_judge(first: str, second: str) -> str:
        judge = services.pairwise_judge(first, second)
        judges[f"pairwise {judge.name}"] = judge
        return str(judge.name)

    sizes: dict[tuple[str, str, str], int] = {}  # a row's prompt is the same in all of its battles

    def size(kind: str, model: str, row: "ResearchRow") -> int:
        key = (kind, model, row.row_id)
        if key not in sizes:
            sizes[key] = rendered_size(kind, model, row)
        return sizes[key]

    def rendered_size(kind: str, model: str, row: "ResearchRow") -> int:
        """A prompt's characters as the run renders it (with its JSON schema, when one is sent) / 4."""
        if kind == "answer":
            return len(task_prompt(row, options)) // CHARS_PER_TOKEN
        judge = judges[f"pairwise {model}" if kind == "pairwise" else model]
        subject = (judge.subject(row, placeholder) if kind == "coverage"
                   else (row.query, answer_with_references(placeholder), answer_with_references(placeholder)))
        return (len(judge.render(*subject)) + len(json.dumps(judge.schema(*subject)))) // CHARS_PER_TOKEN

    def answer_on_disk(system: str, row: "ResearchRow") -> Optional[Answer]:
        caller = services.system(system)
        return caller.cached_answer(row, None) if hasattr(caller, "cached_answer") else None

    on_disk = CacheLookups(
        answer=answer_on_disk,
        coverage=lambda judge, row, answer, repeat: judges[judge].has_verdict(row, answer, repeat=repeat),
        battle=lambda judge, query, first, second: judges[f"pairwise {judge}"].holds(query, first, second),
        battle_text=lambda answer: battle_text(answer.text, references(answer)))
    rules = Rules.of(settings)
    counted = count_calls(
        answers, is_model=services.is_model, coverage_judges=coverage_judges, graded=graded,
        repeats=lambda row: settings.judge_repeats if in_flip_sample(row.row_id) else 0,
        schedule=paper_schedule if rules.by_domain else (lambda by_row: schedule(by_row, settings.battles)),
        pairwise_judge=pairwise_judge if settings.judges else None,
        prompt_tokens=size, answer_tokens=round(words * TOKENS_PER_WORD) + 30 * ASSUMED_REFERENCES, on_disk=on_disk)
    callers = [*judges.values(), *(services.system(name) for name in counted.by_model if services.is_model(name))]
    counted.local = {caller.spec.name for caller in callers if caller.spec.local}
    if counted.calls:  # a model that will be called; litellm is imported for the prices anyway
        from ...costs import provider_unknown

        counted.no_provider = {caller.spec.name for caller in callers
                               if provider_unknown(caller.spec.name, caller.spec.params)}
    return counted


def estimate_lines(answers: Sequence[tuple[str, Any]], services: Any, settings: Any) -> Estimate:
    """What the plugin prints before the first call of a rubric run (nothing when no model is asked), and the
    estimated cost."""
    from ...costs import no_provider_said, spend_text, total_cost

    calls = plan(answers, services, settings)
    if not calls.calls and not calls.cached:
        return Estimate([], 0.0)
    systems = len({system for system, _ in answers})
    queries = len({row.row_id for _, row in answers})
    parts = []
    if calls.answer_calls:
        parts.append(f"{calls.answer_calls} answer call(s) ({calls.answering_models} model(s), {queries} queries)")
    judged = f"{calls.judge_calls} judge call(s)"
    if calls.judge_calls:
        judged += (f": {calls.coverage_calls} coverage ({calls.graded_answers} answers of {systems} system(s))"
                   f" + {calls.pairwise_calls} pairwise ({calls.battles} battles x 2 orders)")
    parts.append(judged)
    lines = [f"researchqa: this run asks {calls.calls} model call(s) ({calls.cached} cached, no retries): "
             + "; ".join(parts)]
    prices = {model: None if model in calls.local else price(model, use) for model, use in calls.by_model.items()}
    known = {model: usd for model, usd in prices.items() if usd is not None}
    unknown = sorted(model for model, usd in prices.items() if usd is None)
    cost = total_cost(prices.values()) if prices else 0.0  # every call on disk: nothing to pay
    total = spend_text(cost)
    if known and unknown:  # the total is unknown; what is known is still worth saying, and a budget counts it
        cost = total_cost(known.values())
        total += f" ({spend_text(cost)} for {', '.join(sorted(known))})"
    basis = (f"tokens estimated as prompt characters / {CHARS_PER_TOKEN}, answers of "
             f"~{settings.length_words or ASSUMED_ANSWER_WORDS} words, prices from litellm's cost map")
    lines.append(f"researchqa: estimated cost {total} ({basis}"
                 + (f"; no price for {', '.join(unknown)}: a local server or a model litellm does not list"
                    if unknown else "") + ")")
    lines += [f"researchqa: {no_provider_said(model)}" for model in sorted(calls.no_provider)]
    return Estimate(lines, cost)
