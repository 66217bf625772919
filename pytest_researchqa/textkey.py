"""Match keys: the form in which quotes and papers are compared.

A key keeps only letters and digits, case-folded, with compatibility forms
decomposed (ligatures, full-width and superscript forms) and accents dropped.
Everything PDF extraction garbles between words -- whitespace, line breaks,
end-of-line hyphens, stray spaces inside words, quote and dash variants,
non-breaking spaces -- is absent from a key, so it cannot cause a mismatch,
while every letter and digit a quote changes still does.

The key of a text is the concatenation of the keys of its characters; that
property is what lets callers build keys piecewise and map key positions back
to raw offsets (:func:`key_offsets`) only when a message needs them.
"""

from __future__ import annotations

import re
import unicodedata

_ASCII_NON_ALNUM = bytes(c for c in range(128) if not chr(c).isalnum())
_NON_WORD = re.compile(r"[\W_]+")


def text_key(text: str) -> str:
    """Return the match key of ``text``."""
    if text.isascii():
        # bytes.translate deletes in C: the hot path for English papers.
        return text.lower().encode("ascii").translate(None, _ASCII_NON_ALNUM).decode("ascii")
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    return _NON_WORD.sub("", folded)


def key_offsets(text: str):
    """Raw offset in ``text`` of every character of ``text_key(text)`` (a numpy int array).

    Each character contributes ``len(text_key(char))`` key characters (0, 1,
    or more for ligatures and the like), so the offsets are the character
    indices repeated by those widths.
    """
    import numpy

    if text.isascii():
        codes = numpy.frombuffer(text.encode("ascii"), dtype=numpy.uint8)
        return numpy.flatnonzero(_ascii_alnum_table(numpy)[codes])
    codes = numpy.frombuffer(text.encode("utf-32-le"), dtype=numpy.uint32)
    widths = numpy.zeros(len(codes), dtype=numpy.int64)
    ascii_part = codes < 128
    widths[ascii_part] = _ascii_alnum_table(numpy)[codes[ascii_part]]
    for code in numpy.unique(codes[~ascii_part]):
        widths[codes == code] = len(text_key(chr(code)))
    return numpy.repeat(numpy.arange(len(codes)), widths)


def _ascii_alnum_table(numpy):
    table = numpy.zeros(128, dtype=numpy.int64)
    for code in range(128):
        table[code] = chr(code).isalnum()
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
