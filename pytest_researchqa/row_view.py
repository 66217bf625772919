"""What a reader needs to see of one graded row, as plain data on its record (``details``).

The HTML report and ``view`` read it: the question, the expected answer and evidence, the
answer and its citations as returned, and per citation its verdict, pages, departure from the
paper, nearest passage and the paper text around it. Texts are clipped so a saved run stays a
reasonable size at the seed's scale. Pure apart from the matcher it is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from .families.citation.answers import Answer
    from .families.citation.matcher import CitationMatch, MatchIndex
    from .families.citation.rows import Row
    from .families.protocols import FamilyRow

TEXT_LIMIT = 4000  # an answer, a quote
CONTEXT_CHARS = 280  # paper text shown on each side of a grounded quote


def clip(text: Optional[str], limit: int = TEXT_LIMIT) -> Optional[str]:
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit] + "…"


def answer_view(row: "FamilyRow", answer: "Answer") -> dict[str, Any]:
    """The row's question and expectations beside the system's answer."""
    return {
        "question": clip(row.question),
        "expected_answer": clip(getattr(row, "expected_answer", None)),
        "false_premise": clip(getattr(getattr(row, "metadata", None), "false_premise", None)),
        "expected": [{"section": section.section_label,
                      "alternatives": [clip(a, 1000) for a in section.alternatives[:3]]}
                     for section in getattr(row, "expected_references", None) or ()],
        "answer": clip(answer.text),
        "refused": answer.refused,
        "cited": [clip(c) for c in answer.citations],
    }


def citation_views(matches: Sequence["CitationMatch"], index: "MatchIndex", row: "Row") -> list[dict[str, Any]]:
    """Per citation: verdict, pages, the expected sections it reaches, and why it is not in the paper."""
    from .families.citation.metrics import section_report

    labels = [section.section_label for section in getattr(row, "expected_references", None) or ()]
    views = []
    for found in matches:
        view: dict[str, Any] = {"quote": clip(found.citation), "verdict": found.verdict, "grounded": found.grounded,
                                "pages": found.pages, "evidence": found.is_evidence}
        reached = section_report([found.citation], row, index).sections_per_citation if labels else ()
        view["sections"] = [labels[i] for i in sorted(reached[0])] if reached else []
        if found.grounded:
            spans = found.spans
            if spans:
                start, end = spans[0][0], spans[-1][1]
                text = index.text
                view["context"] = [text[max(0, start - CONTEXT_CHARS):start], text[start:end],
                                   text[end:end + CONTEXT_CHARS]]
        else:
            view["explain"] = found.explain()
            departure, nearest = found.departure, found.nearest
            if departure is not None:
                view["departure"] = {"quote_before": departure.quote_before, "quote_after": departure.quote_after,
                                     "paper_after": departure.paper_after, "page": departure.page}
            if nearest is not None:
                view["nearest"] = {"text": clip(nearest.text, 1500), "page": nearest.page,
                                   "similarity": nearest.similarity}
        views.append(view)
    return views
