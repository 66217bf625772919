"""The citation matcher: is a quoted citation really in the paper?

Quotes and paper are compared on match keys (see :mod:`textkey`), so
extraction noise cannot cause a miss while any changed letter or digit does.
On top of exact key search the matcher accepts exactly three kinds of
legitimate departure, and nothing else:

* a gap in the paper that is page furniture: a page break (footers, headers,
  footnotes; see ``_after_page_break``) or a short run of digits
  (margin line numbers, page numbers, citation markers);
* an elision mark in the quote (``...``, ``…``, ``[...]``, ``(...)``) whose
  parts are each verbatim, in order, within ``ELISION_WINDOW`` of each other;
* a verbatim quote followed by a clearly separated comment of the model's own.

Everything else is not grounded; *why* (altered, stitched, paraphrase, not
found) is worked out lazily, only when someone reads the verdict.
"""

from __future__ import annotations

import array
import bisect
import functools
import re
import struct
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol, Sequence, Union

from .textkey import common_prefix_length, has_digit, key_offsets, part_keys, text_key


class HasMatchIndex(Protocol):
    """A paper as the fixtures give it (:class:`~pytest_researchqa.papers.Paper`): prepared once."""

    @property
    def match_index(self) -> "MatchIndex": ...

# Quotes shorter than this (in key characters) prove nothing about a paper.
MIN_QUOTE_KEY = 10
# A verbatim piece this long anchors a page-break walk or a commentary split.
MIN_ANCHOR = 20
# A shorter anchor serves only where a short number glued into the paper ends it (see _locate).
MIN_GAPPED_ANCHOR = 12
# A quote may run over at most this many page breaks; between its parts the
# paper may hold footnotes and a footer (before the break) and a header after.
MAX_PAGE_JUMPS = 2
PAGE_TAIL_LIMIT = 1500
PAGE_HEAD_LIMIT = 300
MIN_RESUMED_RUN = 12
DIGIT_GAP_LIMIT = 6
ELISION_WINDOW = 4000
# A comment after a verbatim quote that matches what the paper says next this closely (rapidfuzz
# partial ratio on words, 0-100) is the paper's next sentence edited, not the model's own words.
PARAPHRASE_OF_NEXT = 70
_NEAR = 400  # key characters: where an elided part is looked for first
# Papers whose key is at least this long get a word-start index for exact look-ups, built when the
# paper is prepared (about 1.5 ms for a 30k-character key; a scan of that key costs ~3 us a look-up).
INDEX_MIN_KEY = 8_000
GRAM = 8
# Bloom filter bits a GRAM-character stretch of such a paper (two set each): about 1% false "present".
FILTER_BITS_PER_GRAM = 16
_GRAM_BASE = 1_000_003
_BUCKET_MULTIPLIER = 0x9E3779B97F4A7C15  # Fibonacci hashing: spreads packed grams over the buckets
_UINT64 = (1 << 64) - 1

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

# Led by a bracket, a full stop or an ellipsis (not by optional space, which would make the regex
# engine try every position): the spaces around a mark are stripped from the parts instead.
_ELISION = re.compile(r"[\[(]\s*(?:(?:\.\s*){3,}|…)\s*[\])]|(?:\.\s*){3,}|…")
# Where a model's own comment may start after a verbatim quote.
_HARD_SEPARATOR = re.compile(r"\s+[—–-]{1,2}\s+|\s*[—–]\s*|\s*[(\[]\s*|[:;]\s+")
_SEPARATOR_CHAR = re.compile(r"[—–(\[:;-]")
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*\s+")
_COMMENT_OPENER = re.compile(
    r"(?:this|these|that|those|which|i\.?e\.?|e\.?g\.?|in other words|here|thus|so|hence|"
    r"therefore|meaning|note|notably|indicating|suggesting|showing|in short|overall|"
    r"essentially|importantly|the authors?|according|as (?:shown|noted|stated))\b",
    re.IGNORECASE,
)
_PAGE_NUMBER_LINE = re.compile(
    r"^\s*(?:page\s*)?(?:\d{1,4}|[ivxlc]{1,6})(?:\s*(?:of|/)\s*\d{1,4})?\s*$", re.IGNORECASE
)
_NUMBERED_LINE = re.compile(r"^([ \t]*)(\d{1,4})([ \t]+)\S", re.MULTILINE)
_NUMBERED_LINE_START = re.compile(r"\n[ \t]*\d{1,4}[ \t]+\S")


_DROP_DIGITS = str.maketrans("", "", "0123456789")
# Citations that only point somewhere: an author-year or numbered reference, a DOI, a URL, an
# arXiv id, a figure or table label. They cannot support a claim, so they never count.
_REFERENCE_ONLY = re.compile(
    r"\(?\s*(?:[A-Z][\w'\-]+(?:\s+(?:and|&)\s+[A-Z][\w'\-]+)?(?:\s+et\s+al\.?)?,?\s+\(?(?:19|20)\d\d[a-z]?\)?"
    r"(?:\s*[;,]\s*[A-Z][\w'\-]+(?:\s+et\s+al\.?)?,?\s+(?:19|20)\d\d[a-z]?)*"
    r"|\[\s*\d+(?:\s*[-–,]\s*\d+)*\s*\]"
    r"|(?:https?://|www\.|doi\.org/|doi:\s*)\S+"
    r"|10\.\d{4,9}/\S+"
    r"|arXiv:\s*\d{4}\.\d{4,5}(?:v\d+)?"
    r"|(?:Figure|Fig\.|Table|Tab\.|Algorithm|Equation|Eq\.|Section|Appendix)\s*[A-Z]?\d+(?:\.\d+)*[a-z]?:?"
    r")\s*\)?",
    re.IGNORECASE,
)
_REFERENCES_HEADING = re.compile(
    r"(?m)^\s*(?:\d+\.?\s+)?(?:References|REFERENCES|Bibliography|BIBLIOGRAPHY|Works Cited)\s*$")
_APPENDIX_HEADING = re.compile(
    r"(?m)^\s*(?:Appendix|APPENDIX|Appendices|Supplementary|[A-H]\.?\s+[A-Z][a-z]+(?:\s+[A-Za-z]+){0,6})\s*$")
# A bibliography entry names authors and a year, a venue or an identifier.
_FULL_NAME = r"(?:[A-Z][\w'’.-]*\s+){1,3}[A-Z][\w'’-]+"
_LOOKS_LIKE_REFERENCE = re.compile(
    r"\bet al\.|\b(?:19|20)\d\d[a-z]?\b.*(?:Proceedings|Conference|Journal|arXiv|preprint|URL|doi|Press|pp\.|vol\.)"
    r"|(?:Proceedings|arXiv|preprint|doi|URL)\b.*\b(?:19|20)\d\d\b|[A-Z][a-z]+,\s+[A-Z]\.(?:\s*[A-Z]\.)*,?\s+(?:&|and)\s"
    # An entry led by its authors' full names ("Bowen Baker, Joost Huizinga, ..., and David Farhi.
    # Monitoring reasoning models ..., 2025."): names, a full stop, then a title with a year.
    rf"|^\s*{_FULL_NAME}(?:,\s+(?:and\s+)?{_FULL_NAME})*,?(?:\s+and\s+{_FULL_NAME})?\.\s+\S.*\b(?:19|20)\d\d\b"
    rf"|^\s*{_FULL_NAME}(?:,\s+(?:and\s+)?{_FULL_NAME})+,?(?:\s+and\s+{_FULL_NAME})?\.\s+[A-Z]",  # 2+ names
    re.DOTALL,
)
BIBLIOGRAPHY_LIMIT = 60_000
_REFERENCE_MAX_LENGTH = 160  # a pointer is short: longer citations skip the check
_SIGN_CHARS = "-\u2212\u2010\u2011\u2012\u2013\u2014+\u00b1"

