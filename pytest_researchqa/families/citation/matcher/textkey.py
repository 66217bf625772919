"""Match keys: the form in which quotes and papers are compared.

A key keeps letters and digits, case-folded, with compatibility forms decomposed
(ligatures, full-width and superscript forms) and accents dropped, and the symbols
a number's meaning hangs on: a decimal point between digits (``61.4``, also
written ``61·4``), a sign in front of a number (``-0.32``; any dash or the
Unicode minus), and ``%``, ``<``, ``>``, ``=``, ``+`` (``≤``, ``≥``, ``±``, ``≠``
become ``<=``, ``>=``, ``+``, ``<>``). Everything else PDF extraction garbles
between words -- whitespace, line breaks, end-of-line hyphens, stray spaces
inside words, quote and dash variants, non-breaking spaces, other punctuation --
is absent from a key, so it cannot cause a mismatch, while every changed letter,
digit, decimal point, sign or comparison still does.

A hyphen or dash is a sign only when no letter, digit or closing bracket stands
right before it and a digit follows (``COVID-19`` and ``10-20`` keep no hyphen), or
when it is an exponent's (``5e-5``, as a model types the paper's ``5e−5``);
the Unicode minus sign before a digit always is (``14B−1`` in a table keeps its
sign); a full stop is a decimal point only between two digits.

:func:`key_offsets` gives, for every key character, the offset of the source
character it came from, so key positions map back to the paper's text.
"""

from __future__ import annotations

import codecs
import functools
import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from types import ModuleType

    import numpy as np
    from numpy.typing import NDArray

    # Raw offsets in a text, one a key character (32-bit: texts stay far below 2**31).
    Offsets = NDArray[np.int32]

# Symbols kept wherever they stand.
_KEPT = "%<>=+"
# Characters that stand for a decimal point or a sign in context: markers replace them first.
_DECIMAL_MARK, _SIGN_MARK = "\x01", "\x02"
ASCII_DROPPED = bytes(c for c in range(128)
                       if not chr(c).isalnum() and chr(c) not in _KEPT + _DECIMAL_MARK + _SIGN_MARK)
# Each pattern starts with its literal character, so the regex engine skips to it at C speed.
_DECIMAL_POINT = re.compile(r"\.(?<=\d\.)(?=\d)")
_DECIMAL_MIDDLE_DOT = re.compile(r"\u00b7(?<=\d\u00b7)(?=\d)")
# The Unicode minus sign is never a hyphen: before a number it is a sign wherever it stands.
_MINUS = re.compile(r"\u2212(?=\s?\.?\d)")
# A hyphen or dash is a sign only where no letter, digit or closing bracket stands before it,
# or where it is an exponent's (``5e-5``: a digit and an e before it).
_HYPHEN_SIGN = re.compile(r"-(?:(?<=\d[eE]-)|(?<![^\W_]-)(?<![)\]]-))(?=\s?\.?\d)")
_DASHES = "\u2010\u2011\u2012\u2013\u2014\ufe63\uff0d"  # tested one by one in mark_context
_DASH_SIGN = re.compile(
    r"[\u2010\u2011\u2012\u2013\u2014\ufe63\uff0d](?:(?<=\d[eE].)|(?<![^\W_].)(?<![)\]].))(?=\s?\.?\d)")
# Non-ASCII characters with an ASCII reading, applied before the (fast) ASCII path.
_FOLD = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"', "\u2033": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-", "\u00ad": "",
    "\u00a0": " ", "\u2009": " ", "\u202f": " ", "\u2002": " ", "\u2003": " ", "\u200b": "", "\u2026": "...",
    "\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
    "\u2264": "<=", "\u2265": ">=", "\u2266": "<=", "\u2267": ">=", "\u00b1": "+", "\u2260": "<>",
    "\u00d7": " ", "\u00b7": " ",
})
_NON_KEY = re.compile(r"[^\w%<>=+\x01\x02]|_")


def has_digit(text: str) -> bool:
    # Ten memchr scans beat one regex scan of a character class several times over.
    return ("0" in text or "1" in text or "2" in text or "3" in text or "4" in text
            or "5" in text or "6" in text or "7" in text or "8" in text or "9" in text)


def mark_context(text: str) -> str:
    """Replace decimal points and signs by markers (same length): they survive key building."""
    if not ("0" in text or "1" in text or "2" in text or "3" in text or "4" in text
            or "5" in text or "6" in text or "7" in text or "8" in text or "9" in text):
        return text  # no number, nothing to mark (most quotes); has_digit inline: a call per key saved
    return _mark_numbers(text)


