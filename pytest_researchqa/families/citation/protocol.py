"""The standard protocol test, used when a run has researchqa options but no test of its own.

Its items are collected under the node id ``researchqa``:
``researchqa::test_question[bm25-lookup-<row_id>]``.
"""

from __future__ import annotations

from typing import Optional

import pytest

from pytest_researchqa.answers import Answer
from pytest_researchqa.families.citation.assertions import check_answer, judged
from pytest_researchqa.families.citation.rows import Row
from pytest_researchqa.papers import Paper
from pytest_researchqa.stash import Case, run_state


def test_question(researchqa_case: Case, researchqa_row: Row, researchqa_paper: Paper,
                  researchqa_answer: Optional[Answer], pytestconfig: pytest.Config) -> None:
    if researchqa_answer is None:
        return  # --researchqa-audit: the paper fixture has checked the row
    # The judges as researchqa_judge and researchqa_premise_judge give them, asked for directly:
    # each fixture costs pytest's machinery on every row.
    state = run_state(pytestconfig)
    judges = state.judges_of(researchqa_case)
    try:
        check_answer(researchqa_answer, researchqa_row, researchqa_paper, premise_judge=state.services.premise_judge())
    finally:
        if judges:  # judged whatever the citations scored
            judged(researchqa_answer, researchqa_row, judges)
