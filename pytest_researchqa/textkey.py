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
right before it and a digit follows (``COVID-19`` and ``10-20`` keep no hyphen);
the Unicode minus sign before a digit always is (``14B−1`` in a table keeps its
sign); a full stop is a decimal point only between two digits.

:func:`key_offsets` gives, for every key character, the offset of the source
character it came from, so key positions map back to the paper's text.
"""

from __future__ import annotations

import re
import unicodedata

# Symbols kept wherever they stand.
_KEPT = "%<>=+"
# Characters that stand for a decimal point or a sign in context: markers replace them first.
_DECIMAL_MARK, _SIGN_MARK = "\x01", "\x02"
_ASCII_DROPPED = bytes(c for c in range(128)
                       if not chr(c).isalnum() and chr(c) not in _KEPT + _DECIMAL_MARK + _SIGN_MARK)
_DECIMAL = re.compile(r"[.\u00b7](?<=\d[.\u00b7])(?=\d)")
_SIGN = re.compile(
    # The Unicode minus sign is never a hyphen: before a number it is a sign wherever it stands.
    r"\u2212(?=\s?\.?\d)"
    # A hyphen or dash is a sign only where no letter, digit or closing bracket stands before it.
    r"|[-\u2010\u2011\u2012\u2013\u2014\ufe63\uff0d](?<![^\W_].)(?<![)\]].)(?=\s?\.?\d)"
)
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
_MARKS_BACK = str.maketrans({_DECIMAL_MARK: ".", _SIGN_MARK: "-"})


_DIGIT = re.compile(r"[0-9]")


def _mark_context(text: str) -> str:
    """Replace decimal points and signs by markers (same length): they survive key building."""
    if not _DIGIT.search(text):
        return text  # no number, nothing to mark (most quotes): spare the two scans
    if "." in text or "\u00b7" in text:
        text = _DECIMAL.sub(_DECIMAL_MARK, text)
    if "-" in text or not text.isascii():
        text = _SIGN.sub(_SIGN_MARK, text)
    return text


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_FOLD_CHARS = {chr(code): replacement for code, replacement in _FOLD.items()}


def _fold_char(match: re.Match[str]) -> str:
    char = match.group()
    return _FOLD_CHARS.get(char, char)


_NON_DIGIT_BYTES = bytes(c for c in range(256) if not chr(c).isdigit())
_MARKS_BACK_BYTES = bytes.maketrans(_DECIMAL_MARK.encode() + _SIGN_MARK.encode(), b".-")


def text_key(text: str) -> str:
    """Return the match key of ``text``."""
    # Points and signs are read first, from the text as written (a Unicode minus is always a
    # sign, a hyphen only in context); the markers are ASCII and survive what follows.
    text = _mark_context(text)
    if not text.isascii():
        # Fold only the non-ASCII characters: str.translate costs per character, and most are ASCII.
        text = _NON_ASCII.sub(_fold_char, text)
    if text.isascii():
        # bytes operations run in C: the hot path for English papers and quotes.
        return text.encode("ascii").lower().translate(_MARKS_BACK_BYTES, _ASCII_DROPPED).decode("ascii")
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    key = _NON_KEY.sub("", folded)
    if _DECIMAL_MARK in key or _SIGN_MARK in key:
        key = key.translate(_MARKS_BACK)
    return key


def key_offsets(text: str):  # -> numpy.ndarray
    """Raw offset in ``text`` of every character of ``text_key(text)`` (a numpy int array).

    Each source character contributes a fixed number of key characters (0, 1, or
    more for ligatures, ``≤`` and the like; 1 for a decimal point or a sign in
    context), so the offsets are the character indices repeated by those widths.
    """
    import numpy

    marked = _mark_context(text)
    if marked.isascii():
        codes = numpy.frombuffer(marked.encode("ascii"), dtype=numpy.uint8)
        return numpy.flatnonzero(_ascii_widths(numpy)[codes])
    codes = numpy.frombuffer(marked.encode("utf-32-le"), dtype=numpy.uint32)
    widths = numpy.zeros(len(codes), dtype=numpy.int64)
    ascii_part = codes < 128
    widths[ascii_part] = _ascii_widths(numpy)[codes[ascii_part]]
    for code in numpy.unique(codes[~ascii_part]):
        widths[codes == code] = len(text_key(chr(code)))
    return numpy.repeat(numpy.arange(len(codes)), widths)


def _ascii_widths(numpy):  # -> numpy.ndarray
    table = numpy.zeros(128, dtype=numpy.int64)
    for code in range(128):
        char = chr(code)
        table[code] = char.isalnum() or char in _KEPT or char in (_DECIMAL_MARK, _SIGN_MARK)
    return table


def common_prefix_length(a: str, a_start: int, b: str, b_start: int) -> int:
    """Length of the longest common prefix of ``a[a_start:]`` and ``b[b_start:]``."""
    low, high = 0, min(len(a) - a_start, len(b) - b_start)
    # Binary search on startswith: each probe runs in C.
    while low < high:
        middle = (low + high + 1) // 2
        if a.startswith(b[b_start : b_start + middle], a_start):
            low = middle
        else:
            high = middle - 1
    return low
