"""What the HTML report and ``view`` show of each citation of a graded row: its verdict, pages, the expected
sections it reaches, the paper around a grounded quote, and why a quote is not in the paper."""

from __future__ import annotations

from typing import Optional, Sequence

from ...row_view import CitationView, clip
from .matcher import CitationMatch, MatchIndex
from .metrics import SectionReport, section_report
from .rows import Row

CONTEXT_CHARS = 280  # paper text shown on each side of a grounded quote


def citation_views(matches: Sequence["CitationMatch"], index: "MatchIndex", row: "Row",
                   report: Optional[SectionReport] = None) -> list[CitationView]:
    """Per citation: verdict, pages, the expected sections it reaches, and why it is not in the paper.

    ``report``: the section report of the same citations (``section_report(answer.citations, row, index)``)
    when the caller has made it; without it, each citation's own is worked out here.
    """
    labels = [section.section_label for section in getattr(row, "expected_references", None) or ()]
    reached_by = dict(zip(report.counted, report.sections_per_citation)) if report is not None and labels else None
    views = []
    for number, found in enumerate(matches):
        reached: Sequence[frozenset[int]]
        if reached_by is not None:  # a citation the report left out (too short to verify) reaches nothing
            reached = (reached_by[number],) if number in reached_by else ()
        else:
            reached = section_report([found.citation], row, index).sections_per_citation if labels else ()
        view: CitationView = {"quote": clip(found.citation), "verdict": found.verdict, "grounded": found.grounded,
                              "pages": found.pages, "evidence": found.is_evidence,
                              "sections": [labels[i] for i in sorted(reached[0])] if reached else []}
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
