"""The oracle: answers with the row's own expectations.

It cites one alternative per expected section and refuses adversarial rows
that expect a refusal, so on a well-formed dataset every metric is perfect:
the grader's self-test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ...answers import Answer

if TYPE_CHECKING:  # pragma: no cover
    from ...papers import Paper
    from .rows import Row


def oracle_answer(row: "Row", paper: Optional["Paper"]) -> Answer:
    citations = [section.alternatives[0] for section in row.expected_references]
    refused = bool(row.is_adversarial and row.expected_refusal is not False)
    return Answer(text=row.expected_answer, citations=citations, refused=refused)
