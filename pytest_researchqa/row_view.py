"""What a reader needs to see of one graded row, as plain data on its record (``details``).

The HTML report and ``view`` read it: the question, the expected answer and evidence, the
answer and its citations as returned, and per citation its verdict, pages, departure from the
paper, nearest passage and the paper text around it. Texts are clipped so a saved run stays a
reasonable size at the seed's scale. Pure. What a family adds of its own (the citation family's
verdict per citation: ``families/citation/views``) uses ``clip`` from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .answers import Answer
    from .dataset import FamilyRow

TEXT_LIMIT = 4000  # an answer, a quote


def clip(text: Optional[str], limit: int = TEXT_LIMIT) -> Optional[str]:
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit] + "…"


def question_view(row: "FamilyRow") -> dict[str, Any]:
    """The row's question and expectations: what a reader needs even of a row whose system crashed."""
    return {
        "question": clip(row.question),
        "expected_answer": clip(getattr(row, "expected_answer", None)),
        "false_premise": clip(getattr(getattr(row, "metadata", None), "false_premise", None)),
        "expected": [{"section": section.section_label,
                      "alternatives": [clip(a, 1000) for a in section.alternatives[:3]]}
                     for section in getattr(row, "expected_references", None) or ()],
    }


def answer_view(row: "FamilyRow", answer: "Answer") -> dict[str, Any]:
    """The row's question and expectations beside the system's answer."""
    return {
        **question_view(row),
        "answer": clip(answer.text),
        "refused": answer.refused,
        "cited": [clip(c) for c in answer.citations],
    }
