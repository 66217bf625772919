"""What a reader needs to see of one graded row, as plain data on its record (``details``).

The HTML report and ``view`` read it: the question, the expected answer and evidence, the
answer and its citations as returned, and per citation its verdict, pages, departure from the
paper, nearest passage and the paper text around it. Texts are clipped so a saved run stays a
reasonable size at the seed's scale. Pure. What a family adds of its own (the citation family's
verdict per citation: ``families/citation/views``) uses ``clip`` from here and the shapes typed
here (``CitationView``, ``SectionCovered``), which the report reads back as ``RowDetails``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, TypedDict, cast, overload

if TYPE_CHECKING:  # pragma: no cover
    from .answers import Answer
    from .dataset import FamilyRow
    from .records import RowRecord

TEXT_LIMIT = 4000  # an answer, a quote


class ExpectedSection(TypedDict):
    section: str
    alternatives: list[str]  # the first three, clipped


class QuestionView(TypedDict):
    """What any row asked and expects (kept even when its system crashed)."""

    question: str
    expected_answer: Optional[str]
    false_premise: Optional[str]
    expected: list[ExpectedSection]


class AnswerView(QuestionView):
    """The row's question beside the system's answer, as returned."""

    answer: str
    refused: Optional[bool]  # the system's own statement (None: it made none)
    cited: list[str]  # the citations as returned


class DepartureView(TypedDict):
    """Where a quote stops agreeing with the paper (``matcher.Departure``)."""

    quote_before: str
    quote_after: str
    paper_after: str
    page: Optional[int]


class NearestView(TypedDict):
    """The passage of the paper a quote not in it is nearest to (``matcher.NearestPassage``), clipped."""

    text: str
    page: Optional[int]
    similarity: float  # 0-100


class _CitationViewKeys(TypedDict):
    quote: str
    verdict: str  # the matcher's verdict (``verbatim``, ``altered``, ``too_short``, ...)
    grounded: bool
    pages: list[int]
    evidence: bool  # counted as evidence (not too short to verify, not a pointer)
    sections: list[str]  # the expected sections it reaches (their labels)


class CitationView(_CitationViewKeys, total=False):
    """What the report shows of one citation: the keys above always, then for a grounded one the paper around
    it, for one not grounded why (and where it departs from the paper, or the passage it is nearest to)."""

    context: list[str]  # [paper before, the matched text, paper after]
    explain: str
    departure: DepartureView
    nearest: NearestView


class SectionCovered(TypedDict):
    section: str  # an expected section's label
    covered: bool


class RowDetails(TypedDict, total=False):
    """What the HTML report and ``view`` read of any row's ``details`` (JSON data; every key may be absent: a
    row that crashed has only its question, a family may write none of the rest). A family that writes
    ``citations`` or ``sections`` writes them in these shapes (the citation family: ``families/citation``)."""

    question: str
    expected_answer: Optional[str]
    false_premise: Optional[str]
    expected: list[ExpectedSection]
    answer: str
    refused: Optional[bool]
    cited: list[str]
    citations: list[CitationView]
    sections: list[SectionCovered]


def details_of(record: "RowRecord") -> RowDetails:
    """The record's details as a reader of any row sees them (a view: no copy, no check)."""
    return cast(RowDetails, record.details)


@overload
def clip(text: str, limit: int = TEXT_LIMIT) -> str: ...
@overload
def clip(text: None, limit: int = TEXT_LIMIT) -> None: ...
@overload
def clip(text: Optional[str], limit: int = TEXT_LIMIT) -> Optional[str]: ...
def clip(text: Optional[str], limit: int = TEXT_LIMIT) -> Optional[str]:
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit] + "…"


def question_view(row: "FamilyRow") -> QuestionView:
    """The row's question and expectations: what a reader needs even of a row whose system crashed."""
    return {
        "question": clip(row.question),
        "expected_answer": clip(getattr(row, "expected_answer", None)),
        "false_premise": clip(getattr(getattr(row, "metadata", None), "false_premise", None)),
        "expected": [{"section": section.section_label,
                      "alternatives": [clip(a, 1000) for a in section.alternatives[:3]]}
                     for section in getattr(row, "expected_references", None) or ()],
    }


def answer_view(row: "FamilyRow", answer: "Answer") -> AnswerView:
    """The row's question and expectations beside the system's answer."""
    return {
        **question_view(row),
        "answer": clip(answer.text),
        "refused": answer.refused,
        "cited": [clip(c) for c in answer.citations],
    }
