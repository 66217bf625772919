"""The standard protocol test, used when a run has researchqa options but no test of its own.

Its items are collected under the node id ``researchqa``:
``researchqa::test_question[bm25-lookup-<row_id>]``.
"""

from pytest_researchqa.assertions import check_answer


def test_question(researchqa_row, researchqa_paper, researchqa_answer):
    if researchqa_answer is None:
        return  # --researchqa-audit: the paper fixture has checked the row
    check_answer(researchqa_answer, researchqa_row, researchqa_paper)
