"""What the rubric family keeps on a record's ``details``, typed for the code that reads it back
(its board, checks and tournament). Written key by key through ``Recorder.detail`` as JSON data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, TypedDict, cast

if TYPE_CHECKING:  # pragma: no cover
    from ...records import RowRecord


class RubricItemDetail(TypedDict):
    text: str
    kind: str  # families/rubric/kinds.py
    coverage: Optional[float]  # the judges' consensus, 0-4; None before (or without) a verdict


class RubricDetails(TypedDict, total=False):
    query: str
    field: str
    subdomain: str
    general_domain: str
    answer: str
    references: list[str]  # the answer's cited works, one line each
    words: int
    task: str  # the task as the system was given it
    date: Optional[str]  # the row's date cutoff
    survey_title: Optional[str]
    rubric: str  # "query": the row's own items; "generic": the eight generic criteria
    items: list[RubricItemDetail]
    not_graded: str  # why the row was answered but not graded


def details_of(record: "RowRecord") -> RubricDetails:
    """The record's details as the rubric family wrote them (a view: no copy, no check)."""
    return cast(RubricDetails, record.details)
