"""Page furniture: what a paper's pages carry besides its text, blanked before matching.

Running headers and footers (lines at a page's edges that repeat, numbers aside, on many
pages), page-number lines, and margin line numbers (at a line's start, or glued by extraction
to its end) are replaced by spaces: raw offsets stay valid, so every key position still maps
back to the paper.
"""

from __future__ import annotations

import bisect
import re
from typing import Sequence

from .textkey import text_key

_PAGE_NUMBER_LINE = re.compile(
    r"^\s*(?:page\s*)?(?:\d{1,4}|[ivxlc]{1,6})(?:\s*(?:of|/)\s*\d{1,4})?\s*$", re.IGNORECASE
)
_NUMBERED_LINE = re.compile(r"^([ \t]*)(\d{1,4})([ \t]+)\S", re.MULTILINE)
_NUMBERED_LINE_START = re.compile(r"\n[ \t]*\d{1,4}[ \t]+\S")

_DROP_DIGITS = str.maketrans("", "", "0123456789")


def split_pages(text: str, page_starts: Sequence[int]) -> list[str]:
    if not page_starts:
        return [text]
    bounds = list(page_starts) + [len(text)]
    return [text[bounds[i] : bounds[i + 1]] for i in range(len(page_starts))]


def apply_mask(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    if not ranges:
        return text
    pieces: list[str] = []
    last = 0
    for start, end in ranges:
        pieces.append(text[last:start])
        pieces.append(" " * (end - start))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def mask_furniture(text: str, page_starts: Sequence[int]) -> tuple[list[str], list[tuple[int, int]]]:
    """Blank running headers, footers, page numbers and margin line numbers.

    Returns the masked pages and the raw ranges blanked. Blanking keeps raw
    offsets valid, so every key position still maps back to the paper.
    """
    pages = split_pages(text, page_starts)
    numbered = _has_line_numbers(text)
    trailing = trailing_line_numbers(text, page_starts)
    if len(pages) < 2 and not numbered and not trailing:
        return pages, []
    page_offsets = list(page_starts) if page_starts else [0]
    edge_lines: list[list[tuple[int, int, str, str]]] = []
    signature_pages: dict[str, set[int]] = {}
    for number, page in enumerate(pages):
        edges: list[tuple[int, int, str, str]] = []
        for start, end in _edge_lines(page):
            line = page[start:end]
            # Running headers differ between pages only by numbers (page, year, volume).
            signature = text_key(line).translate(_DROP_DIGITS)
            edges.append((start, end, line, signature))
            if len(signature) >= 4:
                signature_pages.setdefault(signature, set()).add(number)
        edge_lines.append(edges)
    repeated_floor = max(3, int(0.4 * len(pages)))
    repeated = {s for s, where in signature_pages.items() if len(where) >= repeated_floor}
    ranges: list[tuple[int, int]] = []
    for number, page in enumerate(pages):
        base = page_offsets[number]
        for start, end, line, signature in edge_lines[number]:
            if signature in repeated or _PAGE_NUMBER_LINE.match(line):
                ranges.append((base + start, base + end))
        if numbered:
            for numbered_line in _NUMBERED_LINE.finditer(page):
                ranges.append((base + numbered_line.start(2), base + numbered_line.end(2)))
    ranges = _merge(ranges + trailing)
    return split_pages(apply_mask(text, ranges), page_starts), ranges


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _edge_lines(page: str, count: int = 2) -> list[tuple[int, int]]:
    """Spans of the first and last ``count`` non-blank lines (where furniture sits)."""
    found: list[tuple[int, int]] = []
    start = 0
    while len(found) < count and start < len(page):
        end = page.find("\n", start)
        end = len(page) if end < 0 else end
        if page[start:end].strip():
            found.append((start, end))
        start = end + 1
    tail: list[tuple[int, int]] = []
    stop = len(page) - 1 if page.endswith("\n") else len(page)
    while len(tail) < count and stop > 0:
        begin = page.rfind("\n", 0, stop) + 1
        if page[begin:stop].strip() and (begin, stop) not in found:
            tail.append((begin, stop))
        stop = begin - 1
    return found + tail[::-1]


def _has_line_numbers(text: str) -> bool:
    """True when most lines of the paper start with an increasing margin number."""
    lines = text.count("\n") + 1
    if len(_NUMBERED_LINE_START.findall(text)) * 10 < lines * 5:
        return False  # cheap rejection (a literal-led regex): most papers have no margin numbers
    numbers = [int(m.group(2)) for m in _NUMBERED_LINE.finditer(text)]
    lines = sum(1 for line in text.split("\n") if line.strip())
    if lines < 8 or len(numbers) * 10 < lines * 6:
        return False
    rising = sum(1 for a, b in zip(numbers, numbers[1:]) if b > a)
    return rising * 10 >= (len(numbers) - 1) * 8


_TRAILING_DIGITS = re.compile(r"(\d{1,7})[ \t]*$", re.MULTILINE)
_DIGIT_AT_LINE_END = re.compile(r"\d[ \t]*\n")
_WORD = re.compile(r"[^\W\d_]{2,}")  # a word of running text: two letters or more


def trailing_line_numbers(text: str, page_starts: Sequence[int] = ()) -> list[tuple[int, int]]:
    """Raw ranges of margin line numbers that extraction glued to the end of each line.

    Some preprints come out of pypdf as ``"primary goal of396\npublishing"``: the number
    is glued to the line's last word, or to a number of the text ("in 2021.52"). When
    most lines end in digits that count upwards, each line's number is the suffix of its
    digits that continues the count. The count restarts (at 1 to 3) or jumps far ahead only
    on a new page; on the same page a number that does neither is the text's own (the ``2``
    of a formula's last line, a year ending a line), and the count goes on past it. A number
    that starts the count, restarts it or jumps ahead is taken only where the lines after it
    on its page go on counting from it: a table's labels and cells (``OR@1``, then ``0.46``
    and ``0.18``), or a year on a title page, start no count.
    """
    lines = max(1, text.count("\n"))
    if len(_DIGIT_AT_LINE_END.findall(text, 0, 20_000)) * 3 < min(lines, text.count("\n", 0, 20_000)):
        return []  # cheap rejection: most papers have no numbers at their line ends
    found = list(_TRAILING_DIGITS.finditer(text))
    if len(found) * 2 < lines or len(found) < 8:
        return []
    # Each line's digits and page, leaving out a line of its own (a page number): not glued, and not the count.
    glued = [(match, bisect.bisect_right(page_starts, match.start(1))) for match in found
             if text[text.rfind("\n", 0, match.start(1)) + 1 : match.start(1)].strip()]
    ranges: list[tuple[int, int]] = []
    counted = 0
    previous: int | None = None
    previous_page = -1
    for position, (match, page) in enumerate(glued):
        digits = match.group(1)
        width = 0
        if previous is not None:
            fits = [(int(digits[-size:]) - previous, -size) for size in range(1, min(4, len(digits)) + 1)
                    if previous < int(digits[-size:]) <= previous + 5]
            width = -min(fits)[1] if fits else 0  # the closest continuation of the count
        decimals = text[match.start(1) - 1 : match.start(1)] in (".", ",") and text[match.start(1) - 2].isdigit()
        if not width and len(digits) <= 4 and not decimals:
            # (Digits after a number's point or comma, "0.90" in a table, are split off only where they go on
            # with the count: a restart or a jump there is the number's own.)
            value = int(digits)
            new_page = page != previous_page or not page_starts  # without pages, any line may start one
            # A restart (a new page's count) starts low; a jump skips forward (past a figure's
            # lines on this page, any distance on the next); anything else is text.
            if ((previous is None or (new_page and (value <= 3 or value > previous))
                    or previous < value <= previous + 100)
                    and _counted_on(text, glued[position + 1 : position + 4], value, page)):
                width = len(digits)
        if width:
            counted += previous is not None and int(digits[-width:]) == previous + 1
            previous, previous_page = int(digits[-width:]), page
            ranges.append((match.end(1) - width, match.end(1)))
    return ranges if counted * 10 >= len(found) * 7 else []


def _counted_on(text: str, after: Sequence[tuple[re.Match[str], int]], value: int, page: int) -> bool:
    """Whether at least two of the next three numbered lines of ``page`` (``after``: those three) go on
    counting from ``value``, one of them running text.

    Each goes on when its digits end in a number one or two past the last one counted (a line
    between may end in none). A margin's count goes on line after line of prose; a table's labels
    and cells (``OR@1``, then ``0.46``), a figure's labels one a line (``LLM1``, ``LLM2``,
    ``LLM3``) and a title page's years do not.
    """
    went_on, prose = 0, False
    for match, its_page in after:
        if its_page != page:
            break
        digits = match.group(1)
        goes_on = [int(digits[-size:]) for size in range(1, min(4, len(digits)) + 1)
                   if value < int(digits[-size:]) <= value + 2]
        if goes_on:
            went_on += 1
            value = min(goes_on)
            line = text[text.rfind("\n", 0, match.start(1)) + 1 : match.start(1)]
            prose = prose or len(_WORD.findall(line)) >= 4
    return went_on >= 2 and prose
