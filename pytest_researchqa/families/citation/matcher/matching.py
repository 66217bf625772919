"""Matching a citation against a paper: the decision, and the entry points.

:class:`MatchIndex` is a prepared paper (:class:`~.index.PaperIndex`) that answers citations.
The common case costs a key and one indexed look-up (:meth:`MatchIndex._exact_hit`); the common
fabrication is answered from what that look-up read (:meth:`MatchIndex._stuck_here`). The rest
take the full path: a citation that only points somewhere, or is too short, is no evidence;
then the quote is located with the gaps :mod:`.alignment` allows, in the paper with its
furniture blanked and then as it stands (every search a look-up in the key's
:class:`~.grams.GramIndex`, so a fabrication costs a few look-ups, not scans of the paper);
a quote that cuts a number, is a reference-list entry or is all furniture is no evidence; a
verbatim start followed by a clearly separated comment of the model's own is grounded with
that comment set apart.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Protocol, Sequence, TypeVar, Union

from . import diagnosis
from .alignment import (
    ELISION_WINDOW,
    MIN_ANCHOR,
    MIN_GAPPED_ANCHOR,
    anchored_prefix,
    around_anchor,
    locate,
    similarity,
    stuck_prefix,
)
from .grams import GramIndex
from .index import PaperIndex
from .quotes import (
    COMMENT_OPENER_KEY,
    COMMENT_OPENER_KEY_LONGEST,
    EDGES,
    LOOKS_LIKE_REFERENCE,
    REFERENCE_MAX_LENGTH,
    comment_boundaries,
    is_pointer,
    plain_words,
    split_elisions,
    strip_wrapping,
)
from .textkey import ASCII_DROPPED, KEY_BYTES, mark_context, part_keys, text_key
from .verdicts import (
    MIN_QUOTE_KEY,
    POINTER,
    REFERENCE_ENTRY,
    RUNNING_HEAD,
    TOO_SHORT,
    VERBATIM,
    VERBATIM_ELIDED,
    VERBATIM_WITH_COMMENTARY,
    CitationMatch,
    Diagnosis,
    not_evidence,
    not_grounded,
    verbatim_hit,
)

_Built = TypeVar("_Built")


class PreparedPaper(Protocol):
    """A paper that keeps what is prepared from it (:class:`~pytest_researchqa.papers.Paper`): its index is
    built on first use and lives as long as the paper does."""

    text: str
    page_starts: tuple[int, ...]

    def prepared(self, build: Callable[[Any], _Built]) -> _Built: ...


class HasMatchIndex(Protocol):
    """An object of the user's that brings its own prepared index (a :class:`~pytest_researchqa.papers.Paper`
    keeps its index through ``Paper.prepared``)."""

    @property
    def match_index(self) -> "MatchIndex": ...


# A comment after a verbatim quote that matches what the paper says next this closely (rapidfuzz
# partial ratio on words, 0-100) is the paper's next sentence edited, not the model's own words.
PARAPHRASE_OF_NEXT = 70
_NEAR = 400  # key characters: where an elided part is looked for first
# Places a quote found where it cuts a number (or takes in a furniture number) is looked for after the first.
_OTHER_PLACES = 20

# What may stand before a number as its sign: a quote that starts after one cuts the number.
_SIGN_CHARS = "-\u2212\u2010\u2011\u2012\u2013\u2014+\u00b1"


class MatchIndex(PaperIndex):
    """A paper prepared once for any number of citation look-ups.

    ``text`` is the raw extracted text; ``page_starts`` the raw offset at which
    each page begins (empty for papers that have no pages).
    """

    def __init__(self, text: str, page_starts: Sequence[int] = ()) -> None:
        super().__init__(text, page_starts)
        self._memo: dict[str, CitationMatch] = {}
        self._span_memo: dict[str, tuple[tuple[int, int], ...] | None] = {}
        self._last_key = ("", "")  # the last text _exact_hit made a key of, and its key
        # The last key _exact_hit did not find, and every start of its first MIN_GAPPED_ANCHOR characters (or None).
        self._stuck_starts: tuple[str, list[int] | None] = ("", None)
        # The last key _stuck_here read the stuck point of: what stuck_prefix answered, and the runs it read.
        self._stuck_read: tuple[str, tuple[int, int] | None, list[tuple[int, int]]] = ("", None, [])

    def release(self) -> None:
        """Forget the answered citations. Each remembers this index (its diagnosis is worked out when read),
        so the memo and the index hold each other: released when its paper leaves the store, the index goes
        at once instead of at the next full garbage collection (hundreds of evicted papers at full scale)."""
        self._memo.clear()
        self._span_memo.clear()

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
        reference list, and more than a pointer. None sends the citation down the full path.
        (The checks of :meth:`_exact_result` inline: this path is most citations.)"""
        # Wrapping quotes, spaces and a leading or trailing ellipsis (it only marks a cut) hold no
        # key characters: one strip removes them all.
        inner = citation.strip(EDGES)
        if "\u2026" in inner or ".." in inner or ". ." in inner:
            return self._exact_elided(citation, inner)
        if inner.isascii() and not ("0" in inner or "1" in inner or "2" in inner or "3" in inner or "4" in inner
                                    or "5" in inner or "6" in inner or "7" in inner or "8" in inner or "9" in inner):
            # text_key of ASCII text without a digit (most quotes; no point or sign to mark), inline.
            quote_key = inner.encode("ascii").translate(KEY_BYTES, ASCII_DROPPED).decode("ascii")
            digits = False
        else:
            quote_key = text_key(inner)
            digits = True
        self._last_key = (inner, quote_key)  # the full path reads the same text, mostly: one key
        if len(quote_key) < MIN_QUOTE_KEY:
            return None
        at, starts = self.grams.find_or_starts(quote_key, MIN_GAPPED_ANCHOR)
        if at < 0:
            self._stuck_starts = (quote_key, starts)  # where the full path reads on from (its stuck point)
            return None if starts is None else self._stuck_here(citation, inner, quote_key, starts)
        end = at + len(quote_key)
        if digits and (quote_key[0].isdigit() or quote_key[-1].isdigit()) and self._cuts_a_number(
                [quote_key], ((at, end),), False):
            return None
        region = self._bibliography
        if region is not None and region[0] <= at and end <= region[1]:
            return None  # may be a reference-list entry: the full path decides
        if len(citation) < REFERENCE_MAX_LENGTH and (digits or "[" in citation or "/" in citation or "www" in quote_key
                                                     or "doi" in quote_key) and is_pointer(citation, (quote_key,)):
            return None  # (is_pointer's own first tests, for a key without a digit, inline)
        return verbatim_hit(citation, self, at, end)

    def _stuck_here(self, citation: str, inner: str, quote_key: str, starts: list[int]) -> "CitationMatch | None":
        """What :meth:`_match` answers for most fabrications, in fewer steps: a quote of one part (elision marks
        at its edges only), not a pointer, stuck in the masked key (:func:`~.alignment.stuck_prefix`, from the
        ``starts`` the exact look-up has read) and so in the key as the paper stands. None where the citation
        is not such a quote: the full path answers it (alike where it is)."""
        quote = strip_wrapping(citation)
        if "\u2026" in quote or ".." in quote or ". ." in quote:  # _parts_and_keys' parts, where one has a key
            parts = [part for part in split_elisions(quote) if part.strip(EDGES) == inner or text_key(part)]
            if len(parts) != 1:
                return None
            quote = parts[0]
        if quote.strip(EDGES) != inner or (len(citation) < REFERENCE_MAX_LENGTH and is_pointer(citation, (quote_key,))):
            return None
        runs: list[tuple[int, int]] = []
        stuck = stuck_prefix(self.key, self.grams, self._flow, quote_key, runs=runs, starts=starts)
        self._stuck_read = (quote_key, stuck, runs)  # the full path, where it takes over, reads it again
        if stuck is None or not (self.unmasked_key is self.key or self.furniture_apart(quote_key, runs) or stuck_prefix(
                self.unmasked_key, self.unmasked_grams, self._unmasked_flow, quote_key) is not None):
            return None  # (as _verbatim asks: found nowhere in either key when stuck in both)
        if stuck[0] >= MIN_ANCHOR and stuck[0] * 2 >= len(quote_key):
            commented = self._split_commentary(quote, quote_key, stuck)
            if commented is not None:
                return CitationMatch(citation, self, True, VERBATIM_WITH_COMMENTARY, commented[0],
                                     commentary=commented[1])
        return not_grounded(citation, self, (quote,))

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
        at = self.grams.find(keys[anchor])
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
        if is_pointer(citation, keys):
            return None
        return CitationMatch(citation, self, True, verdict, spans)

    def passage_spans(self, passage: str) -> tuple[tuple[int, int], ...] | None:
        """Key spans of an expected passage, or None when it is not in the paper."""
        if passage not in self._span_memo:
            result = self.match(passage)
            self._span_memo[passage] = result.key_spans if result.grounded else None
        return self._span_memo[passage]

    def _match(self, citation: str) -> "CitationMatch":
        parts, keys = self._parts_and_keys(citation)
        if is_pointer(citation, keys):
            return not_evidence(citation, self, POINTER)
        if sum(map(len, keys)) < MIN_QUOTE_KEY:
            return CitationMatch(citation, self, False, TOO_SHORT, ())
        # Most quotes that are not there stop being verbatim where the paper's text goes on with
        # neither a number nor a new line: then no search can get past that point (stuck_prefix
        # says so with one look-up; it gives the masked key's anchored prefix too).
        runs: list[tuple[int, int]] = []
        stuck = self._stuck_in_masked(keys[0], runs) if len(keys) == 1 else None
        found = self._verbatim(citation, keys, stuck, runs)
        if found is not None:
            return found
        # A comment split needs a verbatim start of MIN_ANCHOR and half the quote (the anchored prefix).
        if len(parts) == 1 and (stuck is None or (stuck[0] >= MIN_ANCHOR and stuck[0] * 2 >= len(keys[0]))):
            commented = self._split_commentary(parts[0], keys[0], stuck)
            if commented is not None:
                spans, comment = commented
                return CitationMatch(
                    citation, self, True, VERBATIM_WITH_COMMENTARY, spans, commentary=comment
                )
        return not_grounded(citation, self, tuple(parts))

    def _stuck_in_masked(self, quote_key: str, runs: list[tuple[int, int]]) -> tuple[int, int] | None:
        """:func:`~.alignment.stuck_prefix` in the masked key, its runs added to ``runs``: as :meth:`_stuck_here`
        read it for this key, or from the starts the exact look-up read, or from a look-up of its own."""
        read_key, stuck, read = self._stuck_read
        if read_key is quote_key:
            runs.extend(read)
            return stuck
        known, starts = self._stuck_starts
        return stuck_prefix(self.key, self.grams, self._flow, quote_key, runs=runs,
                            starts=starts if known is quote_key else None)

    def _parts_and_keys(self, citation: str) -> tuple[list[str], list[str]]:
        """The citation's parts between elision marks, wrapping stripped, and their keys (parts without
        key characters left out)."""
        known, known_key = self._last_key
        # A part that is the exact path's text with wrapping or spaces around it (no key characters,
        # and at a text's edge no context for a point or a sign either) has the same key.
        parts, keys = [], []
        for part in split_elisions(strip_wrapping(citation)):
            part_key = known_key if part.strip(EDGES) == known else text_key(part)
            if part_key:
                parts.append(part)
                keys.append(part_key)
        return parts, keys

    def _verbatim(self, citation: str, keys: list[str], stuck: tuple[int, int] | None,
                  runs: list[tuple[int, int]]) -> "CitationMatch | None":
        """The answer when the quote's parts are in the paper as :func:`~.alignment.locate` allows, in the key
        with furniture blanked or else in the key as the paper stands; None when in neither. ``stuck``
        and ``runs``: what :func:`~.alignment.stuck_prefix` answered and read in the masked key."""
        for unmasked in (False, True):
            if unmasked and self.unmasked_key is self.key:
                break
            # Stuck in the unmasked key too: surely so where nothing it read is near page furniture
            # (the two keys agree there), else asked.
            if stuck is not None and (not unmasked or self.furniture_apart(keys[0], runs) or stuck_prefix(
                    self.unmasked_key, self.unmasked_grams, self._unmasked_flow, keys[0]) is not None):
                continue  # locate would find nothing in this key
            spans = self._checked_spans(keys, unmasked)
            if spans is None:
                continue
            if unmasked:
                spans = self._unmasked_to_masked(spans)
                if not spans:  # the whole quote is page furniture (a running header or footer)
                    return not_evidence(citation, self, RUNNING_HEAD)
            if self._in_bibliography(spans) and LOOKS_LIKE_REFERENCE.search(citation):
                return not_evidence(citation, self, REFERENCE_ENTRY)
            return CitationMatch(citation, self, True, VERBATIM if len(keys) == 1 else VERBATIM_ELIDED, spans)
        return None

    def _checked_spans(self, keys: list[str], unmasked: bool) -> tuple[tuple[int, int], ...] | None:
        """The spans of the quote's parts in one key (as that key counts), unless it is not there, cuts one
        of the paper's numbers, or (in the unmasked key) takes in a blanked line or page number as one of
        its own. The unmasked key only serves quotes that copy furniture verbatim ("exhibit203"). Where the
        first place found fails those checks, the places after it are tried (a sentence the paper repeats,
        one of them cut from a number or ending at a page number; a quote of one part)."""
        start = 0
        for _ in range(_OTHER_PLACES):
            spans = self._locate_parts(keys, unmasked, start)
            if spans is None:
                return None
            if not ((unmasked and self._furniture_taken_in(spans)) or self._cuts_a_number(keys, spans, unmasked)):
                return spans
            if len(keys) > 1:
                return None  # (an elided quote's parts are looked for around each place of its anchor already)
            start = spans[0][0] + 1
        return None

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
            if before and (before.isdigit() or before in _SIGN_CHARS or decimal_before):  # ("" is in any string)
                return True
        if ends_with_digit:
            last = int(offsets[spans[-1][1] - 1]) + 1
            after = text[last:last + 2]
            if after[:1].isdigit() or after[:1] == "%" or (after[:1] in ".," and after[1:].isdigit()):
                return True
        return False

    def _furniture_taken_in(self, spans: Sequence[tuple[int, int]]) -> tuple[int, int] | None:
        """The raw range of a line or page number blanked from the paper that would become part of the
        quote's numbers (None when there is none): the quote ends with it, or it is glued to a number of
        the text (``0.9`` and the margin's ``193`` read as ``0.9193``; ``"accuracy, at 36"`` where 36 is
        the margin number before ``61.4%``). Glued between words (``"exhibit203 strong"``) or leading a
        quote, it changes no number; nor after a separator that does not join it to the number before it
        (:func:`_separator_joins`: ``[43, 44,`` and the margin's ``499`` are no ``44,499``)."""
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
                if ((end == quote_end and int(offsets.searchsorted(high)) >= end and not own_line)  # the quote
                        # ends on it (it reads as the sentence's number), or it is glued to a number of the text
                        or before[-1:].isdigit() or (before[-1:] in (".", ",") and before[:1].isdigit()
                                                     and _separator_joins(text, self.masked_text, low, high))
                        or after[:1].isdigit() or after[:1] == "%"
                        or (after[:1] in (".", ",") and after[1:].isdigit())):
                    return low, high
        return None

    def _locate_parts(self, keys: list[str], unmasked: bool, start: int = 0) -> tuple[tuple[int, int], ...] | None:
        """The spans of the quote's parts in one key, the first part found at ``start`` or after."""
        key, pages = self._keys(unmasked)
        first = keys[0]
        grams = self.unmasked_grams if unmasked else self.grams
        flow = self._unmasked_flow if unmasked else self._flow
        if len(keys) == 1:
            found = locate(key, pages, first, start, len(key), flow, grams)
            return tuple(found) if found else None
        # An elided quote: anchor on its longest part (the most selective: a first part may be a
        # single common word, as where a paper's own "..." is quoted), at each place it occurs,
        # then find the parts before it backwards and the parts after it forwards.
        anchor = max(range(len(keys)), key=lambda at: len(keys[at]))
        for _ in range(20):
            head = locate(key, pages, keys[anchor], start, len(key), flow, grams)
            if head is None:
                return None
            spans = around_anchor(key, pages, flow, keys, anchor, list(head), grams)
            if spans is not None:
                return tuple(spans)
            start = head[0][0] + 1
        return None

    def _split_commentary(self, quote: str, quote_key: str,
                          anchored: tuple[int, int] | None = None) -> tuple[tuple[tuple[int, int], ...], str] | None:
        """(spans, comment) when ``quote`` (whose key is ``quote_key``) is a verbatim passage plus an
        own comment. ``anchored`` is the masked key's anchored prefix when known."""
        # The masked search's anchored prefix (given, remembered, or a few index look-ups).
        prefix_length, position = anchored or anchored_prefix(self.key, quote_key, 0, len(self.key), grams=self.grams)
        # A comment follows a verbatim start of at least MIN_ANCHOR and half the quote: tested
        # before the separators are looked for (a regex step per character).
        if prefix_length < MIN_ANCHOR or prefix_length >= len(quote_key) or prefix_length * 2 < len(quote_key):
            return None
        # A comment starts with an opener's word at a key position from six before the prefix's end
        # to its end, at least MIN_ANCHOR and half the quote in: a few anchored matches on the key
        # before the separators are looked for (their patterns cost ~40 us on a 300-character quote).
        first = max(prefix_length - 6, MIN_ANCHOR, (len(quote_key) + 1) // 2)
        if quote_key.isascii():
            # One search for the leftmost opener key from the first place on (each match ends within
            # COMMENT_OPENER_KEY_LONGEST): where it starts past the last place, none starts at any.
            opener = COMMENT_OPENER_KEY.search(quote_key, first, prefix_length + 1 + COMMENT_OPENER_KEY_LONGEST)
            if opener is None or opener.start() > prefix_length:
                return None
        boundaries = list(comment_boundaries(quote))
        if not boundaries:
            return None
        # Key characters before each boundary: the key of the text before it, its points and signs
        # read in the whole quote (each character's part of a key is fixed once they are read:
        # what key_offsets counts, without its numpy passes).
        marked = mark_context(quote)
        for boundary_raw in boundaries:
            boundary = len(text_key(marked[:boundary_raw]))
            if not (prefix_length - 6 <= boundary <= prefix_length):
                continue
            if boundary < MIN_ANCHOR or boundary * 2 < len(quote_key):
                continue
            verbatim = self.match(quote[:boundary_raw])
            if not verbatim.grounded or verbatim.verdict != VERBATIM:
                continue
            rest = quote_key[boundary:]
            follow = self.key[position + boundary : position + boundary + len(rest)]
            if similarity(rest, follow) >= 0.6 or self._paraphrases_what_follows(quote[boundary_raw:], verbatim):
                return None  # the paper goes on almost like this: an altered or paraphrased quote
            if _mostly_in(self.grams, rest):
                return None  # the rest is real text from elsewhere: stitched
            return verbatim.key_spans, quote[boundary_raw:].strip()
        return None

    def _paraphrases_what_follows(self, rest: str, verbatim: "CitationMatch") -> bool:
        """Whether ``rest`` (the words after a verbatim start) says what the paper says next, with
        words changed, dropped or moved: a model's own comment shares few words, in order, with
        the sentence the paper goes on with; a paraphrase or an edit of it shares most."""
        from rapidfuzz import fuzz

        end = verbatim.spans[-1][1] if verbatim.spans else 0
        words = plain_words(rest)
        following = plain_words(self.masked_text[end : end + 2 * len(rest) + 40])
        if fuzz.partial_ratio(words, following) >= PARAPHRASE_OF_NEXT:
            return True  # in order, a few words changed or dropped
        # Or most of its words, in another order ("attempt to demonstrations out all filter").
        rest_words, next_words = words.split(), set(following.split())
        shared = sum(1 for word in rest_words if word in next_words)
        return len(rest_words) >= 4 and shared * 100 >= PARAPHRASE_OF_NEXT * len(rest_words)

    def diagnose(self, citation: str, parts: tuple[str, ...]) -> Diagnosis:
        """Why ``citation`` is not grounded (asked by its :class:`CitationMatch` when read)."""
        return diagnosis.diagnose(self, lambda part: self.match(part).grounded, citation, parts,
                                  self._number_taken_in)

    def _number_taken_in(self, quote_key: str) -> tuple[int, int, int] | None:
        """Where a quote that is in the paper only with its furniture (the unmasked key) takes a blanked line
        or page number into its numbers at each place it is found there: the quote key's position of that
        number and the number's raw range, at the first place; None where some place takes none in (or the
        quote is not there), so that is not why the quote is not grounded."""
        if self.unmasked_key is self.key:
            return None
        first, start = None, 0
        for _ in range(_OTHER_PLACES):
            spans = self._locate_parts([quote_key], True, start)
            if spans is None:
                break
            taken = self._furniture_taken_in(spans)
            if taken is None:
                return None
            if first is None:
                # The number's first key character (in the unmasked key), counted within the quote's spans.
                at, done = int(self._unmasked_offsets.searchsorted(taken[0])), 0
                for low, high in spans:
                    if low <= at < high:
                        done += at - low
                        break
                    done += high - low
                first = (done, *taken)
            start = spans[0][0] + 1
        return first


# A thousands-separated number: a leading group of one to three digits (not a lone zero), then groups of three.
_THOUSANDS = re.compile(r"(?:[1-9]\d{0,2})(?:,\d{3})+")
# Before a number on its line: an open bracket, or another number a comma and a space end -- a list of
# numbers ("[43, 44," or the markers of "MMLU-Pro 41, GPQA 42, and IFEval 44,"), whose commas part numbers.
_NUMBER_LIST = re.compile(r"\[[^\]]*$|\d, ")


def _separator_joins(text: str, masked_text: str, low: int, high: int) -> bool:
    """Whether a number blanked from the paper at ``text[low:high]``, glued by extraction right after a comma
    or full stop that follows a digit (``44,`` and the margin's ``499``; ``0.`` and ``193``), reads with the
    number before it as one number. The paper's own line ends at that separator, so there it is punctuation;
    the glued reading counts as a number (and the quote that takes it in as altered) only where it is a
    well-formed one: after a comma, a thousands number (three digits glued to a leading group, the number
    not one of a list); after a full stop, a decimal (the number before it has no point of its own) that
    the paper does not go on from with a new sentence or entry (a capital letter or a bracket next, past
    any furniture: the stop ended the sentence)."""
    glued = text[low:high].strip()
    start = low - 1
    while start > 0 and text[start - 1].isdigit():
        start -= 1
    line_start = text.rfind("\n", 0, start) + 1
    if text[low - 1] == ",":
        # The digits and commas before the separator (a number already grouped, "1,234,"), then the glued digits.
        head = re.search(r"[\d,]*$", text[line_start : low - 1])
        first = line_start + (head.start() if head else 0)
        number = text[first : low - 1] + "," + glued
        if _THOUSANDS.fullmatch(number) is None:
            return False
        return text[first - 1 : first] != "." and _NUMBER_LIST.search(text, line_start, first) is None
    if text[start - 1 : start] == "." and text[start - 2 : start - 1].isdigit():
        return False  # "2501.14249." and "626": a number with a point already; no decimal has two
    following = masked_text[high : high + 200].lstrip()
    return not following[:1].isupper() and following[:1] not in ("[", "\u2022")


def _mostly_in(key: GramIndex, text_key_: str, width: int = 24) -> bool:
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


@functools.lru_cache(maxsize=16)
def _index_for_text(text: str) -> MatchIndex:
    return MatchIndex(text)


def match_index(paper: Union[str, PreparedPaper, HasMatchIndex, "MatchIndex"]) -> MatchIndex:
    """The prepared index of a paper given as text, a Paper (prepared once and kept with it), or an index."""
    if isinstance(paper, MatchIndex):
        return paper
    if isinstance(paper, str):
        return _index_for_text(paper)
    if hasattr(paper, "prepared"):
        return paper.prepared(_index_for_paper)
    return paper.match_index


def _index_for_paper(paper: PreparedPaper) -> MatchIndex:
    return MatchIndex(paper.text, paper.page_starts)


def match_citation(citation: str, paper: Union[str, PreparedPaper, HasMatchIndex, "MatchIndex"]) -> CitationMatch:
    """Decide whether ``citation`` is grounded in ``paper``.

    ``paper`` is plain text, a :class:`~pytest_researchqa.papers.Paper` (as the
    fixtures give it) or a :class:`MatchIndex`. A paper is prepared once;
    repeated calls reuse it.
    """
    return match_index(paper).match(citation)
