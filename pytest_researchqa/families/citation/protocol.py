"""The standard protocol test, used when a run has researchqa options but no test of its own.

Its items are collected under the node id ``researchqa``:
``researchqa::test_question[bm25-lookup-<row_id>]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # pragma: no cover
    from pytest_researchqa.families.citation.rows import Row
    from pytest_researchqa.papers import Paper
    from pytest_researchqa.row_setup import Answered


def test_question(researchqa_answered: Answered) -> None:
    # One fixture makes the case, row, paper and answer (what researchqa_case, researchqa_row, researchqa_paper
    # and researchqa_answer give a test of one's own); the judges are asked of the run's state directly (what
    # researchqa_judge and researchqa_premise_judge give): each fixture costs pytest's machinery on every row.
    case, any_row, paper, answer, state = researchqa_answered
    row = cast("Row", any_row)  # this family's loader made it
    if answer is None:
        return  # --researchqa-audit: the paper has been checked against the row
    # Imported here, not at the top: collecting the rows (--collect-only, each xdist worker's collection)
    # needs none of the grading modules (the matcher, the metrics), which Python then compiles at every start
    # when byte-code is not cached.
    from pytest_researchqa.families.citation.assertions import check_answer, judged

    judges = state.judges_of(case)
    try:
        check_answer(answer, row, cast("Paper", paper), premise_judge=state.services.premise_judge())
    finally:
        if judges:  # judged whatever the citations scored
            judged(answer, row, judges)
