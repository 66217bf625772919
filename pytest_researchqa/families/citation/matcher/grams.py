"""Where a string occurs in a paper's key, without a scan: every GRAM-character stretch by position.

A :class:`GramIndex` files every position of a key by a code of the GRAM key characters that
start there (their Latin-1 bytes, packed; a hash for the rare stretch with another character),
spread over buckets by a multiplicative hash. Any string of GRAM or more key characters starts
where one of its stretches does: the few positions in that stretch's bucket are the only
candidates, each checked by comparing the key there. So a look-up costs a probe and a few
comparisons where ``str.find`` reads the key to the end, and answers the same (tested against it).

About 5-6 bytes a key character (4 a position, 1-2 for the bucket bounds), built with a sort
(about 3 ms for a 45 KB paper) on demand: until then each look-up is a scan of the key (``str.find``,
about 10 us for the whole of such a key), and the table is built once the scans have read
:data:`SCANS_BEFORE_BUILDING` times the key (:meth:`GramIndex.build` builds it at once). A paper whose
citations are all found as they are (a reference system's, a few rows a paper) never builds it; one
searched for fabrications builds it after a few of them. Both ways answer alike (tested).
"""

from __future__ import annotations

import array
import bisect
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # pragma: no cover
    import numpy
    from numpy.typing import NDArray

GRAM = 8
_GRAM_BASE = 1_000_003
BUCKET_MULTIPLIER = 0x9E3779B97F4A7C15  # Fibonacci hashing: spreads packed grams over the buckets
UINT64 = (1 << 64) - 1
# A stretch whose bucket holds more positions than this is looked past for a rarer one of the string.
_CROWDED = 16
# Look-ups are scans of the key until they have read this many times its length; then the table is
# built (its sort costs about 300 scans of the whole key): scans cost at most a small part of it.
SCANS_BEFORE_BUILDING = 32


