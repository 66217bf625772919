"""The prepared paper: its match keys, furniture blanked, searchable at once.

A paper is prepared once for any number of citations: the key of its text with page furniture
blanked (and, where any was blanked, of its text as it stands), where each page's key begins,
the map back from key positions to the text, where its lines begin (an :class:`~.alignment.Flow`), and where
its reference list lies. Two structures make a look-up cheap:

* for each key, every position filed by the GRAM key characters that start there
  (a :class:`~.grams.GramIndex`): a quote, an anchor or a resumption is found with a probe and a
  few comparisons instead of a scan of the paper;
* a Bloom filter of every GRAM-character stretch of its keys: a quote with a stretch the paper
  lacks is turned down without any search (:meth:`PaperIndex._may_be_located`), which is how
  most fabrications and paraphrases are rejected.
"""

from __future__ import annotations

import bisect
import functools
import re
import struct
from typing import TYPE_CHECKING, Sequence

from .alignment import Flow
from .furniture import apply_mask, mask_furniture, split_pages
from .grams import BUCKET_MULTIPLIER as _BUCKET_MULTIPLIER
from .grams import GRAM, GramIndex, all_gram_codes, gram_code, gram_codes
from .grams import UINT64 as _UINT64
from .textkey import key_offsets, text_key

if TYPE_CHECKING:  # pragma: no cover
    from .textkey import Offsets

