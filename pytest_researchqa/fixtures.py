"""Fixtures: the current row, its paper, the system under test and its answer.

Any test function that asks for ``researchqa_row`` (or a fixture built on
it) is parametrized over the dataset; asking for ``researchqa_answer`` or
``researchqa_system`` parametrizes it per system as well.

The plugin loads this module at every start-up (``plugin.py``: from its byte-code, past pytest's
rewriter) and names its fixtures: each body imports what it uses when it first runs.

PYTEST_DONT_REWRITE: it holds no test's asserts (docs/architecture.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from .answers import Answer
    from .case import Case
    from .dataset import Dataset, FamilyRow
    from .llm.judges import JudgePanel, ModelJudge
    from .papers import Paper
    from .records import Recorder
    from .row_setup import Answered
    from .settings import Settings
    from .state import RunState
    from .systems import System

# What the plugin module takes from here (``plugin.py``).
__all__ = ["researchqa_answer", "researchqa_answered", "researchqa_case", "researchqa_dataset", "researchqa_judge",
           "researchqa_paper", "researchqa_premise_judge", "researchqa_recorder", "researchqa_row",
           "researchqa_settings", "researchqa_system"]


@pytest.fixture
def researchqa_case(request: pytest.FixtureRequest) -> "Case":
    """The parametrized case (row position and system); mostly for the other fixtures."""
    from .row_setup import start_case

    return start_case(request)


@pytest.fixture
def researchqa_recorder(request: pytest.FixtureRequest, researchqa_case: "Case") -> "Recorder":
    """This row's recorder; assertions find it on their own inside a researchqa test."""
    from .stash import RECORDER

    recorder: "Recorder" = request.node.stash[RECORDER]
    return recorder


@pytest.fixture
def researchqa_row(request: pytest.FixtureRequest, researchqa_case: "Case") -> "FamilyRow":
    """The benchmark row of this test (a :class:`~pytest_researchqa.families.citation.rows.Row`)."""
    from .row_setup import row_of
    from .stash import run_state

    row: "FamilyRow" = row_of(request, run_state(request.config), researchqa_case)
    return row


@pytest.fixture
def researchqa_paper(request: pytest.FixtureRequest, researchqa_row: "FamilyRow") -> "Optional[Paper]":
    """The row's paper (:class:`~pytest_researchqa.papers.Paper`), checked against the row.

    A paper that cannot be read makes the row error. A row with a required
    section the paper does not contain is a dataset defect: xfail by default.
    """
    from .row_setup import paper_of
    from .stash import run_state

    return paper_of(request, run_state(request.config), researchqa_row)


# Fixtures that need only the config take ``pytestconfig``, not ``request``: pytest makes a fixture
# definition for ``request`` each time a fixture asks for it (a signature read, twice a fixture and
# row), where a session fixture is looked up (issue 24 item 2).
@pytest.fixture
def researchqa_system(pytestconfig: pytest.Config, researchqa_case: "Case") -> "Optional[System]":
    """The system under test (None when auditing the dataset)."""
    from .row_setup import system_of
    from .stash import run_state

    return system_of(run_state(pytestconfig), researchqa_case)


@pytest.fixture
def researchqa_answer(request: pytest.FixtureRequest, researchqa_case: "Case", researchqa_row: "FamilyRow",
                      researchqa_paper: "Optional[Paper]", researchqa_system: "Optional[System]") -> "Optional[Answer]":
    """The system's :class:`~pytest_researchqa.families.citation.answers.Answer`; assertions on it record metrics."""
    from .row_setup import answer_of
    from .stash import run_state

    return answer_of(request, run_state(request.config), researchqa_case, researchqa_row, researchqa_paper,
                     researchqa_system)


@pytest.fixture
def researchqa_answered(request: pytest.FixtureRequest) -> "Answered":
    """The case, its row, paper and the system's answer, made in the order and with the outcomes of
    ``researchqa_case``, ``researchqa_row``, ``researchqa_paper`` and ``researchqa_answer`` (an unreadable
    paper or a crashing system errors the row, a dataset defect xfails it), by one fixture: the built-in
    test's. pytest's own work for a fixture (a sub-request, a ``request`` definition read from a signature,
    the setup hook, a finalizer) costs more a row than the plugin's work for it (issue 24 item 2).
    Parametrized over the dataset like ``researchqa_case``, always per system."""
    from .row_setup import Answered, answer_of, paper_of, row_of, start_case, system_of
    from .stash import run_state

    state: "RunState" = run_state(request.config)
    case = start_case(request)
    row = row_of(request, state, case)
    paper = paper_of(request, state, row)
    return Answered(case, row, paper, answer_of(request, state, case, row, paper, system_of(state, case)), state)


@pytest.fixture
def researchqa_judge(pytestconfig: pytest.Config, researchqa_case: "Case") -> "Optional[JudgePanel]":
    """The LLM judges of this row's system (a list; None when no ``--researchqa-judge`` is given)."""
    from .stash import run_state

    judges: "Optional[JudgePanel]" = run_state(pytestconfig).judges_of(researchqa_case)
    return judges


@pytest.fixture
def researchqa_premise_judge(pytestconfig: pytest.Config) -> "Optional[ModelJudge]":
    """The model judge that decides ``premise_flagged`` (``--researchqa-flagged-judge``); None: the heuristic.
    Pass it on: ``flags_premise(answer, row, judge=researchqa_premise_judge)``."""
    from .stash import run_state

    judge: "Optional[ModelJudge]" = run_state(pytestconfig).services.premise_judge()
    return judge


@pytest.fixture(scope="session")
def researchqa_settings(pytestconfig: pytest.Config) -> "Settings":
    """What the run was asked to do (:class:`~pytest_researchqa.settings.Settings`, plain values)."""
    from .stash import settings_of

    return settings_of(pytestconfig)


@pytest.fixture(scope="session")
def researchqa_dataset(pytestconfig: pytest.Config) -> "Dataset[Any]":
    """The loaded :class:`~pytest_researchqa.families.citation.loaders.Dataset`."""
    from .stash import run_state

    dataset: "Dataset[Any]" = run_state(pytestconfig).dataset
    return dataset
