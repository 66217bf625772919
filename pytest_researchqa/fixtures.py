"""Fixtures: the current row, its paper, the system under test and its answer.

Any test function that asks for ``researchqa_row`` (or a fixture built on
it) is parametrized over the dataset; asking for ``researchqa_answer`` or
``researchqa_system`` parametrizes it per system as well.

PYTEST_DONT_REWRITE: pytest loads this module at every start-up; it holds no test's asserts, so
pytest compiles it as Python does instead of rewriting it (docs/architecture.md).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, Optional

import pytest

from .stash import RECORD, RECORDER, Case, run_state, settings_of

if TYPE_CHECKING:  # pragma: no cover
    from .answers import Answer
    from .dataset import Dataset, FamilyRow
    from .llm.judges import JudgePanel, ModelJudge
    from .papers import Paper
    from .records import Recorder
    from .settings import Settings
    from .state import RunState
    from .systems import System


class Answered(NamedTuple):
    """What the built-in test needs of its row, made by one fixture (``researchqa_answered``)."""

    case: Case
    row: Any
    paper: "Optional[Paper]"
    answer: "Optional[Answer]"
    state: "RunState"  # the run's state: its judges (``judges_of``, ``services.premise_judge()``)


def _case_of(request: pytest.FixtureRequest) -> Case:
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


@pytest.fixture
def researchqa_case(request: pytest.FixtureRequest) -> Case:
    """The parametrized case (row position and system); mostly for the other fixtures."""
    return _case_of(request)


@pytest.fixture
def researchqa_recorder(request: pytest.FixtureRequest, researchqa_case: Case) -> "Recorder":
    """This row's recorder; assertions find it on their own inside a researchqa test."""
    recorder: "Recorder" = request.node.stash[RECORDER]
    return recorder


def _error(request: pytest.FixtureRequest, message: str) -> NoReturn:
    message = run_state(request.config).redact(message)  # a provider may echo a key back
    request.node.stash[RECORD].error = message
    pytest.fail(message, pytrace=False)


def _row(request: pytest.FixtureRequest, state: "RunState", case: Case) -> Any:
    if case.kind == "problem":
        problem = state.dataset.problems[case.position]
        record = request.node.stash[RECORD]
        record.row_id, record.invalid_row = problem.row_id or problem.location, True
        _error(request, f"invalid row: {problem}")
    return state.dataset.rows[case.position]


def _paper(request: pytest.FixtureRequest, state: "RunState", row: Any) -> "Optional[Paper]":
    from .families.citation.matcher import match_index
    from .families.citation.metrics import check_expected_passages
    from .papers import PaperUnavailable

    if not state.family.uses_papers:
        return None  # this family's rows are not about one paper
    record = request.node.stash[RECORD]
    unavailable = None
    try:
        paper = state.papers.get(row.paper_id, row.paper_s3_url)
    except PaperUnavailable as error:
        unavailable = str(error)
    if unavailable is not None:
        _error(request, unavailable)  # outside the except block: said once, not chained
    check = check_expected_passages(row, match_index(paper))
    record.expected_found, record.expected_total = check.counts
    missing = check.missing_sections
    if missing:
        reason = (f"dataset defect: no expected passage of section(s) {', '.join(map(repr, missing))} "
                  f"is in the text of paper {row.paper_id!r}")
        if state.settings.defect_policy == "xfail":
            record.defect = reason
            pytest.xfail(reason)
    return paper


def _system(state: "RunState", case: Case) -> "Optional[System]":
    if case.system is None:
        return None
    system: "System" = state.system(case.system)
    return system


def _answer(request: pytest.FixtureRequest, state: "RunState", case: Case, row: Any, paper: "Optional[Paper]",
            system: "Optional[System]") -> "Optional[Answer]":
    if system is None:
        return None
    record = request.node.stash[RECORD]
    started = time.perf_counter()
    crash = None
    try:
        answer = (system.answer(row, paper, repeat=case.repeat)  # type: ignore[call-arg]
                  if case.repeat else system.answer(row, paper))
    except Exception as error:  # a crashing system is an error, not a wrong answer
        from .systems import user_frames

        where = user_frames(error)
        crash = f"system {system.name!r} raised {type(error).__name__}: {error}" + (f"\n{where}" if where else "")
    if crash is not None:
        _error(request, crash)  # outside the except block: the user's error is shown once, not chained
    # A model system measures latency around the model call itself, and knows tokens and cost.
    from .records import USAGE_FIELDS, Usage

    measured = {k: v for k, v in answer.meta.items() if k in USAGE_FIELDS and v is not None}
    record.usage = Usage(**{"latency_s": time.perf_counter() - started, **measured})
    record.baseline = not answer.cites
    if state.family.uses_papers:  # the citation family: what the HTML report shows of the row
        from .row_view import answer_view

        record.details.update(answer_view(row, answer))
    return answer