def _mark_numbers(text: str) -> str:
    """:func:`mark_context` of a text known to hold an ASCII digit."""
    # A substitution costs several times a search that finds nothing (most texts: no decimal point,
    # no sign): each pattern is searched for first.
    if "." in text and _DECIMAL_POINT.search(text):
        text = _DECIMAL_POINT.sub(_DECIMAL_MARK, text)
    if "-" in text and _HYPHEN_SIGN.search(text):
        text = _HYPHEN_SIGN.sub(_SIGN_MARK, text)
    if not text.isascii():
        if "\u00b7" in text and _DECIMAL_MIDDLE_DOT.search(text):
            text = _DECIMAL_MIDDLE_DOT.sub(_DECIMAL_MARK, text)
        if "\u2212" in text and _MINUS.search(text):
            text = _MINUS.sub(_SIGN_MARK, text)
        # _DASHES, one test each (a generator over them costs ten times these tests); a dash in a range
        # ("10\u201320") or between words is no sign, so the pattern is searched for before it substitutes.
        if ("\u2013" in text or "\u2014" in text or "\u2010" in text or "\u2011" in text or "\u2012" in text
                or "\ufe63" in text or "\uff0d" in text) and _DASH_SIGN.search(text):
            text = _DASH_SIGN.sub(_SIGN_MARK, text)
    return text


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_FOLD_CHARS = {chr(code): replacement for code, replacement in _FOLD.items()}


def _fold_char(match: re.Match[str]) -> str:
    char = match.group()
    return _FOLD_CHARS.get(char, char)


MARKS_BACK_BYTES = bytes.maketrans(_DECIMAL_MARK.encode() + _SIGN_MARK.encode(), b".-")
# One bytes.translate table for a key: ASCII letters lowered and the markers read back as a point and a sign.
KEY_BYTES = bytes(range(256)).lower().translate(MARKS_BACK_BYTES)


