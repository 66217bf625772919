"""The prepared paper: its match keys, furniture blanked, searchable at once.

A paper is prepared once for any number of citations: the key of its text with page furniture
blanked (and, where any was blanked, of its text as it stands), where each page's key begins,
the map back from key positions to the text, where its lines begin (an :class:`~.alignment.Flow`), and where
its reference list lies. For each key, every position is filed by the GRAM key characters that
start there (a :class:`~.grams.GramIndex`): a quote, an anchor or a resumption is found with a
probe and a few comparisons instead of a scan of the paper, so a fabrication's search costs
about what an exact hit does.
"""

from __future__ import annotations

import bisect
import functools
import re
from typing import TYPE_CHECKING, Sequence

from .alignment import Flow
from .furniture import apply_mask, mask_furniture, split_pages
from .grams import GramIndex
from .textkey import key_offsets, text_key

if TYPE_CHECKING:  # pragma: no cover
    from .textkey import Offsets


_REFERENCES_HEADING = re.compile(
    r"(?m)^\s*(?:\d+\.?\s+)?(?:References|REFERENCES|Bibliography|BIBLIOGRAPHY|Works Cited)\s*$")
_APPENDIX_HEADING = re.compile(
    r"(?m)^\s*(?:Appendix|APPENDIX|Appendices|Supplementary|[A-H]\.?\s+[A-Z][a-z]+(?:\s+[A-Za-z]+){0,6})\s*$")

# The reference list is read at most this many characters on from its heading.
BIBLIOGRAPHY_LIMIT = 60_000


class PaperIndex:
    """A paper prepared once for any number of citation look-ups (the matcher's
    :class:`~.matching.MatchIndex` is one that also answers them).

    ``text`` is the raw extracted text; ``page_starts`` the raw offset at which
    each page begins (empty for papers that have no pages).
    """

    def __init__(self, text: str, page_starts: Sequence[int] = ()) -> None:
        self.text = text
        self.page_starts: tuple[int, ...] = tuple(page_starts)
        masked_pages, self.masked_ranges = mask_furniture(text, self.page_starts)
        page_keys = [text_key(page) for page in masked_pages]
        self.key = "".join(page_keys)
        self.page_key_starts = _running_starts(page_keys)
        if self.masked_ranges:
            unmasked = [text_key(page) for page in split_pages(text, self.page_starts)]
            self.unmasked_key = "".join(unmasked)
            self.unmasked_page_key_starts = _running_starts(unmasked)
        else:
            self.unmasked_key = self.key
            self.unmasked_page_key_starts = self.page_key_starts
        # Every position of the key by the stretch starting there: look-ups without scans.
        self.grams = GramIndex(self.key)
        self._bibliography  # noqa: B018 -- with the paper (and the offset map it reads): every hit's check

    def page_of(self, raw_offset: int) -> int | None:
        if not self.page_starts:
            return None
        return max(1, bisect.bisect_right(self.page_starts, raw_offset))

    def raw_offset(self, key_position: int) -> int:
        """Raw text offset of a (masked) key position."""
        offsets = self._masked_offsets
        if not len(offsets):
            return 0
        return int(offsets[min(max(key_position, 0), len(offsets) - 1)])

    @functools.cached_property
    def _masked_offsets(self) -> Offsets:
        return key_offsets(self.masked_text)

    @functools.cached_property
    def _unmasked_offsets(self) -> Offsets:
        return key_offsets(self.text) if self.masked_ranges else self._masked_offsets

    @functools.cached_property
    def sentence_windows(self) -> list[tuple[int, int]]:
        """Raw spans of overlapping two-sentence windows, for nearest-passage search."""
        masked = self.masked_text
        ends = {m.end() for m in re.finditer(r"[.!?][\"'”’)\]]*\s+|\n\s*\n", masked)}
        bounds = sorted(ends | set(self.page_starts) | {0, len(masked)})
        pages = set(self.page_starts)
        windows = []
        for i in range(len(bounds) - 1):
            end = bounds[i + 1]
            if i + 2 < len(bounds) and end not in pages:
                end = bounds[i + 2]  # two sentences, never across a page break
            windows.append((bounds[i], end))
        return windows

    @functools.cached_property
    def unmasked_grams(self) -> GramIndex:
        """The look-up index of the unmasked key, built on the first citation searched for there
        (one not found in the masked key): a paper whose citations are all found as they are, a
        reference system's, never needs it."""
        return GramIndex(self.unmasked_key) if self.masked_ranges else self.grams

    @functools.cached_property
    def _flow(self) -> "Flow":
        """Line starts and sentence flow of the masked text."""
        return Flow(self._masked_offsets, self.masked_text)

    @functools.cached_property
    def _unmasked_flow(self) -> "Flow":
        return Flow(self._unmasked_offsets, self.text) if self.masked_ranges else self._flow

    def find(self, quote_key: str) -> int:
        """Where ``quote_key`` first occurs in the (masked) key, or -1."""
        return self.grams.find(quote_key)

    @functools.cached_property
    def masked_text(self) -> str:
        """The paper text with page furniture blanked (same length, same offsets)."""
        return apply_mask(self.text, self.masked_ranges)

    @functools.cached_property
    def _bibliography(self) -> tuple[int, int] | None:
        """Key span of the reference list: from the last References heading to the next appendix
        heading (or at most BIBLIOGRAPHY_LIMIT characters on)."""
        headings = list(_REFERENCES_HEADING.finditer(self.masked_text))
        if not headings:
            return None
        start = headings[-1].end()
        following = _APPENDIX_HEADING.search(self.masked_text, start)
        end = min(following.start() if following else len(self.masked_text), start + BIBLIOGRAPHY_LIMIT)
        # Key positions from the offset map (built with the paper). The reference list starts at a
        # line's end and ends at a line's start or the text's end, where no decimal point or sign
        # is read across: the key before them is the map's. A cut at the limit may fall inside a
        # number, so the key of what is cut is made apart, as the reference list has it.
        offsets = self._masked_offsets
        before = int(offsets.searchsorted(start))
        if end == start + BIBLIOGRAPHY_LIMIT:
            return before, before + len(text_key(self.masked_text[start:end]))
        return before, int(offsets.searchsorted(end))

    def _in_bibliography(self, spans: Sequence[tuple[int, int]]) -> bool:
        region = self._bibliography
        return region is not None and all(region[0] <= a and b <= region[1] for a, b in spans)

    def _unmasked_to_masked(self, spans: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
        """Re-express spans found in the unmasked key in masked-key positions."""
        masked, unmasked = self._masked_offsets, self._unmasked_offsets
        converted = []
        for start, end in spans:
            low = int(masked.searchsorted(unmasked[start], "left"))
            high = int(masked.searchsorted(unmasked[end - 1], "right"))
            if high > low:
                converted.append((low, high))
        return tuple(converted)

    def _keys(self, unmasked: bool) -> tuple[str, tuple[int, ...]]:
        if unmasked:
            return self.unmasked_key, self.unmasked_page_key_starts
        return self.key, self.page_key_starts


def _running_starts(keys: list[str]) -> tuple[int, ...]:
    starts, total = [], 0
    for key in keys:
        starts.append(total)
        total += len(key)
    return tuple(starts)

