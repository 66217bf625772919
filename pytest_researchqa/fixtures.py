"""Fixtures: the current row, its paper, the system under test and its answer.

Any test function that asks for ``researchqa_row`` (or a fixture built on
it) is parametrized over the dataset; asking for ``researchqa_answer`` or
``researchqa_system`` parametrizes it per system as well.

PYTEST_DONT_REWRITE: pytest loads this module at every start-up; it holds no test's asserts, so
pytest compiles it as Python does instead of rewriting it (docs/architecture.md).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NoReturn, Optional

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


@pytest.fixture
def researchqa_case(request: pytest.FixtureRequest) -> Case:
    """The parametrized case (row position and system); mostly for the other fixtures."""
    case = getattr(request, "param", None)
    if not isinstance(case, Case):
        pytest.fail("researchqa_case is set by the plugin's parametrization; request researchqa_row instead",
                    pytrace=False)
    state = run_state(request.config)
    record = state.new_record(case)
    request.node.stash[RECORD] = record
    request.node.stash[RECORDER] = state.recorder(record)
    return case


@pytest.fixture
def researchqa_recorder(request: pytest.FixtureRequest, researchqa_case: Case) -> "Recorder":
    """This row's recorder; assertions find it on their own inside a researchqa test."""
    recorder: "Recorder" = request.node.stash[RECORDER]
    return recorder


def _error(request: pytest.FixtureRequest, message: str) -> NoReturn:
    message = run_state(request.config).redact(message)  # a provider may echo a key back
    request.node.stash[RECORD].error = message
    pytest.fail(message, pytrace=False)


@pytest.fixture
def researchqa_row(request: pytest.FixtureRequest, researchqa_case: Case) -> "FamilyRow":
    """The benchmark row of this test (a :class:`~pytest_researchqa.families.citation.rows.Row`)."""
    state = run_state(request.config)
    if researchqa_case.kind == "problem":
        problem = state.dataset.problems[researchqa_case.position]
        record = request.node.stash[RECORD]
        record.row_id, record.invalid_row = problem.row_id or problem.location, True
        _error(request, f"invalid row: {problem}")
    row: "FamilyRow" = state.dataset.rows[researchqa_case.position]
    return row


@pytest.fixture
def researchqa_paper(request: pytest.FixtureRequest, researchqa_row: Any) -> "Optional[Paper]":
    """The row's paper (:class:`~pytest_researchqa.papers.Paper`), checked against the row.

    A paper that cannot be read makes the row error. A row with a required
    section the paper does not contain is a dataset defect: xfail by default.
    """
    from .families.citation.matcher import match_index
    from .families.citation.metrics import check_expected_passages
    from .papers import PaperUnavailable

    state: "RunState" = run_state(request.config)
    if not state.family.uses_papers:
        return None  # this family's rows are not about one paper
    record = request.node.stash[RECORD]
    unavailable = None
    try:
        paper = state.papers.get(researchqa_row.paper_id, researchqa_row.paper_s3_url)
    except PaperUnavailable as error:
        unavailable = str(error)
    if unavailable is not None:
        _error(request, unavailable)  # outside the except block: said once, not chained
    check = check_expected_passages(researchqa_row, match_index(paper))
    record.expected_found, record.expected_total = check.counts
    missing = check.missing_sections
    if missing:
        reason = (f"dataset defect: no expected passage of section(s) {', '.join(map(repr, missing))} "
                  f"is in the text of paper {researchqa_row.paper_id!r}")
        if state.settings.defect_policy == "xfail":
            record.defect = reason
            pytest.xfail(reason)
    return paper


# Fixtures that need only the config take ``pytestconfig``, not ``request``: pytest makes a fixture
# definition for ``request`` each time a fixture asks for it (a signature read, twice a fixture and
# row), where a session fixture is looked up (issue 24 item 2).
@pytest.fixture
def researchqa_system(pytestconfig: pytest.Config, researchqa_case: Case) -> "Optional[System]":
    """The system under test (None when auditing the dataset)."""
    if researchqa_case.system is None:
        return None
    system: "System" = run_state(pytestconfig).system(researchqa_case.system)
    return system


@pytest.fixture
def researchqa_answer(request: pytest.FixtureRequest, researchqa_case: Case, researchqa_row: "FamilyRow",
                      researchqa_paper: "Optional[Paper]", researchqa_system: "Optional[System]") -> "Optional[Answer]":
    """The system's :class:`~pytest_researchqa.families.citation.answers.Answer`; assertions on it record metrics."""
    if researchqa_system is None:
        return None
    record = request.node.stash[RECORD]
    started = time.perf_counter()
    crash = None
    try:
        answer = (researchqa_system.answer(researchqa_row, researchqa_paper, repeat=researchqa_case.repeat)  # type: ignore[call-arg]
                  if researchqa_case.repeat else researchqa_system.answer(researchqa_row, researchqa_paper))
    except Exception as error:  # a crashing system is an error, not a wrong answer
        from .systems import user_frames

        where = user_frames(error)
        crash = f"system {researchqa_system.name!r} raised {type(error).__name__}: {error}" + (
            f"\n{where}" if where else "")
    if crash is not None:
        _error(request, crash)  # outside the except block: the user's error is shown once, not chained
    # A model system measures latency around the model call itself, and knows tokens and cost.
    from .records import USAGE_FIELDS, Usage

    measured = {k: v for k, v in answer.meta.items() if k in USAGE_FIELDS and v is not None}
    record.usage = Usage(**{"latency_s": time.perf_counter() - started, **measured})
    record.baseline = not answer.cites
    if state_uses_papers(request):  # the citation family: what the HTML report shows of the row
        from .row_view import answer_view

        record.details.update(answer_view(researchqa_row, answer))
    return answer


def state_uses_papers(request: pytest.FixtureRequest) -> bool:
    return bool(run_state(request.config).family.uses_papers)


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
