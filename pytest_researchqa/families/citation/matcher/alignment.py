"""Lining a quote's key up with the paper's key.

:func:`locate` finds where a quote is in the paper as a quote may have it: exactly,
or in runs the paper interrupts with page furniture (a page break's footnotes, footer and
header; a short number such as a margin line number or a citation marker) or with text the
reader put between a sentence's halves (a figure, a table, the other column), and, for an
elided quote, each part within ELISION_WINDOW of its neighbour, in order (:func:`around_anchor`);
:class:`Flow` says where a text's lines begin and whether it reads on across a gap. :func:`align` finds
where a quote that is not there is nearest, for the account of why.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Iterator, Sequence

from .textkey import common_prefix_length

if TYPE_CHECKING:  # pragma: no cover
    from .grams import GramIndex
    from .textkey import Offsets

# A verbatim piece this long anchors a page-break walk or a commentary split.
MIN_ANCHOR = 20
# A shorter anchor serves only where a short number glued into the paper ends it (see locate).
MIN_GAPPED_ANCHOR = 12
# A quote may run over at most this many page breaks; between its parts the
# paper may hold footnotes and a footer (before the break) and a header after.
MAX_PAGE_JUMPS = 2
PAGE_TAIL_LIMIT = 1500
PAGE_HEAD_LIMIT = 300
MIN_RESUMED_RUN = 12
DIGIT_GAP_LIMIT = 6
ELISION_WINDOW = 4000


class Flow:
    """Where the lines of a text begin (in key positions) and whether text reads on across a gap.

    A jump over text the reader interposed (a page's footer and the next page's header, a
    figure, a table, the other column) is allowed only from exactly where a line ends, where
    the text's own next line does not carry on the open sentence, to exactly where a later
    line begins, and only where the two halves read on as one sentence.
    """

    def __init__(self, offsets: Offsets, text: str) -> None:
        import numpy

        self._offsets, self._text = offsets, text
        breaks = [m.end() for m in re.finditer(r"\n\s*", text)]
        # One byte a key position (and one past the end), 1 where a line starts: a look-up touches one
        # byte where a search of a list of line starts reads a dozen of its numbers, each apart in memory.
        starts = numpy.zeros(len(offsets) + 1, dtype=numpy.uint8)
        if breaks:
            starts[offsets.searchsorted(breaks)] = 1
        self._line_starts = starts.tobytes()

    @property
    def line_starts(self) -> list[int]:
        """The key positions where a line begins, ascending."""
        return [at for at, start in enumerate(self._line_starts) if start]

    def at_line_start(self, position: int) -> bool:
        return 0 <= position < len(self._line_starts) and self._line_starts[position] == 1

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
        if closing[:1] in (".", "!", "?") or not text[int(offsets[end])].islower():
            return False
        # A figure's own labels ("no_suffix random_suffix") are in lower case too, but no sentence
        # carries on with an identifier: the reader put the figure in between.
        start = int(offsets[end])
        return "_" not in text[start : start + 40].split(maxsplit=1)[0]


def _find(key: str, grams: "GramIndex | None", text: str, low: int, high: int) -> int:
    """``key.find(text, low, high)``, from ``grams`` (the key's index) where there is one."""
    return key.find(text, low, high) if grams is None else grams.find(text, low, high)


def _occurrences(key: str, grams: "GramIndex | None", text: str, low: int, high: int) -> Iterator[int]:
    """Every start of ``text`` in ``key[low:high]``, ascending, from ``grams`` where there is one."""
    if grams is not None:
        yield from grams.occurrences(text, low, high)
        return
    found = key.find(text, low, high)
    while found >= 0:
        yield found
        found = key.find(text, found + 1, high)


def around_anchor(key: str, pages: tuple[int, ...], flow: "Flow", keys: list[str], anchor: int,
                   spans: list[tuple[int, int]], grams: "GramIndex | None" = None) -> list[tuple[int, int]] | None:
    """The spans of every part of an elided quote, in order, each within ELISION_WINDOW of its
    neighbour, around the anchor part's ``spans``."""
    for part in reversed(keys[:anchor]):
        start = spans[0][0]
        found = locate(key, pages, part, max(0, start - ELISION_WINDOW - len(part)), start, flow, grams)
        if found is None:
            return None
        spans[:0] = found
    for part in keys[anchor + 1:]:
        end = spans[-1][1]
        found = locate(key, pages, part, end, min(len(key), end + ELISION_WINDOW + len(part)), flow, grams)
        if found is None:
            return None
        spans.extend(found)
    return spans


def locate(key: str, page_starts: Sequence[int], quote_key: str, low: int, high: int,
            flow: "Flow | None" = None, grams: "GramIndex | None" = None) -> list[tuple[int, int]] | None:
    """Key spans of ``quote_key`` in ``key[low:high]``, allowing furniture gaps.

    ``grams`` is the key's index: its look-ups answer what scans of ``key`` would, without the scan.
    With ``flow`` (the text's line starts), the quote may also jump over text the reader put
    between a sentence's halves: a page's footer and the next one's header, or a figure, a
    table or the other column on the same or the next page."""
    found = _find(key, grams, quote_key, low, high)
    if found >= 0:
        return [(found, found + len(quote_key))]
    if _find(key, grams, quote_key[:MIN_GAPPED_ANCHOR], low, high) < 0:
        return None  # every way on below starts with the quote's first MIN_GAPPED_ANCHOR characters
    length, position = anchored_prefix(key, quote_key, low, high, grams=grams)
    if length < min(MIN_ANCHOR, len(quote_key)):
        # A citation marker or line number glued in before the anchor's length ("optimizer30 with").
        length, position = _prefix_before_digit_gap(key, quote_key, low, high, grams)
        if position < 0:
            return None
    spans = [(position, position + length)]
    done, cursor, page_jumps = length, position + length, 0
    while done < len(quote_key):
        resume = _after_digit_gap(key, quote_key, done, cursor)
        if (resume is None and page_jumps < MAX_PAGE_JUMPS and flow is not None and flow.at_line_start(cursor)
                and not flow.carries_on(cursor)):
            resume = _after_page_break(key, page_starts, flow, quote_key, done, cursor, high, grams)
            if resume is None:
                resume = _after_line_jump(key, page_starts, flow, quote_key, done, cursor, high,
                                          begun=max(low, spans[0][0]), grams=grams)
            page_jumps += 1
        if resume is None:
            return None
        run = common_prefix_length(key, resume, quote_key, done)
        spans.append((resume, resume + run))
        done, cursor = done + run, resume + run
    return spans


# More occurrences of a quote's first MIN_GAPPED_ANCHOR key characters than this, and
# stuck_prefix leaves the question to locate.
STUCK_OCCURRENCES = 24
# Key characters stuck_prefix reads after a verbatim run (a digit gap: up to DIGIT_GAP_LIMIT + 1 digits,
# then 8 characters of the quote), with room to spare.
STUCK_LOOK_ON = 24


def stuck_prefix(key: str, grams: "GramIndex", flow: "Flow", quote_key: str, tries: int = 8,
                 runs: list[tuple[int, int]] | None = None, starts: list[int] | None = None) -> tuple[int, int] | None:
    """When ``locate(key, pages, quote_key, 0, len(key), flow, grams)`` surely finds nothing, what
    ``anchored_prefix(key, quote_key, 0, len(key), tries)`` answers (length, position); None when it
    may find something (the caller then asks locate).

    locate's searches, retraced from one look-up of the quote's first MIN_GAPPED_ANCHOR key
    characters and a comparison at each occurrence: the anchored prefix is the longest verbatim
    start among the first ``tries`` occurrences of its first MIN_ANCHOR characters; when it is
    shorter than that, locate tries a prefix cut by a digit gap at each of the first ``tries``
    occurrences of the first MIN_GAPPED_ANCHOR. Most quotes that are not in the paper stop being
    verbatim where the paper goes on with neither a digit gap nor a new line that may be jumped:
    then the walk has no way on, and locate returns nothing. (Bounds are the whole key: a window
    would cut runs short.) A quote found whole at an occurrence past those read is no quote stuck:
    None. ``runs``, when given, gets every occurrence and the length of the verbatim run from it (those
    past the ones the answer was read from too), with the STUCK_LOOK_ON key characters after each
    (``PaperIndex.furniture_apart`` tells from them whether the unmasked key would answer alike). ``starts``,
    when given, are every start of the quote's first MIN_GAPPED_ANCHOR key characters (fewer than
    STUCK_OCCURRENCES), as :meth:`~.grams.GramIndex.find_or_starts` read them.
    """
    length_of_quote = len(quote_key)
    quote_code = _latin1_code(quote_key)  # the quote's half of each comparison, done once
    best, best_at, anchored, gapped, seen = 0, -1, 0, False, 0
    if starts is None:
        starts = grams.starts(quote_key[:MIN_GAPPED_ANCHOR], STUCK_OCCURRENCES + 1)
    for found in starts:
        seen += 1
        if seen > STUCK_OCCURRENCES:
            return None
        length = _run_from(key, found, quote_key, quote_code)
        if length >= length_of_quote:
            return None  # verbatim here
        if runs is not None:
            runs.append((found, length))
        if length >= MIN_ANCHOR and anchored < tries:  # an occurrence of the anchor, in order
            anchored += 1
            if length > best:
                best, best_at = length, found
        if seen <= tries and not gapped and key[found + length : found + length + 1].isdigit():
            gapped = _after_digit_gap(key, quote_key, length, found + length) is not None
        if anchored >= tries and seen >= tries:
            # Occurrences left unread may hold the whole quote (a sentence the paper repeats, the
            # one quoted not among the first): where it is there, locate finds it at once.
            if grams.find(quote_key) >= 0:
                return None
            if runs is not None:
                # The runs say where every occurrence stops (furniture_apart reads them): those not read too.
                if len(starts) > STUCK_OCCURRENCES:
                    return None
                runs.extend((later, _run_from(key, later, quote_key, quote_code)) for later in starts[seen:])
            break
    if best >= min(MIN_ANCHOR, length_of_quote):
        # locate walks on from the anchored prefix only.
        return None if _walk_has_a_step(key, flow, quote_key, best, best_at + best) else (best, best_at)
    return None if gapped else (best, best_at)


def _latin1_code(text: str) -> int:
    """``text``'s Latin-1 bytes read as one integer (the first character lowest), or -1 where it holds
    a character beyond Latin-1."""
    try:
        return int.from_bytes(text.encode("latin-1"), "little")
    except UnicodeEncodeError:
        return -1


def _run_from(key: str, found: int, quote_key: str, quote_code: int) -> int:
    """``common_prefix_length(key, found, quote_key, 0)``, given ``quote_code``, the quote's
    :func:`_latin1_code`: the lowest differing bit of the two codes is in the first differing character."""
    piece = key[found : found + len(quote_key)]
    try:  # (_latin1_code, inline: a call an occurrence saved)
        code = int.from_bytes(piece.encode("latin-1"), "little") if quote_code >= 0 else -1
    except UnicodeEncodeError:
        code = -1
    if code < 0:
        return common_prefix_length(key, found, quote_key, 0)
    differ = code ^ (quote_code if len(piece) == len(quote_key) else quote_code & ((1 << 8 * len(piece)) - 1))
    return ((differ & -differ).bit_length() - 1) // 8 if differ else len(piece)


def _digit_gap_after(key: str, quote_key: str, done: int, cursor: int) -> bool:
    """Whether the paper has a short number at ``cursor`` (where a verbatim run of ``done`` characters
    stops) that the quote lacks and carries on after."""
    return cursor < len(key) and key[cursor].isdigit() and _after_digit_gap(key, quote_key, done, cursor) is not None


def _walk_has_a_step(key: str, flow: "Flow", quote_key: str, done: int, cursor: int) -> bool:
    """Whether locate's walk, having matched ``done`` characters of the quote up to ``cursor``, can take a
    first step: a digit gap, or a line start the text's own next line does not carry on from."""
    if _digit_gap_after(key, quote_key, done, cursor):
        return True
    return flow.at_line_start(cursor) and not flow.carries_on(cursor)


# The last two searches of anchored_prefix (in a paper's key and in its unmasked key): arguments, answer.
_last_anchored: list[tuple[tuple[str, str, int, int, int], tuple[int, int]]] = [(("", "", 0, 0, 0), (0, -1))] * 2


def anchored_prefix(key: str, quote_key: str, low: int, high: int, tries: int = 8,
                    grams: "GramIndex | None" = None) -> tuple[int, int]:
    """The longest prefix of at least MIN_ANCHOR characters: one find, then extend.

    Anchors of MIN_ANCHOR key characters are nearly unique in a paper, so the
    longest prefix starts at one of the anchor's few occurrences (from ``grams``, the key's
    index, where there is one).
    """
    for asked, answer in _last_anchored:
        if asked[0] is key and asked[1:] == (quote_key, low, high, tries):
            return answer  # the same search again (a commentary split after the search that failed)
    tries_asked = tries
    anchor = quote_key[:MIN_ANCHOR]
    best, position = 0, -1
    for found in _occurrences(key, grams, anchor, low, high):
        if not tries:
            break
        length = min(common_prefix_length(key, found, quote_key, 0), high - found)
        if length > best:
            best, position = length, found
        tries -= 1
    _last_anchored[:] = [((key, quote_key, low, high, tries_asked), (best, position)), _last_anchored[0]]
    return best, position


def _prefix_before_digit_gap(key: str, quote_key: str, low: int, high: int, grams: "GramIndex | None" = None,
                             tries: int = 8) -> tuple[int, int]:
    """A prefix shorter than MIN_ANCHOR that ends where the paper has a short number the quote lacks
    (a superscript citation marker or a margin line number) and the quote carries on right after it."""
    anchor = quote_key[:MIN_GAPPED_ANCHOR]
    if len(anchor) < MIN_GAPPED_ANCHOR:
        return 0, -1
    for found in _occurrences(key, grams, anchor, low, high):
        if not tries:
            break
        length = common_prefix_length(key, found, quote_key, 0)
        if length < len(quote_key) and _after_digit_gap(key, quote_key, length, found + length) is not None:
            return length, found
        tries -= 1
    return 0, -1


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


def _after_page_break(key: str, page_starts: Sequence[int], flow: "Flow", quote_key: str, done: int,
                      cursor: int, high: int, grams: "GramIndex | None" = None) -> int | None:
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
    return _resumption(key, flow, quote_key, done, cursor, boundary, window_end, MIN_RESUMED_RUN, grams)


def _after_line_jump(key: str, page_starts: Sequence[int], flow: "Flow", quote_key: str,
                     done: int, cursor: int, high: int, begun: int = 0, grams: "GramIndex | None" = None) -> int | None:
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
    found = _resumption(key, flow, quote_key, done, cursor, cursor + 1, min(limit, high), MIN_ANCHOR, grams)
    if found is None and page_starts:
        found = _resumption(key, flow, quote_key, done, cursor, page_starts[page], begun, MIN_ANCHOR, grams)
    return found


def _resumption(key: str, flow: "Flow", quote_key: str, done: int, cursor: int, low: int, high: int,
                needed: int, grams: "GramIndex | None" = None) -> int | None:
    """The first line start in ``key[low:high]`` where the quote's rest resumes (its next
    ``needed`` characters, or all of it) and reads on from ``cursor``."""
    probe = quote_key[done : done + min(needed, len(quote_key) - done)]
    for found in _occurrences(key, grams, probe, low, high):
        if flow.at_line_start(found) and flow.reads_on(cursor, found):
            return found
    return None


ALIGN_CHUNK = 12  # key characters: pieces of the quote looked up to find where it is nearest


def align(key: str, quote_key: str) -> tuple[int, int] | None:
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


def longest_end(key: str, quote_key: str, from_end: bool = False) -> tuple[int, int]:
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


def similarity(a: str, b: str) -> float:
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.normalized_similarity(a, b)
