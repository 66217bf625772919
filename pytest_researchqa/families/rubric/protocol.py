"""The rubric family's default test: answer the research query, record the answer, judge its rubric coverage.

Collected under the node id ``researchqa``:
``researchqa::test_query[rubric-oracle-Biochemistry-<id>]``.
"""

from typing import Any

import pytest

from pytest_researchqa.families.rubric.grading import JudgesFailed, NotGraded, grade_coverage, record_answer
from pytest_researchqa.families.rubric.task import TaskOptions


def test_query(researchqa_row: Any, researchqa_answer: Any, researchqa_judge: Any, researchqa_recorder: Any,
               researchqa_settings: Any) -> None:
    if researchqa_answer is None:  # --researchqa-audit: describe the row, answer nothing
        researchqa_recorder.detail("items", [{"text": i.text, "kind": i.kind, "coverage": None}
                                             for i in researchqa_row.rubric])
        researchqa_recorder.detail("date", researchqa_row.date)
        researchqa_recorder.detail("survey_title", researchqa_row.survey_title)
        return
    settings = researchqa_settings
    record_answer(researchqa_answer, researchqa_row, TaskOptions(settings.date_cutoff, settings.length_words))
    not_graded = failed = None
    try:
        grade_coverage(researchqa_answer, researchqa_row, researchqa_judge, generic_rubric=settings.generic_rubric)
    except NotGraded as reason:
        not_graded = str(reason)
    except JudgesFailed as failure:
        failed = str(failure)
    # Outside the except blocks: the reason is said once, not chained to the exception it came from.
    if not_graded is not None:
        researchqa_recorder.detail("not_graded", not_graded)
        pytest.skip(not_graded)
    if failed is not None:
        researchqa_recorder.record.error = failed  # a row error (never a zero coverage)
        pytest.fail(failed, pytrace=False)
