"""What the citation family keeps on a record's ``details``, typed for the code that writes it (``assertions``,
``views``) and the code that reads it back (the HTML report, ``view`` and ``calibrate``, through
``row_view.RowDetails``, which this extends; the premise judge's verdict is for saved runs' readers).

Beside the question and answer every row has (``row_view.AnswerView``, written in the row's setup): per
citation what the report shows (``row_view.CitationView``: ``views.citation_views``), the expected sections
and whether the citations cover each (``row_view.SectionCovered``), and the premise judge's verdict
(``--researchqa-flagged-judge``). Written key by key through ``Recorder.detail`` as JSON data
(:func:`record_details`), so a saved run holds the same JSON as before these types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from ...row_view import RowDetails

if TYPE_CHECKING:  # pragma: no cover
    from ...records import Recorder


class PremiseJudgeDetail(TypedDict):
    judge: str  # the premise judge's model
    flagged: bool
    reason: str


class CitationDetails(RowDetails, total=False):
    premise_judge: PremiseJudgeDetail


def record_details(recorder: "Recorder", details: CitationDetails) -> None:
    """Keep each of ``details`` on the recorder's record, in order (``Recorder.detail``: JSON data only)."""
    for key, value in details.items():
        recorder.detail(key, value)
