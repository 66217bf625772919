"""The prepared paper: its match keys, furniture blanked, searchable at once.

A paper is prepared once for any number of citations: the key of its text with page furniture
blanked (and, where any was blanked, of its text as it stands), where each page's key begins,
the map back from key positions to the text, where its lines begin (an :class:`~.alignment.Flow`), and where
its reference list lies. For each key, every position is filed by the GRAM key characters that
start there (a :class:`~.grams.GramIndex`): a quote, an anchor or a resumption is found with a
probe and a few comparisons instead of a scan of the paper, so a fabrication's search costs
about what an exact hit does.

What is built with the paper is what an exact hit reads: the keys, where each page's key begins
and where the reference list lies. The rest is built on first use: each key's stretch index once
its scans have read enough of the key (:mod:`.grams`), the map from key positions to the text
(4 bytes a key character) and the line flows when a quote takes the full path. A matched span's
place in the text is read from every ``OFFSET_STEP``-th key character's offset (an eighth of a
byte a key character) and one pattern match over the text's key flags (a byte a character, 1 where
it gives a key character; built with the steps) or, once those are dropped, a walk over at most a
few dozen characters, unless the whole map is built already. :meth:`PaperIndex.trim` drops what is
built on use, so a store can keep many papers at the cost of their keys and a few heavy ones whole.
"""

from __future__ import annotations

import array
import bisect
import functools
import re
import sys
from typing import TYPE_CHECKING, Sequence

from .alignment import MIN_GAPPED_ANCHOR, STUCK_LOOK_ON, Flow
from .furniture import apply_mask, mask_furniture, split_pages
from .grams import GramIndex
from .textkey import ASCII_KEY_FLAGS, key_flags, key_offsets, mark_context, text_key

if TYPE_CHECKING:  # pragma: no cover
    from .textkey import Offsets


_REFERENCES_HEADING = re.compile(
    r"(?m)^\s*(?:\d+\.?\s+)?(?:References|REFERENCES|Bibliography|BIBLIOGRAPHY|Works Cited)\s*$")
_APPENDIX_HEADING = re.compile(
    r"(?m)^\s*(?:Appendix|APPENDIX|Appendices|Supplementary|[A-H]\.?\s+[A-Z][a-z]+(?:\s+[A-Za-z]+){0,6})\s*$")

# The reference list is read at most this many characters on from its heading.
BIBLIOGRAPHY_LIMIT = 60_000
# Each heading _REFERENCES_HEADING matches holds one of these: a text holding none has no reference list.
_HEADING_WORDS = ("References", "REFERENCES", "Bibliography", "BIBLIOGRAPHY", "Works Cited")

# Without the whole offset map, a key position's text offset is found from the offset of every
# OFFSET_STEP-th key character, walking on over the text in windows of _WALK characters.
OFFSET_STEP = 32
_WALK = 96
# Decimal points and signs are read from at most this many characters around them (twice the
# widest look-around of textkey's patterns, for the two passes): a window marked with this margin
# is marked as the whole text is.
_MARK_MARGIN = 8
# What is built on use and dropped by trim(), rebuilt on the next use.
_BUILT_ON_USE = ("_masked_offsets", "_unmasked_offsets", "_flow", "_unmasked_flow", "sentence_windows",
                 "unmasked_grams", "_furniture_zones", "_furniture_grams", "_text_flags")
