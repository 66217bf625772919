"""The standard protocol test, used when a run has researchqa options but no test of its own.

Its items are collected under the node id ``researchqa``:
``researchqa::test_question[bm25-lookup-<row_id>]``.
"""

from pytest_researchqa.assertions import check_answer, judged


def test_question(researchqa_row, researchqa_paper, researchqa_answer, researchqa_judge):
    if researchqa_answer is None:
        return  # --researchqa-audit: the paper fixture has checked the row
    try:
        check_answer(researchqa_answer, researchqa_row, researchqa_paper)
    finally:
        if researchqa_judge:  # judged whatever the citations scored
            judged(researchqa_answer, researchqa_row, researchqa_judge)