# --------------------------------------------------------------------------- index


class MatchIndex:
    """A paper prepared once for any number of citation look-ups.

    ``text`` is the raw extracted text; ``page_starts`` the raw offset at which
    each page begins (empty for papers that have no pages).
    """

    def __init__(self, text: str, page_starts: Sequence[int] = ()) -> None:
        self.text = text
        self.page_starts: tuple[int, ...] = tuple(page_starts)
        masked_pages, self.masked_ranges = _mask_furniture(text, self.page_starts)
        page_keys = [text_key(page) for page in masked_pages]
        self.key = "".join(page_keys)
        self.page_key_starts = _running_starts(page_keys)
        if self.masked_ranges:
            unmasked = [text_key(page) for page in _split_pages(text, self.page_starts)]
            self.unmasked_key = "".join(unmasked)
            self.unmasked_page_key_starts = _running_starts(unmasked)
        else:
            self.unmasked_key = self.key
            self.unmasked_page_key_starts = self.page_key_starts
        self._memo: dict[str, CitationMatch] = {}
        self._span_memo: dict[str, tuple[tuple[int, int], ...] | None] = {}
        self._absent_hint: tuple[str, int] = ("", -1)
        self._gram_index  # noqa: B018 -- built with the paper, not on the first look-up

    # -- public look-ups -----------------------------------------------------------
    def match(self, citation: str) -> "CitationMatch":
        """Match one citation; repeated citations are answered from a memo."""
        found = self._memo.get(citation)
        if found is None:
            found = self._exact_hit(citation) or self._match(citation)
            self._memo[citation] = found
        return found

    def _exact_hit(self, citation: str) -> "CitationMatch | None":
        """The common case at the cost of a key and one indexed look-up: a quote without elision
        marks whose key occurs in the paper as it is, not cut from a number, outside the
        reference list, and more than a pointer. None sends the citation down the full path."""
        # Wrapping quotes, spaces and a leading or trailing ellipsis (it only marks a cut) hold no
        # key characters: one strip removes them all.
        inner = citation.strip(_EDGES)
        if "\u2026" in inner or ".." in inner or ". ." in inner:
            return self._exact_elided(citation, inner)
        quote_key = text_key(inner)
        if len(quote_key) < MIN_QUOTE_KEY:
            return None
        at = self.find(quote_key)
        if at < 0:
            return None
        return self._exact_result(citation, [quote_key], ((at, at + len(quote_key)),), VERBATIM)

    def _exact_elided(self, citation: str, inner: str) -> "CitationMatch | None":
        """An elided quote whose parts occur as they are: its longest part looked up, each other
        part found by one bounded search within ELISION_WINDOW of its neighbour, in order."""
        if ". ." in inner:
            return None  # spaced dots: the full path's pattern reads them
        # Split at the marks with C string methods (the elision pattern costs a regex step per
        # character): brackets of "[...]" and the dots of "...." are no key characters anyway.
        keys = [part_key for part_key in part_keys(inner) if part_key]
        if len(keys) < 2:
            return None
        anchor = keys.index(max(keys, key=len))
        key = self.key
        at = self.find(keys[anchor])
        if at < 0:
            return None
        spans = [(at, at + len(keys[anchor]))]
        for part in reversed(keys[:anchor]):
            start = spans[0][0]
            # Most elisions skip a few words: look just before first, then over the whole window.
            found = key.rfind(part, max(0, start - _NEAR - len(part)), start)
            if found < 0:
                found = key.rfind(part, max(0, start - ELISION_WINDOW - len(part)), start)
            if found < 0:
                return None
            spans.insert(0, (found, found + len(part)))
        for part in keys[anchor + 1 :]:
            end = spans[-1][1]
            found = key.find(part, end, end + _NEAR + len(part))
            if found < 0:
                found = key.find(part, end, end + ELISION_WINDOW + len(part))
            if found < 0:
                return None
            spans.append((found, found + len(part)))
        return self._exact_result(citation, keys, tuple(spans), VERBATIM_ELIDED)

    def _exact_result(self, citation: str, keys: list[str], spans: tuple[tuple[int, int], ...],
                      verdict: str) -> "CitationMatch | None":
        if verdict is VERBATIM_ELIDED and sum(map(len, keys)) < MIN_QUOTE_KEY:
            return None
        if (keys[0][0].isdigit() or keys[-1][-1].isdigit()) and self._cuts_a_number(keys, spans, False):
            return None
        region = self._bibliography
        if region is not None and region[0] <= spans[0][0] and spans[-1][1] <= region[1]:
            return None  # may be a reference-list entry: the full path decides
        # Every pointer _REFERENCE_ONLY knows holds a digit (a year, a reference number, a DOI, a
        # label's number) or is a web address: a cheaper test first.
        if (len(citation) < _REFERENCE_MAX_LENGTH
                and (has_digit(citation) or "://" in citation or "ww." in citation or "WW." in citation)
                and _REFERENCE_ONLY.fullmatch(_strip_wrapping(citation).rstrip(".;,"))):
            return None
        return CitationMatch(citation, self, True, verdict, spans)

    def passage_spans(self, passage: str) -> tuple[tuple[int, int], ...] | None:
        """Key spans of an expected passage, or None when it is not in the paper."""
        if passage not in self._span_memo:
            result = self.match(passage)
            self._span_memo[passage] = result.key_spans if result.grounded else None
        return self._span_memo[passage]

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
    def _masked_offsets(self):
        return key_offsets(self.masked_text)

    @functools.cached_property
    def _unmasked_offsets(self):
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
    def _flow(self) -> "_Flow":
        """Line starts and sentence flow of the masked text."""
        return _Flow(self._masked_offsets, self.masked_text)

    @functools.cached_property
    def _unmasked_flow(self) -> "_Flow":
        return _Flow(self._unmasked_offsets, self.text) if self.masked_ranges else self._flow

    @functools.cached_property
    def _gram_index(self) -> tuple[array.array[int], array.array[int], int] | None:
        """Word starts of a long paper's key, filed by a code of their first GRAM characters.

        Quotes start at a word: looking one up by its first characters costs a few probes of a
        small bucket instead of a scan of the whole paper. Codes are spread over buckets by a
        multiplicative hash. Built once, with the paper, for papers of INDEX_MIN_KEY or more.
        """
        key = self.key
        if len(key) < INDEX_MIN_KEY:
            return None
        import numpy

        offsets = self._masked_offsets
        starts = numpy.concatenate(([0], numpy.flatnonzero(numpy.diff(offsets) > 1) + 1))
        starts = starts[starts <= len(key) - GRAM]
        codes = _gram_codes(key, starts)
        # About two word starts a bucket: a look-up reads one or two cache lines, not a binary search's dozen.
        bits = max(8, int(len(starts)).bit_length() - 1)
        with numpy.errstate(over="ignore"):
            buckets = (codes * numpy.uint64(_BUCKET_MULTIPLIER)) >> numpy.uint64(64 - bits)
        # By bucket, and within one by position (a stable sort of ascending starts): the first entry
        # of a bucket with the quote's code and text is its first occurrence.
        order = numpy.argsort(buckets, kind="stable")
        bounds = numpy.searchsorted(buckets[order], numpy.arange((1 << bits) + 1))
        # array.array: 4 bytes an entry (a list of ints costs ~8x more), read in C. No codes are kept:
        # a bucket holds one or two starts, and comparing the key there is as cheap as a code.
        return (array.array("i", starts[order].astype(numpy.int32).tobytes()),
                array.array("i", bounds.astype(numpy.int32).tobytes()), 64 - bits)

    def find(self, quote_key: str) -> int:
        """Where ``quote_key`` first occurs in the (masked) key, or -1."""
        index = self._gram_index
        if index is None or len(quote_key) < GRAM:
            return self.key.find(quote_key)
        starts, bounds, shift = index
        try:  # _gram_code's common case, inline: this is the hot path of every exact hit
            code = int.from_bytes(quote_key[:GRAM].encode("latin-1"), "little")
        except UnicodeEncodeError:
            code = _gram_code(quote_key)
        bucket = ((code * _BUCKET_MULTIPLIER) & _UINT64) >> shift
        key = self.key
        for start in starts[bounds[bucket] : bounds[bucket + 1]]:  # positions ascending
            if key.startswith(quote_key, start):
                return start
        if not self._may_occur(quote_key):
            return -1  # no scan for a quote the paper surely lacks
        return key.find(quote_key)  # a quote that does not start at a word

    @functools.cached_property
    def _gram_filter(self) -> tuple[bytes, int] | None:
        """Every GRAM-character stretch of the paper's keys (masked and unmasked), as a Bloom filter:
        two bits of a table of 2**bits (at least FILTER_BITS_PER_GRAM a stretch) set for each.

        A stretch it lacks is in neither key, so a citation can be turned down without a scan of
        the paper (:meth:`_may_be_located`); a stretch it holds may still be absent (about 1% of
        the time), which only sends that citation down the full path. Built on the first
        citation that is not found as it is (about half the cost of preparing the paper; exact
        quotes, a reference system's all, never need it).
        """
        if len(self.key) < INDEX_MIN_KEY:
            return None  # a short paper is scanned faster than filtered
        import numpy

        keys = [self.key] if self.unmasked_key is self.key else [self.key, self.unmasked_key]
        codes = numpy.concatenate([_all_gram_codes(key) for key in keys])
        bits = min(32, max(10, (len(self.key) * FILTER_BITS_PER_GRAM).bit_length()))
        flags = numpy.zeros(1 << bits, dtype=bool)
        with numpy.errstate(over="ignore"):
            hashed = codes * numpy.uint64(_BUCKET_MULTIPLIER)
        flags[hashed >> numpy.uint64(64 - bits)] = True
        flags[(hashed >> numpy.uint64(64 - 2 * bits)) & numpy.uint64((1 << bits) - 1)] = True
        return numpy.packbits(flags, bitorder="little").tobytes(), bits

    def _absent(self, quote_key: str, starts: range) -> list[bool]:
        """For each of ``starts``, whether the GRAM characters of ``quote_key`` there are surely
        in neither of the paper's keys (all False without a filter)."""
        found = self._gram_filter
        if found is None or not starts:
            return [False] * len(starts)
        table, bits = found
        try:
            data = quote_key.encode("latin-1")
        except UnicodeEncodeError:  # rare: each stretch coded on its own
            codes: Iterable[int] = [_gram_code(quote_key[at : at + GRAM]) for at in starts]
        else:
            if starts.step == GRAM:  # back to back: one unpack
                codes = struct.unpack_from(f"<{len(starts)}Q", data, starts.start)
            else:
                codes = [int.from_bytes(data[at : at + GRAM], "little") for at in starts]
        first, second, mask = 64 - bits, 64 - 2 * bits, (1 << bits) - 1
        absent = []
        for code in codes:
            hashed = (code * _BUCKET_MULTIPLIER) & _UINT64
            low, high = hashed >> first, (hashed >> second) & mask
            absent.append(not (table[low >> 3] >> (low & 7) & 1 and table[high >> 3] >> (high & 7) & 1))
        return absent

    def _first_absent(self, quote_key: str) -> int:
        """The first of the stretch starts 0, GRAM, 2 * GRAM ... whose stretch is surely in
        neither key, or -1. Remembered for the quote's next test, which starts there."""
        step = 4 * GRAM  # a few stretches at a time: a fabrication usually stops early
        for low in range(0, len(quote_key) - GRAM + 1, step):
            starts = range(low, min(low + step, len(quote_key) - GRAM + 1), GRAM)
            for at, absent in zip(starts, self._absent(quote_key, starts)):
                if absent:
                    self._absent_hint = (quote_key, at)
                    return at
        return -1

    def _may_occur(self, quote_key: str) -> bool:
        """False when ``quote_key`` is surely in neither key (one of its stretches is not)."""
        return self._first_absent(quote_key) < 0

    def _absent_row(self, part_key: str, at: int) -> bool:
        """Whether GRAM stretch starts in a row around the absent one at ``at`` are all absent."""
        last = len(part_key) - GRAM
        after = self._absent(part_key, range(at + 1, min(last, at + GRAM - 1) + 1))
        row = 1 + next((i for i, absent in enumerate(after) if not absent), len(after))
        if row >= GRAM:
            return True
        before = self._absent(part_key, range(at - 1, max(-1, at - GRAM), -1))
        return row + next((i for i, absent in enumerate(before) if not absent), len(before)) >= GRAM

    def _may_be_located(self, part_key: str) -> bool:
        """False when ``part_key`` surely cannot be located, gaps allowed (see :func:`_locate`).

        A located part is a run of the paper's key, then runs resumed after a gap, each at
        least GRAM key characters long (MIN_GAPPED_ANCHOR, the 8 characters checked after a
        number, MIN_RESUMED_RUN, MIN_ANCHOR) but the last, which ends the part. So of any GRAM
        consecutive stretch starts, one starts a stretch inside a run: a part with GRAM starts
        in a row whose stretches are all absent (a changed word, digit or phrase leaves
        GRAM - 1 + its length) is not in the paper. Around the absent stretch the exact path
        found first, then around each absent one of every GRAM starts."""
        starts = len(part_key) - GRAM + 1
        if starts < GRAM or self._gram_filter is None:
            return True
        hint_key, hint = self._absent_hint
        if hint_key == part_key and self._absent_row(part_key, hint):
            return False
        probes = range(GRAM - 1, starts, GRAM)  # every GRAM starts in a row hold exactly one probe
        for probe, absent in zip(probes, self._absent(part_key, probes)):
            if absent and self._absent_row(part_key, probe):
                return False
        return True

    def _may_be_grounded(self, parts: list[str], keys: list[str]) -> bool:
        """A necessary test before the search: False only where :meth:`_match` would find neither
        a located quote nor a verbatim quote with a comment. A comment follows a verbatim start
        (one run of the paper, at least MIN_ANCHOR and half the key) and a separator."""
        if all(map(self._may_be_located, keys)):
            return True
        if len(keys) != 1 or not self._may_occur(keys[0][: max(MIN_ANCHOR, (len(keys[0]) + 1) // 2)]):
            return False
        return next(iter(_comment_boundaries(parts[0])), None) is not None

    def _find_unmasked(self, quote_key: str) -> int:
        return self.unmasked_key.find(quote_key) if self._may_occur(quote_key) else -1

    @functools.cached_property
    def masked_text(self) -> str:
        """The paper text with page furniture blanked (same length, same offsets)."""
        return _apply_mask(self.text, self.masked_ranges)

    # -- matching ---------------------------------------------------------------------
    def _match(self, citation: str) -> "CitationMatch":
        pieces = [(p, text_key(p)) for p in _split_elisions(_strip_wrapping(citation))]
        parts = [p for p, k in pieces if k]
        keys = [k for _, k in pieces if k]
        total = sum(len(k) for k in keys)
        if len(citation) < _REFERENCE_MAX_LENGTH and _REFERENCE_ONLY.fullmatch(_strip_wrapping(citation).rstrip(".;,")):
            return CitationMatch(citation, self, False, NOT_EVIDENCE, ())
        if total < MIN_QUOTE_KEY:
            return CitationMatch(citation, self, False, TOO_SHORT, ())
        if not self._may_be_grounded(parts, keys):  # most fabrications and paraphrases: no search at all
            return CitationMatch(citation, self, False, None, (), parts=tuple(parts))
        for unmasked in (False, True):
            if unmasked and self.unmasked_key is self.key:
                break
            # The unmasked key only serves quotes that copy furniture verbatim ("exhibit203").
            spans = self._locate_parts(keys, unmasked)
            if spans is not None and unmasked and self._absorbs_furniture_number(spans):
                spans = None
            if spans is not None and self._cuts_a_number(keys, spans, unmasked):
                spans = None
            if spans is not None:
                verdict = VERBATIM if len(keys) == 1 else VERBATIM_ELIDED
                if unmasked:
                    spans = self._unmasked_to_masked(spans)
                    if not spans:  # the whole quote is page furniture (a running header or footer)
                        return CitationMatch(citation, self, False, NOT_EVIDENCE, ())
                if self._in_bibliography(spans) and _LOOKS_LIKE_REFERENCE.search(citation):
                    return CitationMatch(citation, self, False, NOT_EVIDENCE, ())
                return CitationMatch(citation, self, True, verdict, spans)
        if len(parts) == 1:
            commented = self._split_commentary(parts[0])
            if commented is not None:
                spans, comment = commented
                return CitationMatch(
                    citation, self, True, VERBATIM_WITH_COMMENTARY, spans, commentary=comment
                )
        return CitationMatch(citation, self, False, None, (), parts=tuple(parts))

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
        # Key positions by the length of the key before them (cheaper than the offset map).
        before = len(text_key(self.masked_text[:start]))
        return before, before + len(text_key(self.masked_text[start:end]))

    def _in_bibliography(self, spans: Sequence[tuple[int, int]]) -> bool:
        region = self._bibliography
        return region is not None and all(region[0] <= a and b <= region[1] for a, b in spans)

    def _cuts_a_number(self, keys: list[str], spans: Sequence[tuple[int, int]], unmasked: bool) -> bool:
        """True when the quote begins or ends inside one of the paper's numbers as printed:
        ``5.355`` cut from ``−5.355``, ``61`` from ``61.4%``. It then says another number."""
        starts_with_digit, ends_with_digit = keys[0][:1].isdigit(), keys[-1][-1:].isdigit()
        if not (starts_with_digit or ends_with_digit):
            return False  # most quotes: no offsets needed
        offsets = self._unmasked_offsets if unmasked else self._masked_offsets
        text = self.text if unmasked else self.masked_text
        if starts_with_digit:
            first = int(offsets[spans[0][0]])
            before = text[first - 1] if first > 0 else ""
            decimal_before = before in ".," and first > 1 and text[first - 2].isdigit()
            if before.isdigit() or before in _SIGN_CHARS or decimal_before:
                return True
        if ends_with_digit:
            last = int(offsets[spans[-1][1] - 1]) + 1
            after = text[last:last + 2]
            if after[:1].isdigit() or after[:1] == "%" or (after[:1] in ".," and after[1:].isdigit()):
                return True
        return False

    def _absorbs_furniture_number(self, spans: Sequence[tuple[int, int]]) -> bool:
        """True when a line or page number blanked from the paper would become part of the quote's
        numbers: the quote ends with it, or it is glued to a number of the text (``0.9`` and the
        margin's ``193`` read as ``0.9193``; ``"accuracy, at 36"`` where 36 is the margin number
        before ``61.4%``). Glued between words (``"exhibit203 strong"``) or leading a quote, it
        changes no number."""
        offsets, text = self._unmasked_offsets, self.text
        quote_end = spans[-1][1]
        for start, end in spans:
            raw_start, raw_end = int(offsets[start]), int(offsets[end - 1]) + 1
            for low, high in self.masked_ranges:
                if high <= raw_start or low >= raw_end or not any(c.isdigit() for c in text[low:high]):
                    continue
                before = text[max(0, low - 2):low]
                after = text[high:high + 2]
                line_start = text.rfind("\n", 0, low) + 1
                line_end = text.find("\n", high)
                rest_of_line = text[high:line_end if line_end >= 0 else None]
                own_line = not text[line_start:low].strip() and not rest_of_line.strip()
                if end == quote_end and int(offsets.searchsorted(high)) >= end and not own_line:
                    return True  # the quote ends on it: it reads as the sentence's number
                if before[-1:].isdigit() or (before[-1:] in (".", ",") and before[:1].isdigit()):
                    return True
                if after[:1].isdigit() or after[:1] == "%" or (after[:1] in (".", ",") and after[1:].isdigit()):
                    return True
        return False

    def _unmasked_to_masked(self, spans) -> tuple[tuple[int, int], ...]:
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

    def _locate_parts(self, keys: list[str], unmasked: bool) -> tuple[tuple[int, int], ...] | None:
        key, pages = self._keys(unmasked)
        first = keys[0]
        find = self._find_unmasked if unmasked else self.find
        flow = self._unmasked_flow if unmasked else self._flow
        if len(keys) == 1:
            found = _locate(key, pages, first, 0, len(key), flow, find)
            return tuple(found) if found else None
        # An elided quote: anchor on its longest part (the most selective: a first part may be a
        # single common word, as where a paper's own "..." is quoted), at each place it occurs,
        # then find the parts before it backwards and the parts after it forwards.
        anchor = max(range(len(keys)), key=lambda at: len(keys[at]))
        start = 0
        for _ in range(20):
            head = _locate(key, pages, keys[anchor], start, len(key), flow, find if start == 0 else None)
            if head is None:
                return None
            spans = _around_anchor(key, pages, flow, keys, anchor, list(head))
            if spans is not None:
                return tuple(spans)
            start = head[0][0] + 1
        return None

    def _split_commentary(self, quote: str):
        """(spans, comment) when ``quote`` is a verbatim passage plus an own comment."""
        quote_key = text_key(quote)
        prefix_length, position = _anchored_prefix(self.key, quote_key, 0, len(self.key))
        # A comment follows a verbatim start of at least half the quote: tested before the
        # separators are looked for (a regex step per character).
        if prefix_length < MIN_ANCHOR or prefix_length >= len(quote_key) or prefix_length * 2 < len(quote_key):
            return None
        boundaries = list(_comment_boundaries(quote))
        if not boundaries:
            return None
        offsets = key_offsets(quote)
        for boundary_raw in boundaries:
            boundary = int(offsets.searchsorted(boundary_raw))
            if not (prefix_length - 6 <= boundary <= prefix_length):
                continue
            if boundary < MIN_ANCHOR or boundary * 2 < len(quote_key):
                continue
            verbatim = self.match(quote[:boundary_raw])
            if not verbatim.grounded or verbatim.verdict != VERBATIM:
                continue
            rest = quote_key[boundary:]
            follow = self.key[position + boundary : position + boundary + len(rest)]
            if _similarity(rest, follow) >= 0.6 or self._paraphrases_what_follows(quote[boundary_raw:], verbatim):
                return None  # the paper goes on almost like this: an altered or paraphrased quote
            if _mostly_in(self.key, rest):
                return None  # the rest is real text from elsewhere: stitched
            return verbatim.key_spans, quote[boundary_raw:].strip()
        return None


    def _paraphrases_what_follows(self, rest: str, verbatim: "CitationMatch") -> bool:
        """Whether ``rest`` (the words after a verbatim start) says what the paper says next, with
        words changed, dropped or moved: a model's own comment shares few words, in order, with
        the sentence the paper goes on with; a paraphrase or an edit of it shares most."""
        from rapidfuzz import fuzz

        end = verbatim.spans[-1][1] if verbatim.spans else 0
        words = _words(rest)
        following = _words(self.masked_text[end : end + 2 * len(rest) + 40])
        if fuzz.partial_ratio(words, following) >= PARAPHRASE_OF_NEXT:
            return True  # in order, a few words changed or dropped
        # Or most of its words, in another order ("attempt to demonstrations out all filter").
        rest_words, next_words = words.split(), set(following.split())
        shared = sum(1 for word in rest_words if word in next_words)
        return len(rest_words) >= 4 and shared * 100 >= PARAPHRASE_OF_NEXT * len(rest_words)


class _Flow:
    """Where the lines of a text begin (in key positions) and whether text reads on across a gap.

    A jump over text the reader interposed (a page's footer and the next page's header, a
    figure, a table, the other column) is allowed only from exactly where a line ends, where
    the text's own next line does not carry on the open sentence, to exactly where a later
    line begins, and only where the two halves read on as one sentence.
    """

    def __init__(self, offsets, text: str) -> None:
        self._offsets, self._text = offsets, text
        breaks = [m.end() for m in re.finditer(r"\n\s*", text)]
        self.line_starts: list[int] = sorted(set(offsets.searchsorted(breaks).tolist())) if breaks else []

    def at_line_start(self, position: int) -> bool:
        at = bisect.bisect_left(self.line_starts, position)
        return at < len(self.line_starts) and self.line_starts[at] == position

    def reads_on(self, end: int, resume: int) -> bool:
        """Whether the text at key position ``resume`` reads on from the text ending at ``end``: a
        sentence left open carries on in lower case; after a full stop the next one starts with a
        capital. A splice of two windows cut at arbitrary words rarely does both."""
        offsets, text = self._offsets, self._text
        if not 0 < end <= len(offsets) or resume >= len(offsets):
            return False
        after = int(offsets[end - 1]) + 1
        closing = text[after : after + 4].lstrip("\"'\u201d\u2019)]")
        following = text[int(offsets[resume])]
        if closing[:1] in (".", "!", "?"):
            return following.isupper() or following.isdigit()
        return following.islower()

    def carries_on(self, end: int) -> bool:
        """Whether the text's own next line carries on the sentence left open at key position
        ``end`` (in lower case): then nothing was put in between, and a quote that goes on
        elsewhere has left the paper's sentence."""
        offsets, text = self._offsets, self._text
        if not 0 < end < len(offsets):
            return False
        after = int(offsets[end - 1]) + 1
        closing = text[after : after + 4].lstrip("\"'\u201d\u2019)]")
        return closing[:1] not in (".", "!", "?") and text[int(offsets[end])].islower()


def _gram_codes(key: str, starts):
    """:func:`_gram_code` of the GRAM characters at each of ``starts`` (a numpy array), at once."""
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


def _all_gram_codes(key: str):
    """:func:`_gram_code` of every GRAM characters of ``key``: its Latin-1 bytes read eight at a
    time from each offset, then the few stretches holding another character coded apart."""
    import numpy

    data = key.encode("latin-1", "replace")
    codes = numpy.ndarray((len(data) - GRAM + 1,), dtype="<u8", buffer=data, strides=(1,)).copy()
    if not key.isascii():
        others = numpy.flatnonzero(numpy.frombuffer(key.encode("utf-32-le"), dtype=numpy.uint32) > 255)
        if len(others):
            starts = numpy.unique((others[:, None] - numpy.arange(GRAM)).ravel())
            starts = starts[(starts >= 0) & (starts < len(codes))]
            codes[starts] = _gram_codes(key, starts)
    return codes


def _gram_code(key: str) -> int:
    """The code :attr:`MatchIndex._gram_index` files a key's first GRAM characters under."""
    gram = key[:GRAM]
    try:
        return int.from_bytes(gram.encode("latin-1"), "little")
    except UnicodeEncodeError:
        code = 0
        for char in gram:
            code = (code * _GRAM_BASE + ord(char)) & 0xFFFFFFFFFFFFFFFF
        return code | (1 << 63)


def _mostly_in(key: str, text_key_: str, width: int = 24) -> bool:
    """True when most ``width``-character windows of ``text_key_`` occur in ``key``.

    A model's own comment may echo a phrase of the paper; a passage copied
    from elsewhere in the paper shares nearly all of its windows.
    """
    if len(text_key_) < width:
        return key.find(text_key_) >= 0 and len(text_key_) >= MIN_QUOTE_KEY
    # Overlapping windows, the last flush with the end: a copied passage behind an opener word
    # ("Here," + real text) still shows in half of them.
    starts = sorted(set(range(0, len(text_key_) - width + 1, width // 2)) | {len(text_key_) - width})
    found = sum(1 for start in starts if key.find(text_key_[start : start + width]) >= 0)
    return found * 2 >= len(starts)


def _running_starts(keys: list[str]) -> tuple[int, ...]:
    starts, total = [], 0
    for key in keys:
        starts.append(total)
        total += len(key)
    return tuple(starts)


def _split_pages(text: str, page_starts: Sequence[int]) -> list[str]:
    if not page_starts:
        return [text]
    bounds = list(page_starts) + [len(text)]
    return [text[bounds[i] : bounds[i + 1]] for i in range(len(page_starts))]


def _apply_mask(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    if not ranges:
        return text
    pieces, last = [], 0
    for start, end in ranges:
        pieces.append(text[last:start])
        pieces.append(" " * (end - start))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _mask_furniture(text: str, page_starts: Sequence[int]):
    """Blank running headers, footers, page numbers and margin line numbers.

    Returns the masked pages and the raw ranges blanked. Blanking keeps raw
    offsets valid, so every key position still maps back to the paper.
    """
    pages = _split_pages(text, page_starts)
    numbered = _has_line_numbers(text)
    trailing = _trailing_line_numbers(text, page_starts)
    if len(pages) < 2 and not numbered and not trailing:
        return pages, []
    page_offsets = list(page_starts) if page_starts else [0]
    edge_lines: list[list[tuple[int, int, str, str]]] = []
    signature_pages: dict[str, set[int]] = {}
    for number, page in enumerate(pages):
        edges = []
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
    return _split_pages(_apply_mask(text, ranges), page_starts), ranges


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


def _trailing_line_numbers(text: str, page_starts: Sequence[int] = ()) -> list[tuple[int, int]]:
    """Raw ranges of margin line numbers that extraction glued to the end of each line.

    Some preprints come out of pypdf as ``"primary goal of396\npublishing"``: the number
    is glued to the line's last word, or to a number of the text ("in 2021.52"). When
    most lines end in digits that count upwards, each line's number is the suffix of its
    digits that continues the count. The count restarts (at 1 to 3) or jumps far ahead only
    on a new page; on the same page a number that does neither is the text's own (the ``2``
    of a formula's last line, a year ending a line), and the count goes on past it.
    """
    lines = max(1, text.count("\n"))
    if len(_DIGIT_AT_LINE_END.findall(text, 0, 20_000)) * 3 < min(lines, text.count("\n", 0, 20_000)):
        return []  # cheap rejection: most papers have no numbers at their line ends
    found = list(_TRAILING_DIGITS.finditer(text))
    if len(found) * 2 < lines or len(found) < 8:
        return []
    ranges: list[tuple[int, int]] = []
    counted = 0
    previous: int | None = None
    previous_page = -1
    for match in found:
        digits = match.group(1)
        line_start = text.rfind("\n", 0, match.start(1)) + 1
        if not text[line_start:match.start(1)].strip():
            continue  # a line of its own (a page number): not glued, and not the count
        page = bisect.bisect_right(page_starts, match.start(1))
        width = 0
        if previous is not None:
            fits = [(int(digits[-size:]) - previous, -size) for size in range(1, min(4, len(digits)) + 1)
                    if previous < int(digits[-size:]) <= previous + 5]
            width = -min(fits)[1] if fits else 0  # the closest continuation of the count
        if not width and len(digits) <= 4:
            value = int(digits)
            new_page = page != previous_page or not page_starts  # without pages, any line may start one
            # A restart (a new page's count) starts low; a jump skips forward (past a figure's
            # lines on this page, any distance on the next); anything else is text.
            if (previous is None or (new_page and (value <= 3 or value > previous))
                    or previous < value <= previous + 100):
                width = len(digits)
        if width:
            counted += previous is not None and int(digits[-width:]) == previous + 1
            previous, previous_page = int(digits[-width:]), page
            ranges.append((match.end(1) - width, match.end(1)))
    return ranges if counted * 10 >= len(found) * 7 else []


def _split_elisions(quote: str) -> list[str]:
    # The regex backtracks on every space; most quotes have no elision at all.
    if "…" not in quote and ".." not in quote and ". ." not in quote:
        return [quote]
    return [part.strip() for part in _ELISION.split(quote)]


_WRAPPING = "\"'“”‘’«»„`"
_EDGES = " \t\n\r.\u2026" + _WRAPPING


def _strip_wrapping(citation: str) -> str:
    return citation.strip().strip(_WRAPPING).strip()


def _comment_boundaries(quote: str) -> Iterable[int]:
    """Raw offsets in ``quote`` where a clearly separated comment may begin.

    A separator (dash, parenthesis, colon, semicolon or sentence end) followed
    by a discourse opener ("this shows", "i.e.", "which", "note" ...): paper
    text goes on after a colon with anything, a model's comment rarely does.
    """
    for found in _separators(quote):
        if _COMMENT_OPENER.match(quote, found.end()):
            yield found.start()
    for found in _SENTENCE_END.finditer(quote):
        if _COMMENT_OPENER.match(quote, found.end()):
            yield found.start() + 1


def _separators(quote: str) -> Iterable[re.Match[str]]:
    """What ``_HARD_SEPARATOR.finditer(quote)`` finds, tried only where a separator character stands
    (its optional spaces lead it, so the regex alone is tried at every character).

    A match starts where the spaces before a separator character begin, or (a colon or
    semicolon, no spaces) at the character itself; the spaces after it are taken, so the next
    match starts beyond them."""
    end = 0
    for mark in _SEPARATOR_CHAR.finditer(quote):
        at = mark.start()
        if at < end:
            continue
        spaces = at
        while spaces > end and quote[spaces - 1].isspace():
            spaces -= 1
        found = _HARD_SEPARATOR.match(quote, spaces) or _HARD_SEPARATOR.match(quote, at)
        if found is not None:
            end = found.end()
            yield found


def _longest_end(key: str, quote_key: str, from_end: bool = False) -> tuple[int, int]:
    """(length, position) of the longest prefix (or suffix) of ``quote_key`` found in ``key``."""
    best, position = 0, -1
    small, large = 1, len(quote_key)
    while small <= large:
        middle = (small + large) // 2
        found = key.find(quote_key[-middle:] if from_end else quote_key[:middle])
        if found >= 0:
            best, position = middle, found
            small = middle + 1
        else:
            large = middle - 1
    return best, position


def _prefix_before_digit_gap(key: str, quote_key: str, low: int, high: int, tries: int = 8) -> tuple[int, int]:
    """A prefix shorter than MIN_ANCHOR that ends where the paper has a short number the quote lacks
    (a superscript citation marker or a margin line number) and the quote carries on right after it."""
    anchor = quote_key[:MIN_GAPPED_ANCHOR]
    if len(anchor) < MIN_GAPPED_ANCHOR:
        return 0, -1
    found = key.find(anchor, low, high)
    while found >= 0 and tries:
        length = common_prefix_length(key, found, quote_key, 0)
        if length < len(quote_key) and _after_digit_gap(key, quote_key, length, found + length) is not None:
            return length, found
        tries -= 1
        found = key.find(anchor, found + 1, high)
    return 0, -1


def _anchored_prefix(key: str, quote_key: str, low: int, high: int, tries: int = 8) -> tuple[int, int]:
    """The longest prefix of at least MIN_ANCHOR characters: one find, then extend.

    Anchors of MIN_ANCHOR key characters are nearly unique in a paper, so the
    longest prefix starts at one of the anchor's few occurrences.
    """
    anchor = quote_key[:MIN_ANCHOR]
    best, position = 0, -1
    found = key.find(anchor, low, high)
    while found >= 0 and tries:
        length = min(common_prefix_length(key, found, quote_key, 0), high - found)
        if length > best:
            best, position = length, found
        tries -= 1
        found = key.find(anchor, found + 1, high)
    return best, position


def _around_anchor(key: str, pages: tuple[int, ...], flow: "_Flow", keys: list[str], anchor: int,
                   spans: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """The spans of every part of an elided quote, in order, each within ELISION_WINDOW of its
    neighbour, around the anchor part's ``spans``."""
    for part in reversed(keys[:anchor]):
        start = spans[0][0]
        found = _locate(key, pages, part, max(0, start - ELISION_WINDOW - len(part)), start, flow)
        if found is None:
            return None
        spans[:0] = found
    for part in keys[anchor + 1:]:
        end = spans[-1][1]
        found = _locate(key, pages, part, end, min(len(key), end + ELISION_WINDOW + len(part)), flow)
        if found is None:
            return None
        spans.extend(found)
    return spans


def _locate(key: str, page_starts: Sequence[int], quote_key: str, low: int, high: int,
            flow: "_Flow | None" = None, find: Callable[[str], int] | None = None):
    """Key spans of ``quote_key`` in ``key[low:high]``, allowing furniture gaps.

    ``find`` is the index's look-up for the whole key, used when the whole key is searched.
    With ``flow`` (the text's line starts), the quote may also jump over text the reader put
    between a sentence's halves: a page's footer and the next one's header, or a figure, a
    table or the other column on the same or the next page."""
    found = find(quote_key) if find is not None and low == 0 and high == len(key) else key.find(quote_key, low, high)
    if found >= 0:
        return [(found, found + len(quote_key))]
    length, position = _anchored_prefix(key, quote_key, low, high)
    if length < min(MIN_ANCHOR, len(quote_key)):
        # A citation marker or line number glued in before the anchor's length ("optimizer30 with").
        length, position = _prefix_before_digit_gap(key, quote_key, low, high)
        if position < 0:
            return None
    spans = [(position, position + length)]
    done, cursor, page_jumps = length, position + length, 0
    while done < len(quote_key):
        resume = _after_digit_gap(key, quote_key, done, cursor)
        if (resume is None and page_jumps < MAX_PAGE_JUMPS and flow is not None and flow.at_line_start(cursor)
                and not flow.carries_on(cursor)):
            resume = _after_page_break(key, page_starts, flow, quote_key, done, cursor, high)
            if resume is None:
                resume = _after_line_jump(key, page_starts, flow, quote_key, done, cursor, high,
                                          begun=max(low, spans[0][0]))
            page_jumps += 1
        if resume is None:
            return None
        run = common_prefix_length(key, resume, quote_key, done)
        spans.append((resume, resume + run))
        done, cursor = done + run, resume + run
    return spans


def _after_line_jump(key: str, page_starts: Sequence[int], flow: "_Flow", quote_key: str,
                     done: int, cursor: int, high: int, begun: int = 0) -> int | None:
    """Where the quote resumes after text the reader put in between: a figure, a table or the
    other column, on the same page or the next.

    Extraction puts such text between a sentence's halves only at line boundaries, so the
    quote must break exactly where a line ends (the caller checks) and resume exactly where a
    line begins, reading on, with a substantial run (at least MIN_ANCHOR key characters, or
    the quote's whole rest). Splices of passages cut at arbitrary words rarely meet all of
    that. The resumption is looked for after the break first, then earlier on the same page,
    before the quote began: pypdf may read a column's continuation before the text it
    continues (a sentence that runs on below a table sits after the page's top block).
    """
    page = bisect.bisect_right(page_starts, cursor) - 1 if page_starts else 0
    limit = page_starts[page + 2] if page + 2 < len(page_starts) else len(key)
    found = _resumption(key, flow, quote_key, done, cursor, cursor + 1, min(limit, high), MIN_ANCHOR)
    if found is None and page_starts:
        found = _resumption(key, flow, quote_key, done, cursor, page_starts[page], begun, MIN_ANCHOR)
    return found


def _resumption(key: str, flow: "_Flow", quote_key: str, done: int, cursor: int, low: int, high: int,
                needed: int) -> int | None:
    """The first line start in ``key[low:high]`` where the quote's rest resumes (its next
    ``needed`` characters, or all of it) and reads on from ``cursor``."""
    probe = quote_key[done : done + min(needed, len(quote_key) - done)]
    found = key.find(probe, low, high)
    while found >= 0:
        if flow.at_line_start(found) and flow.reads_on(cursor, found):
            return found
        found = key.find(probe, found + 1, high)
    return None


def _after_digit_gap(key: str, quote_key: str, done: int, cursor: int) -> int | None:
    """Where the quote resumes after a short number the paper has and the quote lacks.

    Margin line numbers and citation markers sit between words; a gap that
    touches a digit of the quote or of the paper is a changed number instead.
    """
    end = cursor
    while end < len(key) and key[end].isdigit() and end - cursor <= DIGIT_GAP_LIMIT:
        end += 1
    if end == cursor or end - cursor > DIGIT_GAP_LIMIT:
        return None
    if quote_key[done].isdigit() or quote_key[done - 1].isdigit() or key[cursor - 1].isdigit():
        return None
    needed = min(8, len(quote_key) - done)
    return end if key.startswith(quote_key[done : done + needed], end) else None


def _after_page_break(key: str, page_starts: Sequence[int], flow: "_Flow", quote_key: str, done: int,
                      cursor: int, high: int) -> int | None:
    """Where the quote resumes on the next page, past footnotes, footer and header.

    The gap must straddle exactly one page boundary: it starts at most
    PAGE_TAIL_LIMIT before it, where a line ends (the caller checks), and the quote resumes
    where a line begins, at most PAGE_HEAD_LIMIT after it, reading on, with a substantial run
    (or the quote's end, which must then start the next page's text exactly).
    """
    following = bisect.bisect_left(page_starts, cursor + 1)
    if following >= len(page_starts):
        return None
    boundary = page_starts[following]
    if boundary - cursor > PAGE_TAIL_LIMIT:
        return None
    remaining = len(quote_key) - done
    if remaining < MIN_RESUMED_RUN:
        # A short tail proves little: it must start the next page's text exactly.
        return boundary if key.startswith(quote_key[done:], boundary) and flow.reads_on(cursor, boundary) else None
    page_end = page_starts[following + 1] if following + 1 < len(page_starts) else len(key)
    window_end = min(high, page_end, boundary + PAGE_HEAD_LIMIT + MIN_RESUMED_RUN)
    return _resumption(key, flow, quote_key, done, cursor, boundary, window_end, MIN_RESUMED_RUN)


def _similarity(a: str, b: str) -> float:
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.normalized_similarity(a, b)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Departure:
    """Where a quote stops agreeing with the paper."""

    quote_before: str
    quote_after: str
    paper_after: str
    page: int | None


@dataclass(frozen=True)
class NearestPassage:
    text: str
    page: int | None
    similarity: float  # 0-100


class CitationMatch:
    """The matcher's answer for one citation.

    ``grounded`` is what citation accuracy counts. ``verdict`` names the kind of
    match or mismatch; for ungrounded citations it is computed on first read.
    """

    __slots__ = ("citation", "grounded", "key_spans", "commentary", "_index", "_verdict", "_parts", "_diagnosis")

    def __init__(
        self,
        citation: str,
        index: MatchIndex,
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
        self._diagnosis: _Diagnosis | None = None

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
        index = self._index
        return [
            (index.raw_offset(a), index.raw_offset(b - 1) + 1)
            for a, b in self.key_spans
        ]

    @property
    def pages(self) -> list[int]:
        """Pages the matched text lies on (empty when the paper has no pages)."""
        pages = {self._index.page_of(offset) for span in self.spans for offset in span}
        return sorted(p for p in pages if p is not None)

    @property
    def departure(self) -> Departure | None:
        return self._diagnose().departure if not self.grounded else None

    @property
    def nearest(self) -> NearestPassage | None:
        return self._diagnose().nearest if not self.grounded else None

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

    def _diagnose(self) -> "_Diagnosis":
        if self._diagnosis is None:
            if self._verdict == TOO_SHORT:
                self._diagnosis = _Diagnosis(
                    TOO_SHORT,
                    f"too short to verify: {len(text_key(self.citation))} letters and digits "
                    f"(a citation needs at least {MIN_QUOTE_KEY})",
                )
            elif self._verdict == NOT_EVIDENCE:
                self._diagnosis = _Diagnosis(
                    NOT_EVIDENCE,
                    "not evidence: only a reference, a link, a label, a running header or footer, or a "
                    "bibliography entry; it supports no claim, so it is reported and not counted",
                )
            else:
                self._diagnosis = _diagnose(self._index, self.citation, self._parts)
        return self._diagnosis


@dataclass
class _Diagnosis:
    verdict: str
    summary: str
    departure: Departure | None = None
    nearest: NearestPassage | None = None


def _clip(text: str | None, width: int, left: bool = False) -> str:
    text = " ".join((text or "").split())
    if len(text) <= width:
        return text
    return "…" + text[-width:] if left else text[:width] + "…"


def _diagnose(index: MatchIndex, citation: str, parts: tuple[str, ...]) -> _Diagnosis:
    if len(parts) > 1:
        for part in parts:
            if not index.match(part).grounded:
                inner = _diagnose(index, part, (part,))
                inner.summary = f"one elided part is not verbatim: {inner.summary}"
                return inner
        return _Diagnosis(
            STITCHED,
            f"stitched: each of its {len(parts)} elided parts is in the paper, but not in this "
            f"order within {ELISION_WINDOW} characters of each other",
        )
    quote = parts[0] if parts else _strip_wrapping(citation)
    quote_key = text_key(quote)
    key = index.key
    prefix, prefix_at = _longest_end(key, quote_key)
    suffix, suffix_at = _longest_end(key, quote_key, from_end=True)
    if prefix >= MIN_ANCHOR and suffix >= MIN_ANCHOR and prefix + suffix >= len(quote_key) - 2:
        joined_at = suffix_at - (len(quote_key) - suffix - prefix)
        if abs(joined_at - (prefix_at + prefix)) > DIGIT_GAP_LIMIT:
            first = index.page_of(index.raw_offset(prefix_at))
            second = index.page_of(index.raw_offset(suffix_at))
            pages = ""
            if first and second:
                pages = f" (page {first})" if first == second else f" (pages {first} and {second})"
            return _Diagnosis(
                STITCHED,
                "stitched: two real passages from different places joined without an elision mark"
                + pages,
                departure=_departure(index, quote, quote_key, prefix, prefix_at + prefix),
            )
    aligned = _align(key, quote_key)
    if aligned is not None:
        start, end = aligned
        segment = key[start:end]
        if _similarity(quote_key, segment) >= 0.75:
            from rapidfuzz.distance import Levenshtein

            # A little of the paper on either side of the aligned stretch, so a quote's first or last
            # letters are not read as dropped.
            start, end = max(0, start - ALIGN_CHUNK), min(len(key), end + ALIGN_CHUNK)
            operations = list(Levenshtein.opcodes(quote_key, key[start:end]))
            agreeing = _agreeing(operations)
            if agreeing is not None:
                # Re-align from where the quote starts if its opening has the paper's length: the
                # margin added above must not pair the quote's first letter with a stray one.
                start = max(0, start + agreeing.dest_start - agreeing.src_start)
                operations = list(Levenshtein.opcodes(quote_key, key[start:end]))
                agreeing = _agreeing(operations)
            differences = [op for op in operations if op.tag != "equal" and op.src_start < len(quote_key)]
            if differences:
                if agreeing is None or agreeing.src_start > 0:  # the first words differ
                    departure = _opening_departure(index, quote, agreeing, start)
                else:
                    departure = _departure(index, quote, quote_key, int(differences[0].src_start),
                                           start + int(differences[0].dest_start))
                return _Diagnosis(ALTERED, "altered: a real passage with words or numbers changed",
                                  departure=departure)
    nearest = _nearest_passage(index, quote, aligned)
    if nearest is not None and nearest.similarity >= 65:
        return _Diagnosis(PARAPHRASE, "not verbatim: a paraphrase of a passage of the paper", nearest=nearest)
    return _Diagnosis(NOT_FOUND, "not found: no passage of the paper says this", nearest=nearest)


ALIGN_CHUNK = 12  # key characters: pieces of the quote looked up to find where it is nearest


def _align(key: str, quote_key: str) -> tuple[int, int] | None:
    """The stretch of the paper's key the quote is nearest to, as key positions, or None.

    Pieces of the quote spread over its whole length (not only its start, which a model may
    have changed) are looked up exactly; each occurrence votes for where the quote would start.
    Around the place with most votes, rapidfuzz aligns the quote to its best-matching stretch.
    """
    if len(quote_key) < ALIGN_CHUNK:
        return None
    from rapidfuzz import fuzz

    stride = max(ALIGN_CHUNK // 2, (len(quote_key) - ALIGN_CHUNK) // 16)
    votes: dict[int, int] = {}
    for offset in range(0, len(quote_key) - ALIGN_CHUNK + 1, stride):
        piece = quote_key[offset : offset + ALIGN_CHUNK]
        found, seen = key.find(piece), 0
        while found >= 0 and seen < 4:  # a piece found all over the paper says little
            where = (found - offset) // ALIGN_CHUNK
            votes[where] = votes.get(where, 0) + 1
            found, seen = key.find(piece, found + 1), seen + 1
    if not votes:
        return None
    best = max(votes, key=lambda where: (votes[where] + votes.get(where - 1, 0) + votes.get(where + 1, 0), -where))
    around = best * ALIGN_CHUNK
    low = max(0, around - len(quote_key) // 2 - ALIGN_CHUNK)
    window = key[low : around + len(quote_key) + len(quote_key) // 2 + ALIGN_CHUNK]
    alignment = fuzz.partial_ratio_alignment(quote_key, window)
    if alignment is None:
        return None
    return low + alignment.dest_start, low + alignment.dest_end


def _agreeing(operations: list):
    """The first stretch where quote and paper agree for real (letters agree by chance anywhere:
    agreement is a run of 8 or more), as an opcode, or None."""
    return next((op for op in operations if op.tag == "equal" and op.src_end - op.src_start >= 8), None)


def _opening_departure(index: MatchIndex, quote: str, agreeing, start: int) -> Departure:
    """Where a quote whose first words differ sits in the paper: as many of the paper's words
    before the first agreeing stretch (``agreeing``, an opcode) as the quote has there
    ("Notably, different other" against "misbehave. Like all other": "Like all other")."""
    text = index.text
    paper_start = index.raw_offset(start)
    paper_start = max(text.rfind(" ", 0, paper_start), text.rfind("\n", 0, paper_start)) + 1
    if agreeing is not None:
        quote_words = len(quote[: int(key_offsets(quote)[agreeing.src_start])].split())
        paper_end = index.raw_offset(start + agreeing.dest_start)
        word_starts = [m.start() + paper_start for m in re.finditer(r"\S+", text[paper_start:paper_end])]
        if word_starts:
            paper_start = word_starts[max(0, len(word_starts) - max(quote_words, 1))]
    return Departure(quote_before="", quote_after=quote, paper_after=index.text[paper_start : paper_start + 120],
                     page=index.page_of(paper_start))


def _departure(index: MatchIndex, quote: str, quote_key: str, quote_at: int, paper_at: int) -> Departure:
    quote_offsets = key_offsets(quote)
    split = int(quote_offsets[quote_at]) if quote_at < len(quote_offsets) else len(quote)
    # Show the departure at the start of the word it falls in: "in |19", not "in 1|9".
    word_start = max(quote.rfind(" ", 0, split), quote.rfind("\n", 0, split)) + 1
    back = quote_at - int(quote_offsets.searchsorted(word_start))  # key characters of that word so far
    split, paper_at = word_start, max(0, paper_at - back)
    paper_raw = index.raw_offset(paper_at)
    text = index.text
    if paper_raw > 0 and text[paper_raw - 1].isalnum():  # the paper's side starts at a word too
        paper_raw = max(text.rfind(" ", 0, paper_raw), text.rfind("\n", 0, paper_raw)) + 1
    return Departure(
        quote_before=quote[:split],
        quote_after=quote[split:],
        paper_after=index.text[paper_raw : paper_raw + 120],
        page=index.page_of(paper_raw),
    )


def _nearest_passage(index: MatchIndex, quote: str, aligned: tuple[int, int] | None = None) -> NearestPassage | None:
    """The passage of the paper the quote is nearest to: the stretch it aligns to, when the
    words there are about as close to the quote's as any two sentences' of the paper, else the
    two-sentence window that shares most words with it."""
    from rapidfuzz import fuzz, process

    windows = index.sentence_windows
    if not windows:
        return None
    texts = [index.masked_text[a:b] for a, b in windows]
    best = process.extractOne(quote, texts, scorer=fuzz.token_set_ratio, processor=_words)
    if best is None:
        return None
    _, score, position = best
    start = windows[position][0]
    nearest = NearestPassage(" ".join(texts[position].split()), index.page_of(start), float(score))
    if aligned is not None and aligned[1] > aligned[0]:
        text = index.masked_text
        low, high = index.raw_offset(aligned[0]), index.raw_offset(aligned[1] - 1) + 1
        # Whole words: back to the start of the first, on to the end of the last.
        low = max(text.rfind(" ", 0, low), text.rfind("\n", 0, low)) + 1
        ends = [at for at in (text.find(" ", high), text.find("\n", high)) if at >= 0]
        passage = text[low : min(ends) if ends else len(text)]
        passage_score = fuzz.token_set_ratio(_words(quote), _words(passage))
        if passage_score >= score - 5:
            nearest = NearestPassage(" ".join(passage.split()), index.page_of(low), float(passage_score))
    return nearest


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


# --------------------------------------------------------------------------- entry point


@functools.lru_cache(maxsize=16)
def _index_for_text(text: str) -> MatchIndex:
    return MatchIndex(text)


def match_index(paper: Union[str, HasMatchIndex, "MatchIndex"]) -> MatchIndex:
    """The prepared index of a paper given as text, a Paper, or an index."""
    if isinstance(paper, MatchIndex):
        return paper
    if isinstance(paper, str):
        return _index_for_text(paper)
    return paper.match_index


def match_citation(citation: str, paper: Union[str, HasMatchIndex, "MatchIndex"]) -> CitationMatch:
    """Decide whether ``citation`` is grounded in ``paper``.

    ``paper`` is plain text, a :class:`~pytest_researchqa.papers.Paper` (as the
    fixtures give it) or a :class:`MatchIndex`. A paper is prepared once;
    repeated calls reuse it.
    """
    return match_index(paper).match(citation)
