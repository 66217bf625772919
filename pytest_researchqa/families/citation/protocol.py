"""The standard protocol test, used when a run has researchqa options but no test of its own.

Its items are collected under the node id ``researchqa``:
``researchqa::test_question[bm25-lookup-<row_id>]``.
"""

from __future__ import annotations

from typing import Any, Optional

from pytest_researchqa.answers import Answer
from pytest_researchqa.families.citation.assertions import check_answer, judged
from pytest_researchqa.families.citation.rows import Row
from pytest_researchqa.papers import Paper


def test_question(researchqa_row: Row, researchqa_paper: Paper, researchqa_answer: Optional[Answer],
                  researchqa_judge: Optional[list[Any]], researchqa_premise_judge: Optional[Any]) -> None:
    if researchqa_answer is None:
        return  # --researchqa-audit: the paper fixture has checked the row
    try:
        check_answer(researchqa_answer, researchqa_row, researchqa_paper, premise_judge=researchqa_premise_judge)
    finally:
        if researchqa_judge:  # judged whatever the citations scored
            judged(researchqa_answer, researchqa_row, researchqa_judge)