# Bloom filter bits a GRAM-character stretch of a paper (two set each): about 1% false "present".
FILTER_BITS_PER_GRAM = 16
_ABSENT_ROW = b"\x01" * GRAM  # GRAM stretch starts in a row, all surely absent

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
        self._last_absent: tuple[str, int] = ("", -1)  # a key and its first absent stretch start
        self._last_stretches: tuple[str, bytes] = ("", b"")  # a key and all its stretches' tests
        # Every position of each key by the stretch starting there: look-ups without scans.
        self.grams = GramIndex(self.key)
        self.unmasked_grams = GramIndex(self.unmasked_key) if self.masked_ranges else self.grams
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
    def _gram_filter(self) -> tuple[bytes, int]:
        """Every GRAM-character stretch of the paper's keys (masked and unmasked), as a Bloom filter:
        two bits of a table of 2**bits (at least FILTER_BITS_PER_GRAM a stretch) set for each.

        A stretch it lacks is in neither key, so a citation can be turned down without a scan of
        the paper (:meth:`_may_be_located`); a stretch it holds may still be absent (about 1% of
        the time), which only sends that citation down the full path. Built on the first
        citation that is not found as it is (exact quotes, a reference system's all, never need it).
        """
        import numpy

        keys = [self.key] if self.unmasked_key is self.key else [self.key, self.unmasked_key]
        codes = numpy.concatenate([all_gram_codes(key) for key in keys])
        bits = min(32, max(10, (len(self.key) * FILTER_BITS_PER_GRAM).bit_length()))
        flags = numpy.zeros(1 << bits, dtype=bool)
        with numpy.errstate(over="ignore"):
            hashed = codes * numpy.uint64(_BUCKET_MULTIPLIER)
        flags[hashed >> numpy.uint64(64 - bits)] = True
        flags[(hashed >> numpy.uint64(64 - 2 * bits)) & numpy.uint64((1 << bits) - 1)] = True
        return numpy.packbits(flags, bitorder="little").tobytes(), bits

    def _absent_stretches(self, quote_key: str) -> bytes:
        """One byte for each GRAM-character stretch of ``quote_key`` (one a start: 0, 1, 2 ...):
        1 where the stretch is surely in neither of the paper's keys. Needs the filter. For keys
        with characters beyond Latin-1 (rare), whose stretches are coded one by one."""
        if self._last_stretches[0] == quote_key:
            return self._last_stretches[1]
        import numpy

        found = self._gram_filter
        count = len(quote_key) - GRAM + 1
        if count <= 0:
            return b""
        codes = gram_codes(quote_key, numpy.arange(count))
        table, bits = numpy.frombuffer(found[0], dtype=numpy.uint8), found[1]
        hashed = codes * numpy.uint64(_BUCKET_MULTIPLIER)  # modulo 2**64, as the filter was built
        low = hashed >> numpy.uint64(64 - bits)
        high = (hashed >> numpy.uint64(64 - 2 * bits)) & numpy.uint64((1 << bits) - 1)
        three, seven = numpy.uint64(3), numpy.uint64(7)
        present = ((table[(low >> three).astype(numpy.intp)] >> (low & seven).astype(numpy.uint8))
                   & (table[(high >> three).astype(numpy.intp)] >> (high & seven).astype(numpy.uint8))
                   & numpy.uint8(1))
        flags: bytes = (present == 0).tobytes()
        self._last_stretches = (quote_key, flags)
        return flags

    def _first_absent(self, quote_key: str) -> int:
        """The first of the stretch starts 0, GRAM, 2 * GRAM ... (back to back) whose stretch is
        surely in neither key, or -1. Needs the filter and a key of GRAM or more.

        Tested one by one up to the first absent stretch (a fabrication usually stops early);
        the answer is kept for the key's next tests, and answers those of a start of it too."""
        last_key, last = self._last_absent
        if last_key.startswith(quote_key):
            return last if last + GRAM <= len(quote_key) else -1
        found = self._gram_filter
        table, bits = found
        try:
            data = quote_key.encode("latin-1")
        except UnicodeEncodeError:
            at = self._absent_stretches(quote_key)[::GRAM].find(1)
            at = at * GRAM if at >= 0 else -1
        else:
            at = -1
            first, second, mask = 64 - bits, 64 - 2 * bits, (1 << bits) - 1
            for number, code in enumerate(struct.unpack_from(f"<{(len(data) - GRAM) // GRAM + 1}Q", data)):
                hashed = (code * _BUCKET_MULTIPLIER) & _UINT64
                low, high = hashed >> first, (hashed >> second) & mask
                if not (table[low >> 3] >> (low & 7) & 1 and table[high >> 3] >> (high & 7) & 1):
                    at = number * GRAM
                    break
        self._last_absent = (quote_key, at)
        return at

    def _absent_row(self, data: bytes, at: int) -> bool:
        """Whether the stretch starts around ``at`` (one surely absent) in ``data`` (a key's Latin-1
        bytes) hold GRAM in a row that are all surely absent, tested one by one."""
        found = self._gram_filter
        table, bits = found
        first, second, mask = 64 - bits, 64 - 2 * bits, (1 << bits) - 1
        row = 1
        for step, stop in ((1, min(len(data) - GRAM, at + GRAM - 1) + 1), (-1, max(-1, at - GRAM))):
            for start in range(at + step, stop, step):
                hashed = (int.from_bytes(data[start : start + GRAM], "little") * _BUCKET_MULTIPLIER) & _UINT64
                low, high = hashed >> first, (hashed >> second) & mask
                if table[low >> 3] >> (low & 7) & 1 and table[high >> 3] >> (high & 7) & 1:
                    break  # present: the row ends here
                row += 1
            if row >= GRAM:
                return True
        return False

    def _absent_row_around(self, part_key: str, low: int, high: int) -> bool:
        """Whether GRAM stretch starts in a row of ``part_key``, all surely absent from the paper's
        keys, hold a stretch that covers a character of ``part_key[low : high + 1]`` (a row proves
        the part cannot be located; see :meth:`_may_be_located`). The first absent of those
        stretches is looked for, then its row: each stretch tested on its own, a few in all."""
        table, bits = self._gram_filter
        first, second, mask = 64 - bits, 64 - 2 * bits, (1 << bits) - 1
        try:
            data: bytes | None = part_key.encode("latin-1")
        except UnicodeEncodeError:
            data = None  # rare: stretches with another character are coded one by one

        def absent(start: int) -> bool:
            if data is not None:
                code = int.from_bytes(data[start : start + GRAM], "little")
            else:
                code = gram_code(part_key[start : start + GRAM])
            hashed = (code * _BUCKET_MULTIPLIER) & _UINT64
            low_bit, high_bit = hashed >> first, (hashed >> second) & mask
            return not (table[low_bit >> 3] >> (low_bit & 7) & 1 and table[high_bit >> 3] >> (high_bit & 7) & 1)

        last = len(part_key) - GRAM
        for start in range(max(0, low - GRAM + 1), min(high, last) + 1):
            if absent(start):
                after = start + 1
                while after <= min(last, start + GRAM - 1) and absent(after):
                    after += 1
                before = start
                while before > max(0, after - GRAM) and absent(before - 1):
                    before -= 1
                return after - before >= GRAM
        return False

    def _may_be_located(self, part_key: str) -> bool:
        """False when ``part_key`` surely cannot be located, gaps allowed (see :func:`.alignment.locate`).

        A located part is a run of the paper's key, then runs resumed after a gap, each at
        least GRAM key characters long (MIN_GAPPED_ANCHOR, the 8 characters checked after a
        number, MIN_RESUMED_RUN, MIN_ANCHOR) but the last, which ends the part. So of any GRAM
        consecutive stretch starts, one starts a stretch inside a run: a part with GRAM starts
        in a row whose stretches are all absent (a changed word, digit or phrase leaves
        GRAM - 1 + its length) is not in the paper. Such a row holds one of the starts 0, GRAM,
        2 * GRAM ...: only around those found absent is a row looked for."""
        if len(part_key) - GRAM + 1 < GRAM:
            return True
        at = self._first_absent(part_key)
        if at < 0:
            return True  # no start 0, GRAM, 2 * GRAM ... absent: no row
        try:
            data = part_key.encode("latin-1")
        except UnicodeEncodeError:
            return _ABSENT_ROW not in self._absent_stretches(part_key)
        table, bits = self._gram_filter
        first, second, mask = 64 - bits, 64 - 2 * bits, (1 << bits) - 1
        while at >= 0:
            if self._absent_row(data, at):
                return False  # most fabrications: the changed word around the first absent start
            at += GRAM  # the next absent one of the starts 0, GRAM, 2 * GRAM ...
            while at <= len(data) - GRAM:
                hashed = (int.from_bytes(data[at : at + GRAM], "little") * _BUCKET_MULTIPLIER) & _UINT64
                low, high = hashed >> first, (hashed >> second) & mask
                if not (table[low >> 3] >> (low & 7) & 1 and table[high >> 3] >> (high & 7) & 1):
                    break
                at += GRAM
            else:
                at = -1
        return True

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