# Around each blanked range, what the masked and unmasked keys may read differently: this many text
# characters each side (a line flow reads at most 44 on from a key position: the closing marks and
# the next line's first word, cut at 40; points and signs, a few), then this many key characters
# each side (what stuck_prefix reads past a run, STUCK_LOOK_ON, and a point's or sign's context).
_FURNITURE_TEXT_MARGIN = 48
_FURNITURE_KEY_MARGIN = 24


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
        # Every position of the key by the stretch starting there: look-ups without scans, once the
        # scans have read enough of the key to pay for it.
        self.grams = GramIndex(self.key, lazy=True)
        self._walked: dict[int, int] = {}  # raw offsets walked to (without the whole map), by key position
        self._bibliography  # noqa: B018 -- with the paper: every hit's check

    def trim(self) -> None:
        """Drop what is built on use (stretch indexes, offset maps, line flows, sentence windows) and
        what was answered (``release``); keys, the reference list's span and the offset steps stay.
        Everything dropped is built again on its next use, alike."""
        self._offset_steps  # noqa: B018 -- from the map while it is there
        for name in _BUILT_ON_USE:
            self.__dict__.pop(name, None)
        self.grams.drop()
        self._walked = {}
        release = getattr(self, "release", None)
        if callable(release):
            release()

    def nbytes(self) -> int:
        """About the memory this index holds beyond the paper's text."""
        held = sys.getsizeof(self.key) + self.grams.nbytes() + 64 * len(self._walked)
        if self.unmasked_key is not self.key:
            held += sys.getsizeof(self.unmasked_key)
        built = self.__dict__
        if built.get("masked_text", self.text) is not self.text:
            held += sys.getsizeof(built["masked_text"])
        for name in ("_masked_offsets", "_unmasked_offsets"):
            offsets = built.get(name)
            if offsets is not None and (name == "_masked_offsets" or offsets is not built.get("_masked_offsets")):
                held += int(offsets.nbytes)
        grams = built.get("unmasked_grams")
        if grams is not None and grams is not self.grams:
            held += grams.nbytes()
        steps = built.get("_offset_steps")
        if steps is not None:
            held += steps[0].itemsize * (len(steps[0]) + len(steps[1]))
        flags = built.get("_text_flags")
        if flags is not None:
            held += sys.getsizeof(flags)
        windows = built.get("sentence_windows")
        if windows is not None:
            held += 72 * len(windows)
        zones = built.get("_furniture_zones")
        if zones is not None:  # two lists of ints (36 bytes each, with its slot) and the text around them
            held += 72 * len(zones[0]) + sys.getsizeof(zones[2])
        around = built.get("_furniture_grams")
        if around is not None:
            held += around.nbytes()
        return held

    def page_of(self, raw_offset: int) -> int | None:
        if not self.page_starts:
            return None
        return max(1, bisect.bisect_right(self.page_starts, raw_offset))

    def raw_offset(self, key_position: int) -> int:
        """Raw text offset of a (masked) key position."""
        offsets = self.__dict__.get("_masked_offsets")
        if offsets is None:
            walked = self._walked.get(key_position)
            if walked is None:  # each span's ends are read again for its pages, its view and its verdict
                walked = self._walked[key_position] = self._walked_offset(key_position)
            return walked
        if not len(offsets):
            return 0
        return int(offsets[min(max(key_position, 0), len(offsets) - 1)])

    @functools.cached_property
    def _offset_steps(self) -> tuple[array.array[int], array.array[int], int]:
        """The text offset of every OFFSET_STEP-th key character of the masked key, the key position
        where that offset's character begins (a ligature gives two), and the map's length."""
        offsets = self.__dict__.get("_masked_offsets")
        if offsets is None:  # the whole map is not kept: 4 bytes a key character
            flags = self._text_flags
            if flags is not None:  # no character gives two key characters: the n-th 1 is the n-th offset
                import numpy

                found = numpy.flatnonzero(numpy.frombuffer(flags, dtype=numpy.bool_))
                return (array.array("i", found[::OFFSET_STEP].astype("int32").tobytes()),
                        array.array("i", range(0, len(found), OFFSET_STEP)), len(found))
            offsets = key_offsets(self.masked_text)
        starts = offsets[::OFFSET_STEP]
        begins = offsets.searchsorted(starts, "left")
        return (array.array("i", starts.astype("int32").tobytes()), array.array("i", begins.astype("int32").tobytes()),
                len(offsets))

    @functools.cached_property
    def _text_flags(self) -> bytes | None:
        """:func:`~.textkey.key_flags` of the masked text (a byte a character: about a quarter of the whole
        map's size), for walks of one pattern match; built with the offset steps, dropped by trim()."""
        return key_flags(self.masked_text)

    def _walked_offset(self, key_position: int) -> int:
        """``raw_offset`` without the whole map: from the nearest step before, over the text (or over
        its key flags, when they are kept: one pattern match)."""
        starts, begins, length = self._offset_steps
        if not length:
            return 0
        wanted = min(max(key_position, 0), length - 1)
        step = wanted // OFFSET_STEP
        at, count = starts[step], begins[step]
        text_flags = self.__dict__.get("_text_flags")
        if text_flags is not None:
            reached = _nth_key_character(wanted - count).match(text_flags, at)
            if reached is not None:  # (always: the steps were read from these flags or from the same map)
                return reached.end() - 1
        text = self.masked_text
        while at < len(text):
            low, end = max(at - _MARK_MARGIN, 0), min(at + _WALK, len(text))
            window = mark_context(text[low : end + _MARK_MARGIN])[at - low : end - low]
            if window.isascii():
                flags = window.encode("ascii").translate(ASCII_KEY_FLAGS)
                reached = _nth_key_character(wanted - count).match(flags)
                if reached is not None:
                    return at + reached.end() - 1
                count += flags.count(1)
            else:
                for place, char in enumerate(window):
                    count += _key_width(char)
                    if count > wanted:
                        return at + place
            at = end
        return int(self._masked_offsets[wanted])  # not reached: the map's last offset is in the text

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
        return GramIndex(self.unmasked_key, lazy=True) if self.masked_ranges else self.grams

    @functools.cached_property
    def _flow(self) -> "Flow":
        """Line starts and sentence flow of the masked text."""
        return Flow(self._masked_offsets, self.masked_text)

    @functools.cached_property
    def _unmasked_flow(self) -> "Flow":
        return Flow(self._unmasked_offsets, self.text) if self.masked_ranges else self._flow

    @functools.cached_property
    def _furniture_zones(self) -> tuple[list[int], list[int], str]:
        """Where the masked and unmasked keys may differ: the masked key's spans (their starts, their
        ends; sorted, disjoint, inclusive) around each blanked range, and the unmasked key's text
        around each, joined by a character no key holds (empty where the spans cover more than a
        quarter of the key). Outside them the two keys are the same key
        characters from the same text characters, with the same line starts and the same text read
        around each (the masked text differs from the text only within the blanked ranges)."""
        masked, unmasked = self._masked_offsets, self._unmasked_offsets
        lows = [low - _FURNITURE_TEXT_MARGIN for low, _ in self.masked_ranges]
        highs = [high + _FURNITURE_TEXT_MARGIN for _, high in self.masked_ranges]
        starts: list[int] = []
        ends: list[int] = []
        for low, high in zip(masked.searchsorted(lows).tolist(), masked.searchsorted(highs).tolist()):
            low, high = low - _FURNITURE_KEY_MARGIN, high + _FURNITURE_KEY_MARGIN
            if ends and low <= ends[-1] + 1:
                ends[-1] = max(ends[-1], high)
            else:
                starts.append(low)
                ends.append(high)
        key = self.unmasked_key
        if sum(ends) - sum(starts) > len(self.key) // 4:
            return starts, ends, ""  # nearly every run would touch one: furniture_apart does not try
        pieces = [key[max(0, low - _FURNITURE_KEY_MARGIN - MIN_GAPPED_ANCHOR) : high + _FURNITURE_KEY_MARGIN
                      + MIN_GAPPED_ANCHOR + 1]
                  for low, high in zip(unmasked.searchsorted(lows).tolist(), unmasked.searchsorted(highs).tolist())]
        return starts, ends, "\x00".join(pieces)

    @functools.cached_property
    def _furniture_grams(self) -> GramIndex:
        """The look-up index of the unmasked key's text around the blanked ranges (``_furniture_zones``' third
        part): a quote's first key characters looked up there instead of a scan of up to 20,000 characters
        (about 12 us) for each quote stuck away from the furniture (it scans, as any lazy index does, until
        its scans have read enough to pay for building it)."""
        return GramIndex(self._furniture_zones[2], lazy=True)

    def furniture_apart(self, quote_key: str, runs: Sequence[tuple[int, int]]) -> bool:
        """Whether :func:`~.alignment.stuck_prefix` surely answers in the unmasked key as it answered in the
        masked key, where it read ``runs`` (each occurrence of the quote's first MIN_GAPPED_ANCHOR key
        characters and the verbatim run from it): no occurrence of those characters in the unmasked key
        touches the text around a blanked range, and no run, nor what is read after it, touches it in
        the masked key. Then the occurrences in the two keys are the same ones in the same order, each
        with the same run, the same characters after it and the same line flow around it."""
        starts, ends, around = self._furniture_zones
        if not around:
            return False  # furniture all over the paper (margin line numbers): not worth a scan
        for found, length in runs:
            zone = bisect.bisect_left(ends, found)  # the first zone that ends at or after the run's start
            if zone < len(ends) and starts[zone] <= found + length + STUCK_LOOK_ON:
                return False
        return self._furniture_grams.find(quote_key[:MIN_GAPPED_ANCHOR]) < 0  # (no key holds the joints' "\x00")

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
        masked = self.masked_text
        if not any(word in masked for word in _HEADING_WORDS):
            return None  # a few scans at C speed where the pattern costs a step a character
        headings = list(_REFERENCES_HEADING.finditer(masked))
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



@functools.lru_cache(maxsize=4096)
def _key_width(char: str) -> int:
    """Key characters a character of marked text gives, as :func:`~.textkey.key_offsets` counts them."""
    if char < "\x80":
        return ASCII_KEY_FLAGS[ord(char)]
    return len(text_key(char))


@functools.lru_cache(maxsize=None)
def _nth_key_character(before: int) -> "re.Pattern[bytes]":
    """A pattern whose match over key flags (:func:`~.textkey.key_flags`) ends just after the key character
    that has ``before`` others before it: one C call where a loop of finds costs one each."""
    return re.compile(rb"(?:\x00*\x01){%d}" % (before + 1))