class GramIndex:
    """Every position of ``key``, filed by the GRAM characters that start there.

    :meth:`find`, :meth:`rfind` and :meth:`occurrences` answer what ``key.find``, ``key.rfind``
    and repeated ``key.find`` calls would, for any string and bounds (none negative).
    """

    __slots__ = ("key", "_starts", "_bounds", "_shift", "_last", "_unscanned")

    def __init__(self, key: str, *, lazy: bool = False) -> None:
        self.key = key
        self._last: tuple[str, int] = ("", -1)  # the last string looked for in the whole key, and where
        self._starts: array.array[int] | None = None
        self._bounds: array.array[int] = array.array("i")
        self._shift = 64
        # Characters the scans may still read before the table is built.
        self._unscanned = SCANS_BEFORE_BUILDING * len(key)
        if not lazy:
            self.build()

    @property
    def built(self) -> bool:
        """Whether the table is built (look-ups are probes, not scans)."""
        return self._starts is not None

    def build(self) -> "GramIndex":
        """Build the table now (once; a lazy index builds it when its scans have read enough)."""
        if self._starts is not None:
            return self
        key = self.key
        count = len(key) - GRAM + 1
        bits = max(4, max(count, 1).bit_length() - 2)  # two to four positions a bucket
        self._shift = 64 - bits
        if count <= 0:
            self._bounds = array.array("i", bytes(4 * ((1 << bits) + 1)))
            self._starts = array.array("i")
            return self
        import numpy

        codes = all_gram_codes(key)
        with numpy.errstate(over="ignore"):
            buckets = (codes * numpy.uint64(BUCKET_MULTIPLIER)) >> numpy.uint64(self._shift)
        # By bucket, and within one by position: one sort of (bucket, position) packed in 64 bits
        # (a value sort is several times faster than a stable argsort), the bounds from a count.
        packed = numpy.sort((buckets << numpy.uint64(32)) | numpy.arange(count, dtype=numpy.uint64))
        bounds = numpy.zeros((1 << bits) + 1, dtype=numpy.int64)
        numpy.cumsum(numpy.bincount(buckets.astype(numpy.intp), minlength=1 << bits), out=bounds[1:])
        # array.array: 4 bytes an entry, read in C (a list of ints costs ~8x more).
        self._bounds = array.array("i", bounds.astype(numpy.int32).tobytes())
        self._starts = array.array("i", (packed & numpy.uint64(0xFFFFFFFF)).astype(numpy.int32).tobytes())
        return self

    def drop(self) -> None:
        """Free the table (the key stays); look-ups scan again, and build it again when they have read enough."""
        self._starts, self._bounds, self._shift = None, array.array("i"), 64
        self._unscanned = SCANS_BEFORE_BUILDING * len(self.key)
        self._last = ("", -1)

    def _scanned(self, characters: int) -> bool:
        """Count a scan's characters; True when the table is (now) built."""
        if self._starts is not None:
            return True
        self._unscanned -= characters
        if self._unscanned < 0:
            self.build()
            return True
        return False

    def nbytes(self) -> int:
        """Memory held by the index itself (the key aside)."""
        if self._starts is None:
            return 0
        return self._starts.itemsize * (len(self._starts) + len(self._bounds))

    def _bucket(self, text: str, at: int) -> tuple[int, int]:
        """The span of ``_starts`` filed under the GRAM characters of ``text`` at ``at``."""
        gram = text[at : at + GRAM]
        try:
            code = int.from_bytes(gram.encode("latin-1"), "little")
        except UnicodeEncodeError:
            code = gram_code(gram)
        bucket = ((code * BUCKET_MULTIPLIER) & UINT64) >> self._shift
        return self._bounds[bucket], self._bounds[bucket + 1]

    def _candidates(self, text: str, low: int) -> tuple[array.array[int], int]:
        """Positions (ascending) among which every occurrence of ``text`` at or after ``low`` starts,
        each moved by the returned offset: the rarest of a few of its stretches."""
        first, last = self._bucket(text, 0)
        offset = 0
        if last - first > _CROWDED and len(text) >= 2 * GRAM:
            for at in (len(text) - GRAM, (len(text) - GRAM) // 2):
                other_first, other_last = self._bucket(text, at)
                if other_last - other_first < last - first:
                    first, last, offset = other_first, other_last, at
        assert self._starts is not None  # built: the callers checked
        starts = self._starts[first:last]
        if low + offset > 0:
            starts = starts[bisect.bisect_left(starts, low + offset):]
        return starts, offset

    def find(self, text: str, low: int = 0, high: int | None = None) -> int:
        """``key.find(text, low, high)``."""
        key, table = self.key, self._starts
        if table is None:
            return self._scan_find(text, max(low, 0), high)
        if not low and (high is None or high >= len(key)) and len(text) >= GRAM:
            # The whole key (most look-ups), its first stretch's bucket inline: the hot path of every exact hit.
            if text is self._last[0]:
                return self._last[1]  # the same key object again (a quote not found as it is, searched for again)
            first, last = self._bucket_bounds(text)
            if last - first <= _CROWDED:
                found = -1
                for start in table[first:last]:
                    if key.startswith(text, start):
                        found = start
                        break
                self._last = (text, found)
                return found
            starts = self.starts(text, 1)  # a crowded first stretch: the rarest of three
            return starts[0] if starts else -1
        return next(self.occurrences(text, low, high), -1)

    def _bucket_bounds(self, text: str) -> tuple[int, int]:
        """Where the starts of ``text``'s first stretch lie in the table: its bucket's slice."""
        try:
            code = int.from_bytes(text[:GRAM].encode("latin-1"), "little")
        except UnicodeEncodeError:
            code = gram_code(text)
        bucket = ((code * BUCKET_MULTIPLIER) & UINT64) >> self._shift
        return self._bounds[bucket], self._bounds[bucket + 1]

    def find_or_starts(self, text: str, anchor: int) -> tuple[int, list[int] | None]:
        """``(find(text), None)`` where ``text`` (at least GRAM characters) is in the whole key; else ``(-1,
        starts)``: every start of ``text[:anchor]`` (``anchor`` at least GRAM), ascending, as :meth:`starts` gives
        them, read from the bucket the look-up has just compared (every start of ``text``'s first stretch is
        there), or None where that bucket is crowded or the table is not built (then ask :meth:`starts`).
        A quote not found as it is is read on from where it stops (its stuck point) without a second look-up."""
        table = self._starts
        if table is None:
            return self.find(text), None
        first, last = self._bucket_bounds(text)
        if last - first > _CROWDED:
            return self.find(text), None
        key = self.key
        candidates = table[first:last]
        for start in candidates:
            if key.startswith(text, start):
                self._last = (text, start)
                return start, None
        self._last = (text, -1)
        head = text[:anchor]
        return -1, [start for start in candidates if key.startswith(head, start)]

    def starts(self, text: str, most: int) -> list[int]:
        """The first ``most`` starts of ``text`` in the whole key, ascending: what the first ``most``
        of ``occurrences(text)`` are, in one call (no generator, no bounds to apply). The candidates
        are those of the rarest of the stretches at the string's start, end and middle."""
        table = self._starts
        length = len(text)
        if table is None or length < GRAM:
            found = []
            for start in self.occurrences(text):
                found.append(start)
                if len(found) >= most:
                    break
            return found
        bounds, shift = self._bounds, self._shift
        try:
            code = int.from_bytes(text[:GRAM].encode("latin-1"), "little")
        except UnicodeEncodeError:
            code = gram_code(text)
        bucket = ((code * BUCKET_MULTIPLIER) & UINT64) >> shift
        first, last = bounds[bucket], bounds[bucket + 1]
        offset = 0
        if last - first > _CROWDED and length > GRAM:
            for at in (length - GRAM, (length - GRAM) // 2):
                other_first, other_last = self._bucket(text, at)
                if other_last - other_first < last - first:
                    first, last, offset = other_first, other_last, at
        key = self.key
        found = []
        for start in table[first:last]:
            # A start before the offset would be a negative index, which startswith reads from the end.
            if start >= offset and key.startswith(text, start - offset):
                found.append(start - offset)
                if len(found) >= most:
                    break
        return found

    def _scan_find(self, text: str, low: int, high: int | None) -> int:
        """``find`` before the table is built: a scan, counted."""
        key = self.key
        whole = not low and (high is None or high >= len(key)) and len(text) >= GRAM
        if whole and text is self._last[0]:
            return self._last[1]
        found = key.find(text, low, high)
        end = len(key) if high is None else min(high, len(key))
        self._scanned(found + len(text) - low if found >= 0 else end - low)
        if whole:
            self._last = (text, found)
        return found

    def occurrences(self, text: str, low: int = 0, high: int | None = None) -> Iterator[int]:
        """Every start of ``text`` in ``key[low:high]``, ascending (overlapping ones too), as
        repeated ``key.find(text, previous + 1, high)`` calls give them."""
        key = self.key
        if high is None or high > len(key):
            high = len(key)
        low = max(low, 0)
        if len(text) < GRAM:
            found = key.find(text, low, high)
            while found >= 0:
                yield found
                found = key.find(text, found + 1, high)
            return
        if self._starts is None:
            yield from self._scan_occurrences(text, low, high)
            return
        starts, offset = self._candidates(text, low)
        last = high - len(text) + offset
        for start in starts:
            if start > last:
                return
            if key.startswith(text, start - offset):
                yield start - offset

    def _scan_occurrences(self, text: str, low: int, high: int) -> Iterator[int]:
        """``occurrences`` before the table is built: scans, counted."""
        key, at = self.key, low
        found = key.find(text, low, high)
        while found >= 0:
            self._scanned(found + len(text) - at)
            yield found
            at = found + 1
            found = key.find(text, at, high)
        self._scanned(max(high - at, 0))

    def rfind(self, text: str, low: int = 0, high: int | None = None) -> int:
        """``key.rfind(text, low, high)``."""
        if self._starts is None:
            low = max(low, 0)
            found = self.key.rfind(text, low, high)
            end = len(self.key) if high is None else min(high, len(self.key))
            self._scanned(end - found if found >= 0 else end - low)
            return found
        last = -1
        for start in self.occurrences(text, low, high):
            last = start
        return last


def gram_codes(key: str, starts: NDArray[numpy.intp]) -> NDArray[numpy.uint64]:
    """:func:`gram_code` of the GRAM characters at each of ``starts`` (a numpy array), at once."""
    import numpy

    points = numpy.frombuffer(key.encode("utf-32-le"), dtype=numpy.uint32).astype(numpy.uint64)
    grams = numpy.stack([points[starts + i] for i in range(GRAM)])
    packed = numpy.zeros(len(starts), dtype=numpy.uint64)
    hashed = numpy.zeros(len(starts), dtype=numpy.uint64)
    with numpy.errstate(over="ignore"):
        for i in range(GRAM):
            packed |= grams[i] << numpy.uint64(8 * i)
            hashed = hashed * numpy.uint64(_GRAM_BASE) + grams[i]
    # Latin-1 grams (nearly all) are packed exactly; others are hashed, top bit set.
    return numpy.where((grams < 256).all(axis=0), packed, hashed | numpy.uint64(1 << 63))


def all_gram_codes(key: str) -> NDArray[numpy.uint64]:
    """:func:`gram_code` of every GRAM characters of ``key``: its Latin-1 bytes read eight at a
    time from each offset, then the few stretches holding another character coded apart."""
    import numpy

    if len(key) < GRAM:
        return numpy.zeros(0, dtype=numpy.uint64)
    data = key.encode("latin-1", "replace")
    codes: NDArray[numpy.uint64] = numpy.ndarray((len(data) - GRAM + 1,), dtype="<u8", buffer=data, strides=(1,)).copy()
    if not key.isascii():
        others = numpy.flatnonzero(numpy.frombuffer(key.encode("utf-32-le"), dtype=numpy.uint32) > 255)
        if len(others):
            starts = numpy.unique((others[:, None] - numpy.arange(GRAM)).ravel())
            starts = starts[(starts >= 0) & (starts < len(codes))]
            codes[starts] = gram_codes(key, starts)
    return codes


def gram_code(key: str) -> int:
    """The code of a key's first GRAM characters, as :func:`all_gram_codes` gives it."""
    gram = key[:GRAM]
    try:
        return int.from_bytes(gram.encode("latin-1"), "little")
    except UnicodeEncodeError:
        code = 0
        for char in gram:
            code = (code * _GRAM_BASE + ord(char)) & 0xFFFFFFFFFFFFFFFF
        return code | (1 << 63)
