"""How a citation is read before it is looked for: its parts between elision marks, the quotes
wrapped around it, whether it only points somewhere (a reference, a link, a label), and where a
comment of the model's own may begin after it.
"""

from __future__ import annotations

import re
from typing import Iterable

from .textkey import has_digit

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
# The match keys of _COMMENT_OPENER's words (its separators and spaces hold no key characters): a
# comment's key starts with one of these wherever its opener stands (keys beyond ASCII aside, where a
# dotless i may stand for an i). Kept beside the pattern: each word there has its key here.
COMMENT_OPENER_KEY = re.compile(
    r"this|these|that|those|which|ie|eg|inotherwords|here|thus|so|hence|therefore|meaning|note|notably|"
    r"indicating|suggesting|showing|inshort|overall|essentially|importantly|theauthor|according|"
    r"asshown|asnoted|asstated"
)
# The longest of those keys: a match starting at a position ends at most this far on.
COMMENT_OPENER_KEY_LONGEST = max(map(len, COMMENT_OPENER_KEY.pattern.split("|")))

# Citations that only point somewhere: an author-year or numbered reference, a DOI, a URL, an
# arXiv id, a figure or table label. They cannot support a claim, so they never count.
REFERENCE_ONLY = re.compile(
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
REFERENCE_MAX_LENGTH = 160  # a pointer is short: longer citations skip the check


def is_pointer(citation: str, keys: Iterable[str]) -> bool:
    """Whether ``citation`` only points somewhere (REFERENCE_ONLY, wrapping and a final full stop aside);
    ``keys`` are the match keys of its text (of its parts between elision marks).

    The pattern costs 3-7 us on a quote; the keys tell at C speed what most quotes lack. Every pointer
    it matches holds "://", "www." or "doi" (a web address or a DOI), "[" (a reference number), "/"
    (a DOI's suffix), or a digit with a year ("19.." or "20.."), "arXiv" or a label's word (Figure,
    Fig., Table, Tab., Algorithm, Equation, Eq., Section, Appendix), in any case. A key keeps every
    digit (any Unicode digit stays one, or becomes an ASCII one) and the letters case-folded (the long
    s the pattern takes for an s becomes one); a key beyond ASCII (a dotless i the pattern takes for
    an i) is left to the pattern.
    """
    if len(citation) >= REFERENCE_MAX_LENGTH:
        return False
    if not ("://" in citation or "[" in citation or "/" in citation):
        for key in keys:
            if not key.isascii() or "www" in key or "doi" in key:
                break
        else:
            if not any(map(has_digit, keys)) or not any(map(_has_label, keys)):
                return False
    return REFERENCE_ONLY.fullmatch(strip_wrapping(citation).rstrip(".;,")) is not None


def _has_label(key: str) -> bool:
    """Whether a key holds a year's first digits, "arxiv" or a label's word (as REFERENCE_ONLY reads them)."""
    return ("19" in key or "20" in key or "fig" in key or "tab" in key or "eq" in key or "section" in key
            or "appendix" in key or "algorithm" in key or "arxiv" in key)


# A bibliography entry names authors and a year, a venue or an identifier.
_FULL_NAME = r"(?:[A-Z][\w'’.-]*\s+){1,3}[A-Z][\w'’-]+"
LOOKS_LIKE_REFERENCE = re.compile(
    r"\bet al\.|\b(?:19|20)\d\d[a-z]?\b.*(?:Proceedings|Conference|Journal|arXiv|preprint|URL|doi|Press|pp\.|vol\.)"
    r"|(?:Proceedings|arXiv|preprint|doi|URL)\b.*\b(?:19|20)\d\d\b|[A-Z][a-z]+,\s+[A-Z]\.(?:\s*[A-Z]\.)*,?\s+(?:&|and)\s"
    # An entry led by its authors' full names ("Bowen Baker, Joost Huizinga, ..., and David Farhi.
    # Monitoring reasoning models ..., 2025."): names, a full stop, then a title with a year.
    rf"|^\s*{_FULL_NAME}(?:,\s+(?:and\s+)?{_FULL_NAME})*,?(?:\s+and\s+{_FULL_NAME})?\.\s+\S.*\b(?:19|20)\d\d\b"
    rf"|^\s*{_FULL_NAME}(?:,\s+(?:and\s+)?{_FULL_NAME})+,?(?:\s+and\s+{_FULL_NAME})?\.\s+[A-Z]",  # 2+ names
    re.DOTALL,
)


def split_elisions(quote: str) -> list[str]:
    """``[part.strip() for part in _ELISION.split(quote)]``: the parts between elision marks."""
    # The regex backtracks on every space; most quotes have no elision at all.
    if "…" not in quote and ".." not in quote and ". ." not in quote:
        return [quote]
    # Every mark starts with one of these characters: the pattern is matched only where one stands
    # (found by C scans). Searched for, it is tried at every character (~50 us on a 700-character quote).
    places = sorted(at for char in _ELISION_STARTS for at in _places(quote, char))
    parts, end = [], 0
    for at in places:
        if at < end:
            continue  # inside the last mark
        found = _ELISION.match(quote, at)
        if found is not None:
            parts.append(quote[end:at].strip())
            end = found.end()
    parts.append(quote[end:].strip())
    return parts


_ELISION_STARTS = "[(.…"


def _places(text: str, char: str) -> list[int]:
    """Every offset of ``char`` in ``text``."""
    places = []
    at = text.find(char)
    while at >= 0:
        places.append(at)
        at = text.find(char, at + 1)
    return places


_WRAPPING = "\"'“”‘’«»„`"
EDGES = " \t\n\r.\u2026" + _WRAPPING


def strip_wrapping(citation: str) -> str:
    return citation.strip().strip(_WRAPPING).strip()


def comment_boundaries(quote: str) -> Iterable[int]:
    """Raw offsets in ``quote`` where a clearly separated comment may begin.

    A separator (dash, parenthesis, colon, semicolon or sentence end) followed
    by a discourse opener ("this shows", "i.e.", "which", "note" ...): paper
    text goes on after a colon with anything, a model's comment rarely does.
    """
    for found in _separators(quote):
        if _COMMENT_OPENER.match(quote, found.end()):
            yield found.start()
    for found in _sentence_ends(quote):
        if _COMMENT_OPENER.match(quote, found.end()):
            yield found.start() + 1


# Every match of _SEPARATOR_CHAR and _SENTENCE_END starts with one of these: they are found by C scans
# and the patterns matched there only (a pattern led by a character class is tried at every
# character: the two cost ~60 us on a 400-character quote).
_SEPARATOR_CHARS = "\u2014\u2013([:;-"
_SENTENCE_END_CHARS = ".!?"


def _sentence_ends(quote: str) -> Iterable[re.Match[str]]:
    """What ``_SENTENCE_END.finditer(quote)`` finds: matched where a full stop, ``!`` or ``?`` stands, each
    from the end of the last match on."""
    end = 0
    for at in sorted(at for char in _SENTENCE_END_CHARS for at in _places(quote, char)):
        if at < end:
            continue
        found = _SENTENCE_END.match(quote, at)
        if found is not None:
            end = found.end()
            yield found


def _separators(quote: str) -> Iterable[re.Match[str]]:
    """What ``_HARD_SEPARATOR.finditer(quote)`` finds, tried only where a separator character stands
    (its optional spaces lead it, so the regex alone is tried at every character).

    A match starts where the spaces before a separator character begin, or (a colon or
    semicolon, no spaces) at the character itself; the spaces after it are taken, so the next
    match starts beyond them."""
    end = 0
    for at in sorted(at for char in _SEPARATOR_CHARS for at in _places(quote, char)):
        if at < end:
            continue
        spaces = at
        while spaces > end and quote[spaces - 1].isspace():
            spaces -= 1
        found = _HARD_SEPARATOR.match(quote, spaces) or _HARD_SEPARATOR.match(quote, at)
        if found is not None:
            end = found.end()
            yield found


def plain_words(text: str) -> str:
    """The words of ``text``, lower case, one space apart."""
    return " ".join(re.findall(r"\w+", text.lower()))
