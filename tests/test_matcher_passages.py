"""Passages cut straight from a paper's own extracted text are verbatim: every passage the bm25 system
cites (its :func:`~pytest_researchqa.families.citation.bm25.passages`) and every sentence, cut from the text exactly
as the plugin reads each real PDF, is grounded, whatever the paper repeats, prints at its pages' edges
or numbers its lines with. The one exception is the matcher's own rule: a margin line number that
extraction glued right onto a digit of the text (``0.9`` and ``193`` read ``0.9193``) makes the
passage read a number the paper does not print, and then the account of why shows that number against
the paper's, never two readings that look the same."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import SHARED, needs_shared, shared_path

from pytest_researchqa.families.citation.bm25 import passage_spans
from pytest_researchqa.families.citation.matcher import MatchIndex

# Where the bm25 system ends a sentence (its own pattern): sentences are cut at the same places.
_SENTENCE_END = re.compile(r"[.!?](\s+)(?=[A-Z(\[])")


def _pdfs() -> list[Path]:
    return sorted((SHARED / "papers").glob("*.pdf")) + sorted((SHARED / "pdf-edge-cases").glob("*.pdf"))


def _cuts(text: str) -> list[tuple[int, int]]:
    """The raw spans of every bm25 passage and every sentence of ``text``, once each."""
    spans = passage_spans(text)
    ends = [0] + [m.start(1) for m in _SENTENCE_END.finditer(text)] + [len(text)]
    for start, end in zip(ends, ends[1:]):
        stripped = text[start:end].strip()
        if stripped:
            first = text.index(stripped, start)
            spans.append((first, first + len(stripped)))
    return list(dict.fromkeys(spans))


# Known, left as it is: llm_accuracy_inventivizes_hallucinations.pdf's "vol. 35," and the margin's 244 do
# read as the thousands number 35,244.
KNOWN = ("vol. 35,244\n",)


def _glued_onto_a_digit(index: MatchIndex, start: int, end: int) -> bool:
    """Whether a number the paper's furniture holds sits, within ``text[start:end]``, right after a digit of
    the text: the passage then reads the two as one number (the exception this module's docstring names)."""
    text = index.text
    return any(start < low < end and text[low - 1].isdigit() and any(c.isdigit() for c in text[low:high])
               for low, high in index.masked_ranges)


def _readings(explanation: str) -> list[str]:
    """The quote's and the paper's reading, as the account of an altered quote shows them."""
    found = re.findall(r"the (?:quote|paper) (?:goes on|reads): (['\"])(.*?)…?\1$", explanation, re.MULTILINE)
    return [reading for _, reading in found]


@pytest.fixture(scope="module", params=[path.name for path in _pdfs()] or ["(no shared data)"])
def paper(request, read_once):
    folder = "papers" if (SHARED / "papers" / request.param).exists() else "pdf-edge-cases"
    path = shared_path(folder, request.param)
    try:
        return read_once(path)
    except Exception as error:  # noqa: BLE001 -- a PDF pypdf cannot read (encrypted, images only) has no text to cut
        pytest.skip(f"{path.name} does not extract: {error}")


@pytest.fixture(scope="module")
def not_grounded(paper):
    """(index, cut's raw start, its end, its match) for each cut of the paper that is evidence and not grounded."""
    index = MatchIndex(paper.text, paper.page_starts)
    found = [(start, end, index.match(paper.text[start:end])) for start, end in _cuts(paper.text)]
    return [(index, start, end, match) for start, end, match in found if match.is_evidence and not match.grounded]


@needs_shared
@pytest.mark.slow  # every real PDF read (pypdf takes seconds a paper)
def test_every_passage_and_sentence_cut_from_a_papers_own_text_is_grounded(not_grounded):
    missed = [(match.explain(), index.text[start:end][:200]) for index, start, end, match in not_grounded
              if not _glued_onto_a_digit(index, start, end)
              and not any(known in index.text[start:end] for known in KNOWN)]
    assert missed == []


@needs_shared
@pytest.mark.slow  # every real PDF read (pypdf takes seconds a paper)
def test_a_passage_not_grounded_is_shown_reading_otherwise_than_the_paper(not_grounded):
    alike = []
    for _, _, _, match in not_grounded:
        readings = _readings(match.explain())  # none where the nearest passage is shown instead of a departure
        if readings:
            quote_reads, paper_reads = readings
            shorter = min(len(quote_reads), len(paper_reads))
            if quote_reads[:shorter] == paper_reads[:shorter]:
                alike.append(match.explain())
    assert alike == []


@needs_shared
@pytest.mark.parametrize("sentence", [
    # "44," (the sentence's comma after a citation marker) and the margin's 499: no number 44,499.
    "Like HELM Capabilities, the updated version 48 includes MMLU-Pro 41, GPQA 42, and IFEval 44,499\n"
    "for which IDK generally receives no credit.",
    # "31." (a citation marker ending the sentence) and the margin's 388, the next sentence after it.
    "Follow-up empirical work largely corroborates387\nthis relationship between hallucinations, the "
    "singleton rate, and calibration 31.388\nTo interpret the terms in the above bound, let us walk through "
    "a few settings.",
    # "t = 0," and the margin's 196: no thousands number starts with a lone zero.
    "At t = 0,196\nhowever, because the model is instructed to never abstain, a different prompt is used to "
    "select the197\nbetter of the two responses.",
])
def test_a_margin_number_after_a_comma_or_full_stop_that_ends_the_papers_line_is_no_part_of_a_number(
        read_once, sentence):
    paper = read_once(shared_path("papers", "llm_accuracy_inventivizes_hallucinations.pdf"))
    assert sentence in paper.text
    found = MatchIndex(paper.text, paper.page_starts).match(sentence)
    assert found.grounded, found.explain()
