"""What the matcher says of a citation: its verdict, and for one not grounded, why.

A :class:`CitationMatch` is made by a :class:`~.matching.MatchIndex` with what matching
found (grounded or not, the verdict when it is known, the spans); the account of why a
citation is not grounded (:class:`Diagnosis`: altered, stitched, paraphrase, not found, with
where it departs from the paper or the nearest passage) is asked of that index only when
someone reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from .textkey import text_key

# Quotes shorter than this (in key characters) prove nothing about a paper.
MIN_QUOTE_KEY = 10

VERBATIM = "verbatim"
VERBATIM_ELIDED = "verbatim_elided"
VERBATIM_WITH_COMMENTARY = "verbatim_with_commentary"
ALTERED = "altered"
STITCHED = "stitched"
PARAPHRASE = "paraphrase"
NOT_FOUND = "not_found"
TOO_SHORT = "too_short"
NOT_EVIDENCE = "not_evidence"
NON_EVIDENCE_VERDICTS = frozenset({TOO_SHORT, NOT_EVIDENCE})
GROUNDED_VERDICTS = frozenset({VERBATIM, VERBATIM_ELIDED, VERBATIM_WITH_COMMENTARY})


@dataclass(frozen=True)
class Departure:
    """Where a quote stops agreeing with the paper."""

    quote_before: str
    quote_after: str
    paper_after: str
    page: int | None


@dataclass(frozen=True)
class NearestPassage:
    """The passage of the paper a quote not found in it is nearest to."""

    text: str
    page: int | None
    similarity: float  # 0-100


@dataclass
class Diagnosis:
    """Why a citation is not grounded: its verdict, a one-line summary, and where it departs from the
    paper or the passage it is nearest to."""

    verdict: str
    summary: str
    departure: Departure | None = None
    nearest: NearestPassage | None = None
    # Why a passage the paper's extracted text holds is still not grounded ("it is in the reference list, which
    # is not evidence"; "it ends with the margin line number 473"); empty when the text does not hold it.
    in_text: str = ""


class SourceIndex(Protocol):
    """The index a citation was matched in, as its verdict reads it (a MatchIndex)."""

    def raw_offset(self, key_position: int) -> int: ...

    def page_of(self, raw_offset: int) -> int | None: ...

    def diagnose(self, citation: str, parts: tuple[str, ...]) -> Diagnosis: ...


class CitationMatch:
    """The matcher's answer for one citation.

    ``grounded`` is what citation accuracy counts. ``verdict`` names the kind of
    match or mismatch; for ungrounded citations it is computed on first read.
    """

    __slots__ = ("citation", "grounded", "key_spans", "commentary", "_index", "_verdict", "_parts", "_diagnosis",
                 "_spans", "_pages")

    def __init__(
        self,
        citation: str,
        index: SourceIndex,
        grounded: bool,
        verdict: str | None,
        key_spans: Sequence[tuple[int, int]],
        *,
        commentary: str | None = None,
        parts: tuple[str, ...] = (),
    ) -> None:
        self.citation = citation
        self.grounded = grounded
        self.key_spans = tuple(key_spans)
        self.commentary = commentary
        self._index = index
        self._verdict = verdict
        self._parts = parts
        self._diagnosis: Diagnosis | None = None
        # The raw spans and their pages, worked out on first read: a graded row reads them for its verdict, again
        # for the citation's view and its context (issue 24 item 2: three walks to each span end before).
        self._spans: tuple[tuple[int, int], ...] | None = None
        self._pages: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        return f"CitationMatch(grounded={self.grounded}, verdict={self.verdict!r}, spans={self.spans})"

    @property
    def verdict(self) -> str:
        if self._verdict is None:
            self._verdict = self._diagnose().verdict
        return self._verdict

    @property
    def is_evidence(self) -> bool:
        """False for citations that cannot be evidence either way: too short to verify, or only a
        reference, a running header or footer, a caption label or a bibliography entry."""
        return self._verdict not in NON_EVIDENCE_VERDICTS

    @property
    def spans(self) -> list[tuple[int, int]]:
        """Matched raw character spans in the paper text."""
        spans = self._spans
        if spans is None:
            index = self._index
            spans = self._spans = tuple((index.raw_offset(a), index.raw_offset(b - 1) + 1) for a, b in self.key_spans)
        return list(spans)

    @property
    def pages(self) -> list[int]:
        """Pages the matched text lies on (empty when the paper has no pages)."""
        pages = self._pages
        if pages is None:
            found = {self._index.page_of(offset) for span in self.spans for offset in span}
            pages = self._pages = tuple(sorted(p for p in found if p is not None))
        return list(pages)

    @property
    def departure(self) -> Departure | None:
        return self._diagnose().departure if not self.grounded else None

    @property
    def nearest(self) -> NearestPassage | None:
        return self._diagnose().nearest if not self.grounded else None

    @property
    def in_text(self) -> str:
        """For a citation not grounded that the paper's extracted text holds as it stands, why it is not
        grounded there (a reference-list entry, a running header, a margin line number read in); else ''."""
        return self._diagnose().in_text if not self.grounded else ""

    def explain(self) -> str:
        """A short human account of the verdict, for failure messages."""
        where = f" (page {', '.join(map(str, self.pages))})" if self.pages else ""
        if self.grounded:
            if self.verdict == VERBATIM_WITH_COMMENTARY:
                return f"verbatim{where}, followed by the model's own comment: {_clip(self.commentary, 80)!r}"
            return f"{self.verdict}{where}"
        diagnosis = self._diagnose()
        lines = [diagnosis.summary]
        if diagnosis.departure is not None:
            d = diagnosis.departure
            page = f" (page {d.page})" if d.page else ""
            if d.quote_before.strip():
                lines.append(f"departs from the paper{page} after: {_clip(d.quote_before, 60, left=True)!r}")
                lines.append(f"  the quote goes on: {_clip(d.quote_after, 60)!r}")
                lines.append(f"  the paper goes on: {_clip(d.paper_after, 60)!r}")
            else:  # its very first words differ
                lines.append(f"differs from the paper{page} from its first words:")
                lines.append(f"  the quote reads: {_clip(d.quote_after, 60)!r}")
                lines.append(f"  the paper reads: {_clip(d.paper_after, 60)!r}")
        if diagnosis.nearest is not None and diagnosis.departure is None:
            n = diagnosis.nearest
            page = f"page {n.page}, " if n.page else ""
            lines.append(f"nearest passage ({page}{n.similarity:.0f}% similar): {_clip(n.text, 160)!r}")
        return "\n".join(lines)

    def _diagnose(self) -> "Diagnosis":
        if self._diagnosis is None:
            if self._verdict == TOO_SHORT:
                self._diagnosis = Diagnosis(
                    TOO_SHORT,
                    f"too short to verify: {len(text_key(self.citation))} letters and digits "
                    f"(a citation needs at least {MIN_QUOTE_KEY})",
                )
            elif self._verdict == NOT_EVIDENCE:
                self._diagnosis = Diagnosis(
                    NOT_EVIDENCE,
                    "not evidence: only a reference, a link, a label, a running header or footer, or a "
                    "bibliography entry; it supports no claim, so it is reported and not counted",
                )
            else:
                self._diagnosis = self._index.diagnose(self.citation, self._parts)
        return self._diagnosis


_new_match = object.__new__


def verbatim_hit(citation: str, index: SourceIndex, start: int, end: int) -> CitationMatch:
    """``CitationMatch(citation, index, True, VERBATIM, ((start, end),))``, built without the call of
    ``__init__`` and its keywords (most citations are exact hits: this is their result)."""
    match: CitationMatch = _new_match(CitationMatch)
    match.citation, match.grounded, match.key_spans, match.commentary = citation, True, ((start, end),), None
    match._index, match._verdict, match._parts, match._diagnosis = index, VERBATIM, (), None
    match._spans = match._pages = None
    return match



# What a citation that is not evidence is (``not_evidence``'s ``what``), and why, when the paper's text holds it.
POINTER = "only a reference, a link or a label"
RUNNING_HEAD = "a running header or footer"
REFERENCE_ENTRY = "an entry of the reference list"
_IN_TEXT = {RUNNING_HEAD: "it is a running header or footer of the page, which is not evidence",
            REFERENCE_ENTRY: "it is in the reference list, which is not evidence"}


def not_evidence(citation: str, index: SourceIndex, what: str) -> CitationMatch:
    """A citation that can be evidence neither way, ``what`` it is said (``POINTER``, ``RUNNING_HEAD`` or
    ``REFERENCE_ENTRY``): reported, not counted."""
    match = CitationMatch(citation, index, False, NOT_EVIDENCE, ())
    match._diagnosis = Diagnosis(NOT_EVIDENCE, f"not evidence: {what}; it supports no claim, so it is reported "
                                               "and not counted", in_text=_IN_TEXT.get(what, ""))
    return match


def not_grounded(citation: str, index: SourceIndex, parts: tuple[str, ...]) -> CitationMatch:
    """``CitationMatch(citation, index, False, None, (), parts=parts)`` the same way: a citation the
    matcher did not find, its verdict worked out when read."""
    match: CitationMatch = _new_match(CitationMatch)
    match.citation, match.grounded, match.key_spans, match.commentary = citation, False, (), None
    match._index, match._verdict, match._parts, match._diagnosis = index, None, parts, None
    match._spans = match._pages = ()  # no key span: no raw span, no page
    return match


def _clip(text: str | None, width: int, left: bool = False) -> str:
    text = " ".join((text or "").split())
    if len(text) <= width:
        return text
    return "…" + text[-width:] if left else text[:width] + "…"

