"""The deterministic per-row metrics, as the benchmark defines them.

Answerable rows (every row but a false-premise one):

* citation accuracy -- share of the answer's citations grounded in the paper;
* citation precision -- share of citations that match some alternative of
  some expected section;
* section coverage -- AND across expected sections, OR within each section's
  alternatives (fractional when several sections are required).

False-premise rows (adversarial, unless ``expected_refusal`` is false) are
graded by refusal instead, never by coverage of the refutation passages:

* refusal correctness -- 1.0 when the answer cites nothing or every citation
  is grounded, 0.0 when any citation is fabricated (the seed's definition);
* premise flagged -- 1.0 when the answer refuses or corrects the premise
  (this project's extension: the seed leaves it to the judge).

Citations that cannot be evidence either way (too short to verify) are left
out of every denominator: they are reported, not counted as fabrications.
A metric with nothing to measure is ``None`` (no citations, or no expected
sections), never 0: means skip it. docs/metrics.md lists every edge case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from .answers import Answer, flags_false_premise
from .matcher import CitationMatch, MatchIndex
from .matcher.textkey import text_key
from .rows import Row

if TYPE_CHECKING:  # pragma: no cover
    from ...families import PaperCheck
    from ...papers import Paper

# A citation and an alternative are the same passage when their overlap is at
# least this share of the shorter of the two.
PASSAGE_OVERLAP = 0.5
# Without a paper, a quote contained in an alternative must be this long to count.
MIN_SUBQUOTE_KEY = 20
# A citation covers a required section only when it is a passage, not a name: at least this many words
# and key characters ("Amazon Mechanical Turk" is a name that any paper using it mentions), unless it holds
# the whole of the dataset's own expected text (at its place in the paper). docs/metrics.md.
MIN_COVERING_WORDS = 6
MIN_COVERING_KEY = 30


def match_citations(answer: Answer, index: MatchIndex) -> list[CitationMatch]:
    return [index.match(citation) for citation in answer.citations]


def expects_refusal(row: Row) -> bool:
    """Graded by refusal: an adversarial row, unless the dataset says the paper does answer it."""
    return row.question_type == "adversarial" and row.expected_refusal is not False


def evidence(matches: Sequence[CitationMatch]) -> list[CitationMatch]:
    """The citations that can count for or against the answer."""
    return [m for m in matches if m.is_evidence]


def citation_accuracy(matches: Sequence[CitationMatch]) -> Optional[float]:
    counted = evidence(matches)
    if not counted:
        return None
    return sum(1 for m in counted if m.grounded) / len(counted)


def refusal_correctness(row: Row, matches: Sequence[CitationMatch]) -> Optional[float]:
    if not expects_refusal(row):
        return None
    return 0.0 if any(not m.grounded for m in evidence(matches)) else 1.0


def premise_flagged(row: Row, answer: Answer) -> Optional[float]:
    if not expects_refusal(row):
        return None
    premise = f"{row.question} {row.metadata.false_premise or ''}"
    return 1.0 if flags_false_premise(answer, premise, row.question) else 0.0


@dataclass(frozen=True)
class SectionReport:
    """Which expected sections the citations reach, citation by citation."""

    sections_per_citation: tuple[frozenset[int], ...]
    covered: tuple[bool, ...]
    # Which of the answer's citations each entry of sections_per_citation is (too-short ones are left out).
    counted: tuple[int, ...] = ()

    @property
    def section_coverage(self) -> Optional[float]:
        if not self.covered:
            return None
        return sum(self.covered) / len(self.covered)

    @property
    def citation_precision(self) -> Optional[float]:
        if not self.sections_per_citation or not self.covered:
            return None
        return sum(1 for s in self.sections_per_citation if s) / len(self.sections_per_citation)


def section_report(
    citations: Sequence[str], row: Row, index: MatchIndex | None = None
) -> SectionReport:
    """Match every citation against every expected alternative.

    With the paper, both sides are located in it and compared as spans, so a
    sub-quote, a longer quote and a noisy copy of the same passage all match,
    and a different passage never does. Alternatives the paper does not
    contain (and all of them without a paper) are compared as match keys.
    """
    sections = row.expected_references
    per_citation: list[frozenset[int]] = []
    counted: list[int] = []
    keys: dict[str, str] = {}  # each text's match key, made once a report (issue 24 item 2: text_key is pure)

    def key(text: str) -> str:
        found = keys.get(text)
        if found is None:
            found = keys[text] = text_key(text)
        return found

    for number, citation in enumerate(citations):
        found = index.match(citation) if index is not None else None
        if found is not None and found.is_evidence and not found.grounded:
            # Not in the paper: it matches no section, even when it contains an expected passage
            # (an expected passage with invented text before or after it earns no credit).
            per_citation.append(frozenset())
            counted.append(number)
            continue
        substantial = covers_enough(citation, key)
        hit = frozenset(
            position
            for position, section in enumerate(sections)
            if any((substantial or _quotes_whole(citation, alternative, index, key))
                   and _same_passage(citation, alternative, index, key) for alternative in section.alternatives)
        )
        # A citation too short to verify counts only when it is the dataset's own expected text.
        if hit or found is None or found.is_evidence:
            per_citation.append(hit)
            counted.append(number)
    covered = tuple(any(position in hit for hit in per_citation) for position in range(len(sections)))
    return SectionReport(tuple(per_citation), covered, tuple(counted))


def covers_enough(citation: str, key: Callable[[str], str] = text_key) -> bool:
    """Long enough to stand for a passage of the paper (the coverage floor; see MIN_COVERING_WORDS)."""
    return len(citation.split()) >= MIN_COVERING_WORDS and len(key(citation)) >= MIN_COVERING_KEY


def _quotes_whole(citation: str, alternative: str, index: MatchIndex | None, key: Callable[[str], str]) -> bool:
    """The coverage floor's waiver: the citation is the dataset's own expected text, or (located in the paper,
    where ``_same_passage`` then asks for the same place) a longer quote holding the whole of it. Without a paper
    only the text itself: a short alternative ("412") is inside too many other quotes."""
    citation_key, alternative_key = key(citation), key(alternative)
    if citation_key == alternative_key:
        return True
    return index is not None and bool(alternative_key) and alternative_key in citation_key


def _same_passage(citation: str, alternative: str, index: MatchIndex | None,
                  key: Callable[[str], str] = text_key) -> bool:
    citation_key, alternative_key = key(citation), key(alternative)
    shorter, longer = sorted((citation_key, alternative_key), key=len)
    if len(shorter) >= MIN_SUBQUOTE_KEY and shorter in longer:
        # One is a verbatim part of the other: the same passage wherever the paper first has
        # the words (a caption may repeat them before the alternative's own place).
        return True
    if index is not None:
        alternative_spans = index.passage_spans(alternative)
        if alternative_spans is not None:
            found = index.match(citation)
            return found.grounded and spans_overlap(found.key_spans, alternative_spans)
    return keys_overlap(citation_key, alternative_key)


def spans_overlap(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> bool:
    shared = sum(max(0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)
    shorter = min(sum(e - s for s, e in a), sum(e - s for s, e in b))
    return shorter > 0 and shared >= PASSAGE_OVERLAP * shorter


def keys_overlap(citation_key: str, alternative_key: str) -> bool:
    """Same passage judged from the texts alone (no paper to locate them in)."""
    if not citation_key or not alternative_key:
        return False
    if citation_key == alternative_key:
        return True
    shorter, longer = sorted((citation_key, alternative_key), key=len)
    if len(shorter) >= MIN_SUBQUOTE_KEY and shorter in longer:
        return True
    if len(shorter) < MIN_SUBQUOTE_KEY * 2:
        return False
    from rapidfuzz import fuzz

    return fuzz.partial_ratio(shorter, longer) >= 95


@dataclass(frozen=True)
class ExpectedPassageCheck:
    """The dataset checking itself: which expected passages the paper contains."""

    found: tuple[tuple[bool, ...], ...]  # per section, per alternative
    labels: tuple[str, ...]

    @property
    def missing_sections(self) -> list[str]:
        return [label for label, hits in zip(self.labels, self.found) if not any(hits)]

    @property
    def counts(self) -> tuple[int, int]:
        flat = [hit for hits in self.found for hit in hits]
        return sum(flat), len(flat)


def check_expected_passages(row: Row, index: MatchIndex) -> ExpectedPassageCheck:
    return ExpectedPassageCheck(
        found=tuple(
            tuple(index.passage_spans(alternative) is not None for alternative in section.alternatives)
            for section in row.expected_references
        ),
        labels=tuple(section.section_label for section in row.expected_references),
    )


def paper_check(row: Row, paper: "Paper") -> "PaperCheck":
    """The citation family's check of a row against its paper (``Family.paper_check``): its expected passages
    found in the text, of how many, the sections none of whose passages the paper contains, and, when there
    are such sections, why the row is a dataset defect."""
    from .matcher import match_index

    index = match_index(paper)
    checked = check_expected_passages(row, index)
    missing = tuple(checked.missing_sections)
    return (*checked.counts, missing, defect_reason(row, index, missing) if missing else "")


def defect_reason(row: Row, index: MatchIndex, missing: Sequence[str]) -> str:
    """Why a row is a dataset defect: the sections none of whose expected passages the paper contains, those
    whose passages are all too short to verify (a one-word passage may well be in the text), and the sections
    a passage of which the extracted text does hold, with why it is not grounded there (it is in the reference
    list; it ends with a margin line number)."""
    from .matcher.verdicts import MIN_QUOTE_KEY, TOO_SHORT

    held: dict[str, str] = {}
    for section in row.expected_references:
        if section.section_label in missing:
            why = next((why for why in (index.match(a).in_text for a in section.alternatives) if why), "")
            if why:
                held[section.section_label] = why
    absent = [label for label in missing if label not in held]
    short = [section.section_label for section in row.expected_references if section.section_label in absent
             and section.alternatives and all(index.match(a).verdict == TOO_SHORT for a in section.alternatives)]
    reasons = []
    if absent:
        reasons.append(f"no expected passage of section(s) {', '.join(map(repr, absent))} "
                       f"is in the text of paper {row.paper_id!r}")
    if short:
        reasons[-1] += (f" (those of {', '.join(map(repr, short))} are too short to verify: fewer than "
                        f"{MIN_QUOTE_KEY} letters and digits)")
    reasons.extend(f"the expected passage of section {label!r} is in the extracted text of paper {row.paper_id!r} "
                   f"but is not grounded there: {why}" for label, why in held.items())
    return "dataset defect: " + "; ".join(reasons)
