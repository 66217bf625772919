"""How a row's test is set up: its case and record, its row, its paper checked against it, the system's answer.

The steps of the row fixtures (``fixtures.py``), in one place so that the built-in test's one fixture
(``researchqa_answered``) runs them in the same order with the same outcomes as the four fixtures a
project's own test takes. Imported on a row's first setup, not at pytest's start-up.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, NamedTuple, NoReturn, Optional

import pytest

from .case import Case
from .stash import RECORD, RECORDER, run_state

if TYPE_CHECKING:  # pragma: no cover
    from .answers import Answer
    from .dataset import FamilyRow
    from .papers import Paper
    from .state import RunState
    from .systems import System


class Answered(NamedTuple):
    """What the built-in test needs of its row, made by one fixture (``researchqa_answered``)."""

    case: Case
    row: "FamilyRow"
    paper: "Optional[Paper]"
    answer: "Optional[Answer]"
    state: "RunState"  # the run's state: its judges (``judges_of``, ``services.premise_judge()``)


def start_case(request: pytest.FixtureRequest) -> Case:
    """The item's case (the fixture's parameter); its record and recorder go on the item."""
    case = getattr(request, "param", None)
    if not isinstance(case, Case):
        pytest.fail(f"{request.fixturename} is set by the plugin's parametrization; request researchqa_row instead",
                    pytrace=False)
    state = run_state(request.config)
    record = state.new_record(case)
    request.node.stash[RECORD] = record
    request.node.stash[RECORDER] = state.recorder(record)
    return case


def error(request: pytest.FixtureRequest, message: str) -> NoReturn:
    message = run_state(request.config).redact(message)  # a provider may echo a key back
    request.node.stash[RECORD].error = message
    pytest.fail(message, pytrace=False)


def row_of(request: pytest.FixtureRequest, state: "RunState", case: Case) -> "FamilyRow":
    if case.kind == "problem":
        problem = state.dataset.problems[case.position]
        record = request.node.stash[RECORD]
        record.row_id, record.invalid_row = problem.row_id or problem.location, True
        error(request, f"invalid row: {problem}")
    row: "FamilyRow" = state.dataset.rows[case.position]  # any family's row, read as FamilyRow
    return row


def paper_of(request: pytest.FixtureRequest, state: "RunState", row: "FamilyRow") -> "Optional[Paper]":
    from .papers import PaperUnavailable

    if not state.family.uses_papers:
        return None  # this family's rows are not about one paper
    record = request.node.stash[RECORD]
    unavailable = None
    try:
        paper = state.papers.for_row(row)
    except PaperUnavailable as cause:
        unavailable = str(cause)
    if unavailable is not None:
        error(request, unavailable)  # outside the except block: said once, not chained
    # The family's check of the row against its paper: the same for every system and repeat of the row, kept
    # as a tuple of strings and numbers (which Python's collector stops walking).
    key = (row.row_id, row.paper_id)
    check = state.row_checks.get(key)
    if check is None:
        check = state.row_checks[key] = state.family.check_paper(row, paper)
    if check is not None:
        record.expected_found, record.expected_total, _, reason = check
        if reason and state.settings.defect_policy == "xfail":
            record.defect = reason
            pytest.xfail(reason)
    return paper


def system_of(state: "RunState", case: Case) -> "Optional[System]":
    if case.system is None:
        return None
    system: "System" = state.system(case.system)
    return system


def answer_of(request: pytest.FixtureRequest, state: "RunState", case: Case, row: "FamilyRow", paper: "Optional[Paper]",
            system: "Optional[System]") -> "Optional[Answer]":
    if system is None:
        return None
    record = request.node.stash[RECORD]
    started = time.perf_counter()
    crash = None
    try:
        answer = (system.answer(row, paper, repeat=case.repeat)  # type: ignore[call-arg]
                  if case.repeat else system.answer(row, paper))
    except Exception as raised:  # a crashing system is an error, not a wrong answer
        from .systems import user_frames

        where = user_frames(raised)
        crash = f"system {system.name!r} raised {type(raised).__name__}: {raised}" + (f"\n{where}" if where else "")
    if crash is not None:
        from .row_view import question_view

        record.details.update(question_view(row))  # the report still shows what the row asked
        error(request, crash)  # outside the except block: the user's error is shown once, not chained
    # A model system measures latency around the model call itself, and knows tokens and cost.
    from .records import USAGE_FIELDS, Usage

    latency = time.perf_counter() - started
    if answer.meta:
        measured = {k: v for k, v in answer.meta.items() if k in USAGE_FIELDS and v is not None}
        record.usage = Usage(**{"latency_s": latency, **measured})
    else:  # an offline system measures nothing: the record's own (fresh) usage takes the latency
        record.usage.latency_s = latency
    record.baseline = not answer.cites
    from .row_view import answer_view

    # What the HTML report shows of any family's row (the question every FamilyRow has, and the answer); a
    # family's test may add its own details after.
    record.details.update(answer_view(row, answer))
    if request.fixturename == "researchqa_answered" or "researchqa_premise_judge" in request.fixturenames:
        premise_verdict_of(request, state, row, answer)
    return answer


def premise_verdict_of(request: pytest.FixtureRequest, state: "RunState", row: "FamilyRow", answer: "Answer") -> None:
    """The premise judge's verdict on the answer (``--researchqa-flagged-judge``), asked in the row's setup so
    that a judge that gives none (its server fails, its replies never parse) errors the row in one line, as a
    crashing system does, and never fails its test (docs/metrics.md). The test's ``flags_premise`` then finds
    the verdict in the judge's hands (kept with its key), without another call."""
    judge = state.services.premise_judge()
    subject = judge.subject(row, answer) if judge is not None else None  # None: not judged (see the kind)
    if judge is None or subject is None:
        return
    from .llm.engine import ProviderError
    from .llm.judges import verdict_costs

    failure = None
    try:
        verdict = judge.submit(*subject).result()
    except ProviderError as raised:
        failure = str(raised).removeprefix(f"judge {judge.name}: ")
    else:
        request.node.stash[RECORD].usage.add_verdicts(verdict_costs([verdict]))
    if failure is not None:  # outside the except block: said once, not chained
        error(request, f"the premise judge {judge.name} gave no verdict on row {row.row_id}: {failure}")
