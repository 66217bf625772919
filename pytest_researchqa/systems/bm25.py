"""A naive-retrieval baseline: rank passages by BM25, cite the best verbatim.

The paper is cut into passages of a few sentences; rank_bm25 scores them
against the question; the answer is the top passage and the citations are the
top passages, copied from the paper text exactly.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Protocol, Sequence

from ..answers import Answer

if TYPE_CHECKING:  # pragma: no cover
    from ..families.citation.rows import Row
    from ..papers import Paper


class _Scorer(Protocol):
    """What the run needs of a rank_bm25 index (the package ships no type hints)."""

    def get_scores(self, query: list[str]) -> Sequence[float]: ...


PASSAGE_WORDS = 60
CITED_PASSAGES = 2
# Indexes kept at once: about 1 MiB each for a 45 KB paper. Rows of one paper run together
# (grouped in the file, or sent to one xdist worker by paper), so a few suffice; an evicted
# index is rebuilt from the paper's text in milliseconds.
KEPT_INDEXES = 16
_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
_STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have how in is it its of on or "
    "that the their this to was were what when where which who why with".split()
)


def tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def passages(text: str) -> list[str]:
    """Consecutive sentences grouped to about PASSAGE_WORDS words, cut from the text by position."""
    found, start, words = [], 0, 0
    ends = [m.start() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    sentence_start = 0
    for end in ends:
        words += len(text[sentence_start:end].split())
        sentence_start = end
        if words >= PASSAGE_WORDS or end == len(text):
            passage = text[start:end].strip()
            if passage:
                found.append(passage)
            start, words = end, 0
    return found


class Bm25System:
    """One BM25 index per paper, built on the paper's first row; the least recently used go first."""

    def __init__(self, kept: int = KEPT_INDEXES) -> None:
        self.kept = kept
        self.built = 0  # indexes built over the run (a rebuilt one counts again)
        self._indexes: OrderedDict[str, tuple[list[str], _Scorer]] = OrderedDict()

    def _index(self, paper: "Paper") -> tuple[list[str], _Scorer]:
        key = paper.content_hash or paper.paper_id
        found = self._indexes.get(key)
        if found is not None:
            self._indexes.move_to_end(key)
            return found
        from rank_bm25 import BM25Okapi

        chunks = passages(paper.text) or [paper.text]
        found = self._indexes[key] = (chunks, BM25Okapi([tokens(c) or ["_"] for c in chunks]))
        self.built += 1
        while len(self._indexes) > self.kept:
            self._indexes.popitem(last=False)
        return found

    def ranked_passages(self, row: "Row", paper: "Paper") -> list[str]:
        """The paper's passages, best first for the row's question."""
        chunks, bm25 = self._index(paper)
        scores = bm25.get_scores(tokens(row.question) or ["_"])
        return [chunks[i] for i in sorted(range(len(chunks)), key=lambda i: (-scores[i], i))]

    def __call__(self, row: "Row", paper: "Paper") -> Answer:
        cited = self.ranked_passages(row, paper)[:CITED_PASSAGES]
        return Answer(text=" ".join(" ".join(c.split()) for c in cited[:1]), citations=cited)