@pytest.fixture
def researchqa_row(request: pytest.FixtureRequest, researchqa_case: Case) -> "FamilyRow":
    """The benchmark row of this test (a :class:`~pytest_researchqa.families.citation.rows.Row`)."""
    row: "FamilyRow" = _row(request, run_state(request.config), researchqa_case)
    return row


@pytest.fixture
def researchqa_paper(request: pytest.FixtureRequest, researchqa_row: Any) -> "Optional[Paper]":
    """The row's paper (:class:`~pytest_researchqa.papers.Paper`), checked against the row.

    A paper that cannot be read makes the row error. A row with a required
    section the paper does not contain is a dataset defect: xfail by default.
    """
    return _paper(request, run_state(request.config), researchqa_row)


# Fixtures that need only the config take ``pytestconfig``, not ``request``: pytest makes a fixture
# definition for ``request`` each time a fixture asks for it (a signature read, twice a fixture and
# row), where a session fixture is looked up (issue 24 item 2).
@pytest.fixture
def researchqa_system(pytestconfig: pytest.Config, researchqa_case: Case) -> "Optional[System]":
    """The system under test (None when auditing the dataset)."""
    return _system(run_state(pytestconfig), researchqa_case)


@pytest.fixture
def researchqa_answer(request: pytest.FixtureRequest, researchqa_case: Case, researchqa_row: "FamilyRow",
                      researchqa_paper: "Optional[Paper]", researchqa_system: "Optional[System]") -> "Optional[Answer]":
    """The system's :class:`~pytest_researchqa.families.citation.answers.Answer`; assertions on it record metrics."""
    return _answer(request, run_state(request.config), researchqa_case, researchqa_row, researchqa_paper,
                   researchqa_system)


@pytest.fixture
def researchqa_answered(request: pytest.FixtureRequest) -> Answered:
    """The case, its row, paper and the system's answer, made in the order and with the outcomes of
    ``researchqa_case``, ``researchqa_row``, ``researchqa_paper`` and ``researchqa_answer`` (an unreadable
    paper or a crashing system errors the row, a dataset defect xfails it), by one fixture: the built-in
    test's. pytest's own work for a fixture (a sub-request, a ``request`` definition read from a signature,
    the setup hook, a finalizer) costs more a row than the plugin's work for it (issue 24 item 2).
    Parametrized over the dataset like ``researchqa_case``, always per system."""
    state: "RunState" = run_state(request.config)
    case = _case_of(request)
    row = _row(request, state, case)
    paper = _paper(request, state, row)
    return Answered(case, row, paper, _answer(request, state, case, row, paper, _system(state, case)), state)


@pytest.fixture
def researchqa_judge(pytestconfig: pytest.Config, researchqa_case: Case) -> "Optional[JudgePanel]":
    """The LLM judges of this row's system (a list; None when no ``--researchqa-judge`` is given)."""
    judges: "Optional[JudgePanel]" = run_state(pytestconfig).judges_of(researchqa_case)
    return judges


@pytest.fixture
def researchqa_premise_judge(pytestconfig: pytest.Config) -> "Optional[ModelJudge]":
    """The model judge that decides ``premise_flagged`` (``--researchqa-flagged-judge``); None: the heuristic.
    Pass it on: ``flags_premise(answer, row, judge=researchqa_premise_judge)``."""
    judge: "Optional[ModelJudge]" = run_state(pytestconfig).services.premise_judge()
    return judge


@pytest.fixture(scope="session")
def researchqa_settings(pytestconfig: pytest.Config) -> "Settings":
    """What the run was asked to do (:class:`~pytest_researchqa.settings.Settings`, plain values)."""
    return settings_of(pytestconfig)


@pytest.fixture(scope="session")
def researchqa_dataset(pytestconfig: pytest.Config) -> "Dataset[Any]":
    """The loaded :class:`~pytest_researchqa.families.citation.loaders.Dataset`."""
    dataset: "Dataset[Any]" = run_state(pytestconfig).dataset
    return dataset