@functools.lru_cache(maxsize=4096)
def _ascii_reading(char: str) -> str | None:
    """What a non-ASCII character contributes to a key, when that is ASCII (``ﬁ`` -> ``fi``,
    ``é`` -> ``e``, ``’`` -> ``'``, dropped later); None when it keeps a letter of its own."""
    reading = _FOLD_CHARS.get(char)
    if reading is None:
        reading = _NON_KEY.sub("", unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", char).casefold()))
    return reading if reading.isascii() else None


def _fold_to_ascii(error: UnicodeError) -> tuple[str, int]:
    """Encoding error handler: each non-ASCII character replaced by its ASCII reading."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    readings = []
    for char in error.object[error.start : error.end]:
        reading = _ascii_reading(char)
        if reading is None:
            raise error  # a character with no ASCII reading (Greek, CJK): the general path
        readings.append(reading)
    return "".join(readings), error.end


_FOLD_HANDLER = "pytest-researchqa-textkey"
codecs.register_error(_FOLD_HANDLER, _fold_to_ascii)


def text_key(text: str) -> str:
    """Return the match key of ``text``."""
    # Points and signs are read first, from the text as written (a Unicode minus is always a
    # sign, a hyphen only in context); the markers are ASCII and survive what follows. Only a
    # text with a digit has any (most quotes have none: the test inline, a call saved).
    if ("0" in text or "1" in text or "2" in text or "3" in text or "4" in text
            or "5" in text or "6" in text or "7" in text or "8" in text or "9" in text):
        text = _mark_numbers(text)
    if text.isascii():
        # bytes operations run in C: the hot path for English papers and quotes.
        return text.encode("ascii").translate(KEY_BYTES, ASCII_DROPPED).decode("ascii")
    return _folded_key(text)


def _folded_key(text: str) -> str:
    """The key of marked text by the encoding handler (the general path for characters with no ASCII reading)."""
    text = _fold_common(text)
    try:
        # The ASCII codec copies ASCII at C speed and calls the handler for the rest only.
        data = text.encode("ascii", _FOLD_HANDLER)
    except UnicodeEncodeError:
        return _general_key(text)
    return data.translate(KEY_BYTES, ASCII_DROPPED).decode("ascii")


# The non-ASCII characters quotes carry most (typographic quotes, dashes, ligatures; then the section
# sign, bullets, operators that PDF text holds), most common first, with their readings: each costs
# the encoding handler a Python call (~1.5 us) where a replace costs a C scan.
_COMMON_FOLDS = tuple(
    (char, _ascii_reading(char) or "")
    for char in "\u201d\u201c\u2019\u2013\u2018\ufb01\u2014\u2212\ufb02\u00a7\u2022\u2217\u223c\u02db")


def _fold_common(text: str) -> str:
    """``text`` with the common non-ASCII characters replaced by their readings in ``_FOLD``: what
    the encoding handler (and :func:`_general_key`) would put in their place."""
    for char, reading in _COMMON_FOLDS:
        if char in text:
            text = text.replace(char, reading)
    return text


_PART_MARK = "\x03"
ASCII_DROPPED_BUT_PARTS = ASCII_DROPPED.replace(_PART_MARK.encode(), b"")


def part_keys(text: str) -> list[str]:
    """The keys of the parts of ``text`` between elision marks (``...`` or ``…``), in one pass:
    the same as ``text_key`` of each part, empty ones included."""
    text = text.replace("\u2026", _PART_MARK).replace("...", _PART_MARK)
    marked = mark_context(text)
    if marked.isascii():
        return marked.encode("ascii").translate(KEY_BYTES, ASCII_DROPPED_BUT_PARTS).decode("ascii").split(_PART_MARK)
    try:
        data = _fold_common(marked).encode("ascii", _FOLD_HANDLER)
    except UnicodeEncodeError:
        return [text_key(part) for part in text.split(_PART_MARK)]
    return data.translate(KEY_BYTES, ASCII_DROPPED_BUT_PARTS).decode("ascii").split(_PART_MARK)


def _general_key(text: str) -> str:
    """The key of marked text with characters that keep a non-ASCII letter (Greek, CJK...)."""
    text = _NON_ASCII.sub(_fold_char, text)
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    key = _NON_KEY.sub("", folded)
    if _DECIMAL_MARK in key or _SIGN_MARK in key:
        # Two replaces (C scans): str.translate looks each character of a text beyond ASCII up in a dict.
        key = key.replace(_DECIMAL_MARK, ".").replace(_SIGN_MARK, "-")
    return key


def key_offsets(text: str) -> Offsets:
    """Raw offset in ``text`` of every character of ``text_key(text)`` (a numpy int array).

    Each source character contributes a fixed number of key characters (0, 1, or
    more for ligatures, ``≤`` and the like; 1 for a decimal point or a sign in
    context), so the offsets are the character indices repeated by those widths.
    """
    import numpy

    # 32-bit offsets: a paper's map costs 4 bytes a key character (texts stay far below 2**31).
    marked = mark_context(text)
    if marked.isascii():  # each character gives one key character or none: where its flag is 1
        flags = numpy.frombuffer(marked.encode("ascii").translate(ASCII_KEY_FLAGS), dtype=numpy.bool_)
        return numpy.flatnonzero(flags).astype(numpy.int32)
    widths = _marked_widths(marked)
    return numpy.repeat(numpy.arange(len(widths), dtype=numpy.int32), widths)


def key_flags(text: str) -> bytes | None:
    """One byte a character of ``text``: 1 where it gives a character of ``text_key(text)`` (points and
    signs read in context), 0 where it gives none; None where a character gives more than one (a
    ligature, ``≤``). The ``n``-th 1 is where :func:`key_offsets` says the ``n``-th key character is."""
    marked = mark_context(text)
    if marked.isascii():
        return marked.encode("ascii").translate(ASCII_KEY_FLAGS)
    import numpy

    widths = _marked_widths(marked)
    return widths.astype(numpy.uint8).tobytes() if widths.max(initial=0) <= 1 else None


def _marked_widths(marked: str) -> NDArray[np.int64]:
    """How many key characters each character of marked text (not all ASCII) gives."""
    import numpy

    codes = numpy.frombuffer(marked.encode("utf-32-le"), dtype=numpy.uint32)
    widths = numpy.zeros(len(codes), dtype=numpy.int64)
    ascii_part = codes < 128
    widths[ascii_part] = _ascii_widths(numpy)[codes[ascii_part]]
    # Each distinct non-ASCII character's width once, spread to its occurrences.
    distinct, where = numpy.unique(codes[~ascii_part], return_inverse=True)
    distinct_widths = numpy.array([len(text_key(chr(code))) for code in distinct.tolist()], dtype=numpy.int64)
    widths[~ascii_part] = distinct_widths[where] if len(distinct) else 0
    return widths


# For each byte of marked ASCII text, 1 where the character gives a key character (bytes.translate's table).
ASCII_KEY_FLAGS = bytes(chr(code).isalnum() or chr(code) in _KEPT + _DECIMAL_MARK + _SIGN_MARK
                        for code in range(128)) + bytes(128)


@functools.lru_cache(maxsize=1)  # one table, built on first use
def _ascii_widths(numpy: ModuleType) -> NDArray[np.int64]:
    table: NDArray[np.int64] = numpy.zeros(128, dtype=numpy.int64)
    for code in range(128):
        char = chr(code)
        table[code] = char.isalnum() or char in _KEPT or char in (_DECIMAL_MARK, _SIGN_MARK)
    return table


def common_prefix_length(a: str, a_start: int, b: str, b_start: int) -> int:
    """Length of the longest common prefix of ``a[a_start:]`` and ``b[b_start:]``."""
    low, high = 0, min(len(a) - a_start, len(b) - b_start)
    if high <= 0:
        return 0
    try:
        # Both as Latin-1 bytes (keys nearly always are), read as integers: the lowest bit
        # where they differ is in the first differing character, found in a few C steps.
        differ = (int.from_bytes(a[a_start : a_start + high].encode("latin-1"), "little")
                  ^ int.from_bytes(b[b_start : b_start + high].encode("latin-1"), "little"))
    except UnicodeEncodeError:
        pass
    else:
        return high if not differ else ((differ & -differ).bit_length() - 1) // 8
    # Binary search on startswith: each probe runs in C.
    while low < high:
        middle = (low + high + 1) // 2
        if a.startswith(b[b_start : b_start + middle], a_start):
            low = middle
        else:
            high = middle - 1
    return low
