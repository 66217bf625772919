"""The rubric family's default test: answer the research query, record the answer, judge its rubric coverage.

Collected under the node id ``researchqa``:
``researchqa::test_query[rubric-oracle-Biochemistry-<id>]``.

The answer and its grading are made in the test's setup (``graded``), as the answer is for the citation
family: a row whose system raised or whose judges gave no verdict is a pytest error (``E``), as the summary
counts it, never a failure of the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import pytest

from pytest_researchqa.families.rubric.grading import JudgesFailed, NotGraded, grade_coverage, record_answer
from pytest_researchqa.families.rubric.task import TaskOptions

if TYPE_CHECKING:  # pragma: no cover
    from pytest_researchqa.answers import Answer
    from pytest_researchqa.families.rubric.rows import ResearchRow
    from pytest_researchqa.llm.judges import JudgePanel
    from pytest_researchqa.records import Recorder
    from pytest_researchqa.settings import Settings


@pytest.fixture
def graded(researchqa_row: ResearchRow, researchqa_answer: Optional[Answer], researchqa_judge: Optional[JudgePanel],
           researchqa_recorder: Recorder, researchqa_settings: Settings) -> Optional[str]:
    """The row answered, recorded and judged; why it is not graded (None: graded, or audited). Judges that
    all fail make the row's setup fail: an error naming them."""
    if researchqa_answer is None:  # --researchqa-audit: describe the row, answer nothing
        researchqa_recorder.detail("items", [{"text": i.text, "kind": i.kind, "coverage": None}
                                             for i in researchqa_row.rubric])
        researchqa_recorder.detail("date", researchqa_row.date)
        researchqa_recorder.detail("survey_title", researchqa_row.survey_title)
        return None
    settings, recorder = researchqa_settings, researchqa_recorder  # in setup, no recorder is current: named
    record_answer(researchqa_answer, researchqa_row, TaskOptions(settings.date_cutoff, settings.length_words),
                  recorder=recorder)
    not_graded = failed = None
    try:
        grade_coverage(researchqa_answer, researchqa_row, researchqa_judge, generic_rubric=settings.generic_rubric,
                       recorder=recorder)
    except NotGraded as reason:
        not_graded = str(reason)
    except JudgesFailed as failure:
        failed = str(failure)
    # Outside the except blocks: the reason is said once, not chained to the exception it came from.
    if failed is not None:
        researchqa_recorder.record.error = failed  # a row error (never a zero coverage)
        pytest.fail(failed, pytrace=False)
    if not_graded is not None:
        researchqa_recorder.detail("not_graded", not_graded)
    return not_graded


def test_query(graded: Optional[str]) -> None:
    if graded is not None:
        pytest.skip(graded)
