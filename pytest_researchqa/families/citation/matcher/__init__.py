"""The citation matcher: is a quoted citation really in the paper?

Quotes and paper are compared on match keys (see :mod:`.textkey`), so
extraction noise cannot cause a miss while any changed letter or digit does.
On top of exact key search the matcher accepts exactly three kinds of
legitimate departure, and nothing else:

* a gap in the paper that is page furniture: a page break (footers, headers,
  footnotes; see :func:`.alignment.locate`) or a short run of digits
  (margin line numbers, page numbers, citation markers);
* an elision mark in the quote (``...``, ``…``, ``[...]``, ``(...)``) whose
  parts are each verbatim, in order, within ``ELISION_WINDOW`` of each other;
* a verbatim quote followed by a clearly separated comment of the model's own.

Everything else is not grounded; *why* (altered, stitched, paraphrase, not
found) is worked out lazily, only when someone reads the verdict.

The pieces, each importing only those listed before it:

* :mod:`.textkey`: match keys, and the map from a key back to its text;
* :mod:`.grams`: where a string occurs in a key, looked up instead of scanned for (:class:`GramIndex`);
* :mod:`.furniture`: running headers, footers, page and line numbers, blanked;
* :mod:`.quotes`: how a citation is read (elision marks, wrapping, pointers, comments);
* :mod:`.alignment`: the search that lines a quote's key up with the paper's;
* :mod:`.index`: the prepared paper (:class:`PaperIndex`), with the look-up index of each of its keys;
* :mod:`.verdicts`: what the matcher says (:class:`CitationMatch`) and why (:class:`Diagnosis`);
* :mod:`.diagnosis`: working out why a citation is not grounded;
* :mod:`.matching`: the decision (:class:`MatchIndex`) and the entry points.
"""

from __future__ import annotations

from .alignment import (
    ALIGN_CHUNK,
    DIGIT_GAP_LIMIT,
    ELISION_WINDOW,
    MAX_PAGE_JUMPS,
    MIN_ANCHOR,
    MIN_GAPPED_ANCHOR,
    MIN_RESUMED_RUN,
    PAGE_HEAD_LIMIT,
    PAGE_TAIL_LIMIT,
)
from .grams import GRAM, GramIndex
from .index import BIBLIOGRAPHY_LIMIT, PaperIndex
from .matching import PARAPHRASE_OF_NEXT, HasMatchIndex, MatchIndex, match_citation, match_index
from .verdicts import (
    ALTERED,
    GROUNDED_VERDICTS,
    MIN_QUOTE_KEY,
    NON_EVIDENCE_VERDICTS,
    NOT_EVIDENCE,
    NOT_FOUND,
    PARAPHRASE,
    STITCHED,
    TOO_SHORT,
    VERBATIM,
    VERBATIM_ELIDED,
    VERBATIM_WITH_COMMENTARY,
    CitationMatch,
    Departure,
    Diagnosis,
    NearestPassage,
)

__all__ = [
    "ALIGN_CHUNK", "ALTERED", "BIBLIOGRAPHY_LIMIT", "DIGIT_GAP_LIMIT", "ELISION_WINDOW",
    "GRAM", "GramIndex", "GROUNDED_VERDICTS", "MAX_PAGE_JUMPS", "MIN_ANCHOR", "MIN_GAPPED_ANCHOR",
    "MIN_QUOTE_KEY", "MIN_RESUMED_RUN", "NON_EVIDENCE_VERDICTS", "NOT_EVIDENCE", "NOT_FOUND", "PAGE_HEAD_LIMIT",
    "PAGE_TAIL_LIMIT", "PARAPHRASE", "PARAPHRASE_OF_NEXT", "STITCHED", "TOO_SHORT", "VERBATIM", "VERBATIM_ELIDED",
    "VERBATIM_WITH_COMMENTARY", "CitationMatch", "Departure", "Diagnosis", "HasMatchIndex", "MatchIndex",
    "NearestPassage", "PaperIndex", "match_citation", "match_index",
]
